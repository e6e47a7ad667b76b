//! Cron schedules of the job-scheduling service and the jobs they spawn, one per slot.

use std::collections::BTreeMap;

use super::sql::{params, OptionalExtension, Row};

use super::sql::DbResult;
use super::{ensure_project, map_from_json, map_to_json, storage, Store, Tx};
use crate::error::{Error, Result};

/// One schedule, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRecord {
    /// `sched_<32 hex>`.
    pub id: String,
    /// The owning project.
    pub project_id: String,
    /// Target of every spawned job.
    pub url: String,
    /// Method of every spawned job.
    pub http_method: String,
    /// The 5-field cron expression, UTC.
    pub cron: String,
    /// Headers of every spawned job.
    pub headers: BTreeMap<String, String>,
    /// Body of every spawned job.
    pub body: Option<String>,
    /// Retries of every spawned job.
    pub max_retries: u32,
    /// Webhook of every spawned job.
    pub webhook_url: Option<String>,
    /// Webhook headers of every spawned job.
    pub webhook_headers: BTreeMap<String, String>,
    /// `active` or `deleted`.
    pub active: bool,
    /// The next slot, Unix ms.
    pub next_run_at: Option<i64>,
    /// Unix ms.
    pub created_at: i64,
}

/// A page of schedules, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulePage {
    /// The schedules.
    pub schedules: Vec<ScheduleRecord>,
    /// Pass as `before` for the next page; `None` on the last page.
    pub next_before: Option<i64>,
}

const COLUMNS: &str = "seq, id, project_id, url, http_method, cron, headers, body, max_retries, \
    webhook_url, webhook_headers, status, next_run_at, created_at";

fn from_row(row: &Row<'_>) -> DbResult<(i64, ScheduleRecord)> {
    let map = map_from_json;
    let status: String = row.get(11)?;
    Ok((
        row.get(0)?,
        ScheduleRecord {
            id: row.get(1)?,
            project_id: row.get(2)?,
            url: row.get(3)?,
            http_method: row.get(4)?,
            cron: row.get(5)?,
            headers: map(row.get(6)?),
            body: row.get(7)?,
            max_retries: row.get(8)?,
            webhook_url: row.get(9)?,
            webhook_headers: map(row.get(10)?),
            active: status == "active",
            next_run_at: row.get(12)?,
            created_at: row.get(13)?,
        },
    ))
}

impl Store {
    /// Stores a new active schedule.
    pub fn insert_schedule(&self, schedule: &ScheduleRecord, now_ms: i64) -> Result<()> {
        self.write(|transaction| {
            ensure_project(transaction, &schedule.project_id, now_ms)?;
            transaction
                .execute(
                    &format!(
                        "INSERT INTO schedules ({}, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                        COLUMNS.trim_start_matches("seq, ")
                    ),
                    params![
                        schedule.id,
                        schedule.project_id,
                        schedule.url,
                        schedule.http_method,
                        schedule.cron,
                        map_to_json(&schedule.headers),
                        schedule.body,
                        schedule.max_retries,
                        schedule.webhook_url,
                        map_to_json(&schedule.webhook_headers),
                        if schedule.active { "active" } else { "deleted" },
                        schedule.next_run_at,
                        schedule.created_at,
                        now_ms,
                    ],
                )
                .map_err(storage)?;
            Ok(())
        })
    }

