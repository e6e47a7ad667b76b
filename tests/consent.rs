//! Consent endpoints: give, withdraw and read authorization and storage consent, per user per
//! project, persisting across sessions and reopen.

mod common;

use common::*;
use serde_json::json;
use vouch::api::Request;
use vouch::service::ConsentKind;

const AUTH_BODY: &str =
    "invalid request body (an object with is_consent_given and user_fullname): ";

fn raw_body(path: &str, token: &str, body: &str) -> Request {
    let mut request = authed("POST", path, token);
    request.body = Some(body.as_bytes().to_vec());
    request
}

#[test]
fn giving_and_reading_authorization_consent() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    let response = vouch::api::handle(&engine, consent_request(&key.token, false, "alice", true));
    assert_eq!(response.status, 200);
    assert_eq!(
        response.body,
        json!({
            "message": "authorization consent given",
            "data": {
                "consent_type": "authorization",
                "is_consent_given": true,
                "given_at": START_TEXT,
                "withdrawn_at": null,
                "user_fullname": "alice",
            }
        })
    );
    let read = vouch::api::handle(
        &engine,
        authed(
            "GET",
            "/api-consent/consent?user_fullname=alice",
            &key.token,
        ),
    );
    assert_eq!(read.status, 200);
    assert_eq!(
        read.body,
        json!({
            "message": "ok",
            "data": {
                "consent_type": "authorization",
                "is_consent_given": true,
                "given_at": START_TEXT,
                "withdrawn_at": null,
                "user_fullname": "alice",
            }
        })
    );
    // Storage consent is separate and still not given.
    let read = vouch::api::handle(
        &engine,
        authed(
            "GET",
            "/api-consent/strg-consent?user_fullname=alice",
            &key.token,
        ),
    );
    assert_eq!(
        read.body,
        json!({
            "message": "ok",
            "data": {
                "consent_type": "storage",
                "is_consent_given": false,
                "given_at": null,
                "withdrawn_at": null,
                "user_fullname": "alice",
            }
        })
    );
}

#[test]
fn storage_consent_and_status() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    let response = vouch::api::handle(&engine, consent_request(&key.token, true, "alice", true));
    assert_eq!(
        response.body,
        json!({
            "message": "storage consent given",
            "data": {
                "consent_type": "storage",
                "is_consent_given": true,
                "given_at": START_TEXT,
                "withdrawn_at": null,
                "user_fullname": "alice",
            }
        })
    );
    clock.advance(1_000);
    set_consent(&engine, &key.token, false, "alice", true);
    clock.advance(1_000);
    set_consent(&engine, &key.token, false, "alice", false);
    let status = vouch::api::handle(
        &engine,
        authed("GET", "/api-consent/status?user_fullname=alice", &key.token),
    );
    assert_eq!(status.status, 200);
    assert_eq!(
        status.body,
        json!({
            "message": "ok",
            "data": {
                "user_fullname": "alice",
                "authorization": {
                    "consent_type": "authorization",
                    "is_consent_given": false,
                    "given_at": "2026-11-21T10:32:06.123Z",
                    "withdrawn_at": "2026-11-21T10:32:07.123Z",
                },
                "storage": {
                    "consent_type": "storage",
                    "is_consent_given": true,
                    "given_at": START_TEXT,
                    "withdrawn_at": null,
                },
            }
        })
    );
    // A user never seen has neither consent.
    let status = vouch::api::handle(
        &engine,
        authed(
            "GET",
            "/api-consent/status?user_fullname=nobody",
            &key.token,
        ),
    );
    assert_eq!(
        status.body["data"]["authorization"]["is_consent_given"],
        false
    );
    assert_eq!(status.body["data"]["storage"]["given_at"], json!(null));
    // Reading creates no user.
    assert_eq!(db.count("SELECT COUNT(*) FROM users"), 1);
}

#[test]
fn withdrawing_and_giving_again_keeps_both_times() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    set_consent(&engine, &key.token, false, "alice", true);
    clock.advance(1_000);
    let withdrawn = vouch::api::handle(&engine, consent_request(&key.token, false, "alice", false));
    assert_eq!(
        withdrawn.body,
        json!({
            "message": "authorization consent withdrawn",
            "data": {
                "consent_type": "authorization",
                "is_consent_given": false,
                "given_at": START_TEXT,
                "withdrawn_at": "2026-11-21T10:32:06.123Z",
                "user_fullname": "alice",
            }
        })
    );
    // Withdrawing authorization consent does not report templates.
    assert!(withdrawn.body["data"].get("templates_deleted").is_none());
    clock.advance(1_000);
    let given = vouch::api::handle(&engine, consent_request(&key.token, false, "alice", true));
    assert_eq!(given.body["data"]["given_at"], "2026-11-21T10:32:07.123Z");
    assert_eq!(
        given.body["data"]["withdrawn_at"],
        "2026-11-21T10:32:06.123Z"
    );
    assert_eq!(given.body["data"]["is_consent_given"], true);
    let state = engine.consents().get("p1", "alice").unwrap();
    assert!(state.authorization.given);
    assert_eq!(state.authorization.given_at, Some(START_MS + 2_000));
    assert_eq!(state.authorization.withdrawn_at, Some(START_MS + 1_000));
}

