//! Transaction history: one row per gateway or consent request, listed newest first with cursor
//! pagination and filters, fetched by request id, and scoped to the key's project.

mod common;

use common::*;
use serde_json::{json, Value};
use vouch::api::Response;
use vouch::Engine;

const START: &str = "/api-gateway/sessions/start";
const LIST: &str = "/api-transactions/transactions";

fn list(engine: &Engine, token: &str, query: &str) -> Response {
    let path = if query.is_empty() {
        LIST.to_owned()
    } else {
        format!("{LIST}?{query}")
    };
    vouch::api::handle(engine, authed("GET", &path, token))
}

fn ids_of(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .expect("data is an array")
        .iter()
        .map(|row| row["request_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Follows `next_cursor` until it is null; returns every page's request ids.
fn all_pages(engine: &Engine, token: &str, query: &str, limit: usize) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut full = format!("limit={limit}");
        if !query.is_empty() {
            full.push('&');
            full.push_str(query);
        }
        if let Some(cursor) = &cursor {
            full.push_str(&format!("&cursor={cursor}"));
        }
        let response = list(engine, token, &full);
        assert_eq!(response.status, 200, "{:?}", response.body);
        assert_eq!(response.body["message"], "ok");
        pages.push(ids_of(&response.body));
        match &response.body["next_cursor"] {
            Value::Null => return pages,
            Value::String(next) => cursor = Some(next.clone()),
            other => panic!("next_cursor {other:?}"),
        }
        assert!(pages.len() < 100, "pagination does not end");
    }
}

#[test]
fn every_gateway_and_consent_request_writes_a_row() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    let requests = vec![
        (consent_request(&key.token, false, "alice", true), 200),
        (consent_request(&key.token, true, "alice", true), 200),
        (
            authed(
                "GET",
                "/api-consent/consent?user_fullname=alice",
                &key.token,
            ),
            200,
        ),
        (
            authed(
                "GET",
                "/api-consent/strg-consent?user_fullname=alice",
                &key.token,
            ),
            200,
        ),
        (
            authed("GET", "/api-consent/status?user_fullname=alice", &key.token),
            200,
        ),
        (authed("GET", "/api-consent/status", &key.token), 400),
        (authed("POST", "/api-consent/consent", &key.token), 400),
        (
            authed("POST", "/api-gateway/process-video", &key.token),
            400,
        ),
        (
            gateway("/api-gateway/process-video", &key.token, "alice"),
            400,
        ),
        (
            gateway("/api-gateway/match-faces", &key.token, "bob")
                .header("X-Session-ID", "sess_nope")
                .header("X-Use-Prefilled-Video", "true"),
            404,
        ),
        (
            gateway("/api-gateway/avf/infer", &key.token, "alice").file_part(
                "file",
                "c.mp4",
                "video/mp4",
                mp4(64),
            ),
            500,
        ),
        (
            gateway(
                &format!("/api-gateway/sessions/end/{session}"),
                &key.token,
                "alice",
            ),
            200,
        ),
        (
            gateway(
                &format!("/api-gateway/sessions/end/{session}"),
                &key.token,
                "alice",
            ),
            409,
        ),
    ];
    let mut expected = vec![("/api-gateway/sessions/start".to_owned(), 200)];
    for (request, status) in requests {
        let path = request.path.split('?').next().unwrap().to_owned();
        let response = vouch::api::handle(&engine, request);
        assert_eq!(response.status, status, "{path}: {:?}", response.body);
        expected.push((path, status));
    }
    // Not recorded: auth failures, unknown routes and reads of the history itself.
    vouch::api::handle(&engine, authed("POST", START, "garbage"));
    vouch::api::handle(&engine, authed("POST", "/api-gateway/unknown", &key.token));
    vouch::api::handle(&engine, authed("GET", START, &key.token));
    list(&engine, &key.token, "");
    vouch::api::handle(
        &engine,
        authed("GET", &format!("{LIST}/req_missing"), &key.token),
    );

    assert_eq!(
        db.count("SELECT COUNT(*) FROM transactions"),
        expected.len() as i64
    );
    let response = list(&engine, &key.token, "limit=100");
    let rows = response.body["data"].as_array().unwrap();
    let mut listed: Vec<(String, u64)> = rows
        .iter()
        .map(|row| {
            (
                row["endpoint"].as_str().unwrap().to_owned(),
                row["status_code"].as_u64().unwrap(),
            )
        })
        .collect();
    listed.reverse();
    let expected: Vec<(String, u64)> = expected
        .into_iter()
        .map(|(path, status)| (path, u64::from(status)))
        .collect();
    assert_eq!(listed, expected);
    assert_eq!(response.body["next_cursor"], json!(null));
}

