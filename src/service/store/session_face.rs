//! Faces kept with a session for match-faces: the live faces of its process-video and the portrait
//! of its docauth/check ([`FaceSource`]). Sealed like templates, bound to the project, the session
//! and the source, written only with both of the session user's consents (biometric data kept
//! beyond the request: authorization to process, storage to keep), replaced by the next call of
//! the same kind, and deleted when the session ends, when either consent is withdrawn, or when
//! older than the engine's `session_faces_ttl_s` ([`Store::purge_session_faces`]).

use super::sql::params;

use super::consent::ConsentKind;
use super::seal::{insert_sealed, Binding, Owner};
use super::template::{require_consent, TemplateModel};
use super::{storage, Store};
use crate::error::Result;

/// Where a session's face came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaceSource {
    /// The session's process-video.
    Video,
    /// The session's docauth/check portrait.
    Document,
}

impl FaceSource {
    /// `video` or `document`.
    pub fn as_str(self) -> &'static str {
        match self {
            FaceSource::Video => "video",
            FaceSource::Document => "document",
        }
    }

    fn modality(self) -> &'static str {
        match self {
            FaceSource::Video => "session-video-face",
            FaceSource::Document => "session-document-face",
        }
    }
}

impl Store {
    /// Replaces the session's faces from `source` with `faces` (template bytes of `model`), in one
    /// transaction. Needs both consents of `fullname`, the session's user.
    pub fn replace_session_faces(
        &self,
        project_id: &str,
        (session_id, fullname): (&str, &str),
        source: FaceSource,
        model: &TemplateModel,
        faces: &[Vec<u8>],
        now_ms: i64,
    ) -> Result<()> {
        self.write(|transaction| {
            require_consent(
                transaction,
                project_id,
                fullname,
                ConsentKind::Authorization,
            )?;
            require_consent(transaction, project_id, fullname, ConsentKind::Storage)?;
            transaction
                .execute(
                    "DELETE FROM session_faces WHERE session_id = ?1 AND source = ?2",
                    params![session_id, source.as_str()],
                )
                .map_err(storage)?;
            let binding = Binding {
                project_id,
                fullname: session_id,
                modality: source.modality(),
                model_id: &model.model_id,
                model_version: model.model_version,
            };
            for face in faces {
                insert_sealed(
                    transaction,
                    &self.key,
                    Owner::Session {
                        session_id,
                        source: source.as_str(),
                    },
                    &binding,
                    face,
                    now_ms,
                )?;
            }
            Ok(())
        })
    }

    /// Deletes the session faces made before `cutoff_ms` (expired), in every session, and
    /// returns how many went (the write-ahead log is truncated when any did).
    pub fn purge_session_faces(&self, cutoff_ms: i64) -> Result<usize> {
        let deleted = self.write(|transaction| {
            transaction
                .execute(
                    "DELETE FROM session_faces WHERE created_at < ?1",
                    [cutoff_ms],
                )
                .map_err(storage)
        })?;
        if deleted > 0 {
            self.truncate_wal()?;
        }
        Ok(deleted)
    }

    /// Opens the session's faces from `source` made by `model` (needs the authorization consent of
    /// `fullname`, the session's user).
    pub fn session_faces(
        &self,
        project_id: &str,
        (session_id, fullname): (&str, &str),
        source: FaceSource,
        model: &TemplateModel,
    ) -> Result<Vec<Vec<u8>>> {
        self.read(|connection| {
            require_consent(connection, project_id, fullname, ConsentKind::Authorization)?;
            let mut statement = connection
                .prepare(
                    "SELECT format_version, sealed FROM session_faces
                     WHERE session_id = ?1 AND source = ?2 AND model_id = ?3 AND model_version = ?4
                     ORDER BY id",
                )
                .map_err(storage)?;
            let rows = statement
                .query_map(
                    params![
                        session_id,
                        source.as_str(),
                        model.model_id,
                        model.model_version
                    ],
                    |row| Ok((row.get::<u32>(0)?, row.get::<Vec<u8>>(1)?)),
                )
                .map_err(storage)?;
            let binding = Binding {
                project_id,
                fullname: session_id,
                modality: source.modality(),
                model_id: &model.model_id,
                model_version: model.model_version,
            };
            let mut faces = Vec::new();
            for row in rows {
                let (format_version, sealed) = row.map_err(storage)?;
                faces.push(self.key.open(&binding, format_version, &sealed)?);
            }
            Ok(faces)
        })
    }
}
