//! The verification service's outbound events through the job engine, against a real HTTP
//! receiver on 127.0.0.1 (started here) that plays both the project's webhook endpoint and a
//! CAMARA SIM-swap provider: endpoints show their secret once, events are signed with it
//! (checked with the HMAC crate directly), rotation signs with both secrets for the grace
//! period, the SIM-swap check travels as a job and forgets the phone number, and none of it is
//! charged, listed under `/jobs` or counted in the stats.

mod common;

use std::sync::Arc;

use common::http::{Receiver, SocketTransport};
use common::*;
use serde_json::{json, Value};
use vouch::service::jobs::Credits;
use vouch::{Engine, ManualClock, SimSwapProvider};

const PHONE: &str = "+4915112345678";

/// An engine that may reach the receiver and sends SIM-swap checks to its `/camara/check`.
fn open(db: &Db, clock: &Arc<ManualClock>, receiver: &Receiver) -> Engine {
    let mut options = db.options();
    options.allow_private = vec!["127.0.0.0/8".to_owned()];
    options.sim_swap = Some(SimSwapProvider {
        check_url: receiver.url("/camara/check"),
        headers: [(
            "Authorization".to_owned(),
            "Bearer provider-token".to_owned(),
        )]
        .into(),
        max_age_hours: 240,
    });
    Engine::open_with_clock(options, clock.clone()).expect("engine opens")
}

fn create_webhook(engine: &Engine, token: &str, body: Value) -> Value {
    let response = vouch::api::handle(
        engine,
        authed("POST", "/api-projects/webhooks", token).json(&body),
    );
    assert_eq!(response.status, 201, "{}", response.body);
    response.body["data"].clone()
}

fn end_session(engine: &Engine, token: &str, session: &str, body: &Value) -> Value {
    let response = vouch::api::handle(
        engine,
        gateway(
            &format!("/api-gateway/sessions/end/{session}"),
            token,
            "alice",
        )
        .json(body),
    );
    assert_eq!(response.status, 200, "{}", response.body);
    response.body["data"].clone()
}

fn sim_swap(engine: &Engine, token: &str, session: &str) -> Value {
    let response = vouch::api::handle(
        engine,
        authed(
            "GET",
            &format!("/api-projects/sessions/{session}/sim-swap"),
            token,
        ),
    );
    assert_eq!(response.status, 200, "{}", response.body);
    response.body["data"].clone()
}

fn event(seen: &common::http::Seen) -> Value {
    serde_json::from_str(&seen.body).unwrap()
}

