//! Scoring rule precedence through the engine: custom (the key's scores_id) > project > default,
//! with rule sets stored in the database and invalid sets rejected.

mod common;

use common::*;
use vouch::ApiKey;
use vouch::{Engine, Error, Service};
use vouch::{RuleSet, RuleSetError, RuleSource};

fn rules(id: &str, min_score: f64) -> RuleSet {
    let mut rules = RuleSet::default_rules();
    rules.id = id.to_owned();
    rules.min_score = min_score;
    rules
}

fn key(project: &str, scores_id: Option<&str>) -> ApiKey {
    ApiKey {
        key_id: "key_test".to_owned(),
        project_id: project.to_owned(),
        services: vec![Service::FaceRecognition],
        scores_id: scores_id.map(str::to_owned),
    }
}

fn chosen(engine: &Engine, key: &ApiKey) -> (String, RuleSource) {
    let (rules, source) = engine.rules().for_key(key).unwrap();
    (rules.id().to_owned(), source)
}

fn pair(id: &str, source: RuleSource) -> (String, RuleSource) {
    (id.to_owned(), source)
}

#[test]
fn default_applies_when_nothing_is_stored() {
    let db = Db::new();
    let engine = db.open();
    let (rules, source) = engine.rules().for_key(&key("p1", None)).unwrap();
    assert_eq!(source, RuleSource::Default);
    assert_eq!(rules, RuleSet::default_rules());
    // A scores_id without a stored set is a key that cannot be used, never the default.
    assert_unusable(&engine, &key("p1", Some("vip")), "vip", "p1");
}

