//! `vouch serve` as a backend talks to it: the built binary on a free loopback port, a real HTTP
//! client (reqwest), real multipart uploads of the generated clip, a real job receiver on
//! 127.0.0.1, and a SIGTERM at the end.

#[path = "../../tests/common/http.rs"]
mod http;
#[path = "support/listening.rs"]
mod listening;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use http::{Receiver, HANG, HOLD};
use reqwest::blocking::{multipart, Client};
use serde_json::{json, Value};

struct Server {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
    token: String,
}

/// The admin token the key-administration test serves with.
const ADMIN: &str = "admin-0123456789abcdef0123456789abcdef";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `--admin-token-file` with [`ADMIN`] written next to the configuration.
fn admin_args(dir: &Path) -> Vec<String> {
    let file = dir.join("admin-token");
    std::fs::write(&file, format!("{ADMIN}\n")).unwrap();
    vec![
        "--admin-token-file".to_owned(),
        file.to_string_lossy().into_owned(),
    ]
}

/// `vouch serve` on the configuration in `dir`, on a free loopback port; returns the process and
/// its base URL.
fn spawn(dir: &Path) -> (Child, String) {
    spawn_with(dir, &[])
}

/// [`spawn`] with more arguments.
fn spawn_with(dir: &Path, extra: &[&str]) -> (Child, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vouch"));
    command
        .args(["serve", "--config"])
        .arg(dir.join("vouch.json"))
        .args(["--listen", "127.0.0.1:0", "--body-idle-timeout-s", "2"])
        .args(admin_args(dir))
        .args(extra);
    listening::spawn_serve(command)
}

impl Server {
    /// `vouch init`, the repository's models, 127.0.0.0/8 opened for the job receiver, a key,
    /// then `vouch serve --listen 127.0.0.1:0`.
    fn start(models: bool) -> Server {
        Server::start_opening(models, true, &[])
    }

    /// [`Server::start`], with 127.0.0.0/8 opened in the configuration file or not, and more
    /// arguments to `vouch serve`.
    fn start_opening(models: bool, config_opens_loopback: bool, extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("vouch.json");
        let status = Command::new(env!("CARGO_BIN_EXE_vouch"))
            .args(["init", "--config"])
            .arg(&config)
            .arg("--db")
            .arg(dir.path().join("vouch.sqlite"))
            .status()
            .unwrap();
        assert!(status.success());
        let mut options: Value =
            serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
        if config_opens_loopback {
            options["allow_private"] = json!(["127.0.0.0/8"]);
        }
        if models {
            options["models_dir"] = json!(repository().join("models"));
        }
        std::fs::write(&config, options.to_string()).unwrap();
        let key = Command::new(env!("CARGO_BIN_EXE_vouch"))
            .args(["keys", "--config"])
            .arg(&config)
            .args(["create", "--project", "p"])
            .output()
            .unwrap();
        let key: Value = serde_json::from_slice(&key.stdout).unwrap();
        let (child, base) = spawn_with(dir.path(), extra);
        Server {
            child,
            base,
            _dir: dir,
            token: key["token"].as_str().unwrap().to_owned(),
        }
    }

    fn config(&self) -> PathBuf {
        self._dir.path().join("vouch.json")
    }

    /// Edits the configuration.
    fn configure(&self, change: impl FnOnce(&mut Value)) {
        let mut options: Value =
            serde_json::from_str(&std::fs::read_to_string(self.config()).unwrap()).unwrap();
        change(&mut options);
        std::fs::write(self.config(), options.to_string()).unwrap();
    }

