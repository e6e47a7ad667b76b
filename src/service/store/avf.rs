//! Asynchronous video-forgery analyses (`avf/infer`): one row per upload. The video is sealed with
//! the template key (bound to the project and the request id) from its acceptance until its
//! analysis ends, then dropped in the transaction that records the verdict; the write-ahead log
//! is truncated after. An upload not analysed within [`AVF_UPLOAD_RETENTION_MS`] is dropped and its
//! request fails; records (verdicts, no media) are deleted after [`AVF_RECORD_RETENTION_MS`].
//! Analyses are claimed like jobs: a lease of [`super::super::pump`]'s length, at most
//! [`AVF_MAX_ATTEMPTS`] claims, so a pump that dies mid-analysis leaves the next pump to try again.

use rusqlite::{params, OptionalExtension};
use serde_json::Value;

use super::events::enqueue_event;
use super::seal::Binding;
use super::{ensure_project, storage, Store};
use crate::error::{Error, Result};

/// Longest an upload waits for its analysis: 24 hours.
pub const AVF_UPLOAD_RETENTION_MS: i64 = 24 * 3_600_000;
/// How long a record (status and verdict) is kept: 30 days.
pub const AVF_RECORD_RETENTION_MS: i64 = 30 * 24 * 3_600_000;
/// Most uploads of one project waiting for their analysis (stored and not yet analysed).
pub const AVF_MAX_WAITING: i64 = 32;
/// Most bytes of one project's waiting uploads (1 GiB: ten of the largest the spec allows), so a
/// client that uploads faster than the pump analyses cannot fill the device's storage.
pub const AVF_MAX_WAITING_BYTES: i64 = 1 << 30;
/// Claims of one analysis before it fails (the analysis itself never retries a verdict: only a
/// pump that died mid-way makes another claim).
pub const AVF_MAX_ATTEMPTS: i64 = 3;

/// Where an analysis stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AvfStatus {
    /// Stored, waiting for a pump.
    Pending,
    /// A pump is analysing it.
    Processing,
    /// Analysed: the verdict is in `result`.
    Completed,
    /// Not analysed: `error` says why.
    Failed,
}

impl AvfStatus {
    /// `pending`, `processing`, `completed` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            AvfStatus::Pending => "pending",
            AvfStatus::Processing => "processing",
            AvfStatus::Completed => "completed",
            AvfStatus::Failed => "failed",
        }
    }

    fn parse(text: &str) -> AvfStatus {
        match text {
            "processing" => AvfStatus::Processing,
            "completed" => AvfStatus::Completed,
            "failed" => AvfStatus::Failed,
            _ => AvfStatus::Pending,
        }
    }
}

/// An analysis as stored (without its upload).
#[derive(Debug, Clone, PartialEq)]
pub struct AvfRow {
    /// The request id (`data.metadata.request_id`).
    pub id: String,
    /// The project.
    pub project_id: String,
    /// `X-User-Fullname` of the upload, if given.
    pub user_fullname: Option<String>,
    /// `X-Session-ID` of the upload, if given.
    pub session_id: Option<String>,
    /// The upload's file name.
    pub source_filename: String,
    /// Where it stands.
    pub status: AvfStatus,
    /// Bytes uploaded.
    pub upload_bytes: i64,
    /// Claims so far.
    pub attempts: i64,
    /// The verdict (JSON text) once completed.
    pub result: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// Times, ms.
    pub received_at: i64,
    /// When the last claim began.
    pub started_at: Option<i64>,
    /// When it completed or failed.
    pub completed_at: Option<i64>,
}

const COLUMNS: &str = "id, project_id, user_fullname, session_id, source_filename, status, \
     upload_bytes, attempts, result, error, received_at, started_at, completed_at";

fn row_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<AvfRow> {
    Ok(AvfRow {
        id: row.get(0)?,
        project_id: row.get(1)?,
        user_fullname: row.get(2)?,
        session_id: row.get(3)?,
        source_filename: row.get(4)?,
        status: AvfStatus::parse(&row.get::<_, String>(5)?),
        upload_bytes: row.get(6)?,
        attempts: row.get(7)?,
        result: row.get(8)?,
        error: row.get(9)?,
        received_at: row.get(10)?,
        started_at: row.get(11)?,
        completed_at: row.get(12)?,
    })
}

/// What the seal of an upload is bound to.
fn binding<'a>(project_id: &'a str, id: &'a str) -> Binding<'a> {
    Binding {
        project_id,
        fullname: id,
        modality: "avf-upload",
        model_id: "video",
        model_version: 1,
    }
}

