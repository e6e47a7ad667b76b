//! Shared helpers for the integration tests: engines on real SQLite files in a temp dir, keys,
//! request builders and exact-error assertions.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

pub mod http;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Value};
use tempfile::TempDir;
use vouch::api::{Request, Response};
use vouch::service::keys::{CreatedApiKey, NewApiKey};
use vouch::ApiKeyOptions;
use vouch::ManualClock;
use vouch::{Engine, EngineOptions};
use vouch::{KeyClaims, KeyVerifier};

/// Base64 of the bytes 0..32.
pub const TEMPLATE_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
/// A 32-byte HS256 secret ("secret-secret-secret-secret-secret"), base64.
pub const SECRET: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==";
/// 2026-11-21T10:32:05.123Z.
pub const START_MS: i64 = 1_795_257_125_123;
pub const START_TEXT: &str = "2026-11-21T10:32:05.123Z";

pub const FACE_AND_VOICE: &[&str] = &["Face Recognition", "Voice Recognition"];

/// The five recognition services, in the spec's order.
pub const ALL_SERVICES: &[&str] = &[
    "Active Speaker Detection",
    "Visual Speech Recognition",
    "Face Liveness Detection",
    "Voice Recognition",
    "Face Recognition",
];

/// A file of `tests/media`.
pub fn media(name: &str) -> Vec<u8> {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/media")).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A second HS256 secret, different from [`SECRET`].
pub fn other_secret() -> String {
    b64(&[0x5a; 32])
}

/// A second template key, different from [`TEMPLATE_KEY`].
pub fn other_template_key() -> String {
    b64(&[0xa5; 32])
}

/// `../shared/data/<folder>` (the development data), or `None` after saying loudly on stderr that
/// `test` did not run without it.
pub fn shared_data(folder: &str, test: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(folder);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("NOTE: {} not found: {test} did not run", dir.display());
        None
    }
}

/// A database file in its own temp dir; the dir lives as long as the value.
pub struct Db {
    pub dir: TempDir,
    pub path: PathBuf,
}

impl Db {
    pub fn new() -> Db {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("vouch.sqlite");
        Db { dir, path }
    }

    pub fn path_str(&self) -> &str {
        self.path.to_str().expect("utf-8 temp path")
    }

    pub fn options(&self) -> EngineOptions {
        options(self.path_str(), TEMPLATE_KEY, Some(SECRET))
    }

    /// Opens an engine on the file with the system clock.
    pub fn open(&self) -> Engine {
        Engine::open(self.options()).expect("engine opens")
    }

    /// Opens an engine on the file with the repository's `models/` (face, voice and document
    /// models load and are checked once per engine: one per test binary).
    pub fn open_with_models(&self) -> Engine {
        let mut options = self.options();
        options.models_dir = Some(PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models"
        )));
        Engine::open(options).expect("engine with models")
    }

    /// Opens an engine on the file reading time from `clock`.
    pub fn open_with_clock(&self, clock: &Arc<ManualClock>) -> Engine {
        Engine::open_with_clock(self.options(), clock.clone()).expect("engine opens")
    }

    /// Opens an engine reading time from `clock` whose outbound calls may reach the tests' own
    /// receivers on 127.0.0.1 (`allow_private`; loopback is refused by default).
    pub fn open_for_receiver(&self, clock: &Arc<ManualClock>) -> Engine {
        let mut options = self.options();
        options.allow_private = vec!["127.0.0.0/8".to_owned()];
        Engine::open_with_clock(options, clock.clone()).expect("engine opens")
    }

    /// A separate rusqlite connection to the same file.
    pub fn sql(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(&self.path).expect("separate connection")
    }

    /// Runs a `SELECT COUNT(*) ...` (or any single-integer query) on a separate connection.
    pub fn count(&self, sql: &str) -> i64 {
        self.sql()
            .query_row(sql, [], |row| row.get(0))
            .expect("count query")
    }
}

pub fn options(database: &str, template_key: &str, secret: Option<&str>) -> EngineOptions {
    EngineOptions {
        database: database.to_owned(),
        template_key: template_key.to_owned(),
        api_keys: ApiKeyOptions {
            hs256_secret: secret.map(str::to_owned),
            public_keys: Vec::new(),
        },
        threads: 1,
        models_dir: None,
        fixed_clock_ms: None,
        session_faces_ttl_s: vouch::DEFAULT_SESSION_FACES_TTL_S,
        allow_private: Vec::new(),
        sim_swap: None,
        voice_spoof_check: false,
        preload_models: false,
    }
}

pub fn manual_clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(START_MS))
}

/// A key for `project` with Face and Voice Recognition.
pub fn create_key(engine: &Engine, project: &str) -> CreatedApiKey {
    create_key_with(engine, project, FACE_AND_VOICE, None)
}

