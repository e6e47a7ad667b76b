//! [`RuleSet`], its per-service [`ServiceRule`] and outcome [`Policy`], with validation and JSON
//! output. Reading JSON lives in `document.rs`, evaluation in `evaluate.rs`.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

use super::RuleSetError;
use crate::recognition::Service;
use vouch_bio::SyncStrength;

/// The only `schema` value this engine reads and writes.
pub const SUPPORTED_SCHEMA: u32 = 1;

/// Longest accepted rule set `id`, in characters.
pub const MAX_ID_LENGTH: usize = 64;

/// What a rule set does with a service outcome that carries no score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// The outcome fails the decision (for `not_enrolled` and `unavailable` only when the service is
    /// required).
    Fail,
    /// The service is left out of the requirements and of the score.
    Skip,
}

impl Policy {
    /// The JSON spelling, `"fail"` or `"skip"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Fail => "fail",
            Policy::Skip => "skip",
        }
    }
}

fn serialize_strength<S: Serializer>(
    strength: &SyncStrength,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(strength.as_str())
}

/// What happens once a user reaches the rule set's `attempt_limit` of consecutive failed
/// decisions (NIST SP 800-63B §5.2.3 allows either).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Lockout {
    /// Wait `attempt_wait_s` before the next attempt, doubling with each further failure (at most
    /// [`MAX_ATTEMPT_WAIT_S`]).
    #[default]
    Wait,
    /// No biometric attempt until the backend resets the count (after another factor).
    Disable,
}

impl Lockout {
    /// The JSON spelling, `"wait"` or `"disable"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Lockout::Wait => "wait",
            Lockout::Disable => "disable",
        }
    }
}

/// The default `attempt_limit`: SP 800-63B's 10 consecutive failures for a verifier with
/// presentation-attack detection (5 without).
pub(crate) const DEFAULT_ATTEMPT_LIMIT: u32 = 10;
/// The largest `attempt_limit` a rule set may choose.
pub(crate) const MAX_ATTEMPT_LIMIT: u32 = 100;
/// The default first wait after the limit, seconds (SP 800-63B: at least 30 s).
pub(crate) const DEFAULT_ATTEMPT_WAIT_S: u32 = 30;
/// The longest wait, seconds: one day. The doubling stops there.
pub(crate) const MAX_ATTEMPT_WAIT_S: u32 = 86_400;

/// How one service takes part in a decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceRule {
    /// Whether a failed check of this service fails the whole decision.
    pub required: bool,
    /// Relative weight of the service's confidence in the score; 0 keeps it out of the score while
    /// its pass/fail check still counts.
    #[serde(serialize_with = "serialize_number")]
    pub weight: f64,
    /// Lowest confidence (0..=1) that passes the check; a confidence equal to it passes.
    #[serde(serialize_with = "serialize_number")]
    pub pass_at: f64,
}

