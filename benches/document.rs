//! Document check latency per document (`engine.documents().check`: decoding, finding the zone,
//! recognition, parsing and the portrait detection), on the generated pages of `tests/media`:
//! an upright 1100x760 TD3 page (PNG) and the same turned 183 degrees (JPEG, read after the upright
//! attempt fails its checks). One engine with one worker thread, so the figure is per core.
//!
//! Run with `cargo bench --bench document`. Models load once, outside the timing.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use vouch::{Engine, EngineOptions};

fn document(criterion: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut options = EngineOptions::from_json(
        r#"{"database":":memory:","template_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","threads":1}"#,
    )
    .expect("options");
    options.models_dir = Some(root.join("models"));
    let engine = Engine::open(options).expect("engine");
    let mut group = criterion.benchmark_group("document");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    for name in ["doc_td3.png", "doc_td3_turned.jpg"] {
        let bytes = std::fs::read(root.join("tests/media").join(name)).expect("page");
        group.bench_function(format!("check/{name}"), |b| {
            b.iter(|| black_box(engine.documents().check(black_box(&bytes)).expect("read")))
        });
    }
    group.finish();
}

criterion_group!(benches, document);
criterion_main!(benches);