    /// `kill -9`, then `change` the configuration and start again on the same database.
    fn kill_and_restart(&mut self, change: impl FnOnce(&mut Value)) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.configure(change);
        let (child, base) = spawn(self._dir.path());
        self.child = child;
        self.base = base;
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn port(&self) -> u16 {
        self.base.rsplit(':').next().unwrap().parse().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Gives alice both consents.
fn give_both_consents(http: &Client, server: &Server, bearer: &str) {
    for path in ["/api-consent/consent", "/api-consent/strg-consent"] {
        let given = http
            .post(server.url(path))
            .header("Authorization", bearer)
            .json(&json!({ "is_consent_given": true, "user_fullname": "alice" }))
            .send()
            .unwrap();
        assert_eq!(given.status(), 200);
    }
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(120))
        .no_proxy()
        .build()
        .unwrap()
}

/// Sends raw bytes and returns the raw answer (for what a well-behaved client cannot send).
fn raw(port: u16, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(bytes).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

#[test]
fn the_verification_flow_runs_over_http_with_multipart_uploads() {
    let server = Server::start(true);
    let http = client();
    let bearer = format!("Bearer {}", server.token);
    let started = http
        .post(server.url("/api-gateway/sessions/start"))
        .header("Authorization", &bearer)
        .send()
        .unwrap();
    assert_eq!(started.status(), 200);
    assert!(started.headers().get("x-request-id").is_some());
    let session = started.json::<Value>().unwrap()["data"]
        .as_str()
        .unwrap()
        .to_owned();
    give_both_consents(&http, &server, &bearer);
    let video = std::fs::read(repository().join("tests/media/photo_speaking.mp4")).unwrap();
    let form = multipart::Form::new()
        .part(
            "video",
            multipart::Part::bytes(video)
                .file_name("clip.mp4")
                .mime_str("video/mp4")
                .unwrap(),
        )
        .text("phrase", "please verify me now");
    let processed = http
        .post(server.url("/api-gateway/process-video"))
        .header("Authorization", &bearer)
        .header("X-User-Fullname", "alice")
        .header("X-Session-ID", &session)
        .multipart(form)
        .send()
        .unwrap();
    assert_eq!(processed.status(), 200);
    let body: Value = processed.json().unwrap();
    // The generated clip is a photo with a synthetic voice: not live, so it fails.
    assert_eq!(body["scoring_result"]["status"], "fail", "{body}");
    assert!(
        body["data"]["Face Liveness Detection"].is_object(),
        "{body}"
    );

    // A 60 MB upload is refused when its 50 MB are exceeded, in the engine's words.
    let big = multipart::Form::new()
        .part(
            "video",
            multipart::Part::bytes(vec![0u8; 60 * 1024 * 1024]).file_name("big.mp4"),
        )
        .text("phrase", "x");
    let refused = http
        .post(server.url("/api-gateway/process-video"))
        .header("Authorization", &bearer)
        .header("X-User-Fullname", "alice")
        .multipart(big)
        .send()
        .unwrap();
    assert_eq!(refused.status(), 400);
    assert_eq!(
        refused.json::<Value>().unwrap(),
        json!({ "error": "file size exceeds 50MB" })
    );

    // Malformed multipart and a foreign Host are JSON errors with a request id.
    let malformed = http
        .post(server.url("/api-gateway/process-video"))
        .header("Authorization", &bearer)
        .header("Content-Type", "multipart/form-data; boundary=zzz")
        .body("--zzz\r\nContent-Disposition: form-data; name=\"video\"\r\n\r\nabc")
        .send()
        .unwrap();
    assert_eq!(malformed.status(), 400);
    assert!(malformed.headers().get("x-request-id").is_some());
    assert!(malformed.json::<Value>().unwrap()["error"]
        .as_str()
        .unwrap()
        .starts_with("malformed multipart body"));
    let rebinding = raw(
        server.port(),
        b"GET /api-transactions/transactions HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
    );
    assert!(rebinding.starts_with("HTTP/1.1 421"), "{rebinding}");
    assert!(rebinding.contains("is not served here"), "{rebinding}");
}

/// `vouch <command> --config <config> <rest>`, its output parsed as JSON.
fn cli_json(config: &Path, args: &[&str]) -> Value {
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
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "vouch {args:?} printed no JSON ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn the_attempt_limit_holds_over_http_across_processes_and_the_cli_resets_it() {
    let server = Server::start(true);
    let http = client();
    let bearer = format!("Bearer {}", server.token);
    // The project holds a user back after one failed decision (the default is 10).
    let mut rules = cli_json(&server.config(), &["rules", "default"]);
    rules["id"] = json!("one-try");
    rules["attempt_limit"] = json!(1);
    let file = server._dir.path().join("rules.json");
    std::fs::write(&file, rules.to_string()).unwrap();
    let stored = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(["rules", "--config"])
        .arg(server.config())
        .args(["set", "--project", "p"])
        .arg(&file)
        .status()
        .unwrap();
    assert!(stored.success());
    give_both_consents(&http, &server, &bearer);
    // alice is enrolled (a failure can only be a guess against something enrolled).
    let media = |name: &str| std::fs::read(repository().join("tests/media").join(name)).unwrap();
    let enrolments = [
        (
            "/api-gateway/enroll/face",
            multipart::Form::new().part(
                "face",
                multipart::Part::bytes(media("face_astronaut.png")).file_name("face.png"),
            ),
        ),
        (
            "/api-gateway/enroll/voice",
            multipart::Form::new()
                .part(
                    "voice",
                    multipart::Part::bytes(media("speech.wav")).file_name("speech.wav"),
                )
                .text("phrase", "my voice is my password"),
        ),
    ];
    for (path, form) in enrolments {
        let enrolled = http
            .post(server.url(path))
            .header("Authorization", &bearer)
            .header("X-User-Fullname", "alice")
            .multipart(form)
            .send()
            .unwrap();
        assert_eq!(enrolled.status(), 200, "{path}: {:?}", enrolled.text());
    }
    let present = || {
        let form = multipart::Form::new()
            .part(
                "video",
                multipart::Part::bytes(media("photo_speaking.mp4")).file_name("clip.mp4"),
            )
            .text("phrase", "please verify me now");
        let response = http
            .post(server.url("/api-gateway/process-video"))
            .header("Authorization", &bearer)
            .header("X-User-Fullname", "alice")
            .multipart(form)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|value| value.to_str().unwrap().parse::<i64>().unwrap());
        (retry_after, response.json::<Value>().unwrap())
    };
    // A photo: the models run, the decision fails, and the failure starts a 30 s wait.
    let (retry_after, body) = present();
    assert_eq!(body["scoring_result"]["status"], "fail", "{body}");
    assert!(
        body["data"]["Face Liveness Detection"].is_object(),
        "{body}"
    );
    // The wait starts when the attempt is counted, before the models run: the answer gives
    // what is left of it (a phrase tiny.en rejects also loads the multilingual model, about a
    // second, the first time).
    assert!(
        retry_after.is_some_and(|s| (25..=30).contains(&s)),
        "{retry_after:?} {body}"
    );
    assert_eq!(
        body["scoring_result"]["hold"]["retry_after_s"].as_i64(),
        retry_after,
        "{body}"
    );
    assert!(body["decision_reasons"]
        .as_array()
        .unwrap()
        .contains(&json!("attempts_exceeded")));
    // Held back: answered at once, nothing ran.
    let (retry_after, body) = present();
    assert_eq!(body["scoring_result"]["status"], "fail");
    assert_eq!(body["data"], json!({}), "{body}");
    assert_eq!(body["decision_reasons"], json!(["attempts_exceeded"]));
    assert_eq!(body["score"], 0.0);
    assert!(matches!(retry_after, Some(1..=30)), "{retry_after:?}");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .starts_with("too many failed attempts"));
    // The counter is in the database: another process sees it and resets it.
    let shown = cli_json(
        &server.config(),
        &["attempts", "show", "--project", "p", "--user", "alice"],
    );
    assert_eq!(shown["failures"], 1, "{shown}");
    assert_eq!(shown["limit"], 1);
    assert_eq!(shown["events"][0]["event"], "hold", "{shown}");
    let reset = cli_json(
        &server.config(),
        &["attempts", "reset", "--project", "p", "--user", "alice"],
    );
    assert_eq!(reset["failures"], 0, "{reset}");
    assert_eq!(reset["held_until"], Value::Null);
    let read = http
        .get(server.url("/api-gateway/attempts"))
        .header("Authorization", &bearer)
        .header("X-User-Fullname", "alice")
        .send()
        .unwrap();
    assert_eq!(read.status(), 200);
    let read: Value = read.json().unwrap();
    assert_eq!(read["data"]["failures"], 0, "{read}");
    assert_eq!(read["data"]["events"][0]["event"], "reset", "{read}");
    assert_eq!(read["data"]["events"][1]["event"], "hold", "{read}");
    // After the reset the models run again.
    let (_, body) = present();
    assert!(
        body["data"]["Face Liveness Detection"].is_object(),
        "{body}"
    );
    // The backend's reset over HTTP is recorded like every gateway call.
    let reset = http
        .post(server.url("/api-gateway/attempts/reset"))
        .header("Authorization", &bearer)
        .header("X-User-Fullname", "alice")
        .send()
        .unwrap();
    assert_eq!(reset.status(), 200);
    let request_id = reset.headers()["x-request-id"].to_str().unwrap().to_owned();
    let reset: Value = reset.json().unwrap();
    assert_eq!(reset["message"], "attempts reset");
    assert_eq!(reset["data"]["failures"], 0);
    let row = http
        .get(server.url(&format!("/api-transactions/transactions/{request_id}")))
        .header("Authorization", &bearer)
        .send()
        .unwrap();
    assert_eq!(row.status(), 200);
    let row: Value = row.json().unwrap();
    assert_eq!(
        row["data"]["endpoint"], "/api-gateway/attempts/reset",
        "{row}"
    );
}

