//! The store on a real database (a SQLite file, or a PostgreSQL schema under
//! `VOUCH_TEST_POSTGRES`): persistence across reopen, schema version, WAL, refusal of a
//! newer schema, and sealed templates with their consent rules.

mod common;

use common::*;
use serde_json::json;
use vouch::service::{ConsentKind, FaceSource, Modality, TemplateModel, SCHEMA_VERSION};
use vouch::ApiKey;
use vouch::{Engine, Error, Service};
use vouch::{RuleSet, RuleSource};

fn model() -> TemplateModel {
    TemplateModel {
        model_id: "dlib-resnet29".to_owned(),
        model_version: 3,
    }
}

fn give_both(engine: &Engine, project: &str, fullname: &str) {
    for kind in [ConsentKind::Authorization, ConsentKind::Storage] {
        engine
            .consents()
            .set(project, fullname, kind, true)
            .unwrap();
    }
}

fn insert(engine: &Engine, fullname: &str, modality: Modality, data: &[u8]) -> vouch::Result<i64> {
    engine.store().insert_template(
        "p1",
        fullname,
        modality,
        &model(),
        data,
        engine.runtime().now_ms(),
    )
}

fn expect_error<T: std::fmt::Debug>(result: vouch::Result<T>) -> Error {
    result.expect_err("the call should fail")
}

#[test]
fn everything_survives_a_reopen() {
    let db = Db::new();
    let clock = manual_clock();
    let (key, session_id, start_request, template_id);
    {
        let engine = db.open_with_clock(&clock);
        key = create_key_with(&engine, "p1", FACE_AND_VOICE, Some("vip"));
        // The key's custom set is stored before the key decides anything (a key naming a set
        // that is not stored is refused).
        let mut project_rules = RuleSet::default_rules();
        project_rules.id = "project-rules".to_owned();
        engine.rules().set("p1", None, &project_rules).unwrap();
        let mut custom = RuleSet::default_rules();
        custom.id = "vip-rules".to_owned();
        custom.min_score = 80.0;
        engine.rules().set("p1", Some("vip"), &custom).unwrap();
        set_consent(&engine, &key.token, false, "alice", true);
        set_consent(&engine, &key.token, true, "alice", true);
        let response = vouch::api::handle(
            &engine,
            authed("POST", "/api-gateway/sessions/start", &key.token),
        );
        assert_eq!(response.status, 200);
        session_id = response.body["data"].as_str().unwrap().to_owned();
        start_request = response.request_id().to_owned();
        let bound = vouch::api::handle(
            &engine,
            gateway("/api-gateway/match-faces", &key.token, "alice")
                .header("X-Session-ID", &session_id)
                .header("X-Use-Prefilled-Video", "true"),
        );
        // match-faces binds the session, then finds nothing to compare: 400.
        assert_eq!(bound.status, 400, "{:?}", bound.body);
        template_id = insert(&engine, "alice", Modality::Face, b"face-template").unwrap();
    }
    clock.advance(60_000);
    let engine = db.open_with_clock(&clock);

    let keys = engine.api_keys().list("p1").unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].id, key.id);
    assert_eq!(keys[0].origin, "created");
    assert_eq!(keys[0].status, "active");
    assert_eq!(keys[0].scores_id.as_deref(), Some("vip"));
    assert_eq!(keys[0].created_at, START_TEXT);
    assert_eq!(
        keys[0].selected_services,
        vec!["Face Recognition", "Voice Recognition"]
    );
    // The token still authenticates against the reopened store.
    let api_key = engine
        .api_keys()
        .authenticate(Some(&format!("Bearer {}", key.token)))
        .unwrap();
    assert_eq!(
        api_key,
        ApiKey {
            key_id: key.id.clone(),
            project_id: "p1".to_owned(),
            services: vec![Service::FaceRecognition, Service::VoiceRecognition],
            scores_id: Some("vip".to_owned()),
        }
    );

    let consent = engine.consents().get("p1", "alice").unwrap();
    assert!(consent.authorization.given && consent.storage.given);
    assert_eq!(consent.authorization.given_at, Some(START_MS));
    assert_eq!(consent.storage.withdrawn_at, None);

    let session = engine.sessions().get("p1", &session_id).unwrap().unwrap();
    assert_eq!(session.user_fullname.as_deref(), Some("alice"));
    assert_eq!(session.key_id, key.id);
    assert_eq!(session.started_at, START_MS);
    assert_eq!(session.ended_at, None);
    // The lock survives too.
    let other = vouch::api::handle(
        &engine,
        gateway("/api-gateway/match-faces", &key.token, "bob")
            .header("X-Session-ID", &session_id)
            .header("X-Use-Prefilled-Video", "true"),
    );
    assert_error(&other, 403, "session belongs to another user");

    let row = engine.audit().get("p1", &start_request).unwrap().unwrap();
    assert_eq!(row.endpoint, "/api-gateway/sessions/start");
    assert_eq!(row.status_code, 200);
    assert_eq!(row.session_id.as_deref(), Some(session_id.as_str()));
    assert_eq!(row.created_at, START_MS);

    let templates = engine
        .store()
        .templates("p1", "alice", Modality::Face)
        .unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0].id, template_id);
    assert_eq!(templates[0].data, b"face-template");
    assert_eq!(templates[0].model, model());
    assert_eq!(templates[0].created_at, START_MS);

    let (rules, source) = engine.rules().for_key(&api_key).unwrap();
    assert_eq!((rules.id(), source), ("vip-rules", RuleSource::Custom));
    assert_eq!(rules.min_score, 80.0);
    let without_scores = ApiKey {
        scores_id: None,
        ..api_key
    };
    let (rules, source) = engine.rules().for_key(&without_scores).unwrap();
    assert_eq!((rules.id(), source), ("project-rules", RuleSource::Project));
}

