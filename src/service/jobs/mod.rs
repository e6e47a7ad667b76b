//! The job-scheduling service on the engine (`docs/jobs.md`), a room of its own: this file
//! creates, reads, lists, cancels and replays jobs, reads their executions and sets a project's
//! credits; beside it the job lifecycle (`lifecycle.rs`: credit gate, claims, retries, lease
//! recovery), schedules, alerts, the project handle, the pump and its transport. Jobs belong to the
//! API key's project and are invisible to every other project. Nothing here is biometric.

pub mod alerts;
pub(in crate::service) mod calls;
pub(in crate::service) mod lifecycle;
pub mod project;
pub mod pump;
mod record;
pub mod schedules;
pub(in crate::service) mod transport;

use std::collections::BTreeMap;

use serde::Deserialize;
use sha2::{Digest, Sha256};

pub use crate::address::{MAX_HEADERS, MAX_HEADER_VALUE_LEN, MAX_URL_LEN};
use crate::clock::{format_timestamp, parse_timestamp};
use crate::error::{Error, Result};
use crate::service::calls::check_call;
pub use crate::service::calls::{MAX_BODY_LEN, MAX_RETRIES, METHODS};
use crate::service::project::Project;
pub use crate::service::store::{
    Credits, ExecutionRecord, ExecutionStats, InsertedJob, JobKind, JobPage, JobRecord, JobStatus,
};
use crate::service::{new_id, Engine};

/// Longest idempotency key, bytes.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;
/// The `days` of the stats endpoints when none is given.
pub const DEFAULT_STATS_DAYS: u32 = 30;
/// The largest `days` (larger values are clamped to it; smaller than 1 to 1).
pub const MAX_STATS_DAYS: u32 = 365;
/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;

/// Execution attempts per UTC day (`GET /stats/usage`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    /// One entry per UTC day of the window, oldest first: the day's start (Unix ms) and the
    /// job execution attempts made that day.
    pub days: Vec<(i64, u64)>,
    /// The project's credits; `None` when it is unmetered.
    pub credits: Option<Credits>,
}

/// The fields of `POST /jobs`. Unknown fields are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewJob {
    /// Target of the call (`http` or `https`).
    pub url: String,
    /// Default `POST`.
    #[serde(default)]
    pub http_method: Option<String>,
    /// RFC 3339, in the future.
    pub scheduled_at: String,
    /// Headers of the call.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Body of the call.
    #[serde(default)]
    pub body: Option<String>,
    /// Attempts after the first (0 to [`MAX_RETRIES`], default 0).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// The same key with the same request returns the job made first; with another request it
    /// is a conflict.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// Called when the job reaches a terminal state.
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// Headers of the webhook call.
    #[serde(default)]
    pub webhook_headers: Option<BTreeMap<String, String>>,
}

/// A job and how many execution attempts it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The stored job.
    pub record: JobRecord,
    /// Execution attempts so far.
    pub executions: u32,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidArgument(message.into())
}

/// What an idempotency key is compared with: the SHA-256 of the request's fields as given.
fn request_hash(job: &NewJob) -> String {
    let canonical = serde_json::json!({
        "url": job.url,
        "http_method": job.http_method,
        "scheduled_at": job.scheduled_at,
        "headers": job.headers,
        "body": job.body,
        "max_retries": job.max_retries,
        "webhook_url": job.webhook_url,
        "webhook_headers": job.webhook_headers,
    });
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The jobs of one project ([`Project::jobs`](crate::service::project::Project::jobs)): every
/// operation of `/jobs` and `/stats` on one type.
#[derive(Debug, Clone, Copy)]
pub struct Jobs<'e>(pub(in crate::service) Project<'e>);

impl<'e> Project<'e> {
    /// The project's jobs (`/jobs`, `/stats`).
    pub fn jobs(self) -> Jobs<'e> {
        Jobs(self)
    }
}

