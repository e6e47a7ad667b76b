//! `vouch serve` as a backend talks to it: the built binary on a free loopback port, a real HTTP
//! client (reqwest), real multipart uploads of the generated clip, a real job receiver on
//! 127.0.0.1, and a SIGTERM at the end.

#[path = "../../tests/common/http.rs"]
mod http;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http::Receiver;
use reqwest::blocking::{multipart, Client};
use serde_json::{json, Value};

struct Server {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
    token: String,
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

impl Server {
    /// `vouch init`, the repository's models, 127.0.0.0/8 opened for the job receiver, a key,
    /// then `vouch serve --listen 127.0.0.1:0`.
    fn start(models: bool) -> Server {
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
        options["allow_private"] = json!(["127.0.0.0/8"]);
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_vouch"))
            .args(["serve", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0", "--body-idle-timeout-s", "2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let address = line
            .trim()
            .strip_prefix("vouch serve: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Server {
            child,
            base: address,
            _dir: dir,
            token: key["token"].as_str().unwrap().to_owned(),
        }
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
    for path in ["/api-consent/consent", "/api-consent/strg-consent"] {
        let given = http
            .post(server.url(path))
            .header("Authorization", &bearer)
            .json(&json!({ "is_consent_given": true, "user_fullname": "alice" }))
            .send()
            .unwrap();
        assert_eq!(given.status(), 200);
    }
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
        wrong_host.contains("\"code\":\"misdirected_request\"") || wrong_host.contains("\"code\""),
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
