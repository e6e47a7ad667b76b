//! Request and response headers: X-User-Fullname, X-Request-Id, X-Action-Trigger, X-Device-Info,
//! X-Geo-Location, X-Request-Tags and the boolean headers.

mod common;

use std::collections::HashSet;

use common::*;
use serde_json::json;
use vouch::api::Request;

const START: &str = "/api-gateway/sessions/start";

/// Every /api-gateway endpoint except sessions/start, with valid parts where parts are needed.
fn gateway_requests(token: &str, session: &str) -> Vec<Request> {
    vec![
        authed(
            "POST",
            &format!("/api-gateway/sessions/end/{session}"),
            token,
        ),
        authed("POST", "/api-gateway/process-video", token)
            .file_part("video", "v.mp4", "video/mp4", mp4(64))
            .text_part("phrase", "one two three"),
        authed("POST", "/api-gateway/enroll/face", token).file_part(
            "face",
            "f.png",
            "image/png",
            PNG.to_vec(),
        ),
        authed("POST", "/api-gateway/enroll/voice", token)
            .file_part("voice", "v.wav", "audio/wav", WAV.to_vec())
            .text_part("phrase", "one two three"),
        authed("POST", "/api-gateway/docauth/check", token).file_part(
            "document",
            "d.jpg",
            "image/jpeg",
            JPEG.to_vec(),
        ),
        authed("POST", "/api-gateway/match-faces", token)
            .header("X-Session-ID", session)
            .file_part("image", "i.jpg", "image/jpeg", JPEG.to_vec()),
    ]
}

#[test]
fn fullname_is_required_on_every_gateway_endpoint_but_session_start_and_avf() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    for request in gateway_requests(&key.token, &session) {
        let path = request.path.clone();
        let response = vouch::api::handle(&engine, request);
        assert_eq!(response.status, 400, "{path}");
        assert_error(&response, 400, "X-User-Fullname header is required");
    }
    // The session was neither bound nor ended by the refused requests.
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    assert_eq!((record.user_fullname, record.ended_at), (None, None));
    // With the header the same requests get past the rule (sessions/end succeeds, process-video
    // and docauth/check need the models this engine lacks, enroll/face and enroll/voice ask for
    // consent, match-faces finds the session ended).
    let statuses: Vec<u16> = gateway_requests(&key.token, &session)
        .into_iter()
        .map(|request| {
            vouch::api::handle(&engine, request.header("X-User-Fullname", "alice")).status
        })
        .collect();
    assert_eq!(statuses, vec![200, 500, 403, 403, 500, 409]);
    // avf/infer's header list in the spec names only Authorization: without a fullname it gets
    // past the rule too (to the models this engine lacks).
    let avf = vouch::api::handle(
        &engine,
        authed("POST", "/api-gateway/avf/infer", &key.token).file_part(
            "file",
            "c.mp4",
            "video/mp4",
            mp4(64),
        ),
    );
    assert_eq!(avf.status, 500, "{}", avf.body);
    // Session start needs none, and consent and transaction endpoints are not under the rule.
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &key.token)).status,
        200
    );
    let consent = vouch::api::handle(&engine, consent_request(&key.token, false, "alice", true));
    assert_eq!(consent.status, 200);
    let history = vouch::api::handle(
        &engine,
        authed("GET", "/api-transactions/transactions", &key.token),
    );
    assert_eq!(history.status, 200);
}

#[test]
fn fullname_must_be_a_usable_identifier() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let long = "x".repeat(257);
    for bad in ["", "tab\tname", long.as_str()] {
        let response = vouch::api::handle(
            &engine,
            gateway("/api-gateway/process-video", &key.token, bad),
        );
        assert_error(
            &response,
            400,
            "X-User-Fullname header must be 1 to 256 bytes without control characters",
        );
    }
    // Exactly 256 bytes and non-ASCII identifiers are fine.
    let max = "y".repeat(256);
    for good in [max.as_str(), "Zoë Ærøskøbing", "7d1c0e0a-uuid"] {
        let response = vouch::api::handle(
            &engine,
            gateway("/api-gateway/enroll/face", &key.token, good).file_part(
                "face",
                "f.png",
                "image/png",
                PNG.to_vec(),
            ),
        );
        // Past the header rule: the next check is the user's consent.
        assert_error(&response, 403, "authorization consent is required");
    }
}

