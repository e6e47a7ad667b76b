//! The job pump against a real HTTP receiver on 127.0.0.1 (started by the tests), through a
//! transport that speaks HTTP/1.1 over a real socket: delivery with the attempt headers, retries
//! of every failure with backoff on a paused clock, job webhooks, an attempt interrupted
//! by a crash (lease expiry), credits charged per attempt, and pumps racing on one database.

mod common;

use std::net::TcpListener;

use common::http::{Receiver, SocketTransport, HOLD};
use common::*;
use serde_json::{json, Value};
use vouch::service::jobs::Credits;
use vouch::service::pump::{LEASE_MS, MAX_IN_FLIGHT_PER_DESTINATION, MAX_IN_FLIGHT_PER_PROJECT};
use vouch::Engine;

/// A job due one second after the manual clock's start.
fn create_job(engine: &Engine, token: &str, body: Value) -> String {
    let mut full = json!({ "scheduled_at": "2026-11-21T10:32:06.123Z" });
    for (name, value) in body.as_object().unwrap() {
        full[name] = value.clone();
    }
    let made = vouch::api::handle(engine, authed("POST", "/jobs", token).json(&full));
    assert_eq!(made.status, 201, "{}", made.body);
    made.body["id"].as_str().unwrap().to_owned()
}

fn job(engine: &Engine, token: &str, id: &str) -> Value {
    vouch::api::handle(engine, authed("GET", &format!("/jobs/{id}"), token)).body
}

fn executions(engine: &Engine, token: &str, id: &str) -> Vec<Value> {
    vouch::api::handle(
        engine,
        authed("GET", &format!("/jobs/{id}/executions"), token),
    )
    .body["executions"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_due_job_is_delivered_once_with_its_attempt_headers_and_webhook() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    let id = create_job(
        &engine,
        &key.token,
        json!({
            "url": receiver.url("/target"),
            "http_method": "PUT",
            "headers": { "X-Custom": "yes" },
            "body": "payload",
            "webhook_url": receiver.url("/webhook"),
            "webhook_headers": { "X-Hook": "h" },
        }),
    );
    // Not due yet: nothing is sent.
    let report = engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(report.attempts, 0);
    assert_eq!(report.next_due_ms, Some(START_MS + 1000));
    assert!(receiver.seen("/target").is_empty());

    clock.advance(1000);
    let report = engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!((report.attempts, report.succeeded), (1, 1));
    assert_eq!(report.next_due_ms, None);
    let calls = receiver.seen("/target");
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(
        (call.method.as_str(), call.body.as_str()),
        ("PUT", "payload")
    );
    assert_eq!(call.headers["x-custom"], "yes");
    assert_eq!(call.headers["x-job-id"], id);
    assert_eq!(call.headers["idempotency-key"], id);
    assert_eq!(call.headers["x-attempt"], "1");
    assert!(call.headers["x-execution-id"].starts_with("exec_"));

    assert_eq!(job(&engine, &key.token, &id)["status"], "success");
    let runs = executions(&engine, &key.token, &id);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "success");
    assert_eq!(runs[0]["status_code"], 200);
    assert_eq!(runs[0]["id"], call.headers["x-execution-id"].as_str());

    let hooks = receiver.seen("/webhook");
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0].headers["x-hook"], "h");
    let payload: Value = serde_json::from_str(&hooks[0].body).unwrap();
    assert_eq!(payload["job_id"], id.as_str());
    assert_eq!(payload["status"], "completed");
    assert_eq!(payload["status_code"], 200);
    assert_eq!(payload["attempt_num"], 1);
    assert_eq!(payload["last_error"], Value::Null);

    // Nothing is delivered twice.
    clock.advance(LEASE_MS * 2);
    assert_eq!(engine.pump().run(&SocketTransport, 10).unwrap().attempts, 0);
    assert_eq!(receiver.seen("/target").len(), 1);
}

