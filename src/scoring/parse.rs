//! Reading rule set documents: [`RuleSet::from_json`] and the `Deserialize` impl of [`RuleSet`].
//!
//! The document is first read into a JSON tree that rejects repeated keys, then walked field by
//! field. Walking by hand rather than deriving `Deserialize` with `deny_unknown_fields` keeps the same
//! strictness (unknown fields, unknown services, missing fields and repeated keys are all errors) while
//! letting every error name the full path of the offending field, which serde's derived messages do
//! not.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::rules::{Lockout, DEFAULT_ATTEMPT_LIMIT, DEFAULT_ATTEMPT_WAIT_S};
use super::{Policy, RuleSet, RuleSetError, ServiceRule, SUPPORTED_SCHEMA};
use crate::recognition::Service;
use vouch_bio::SyncStrength;

/// Top-level fields, in the order they are written.
const RULE_SET_FIELDS: &[&str] = &[
    "schema",
    "id",
    "version",
    "min_score",
    "not_enrolled",
    "removed_for_consent",
    "unavailable",
    "no_identity",
    "sync_strength",
    "first_use",
    "attempt_limit",
    "attempt_wait_s",
    "attempt_lockout",
    "services",
];

/// Fields of one entry of `services`.
const SERVICE_RULE_FIELDS: &[&str] = &["required", "weight", "pass_at"];

/// Longest string quoted back in an error; longer ones are summarized so a pasted blob does not flood
/// the message.
const MAX_QUOTED_STRING_LENGTH: usize = 40;

impl RuleSet {
    /// Parses a rule set document and validates it with [`RuleSet::validate`].
    pub fn from_json(text: &str) -> Result<RuleSet, RuleSetError> {
        let StrictValue(document) =
            serde_json::from_str(text).map_err(|error| RuleSetError::Syntax {
                message: error.to_string(),
            })?;
        RuleSet::from_document(document)
    }

    fn from_document(document: Value) -> Result<RuleSet, RuleSetError> {
        let Value::Object(fields) = document else {
            return Err(RuleSetError::DocumentNotAnObject {
                found: describe(&document),
            });
        };
        let mut reader = ObjectReader::new(fields, "", RULE_SET_FIELDS);
        // Schema first: a document written for another schema should be reported as such, not by
        // the first field it does not share with schema 1.
        let schema = reader.whole_number("schema", "a whole number", u64::MAX)?;
        if schema != u64::from(SUPPORTED_SCHEMA) {
            return Err(RuleSetError::UnsupportedSchema { found: schema });
        }
        reader.reject_unknown_fields()?;
        let rule_set = RuleSet {
            schema: SUPPORTED_SCHEMA,
            id: reader.string("id")?,
            version: narrow_to_u32(reader.whole_number(
                "version",
                "a whole number from 1 to 4294967295",
                u64::from(u32::MAX),
            )?),
            min_score: reader.number("min_score")?,
            not_enrolled: reader.policy("not_enrolled")?,
            removed_for_consent: reader.policy("removed_for_consent")?,
            unavailable: reader.policy("unavailable")?,
            // Optional, so rule sets written before it existed still read; absent means the
            // secure choice.
            no_identity: reader.optional_policy("no_identity", Policy::Fail)?,
            // Optional too: absent means the default, the null's 95th percentile.
            sync_strength: reader.optional_strength("sync_strength")?,
            // Optional: absent means the secure choice (a first use is not a pass).
            first_use: reader.optional_policy("first_use", Policy::Fail)?,
            // Optional: absent means SP 800-63B's defaults (10 failures, then 30 s, doubling).
            attempt_limit: narrow_to_u32(
                reader.optional_whole_number("attempt_limit", u64::from(DEFAULT_ATTEMPT_LIMIT))?,
            ),
            attempt_wait_s: narrow_to_u32(
                reader
                    .optional_whole_number("attempt_wait_s", u64::from(DEFAULT_ATTEMPT_WAIT_S))?,
            ),
            attempt_lockout: reader.optional_lockout("attempt_lockout")?,
            services: read_services(reader.object("services")?)?,
        };
        rule_set.validate()?;
        Ok(rule_set)
    }
}

/// Validates like [`RuleSet::from_json`], so a rule set embedded in another document is never
/// accepted in a state `from_json` would refuse.
impl<'de> Deserialize<'de> for RuleSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let StrictValue(document) = StrictValue::deserialize(deserializer)?;
        RuleSet::from_document(document).map_err(de::Error::custom)
    }
}

