//! Many `vouch serve` processes on one PostgreSQL database (issue 41): the built binary, started
//! two or three times on one configuration whose `database` is a schema of the test server, with
//! a real HTTP client and a real receiver on 127.0.0.1 counting the calls.
//!
//! Runs only with `VOUCH_TEST_POSTGRES` (`bash scripts/with-postgres cargo test -p vouch-cli
//! --release --test fleet`, which `scripts/test` runs after the SQLite pass); without it each test
//! says so on stderr and returns.

#[path = "../../tests/common/http.rs"]
mod http;
#[path = "support/listening.rs"]
mod listening;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::{Receiver, HOLD};
use reqwest::blocking::Client;
use serde_json::{json, Value};

/// The test server's URL, or `None` after saying loudly that `test` did not run.
fn postgres_base(test: &str) -> Option<String> {
    match std::env::var("VOUCH_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "NOTE: VOUCH_TEST_POSTGRES is not set: {test} did not run (bash scripts/with-postgres cargo test -p vouch-cli --release --test fleet)"
            );
            None
        }
    }
}

/// Servers on one database schema, their configuration and a key of project `p`.
struct Fleet {
    dir: tempfile::TempDir,
    base: String,
    schema: String,
    servers: Vec<Option<(Child, String)>>,
    token: String,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

impl Fleet {
    /// `vouch init`, the database set to a new schema of the test server, 127.0.0.0/8 opened for
    /// the receiver, a key of project `p`, then `count` servers.
    fn start(base: &str, name: &str, count: usize) -> Fleet {
        let mut fleet = Fleet::configure(base, name);
        let key = vouch(&fleet.config(), &["keys", "create", "--project", "p"]);
        fleet.token = serde_json::from_str::<Value>(&key).unwrap()["token"]
            .as_str()
            .unwrap()
            .to_owned();
        for _ in 0..count {
            let server = fleet.spawn();
            fleet.servers.push(Some(server));
        }
        fleet
    }

    /// `vouch init`, the database set to a new schema of the test server, 127.0.0.0/8 opened for
    /// the receiver; no key and no server yet (nothing has opened the database).
    fn configure(base: &str, name: &str) -> Fleet {
        let schema = format!("fleet_{name}_{}", std::process::id());
        let mut admin = postgres::Client::connect(base, postgres::NoTls).unwrap();
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .unwrap();
        // The schema as the search path; the test's name as the connections' application name.
        let separator = if base.contains('?') { '&' } else { '?' };
        let url = format!(
            "{base}{separator}options=-csearch_path%3D{schema}&application_name=fleet_{name}"
        );
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("vouch.json");
        let status = Command::new(env!("CARGO_BIN_EXE_vouch"))
            .args(["init", "--config"])
            .arg(&config)
            .arg("--db")
            .arg(dir.path().join("unused.sqlite"))
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let mut options: Value =
            serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
        options["database"] = json!(url);
        options["database_pool_size"] = json!(4);
        options["allow_private"] = json!(["127.0.0.0/8"]);
        std::fs::write(&config, options.to_string()).unwrap();
        Fleet {
            dir,
            base: base.to_owned(),
            schema,
            servers: Vec::new(),
            token: String::new(),
        }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("vouch.json")
    }

    fn spawn(&self) -> (Child, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_vouch"));
        command
            .args(["serve", "--config"])
            .arg(self.config())
            .args(["--listen", "127.0.0.1:0"]);
        listening::spawn_serve(command)
    }

    /// The base URL of server `index`.
    fn url(&self, index: usize, path: &str) -> String {
        let (_, base) = self.servers[index].as_ref().expect("server running");
        format!("{base}{path}")
    }

    /// The running servers' indexes.
    fn running(&self) -> Vec<usize> {
        (0..self.servers.len())
            .filter(|index| self.servers[*index].is_some())
            .collect()
    }

