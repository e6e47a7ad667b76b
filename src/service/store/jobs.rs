//! The rows of the job-scheduling service: jobs, their execution attempts, each project's credits
//! and the outbox. The service (`service::lifecycle`) composes them in one transaction: the credit
//! gate and the idempotency check with the insert, so two racing creates cannot both pass a gate
//! only one of them fits through; a claim with its lease, execution row and credit.

use std::collections::BTreeMap;

use super::sql::{params, OptionalExtension, Row};

use super::events::SimSwapOutcome;
use super::sql::{Conn, DbResult, Dialect};
use super::{ensure_project, map_from_json, map_to_json, storage, Queue, Store, Tx};
use crate::error::{Error, Result};

/// Milliseconds in a UTC day (the daily cap's window).
const DAY_MS: i64 = 86_400_000;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobStatus {
    /// Created, waiting for its time.
    Scheduled,
    /// A replay clone, waiting for its first attempt.
    Pending,
    /// An attempt succeeded (the webhook calls it `completed`).
    Success,
    /// Every attempt failed.
    Failed,
    /// Cancelled before its first attempt.
    Cancelled,
}

impl JobStatus {
    /// The spec's text.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Scheduled => "scheduled",
            JobStatus::Pending => "pending",
            JobStatus::Success => "success",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// The status named by the spec's text.
    pub fn parse(text: &str) -> Option<JobStatus> {
        [
            JobStatus::Scheduled,
            JobStatus::Pending,
            JobStatus::Success,
            JobStatus::Failed,
            JobStatus::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

/// Where a job's call goes, for the per-destination limit: its URL up to the path (scheme,
/// authority), or the whole URL when it has no `://`. [`destination_sql`] reads the same.
pub fn destination_of(url: &str) -> &str {
    let Some(scheme_end) = url.find("://") else {
        return url;
    };
    match url[scheme_end + 3..].find('/') {
        Some(slash) => &url[..scheme_end + 3 + slash],
        None => url,
    }
}

/// [`destination_of`] in SQL over the `url` column (URLs are ASCII, so character positions are
/// byte positions), in the dialect's name for "position of a substring".
fn destination_sql(dialect: Dialect) -> String {
    "(CASE WHEN instr(substr(url, instr(url, '://') + 3), '/') = 0 \
     OR instr(url, '://') = 0 THEN url \
     ELSE substr(url, 1, instr(url, '://') + 1 + instr(substr(url, instr(url, '://') + 3), '/')) END)"
        .replace("instr", dialect.position())
}

/// What a job is for. Only `Call` jobs are the job-scheduling spec's: the others are the
/// engine's own outbound traffic riding the same state machine, hidden from `/jobs`, never
/// charged and left out of the stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// A call a project scheduled (`POST /jobs`, a schedule, a replay).
    Call,
    /// One event delivered to one webhook endpoint (`subject` names the endpoint).
    Event,
    /// A SIM-swap check sent to the provider (`subject` names the session).
    SimSwap,
}

impl JobKind {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Call => "call",
            JobKind::Event => "event",
            JobKind::SimSwap => "sim_swap",
        }
    }

    fn parse(text: &str) -> JobKind {
        match text {
            "event" => JobKind::Event,
            "sim_swap" => JobKind::SimSwap,
            _ => JobKind::Call,
        }
    }
}

/// One job, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    /// `job_<32 hex>`.
    pub id: String,
    /// The owning project.
    pub project_id: String,
    /// Target of the call.
    pub url: String,
    /// HTTP method of the call, upper case.
    pub http_method: String,
    /// Headers of the call.
    pub headers: BTreeMap<String, String>,
    /// Body of the call.
    pub body: Option<String>,
    /// When the first attempt is due, Unix ms.
    pub scheduled_at: i64,
    /// Attempts after the first one.
    pub max_retries: u32,
    /// The caller's idempotency key.
    pub idempotency_key: Option<String>,
    /// SHA-256 (hex) of the request the idempotency key was first used with.
    pub(crate) request_hash: Option<String>,
    /// Called when the job reaches a terminal state.
    pub webhook_url: Option<String>,
    /// Headers of the webhook call.
    pub webhook_headers: BTreeMap<String, String>,
    /// Where the job is.
    pub status: JobStatus,
    /// Attempts made so far.
    pub attempts: u32,
    /// The job this one replays.
    pub replay_of: Option<String>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms of the last change.
    pub updated_at: i64,
    /// What the job is for.
    pub kind: JobKind,
    /// The webhook endpoint of an event delivery, the session of a SIM-swap check.
    pub subject: Option<String>,
}

