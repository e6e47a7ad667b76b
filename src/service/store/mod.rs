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
mod rules;
mod schedules;
mod schema;
mod seal;
mod session;
mod session_face;
mod signing;
mod template;
mod transaction;

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::{Error, Result};

pub use alerts::AlertChannel;
pub use attempts::{
    AttemptEvent, AttemptHold, AttemptOutcome, AttemptPolicy, AttemptStart, AttemptState,
};
pub use avf::{AvfRow, AvfStatus};
pub use consent::{ConsentKind, ConsentRecord, ConsentState};
pub use events::{SimSwapOutcome, SimSwapResult, WebhookEndpoint};
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

/// The engine's database. `Send + Sync`: one connection behind a mutex, so calls from many threads
/// are serialised; SQLite work here is small next to model inference.
pub struct Store {
    connection: Mutex<Connection>,
    key: TemplateKey,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating when missing) the database at `path`, or an in-memory one for `:memory:`,
    /// and brings its schema up to [`SCHEMA_VERSION`]. Templates are sealed and opened with `key`.
    pub fn open(path: &str, key: TemplateKey) -> Result<Store> {
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
        connection.busy_timeout(BUSY_TIMEOUT).map_err(storage)?;
        // WAL lets readers go on while a write commits; in-memory databases report "memory" instead.
        let mode: String = connection
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .map_err(storage)?;
        if path != ":memory:" && !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Storage(format!(
                "database {path} refused WAL mode (journal_mode={mode})"
            )));
        }
        connection
            .execute_batch(
                "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON;",
            )
            .map_err(storage)?;
        if schema::migrate(&mut connection)? {
            // A migration may have dropped personal data (10: the phone numbers of old SIM-swap
            // checks): leave none of it in the write-ahead log.
            connection
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .map_err(storage)?;
        }
        seal::check_key(&mut connection, &key)?;
        Ok(Store {
            connection: Mutex::new(connection),
            key,
        })
    }

    /// Runs `work` inside a `BEGIN IMMEDIATE` transaction, committing only when it returns `Ok`.
    fn write<T>(&self, work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut connection = self.lock();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(storage)?;
        let value = work(&transaction)?;
        transaction.commit().map_err(storage)?;
        Ok(value)
    }

    /// Runs the service's `work` inside one `BEGIN IMMEDIATE` transaction, committing only when it
    /// returns `Ok` (an error or a panic rolls every row back). When a row operation erased
    /// personal data, the write-ahead log is truncated after the commit, so no copy stays there.
    pub(in crate::service) fn atomically<T>(
        &self,
        work: impl FnOnce(&Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let (value, erased) = {
            let mut connection = self.lock();
            let rows = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(storage)?;
            let tx = Tx {
                rows,
                erased: Cell::new(false),
            };
            let value = work(&tx)?;
            let erased = tx.erased.get();
            tx.rows.commit().map_err(storage)?;
            (value, erased)
        };
        if erased {
            self.truncate_wal()?;
        }
        Ok(value)
    }

    /// Runs read-only `work` on the connection.
    fn read<T>(&self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        work(&self.lock())
    }

    /// Moves the write-ahead log into the database and truncates it, so that rows a deleting
    /// transaction removed (biometric data) do not stay on disk in `-wal` while the engine runs.
    /// `secure_delete` already overwrites them in the database file itself.
    fn truncate_wal(&self) -> Result<()> {
        self.lock()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(storage)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a transaction open (rusqlite rolls back on drop),
        // so the connection is still consistent and the poison flag can be ignored.
        self.connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The schema version the open database is at.
    pub fn schema_version(&self) -> Result<u32> {
        self.read(|connection| {
            connection
                .query_row("PRAGMA user_version", [], |row| row.get(0))
                .map_err(storage)
        })
    }
}

/// One write transaction of the store, lent to the service by [`Store::atomically`]: the row
/// operations (methods in the store's files, one per resource) take it, so the service decides
/// what happens and the store only writes it.
pub(in crate::service) struct Tx<'c> {
    rows: rusqlite::Transaction<'c>,
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
}

/// Maps a rusqlite error to the library's storage error.
fn storage(error: rusqlite::Error) -> Error {
    Error::Storage(error.to_string())
}

/// Finds or creates the project row.
fn ensure_project(
    transaction: &rusqlite::Transaction<'_>,
    project_id: &str,
    now_ms: i64,
) -> Result<()> {
    transaction
        .execute(
            "INSERT OR IGNORE INTO projects (id, created_at) VALUES (?1, ?2)",
            rusqlite::params![project_id, now_ms],
        )
        .map_err(storage)?;
    Ok(())
}

/// Finds or creates the user row and returns its id.
fn ensure_user(
    transaction: &rusqlite::Transaction<'_>,
    project_id: &str,
    fullname: &str,
    now_ms: i64,
) -> Result<i64> {
    ensure_project(transaction, project_id, now_ms)?;
    transaction
        .execute(
            "INSERT OR IGNORE INTO users (project_id, fullname, created_at) VALUES (?1, ?2, ?3)",
            rusqlite::params![project_id, fullname, now_ms],
        )
        .map_err(storage)?;
    transaction
        .query_row(
            "SELECT id FROM users WHERE project_id = ?1 AND fullname = ?2",
            rusqlite::params![project_id, fullname],
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
