//! The job lifecycle: the rules the store's job rows follow, kept here beside the pump's
//! `retry_delay_ms` so the store only stores. A create passes the idempotency check and the
//! credit gate; a claim counts the attempt, takes a lease and charges a call one credit; an
//! attempt's end retries the job or ends it by `max_retries`; an attempt whose lease ran out is
//! closed as `interrupted` and retried or failed the same way; a cancel is allowed only before the
//! first attempt. Each rule runs inside one store transaction with the rows it changes, so two
//! racing callers cannot both pass a gate only one of them fits through.

use std::collections::BTreeMap;

use crate::clock::format_timestamp;
use crate::error::{Error, Result};
use crate::service::store::{
    destination_of, AttemptResult, Claim, Credits, CreditsLook, InsertedJob, JobKind, JobRecord,
    JobStatus, OutboxEntry, SimSwapOutcome, Store, Tx,
};
use crate::service::transport::{OutboundRequest, WEBHOOK_TIMEOUT_MS};
use crate::service::{events, new_id};

/// Milliseconds in a UTC day (the daily cap's window).
const DAY_MS: i64 = 86_400_000;

/// Why an attempt whose lease ran out is closed.
const LEASE_EXPIRED: &str = "the attempt was interrupted: its lease expired before it reported";

/// Whether a due job may be claimed now ([`claim_due_jobs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Claim it.
    Yes,
    /// Its project has as many deliveries in flight as it may: leave the project out of this look.
    ProjectFull,
    /// Its destination has as many deliveries in flight as it may: leave it out of this look.
    DestinationFull,
    /// Nothing more may be claimed now.
    NoRoom,
}

impl JobRecord {
    /// A job of the engine's own (`kind` other than `Call`): a JSON POST of `body` to `url`,
    /// due at `now_ms`, with no idempotency key, webhook or replay.
    pub fn internal(
        kind: JobKind,
        project_id: &str,
        url: &str,
        body: String,
        max_retries: u32,
        subject: &str,
        now_ms: i64,
    ) -> JobRecord {
        JobRecord {
            id: new_id("job_"),
            project_id: project_id.to_owned(),
            url: url.to_owned(),
            http_method: "POST".to_owned(),
            headers: BTreeMap::from([("Content-Type".to_owned(), "application/json".to_owned())]),
            body: Some(body),
            scheduled_at: now_ms,
            max_retries,
            idempotency_key: None,
            request_hash: None,
            webhook_url: None,
            webhook_headers: BTreeMap::new(),
            status: JobStatus::Scheduled,
            attempts: 0,
            replay_of: None,
            created_at: now_ms,
            updated_at: now_ms,
            kind,
            subject: Some(subject.to_owned()),
        }
    }
}

/// Refuses new work a metered project cannot pay for: [`Error::CreditsExhausted`] at a balance of
/// 0 or less, [`Error::DailyLimit`] when today's (UTC) execution attempts reached the cap. A
/// project whose credits were never set is unmetered. The credits row is held until the
/// transaction ends (waiting for another server's hold).
fn credit_gate(tx: &Tx<'_>, project_id: &str, now_ms: i64) -> Result<()> {
    match tx.credits(project_id)? {
        Some(credits) => check_credits(tx, project_id, &credits, now_ms),
        None => Ok(()),
    }
}

/// [`credit_gate`] on credits already read (and held).
fn check_credits(tx: &Tx<'_>, project_id: &str, credits: &Credits, now_ms: i64) -> Result<()> {
    if credits.balance <= 0 {
        return Err(Error::CreditsExhausted(format!(
            "the project's credits are exhausted (plan {})",
            credits.plan
        )));
    }
    if let Some(limit) = credits.daily_limit {
        let day_start = now_ms - now_ms.rem_euclid(DAY_MS);
        if tx.billable_attempts_since(project_id, day_start)? >= limit {
            return Err(Error::DailyLimit(format!(
                "the daily execution limit of {limit} is reached (plan {})",
                credits.plan
            )));
        }
    }
    Ok(())
}