#[test]
fn schema_version_and_wal_mode_on_the_file() {
    // SQLite on both runs: PRAGMAs, the file's WAL mode and sqlite_master.
    let db = Db::sqlite();
    let engine = db.open();
    const { assert!(SCHEMA_VERSION >= 1) };
    assert_eq!(engine.runtime().schema_version().unwrap(), SCHEMA_VERSION);
    let separate = db.sql();
    let version: u32 = separate.query_row("PRAGMA user_version", &[], |row| row.get(0));
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = separate.query_row("PRAGMA journal_mode", &[], |row| row.get(0));
    assert_eq!(mode, "wal");
    drop(separate);
    drop(engine);
    // WAL is a property of the file: it is still in WAL mode after the engine closed, and
    // reopening does not migrate again.
    let mode: String = db
        .sql()
        .query_row("PRAGMA journal_mode", &[], |row| row.get(0));
    assert_eq!(mode, "wal");
    let engine = db.open();
    assert_eq!(engine.runtime().schema_version().unwrap(), SCHEMA_VERSION);
    let tables = db.count(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN \
         ('projects','api_keys','users','consents','templates','sessions','sim_swap_results',\
         'transactions','scoring_rule_sets','webhook_endpoints')",
    );
    assert_eq!(tables, 10);
}

/// Moves the database's recorded schema version to `version`: `PRAGMA user_version` on SQLite,
/// a row of `vouch_schema` (created when missing) on PostgreSQL.
fn set_schema_version(db: &Db, version: u32) {
    if db.is_postgres() {
        let sql = db.sql();
        sql.execute_batch(
            "CREATE TABLE IF NOT EXISTS vouch_schema (
                 version     BIGINT PRIMARY KEY,
                 applied_at  BIGINT NOT NULL
             )",
        );
        sql.execute(
            "INSERT INTO vouch_schema (version, applied_at) VALUES (?1, 0)",
            &[&version],
        );
    } else {
        db.sql()
            .execute_batch(&format!("PRAGMA user_version = {version}"));
    }
}

/// The database's recorded schema version, read outside the engine.
fn stored_schema_version(db: &Db) -> i64 {
    if db.is_postgres() {
        db.count("SELECT COALESCE(MAX(version), 0) FROM vouch_schema")
    } else {
        db.count("PRAGMA user_version")
    }
}

#[test]
fn a_newer_schema_is_refused() {
    let expected = format!(
        "storage error: database schema version {} is newer than this library supports \
         ({SCHEMA_VERSION}); upgrade the library",
        SCHEMA_VERSION + 1
    );
    // An existing vouch database moved forward by a newer library.
    let db = Db::new();
    drop(db.open());
    set_schema_version(&db, SCHEMA_VERSION + 1);
    let error = Engine::open(db.options()).unwrap_err();
    assert!(matches!(error, Error::Storage(_)), "{error:?}");
    assert_eq!(error.to_string(), expected);
    // The refusal did not touch the file's version.
    assert_eq!(stored_schema_version(&db), i64::from(SCHEMA_VERSION + 1));

    // A fresh file that only carries a newer version.
    let fresh = Db::new();
    set_schema_version(&fresh, SCHEMA_VERSION + 5);
    let error = Engine::open(fresh.options()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "storage error: database schema version {} is newer than this library supports \
             ({SCHEMA_VERSION}); upgrade the library",
            SCHEMA_VERSION + 5
        )
    );
}

