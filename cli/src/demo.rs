//! `vouch demo`: the verification-service conversation a backend has with the cloud service, run
//! against the on-device engine, printing each request and response.

use std::path::{Path, PathBuf};

use serde_json::json;
use vouch::api::Request;
use vouch::service::keys::NewApiKey;
use vouch::Engine;

use crate::engine::fresh_options;
use crate::{print_response, source_path};

struct Demo {
    engine: Engine,
    step: usize,
    /// The backend's API key (its token) and the session the steps run in.
    token: String,
    session: String,
}

/// What the demo found in the source tree: the models and the demo media (any may be missing:
/// the steps that need them are then skipped).
struct Media {
    models: Option<PathBuf>,
    face: Option<PathBuf>,
    voice: Option<PathBuf>,
    attack: Option<PathBuf>,
}

/// alice, the demo's user.
const ALICE: &str = "alice@example.com";

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

impl Demo {
    fn say(&mut self, text: &str) {
        self.step += 1;
        println!("\n--- {}. {text}", self.step);
    }

    fn send(&self, request: Request) -> vouch::api::Response {
        println!("==> {} {}", request.method, request.path);
        for (name, value) in &request.headers {
            let shown = if name == "Authorization" {
                format!("{}...", &value[..value.len().min(20)])
            } else {
                value.clone()
            };
            println!("    {name}: {shown}");
        }
        if let Some(body) = &request.body {
            println!("    {}", String::from_utf8_lossy(body));
        }
        for part in &request.parts {
            println!("    part {} ({} bytes)", part.name, part.data.len());
        }
        let response = vouch::api::handle(&self.engine, request);
        print_response(&response);
        response
    }

    /// A request with the key's token.
    fn authed(&self, method: &str, path: &str) -> Request {
        Request::new(method, path).bearer(&self.token)
    }

    /// A gateway request as alice, in the session.
    fn as_alice(&self, method: &str, path: &str) -> Request {
        self.authed(method, path)
            .header("X-Session-ID", &self.session)
            .header("X-User-Fullname", ALICE)
    }
}

/// The demo's pump transport: no webhook is configured, so nothing is sent; were anything to be,
/// it would fail like a device without a network.
struct NoNetwork;

impl vouch::service::pump::Transport for NoNetwork {
    fn send(
        &self,
        _: &vouch::service::pump::OutboundRequest,
    ) -> Result<vouch::service::pump::OutboundResponse, String> {
        Err("the demo sends nothing".to_owned())
    }
}

pub fn run(db: Option<&Path>) -> Result<(), String> {
    let database = db.map_or(":memory:".to_owned(), |path| {
        path.to_string_lossy().into_owned()
    });
    // The models and the demo media live in the source tree.
    let media = Media {
        models: crate::engine::source_models(),
        face: source_path("tests/media/face_astronaut.png"),
        voice: source_path("tests/media/speech.wav"),
        attack: source_path("tests/media/photo_speaking.mp4"),
    };
    let mut demo = open(&database, &media)?;
    let key_id = create_key(&mut demo)?;
    consent_steps(&mut demo);
    match (&media.models, &media.face) {
        (Some(_), Some(face)) => face_steps(&mut demo, face)?,
        _ => println!("\n(no models/ or test face found: the face steps are skipped)"),
    }
    match (&media.models, &media.voice) {
        (Some(_), Some(voice)) => voice_steps(&mut demo, voice)?,
        _ => println!("\n(no models/ or test speech found: the voice steps are skipped)"),
    }
    header_steps(&mut demo);
    match (&media.models, &media.attack, &media.face) {
        (Some(_), Some(attack), Some(face)) => video_steps(&mut demo, attack, face)?,
        _ => println!("\n(no models/ or generated video found: process-video is skipped)"),
    }
    closing_steps(&mut demo, &key_id)
}

/// Opens the engine on `database` (with the source tree's models, when found).
fn open(database: &str, media: &Media) -> Result<Demo, String> {
    let mut options = fresh_options(database);
    if let Some(models) = &media.models {
        options["models_dir"] = json!(models);
    }
    let engine = crate::engine::open(&options.to_string())?;
    println!(
        "vouch {} demo: an on-device engine on {database}, {} worker threads",
        vouch::VERSION,
        engine.runtime().thread_count()
    );
    Ok(Demo {
        engine,
        step: 0,
        token: String::new(),
        session: String::new(),
    })
}

/// The backend's API key, created on the device; returns its id.
fn create_key(demo: &mut Demo) -> Result<String, String> {
    demo.say("The backend's API key: created on the device for project demo-project with all five services");
    let key = demo
        .engine
        .api_keys()
        .create(&NewApiKey {
            project_id: "demo-project".into(),
            selected_services: vouch::Service::ALL
                .iter()
                .map(|service| service.name().to_owned())
                .collect(),
            scores_id: None,
            label: Some("demo".into()),
        })
        .map_err(|error| error.to_string())?;
    println!(
        "key {} for project {}: {}",
        key.id,
        key.project_id,
        key.selected_services.join(", ")
    );
    demo.token = key.token;
    Ok(key.id)
}