fn read_services(
    entries: Map<String, Value>,
) -> Result<BTreeMap<Service, ServiceRule>, RuleSetError> {
    let mut services = BTreeMap::new();
    for (name, entry) in entries {
        let service = Service::from_name(&name)
            .ok_or_else(|| RuleSetError::UnknownService { name: name.clone() })?;
        let path = format!("services.{name}");
        let Value::Object(fields) = entry else {
            return Err(RuleSetError::NotAnObject {
                field: path,
                found: describe(&entry),
            });
        };
        let mut reader = ObjectReader::new(fields, &path, SERVICE_RULE_FIELDS);
        reader.reject_unknown_fields()?;
        let rule = ServiceRule {
            required: reader.boolean("required")?,
            weight: reader.number("weight")?,
            pass_at: reader.number("pass_at")?,
        };
        services.insert(service, rule);
    }
    Ok(services)
}

/// `whole_number` has already bounded the value by `u32::MAX`.
fn narrow_to_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// Takes typed fields out of one JSON object, naming each by its dotted path in errors.
struct ObjectReader {
    fields: Map<String, Value>,
    /// Path of the object itself followed by a dot, or empty at the top level.
    prefix: String,
    allowed: &'static [&'static str],
}

impl ObjectReader {
    fn new(fields: Map<String, Value>, path: &str, allowed: &'static [&'static str]) -> Self {
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}.")
        };
        ObjectReader {
            fields,
            prefix,
            allowed,
        }
    }

    fn path(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn reject_unknown_fields(&self) -> Result<(), RuleSetError> {
        match self
            .fields
            .keys()
            .find(|name| !self.allowed.contains(&name.as_str()))
        {
            Some(name) => Err(RuleSetError::UnknownField {
                field: self.path(name),
                allowed: self.allowed.join(", "),
            }),
            None => Ok(()),
        }
    }

    fn take(&mut self, name: &str) -> Result<Value, RuleSetError> {
        self.fields
            .remove(name)
            .ok_or_else(|| RuleSetError::MissingField {
                field: self.path(name),
            })
    }

    fn wrong_type(&self, name: &str, expected: &'static str, value: &Value) -> RuleSetError {
        RuleSetError::WrongType {
            field: self.path(name),
            expected,
            found: describe(value),
        }
    }

    fn whole_number(
        &mut self,
        name: &str,
        expected: &'static str,
        maximum: u64,
    ) -> Result<u64, RuleSetError> {
        let value = self.take(name)?;
        value
            .as_u64()
            .filter(|number| *number <= maximum)
            .ok_or_else(|| self.wrong_type(name, expected, &value))
    }

    fn number(&mut self, name: &str) -> Result<f64, RuleSetError> {
        let value = self.take(name)?;
        value
            .as_f64()
            .ok_or_else(|| self.wrong_type(name, "a number", &value))
    }

    fn boolean(&mut self, name: &str) -> Result<bool, RuleSetError> {
        let value = self.take(name)?;
        value
            .as_bool()
            .ok_or_else(|| self.wrong_type(name, "true or false", &value))
    }

    fn string(&mut self, name: &str) -> Result<String, RuleSetError> {
        match self.take(name)? {
            Value::String(text) => Ok(text),
            other => Err(self.wrong_type(name, "a string", &other)),
        }
    }

    fn policy(&mut self, name: &str) -> Result<Policy, RuleSetError> {
        let value = self.take(name)?;
        match value.as_str() {
            Some("fail") => Ok(Policy::Fail),
            Some("skip") => Ok(Policy::Skip),
            _ => Err(RuleSetError::InvalidPolicy {
                field: self.path(name),
                found: describe(&value),
            }),
        }
    }

    fn optional_policy(&mut self, name: &str, absent: Policy) -> Result<Policy, RuleSetError> {
        if self.fields.contains_key(name) {
            self.policy(name)
        } else {
            Ok(absent)
        }
    }

    fn optional_strength(&mut self, name: &str) -> Result<SyncStrength, RuleSetError> {
        if !self.fields.contains_key(name) {
            return Ok(SyncStrength::default());
        }
        let value = self.take(name)?;
        value
            .as_str()
            .and_then(SyncStrength::from_name)
            .ok_or_else(|| RuleSetError::InvalidSyncStrength {
                field: self.path(name),
                found: describe(&value),
            })
    }

    /// A whole number, `absent` when the field is left out; its range is checked by
    /// `RuleSet::validate`, so anything above `u32::MAX` reads as `u32::MAX` and is refused there.
    fn optional_whole_number(&mut self, name: &str, absent: u64) -> Result<u64, RuleSetError> {
        if self.fields.contains_key(name) {
            self.whole_number(name, "a whole number", u64::MAX)
        } else {
            Ok(absent)
        }
    }

    fn optional_lockout(&mut self, name: &str) -> Result<Lockout, RuleSetError> {
        if !self.fields.contains_key(name) {
            return Ok(Lockout::default());
        }
        let value = self.take(name)?;
        match value.as_str() {
            Some("wait") => Ok(Lockout::Wait),
            Some("disable") => Ok(Lockout::Disable),
            _ => Err(RuleSetError::InvalidLockout {
                field: self.path(name),
                found: describe(&value),
            }),
        }
    }

    fn object(&mut self, name: &str) -> Result<Map<String, Value>, RuleSetError> {
        match self.take(name)? {
            Value::Object(fields) => Ok(fields),
            other => Err(RuleSetError::NotAnObject {
                field: self.path(name),
                found: describe(&other),
            }),
        }
    }
}