    /// `kill -9` of server `index`.
    fn kill(&mut self, index: usize) {
        let (mut child, _) = self.servers[index].take().expect("server running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Creates a job on server `index` calling `url` at `due_ms`.
    fn create_job(&self, http: &Client, index: usize, url: &str, due_ms: i64) -> String {
        let created = http
            .post(self.url(index, "/jobs"))
            .bearer_auth(&self.token)
            .json(&json!({
                "url": url,
                "scheduled_at": vouch::format_timestamp(due_ms),
                "body": "hello",
                "max_retries": 3,
            }))
            .send()
            .unwrap();
        assert_eq!(created.status(), 201, "{:?}", created.text());
        created.json::<Value>().unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn get(&self, http: &Client, path: &str) -> Value {
        let index = self.running()[0];
        let answer = http
            .get(self.url(index, path))
            .bearer_auth(&self.token)
            .send()
            .unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        answer.json().unwrap()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for (mut child, _) in self.servers.iter_mut().filter_map(Option::take) {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Ok(mut admin) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

/// Runs the CLI on `config`; its stdout.
fn vouch(config: &Path, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .arg(args[0])
        .arg("--config")
        .arg(config)
        .args(&args[1..])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "vouch {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Calls per job id the receiver saw on `path`.
fn calls_per_job(receiver: &Receiver, path: &str) -> HashMap<String, usize> {
    let mut calls = HashMap::new();
    for seen in receiver.seen(path) {
        *calls.entry(seen.headers["x-job-id"].clone()).or_default() += 1;
    }
    calls
}

/// Waits until `done` or `limit` passed.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    done()
}

/// 1,000 jobs created round robin on three servers, delivered by all three: each reaches the
/// receiver exactly once.
#[test]
fn three_servers_deliver_each_of_a_thousand_jobs_once() {
    let Some(base) = postgres_base("three_servers_deliver_each_of_a_thousand_jobs_once") else {
        return;
    };
    let receiver = Receiver::start();
    let fleet = Fleet::start(&base, "thousand", 3);
    let http = client();
    let due = now_ms() + 3_000;
    let mut ids = Vec::new();
    for n in 0..1000 {
        ids.push(fleet.create_job(&http, n % 3, &receiver.url("/count"), due));
    }
    let delivered = wait_until(Duration::from_secs(180), || {
        receiver.seen("/count").len() >= ids.len()
    });
    assert!(
        delivered,
        "{} of {} delivered",
        receiver.seen("/count").len(),
        ids.len()
    );
    // A late duplicate would arrive within a pump's turn.
    std::thread::sleep(Duration::from_secs(3));
    let calls = calls_per_job(&receiver, "/count");
    assert_eq!(calls.len(), ids.len(), "every job reached the receiver");
    let duplicated: Vec<_> = calls.iter().filter(|(_, count)| **count > 1).collect();
    assert!(duplicated.is_empty(), "delivered twice: {duplicated:?}");
    for id in ids.iter().step_by(97) {
        let job = fleet.get(&http, &format!("/jobs/{id}"));
        assert_eq!(job["status"], "success", "{job}");
        assert_eq!(job["execution_count"], 1, "{job}");
    }
}

/// A server killed (`kill -9`) while its calls wait on a slow receiver loses nothing: once its
/// leases run out (`LEASE_MS`, 2 minutes) another server closes its attempts as interrupted and
/// runs them again. A job reaches the receiver twice only when its first attempt is recorded as
/// interrupted (the documented at-least-once rule), never otherwise.
#[test]
fn a_server_killed_mid_delivery_loses_nothing() {
    let Some(base) = postgres_base("a_server_killed_mid_delivery_loses_nothing") else {
        return;
    };
    let receiver = Receiver::start();
    receiver.answer("/slow", &[HOLD; 40]);
    let mut fleet = Fleet::start(&base, "killed", 2);
    let http = client();
    let due = now_ms() + 2_000;
    let ids: Vec<String> = (0..20)
        .map(|n| fleet.create_job(&http, n % 2, &receiver.url("/slow"), due))
        .collect();
    // Every job is in flight, held by the receiver, spread over both servers.
    assert!(wait_until(Duration::from_secs(60), || receiver
        .seen("/slow")
        .len()
        >= ids.len()));
    fleet.kill(0);
    receiver.release();
    let finished = wait_until(Duration::from_secs(300), || {
        ids.iter().all(|id| {
            let job = fleet.get(&http, &format!("/jobs/{id}"));
            job["status"] == "success"
        })
    });
    assert!(finished, "every job ends in success after the kill");
    let calls = calls_per_job(&receiver, "/slow");
    let mut interrupted = 0;
    for id in &ids {
        let executions = fleet.get(&http, &format!("/jobs/{id}/executions"))["executions"]
            .as_array()
            .unwrap()
            .clone();
        let statuses: Vec<&str> = executions
            .iter()
            .map(|execution| execution["status"].as_str().unwrap())
            .collect();
        let interrupted_here = statuses.iter().filter(|s| **s == "interrupted").count();
        interrupted += interrupted_here;
        assert_eq!(statuses.last(), Some(&"success"), "{id}: {statuses:?}");
        assert_eq!(
            calls.get(id).copied().unwrap_or(0),
            statuses.len(),
            "{id}: one call per recorded attempt ({statuses:?})"
        );
    }
    assert!(
        interrupted > 0,
        "the killed server held some of the jobs when it died"
    );
}

/// A schedule due every minute, with three servers ticking: its first slot spawns one job, which
/// reaches the receiver once.
#[test]
fn three_servers_spawn_one_job_per_schedule_slot() {
    let Some(base) = postgres_base("three_servers_spawn_one_job_per_schedule_slot") else {
        return;
    };
    let receiver = Receiver::start();
    let fleet = Fleet::start(&base, "schedule", 3);
    let http = client();
    let created = http
        .post(fleet.url(1, "/schedules"))
        .bearer_auth(&fleet.token)
        .json(&json!({ "url": receiver.url("/tick"), "cron": "* * * * *" }))
        .send()
        .unwrap();
    assert_eq!(created.status(), 201);
    let schedule: Value = created.json().unwrap();
    let first_slot = vouch::parse_timestamp(schedule["next_run_at"].as_str().unwrap()).unwrap();
    assert!(wait_until(
        Duration::from_millis((first_slot - now_ms()).max(0) as u64 + 30_000),
        || !receiver.seen("/tick").is_empty()
    ));
    // Every server has ticked past the slot by now (each looks at least once a second).
    std::thread::sleep(Duration::from_secs(5));
    if now_ms() < first_slot + 55_000 {
        assert_eq!(receiver.seen("/tick").len(), 1, "one call for the slot");
    }
    let jobs = fleet.get(&http, "/jobs?limit=100")["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|job| job["url"] == receiver.url("/tick"))
        .count();
    assert!(
        jobs <= 2,
        "at most the slot's job and the next slot's (if it came): {jobs}"
    );
    let calls = calls_per_job(&receiver, "/tick");
    assert!(calls.values().all(|count| *count == 1), "{calls:?}");
}

/// One credit left and ten due jobs on two servers: exactly one attempt is made and paid for.
#[test]
fn two_servers_cannot_both_spend_the_last_credit() {
    let Some(base) = postgres_base("two_servers_cannot_both_spend_the_last_credit") else {
        return;
    };
    let receiver = Receiver::start();
    let fleet = Fleet::start(&base, "credit", 2);
    vouch(
        &fleet.config(),
        &["credits", "set", "--project", "p", "--balance", "1"],
    );
    let http = client();
    let due = now_ms() + 2_000;
    for n in 0..10 {
        fleet.create_job(&http, n % 2, &receiver.url("/paid"), due);
    }
    assert!(wait_until(Duration::from_secs(30), || !receiver
        .seen("/paid")
        .is_empty()));
    // Both servers have looked at the due jobs several times by now.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(receiver.seen("/paid").len(), 1, "one credit, one call");
    let credits = vouch(&fleet.config(), &["credits", "show", "--project", "p"]);
    assert_eq!(
        serde_json::from_str::<Value>(&credits).unwrap()["balance"],
        0,
        "{credits}"
    );
    let usage = fleet.get(&http, "/stats/usage?days=1");
    assert_eq!(usage["total_job_executions"], 1, "{usage}");
}

/// The server's database connections cut (as a database restart or a network cut does): requests
/// answer 503 with the job spec's shape, or succeed, never 500; the server keeps running and
/// reconnects on its own.
#[test]
fn a_lost_database_connection_is_a_503_then_reconnects() {
    let Some(base) = postgres_base("a_lost_database_connection_is_a_503_then_reconnects") else {
        return;
    };
    let mut fleet = Fleet::start(&base, "lost", 1);
    let http = client();
    let list = || {
        http.get(fleet.url(0, "/jobs"))
            .bearer_auth(&fleet.token)
            .send()
            .unwrap()
    };
    assert_eq!(list().status(), 200);
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    let cut = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = 'fleet_lost'",
            &[],
        )
        .unwrap()
        .len();
    assert!(cut >= 1, "the server held a connection");
    let mut unavailable = 0;
    let recovered = wait_until(Duration::from_secs(20), || {
        let answer = list();
        match answer.status().as_u16() {
            200 => true,
            503 => {
                let body: Value = answer.json().unwrap();
                assert_eq!(body["error"]["code"], "service_unavailable", "{body}");
                unavailable += 1;
                false
            }
            other => panic!("answered {other}: {:?}", answer.text()),
        }
    });
    assert!(recovered, "the server reconnects");
    assert!(
        unavailable <= 8,
        "{unavailable} answers of 503 before reconnecting"
    );
    let (child, _) = fleet.servers[0].as_mut().unwrap();
    assert!(
        child.try_wait().unwrap().is_none(),
        "the server is still running"
    );
    // A write works again too.
    let created = http
        .post(fleet.url(0, "/jobs"))
        .bearer_auth(&fleet.token)
        .json(&json!({
            "url": "http://127.0.0.1:9/never",
            "scheduled_at": vouch::format_timestamp(now_ms() + 3_600_000),
        }))
        .send()
        .unwrap();
    assert_eq!(created.status(), 201);
    fleet.kill(0);
}

/// Three servers started at once on an empty database: one creates the tables and the key-check
/// row, the others find them, and all three serve.
#[test]
fn servers_starting_together_on_an_empty_database_all_serve() {
    let Some(base) = postgres_base("servers_starting_together_on_an_empty_database_all_serve")
    else {
        return;
    };
    let fleet = Fleet::configure(&base, "together");
    let config = fleet.config();
    let servers: Vec<(Child, String)> = std::thread::scope(|scope| {
        let starting: Vec<_> = (0..3)
            .map(|_| {
                let config = config.clone();
                scope.spawn(move || {
                    let mut command = Command::new(env!("CARGO_BIN_EXE_vouch"));
                    command.args(["serve", "--config"]).arg(config).args([
                        "--listen",
                        "127.0.0.1:0",
                        "--no-worker",
                    ]);
                    listening::spawn_serve(command)
                })
            })
            .collect();
        starting
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .collect()
    });
    let http = client();
    for (_, base_url) in &servers {
        let answer = http
            .get(format!("{base_url}/jobs"))
            .bearer_auth("not-a-key")
            .send()
            .unwrap();
        assert_eq!(answer.status(), 401, "{base_url} serves");
    }
    for (mut child, _) in servers {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    let checks: i64 = admin
        .query_one(
            &format!("SELECT COUNT(*) FROM {}.key_check", fleet.schema),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(checks, 1);
}