#[test]
fn jobs_are_created_over_http_and_delivered_by_the_servers_worker_and_sigterm_stops_cleanly() {
    let receiver = Receiver::start();
    let mut server = Server::start(false);
    let http = client();
    let bearer = format!("Bearer {}", server.token);
    let due = std::time::SystemTime::now() + Duration::from_secs(1);
    let due_ms = due
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let created = http
        .post(server.url("/jobs"))
        .header("Authorization", &bearer)
        .json(&json!({
            "url": receiver.url("/target"),
            "scheduled_at": vouch::format_timestamp(due_ms),
            "body": "hello",
        }))
        .send()
        .unwrap();
    assert_eq!(created.status(), 201);
    let id = created.json::<Value>().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while receiver.seen("/target").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(receiver.seen("/target")[0].headers["x-job-id"], id);
    // A job's body may be 256 KiB (docs/jobs.md) however much JSON escaping lengthens it; one
    // byte more is the job's own 400; a request body past 2 MiB is 413.
    let later = vouch::format_timestamp(due_ms + 3_600_000);
    let create = |body: &str| {
        http.post(server.url("/jobs"))
            .header("Authorization", &bearer)
            .json(&json!({ "url": receiver.url("/big"), "scheduled_at": later, "body": body }))
            .send()
            .unwrap()
    };
    assert_eq!(create(&"\"".repeat(256 * 1024)).status(), 201);
    let over = create(&"x".repeat(256 * 1024 + 1));
    assert_eq!(over.status(), 400);
    let huge = http
        .post(server.url("/jobs"))
        .header("Authorization", &bearer)
        .header("Content-Type", "application/json")
        .body(vec![b'x'; 2 * 1024 * 1024 + 10])
        .send()
        .unwrap();
    assert_eq!(huge.status(), 413);
    assert!(huge
        .text()
        .unwrap()
        .contains("request body is larger than 2097152 bytes"));
    // Job-spec errors keep the job shape, also when the server answers itself.
    let missing = http
        .get(server.url("/jobs/job_nope"))
        .header("Authorization", &bearer)
        .send()
        .unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(
        missing.json::<Value>().unwrap()["error"]["code"],
        "not_found"
    );
    let wrong_host = raw(
        server.port(),
        b"GET /jobs HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
    );
    assert!(
        wrong_host.contains("\"code\":\"misdirected_request\""),
        "{wrong_host}"
    );

    // A slow body is cut off; the server keeps serving.
    let slow = raw(
        server.port(),
        format!(
            "POST /jobs HTTP/1.1\r\nHost: {}\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{{",
            server.base.trim_start_matches("http://")
        )
        .as_bytes(),
    );
    assert!(slow.starts_with("HTTP/1.1 400"), "{slow}");

    // SIGTERM: the server stops accepting, finishes and exits 0.
    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mut rest = String::new();
    server
        .child
        .stdout
        .as_mut()
        .unwrap()
        .read_to_string(&mut rest)
        .unwrap();
    assert!(rest.contains("vouch serve: stopped"), "{rest}");
}