/// A session, then alice's consents: read (none yet), then both given in the session.
fn consent_steps(demo: &mut Demo) {
    demo.say("Start a session (X-User-Fullname is not needed here)");
    let started = demo.send(demo.authed("POST", "/api-gateway/sessions/start"));
    demo.session = started.body["data"].as_str().unwrap_or_default().to_owned();

    demo.say("Read alice's consents: none given yet");
    demo.send(demo.authed(
        "GET",
        &format!(
            "/api-consent/status?user_fullname={}",
            "alice%40example.com"
        ),
    ));

    demo.say("Give authorization consent in the session: the session is now locked to alice");
    demo.send(
        demo.authed("POST", "/api-consent/consent")
            .header("X-Session-ID", &demo.session)
            .json(&json!({ "is_consent_given": true, "user_fullname": ALICE })),
    );

    demo.say("Give storage consent");
    demo.send(
        demo.authed("POST", "/api-consent/strg-consent")
            .header("X-Session-ID", &demo.session)
            .json(&json!({ "is_consent_given": true, "user_fullname": ALICE })),
    );
}

/// alice's face enrolled from a portrait, then a new capture (the portrait grey and turned)
/// compared with it.
fn face_steps(demo: &mut Demo, face: &Path) -> Result<(), String> {
    let photo = read(face)?;
    demo.say("Enroll alice's face (a public-domain portrait): detected, aligned, embedded, sealed");
    demo.send(
        demo.as_alice("POST", "/api-gateway/enroll/face")
            .file_part("face", "alice.png", "image/png", photo.clone())
            .text_part("is_document", "false"),
    );
    demo.say("Compare a new capture (here: the photo in grey, turned 90 degrees) with alice's enrolled template");
    let enrolled = demo
        .engine
        .faces()
        .templates("demo-project", ALICE)
        .map_err(|e| e.to_string())?;
    let frame =
        vouch_media::decode_image(&photo, &Default::default()).map_err(|e| e.to_string())?;
    let live = demo
        .engine
        .faces()
        .from_frame(&grey_and_turned(&frame))
        .map_err(|e| e.to_string())?;
    if let Some(template) = enrolled.first() {
        let m = template.compare(&live.template);
        println!(
            "distance {:.3}, probability {:.3}, match {} (threshold {})",
            m.distance,
            m.probability,
            m.is_match,
            vouch_bio::FACE_CALIBRATION.threshold
        );
    }
    Ok(())
}

/// `frame` in grey, turned 90 degrees clockwise.
fn grey_and_turned(frame: &vouch_media::Frame) -> vouch_media::Frame {
    let (w, h) = (frame.width as usize, frame.height as usize);
    let mut turned = vec![0u8; w * h * 3];
    for y in 0..h {
        for x in 0..w {
            let p = &frame.rgb[(y * w + x) * 3..(y * w + x) * 3 + 3];
            let grey = ((u32::from(p[0]) * 299 + u32::from(p[1]) * 587 + u32::from(p[2]) * 114)
                / 1000) as u8;
            let at = (x * h + (h - 1 - y)) * 3;
            turned[at..at + 3].fill(grey);
        }
    }
    vouch_media::Frame {
        timestamp_ms: 0,
        width: frame.height,
        height: frame.width,
        rgb: turned,
    }
}

/// alice's voice enrolled, then Voice Recognition on half the recording and on silence.
fn voice_steps(demo: &mut Demo, voice: &Path) -> Result<(), String> {
    let speech = read(voice)?;
    demo.say("Enroll alice's voice (a synthetic sentence): speech found, embedded, sealed");
    demo.send(
        demo.as_alice("POST", "/api-gateway/enroll/voice")
            .file_part("voice", "alice.wav", "audio/wav", speech.clone())
            .text_part("phrase", "my voice is my password"),
    );
    demo.say(
        "Voice Recognition on the first half of the recording, then on two seconds of silence",
    );
    let (pcm, _) = demo
        .engine
        .media()
        .decode_audio(&speech, &Default::default())
        .map_err(|e| e.to_string())?;
    for audio in [&pcm.samples[..pcm.samples.len() / 2], &[0.0; 32_000][..]] {
        let result = demo
            .engine
            .voices()
            .verify("demo-project", ALICE, audio)
            .map_err(|e| e.to_string())?;
        println!("{}", serde_json::to_string(&result).unwrap_or_default());
    }
    Ok(())
}