/// One execution attempt of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionRecord {
    /// `exec_<32 hex>`.
    pub id: String,
    /// 1 for the first attempt.
    pub attempt_num: u32,
    /// `success`, `failed` or `interrupted`.
    pub status: String,
    /// HTTP status of the target's answer, when there was one.
    pub status_code: Option<u16>,
    /// Why the attempt failed.
    pub error: Option<String>,
    /// How long the attempt took.
    pub duration_ms: Option<i64>,
    /// Unix ms.
    pub executed_at: i64,
}

/// A project's credits: what job execution attempts draw on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credits {
    /// Credits left; a create or replay is refused when it is 0 or less.
    pub balance: i64,
    /// The plan's name.
    pub plan: String,
    /// Execution attempts allowed per UTC day, if capped.
    pub daily_limit: Option<i64>,
}

/// A page of jobs, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobPage {
    /// The jobs, each with its number of executions.
    pub jobs: Vec<(JobRecord, u32)>,
    /// Pass as `before` for the next page; `None` on the last page.
    pub next_before: Option<i64>,
}

/// What an insert did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertedJob {
    /// A new job.
    New(JobRecord),
    /// The job an earlier create with the same idempotency key and request made.
    Existing(JobRecord),
}

const COLUMNS: &str = "seq, id, project_id, url, http_method, headers, body, scheduled_at, \
    max_retries, idempotency_key, request_hash, webhook_url, webhook_headers, status, attempts, \
    replay_of, created_at, updated_at, kind, subject";

fn from_row(row: &Row<'_>) -> DbResult<(i64, JobRecord)> {
    let map = map_from_json;
    let status: String = row.get(13)?;
    Ok((
        row.get(0)?,
        JobRecord {
            id: row.get(1)?,
            project_id: row.get(2)?,
            url: row.get(3)?,
            http_method: row.get(4)?,
            headers: map(row.get(5)?),
            body: row.get(6)?,
            scheduled_at: row.get(7)?,
            max_retries: row.get(8)?,
            idempotency_key: row.get(9)?,
            request_hash: row.get(10)?,
            webhook_url: row.get(11)?,
            webhook_headers: map(row.get(12)?),
            status: JobStatus::parse(&status).unwrap_or(JobStatus::Failed),
            attempts: row.get(14)?,
            replay_of: row.get(15)?,
            created_at: row.get(16)?,
            updated_at: row.get(17)?,
            kind: JobKind::parse(&row.get::<String>(18)?),
            subject: row.get(19)?,
        },
    ))
}

/// The project's job `job_id`; `lock` holds its row until the transaction ends (a change decided
/// on what was read: a claim on another server waits, or is waited for).
fn find_job(
    connection: &Conn<'_>,
    project_id: &str,
    job_id: &str,
    lock: bool,
) -> Result<Option<JobRecord>> {
    let lock = if lock {
        connection.dialect().for_no_key_update()
    } else {
        ""
    };
    connection
        .query_row(
            &format!(
                "SELECT {COLUMNS} FROM jobs WHERE id = ?1 AND project_id = ?2 AND kind = 'call'{lock}"
            ),
            params![job_id, project_id],
            from_row,
        )
        .optional()
        .map(|row| row.map(|(_, job)| job))
        .map_err(storage)
}

fn execution_count(connection: &Conn<'_>, job_id: &str) -> Result<u32> {
    connection
        .query_row(
            "SELECT COUNT(*) FROM job_executions WHERE job_id = ?1",
            [job_id],
            |row| row.get(0),
        )
        .map_err(storage)
}

/// Writes a new job row; its first attempt is due at `scheduled_at`.
fn insert_job_row(transaction: &Conn<'_>, job: &JobRecord) -> Result<()> {
    let json = map_to_json;
    transaction
        .execute(
            &format!(
                "INSERT INTO jobs ({}, next_attempt_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                COLUMNS.trim_start_matches("seq, ")
            ),
            params![
                job.id,
                job.project_id,
                job.url,
                job.http_method,
                json(&job.headers),
                job.body,
                job.scheduled_at,
                job.max_retries,
                job.idempotency_key,
                job.request_hash,
                job.webhook_url,
                json(&job.webhook_headers),
                job.status.as_str(),
                job.attempts,
                job.replay_of,
                job.created_at,
                job.updated_at,
                job.kind.as_str(),
                job.subject,
                job.scheduled_at,
            ],
        )
        .map_err(storage)?;
    Ok(())
}

fn not_found() -> Error {
    Error::NotFound("job not found".to_owned())
}

impl Store {
    /// The project's job with this id and its number of executions.
    pub fn job(&self, project_id: &str, job_id: &str) -> Result<Option<(JobRecord, u32)>> {
        self.read(|connection| {
            let Some(job) = find_job(connection, project_id, job_id, false)? else {
                return Ok(None);
            };
            let count = execution_count(connection, job_id)?;
            Ok(Some((job, count)))
        })
    }

