//! Sessions: start, the fullname lock, end with a SIM-swap check, and the errors around them.

mod common;

use common::*;
use serde_json::json;
use vouch::api::{Request, Response};
use vouch::Engine;

const START: &str = "/api-gateway/sessions/start";

fn end_path(session: &str) -> String {
    format!("/api-gateway/sessions/end/{session}")
}

/// A media request that passes the session lock and then answers 500 (this engine has no models).
fn use_session(engine: &Engine, token: &str, session: &str, fullname: &str) -> Response {
    vouch::api::handle(
        engine,
        gateway("/api-gateway/process-video", token, fullname)
            .header("X-Session-ID", session)
            .file_part(
                "video",
                "v.mp4",
                "video/mp4",
                b"\0\0\0\x18ftypmp42".to_vec(),
            )
            .text_part("phrase", "one two three"),
    )
}

fn end(
    engine: &Engine,
    token: &str,
    session: &str,
    fullname: &str,
    body: Option<&str>,
) -> Response {
    let mut request = gateway(&end_path(session), token, fullname);
    request.body = body.map(|text| text.as_bytes().to_vec());
    vouch::api::handle(engine, request)
}

#[test]
fn start_returns_the_session_id() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    let response = vouch::api::handle(&engine, authed("POST", START, &key.token));
    assert_eq!(response.status, 200);
    let id = response.body["data"].as_str().unwrap().to_owned();
    assert_eq!(
        response.body,
        json!({"data": id, "message": "session started"})
    );
    assert!(id.starts_with("sess_") && id.len() == 37, "{id}");
    let record = engine.sessions().get("p1", &id).unwrap().unwrap();
    assert_eq!(record.project_id, "p1");
    assert_eq!(record.key_id, key.id);
    assert_eq!(record.user_fullname, None);
    assert_eq!(record.started_at, START_MS);
    assert_eq!(record.ended_at, None);
    // Every start is a new session.
    let other = start_session(&engine, &key.token);
    assert_ne!(other, id);
    assert_eq!(db.count("SELECT COUNT(*) FROM sessions"), 2);
    // A query string is refused.
    let response = vouch::api::handle(
        &engine,
        authed("POST", &format!("{START}?user=alice"), &key.token),
    );
    assert_error(&response, 400, "unknown query parameter \"user\"");
    assert_eq!(db.count("SELECT COUNT(*) FROM sessions"), 2);
}

#[test]
fn the_first_fullname_locks_the_session() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    assert_eq!(
        use_session(&engine, &key.token, &session, "alice").status,
        500
    );
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    assert_eq!(record.user_fullname.as_deref(), Some("alice"));
    // Same fullname again: fine, any number of times.
    for _ in 0..3 {
        assert_eq!(
            use_session(&engine, &key.token, &session, "alice").status,
            500
        );
    }
    // A different fullname (even by case or a trailing space) is 403.
    for other in ["bob", "Alice", "alice "] {
        let response = use_session(&engine, &key.token, &session, other);
        assert_error(&response, 403, "session belongs to another user");
    }
    // The lock is not moved by refused requests.
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    assert_eq!(record.user_fullname.as_deref(), Some("alice"));
    // Another key of the same project shares the project's sessions and the lock.
    let second_key = create_key(&engine, "p1");
    assert_eq!(
        use_session(&engine, &second_key.token, &session, "alice").status,
        500
    );
    let response = use_session(&engine, &second_key.token, &session, "bob");
    assert_error(&response, 403, "session belongs to another user");
}

#[test]
fn consent_requests_in_a_session_lock_it_to_the_body_fullname() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    let response = vouch::api::handle(
        &engine,
        consent_request(&key.token, false, "alice", true).header("X-Session-ID", &session),
    );
    assert_eq!(response.status, 200);
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    assert_eq!(record.user_fullname.as_deref(), Some("alice"));
    let response = vouch::api::handle(
        &engine,
        consent_request(&key.token, true, "bob", true).header("X-Session-ID", &session),
    );
    assert_error(&response, 403, "session belongs to another user");
    // Bob's consent was not recorded.
    assert!(!engine.consents().get("p1", "bob").unwrap().storage.given);
}