/// The header rules: the session lock, the required fullname, malformed optional headers, and
/// process-video's part check.
fn header_steps(demo: &mut Demo) {
    demo.say("Another fullname in alice's session is refused (403)");
    demo.send(
        demo.authed("POST", "/api-gateway/enroll/face")
            .header("X-Session-ID", &demo.session)
            .header("X-User-Fullname", "mallory@example.com"),
    );

    demo.say("Gateway calls need X-User-Fullname");
    demo.send(
        demo.authed("POST", "/api-gateway/process-video")
            .header("X-Session-ID", &demo.session),
    );

    demo.say("Malformed optional headers are named in the error");
    demo.send(
        demo.authed("POST", "/api-gateway/process-video")
            .header("X-User-Fullname", ALICE)
            .header("X-Geo-Location", "{lat: 52}"),
    );

    demo.say("process-video validates its parts (the video is required)");
    demo.send(
        demo.authed("POST", "/api-gateway/process-video")
            .header("X-User-Fullname", ALICE)
            .header("X-Session-ID", &demo.session)
            .header("X-Action-Trigger", "authentication")
            .text_part("phrase", "blue seven now"),
    );
}

/// process-video on a photo attack, match-faces against the session's faces, and the same clip
/// through the asynchronous forgery analysis.
fn video_steps(demo: &mut Demo, attack: &Path, face: &Path) -> Result<(), String> {
    demo.say(
        "process-video with all five services on a generated clip: alice's portrait held \
         still while a synthetic voice reads (a photo attack). Face Recognition knows her; \
         liveness and active speaker do not believe it, so the decision fails",
    );
    demo.send(
        demo.authed("POST", "/api-gateway/process-video")
            .header("X-User-Fullname", ALICE)
            .header("X-Session-ID", &demo.session)
            .file_part("video", "selfie.mp4", "video/mp4", read(attack)?)
            .text_part("phrase", "please verify me now"),
    );
    demo.say("match-faces: a document photo against the faces of the session's video");
    demo.send(
        demo.authed("POST", "/api-gateway/match-faces")
            .header("X-User-Fullname", ALICE)
            .header("X-Session-ID", &demo.session)
            .header("X-Use-Prefilled-Video", "true")
            .file_part("image", "id-photo.png", "image/png", read(face)?),
    );
    demo.say(
        "avf/infer: the same clip for forgery analysis. 202 at once (the video is stored \
         sealed); the job pump analyses it (hosts call it from a timer; `vouch serve` runs \
         it continuously), then the status endpoint has the verdict and why",
    );
    let accepted = demo.send(
        demo.authed("POST", "/api-gateway/avf/infer")
            .header("X-User-Fullname", ALICE)
            .file_part("file", "selfie.mp4", "video/mp4", read(attack)?),
    );
    let report = demo
        .engine
        .pump()
        .run(&NoNetwork, 10)
        .map_err(|error| error.to_string())?;
    println!("(pump: {} forgery analysis ended)", report.analyses);
    if let Some(id) = accepted.body["data"]["metadata"]["request_id"].as_str() {
        demo.send(demo.authed("GET", &format!("/api-gateway/avf/status/{id}")));
    }
    println!(
        "(try your own selfie video: vouch verify VIDEO --user NAME --phrase TEXT --grant-consent --registration, then again without --registration)"
    );
    Ok(())
}

/// Refused credentials, the session's end with a SIM-swap check, the transaction history, and
/// the key revoked (which must then be refused).
fn closing_steps(demo: &mut Demo, key_id: &str) -> Result<(), String> {
    demo.say("No Authorization header, and one that is not a Bearer token");
    demo.send(Request::new("POST", "/api-gateway/sessions/start"));
    demo.send(
        Request::new("POST", "/api-gateway/sessions/start")
            .header("Authorization", &format!("Token {}", demo.token)),
    );

    demo.say(
        "End the session with a phone number: this demo engine has no SIM-swap provider, so the check is unavailable",
    );
    let session = demo.session.clone();
    demo.send(
        demo.authed("POST", &format!("/api-gateway/sessions/end/{session}"))
            .header("X-User-Fullname", ALICE)
            .json(&json!({ "phone_number": "+49 151 1234 5678" })),
    );
    demo.send(demo.authed("GET", &format!("/api-projects/sessions/{session}/sim-swap")));

    demo.say("Transaction history, newest first, two per page");
    let page = demo.send(demo.authed("GET", "/api-transactions/transactions?limit=2"));
    if let Some(cursor) = page.body["next_cursor"].as_str() {
        demo.send(demo.authed(
            "GET",
            &format!("/api-transactions/transactions?limit=2&cursor={cursor}"),
        ));
    }

    demo.say("Revoke the key: it is no longer active");
    demo.engine
        .api_keys()
        .revoke("demo-project", key_id)
        .map_err(|error| error.to_string())?;
    let refused = demo.send(demo.authed("POST", "/api-gateway/sessions/start"));

    println!("\nDemo finished: {} steps.", demo.step);
    if refused.error_text() != Some("api key is not active") {
        return Err("the revoked key was not refused".to_owned());
    }
    Ok(())
}