/// Stores a new job: an idempotency key already used with the same request answers with that
/// job (a different request is a conflict); otherwise the project's credits must allow it
/// (balance above 0, fewer attempts today than the daily cap), all in one transaction.
pub(in crate::service) fn insert_job(
    store: &Store,
    job: &JobRecord,
    now_ms: i64,
) -> Result<InsertedJob> {
    store.atomically(|tx| {
        if job.idempotency_key.is_some() {
            // The key's first use is decided by one server at a time.
            tx.lock_project(&job.project_id, now_ms)?;
        } else {
            tx.ensure_project(&job.project_id, now_ms)?;
        }
        if let Some(key) = &job.idempotency_key {
            if let Some(earlier) = tx.job_by_idempotency_key(&job.project_id, key)? {
                if earlier.request_hash == job.request_hash {
                    return Ok(InsertedJob::Existing(earlier));
                }
                return Err(Error::Conflict(
                    "idempotency_key was already used with a different request".to_owned(),
                ));
            }
        }
        credit_gate(tx, &job.project_id, now_ms)?;
        tx.insert_job(job)?;
        Ok(InsertedJob::New(job.clone()))
    })
}

/// Cancels a job that has not fired ([`Error::NotFound`] when there is no such job,
/// [`Error::Conflict`] once an attempt was made or the job is no longer waiting), and in the
/// same transaction queues the delivery `webhook` makes of the cancelled job, if any.
pub(in crate::service) fn cancel_job(
    store: &Store,
    project_id: &str,
    job_id: &str,
    now_ms: i64,
    webhook: impl Fn(&JobRecord) -> Option<OutboxEntry>,
) -> Result<JobRecord> {
    store.atomically(|tx| {
        let job = tx
            .job(project_id, job_id)?
            .ok_or_else(|| Error::NotFound("job not found".to_owned()))?;
        let waiting = matches!(job.status, JobStatus::Scheduled | JobStatus::Pending);
        if !waiting || job.attempts > 0 {
            return Err(Error::Conflict(format!(
                "job has already been executed or ended (status {})",
                job.status.as_str()
            )));
        }
        tx.set_job_status(&job.id, JobStatus::Cancelled, now_ms, now_ms)?;
        let job = JobRecord {
            status: JobStatus::Cancelled,
            updated_at: now_ms,
            ..job
        };
        if let Some(entry) = webhook(&job) {
            tx.insert_outbox(&entry, now_ms)?;
        }
        Ok(job)
    })
}