#[test]
fn unknown_and_foreign_sessions_are_404() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let other_project = create_key(&engine, "p2");
    let foreign = start_session(&engine, &other_project.token);
    for session in ["sess_unknown", foreign.as_str()] {
        let response = use_session(&engine, &key.token, session, "alice");
        assert_error(&response, 404, "session not found");
        let response = end(&engine, &key.token, session, "alice", None);
        assert_error(&response, 404, "session not found");
    }
    // The foreign session was neither bound nor ended by project p1's requests.
    let record = engine.sessions().get("p2", &foreign).unwrap().unwrap();
    assert_eq!((record.user_fullname, record.ended_at), (None, None));
    assert!(engine.sessions().get("p1", &foreign).unwrap().is_none());
    // Paths that cannot hold a session id are not routes.
    let response = vouch::api::handle(
        &engine,
        gateway("/api-gateway/sessions/end/", &key.token, "alice"),
    );
    assert_error(&response, 404, "no endpoint at /api-gateway/sessions/end");
    let response = vouch::api::handle(
        &engine,
        gateway("/api-gateway/sessions/end/a/b", &key.token, "alice"),
    );
    assert_error(
        &response,
        404,
        "no endpoint at /api-gateway/sessions/end/a/b",
    );
}

#[test]
fn ending_with_a_phone_number_and_no_provider_records_an_unavailable_check() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    assert_eq!(
        use_session(&engine, &key.token, &session, "alice").status,
        500
    );
    clock.advance(90_000);
    let response = end(
        &engine,
        &key.token,
        &session,
        "alice",
        Some(r#"{"phone_number": "+49 (151) 1234-5678"}"#),
    );
    assert_eq!(response.status, 200, "{:?}", response.body);
    assert_eq!(
        response.body,
        json!({
            "message": "session ended",
            "data": {
                "session_id": session,
                "user_fullname": "alice",
                "started_at": START_TEXT,
                "ended_at": "2026-11-21T10:33:35.123Z",
                "sim_swap_check": "unavailable",
            }
        })
    );
    let expected = json!({
        "message": "ok",
        "data": {
            "session_id": session,
            "status": "unavailable",
            "swapped": null,
            "detail": "no SIM-swap provider is configured on this engine",
            "requested_at": "2026-11-21T10:33:35.123Z",
            "completed_at": "2026-11-21T10:33:35.123Z",
        }
    });
    let read = |engine: &vouch::Engine, token: &str| {
        vouch::api::handle(
            engine,
            Request::new("GET", &format!("/api-projects/sessions/{session}/sim-swap"))
                .header("Authorization", &format!("Bearer {token}")),
        )
    };
    let response = read(&engine, &key.token);
    assert_eq!((response.status, &response.body), (200, &expected));
    // Another project does not see it.
    let other = create_key(&engine, "p2");
    assert_error(
        &read(&engine, &other.token),
        404,
        "no SIM-swap check was requested for this session",
    );
    // The phone number was never stored: there was nowhere to send it.
    assert_eq!(
        db.count("SELECT COUNT(*) FROM jobs WHERE body LIKE '%15112345678%'"),
        0
    );
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    assert_eq!(record.ended_at, Some(START_MS + 90_000));
    // The result survives a reopen.
    drop(engine);
    let engine = db.open_with_clock(&clock);
    assert_eq!(read(&engine, &key.token).body, expected);
}

#[test]
fn ending_without_a_phone_number_queues_nothing() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    for body in [
        None,
        Some(""),
        Some("  "),
        Some("{}"),
        Some(r#"{"phone_number":null}"#),
    ] {
        let session = start_session(&engine, &key.token);
        let response = end(&engine, &key.token, &session, "alice", body);
        assert_eq!(response.status, 200, "{body:?}: {:?}", response.body);
        assert_eq!(response.body["data"]["sim_swap_check"], "not_requested");
        // Ending binds an unbound session to the caller.
        assert_eq!(response.body["data"]["user_fullname"], "alice");
    }
    assert_eq!(db.count("SELECT COUNT(*) FROM sim_swap_results"), 0);
}

