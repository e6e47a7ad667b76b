//! The rows of the verification service's outbound events: webhook endpoints and SIM-swap results.
//! An event itself is queued as a job of kind `event` per subscribed endpoint, and a SIM-swap
//! check is a job of kind `sim_swap`: the service (`service::events`) decides both.

use super::sql::{params, OptionalExtension, Row};

use super::signing::insert_secret_row;
use super::sql::DbResult;
use super::{lock_project, storage, Queue, SigningSecret, Store, Tx};
use crate::error::{Error, Result};

/// A webhook endpoint of a project: where its verification events go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEndpoint {
    /// `wh_<32 hex>`.
    pub id: String,
    /// The owning project.
    pub project_id: String,
    /// Where events are POSTed.
    pub url: String,
    /// The event types it receives.
    pub events: Vec<String>,
    /// The caller's note.
    pub description: Option<String>,
    /// Unix ms.
    pub created_at: i64,
}

/// The result of a session's SIM-swap check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimSwapResult {
    /// The session it was requested for.
    pub session_id: String,
    /// `pending`, `completed`, `failed` or `unavailable`.
    pub status: String,
    /// Whether the provider saw a SIM swap in the window it was asked about (`completed` only).
    pub swapped: Option<bool>,
    /// Why the check failed or is unavailable.
    pub detail: Option<String>,
    /// Unix ms.
    pub requested_at: i64,
    /// Unix ms, once the check ended.
    pub completed_at: Option<i64>,
}

/// How a SIM-swap check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimSwapOutcome {
    /// `completed` or `failed`.
    pub status: &'static str,
    /// The provider's `swapped`, when it answered one.
    pub swapped: Option<bool>,
    /// Why it failed.
    pub detail: Option<String>,
}

impl SimSwapOutcome {
    /// A check that got no usable answer.
    pub fn failed(detail: &str) -> SimSwapOutcome {
        SimSwapOutcome {
            status: "failed",
            swapped: None,
            detail: Some(detail.to_owned()),
        }
    }
}

fn endpoint_from_row(row: &Row<'_>) -> DbResult<WebhookEndpoint> {
    let events: String = row.get(3)?;
    Ok(WebhookEndpoint {
        id: row.get(0)?,
        project_id: row.get(1)?,
        url: row.get(2)?,
        events: serde_json::from_str(&events).unwrap_or_default(),
        description: row.get(4)?,
        created_at: row.get(5)?,
    })
}

const ENDPOINT_COLUMNS: &str = "id, project_id, url, events, description, created_at";

impl Tx<'_> {
    /// The project's webhook endpoints subscribed to `event_type`, oldest first.
    pub(in crate::service) fn subscribed_endpoints(
        &self,
        project_id: &str,
        event_type: &str,
    ) -> Result<Vec<WebhookEndpoint>> {
        let mut statement = self
            .rows
            .prepare_cached(&format!(
                "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE project_id = ?1 ORDER BY seq"
            ))
            .map_err(storage)?;
        let rows = statement
            .query_map([project_id], endpoint_from_row)
            .map_err(storage)?
            .collect::<DbResult<Vec<_>>>()
            .map_err(storage)?;
        Ok(rows
            .into_iter()
            .filter(|endpoint| endpoint.events.iter().any(|kind| kind == event_type))
            .collect())
    }

    /// Records how the session's pending SIM-swap check ended.
    pub(in crate::service) fn end_sim_swap_check(
        &self,
        session_id: &str,
        outcome: &SimSwapOutcome,
        now_ms: i64,
    ) -> Result<()> {
        self.rows
            .execute(
                "UPDATE sim_swap_results SET status = ?1, swapped = ?2, detail = ?3, completed_at = ?4
                 WHERE session_id = ?5 AND status = 'pending'",
                params![
                    outcome.status,
                    outcome.swapped,
                    outcome.detail,
                    now_ms,
                    session_id
                ],
            )
            .map_err(storage)?;
        Ok(())
    }

    /// Records a session's SIM-swap check as it starts: `pending` with its job, or already ended
    /// (`unavailable`, with `detail`).
    pub(in crate::service) fn insert_sim_swap_check(
        &self,
        session: &super::SessionRecord,
        outcome: Option<&SimSwapOutcome>,
        job_id: Option<&str>,
        now_ms: i64,
    ) -> Result<()> {
        match outcome {
            Some(outcome) => self.rows.execute(
                "INSERT INTO sim_swap_results
                     (session_id, project_id, status, detail, requested_at, completed_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                params![
                    session.id,
                    session.project_id,
                    outcome.status,
                    outcome.detail,
                    now_ms
                ],
            ),
            None => self.rows.execute(
                "INSERT INTO sim_swap_results (session_id, project_id, status, job_id, requested_at)
                 VALUES (?1, ?2, 'pending', ?3, ?4)",
                params![session.id, session.project_id, job_id, now_ms],
            ),
        }
        .map_err(storage)?;
        Ok(())
    }
}