/// A versioned scoring rule set: turns the per-service outcomes of one verification into a
/// [`Decision`](super::Decision).
///
/// Fields are public so rule sets can be built in code; such values should go through
/// [`RuleSet::validate`] before use. Values read with [`RuleSet::from_json`] or through serde's
/// `Deserialize` are always validated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleSet {
    /// Format version of the document; must be `SUPPORTED_SCHEMA` (1).
    pub schema: u32,
    /// Name of the rule set: 1 to 64 characters of `A-Z a-z 0-9 _ . -`.
    pub id: String,
    /// Revision of the rule set with this id, from 1.
    pub version: u32,
    /// Lowest score (0..=100) that passes.
    #[serde(serialize_with = "serialize_number")]
    pub min_score: f64,
    /// What a recognition service without an enrolled template does to the decision.
    pub not_enrolled: Policy,
    /// What a service removed for missing authorization consent does to the decision.
    pub removed_for_consent: Policy,
    /// What a service that could not produce a result does to the decision.
    pub unavailable: Policy,
    /// What a decision without identity evidence (no Face or Voice Recognition check in the rule
    /// set that produced a passing score) does: `Fail` (the default: a decision never passes
    /// without knowing who is there) or `Skip` (the project accepts liveness-only decisions).
    pub no_identity: Policy,
    /// How hard Active Speaker Detection (and with it liveness and auto-enrollment) is on sound
    /// that does not follow the mouth: `lenient`, `standard` (the default) or `strict`, the null
    /// percentiles of [`SyncStrength`].
    #[serde(serialize_with = "serialize_strength")]
    pub sync_strength: SyncStrength,
    /// What the call that enrols a first-time user (no template of either kind before it) does to
    /// its own decision when the backend did not say the call is a registration
    /// (`X-Action-Trigger: registration`): `Fail` (the default: the user is enrolled and must
    /// verify again, reason `enrolled_verify_again`, so whoever comes first cannot claim an
    /// identity and pass in one call) or `Skip` (the enrolling call is decided against the
    /// templates it enrolled, as a registration is).
    pub first_use: Policy,
    /// Consecutive failed decisions of one user (process-video, match-faces) after which the user
    /// is held back: 1 to [`MAX_ATTEMPT_LIMIT`], default [`DEFAULT_ATTEMPT_LIMIT`].
    pub attempt_limit: u32,
    /// The first wait once the limit is reached, seconds (1 to [`MAX_ATTEMPT_WAIT_S`], default
    /// [`DEFAULT_ATTEMPT_WAIT_S`]); each further failure doubles it.
    pub attempt_wait_s: u32,
    /// What the limit does: wait (the default) or disable until the backend resets the count.
    pub attempt_lockout: Lockout,
    /// Rules per service; services absent here are ignored when scoring.
    #[serde(serialize_with = "serialize_services")]
    pub services: BTreeMap<Service, ServiceRule>,
}

impl RuleSet {
    /// The rule set's `id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The rule set's `version`.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Pretty-printed JSON that [`RuleSet::from_json`] accepts (for a valid rule set). Services are
    /// written in [`Service::ALL`] order; whole numbers are written without a fraction.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .expect("a rule set has only string map keys and plain values, which always serialize")
    }

    /// Checks every constraint of the format; returns the first violation, checking fields in
    /// document order and services in [`Service::ALL`] order.
    pub fn validate(&self) -> Result<(), RuleSetError> {
        if self.schema != SUPPORTED_SCHEMA {
            return Err(RuleSetError::UnsupportedSchema {
                found: u64::from(self.schema),
            });
        }
        validate_id(&self.id)?;
        if self.version == 0 {
            return Err(RuleSetError::InvalidVersion {
                found: self.version,
            });
        }
        check_range("min_score", self.min_score, 0.0, 100.0)?;
        check_range(
            "attempt_limit",
            f64::from(self.attempt_limit),
            1.0,
            f64::from(MAX_ATTEMPT_LIMIT),
        )?;
        check_range(
            "attempt_wait_s",
            f64::from(self.attempt_wait_s),
            1.0,
            f64::from(MAX_ATTEMPT_WAIT_S),
        )?;
        for service in Service::ALL {
            let Some(rule) = self.services.get(&service) else {
                continue;
            };
            let path = format!("services.{}", service.name());
            if !(rule.weight.is_finite() && rule.weight >= 0.0) {
                return Err(RuleSetError::InvalidWeight {
                    field: format!("{path}.weight"),
                    found: rule.weight,
                });
            }
            check_range(&format!("{path}.pass_at"), rule.pass_at, 0.0, 1.0)?;
        }
        if !self.services.values().any(|rule| rule.weight > 0.0) {
            return Err(RuleSetError::NoWeightedService);
        }
        Ok(())
    }
}

