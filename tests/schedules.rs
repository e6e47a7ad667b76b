//! Cron schedules through `vouch::api::handle` and the pump on a real SQLite file and a real HTTP
//! receiver: strict 5-field parsing, `next_run_at`, one job per slot that inherits the schedule's
//! call, missed slots collapsing into one run, deletion stopping future slots, project isolation.

mod common;

use common::http::{Receiver, SocketTransport};
use common::*;
use serde_json::{json, Value};
use vouch::api::Response;
use vouch::Engine;

const HOUR_MS: i64 = 3_600_000;

fn create(engine: &Engine, token: &str, body: &Value) -> Response {
    vouch::api::handle(engine, authed("POST", "/schedules", token).json(body))
}

fn jobs_of(engine: &Engine, token: &str) -> Vec<Value> {
    vouch::api::handle(engine, authed("GET", "/jobs?limit=100", token)).body["data"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn schedules_are_created_strictly_listed_and_deleted() {
    let db = Db::new();
    let engine = db.open_with_clock(&manual_clock());
    let key = create_key(&engine, "p1");
    let other = create_key(&engine, "p2");
    for cron in [
        "* * * * * *",
        "@daily",
        "0 0 31 2 *",
        "61 * * * *",
        "* * *",
        "",
    ] {
        let response = create(
            &engine,
            &key.token,
            &json!({ "url": "https://example.test/", "cron": cron }),
        );
        assert_eq!(response.status, 400, "{cron:?}: {}", response.body);
        assert_eq!(
            response.body["error"]["code"], "invalid_request",
            "{cron:?}"
        );
    }
    // 10:32:05 on the clock: the next quarter hour is 10:45.
    let made = create(
        &engine,
        &key.token,
        &json!({ "url": "https://example.test/", "cron": "*/15  * * * *", "max_retries": 1 }),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let id = made.body["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("sched_"));
    assert_eq!(made.body["status"], "active");
    assert_eq!(made.body["cron"], "*/15 * * * *");
    assert_eq!(made.body["next_run_at"], "2026-11-21T10:45:00.000Z");
    assert_eq!(made.body["created_at"], START_TEXT);

    let listed = vouch::api::handle(&engine, authed("GET", "/schedules", &key.token));
    assert_eq!(listed.body["data"][0]["id"], id.as_str());
    assert_eq!(listed.body["next_cursor"], Value::Null);
    let theirs = vouch::api::handle(&engine, authed("GET", "/schedules", &other.token));
    assert_eq!(theirs.body["data"], json!([]));
    let foreign = vouch::api::handle(
        &engine,
        authed("DELETE", &format!("/schedules/{id}"), &other.token),
    );
    assert_eq!(foreign.status, 404);
    assert_eq!(foreign.body["error"]["code"], "not_found");

    let deleted = vouch::api::handle(
        &engine,
        authed("DELETE", &format!("/schedules/{id}"), &key.token),
    );
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(deleted.body["status"], "deleted");
    assert_eq!(deleted.body["next_run_at"], Value::Null);
    let again = vouch::api::handle(
        &engine,
        authed("DELETE", &format!("/schedules/{id}"), &key.token),
    );
    assert_eq!(again.status, 404);
    let listed = vouch::api::handle(&engine, authed("GET", "/schedules", &key.token));
    assert_eq!(listed.body["data"], json!([]));
    let wrong = vouch::api::handle(
        &engine,
        authed("GET", &format!("/schedules/{id}"), &key.token),
    );
    assert_eq!(wrong.status, 405);
}

#[test]
fn each_slot_spawns_one_job_and_missed_slots_collapse_into_one_run() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_for_receiver(&clock);
    let key = create_key(&engine, "p1");
    let made = create(
        &engine,
        &key.token,
        &json!({
            "url": receiver.url("/tick"),
            "cron": "0 * * * *",
            "http_method": "PATCH",
            "headers": { "X-Sched": "1" },
            "body": "tock",
            "max_retries": 3,
            "webhook_url": receiver.url("/hook"),
        }),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let schedule = made.body["id"].as_str().unwrap().to_owned();
    assert_eq!(made.body["next_run_at"], "2026-11-21T11:00:00.000Z");

    // Before the slot nothing is spawned.
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert!(jobs_of(&engine, &key.token).is_empty());

    // 11:00 comes: one job, which inherits the schedule's call and runs.
    clock.advance(28 * 60_000);
    let report = engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(report.succeeded, 1);
    let jobs = jobs_of(&engine, &key.token);
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["http_method"], "PATCH");
    assert_eq!(jobs[0]["max_retries"], 3);
    assert_eq!(jobs[0]["scheduled_at"], "2026-11-21T11:00:00.000Z");
    let calls = receiver.seen("/tick");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].method.as_str(), calls[0].body.as_str()),
        ("PATCH", "tock")
    );
    assert_eq!(calls[0].headers["x-sched"], "1");
    assert_eq!(receiver.seen("/hook").len(), 1);
    // Pumping again within the hour spawns nothing more.
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(jobs_of(&engine, &key.token).len(), 1);

    // The device is off from 11:05 until 16:30: the slots of 12:00 to 16:00 collapse into one
    // run (16:00), and the schedule's next slot is 17:00.
    clock.advance(5 * HOUR_MS + 30 * 60_000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    let jobs = jobs_of(&engine, &key.token);
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!(jobs[0]["scheduled_at"], "2026-11-21T16:00:00.000Z");
    assert_eq!(receiver.seen("/tick").len(), 2);
    let listed = vouch::api::handle(&engine, authed("GET", "/schedules", &key.token));
    assert_eq!(
        listed.body["data"][0]["next_run_at"],
        "2026-11-21T17:00:00.000Z"
    );

    // A slot spawns at most one job even when a second engine pumps the same file.
    clock.advance(HOUR_MS);
    let second = db.open_for_receiver(&clock);
    std::thread::scope(|scope| {
        scope.spawn(|| engine.pump().run(&SocketTransport, 10).unwrap());
        scope.spawn(|| second.pump().run(&SocketTransport, 10).unwrap());
    });
    assert_eq!(jobs_of(&engine, &key.token).len(), 3);
    assert_eq!(receiver.seen("/tick").len(), 3);
    assert_eq!(
        db.count(&format!(
            "SELECT COUNT(DISTINCT slot) FROM jobs WHERE schedule_id = '{schedule}'"
        )),
        3
    );

    // Deleted: no later slot runs.
    let deleted = vouch::api::handle(
        &engine,
        authed("DELETE", &format!("/schedules/{schedule}"), &key.token),
    );
    assert_eq!(deleted.status, 200);
    clock.advance(3 * HOUR_MS);
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(jobs_of(&engine, &key.token).len(), 3);
    assert_eq!(receiver.seen("/tick").len(), 3);
}