#[test]
fn a_row_holds_the_request_and_its_outcome() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    clock.advance(250);
    let response = vouch::api::handle(
        &engine,
        consent_request(&key.token, false, "alice", true)
            .header("X-Session-ID", &session)
            .header("X-Action-Trigger", "registration")
            .header("X-Device-Info", r#"{"os":"Android"}"#)
            .header("X-Geo-Location", r#"{"lat":-33.9,"lng":18.4}"#)
            .header("X-Request-Tags", "onboarding,web"),
    );
    assert_eq!(response.status, 200);
    let fetched = vouch::api::handle(
        &engine,
        authed(
            "GET",
            &format!("{LIST}/{}", response.request_id()),
            &key.token,
        ),
    );
    assert_eq!(fetched.status, 200);
    assert_eq!(
        fetched.body,
        json!({
            "message": "ok",
            "data": {
                "request_id": response.request_id(),
                "method": "POST",
                "endpoint": "/api-consent/consent",
                "status_code": 200,
                "user_fullname": "alice",
                "session_id": session,
                "action_trigger": "registration",
                "device_info": {"os": "Android"},
                "geo_location": {"lat": -33.9, "lng": 18.4},
                "request_tags": ["onboarding", "web"],
                "result": response.body,
                "created_at": "2026-11-21T10:32:05.373Z",
            }
        })
    );
    // The list shows the same row.
    let page = list(&engine, &key.token, "limit=1");
    assert_eq!(page.body["data"][0], fetched.body["data"]);
    // The stored record matches through the Rust API as well.
    let record = engine
        .audit()
        .get("p1", response.request_id())
        .unwrap()
        .unwrap();
    assert_eq!(record.key_id, key.id);
    assert_eq!(record.project_id, "p1");
    assert_eq!(record.created_at, START_MS + 250);
    // Session start names the session it started; the path is stored without its query.
    let start_row = &list(&engine, &key.token, "limit=2").body["data"][1];
    assert_eq!(start_row["endpoint"], START);
    assert_eq!(start_row["session_id"], session.as_str());
    assert_eq!(start_row["user_fullname"], json!(null));
    let response = vouch::api::handle(
        &engine,
        authed("GET", "/api-consent/status?user_fullname=carol", &key.token),
    );
    let row = transaction(&engine, &key.token, response.request_id());
    assert_eq!(row["endpoint"], "/api-consent/status");
    assert_eq!(row["method"], "GET");
    assert_eq!(row["user_fullname"], "carol");
}

#[test]
fn pages_run_newest_first_until_the_cursor_is_null() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    let mut made = Vec::new();
    for _ in 0..7 {
        clock.advance(1);
        let response = vouch::api::handle(&engine, authed("POST", START, &key.token));
        made.push(response.request_id().to_owned());
    }
    made.reverse();
    let pages = all_pages(&engine, &key.token, "", 3);
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![3, 3, 1]
    );
    assert_eq!(pages.concat(), made);
    // An exact multiple of the limit ends without an empty page.
    let pages = all_pages(&engine, &key.token, "", 7);
    assert_eq!(pages, vec![made.clone()]);
    let pages = all_pages(&engine, &key.token, "", 1);
    assert_eq!(pages.len(), 7);
    assert_eq!(pages.concat(), made);
    // Rows added while paging do not shift later pages.
    let first = list(&engine, &key.token, "limit=3");
    let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();
    for _ in 0..5 {
        vouch::api::handle(&engine, authed("POST", START, &key.token));
    }
    let second = list(&engine, &key.token, &format!("limit=3&cursor={cursor}"));
    assert_eq!(ids_of(&second.body), made[3..6].to_vec());
}

#[test]
fn the_default_page_is_20_and_the_maximum_100() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    for _ in 0..105 {
        assert_eq!(
            vouch::api::handle(&engine, authed("POST", START, &key.token)).status,
            200
        );
    }
    let page = list(&engine, &key.token, "");
    assert_eq!(ids_of(&page.body).len(), 20);
    assert!(page.body["next_cursor"].is_string());
    let page = list(&engine, &key.token, "limit=100");
    assert_eq!(ids_of(&page.body).len(), 100);
    let cursor = page.body["next_cursor"].as_str().unwrap();
    let rest = list(&engine, &key.token, &format!("limit=100&cursor={cursor}"));
    assert_eq!(ids_of(&rest.body).len(), 5);
    assert_eq!(rest.body["next_cursor"], json!(null));
}