#[test]
fn events_are_signed_with_the_endpoints_secret_and_the_sim_swap_check_travels_as_a_job() {
    let receiver = Receiver::start();
    receiver.reply_body("/camara/check", r#"{"swapped": true, "other": 1}"#);
    let db = Db::new();
    let clock = manual_clock();
    let engine = open(&db, &clock, &receiver);
    let key = create_key(&engine, "p1");
    engine
        .billing()
        .set(
            "p1",
            &Credits {
                balance: 3,
                plan: "free".to_owned(),
                daily_limit: None,
            },
        )
        .unwrap();
    let hook = create_webhook(
        &engine,
        &key.token,
        json!({ "url": receiver.url("/hooks/a"), "description": "backend" }),
    );
    let secret = hook["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    let id = hook["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("wh_"));
    assert_eq!(
        hook["events"],
        json!([
            "process_video.completed",
            "session.ended",
            "sim_swap.completed",
            "avf.completed"
        ])
    );
    // An endpoint that wants only SIM-swap results.
    let narrow = create_webhook(
        &engine,
        &key.token,
        json!({ "url": receiver.url("/hooks/b"), "events": ["sim_swap.completed"] }),
    );
    // Listing and reading never show a secret again.
    let listed = vouch::api::handle(&engine, authed("GET", "/api-projects/webhooks", &key.token));
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 2);
    let read = vouch::api::handle(
        &engine,
        authed("GET", &format!("/api-projects/webhooks/{id}"), &key.token),
    );
    assert_eq!(read.body["data"]["secrets"].as_array().unwrap().len(), 1);
    for body in [&listed.body, &read.body] {
        assert!(!body.to_string().contains(&secret), "{body}");
        assert!(!body.to_string().contains("whsec_"), "{body}");
    }

    let session = start_session(&engine, &key.token);
    let ended = end_session(
        &engine,
        &key.token,
        &session,
        &json!({ "phone_number": PHONE }),
    );
    assert_eq!(ended["sim_swap_check"], "pending");
    assert_eq!(sim_swap(&engine, &key.token, &session)["status"], "pending");

    // One pump sends the check and the session.ended event; the provider's answer queues
    // sim_swap.completed, which the next pump sends.
    engine.pump().run(&SocketTransport, 10).unwrap();
    let checks = receiver.seen("/camara/check");
    assert_eq!(checks.len(), 1);
    assert_eq!(
        serde_json::from_str::<Value>(&checks[0].body).unwrap(),
        json!({ "phoneNumber": PHONE, "maxAge": 240 })
    );
    assert_eq!(checks[0].headers["authorization"], "Bearer provider-token");
    let result = sim_swap(&engine, &key.token, &session);
    assert_eq!(
        (&result["status"], &result["swapped"]),
        (&json!("completed"), &json!(true))
    );
    // The number is gone from the database once the provider answered.
    assert_eq!(
        db.count("SELECT COUNT(*) FROM jobs WHERE body LIKE '%15112345678%'"),
        0
    );
    engine.pump().run(&SocketTransport, 10).unwrap();

    let delivered = receiver.seen("/hooks/a");
    let kinds: Vec<Value> = delivered
        .iter()
        .map(|seen| event(seen)["type"].clone())
        .collect();
    assert_eq!(
        kinds,
        vec![json!("session.ended"), json!("sim_swap.completed")]
    );
    for seen in &delivered {
        assert!(signed_by(seen, &secret), "{:?}", seen.headers);
        // The delivery's job id is its stable webhook-id.
        assert_eq!(seen.headers["webhook-id"], seen.headers["x-job-id"]);
    }
    let session_ended = event(&delivered[0]);
    assert!(session_ended["id"].as_str().unwrap().starts_with("evt_"));
    assert_eq!(session_ended["data"]["session_id"], session.as_str());
    assert_eq!(session_ended["data"]["user_fullname"], "alice");
    assert_eq!(session_ended["data"]["sim_swap_check"], "pending");
    let swap_event = event(&delivered[1]);
    assert_eq!(
        swap_event["data"],
        json!({ "session_id": session, "status": "completed", "swapped": true, "detail": null })
    );
    // The narrow endpoint got only the SIM-swap result, under the same event id, signed with
    // its own secret and not the other endpoint's.
    let narrow_seen = receiver.seen("/hooks/b");
    assert_eq!(narrow_seen.len(), 1);
    assert_eq!(event(&narrow_seen[0])["id"], swap_event["id"]);
    assert!(signed_by(
        &narrow_seen[0],
        narrow["secret"].as_str().unwrap()
    ));
    assert!(!signed_by(&narrow_seen[0], &secret));

    // None of it is a job of the project's, costs a credit or counts in the stats.
    let jobs = vouch::api::handle(&engine, authed("GET", "/jobs", &key.token));
    assert_eq!(jobs.body["data"], json!([]), "{}", jobs.body);
    assert_eq!(engine.billing().get("p1").unwrap().unwrap().balance, 3);
    let stats = vouch::api::handle(&engine, authed("GET", "/stats/jobs", &key.token));
    assert_eq!(stats.body["total_executions"], 0, "{}", stats.body);

    // Rotation: the new secret is shown once; both sign for the grace period.
    let rotated = vouch::api::handle(
        &engine,
        authed(
            "POST",
            &format!("/api-projects/webhooks/{id}/rotate"),
            &key.token,
        ),
    );
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    let new_secret = rotated.body["data"]["secret"].as_str().unwrap().to_owned();
    assert_eq!(
        rotated.body["data"]["previous_expires_at"],
        vouch::format_timestamp(START_MS + 86_400_000)
    );
    let second = start_session(&engine, &key.token);
    end_session(&engine, &key.token, &second, &json!({}));
    engine.pump().run(&SocketTransport, 10).unwrap();
    let last = receiver.seen("/hooks/a").pop().unwrap();
    assert_eq!(event(&last)["data"]["sim_swap_check"], "not_requested");
    assert!(signed_by(&last, &secret) && signed_by(&last, &new_secret));
    clock.advance(86_400_001);
    let third = start_session(&engine, &key.token);
    end_session(&engine, &key.token, &third, &json!({}));
    engine.pump().run(&SocketTransport, 10).unwrap();
    let last = receiver.seen("/hooks/a").pop().unwrap();
    assert!(signed_by(&last, &new_secret) && !signed_by(&last, &secret));

    // Deleting the endpoint drops its secrets and the deliveries still waiting for it.
    let fourth = start_session(&engine, &key.token);
    end_session(&engine, &key.token, &fourth, &json!({}));
    let deleted = vouch::api::handle(
        &engine,
        authed(
            "DELETE",
            &format!("/api-projects/webhooks/{id}"),
            &key.token,
        ),
    );
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let before = receiver.seen("/hooks/a").len();
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(receiver.seen("/hooks/a").len(), before);
    assert_eq!(
        db.count("SELECT COUNT(*) FROM signing_secrets WHERE owner != ''"),
        1
    );
    let gone = vouch::api::handle(
        &engine,
        authed("GET", &format!("/api-projects/webhooks/{id}"), &key.token),
    );
    assert_error(&gone, 404, "webhook not found");
}