/// One project's slow receiver holds up only its own jobs: with 20 of its calls held unanswered by
/// the receiver, another project's job made due later is still delivered by the server's worker.
#[test]
fn a_slow_receiver_holds_up_no_other_project_over_http() {
    let slow = Receiver::start();
    let fast = Receiver::start();
    let server = Server::start(false);
    let http = client();
    let admin = format!("Bearer {ADMIN}");
    let other: Value = http
        .post(server.url("/api-projects/api-keys"))
        .header("Authorization", &admin)
        .json(&json!({ "project_id": "other" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let other = format!("Bearer {}", other["data"]["token"].as_str().unwrap());
    let create = |bearer: &str, url: String| {
        let soon = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
            + 200;
        let made = http
            .post(server.url("/jobs"))
            .header("Authorization", bearer)
            .json(&json!({ "url": url, "scheduled_at": vouch::format_timestamp(soon) }))
            .send()
            .unwrap();
        assert_eq!(made.status(), 201);
    };
    slow.answer("/slow", &[HOLD; 20]);
    let mine = format!("Bearer {}", server.token);
    for _ in 0..20 {
        create(&mine, slow.url("/slow"));
    }
    wait_for("the slow project's first calls", || {
        !slow.seen("/slow").is_empty()
    });
    create(&other, fast.url("/fast"));
    wait_for("the other project's call", || {
        !fast.seen("/fast").is_empty()
    });
    // Held at its project's limit: no more of the slow project's calls went out meanwhile.
    let held = slow.seen("/slow").len();
    slow.release();
    assert!(held <= 16, "{held} calls of one project in flight");
}

/// `--allow-private` opens a range for the create-time checks as well as for delivery, as the
/// same range in the configuration file does; without either, a loopback job is refused at once.
#[test]
fn the_allow_private_flag_opens_creation_and_delivery_alike() {
    let receiver = Receiver::start();
    let http = client();
    let job = json!({
        "url": receiver.url("/flagged"),
        "scheduled_at": vouch::format_timestamp(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64
                + 500,
        ),
        "body": "over the flag",
    });

    let create = |server: &Server| {
        http.post(server.url("/jobs"))
            .header("Authorization", format!("Bearer {}", server.token))
            .json(&job)
            .send()
            .unwrap()
    };

    let closed = Server::start_opening(false, false, &[]);
    let refused = create(&closed);
    assert_eq!(refused.status(), 400);
    let text = refused.text().unwrap();
    assert!(text.contains("loopback"), "{text}");
    drop(closed);

    let flagged = Server::start_opening(false, false, &["--allow-private", "127.0.0.0/8"]);
    let created = create(&flagged);
    assert_eq!(
        created.status(),
        201,
        "{}",
        created.text().unwrap_or_default()
    );
    wait_for("the flagged job's delivery", || {
        !receiver.seen("/flagged").is_empty()
    });
    assert_eq!(receiver.seen("/flagged")[0].body, "over the flag");
}

#[test]
fn keys_are_administered_over_http_with_the_admin_token_only() {
    let server = Server::start(false);
    let http = client();
    let admin = format!("Bearer {ADMIN}");
    // A project key is not an admin credential.
    for authorization in [format!("Bearer {}", server.token), "Bearer nope".to_owned()] {
        let refused = http
            .get(server.url("/api-projects/api-keys?project_id=p"))
            .header("Authorization", authorization)
            .send()
            .unwrap();
        assert_eq!(refused.status(), 401);
    }
    let created = http
        .post(server.url("/api-projects/api-keys"))
        .header("Authorization", &admin)
        .json(&json!({ "project_id": "q", "selected_services": ["Face Recognition"], "label": "kiosk" }))
        .send()
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().unwrap();
    let token = created["data"]["token"].as_str().unwrap().to_owned();
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    let start = |token: &str| {
        http.post(server.url("/api-gateway/sessions/start"))
            .header("Authorization", format!("Bearer {token}"))
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(start(&token), 200);
    // Without selected_services a key gets all five, as `vouch keys create` gives; [] gives none.
    let services_of = |body: Value| {
        let made: Value = http
            .post(server.url("/api-projects/api-keys"))
            .header("Authorization", &admin)
            .json(&body)
            .send()
            .unwrap()
            .json()
            .unwrap();
        made["data"]["selected_services"].as_array().unwrap().len()
    };
    assert_eq!(services_of(json!({ "project_id": "r" })), 5);
    // A service name the spec does not have, or in another case, is refused when the key is made.
    let wrong = http
        .post(server.url("/api-projects/api-keys"))
        .header("Authorization", &admin)
        .json(&json!({ "project_id": "r", "selected_services": ["face recognition"] }))
        .send()
        .unwrap();
    assert_eq!(wrong.status(), 400);
    assert!(wrong
        .text()
        .unwrap()
        .contains("unknown service \\\"face recognition\\\""));
    assert_eq!(
        services_of(json!({ "project_id": "r", "selected_services": [] })),
        0
    );
    let listed: Value = http
        .get(server.url("/api-projects/api-keys?project_id=q"))
        .header("Authorization", &admin)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    // Credits and scoring rules beside the keys, behind the same token.
    let send = |method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut request = http
            .request(method, server.url(path))
            .header("Authorization", &admin);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().unwrap();
        let status = response.status().as_u16();
        (status, response.json::<Value>().unwrap_or(Value::Null))
    };
    let (status, unmetered) = send(
        reqwest::Method::GET,
        "/api-projects/credits?project_id=q",
        None,
    );
    assert_eq!(status, 404, "{unmetered}");
    let (status, set) = send(
        reqwest::Method::PUT,
        "/api-projects/credits?project_id=q",
        Some(json!({ "balance": 3, "plan": "trial", "daily_limit": 2 })),
    );
    assert_eq!(status, 200, "{set}");
    let (_, read) = send(
        reqwest::Method::GET,
        "/api-projects/credits?project_id=q",
        None,
    );
    assert_eq!(
        read["data"],
        json!({ "balance": 3, "plan": "trial", "daily_limit": 2 })
    );
    let usage: Value = http
        .get(server.url("/stats/usage"))
        .header("Authorization", format!("Bearer {token}"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        (usage["balance"].clone(), usage["plan"].clone()),
        (json!(3), json!("trial"))
    );
    let (status, _) = send(
        reqwest::Method::PUT,
        "/api-projects/credits?project_id=q",
        Some(json!({ "balance": 3 })),
    );
    assert_eq!(status, 400);
    let mut rules: Value =
        serde_json::from_str(&vouch::RuleSet::default_rules().to_json()).unwrap();
    rules["id"] = json!("strict");
    let (status, stored) = send(
        reqwest::Method::PUT,
        "/api-projects/scoring-rules?project_id=q&scores_id=gold",
        Some(rules.clone()),
    );
    assert_eq!(status, 200, "{stored}");
    let (status, read) = send(
        reqwest::Method::GET,
        "/api-projects/scoring-rules?project_id=q&scores_id=gold",
        None,
    );
    assert_eq!((status, read["data"]["id"].clone()), (200, json!("strict")));
    let (status, _) = send(
        reqwest::Method::GET,
        "/api-projects/scoring-rules?project_id=q",
        None,
    );
    assert_eq!(status, 404);
    rules["min_score"] = json!(170);
    let (status, refused) = send(
        reqwest::Method::PUT,
        "/api-projects/scoring-rules?project_id=q",
        Some(rules),
    );
    assert_eq!(status, 400, "{refused}");
    // A project key is not the admin token here either.
    let refused = http
        .get(server.url("/api-projects/credits?project_id=q"))
        .header("Authorization", format!("Bearer {token}"))
        .send()
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert!(
        !listed.to_string().contains(&token),
        "a listing shows no token"
    );
    let revoked = http
        .delete(server.url(&format!("/api-projects/api-keys/{id}?project_id=q")))
        .header("Authorization", &admin)
        .send()
        .unwrap();
    assert_eq!(revoked.status(), 200);
    assert_ne!(start(&token), 200, "a revoked key is refused");
    let unknown = http
        .post(server.url("/api-projects/api-keys"))
        .header("Authorization", &admin)
        .json(&json!({ "project": "q" }))
        .send()
        .unwrap();
    assert_eq!(unknown.status(), 400);
}

/// 2026-11-24T12:00:00Z.
const T0: i64 = 1_795_521_600_000;

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_server_killed_mid_delivery_restarts_with_the_attempt_interrupted_and_retried_once() {
    let receiver = Receiver::start();
    receiver.answer("/slow", &[HANG, 200]);
    let mut server = Server::start(false);
    let http = client();
    let bearer = format!("Bearer {}", server.token);
    // The engine's clock is fixed in the configuration and moved between runs.
    server.kill_and_restart(|options| options["fixed_clock_ms"] = json!(T0));
    let created = http
        .post(server.url("/jobs"))
        .header("Authorization", &bearer)
        .json(&json!({
            "url": receiver.url("/slow"),
            "scheduled_at": vouch::format_timestamp(T0 + 1_000),
            "max_retries": 3,
        }))
        .send()
        .unwrap();
    assert_eq!(created.status(), 201);
    let id = created.json::<Value>().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Due now: the worker sends it and the receiver never answers; kill -9 mid-attempt.
    server.kill_and_restart(|options| options["fixed_clock_ms"] = json!(T0 + 2_000));
    wait_for("the first attempt", || receiver.seen("/slow").len() == 1);
    // After the lease: the attempt is closed as interrupted and retried, once.
    server.kill_and_restart(|options| {
        options["fixed_clock_ms"] = json!(T0 + 2_000 + 120_001);
    });
    wait_for("the retry", || receiver.seen("/slow").len() == 2);
    let seen = receiver.seen("/slow");
    assert_eq!(seen[0].headers["x-attempt"], "1");
    assert_eq!(seen[1].headers["x-attempt"], "2");
    assert_eq!(
        seen[0].headers["idempotency-key"],
        seen[1].headers["idempotency-key"]
    );
    let executions: Value = http
        .get(server.url(&format!("/jobs/{id}/executions")))
        .header("Authorization", &bearer)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let statuses: Vec<&str> = executions["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|execution| execution["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["interrupted", "success"], "{executions}");
    // Nothing more is sent.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(receiver.seen("/slow").len(), 2);
}

#[test]
fn a_server_killed_during_enrollments_keeps_every_answered_one_and_no_half_row() {
    let mut server = Server::start(true);
    let http = client();
    let bearer = format!("Bearer {}", server.token);
    give_both_consents(&http, &server, &bearer);
    let face = std::fs::read(repository().join("tests/media/face_astronaut.png")).unwrap();
    let enroll = move |base: &str| {
        let form = multipart::Form::new().part(
            "face",
            multipart::Part::bytes(face.clone())
                .file_name("face.png")
                .mime_str("image/png")
                .unwrap(),
        );
        client()
            .post(format!("{base}/api-gateway/enroll/face"))
            .header("Authorization", &bearer)
            .header("X-User-Fullname", "alice")
            .multipart(form)
            .send()
    };
    // Enroll in a loop on another thread and kill the server under it.
    let base = server.base.clone();
    let enroll_loop = enroll.clone();
    let answered = std::thread::spawn(move || {
        let mut ok = 0;
        while let Ok(response) = enroll_loop(&base) {
            if response.status() == 200 {
                ok += 1;
            }
        }
        ok
    });
    std::thread::sleep(Duration::from_millis(1500));
    server.kill_and_restart(|_| {});
    let ok: i64 = answered.join().unwrap();
    assert!(ok > 0, "no enrollment finished before the kill");
    // Every answered enrollment is there; at most the one in flight was also stored.
    let response = enroll(&server.base).unwrap();
    assert_eq!(response.status(), 200);
    let templates = response.json::<Value>().unwrap()["data"]["templates"]
        .as_i64()
        .unwrap();
    assert!(
        templates == ok + 1 || templates == ok + 2,
        "{ok} answered before the kill, {templates} templates after one more"
    );
}

#[test]
fn the_openapi_document_lists_exactly_what_the_server_routes() {
    let server = Server::start(false);
    let http = client();
    let response = http.get(server.url("/openapi.json")).send().unwrap();
    assert_eq!(response.status(), 200);
    let document: Value = response.json().unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let paths = document["paths"].as_object().unwrap();
    assert!(paths.len() >= 25, "{}", paths.len());
    for (template, item) in paths {
        let path = template
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    "id_1"
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        for method in item.as_object().unwrap().keys() {
            // Without credentials every documented operation is routed (401 or 403), never
            // "no endpoint" (404) or a wrong method (405).
            let answer = http
                .request(
                    reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).unwrap(),
                    server.url(&path),
                )
                .send()
                .unwrap();
            let status = answer.status().as_u16();
            assert!(
                status == 401 || status == 403 || status == 500,
                "{method} {path}: {status} {}",
                answer.text().unwrap()
            );
        }
    }
}

#[test]
fn https_from_the_config_and_cors_for_the_configured_origin_only() {
    let mut server = Server::start(false);
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let dir = server._dir.path().to_owned();
    std::fs::write(dir.join("cert.pem"), certified.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), certified.key_pair.serialize_pem()).unwrap();
    server.kill_and_restart(|options| {
        options["serve"] = json!({
            "tls": { "cert_file": dir.join("cert.pem"), "key_file": dir.join("key.pem") },
            "cors": { "allowed_origins": ["https://kiosk.example"], "max_age_s": 60 },
        });
    });
    assert!(
        server.base.starts_with("https://127.0.0.1:"),
        "{}",
        server.base
    );
    let https = Client::builder()
        .timeout(Duration::from_secs(30))
        .no_proxy()
        .tls_built_in_root_certs(false)
        .add_root_certificate(
            reqwest::Certificate::from_pem(certified.cert.pem().as_bytes()).unwrap(),
        )
        .build()
        .unwrap();
    let localhost = format!("https://localhost:{}", server.port());
    let started = https
        .post(format!("{localhost}/api-gateway/sessions/start"))
        .header("Authorization", format!("Bearer {}", server.token))
        .header("Origin", "https://kiosk.example")
        .send()
        .unwrap();
    assert_eq!(started.status(), 200);
    assert_eq!(
        started.headers()["access-control-allow-origin"],
        "https://kiosk.example"
    );
    assert_eq!(
        started.headers()["access-control-expose-headers"],
        "x-request-id"
    );
    assert_eq!(started.headers()["vary"], "Origin");
    // Plain HTTP to the TLS port gets no answer.
    assert!(client()
        .get(format!("http://127.0.0.1:{}/openapi.json", server.port()))
        .send()
        .is_err());

    let preflight = |origin: &str| {
        https
            .request(
                reqwest::Method::OPTIONS,
                format!("{localhost}/api-gateway/process-video"),
            )
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "POST")
            .header(
                "Access-Control-Request-Headers",
                "authorization, x-user-fullname",
            )
            .send()
            .unwrap()
    };
    let allowed = preflight("https://kiosk.example");
    assert_eq!(allowed.status(), 204);
    let headers = allowed.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://kiosk.example"
    );
    assert!(headers["access-control-allow-methods"]
        .to_str()
        .unwrap()
        .contains("POST"));
    assert!(headers["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .contains("x-user-fullname"));
    assert_eq!(headers["access-control-max-age"], "60");
    let other = preflight("https://evil.example");
    assert_eq!(other.status(), 403);
    assert!(other.headers().get("access-control-allow-origin").is_none());
    assert!(other.text().unwrap().contains("may not call this server"));
    let cross = https
        .get(format!("{localhost}/openapi.json"))
        .header("Origin", "https://evil.example")
        .send()
        .unwrap();
    assert_eq!(cross.status(), 200);
    assert!(cross.headers().get("access-control-allow-origin").is_none());
}

/// The head of a multipart upload to docauth/check whose file part is `size` bytes, with the
/// key `token` (none when empty).
fn upload_head(port: u16, token: &str, size: usize) -> (Vec<u8>, Vec<u8>) {
    let open = b"--XyZ\r\nContent-Disposition: form-data; name=\"document\"; filename=\"d.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n";
    let close = b"\r\n--XyZ--\r\n";
    let head = format!(
        "POST /api-gateway/docauth/check HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{}Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if token.is_empty() { String::new() } else { format!("Authorization: Bearer {token}\r\n") },
        open.len() + size + close.len()
    );
    let mut start = head.into_bytes();
    start.extend_from_slice(open);
    (start, close.to_vec())
}

#[test]
fn uploads_beyond_the_configured_concurrency_wait_their_turn() {
    let mut server = Server::start(false);
    server.kill_and_restart(|options| options["serve"] = json!({ "max_concurrent_uploads": 1 }));
    let port = server.port();
    // The first upload holds the only turn while its body is still arriving.
    let (start, close) = upload_head(port, &server.token, 2000);
    let mut first = TcpStream::connect(("127.0.0.1", port)).unwrap();
    first.write_all(&start).unwrap();
    first.write_all(&[0u8; 1000]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The second, complete, is not answered while the first is being read...
    let (start, end) = upload_head(port, &server.token, 10);
    let mut second = TcpStream::connect(("127.0.0.1", port)).unwrap();
    second
        .set_read_timeout(Some(Duration::from_millis(800)))
        .unwrap();
    second.write_all(&start).unwrap();
    second.write_all(&[0u8; 10]).unwrap();
    second.write_all(&end).unwrap();
    let mut byte = [0u8; 1];
    let waited = second.read(&mut byte);
    assert!(
        waited.as_ref().is_err_and(|error| matches!(
            error.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        )),
        "the second upload was answered while the first held the turn: {waited:?}"
    );
    // ...and is answered once the first is done.
    first.write_all(&[0u8; 1000]).unwrap();
    first.write_all(&close).unwrap();
    // Both are the engine's answers to what they sent (zeros are no image), not a 503.
    let mut answer = String::new();
    first.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    second
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut answer = String::new();
    second.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");

    // An upload without a key does not wait for the turn, is not read, and gets the engine's
    // 401 at once, while the body (announced as 50 MB) is still to come.
    let (start, _) = upload_head(port, "", 50 * 1024 * 1024 - 500);
    let mut holder = TcpStream::connect(("127.0.0.1", port)).unwrap();
    holder
        .write_all(&upload_head(port, &server.token, 5000).0)
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut anonymous = TcpStream::connect(("127.0.0.1", port)).unwrap();
    anonymous
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    anonymous.write_all(&start).unwrap();
    let mut answer = vec![0u8; 4096];
    let read = anonymous.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    drop(holder);
}

#[test]
fn the_files_of_one_body_are_bounded_together() {
    let server = Server::start(false);
    let port = server.port();
    // Two 40 MB files: each under the 50 MB limit, together over 50 + 20 MB.
    let file = |name: &str| {
        format!("--XyZ\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}.mp4\"\r\nContent-Type: video/mp4\r\n\r\n")
    };
    let size = 40 * 1024 * 1024;
    let length = 2 * (file("video").len() + size + 2) + "--XyZ--\r\n".len();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "POST /api-gateway/match-faces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {}\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n",
        server.token
    )
    .unwrap();
    let zeros = vec![0u8; size];
    for name in ["video", "image"] {
        stream.write_all(file(name).as_bytes()).unwrap();
        if stream.write_all(&zeros).is_err() {
            break;
        }
        let _ = stream.write_all(b"\r\n");
    }
    let _ = stream.write_all(b"--XyZ--\r\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("at most 70 MB in all"), "{answer}");
}
