//! What crosses between the store and either database: [`Value`] (the five storage classes of
//! SQLite, which PostgreSQL's columns mirror) and [`DbError`] (a failed statement, classified for
//! the retry rule and for the API's status). Used by `sql.rs` and by the PostgreSQL backend.

use std::fmt;

use crate::error::Error;

/// One SQL value: the five storage classes of SQLite, which PostgreSQL's columns mirror.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::service) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// What went wrong with a statement, as far as the store's callers care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ErrorKind {
    /// A query that must return one row returned none.
    NoRows,
    /// The database cannot be reached (PostgreSQL down, the pool empty past its wait).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Unavailable,
    /// Another transaction's write conflicts with this one (PostgreSQL's serialization failure or
    /// deadlock): the whole transaction may be run again.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Retry,
    /// Anything else: the statement, a constraint, a type, the disk.
    Other,
}

/// A failed statement.
#[derive(Debug)]
pub(super) struct DbError {
    pub(super) kind: ErrorKind,
    message: String,
}

impl DbError {
    pub(in crate::service::store) fn new(kind: ErrorKind, message: impl Into<String>) -> DbError {
        DbError {
            kind,
            message: message.into(),
        }
    }

    pub(in crate::service::store) fn no_rows() -> DbError {
        DbError::new(ErrorKind::NoRows, "query returned no rows")
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl From<rusqlite::Error> for DbError {
    fn from(error: rusqlite::Error) -> DbError {
        let kind = match error {
            rusqlite::Error::QueryReturnedNoRows => ErrorKind::NoRows,
            _ => ErrorKind::Other,
        };
        DbError::new(kind, error.to_string())
    }
}

impl From<DbError> for Error {
    fn from(error: DbError) -> Error {
        match error.kind {
            ErrorKind::Unavailable => Error::Unavailable(format!("database unavailable: {error}")),
            _ => Error::Storage(error.message),
        }
    }
}

/// Results of statements.
pub(super) type DbResult<T> = std::result::Result<T, DbError>;