    /// A page of the project's jobs, newest first, strictly older than `before` when given, only
    /// those in `status` when given.
    pub fn jobs(
        &self,
        project_id: &str,
        status: Option<JobStatus>,
        before: Option<i64>,
        limit: usize,
    ) -> Result<JobPage> {
        self.read(|connection| {
            let mut statement = connection
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM jobs
                     WHERE project_id = ?1 AND seq < ?2 AND kind = 'call'
                       AND (CAST(?3 AS TEXT) IS NULL OR status = ?3)
                     ORDER BY seq DESC LIMIT ?4"
                ))
                .map_err(storage)?;
            let rows = statement
                .query_map(
                    params![
                        project_id,
                        before.unwrap_or(i64::MAX),
                        status.map(JobStatus::as_str),
                        limit as i64 + 1
                    ],
                    from_row,
                )
                .map_err(storage)?
                .collect::<DbResult<Vec<_>>>()
                .map_err(storage)?;
            let mut rows = rows;
            let next_before = if rows.len() > limit {
                rows.truncate(limit);
                rows.last().map(|(seq, _)| *seq)
            } else {
                None
            };
            let mut jobs = Vec::with_capacity(rows.len());
            for (_, job) in rows {
                let count = execution_count(connection, &job.id)?;
                jobs.push((job, count));
            }
            Ok(JobPage { jobs, next_before })
        })
    }

    /// The job's execution attempts, first first ([`Error::NotFound`] when there is no such job).
    pub fn job_executions(&self, project_id: &str, job_id: &str) -> Result<Vec<ExecutionRecord>> {
        self.read(|connection| {
            find_job(connection, project_id, job_id, false)?.ok_or_else(not_found)?;
            let mut statement = connection
                .prepare(
                    "SELECT id, attempt_num, status, status_code, error, duration_ms, executed_at
                     FROM job_executions WHERE job_id = ?1 ORDER BY attempt_num",
                )
                .map_err(storage)?;
            let rows = statement
                .query_map([job_id], |row| {
                    Ok(ExecutionRecord {
                        id: row.get(0)?,
                        attempt_num: row.get(1)?,
                        status: row.get(2)?,
                        status_code: row.get(3)?,
                        error: row.get(4)?,
                        duration_ms: row.get(5)?,
                        executed_at: row.get(6)?,
                    })
                })
                .map_err(storage)?;
            rows.collect::<DbResult<Vec<_>>>().map_err(storage)
        })
    }

    /// Sets the project's credits (balance, plan, daily cap).
    pub fn set_credits(&self, project_id: &str, credits: &Credits, now_ms: i64) -> Result<()> {
        self.write(|transaction| {
            ensure_project(transaction, project_id, now_ms)?;
            transaction
                .execute(
                    "INSERT INTO credits (project_id, balance, plan, daily_limit, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (project_id) DO UPDATE SET balance = ?2, plan = ?3,
                         daily_limit = ?4, updated_at = ?5",
                    params![
                        project_id,
                        credits.balance,
                        credits.plan,
                        credits.daily_limit,
                        now_ms
                    ],
                )
                .map_err(storage)?;
            Ok(())
        })
    }

    /// The project's credits; `None` when none were ever set (the project is unmetered).
    pub fn credits(&self, project_id: &str) -> Result<Option<Credits>> {
        self.read(|connection| read_credits(connection, project_id, ""))
    }
}

/// The project's credits; `lock` ends the query (`""`, or the dialect's `for_update` or
/// `skip_locked`): a held row stays held until the transaction ends, so that the credit gate and
/// the spending it allows are one server's at a time.
fn read_credits(connection: &Conn<'_>, project_id: &str, lock: &str) -> Result<Option<Credits>> {
    connection
        .query_row(
            &format!("SELECT balance, plan, daily_limit FROM credits WHERE project_id = ?1{lock}"),
            [project_id],
            |row| {
                Ok(Credits {
                    balance: row.get(0)?,
                    plan: row.get(1)?,
                    daily_limit: row.get(2)?,
                })
            },
        )
        .optional()
        .map_err(storage)
}

/// What a claim found of a project's credits ([`Tx::credits_to_claim`]).
#[derive(Debug)]
pub(in crate::service) enum CreditsLook {
    /// The project has no credits: it is not metered.
    Unmetered,
    /// Another transaction holds the project's credits now.
    Busy,
    /// The project's credits, held until the transaction ends.
    Metered(Credits),
}

