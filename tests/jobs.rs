//! The job-scheduling spec's `/jobs` endpoints through `vouch::api::handle` on a real SQLite file:
//! create (validation, `invalid_scheduled_at`, idempotency keys), read, list with cursor pages,
//! cancel, replay, executions, project isolation, the error shape, and the credit gate (402, 429).
//! Attempts are not made yet (the pump comes with the transport), so the tests that need a failed
//! job or an execution row write them with SQL on a second connection, as the pump will.

mod common;

use common::*;
use serde_json::{json, Value};
use vouch::api::Response;
use vouch::service::jobs::Credits;
use vouch::Engine;

/// One hour after the manual clock's start.
const LATER: &str = "2026-11-21T11:32:05Z";

fn create(engine: &Engine, token: &str, body: &Value) -> Response {
    vouch::api::handle(engine, authed("POST", "/jobs", token).json(body))
}

fn job_body() -> Value {
    json!({
        "url": "https://example.test/hook",
        "scheduled_at": LATER,
        "headers": { "X-Trace": "abc" },
        "body": "{\"hello\":1}",
        "max_retries": 2,
    })
}

fn assert_job_error(response: &Response, status: u16, code: &str) {
    assert_eq!(response.status, status, "{}", response.body);
    assert_eq!(response.body["error"]["code"], code, "{}", response.body);
    assert!(
        response.body["error"]["message"]
            .as_str()
            .is_some_and(|message| !message.is_empty()),
        "{}",
        response.body
    );
}

#[test]
fn a_job_is_created_read_and_listed() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");

    let made = create(&engine, &key.token, &job_body());
    assert_eq!(made.status, 201, "{}", made.body);
    let id = made.body["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("job_") && id.len() == 36, "{id}");
    assert_eq!(made.body["status"], "scheduled");
    assert_eq!(made.body["http_method"], "POST");
    assert_eq!(made.body["max_retries"], 2);
    assert_eq!(made.body["scheduled_at"], "2026-11-21T11:32:05.000Z");
    assert_eq!(made.body["created_at"], START_TEXT);

    let got = vouch::api::handle(&engine, authed("GET", &format!("/jobs/{id}"), &key.token));
    assert_eq!(got.status, 200);
    assert_eq!(got.body["id"], id.as_str());
    assert_eq!(got.body["headers"], json!({ "X-Trace": "abc" }));
    assert_eq!(got.body["execution_count"], 0);

    let listed = vouch::api::handle(&engine, authed("GET", "/jobs?status=scheduled", &key.token));
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body["data"][0]["id"], id.as_str());
    assert_eq!(listed.body["next_cursor"], Value::Null);
    let none = vouch::api::handle(&engine, authed("GET", "/jobs?status=failed", &key.token));
    assert_eq!(none.body["data"], json!([]));

    let executions = vouch::api::handle(
        &engine,
        authed("GET", &format!("/jobs/{id}/executions"), &key.token),
    );
    assert_eq!(executions.status, 200);
    assert_eq!(executions.body, json!({ "executions": [] }));
}

