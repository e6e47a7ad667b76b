//! [`RuleSetError`], every way a rule set document or a hand-built [`RuleSet`](super::RuleSet) can
//! be rejected. The texts are shown to the people who write rule sets, so each one names the field
//! (as a dotted path such as `services.Face Recognition.pass_at`) and says what was expected.

use crate::recognition::Service;

/// Why a rule set was rejected by [`RuleSet::from_json`](super::RuleSet::from_json) or
/// [`RuleSet::validate`](super::RuleSet::validate).
#[non_exhaustive]
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RuleSetError {
    /// The text is not well-formed JSON, or an object repeats a key.
    #[error("rule set is not readable JSON: {message}")]
    Syntax {
        /// The parser's description, with line and column.
        message: String,
    },
    /// The document as a whole is not a JSON object.
    #[error("rule set must be a JSON object, got {found}")]
    DocumentNotAnObject {
        /// What the document is instead, e.g. `an array`.
        found: String,
    },
    /// A field that must hold a JSON object holds something else.
    #[error("rule set field \"{field}\" must be a JSON object, got {found}")]
    NotAnObject {
        /// Dotted path of the field.
        field: String,
        /// What the field holds instead.
        found: String,
    },
    /// A required field is absent.
    #[error("rule set field \"{field}\" is missing")]
    MissingField {
        /// Dotted path of the absent field.
        field: String,
    },
    /// A field that the schema does not define; typos must not be silently ignored.
    #[error("rule set field \"{field}\" is not recognized; allowed fields there are {allowed}")]
    UnknownField {
        /// Dotted path of the unexpected field.
        field: String,
        /// The field names allowed in the same object, comma separated.
        allowed: String,
    },
    /// A field holds a JSON value of the wrong kind, e.g. a string where a number belongs.
    #[error("rule set field \"{field}\" must be {expected}, got {found}")]
    WrongType {
        /// Dotted path of the field.
        field: String,
        /// What the field must hold, e.g. `a number`.
        expected: &'static str,
        /// What it holds instead.
        found: String,
    },
    /// `services` names something that is not one of the five services.
    #[error(
        "rule set field \"services\" contains unknown service \"{name}\"; valid names are {valid}",
        valid = valid_service_names()
    )]
    UnknownService {
        /// The unrecognized name, exactly as written.
        name: String,
    },
    /// `schema` is not a schema this version of the engine understands.
    #[error(
        "rule set field \"schema\" must be {supported} (the only supported schema), got {found}",
        supported = super::SUPPORTED_SCHEMA
    )]
    UnsupportedSchema {
        /// The schema the document declares.
        found: u64,
    },
    /// `id` is the empty string.
    #[error("rule set field \"id\" must not be empty")]
    EmptyId,
    /// `id` is longer than the stores that key on it accept.
    #[error("rule set field \"id\" must be at most {maximum} characters, got {length}", maximum = super::MAX_ID_LENGTH)]
    IdTooLong {
        /// The id's length in characters.
        length: usize,
    },
    /// `id` contains a character outside `A-Z a-z 0-9 _ . -`.
    #[error(
        "rule set field \"id\" may only contain letters A-Z and a-z, digits and '_', '.', '-', got {character:?} in {id:?}"
    )]
    IdCharacter {
        /// The rejected id.
        id: String,
        /// The first character that is not allowed.
        character: char,
    },
    /// `version` is 0; versions count from 1.
    #[error("rule set field \"version\" must be at least 1, got {found}")]
    InvalidVersion {
        /// The rejected version.
        found: u32,
    },
    /// A number lies outside its range, or is NaN.
    #[error("rule set field \"{field}\" must be between {minimum} and {maximum}, got {found}")]
    OutOfRange {
        /// Dotted path of the field.
        field: String,
        /// Smallest allowed value.
        minimum: f64,
        /// Largest allowed value.
        maximum: f64,
        /// The rejected value.
        found: f64,
    },
    /// A service weight is negative, infinite or NaN.
    #[error("rule set field \"{field}\" must be a finite number of at least 0, got {found}")]
    InvalidWeight {
        /// Dotted path of the weight.
        field: String,
        /// The rejected weight.
        found: f64,
    },
    /// A policy field holds something other than `"fail"` or `"skip"`.
    #[error("rule set field \"{field}\" must be \"fail\" or \"skip\", got {found}")]
    InvalidPolicy {
        /// Name of the policy field.
        field: String,
        /// What it holds instead, as JSON.
        found: String,
    },
    /// `sync_strength` holds something other than `"lenient"`, `"standard"` or `"strict"`.
    #[error(
        "rule set field \"{field}\" must be \"lenient\", \"standard\" or \"strict\", got {found}"
    )]
    InvalidSyncStrength {
        /// Name of the field.
        field: String,
        /// What it holds instead, as JSON.
        found: String,
    },
    /// `attempt_lockout` holds something other than `"wait"` or `"disable"`.
    #[error("rule set field \"{field}\" must be \"wait\" or \"disable\", got {found}")]
    InvalidLockout {
        /// Name of the field.
        field: String,
        /// What it holds instead, as JSON.
        found: String,
    },
    /// No service has a weight above 0, so no decision could ever be scored.
    #[error("rule set field \"services\" must give at least one service a weight above 0")]
    NoWeightedService,
}

/// The five spec names, quoted and comma separated, for error texts.
fn valid_service_names() -> String {
    Service::ALL
        .iter()
        .map(|service| format!("\"{}\"", service.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_service_lists_all_five_names() {
        let error = RuleSetError::UnknownService {
            name: "Face".to_owned(),
        };
        assert_eq!(
            error.to_string(),
            "rule set field \"services\" contains unknown service \"Face\"; valid names are \
             \"Active Speaker Detection\", \"Visual Speech Recognition\", \"Face Liveness Detection\", \
             \"Voice Recognition\", \"Face Recognition\""
        );
    }

    #[test]
    fn out_of_range_prints_plain_numbers() {
        let error = RuleSetError::OutOfRange {
            field: "services.Face Recognition.pass_at".to_owned(),
            minimum: 0.0,
            maximum: 1.0,
            found: 1.5,
        };
        assert_eq!(
            error.to_string(),
            "rule set field \"services.Face Recognition.pass_at\" must be between 0 and 1, got 1.5"
        );
    }
}