#[test]
fn templates_round_trip_per_user_and_modality() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    give_both(&engine, "p1", "alice");
    let first = insert(&engine, "alice", Modality::Face, &[1, 2, 3, 4]).unwrap();
    clock.advance(5);
    let second = insert(&engine, "alice", Modality::Face, &[5; 512]).unwrap();
    let voice = insert(&engine, "alice", Modality::Voice, b"voice").unwrap();
    assert!(first < second && second < voice);

    let faces = engine
        .store()
        .templates("p1", "alice", Modality::Face)
        .unwrap();
    assert_eq!(faces.len(), 2);
    assert_eq!(
        (faces[0].id, faces[0].data.as_slice(), faces[0].created_at),
        (first, &[1u8, 2, 3, 4][..], START_MS)
    );
    assert_eq!(
        (faces[1].id, faces[1].data.as_slice(), faces[1].created_at),
        (second, &[5u8; 512][..], START_MS + 5)
    );
    assert!(faces.iter().all(|t| t.modality == Modality::Face));
    let voices = engine
        .store()
        .templates("p1", "alice", Modality::Voice)
        .unwrap();
    assert_eq!(voices.len(), 1);
    assert_eq!(voices[0].data, b"voice");
    assert_eq!(voices[0].modality, Modality::Voice);
    let count = |modality| {
        engine
            .store()
            .template_count("p1", "alice", modality)
            .unwrap()
    };
    assert_eq!((count(Modality::Face), count(Modality::Voice)), (2, 1));

    // Sealed at rest: the plaintext is not in the row.
    let sealed: Vec<u8> = db.sql().query_row(
        "SELECT sealed FROM templates WHERE id = ?1",
        &[&voice],
        |row| row.get(0),
    );
    assert!(!sealed.windows(5).any(|window| window == b"voice"));
    assert_eq!(sealed.len(), 24 + 5 + 16);
}

#[test]
fn another_template_key_fails_at_open() {
    let db = Db::new();
    {
        let engine = db.open();
        give_both(&engine, "p1", "alice");
        insert(&engine, "alice", Modality::Face, b"secret face").unwrap();
    }
    let wrong_key = "invalid options: template_key does not open this database's templates (they were sealed with another key)";
    let error =
        Engine::open(options(db.path_str(), &other_template_key(), Some(SECRET))).unwrap_err();
    assert_eq!(error.to_string(), wrong_key);
    // Nothing was written or deleted by the refused open; the right key still opens it.
    assert_eq!(db.count("SELECT COUNT(*) FROM templates"), 1);
    assert_eq!(db.count("SELECT COUNT(*) FROM key_check"), 1);
    let engine = db.open();
    let templates = engine
        .store()
        .templates("p1", "alice", Modality::Face)
        .unwrap();
    assert_eq!(templates[0].data, b"secret face");
    drop(engine);

    // A database made before the key check (schema 2, no row): the key must open its oldest
    // template, and then the row is written.
    db.sql().execute("DELETE FROM key_check", &[]);
    let error =
        Engine::open(options(db.path_str(), &other_template_key(), Some(SECRET))).unwrap_err();
    assert_eq!(error.to_string(), wrong_key);
    assert_eq!(db.count("SELECT COUNT(*) FROM key_check"), 0);
    drop(db.open());
    assert_eq!(db.count("SELECT COUNT(*) FROM key_check"), 1);

    // A new, empty database is bound to the first key that opens it.
    let empty = Db::new();
    drop(empty.open());
    let error = Engine::open(options(
        empty.path_str(),
        &other_template_key(),
        Some(SECRET),
    ))
    .unwrap_err();
    assert_eq!(error.to_string(), wrong_key);
}

