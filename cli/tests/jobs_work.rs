//! `vouch jobs work` as a kiosk runs it: the built binary, a configuration and database on disk,
//! a real HTTP receiver on 127.0.0.1. The engine's clock is fixed in the configuration and moved
//! between runs, so leases and retry delays pass without waiting.

#[path = "../../tests/common/http.rs"]
mod http;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use http::Receiver;
use serde_json::{json, Value};

/// 2026-11-24T12:00:00Z.
const T0: i64 = 1_795_521_600_000;

struct Kiosk {
    _dir: tempfile::TempDir,
    config: PathBuf,
    token: String,
}

fn vouch(args: &[&str], config: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vouch"));
    command.args(args).arg("--config").arg(config);
    command
}

fn succeed(command: &mut Command) -> Output {
    let output = command.output().expect("vouch runs");
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

impl Kiosk {
    /// `vouch init`, the engine's clock fixed at `T0`, 127.0.0.0/8 opened for the receiver, a key.
    fn new() -> Kiosk {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("vouch.json");
        let db = dir.path().join("vouch.sqlite");
        let mut init = Command::new(env!("CARGO_BIN_EXE_vouch"));
        init.args(["init", "--config"])
            .arg(&config)
            .arg("--db")
            .arg(&db);
        succeed(&mut init);
        let mut kiosk = Kiosk {
            _dir: dir,
            config,
            token: String::new(),
        };
        kiosk.set_clock(T0);
        let key = succeed(vouch(&["keys"], &kiosk.config).args(["create", "--project", "p"]));
        let key: Value = serde_json::from_slice(&key.stdout).unwrap();
        kiosk.token = key["token"].as_str().unwrap().to_owned();
        kiosk
    }

    fn set_clock(&self, ms: i64) {
        let mut options: Value =
            serde_json::from_str(&std::fs::read_to_string(&self.config).unwrap()).unwrap();
        options["fixed_clock_ms"] = json!(ms);
        options["allow_private"] = json!(["127.0.0.0/8"]);
        std::fs::write(&self.config, options.to_string()).unwrap();
    }

    /// `vouch request`; returns the status and the JSON body.
    fn request(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut command = vouch(&["request", method, path], &self.config);
        command.args(["-H", &format!("Authorization: Bearer {}", self.token)]);
        if let Some(body) = body {
            command.args(["--json", &body.to_string()]);
        }
        let output = command.output().unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        let status = text[4..text.find('\n').unwrap()].parse().unwrap();
        let json_start = text.find("\n{").unwrap() + 1;
        (status, serde_json::from_str(&text[json_start..]).unwrap())
    }

    fn create_job(&self, url: &str, max_retries: u32) -> String {
        let (status, job) = self.request(
            "POST",
            "/jobs",
            Some(json!({
                "url": url,
                "scheduled_at": vouch::format_timestamp(T0 + 1_000),
                "max_retries": max_retries,
            })),
        );
        assert_eq!(status, 201, "{job}");
        job["id"].as_str().unwrap().to_owned()
    }

    fn work_until_idle(&self) -> Output {
        succeed(vouch(&["jobs"], &self.config).args(["work", "--until-idle"]))
    }
}

#[test]
fn a_worker_delivers_directly_whatever_proxy_the_environment_names() {
    let receiver = Receiver::start();
    let proxy = Receiver::start();
    let kiosk = Kiosk::new();
    let id = kiosk.create_job(&receiver.url("/hook"), 0);
    kiosk.set_clock(T0 + 2_000);
    let mut work = vouch(&["jobs"], &kiosk.config);
    work.args(["work", "--until-idle"]);
    for name in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "all_proxy",
    ] {
        work.env(name, proxy.url(""));
    }
    work.env_remove("NO_PROXY").env_remove("no_proxy");
    let output = succeed(&mut work);
    assert!(String::from_utf8_lossy(&output.stdout).contains("1 succeeded"));
    let seen = receiver.seen("/hook");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].headers["x-job-id"], id);
    assert!(proxy.all().is_empty(), "the call went through the proxy");
    let (_, job) = kiosk.request("GET", &format!("/jobs/{id}"), None);
    assert_eq!(job["status"], "success", "{job}");
    // A literal loopback address is refused at creation without the configuration's range.
    let mut options: Value =
        serde_json::from_str(&std::fs::read_to_string(&kiosk.config).unwrap()).unwrap();
    options.as_object_mut().unwrap().remove("allow_private");
    std::fs::write(&kiosk.config, options.to_string()).unwrap();
    let (status, error) = kiosk.request(
        "POST",
        "/jobs",
        Some(json!({ "url": receiver.url("/x"), "scheduled_at": vouch::format_timestamp(T0 + 9_000) })),
    );
    assert_eq!(status, 400);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("loopback"),
        "{error}"
    );
}

