//! MRZ parsing: any lines either parse into fields whose lines have the layout's shape and only MRZ
//! characters, with a check result for every digit, or are rejected as not a zone; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vouch_bio::{parse_mrz as parse, MrzFormat as Format, MRZ_ALPHABET as ALPHABET};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.split('\n').collect();
    if let Ok(fields) = parse(&lines, "2026-11-21") {
        let format: Format = fields.format;
        assert_eq!(fields.lines.len(), format.line_count());
        for line in &fields.lines {
            assert_eq!(line.len(), format.line_length());
            assert!(line.chars().all(|c| ALPHABET.contains(c)));
        }
        assert_eq!(
            fields.all_checks_valid,
            fields.checks.iter().all(|c| c.valid)
        );
    }
});
