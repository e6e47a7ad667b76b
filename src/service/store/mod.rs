//! The SQLite store, [`Store`]: one file (or `:memory:`) holding projects, API keys, users, consents,
//! sealed templates, sessions, transactions, scoring rule sets, attempt counters, and the rows of
//! the job engine (jobs, executions, schedules, credits, the outbox, webhook endpoints, SIM-swap
//! checks) and of forgery analysis (sealed uploads).
//!
//! The store stores: rows in, rows out, in SQL. Policy (when a job is retried, what a lease's end
//! means, the credit gate, retention, what an event says) lives in the service, which composes row
//! operations inside one write transaction ([`Store::atomically`] lends a [`Tx`]), so a change
//! and the events it causes commit together or not at all. This is also the seam a second backend
//! would implement. rusqlite stays inside this module: callers see plain records and
//! [`crate::Error`]. The database runs in WAL mode, the schema moves forward by
//! `PRAGMA user_version` ([`schema`]), and every write runs in a `BEGIN IMMEDIATE` transaction so
//! that two writers never deadlock on a lock upgrade and a failed call leaves no half-written row.
//! Consent is enforced here, not only in handlers: a template cannot be written without storage
//! consent nor read without authorization consent.

mod alerts;
mod attempts;
mod avf;
mod consent;
mod events;
mod jobs;
mod keys;
mod lease;
#[cfg(feature = "postgres")]
mod postgres;
mod rules;
mod schedules;
mod schema;
mod seal;
mod session;
mod session_face;
mod signing;
pub(in crate::service) mod sql;
mod template;
mod transaction;
mod value;

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::{Error, Result};
use sql::{params, Conn, DbError, OptionalExtension};

pub use alerts::AlertChannel;
pub use attempts::{
    AttemptEvent, AttemptHold, AttemptOutcome, AttemptPolicy, AttemptStart, AttemptState,
};
pub use avf::{AvfRow, AvfStatus};
pub use consent::{ConsentKind, ConsentRecord, ConsentState};
pub use events::{SimSwapOutcome, SimSwapResult, WebhookEndpoint};
pub(in crate::service) use jobs::CreditsLook;
pub use jobs::{
    destination_of, AttemptResult, Claim, Credits, ExecutionRecord, ExecutionStats, InsertedJob,
    JobKind, JobPage, JobRecord, JobStatus, OutboxEntry,
};
pub use keys::{ApiKeyOrigin, ApiKeyRecord};
pub(in crate::service) use lease::Queue;
pub use schedules::{SchedulePage, ScheduleRecord};
pub use schema::SCHEMA_VERSION;
pub use seal::{TemplateKey, TEMPLATE_FORMAT_VERSION};
pub use session::{SessionBinding, SessionRecord};
pub use session_face::FaceSource;
pub use signing::SigningSecret;
pub use template::{Modality, StoredTemplate, TemplateModel};
pub use transaction::{TransactionFilter, TransactionPage, TransactionRecord};

/// How long a writer waits for another connection's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many times a PostgreSQL transaction chosen as a deadlock's victim (or failing a
/// serialization check) runs again before the call fails.
#[cfg(feature = "postgres")]
const CONFLICT_RETRIES: u32 = 20;