#[test]
fn invalid_jobs_are_refused_with_the_job_error_shape() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    let with = |field: &str, value: Value| {
        let mut body = job_body();
        body[field] = value;
        create(&engine, &key.token, &body)
    };
    // scheduled_at in the past, now, or not a timestamp.
    for when in [
        "2026-11-21T10:32:05.123Z",
        "2020-01-01T00:00:00Z",
        "tomorrow",
    ] {
        assert_job_error(
            &with("scheduled_at", json!(when)),
            400,
            "invalid_scheduled_at",
        );
    }
    assert_job_error(
        &with("url", json!("ftp://example.test/")),
        400,
        "invalid_request",
    );
    assert_job_error(
        &with("url", json!("https:///nohost")),
        400,
        "invalid_request",
    );
    // Addresses the device must not call, in the literal forms URL parsers accept: the 400 names
    // the reason (server-side request forgery; names are checked by the transport on resolving).
    for (url, reason) in [
        ("http://127.0.0.1:8080/", "127.0.0.1 is a loopback address"),
        ("http://2130706433/", "127.0.0.1 is a loopback address"),
        ("http://0x7f.1/", "127.0.0.1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/", "IPv4-mapped"),
        ("http://[64:ff9b::a9fe:a9fe]/", "NAT64"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://10.0.0.7/", "private"),
        ("http://localhost/", "loopback name"),
    ] {
        let refused = with("url", json!(url));
        assert_job_error(&refused, 400, "invalid_request");
        let message = refused.body["error"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            message.starts_with("url: ") && message.contains(reason),
            "{url}: {message}"
        );
    }
    let webhook = with("webhook_url", json!("http://192.168.1.1/hook"));
    assert_job_error(&webhook, 400, "invalid_request");
    assert_job_error(
        &with("url", json!("https://bücher.example/")),
        400,
        "invalid_request",
    );
    assert_job_error(&with("http_method", json!("BREW")), 400, "invalid_request");
    assert_job_error(&with("max_retries", json!(11)), 400, "invalid_request");
    assert_job_error(&with("max_retries", json!(-1)), 400, "invalid_request");
    assert_job_error(
        &with("headers", json!({ "Bad Name": "x" })),
        400,
        "invalid_request",
    );
    assert_job_error(
        &with("headers", json!({ "X-Split": "a\r\nInjected: 1" })),
        400,
        "invalid_request",
    );
    assert_job_error(&with("surprise", json!(true)), 400, "invalid_request");
    let no_body = vouch::api::handle(&engine, authed("POST", "/jobs", &key.token));
    assert_job_error(&no_body, 400, "invalid_request");
    // Nothing was stored.
    assert_eq!(db.count("SELECT COUNT(*) FROM jobs"), 0);
    // A lower-case method is accepted and normalised.
    let made = with("http_method", json!("put"));
    assert_eq!(made.status, 201, "{}", made.body);
    // A scheduled_at without a zone offset is UTC (the spec keeps its times in UTC).
    let naive = with("scheduled_at", json!("2026-11-21T11:32:05"));
    assert_eq!(naive.status, 201, "{}", naive.body);
    assert_eq!(naive.body["scheduled_at"], "2026-11-21T11:32:05.000Z");
    assert_eq!(made.body["http_method"], "PUT");
}

#[test]
fn tokens_routes_and_projects_use_the_job_error_shape() {
    let db = Db::new();
    let engine = db.open_with_clock(&manual_clock());
    let key = create_key(&engine, "p1");
    let other = create_key(&engine, "p2");

    let anonymous = vouch::api::handle(&engine, vouch::api::Request::new("GET", "/jobs"));
    assert_job_error(&anonymous, 401, "unauthorized");
    // A token that fails validation is a 401 here (the verification spec's 500 does not apply).
    let forged = vouch::api::handle(
        &engine,
        authed("GET", "/jobs", "eyJhbGciOiJIUzI1NiJ9.e30.c2ln"),
    );
    assert_job_error(&forged, 401, "unauthorized");
    assert_job_error(
        &vouch::api::handle(&engine, authed("PUT", "/jobs", &key.token)),
        405,
        "method_not_allowed",
    );
    assert_job_error(
        &vouch::api::handle(&engine, authed("GET", "/jobs/job_1/nothing", &key.token)),
        404,
        "not_found",
    );

    let id = create(&engine, &key.token, &job_body()).body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Another project sees nothing of it.
    for (method, path) in [
        ("GET", format!("/jobs/{id}")),
        ("DELETE", format!("/jobs/{id}")),
        ("POST", format!("/jobs/{id}/replay")),
        ("GET", format!("/jobs/{id}/executions")),
    ] {
        assert_job_error(
            &vouch::api::handle(&engine, authed(method, &path, &other.token)),
            404,
            "not_found",
        );
    }
    let theirs = vouch::api::handle(&engine, authed("GET", "/jobs", &other.token));
    assert_eq!(theirs.body["data"], json!([]));
    // Job calls are not verification transactions.
    assert_eq!(db.count("SELECT COUNT(*) FROM transactions"), 0);
}

