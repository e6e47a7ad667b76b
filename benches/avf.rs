//! The asynchronous forgery analysis (`Forgery::analyze`, what the pump runs for an
//! `avf/infer` upload) on `tests/media/photo_speaking_720p_10s.mp4`: 10 s of 1280x720 H.264 +
//! AAC at 30 fps, a still face for the whole clip (every sampled frame runs FaceMesh) and 10 s of
//! speech (the synthetic-voice detector, lip sync). The target: under 5 s on a 2-core
//! machine. Also the 202 answer's work, `Forgery::submit` (seal and store the upload in an
//! on-disk database), for that clip (150 KB) and for the largest upload allowed (100 MiB). Run with `cargo bench --bench avf`.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use vouch::service::avf::AvfUpload;
use vouch::service::keys::NewApiKey;
use vouch::Engine;

fn avf(criterion: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("vouch-bench-avf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let options = json!({
        "database": dir.join("bench.sqlite"),
        "template_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        "api_keys": { "hs256_secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" },
        "models_dir": root.join("models"),
    });
    let engine = Engine::open_json(&options.to_string()).expect("engine");
    let created = engine
        .api_keys()
        .create(&NewApiKey {
            project_id: "bench".into(),
            selected_services: vec!["Face Recognition".into()],
            scores_id: None,
            label: None,
        })
        .expect("key");
    let key = engine
        .api_keys()
        .authenticate(Some(&format!("Bearer {}", created.token)))
        .expect("auth");
    let video = std::fs::read(root.join("tests/media/photo_speaking_720p_10s.mp4")).expect("clip");
    let mut group = criterion.benchmark_group("avf");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(20));
    group.bench_function("analyze/10s_1280x720", |b| {
        b.iter(|| black_box(engine.forgery().analyze(black_box(&video)).expect("runs")))
    });
    // The largest upload the spec allows: the clip padded to 100 MiB (the container is sniffed
    // from its head; nothing is decoded at submission).
    let mut largest = video.clone();
    largest.resize(vouch::api::MAX_AVF_BYTES, 0);
    let mut n = 0u64;
    for (name, upload) in [("submit/10s_1280x720", &video), ("submit/100MiB", &largest)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                n += 1;
                let id = format!("req_bench_{n}");
                black_box(
                    engine
                        .forgery()
                        .submit(
                            &key,
                            &AvfUpload {
                                request_id: &id,
                                fullname: None,
                                session_id: None,
                                source_filename: "clip.mp4",
                                video: upload,
                            },
                        )
                        .expect("stored"),
                )
            })
        });
    }
    group.finish();
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, avf);
criterion_main!(benches);