#[test]
fn a_provider_that_fails_or_answers_nonsense_leaves_a_failed_check_that_says_why() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = open(&db, &clock, &receiver);
    let key = create_key(&engine, "p1");
    // A 2xx whose body is not CAMARA's answer.
    receiver.reply_body("/camara/check", "<html>ok</html>");
    let session = start_session(&engine, &key.token);
    end_session(
        &engine,
        &key.token,
        &session,
        &json!({ "phone_number": PHONE }),
    );
    engine.pump().run(&SocketTransport, 10).unwrap();
    let result = sim_swap(&engine, &key.token, &session);
    assert_eq!(result["status"], "failed");
    assert_eq!(result["swapped"], Value::Null);
    assert_eq!(
        result["detail"],
        "the provider's answer was not a JSON object with a boolean \"swapped\""
    );
    // A 4xx is final at once (the request is wrong; retrying cannot help).
    receiver.answer("/camara/check", &[403]);
    let session = start_session(&engine, &key.token);
    end_session(
        &engine,
        &key.token,
        &session,
        &json!({ "phone_number": PHONE }),
    );
    engine.pump().run(&SocketTransport, 10).unwrap();
    let result = sim_swap(&engine, &key.token, &session);
    assert_eq!(result["status"], "failed");
    assert_eq!(result["detail"], "the target answered HTTP 403");
    // A 503 is retried with backoff, then answers.
    receiver.answer("/camara/check", &[503]);
    receiver.reply_body("/camara/check", r#"{"swapped": false}"#);
    let session = start_session(&engine, &key.token);
    end_session(
        &engine,
        &key.token,
        &session,
        &json!({ "phone_number": PHONE }),
    );
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert_eq!(sim_swap(&engine, &key.token, &session)["status"], "pending");
    clock.advance(3_600_000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    let result = sim_swap(&engine, &key.token, &session);
    assert_eq!(
        (&result["status"], &result["swapped"]),
        (&json!("completed"), &json!(false))
    );
    assert_eq!(
        db.count("SELECT COUNT(*) FROM jobs WHERE kind = 'sim_swap' AND body IS NOT NULL"),
        0
    );
}

#[test]
fn webhook_requests_are_checked_and_belong_to_their_project() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = open(&db, &clock, &receiver);
    let key = create_key(&engine, "p1");
    let other = create_key(&engine, "p2");
    let post = |body: Value| {
        vouch::api::handle(
            &engine,
            authed("POST", "/api-projects/webhooks", &key.token).json(&body),
        )
    };
    assert_error(
        &post(json!({ "url": receiver.url("/a"), "events": ["avf.done"] })),
        400,
        "events: \"avf.done\" is not an event type (one of process_video.completed, session.ended, sim_swap.completed, avf.completed)",
    );
    assert_error(
        &post(json!({ "url": receiver.url("/a"), "events": [] })),
        400,
        "events must name at least one of process_video.completed, session.ended, sim_swap.completed, avf.completed",
    );
    assert_error(
        &post(json!({ "url": "http://169.254.169.254/latest" })),
        400,
        "url: 169.254.169.254 is the cloud metadata address; calls to it are refused unless allow_private opens it",
    );
    assert_error(
        &post(json!({ "url": "ftp://example.com/" })),
        400,
        "url must be an http or https URL",
    );
    assert_400_like(
        &post(json!({ "url": receiver.url("/a"), "secret": "mine" })),
        "invalid request body (an object with url, and optional events and description): ",
        "unknown field `secret`",
    );
    let unauthenticated = vouch::api::handle(
        &engine,
        vouch::api::Request::new("GET", "/api-projects/webhooks"),
    );
    assert_eq!(unauthenticated.status, 401);
    for _ in 0..vouch::service::events::MAX_WEBHOOKS {
        assert_eq!(post(json!({ "url": receiver.url("/a") })).status, 201);
    }
    assert_error(
        &post(json!({ "url": receiver.url("/a") })),
        409,
        "a project may have at most 16 webhooks; delete one first",
    );
    // Another project sees none of them and can neither rotate nor delete them.
    let listed = vouch::api::handle(&engine, authed("GET", "/api-projects/webhooks", &key.token));
    let id = listed.body["data"][0]["id"].as_str().unwrap().to_owned();
    let theirs = vouch::api::handle(
        &engine,
        authed("GET", "/api-projects/webhooks", &other.token),
    );
    assert_eq!(theirs.body["data"], json!([]));
    for (method, path) in [
        ("GET", format!("/api-projects/webhooks/{id}")),
        ("POST", format!("/api-projects/webhooks/{id}/rotate")),
        ("DELETE", format!("/api-projects/webhooks/{id}")),
    ] {
        assert_error(
            &vouch::api::handle(&engine, authed(method, &path, &other.token)),
            404,
            "webhook not found",
        );
    }
    assert_error(
        &vouch::api::handle(&engine, authed("PUT", "/api-projects/webhooks", &key.token)),
        405,
        "method PUT is not allowed on /api-projects/webhooks",
    );
    assert_error(
        &vouch::api::handle(&engine, authed("GET", "/api-projects/nothing", &key.token)),
        404,
        "no endpoint at /api-projects/nothing",
    );
    // Nothing here is an audit row.
    assert_eq!(db.count("SELECT COUNT(*) FROM transactions"), 0);
}