#[test]
fn every_failure_is_retried_with_backoff_until_the_retries_run_out() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    receiver.answer("/flaky", &[503, 502]);
    // A client error or a redirect (the test transport follows none) is retried like a 5xx
    // (the spec: a job fails when its attempts exhausted all retries).
    receiver.answer("/gone", &[404, 302, 410]);
    let flaky = create_job(
        &engine,
        &key.token,
        json!({ "url": receiver.url("/flaky"), "max_retries": 2 }),
    );
    let gone = create_job(
        &engine,
        &key.token,
        json!({ "url": receiver.url("/gone"), "max_retries": 2,
                "webhook_url": receiver.url("/hook") }),
    );
    clock.advance(1000);
    let report = engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!((report.attempts, report.failed), (2, 0));
    assert_eq!(job(&engine, &key.token, &gone)["status"], "scheduled");
    assert!(receiver.seen("/hook").is_empty());

    // The flaky job waits for its retry: Retry-After 1 s at least, 10 s at most the first time.
    assert_eq!(job(&engine, &key.token, &flaky)["status"], "scheduled");
    let next = report.next_due_ms.unwrap();
    assert!(
        (START_MS + 2000..=START_MS + 11_000).contains(&next),
        "{next}"
    );
    assert_eq!(engine.pump().run(&SocketTransport, 10).unwrap().attempts, 0);
    clock.advance(10_000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    clock.advance(20_000);
    let report = engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!((report.succeeded, report.failed), (1, 1));
    assert_eq!(job(&engine, &key.token, &flaky)["status"], "success");
    let runs = executions(&engine, &key.token, &flaky);
    let codes: Vec<i64> = runs
        .iter()
        .map(|run| run["status_code"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, [503, 502, 200]);
    let attempts: Vec<String> = receiver
        .seen("/flaky")
        .iter()
        .map(|call| call.headers["x-attempt"].clone())
        .collect();
    assert_eq!(attempts, ["1", "2", "3"]);

    // 1 + max_retries attempts, then failed, and only then the webhook.
    assert_eq!(job(&engine, &key.token, &gone)["status"], "failed");
    assert_eq!(receiver.seen("/gone").len(), 3);
    let codes: Vec<i64> = executions(&engine, &key.token, &gone)
        .iter()
        .map(|run| run["status_code"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, [404, 302, 410]);
    let hooks = receiver.seen("/hook");
    assert_eq!(hooks.len(), 1);
    let hook: Value = serde_json::from_str(&hooks[0].body).unwrap();
    assert_eq!(hook["status"], "failed");
    assert_eq!(hook["status_code"], 410);
    assert_eq!(hook["last_error"], "the target answered HTTP 410");
}

#[test]
fn exhausted_retries_fail_the_job_and_an_unreachable_target_counts_as_a_failure() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    // Nothing listens on this port once the listener is dropped.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let id = create_job(
        &engine,
        &key.token,
        json!({ "url": format!("http://127.0.0.1:{port}/x"), "max_retries": 1 }),
    );
    clock.advance(1000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(job(&engine, &key.token, &id)["status"], "scheduled");
    clock.advance(20_000);
    let report = engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(report.failed, 1);
    let body = job(&engine, &key.token, &id);
    assert_eq!(body["status"], "failed");
    assert_eq!(body["execution_count"], 2);
    let runs = executions(&engine, &key.token, &id);
    assert!(runs.iter().all(|run| run["status_code"].is_null()));
    assert!(runs.iter().all(|run| run["error"].is_string()));
    // A failed job can now be replayed.
    let replay = vouch::api::handle(
        &engine,
        authed("POST", &format!("/jobs/{id}/replay"), &key.token),
    );
    assert_eq!(replay.status, 201, "{}", replay.body);
}

#[test]
fn an_attempt_cut_off_by_a_crash_is_recorded_as_interrupted_and_retried_once() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let key;
    let id;
    {
        let engine = db.open_for_receiver(&clock);
        key = create_key(&engine, "p1");
        engine
            .billing()
            .set(
                "p1",
                &Credits {
                    balance: 10,
                    plan: "test".into(),
                    daily_limit: None,
                },
            )
            .unwrap();
        id = create_job(
            &engine,
            &key.token,
            json!({ "url": receiver.url("/t"), "max_retries": 1 }),
        );
        clock.advance(1000);
        // The claim is taken (attempt counted, credit charged), then the process dies before it
        // reports: the engine is dropped with the attempt open.
        let claims = engine
            .pump()
            .claim_due(clock_now(&clock), 10, &mut || "exec_crashed".into())
            .unwrap();
        assert_eq!(claims.len(), 1);
    }
    let engine = db.open_for_receiver(&clock);
    // Within the lease nobody else takes it.
    assert_eq!(engine.pump().run(&SocketTransport, 10).unwrap().attempts, 0);
    clock.advance(LEASE_MS + 1);
    let report = engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!((report.attempts, report.succeeded), (1, 1));
    let runs = executions(&engine, &key.token, &id);
    let statuses: Vec<&str> = runs
        .iter()
        .map(|run| run["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["interrupted", "success"]);
    assert_eq!(receiver.seen("/t").len(), 1);
    assert_eq!(receiver.seen("/t")[0].headers["x-attempt"], "2");
    // One credit per attempt: the interrupted one and the retry.
    assert_eq!(engine.billing().get("p1").unwrap().unwrap().balance, 8);
}

fn clock_now(clock: &vouch::ManualClock) -> i64 {
    use vouch::Clock;
    clock.now_ms()
}

#[test]
fn pumps_racing_on_one_database_deliver_every_attempt_once() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    let ids: Vec<String> = (0..30)
        .map(|n| {
            create_job(
                &engine,
                &key.token,
                json!({ "url": receiver.url(&format!("/r{n}")) }),
            )
        })
        .collect();
    clock.advance(1000);
    // Four pumps: two threads on this engine, two on engines of their own on the same file.
    let second = db.open_for_receiver(&clock);
    std::thread::scope(|scope| {
        for engine in [&engine, &engine, &second, &second] {
            scope.spawn(
                move || {
                    while engine.pump().run(&SocketTransport, 3).unwrap().attempts > 0 {}
                },
            );
        }
    });
    for (n, id) in ids.iter().enumerate() {
        let calls = receiver.seen(&format!("/r{n}"));
        assert_eq!(calls.len(), 1, "job {n} delivered {} times", calls.len());
        assert_eq!(job(&engine, &key.token, id)["status"], "success");
    }
}

#[test]
fn a_project_out_of_credits_keeps_its_jobs_waiting() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    let credits = |balance| Credits {
        balance,
        plan: "test".into(),
        daily_limit: None,
    };
    engine.billing().set("p1", &credits(1)).unwrap();
    let first = create_job(&engine, &key.token, json!({ "url": receiver.url("/a") }));
    let second = create_job(&engine, &key.token, json!({ "url": receiver.url("/b") }));
    clock.advance(1000);
    let report = engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(report.attempts, 1);
    assert_eq!(engine.billing().get("p1").unwrap().unwrap().balance, 0);
    let waiting = [&first, &second]
        .iter()
        .filter(|id| job(&engine, &key.token, id)["status"] == "scheduled")
        .count();
    assert_eq!(waiting, 1);
    engine.billing().set("p1", &credits(5)).unwrap();
    assert_eq!(engine.pump().run(&SocketTransport, 10).unwrap().attempts, 1);
    assert_eq!(job(&engine, &key.token, &first)["status"], "success");
    assert_eq!(job(&engine, &key.token, &second)["status"], "success");
}

