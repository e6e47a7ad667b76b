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

/// The PostgreSQL server the store's tests run on instead of SQLite files, when
/// `VOUCH_TEST_POSTGRES` names one (`scripts/with-postgres` starts a throwaway cluster and sets
/// it; `scripts/test` runs the store and service suites a second time that way).
pub fn postgres_base() -> Option<String> {
    std::env::var("VOUCH_TEST_POSTGRES")
        .ok()
        .filter(|url| !url.is_empty())
}

/// One test database: a SQLite file in its own temp dir, or, under `VOUCH_TEST_POSTGRES`, a
/// schema of its own on that server (dropped with the value). The dir lives as long as the value.
pub struct Db {
    pub dir: TempDir,
    pub path: PathBuf,
    postgres: Option<PgSchema>,
}

/// A schema on the test server, its URL (the schema as `search_path`), dropped at the end.
struct PgSchema {
    base: String,
    name: String,
    url: String,
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

impl PgSchema {
    fn new(base: &str) -> PgSchema {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let unique = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = format!(
            "t_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            unique % 1_000_000_000
        );
        let mut client = postgres::Client::connect(base, postgres::NoTls)
            .unwrap_or_else(|error| panic!("VOUCH_TEST_POSTGRES={base}: {error}"));
        client
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .expect("create the test schema");
        let separator = if base.contains('?') { '&' } else { '?' };
        PgSchema {
            base: base.to_owned(),
            url: format!("{base}{separator}options=-csearch_path%3D{name}"),
            name,
        }
    }
}

impl Db {
    pub fn new() -> Db {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("vouch.sqlite");
        let postgres = postgres_base().map(|base| PgSchema::new(&base));
        Db {
            dir,
            path,
            postgres,
        }
    }

    /// A database on SQLite whatever `VOUCH_TEST_POSTGRES` says: for what only a file has (its
    /// bytes, its write-ahead log).
    pub fn sqlite() -> Db {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("vouch.sqlite");
        Db {
            dir,
            path,
            postgres: None,
        }
    }

    /// Whether this database is a schema on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.postgres.is_some()
    }