/// Claims up to `max` due jobs in one transaction and returns them: each claim counts the
/// attempt, opens its execution row (`running`), takes a lease until `now + lease_ms` and charges
/// a metered project one credit. A project out of credits or at its daily cap keeps its due jobs
/// waiting. First, attempts whose lease ran out (the process died or stalled mid-attempt) are
/// closed as `interrupted` and their jobs retried or failed by `max_retries`; the failed ones come
/// back in the second value.
///
/// Asks `admit` before each claim whether the job's project and destination ([`destination_of`])
/// have room: a full project or destination is left out of the rest of this look (its due jobs
/// wait, uncharged), so that one project's or one receiver's backlog never stands in front of the
/// others. A look at the projects' calls reads at most `page` rows: on PostgreSQL each row a look
/// returns stays locked until the claim commits (`FOR UPDATE SKIP LOCKED`), hidden from the other
/// servers' looks, so a look asks for about what it can claim (the pump passes one project's
/// room), not for everything that is due.
pub(in crate::service) fn claim_due_jobs(
    store: &Store,
    now_ms: i64,
    lease_ms: i64,
    max: usize,
    page: usize,
    new_execution_id: &mut dyn FnMut() -> String,
    admit: &mut dyn FnMut(&JobRecord) -> Admit,
) -> Result<(Vec<Claim>, Vec<JobRecord>)> {
    store.atomically(|tx| {
        let ended = recover_expired_leases(tx, now_ms)?;
        // The engine's own deliveries first (nothing gates them), then the projects' calls.
        // A project that cannot pay keeps its due calls waiting; it is left out of the next
        // look, so its backlog never stands in front of other projects' jobs.
        let mut claims = Vec::new();
        let mut blocked: Vec<String> = Vec::new();
        // Projects found unmetered in this look: not asked again.
        let mut unmetered: Vec<String> = Vec::new();
        let mut full_destinations: Vec<String> = Vec::new();
        let mut internal_done = false;
        let mut no_room = false;
        while claims.len() < max && !no_room {
            let limit = if internal_done {
                (max - claims.len()).min(page.max(1))
            } else {
                max
            };
            let due = tx.due_jobs(now_ms, !internal_done, limit, &blocked, &full_destinations)?;
            if due.is_empty() {
                if internal_done {
                    break;
                }
                internal_done = true;
                continue;
            }
            let was_internal = !internal_done;
            internal_done = true;
            let before = (claims.len(), blocked.len(), full_destinations.len());
            // The look's claims in the order it read them. The uncharged ones (`Some(billable)`)
            // are written together after it (`Tx::claim_jobs`); a charged one is written at once,
            // before the next credit check reads the balance.
            let mut look: Vec<(Claim, Option<bool>)> = Vec::new();
            for job in due {
                if claims.len() + look.len() == max {
                    break;
                }
                let destination = destination_of(&job.url);
                if blocked.contains(&job.project_id)
                    || full_destinations.iter().any(|full| full == destination)
                {
                    continue;
                }
                let billable = job.kind == JobKind::Call;
                // A metered project's credits are held from here to the commit; a project whose
                // credits another server holds now waits for the next look (no claim ever waits
                // for a lock, so two claims cannot deadlock over two projects' credits).
                let metered = if !billable || unmetered.contains(&job.project_id) {
                    false
                } else {
                    match tx.credits_to_claim(&job.project_id)? {
                        CreditsLook::Unmetered => {
                            unmetered.push(job.project_id.clone());
                            false
                        }
                        CreditsLook::Busy => {
                            blocked.push(job.project_id.clone());
                            continue;
                        }
                        CreditsLook::Metered(credits) => {
                            match check_credits(tx, &job.project_id, &credits, now_ms) {
                                Ok(()) => true,
                                Err(Error::CreditsExhausted(_) | Error::DailyLimit(_)) => {
                                    blocked.push(job.project_id.clone());
                                    continue;
                                }
                                Err(error) => return Err(error),
                            }
                        }
                    }
                };
                match admit(&job) {
                    Admit::Yes => {}
                    Admit::ProjectFull => {
                        blocked.push(job.project_id.clone());
                        continue;
                    }
                    Admit::DestinationFull => {
                        full_destinations.push(destination.to_owned());
                        continue;
                    }
                    Admit::NoRoom => {
                        no_room = true;
                        break;
                    }
                }
                let attempt_num = job.attempts + 1;
                let claim = Claim {
                    job: JobRecord {
                        attempts: attempt_num,
                        updated_at: now_ms,
                        ..job
                    },
                    execution_id: new_execution_id(),
                    attempt_num,
                    lease_until: now_ms + lease_ms,
                };
                // Taken by another worker since the look (only possible where the store lets two
                // writers in at once): its admission slot is let go with the rest at the end.
                if !metered {
                    look.push((claim, Some(billable)));
                } else if tx.claim_job(&claim, billable, metered, now_ms)? {
                    look.push((claim, None));
                }
            }
            let uncharged: Vec<(&Claim, bool)> = look
                .iter()
                .filter_map(|(claim, billable)| billable.map(|billable| (claim, billable)))
                .collect();
            let taken = tx.claim_jobs(&uncharged, now_ms)?;
            claims.extend(
                look.into_iter()
                    .filter(|(claim, billable)| billable.is_none() || taken.contains(&claim.job.id))
                    .map(|(claim, _)| claim),
            );
            // A look that neither claimed nor left anything out would find the same rows
            // again (a destination the SQL reads differently than `destination_of`, for one).
            if !was_internal && before == (claims.len(), blocked.len(), full_destinations.len()) {
                break;
            }
        }
        Ok((claims, ended))
    })
}

/// Closes the attempts whose lease ran out as `interrupted` and frees their jobs: retried at once
/// while `max_retries` allows (the interrupted attempt counts), `failed` otherwise. Returns the
/// jobs that failed here.
fn recover_expired_leases(tx: &Tx<'_>, now_ms: i64) -> Result<Vec<JobRecord>> {
    let mut failed = Vec::new();
    for job in tx.expired_leases(now_ms)? {
        tx.interrupt_attempt(&job, LEASE_EXPIRED)?;
        let retry = job.attempts <= job.max_retries;
        let status = if retry { job.status } else { JobStatus::Failed };
        tx.set_job_status(&job.id, status, now_ms, now_ms)?;
        if !retry {
            let job = JobRecord {
                status,
                updated_at: now_ms,
                ..job
            };
            if job.kind == JobKind::SimSwap {
                let outcome = SimSwapOutcome::failed(LEASE_EXPIRED);
                events::finish_sim_swap(tx, &job, &outcome, now_ms)?;
            }
            failed.push(job);
        }
    }
    Ok(failed)
}