#[test]
fn every_response_has_a_unique_request_id() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let requests = vec![
        (authed("POST", START, &key.token), 200),
        (Request::new("POST", START), 401),
        (
            Request::new("POST", START).header("Authorization", "Token x"),
            401,
        ),
        (authed("POST", START, "abc"), 500),
        (authed("POST", "/api-gateway/nope", &key.token), 404),
        (Request::new("GET", "/nowhere"), 404),
        (authed("GET", START, &key.token), 405),
        (authed("DELETE", "/api-consent/consent", &key.token), 405),
        (
            authed("POST", "/api-gateway/process-video", &key.token),
            400,
        ),
        (
            gateway("/api-gateway/avf/infer", &key.token, "a").file_part(
                "file",
                "c.mp4",
                "video/mp4",
                mp4(32),
            ),
            500,
        ),
        (
            authed("GET", "/api-transactions/transactions/req_x", &key.token),
            404,
        ),
        (
            authed("GET", "/api-transactions/transactions", &key.token),
            200,
        ),
    ];
    let mut ids = HashSet::new();
    for (request, status) in requests {
        let path = request.path.clone();
        let response = vouch::api::handle(&engine, request);
        assert_eq!(response.status, status, "{path}: {:?}", response.body);
        let id = response.request_id().to_owned();
        assert!(id.starts_with("req_"), "{path}: {id}");
        assert_eq!(id.len(), 36, "{id}");
        assert!(id[4..].chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        assert!(ids.insert(id), "{path}: request id repeated");
        assert_eq!(response.header("content-type"), Some("application/json"));
        let mut expected =
            json!({"X-Request-Id": response.request_id(), "Content-Type": "application/json"});
        if status == 405 {
            // RFC 9110: a 405 names the methods the path answers.
            expected["Allow"] = json!(response.header("Allow").unwrap_or("none"));
        }
        assert_eq!(response.headers_json(), expected.to_string());
    }
    // 404 and 405 name the path and method.
    let response = vouch::api::handle(&engine, authed("POST", "/api-gateway/nope", &key.token));
    assert_error(&response, 404, "no endpoint at /api-gateway/nope");
    let response = vouch::api::handle(&engine, authed("GET", START, &key.token));
    assert_error(
        &response,
        405,
        "method GET is not allowed on /api-gateway/sessions/start",
    );
    assert_eq!(response.header("Allow"), Some("POST"));
    let response = vouch::api::handle(
        &engine,
        authed("PUT", "/api-consent/consent?user_fullname=a", &key.token),
    );
    assert_eq!(response.status, 405);
    assert_eq!(response.header("Allow"), Some("GET, POST"));
    // The same request twice gets two ids, and the id is the transaction's id.
    let first = vouch::api::handle(&engine, authed("POST", START, &key.token));
    let second = vouch::api::handle(&engine, authed("POST", START, &key.token));
    assert_ne!(first.request_id(), second.request_id());
    let row = transaction(&engine, &key.token, first.request_id());
    assert_eq!(row["request_id"], first.request_id());
    assert_eq!(row["session_id"], first.body["data"]);
}

#[test]
fn action_trigger_values() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    for trigger in ["authentication", "registration", "confirmation"] {
        let response = vouch::api::handle(
            &engine,
            authed("POST", START, &key.token).header("X-Action-Trigger", trigger),
        );
        assert_eq!(response.status, 200);
        let row = transaction(&engine, &key.token, response.request_id());
        assert_eq!(row["action_trigger"], trigger);
    }
    for bad in ["login", "Authentication", "", "registration "] {
        let response = vouch::api::handle(
            &engine,
            authed("POST", START, &key.token).header("X-Action-Trigger", bad),
        );
        assert_error(
            &response,
            400,
            "X-Action-Trigger header must be authentication, registration or confirmation",
        );
    }
    let response = vouch::api::handle(&engine, authed("POST", START, &key.token));
    let row = transaction(&engine, &key.token, response.request_id());
    assert_eq!(row["action_trigger"], json!(null));
}