impl Store {
    /// Stores a new webhook endpoint with its first signing secret, in one transaction, unless the
    /// project already has `max` ([`Error::Conflict`]).
    pub fn insert_webhook_endpoint(
        &self,
        endpoint: &WebhookEndpoint,
        secret: &SigningSecret,
        max: usize,
    ) -> Result<()> {
        let sealed = self.seal_secret(&endpoint.project_id, &endpoint.id, secret)?;
        self.write(|transaction| {
            // The cap on webhooks is checked by one server at a time.
            lock_project(transaction, &endpoint.project_id, endpoint.created_at)?;
            let count: i64 = transaction
                .query_row(
                    "SELECT COUNT(*) FROM webhook_endpoints WHERE project_id = ?1",
                    [&endpoint.project_id],
                    |row| row.get(0),
                )
                .map_err(storage)?;
            if count >= max as i64 {
                return Err(Error::Conflict(format!(
                    "a project may have at most {max} webhooks; delete one first"
                )));
            }
            transaction
                .execute(
                    "INSERT INTO webhook_endpoints
                         (id, project_id, url, events, description, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                    params![
                        endpoint.id,
                        endpoint.project_id,
                        endpoint.url,
                        serde_json::to_string(&endpoint.events).expect("strings serialise"),
                        endpoint.description,
                        endpoint.created_at
                    ],
                )
                .map_err(storage)?;
            insert_secret_row(
                transaction,
                &endpoint.project_id,
                &endpoint.id,
                secret,
                &sealed,
            )
        })
    }

    /// The project's webhook endpoints, oldest first.
    pub fn webhook_endpoints(&self, project_id: &str) -> Result<Vec<WebhookEndpoint>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare(&format!(
                    "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE project_id = ?1 ORDER BY seq"
                ))
                .map_err(storage)?;
            let rows = statement
                .query_map([project_id], endpoint_from_row)
                .map_err(storage)?;
            rows.collect::<DbResult<Vec<_>>>().map_err(storage)
        })
    }

    /// The project's webhook endpoint with this id.
    pub fn webhook_endpoint(&self, project_id: &str, id: &str) -> Result<Option<WebhookEndpoint>> {
        self.read(|connection| {
            connection
                .query_row(
                    &format!(
                        "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE project_id = ?1 AND id = ?2"
                    ),
                    params![project_id, id],
                    endpoint_from_row,
                )
                .optional()
                .map_err(storage)
        })
    }

    /// Deletes a webhook endpoint, its secrets and the deliveries still waiting for it (they are
    /// cancelled; one in flight finishes), in one transaction ([`Error::NotFound`] when absent).
    pub fn delete_webhook_endpoint(&self, project_id: &str, id: &str, now_ms: i64) -> Result<()> {
        self.write(|transaction| {
            let deleted = transaction
                .execute(
                    "DELETE FROM webhook_endpoints WHERE project_id = ?1 AND id = ?2",
                    params![project_id, id],
                )
                .map_err(storage)?;
            if deleted == 0 {
                return Err(Error::NotFound("webhook not found".to_owned()));
            }
            transaction
                .execute(
                    "DELETE FROM signing_secrets WHERE project_id = ?1 AND owner = ?2",
                    params![project_id, id],
                )
                .map_err(storage)?;
            transaction
                .execute(
                    &format!(
                        "UPDATE jobs SET status = 'cancelled', updated_at = ?1
                         WHERE subject = ?2 AND kind = 'event' AND project_id = ?3
                           AND status IN ('scheduled', 'pending') AND {}",
                        Queue::Jobs.free_at("?1")
                    ),
                    params![now_ms, id, project_id],
                )
                .map_err(storage)?;
            Ok(())
        })
    }

    /// The SIM-swap check of the project's session, if one was requested.
    pub fn sim_swap_result(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Option<SimSwapResult>> {
        self.read(|connection| {
            connection
                .query_row(
                    "SELECT session_id, status, swapped, detail, requested_at, completed_at
                     FROM sim_swap_results WHERE project_id = ?1 AND session_id = ?2",
                    params![project_id, session_id],
                    |row| {
                        Ok(SimSwapResult {
                            session_id: row.get(0)?,
                            status: row.get(1)?,
                            swapped: row.get(2)?,
                            detail: row.get(3)?,
                            requested_at: row.get(4)?,
                            completed_at: row.get(5)?,
                        })
                    },
                )
                .optional()
                .map_err(storage)
        })
    }
}
