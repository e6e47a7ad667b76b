//! The attempt limit (NIST SP 800-63B §5.2.3) through the request path (the C ABI's calls are in
//! `tests/c/request_test.c`), on the real models and a manual clock: ten failed decisions hold a
//! user back for 30 s, a held-back
//! call answers at once without running a model, one attempt follows the wait and its failure
//! doubles it, a reset clears it; a project may disable attempts until a reset instead; calls
//! that cannot be guesses (errors, users with nothing enrolled) are not counted. One engine per
//! test binary; each test uses its own project and holds [`serial`] (they share the clock).
//!
//! Runs everywhere: `tests/media/photo_speaking.mp4` (a photo with a synthetic voice) fails every
//! decision, against a face and a voice enrolled from `face_astronaut.png` and `speech.wav`.
//! match-faces is tested on two people of `../shared/data/faces-bbt` (skipped, loudly, without it).

mod common;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use common::*;
use serde_json::{json, Value};
use vouch::api::{Request, Response};
use vouch::{Engine, ManualClock, RuleSet};

struct Fixture {
    _db: Db,
    clock: Arc<ManualClock>,
    engine: Engine,
}

/// The tests move the one clock: each holds this while it runs.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let db = Db::new();
        let clock = manual_clock();
        let mut options = db.options();
        options.models_dir = Some(PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models"
        )));
        let engine = Engine::open_with_clock(options, clock.clone()).expect("engine with models");
        Fixture {
            _db: db,
            clock,
            engine,
        }
    })
}

/// A project with a key for every service and `user` given both consents; with `enrolled`, the
/// user has a face and a voice template.
fn project(project: &str, user: &str, enrolled: bool) -> String {
    let engine = &fixture().engine;
    let key = create_key_with(engine, project, ALL_SERVICES, None);
    set_consent(engine, &key.token, false, user, true);
    set_consent(engine, &key.token, true, user, true);
    if enrolled {
        let face = vouch::api::handle(
            engine,
            gateway("/api-gateway/enroll/face", &key.token, user).file_part(
                "face",
                "face.png",
                "image/png",
                media("face_astronaut.png"),
            ),
        );
        assert_eq!(face.status, 200, "{:?}", face.body);
        let voice = vouch::api::handle(
            engine,
            gateway("/api-gateway/enroll/voice", &key.token, user)
                .file_part("voice", "speech.wav", "audio/wav", media("speech.wav"))
                .text_part("phrase", "my voice is my password"),
        );
        assert_eq!(voice.status, 200, "{:?}", voice.body);
    }
    key.token
}

fn present(token: &str, user: &str, video: Vec<u8>) -> Response {
    vouch::api::handle(
        &fixture().engine,
        gateway("/api-gateway/process-video", token, user)
            .file_part("video", "selfie.mp4", "video/mp4", video)
            .text_part("phrase", "please verify me now"),
    )
}

fn retry_after(response: &Response) -> Option<i64> {
    response
        .header("Retry-After")
        .map(|value| value.parse().expect("Retry-After is whole seconds"))
}

fn reasons(response: &Response) -> Vec<String> {
    serde_json::from_value(response.body["decision_reasons"].clone()).expect("reasons")
}

/// The models ran: the services answered.
fn ran(response: &Response) -> bool {
    response.body["data"]["Face Liveness Detection"].is_object()
}

fn attempts(token: &str, user: &str) -> Value {
    let response = vouch::api::handle(
        &fixture().engine,
        Request::new("GET", "/api-gateway/attempts")
            .bearer(token)
            .header("X-User-Fullname", user),
    );
    assert_eq!(response.status, 200, "{:?}", response.body);
    response.body["data"].clone()
}