/// One attempt the store handed out: the job (its `attempts` already counts this one), the
/// execution row opened for it, and until when the claim holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The job.
    pub job: JobRecord,
    /// The execution row's id (`exec_<32 hex>`).
    pub execution_id: String,
    /// 1 for the first attempt.
    pub attempt_num: u32,
    /// Unix ms until which no other pump takes the job.
    pub lease_until: i64,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptResult {
    /// `success` or `failed`.
    pub success: bool,
    /// The target's HTTP status, when it answered.
    pub status_code: Option<u16>,
    /// Why it failed.
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: i64,
    /// When to try again, if the job may be retried (`None`: the failure is permanent).
    pub retry_at: Option<i64>,
    /// What the provider's answer said, for a SIM-swap check's attempt that got one.
    pub sim_swap: Option<SimSwapOutcome>,
}

impl Tx<'_> {
    /// Writes a new job row; its first attempt is due at `scheduled_at`.
    pub(in crate::service) fn insert_job(&self, job: &JobRecord) -> Result<()> {
        insert_job_row(&self.rows, job)
    }

    /// The project's job (of kind `call`) with this id.
    pub(in crate::service) fn job(
        &self,
        project_id: &str,
        job_id: &str,
    ) -> Result<Option<JobRecord>> {
        find_job(&self.rows, project_id, job_id, true)
    }

    /// The project's job created with this idempotency key.
    pub(in crate::service) fn job_by_idempotency_key(
        &self,
        project_id: &str,
        key: &str,
    ) -> Result<Option<JobRecord>> {
        self.rows
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM jobs WHERE project_id = ?1 AND idempotency_key = ?2"
                ),
                params![project_id, key],
                from_row,
            )
            .optional()
            .map(|row| row.map(|(_, job)| job))
            .map_err(storage)
    }

    /// The project's credits; `None` when none were ever set.
    /// A claim's look at the project's credits: held until the transaction ends when free, or
    /// [`CreditsLook::Busy`] when another server's transaction holds them (never waiting, so
    /// claims that meet several projects' credits cannot deadlock).
    pub(in crate::service) fn credits_to_claim(&self, project_id: &str) -> Result<CreditsLook> {
        let dialect = self.rows.dialect();
        if let Some(credits) = read_credits(&self.rows, project_id, dialect.skip_locked())? {
            return Ok(CreditsLook::Metered(credits));
        }
        if dialect == Dialect::Sqlite {
            return Ok(CreditsLook::Unmetered);
        }
        let exists = self
            .rows
            .query_row(
                "SELECT 1 FROM credits WHERE project_id = ?1",
                [project_id],
                |_| Ok(()),
            )
            .optional()
            .map_err(storage)?
            .is_some();
        Ok(if exists {
            CreditsLook::Busy
        } else {
            CreditsLook::Unmetered
        })
    }

    /// The project's credits, its row held until the transaction ends (the credit gate: two
    /// servers cannot both spend the last credit).
    pub(in crate::service) fn credits(&self, project_id: &str) -> Result<Option<Credits>> {
        read_credits(&self.rows, project_id, self.rows.dialect().for_update())
    }

    /// How many billable attempts the project made at or after `since_ms`.
    pub(in crate::service) fn billable_attempts_since(
        &self,
        project_id: &str,
        since_ms: i64,
    ) -> Result<i64> {
        self.rows
            .query_row(
                "SELECT COUNT(*) FROM job_executions
                 WHERE project_id = ?1 AND executed_at >= ?2 AND billable = 1",
                params![project_id, since_ms],
                |row| row.get(0),
            )
            .map_err(storage)
    }

    /// The waiting jobs due at `now_ms` that nobody holds, oldest due first, at most `limit`:
    /// the engine's own (`internal`) or the projects' calls, leaving out the `skipped_projects`
    /// and the jobs whose [`destination_of`] is in `skipped_destinations`.
    pub(in crate::service) fn due_jobs(
        &self,
        now_ms: i64,
        internal: bool,
        limit: usize,
        skipped_projects: &[String],
        skipped_destinations: &[String],
    ) -> Result<Vec<JobRecord>> {
        let free = Queue::Jobs.free_at("?1");
        let kinds = if internal {
            "kind != 'call'"
        } else {
            "kind = 'call'"
        };
        let dialect = self.rows.dialect();
        let mut statement = self
            .rows
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM jobs
                 WHERE status IN ('scheduled', 'pending') AND {free}
                   AND next_attempt_at <= ?1 AND {kinds}
                   AND project_id NOT IN ({projects})
                   AND {destination} NOT IN ({destinations})
                 ORDER BY next_attempt_at, seq LIMIT ?2{lock}",
                projects = dialect.json_texts("?3"),
                destination = destination_sql(dialect),
                destinations = dialect.json_texts("?4"),
                lock = dialect.skip_locked(),
            ))
            .map_err(storage)?;
        let projects = serde_json::to_string(skipped_projects).expect("strings serialise");
        let destinations = serde_json::to_string(skipped_destinations).expect("strings serialise");
        let rows = statement
            .query_map(
                params![now_ms, limit as i64, projects, destinations],
                from_row,
            )
            .map_err(storage)?
            .collect::<DbResult<Vec<_>>>()
            .map_err(storage)?;
        Ok(rows.into_iter().map(|(_, job)| job).collect())
    }

    /// Takes a job for one attempt if nobody holds it ([`Tx::claim_jobs`] with one claim) and,
    /// when `charge`d (a billable attempt of a metered project), takes one credit from the
    /// project. `false`, with nothing written, when another worker holds the job.
    pub(in crate::service) fn claim_job(
        &self,
        claim: &Claim,
        billable: bool,
        charge: bool,
        now_ms: i64,
    ) -> Result<bool> {
        if self.claim_jobs(&[(claim, billable)], now_ms)?.is_empty() {
            return Ok(false);
        }
        if charge {
            self.rows
                .execute(
                    "UPDATE credits SET balance = balance - 1, updated_at = ?1 WHERE project_id = ?2",
                    params![now_ms, claim.job.project_id],
                )
                .map_err(storage)?;
        }
        Ok(true)
    }

    /// Takes the jobs of `claims` (`(claim, billable)`) for one attempt each where nobody holds
    /// them ([`Queue::free_at`], until the claims' `lease_until`), in two statements whatever their
    /// number: the leases with the attempts' counts, then the execution rows (`running`, counted
    /// in the stats when `billable`) of the jobs taken. Returns the ids of the jobs taken (each
    /// claim's `attempt_num` is its job's count plus one, as the rows read in this transaction
    /// had it).
    pub(in crate::service) fn claim_jobs(
        &self,
        claims: &[(&Claim, bool)],
        now_ms: i64,
    ) -> Result<Vec<String>> {
        let Some((first, _)) = claims.first() else {
            return Ok(Vec::new());
        };
        let dialect = self.rows.dialect();
        let ids: Vec<&str> = claims
            .iter()
            .map(|(claim, _)| claim.job.id.as_str())
            .collect();
        let taken: Vec<String> = self
            .rows
            .prepare_cached(&format!(
                "UPDATE jobs SET {column} = ?1, attempts = attempts + 1, updated_at = ?2
                 WHERE {ids} AND {free} RETURNING id",
                column = Queue::Jobs.column(),
                ids = dialect.in_json_texts("id", "?3"),
                free = Queue::Jobs.free_at("?2"),
            ))
            .and_then(|mut statement| {
                statement
                    .query_map(
                        params![
                            first.lease_until,
                            now_ms,
                            serde_json::to_string(&ids).expect("strings serialise")
                        ],
                        |row| row.get(0),
                    )?
                    .collect::<DbResult<Vec<String>>>()
            })
            .map_err(storage)?;
        let executions: Vec<serde_json::Value> = claims
            .iter()
            .filter(|(claim, _)| taken.contains(&claim.job.id))
            .map(|(claim, billable)| {
                serde_json::json!({
                    "id": claim.execution_id,
                    "job_id": claim.job.id,
                    "project_id": claim.job.project_id,
                    "attempt_num": claim.attempt_num,
                    "billable": i64::from(*billable),
                })
            })
            .collect();
        if !executions.is_empty() {
            self.rows
                .execute(
                    &format!(
                        "INSERT INTO job_executions
                             (id, job_id, project_id, attempt_num, status, executed_at, billable)
                         SELECT id, job_id, project_id, attempt_num, 'running', ?1, billable
                         FROM {} AS batch",
                        dialect.json_rows(
                            "?2",
                            &[
                                ("id", "TEXT"),
                                ("job_id", "TEXT"),
                                ("project_id", "TEXT"),
                                ("attempt_num", "BIGINT"),
                                ("billable", "BIGINT"),
                            ]
                        )
                    ),
                    params![now_ms, serde_json::Value::from(executions).to_string()],
                )
                .map_err(storage)?;
        }
        Ok(taken)
    }

    /// The jobs held by a lease that ran out at or before `now_ms`.
    pub(in crate::service) fn expired_leases(&self, now_ms: i64) -> Result<Vec<JobRecord>> {
        let mut statement = self
            .rows
            .prepare(&format!(
                "SELECT {COLUMNS} FROM jobs WHERE {}{}",
                Queue::Jobs.lapsed_at("?1"),
                // Each lapsed job is recovered by one server.
                self.rows.dialect().skip_locked(),
            ))
            .map_err(storage)?;
        let rows = statement
            .query_map([now_ms], from_row)
            .map_err(storage)?
            .collect::<DbResult<Vec<_>>>()
            .map_err(storage)?;
        Ok(rows.into_iter().map(|(_, job)| job).collect())
    }

    /// Closes the job's latest attempt, still `running`, as `interrupted` with `why`.
    pub(in crate::service) fn interrupt_attempt(&self, job: &JobRecord, why: &str) -> Result<()> {
        self.rows
            .execute(
                "UPDATE job_executions SET status = 'interrupted', error = ?3
                 WHERE job_id = ?1 AND attempt_num = ?2 AND status = 'running'",
                params![job.id, job.attempts, why],
            )
            .map_err(storage)?;
        Ok(())
    }

    /// Closes `running` execution rows with how their attempts ended (execution id, result), in
    /// one statement; returns the ids of those closed here (one no longer running had its lease
    /// taken over, and is left as it is).
    pub(in crate::service) fn close_executions(
        &self,
        ended: &[(&str, &AttemptResult)],
    ) -> Result<Vec<String>> {
        if ended.is_empty() {
            return Ok(Vec::new());
        }
        // The ids again on their own, for the index (`Dialect::in_json_texts`).
        let ids = serde_json::to_string(&ended.iter().map(|(id, _)| id).collect::<Vec<_>>())
            .expect("strings serialise");
        let rows: Vec<serde_json::Value> = ended
            .iter()
            .map(|(execution_id, result)| {
                serde_json::json!({
                    "id": execution_id,
                    "status": if result.success { "success" } else { "failed" },
                    "status_code": result.status_code,
                    "error": result.error,
                    "duration_ms": result.duration_ms,
                })
            })
            .collect();
        let sql = format!(
            "UPDATE job_executions SET status = ended.status, status_code = ended.status_code,
                 error = ended.error, duration_ms = ended.duration_ms
             FROM {ended} AS ended
             WHERE {ids} AND job_executions.id = ended.id AND job_executions.status = 'running'
             RETURNING job_executions.id",
            ids = self.rows.dialect().in_json_texts("job_executions.id", "?2"),
            ended = self.rows.dialect().json_rows(
                "?1",
                &[
                    ("id", "TEXT"),
                    ("status", "TEXT"),
                    ("status_code", "BIGINT"),
                    ("error", "TEXT"),
                    ("duration_ms", "BIGINT"),
                ]
            )
        );
        self.rows
            .prepare_cached(&sql)
            .and_then(|mut statement| {
                statement
                    .query_map(
                        params![serde_json::Value::from(rows).to_string(), ids],
                        |row| row.get(0),
                    )?
                    .collect::<DbResult<Vec<String>>>()
            })
            .map_err(storage)
    }

    /// [`Tx::set_job_status`] for many jobs in one statement: (job id, status, next attempt
    /// due, changed at).
    pub(in crate::service) fn set_jobs_status(
        &self,
        jobs: &[(&str, JobStatus, i64, i64)],
    ) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let ids = serde_json::to_string(&jobs.iter().map(|(id, ..)| id).collect::<Vec<_>>())
            .expect("strings serialise");
        let rows: Vec<serde_json::Value> = jobs
            .iter()
            .map(|(id, status, next_attempt_at, updated_at)| {
                serde_json::json!({
                    "id": id,
                    "status": status.as_str(),
                    "next_attempt_at": next_attempt_at,
                    "updated_at": updated_at,
                })
            })
            .collect();
        let sql = format!(
            "UPDATE jobs SET status = changed.status, next_attempt_at = changed.next_attempt_at,
                 updated_at = changed.updated_at, {released}
             FROM {changed} AS changed WHERE {ids} AND jobs.id = changed.id",
            released = Queue::Jobs.released(),
            ids = self.rows.dialect().in_json_texts("jobs.id", "?2"),
            changed = self.rows.dialect().json_rows(
                "?1",
                &[
                    ("id", "TEXT"),
                    ("status", "TEXT"),
                    ("next_attempt_at", "BIGINT"),
                    ("updated_at", "BIGINT")
                ]
            ),
        );
        self.rows
            .execute(
                &sql,
                params![serde_json::Value::from(rows).to_string(), ids],
            )
            .map_err(storage)?;
        Ok(())
    }

    /// Sets a job's status, frees its lease and sets when its next attempt is due.
    pub(in crate::service) fn set_job_status(
        &self,
        job_id: &str,
        status: JobStatus,
        next_attempt_at: i64,
        now_ms: i64,
    ) -> Result<()> {
        // One statement: the new status, and the lease let go (`Tx::drop_lease`'s rule).
        self.rows
            .execute(
                &format!(
                    "UPDATE jobs SET status = ?1, next_attempt_at = ?2, updated_at = ?3, {}
                     WHERE id = ?4",
                    Queue::Jobs.released()
                ),
                params![status.as_str(), next_attempt_at, now_ms, job_id],
            )
            .map_err(storage)?;
        Ok(())
    }

    /// Drops the body of a job (a SIM-swap check's phone number) once it ended.
    pub(in crate::service) fn forget_job_body(&self, job_id: &str) -> Result<()> {
        self.rows
            .execute("UPDATE jobs SET body = NULL WHERE id = ?1", [job_id])
            .map_err(storage)?;
        self.erased();
        Ok(())
    }

    /// Queues a delivery in the outbox.
    pub(in crate::service) fn insert_outbox(&self, entry: &OutboxEntry, now_ms: i64) -> Result<()> {
        self.rows
            .execute(
                "INSERT INTO outbox (project_id, url, headers, body, timeout_ms, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    entry.project_id,
                    entry.url,
                    map_to_json(&entry.headers),
                    entry.body,
                    entry.timeout_ms as i64,
                    now_ms
                ],
            )
            .map_err(storage)?;
        Ok(())
    }
}