#[test]
fn json_headers_are_checked_and_stored() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let cases = [
        (
            "X-Device-Info",
            "{oops",
            "X-Device-Info header is not valid JSON",
        ),
        (
            "X-Device-Info",
            "[1,2]",
            "X-Device-Info header must be a JSON object",
        ),
        (
            "X-Geo-Location",
            "berlin",
            "X-Geo-Location header is not valid JSON",
        ),
        (
            "X-Geo-Location",
            "\"x\"",
            "X-Geo-Location header must be a JSON object",
        ),
        (
            "X-Geo-Location",
            r#"{"lat":91,"lng":0}"#,
            "X-Geo-Location header field lat must be a number between -90 and 90",
        ),
        (
            "X-Geo-Location",
            r#"{"lat":1,"lng":"2"}"#,
            "X-Geo-Location header field lng must be a number between -180 and 180",
        ),
        (
            "X-Geo-Location",
            r#"{"lat":1,"lng":2,"zip":"10115"}"#,
            "X-Geo-Location header has an unknown field \"zip\"; allowed: lat, lng, country, city",
        ),
        (
            "X-Geo-Location",
            r#"{"lat":1,"lng":2,"country":49}"#,
            "X-Geo-Location header field country must be a string",
        ),
    ];
    for (name, value, expected) in cases {
        // On a gateway endpoint and on a consent endpoint alike.
        let response = vouch::api::handle(
            &engine,
            authed("POST", START, &key.token).header(name, value),
        );
        assert_error(&response, 400, expected);
        let response = vouch::api::handle(
            &engine,
            consent_request(&key.token, false, "alice", true).header(name, value),
        );
        assert_error(&response, 400, expected);
    }
    let too_long = format!("{{\"pad\":\"{}\"}}", "x".repeat(5000));
    let response = vouch::api::handle(
        &engine,
        authed("POST", START, &key.token).header("X-Device-Info", &too_long),
    );
    assert_error(
        &response,
        400,
        "X-Device-Info header is longer than 4096 bytes",
    );
    // A refused consent changed nothing.
    assert!(
        !engine
            .consents()
            .get("p1", "alice")
            .unwrap()
            .authorization
            .given
    );

    let device = json!({"os": "iOS", "version": "18.1", "model": "iPhone16,1"});
    let geo = json!({"lat": 52.52, "lng": 13.405, "country": "DE", "city": "Berlin"});
    let response = vouch::api::handle(
        &engine,
        authed("POST", START, &key.token)
            .header("X-Device-Info", &device.to_string())
            .header("X-Geo-Location", &geo.to_string()),
    );
    assert_eq!(response.status, 200);
    let row = transaction(&engine, &key.token, response.request_id());
    assert_eq!(row["device_info"], device);
    assert_eq!(row["geo_location"], geo);
}

