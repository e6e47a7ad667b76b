//! The synthetic-speech check through process-video (engine option `voice_spoof_check`): Voice
//! Recognition reports AASIST's score and verdict, a `spoof` verdict fails the decision with
//! `voice_synthetic_speech` and enrolls nothing, and without authorization consent the check does
//! not run. The test media's voice is espeak-ng's (`scripts/make-test-media`), a machine's voice;
//! with `../shared/data/talking-grid` a real person's clip is checked too. One engine per binary.

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;
use vouch::api::Request;
use vouch::{Engine, Error};

const ALL: &[&str] = &[
    "Active Speaker Detection",
    "Visual Speech Recognition",
    "Face Liveness Detection",
    "Voice Recognition",
    "Face Recognition",
];

fn models() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/models"))
}

fn video(token: &str, user: &str, bytes: Vec<u8>, phrase: &str) -> Request {
    gateway("/api-gateway/process-video", token, user)
        .file_part("video", "selfie.mp4", "video/mp4", bytes)
        .text_part("phrase", phrase)
}

#[test]
fn synthetic_speech_is_reported_and_fails_the_decision() {
    let db = Db::new();
    let mut options = db.options();
    options.voice_spoof_check = true;
    assert!(matches!(
        Engine::open(options.clone()),
        Err(Error::InvalidOptions(message)) if message == "voice_spoof_check needs models_dir"
    ));
    options.models_dir = Some(models());
    let engine = Engine::open(options).expect("engine with the check");
    let key = create_key_with(&engine, "spoof", ALL, None);
    let clip = std::fs::read(models().join("../tests/media/photo_speaking.mp4")).expect("clip");

    // Without authorization consent Voice Recognition is removed, and the check does not run.
    let response = vouch::api::handle(
        &engine,
        video(&key.token, "ann", clip.clone(), "please verify me now"),
    );
    assert_eq!(response.status, 200, "{:?}", response.body);
    assert!(response.body["data"]["Voice Recognition"].is_null());
    assert!(!reasons(&response.body).contains(&"voice_synthetic_speech".to_owned()));

    set_consent(&engine, &key.token, false, "ann", true);
    set_consent(&engine, &key.token, true, "ann", true);
    let response = vouch::api::handle(
        &engine,
        video(&key.token, "ann", clip, "please verify me now"),
    );
    let synthetic = &response.body["data"]["Voice Recognition"]["synthetic_speech"];
    println!("espeak clip: {synthetic}");
    assert_eq!(synthetic["verdict"], "spoof", "{:?}", response.body);
    assert!(synthetic["score"].as_f64().expect("score") < -6.0);
    assert_eq!(response.body["scoring_result"]["status"], "fail");
    assert!(reasons(&response.body).contains(&"voice_synthetic_speech".to_owned()));
    assert_eq!(response.header("X-Auto-Enroll"), Some("false"));

    // A real person (GRID studio recording): not judged a machine.
    let Some(grid) = shared_data("talking-grid", "the synthetic-speech check on a real voice")
    else {
        return;
    };
    set_consent(&engine, &key.token, false, "s2", true);
    set_consent(&engine, &key.token, true, "s2", true);
    let clip = std::fs::read(grid.join("pwij3p.mp4")).expect("GRID clip");
    let response = vouch::api::handle(
        &engine,
        video(&key.token, "s2", clip, "place white in j three please"),
    );
    let synthetic = &response.body["data"]["Voice Recognition"]["synthetic_speech"];
    println!("GRID clip: {synthetic}");
    assert_ne!(synthetic["verdict"], "spoof", "{:?}", response.body);
    assert!(!reasons(&response.body).contains(&"voice_synthetic_speech".to_owned()));
}

fn reasons(body: &Value) -> Vec<String> {
    body["decision_reasons"]
        .as_array()
        .map(|reasons| {
            reasons
                .iter()
                .filter_map(|r| r.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