impl Store {
    /// When the next waiting job is due (Unix ms): the earliest unleased due time, or the
    /// earliest lease end when every waiting job is leased.
    pub fn next_due_ms(&self) -> Result<Option<i64>> {
        self.read(|connection| {
            // A free job is due at its next attempt, a held one when its hold runs out: two
            // index walks (`jobs_free_due`, `jobs_by_lease`) that each stop at their first row.
            let firsts: [Option<i64>; 2] = connection
                .query_row(
                    "SELECT
                         (SELECT next_attempt_at FROM jobs
                          WHERE status IN ('scheduled', 'pending') AND lease_until IS NULL
                          ORDER BY next_attempt_at LIMIT 1),
                         (SELECT lease_until FROM jobs
                          WHERE lease_until IS NOT NULL AND status IN ('scheduled', 'pending')
                          ORDER BY lease_until LIMIT 1)",
                    params![],
                    |row| Ok([row.get(0)?, row.get(1)?]),
                )
                .map_err(storage)?;
            Ok(firsts.into_iter().flatten().min())
        })
    }
}

/// Durations above this many ms share the last slot of the stats' histogram (attempts time out
/// after 30 s, so real durations stay below it).
pub const STATS_HISTOGRAM_MS: usize = 120_000;

/// Execution attempts of a project since a time: what `GET /stats/jobs` reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecutionStats {
    /// Finished attempts (`running` ones are not counted).
    pub total: u64,
    /// Attempts that succeeded.
    pub succeeded: u64,
    /// Attempts that failed or were interrupted.
    pub failed: u64,
    /// Mean duration of the attempts that have one, ms.
    pub avg_duration_ms: f64,
    /// 95th percentile (nearest rank) of the durations, ms.
    pub p95_duration_ms: i64,
}