/// Records how claimed attempts ended, all in one transaction (the pump's group commit,
/// `service/jobs/record.rs`), and moves each job on: `success`, a retry at `retry_at`, or
/// `failed` when no retry is allowed. An attempt whose lease was already taken over (closed as
/// `interrupted`) changes nothing. Returns, per attempt in order, the job when it reached a
/// terminal state here.
pub(in crate::service) fn finish_attempts(
    store: &Store,
    ended: &[(&Claim, &AttemptResult, i64)],
) -> Result<Vec<Option<JobRecord>>> {
    store.atomically(|tx| {
        let executions: Vec<(&str, &AttemptResult)> = ended
            .iter()
            .map(|(claim, result, _)| (claim.execution_id.as_str(), *result))
            .collect();
        let closed = tx.close_executions(&executions)?;
        let mut changes = Vec::new();
        let mut outcomes = Vec::new();
        for (claim, result, now_ms) in ended {
            if !closed.contains(&claim.execution_id) {
                outcomes.push(None);
                continue;
            }
            let retry_at = result
                .retry_at
                .filter(|_| !result.success && claim.attempt_num <= claim.job.max_retries);
            let status = match (result.success, retry_at) {
                (true, _) => JobStatus::Success,
                (false, Some(_)) => claim.job.status,
                (false, None) => JobStatus::Failed,
            };
            changes.push((
                claim.job.id.as_str(),
                status,
                retry_at.unwrap_or(*now_ms),
                *now_ms,
            ));
            let ended =
                matches!(status, JobStatus::Success | JobStatus::Failed).then(|| JobRecord {
                    status,
                    updated_at: *now_ms,
                    ..claim.job.clone()
                });
            outcomes.push(ended);
        }
        tx.set_jobs_status(&changes)?;
        // A SIM-swap check that ended keeps its result (after its job's row changed, as when
        // each attempt was written on its own).
        for ((_, result, now_ms), ended) in ended.iter().zip(&outcomes) {
            if let Some(job) = ended.as_ref().filter(|job| job.kind == JobKind::SimSwap) {
                let outcome = result.sim_swap.clone().unwrap_or_else(|| {
                    SimSwapOutcome::failed(result.error.as_deref().unwrap_or("the check failed"))
                });
                events::finish_sim_swap(tx, job, &outcome, *now_ms)?;
            }
        }
        Ok(outcomes)
    })
}

/// The spec's job webhook: `job_id`, `status` (`completed`, `failed`, `cancelled`),
/// `status_code`, `last_error`, `completed_at`, `attempt_num`, with the job's `webhook_headers`.
pub(in crate::service) fn webhook_request(
    job: &JobRecord,
    url: &str,
    status_code: Option<u16>,
    last_error: Option<&str>,
) -> OutboundRequest {
    let status = match job.status {
        JobStatus::Success => "completed",
        JobStatus::Cancelled => "cancelled",
        _ => "failed",
    };
    let body = serde_json::json!({
        "job_id": job.id,
        "status": status,
        "status_code": status_code,
        "last_error": last_error,
        "completed_at": format_timestamp(job.updated_at),
        "attempt_num": job.attempts,
    });
    let mut headers: Vec<(String, String)> = job
        .webhook_headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    headers.push(("Content-Type".into(), "application/json".into()));
    OutboundRequest {
        method: "POST".into(),
        url: url.to_owned(),
        headers,
        body: Some(body.to_string().into_bytes()),
        timeout_ms: WEBHOOK_TIMEOUT_MS,
    }
}

/// The job webhook of `job`, as an outbox entry (for deliveries decided outside a pump, such as
/// a cancellation); `None` when the job has no `webhook_url`.
pub(in crate::service) fn queued_webhook(
    job: &JobRecord,
    status_code: Option<u16>,
    last_error: Option<&str>,
) -> Option<OutboxEntry> {
    let url = job.webhook_url.as_ref()?;
    let request = webhook_request(job, url, status_code, last_error);
    Some(OutboxEntry {
        seq: 0,
        project_id: job.project_id.clone(),
        url: request.url,
        headers: request.headers.into_iter().collect(),
        body: String::from_utf8(request.body.unwrap_or_default()).unwrap_or_default(),
        timeout_ms: request.timeout_ms,
    })
}
