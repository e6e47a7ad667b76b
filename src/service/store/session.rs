//! Sessions, [`SessionRecord`]: started by a key, locked to the first fullname that uses them, ended
//! once. Ending with a phone number queues a [`SimSwapCheck`] for the job engine to deliver.

use rusqlite::{params, OptionalExtension, Row};

use super::{ensure_project, storage, Store};
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

/// A SIM-swap check waiting for delivery by the job engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimSwapCheck {
    /// The session it was requested for.
    pub session_id: String,
    /// The phone number to check.
    pub phone_number: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    /// Request time, Unix ms.
    pub requested_at: i64,
}

const COLUMNS: &str = "id, project_id, key_id, user_fullname, started_at, ended_at";

/// The session of this project with this id, read on `connection` (inside a write transaction
/// when the caller has just changed it).
fn find_session(
    connection: &rusqlite::Connection,
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

fn from_row(row: &Row<'_>) -> rusqlite::Result<SessionRecord> {
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

    /// Ends a session, queueing a SIM-swap check for `phone_number` in the same transaction.
    pub fn end_session(
        &self,
        project_id: &str,
        session_id: &str,
        phone_number: Option<&str>,
        now_ms: i64,
    ) -> Result<SessionRecord> {
        self.write(|transaction| {
            let changed = transaction
                .execute(
                    "UPDATE sessions SET ended_at = ?1 WHERE id = ?2 AND project_id = ?3 AND ended_at IS NULL",
                    params![now_ms, session_id, project_id],
                )
                .map_err(storage)?;
            let record = find_session(transaction, project_id, session_id)?
                .ok_or_else(|| Error::NotFound("session not found".to_owned()))?;
            if changed == 0 {
                return Err(Error::Conflict("session has already ended".to_owned()));
            }
            // The faces kept for match-faces go with the session.
            let faces = transaction
                .execute(
                    "DELETE FROM session_faces WHERE session_id = ?1",
                    params![session_id],
                )
                .map_err(storage)?;
            if let Some(phone_number) = phone_number {
                transaction
                    .execute(
                        "INSERT INTO sim_swap_checks (session_id, project_id, phone_number, status, requested_at)
                         VALUES (?1, ?2, ?3, 'pending', ?4)",
                        params![session_id, project_id, phone_number, now_ms],
                    )
                    .map_err(storage)?;
            }
            Ok((record, faces))
        })
        .and_then(|(record, faces)| {
            if faces > 0 {
                self.truncate_wal()?;
            }
            Ok(record)
        })
    }

    /// SIM-swap checks of the project still waiting for delivery, oldest first.
    pub fn pending_sim_swap_checks(&self, project_id: &str) -> Result<Vec<SimSwapCheck>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare(
                    "SELECT session_id, phone_number, status, requested_at FROM sim_swap_checks
                     WHERE project_id = ?1 AND status = 'pending' ORDER BY requested_at, session_id",
                )
                .map_err(storage)?;
            let rows = statement
                .query_map([project_id], |row| {
                    Ok(SimSwapCheck {
                        session_id: row.get(0)?,
                        phone_number: row.get(1)?,
                        status: row.get(2)?,
                        requested_at: row.get(3)?,
                    })
                })
                .map_err(storage)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(storage)
        })
    }
}