impl Store {
    /// Counts and durations of the project's finished attempts made at or after `since_ms`, in
    /// one pass over the covering index. The 95th percentile is exact for durations up to
    /// [`STATS_HISTOGRAM_MS`] (a millisecond histogram; longer ones count in its last slot).
    pub fn execution_stats(&self, project_id: &str, since_ms: i64) -> Result<ExecutionStats> {
        self.read(|connection| {
            let mut histogram = vec![0u32; STATS_HISTOGRAM_MS + 1];
            let (mut total, mut succeeded, mut timed, mut duration_sum) = (0u64, 0u64, 0u64, 0i128);
            connection
                .for_each_row(
                    "SELECT status = 'running', status = 'success', duration_ms
                     FROM job_executions
                     WHERE project_id = ?1 AND executed_at >= ?2 AND billable = 1",
                    params![project_id, since_ms],
                    |row| {
                        if row.get::<bool>(0)? {
                            return Ok(());
                        }
                        total += 1;
                        if row.get::<bool>(1)? {
                            succeeded += 1;
                        }
                        if let Some(duration) = row.get::<Option<i64>>(2)? {
                            let duration = duration.max(0);
                            timed += 1;
                            duration_sum += i128::from(duration);
                            histogram[(duration as usize).min(STATS_HISTOGRAM_MS)] += 1;
                        }
                        Ok(())
                    },
                )
                .map_err(storage)?;
            // Nearest rank: the ceil(0.95 n)-th smallest duration.
            let mut p95 = 0;
            if timed > 0 {
                let rank = (timed * 95).div_ceil(100);
                let mut seen = 0u64;
                for (duration, count) in histogram.iter().enumerate() {
                    seen += u64::from(*count);
                    if seen >= rank {
                        p95 = duration as i64;
                        break;
                    }
                }
            }
            Ok(ExecutionStats {
                total,
                succeeded,
                failed: total - succeeded,
                avg_duration_ms: if timed > 0 {
                    duration_sum as f64 / timed as f64
                } else {
                    0.0
                },
                p95_duration_ms: p95,
            })
        })
    }

