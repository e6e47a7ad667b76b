//! `vouch jobs load`: the job service's throughput, measured end to end on this machine. It makes
//! a fresh database in a temporary folder (the configuration is not read, nothing of yours is
//! touched), starts a local HTTP/1.1 receiver on 127.0.0.1, creates jobs through the request path
//! (`POST /jobs`, one write transaction each, as a backend's calls would), waits until they are
//! due, then delivers them with `--workers` pumps over the same SSRF-guarded `HttpTransport` as
//! `vouch jobs work`, and reads `GET /stats/jobs` over the executions. It prints creates per
//! second, deliveries per second and the stats latency beside issue 17's targets (2,000 creates/s,
//! 1,000 deliveries/s on 2 cores); `benches/jobs.rs` measures the same and stats over a million
//! executions under criterion.
//!
//! With `--projects N` the jobs are spread over N projects, each with its own receiver (its own
//! port: its own destination), and `--slow-ms MS` makes the first project's receiver wait that
//! long before it answers (issue 37: one slow receiver must not hold up the others). It then also
//! prints how late each call reached its receiver after it was due, for the other projects and
//! for the slow one (median, 99th percentile, worst), beside the target of 1 s.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;
use vouch::api::Request;
use vouch::service::keys::{CreatedApiKey, NewApiKey};
use vouch::{AddressPolicy, Engine};

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
    /// Projects the jobs are spread over (round robin), each with its own receiver.
    #[arg(long, default_value_t = 1)]
    pub projects: usize,
    /// The first project's receiver waits this long before it answers, ms.
    #[arg(long, default_value_t = 0)]
    pub slow_ms: u64,
    /// A PostgreSQL database to measure on instead of a scratch SQLite file (`postgres://...`):
    /// the run makes a schema of its own there and drops it at the end.
    #[arg(long, value_name = "URL")]
    pub database: Option<String>,
    /// Engines ("servers") sharing the database, each with its own connections and pumps, as
    /// that many `vouch serve` processes would: the creates are spread over them from one thread
    /// each, and each delivers with `--workers` pumps. More than 1 needs `--database`.
    #[arg(long, default_value_t = 1)]
    pub servers: usize,
}

/// What the receivers saw: per project, when each call arrived.
type Arrivals = Arc<std::sync::Mutex<Vec<(usize, Instant)>>>;

/// A local receiver that answers every request `200` with an empty body (after `delay`), keeping
/// connections alive; counts the requests it answered and notes when each arrived, as `project`.
fn start_receiver(
    project: usize,
    delay: Duration,
    answered: Arc<AtomicUsize>,
    arrivals: Arrivals,
) -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|error| format!("receiver: {error}"))?;
    let port = listener
        .local_addr()
        .map_err(|error| format!("receiver: {error}"))?
        .port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (counter, arrivals) = (answered.clone(), arrivals.clone());
            std::thread::spawn(move || serve(stream, &counter, project, delay, &arrivals));
        }
    });
    Ok(port)
}

fn serve(
    stream: TcpStream,
    answered: &AtomicUsize,
    project: usize,
    delay: Duration,
    arrivals: &Arrivals,
) {
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
        if let Ok(mut seen) = arrivals.lock() {
            seen.push((project, Instant::now()));
        }
        std::thread::sleep(delay);
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
    let projects = options.projects.clamp(1, 1000);
    let servers = options.servers.clamp(1, 16);
    if servers > 1 && options.database.is_none() {
        return Err(
            "--servers above 1 needs --database postgres://... (SQLite has one writer)".to_owned(),
        );
    }
    let setup = Setup::new(
        projects,
        options.slow_ms,
        options.database.as_deref(),
        servers,
    )?;
    let engine = &setup.engines[0];
    let (create_s, due) = create_jobs(&setup.engines, &setup.targets, count)?;
    let (deliver_s, failures) = deliver_all(&setup.engines, workers, batch)?;
    let delivered = setup.answered.load(Ordering::Relaxed);
    let started = Instant::now();
    let stats = vouch::api::handle(
        engine,
        Request::new("GET", "/stats/jobs").bearer(&setup.targets[0].0.token),
    );
    let stats_ms = started.elapsed().as_secs_f64() * 1000.0;
    let succeeded: u64 = setup
        .targets
        .iter()
        .map(|(key, _)| {
            vouch::api::handle(
                engine,
                Request::new("GET", "/stats/jobs").bearer(&key.token),
            )
            .body["succeeded"]
                .as_u64()
                .unwrap_or(0)
        })
        .sum();
    let creates_per_s = count as f64 / create_s;
    let deliveries_per_s = delivered as f64 / deliver_s;
    println!(
        "{count} jobs over {projects} project(s), {servers} server(s) on {} with {workers} pump(s) of {batch} each, local receivers on 127.0.0.1, {} core(s)",
        setup.backend,
        std::thread::available_parallelism().map_or(1, |cores| cores.get())
    );
    println!(
        "creates:    {creates_per_s:>9.0} /s  ({create_s:.2} s; target 2,000/s: {})",
        verdict(creates_per_s, 2000.0)
    );
    println!(
        "deliveries: {deliveries_per_s:>9.0} /s  ({deliver_s:.2} s for {delivered} answered, {failures} failed; target 1,000/s: {})",
        verdict(deliveries_per_s, 1000.0)
    );
    println!(
        "stats:      {stats_ms:>9.1} ms over {} executions (GET /stats/jobs; a million: cargo bench --bench jobs)",
        stats.body["total_executions"]
    );
    if options.slow_ms > 0 {
        print_lateness(&setup.arrivals, due, options.slow_ms);
    }
    if delivered != count || succeeded != count as u64 {
        return Err(format!(
            "expected {count} deliveries and successes, got {delivered} and {succeeded}"
        ));
    }
    Ok(())
}