#[test]
fn bad_bodies_are_400_and_change_nothing() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    for path in ["/api-consent/consent", "/api-consent/strg-consent"] {
        let missing = "request body must be JSON with is_consent_given and user_fullname";
        assert_error(
            &vouch::api::handle(&engine, authed("POST", path, &key.token)),
            400,
            missing,
        );
        assert_error(
            &vouch::api::handle(&engine, raw_body(path, &key.token, " \n")),
            400,
            missing,
        );
        let cases = [
            (
                r#"{"is_consent_given":true,"user_fullname":"alice","note":"x"}"#,
                "unknown field `note`",
            ),
            (
                r#"{"is_consent_given":"yes","user_fullname":"alice"}"#,
                "invalid type: string \"yes\", expected a boolean",
            ),
            (
                r#"{"is_consent_given":1,"user_fullname":"alice"}"#,
                "invalid type: integer `1`, expected a boolean",
            ),
            (
                r#"{"is_consent_given":true,"user_fullname":42}"#,
                "invalid type: integer `42`, expected a string",
            ),
            (
                r#"{"is_consent_given":true}"#,
                "missing field `user_fullname`",
            ),
            (
                r#"{"user_fullname":"alice"}"#,
                "missing field `is_consent_given`",
            ),
            (r#"[true,"alice",1]"#, "trailing characters"),
            ("is_consent_given=true", "expected value"),
        ];
        for (body, fragment) in cases {
            let response = vouch::api::handle(&engine, raw_body(path, &key.token, body));
            assert_400_like(&response, AUTH_BODY, fragment);
        }
        for fullname in ["", "new\nline"] {
            let response = vouch::api::handle(
                &engine,
                authed("POST", path, &key.token)
                    .json(&json!({"is_consent_given": true, "user_fullname": fullname})),
            );
            assert_error(
                &response,
                400,
                "user_fullname must be 1 to 256 bytes without control characters",
            );
        }
        // A query string on POST is refused.
        let response =
            vouch::api::handle(&engine, consent_request(&key.token, false, "alice", true));
        assert_eq!(response.status, 200);
        let mut with_query = consent_request(&key.token, path.contains("strg"), "bob", true);
        with_query.path = format!("{path}?user_fullname=bob");
        assert_error(
            &vouch::api::handle(&engine, with_query),
            400,
            "unknown query parameter \"user_fullname\"",
        );
    }
    let too_big = format!(
        r#"{{"is_consent_given":true,"user_fullname":"{}"}}"#,
        "x".repeat(70_000)
    );
    let response = vouch::api::handle(
        &engine,
        raw_body("/api-consent/consent", &key.token, &too_big),
    );
    assert_error(&response, 413, "request body is larger than 65536 bytes");
    assert!(
        !engine
            .consents()
            .get("p1", "bob")
            .unwrap()
            .authorization
            .given
    );
    assert_eq!(db.count("SELECT COUNT(*) FROM users"), 1);
    assert_eq!(db.count("SELECT COUNT(*) FROM consents"), 1);
}

#[test]
fn reading_needs_the_user_fullname_query() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    for path in [
        "/api-consent/consent",
        "/api-consent/strg-consent",
        "/api-consent/status",
    ] {
        let response = vouch::api::handle(&engine, authed("GET", path, &key.token));
        assert_error(&response, 400, "user_fullname query parameter is required");
        let response = vouch::api::handle(
            &engine,
            authed(
                "GET",
                &format!("{path}?user_fullname=alice&verbose=1"),
                &key.token,
            ),
        );
        assert_error(&response, 400, "unknown query parameter \"verbose\"");
        let response = vouch::api::handle(
            &engine,
            authed("GET", &format!("{path}?user_fullname="), &key.token),
        );
        assert_error(
            &response,
            400,
            "user_fullname must be 1 to 256 bytes without control characters",
        );
    }
    let response = vouch::api::handle(&engine, authed("POST", "/api-consent/status", &key.token));
    assert_error(
        &response,
        405,
        "method POST is not allowed on /api-consent/status",
    );
    let response = vouch::api::handle(
        &engine,
        authed("DELETE", "/api-consent/consent", &key.token),
    );
    assert_error(
        &response,
        405,
        "method DELETE is not allowed on /api-consent/consent",
    );
}