fn validate_id(id: &str) -> Result<(), RuleSetError> {
    if id.is_empty() {
        return Err(RuleSetError::EmptyId);
    }
    let length = id.chars().count();
    if length > MAX_ID_LENGTH {
        return Err(RuleSetError::IdTooLong { length });
    }
    // The id ends up in file names, URLs and log lines, so only unambiguous ASCII is allowed.
    if let Some(character) = id.chars().find(|character| {
        !(character.is_ascii_alphanumeric() || matches!(character, '_' | '.' | '-'))
    }) {
        return Err(RuleSetError::IdCharacter {
            id: id.to_owned(),
            character,
        });
    }
    Ok(())
}

/// Rejects NaN too, which a plain `<`/`>` comparison would let through.
fn check_range(field: &str, value: f64, minimum: f64, maximum: f64) -> Result<(), RuleSetError> {
    if (minimum..=maximum).contains(&value) {
        Ok(())
    } else {
        Err(RuleSetError::OutOfRange {
            field: field.to_owned(),
            minimum,
            maximum,
            found: value,
        })
    }
}

/// Writes `60` rather than `60.0` so documents look as people write them; the value reads back
/// identically either way.
fn serialize_number<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    // Below 2^53 every whole f64 converts to i64 exactly.
    const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0;
    if value.fract() == 0.0 && value.abs() < EXACT_INTEGER_LIMIT {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

/// Keys services by their spec names, in [`Service::ALL`] order (the map's order).
fn serialize_services<S: Serializer>(
    services: &BTreeMap<Service, ServiceRule>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(
        services
            .iter()
            .map(|(service, rule)| (service.name(), rule)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid_rules() -> RuleSet {
        RuleSet::default_rules()
    }

    fn face_rule(rules: &mut RuleSet) -> &mut ServiceRule {
        rules
            .services
            .get_mut(&Service::FaceRecognition)
            .expect("the default rules have Face Recognition")
    }

    fn error_text(rules: &RuleSet) -> String {
        rules
            .validate()
            .expect_err("the rule set should be rejected")
            .to_string()
    }

    #[test]
    fn default_rules_validate() {
        assert_eq!(valid_rules().validate(), Ok(()));
    }

    #[test]
    fn schema_other_than_one_is_rejected() {
        let mut rules = valid_rules();
        rules.schema = 2;
        assert_eq!(
            rules.validate(),
            Err(RuleSetError::UnsupportedSchema { found: 2 })
        );
        assert_eq!(
            error_text(&rules),
            "rule set field \"schema\" must be 1 (the only supported schema), got 2"
        );
    }

    #[test]
    fn empty_id_is_rejected() {
        let mut rules = valid_rules();
        rules.id = String::new();
        assert_eq!(
            error_text(&rules),
            "rule set field \"id\" must not be empty"
        );
    }

    #[test]
    fn id_of_64_characters_is_accepted_and_65_rejected() {
        let mut rules = valid_rules();
        rules.id = "a".repeat(64);
        assert_eq!(rules.validate(), Ok(()));
        rules.id = "a".repeat(65);
        assert_eq!(
            error_text(&rules),
            "rule set field \"id\" must be at most 64 characters, got 65"
        );
    }

    #[test]
    fn id_with_every_allowed_character_class_is_accepted() {
        let mut rules = valid_rules();
        rules.id = "Tenant_7.strict-v2".to_owned();
        assert_eq!(rules.validate(), Ok(()));
    }

    #[test]
    fn id_with_other_characters_is_rejected() {
        let mut rules = valid_rules();
        for (id, character) in [("two words", ' '), ("a/b", '/'), ("café", 'é')] {
            rules.id = id.to_owned();
            assert_eq!(
                rules.validate(),
                Err(RuleSetError::IdCharacter {
                    id: id.to_owned(),
                    character
                })
            );
        }
        rules.id = "a/b".to_owned();
        assert_eq!(
            error_text(&rules),
            "rule set field \"id\" may only contain letters A-Z and a-z, digits and '_', '.', '-', got '/' in \"a/b\""
        );
    }

    #[test]
    fn version_zero_is_rejected() {
        let mut rules = valid_rules();
        rules.version = 0;
        assert_eq!(
            error_text(&rules),
            "rule set field \"version\" must be at least 1, got 0"
        );
    }

    #[test]
    fn min_score_bounds_are_inclusive() {
        let mut rules = valid_rules();
        for accepted in [0.0, 100.0] {
            rules.min_score = accepted;
            assert_eq!(rules.validate(), Ok(()));
        }
        rules.min_score = 100.5;
        assert_eq!(
            error_text(&rules),
            "rule set field \"min_score\" must be between 0 and 100, got 100.5"
        );
        rules.min_score = -1.0;
        assert_eq!(
            error_text(&rules),
            "rule set field \"min_score\" must be between 0 and 100, got -1"
        );
    }

    #[test]
    fn nan_min_score_is_rejected() {
        let mut rules = valid_rules();
        rules.min_score = f64::NAN;
        assert_eq!(
            error_text(&rules),
            "rule set field \"min_score\" must be between 0 and 100, got NaN"
        );
    }

    #[test]
    fn negative_and_non_finite_weights_are_rejected() {
        for (weight, shown) in [(-0.5, "-0.5"), (f64::NAN, "NaN"), (f64::INFINITY, "inf")] {
            let mut rules = valid_rules();
            face_rule(&mut rules).weight = weight;
            assert_eq!(
                error_text(&rules),
                format!(
                    "rule set field \"services.Face Recognition.weight\" must be a finite number of at least 0, got {shown}"
                )
            );
        }
    }

    #[test]
    fn pass_at_outside_zero_to_one_is_rejected() {
        let mut rules = valid_rules();
        face_rule(&mut rules).pass_at = 1.5;
        assert_eq!(
            error_text(&rules),
            "rule set field \"services.Face Recognition.pass_at\" must be between 0 and 1, got 1.5"
        );
        face_rule(&mut rules).pass_at = f64::NAN;
        assert!(error_text(&rules).contains("\"services.Face Recognition.pass_at\""));
        for accepted in [0.0, 1.0] {
            face_rule(&mut rules).pass_at = accepted;
            assert_eq!(rules.validate(), Ok(()));
        }
    }

    #[test]
    fn a_rule_set_without_positive_weight_is_rejected() {
        let mut rules = valid_rules();
        for rule in rules.services.values_mut() {
            rule.weight = 0.0;
        }
        assert_eq!(rules.validate(), Err(RuleSetError::NoWeightedService));
        assert!(error_text(&rules).contains("\"services\""));
        rules.services.clear();
        assert_eq!(rules.validate(), Err(RuleSetError::NoWeightedService));
    }

    #[test]
    fn a_single_weighted_service_is_enough() {
        let mut rules = valid_rules();
        rules
            .services
            .retain(|service, _| *service == Service::VisualSpeechRecognition);
        assert_eq!(rules.validate(), Ok(()));
    }

    #[test]
    fn accessors_return_id_and_version() {
        let mut rules = valid_rules();
        rules.id = "tenant-a".to_owned();
        rules.version = 7;
        assert_eq!((rules.id(), rules.version()), ("tenant-a", 7));
    }

    #[test]
    fn whole_numbers_are_written_without_fraction() {
        let json = valid_rules().to_json();
        assert!(json.contains("\"min_score\": 60,"), "{json}");
        assert!(json.contains("\"weight\": 0.35,"), "{json}");
    }

    #[test]
    fn policies_are_written_in_lowercase() {
        assert_eq!(serde_json::to_string(&Policy::Fail).unwrap(), "\"fail\"");
        assert_eq!(serde_json::to_string(&Policy::Skip).unwrap(), "\"skip\"");
        assert_eq!(
            (Policy::Fail.as_str(), Policy::Skip.as_str()),
            ("fail", "skip")
        );
    }
}