#[test]
fn a_template_moved_to_another_user_does_not_open() {
    let db = Db::new();
    let engine = db.open();
    give_both(&engine, "p1", "alice");
    give_both(&engine, "p1", "bob");
    insert(&engine, "alice", Modality::Face, b"alice face").unwrap();
    let bob_id: i64 = db.sql().query_row(
        "SELECT id FROM users WHERE project_id = 'p1' AND fullname = 'bob'",
        &[],
        |row| row.get(0),
    );
    let moved = db
        .sql()
        .execute("UPDATE templates SET user_id = ?1", &[&bob_id]);
    assert_eq!(moved, 1);
    let error = expect_error(engine.store().templates("p1", "bob", Modality::Face));
    assert!(matches!(error, Error::TemplateUnreadable), "{error:?}");
    assert!(engine
        .store()
        .templates("p1", "alice", Modality::Face)
        .unwrap()
        .is_empty());
}

#[test]
fn a_template_relabelled_as_another_modality_or_model_does_not_open() {
    let db = Db::new();
    let engine = db.open();
    give_both(&engine, "p1", "alice");
    insert(&engine, "alice", Modality::Face, b"alice face").unwrap();
    db.sql()
        .execute("UPDATE templates SET modality = 'voice'", &[]);
    let error = expect_error(engine.store().templates("p1", "alice", Modality::Voice));
    assert!(matches!(error, Error::TemplateUnreadable), "{error:?}");
    db.sql().execute(
        "UPDATE templates SET modality = 'face', model_version = 4",
        &[],
    );
    let error = expect_error(engine.store().templates("p1", "alice", Modality::Face));
    assert!(matches!(error, Error::TemplateUnreadable), "{error:?}");
    db.sql()
        .execute("UPDATE templates SET model_version = 3", &[]);
    assert_eq!(
        engine
            .store()
            .templates("p1", "alice", Modality::Face)
            .unwrap()[0]
            .data,
        b"alice face"
    );
}

#[test]
fn a_flipped_byte_does_not_open() {
    let db = Db::new();
    let engine = db.open();
    give_both(&engine, "p1", "alice");
    let id = insert(&engine, "alice", Modality::Voice, b"voice print").unwrap();
    let original: Vec<u8> = db.sql().query_row(
        "SELECT sealed FROM templates WHERE id = ?1",
        &[&id],
        |row| row.get(0),
    );
    // A byte of the nonce, of the ciphertext and of the tag.
    for index in [0, 24, original.len() - 1] {
        let mut flipped = original.clone();
        flipped[index] ^= 0x01;
        db.sql().execute(
            "UPDATE templates SET sealed = ?1 WHERE id = ?2",
            &[&flipped, &id],
        );
        let error = expect_error(engine.store().templates("p1", "alice", Modality::Voice));
        assert!(
            matches!(error, Error::TemplateUnreadable),
            "byte {index}: {error:?}"
        );
    }
    // Truncated and a wrong format version.
    db.sql().execute(
        "UPDATE templates SET sealed = ?1 WHERE id = ?2",
        &[&original[..20].to_vec(), &id],
    );
    let error = expect_error(engine.store().templates("p1", "alice", Modality::Voice));
    assert!(matches!(error, Error::TemplateUnreadable), "{error:?}");
    db.sql().execute(
        "UPDATE templates SET sealed = ?1, format_version = 2 WHERE id = ?2",
        &[&original, &id],
    );
    let error = expect_error(engine.store().templates("p1", "alice", Modality::Voice));
    assert!(matches!(error, Error::TemplateUnreadable), "{error:?}");
    db.sql()
        .execute("UPDATE templates SET format_version = 1", &[]);
    let templates = engine
        .store()
        .templates("p1", "alice", Modality::Voice)
        .unwrap();
    assert_eq!(templates[0].data, b"voice print");
}

fn consent_error(result: vouch::Result<impl std::fmt::Debug>) -> String {
    match result {
        Err(Error::ConsentRequired(text)) => text,
        other => panic!("expected ConsentRequired, got {other:?}"),
    }
}

