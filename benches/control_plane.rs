//! Control-plane costs: a request through `vouch::api::handle` on an in-memory database (baseline) versus
//! a WAL file database (what devices use), and sealing plus storing versus opening a template.
//! Run with `cargo bench --bench control_plane`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::json;
use vouch::api::Request;
use vouch::service::keys::NewApiKey;
use vouch::service::{ConsentKind, Modality, TemplateModel};
use vouch::Engine;

const TEMPLATE_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const SECRET: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==";

fn engine(database: &str) -> (Engine, String) {
    let options = json!({ "database": database, "template_key": TEMPLATE_KEY, "api_keys": { "hs256_secret": SECRET } });
    let engine = Engine::open_json(&options.to_string()).expect("engine opens");
    let key = engine
        .api_keys()
        .create(&NewApiKey {
            project_id: "bench".into(),
            selected_services: vec!["Face Recognition".into()],
            scores_id: None,
            label: None,
        })
        .expect("key");
    (engine, key.token)
}

fn requests(criterion: &mut Criterion) {
    let directory = tempfile::tempdir().expect("tempdir");
    let file = directory.path().join("bench.sqlite");
    let mut group = criterion.benchmark_group("sessions_start");
    for (label, database) in [
        ("memory", ":memory:".to_owned()),
        ("wal_file", file.to_string_lossy().into_owned()),
    ] {
        let (engine, token) = engine(&database);
        group.bench_function(label, |bench| {
            bench.iter(|| {
                let response = vouch::api::handle(
                    &engine,
                    Request::new("POST", "/api-gateway/sessions/start").bearer(&token),
                );
                assert_eq!(response.status, 200);
            })
        });
    }
    group.finish();
}

fn templates(criterion: &mut Criterion) {
    let directory = tempfile::tempdir().expect("tempdir");
    let (engine, _) = engine(&directory.path().join("templates.sqlite").to_string_lossy());
    let store = engine.store();
    for user in ["alice", "bob"] {
        for kind in [ConsentKind::Authorization, ConsentKind::Storage] {
            store
                .set_consent("bench", user, kind, true, 0)
                .expect("consent");
        }
    }
    let model = TemplateModel {
        model_id: "bench-model".into(),
        model_version: 1,
    };
    let template: Vec<u8> = (0..128u32)
        .flat_map(|value| (value as f32 / 128.0).to_le_bytes())
        .collect();
    store
        .insert_template("bench", "alice", Modality::Face, &model, &template, 0)
        .expect("template");
    let mut group = criterion.benchmark_group("face_template_512_bytes");
    group.bench_function("open_all_of_user", |bench| {
        bench.iter(|| {
            store
                .templates("bench", "alice", Modality::Face)
                .expect("open")
        })
    });
    group.bench_function("seal_and_insert", |bench| {
        bench.iter_batched(
            || template.clone(),
            |template| {
                store
                    .insert_template("bench", "bob", Modality::Face, &model, &template, 0)
                    .expect("stored")
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, requests, templates);
criterion_main!(benches);