impl Jobs<'_> {
    /// Creates a job (`POST /jobs`): checked field by field, then stored as `scheduled` through
    /// the project's credit gate. The bool says whether the job is new (false: an earlier create
    /// with the same idempotency key and request).
    pub fn create(&self, job: &NewJob) -> Result<(Job, bool)> {
        let Project { engine, key } = self.0;
        let now = engine.now_ms();
        let call = check_call(
            &engine.addresses,
            (&job.url, job.webhook_url.as_deref()),
            job.http_method.as_deref(),
            job.headers.as_ref(),
            job.body.as_deref(),
            job.max_retries,
            job.webhook_headers.as_ref(),
        )?;
        let scheduled_at = parse_timestamp(&job.scheduled_at).ok_or_else(|| {
            Error::InvalidScheduledAt(
                "scheduled_at must be an ISO 8601 (RFC 3339) timestamp in the future".to_owned(),
            )
        })?;
        if scheduled_at <= now {
            return Err(Error::InvalidScheduledAt(format!(
                "scheduled_at must be in the future (now is {})",
                format_timestamp(now)
            )));
        }
        if let Some(idempotency_key) = &job.idempotency_key {
            if idempotency_key.is_empty()
                || idempotency_key.len() > MAX_IDEMPOTENCY_KEY_LEN
                || idempotency_key.chars().any(char::is_control)
            {
                return Err(invalid(format!(
                    "idempotency_key must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} bytes without control characters"
                )));
            }
        }
        let record = JobRecord {
            id: new_id("job_"),
            project_id: key.project_id.clone(),
            url: job.url.clone(),
            http_method: call.method,
            headers: call.headers,
            body: job.body.clone(),
            scheduled_at,
            max_retries: call.max_retries,
            idempotency_key: job.idempotency_key.clone(),
            request_hash: job.idempotency_key.as_ref().map(|_| request_hash(job)),
            webhook_url: job.webhook_url.clone(),
            webhook_headers: call.webhook_headers,
            status: JobStatus::Scheduled,
            attempts: 0,
            replay_of: None,
            kind: JobKind::Call,
            subject: None,
            created_at: now,
            updated_at: now,
        };
        match lifecycle::insert_job(&engine.store, &record, now)? {
            InsertedJob::New(record) => Ok((
                Job {
                    record,
                    executions: 0,
                },
                true,
            )),
            InsertedJob::Existing(record) => {
                let job = self.get(&record.id)?;
                Ok((job, false))
            }
        }
    }

    /// The key's project's job with this id ([`Error::NotFound`] otherwise).
    pub fn get(&self, job_id: &str) -> Result<Job> {
        let Project { engine, key } = self.0;
        let (record, executions) = engine
            .store
            .job(&key.project_id, job_id)?
            .ok_or_else(|| Error::NotFound("job not found".to_owned()))?;
        Ok(Job { record, executions })
    }

    /// A page of the key's project's jobs, newest first.
    pub fn list(
        &self,
        status: Option<JobStatus>,
        before: Option<i64>,
        limit: usize,
    ) -> Result<JobPage> {
        let Project { engine, key } = self.0;
        engine.store.jobs(&key.project_id, status, before, limit)
    }

    /// Cancels a job before its first attempt (`DELETE /jobs/{id}`).
    /// A job with a `webhook_url` gets its webhook (status `cancelled`) from the next pump: it is
    /// queued in the same transaction as the cancellation.
    pub fn cancel(&self, job_id: &str) -> Result<JobRecord> {
        let Project { engine, key } = self.0;
        let now = engine.now_ms();
        lifecycle::cancel_job(&engine.store, &key.project_id, job_id, now, |job| {
            lifecycle::queued_webhook(job, None, None)
        })
    }

    /// Replays a failed job (`POST /jobs/{id}/replay`): a clone that is `pending`, due now, with
    /// `replay_of` naming the source, through the same credit gate as a create. A job that is not
    /// `failed` is a [`Error::Conflict`].
    pub fn replay(&self, job_id: &str) -> Result<JobRecord> {
        let engine = self.0.engine;
        let source = self.get(job_id)?.record;
        if source.status != JobStatus::Failed {
            return Err(Error::Conflict(format!(
                "only a failed job can be replayed (this one is {})",
                source.status.as_str()
            )));
        }
        let now = engine.now_ms();
        let clone = JobRecord {
            id: new_id("job_"),
            scheduled_at: now,
            idempotency_key: None,
            request_hash: None,
            status: JobStatus::Pending,
            attempts: 0,
            replay_of: Some(source.id.clone()),
            created_at: now,
            updated_at: now,
            ..source
        };
        match lifecycle::insert_job(&engine.store, &clone, now)? {
            InsertedJob::New(record) | InsertedJob::Existing(record) => Ok(record),
        }
    }

    /// The execution attempts of the key's project's job, first first.
    pub fn executions(&self, job_id: &str) -> Result<Vec<ExecutionRecord>> {
        let Project { engine, key } = self.0;
        engine.store.job_executions(&key.project_id, job_id)
    }

    /// The key's project's execution attempts over the last `days` days (`GET /stats/jobs`).
    pub fn stats(&self, days: u32) -> Result<ExecutionStats> {
        let Project { engine, key } = self.0;
        let since = engine.now_ms() - i64::from(days) * DAY_MS;
        engine.store.execution_stats(&key.project_id, since)
    }

    /// The key's project's attempts per UTC day over the last `days` days, today included, and
    /// its credits (`GET /stats/usage`).
    pub fn usage(&self, days: u32) -> Result<Usage> {
        let Project { engine, key } = self.0;
        let now = engine.now_ms();
        let today = now - now.rem_euclid(DAY_MS);
        let first = today - (i64::from(days) - 1) * DAY_MS;
        let counted = engine.store.daily_executions(&key.project_id, first)?;
        let days = (0..i64::from(days))
            .map(|n| {
                let day = first + n * DAY_MS;
                let count = counted
                    .iter()
                    .find(|(start, _)| *start == day)
                    .map_or(0, |(_, count)| *count);
                (day, count)
            })
            .collect();
        Ok(Usage {
            days,
            credits: engine.store.credits(&key.project_id)?,
        })
    }
}

/// Projects' job credits: balance, plan, daily cap ([`Engine::billing`]).
#[derive(Debug, Clone, Copy)]
pub struct Billing<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// Projects' job credits: balance, plan, daily cap.
    pub fn billing(&self) -> Billing<'_> {
        Billing(self)
    }
}

impl Billing<'_> {
    /// Sets a project's credits: its balance, plan name and optional daily execution cap. A
    /// project whose credits were never set is unmetered.
    pub fn set(&self, project_id: &str, credits: &Credits) -> Result<()> {
        let engine = self.0;
        if project_id.is_empty() {
            return Err(invalid("project_id must not be empty"));
        }
        if credits.plan.is_empty() || credits.plan.len() > 64 {
            return Err(invalid("plan must be 1 to 64 bytes"));
        }
        if credits.daily_limit.is_some_and(|limit| limit < 0) {
            return Err(invalid("daily_limit must not be negative"));
        }
        engine
            .store
            .set_credits(project_id, credits, engine.now_ms())
    }

    /// A project's credits; `None` when it is unmetered.
    pub fn get(&self, project_id: &str) -> Result<Option<Credits>> {
        let engine = self.0;
        engine.store.credits(project_id)
    }
}