#[test]
fn writing_needs_both_consents_and_a_failed_write_leaves_no_row() {
    let db = Db::new();
    let engine = db.open();
    assert_eq!(
        consent_error(insert(&engine, "alice", Modality::Face, b"t")),
        "authorization consent is required"
    );
    // No consent at all: the failed write created no project, user or template.
    assert_eq!(db.count("SELECT COUNT(*) FROM users"), 0);
    assert_eq!(db.count("SELECT COUNT(*) FROM templates"), 0);

    engine
        .consents()
        .set("p1", "alice", ConsentKind::Authorization, true)
        .unwrap();
    assert_eq!(
        consent_error(insert(&engine, "alice", Modality::Face, b"t")),
        "storage consent is required"
    );
    assert_eq!(db.count("SELECT COUNT(*) FROM users"), 1);
    assert_eq!(db.count("SELECT COUNT(*) FROM templates"), 0);
    assert_eq!(
        engine
            .store()
            .template_count("p1", "alice", Modality::Face)
            .unwrap(),
        0
    );

    // Storage consent alone is not enough either.
    engine
        .consents()
        .set("p1", "bob", ConsentKind::Storage, true)
        .unwrap();
    assert_eq!(
        consent_error(insert(&engine, "bob", Modality::Voice, b"t")),
        "authorization consent is required"
    );
    assert_eq!(db.count("SELECT COUNT(*) FROM users"), 2);
    assert_eq!(db.count("SELECT COUNT(*) FROM templates"), 0);

    // Consent in another project does not count.
    give_both(&engine, "p2", "carol");
    assert_eq!(
        consent_error(insert(&engine, "carol", Modality::Face, b"t")),
        "authorization consent is required"
    );

    engine
        .consents()
        .set("p1", "alice", ConsentKind::Storage, true)
        .unwrap();
    insert(&engine, "alice", Modality::Face, b"t").unwrap();
    assert_eq!(db.count("SELECT COUNT(*) FROM templates"), 1);
}