#[test]
fn an_event_is_never_sent_unsigned_and_a_deleted_endpoint_ends_its_deliveries_quietly() {
    let receiver = Receiver::start();
    let db = Db::new();
    let clock = manual_clock();
    let engine = open(&db, &clock, &receiver);
    let key = create_key(&engine, "p1");
    let alert = vouch::api::handle(
        &engine,
        authed("POST", "/alerts", &key.token).json(&json!({
            "type": "webhook",
            "target": receiver.url("/alerts"),
        })),
    );
    assert_eq!(alert.status, 201, "{}", alert.body);
    let hook = create_webhook(
        &engine,
        &key.token,
        json!({ "url": receiver.url("/hooks") }),
    );
    let session = start_session(&engine, &key.token);
    end_session(&engine, &key.token, &session, &json!({}));
    // The endpoint's secret no longer opens (its row altered): the delivery is not sent, and
    // waits for a retry.
    db.sql().execute(
        "UPDATE signing_secrets SET sealed = ?1 WHERE owner != ''",
        &[&vec![0u8]],
    );
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert!(receiver.all().is_empty());
    let (status, error): (String, String) = db.sql().query_row(
        "SELECT jobs.status, error FROM job_executions JOIN jobs ON jobs.id = job_executions.job_id
             WHERE jobs.kind = 'event'",
        &[],
        |row| (row.get(0), row.get(1)),
    );
    assert_eq!(status, "scheduled");
    assert!(error.contains("never sent unsigned"), "{error}");
    // The endpoint disappears while its delivery waits (as when it is deleted after a claim):
    // the delivery ends without a call and without an alert.
    db.sql().execute(
        "DELETE FROM webhook_endpoints WHERE id = ?1",
        &[&hook["id"].as_str().unwrap()],
    );
    clock.advance(3_600_000);
    engine.pump().run(&SocketTransport, 10).unwrap();
    assert!(receiver.all().is_empty(), "{:?}", receiver.all());
    assert_eq!(
        db.count("SELECT COUNT(*) FROM jobs WHERE kind = 'event' AND status = 'failed'"),
        1
    );
}