    /// The project's execution attempts per UTC day since `since_ms` (a day's start): the start
    /// of each day that had any, with its count, oldest first. One pass over the covering index.
    pub fn daily_executions(&self, project_id: &str, since_ms: i64) -> Result<Vec<(i64, u64)>> {
        self.read(|connection| {
            let mut days: Vec<(i64, u64)> = Vec::new();
            connection
                .for_each_row(
                    "SELECT executed_at FROM job_executions
                     WHERE project_id = ?1 AND executed_at >= ?2 AND billable = 1
                     ORDER BY executed_at",
                    params![project_id, since_ms],
                    |row| {
                        let at: i64 = row.get(0)?;
                        let day = at - at.rem_euclid(DAY_MS);
                        match days.last_mut() {
                            Some((last, count)) if *last == day => *count += 1,
                            _ => days.push((day, 1)),
                        }
                        Ok(())
                    },
                )
                .map_err(storage)?;
            Ok(days)
        })
    }
}

/// A delivery waiting in the outbox: a POST of `body` to `url` with `headers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    /// Row id (0 before it is stored).
    pub seq: i64,
    /// The project it belongs to.
    pub project_id: String,
    /// Where to POST.
    pub url: String,
    /// Headers of the POST.
    pub headers: BTreeMap<String, String>,
    /// JSON body.
    pub body: String,
    /// Timeout of the POST, ms.
    pub timeout_ms: u64,
}