#[test]
fn ten_failures_hold_a_user_the_wait_doubles_and_a_reset_clears_it() {
    let _serial = serial();
    let token = project("at-default", "victim", true);
    let clock = &fixture().clock;
    // Nine failed decisions: each runs the models and says nothing of a wait.
    for attempt in 1..=9 {
        let response = present(&token, "victim", media("photo_speaking.mp4"));
        assert_eq!(response.status, 200);
        assert_eq!(response.body["scoring_result"]["status"], "fail");
        assert!(ran(&response), "attempt {attempt}: {:?}", response.body);
        assert_eq!(retry_after(&response), None, "attempt {attempt}");
        clock.advance(1_000);
    }
    // The tenth fails too and starts SP 800-63B's 30 s wait.
    let tenth = present(&token, "victim", media("photo_speaking.mp4"));
    assert!(ran(&tenth));
    assert_eq!(retry_after(&tenth), Some(30));
    assert!(reasons(&tenth).contains(&"attempts_exceeded".to_owned()));
    assert_eq!(tenth.body["scoring_result"]["hold"]["failures"], 10);
    // The eleventh is answered at once: a failed decision, no model run, the wait in the header
    // and the body. (Its speed is measured by the `attempts` group of `benches/process_video.rs`.)
    clock.advance(10_000);
    let started = Instant::now();
    let eleventh = present(&token, "victim", media("photo_speaking.mp4"));
    let elapsed = started.elapsed();
    assert_eq!(eleventh.status, 200);
    assert!(!ran(&eleventh));
    assert_eq!(eleventh.body["data"], json!({}));
    assert_eq!(eleventh.body["scoring_result"]["status"], "fail");
    assert_eq!(eleventh.body["score"], 0.0);
    assert_eq!(reasons(&eleventh), ["attempts_exceeded"]);
    assert_eq!(retry_after(&eleventh), Some(20));
    assert_eq!(eleventh.body["scoring_result"]["hold"]["retry_after_s"], 20);
    assert_eq!(eleventh.header("X-Auto-Enroll"), Some("false"));
    eprintln!("held-back answer: {elapsed:?}");
    let state = attempts(&token, "victim");
    assert_eq!(state["failures"], 10, "{state}");
    assert_eq!(state["limit"], 10);
    assert_eq!(state["retry_after_s"], 20);
    assert_eq!(state["events"][0]["event"], "hold");
    // After the wait one attempt runs; its failure doubles the wait.
    clock.advance(20_000);
    let after_wait = present(&token, "victim", media("photo_speaking.mp4"));
    assert!(ran(&after_wait));
    assert_eq!(retry_after(&after_wait), Some(60));
    let again = present(&token, "victim", media("photo_speaking.mp4"));
    assert!(!ran(&again));
    assert_eq!(retry_after(&again), Some(60));
    // The backend's reset (after another factor) clears the count, and is audited.
    let reset = vouch::api::handle(
        &fixture().engine,
        gateway("/api-gateway/attempts/reset", &token, "victim"),
    );
    assert_eq!(reset.status, 200, "{:?}", reset.body);
    assert_eq!(reset.body["data"]["failures"], 0);
    let kinds: Vec<&str> = reset.body["data"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["reset", "hold", "hold"]);
    let fresh = present(&token, "victim", media("photo_speaking.mp4"));
    assert!(ran(&fresh));
    assert_eq!(retry_after(&fresh), None);
    assert_eq!(attempts(&token, "victim")["failures"], 1);
    // A reset takes no options.
    let with_body = vouch::api::handle(
        &fixture().engine,
        gateway("/api-gateway/attempts/reset", &token, "victim").json(&json!({ "all": true })),
    );
    assert_error(
        &with_body,
        400,
        "unknown field `all`: attempts takes no body",
    );
}

#[test]
fn a_project_may_disable_attempts_until_the_backend_resets_them() {
    let _serial = serial();
    let token = project("at-disable", "victim", true);
    let mut rules = RuleSet::default_rules();
    rules.id = "two-then-disable".to_owned();
    rules.attempt_limit = 2;
    rules.attempt_lockout = vouch::Lockout::Disable;
    fixture()
        .engine
        .rules()
        .set("at-disable", None, &rules)
        .unwrap();
    assert!(ran(&present(&token, "victim", media("photo_speaking.mp4"))));
    let second = present(&token, "victim", media("photo_speaking.mp4"));
    assert!(ran(&second));
    assert!(reasons(&second).contains(&"attempts_disabled".to_owned()));
    assert_eq!(retry_after(&second), None);
    // Disabled: no wait ends it.
    fixture().clock.advance(7 * 86_400_000);
    let held = present(&token, "victim", media("photo_speaking.mp4"));
    assert!(!ran(&held));
    assert_eq!(reasons(&held), ["attempts_disabled"]);
    assert_eq!(held.body["scoring_result"]["hold"]["disabled"], true);
    assert_eq!(retry_after(&held), None);
    // The backend reads it and resets it (the C ABI's `vouch_attempts_get` and `_reset` call the
    // same operations: tests/c/request_test.c).
    let state = attempts(&token, "victim");
    assert_eq!(state["disabled"], true, "{state}");
    assert_eq!(state["limit"], 2);
    assert_eq!(state["events"][0]["event"], "disable");
    let reset = vouch::api::handle(
        &fixture().engine,
        gateway("/api-gateway/attempts/reset", &token, "victim"),
    );
    assert_eq!(reset.status, 200, "{:?}", reset.body);
    assert_eq!(
        (
            reset.body["data"]["disabled"].clone(),
            reset.body["data"]["failures"].clone()
        ),
        (json!(false), json!(0))
    );
    assert!(ran(&present(&token, "victim", media("photo_speaking.mp4"))));
}

