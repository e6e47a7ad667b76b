//! Consent per user per project: [`ConsentKind`] (authorization, storage), [`ConsentRecord`] and
//! [`ConsentState`]. Withdrawing storage consent deletes the user's templates in the same transaction.

use super::sql::{params, OptionalExtension};

use super::sql::Conn;
use super::{ensure_user, lock_user, storage, Store};
use crate::error::Result;

/// The two consents of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsentKind {
    /// Allows biometric processing; without it Face and Voice Recognition are removed.
    Authorization,
    /// Allows biometric data to be stored; required for enrollment.
    Storage,
}

impl ConsentKind {
    /// The stored and reported name: `authorization` or `storage`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConsentKind::Authorization => "authorization",
            ConsentKind::Storage => "storage",
        }
    }
}

/// One consent's current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsentRecord {
    /// Whether the consent is in force now.
    pub given: bool,
    /// When it was last given, Unix ms.
    pub given_at: Option<i64>,
    /// When it was last withdrawn, Unix ms.
    pub withdrawn_at: Option<i64>,
}

/// Both consents of one user in one project; a user never seen has neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsentState {
    /// Authorization consent.
    pub authorization: ConsentRecord,
    /// Storage consent.
    pub storage: ConsentRecord,
}

impl ConsentState {
    /// The record of one kind.
    pub fn get(&self, kind: ConsentKind) -> ConsentRecord {
        match kind {
            ConsentKind::Authorization => self.authorization,
            ConsentKind::Storage => self.storage,
        }
    }
}

/// Reads one consent inside an open transaction or connection.
pub(super) fn read_consent(
    connection: &Conn<'_>,
    project_id: &str,
    fullname: &str,
    kind: ConsentKind,
) -> Result<ConsentRecord> {
    let record = connection
        .query_row(
            "SELECT c.given, c.given_at, c.withdrawn_at FROM consents c JOIN users u ON u.id = c.user_id
             WHERE u.project_id = ?1 AND u.fullname = ?2 AND c.kind = ?3",
            params![project_id, fullname, kind.as_str()],
            |row| Ok(ConsentRecord { given: row.get::<i64>(0)? == 1, given_at: row.get(1)?, withdrawn_at: row.get(2)? }),
        )
        .optional()
        .map_err(storage)?;
    Ok(record.unwrap_or_default())
}

impl Store {
    /// Gives (`given = true`) or withdraws a consent. Returns the new record and, when storage consent
    /// is withdrawn, how many templates were deleted with it. Withdrawing either consent also
    /// deletes the faces kept with the user's sessions and the user's videos waiting for a forgery
    /// analysis; the write-ahead log is then truncated.
    pub fn set_consent(
        &self,
        project_id: &str,
        fullname: &str,
        kind: ConsentKind,
        given: bool,
        now_ms: i64,
    ) -> Result<(ConsentRecord, usize)> {
        self.write(|transaction| {
            let user_id = ensure_user(transaction, project_id, fullname, now_ms)?;
            // Enrollments of this user hold the same row: none slips past a withdrawal.
            lock_user(transaction, user_id)?;
            let previous = read_consent(transaction, project_id, fullname, kind)?;
            let record = if given {
                ConsentRecord { given: true, given_at: Some(now_ms), withdrawn_at: previous.withdrawn_at }
            } else {
                ConsentRecord { given: false, given_at: previous.given_at, withdrawn_at: Some(now_ms) }
            };
            transaction
                .execute(
                    "INSERT INTO consents (user_id, kind, given, given_at, withdrawn_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (user_id, kind) DO UPDATE SET
                        given = excluded.given, given_at = excluded.given_at,
                        withdrawn_at = excluded.withdrawn_at, updated_at = excluded.updated_at",
                    params![user_id, kind.as_str(), i64::from(given), record.given_at, record.withdrawn_at, now_ms],
                )
                .map_err(storage)?;
            // Withdrawn storage consent means the stored biometric data must go, now, not later.
            let deleted = if kind == ConsentKind::Storage && !given {
                transaction.execute("DELETE FROM templates WHERE user_id = ?1", [user_id]).map_err(storage)?
            } else {
                0
            };
            // Faces kept with the user's sessions need both consents: either withdrawn, they go.
            let session_faces = if given {
                0
            } else {
                transaction
                    .execute(
                        "DELETE FROM session_faces WHERE session_id IN
                            (SELECT id FROM sessions WHERE project_id = ?1 AND user_fullname = ?2)",
                        params![project_id, fullname],
                    )
                    .map_err(storage)?
            };
            // So do the user's videos still waiting for a forgery analysis.
            let uploads = if given {
                0
            } else {
                super::avf::drop_user_uploads(transaction, project_id, fullname, now_ms)?
            };
            Ok((record, deleted, session_faces + uploads))
        })
        .and_then(|(record, deleted, session_faces)| {
            if deleted + session_faces > 0 {
                self.truncate_wal()?;
            }
            Ok((record, deleted))
        })
    }

    /// Both consents of a user.
    pub fn consent(&self, project_id: &str, fullname: &str) -> Result<ConsentState> {
        self.read(|connection| {
            Ok(ConsentState {
                authorization: read_consent(
                    connection,
                    project_id,
                    fullname,
                    ConsentKind::Authorization,
                )?,
                storage: read_consent(connection, project_id, fullname, ConsentKind::Storage)?,
            })
        })
    }
}