/// An analysis claimed by a pump: its row and the opened upload.
#[derive(Debug)]
pub struct AvfClaim {
    /// The row, as claimed (status `processing`).
    pub row: AvfRow,
    /// The video.
    pub video: Vec<u8>,
}

impl Store {
    /// Stores an upload, sealed, as a `pending` analysis (`row.status` and the times are taken
    /// as given), unless the project already has [`AVF_MAX_WAITING`] uploads or
    /// [`AVF_MAX_WAITING_BYTES`] waiting ([`Error::Conflict`]).
    pub fn insert_avf(&self, row: &AvfRow, video: &[u8]) -> Result<()> {
        let sealed = self.key.seal(&binding(&row.project_id, &row.id), video)?;
        self.write(|transaction| {
            ensure_project(transaction, &row.project_id, row.received_at)?;
            let (waiting, bytes): (i64, i64) = transaction
                .query_row(
                    "SELECT COUNT(*), COALESCE(SUM(upload_bytes), 0) FROM avf_requests
                     WHERE project_id = ?1 AND upload IS NOT NULL",
                    [&row.project_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(storage)?;
            if waiting >= AVF_MAX_WAITING || bytes + video.len() as i64 > AVF_MAX_WAITING_BYTES {
                return Err(Error::Conflict(format!(
                    "too many videos are waiting for analysis in this project ({waiting}, {} MB): \
                     try again once the job pump has analysed them",
                    bytes / 1_000_000
                )));
            }
            transaction
                .execute(
                    "INSERT INTO avf_requests (id, project_id, user_fullname, session_id,
                         source_filename, status, upload, upload_bytes, received_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, ?8)",
                    params![
                        row.id,
                        row.project_id,
                        row.user_fullname,
                        row.session_id,
                        row.source_filename,
                        sealed,
                        video.len() as i64,
                        row.received_at
                    ],
                )
                .map_err(storage)?;
            Ok(())
        })
    }

    /// The analysis `id` of `project_id` (`None` for another project's).
    pub fn avf(&self, project_id: &str, id: &str) -> Result<Option<AvfRow>> {
        self.read(|connection| {
            connection
                .query_row(
                    &format!(
                        "SELECT {COLUMNS} FROM avf_requests WHERE id = ?1 AND project_id = ?2"
                    ),
                    params![id, project_id],
                    row_of,
                )
                .optional()
                .map_err(storage)
        })
    }

    /// When the next analysis is due (Unix ms): the oldest waiting upload's receipt, or the end of
    /// a running analysis's lease; `None` when no upload waits.
    pub fn next_avf_due_ms(&self) -> Result<Option<i64>> {
        self.read(|connection| {
            connection
                .query_row(
                    "SELECT MIN(CASE WHEN status = 'pending' THEN received_at ELSE lease_until END)
                     FROM avf_requests
                     WHERE upload IS NOT NULL AND status IN ('pending', 'processing')",
                    [],
                    |row| row.get(0),
                )
                .map_err(storage)
        })
    }

    /// Housekeeping, then the oldest analysis due: `pending`, or `processing` with its lease
    /// run out. It becomes `processing` with a lease until `now_ms + lease_ms` and one more
    /// attempt. First, in the same transaction: analyses whose leases ran out [`AVF_MAX_ATTEMPTS`]
    /// times fail, uploads older than [`AVF_UPLOAD_RETENTION_MS`] are dropped and their analyses
    /// fail (`avf.completed` is queued for each), and records older than
    /// [`AVF_RECORD_RETENTION_MS`] go. An upload that no longer opens (another key) fails.
    pub fn claim_avf(
        &self,
        now_ms: i64,
        lease_ms: i64,
        event: &dyn Fn(&AvfRow) -> Value,
    ) -> Result<Option<AvfClaim>> {
        let (claim, dropped) = self.write(|transaction| {
            let mut dropped = 0;
            let doomed: Vec<(String, String)> = {
                let mut statement = transaction
                    .prepare_cached(
                        "SELECT id, CASE WHEN attempts >= ?3 THEN
                             'the analysis was interrupted repeatedly and was given up'
                           ELSE 'the upload was not analysed within 24 hours and was deleted' END
                         FROM avf_requests
                         WHERE (status = 'processing' AND lease_until <= ?1 AND attempts >= ?3)
                            OR (status IN ('pending', 'processing') AND received_at <= ?2
                                AND (lease_until IS NULL OR lease_until <= ?1))",
                    )
                    .map_err(storage)?;
                let rows = statement
                    .query_map(
                        params![now_ms, now_ms - AVF_UPLOAD_RETENTION_MS, AVF_MAX_ATTEMPTS],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .map_err(storage)?
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(storage)?;
                rows
            };
            for (id, why) in &doomed {
                dropped += finish_in(transaction, id, None, Some(why), now_ms, event)?;
            }
            transaction
                .execute(
                    "DELETE FROM avf_requests WHERE status IN ('completed', 'failed')
                       AND completed_at <= ?1",
                    [now_ms - AVF_RECORD_RETENTION_MS],
                )
                .map_err(storage)?;
            let due: Option<(AvfRow, Vec<u8>)> = transaction
                .query_row(
                    &format!(
                        "SELECT {COLUMNS}, upload FROM avf_requests
                         WHERE upload IS NOT NULL AND (status = 'pending'
                            OR (status = 'processing' AND lease_until <= ?1))
                         ORDER BY received_at, id LIMIT 1"
                    ),
                    [now_ms],
                    |row| Ok((row_of(row)?, row.get(13)?)),
                )
                .optional()
                .map_err(storage)?;
            let Some((mut row, sealed)) = due else {
                return Ok((None, dropped));
            };
            transaction
                .execute(
                    "UPDATE avf_requests SET status = 'processing', attempts = attempts + 1,
                         lease_until = ?2, started_at = ?3 WHERE id = ?1",
                    params![row.id, now_ms + lease_ms, now_ms],
                )
                .map_err(storage)?;
            row.status = AvfStatus::Processing;
            row.attempts += 1;
            row.started_at = Some(now_ms);
            Ok((Some((row, sealed)), dropped))
        })?;
        if dropped > 0 {
            self.truncate_wal()?;
        }
        let Some((row, sealed)) = claim else {
            return Ok(None);
        };
        let format = super::TEMPLATE_FORMAT_VERSION;
        match self
            .key
            .open(&binding(&row.project_id, &row.id), format, &sealed)
        {
            Ok(video) => Ok(Some(AvfClaim { row, video })),
            Err(Error::TemplateUnreadable) => {
                self.finish_avf(
                    &row.id,
                    None,
                    Some("the upload cannot be opened with this engine's key"),
                    now_ms,
                    event,
                )?;
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// Ends an analysis: `completed` with `result` (JSON text), or `failed` with `error`; the
    /// upload is dropped and `avf.completed` queued, in one transaction, then the write-ahead log
    /// is truncated. An analysis already ended (by housekeeping, or a consent withdrawal) is left
    /// as it is.
    pub fn finish_avf(
        &self,
        id: &str,
        result: Option<&str>,
        error: Option<&str>,
        now_ms: i64,
        event: &dyn Fn(&AvfRow) -> Value,
    ) -> Result<()> {
        self.write(|transaction| finish_in(transaction, id, result, error, now_ms, event))?;
        self.truncate_wal()
    }
}

/// Drops the uploads of `fullname` still waiting or being analysed (their analyses fail), in the
/// transaction that withdraws a consent. Returns how many.
pub(super) fn drop_user_uploads(
    transaction: &rusqlite::Transaction<'_>,
    project_id: &str,
    fullname: &str,
    now_ms: i64,
) -> Result<usize> {
    transaction
        .execute(
            "UPDATE avf_requests SET status = 'failed', upload = NULL, lease_until = NULL,
                 error = 'the user withdrew consent: the upload was deleted', completed_at = ?3
             WHERE project_id = ?1 AND user_fullname = ?2 AND upload IS NOT NULL",
            params![project_id, fullname, now_ms],
        )
        .map_err(storage)
}

/// [`Store::finish_avf`] inside a transaction; returns 1 when it ended the analysis, 0 when it
/// had already ended.
fn finish_in(
    transaction: &rusqlite::Transaction<'_>,
    id: &str,
    result: Option<&str>,
    error: Option<&str>,
    now_ms: i64,
    event: &dyn Fn(&AvfRow) -> Value,
) -> Result<usize> {
    let status = if result.is_some() {
        AvfStatus::Completed
    } else {
        AvfStatus::Failed
    };
    let changed = transaction
        .execute(
            "UPDATE avf_requests SET status = ?2, result = ?3, error = ?4, upload = NULL,
                 lease_until = NULL, completed_at = ?5
             WHERE id = ?1 AND status IN ('pending', 'processing')",
            params![id, status.as_str(), result, error, now_ms],
        )
        .map_err(storage)?;
    if changed == 0 {
        return Ok(0);
    }
    let row = transaction
        .query_row(
            &format!("SELECT {COLUMNS} FROM avf_requests WHERE id = ?1"),
            [id],
            row_of,
        )
        .map_err(storage)?;
    enqueue_event(
        transaction,
        &row.project_id,
        "avf.completed",
        event(&row),
        now_ms,
    )?;
    Ok(1)
}
