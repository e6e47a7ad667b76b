//! API-key records, [`ApiKeyRecord`]: which keys a project has and whether they are revoked.
//! The key itself is a signed JWT that is never stored; only its id and claims are.

use super::sql::{params, OptionalExtension, Row};

use super::sql::DbResult;
use super::{ensure_project, storage, Store};
use crate::error::{Error, Result};

/// How a key came to be known to this store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyOrigin {
    /// Minted on this device by [`crate::service::keys::ApiKeys::create`].
    Created,
    /// Minted elsewhere (the customer's backend) and recorded when first presented, so it can be revoked.
    Seen,
}

impl ApiKeyOrigin {
    fn as_str(self) -> &'static str {
        match self {
            ApiKeyOrigin::Created => "created",
            ApiKeyOrigin::Seen => "seen",
        }
    }
}

/// One API key as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// The key's `id` claim.
    pub id: String,
    /// The project it belongs to.
    pub project_id: String,
    /// Service names from the `selected_services` claim.
    pub selected_services: Vec<String>,
    /// The `scores_id` claim, naming custom scoring rules.
    pub scores_id: Option<String>,
    /// A label given at creation.
    pub label: Option<String>,
    /// Created here or first seen here.
    pub origin: ApiKeyOrigin,
    /// Creation (or first-seen) time, Unix ms.
    pub created_at: i64,
    /// Revocation time, Unix ms; a revoked key is inactive forever.
    pub revoked_at: Option<i64>,
}

const COLUMNS: &str =
    "id, project_id, selected_services, scores_id, label, origin, created_at, revoked_at";

fn from_row(row: &Row<'_>) -> DbResult<ApiKeyRecord> {
    let services: String = row.get(2)?;
    let origin: String = row.get(5)?;
    Ok(ApiKeyRecord {
        id: row.get(0)?,
        project_id: row.get(1)?,
        selected_services: serde_json::from_str(&services).unwrap_or_default(),
        scores_id: row.get(3)?,
        label: row.get(4)?,
        origin: if origin == "created" {
            ApiKeyOrigin::Created
        } else {
            ApiKeyOrigin::Seen
        },
        created_at: row.get(6)?,
        revoked_at: row.get(7)?,
    })
}

impl Store {
    /// Records a key. A key id that exists already is a conflict.
    pub fn insert_api_key(&self, record: &ApiKeyRecord) -> Result<()> {
        self.write(|transaction| {
            ensure_project(transaction, &record.project_id, record.created_at)?;
            let services = serde_json::to_string(&record.selected_services).expect("strings serialise");
            let inserted = transaction
                .execute(
                    "INSERT INTO api_keys (id, project_id, selected_services, scores_id, label, origin, created_at, revoked_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
                    params![
                        record.id,
                        record.project_id,
                        services,
                        record.scores_id,
                        record.label,
                        record.origin.as_str(),
                        record.created_at,
                        record.revoked_at
                    ],
                )
                .map_err(storage)?;
            if inserted == 0 {
                return Err(Error::Conflict(format!("api key {} exists already", record.id)));
            }
            Ok(())
        })
    }

    /// The key with this id, in any project.
    pub fn api_key(&self, key_id: &str) -> Result<Option<ApiKeyRecord>> {
        self.read(|connection| {
            connection
                .query_row(
                    &format!("SELECT {COLUMNS} FROM api_keys WHERE id = ?1"),
                    [key_id],
                    from_row,
                )
                .optional()
                .map_err(storage)
        })
    }

    /// The project's keys, oldest first.
    pub fn api_keys(&self, project_id: &str) -> Result<Vec<ApiKeyRecord>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM api_keys WHERE project_id = ?1 ORDER BY created_at, id"
                ))
                .map_err(storage)?;
            let rows = statement
                .query_map([project_id], from_row)
                .map_err(storage)?;
            rows.collect::<DbResult<Vec<_>>>().map_err(storage)
        })
    }

    /// Revokes a key of the project. Revoking twice keeps the first revocation time.
    pub fn revoke_api_key(
        &self,
        project_id: &str,
        key_id: &str,
        now_ms: i64,
    ) -> Result<ApiKeyRecord> {
        self.write(|transaction| {
            let record = transaction
                .query_row(
                    &format!("SELECT {COLUMNS} FROM api_keys WHERE id = ?1 AND project_id = ?2"),
                    params![key_id, project_id],
                    from_row,
                )
                .optional()
                .map_err(storage)?
                .ok_or_else(|| {
                    Error::NotFound(format!(
                        "api key {key_id} not found in project {project_id}"
                    ))
                })?;
            if record.revoked_at.is_some() {
                return Ok(record);
            }
            transaction
                .execute(
                    "UPDATE api_keys SET revoked_at = ?1 WHERE id = ?2",
                    params![now_ms, key_id],
                )
                .map_err(storage)?;
            Ok(ApiKeyRecord {
                revoked_at: Some(now_ms),
                ..record
            })
        })
    }
}
