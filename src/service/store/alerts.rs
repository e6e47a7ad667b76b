//! Alert channels of the job-scheduling service: where a permanent job failure is reported.

use super::sql::{params, Row};

use super::sql::DbResult;
use super::{ensure_project, storage, Store};
use crate::error::{Error, Result};

/// One alert channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertChannel {
    /// `alt_<32 hex>`.
    pub id: String,
    /// The owning project.
    pub project_id: String,
    /// `webhook` or `slack`.
    pub kind: String,
    /// Destination URL.
    pub target: String,
    /// Optional label.
    pub name: Option<String>,
    /// Paused channels are not notified.
    pub enabled: bool,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
}

const COLUMNS: &str = "id, project_id, type, target, name, enabled, created_at, updated_at";

fn from_row(row: &Row<'_>) -> DbResult<AlertChannel> {
    Ok(AlertChannel {
        id: row.get(0)?,
        project_id: row.get(1)?,
        kind: row.get(2)?,
        target: row.get(3)?,
        name: row.get(4)?,
        enabled: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
    })
}

fn not_found() -> Error {
    Error::NotFound("alert channel not found".to_owned())
}

impl Store {
    /// Stores a new channel.
    pub fn insert_alert_channel(&self, channel: &AlertChannel) -> Result<()> {
        self.write(|transaction| {
            ensure_project(transaction, &channel.project_id, channel.created_at)?;
            transaction
                .execute(
                    &format!("INSERT INTO alert_channels ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
                    params![
                        channel.id,
                        channel.project_id,
                        channel.kind,
                        channel.target,
                        channel.name,
                        channel.enabled,
                        channel.created_at,
                        channel.updated_at
                    ],
                )
                .map_err(storage)?;
            Ok(())
        })
    }

    /// The project's channels, oldest first; only the enabled ones when `enabled_only`.
    pub fn alert_channels(
        &self,
        project_id: &str,
        enabled_only: bool,
    ) -> Result<Vec<AlertChannel>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM alert_channels
                     WHERE project_id = ?1 AND (?2 = 0 OR enabled = 1) ORDER BY seq"
                ))
                .map_err(storage)?;
            let rows = statement
                .query_map(params![project_id, enabled_only], from_row)
                .map_err(storage)?;
            rows.collect::<DbResult<Vec<_>>>().map_err(storage)
        })
    }

    /// Pauses or resumes a channel ([`Error::NotFound`] when the project has no such channel).
    pub fn set_alert_channel_enabled(
        &self,
        project_id: &str,
        id: &str,
        enabled: bool,
        now_ms: i64,
    ) -> Result<()> {
        self.write(|transaction| {
            let changed = transaction
                .execute(
                    "UPDATE alert_channels SET enabled = ?1, updated_at = ?2
                     WHERE id = ?3 AND project_id = ?4",
                    params![enabled, now_ms, id, project_id],
                )
                .map_err(storage)?;
            if changed == 0 {
                return Err(not_found());
            }
            Ok(())
        })
    }

    /// Deletes a channel ([`Error::NotFound`] when the project has no such channel).
    pub fn delete_alert_channel(&self, project_id: &str, id: &str) -> Result<()> {
        self.write(|transaction| {
            let changed = transaction
                .execute(
                    "DELETE FROM alert_channels WHERE id = ?1 AND project_id = ?2",
                    params![id, project_id],
                )
                .map_err(storage)?;
            if changed == 0 {
                return Err(not_found());
            }
            Ok(())
        })
    }
}
