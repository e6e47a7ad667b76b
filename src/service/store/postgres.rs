//! The PostgreSQL backend (feature `postgres`; `vouch serve` turns it on, the library a phone
//! links never has it): a bounded pool of connections, each with its statement cache, and the
//! translation of the store's SQL and values.
//!
//! Client: the `postgres` crate, the synchronous face of `tokio-postgres`. The engine is
//! synchronous (the server calls it from blocking threads), so an async client would add a second
//! runtime's worth of plumbing for nothing; the pool is a few lines here rather than another
//! crate, because it needs only what the store does: a bound, a wait, and dropping connections
//! that broke. Transport is plain TCP or a Unix socket: put the database on a private network or
//! behind a TLS-terminating proxy (docs/http.md).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use postgres::error::SqlState;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::{Client, NoTls};

use super::value::{DbError, DbResult, ErrorKind, Value};

/// How long a caller waits for a pooled connection before the request is answered 503.
const POOL_WAIT: Duration = Duration::from_secs(10);

/// How long opening one connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection of the pool, with the statements it has prepared.
pub(in crate::service::store) struct PgConn {
    client: Client,
    statements: HashMap<String, postgres::Statement>,
    /// A statement of the current transaction met a serialization failure or a deadlock.
    pub(super) conflicted: bool,
    /// The connection failed in a way that makes it unusable; the pool drops it.
    broken: bool,
    /// A transaction began and has not ended: a connection given back so (a panic in the middle
    /// of a write, a failed ROLLBACK) is dropped, never lent again with the transaction open.
    in_transaction: bool,
}

impl PgConn {
    fn statement(&mut self, sql: &str) -> DbResult<postgres::Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let text = numbered_parameters(sql);
        let statement = self
            .client
            .prepare(&text)
            .map_err(|error| self.fail(error))?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Runs one statement; the number of rows it changed.
    pub(super) fn execute(&mut self, sql: &str, values: &[Value]) -> DbResult<usize> {
        let statement = self.statement(sql)?;
        let params = parameters(values);
        let changed = self
            .client
            .execute(&statement, &as_dyn(&params))
            .map_err(|error| self.fail(error))?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }

    /// Every row of a query, as values.
    pub(super) fn query(&mut self, sql: &str, values: &[Value]) -> DbResult<Vec<Vec<Value>>> {
        let statement = self.statement(sql)?;
        let params = parameters(values);
        let rows = self
            .client
            .query(&statement, &as_dyn(&params))
            .map_err(|error| self.fail(error))?;
        rows.iter().map(row_values).collect()
    }

    /// Runs statements without parameters.
    pub(super) fn execute_batch(&mut self, sql: &str) -> DbResult<()> {
        self.client
            .batch_execute(sql)
            .map_err(|error| self.fail(error))
    }

    /// Begins a `READ COMMITTED` transaction (named, whatever the database's default).
    pub(super) fn begin(&mut self) -> DbResult<()> {
        self.in_transaction = true;
        self.execute_batch("BEGIN ISOLATION LEVEL READ COMMITTED")
    }

    /// Commits the transaction.
    pub(super) fn commit(&mut self) -> DbResult<()> {
        self.execute_batch("COMMIT")?;
        self.in_transaction = false;
        Ok(())
    }

    /// Rolls the transaction back (it may have aborted already).
    pub(super) fn rollback(&mut self) {
        if self.execute_batch("ROLLBACK").is_ok() {
            self.in_transaction = false;
        }
    }

    /// Calls `visit` with each row of a query as it arrives, never holding them all.
    pub(super) fn for_each(
        &mut self,
        sql: &str,
        values: &[Value],
        visit: &mut dyn FnMut(&[Value]) -> DbResult<()>,
    ) -> DbResult<()> {
        use postgres::fallible_iterator::FallibleIterator;
        let statement = self.statement(sql)?;
        let params = parameters(values);
        let failure = match self.client.query_raw(&statement, params.iter()) {
            Err(error) => Some(error),
            Ok(mut rows) => loop {
                match rows.next() {
                    Ok(Some(row)) => visit(&row_values(&row)?)?,
                    Ok(None) => break None,
                    Err(error) => break Some(error),
                }
            },
        };
        match failure {
            Some(error) => Err(self.fail(error)),
            None => Ok(()),
        }
    }