    /// A page of the project's active schedules, newest first.
    pub fn schedules(
        &self,
        project_id: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<SchedulePage> {
        self.read(|connection| {
            let mut statement = connection
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM schedules
                     WHERE project_id = ?1 AND seq < ?2 AND status = 'active'
                     ORDER BY seq DESC LIMIT ?3"
                ))
                .map_err(storage)?;
            let mut rows = statement
                .query_map(
                    params![project_id, before.unwrap_or(i64::MAX), limit as i64 + 1],
                    from_row,
                )
                .map_err(storage)?
                .collect::<DbResult<Vec<_>>>()
                .map_err(storage)?;
            let next_before = if rows.len() > limit {
                rows.truncate(limit);
                rows.last().map(|(seq, _)| *seq)
            } else {
                None
            };
            Ok(SchedulePage {
                schedules: rows.into_iter().map(|(_, schedule)| schedule).collect(),
                next_before,
            })
        })
    }

    /// Deletes an active schedule: no slot after this spawns a job (jobs already spawned stay).
    pub fn delete_schedule(
        &self,
        project_id: &str,
        schedule_id: &str,
        now_ms: i64,
    ) -> Result<ScheduleRecord> {
        self.write(|transaction| {
            let found = transaction
                .query_row(
                    &format!(
                        "SELECT {COLUMNS} FROM schedules WHERE id = ?1 AND project_id = ?2 AND status = 'active'"
                    ),
                    params![schedule_id, project_id],
                    from_row,
                )
                .optional()
                .map_err(storage)?
                .ok_or_else(|| Error::NotFound("schedule not found".to_owned()))?;
            transaction
                .execute(
                    "UPDATE schedules SET status = 'deleted', next_run_at = NULL, updated_at = ?1
                     WHERE id = ?2",
                    params![now_ms, schedule_id],
                )
                .map_err(storage)?;
            Ok(ScheduleRecord {
                active: false,
                next_run_at: None,
                ..found.1
            })
        })
    }
}

impl Tx<'_> {
    /// The active schedules whose next run is due at `now_ms`.
    pub(in crate::service) fn due_schedules(&self, now_ms: i64) -> Result<Vec<ScheduleRecord>> {
        let mut statement = self
            .rows
            .prepare(&format!(
                "SELECT {COLUMNS} FROM schedules
                 WHERE status = 'active' AND next_run_at IS NOT NULL AND next_run_at <= ?1"
            ))
            .map_err(storage)?;
        let rows = statement
            .query_map([now_ms], from_row)
            .map_err(storage)?
            .collect::<DbResult<Vec<_>>>()
            .map_err(storage)?;
        Ok(rows.into_iter().map(|(_, schedule)| schedule).collect())
    }

    /// Writes the job `job_id` of the schedule's `slot` (due then), unless the slot already has
    /// its job (the `(schedule_id, slot)` key). Returns whether it was written.
    pub(in crate::service) fn insert_slot_job(
        &self,
        schedule: &ScheduleRecord,
        slot: i64,
        job_id: &str,
        now_ms: i64,
    ) -> Result<bool> {
        let written = self
            .rows
            .execute(
                "INSERT INTO jobs (id, project_id, url, http_method, headers, body,
                     scheduled_at, max_retries, webhook_url, webhook_headers, status,
                     attempts, next_attempt_at, created_at, updated_at, schedule_id, slot)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'scheduled', 0, ?7, ?11, ?11, ?12, ?13)
                 ON CONFLICT DO NOTHING",
                params![
                    job_id,
                    schedule.project_id,
                    schedule.url,
                    schedule.http_method,
                    map_to_json(&schedule.headers),
                    schedule.body,
                    slot,
                    schedule.max_retries,
                    schedule.webhook_url,
                    map_to_json(&schedule.webhook_headers),
                    now_ms,
                    schedule.id,
                    slot,
                ],
            )
            .map_err(storage)?;
        Ok(written > 0)
    }

    /// Sets when the schedule runs next (`None`: never).
    pub(in crate::service) fn set_next_run(
        &self,
        schedule_id: &str,
        next_run_at: Option<i64>,
        now_ms: i64,
    ) -> Result<()> {
        self.rows
            .execute(
                "UPDATE schedules SET next_run_at = ?1, updated_at = ?2 WHERE id = ?3",
                params![next_run_at, now_ms, schedule_id],
            )
            .map_err(storage)?;
        Ok(())
    }
}