    /// The engine's `database` option: the file's path or the schema's URL.
    pub fn path_str(&self) -> &str {
        match &self.postgres {
            Some(schema) => &schema.url,
            None => self.path.to_str().expect("utf-8 temp path"),
        }
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

    /// A separate connection to the same database, outside the engine.
    pub fn sql(&self) -> Sql {
        match &self.postgres {
            Some(schema) => Sql::Postgres(std::cell::RefCell::new(
                postgres::Client::connect(&schema.url, postgres::NoTls)
                    .expect("separate connection"),
            )),
            None => {
                Sql::Sqlite(rusqlite::Connection::open(&self.path).expect("separate connection"))
            }
        }
    }

    /// Runs a `SELECT COUNT(*) ...` (or any single-integer query) on a separate connection.
    pub fn count(&self, sql: &str) -> i64 {
        self.sql().query_row(sql, &[], |row| row.get::<i64>(0))
    }
}

/// A value for [`Sql`]'s statements, read or bound on either backend.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// What [`Sql`] takes as a parameter.
pub trait ToSqlValue {
    fn sql_value(&self) -> SqlValue;
}

macro_rules! sql_int {
    ($($type:ty),*) => {$(
        impl ToSqlValue for $type {
            fn sql_value(&self) -> SqlValue {
                SqlValue::Int(*self as i64)
            }
        }
    )*};
}
sql_int!(i64, i32, u32, u64, usize, u8);

impl ToSqlValue for bool {
    fn sql_value(&self) -> SqlValue {
        SqlValue::Int(i64::from(*self))
    }
}
impl ToSqlValue for f64 {
    fn sql_value(&self) -> SqlValue {
        SqlValue::Real(*self)
    }
}
impl ToSqlValue for str {
    fn sql_value(&self) -> SqlValue {
        SqlValue::Text(self.to_owned())
    }
}
impl ToSqlValue for String {
    fn sql_value(&self) -> SqlValue {
        SqlValue::Text(self.clone())
    }
}
impl ToSqlValue for Vec<u8> {
    fn sql_value(&self) -> SqlValue {
        SqlValue::Blob(self.clone())
    }
}
impl ToSqlValue for [u8] {
    fn sql_value(&self) -> SqlValue {
        SqlValue::Blob(self.to_vec())
    }
}
impl<T: ToSqlValue> ToSqlValue for Option<T> {
    fn sql_value(&self) -> SqlValue {
        self.as_ref().map_or(SqlValue::Null, ToSqlValue::sql_value)
    }
}
impl<T: ToSqlValue + ?Sized> ToSqlValue for &T {
    fn sql_value(&self) -> SqlValue {
        (**self).sql_value()
    }
}

/// What [`SqlRow::get`] reads a column into.
pub trait FromSqlValue: Sized {
    fn from_sql_value(value: &SqlValue) -> Self;
}

macro_rules! sql_from_int {
    ($($type:ty),*) => {$(
        impl FromSqlValue for $type {
            fn from_sql_value(value: &SqlValue) -> Self {
                match value {
                    SqlValue::Int(number) => <$type>::try_from(*number).expect("fits"),
                    other => panic!("not an integer: {other:?}"),
                }
            }
        }
    )*};
}
sql_from_int!(i64, i32, u32, u64, usize);

impl FromSqlValue for bool {
    fn from_sql_value(value: &SqlValue) -> Self {
        i64::from_sql_value(value) != 0
    }
}
impl FromSqlValue for f64 {
    fn from_sql_value(value: &SqlValue) -> Self {
        match value {
            SqlValue::Real(number) => *number,
            SqlValue::Int(number) => *number as f64,
            other => panic!("not a number: {other:?}"),
        }
    }
}
impl FromSqlValue for String {
    fn from_sql_value(value: &SqlValue) -> Self {
        match value {
            SqlValue::Text(text) => text.clone(),
            other => panic!("not text: {other:?}"),
        }
    }
}
impl FromSqlValue for Vec<u8> {
    fn from_sql_value(value: &SqlValue) -> Self {
        match value {
            SqlValue::Blob(bytes) => bytes.clone(),
            other => panic!("not bytes: {other:?}"),
        }
    }
}
impl FromSqlValue for SqlValue {
    fn from_sql_value(value: &SqlValue) -> Self {
        value.clone()
    }
}
impl<T: FromSqlValue> FromSqlValue for Option<T> {
    fn from_sql_value(value: &SqlValue) -> Self {
        match value {
            SqlValue::Null => None,
            other => Some(T::from_sql_value(other)),
        }
    }
}

/// One row read by [`Sql`].
pub struct SqlRow(Vec<SqlValue>);

impl SqlRow {
    pub fn get<T: FromSqlValue>(&self, index: usize) -> T {
        T::from_sql_value(&self.0[index])
    }
}

/// A connection of the tests' own to the engine's database, either backend: statements take `?1`
/// parameters on both (written `$1` for PostgreSQL). Failures panic: this is test code.
pub enum Sql {
    Sqlite(rusqlite::Connection),
    Postgres(std::cell::RefCell<postgres::Client>),
}

impl Sql {
    /// Runs one statement; the number of rows it changed.
    pub fn execute(&self, sql: &str, params: &[&dyn ToSqlValue]) -> usize {
        let values: Vec<SqlValue> = params.iter().map(|value| value.sql_value()).collect();
        match self {
            Sql::Sqlite(connection) => connection
                .execute(
                    sql,
                    rusqlite::params_from_iter(values.iter().map(sqlite_value)),
                )
                .unwrap_or_else(|error| panic!("{sql}: {error}")),
            Sql::Postgres(client) => {
                let mut client = client.borrow_mut();
                let (statement, bound) = pg_statement(&mut client, sql, &values);
                client
                    .execute(&statement, &pg_refs(&bound))
                    .unwrap_or_else(|error| panic!("{sql}: {error}")) as usize
            }
        }
    }

    /// Every row of a query.
    pub fn rows(&self, sql: &str, params: &[&dyn ToSqlValue]) -> Vec<SqlRow> {
        let values: Vec<SqlValue> = params.iter().map(|value| value.sql_value()).collect();
        match self {
            Sql::Sqlite(connection) => {
                let mut statement = connection
                    .prepare(sql)
                    .unwrap_or_else(|error| panic!("{sql}: {error}"));
                let columns = statement.column_count();
                let mut rows = statement
                    .query(rusqlite::params_from_iter(values.iter().map(sqlite_value)))
                    .unwrap_or_else(|error| panic!("{sql}: {error}"));
                let mut out = Vec::new();
                while let Some(row) = rows.next().expect("next row") {
                    out.push(SqlRow(
                        (0..columns)
                            .map(|index| match row.get_ref(index).expect("column") {
                                rusqlite::types::ValueRef::Null => SqlValue::Null,
                                rusqlite::types::ValueRef::Integer(n) => SqlValue::Int(n),
                                rusqlite::types::ValueRef::Real(n) => SqlValue::Real(n),
                                rusqlite::types::ValueRef::Text(t) => {
                                    SqlValue::Text(String::from_utf8_lossy(t).into_owned())
                                }
                                rusqlite::types::ValueRef::Blob(b) => SqlValue::Blob(b.to_vec()),
                            })
                            .collect(),
                    ));
                }
                out
            }
            Sql::Postgres(client) => {
                use postgres::types::Type;
                let mut client = client.borrow_mut();
                let (statement, bound) = pg_statement(&mut client, sql, &values);
                let rows = client
                    .query(&statement, &pg_refs(&bound))
                    .unwrap_or_else(|error| panic!("{sql}: {error}"));
                rows.iter()
                    .map(|row| {
                        SqlRow(
                            row.columns()
                                .iter()
                                .enumerate()
                                .map(|(index, column)| {
                                    let value = match *column.type_() {
                                        Type::INT8 => {
                                            row.get::<_, Option<i64>>(index).map(SqlValue::Int)
                                        }
                                        Type::INT4 => row
                                            .get::<_, Option<i32>>(index)
                                            .map(|n| SqlValue::Int(n.into())),
                                        Type::BOOL => row
                                            .get::<_, Option<bool>>(index)
                                            .map(|b| SqlValue::Int(b.into())),
                                        Type::FLOAT8 => {
                                            row.get::<_, Option<f64>>(index).map(SqlValue::Real)
                                        }
                                        Type::BYTEA => {
                                            row.get::<_, Option<Vec<u8>>>(index).map(SqlValue::Blob)
                                        }
                                        _ => {
                                            row.get::<_, Option<String>>(index).map(SqlValue::Text)
                                        }
                                    };
                                    value.unwrap_or(SqlValue::Null)
                                })
                                .collect(),
                        )
                    })
                    .collect()
            }
        }
    }