/// `met` when `value` reaches `target`.
fn verdict(value: f64, target: f64) -> &'static str {
    if value >= target {
        "met"
    } else {
        "NOT met"
    }
}

/// Engines on a scratch database, one key per project and one local receiver each (the first
/// project's answers after `slow_ms`).
struct Setup {
    /// One per server, on the same database.
    engines: Vec<Engine>,
    /// `sqlite` or `postgres`.
    backend: &'static str,
    /// The PostgreSQL schema made for the run, dropped at the end.
    _schema: Option<Schema>,
    /// Each project's key and its receiver's URL.
    targets: Vec<(CreatedApiKey, String)>,
    /// Calls the receivers answered, and when each arrived.
    answered: Arc<AtomicUsize>,
    arrivals: Arrivals,
    // Dropped last: the database lives in it.
    _scratch: Scratch,
}

/// A schema of the run's own on a PostgreSQL server, dropped when the value is.
struct Schema {
    url: String,
    name: String,
}

impl Schema {
    fn create(url: &str) -> Result<Schema, String> {
        let name = format!(
            "vouch_load_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_millis() % 1_000_000_000)
        );
        let mut client = postgres::Client::connect(url, postgres::NoTls)
            .map_err(|error| format!("--database: {error}"))?;
        client
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .map_err(|error| format!("--database: {error}"))?;
        Ok(Schema {
            url: url.to_owned(),
            name,
        })
    }

    /// `url` with the schema as its search path.
    fn database(&self) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-csearch_path%3D{}",
            self.url, self.name
        )
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

impl Setup {
    fn new(
        projects: usize,
        slow_ms: u64,
        postgres: Option<&str>,
        servers: usize,
    ) -> Result<Setup, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let scratch = Scratch(
            std::env::temp_dir().join(format!("vouch-jobs-load-{}-{nanos}", std::process::id())),
        );
        std::fs::create_dir_all(&scratch.0).map_err(|error| format!("scratch folder: {error}"))?;
        let schema = postgres.map(Schema::create).transpose()?;
        let database = match &schema {
            Some(schema) => schema.database(),
            None => scratch.0.join("load.sqlite").to_string_lossy().into_owned(),
        };
        let mut engine_options = crate::engine::fresh_options(&database);
        engine_options["allow_private"] = json!(["127.0.0.0/8"]);
        let engines = (0..servers)
            .map(|_| crate::engine::open(&engine_options.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let engine = &engines[0];
        let backend = if schema.is_some() {
            "postgres"
        } else {
            "sqlite"
        };
        let answered = Arc::new(AtomicUsize::new(0));
        let arrivals: Arrivals = Arc::default();
        let mut targets = Vec::with_capacity(projects);
        for project in 0..projects {
            let key = engine
                .api_keys()
                .create(&NewApiKey {
                    project_id: format!("load{project}"),
                    selected_services: Vec::new(),
                    scores_id: None,
                    label: Some("vouch jobs load".to_owned()),
                })
                .map_err(|error| error.to_string())?;
            let delay = Duration::from_millis(if project == 0 { slow_ms } else { 0 });
            let port = start_receiver(project, delay, answered.clone(), arrivals.clone())?;
            targets.push((key, format!("http://127.0.0.1:{port}/load")));
        }
        Ok(Setup {
            engines,
            backend,
            _schema: schema,
            targets,
            answered,
            arrivals,
            _scratch: scratch,
        })
    }
}

/// Creates `count` jobs through the request surface, spread over the targets and over the
/// engines (one thread each, as servers behind a load balancer), all due a moment after the last
/// one is made (so none is delivered while creating), then waits until they are due. Returns the
/// seconds the creates took and when the jobs fell due.
fn create_jobs(
    engines: &[Engine],
    targets: &[(CreatedApiKey, String)],
    count: usize,
) -> Result<(f64, Instant), String> {
    let engine = &engines[0];
    let due_ms = engine.runtime().now_ms() + 2_000 + (count as i64) / 2;
    let scheduled_at = vouch::format_timestamp(due_ms);
    let started = Instant::now();
    let create = |server: usize| -> Result<(), String> {
        for index in (server..count).step_by(engines.len()) {
            let (key, url) = &targets[index % targets.len()];
            let response = vouch::api::handle(
                &engines[server],
                Request::new("POST", "/jobs")
                    .bearer(&key.token)
                    .json(&json!({
                        "url": url,
                        "scheduled_at": scheduled_at,
                        "body": format!("{{\"n\":{index}}}"),
                    })),
            );
            if response.status != 201 {
                return Err(format!(
                    "POST /jobs answered {}: {}",
                    response.status, response.body
                ));
            }
        }
        Ok(())
    };
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..engines.len())
            .map(|server| scope.spawn(move || create(server)))
            .collect();
        threads.into_iter().try_for_each(|thread| {
            thread
                .join()
                .unwrap_or_else(|_| Err("a creating thread panicked".to_owned()))
        })
    })?;
    let create_s = started.elapsed().as_secs_f64();
    let wait = due_ms - engine.runtime().now_ms();
    let due = Instant::now() + Duration::from_millis(wait.max(0) as u64);
    if wait > 0 {
        std::thread::sleep(Duration::from_millis(wait as u64 + 10));
    }
    Ok((create_s, due))
}

