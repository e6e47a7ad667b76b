//! The rows of asynchronous video-forgery analyses (`avf/infer`): one per upload. The video is
//! sealed with the template key (bound to the project and the request id) from its acceptance
//! until its analysis ends, then dropped in the transaction that records the verdict; the
//! write-ahead log is truncated after. Retention, leases and attempts are the service's
//! (`service::avf`).

use super::sql::{params, OptionalExtension, Row};

use super::seal::Binding;
use super::sql::{Conn, DbResult};
use super::{lock_project, storage, Queue, Store, Tx};
use crate::error::{Error, Result};

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

fn row_of(row: &Row<'_>) -> DbResult<AvfRow> {
    Ok(AvfRow {
        id: row.get(0)?,
        project_id: row.get(1)?,
        user_fullname: row.get(2)?,
        session_id: row.get(3)?,
        source_filename: row.get(4)?,
        status: AvfStatus::parse(&row.get::<String>(5)?),
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

impl Store {
    /// Stores an upload, sealed, as a `pending` analysis (`row.status` and the times are taken
    /// as given), unless the project already has `max_waiting` uploads or `max_waiting_bytes`
    /// waiting ([`Error::Conflict`]).
    pub fn insert_avf(
        &self,
        row: &AvfRow,
        video: &[u8],
        max_waiting: i64,
        max_waiting_bytes: i64,
    ) -> Result<()> {
        let sealed = self.key.seal(&binding(&row.project_id, &row.id), video)?;
        self.write(|transaction| {
            // The cap on waiting uploads is checked by one server at a time.
            lock_project(transaction, &row.project_id, row.received_at)?;
            let (waiting, bytes): (i64, i64) = transaction
                .query_row(
                    "SELECT COUNT(*), CAST(COALESCE(SUM(upload_bytes), 0) AS BIGINT) FROM avf_requests
                     WHERE project_id = ?1 AND upload IS NOT NULL",
                    [&row.project_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(storage)?;
            if waiting >= max_waiting || bytes + video.len() as i64 > max_waiting_bytes {
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
                    params![],
                    |row| row.get(0),
                )
                .map_err(storage)
        })
    }

    /// Opens a claimed analysis's sealed upload ([`Error::TemplateUnreadable`] when it was sealed
    /// with another key).
    pub(in crate::service) fn open_upload(&self, row: &AvfRow, sealed: &[u8]) -> Result<Vec<u8>> {
        let format = super::TEMPLATE_FORMAT_VERSION;
        self.key
            .open(&binding(&row.project_id, &row.id), format, sealed)
    }
}

impl Tx<'_> {
    /// The analyses to give up at `now_ms`, with their attempts: those claimed `max_attempts`
    /// times whose last lease ran out, and those received at or before `received_before` that
    /// nobody holds.
    pub(in crate::service) fn doomed_analyses(
        &self,
        now_ms: i64,
        received_before: i64,
        max_attempts: i64,
    ) -> Result<Vec<(String, i64)>> {
        let mut statement = self
            .rows
            .prepare_cached(&format!(
                "SELECT id, attempts FROM avf_requests
                 WHERE (status = 'processing' AND {lapsed} AND attempts >= ?3)
                    OR (status IN ('pending', 'processing') AND received_at <= ?2 AND {free})",
                lapsed = Queue::Analyses.lapsed_at("?1"),
                free = Queue::Analyses.free_at("?1"),
            ))
            .map_err(storage)?;
        let rows = statement
            .query_map(params![now_ms, received_before, max_attempts], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .map_err(storage)?
            .collect::<DbResult<Vec<_>>>()
            .map_err(storage)?;
        Ok(rows)
    }

    /// Deletes the records of analyses that ended at or before `ended_before`.
    pub(in crate::service) fn delete_analyses_ended_before(&self, ended_before: i64) -> Result<()> {
        self.rows
            .execute(
                "DELETE FROM avf_requests WHERE status IN ('completed', 'failed')
                   AND completed_at <= ?1",
                [ended_before],
            )
            .map_err(storage)?;
        Ok(())
    }

    /// The oldest analysis due at `now_ms` (`pending`, or `processing` with its lease run out:
    /// waiting, and nobody holds it) and its sealed upload.
    pub(in crate::service) fn next_analysis(
        &self,
        now_ms: i64,
    ) -> Result<Option<(AvfRow, Vec<u8>)>> {
        self.rows
            .query_row(
                &format!(
                    "SELECT {COLUMNS}, upload FROM avf_requests
                     WHERE upload IS NOT NULL AND status IN ('pending', 'processing') AND {}
                     ORDER BY received_at, id LIMIT 1{}",
                    Queue::Analyses.free_at("?1"),
                    self.rows.dialect().skip_locked(),
                ),
                [now_ms],
                |row| Ok((row_of(row)?, row.get(13)?)),
            )
            .optional()
            .map_err(storage)
    }

    /// Takes an analysis if nobody holds it ([`Tx::take_lease`], until `lease_until`) and marks
    /// it `processing` with one more attempt; returns the row as it now is, or `None`, with
    /// nothing written, when another worker holds it.
    pub(in crate::service) fn start_analysis(
        &self,
        mut row: AvfRow,
        lease_until: i64,
        now_ms: i64,
    ) -> Result<Option<AvfRow>> {
        if !self.take_lease(Queue::Analyses, &row.id, now_ms, lease_until)? {
            return Ok(None);
        }
        self.rows
            .execute(
                "UPDATE avf_requests SET status = 'processing', attempts = attempts + 1,
                     started_at = ?2 WHERE id = ?1",
                params![row.id, now_ms],
            )
            .map_err(storage)?;
        row.status = AvfStatus::Processing;
        row.attempts += 1;
        row.started_at = Some(now_ms);
        Ok(Some(row))
    }

    /// Ends an analysis still waiting or running: `completed` with `result` (JSON text), or
    /// `failed` with `error`, its upload dropped. Returns the ended row, `None` when it had already
    /// ended.
    pub(in crate::service) fn end_analysis(
        &self,
        id: &str,
        result: Option<&str>,
        error: Option<&str>,
        now_ms: i64,
    ) -> Result<Option<AvfRow>> {
        let status = if result.is_some() {
            AvfStatus::Completed
        } else {
            AvfStatus::Failed
        };
        let changed = self
            .rows
            .execute(
                "UPDATE avf_requests SET status = ?2, result = ?3, error = ?4, upload = NULL,
                     completed_at = ?5
                 WHERE id = ?1 AND status IN ('pending', 'processing')",
                params![id, status.as_str(), result, error, now_ms],
            )
            .map_err(storage)?;
        if changed == 0 {
            return Ok(None);
        }
        self.drop_lease(Queue::Analyses, &id)?;
        self.erased();
        self.rows
            .query_row(
                &format!("SELECT {COLUMNS} FROM avf_requests WHERE id = ?1"),
                [id],
                row_of,
            )
            .map(Some)
            .map_err(storage)
    }
}

/// Drops the uploads of `fullname` still waiting or being analysed (their analyses fail), in the
/// transaction that withdraws a consent. Returns how many.
pub(super) fn drop_user_uploads(
    transaction: &Conn<'_>,
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