pub fn create_key_with(
    engine: &Engine,
    project: &str,
    services: &[&str],
    scores_id: Option<&str>,
) -> CreatedApiKey {
    engine
        .api_keys()
        .create(&NewApiKey {
            project_id: project.to_owned(),
            selected_services: services.iter().map(|s| (*s).to_owned()).collect(),
            scores_id: scores_id.map(str::to_owned),
            label: None,
        })
        .expect("key is created")
}

/// A verifier holding `secret`, to mint keys "elsewhere" (the customer's backend).
pub fn backend_verifier(secret: &str) -> KeyVerifier {
    KeyVerifier::new(&ApiKeyOptions {
        hs256_secret: Some(secret.to_owned()),
        public_keys: Vec::new(),
    })
    .expect("verifier")
}

pub fn claims(project: &str, id: &str) -> KeyClaims {
    KeyClaims {
        project_id: project.to_owned(),
        selected_services: vec!["Face Recognition".to_owned()],
        scores_id: None,
        id: id.to_owned(),
        iat: None,
        exp: None,
        nbf: None,
    }
}

/// `method path` with `Authorization: Bearer <token>`.
pub fn authed(method: &str, path: &str, token: &str) -> Request {
    Request::new(method, path).bearer(token)
}

/// A POST under `/api-gateway` with the token and `X-User-Fullname`.
pub fn gateway(path: &str, token: &str, fullname: &str) -> Request {
    authed("POST", path, token).header("X-User-Fullname", fullname)
}

/// Starts a session and returns its id.
pub fn start_session(engine: &Engine, token: &str) -> String {
    let response = vouch::api::handle(engine, authed("POST", "/api-gateway/sessions/start", token));
    assert_eq!(response.status, 200, "{:?}", response.body);
    response.body["data"]
        .as_str()
        .expect("session id")
        .to_owned()
}

/// POST /api-consent/consent (`storage == false`) or /api-consent/strg-consent.
pub fn consent_request(token: &str, storage: bool, fullname: &str, given: bool) -> Request {
    let path = if storage {
        "/api-consent/strg-consent"
    } else {
        "/api-consent/consent"
    };
    authed("POST", path, token)
        .json(&json!({ "is_consent_given": given, "user_fullname": fullname }))
}

/// Gives (or withdraws) a consent through the request surface and checks it worked.
pub fn set_consent(engine: &Engine, token: &str, storage: bool, fullname: &str, given: bool) {
    let response = vouch::api::handle(engine, consent_request(token, storage, fullname, given));
    assert_eq!(response.status, 200, "{:?}", response.body);
}

/// Asserts an error response: exact status and exact `{"error": text}` body, and an X-Request-Id.
#[track_caller]
pub fn assert_error(response: &Response, status: u16, text: &str) {
    assert_eq!(
        (response.status, &response.body),
        (status, &json!({ "error": text })),
        "unexpected response"
    );
    assert!(response.request_id().starts_with("req_"));
}

/// Asserts a 400 whose text starts with `prefix` and contains `fragment`.
#[track_caller]
pub fn assert_400_like(response: &Response, prefix: &str, fragment: &str) {
    assert_eq!(response.status, 400, "{:?}", response.body);
    let text = response.error_text().expect("error text");
    assert!(text.starts_with(prefix), "{text}");
    assert!(text.contains(fragment), "{text}");
}

/// An MP4 `ftyp` box, padded with zeros to `len` bytes (at least 12).
pub fn mp4(len: usize) -> Vec<u8> {
    let mut data = b"\0\0\0\x18ftypmp42".to_vec();
    data.resize(len.max(12), 0);
    data
}

pub const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
pub const JPEG: &[u8] = &[0xFF, 0xD8, 0xFF, 0xE0, 0, 16, b'J', b'F', b'I', b'F'];
pub const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00";
pub const WAV: &[u8] = b"RIFF\x24\0\0\0WAVEfmt \x10\0\0\0";

/// The transaction row of a request id, through the API.
pub fn transaction(engine: &Engine, token: &str, request_id: &str) -> Value {
    let response = vouch::api::handle(
        engine,
        authed(
            "GET",
            &format!("/api-transactions/transactions/{request_id}"),
            token,
        ),
    );
    assert_eq!(response.status, 200, "{:?}", response.body);
    response.body["data"].clone()
}

/// Checks one Standard Webhooks signature list against a `whsec_` secret, computed here with
/// the HMAC crate directly (not with the library's signer).
pub fn signed_by(seen: &http::Seen, secret: &str) -> bool {
    use base64::Engine as _;
    use hmac::Mac;
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    let signed = format!(
        "{}.{}.{}",
        seen.headers["webhook-id"], seen.headers["webhook-timestamp"], seen.body
    );
    mac.update(signed.as_bytes());
    let expected = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    );
    seen.headers["webhook-signature"]
        .split(' ')
        .any(|signature| signature == expected)
}