#[test]
fn request_tags_are_split_and_stored() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let response = vouch::api::handle(
        &engine,
        authed("POST", START, &key.token).header("X-Request-Tags", " kiosk, ,lobby ,vip-2,"),
    );
    assert_eq!(response.status, 200);
    let row = transaction(&engine, &key.token, response.request_id());
    assert_eq!(row["request_tags"], json!(["kiosk", "lobby", "vip-2"]));
    let stored: String = db.sql().query_row(
        "SELECT request_tags FROM transactions WHERE request_id = ?1",
        &[&response.request_id()],
        |row| row.get(0),
    );
    assert_eq!(stored, r#"["kiosk","lobby","vip-2"]"#);

    let response = vouch::api::handle(&engine, authed("POST", START, &key.token));
    let row = transaction(&engine, &key.token, response.request_id());
    assert_eq!(row["request_tags"], json!([]));

    let expected = "X-Request-Tags header must hold at most 20 comma-separated tags of at most \
                    64 characters";
    let many = vec!["t"; 21].join(",");
    let response = vouch::api::handle(
        &engine,
        authed("POST", START, &key.token).header("X-Request-Tags", &many),
    );
    assert_error(&response, 400, expected);
    let long = "x".repeat(65);
    let response = vouch::api::handle(
        &engine,
        authed("POST", START, &key.token).header("X-Request-Tags", &long),
    );
    assert_error(&response, 400, expected);
    let twenty = vec!["t"; 20].join(",");
    let response = vouch::api::handle(
        &engine,
        authed("POST", START, &key.token).header("X-Request-Tags", &twenty),
    );
    assert_eq!(response.status, 200);
}

#[test]
fn boolean_and_session_headers_are_checked() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    for name in [
        "X-Inhouse-Docauth",
        "X-Inhouse-MRZ",
        "X-Use-Prefilled-Video",
    ] {
        let response = vouch::api::handle(
            &engine,
            authed("POST", START, &key.token).header(name, "yes"),
        );
        assert_error(
            &response,
            400,
            &format!("{name} header must be true or false"),
        );
        for good in ["true", "FALSE", "True"] {
            let response = vouch::api::handle(
                &engine,
                authed("POST", START, &key.token).header(name, good),
            );
            assert_eq!(response.status, 200, "{name}: {good}");
        }
    }
    let long = "s".repeat(129);
    for bad in ["", "has space", long.as_str()] {
        let response = vouch::api::handle(
            &engine,
            gateway("/api-gateway/process-video", &key.token, "alice").header("X-Session-ID", bad),
        );
        assert_error(
            &response,
            400,
            "X-Session-ID header must be 1 to 128 characters without spaces",
        );
    }
}

#[test]
fn header_names_are_case_insensitive_and_the_first_counts() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let response = vouch::api::handle(
        &engine,
        Request::new("post", START)
            .header("authorization", &format!("Bearer {}", key.token))
            .header("x-action-trigger", "confirmation")
            .header("X-ACTION-TRIGGER", "nonsense"),
    );
    assert_eq!(response.status, 200, "{:?}", response.body);
    let row = transaction(&engine, &key.token, response.request_id());
    assert_eq!(row["action_trigger"], "confirmation");
    assert_eq!(row["method"], "POST");
}

#[test]
fn odd_requests_get_error_responses_not_panics() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let cases: Vec<(Request, u16)> = vec![
        (authed("POST", "", &key.token), 404),
        (authed("POST", "?", &key.token), 404),
        (authed("POST", "/", &key.token), 404),
        (authed("", START, &key.token), 405),
        (authed("PO ST", START, &key.token), 405),
        (
            authed("POST", "/api-gateway/sessions/end/sess%2F1", &key.token),
            404,
        ),
        (
            authed("POST", "/api-gateway/sessions/end/..", &key.token),
            404,
        ),
        (
            authed("GET", "/api-transactions/transactions/a.b", &key.token),
            404,
        ),
        (authed("POST", &format!("{START}?&&"), &key.token), 200),
        (authed("POST", &format!("{START}/"), &key.token), 200),
        (
            authed(
                "GET",
                "/api-transactions/transactions?limit=2&limit=500",
                &key.token,
            ),
            200,
        ),
        (
            Request::new("POST", START).header("Authorization", "Bearer \u{0}\u{7f}"),
            500,
        ),
    ];
    for (request, status) in cases {
        let label = format!("{} {}", request.method, request.path);
        let response = vouch::api::handle(&engine, request);
        assert_eq!(response.status, status, "{label}: {:?}", response.body);
        assert!(response.request_id().starts_with("req_"), "{label}");
        if status != 200 {
            assert!(response.error_text().is_some(), "{label}");
        }
    }
}