#[test]
fn a_job_that_fails_for_good_notifies_every_enabled_alert_channel() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    let channel = |kind: &str, path: &str| {
        let made = vouch::api::handle(
            &engine,
            authed("POST", "/alerts", &key.token)
                .json(&json!({ "type": kind, "target": receiver.url(path) })),
        );
        assert_eq!(made.status, 201, "{}", made.body);
        made.body["id"].as_str().unwrap().to_owned()
    };
    channel("webhook", "/alert-webhook");
    channel("slack", "/alert-slack");
    let paused = channel("webhook", "/alert-paused");
    let response = vouch::api::handle(
        &engine,
        authed("PATCH", &format!("/alerts/{paused}"), &key.token)
            .json(&json!({ "enabled": false })),
    );
    assert_eq!(response.status, 204);
    receiver.answer("/down", &[503, 503]);
    let id = create_job(
        &engine,
        &key.token,
        json!({ "url": receiver.url("/down"), "max_retries": 1 }),
    );
    clock.advance(1000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    // A retry does not alert.
    assert!(receiver.seen("/alert-webhook").is_empty());
    clock.advance(20_000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(job(&engine, &key.token, &id)["status"], "failed");

    let webhook = receiver.seen("/alert-webhook");
    assert_eq!(webhook.len(), 1);
    let payload: Value = serde_json::from_str(&webhook[0].body).unwrap();
    assert_eq!(payload["resource_type"], "job");
    assert_eq!(payload["resource_id"], id.as_str());
    assert_eq!(payload["status_code"], 503);
    assert_eq!(payload["attempts"], 2);
    assert_eq!(payload["last_error"], "the target answered HTTP 503");
    let slack = receiver.seen("/alert-slack");
    assert_eq!(slack.len(), 1);
    let text: Value = serde_json::from_str(&slack[0].body).unwrap();
    assert!(text["text"].as_str().unwrap().contains(&id), "{text}");
    assert!(receiver.seen("/alert-paused").is_empty());
}

#[test]
fn a_cancelled_job_gets_its_webhook_from_the_next_pump_once() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    let id = create_job(
        &engine,
        &key.token,
        json!({ "url": receiver.url("/never"), "webhook_url": receiver.url("/hook"),
                "webhook_headers": { "X-Secret": "s" } }),
    );
    let plain = create_job(
        &engine,
        &key.token,
        json!({ "url": receiver.url("/never") }),
    );
    for job in [&id, &plain] {
        let cancelled = vouch::api::handle(
            &engine,
            authed("DELETE", &format!("/jobs/{job}"), &key.token),
        );
        assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    }
    assert!(receiver.seen("/hook").is_empty());
    clock.advance(60_000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    engine.pump().run(&SocketTransport, 10).unwrap();
    let hooks = receiver.seen("/hook");
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0].headers["x-secret"], "s");
    let payload: Value = serde_json::from_str(&hooks[0].body).unwrap();
    assert_eq!(payload["job_id"], id.as_str());
    assert_eq!(payload["status"], "cancelled");
    assert_eq!(payload["attempt_num"], 0);
    assert_eq!(payload["completed_at"], START_TEXT);
    assert!(receiver.seen("/never").is_empty());
    assert_eq!(db.count("SELECT COUNT(*) FROM outbox"), 0);
}