impl Tx<'_> {
    /// Claims up to `max` outbox entries nobody holds at `now_ms`, oldest first, each until
    /// `until` ([`Tx::take_lease`]); [`Tx::outbox_done`] removes each once it was sent.
    pub(in crate::service) fn claim_outbox(
        &self,
        now_ms: i64,
        until: i64,
        max: usize,
    ) -> Result<Vec<OutboxEntry>> {
        let entries: Vec<OutboxEntry> = {
            let mut statement = self
                .rows
                .prepare_cached(&format!(
                    "SELECT seq, project_id, url, headers, body, timeout_ms FROM outbox
                     WHERE {} ORDER BY seq LIMIT ?2{}",
                    Queue::Outbox.free_at("?1"),
                    self.rows.dialect().skip_locked(),
                ))
                .map_err(storage)?;
            let rows = statement
                .query_map(params![now_ms, max as i64], |row| {
                    Ok(OutboxEntry {
                        seq: row.get(0)?,
                        project_id: row.get(1)?,
                        url: row.get(2)?,
                        headers: map_from_json(row.get(3)?),
                        body: row.get(4)?,
                        timeout_ms: row.get::<i64>(5)? as u64,
                    })
                })
                .map_err(storage)?;
            rows.collect::<DbResult<Vec<_>>>().map_err(storage)?
        };
        let mut claimed = Vec::with_capacity(entries.len());
        for entry in entries {
            if self.take_lease(Queue::Outbox, &entry.seq, now_ms, until)? {
                claimed.push(entry);
            }
        }
        Ok(claimed)
    }

    /// Removes a sent outbox entry.
    pub(in crate::service) fn outbox_done(&self, seq: i64) -> Result<()> {
        self.rows
            .execute("DELETE FROM outbox WHERE seq = ?1", [seq])
            .map_err(storage)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_destination_reads_the_same_in_rust_and_in_sql() {
        let database = rusqlite::Connection::open_in_memory().unwrap();
        let connection = Conn::sqlite(&database);
        for (url, destination) in [
            ("https://example.com/a/b?c=d", "https://example.com"),
            ("http://127.0.0.1:8080/hook", "http://127.0.0.1:8080"),
            ("http://[::1]:9/x", "http://[::1]:9"),
            (
                "https://user:pw@host.example",
                "https://user:pw@host.example",
            ),
            ("https://host.example?x=/y", "https://host.example?x="),
            ("no-scheme/path", "no-scheme/path"),
            ("", ""),
        ] {
            assert_eq!(destination_of(url), destination, "{url}");
            let sql: String = connection
                .query_row(
                    &format!(
                        "SELECT {} FROM (SELECT ?1 AS url) AS given",
                        destination_sql(Dialect::Sqlite)
                    ),
                    [url],
                    |row| row.get(0),
                )
                .unwrap();
            assert_eq!(sql, destination, "{url}");
        }
    }
}