    /// Classifies an error, noting a conflict (the transaction may run again) or a broken
    /// connection (the pool drops it).
    fn fail(&mut self, error: postgres::Error) -> DbError {
        let kind = classify(&error);
        match kind {
            ErrorKind::Retry => self.conflicted = true,
            ErrorKind::Unavailable => self.broken = true,
            ErrorKind::NoRows | ErrorKind::Other => {}
        }
        if self.client.is_closed() {
            self.broken = true;
        }
        DbError::new(kind, describe(&error))
    }
}

fn classify(error: &postgres::Error) -> ErrorKind {
    match error.code() {
        Some(code)
            if *code == SqlState::T_R_SERIALIZATION_FAILURE
                || *code == SqlState::T_R_DEADLOCK_DETECTED =>
        {
            ErrorKind::Retry
        }
        // Class 08 (connection exception), 57P01-03 (the server shutting down or restarting).
        Some(code)
            if code.code().starts_with("08")
                || *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW =>
        {
            ErrorKind::Unavailable
        }
        Some(_) => ErrorKind::Other,
        // No SQLSTATE: the connection itself failed (closed, reset, timed out), or the client
        // refused something (a value that does not fit its parameter's type).
        None if error.is_closed() || io_failure(error) => ErrorKind::Unavailable,
        None => ErrorKind::Other,
    }
}

/// Whether the error comes from the connection's socket.
fn io_failure(error: &postgres::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if cause.is::<std::io::Error>() {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The error's text with the server's detail, never the parameters (they may be personal data).
fn describe(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => error.to_string(),
    }
}

/// The store's `?N` parameters as PostgreSQL's `$N` (outside string literals and quoted names).
pub(super) fn numbered_parameters(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut quote: Option<char> = None;
    let mut next_bare = 1;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(open) => {
                out.push(c);
                if c == open {
                    quote = None;
                }
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '?' => {
                out.push('$');
                if chars.peek().is_some_and(char::is_ascii_digit) {
                    while let Some(digit) = chars.next_if(char::is_ascii_digit) {
                        out.push(digit);
                    }
                } else {
                    out.push_str(&next_bare.to_string());
                    next_bare += 1;
                }
            }
            None => out.push(c),
        }
    }
    out
}

/// A value bound as whatever type PostgreSQL inferred for its parameter.
struct Param<'a>(&'a Value);

/// Only the value's kind: the client logs parameters with `Debug` at its debug level, and a value
/// may be a sealed template, a name or a phone number.
impl std::fmt::Debug for Param<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self.0 {
            Value::Null => "NULL",
            Value::Int(_) => "<integer>",
            Value::Real(_) => "<real>",
            Value::Text(_) => "<text>",
            Value::Blob(_) => "<bytes>",
        })
    }
}

fn parameters(values: &[Value]) -> Vec<Param<'_>> {
    values.iter().map(Param).collect()
}