/// Whether `database` names a PostgreSQL server (`postgres://` or `postgresql://`) rather than
/// a SQLite file.
pub fn is_postgres_url(database: &str) -> bool {
    let lower = database.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// The engine's database. `Send + Sync`. SQLite: one connection behind a mutex, so calls from many
/// threads are serialised; SQLite work here is small next to model inference. PostgreSQL (feature
/// `postgres`): a bounded pool shared by the engine's threads, `READ COMMITTED` transactions, and
/// the rules one SQLite writer keeps by taking turns kept across servers by row locks where a
/// decision reads before it writes ([`Tx::lock_project`], [`lock_user`], the credits row; claims
/// skip rows another server holds): see docs/scaling.md.
pub struct Store {
    backend: Backend,
    key: TemplateKey,
}

enum Backend {
    Sqlite(Mutex<Connection>),
    #[cfg(feature = "postgres")]
    Postgres(Box<postgres::Pool>),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating when missing) the database at `path`, or an in-memory one for `:memory:`,
    /// and brings its schema up to [`SCHEMA_VERSION`]. Templates are sealed and opened with `key`.
    /// A `postgres://` URL opens PostgreSQL instead, with at most `pool_size` connections (SQLite
    /// always has one).
    pub fn open(path: &str, key: TemplateKey, pool_size: usize) -> Result<Store> {
        if is_postgres_url(path) {
            return Store::open_postgres(path, key, pool_size);
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let mut connection = if path == ":memory:" {
            Connection::open_in_memory()
        } else {
            Connection::open_with_flags(path, flags)
        }
        .map_err(|error| Error::Storage(format!("cannot open database {path}: {error}")))?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(sqlite)?;
        // Every statement of the store is cached; there are about 150.
        connection.set_prepared_statement_cache_capacity(256);
        // WAL lets readers go on while a write commits; in-memory databases report "memory" instead.
        let mode: String = connection
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .map_err(sqlite)?;
        if path != ":memory:" && !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Storage(format!(
                "database {path} refused WAL mode (journal_mode={mode})"
            )));
        }
        connection
            .execute_batch(
                "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON;",
            )
            .map_err(sqlite)?;
        if schema::migrate(&mut connection)? {
            // A migration may have dropped personal data (10: the phone numbers of old SIM-swap
            // checks): leave none of it in the write-ahead log.
            connection
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .map_err(sqlite)?;
        }
        let store = Store {
            backend: Backend::Sqlite(Mutex::new(connection)),
            key,
        };
        store.write(|transaction| seal::check_key(transaction, &store.key))?;
        Ok(store)
    }

    #[cfg(feature = "postgres")]
    fn open_postgres(url: &str, key: TemplateKey, pool_size: usize) -> Result<Store> {
        let pool = postgres::Pool::connect(url, pool_size)?;
        schema::migrate_postgres(pool.get()?.cell())?;
        let store = Store {
            backend: Backend::Postgres(Box::new(pool)),
            key,
        };
        store.write(|transaction| seal::check_key(transaction, &store.key))?;
        Ok(store)
    }

    #[cfg(not(feature = "postgres"))]
    fn open_postgres(_url: &str, _key: TemplateKey, _pool_size: usize) -> Result<Store> {
        Err(Error::InvalidOptions(
            "database: this build has no PostgreSQL support (build vouch with the `postgres` feature, as vouch-cli is)"
                .to_owned(),
        ))
    }

    /// Runs `work` inside one write transaction, committing only when it returns `Ok` (an error
    /// or a panic rolls every row back). SQLite: `BEGIN IMMEDIATE`, so two writers never deadlock
    /// on a lock upgrade. PostgreSQL: `READ COMMITTED` with the row locks the operations take; a
    /// transaction PostgreSQL picks as a deadlock's victim runs again, up to [`CONFLICT_RETRIES`]
    /// times, which is why `work` may be called more than once and must not act outside the
    /// database (the pump's admission slots are kept per job, so asking again takes none).
    fn write<T>(&self, mut work: impl FnMut(&Conn<'_>) -> Result<T>) -> Result<T> {
        match &self.backend {
            Backend::Sqlite(connection) => {
                let mut connection = lock(connection);
                let transaction = connection
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(sqlite)?;
                let value = work(&Conn::sqlite(&transaction))?;
                transaction.commit().map_err(sqlite)?;
                Ok(value)
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres(pool) => {
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    let pooled = pool.get()?;
                    let cell = pooled.cell();
                    let began = cell.borrow_mut().begin();
                    if let Err(error) = began {
                        // An idle connection the server closed (a restart): nothing ran yet, so
                        // the next one of the pool (or a new one) is tried once.
                        drop(pooled);
                        if attempt == 1 && error.kind == sql::ErrorKind::Unavailable {
                            continue;
                        }
                        return Err(error.into());
                    }
                    let outcome = match work(&Conn::postgres(cell)) {
                        Ok(value) => cell
                            .borrow_mut()
                            .commit()
                            .map(|()| value)
                            .map_err(Error::from),
                        Err(error) => {
                            // The transaction may be aborted already; ROLLBACK ends it either way.
                            cell.borrow_mut().rollback();
                            Err(error)
                        }
                    };
                    let conflicted = cell.borrow().conflicted;
                    drop(pooled);
                    match outcome {
                        Ok(value) => return Ok(value),
                        Err(_) if conflicted && attempt < CONFLICT_RETRIES => {
                            // Spread the retries of colliding servers.
                            std::thread::sleep(Duration::from_micros(
                                200 * u64::from(attempt) * (1 + rand_below(4)),
                            ));
                        }
                        Err(error) => return Err(error),
                    }
                }
            }
        }
    }

    /// Runs the service's `work` inside one write transaction, committing only when it returns
    /// `Ok` (an error or a panic rolls every row back). When a row operation erased personal data
    /// from SQLite, the write-ahead log is truncated after the commit, so no copy stays there.
    /// On PostgreSQL `work` may run more than once (see [`Store::write`]).
    pub(in crate::service) fn atomically<T>(
        &self,
        mut work: impl FnMut(&Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let erased = Cell::new(false);
        let value = self.write(|rows| {
            let tx = Tx {
                rows: *rows,
                erased: Cell::new(false),
            };
            let value = work(&tx)?;
            erased.set(tx.erased.get());
            Ok(value)
        })?;
        if erased.get() {
            self.truncate_wal()?;
        }
        Ok(value)
    }

    /// Runs read-only `work` on a connection.
    fn read<T>(&self, work: impl FnOnce(&Conn<'_>) -> Result<T>) -> Result<T> {
        match &self.backend {
            Backend::Sqlite(connection) => work(&Conn::sqlite(&lock(connection))),
            #[cfg(feature = "postgres")]
            Backend::Postgres(pool) => work(&Conn::postgres(pool.get()?.cell())),
        }
    }

    /// Moves SQLite's write-ahead log into the database and truncates it, so that rows a deleting
    /// transaction removed (biometric data) do not stay on disk in `-wal` while the engine runs.
    /// `secure_delete` already overwrites them in the database file itself. PostgreSQL: its
    /// own vacuum reclaims dead rows; nothing to do here (docs/scaling.md).
    fn truncate_wal(&self) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(connection) => lock(connection)
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .map_err(sqlite),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => Ok(()),
        }
    }

    /// The schema version the open database is at.
    pub fn schema_version(&self) -> Result<u32> {
        match &self.backend {
            Backend::Sqlite(connection) => lock(connection)
                .query_row("PRAGMA user_version", [], |row| row.get(0))
                .map_err(sqlite),
            #[cfg(feature = "postgres")]
            Backend::Postgres(pool) => schema::postgres_version(pool.get()?.cell()),
        }
    }

    /// Which backend holds the rows: `sqlite` or `postgres`.
    #[cfg_attr(not(feature = "inspect"), allow(dead_code))]
    pub fn backend(&self) -> &'static str {
        match &self.backend {
            Backend::Sqlite(_) => "sqlite",
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => "postgres",
        }
    }
}

