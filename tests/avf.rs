//! Asynchronous video-forgery analysis through the request path, on the real models: avf/infer
//! answers 202 at once with the spec's record and stores the video sealed; the status endpoint
//! reports `pending`, then the pump analyses it and it reports `completed` with a verdict and
//! per-signal evidence; the video is gone from the database; `avf.completed` reaches a real HTTP
//! receiver signed; another project's request id is a 404; a consent withdrawal drops a waiting
//! upload; an undecodable video fails with its reason; an upload older than the retention is
//! dropped. The test media (`scripts/make-test-media`) is a still portrait with espeak-ng's voice:
//! a forgery by construction (a voice, no mouth movement). With `../shared/data/talking-grid` a
//! real person's clip is checked too. One engine per binary (the models load once).

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::http::{Receiver, SocketTransport};
use common::*;
use serde_json::{json, Value};
use vouch::api::{Request, Response};
use vouch::{Engine, ManualClock};

const INFER: &str = "/api-gateway/avf/infer";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn open(db: &Db, clock: &Arc<ManualClock>) -> Engine {
    let mut options = db.options();
    options.models_dir = Some(repo().join("models"));
    options.allow_private = vec!["127.0.0.0/8".to_owned()];
    Engine::open_with_clock(options, clock.clone()).expect("engine with models")
}

fn upload(token: &str, fullname: &str, name: &str, video: Vec<u8>) -> Request {
    gateway(INFER, token, fullname).file_part("file", name, "video/mp4", video)
}

fn status(engine: &Engine, token: &str, id: &str) -> Response {
    vouch::api::handle(
        engine,
        authed("GET", &format!("/api-gateway/avf/status/{id}"), token),
    )
}

fn data(response: &Response) -> &Value {
    &response.body["data"]
}

fn pump(engine: &Engine) -> vouch::service::pump::PumpReport {
    engine.pump().run(&SocketTransport, 10).expect("pump")
}