fn as_dyn<'a>(params: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params
        .iter()
        .map(|param| param as &(dyn ToSql + Sync))
        .collect()
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(number) => match *ty {
                Type::INT8 => number.to_sql(ty, out),
                Type::INT4 => i32::try_from(*number)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*number)?.to_sql(ty, out),
                Type::BOOL => (*number != 0).to_sql(ty, out),
                Type::FLOAT8 => (*number as f64).to_sql(ty, out),
                _ => number.to_string().as_str().to_sql(&Type::TEXT, out),
            },
            Value::Real(number) => match *ty {
                Type::FLOAT4 => (*number as f32).to_sql(ty, out),
                _ => number.to_sql(&Type::FLOAT8, out),
            },
            Value::Text(text) => match *ty {
                Type::BYTEA => text.as_bytes().to_sql(ty, out),
                Type::JSONB => {
                    // jsonb's binary form: a version byte, then the text.
                    out.extend_from_slice(&[1]);
                    out.extend_from_slice(text.as_bytes());
                    Ok(IsNull::No)
                }
                _ => text.as_str().to_sql(&Type::TEXT, out),
            },
            Value::Blob(bytes) => bytes.as_slice().to_sql(&Type::BYTEA, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn row_values(row: &postgres::Row) -> DbResult<Vec<Value>> {
    let decode = |error: postgres::Error| DbError::new(ErrorKind::Other, error.to_string());
    let mut values = Vec::with_capacity(row.len());
    for (index, column) in row.columns().iter().enumerate() {
        let value = match *column.type_() {
            Type::INT8 => row
                .try_get::<_, Option<i64>>(index)
                .map_err(decode)?
                .map(Value::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(index)
                .map_err(decode)?
                .map(|number| Value::Int(number.into())),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(index)
                .map_err(decode)?
                .map(|number| Value::Int(number.into())),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(index)
                .map_err(decode)?
                .map(|flag| Value::Int(flag.into())),
            Type::FLOAT8 => row
                .try_get::<_, Option<f64>>(index)
                .map_err(decode)?
                .map(Value::Real),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(index)
                .map_err(decode)?
                .map(|number| Value::Real(number.into())),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => row
                .try_get::<_, Option<String>>(index)
                .map_err(decode)?
                .map(Value::Text),
            Type::BYTEA => row
                .try_get::<_, Option<Vec<u8>>>(index)
                .map_err(decode)?
                .map(Value::Blob),
            ref other => {
                return Err(DbError::new(
                    ErrorKind::Other,
                    format!(
                        "column {} has type {other}, which the store does not read (cast it)",
                        column.name()
                    ),
                ))
            }
        };
        values.push(value.unwrap_or(Value::Null));
    }
    Ok(values)
}

/// A bounded pool of connections to one database.
pub(in crate::service::store) struct Pool {
    config: postgres::Config,
    size: usize,
    state: Mutex<PoolState>,
    returned: Condvar,
}

struct PoolState {
    idle: Vec<PgConn>,
    /// Connections open now, idle or lent.
    open: usize,
}

impl Pool {
    /// A pool of at most `size` connections to `url` (a `postgres://` URL or a libpq key=value
    /// string); opens one connection now, so that a wrong URL or password fails at open.
    pub(super) fn connect(url: &str, size: usize) -> DbResult<Pool> {
        let mut config: postgres::Config = url.parse().map_err(|error| {
            DbError::new(
                ErrorKind::Other,
                format!("not a PostgreSQL connection URL: {error}"),
            )
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("vouch");
        }
        let pool = Pool {
            config,
            size: size.max(1),
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
        };
        let first = pool.open_one()?;
        let mut state = pool.lock();
        state.open = 1;
        state.idle.push(first);
        drop(state);
        Ok(pool)
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn open_one(&self) -> DbResult<PgConn> {
        let client = self.config.connect(NoTls).map_err(|error| {
            DbError::new(
                ErrorKind::Unavailable,
                format!("cannot connect to PostgreSQL: {}", describe(&error)),
            )
        })?;
        Ok(PgConn {
            client,
            statements: HashMap::new(),
            conflicted: false,
            broken: false,
            in_transaction: false,
        })
    }

    /// A connection, waiting up to [`POOL_WAIT`] for one when `size` are lent; a connection that
    /// closed while idle is replaced.
    pub(super) fn get(&self) -> DbResult<Pooled<'_>> {
        let deadline = Instant::now() + POOL_WAIT;
        let mut state = self.lock();
        loop {
            while let Some(connection) = state.idle.pop() {
                if connection.client.is_closed() {
                    state.open -= 1;
                    continue;
                }
                return Ok(Pooled {
                    pool: self,
                    connection: Some(RefCell::new(connection)),
                });
            }
            if state.open < self.size {
                state.open += 1;
                drop(state);
                return match self.open_one() {
                    Ok(connection) => Ok(Pooled {
                        pool: self,
                        connection: Some(RefCell::new(connection)),
                    }),
                    Err(error) => {
                        self.lock().open -= 1;
                        self.returned.notify_one();
                        Err(error)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(DbError::new(
                    ErrorKind::Unavailable,
                    format!(
                        "all {} database connections stayed busy for {} s",
                        self.size,
                        POOL_WAIT.as_secs()
                    ),
                ));
            }
            state = self
                .returned
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }
}

/// A connection lent by the [`Pool`]; it goes back when dropped, unless it broke.
pub(in crate::service::store) struct Pooled<'p> {
    pool: &'p Pool,
    connection: Option<RefCell<PgConn>>,
}

impl Pooled<'_> {
    /// The connection, for the statements of one call.
    pub(super) fn cell(&self) -> &RefCell<PgConn> {
        self.connection.as_ref().expect("present until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        let mut connection = connection.into_inner();
        let mut state = self.pool.lock();
        // A transaction still open (a panic mid-write, a failed ROLLBACK) ends with the
        // connection: PostgreSQL rolls it back when the socket closes.
        if connection.broken
            || connection.in_transaction
            || std::thread::panicking()
            || connection.client.is_closed()
        {
            state.open -= 1;
        } else {
            connection.conflicted = false;
            state.idle.push(connection);
        }
        drop(state);
        self.pool.returned.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_numbered_for_postgres_outside_quotes() {
        assert_eq!(
            numbered_parameters("SELECT a FROM t WHERE b = ?1 AND c IN (?2, ?12) AND d = '?3'"),
            "SELECT a FROM t WHERE b = $1 AND c IN ($2, $12) AND d = '?3'"
        );
        assert_eq!(numbered_parameters("VALUES (?, ?)"), "VALUES ($1, $2)");
        assert_eq!(
            numbered_parameters(r#"SELECT "?1" FROM t WHERE x = ?1"#),
            r#"SELECT "?1" FROM t WHERE x = $1"#
        );
    }
}

/// The backend against a real server: `VOUCH_TEST_POSTGRES` (scripts/with-postgres sets it).
#[cfg(test)]
mod server_tests {
    use crate::service::store::{Queue, Store, TemplateKey};

    /// A store on a fresh schema of the test server, or `None` after saying so.
    fn store(test: &str) -> Option<Store> {
        let Ok(base) = std::env::var("VOUCH_TEST_POSTGRES") else {
            eprintln!("NOTE: VOUCH_TEST_POSTGRES not set: {test} did not run (scripts/with-postgres runs it)");
            return None;
        };
        let schema = format!("unit_{}_{}", std::process::id(), test.len());
        let mut client = postgres::Client::connect(&base, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .unwrap();
        let url = format!("{base}?options=-csearch_path%3D{schema}");
        Some(Store::open(&url, TemplateKey::new([7; 32]), 4).unwrap())
    }

    #[test]
    fn opens_migrates_and_takes_leases() {
        let Some(store) = store("opens_migrates_and_takes_leases") else {
            return;
        };
        assert_eq!(
            store.schema_version().unwrap(),
            super::super::SCHEMA_VERSION
        );
        store
            .atomically(|tx| {
                tx.ensure_project("p", 0)?;
                tx.ensure_project("p", 1)?;
                let seq: i64 = tx
                    .rows
                    .query_row(
                        "INSERT INTO outbox (project_id, url, headers, body, timeout_ms, created_at)
                         VALUES ('p', 'https://example.com/', '{}', '{}', 1000, 0) RETURNING seq",
                        super::super::sql::params![],
                        |row| row.get(0),
                    )
                    .map_err(super::super::storage)?;
                assert!(tx.take_lease(Queue::Outbox, &seq, 100, 200)?);
                assert!(!tx.take_lease(Queue::Outbox, &seq, 150, 300)?);
                assert!(tx.take_lease(Queue::Outbox, &seq, 200, 300)?);
                Ok(())
            })
            .unwrap();
    }
}
