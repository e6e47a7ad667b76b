//! Sessions, [`SessionRecord`]: started by a key, locked to the first fullname that uses them, ended
//! once. The service ends a session in a transaction that also queues its `session.ended` event
//! and, with a phone number, its SIM-swap check.

use super::sql::{params, OptionalExtension, Row};

use super::sql::{Conn, DbResult};
use super::{ensure_project, storage, Store, Tx};
use crate::error::{Error, Result};

/// One session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// Session identifier (`sess_...`).
    pub id: String,
    /// Project of the key that started it.
    pub project_id: String,
    /// Id of the key that started it.
    pub key_id: String,
    /// The fullname the session is locked to, once a request in it named one.
    pub user_fullname: Option<String>,
    /// Start time, Unix ms.
    pub started_at: i64,
    /// End time, Unix ms.
    pub ended_at: Option<i64>,
}

const COLUMNS: &str = "id, project_id, key_id, user_fullname, started_at, ended_at";

/// The session of this project with this id, read on `connection` (inside a write transaction
/// when the caller has just changed it).
fn find_session(
    connection: &Conn<'_>,
    project_id: &str,
    session_id: &str,
) -> Result<Option<SessionRecord>> {
    connection
        .query_row(
            &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1 AND project_id = ?2"),
            params![session_id, project_id],
            from_row,
        )
        .optional()
        .map_err(storage)
}

fn from_row(row: &Row<'_>) -> DbResult<SessionRecord> {
    Ok(SessionRecord {
        id: row.get(0)?,
        project_id: row.get(1)?,
        key_id: row.get(2)?,
        user_fullname: row.get(3)?,
        started_at: row.get(4)?,
        ended_at: row.get(5)?,
    })
}

/// What binding a fullname to a session found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionBinding {
    /// The session is (now) locked to this fullname.
    Bound(SessionRecord),
    /// The session is locked to another fullname.
    OtherUser,
}

impl Store {
    /// Stores a new session.
    pub fn insert_session(
        &self,
        id: &str,
        project_id: &str,
        key_id: &str,
        now_ms: i64,
    ) -> Result<SessionRecord> {
        self.write(|transaction| {
            ensure_project(transaction, project_id, now_ms)?;
            transaction
                .execute(
                    "INSERT INTO sessions (id, project_id, key_id, started_at) VALUES (?1, ?2, ?3, ?4)",
                    params![id, project_id, key_id, now_ms],
                )
                .map_err(storage)?;
            Ok(SessionRecord {
                id: id.to_owned(),
                project_id: project_id.to_owned(),
                key_id: key_id.to_owned(),
                user_fullname: None,
                started_at: now_ms,
                ended_at: None,
            })
        })
    }

    /// The session of this project with this id.
    pub fn session(&self, project_id: &str, session_id: &str) -> Result<Option<SessionRecord>> {
        self.read(|connection| find_session(connection, project_id, session_id))
    }

    /// Locks the session to `fullname` if it is not locked yet, atomically, and reports whether the
    /// fullname is the one it is locked to.
    pub fn bind_session(
        &self,
        project_id: &str,
        session_id: &str,
        fullname: &str,
    ) -> Result<SessionBinding> {
        self.write(|transaction| {
            transaction
                .execute(
                    "UPDATE sessions SET user_fullname = ?1 WHERE id = ?2 AND project_id = ?3 AND user_fullname IS NULL",
                    params![fullname, session_id, project_id],
                )
                .map_err(storage)?;
            let record = find_session(transaction, project_id, session_id)?
                .ok_or_else(|| Error::NotFound("session not found".to_owned()))?;
            Ok(if record.user_fullname.as_deref() == Some(fullname) {
                SessionBinding::Bound(record)
            } else {
                SessionBinding::OtherUser
            })
        })
    }
}

impl Tx<'_> {
    /// Ends the project's session ([`Error::NotFound`] when there is none, [`Error::Conflict`]
    /// when it already ended) and deletes the faces kept for match-faces with it.
    pub(in crate::service) fn end_session(
        &self,
        project_id: &str,
        session_id: &str,
        now_ms: i64,
    ) -> Result<SessionRecord> {
        let changed = self
            .rows
            .execute(
                "UPDATE sessions SET ended_at = ?1 WHERE id = ?2 AND project_id = ?3 AND ended_at IS NULL",
                params![now_ms, session_id, project_id],
            )
            .map_err(storage)?;
        let record = find_session(&self.rows, project_id, session_id)?
            .ok_or_else(|| Error::NotFound("session not found".to_owned()))?;
        if changed == 0 {
            return Err(Error::Conflict("session has already ended".to_owned()));
        }
        let faces = self
            .rows
            .execute(
                "DELETE FROM session_faces WHERE session_id = ?1",
                params![session_id],
            )
            .map_err(storage)?;
        if faces > 0 {
            self.erased();
        }
        Ok(record)
    }
}
