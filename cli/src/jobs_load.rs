//! `vouch jobs load`: the job service's throughput, measured end to end on this machine. It makes
//! a fresh database in a temporary folder (the configuration is not read, nothing of yours is
//! touched), starts a local HTTP/1.1 receiver on 127.0.0.1, creates jobs through the request path
//! (`POST /jobs`, one write transaction each, as a backend's calls would), waits until they are
//! due, then delivers them with `--workers` pumps over the same SSRF-guarded `HttpTransport` as
//! `vouch jobs work`, and reads `GET /stats/jobs` over the executions. It prints creates per
//! second, deliveries per second and the stats latency beside issue 17's targets (2,000 creates/s,
//! 1,000 deliveries/s on 2 cores); `benches/jobs.rs` measures the same and stats over a million
//! executions under criterion.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;
use vouch::api::Request;
use vouch::service::keys::NewApiKey;
use vouch::AddressPolicy;

use crate::jobs::HttpTransport;

/// `vouch jobs load` options.
#[derive(Args)]
pub(crate) struct Load {
    /// Jobs to create and deliver.
    #[arg(long, default_value_t = 5000)]
    pub jobs: usize,
    /// Pumps delivering at once (threads sharing one engine; on 2 cores one is fastest, as
    /// pumps take turns at the database's write lock).
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// Jobs claimed per pump.
    #[arg(long, default_value_t = 100)]
    pub batch: usize,
}

/// A local receiver that answers every request `200` with an empty body, keeping connections
/// alive; counts the requests it answered.
fn start_receiver() -> Result<(u16, Arc<AtomicUsize>), String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|error| format!("receiver: {error}"))?;
    let port = listener
        .local_addr()
        .map_err(|error| format!("receiver: {error}"))?
        .port();
    let answered = Arc::new(AtomicUsize::new(0));
    let counter = answered.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counter = counter.clone();
            std::thread::spawn(move || serve(stream, &counter));
        }
    });
    Ok((port, answered))
}

fn serve(stream: TcpStream, answered: &AtomicUsize) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut first = true;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end();
            if line.is_empty() && !first {
                break;
            }
            first = false;
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length.min(1 << 20)];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if writer
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
        answered.fetch_add(1, Ordering::Relaxed);
    }
}

/// A folder under the system's temporary directory, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn load(options: &Load) -> Result<(), String> {
    let count = options.jobs.clamp(1, 1_000_000);
    let workers = options.workers.clamp(1, 64);
    let batch = options.batch.clamp(1, 1000);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let scratch = Scratch(
        std::env::temp_dir().join(format!("vouch-jobs-load-{}-{nanos}", std::process::id())),
    );
    std::fs::create_dir_all(&scratch.0).map_err(|error| format!("scratch folder: {error}"))?;
    let database = scratch.0.join("load.sqlite");
    let mut engine_options = crate::engine::fresh_options(&database.to_string_lossy());
    engine_options["allow_private"] = json!(["127.0.0.0/8"]);
    let engine = crate::engine::open(&engine_options.to_string())?;
    let key = engine
        .create_api_key(&NewApiKey {
            project_id: "load".to_owned(),
            selected_services: Vec::new(),
            scores_id: None,
            label: Some("vouch jobs load".to_owned()),
        })
        .map_err(|error| error.to_string())?;
    let (port, answered) = start_receiver()?;
    let url = format!("http://127.0.0.1:{port}/load");

    // Creates: due a moment after the last one is made, so none is delivered while creating.
    let due_ms = engine.now_ms() + 2_000 + (count as i64) / 2;
    let scheduled_at = vouch::format_timestamp(due_ms);
    let started = Instant::now();
    for index in 0..count {
        let response = engine.handle(Request::new("POST", "/jobs").bearer(&key.token).json(
            &json!({
                "url": url,
                "scheduled_at": scheduled_at,
                "body": format!("{{\"n\":{index}}}"),
            }),
        ));
        if response.status != 201 {
            return Err(format!(
                "POST /jobs answered {}: {}",
                response.status, response.body
            ));
        }
    }
    let create_s = started.elapsed().as_secs_f64();
    let wait = due_ms - engine.now_ms();
    if wait > 0 {
        std::thread::sleep(Duration::from_millis(wait as u64 + 10));
    }

    // Deliveries: `workers` pumps share the engine, as several threads of a host would.
    let policy = AddressPolicy::new(engine.address_policy().allowed().to_vec());
    let transport = HttpTransport::new(policy)?;
    let started = Instant::now();
    let failures = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                match engine.pump_jobs(&transport, batch) {
                    Ok(report) => {
                        failures.fetch_add(report.failed, Ordering::Relaxed);
                        if report.attempts == 0 && report.next_due_ms.is_none() {
                            return;
                        }
                        if report.attempts == 0 {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    }
                    Err(error) => {
                        eprintln!("pump: {error}");
                        return;
                    }
                }
            });
        }
    });
    let deliver_s = started.elapsed().as_secs_f64();
    let delivered = answered.load(Ordering::Relaxed);

    let started = Instant::now();
    let stats = engine.handle(Request::new("GET", "/stats/jobs").bearer(&key.token));
    let stats_ms = started.elapsed().as_secs_f64() * 1000.0;

    let creates_per_s = count as f64 / create_s;
    let deliveries_per_s = delivered as f64 / deliver_s;
    let verdict = |value: f64, target: f64| if value >= target { "met" } else { "NOT met" };
    println!(
        "{count} jobs, {workers} pump(s) of {batch}, a local receiver on 127.0.0.1, {} core(s)",
        std::thread::available_parallelism().map_or(1, |cores| cores.get())
    );
    println!(
        "creates:    {creates_per_s:>9.0} /s  ({create_s:.2} s; target 2,000/s: {})",
        verdict(creates_per_s, 2000.0)
    );
    println!(
        "deliveries: {deliveries_per_s:>9.0} /s  ({deliver_s:.2} s for {delivered} answered, {} failed; target 1,000/s: {})",
        failures.load(Ordering::Relaxed),
        verdict(deliveries_per_s, 1000.0)
    );
    println!(
        "stats:      {stats_ms:>9.1} ms over {} executions (GET /stats/jobs; a million: cargo bench --bench jobs)",
        stats.body["total_executions"]
    );
    if delivered != count || stats.body["succeeded"] != json!(count) {
        return Err(format!(
            "expected {count} deliveries and successes, got {delivered} and {}",
            stats.body["succeeded"]
        ));
    }
    Ok(())
}