#[test]
fn filters_by_user_and_session() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let s1 = start_session(&engine, &key.token);
    let s2 = start_session(&engine, &key.token);
    let mut alice_s1 = Vec::new();
    let mut bob = Vec::new();
    for _ in 0..3 {
        let response = vouch::api::handle(
            &engine,
            consent_request(&key.token, false, "alice", true).header("X-Session-ID", &s1),
        );
        alice_s1.push(response.request_id().to_owned());
        let response = vouch::api::handle(
            &engine,
            consent_request(&key.token, false, "bob", true).header("X-Session-ID", &s2),
        );
        bob.push(response.request_id().to_owned());
    }
    let response = vouch::api::handle(&engine, consent_request(&key.token, true, "alice", true));
    let alice_no_session = response.request_id().to_owned();
    alice_s1.reverse();
    bob.reverse();

    let alice: Vec<String> = std::iter::once(alice_no_session.clone())
        .chain(alice_s1.iter().cloned())
        .collect();
    assert_eq!(
        all_pages(&engine, &key.token, "user_fullname=alice", 2).concat(),
        alice
    );
    assert_eq!(
        all_pages(&engine, &key.token, "user_fullname=bob", 2).concat(),
        bob
    );
    // The session's start row carries the session id too.
    let s1_rows = all_pages(&engine, &key.token, &format!("session_id={s1}"), 10).concat();
    assert_eq!(s1_rows.len(), 4);
    assert_eq!(s1_rows[..3], alice_s1[..]);
    let both = all_pages(
        &engine,
        &key.token,
        &format!("user_fullname=alice&session_id={s1}"),
        10,
    );
    assert_eq!(both.concat(), alice_s1);
    let none = all_pages(
        &engine,
        &key.token,
        &format!("user_fullname=bob&session_id={s1}"),
        10,
    );
    assert_eq!(none, vec![Vec::<String>::new()]);
    let nobody = list(&engine, &key.token, "user_fullname=nobody");
    assert_eq!(
        nobody.body,
        json!({"message": "ok", "data": [], "next_cursor": null})
    );
    // Percent-encoded filter values.
    set_consent(&engine, &key.token, false, "d@x.io", true);
    let encoded = list(&engine, &key.token, "user_fullname=d%40x.io");
    assert_eq!(ids_of(&encoded.body).len(), 1);
}

#[test]
fn bad_list_parameters_are_400() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    for _ in 0..3 {
        vouch::api::handle(&engine, authed("POST", START, &key.token));
    }
    let limit = "limit must be an integer from 1 to 100";
    for query in [
        "limit=0",
        "limit=101",
        "limit=-1",
        "limit=abc",
        "limit=",
        "limit=1.5",
    ] {
        assert_error(&list(&engine, &key.token, query), 400, limit);
    }
    let cursor = "cursor is not a cursor returned by this endpoint";
    for query in [
        "cursor=!!",
        "cursor=abc",
        "cursor=",
        "cursor=dC01",
        "cursor=dDA",
    ] {
        assert_error(&list(&engine, &key.token, query), 400, cursor);
    }
    assert_error(
        &list(&engine, &key.token, "page=2"),
        400,
        "unknown query parameter \"page\"",
    );
    assert_error(
        &list(&engine, &key.token, "limit=5&sort=asc"),
        400,
        "unknown query parameter \"sort\"",
    );
    let response = vouch::api::handle(
        &engine,
        authed("GET", &format!("{LIST}/req_x?verbose=1"), &key.token),
    );
    assert_error(&response, 400, "unknown query parameter \"verbose\"");
    let response = vouch::api::handle(&engine, authed("POST", LIST, &key.token));
    assert_error(
        &response,
        405,
        "method POST is not allowed on /api-transactions/transactions",
    );
}

#[test]
fn another_projects_transactions_are_invisible() {
    let db = Db::new();
    let engine = db.open();
    let p1 = create_key(&engine, "p1");
    let p2 = create_key(&engine, "p2");
    let mine = vouch::api::handle(&engine, authed("POST", START, &p1.token));
    set_consent(&engine, &p1.token, false, "alice", true);
    let page = list(&engine, &p2.token, "");
    assert_eq!(
        page.body,
        json!({"message": "ok", "data": [], "next_cursor": null})
    );
    let page = list(&engine, &p2.token, "user_fullname=alice");
    assert_eq!(page.body["data"], json!([]));
    let response = vouch::api::handle(
        &engine,
        authed("GET", &format!("{LIST}/{}", mine.request_id()), &p2.token),
    );
    assert_error(&response, 404, "transaction not found");
    let response = vouch::api::handle(
        &engine,
        authed("GET", &format!("{LIST}/req_unknown"), &p1.token),
    );
    assert_error(&response, 404, "transaction not found");
    // A cursor from p1's listing does not reveal p1's rows to p2.
    let p1_page = list(&engine, &p1.token, "limit=1");
    let cursor = p1_page.body["next_cursor"].as_str().unwrap().to_owned();
    let p2_page = list(&engine, &p2.token, &format!("cursor={cursor}"));
    assert_eq!(p2_page.body["data"], json!([]));
    // p2's own rows are listed for p2 only.
    let theirs = vouch::api::handle(&engine, authed("POST", START, &p2.token));
    assert_eq!(
        ids_of(&list(&engine, &p2.token, "").body),
        vec![theirs.request_id().to_owned()]
    );
    assert_eq!(ids_of(&list(&engine, &p1.token, "").body).len(), 2);
}

#[test]
fn a_query_that_is_not_utf8_is_answered_400_and_still_recorded() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let response = vouch::api::handle(
        &engine,
        authed("GET", "/api-consent/status?user_fullname=%FF", &key.token),
    );
    assert_error(
        &response,
        400,
        "query string is not valid UTF-8 after percent-decoding",
    );
    let row = transaction(&engine, &key.token, response.request_id());
    assert_eq!(row["status_code"], 400);
    assert_eq!(row["endpoint"], "/api-consent/status");
}