#[test]
fn query_values_are_percent_decoded() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    set_consent(
        &engine,
        &key.token,
        false,
        "alice smith+1@example.com",
        true,
    );
    let response = vouch::api::handle(
        &engine,
        authed(
            "GET",
            "/api-consent/consent?user_fullname=alice%20smith%2B1%40example.com",
            &key.token,
        ),
    );
    assert_eq!(response.body["data"]["is_consent_given"], true);
    assert_eq!(
        response.body["data"]["user_fullname"],
        "alice smith+1@example.com"
    );
    // `+` in a query means a space.
    let response = vouch::api::handle(
        &engine,
        authed(
            "GET",
            "/api-consent/consent?user_fullname=alice+smith%2B1%40example.com",
            &key.token,
        ),
    );
    assert_eq!(response.body["data"]["is_consent_given"], true);
}

#[test]
fn consent_persists_across_sessions_and_reopen() {
    let db = Db::new();
    let clock = manual_clock();
    {
        let engine = db.open_with_clock(&clock);
        let key = create_key(&engine, "p1");
        let session = start_session(&engine, &key.token);
        let response = vouch::api::handle(
            &engine,
            consent_request(&key.token, false, "alice", true).header("X-Session-ID", &session),
        );
        assert_eq!(response.status, 200);
        set_consent(&engine, &key.token, true, "alice", true);
        let end = vouch::api::handle(
            &engine,
            gateway(
                &format!("/api-gateway/sessions/end/{session}"),
                &key.token,
                "alice",
            ),
        );
        assert_eq!(end.status, 200);
        // A new session sees the consent without giving it again.
        let next = start_session(&engine, &key.token);
        let status = vouch::api::handle(
            &engine,
            authed("GET", "/api-consent/status?user_fullname=alice", &key.token)
                .header("X-Session-ID", &next),
        );
        assert_eq!(
            status.body["data"]["authorization"]["is_consent_given"],
            true
        );
        assert_eq!(status.body["data"]["storage"]["is_consent_given"], true);
    }
    clock.advance(86_400_000);
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    let status = vouch::api::handle(
        &engine,
        authed("GET", "/api-consent/status?user_fullname=alice", &key.token),
    );
    assert_eq!(status.status, 200);
    assert_eq!(
        status.body["data"]["authorization"]["is_consent_given"],
        true
    );
    assert_eq!(status.body["data"]["authorization"]["given_at"], START_TEXT);
    assert_eq!(status.body["data"]["storage"]["is_consent_given"], true);
    let state = engine.consents().get("p1", "alice").unwrap();
    assert_eq!(state.get(ConsentKind::Storage).given_at, Some(START_MS));
}

#[test]
fn consent_is_per_project_and_per_user() {
    let db = Db::new();
    let engine = db.open();
    let p1 = create_key(&engine, "p1");
    let p2 = create_key(&engine, "p2");
    set_consent(&engine, &p1.token, false, "alice", true);
    set_consent(&engine, &p1.token, true, "alice", true);
    let status = vouch::api::handle(
        &engine,
        authed("GET", "/api-consent/status?user_fullname=alice", &p2.token),
    );
    assert_eq!(status.status, 200);
    assert_eq!(
        status.body["data"]["authorization"]["is_consent_given"],
        false
    );
    assert_eq!(status.body["data"]["storage"]["is_consent_given"], false);
    // Another user of p1 has none either; identifiers are exact.
    for other in ["bob", "Alice", "alice "] {
        let state = engine.consents().get("p1", other).unwrap();
        assert!(
            !state.authorization.given && !state.storage.given,
            "{other}"
        );
    }
    // p2 withdrawing its (never given) storage consent does not touch p1's.
    let response = vouch::api::handle(&engine, consent_request(&p2.token, true, "alice", false));
    assert_eq!(response.body["data"]["templates_deleted"], 0);
    assert!(engine.consents().get("p1", "alice").unwrap().storage.given);
    assert!(!engine.consents().get("p2", "alice").unwrap().storage.given);
    assert_eq!(
        db.count("SELECT COUNT(*) FROM users WHERE fullname = 'alice'"),
        2
    );
}