/// A JSON value as an error message shows it.
fn describe(value: &Value) -> String {
    match value {
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        Value::String(text) if text.chars().count() > MAX_QUOTED_STRING_LENGTH => {
            format!("a string of {} characters", text.chars().count())
        }
        // JSON rendering quotes and escapes strings, so what is shown is what was written.
        other => other.to_string(),
    }
}

/// A JSON tree read like [`Value`], except that an object repeating a key is an error: a rule set
/// with two `min_score` entries is ambiguous, and `Value` would silently keep the last.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(StrictValueVisitor)
            .map(StrictValue)
    }
}

struct StrictValueVisitor;

impl<'de> Visitor<'de> for StrictValueVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("the number {value} is not finite")))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = sequence.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "key \"{key}\" appears twice in one object"
                )));
            }
            let StrictValue(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::default::DOCUMENTED_DEFAULT_JSON;
    use super::*;

    fn documented() -> Value {
        serde_json::from_str(DOCUMENTED_DEFAULT_JSON).expect("the documented JSON parses")
    }

    /// Parses the documented default after `change` edits it.
    fn parse_changed(change: impl FnOnce(&mut Value)) -> Result<RuleSet, RuleSetError> {
        let mut document = documented();
        change(&mut document);
        RuleSet::from_json(&document.to_string())
    }

    /// An edit applied to the documented default before parsing it.
    type DocumentChange = fn(&mut Value);

    fn face(document: &mut Value) -> &mut Value {
        &mut document["services"]["Face Recognition"]
    }

    fn error_text(result: Result<RuleSet, RuleSetError>) -> String {
        result
            .expect_err("the document should be rejected")
            .to_string()
    }

    #[test]
    fn documented_default_parses_to_the_default_rules() {
        assert_eq!(
            RuleSet::from_json(DOCUMENTED_DEFAULT_JSON),
            Ok(RuleSet::default_rules())
        );
    }

    #[test]
    fn to_json_round_trips_the_default() {
        let rules = RuleSet::default_rules();
        assert_eq!(RuleSet::from_json(&rules.to_json()), Ok(rules));
    }

    #[test]
    fn to_json_round_trips_a_custom_rule_set() {
        let mut rules = RuleSet::default_rules();
        rules.id = "tenant-42.strict".to_owned();
        rules.version = 9;
        rules.min_score = 72.5;
        rules.not_enrolled = Policy::Skip;
        rules.removed_for_consent = Policy::Fail;
        rules.unavailable = Policy::Skip;
        rules.services.remove(&Service::VisualSpeechRecognition);
        rules.services.insert(
            Service::ActiveSpeakerDetection,
            ServiceRule {
                required: false,
                weight: 0.0,
                pass_at: 0.125,
            },
        );
        rules.services.insert(
            Service::FaceRecognition,
            ServiceRule {
                required: true,
                weight: 3.0,
                pass_at: 1.0,
            },
        );
        assert_eq!(RuleSet::from_json(&rules.to_json()), Ok(rules));
    }

    #[test]
    fn serde_deserialize_parses_and_validates() {
        let parsed: RuleSet = serde_json::from_str(DOCUMENTED_DEFAULT_JSON).expect("valid");
        assert_eq!(parsed, RuleSet::default_rules());

        let mut document = documented();
        face(&mut document)["pass_at"] = json!(1.5);
        let error = serde_json::from_value::<RuleSet>(document).expect_err("invalid");
        assert_eq!(
            error.to_string(),
            "rule set field \"services.Face Recognition.pass_at\" must be between 0 and 1, got 1.5"
        );
    }

    #[test]
    fn validation_runs_on_parsed_documents() {
        let result = parse_changed(|document| face(document)["pass_at"] = json!(1.5));
        assert_eq!(
            error_text(result),
            "rule set field \"services.Face Recognition.pass_at\" must be between 0 and 1, got 1.5"
        );
        let result = parse_changed(|document| document["id"] = json!(""));
        assert_eq!(result, Err(RuleSetError::EmptyId));
        let result = parse_changed(|document| document["version"] = json!(0));
        assert_eq!(result, Err(RuleSetError::InvalidVersion { found: 0 }));
        let result = parse_changed(|document| face(document)["weight"] = json!(-1));
        assert_eq!(
            error_text(result),
            "rule set field \"services.Face Recognition.weight\" must be a finite number of at least 0, got -1"
        );
        let result = parse_changed(|document| document["min_score"] = json!(101));
        assert_eq!(
            error_text(result),
            "rule set field \"min_score\" must be between 0 and 100, got 101"
        );
    }

    #[test]
    fn sync_strength_is_optional_and_named() {
        let absent = parse_changed(|document| {
            document.as_object_mut().unwrap().remove("sync_strength");
        })
        .expect("a rule set without sync_strength reads");
        assert_eq!(absent.sync_strength, SyncStrength::Standard);
        let strict =
            parse_changed(|document| document["sync_strength"] = json!("strict")).expect("strict");
        assert_eq!(strict.sync_strength, SyncStrength::Strict);
        assert!(strict.to_json().contains(r#""sync_strength": "strict""#));
        let result = parse_changed(|document| document["sync_strength"] = json!(2.4));
        assert_eq!(
            error_text(result),
            "rule set field \"sync_strength\" must be \"lenient\", \"standard\" or \"strict\", got 2.4"
        );
    }

    #[test]
    fn the_attempt_limit_is_optional_bounded_and_named() {
        let absent = parse_changed(|document| {
            let fields = document.as_object_mut().unwrap();
            for field in ["attempt_limit", "attempt_wait_s", "attempt_lockout"] {
                fields.remove(field);
            }
        })
        .expect("a rule set without the attempt fields reads");
        assert_eq!(
            (
                absent.attempt_limit,
                absent.attempt_wait_s,
                absent.attempt_lockout
            ),
            (10, 30, Lockout::Wait)
        );
        let chosen = parse_changed(|document| {
            document["attempt_limit"] = json!(5);
            document["attempt_wait_s"] = json!(60);
            document["attempt_lockout"] = json!("disable");
        })
        .unwrap();
        assert_eq!(
            (
                chosen.attempt_limit,
                chosen.attempt_wait_s,
                chosen.attempt_lockout
            ),
            (5, 60, Lockout::Disable)
        );
        assert!(chosen.to_json().contains(r#""attempt_lockout": "disable""#));
        assert_eq!(
            error_text(parse_changed(
                |document| document["attempt_limit"] = json!(0)
            )),
            "rule set field \"attempt_limit\" must be between 1 and 100, got 0"
        );
        assert_eq!(
            error_text(parse_changed(
                |document| document["attempt_wait_s"] = json!(1u64 << 40)
            )),
            "rule set field \"attempt_wait_s\" must be between 1 and 86400, got 4294967295"
        );
        assert!(parse_changed(|document| document["attempt_limit"] = json!(2.5)).is_err());
        assert_eq!(
            error_text(parse_changed(
                |document| document["attempt_lockout"] = json!("forever")
            )),
            "rule set field \"attempt_lockout\" must be \"wait\" or \"disable\", got \"forever\""
        );
    }

    #[test]
    fn first_use_is_optional_and_fails_closed_when_absent() {
        let absent = parse_changed(|document| {
            document.as_object_mut().unwrap().remove("first_use");
        })
        .expect("a rule set without first_use reads");
        assert_eq!(absent.first_use, Policy::Fail);
        let skip = parse_changed(|document| document["first_use"] = json!("skip")).unwrap();
        assert_eq!(skip.first_use, Policy::Skip);
        assert!(skip.to_json().contains(r#""first_use": "skip""#));
        assert!(parse_changed(|document| document["first_use"] = json!("pass")).is_err());
    }

    #[test]
    fn no_identity_is_optional_and_fails_closed_when_absent() {
        let absent = parse_changed(|document| {
            document.as_object_mut().unwrap().remove("no_identity");
        })
        .expect("a rule set without no_identity reads");
        assert_eq!(absent.no_identity, Policy::Fail);
        let skip = parse_changed(|document| document["no_identity"] = json!("skip")).unwrap();
        assert_eq!(skip.no_identity, Policy::Skip);
        assert!(parse_changed(|document| document["no_identity"] = json!("maybe")).is_err());
    }

    #[test]
    fn unknown_top_level_field_is_rejected() {
        let result = parse_changed(|document| document["minimum_score"] = json!(60));
        assert_eq!(
            result,
            Err(RuleSetError::UnknownField {
                field: "minimum_score".to_owned(),
                allowed: "schema, id, version, min_score, not_enrolled, removed_for_consent, unavailable, no_identity, sync_strength, first_use, attempt_limit, attempt_wait_s, attempt_lockout, services"
                    .to_owned(),
            })
        );
        let result = parse_changed(|document| document["minimum_score"] = json!(60));
        assert_eq!(
            error_text(result),
            "rule set field \"minimum_score\" is not recognized; allowed fields there are schema, id, version, \
             min_score, not_enrolled, removed_for_consent, unavailable, no_identity, sync_strength, first_use, attempt_limit, attempt_wait_s, attempt_lockout, services"
        );
    }

    #[test]
    fn unknown_service_name_is_rejected_with_the_valid_names() {
        let result = parse_changed(|document| {
            document["services"]["Face Match"] =
                json!({ "required": true, "weight": 1, "pass_at": 0.5 });
        });
        assert_eq!(
            result,
            Err(RuleSetError::UnknownService {
                name: "Face Match".to_owned()
            })
        );
        let result = parse_changed(|document| {
            document["services"]["face recognition"] =
                json!({ "required": true, "weight": 1, "pass_at": 0.5 });
        });
        let text = error_text(result);
        assert!(text.contains("\"face recognition\""), "{text}");
        for service in Service::ALL {
            assert!(text.contains(&format!("\"{}\"", service.name())), "{text}");
        }
    }

    #[test]
    fn unknown_per_service_field_is_rejected() {
        let result = parse_changed(|document| face(document)["passat"] = json!(0.5));
        assert_eq!(
            result,
            Err(RuleSetError::UnknownField {
                field: "services.Face Recognition.passat".to_owned(),
                allowed: "required, weight, pass_at".to_owned(),
            })
        );
    }

    #[test]
    fn missing_fields_are_named_by_path() {
        let result = parse_changed(|document| {
            document.as_object_mut().unwrap().remove("min_score");
        });
        assert_eq!(
            error_text(result),
            "rule set field \"min_score\" is missing"
        );
        let result = parse_changed(|document| {
            face(document).as_object_mut().unwrap().remove("weight");
        });
        assert_eq!(
            error_text(result),
            "rule set field \"services.Face Recognition.weight\" is missing"
        );
        let result = parse_changed(|document| {
            document.as_object_mut().unwrap().remove("schema");
        });
        assert_eq!(error_text(result), "rule set field \"schema\" is missing");
    }

    #[test]
    fn wrong_types_are_named_by_path() {
        let cases: [(DocumentChange, &str); 9] = [
            (
                |document| document["version"] = json!("1"),
                "rule set field \"version\" must be a whole number from 1 to 4294967295, got \"1\"",
            ),
            (
                |document| document["version"] = json!(-1),
                "rule set field \"version\" must be a whole number from 1 to 4294967295, got -1",
            ),
            (
                |document| document["version"] = json!(4_294_967_296_u64),
                "rule set field \"version\" must be a whole number from 1 to 4294967295, got 4294967296",
            ),
            (
                |document| document["version"] = json!(1.5),
                "rule set field \"version\" must be a whole number from 1 to 4294967295, got 1.5",
            ),
            (
                |document| document["id"] = json!(7),
                "rule set field \"id\" must be a string, got 7",
            ),
            (
                |document| document["min_score"] = json!(null),
                "rule set field \"min_score\" must be a number, got null",
            ),
            (
                |document| document["schema"] = json!("1"),
                "rule set field \"schema\" must be a whole number, got \"1\"",
            ),
            (
                |document| face(document)["required"] = json!("yes"),
                "rule set field \"services.Face Recognition.required\" must be true or false, got \"yes\"",
            ),
            (
                |document| face(document)["pass_at"] = json!([0.5]),
                "rule set field \"services.Face Recognition.pass_at\" must be a number, got an array",
            ),
        ];
        for (change, expected) in cases {
            assert_eq!(error_text(parse_changed(change)), expected);
        }
    }

    #[test]
    fn long_strings_are_summarized_in_errors() {
        let result = parse_changed(|document| document["min_score"] = json!("x".repeat(41)));
        assert_eq!(
            error_text(result),
            "rule set field \"min_score\" must be a number, got a string of 41 characters"
        );
    }

    #[test]
    fn every_policy_field_rejects_other_values() {
        for field in ["not_enrolled", "removed_for_consent", "unavailable"] {
            let result = parse_changed(|document| document[field] = json!("maybe"));
            assert_eq!(
                error_text(result),
                format!("rule set field \"{field}\" must be \"fail\" or \"skip\", got \"maybe\"")
            );
            let result = parse_changed(|document| document[field] = json!("FAIL"));
            assert_eq!(
                result,
                Err(RuleSetError::InvalidPolicy {
                    field: field.to_owned(),
                    found: "\"FAIL\"".to_owned()
                })
            );
            let result = parse_changed(|document| document[field] = json!(true));
            assert!(error_text(result).contains(&format!("\"{field}\"")));
        }
    }

    #[test]
    fn both_policy_values_are_read() {
        let rules = parse_changed(|document| {
            document["not_enrolled"] = json!("skip");
            document["removed_for_consent"] = json!("fail");
            document["unavailable"] = json!("skip");
        })
        .expect("valid");
        assert_eq!(
            (
                rules.not_enrolled,
                rules.removed_for_consent,
                rules.unavailable
            ),
            (Policy::Skip, Policy::Fail, Policy::Skip)
        );
    }

    #[test]
    fn schema_is_checked_before_unknown_fields() {
        let result = RuleSet::from_json(r#"{ "schema": 2, "rules": [] }"#);
        assert_eq!(result, Err(RuleSetError::UnsupportedSchema { found: 2 }));
    }

    #[test]
    fn repeated_keys_are_rejected() {
        let text = DOCUMENTED_DEFAULT_JSON.replacen(
            "\"min_score\": 60,",
            "\"min_score\": 60, \"min_score\": 0,",
            1,
        );
        assert_ne!(text, DOCUMENTED_DEFAULT_JSON);
        let text = error_text(RuleSet::from_json(&text));
        assert!(
            text.starts_with("rule set is not readable JSON: key \"min_score\" appears twice in one object at line"),
            "{text}"
        );
    }

    #[test]
    fn malformed_json_is_a_syntax_error() {
        let result = RuleSet::from_json("{ \"schema\": 1, ");
        assert!(
            matches!(result, Err(RuleSetError::Syntax { .. })),
            "{result:?}"
        );
        assert!(error_text(RuleSet::from_json("")).starts_with("rule set is not readable JSON: "));
    }

    #[test]
    fn non_objects_are_rejected_where_objects_belong() {
        assert_eq!(
            error_text(RuleSet::from_json("[]")),
            "rule set must be a JSON object, got an array"
        );
        let result = parse_changed(|document| document["services"] = json!(["Face Recognition"]));
        assert_eq!(
            error_text(result),
            "rule set field \"services\" must be a JSON object, got an array"
        );
        let result = parse_changed(|document| *face(document) = json!(0.5));
        assert_eq!(
            error_text(result),
            "rule set field \"services.Face Recognition\" must be a JSON object, got 0.5"
        );
    }

    #[test]
    fn empty_services_are_rejected() {
        let result = parse_changed(|document| document["services"] = json!({}));
        assert_eq!(result, Err(RuleSetError::NoWeightedService));
    }
}