#[test]
fn a_worker_killed_mid_attempt_leaves_it_interrupted_retried_once_and_charged_once() {
    let receiver = Receiver::start();
    receiver.answer("/hook", &[http::HANG, 200]);
    let kiosk = Kiosk::new();
    succeed(vouch(&["credits"], &kiosk.config).args(["set", "--project", "p", "--balance", "10"]));
    let id = kiosk.create_job(&receiver.url("/hook"), 1);
    kiosk.set_clock(T0 + 2_000);
    let mut worker = vouch(&["jobs"], &kiosk.config)
        .arg("work")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while receiver.seen("/hook").is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the worker never called"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL while the receiver holds the call open: no code of the worker runs after this.
    worker.kill().unwrap();
    worker.wait().unwrap();
    let executions = |kiosk: &Kiosk| {
        kiosk
            .request("GET", &format!("/jobs/{id}/executions"), None)
            .1
    };
    let open = executions(&kiosk);
    assert_eq!(open["executions"][0]["status"], "running", "{open}");
    let credits = || {
        let output = succeed(vouch(&["credits"], &kiosk.config).args(["show", "--project", "p"]));
        serde_json::from_slice::<Value>(&output.stdout).unwrap()["balance"].clone()
    };
    assert_eq!(credits(), 9);
    // A restarted worker past the lease closes the attempt as interrupted and schedules the retry,
    // and after the retry delay sends it, once.
    kiosk.set_clock(T0 + 2_000 + 121_000);
    kiosk.work_until_idle();
    kiosk.set_clock(T0 + 2_000 + 121_000 + 3_600_000);
    kiosk.work_until_idle();
    let seen = receiver.seen("/hook");
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].headers["x-attempt"], "2");
    assert_eq!(
        seen[0].headers["idempotency-key"],
        seen[1].headers["idempotency-key"]
    );
    let done = executions(&kiosk);
    let list = done["executions"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{done}");
    assert_eq!(list[0]["status"], "interrupted", "{done}");
    assert_eq!(list[1]["status"], "success", "{done}");
    let (_, job) = kiosk.request("GET", &format!("/jobs/{id}"), None);
    assert_eq!(job["status"], "success", "{job}");
    assert_eq!(credits(), 8);
}

#[test]
fn the_load_command_delivers_every_job_it_creates_and_reports_the_rates() {
    let output = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(["jobs", "load", "--jobs", "300", "--workers", "2"])
        .output()
        .expect("vouch runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("creates:"), "{stdout}");
    assert!(
        stdout.contains("(") && stdout.contains("for 300 answered, 0 failed"),
        "{stdout}"
    );
    assert!(stdout.contains("over 300 executions"), "{stdout}");
}

#[test]
fn a_sim_swap_check_and_its_events_travel_through_the_worker() {
    let receiver = Receiver::start();
    receiver.reply_body("/camara/check", r#"{"swapped": true}"#);
    let kiosk = Kiosk::new();
    let mut options: Value =
        serde_json::from_str(&std::fs::read_to_string(&kiosk.config).unwrap()).unwrap();
    options["sim_swap"] = json!({ "check_url": receiver.url("/camara/check") });
    std::fs::write(&kiosk.config, options.to_string()).unwrap();
    let (status, hook) = kiosk.request(
        "POST",
        "/api-projects/webhooks",
        Some(json!({ "url": receiver.url("/events") })),
    );
    assert_eq!(status, 201, "{hook}");
    let (status, started) = kiosk.request("POST", "/api-gateway/sessions/start", None);
    assert_eq!(status, 200, "{started}");
    let session = started["data"].as_str().unwrap().to_owned();
    let output = succeed(
        vouch(
            &[
                "request",
                "POST",
                &format!("/api-gateway/sessions/end/{session}"),
            ],
            &kiosk.config,
        )
        .args(["-H", &format!("Authorization: Bearer {}", kiosk.token)])
        .args(["-H", "X-User-Fullname: alice"])
        .args(["--json", r#"{"phone_number": "+4915112345678"}"#]),
    );
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        printed.contains("\"sim_swap_check\": \"pending\""),
        "{printed}"
    );
    kiosk.work_until_idle();
    let checks = receiver.seen("/camara/check");
    assert_eq!(checks.len(), 1);
    assert!(checks[0]
        .body
        .contains("\"phoneNumber\":\"+4915112345678\""));
    let (_, result) = kiosk.request(
        "GET",
        &format!("/api-projects/sessions/{session}/sim-swap"),
        None,
    );
    assert_eq!(result["data"]["status"], "completed", "{result}");
    assert_eq!(result["data"]["swapped"], true);
    let types: Vec<String> = receiver
        .seen("/events")
        .iter()
        .map(|seen| {
            serde_json::from_str::<Value>(&seen.body).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(types, ["session.ended", "sim_swap.completed"]);
}