#[test]
fn an_idempotency_key_returns_the_first_job_and_refuses_another_request() {
    let db = Db::new();
    let engine = db.open_with_clock(&manual_clock());
    let key = create_key(&engine, "p1");
    let mut body = job_body();
    body["idempotency_key"] = json!("order-42");
    let first = create(&engine, &key.token, &body);
    assert_eq!(first.status, 201);
    let again = create(&engine, &key.token, &body);
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["id"], first.body["id"]);
    body["body"] = json!("something else");
    assert_job_error(&create(&engine, &key.token, &body), 409, "conflict");
    // The same key in another project is another job.
    let other = create_key(&engine, "p2");
    let theirs = create(&engine, &other.token, &job_body_with_key("order-42"));
    assert_eq!(theirs.status, 201);
    assert_ne!(theirs.body["id"], first.body["id"]);
    assert_eq!(db.count("SELECT COUNT(*) FROM jobs"), 2);
}

fn job_body_with_key(key: &str) -> Value {
    let mut body = job_body();
    body["idempotency_key"] = json!(key);
    body
}

#[test]
fn pages_follow_the_cursor_newest_first() {
    let db = Db::new();
    let engine = db.open_with_clock(&manual_clock());
    let key = create_key(&engine, "p1");
    let made: Vec<String> = (0..5)
        .map(|_| {
            create(&engine, &key.token, &job_body()).body["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(cursor) => format!("/jobs?limit=2&cursor={cursor}"),
            None => "/jobs?limit=2".to_owned(),
        };
        let page = vouch::api::handle(&engine, authed("GET", &path, &key.token));
        assert_eq!(page.status, 200, "{}", page.body);
        for job in page.body["data"].as_array().unwrap() {
            seen.push(job["id"].as_str().unwrap().to_owned());
        }
        match page.body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let newest_first: Vec<String> = made.into_iter().rev().collect();
    assert_eq!(seen, newest_first);
    assert_job_error(
        &vouch::api::handle(&engine, authed("GET", "/jobs?limit=101", &key.token)),
        400,
        "invalid_request",
    );
    assert_job_error(
        &vouch::api::handle(&engine, authed("GET", "/jobs?cursor=nope", &key.token)),
        400,
        "invalid_request",
    );
}

#[test]
fn cancel_works_once_and_only_before_the_first_attempt() {
    let db = Db::new();
    let engine = db.open_with_clock(&manual_clock());
    let key = create_key(&engine, "p1");
    let id = |response: Response| response.body["id"].as_str().unwrap().to_owned();

    let waiting = id(create(&engine, &key.token, &job_body()));
    let cancelled = vouch::api::handle(
        &engine,
        authed("DELETE", &format!("/jobs/{waiting}"), &key.token),
    );
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(cancelled.body["status"], "cancelled");
    assert_job_error(
        &vouch::api::handle(
            &engine,
            authed("DELETE", &format!("/jobs/{waiting}"), &key.token),
        ),
        409,
        "conflict",
    );
    assert_job_error(
        &vouch::api::handle(&engine, authed("DELETE", "/jobs/job_absent", &key.token)),
        404,
        "not_found",
    );

    // A job with an attempt on record (as the pump writes it) can no longer be cancelled.
    let fired = id(create(&engine, &key.token, &job_body()));
    db.sql().execute_batch(&format!(
        "UPDATE jobs SET attempts = 1 WHERE id = '{fired}';
         INSERT INTO job_executions (id, job_id, project_id, attempt_num, status, status_code, duration_ms, executed_at)
         VALUES ('exec_1', '{fired}', 'p1', 1, 'failed', 503, 12, {START_MS});"
    ));
    assert_job_error(
        &vouch::api::handle(
            &engine,
            authed("DELETE", &format!("/jobs/{fired}"), &key.token),
        ),
        409,
        "conflict",
    );
    let executions = vouch::api::handle(
        &engine,
        authed("GET", &format!("/jobs/{fired}/executions"), &key.token),
    );
    assert_eq!(executions.body["executions"][0]["id"], "exec_1");
    assert_eq!(executions.body["executions"][0]["attempt_num"], 1);
    assert_eq!(executions.body["executions"][0]["status_code"], 503);
    assert_eq!(executions.body["executions"][0]["duration_ms"], 12);
    assert_eq!(executions.body["executions"][0]["executed_at"], START_TEXT);
    let got = vouch::api::handle(
        &engine,
        authed("GET", &format!("/jobs/{fired}"), &key.token),
    );
    assert_eq!(got.body["execution_count"], 1);
}

#[test]
fn only_a_failed_job_is_replayed_as_a_pending_clone() {
    let db = Db::new();
    let engine = db.open_with_clock(&manual_clock());
    let key = create_key(&engine, "p1");
    let source = create(&engine, &key.token, &job_body()).body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_job_error(
        &vouch::api::handle(
            &engine,
            authed("POST", &format!("/jobs/{source}/replay"), &key.token),
        ),
        409,
        "conflict",
    );
    db.sql().execute(
        "UPDATE jobs SET status = 'failed', attempts = 3 WHERE id = ?1",
        &[&source],
    );
    let replay = vouch::api::handle(
        &engine,
        authed("POST", &format!("/jobs/{source}/replay"), &key.token),
    );
    assert_eq!(replay.status, 201, "{}", replay.body);
    assert_eq!(replay.body["status"], "pending");
    assert_eq!(replay.body["replay_of"], source.as_str());
    assert_eq!(replay.body["scheduled_at"], START_TEXT);
    assert_eq!(replay.body["url"], "https://example.test/hook");
    assert_eq!(replay.body["max_retries"], 2);
    assert_ne!(replay.body["id"], source.as_str());
    // The source stays failed.
    let got = vouch::api::handle(
        &engine,
        authed("GET", &format!("/jobs/{source}"), &key.token),
    );
    assert_eq!(got.body["status"], "failed");
}

#[test]
fn the_credit_gate_refuses_creates_and_replays_it_cannot_pay_for() {
    let db = Db::new();
    let engine = db.open_with_clock(&manual_clock());
    let key = create_key(&engine, "p1");
    // Unmetered until credits are set.
    assert_eq!(engine.billing().get("p1").unwrap(), None);
    assert_eq!(create(&engine, &key.token, &job_body()).status, 201);

    engine
        .billing()
        .set(
            "p1",
            &Credits {
                balance: 0,
                plan: "free".into(),
                daily_limit: None,
            },
        )
        .unwrap();
    assert_job_error(
        &create(&engine, &key.token, &job_body()),
        402,
        "insufficient_credits",
    );
    db.sql().execute(
        "UPDATE jobs SET status = 'failed' WHERE project_id = 'p1'",
        &[],
    );
    let source: String =
        db.sql()
            .query_row("SELECT id FROM jobs WHERE project_id = 'p1'", &[], |row| {
                row.get(0)
            });
    assert_job_error(
        &vouch::api::handle(
            &engine,
            authed("POST", &format!("/jobs/{source}/replay"), &key.token),
        ),
        402,
        "insufficient_credits",
    );

    // A daily cap of 1 with one attempt today: 429.
    engine
        .billing()
        .set(
            "p1",
            &Credits {
                balance: 100,
                plan: "free".into(),
                daily_limit: Some(1),
            },
        )
        .unwrap();
    assert_eq!(create(&engine, &key.token, &job_body()).status, 201);
    db.sql().execute(
        &format!(
            "INSERT INTO job_executions (id, job_id, project_id, attempt_num, status, executed_at)
                 VALUES ('exec_today', ?1, 'p1', 1, 'failed', {START_MS})"
        ),
        &[&source],
    );
    assert_job_error(
        &create(&engine, &key.token, &job_body()),
        429,
        "daily_limit_exceeded",
    );
    // Another project is not affected.
    let other = create_key(&engine, "p2");
    assert_eq!(create(&engine, &other.token, &job_body()).status, 201);
    assert_eq!(
        engine.billing().get("p1").unwrap(),
        Some(Credits {
            balance: 100,
            plan: "free".into(),
            daily_limit: Some(1),
        })
    );
}

#[test]
fn stats_report_the_window_of_executions_and_usage_per_day() {
    let db = Db::new();
    let engine = db.open_with_clock(&manual_clock());
    let key = create_key(&engine, "p1");
    let other = create_key(&engine, "p2");
    let job = create(&engine, &key.token, &job_body()).body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    const DAY: i64 = 86_400_000;
    // 20 attempts today with durations 10, 20, ..., 200 ms (every fourth failed), two yesterday,
    // one 40 days ago, one still running, and one of another project.
    let sql = db.sql();
    let insert = |n: i64, status: &str, duration: Option<i64>, at: i64, project: &str| {
        sql.execute(
            "INSERT INTO job_executions (id, job_id, project_id, attempt_num, status, duration_ms, executed_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            &[&format!("exec_{n}"), &job, &project, &n, &status, &duration, &at],
        );
    };
    for n in 1..=20 {
        let status = if n % 4 == 0 { "failed" } else { "success" };
        insert(n, status, Some(n * 10), START_MS - 60_000, "p1");
    }
    insert(21, "success", Some(5), START_MS - DAY, "p1");
    insert(22, "interrupted", None, START_MS - DAY, "p1");
    insert(23, "success", Some(1), START_MS - 40 * DAY, "p1");
    insert(24, "running", None, START_MS, "p1");
    insert(25, "success", Some(1), START_MS, "p2");

    let stats = vouch::api::handle(&engine, authed("GET", "/stats/jobs?days=7", &key.token));
    assert_eq!(stats.status, 200, "{}", stats.body);
    assert_eq!(stats.body["total_executions"], 22);
    assert_eq!(stats.body["succeeded"], 16);
    assert_eq!(stats.body["failed"], 6);
    assert_eq!(stats.body["success_rate"], 0.7273);
    // Mean of 10..200 and 5 over 21 attempts with a duration; p95 is the 20th of 21.
    assert_eq!(stats.body["avg_duration_ms"], 100.2);
    assert_eq!(stats.body["p95_duration_ms"], 190);
    assert_eq!(stats.body["since_days"], 7);
    let all = vouch::api::handle(&engine, authed("GET", "/stats/jobs", &key.token));
    assert_eq!(all.body["since_days"], 30);
    assert_eq!(all.body["total_executions"], 22);
    let wide = vouch::api::handle(&engine, authed("GET", "/stats/jobs?days=9999", &key.token));
    assert_eq!(wide.body["since_days"], 365);
    assert_eq!(wide.body["total_executions"], 23);
    assert_eq!(
        vouch::api::handle(&engine, authed("GET", "/stats/jobs?days=0", &key.token)).body
            ["since_days"],
        1
    );
    assert_job_error(
        &vouch::api::handle(&engine, authed("GET", "/stats/jobs?days=week", &key.token)),
        400,
        "invalid_request",
    );
    let empty = vouch::api::handle(&engine, authed("GET", "/stats/jobs", &other.token));
    assert_eq!(empty.body["total_executions"], 1);

    let usage = vouch::api::handle(&engine, authed("GET", "/stats/usage?days=3", &key.token));
    assert_eq!(usage.status, 200, "{}", usage.body);
    assert_eq!(
        usage.body["buckets"],
        json!([
            { "date": "2026-11-19", "job_executions": 0, "buffer_executions": 0 },
            { "date": "2026-11-20", "job_executions": 2, "buffer_executions": 0 },
            { "date": "2026-11-21", "job_executions": 21, "buffer_executions": 0 },
        ])
    );
    assert_eq!(usage.body["total_job_executions"], 23);
    assert_eq!(usage.body["total_buffer_executions"], 0);
    assert_eq!(usage.body["balance"], Value::Null);
    assert_eq!(usage.body["plan"], "unmetered");
    assert_eq!(usage.body["since_days"], 3);
    engine
        .billing()
        .set(
            "p1",
            &Credits {
                balance: 77,
                plan: "pro".into(),
                daily_limit: None,
            },
        )
        .unwrap();
    let usage = vouch::api::handle(&engine, authed("GET", "/stats/usage", &key.token));
    assert_eq!(usage.body["buckets"].as_array().unwrap().len(), 30);
    assert_eq!(
        (usage.body["balance"].clone(), usage.body["plan"].clone()),
        (json!(77), json!("pro"))
    );
}

#[test]
fn alert_channels_are_created_listed_paused_and_deleted() {
    let db = Db::new();
    let engine = db.open_with_clock(&manual_clock());
    let key = create_key(&engine, "p1");
    let other = create_key(&engine, "p2");
    let post = |body: Value| {
        vouch::api::handle(&engine, authed("POST", "/alerts", &key.token).json(&body))
    };
    assert_job_error(
        &post(json!({ "type": "email", "target": "https://example.test/" })),
        400,
        "invalid_request",
    );
    assert_job_error(
        &post(json!({ "type": "slack", "target": "not a url" })),
        400,
        "invalid_request",
    );
    assert_job_error(
        &post(json!({ "type": "webhook", "target": "http://[fd00:ec2::254]/" })),
        400,
        "invalid_request",
    );
    assert_job_error(&post(json!({ "type": "slack" })), 400, "invalid_request");
    let made =
        post(json!({ "type": "slack", "target": "https://chat.example.test/hook", "name": "ops" }));
    assert_eq!(made.status, 201, "{}", made.body);
    let id = made.body["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("alt_"));
    assert_eq!(made.body["enabled"], true);
    assert_eq!(made.body["name"], "ops");
    assert_eq!(made.body["created_at"], START_TEXT);

    let listed = vouch::api::handle(&engine, authed("GET", "/alerts", &key.token));
    assert_eq!(listed.body["channels"][0]["id"], id.as_str());
    let theirs = vouch::api::handle(&engine, authed("GET", "/alerts", &other.token));
    assert_eq!(theirs.body, json!({ "channels": [] }));

    let path = format!("/alerts/{id}");
    let paused = vouch::api::handle(
        &engine,
        authed("PATCH", &path, &key.token).json(&json!({ "enabled": false })),
    );
    assert_eq!(paused.status, 204, "{}", paused.body);
    let listed = vouch::api::handle(&engine, authed("GET", "/alerts", &key.token));
    assert_eq!(listed.body["channels"][0]["enabled"], false);
    assert_job_error(
        &vouch::api::handle(
            &engine,
            authed("PATCH", &path, &key.token).json(&json!({ "enabled": "no" })),
        ),
        400,
        "invalid_request",
    );
    assert_job_error(
        &vouch::api::handle(
            &engine,
            authed("PATCH", &path, &other.token).json(&json!({ "enabled": true })),
        ),
        404,
        "not_found",
    );
    assert_job_error(
        &vouch::api::handle(&engine, authed("DELETE", &path, &other.token)),
        404,
        "not_found",
    );
    assert_eq!(
        vouch::api::handle(&engine, authed("DELETE", &path, &key.token)).status,
        204
    );
    assert_job_error(
        &vouch::api::handle(&engine, authed("DELETE", &path, &key.token)),
        404,
        "not_found",
    );
    assert_job_error(
        &vouch::api::handle(&engine, authed("GET", &path, &key.token)),
        405,
        "method_not_allowed",
    );
}