#[test]
fn avf_answers_at_once_and_the_pump_completes_it_with_evidence() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = open(&db, &clock);
    let key = create_key(&engine, "p1");
    let other = create_key(&engine, "p2");
    let receiver = Receiver::start();
    let hook = vouch::api::handle(
        &engine,
        authed("POST", "/api-projects/webhooks", &key.token)
            .json(&json!({ "url": receiver.url("/hook"), "events": ["avf.completed"] })),
    );
    assert_eq!(hook.status, 201, "{}", hook.body);
    let secret = hook.body["data"]["secret"].as_str().unwrap().to_owned();
    let clip = std::fs::read(repo().join("tests/media/photo_speaking.mp4")).expect("clip");

    // 202 with the spec's record: result slots null, the request id to poll with.
    let session = start_session(&engine, &key.token);
    let accepted = vouch::api::handle(
        &engine,
        upload(&key.token, "ann", "selfie.mp4", clip.clone())
            .header("X-Session-ID", &session)
            .header("X-Device-Info", r#"{"model":"test"}"#),
    );
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    let body = &accepted.body;
    assert_eq!(body["message"], "video accepted for forgery analysis");
    assert_eq!(data(&accepted)["success"], true);
    for slot in ["prediction", "confidence", "score"] {
        assert!(data(&accepted)[slot].is_null(), "{slot}: {body}");
    }
    let metadata = &data(&accepted)["metadata"];
    let id = metadata["request_id"].as_str().unwrap().to_owned();
    assert_eq!(accepted.header("X-Request-Id"), Some(id.as_str()));
    assert_eq!(metadata["source_filename"], "selfie.mp4");
    assert_eq!(metadata["received_at"], json!(START_MS / 1000));
    assert_eq!(data(&accepted)["status"], "pending");

    // Stored sealed: the bytes are not in the database as they were uploaded.
    let sealed: Vec<u8> = db.sql().query_row(
        "SELECT upload FROM avf_requests WHERE id = ?1",
        &[&id],
        |row| row.get(0),
    );
    assert!(sealed.len() > clip.len());
    assert!(!sealed.windows(64).any(|window| window == &clip[1000..1064]));

    // Pending until a pump runs; another project cannot see it.
    let waiting = status(&engine, &key.token, &id);
    assert_eq!(waiting.status, 200, "{}", waiting.body);
    assert_eq!(data(&waiting)["status"], "pending");
    assert_eq!(waiting.body["message"], "analysis pending");
    assert_error(
        &status(&engine, &other.token, &id),
        404,
        "avf request not found",
    );
    assert_error(
        &status(&engine, &key.token, "req_nope"),
        404,
        "avf request not found",
    );
    let report = engine.pump().run(&SocketTransport, 0).expect("pump");
    assert_eq!(report.analyses, 1, "{report:?}");

    // Completed: a verdict with the evidence of every signal. The portrait never moves its mouth
    // while the voice speaks: fake, and the lip-sync signal says why.
    let done = status(&engine, &key.token, &id);
    let verdict = data(&done);
    assert_eq!(verdict["status"], "completed", "{}", done.body);
    assert_eq!(verdict["success"], true);
    assert_eq!(verdict["prediction"], "fake", "{}", done.body);
    let score = verdict["score"].as_f64().unwrap();
    assert!((0.5..=1.0).contains(&score), "{score}");
    assert_eq!(verdict["confidence"].as_f64(), Some(score));
    let names: Vec<&str> = verdict["signals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "synthetic_voice",
            "lip_sync",
            "mouth_detail",
            "streams",
            "face_identity"
        ]
    );
    let lip_sync = &verdict["signals"][1];
    assert_eq!(lip_sync["finding"], "fake", "{lip_sync}");
    assert!(verdict["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r.as_str() == lip_sync["detail"].as_str()));
    assert!(verdict["metadata"]["completed_at"].is_i64());

    // The video is gone; the record stays.
    assert_eq!(
        db.count("SELECT COUNT(*) FROM avf_requests WHERE upload IS NOT NULL"),
        0
    );
    // The event reached the endpoint, signed, with the verdict's summary and no media.
    let report = pump(&engine);
    assert_eq!(report.analyses, 0);
    let seen = receiver.seen("/hook");
    assert_eq!(seen.len(), 1, "{report:?}");
    assert!(signed_by(&seen[0], &secret));
    let event: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(event["type"], "avf.completed");
    assert_eq!(event["data"]["request_id"], id.as_str());
    assert_eq!(event["data"]["session_id"], session.as_str());
    assert_eq!(event["data"]["prediction"], "fake");
    assert!(event["data"].get("signals").is_none());

    // Status reads are not transactions; the upload is.
    let rows =
        db.count("SELECT COUNT(*) FROM transactions WHERE endpoint LIKE '/api-gateway/avf/%'");
    assert_eq!(rows, 1);

    // A waiting upload goes with its user's consent.
    set_consent(&engine, &key.token, false, "bob", true);
    let accepted = vouch::api::handle(&engine, upload(&key.token, "bob", "b.mp4", clip.clone()));
    assert_eq!(accepted.status, 202);
    let bob = data(&accepted)["metadata"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    set_consent(&engine, &key.token, false, "bob", false);
    let dropped = status(&engine, &key.token, &bob);
    assert_eq!(data(&dropped)["status"], "failed");
    assert_eq!(data(&dropped)["success"], false);
    assert_eq!(
        data(&dropped)["error"],
        "the user withdrew consent: the upload was deleted"
    );
    assert_eq!(pump(&engine).analyses, 0);

    // A file that looks like a video but does not decode: the analysis fails with the reason.
    let mut broken = clip[..clip.len() / 3].to_vec();
    broken.truncate(2000);
    let accepted = vouch::api::handle(&engine, upload(&key.token, "cat", "cut.mp4", broken));
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    let cut = data(&accepted)["metadata"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(pump(&engine).analyses, 1);
    let failed = status(&engine, &key.token, &cut);
    assert_eq!(data(&failed)["status"], "failed", "{}", failed.body);
    assert!(data(&failed)["error"].as_str().unwrap().len() > 10);
    assert!(data(&failed)["prediction"].is_null());

    // An upload nobody pumps for a day is dropped and fails.
    let accepted = vouch::api::handle(&engine, upload(&key.token, "dan", "late.mp4", clip.clone()));
    let late = data(&accepted)["metadata"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    clock.advance(24 * 3_600_000 + 1);
    assert_eq!(pump(&engine).analyses, 0);
    let expired = status(&engine, &key.token, &late);
    assert_eq!(data(&expired)["status"], "failed");
    assert_eq!(
        data(&expired)["error"],
        "the upload was not analysed within 24 hours and was deleted"
    );
    assert_eq!(
        db.count("SELECT COUNT(*) FROM avf_requests WHERE upload IS NOT NULL"),
        0
    );

    // A project may have 32 uploads waiting at most: the 33rd waits for the pump (409).
    for _ in 0..32 {
        let accepted =
            vouch::api::handle(&engine, upload(&key.token, "eve", "q.mp4", clip.clone()));
        assert_eq!(accepted.status, 202, "{}", accepted.body);
    }
    let full = vouch::api::handle(&engine, upload(&key.token, "eve", "q.mp4", clip.clone()));
    assert_eq!(full.status, 409, "{}", full.body);
    assert!(full.body["error"]
        .as_str()
        .unwrap()
        .starts_with("too many videos are waiting for analysis in this project (32,"));
    // Another project is not held up.
    assert_eq!(
        vouch::api::handle(&engine, upload(&other.token, "eve", "q.mp4", clip.clone())).status,
        202
    );

    // The spec's header list for avf/infer names only Authorization: no fullname is needed, and
    // none is recorded.
    let nameless = vouch::api::handle(
        &engine,
        authed("POST", INFER, &other.token).file_part("file", "n.mp4", "video/mp4", clip.clone()),
    );
    assert_eq!(nameless.status, 202, "{}", nameless.body);
    let nameless_id = nameless.body["data"]["metadata"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let record = status(&engine, &other.token, &nameless_id);
    assert_eq!(
        record.body["data"]["user_fullname"],
        Value::Null,
        "{}",
        record.body
    );

    // Errors of the spec: 401 without a valid token, 400 for no file or a wrong format.
    let anonymous = Request::new("POST", INFER)
        .header("X-User-Fullname", "ann")
        .file_part("file", "c.mp4", "video/mp4", clip.clone());
    assert_eq!(vouch::api::handle(&engine, anonymous).status, 401);
    assert_eq!(
        vouch::api::handle(
            &engine,
            Request::new("GET", &format!("/api-gateway/avf/status/{id}"))
        )
        .status,
        401
    );
    assert_error(
        &vouch::api::handle(&engine, gateway(INFER, &key.token, "ann")),
        400,
        "file is required",
    );
    let text = vouch::api::handle(
        &engine,
        upload(&key.token, "ann", "c.txt", b"hello".to_vec()),
    );
    assert_eq!(text.status, 400, "{}", text.body);

    // The eye-aligned face crops the analysis cuts (what `vouch eval face-crops` writes): a few
    // frames spread over the clip, each 96x96 RGB, the eyes level at their place in the crop.
    let crops = engine.forgery().face_crops(&clip).expect("crops");
    assert!((4..=24).contains(&crops.len()), "{} crops", crops.len());
    for crop in &crops {
        use vouch_bio::{CROP_SIDE, EYES_AT, INTEROCULAR};
        assert_eq!(crop.rgb.len(), CROP_SIDE * CROP_SIDE * 3);
        assert_eq!(crop.marks.len(), 468);
        // FaceMesh's eye corners (33, 133 and 362, 263): their centres land on the crop's eyes.
        let centre = |a: usize, b: usize| {
            (
                (crop.marks[a][0] + crop.marks[b][0]) / 2.0,
                (crop.marks[a][1] + crop.marks[b][1]) / 2.0,
            )
        };
        let (one, two) = (centre(33, 133), centre(362, 263));
        let (left, right) = if one.0 < two.0 {
            (one, two)
        } else {
            (two, one)
        };
        assert!(
            (right.0 - left.0 - INTEROCULAR).abs() < 0.01,
            "{left:?} {right:?}"
        );
        assert!((left.1 - EYES_AT.1).abs() < 0.01 && (right.1 - EYES_AT.1).abs() < 0.01);
        // Not black: the face is inside the frame.
        let mean = crop.rgb.iter().map(|&v| f64::from(v)).sum::<f64>() / crop.rgb.len() as f64;
        assert!(mean > 20.0, "mean {mean}");
    }
    assert!(engine.forgery().face_crops(b"not a video").is_err());

    // A real person speaking (development data, when present): not judged a forgery.
    if let Some(dir) = shared_data("talking-grid", "avf genuine clip") {
        let genuine = std::fs::read(dir.join("bbaf2n.mp4")).expect("GRID clip");
        let verdict = engine.forgery().analyze(&genuine).expect("analysis");
        assert_ne!(verdict.prediction, vouch::Prediction::Fake, "{verdict:?}");
    }
}