#[test]
fn reading_needs_authorization_consent() {
    let db = Db::new();
    let engine = db.open();
    assert_eq!(
        consent_error(engine.store().templates("p1", "nobody", Modality::Face)),
        "authorization consent is required"
    );
    give_both(&engine, "p1", "alice");
    insert(&engine, "alice", Modality::Face, b"t").unwrap();
    engine
        .consents()
        .set("p1", "alice", ConsentKind::Authorization, false)
        .unwrap();
    assert_eq!(
        consent_error(engine.store().templates("p1", "alice", Modality::Face)),
        "authorization consent is required"
    );
    // Withdrawing authorization consent keeps the stored template; giving it again reads it.
    assert_eq!(
        engine
            .store()
            .template_count("p1", "alice", Modality::Face)
            .unwrap(),
        1
    );
    engine
        .consents()
        .set("p1", "alice", ConsentKind::Authorization, true)
        .unwrap();
    assert_eq!(
        engine
            .store()
            .templates("p1", "alice", Modality::Face)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn withdrawing_storage_consent_deletes_the_users_templates() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    give_both(&engine, "p1", "alice");
    give_both(&engine, "p1", "bob");
    insert(&engine, "alice", Modality::Face, b"a1").unwrap();
    insert(&engine, "alice", Modality::Voice, b"a2").unwrap();
    insert(&engine, "bob", Modality::Face, b"b1").unwrap();
    clock.advance(1_000);

    let response = vouch::api::handle(&engine, consent_request(&key.token, true, "alice", false));
    assert_eq!(response.status, 200);
    assert_eq!(
        response.body,
        json!({
            "message": "storage consent withdrawn",
            "data": {
                "consent_type": "storage",
                "is_consent_given": false,
                "given_at": START_TEXT,
                "withdrawn_at": "2026-11-21T10:32:06.123Z",
                "user_fullname": "alice",
                "templates_deleted": 2,
            }
        })
    );
    assert_eq!(db.count("SELECT COUNT(*) FROM templates"), 1);
    assert_eq!(
        engine
            .store()
            .template_count("p1", "bob", Modality::Face)
            .unwrap(),
        1
    );
    // Withdrawing again deletes nothing more.
    let again = vouch::api::handle(&engine, consent_request(&key.token, true, "alice", false));
    assert_eq!(again.body["data"]["templates_deleted"], 0);

    // Through the Rust API the count comes back too.
    let (record, deleted) = engine
        .consents()
        .set("p1", "bob", ConsentKind::Storage, false)
        .unwrap();
    assert_eq!((record.given, deleted), (false, 1));
    assert_eq!(db.count("SELECT COUNT(*) FROM templates"), 0);

    // Giving storage consent answers without templates_deleted.
    let given = vouch::api::handle(&engine, consent_request(&key.token, true, "alice", true));
    assert_eq!(given.body["message"], "storage consent given");
    assert!(given.body["data"].get("templates_deleted").is_none());
}

#[test]
fn in_memory_databases_work_too() {
    let engine = Engine::open(options(":memory:", TEMPLATE_KEY, Some(SECRET))).unwrap();
    assert_eq!(engine.runtime().schema_version().unwrap(), SCHEMA_VERSION);
    let key = create_key(&engine, "p1");
    assert_eq!(start_session(&engine, &key.token).len(), 37);
}

#[test]
fn unusable_database_paths_are_storage_errors() {
    // SQLite on both runs: it writes garbage into the database file itself.
    let db = Db::sqlite();
    std::fs::write(&db.path, vec![0x42; 8192]).unwrap();
    let error = Engine::open(db.options()).unwrap_err();
    assert!(matches!(error, Error::Storage(_)), "{error:?}");
    assert!(
        error.to_string().contains("file is not a database"),
        "{error}"
    );
    // The file was left as it was.
    assert_eq!(std::fs::read(&db.path).unwrap(), vec![0x42; 8192]);

    let missing = db.dir.path().join("no-such-dir").join("vouch.sqlite");
    let missing = missing.to_str().unwrap();
    let error = Engine::open(options(missing, TEMPLATE_KEY, Some(SECRET))).unwrap_err();
    assert!(matches!(error, Error::Storage(_)), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with(&format!("storage error: cannot open database {missing}: ")),
        "{error}"
    );
}

/// A session bound to `fullname` in project p1, with a video face kept at `at_ms`.
fn session_with_face(engine: &Engine, id: &str, fullname: &str, at_ms: i64) -> vouch::Result<()> {
    let store = engine.store();
    store.insert_session(id, "p1", "key_1", at_ms)?;
    store.bind_session("p1", id, fullname)?;
    store.replace_session_faces(
        "p1",
        (id, fullname),
        FaceSource::Video,
        &model(),
        &[b"live face".to_vec()],
        at_ms,
    )
}

/// The size of the SQLite file's write-ahead log (the file only SQLite has: the WAL checks run
/// on SQLite only, the rest of each test on both backends).
fn wal_bytes(db: &Db) -> u64 {
    assert!(!db.is_postgres(), "a PostgreSQL database has no WAL file");
    std::fs::metadata(format!("{}-wal", db.path_str())).map_or(0, |m| m.len())
}

#[test]
fn session_faces_need_both_consents_and_go_when_either_is_withdrawn() {
    let db = Db::new();
    let engine = db.open();
    engine
        .consents()
        .set("p1", "alice", ConsentKind::Authorization, true)
        .unwrap();
    // Authorization alone: processing, not keeping.
    let error = expect_error(session_with_face(&engine, "sess_a", "alice", 1_000));
    assert_eq!(error.to_string(), "storage consent is required");
    assert_eq!(db.count("SELECT COUNT(*) FROM session_faces"), 0);

    give_both(&engine, "p1", "alice");
    give_both(&engine, "p1", "bob");
    session_with_face(&engine, "sess_b", "alice", 1_000).unwrap();
    session_with_face(&engine, "sess_c", "bob", 1_000).unwrap();
    assert_eq!(db.count("SELECT COUNT(*) FROM session_faces"), 2);
    if !db.is_postgres() {
        assert!(wal_bytes(&db) > 0);
    }
    // Withdrawing authorization consent deletes alice's kept faces (not bob's), and the
    // write-ahead log holding their pages is truncated.
    engine
        .consents()
        .set("p1", "alice", ConsentKind::Authorization, false)
        .unwrap();
    assert_eq!(
        db.count("SELECT COUNT(*) FROM session_faces WHERE session_id = 'sess_b'"),
        0
    );
    assert_eq!(db.count("SELECT COUNT(*) FROM session_faces"), 1);
    if !db.is_postgres() {
        assert_eq!(wal_bytes(&db), 0);
    }
    // And storage consent the same way.
    engine
        .consents()
        .set("p1", "bob", ConsentKind::Storage, false)
        .unwrap();
    assert_eq!(db.count("SELECT COUNT(*) FROM session_faces"), 0);
}

#[test]
fn session_faces_expire_even_in_a_session_never_ended() {
    let db = Db::new();
    let engine = db.open();
    give_both(&engine, "p1", "alice");
    session_with_face(&engine, "sess_old", "alice", 1_000).unwrap();
    session_with_face(&engine, "sess_new", "alice", 5_000).unwrap();
    assert_eq!(engine.store().purge_session_faces(1_000).unwrap(), 0);
    assert_eq!(engine.store().purge_session_faces(2_000).unwrap(), 1);
    assert_eq!(
        db.count("SELECT COUNT(*) FROM session_faces WHERE session_id = 'sess_new'"),
        1
    );
    if !db.is_postgres() {
        assert_eq!(wal_bytes(&db), 0);
    }
}