/// Delivers every due job: on each engine, `workers` pumps of `batch` share it, as several
/// threads of a host would, until none is left. Returns the seconds it took and the attempts that
/// failed.
fn deliver_all(engines: &[Engine], workers: usize, batch: usize) -> Result<(f64, usize), String> {
    let policy = AddressPolicy::new(engines[0].runtime().address_policy().allowed().to_vec());
    let transport = HttpTransport::new(policy)?;
    let started = Instant::now();
    let failures = AtomicUsize::new(0);
    let pumps = workers * engines.len();
    std::thread::scope(|scope| {
        for engine in engines
            .iter()
            .flat_map(|engine| std::iter::repeat_n(engine, workers))
        {
            let (transport, failures) = (&transport, &failures);
            scope.spawn(move || loop {
                match engine.pump().deliver(transport, batch) {
                    Ok(report) => {
                        failures.fetch_add(report.failed, Ordering::Relaxed);
                        if report.attempts == 0 && report.next_due_ms.is_none() {
                            return;
                        }
                        if report.attempts == 0 {
                            // Several pumps look in turn, not all at once.
                            std::thread::sleep(Duration::from_millis(5 * pumps as u64));
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
    Ok((
        started.elapsed().as_secs_f64(),
        failures.load(Ordering::Relaxed),
    ))
}

/// How long after `due` the calls reached their receivers: the other projects' (target 1 s) and
/// the slow project's.
fn print_lateness(arrivals: &Arrivals, due: Instant, slow_ms: u64) {
    let seen = arrivals.lock().map(|seen| seen.clone()).unwrap_or_default();
    let lateness = |slow: bool| {
        let mut late: Vec<f64> = seen
            .iter()
            .filter(|(project, _)| (*project == 0) == slow)
            .map(|(_, at)| at.saturating_duration_since(due).as_secs_f64())
            .collect();
        late.sort_by(f64::total_cmp);
        let at = |q: f64| late.get(((late.len() as f64 - 1.0) * q).round() as usize);
        (
            late.len(),
            at(0.5).copied(),
            at(0.99).copied(),
            late.last().copied(),
        )
    };
    let show = |(n, median, p99, worst): (usize, Option<f64>, Option<f64>, Option<f64>)| {
        let f = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3} s"));
        format!(
            "{n} calls: median {}, p99 {}, worst {}",
            f(median),
            f(p99),
            f(worst)
        )
    };
    let others = lateness(false);
    println!(
        "reached their receiver after due, the other projects: {} (target 1 s: {})",
        show(others),
        verdict(1.0 - others.3.unwrap_or(f64::INFINITY), 0.0)
    );
    println!(
        "reached their receiver after due, the slow project ({slow_ms} ms a call): {}",
        show(lateness(true))
    );
}
