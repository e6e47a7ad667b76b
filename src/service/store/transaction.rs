//! Transactions, [`TransactionRecord`]: one row per handled request of a project, read back newest
//! first in pages ([`TransactionPage`]) with a keyset cursor that stays stable while rows are added.

use super::sql::{params, OptionalExtension, Row};

use super::sql::DbResult;
use super::{ensure_project, storage, Store, Tx};
use crate::error::Result;

/// One handled request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionRecord {
    /// The `X-Request-Id` returned with the response.
    pub request_id: String,
    /// Project of the key.
    pub project_id: String,
    /// Id of the key.
    pub key_id: String,
    /// HTTP method.
    pub method: String,
    /// Path without the query, e.g. `/api-gateway/sessions/start`.
    pub endpoint: String,
    /// Status code of the response.
    pub status_code: u16,
    /// `X-User-Fullname` (or the consent body's `user_fullname`).
    pub user_fullname: Option<String>,
    /// `X-Session-ID`, or the session the request started or ended.
    pub session_id: Option<String>,
    /// `X-Action-Trigger`.
    pub action_trigger: Option<String>,
    /// `X-Device-Info` as JSON text.
    pub device_info: Option<String>,
    /// `X-Geo-Location` as JSON text.
    pub geo_location: Option<String>,
    /// `X-Request-Tags`, split at commas.
    pub request_tags: Vec<String>,
    /// A JSON summary of the outcome (never biometric data).
    pub result: Option<String>,
    /// Time of the request, Unix ms.
    pub created_at: i64,
}

/// Which transactions to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransactionFilter {
    /// Only this user's.
    pub user_fullname: Option<String>,
    /// Only this session's.
    pub session_id: Option<String>,
}

/// One page, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionPage {
    /// The transactions of this page.
    pub transactions: Vec<TransactionRecord>,
    /// Pass as `before` to get the next page; `None` on the last page.
    pub next_before: Option<i64>,
}

const COLUMNS: &str = "id, request_id, project_id, key_id, method, endpoint, status_code, user_fullname, session_id, \
                       action_trigger, device_info, geo_location, request_tags, result, created_at";

fn from_row(row: &Row<'_>) -> DbResult<(i64, TransactionRecord)> {
    let tags: String = row.get(12)?;
    Ok((
        row.get(0)?,
        TransactionRecord {
            request_id: row.get(1)?,
            project_id: row.get(2)?,
            key_id: row.get(3)?,
            method: row.get(4)?,
            endpoint: row.get(5)?,
            status_code: row.get(6)?,
            user_fullname: row.get(7)?,
            session_id: row.get(8)?,
            action_trigger: row.get(9)?,
            device_info: row.get(10)?,
            geo_location: row.get(11)?,
            request_tags: serde_json::from_str(&tags).unwrap_or_default(),
            result: row.get(13)?,
            created_at: row.get(14)?,
        },
    ))
}

impl Tx<'_> {
    /// Writes one transaction row.
    pub(in crate::service) fn insert_transaction(&self, record: &TransactionRecord) -> Result<()> {
        ensure_project(&self.rows, &record.project_id, record.created_at)?;
        let tags = serde_json::to_string(&record.request_tags).expect("strings serialise");
        self.rows
            .execute(
                &format!("INSERT INTO transactions ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                    COLUMNS.trim_start_matches("id, ")),
                params![
                    record.request_id,
                    record.project_id,
                    record.key_id,
                    record.method,
                    record.endpoint,
                    record.status_code,
                    record.user_fullname,
                    record.session_id,
                    record.action_trigger,
                    record.device_info,
                    record.geo_location,
                    tags,
                    record.result,
                    record.created_at
                ],
            )
            .map_err(storage)?;
        Ok(())
    }
}

impl Store {
    /// A page of the project's transactions, newest first, strictly older than `before` when given.
    pub fn transactions(
        &self,
        project_id: &str,
        filter: &TransactionFilter,
        before: Option<i64>,
        limit: usize,
    ) -> Result<TransactionPage> {
        self.read(|connection| {
            let mut statement = connection
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM transactions
                     WHERE project_id = ?1 AND id < ?2
                       AND (CAST(?3 AS TEXT) IS NULL OR user_fullname = ?3)
                       AND (CAST(?4 AS TEXT) IS NULL OR session_id = ?4)
                     ORDER BY id DESC LIMIT ?5"
                ))
                .map_err(storage)?;
            let rows = statement
                .query_map(
                    params![
                        project_id,
                        before.unwrap_or(i64::MAX),
                        filter.user_fullname,
                        filter.session_id,
                        limit as i64 + 1
                    ],
                    from_row,
                )
                .map_err(storage)?;
            let mut rows = rows.collect::<DbResult<Vec<_>>>().map_err(storage)?;
            let next_before = if rows.len() > limit {
                rows.truncate(limit);
                rows.last().map(|(id, _)| *id)
            } else {
                None
            };
            Ok(TransactionPage {
                transactions: rows.into_iter().map(|(_, record)| record).collect(),
                next_before,
            })
        })
    }

    /// The project's transaction with this request id.
    pub fn transaction(
        &self,
        project_id: &str,
        request_id: &str,
    ) -> Result<Option<TransactionRecord>> {
        self.read(|connection| {
            connection
                .query_row(
                    &format!("SELECT {COLUMNS} FROM transactions WHERE project_id = ?1 AND request_id = ?2"),
                    params![project_id, request_id],
                    from_row,
                )
                .optional()
                .map(|row| row.map(|(_, record)| record))
                .map_err(storage)
        })
    }
}
