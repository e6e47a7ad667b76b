//! process-video end to end through `Engine::process_video` (decode, face track, voice, phrase,
//! active speaker, liveness, templates, scoring; no enrollment: the user has no consent):
//!
//! - `3.9s_480x360`: `tests/media/photo_speaking.mp4` (H.264 + AAC, 25 fps);
//! - `5s_640x480`: `tests/media/photo_speaking_640x480.mp4` (H.264 + AAC, 30 fps), the issue's
//!   target clip (under 0.5 s on a 2-core machine).
//!
//! Both clips hold a still face for the whole clip, so every sampled frame runs FaceMesh, as a
//! real selfie does. The engine uses every core (two here); the speech model is Debian's
//! PocketSphinx en-us when installed. Run with `cargo bench --bench process_video`.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use vouch::service::keys::NewApiKey;
use vouch::service::process::VideoRequest;
use vouch::Engine;

fn process_video(criterion: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let options = json!({
        "database": ":memory:",
        "template_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        "api_keys": { "hs256_secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" },
        "models_dir": root.join("models"),
    });
    let engine = Engine::open_json(&options.to_string()).expect("engine");
    let created = engine
        .create_api_key(&NewApiKey {
            project_id: "bench".into(),
            selected_services: vouch::Service::ALL
                .iter()
                .map(|s| s.name().to_owned())
                .collect(),
            scores_id: None,
            label: None,
        })
        .expect("key");
    let key = engine
        .authenticate(Some(&format!("Bearer {}", created.token)))
        .expect("auth");
    let mut group = criterion.benchmark_group("process_video");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10));
    for (name, file) in [
        ("3.9s_480x360", "tests/media/photo_speaking.mp4"),
        ("5s_640x480", "tests/media/photo_speaking_640x480.mp4"),
    ] {
        let video = std::fs::read(root.join(file)).expect("clip");
        let request = VideoRequest {
            key: &key,
            fullname: "bench-user",
            session_id: None,
            phrase: "please verify me now",
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                black_box(
                    engine
                        .process_video(&request, black_box(&video))
                        .expect("runs"),
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, process_video);
criterion_main!(benches);