#[test]
fn webhooks_and_alerts_are_signed_and_a_rotated_secret_signs_beside_the_new_one_for_a_day() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    let other = create_key(&engine, "p2");
    let alert = vouch::api::handle(
        &engine,
        authed("POST", "/alerts", &key.token)
            .json(&json!({ "type": "webhook", "target": receiver.url("/alert") })),
    );
    assert_eq!(alert.status, 201);
    // Without a secret, deliveries go unsigned.
    create_job(
        &engine,
        &key.token,
        json!({ "url": receiver.url("/call"), "webhook_url": receiver.url("/hook0") }),
    );
    clock.advance(1000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert!(!receiver.seen("/hook0")[0]
        .headers
        .contains_key("webhook-signature"));

    let first = vouch::api::handle(&engine, authed("POST", "/signing-secrets", &key.token));
    assert_eq!(first.status, 201, "{}", first.body);
    let first_secret = first.body["secret"].as_str().unwrap().to_owned();
    assert!(first_secret.starts_with("whsec_"));
    assert_eq!(first.body["previous_expires_at"], Value::Null);
    let listed = vouch::api::handle(&engine, authed("GET", "/signing-secrets", &key.token));
    assert_eq!(listed.body["secrets"].as_array().unwrap().len(), 1);
    assert!(!listed.body.to_string().contains(&first_secret[6..]));
    let elsewhere = vouch::api::handle(&engine, authed("GET", "/signing-secrets", &other.token));
    assert_eq!(elsewhere.body["secrets"], json!([]));

    // A failing job: its webhook and its alert are signed; the job's own call is not.
    receiver.answer("/call1", &[400]);
    let due_at = |offset_ms: i64| vouch::format_timestamp(engine.runtime().now_ms() + offset_ms);
    let made = vouch::api::handle(
        &engine,
        authed("POST", "/jobs", &key.token).json(&json!({
            "url": receiver.url("/call1"),
            "scheduled_at": due_at(1000),
            "webhook_url": receiver.url("/hook1"),
        })),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    clock.advance(1000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    let hook = &receiver.seen("/hook1")[0];
    assert!(hook.headers["webhook-id"].starts_with("msg_"));
    assert_eq!(
        hook.headers["webhook-timestamp"],
        (engine.runtime().now_ms() / 1000).to_string()
    );
    assert!(signed_by(hook, &first_secret), "{:?}", hook.headers);
    assert!(signed_by(&receiver.seen("/alert")[0], &first_secret));
    assert!(!receiver.seen("/call1")[0]
        .headers
        .contains_key("webhook-signature"));

    // Rotation: both secrets sign for a day, then only the new one.
    let second = vouch::api::handle(&engine, authed("POST", "/signing-secrets", &key.token));
    let second_secret = second.body["secret"].as_str().unwrap().to_owned();
    assert_eq!(
        second.body["previous_expires_at"],
        vouch::format_timestamp(engine.runtime().now_ms() + 86_400_000)
    );
    let made = |path: &str| {
        let made = vouch::api::handle(
            &engine,
            authed("POST", "/jobs", &key.token).json(&json!({
                "url": receiver.url("/call"),
                "scheduled_at": due_at(1000),
                "webhook_url": receiver.url(path),
            })),
        );
        assert_eq!(made.status, 201, "{}", made.body);
    };
    made("/hook2");
    clock.advance(1000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    let hook = &receiver.seen("/hook2")[0];
    assert!(signed_by(hook, &first_secret) && signed_by(hook, &second_secret));
    clock.advance(86_400_000);
    let listed = vouch::api::handle(&engine, authed("GET", "/signing-secrets", &key.token));
    assert_eq!(listed.body["secrets"].as_array().unwrap().len(), 1);
    made("/hook3");
    clock.advance(1000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    let hook = &receiver.seen("/hook3")[0];
    assert!(signed_by(hook, &second_secret) && !signed_by(hook, &first_secret));
}

#[test]
fn a_project_that_cannot_pay_does_not_hold_up_other_projects() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let broke = create_key(&engine, "broke");
    let other = create_key(&engine, "other");
    // More due jobs than a pump looks at (4 x its batch), then the balance runs out.
    for _ in 0..450 {
        create_job(
            &engine,
            &broke.token,
            json!({ "url": receiver.url("/broke") }),
        );
    }
    engine
        .billing()
        .set(
            "broke",
            &Credits {
                balance: 0,
                plan: "free".to_owned(),
                daily_limit: None,
            },
        )
        .unwrap();
    let id = create_job(
        &engine,
        &other.token,
        json!({ "url": receiver.url("/other") }),
    );
    clock.advance(1000);
    engine.pump().run(&SocketTransport, 100).unwrap();
    assert!(receiver.seen("/broke").is_empty());
    assert_eq!(job(&engine, &other.token, &id)["status"], "success");
}

/// Releases a receiver's held calls when dropped, so that a failed assertion does not leave a
/// pump waiting for them.
struct Release<'a>(&'a Receiver);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Polls `done` for up to 20 s.
fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..400 {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn a_slow_receiver_holds_up_no_other_project_and_only_its_share_of_its_own() {
    let slow = Receiver::start();
    let fast = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let a = create_key(&engine, "slow");
    let b = create_key(&engine, "fast");
    let total = MAX_IN_FLIGHT_PER_PROJECT + 2;
    slow.answer("/slow", &vec![HOLD; total]);
    let held: Vec<String> = (0..total)
        .map(|_| create_job(&engine, &a.token, json!({ "url": slow.url("/slow") })))
        .collect();
    let quick: Vec<String> = (0..3)
        .map(|_| create_job(&engine, &b.token, json!({ "url": fast.url("/fast") })))
        .collect();
    clock.advance(1000);
    std::thread::scope(|scope| {
        let _release = Release(&slow);
        let first = scope.spawn(|| engine.pump().deliver(&SocketTransport, 100).unwrap());
        // While the slow receiver holds its calls, the other project's are answered and
        // recorded, and a second pump on another thread delivers a new job of theirs: the slow
        // project, at its limit, is not claimed further.
        let answered = wait_until(|| {
            quick
                .iter()
                .all(|id| job(&engine, &b.token, id)["status"] == "success")
        });
        // Its calls all reach the receiver (they were sent at once, but may land later).
        let filled = wait_until(|| slow.seen("/slow").len() >= MAX_IN_FLIGHT_PER_PROJECT);
        let late = create_job(
            &engine,
            &b.token,
            json!({ "url": fast.url("/late"), "scheduled_at": "2026-11-21T10:32:07.123Z" }),
        );
        clock.advance(1000);
        let second = engine.pump().deliver(&SocketTransport, 100).unwrap();
        let seen_slow = slow.seen("/slow").len();
        slow.release();
        let first = first.join().unwrap();
        assert!(
            answered,
            "the fast project's calls waited for the slow receiver"
        );
        assert!(filled);
        assert_eq!(seen_slow, MAX_IN_FLIGHT_PER_PROJECT);
        assert_eq!((second.attempts, second.succeeded), (1, 1));
        assert_eq!(job(&engine, &b.token, &late)["status"], "success");
        assert_eq!(
            (first.attempts, first.succeeded),
            (MAX_IN_FLIGHT_PER_PROJECT + 3, MAX_IN_FLIGHT_PER_PROJECT + 3)
        );
    });
    // What the limit left waiting (unclaimed, uncharged) goes with the next pump.
    let waiting = held
        .iter()
        .filter(|id| job(&engine, &a.token, id)["execution_count"] == 0)
        .count();
    assert_eq!(waiting, 2);
    let report = engine.pump().deliver(&SocketTransport, 100).unwrap();
    assert_eq!(report.succeeded, 2);
    assert!(held
        .iter()
        .all(|id| job(&engine, &a.token, id)["status"] == "success"));
}

#[test]
fn projects_calling_one_receiver_share_its_limit() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    // Three projects, each under its own limit, more than the destination's together.
    let each = MAX_IN_FLIGHT_PER_DESTINATION / 3 + 2;
    assert!(each <= MAX_IN_FLIGHT_PER_PROJECT);
    let jobs: Vec<(String, String)> = (0..3)
        .flat_map(|p| {
            let key = create_key(&engine, &format!("p{p}"));
            (0..each)
                .map(|_| {
                    let id =
                        create_job(&engine, &key.token, json!({ "url": receiver.url("/one") }));
                    (key.token.clone(), id)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    receiver.answer("/one", &vec![HOLD; jobs.len()]);
    clock.advance(1000);
    std::thread::scope(|scope| {
        let _release = Release(&receiver);
        let pump = scope.spawn(|| engine.pump().deliver(&SocketTransport, 100).unwrap());
        let full = wait_until(|| receiver.seen("/one").len() == MAX_IN_FLIGHT_PER_DESTINATION);
        // A second pump finds the destination full: nothing more is sent to it.
        let second = engine.pump().deliver(&SocketTransport, 100).unwrap();
        receiver.release();
        let first = pump.join().unwrap();
        assert!(full);
        assert_eq!(second.attempts, 0);
        assert_eq!(first.attempts, MAX_IN_FLIGHT_PER_DESTINATION);
    });
    let report = engine.pump().deliver(&SocketTransport, 100).unwrap();
    assert_eq!(report.attempts, jobs.len() - MAX_IN_FLIGHT_PER_DESTINATION);
    assert!(jobs
        .iter()
        .all(|(token, id)| job(&engine, token, id)["status"] == "success"));
}

/// [`SocketTransport`] with the trait's default `max_concurrent` (1), noting the thread of each
/// call, as a host's callback through the C ABI gets them.
struct OneAtATime(std::sync::Mutex<Vec<std::thread::ThreadId>>);

impl vouch::service::pump::Transport for OneAtATime {
    fn send(
        &self,
        request: &vouch::service::pump::OutboundRequest,
    ) -> Result<vouch::service::pump::OutboundResponse, String> {
        self.0.lock().unwrap().push(std::thread::current().id());
        SocketTransport.send(request)
    }
}

#[test]
fn a_transport_that_asks_for_one_call_at_a_time_is_called_on_the_pumping_thread_in_order() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    for path in ["/1", "/2", "/3"] {
        create_job(
            &engine,
            &key.token,
            json!({ "url": receiver.url(path), "webhook_url": receiver.url("/hook") }),
        );
    }
    clock.advance(1000);
    let transport = OneAtATime(std::sync::Mutex::new(Vec::new()));
    let report = engine.pump().run(&transport, 10).unwrap();
    assert_eq!(report.succeeded, 3);
    let threads = transport.0.lock().unwrap().clone();
    assert_eq!(threads.len(), 6);
    assert!(threads.iter().all(|id| *id == std::thread::current().id()));
    let order: Vec<String> = receiver
        .all()
        .iter()
        .map(|seen| seen.path.clone())
        .collect();
    assert_eq!(order, ["/1", "/hook", "/2", "/hook", "/3", "/hook"]);
}
