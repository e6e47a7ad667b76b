//! Rule set documents: any text either parses into a rule set that validates and round-trips, or is
//! rejected with an error; evaluation of a parsed set never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vouch::{Outcome, RuleSet};
use vouch::Service;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(rules) = RuleSet::from_json(text) {
        rules.validate().expect("a parsed rule set validates");
        let again = RuleSet::from_json(&rules.to_json()).expect("to_json output parses");
        assert_eq!(again, rules);
        let outcomes: Vec<(Service, Outcome)> = Service::ALL
            .iter()
            .enumerate()
            .map(|(index, service)| (*service, Outcome::Score(data.get(index).copied().unwrap_or(0) as f64 / 200.0)))
            .collect();
        let decision = rules.evaluate(&outcomes);
        assert!((0.0..=100.0).contains(&decision.score));
    }
});