fn lock(connection: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    // A panic while holding the lock cannot leave a transaction open (rusqlite rolls back on drop),
    // so the connection is still consistent and the poison flag can be ignored.
    connection
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A small random number below `bound`, for retry jitter (not for anything secret).
#[cfg(feature = "postgres")]
fn rand_below(bound: u64) -> u64 {
    let mut bytes = [0_u8; 8];
    if getrandom::getrandom(&mut bytes).is_err() {
        return 0;
    }
    u64::from_le_bytes(bytes) % bound.max(1)
}

/// One write transaction of the store, lent to the service by [`Store::atomically`]: the row
/// operations (methods in the store's files, one per resource) take it, so the service decides
/// what happens and the store only writes it.
pub(in crate::service) struct Tx<'c> {
    rows: Conn<'c>,
    /// Set by a row operation that erased personal data (a phone number, an upload, faces).
    erased: Cell<bool>,
}

impl Tx<'_> {
    /// Notes that this transaction erased personal data: the write-ahead log is truncated once it
    /// commits.
    fn erased(&self) {
        self.erased.set(true);
    }

    /// Finds or creates the project row.
    pub(in crate::service) fn ensure_project(&self, project_id: &str, now_ms: i64) -> Result<()> {
        ensure_project(&self.rows, project_id, now_ms)
    }

    /// Finds or creates the project row and holds it until the transaction ends, so that a
    /// decision over the project's rows (an idempotency key's first use, a cap on waiting uploads
    /// or on webhooks) is made by one server at a time. SQLite's writers take turns anyway.
    pub(in crate::service) fn lock_project(&self, project_id: &str, now_ms: i64) -> Result<()> {
        lock_project(&self.rows, project_id, now_ms)
    }
}

