//! The built-in [`RuleSet::default_rules`], used when neither the key's `scores_id` nor the project
//! selects a stored rule set.

use std::collections::BTreeMap;

use super::rules::{Lockout, DEFAULT_ATTEMPT_LIMIT, DEFAULT_ATTEMPT_WAIT_S};
use super::{Policy, RuleSet, ServiceRule, SUPPORTED_SCHEMA};
use crate::recognition::Service;
use vouch_bio::SyncStrength;

impl RuleSet {
    /// The built-in default, id `"default"`, version 1: every service but Visual Speech Recognition
    /// is required, each passes at 0.5, and the weighted score must reach 60. Services removed for
    /// missing consent are skipped silently, as the spec requires; a missing enrollment or an
    /// unavailable required service fails the decision.
    pub fn default_rules() -> RuleSet {
        let rule = |required: bool, weight: f64| ServiceRule {
            required,
            weight,
            pass_at: 0.5,
        };
        RuleSet {
            schema: SUPPORTED_SCHEMA,
            id: "default".to_owned(),
            version: 1,
            min_score: 60.0,
            not_enrolled: Policy::Fail,
            removed_for_consent: Policy::Skip,
            unavailable: Policy::Fail,
            no_identity: Policy::Fail,
            sync_strength: SyncStrength::Standard,
            first_use: Policy::Fail,
            attempt_limit: DEFAULT_ATTEMPT_LIMIT,
            attempt_wait_s: DEFAULT_ATTEMPT_WAIT_S,
            attempt_lockout: Lockout::Wait,
            services: BTreeMap::from([
                (Service::FaceRecognition, rule(true, 0.35)),
                (Service::VoiceRecognition, rule(true, 0.25)),
                (Service::FaceLivenessDetection, rule(true, 0.2)),
                (Service::ActiveSpeakerDetection, rule(true, 0.1)),
                (Service::VisualSpeechRecognition, rule(true, 0.1)),
            ]),
        }
    }
}

/// The default rule set exactly as the documentation shows it; the tests hold the code to it.
#[cfg(test)]
pub(super) const DOCUMENTED_DEFAULT_JSON: &str = r#"{
  "schema": 1,
  "id": "default",
  "version": 1,
  "min_score": 60,
  "not_enrolled": "fail",
  "removed_for_consent": "skip",
  "unavailable": "fail",
  "no_identity": "fail",
  "sync_strength": "standard",
  "first_use": "fail",
  "attempt_limit": 10,
  "attempt_wait_s": 30,
  "attempt_lockout": "wait",
  "services": {
    "Face Recognition":          { "required": true,  "weight": 0.35, "pass_at": 0.5 },
    "Voice Recognition":         { "required": true,  "weight": 0.25, "pass_at": 0.5 },
    "Face Liveness Detection":   { "required": true,  "weight": 0.2,  "pass_at": 0.5 },
    "Active Speaker Detection":  { "required": true,  "weight": 0.1,  "pass_at": 0.5 },
    "Visual Speech Recognition": { "required": true,  "weight": 0.1,  "pass_at": 0.5 }
  }
}"#;

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn default_rules_validate() {
        let rules = RuleSet::default_rules();
        assert_eq!(rules.validate(), Ok(()));
        assert_eq!((rules.id(), rules.version()), ("default", 1));
    }

    #[test]
    fn default_json_equals_the_documented_json() {
        let written: Value = serde_json::from_str(&RuleSet::default_rules().to_json()).unwrap();
        let documented: Value = serde_json::from_str(DOCUMENTED_DEFAULT_JSON).unwrap();
        assert_eq!(written, documented);
    }

    #[test]
    fn default_weights_sum_to_one() {
        let total: f64 = RuleSet::default_rules()
            .services
            .values()
            .map(|rule| rule.weight)
            .sum();
        assert!((total - 1.0).abs() < 1e-12, "{total}");
    }
}