#[test]
fn a_bad_phone_number_or_body_is_400_and_ends_nothing() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    let phone_text =
        "phone_number must be a phone number in international form, e.g. +4915112345678";
    for phone in ["12345", "+1234567890123456", "call me", "12+3456789", ""] {
        let body = json!({ "phone_number": phone }).to_string();
        let response = end(&engine, &key.token, &session, "alice", Some(&body));
        assert_error(&response, 400, phone_text);
    }
    let response = end(
        &engine,
        &key.token,
        &session,
        "alice",
        Some(r#"{"phone":"+4915112345678"}"#),
    );
    assert_400_like(
        &response,
        "invalid request body (an object with an optional phone_number): ",
        "unknown field `phone`",
    );
    let response = end(
        &engine,
        &key.token,
        &session,
        "alice",
        Some(r#"{"phone_number":4915}"#),
    );
    assert_400_like(
        &response,
        "invalid request body (an object with an optional phone_number): ",
        "invalid type: integer `4915`, expected a string",
    );
    let response = end(&engine, &key.token, &session, "alice", Some("not json"));
    assert_400_like(
        &response,
        "invalid request body (an object with an optional phone_number): ",
        "",
    );
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    assert_eq!(record.ended_at, None);
    assert_eq!(db.count("SELECT COUNT(*) FROM sim_swap_results"), 0);
    // The session can still be ended properly.
    let response = end(
        &engine,
        &key.token,
        &session,
        "alice",
        Some(r#"{"phone_number":"4915112345678"}"#),
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.body["data"]["sim_swap_check"], "unavailable");
    assert_eq!(db.count("SELECT COUNT(*) FROM sim_swap_results"), 1);
}

#[test]
fn an_ended_session_cannot_be_ended_or_used_again() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    let body = Some(r#"{"phone_number":"+4915112345678"}"#);
    assert_eq!(
        end(&engine, &key.token, &session, "alice", body).status,
        200
    );
    let response = end(&engine, &key.token, &session, "alice", body);
    assert_error(&response, 409, "session has ended");
    let response = end(&engine, &key.token, &session, "alice", None);
    assert_error(&response, 409, "session has ended");
    let response = use_session(&engine, &key.token, &session, "alice");
    assert_error(&response, 409, "session has ended");
    let response = vouch::api::handle(
        &engine,
        consent_request(&key.token, false, "alice", true).header("X-Session-ID", &session),
    );
    assert_error(&response, 409, "session has ended");
    // Still only one SIM-swap check.
    assert_eq!(db.count("SELECT COUNT(*) FROM sim_swap_results"), 1);
}

#[test]
fn ending_checks_the_lock_and_the_session_header() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    let other = start_session(&engine, &key.token);
    assert_eq!(
        use_session(&engine, &key.token, &session, "alice").status,
        500
    );
    // Another user cannot end alice's session.
    let response = end(&engine, &key.token, &session, "bob", None);
    assert_error(&response, 403, "session belongs to another user");
    // X-Session-ID naming another session than the path.
    let response = vouch::api::handle(
        &engine,
        gateway(&end_path(&session), &key.token, "alice").header("X-Session-ID", &other),
    );
    assert_error(
        &response,
        400,
        "X-Session-ID header does not match the session in the path",
    );
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    assert_eq!(record.ended_at, None);
    // The same id in the header and path is fine.
    let response = vouch::api::handle(
        &engine,
        gateway(&end_path(&session), &key.token, "alice").header("X-Session-ID", &session),
    );
    assert_eq!(response.status, 200);
    // End needs the fullname header like every gateway endpoint.
    let response = vouch::api::handle(&engine, authed("POST", &end_path(&other), &key.token));
    assert_error(&response, 400, "X-User-Fullname header is required");
    // GET is not allowed on the end path.
    let response = vouch::api::handle(
        &engine,
        Request::new("GET", &end_path(&other))
            .bearer(&key.token)
            .header("X-User-Fullname", "alice"),
    );
    assert_error(
        &response,
        405,
        &format!("method GET is not allowed on {}", end_path(&other)),
    );
}

/// A clock that moves forward 1 ms every time it is read, so that two reads never agree.
#[derive(Debug)]
struct TickingClock(std::sync::atomic::AtomicI64);

impl vouch::Clock for TickingClock {
    fn now_ms(&self) -> i64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }
}

#[test]
fn the_end_response_reports_the_stored_times() {
    let db = Db::new();
    let clock = std::sync::Arc::new(TickingClock(std::sync::atomic::AtomicI64::new(START_MS)));
    let engine = Engine::open_with_clock(db.options(), clock).unwrap();
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    let response = end(
        &engine,
        &key.token,
        &session,
        "alice",
        Some(r#"{"phone_number":"+4915112345678"}"#),
    );
    assert_eq!(response.status, 200);
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    let ended_at = record.ended_at.expect("ended");
    assert_eq!(
        response.body["data"]["started_at"],
        vouch::format_timestamp(record.started_at)
    );
    assert_eq!(
        response.body["data"]["ended_at"],
        vouch::format_timestamp(ended_at)
    );
    assert_eq!(
        db.count("SELECT requested_at FROM sim_swap_results"),
        ended_at
    );
}

#[test]
fn a_rejected_phone_number_leaves_the_session_unlocked_and_open() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    let response = end(
        &engine,
        &key.token,
        &session,
        "alice",
        Some(r#"{"phone_number":"call me"}"#),
    );
    assert_eq!(response.status, 400);
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    assert_eq!((record.user_fullname, record.ended_at), (None, None));
    // Another user can still claim the session, which proves the failed call did not lock it.
    assert_eq!(
        use_session(&engine, &key.token, &session, "bob").status,
        500
    );
}
