//! The projects' webhook signing secrets (Standard Webhooks): sealed with the engine's key like
//! templates, bound to their project and id, so a copied database file signs nothing.

use super::sql::{params, OptionalExtension};

use super::seal::{Binding, TEMPLATE_FORMAT_VERSION};
use super::sql::{Conn, DbResult};
use super::{ensure_project, storage, Store};
use crate::error::{Error, Result};

/// A signing secret in use: the newest signs alone, or beside older ones still in their grace.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret {
    /// `whk_<32 hex>`.
    pub id: String,
    /// The secret's bytes (what `whsec_` + base64 encodes).
    pub secret: Vec<u8>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms after which it no longer signs (set when a newer secret replaced it).
    pub expires_at: Option<i64>,
}

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SigningSecret")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// id, sealed bytes, format version, created_at, expires_at.
type SealedRow = (String, Vec<u8>, u32, i64, Option<i64>);

/// What a secret's seal is bound to: its project and id, and for a webhook endpoint's secret the
/// endpoint too (`owner/id`), so a row moved to another owner no longer opens.
fn bound_name(owner: &str, id: &str) -> String {
    if owner.is_empty() {
        id.to_owned()
    } else {
        format!("{owner}/{id}")
    }
}

fn binding<'a>(project_id: &'a str, name: &'a str) -> Binding<'a> {
    Binding {
        project_id,
        fullname: name,
        modality: "signing_secret",
        model_id: "",
        model_version: 0,
    }
}

/// Writes a sealed secret row of `owner` ('' for the project's job-delivery secret).
pub(super) fn insert_secret_row(
    transaction: &Conn<'_>,
    project_id: &str,
    owner: &str,
    secret: &SigningSecret,
    sealed: &[u8],
) -> Result<()> {
    transaction
        .execute(
            "INSERT INTO signing_secrets (id, project_id, owner, sealed, format_version, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
            params![
                secret.id,
                project_id,
                owner,
                sealed,
                TEMPLATE_FORMAT_VERSION,
                secret.created_at
            ],
        )
        .map_err(storage)?;
    Ok(())
}

impl Store {
    /// Seals a secret of `owner` for storage.
    pub(super) fn seal_secret(
        &self,
        project_id: &str,
        owner: &str,
        secret: &SigningSecret,
    ) -> Result<Vec<u8>> {
        let name = bound_name(owner, &secret.id);
        self.key.seal(&binding(project_id, &name), &secret.secret)
    }

    /// Stores `secret` as the newest of `owner` ('' for the project's job-delivery secret, else a
    /// webhook endpoint's id, which must exist: [`Error::NotFound`] otherwise); every older secret
    /// of the owner still signing stops at `old_expire_at` (or earlier, when it was already
    /// ending), in the same transaction. Returns when the last of those older secrets stops
    /// signing (`None`: there was none).
    pub fn rotate_signing_secret(
        &self,
        project_id: &str,
        owner: &str,
        secret: &SigningSecret,
        old_expire_at: i64,
    ) -> Result<Option<i64>> {
        let sealed = self.seal_secret(project_id, owner, secret)?;
        self.write(|transaction| {
            ensure_project(transaction, project_id, secret.created_at)?;
            if !owner.is_empty() {
                let exists: Option<i64> = transaction
                    .query_row(
                        "SELECT seq FROM webhook_endpoints WHERE project_id = ?1 AND id = ?2",
                        params![project_id, owner],
                        |row| row.get(0),
                    )
                    .optional()
                    .map_err(storage)?;
                if exists.is_none() {
                    return Err(Error::NotFound("webhook not found".to_owned()));
                }
            }
            transaction
                .execute(
                    "UPDATE signing_secrets SET expires_at = ?3
                     WHERE project_id = ?1 AND owner = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
                    params![project_id, owner, old_expire_at],
                )
                .map_err(storage)?;
            insert_secret_row(transaction, project_id, owner, secret, &sealed)?;
            transaction
                .query_row(
                    "SELECT MAX(expires_at) FROM signing_secrets
                     WHERE project_id = ?1 AND owner = ?2 AND id != ?3 AND expires_at > ?4",
                    params![project_id, owner, secret.id, secret.created_at],
                    |row| row.get(0),
                )
                .map_err(storage)
        })
    }

    /// The secrets of `owner` that still sign at `now`, newest first. A secret that no longer
    /// opens (its row altered) is left out: it signs nothing.
    pub fn signing_secrets(
        &self,
        project_id: &str,
        owner: &str,
        now: i64,
    ) -> Result<Vec<SigningSecret>> {
        let rows: Vec<SealedRow> = self.read(|connection| {
            let mut statement = connection
                .prepare_cached(
                    "SELECT id, sealed, format_version, created_at, expires_at FROM signing_secrets
                     WHERE project_id = ?1 AND owner = ?2 AND (expires_at IS NULL OR expires_at > ?3)
                     ORDER BY created_at DESC, id",
                )
                .map_err(storage)?;
            let rows = statement
                .query_map(params![project_id, owner, now], |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                    ))
                })
                .map_err(storage)?
                .collect::<DbResult<Vec<_>>>()
                .map_err(storage)?;
            Ok(rows)
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, sealed, format_version, created_at, expires_at)| {
                let name = bound_name(owner, &id);
                let secret = self
                    .key
                    .open(&binding(project_id, &name), format_version, &sealed)
                    .ok()?;
                Some(SigningSecret {
                    id,
                    secret,
                    created_at,
                    expires_at,
                })
            })
            .collect())
    }
}
