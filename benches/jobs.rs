//! The job service's costs on a WAL database file: jobs created per second through
//! `vouch::api::handle`, due jobs claimed and delivered per second through the pump to a real HTTP
//! receiver on 127.0.0.1, and `GET /stats/jobs` over one million executions. Issue 17's targets:
//! at least 2,000 creates/s and 1,000 deliveries/s on 2 cores, stats under 200 ms.
//! Run with `cargo bench --bench jobs`.

#[path = "../tests/common/http.rs"]
mod http;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::json;
use vouch::api::Request;
use vouch::service::keys::NewApiKey;
use vouch::Engine;

const TEMPLATE_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const SECRET: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==";

fn open_engine(path: &std::path::Path) -> (Engine, String) {
    let options = json!({
        "database": path.to_string_lossy(),
        "template_key": TEMPLATE_KEY,
        "api_keys": { "hs256_secret": SECRET },
        "threads": 2,
        // The receiver is on 127.0.0.1, which outbound calls may not reach by default.
        "allow_private": ["127.0.0.0/8"],
    });
    let engine = Engine::open_json(&options.to_string()).expect("engine opens");
    let key = engine
        .api_keys()
        .create(&NewApiKey {
            project_id: "bench".into(),
            selected_services: vec![],
            scores_id: None,
            label: None,
        })
        .expect("key");
    (engine, key.token)
}

fn job_body(url: &str) -> serde_json::Value {
    json!({ "url": url, "scheduled_at": "2099-01-01T00:00:00Z", "body": "{}" })
}

fn jobs(criterion: &mut Criterion) {
    let directory = tempfile::tempdir().expect("tempdir");
    let (engine, token) = open_engine(&directory.path().join("jobs.sqlite"));

    let mut group = criterion.benchmark_group("jobs");
    group.throughput(Throughput::Elements(1));
    group.bench_function("create", |bench| {
        let body = job_body("https://example.test/hook");
        bench.iter(|| {
            let response = vouch::api::handle(
                &engine,
                Request::new("POST", "/jobs").bearer(&token).json(&body),
            );
            assert_eq!(response.status, 201);
        })
    });

    // 100 jobs made due (scheduled in the past by SQL, as a clock would make them), then pump
    // calls claim, send (concurrently) and record them all.
    let receiver = http::Receiver::start();
    let url = receiver.url("/bench");
    group.throughput(Throughput::Elements(100));
    group.bench_function("deliver_100", |bench| {
        bench.iter_batched(
            || {
                for _ in 0..100 {
                    let response = vouch::api::handle(
                        &engine,
                        Request::new("POST", "/jobs")
                            .bearer(&token)
                            .json(&job_body(&url)),
                    );
                    assert_eq!(response.status, 201);
                }
                let sql = rusqlite::Connection::open(directory.path().join("jobs.sqlite")).unwrap();
                sql.execute(
                    "UPDATE jobs SET next_attempt_at = 0 WHERE status = 'scheduled' AND url = ?1",
                    [&url],
                )
                .unwrap();
            },
            |()| {
                // One project may have 16 attempts in flight (`MAX_IN_FLIGHT_PER_PROJECT`): a
                // pump call claims that many of its jobs, so the 100 take several calls.
                let mut succeeded = 0;
                while succeeded < 100 {
                    succeeded += engine
                        .pump()
                        .run(&http::SocketTransport, 100)
                        .unwrap()
                        .succeeded;
                }
                assert_eq!(succeeded, 100);
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();

    // One million executions of one project over the last 30 days.
    let stats_db = directory.path().join("stats.sqlite");
    let (engine, token) = open_engine(&stats_db);
    let made = vouch::api::handle(
        &engine,
        Request::new("POST", "/jobs")
            .bearer(&token)
            .json(&job_body("https://example.test/")),
    );
    let job = made.body["id"].as_str().unwrap().to_owned();
    let now = engine.runtime().now_ms();
    let mut sql = rusqlite::Connection::open(&stats_db).unwrap();
    let transaction = sql.transaction().unwrap();
    {
        let mut insert = transaction
            .prepare(
                "INSERT INTO job_executions (id, job_id, project_id, attempt_num, status, status_code,
                     duration_ms, executed_at) VALUES (?1, ?2, 'bench', ?3, ?4, 200, ?5, ?6)",
            )
            .unwrap();
        for n in 0..1_000_000i64 {
            insert
                .execute(rusqlite::params![
                    format!("exec_{n}"),
                    job,
                    n + 1,
                    if n % 10 == 0 { "failed" } else { "success" },
                    n % 997,
                    now - (n % 30) * 86_400_000 - 1,
                ])
                .unwrap();
        }
    }
    transaction.commit().unwrap();
    let mut group = criterion.benchmark_group("stats");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("jobs_over_1m_executions", |bench| {
        bench.iter(|| {
            let response =
                vouch::api::handle(&engine, Request::new("GET", "/stats/jobs").bearer(&token));
            assert_eq!(response.body["total_executions"], 1_000_000);
        })
    });
    group.bench_function("usage_over_1m_executions", |bench| {
        bench.iter(|| {
            let response =
                vouch::api::handle(&engine, Request::new("GET", "/stats/usage").bearer(&token));
            assert_eq!(response.body["total_job_executions"], 1_000_000);
        })
    });
    group.finish();
}

criterion_group!(benches, jobs);
criterion_main!(benches);