#[test]
fn calls_that_cannot_be_guesses_are_not_counted() {
    let _serial = serial();
    let token = project("at-neutral", "victim", true);
    let mut rules = RuleSet::default_rules();
    rules.id = "one-try".to_owned();
    rules.attempt_limit = 1;
    fixture()
        .engine
        .rules()
        .set("at-neutral", None, &rules)
        .unwrap();
    // Unreadable uploads are errors, not decisions: none of them counts.
    let mut truncated = media("photo_speaking.mp4");
    truncated.truncate(truncated.len() / 3);
    for _ in 0..3 {
        let response = present(&token, "victim", truncated.clone());
        assert_eq!(response.status, 400, "{:?}", response.body);
    }
    assert_eq!(attempts(&token, "victim")["failures"], 0);
    // A user with nothing enrolled has nothing to guess against: failures are not counted.
    project_user_without_templates(&token, "newcomer");
    for _ in 0..2 {
        let response = present(&token, "newcomer", media("photo_speaking.mp4"));
        assert!(ran(&response), "{:?}", response.body);
        assert_eq!(retry_after(&response), None);
    }
    assert_eq!(attempts(&token, "newcomer")["failures"], 0);
    // The enrolled user's first failure holds at a limit of one.
    let response = present(&token, "victim", media("photo_speaking.mp4"));
    assert_eq!(retry_after(&response), Some(30));
}

fn project_user_without_templates(token: &str, user: &str) {
    let engine = &fixture().engine;
    set_consent(engine, token, false, user, true);
    set_consent(engine, token, true, user, true);
}

#[test]
fn match_faces_counts_a_non_match_and_refuses_a_held_user() {
    let _serial = serial();
    let Some(dir) = shared_data(
        "faces-bbt",
        "match_faces_counts_a_non_match_and_refuses_a_held_user",
    ) else {
        return;
    };
    let image = |name: &str| std::fs::read(dir.join("images").join(name)).expect("image");
    let token = project("at-match", "victim", true);
    let mut rules = RuleSet::default_rules();
    rules.id = "one-try".to_owned();
    rules.attempt_limit = 1;
    fixture()
        .engine
        .rules()
        .set("at-match", None, &rules)
        .unwrap();
    let session = start_session(&fixture().engine, &token);
    // Someone else's face against the document photo: no match, and at a limit of one the
    // failure starts a wait.
    let compare = || {
        vouch::api::handle(
            &fixture().engine,
            gateway("/api-gateway/match-faces", &token, "victim")
                .header("X-Session-ID", &session)
                .file_part("image", "id.png", "image/png", image("amy_1.png"))
                .file_part("live_image", "live.png", "image/png", image("howard_1.png")),
        )
    };
    let response = compare();
    assert_eq!(response.status, 200, "{:?}", response.body);
    assert_eq!(response.body["data"]["match"], false);
    let found = response.body["data"]["reasons"].as_array().unwrap();
    assert!(found.contains(&json!("attempts_exceeded")), "{found:?}");
    // Held: refused before anything is decoded, with the wait in the text.
    assert_error(
        &compare(),
        403,
        "too many failed attempts for this user; the next is allowed in 30 s",
    );
    // The same counter holds process-video back.
    let held = present(&token, "victim", media("photo_speaking.mp4"));
    assert!(!ran(&held));
    assert_eq!(reasons(&held), ["attempts_exceeded"]);
}