    /// The first row of a query, read by `read`; panics when there is none.
    pub fn query_row<T>(
        &self,
        sql: &str,
        params: &[&dyn ToSqlValue],
        read: impl FnOnce(&SqlRow) -> T,
    ) -> T {
        let rows = self.rows(sql, params);
        read(rows.first().unwrap_or_else(|| panic!("{sql}: no row")))
    }

    /// Statements without parameters, separated by `;`.
    pub fn execute_batch(&self, sql: &str) {
        match self {
            Sql::Sqlite(connection) => connection
                .execute_batch(sql)
                .unwrap_or_else(|error| panic!("{sql}: {error}")),
            Sql::Postgres(client) => client
                .borrow_mut()
                .batch_execute(sql)
                .unwrap_or_else(|error| panic!("{sql}: {error}")),
        }
    }
}

fn sqlite_value(value: &SqlValue) -> rusqlite::types::Value {
    match value {
        SqlValue::Null => rusqlite::types::Value::Null,
        SqlValue::Int(n) => rusqlite::types::Value::Integer(*n),
        SqlValue::Real(n) => rusqlite::types::Value::Real(*n),
        SqlValue::Text(t) => rusqlite::types::Value::Text(t.clone()),
        SqlValue::Blob(b) => rusqlite::types::Value::Blob(b.clone()),
    }
}

/// `sql` prepared on PostgreSQL (`?N` written `$N`), and `values` bound as its parameters' types.
fn pg_statement(
    client: &mut postgres::Client,
    sql: &str,
    values: &[SqlValue],
) -> (
    postgres::Statement,
    Vec<Box<dyn postgres::types::ToSql + Sync>>,
) {
    let statement = client
        .prepare(&dollar_parameters(sql))
        .unwrap_or_else(|error| panic!("{sql}: {error}"));
    let bound = pg_params(values, statement.params());
    (statement, bound)
}

fn pg_refs(
    bound: &[Box<dyn postgres::types::ToSql + Sync>],
) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    bound
        .iter()
        .map(|value| value.as_ref() as &(dyn postgres::types::ToSql + Sync))
        .collect()
}

/// Binds each value as the type PostgreSQL inferred for its parameter.
fn pg_params(
    values: &[SqlValue],
    types: &[postgres::types::Type],
) -> Vec<Box<dyn postgres::types::ToSql + Sync>> {
    use postgres::types::Type;
    values
        .iter()
        .zip(types)
        .map(|(value, ty)| -> Box<dyn postgres::types::ToSql + Sync> {
            match (value, ty) {
                (SqlValue::Null, _) => {
                    Box::new(None::<i64>) as Box<dyn postgres::types::ToSql + Sync>
                }
                (SqlValue::Int(n), &Type::INT4) => Box::new(*n as i32),
                (SqlValue::Int(n), &Type::BOOL) => Box::new(*n != 0),
                (SqlValue::Int(n), _) => Box::new(*n),
                (SqlValue::Real(n), _) => Box::new(*n),
                (SqlValue::Text(t), _) => Box::new(t.clone()),
                (SqlValue::Blob(b), _) => Box::new(b.clone()),
            }
        })
        .collect()
}

/// `?N` parameters as `$N`.
fn dollar_parameters(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c == '?' && !quoted && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

pub fn options(database: &str, template_key: &str, secret: Option<&str>) -> EngineOptions {
    EngineOptions {
        database: database.to_owned(),
        database_pool_size: 8,
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