/// [`Tx::lock_project`] on a connection.
fn lock_project(transaction: &Conn<'_>, project_id: &str, now_ms: i64) -> Result<()> {
    ensure_project(transaction, project_id, now_ms)?;
    hold(
        transaction,
        "SELECT id FROM projects WHERE id = ?1",
        params![project_id],
    )
}

/// Holds the rows `select` finds until the transaction ends (`FOR NO KEY UPDATE`: rows that
/// reference them may still be inserted); nothing on SQLite, whose writers take turns.
fn hold(transaction: &Conn<'_>, select: &str, params: &[&dyn sql::ToValue]) -> Result<()> {
    let dialect = transaction.dialect();
    if dialect == sql::Dialect::Sqlite {
        return Ok(());
    }
    transaction
        .query_row(
            &format!("{select}{}", dialect.for_no_key_update()),
            params,
            |_| Ok(()),
        )
        .optional()
        .map_err(storage)?;
    Ok(())
}

/// Holds the user's row until the transaction ends: a decision on the user's attempt counter,
/// consents or biometric rows is made by one server at a time (a withdrawal and an enrollment
/// of the same user never interleave); nothing on SQLite, whose writers take turns.
fn lock_user(transaction: &Conn<'_>, user_id: i64) -> Result<()> {
    hold(
        transaction,
        "SELECT id FROM users WHERE id = ?1",
        params![user_id],
    )
}

/// [`lock_user`] by the user's name, if the user exists.
fn lock_user_named(transaction: &Conn<'_>, project_id: &str, fullname: &str) -> Result<()> {
    hold(
        transaction,
        "SELECT id FROM users WHERE project_id = ?1 AND fullname = ?2",
        params![project_id, fullname],
    )
}

/// Maps a statement's error to the library's storage error.
fn storage(error: DbError) -> Error {
    Error::from(error)
}

/// Maps a rusqlite error (opening SQLite, its pragmas) to the library's storage error.
fn sqlite(error: rusqlite::Error) -> Error {
    Error::Storage(error.to_string())
}

/// Finds or creates the project row.
fn ensure_project(transaction: &Conn<'_>, project_id: &str, now_ms: i64) -> Result<()> {
    transaction
        .execute(
            "INSERT INTO projects (id, created_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![project_id, now_ms],
        )
        .map_err(storage)?;
    Ok(())
}

/// Finds or creates the user row and returns its id.
fn ensure_user(
    transaction: &Conn<'_>,
    project_id: &str,
    fullname: &str,
    now_ms: i64,
) -> Result<i64> {
    ensure_project(transaction, project_id, now_ms)?;
    transaction
        .execute(
            "INSERT INTO users (project_id, fullname, created_at) VALUES (?1, ?2, ?3)
             ON CONFLICT DO NOTHING",
            params![project_id, fullname, now_ms],
        )
        .map_err(storage)?;
    transaction
        .query_row(
            "SELECT id FROM users WHERE project_id = ?1 AND fullname = ?2",
            params![project_id, fullname],
            |row| row.get(0),
        )
        .map_err(storage)
}

/// A string map stored as JSON text (job and schedule headers).
fn map_to_json(map: &std::collections::BTreeMap<String, String>) -> String {
    serde_json::to_string(map).expect("string maps serialise")
}

/// A string map read back from its JSON text; an absent or unreadable one is empty.
fn map_from_json(text: Option<String>) -> std::collections::BTreeMap<String, String> {
    text.and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}