/// A key naming a set that is not stored fails closed, saying which.
fn assert_unusable(engine: &Engine, key: &ApiKey, scores_id: &str, project: &str) {
    match engine.rules().for_key(key) {
        Err(Error::Auth(vouch::AuthError::Invalid(why))) => assert_eq!(
            why,
            format!(
                "scores_id \"{scores_id}\" names no scoring rules stored for project \"{project}\""
            )
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn custom_beats_project_beats_default() {
    let db = Db::new();
    let engine = db.open();
    engine
        .rules()
        .set("p1", None, &rules("project-p1", 70.0))
        .unwrap();
    assert_eq!(
        chosen(&engine, &key("p1", None)),
        pair("project-p1", RuleSource::Project)
    );
    // A scores_id with no stored set does not fall back to the project's.
    assert_unusable(&engine, &key("p1", Some("vip")), "vip", "p1");
    engine
        .rules()
        .set("p1", Some("vip"), &rules("vip-set", 90.0))
        .unwrap();
    let (vip, source) = engine.rules().for_key(&key("p1", Some("vip"))).unwrap();
    assert_eq!(source, RuleSource::Custom);
    assert_eq!(vip, rules("vip-set", 90.0));
    // Keys without scores_id still get the project's; another scores_id is unusable.
    assert_eq!(
        chosen(&engine, &key("p1", None)),
        pair("project-p1", RuleSource::Project)
    );
    assert_unusable(&engine, &key("p1", Some("gold")), "gold", "p1");
    // Other projects see none of p1's sets, not even a custom set under the same scores_id.
    assert_unusable(&engine, &key("p2", Some("vip")), "vip", "p2");
    assert_eq!(
        chosen(&engine, &key("p2", None)),
        pair("default", RuleSource::Default)
    );
}

#[test]
fn a_custom_set_applies_without_a_project_set() {
    let db = Db::new();
    let engine = db.open();
    engine
        .rules()
        .set("p1", Some("vip"), &rules("vip-only", 75.0))
        .unwrap();
    assert_eq!(
        chosen(&engine, &key("p1", Some("vip"))),
        pair("vip-only", RuleSource::Custom)
    );
    assert_eq!(
        chosen(&engine, &key("p1", None)),
        pair("default", RuleSource::Default)
    );
}

#[test]
fn keys_from_the_request_surface_carry_their_scores_id() {
    let db = Db::new();
    let engine = db.open();
    let vip = create_key_with(&engine, "p1", FACE_AND_VOICE, Some("vip"));
    // Through the request path, before the set is stored: the spec's status for a key that fails
    // validation (500), with the reason; nothing is decided by laxer rules.
    let early = vouch::api::handle(
        &engine,
        vouch::api::Request::new("GET", "/api-gateway/attempts")
            .bearer(&vip.token)
            .header("X-User-Fullname", "Ada"),
    );
    assert_eq!(early.status, 500, "{}", early.body);
    assert!(
        early
            .body
            .to_string()
            .contains("scores_id \\\"vip\\\" names no scoring rules stored for project \\\"p1\\\""),
        "{}",
        early.body
    );
    let plain = create_key(&engine, "p1");
    engine
        .rules()
        .set("p1", None, &rules("project", 60.0))
        .unwrap();
    engine
        .rules()
        .set("p1", Some("vip"), &rules("vip", 95.0))
        .unwrap();
    let authenticate = |token: &str| {
        engine
            .api_keys()
            .authenticate(Some(&format!("Bearer {token}")))
            .unwrap()
    };
    assert_eq!(
        chosen(&engine, &authenticate(&vip.token)),
        pair("vip", RuleSource::Custom)
    );
    assert_eq!(
        chosen(&engine, &authenticate(&plain.token)),
        pair("project", RuleSource::Project)
    );
    // A backend key naming a scores_id is resolved the same way.
    let mut claims = claims("p1", "backend-1");
    claims.scores_id = Some("vip".to_owned());
    let token = backend_verifier(SECRET).mint(&claims).unwrap();
    assert_eq!(
        chosen(&engine, &authenticate(&token)),
        pair("vip", RuleSource::Custom)
    );
}

#[test]
fn storing_again_replaces_and_survives_reopen() {
    let db = Db::new();
    {
        let engine = db.open();
        engine
            .rules()
            .set("p1", None, &rules("first", 60.0))
            .unwrap();
        let mut second = rules("second", 65.5);
        second.version = 2;
        engine.rules().set("p1", None, &second).unwrap();
        engine
            .rules()
            .set("p1", Some("vip"), &rules("vip", 80.0))
            .unwrap();
    }
    assert_eq!(db.count("SELECT COUNT(*) FROM scoring_rule_sets"), 2);
    let engine = db.open();
    let (project, source) = engine.rules().for_key(&key("p1", None)).unwrap();
    assert_eq!(source, RuleSource::Project);
    assert_eq!(
        (project.id(), project.version(), project.min_score),
        ("second", 2, 65.5)
    );
    let mut expected = rules("second", 65.5);
    expected.version = 2;
    assert_eq!(project, expected);
    assert_eq!(
        chosen(&engine, &key("p1", Some("vip"))),
        pair("vip", RuleSource::Custom)
    );
    // What is stored is the rule set's own JSON.
    let stored: String = db.sql().query_row(
        "SELECT rules FROM scoring_rule_sets WHERE project_id = 'p1' AND scores_id = 'vip'",
        &[],
        |row| row.get(0),
    );
    assert_eq!(RuleSet::from_json(&stored).unwrap(), rules("vip", 80.0));
}

#[test]
fn invalid_rule_sets_are_rejected_and_not_stored() {
    let db = Db::new();
    let engine = db.open();
    let rule_error = |set: &RuleSet| match engine.rules().set("p1", None, set) {
        Err(Error::RuleSet(error)) => error,
        other => panic!("expected a rule set error, got {other:?}"),
    };
    let mut version_zero = rules("v0", 60.0);
    version_zero.version = 0;
    assert_eq!(
        rule_error(&version_zero),
        RuleSetError::InvalidVersion { found: 0 }
    );
    let too_high = rules("high", 101.0);
    assert_eq!(
        rule_error(&too_high).to_string(),
        "rule set field \"min_score\" must be between 0 and 100, got 101"
    );
    assert_eq!(rule_error(&rules("", 60.0)), RuleSetError::EmptyId);
    let mut no_weight = rules("none", 60.0);
    for rule in no_weight.services.values_mut() {
        rule.weight = 0.0;
    }
    assert_eq!(rule_error(&no_weight), RuleSetError::NoWeightedService);
    let mut bad_pass = rules("pass", 60.0);
    bad_pass
        .services
        .get_mut(&Service::FaceRecognition)
        .unwrap()
        .pass_at = 1.5;
    assert_eq!(
        rule_error(&bad_pass).to_string(),
        "rule set field \"services.Face Recognition.pass_at\" must be between 0 and 1, got 1.5"
    );
    let mut negative = rules("neg", 60.0);
    negative
        .services
        .get_mut(&Service::VoiceRecognition)
        .unwrap()
        .weight = -1.0;
    assert_eq!(
        rule_error(&negative).to_string(),
        "rule set field \"services.Voice Recognition.weight\" must be a finite number of at \
         least 0, got -1"
    );
    let mut schema = rules("schema", 60.0);
    schema.schema = 2;
    assert_eq!(
        rule_error(&schema),
        RuleSetError::UnsupportedSchema { found: 2 }
    );
    // Empty identifiers are refused before anything is written.
    for (project, scores_id) in [("", None), ("p1", Some(""))] {
        match engine.rules().set(project, scores_id, &rules("ok", 60.0)) {
            Err(Error::InvalidArgument(text)) => {
                assert_eq!(text, "project_id and scores_id must not be empty")
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(db.count("SELECT COUNT(*) FROM scoring_rule_sets"), 0);
    assert_eq!(
        chosen(&engine, &key("p1", None)),
        pair("default", RuleSource::Default)
    );
    // A rejected replacement keeps the stored set.
    engine
        .rules()
        .set("p1", None, &rules("kept", 60.0))
        .unwrap();
    rule_error(&too_high);
    assert_eq!(
        chosen(&engine, &key("p1", None)),
        pair("kept", RuleSource::Project)
    );
}

#[test]
fn a_corrupted_stored_set_is_an_error_not_a_silent_fallback() {
    let db = Db::new();
    let engine = db.open();
    engine
        .rules()
        .set("p1", Some("vip"), &rules("vip", 80.0))
        .unwrap();
    db.sql().execute(
        "UPDATE scoring_rule_sets SET rules = '{\"schema\": 1}' WHERE scores_id = 'vip'",
        &[],
    );
    match engine.rules().for_key(&key("p1", Some("vip"))) {
        Err(Error::RuleSet(error)) => assert_eq!(
            error,
            RuleSetError::MissingField {
                field: "id".to_owned()
            }
        ),
        other => panic!("{other:?}"),
    }
}
