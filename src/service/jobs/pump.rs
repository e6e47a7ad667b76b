//! The job pump: the one way anything leaves the device, and the driver of the engine's local
//! jobs. The library opens no socket; the host hands [`Pump::run`] a [`Transport`] (an
//! HTTP client of its platform) and calls it from its own timer or background task. Each call
//! first runs one due forgery analysis (`service::avf`), then claims the due jobs (attempt
//! counted, credit charged and lease taken in one transaction) within per-project and
//! per-destination limits of what is in flight, sends them through the transport (several at
//! once when it allows), records each outcome, schedules retries with capped exponential backoff
//! and full jitter, and posts the job webhook of every job that reached a terminal state, signed
//! when the project has a secret (`service::signing`). Concurrent pumps never send one attempt
//! twice: a job, like an analysis, is claimed by one pump at a time.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crate::clock::format_timestamp;
use crate::error::Result;
use crate::service::lifecycle::Admit;
use crate::service::lifecycle::{self, webhook_request};
use crate::service::store::AttemptResult;
#[cfg(not(feature = "inspect"))]
use crate::service::store::Claim;
use crate::service::store::{
    destination_of, JobKind, JobRecord, JobStatus, OutboxEntry, SimSwapOutcome,
};
// The tests' view of a claim taken without its attempt (`engine.pump().claim_due`).
#[cfg(feature = "inspect")]
pub use crate::service::store::Claim;
pub use crate::service::transport::{
    OutboundRequest, OutboundResponse, Transport, CALL_TIMEOUT_MS, WEBHOOK_TIMEOUT_MS,
};
use crate::service::{new_id, Engine};

use super::record::Recorder;

/// How long a claim holds before another pump may close it as interrupted and retry the job.
pub const LEASE_MS: i64 = 120_000;
/// First retry delay's upper bound, ms; it doubles with each attempt.
pub const BACKOFF_BASE_MS: i64 = 10_000;
/// Longest retry delay, ms (also the most a `Retry-After` can ask for).
pub const BACKOFF_CAP_MS: i64 = 3_600_000;
/// Most bytes of an answer's body a transport hands back (the rest is dropped): only a SIM-swap
/// provider's answer is read, and it is a few bytes of JSON.
pub const MAX_RESPONSE_BODY: usize = 65_536;

/// Most job attempts (with their webhooks and alerts) one engine has in flight at once.
pub const MAX_IN_FLIGHT: usize = 64;
/// Most attempts of one project in flight at once: a project whose receivers are slow holds at
/// most this many, and the others' jobs go on.
pub const MAX_IN_FLIGHT_PER_PROJECT: usize = 16;
/// Most attempts to one destination (scheme and authority of the URL) in flight at once, so that
/// many projects calling one receiver do not flood it.
pub const MAX_IN_FLIGHT_PER_DESTINATION: usize = 16;

/// The engine's count of deliveries in flight, per project and per destination, over every
/// thread that pumps ([`Pump::deliver`]).
#[derive(Debug, Default)]
pub(crate) struct DeliveryGate {
    state: Mutex<GateState>,
}

#[derive(Debug, Default)]
struct GateState {
    total: usize,
    projects: HashMap<String, usize>,
    destinations: HashMap<String, usize>,
}

/// One delivery's room in the [`DeliveryGate`], given back when dropped.
pub(crate) struct Slot<'a> {
    gate: &'a DeliveryGate,
    project: String,
    destination: String,
}

impl DeliveryGate {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        // Counting cannot leave the state half-changed: a poisoned lock is still consistent.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes room for `job` when its project, its destination and the engine have some, keeping
    /// the slot in `slots` under the job's id (one per job, whatever the number of asks).
    fn admit<'a>(&'a self, job: &JobRecord, slots: &mut HashMap<String, Slot<'a>>) -> Admit {
        if slots.contains_key(&job.id) {
            return Admit::Yes;
        }
        let destination = destination_of(&job.url);
        let mut state = self.lock();
        if state.total >= MAX_IN_FLIGHT {
            return Admit::NoRoom;
        }
        if state.projects.get(&job.project_id).copied().unwrap_or(0) >= MAX_IN_FLIGHT_PER_PROJECT {
            return Admit::ProjectFull;
        }
        if state.destinations.get(destination).copied().unwrap_or(0)
            >= MAX_IN_FLIGHT_PER_DESTINATION
        {
            return Admit::DestinationFull;
        }
        state.total += 1;
        *state.projects.entry(job.project_id.clone()).or_default() += 1;
        *state
            .destinations
            .entry(destination.to_owned())
            .or_default() += 1;
        slots.insert(
            job.id.clone(),
            Slot {
                gate: self,
                project: job.project_id.clone(),
                destination: destination.to_owned(),
            },
        );
        Admit::Yes
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut guard = self.gate.lock();
        let state = &mut *guard;
        state.total = state.total.saturating_sub(1);
        for (map, key) in [
            (&mut state.projects, &self.project),
            (&mut state.destinations, &self.destination),
        ] {
            if let Some(count) = map.get_mut(key) {
                *count -= 1;
                if *count == 0 {
                    map.remove(key);
                }
            }
        }
    }
}

/// One delivery of a pump call, in the order they are run.
enum Task<'j, 'g> {
    /// A queued webhook (a cancelled job's).
    Outbox(OutboxEntry),
    /// The webhook and alerts of a job whose last attempt was interrupted.
    Interrupted(&'j JobRecord),
    /// A claimed attempt and its room in the [`DeliveryGate`].
    Attempt(Box<Claim>, Option<Slot<'g>>),
}

/// Why an attempt was not sent.
enum Unsent {
    /// The endpoint was deleted after the delivery was queued or claimed: it ends quietly.
    Gone(&'static str),
    /// It cannot be sent now (secrets unreadable, a storage error): retried like a failure.
    NotNow(String),
    /// It can never be sent (no SIM-swap provider any more): it fails for good.
    Never(&'static str),
}

/// What one pump call did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PumpReport {
    /// Attempts sent.
    pub attempts: usize,
    /// Jobs that succeeded.
    pub succeeded: usize,
    /// Jobs that failed for good.
    pub failed: usize,
    /// Attempts closed as interrupted (their lease ran out).
    pub interrupted: usize,
    /// When the next job or forgery analysis is due (Unix ms), if any is waiting.
    pub next_due_ms: Option<i64>,
    /// Forgery analyses this pump ended (completed, or failed on a video that cannot be
    /// analysed): at most one per pump, before the outbound jobs.
    pub analyses: usize,
    /// Why a forgery analysis could not run (a model or storage failure): it is tried again by a
    /// later pump once its lease runs out; the outbound jobs were pumped anyway.
    pub analysis_error: Option<String>,
}

/// Whether a failed attempt may be retried (while retries are left). A project's job: every
/// failure, any non-2xx answer (3xx and 4xx included), a timeout, a refused or lost connection,
/// as the job spec says a job fails "when attempts exhausted all retries". The engine's own
/// deliveries (events, SIM-swap checks) retry transport failures, 408, 429 and 5xx; any other
/// 4xx ends them at once (a deleted receiver, a refused credential: repeating cannot help).
pub fn is_retryable(kind: JobKind, status: Option<u16>) -> bool {
    match (kind, status) {
        (JobKind::Call, _) | (_, None) => true,
        (_, Some(code)) => code == 408 || code == 429 || code >= 500,
    }
}

/// The delay before retry number `attempt` (1 after the first failure): a uniformly random
/// point below `min(cap, base * 2^(attempt-1))` (full jitter), or the server's `Retry-After`
/// (seconds) when it asked for more, never beyond the cap.
pub fn retry_delay_ms(attempt: u32, retry_after_s: Option<i64>, random: u64) -> i64 {
    let ceiling = BACKOFF_BASE_MS
        .saturating_mul(1i64 << attempt.saturating_sub(1).min(30))
        .min(BACKOFF_CAP_MS);
    let jittered = (random % (ceiling as u64 + 1)) as i64;
    match retry_after_s {
        Some(seconds) => jittered
            .max(seconds.saturating_mul(1000))
            .min(BACKOFF_CAP_MS),
        None => jittered,
    }
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // getrandom only fails on platforms without an entropy source.
    getrandom::getrandom(&mut bytes).expect("the operating system provides randomness");
    u64::from_le_bytes(bytes)
}

fn retry_after(response: &OutboundResponse) -> Option<i64> {
    response
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))
        .and_then(|(_, value)| value.trim().parse::<i64>().ok())
        .filter(|seconds| *seconds >= 0)
}

/// The call of one attempt: the job's method, URL, headers and body, plus `X-Job-Id`,
/// `X-Execution-Id`, `X-Attempt` and `Idempotency-Key` (the job id, the same on every attempt,
/// so the receiver can deduplicate at-least-once delivery).
fn attempt_request(claim: &Claim) -> OutboundRequest {
    let job = &claim.job;
    let mut headers: Vec<(String, String)> = job
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    headers.push(("X-Job-Id".into(), job.id.clone()));
    headers.push(("X-Execution-Id".into(), claim.execution_id.clone()));
    headers.push(("X-Attempt".into(), claim.attempt_num.to_string()));
    headers.push(("Idempotency-Key".into(), job.id.clone()));
    OutboundRequest {
        method: job.http_method.clone(),
        url: job.url.clone(),
        headers,
        body: job.body.as_ref().map(|body| body.as_bytes().to_vec()),
        timeout_ms: CALL_TIMEOUT_MS,
    }
}

/// What a SIM-swap provider's 2xx answer says: CAMARA's `{"swapped": true|false}` (other fields
/// are ignored); anything else is a failed check that says why.
fn sim_swap_outcome(body: &[u8]) -> SimSwapOutcome {
    let swapped = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|answer| answer.get("swapped").and_then(serde_json::Value::as_bool));
    match swapped {
        Some(swapped) => SimSwapOutcome {
            status: "completed",
            swapped: Some(swapped),
            detail: None,
        },
        None => SimSwapOutcome::failed(
            "the provider's answer was not a JSON object with a boolean \"swapped\"",
        ),
    }
}

/// The pump: due forgery analyses and job deliveries ([`Engine::pump`]).
#[derive(Debug, Clone, Copy)]
pub struct Pump<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// The pump: due forgery analyses and job deliveries.
    pub fn pump(&self) -> Pump<'_> {
        Pump(self)
    }
}

impl Pump<'_> {
    /// Runs one due forgery analysis, then [`Pump::deliver`]: sends up to `max_jobs` due
    /// job attempts through `transport` and records their outcomes (see the module
    /// documentation). Safe to call from several threads or processes at once.
    pub fn run(&self, transport: &dyn Transport, max_jobs: usize) -> Result<PumpReport> {
        let engine = self.0;
        // The local jobs first: one forgery analysis (seconds of work), whose completion event
        // this same pump can then deliver.
        let (analyses, analysis_error) = match engine.forgery().run(1) {
            Ok(done) => (done, None),
            Err(error) => (0, Some(error.to_string())),
        };
        let report = self.deliver(transport, max_jobs)?;
        Ok(PumpReport {
            analyses,
            analysis_error,
            ..report
        })
    }

    /// Claims up to `max` due jobs as [`Pump::deliver`] does (the lease, the execution row,
    /// the credit), with the execution ids `new_execution_id` gives, and returns the claims
    /// without making the attempts: what a pump that dies right after its claim leaves behind.
    /// For tests of lease recovery.
    #[cfg(feature = "inspect")]
    pub fn claim_due(
        &self,
        now_ms: i64,
        max: usize,
        new_execution_id: &mut dyn FnMut() -> String,
    ) -> Result<Vec<Claim>> {
        let (claims, _) = lifecycle::claim_due_jobs(
            &self.0.store,
            now_ms,
            LEASE_MS,
            max,
            max,
            new_execution_id,
            &mut |_| Admit::Yes,
        )?;
        Ok(claims)
    }

    /// The delivery half of [`Pump::run`], without the forgery analysis: a host can run
    /// it on several threads (analyses are CPU work; deliveries mostly wait on the network).
    /// Claims within the engine's delivery limits ([`MAX_IN_FLIGHT`] in all,
    /// [`MAX_IN_FLIGHT_PER_PROJECT`] per project, [`MAX_IN_FLIGHT_PER_DESTINATION`] per
    /// destination, counted over every thread of the process): a project or destination at its
    /// limit keeps its due jobs waiting, unclaimed and uncharged, for a later call. The claimed
    /// attempts (each with its job webhook and alerts), the queued webhooks and those of
    /// interrupted attempts are then sent by up to [`Transport::max_concurrent`] threads at once
    /// (with the default, 1, in order on the calling thread); the call returns when they are all
    /// recorded.
    pub fn deliver(&self, transport: &dyn Transport, max_jobs: usize) -> Result<PumpReport> {
        let engine = self.0;
        let now = engine.now_ms();
        // Deliveries queued by requests (the webhooks of cancelled jobs): best effort, once;
        // a pump that dies mid-way leaves them to the next one after the lease.
        let outbox = engine
            .store
            .atomically(|tx| tx.claim_outbox(now, now + LEASE_MS, max_jobs.max(1)))?;
        crate::service::schedules::spawn_due_jobs(&engine.store, now)?;
        let mut slots: HashMap<String, Slot<'_>> = HashMap::new();
        let (claims, interrupted_failed) = lifecycle::claim_due_jobs(
            &engine.store,
            now,
            LEASE_MS,
            max_jobs,
            MAX_IN_FLIGHT_PER_PROJECT,
            &mut || new_id("exec_"),
            &mut |job| engine.deliveries.admit(job, &mut slots),
        )?;
        let mut report = PumpReport {
            attempts: claims.len(),
            interrupted: interrupted_failed.len(),
            failed: interrupted_failed.len(),
            ..PumpReport::default()
        };
        let recorder = Recorder::new(&engine.store);
        let mut tasks: VecDeque<Task<'_, '_>> = VecDeque::new();
        tasks.extend(outbox.into_iter().map(Task::Outbox));
        tasks.extend(interrupted_failed.iter().map(Task::Interrupted));
        tasks.extend(claims.into_iter().map(|claim| {
            // Held until the attempt, its webhook and its alerts are done.
            let slot = slots.remove(&claim.job.id);
            Task::Attempt(Box::new(claim), slot)
        }));
        let workers = transport
            .max_concurrent()
            .clamp(1, MAX_IN_FLIGHT)
            .min(tasks.len());
        let outcomes: Vec<Result<Option<JobStatus>>> = if workers <= 1 {
            tasks
                .into_iter()
                .map(|task| engine.run_task(transport, &recorder, task))
                .collect()
        } else {
            let queue = Mutex::new(tasks);
            let next = || {
                queue
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .pop_front()
            };
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..workers)
                    .map(|_| {
                        scope.spawn(|| {
                            let mut done = Vec::new();
                            while let Some(task) = next() {
                                done.push(engine.run_task(transport, &recorder, task));
                            }
                            done
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|handle| {
                        handle
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .collect()
            })
        };
        for outcome in outcomes {
            match outcome? {
                Some(JobStatus::Success) => report.succeeded += 1,
                Some(_) => report.failed += 1,
                None => {}
            }
        }
        report.next_due_ms = match (engine.store.next_due_ms()?, engine.store.next_avf_due_ms()?) {
            (Some(job), Some(analysis)) => Some(job.min(analysis)),
            (job, analysis) => job.or(analysis),
        };
        Ok(report)
    }
}

impl Engine {
    /// Runs one delivery of [`Pump::deliver`]: the job's state when it ended, if it did.
    fn run_task(
        &self,
        transport: &dyn Transport,
        recorder: &Recorder<'_>,
        task: Task<'_, '_>,
    ) -> Result<Option<JobStatus>> {
        match task {
            Task::Outbox(entry) => {
                let request = OutboundRequest {
                    method: "POST".into(),
                    url: entry.url.clone(),
                    headers: entry.headers.clone().into_iter().collect(),
                    body: Some(entry.body.clone().into_bytes()),
                    timeout_ms: entry.timeout_ms,
                };
                self.deliver(transport, &entry.project_id, request);
                self.store
                    .atomically(|tx| tx.outbox_done(entry.seq))
                    .map(|()| None)
            }
            Task::Interrupted(job) => {
                let why = "the attempt was interrupted: its lease expired before it reported";
                self.send_webhook(transport, job, None, Some(why));
                self.send_alerts(transport, job, None, why);
                Ok(None)
            }
            Task::Attempt(claim, slot) => {
                let ended = self.attempt(transport, recorder, *claim);
                drop(slot);
                ended
            }
        }
    }

    /// Sends one claimed attempt, records its outcome, and posts the job webhook and alerts when
    /// the job reached a terminal state: that state, or `None` while the job goes on.
    fn attempt(
        &self,
        transport: &dyn Transport,
        recorder: &Recorder<'_>,
        claim: Claim,
    ) -> Result<Option<JobStatus>> {
        let mut request = attempt_request(&claim);
        let unsent = self.prepare(&claim.job, &mut request);
        let started = Instant::now();
        let answer = match &unsent {
            None => transport.send(&request),
            Some(Unsent::Gone(why) | Unsent::Never(why)) => Err((*why).to_owned()),
            Some(Unsent::NotNow(why)) => Err(why.clone()),
        };
        let final_failure = matches!(unsent, Some(Unsent::Gone(_) | Unsent::Never(_)));
        let duration_ms = started.elapsed().as_millis() as i64;
        let (success, status_code, error, retry_after_s) = match &answer {
            Ok(response) => (
                (200..300).contains(&response.status),
                Some(response.status),
                (!(200..300).contains(&response.status))
                    .then(|| format!("the target answered HTTP {}", response.status)),
                retry_after(response),
            ),
            Err(error) => (false, None, Some(error.clone()), None),
        };
        let finished = self.now_ms();
        let retry_at = (!success && !final_failure && is_retryable(claim.job.kind, status_code))
            .then(|| finished + retry_delay_ms(claim.attempt_num, retry_after_s, random_u64()));
        let sim_swap = match &answer {
            Ok(response) if success && claim.job.kind == JobKind::SimSwap => {
                Some(sim_swap_outcome(&response.body))
            }
            _ => None,
        };
        let result = AttemptResult {
            success,
            status_code,
            error: error.clone(),
            duration_ms,
            retry_at,
            sim_swap,
        };
        let Some(ended) = recorder.record(claim, result, finished)? else {
            return Ok(None);
        };
        if ended.status != JobStatus::Success {
            let why = error.as_deref().unwrap_or("the attempt failed");
            if !matches!(unsent, Some(Unsent::Gone(_))) {
                self.send_alerts(transport, &ended, status_code, why);
            }
        }
        self.send_webhook(transport, &ended, status_code, error.as_deref());
        Ok(Some(ended.status))
    }

    /// Completes an attempt's request for the engine's own kinds: an event is signed with its
    /// endpoint's secrets (the job id is the stable `webhook-id`) and never sent unsigned; a
    /// SIM-swap check goes to the provider configured now, with its credentials (they are not
    /// stored with the job). `Some` when it must not be sent.
    fn prepare(&self, job: &JobRecord, request: &mut OutboundRequest) -> Option<Unsent> {
        match job.kind {
            JobKind::Call => None,
            JobKind::Event => {
                let Some(endpoint) = job.subject.as_deref() else {
                    return Some(Unsent::Gone(
                        "not sent: the delivery names no webhook endpoint",
                    ));
                };
                match self.store.webhook_endpoint(&job.project_id, endpoint) {
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        return Some(Unsent::Gone("not sent: the webhook endpoint was deleted"))
                    }
                    Err(error) => return Some(Unsent::NotNow(format!("not sent yet: {error}"))),
                }
                if self.sign_delivery(&job.project_id, endpoint, Some(&job.id), request) {
                    None
                } else {
                    Some(Unsent::NotNow(
                        "not sent yet: the endpoint's secret cannot be opened (events are never sent unsigned)"
                            .to_owned(),
                    ))
                }
            }
            JobKind::SimSwap => {
                let Some(provider) = &self.sim_swap else {
                    return Some(Unsent::Never(
                        "not sent: no SIM-swap provider is configured any more",
                    ));
                };
                request.url = provider.check_url.clone();
                request.headers.extend(
                    provider
                        .headers
                        .iter()
                        .map(|(name, value)| (name.clone(), value.clone())),
                );
                None
            }
        }
    }

    /// Notifies every enabled alert channel of the job's project that the job failed for good:
    /// `slack` channels get `{"text"}`, `webhook` channels `{"resource_type"` (`job`, or
    /// `event_delivery` and `sim_swap_check` for the engine's own deliveries),
    /// "resource_id", "last_error", "status_code", "attempts", "url", "http_method", "failed_at",
    /// "replay_of", "channel_id"}`. Best effort, like the job webhook: nothing depends on it.
    fn send_alerts(
        &self,
        transport: &dyn Transport,
        job: &JobRecord,
        status_code: Option<u16>,
        last_error: &str,
    ) {
        let Ok(channels) = self.store.alert_channels(&job.project_id, true) else {
            return;
        };
        let (resource_type, noun) = match job.kind {
            JobKind::Call => ("job", "Job"),
            JobKind::Event => ("event_delivery", "Event delivery"),
            JobKind::SimSwap => ("sim_swap_check", "SIM-swap check"),
        };
        for channel in channels {
            let body = if channel.kind == "slack" {
                serde_json::json!({
                    "text": format!(
                        "{} {} failed after {} attempt(s): {} ({} {})",
                        noun,
                        job.id,
                        job.attempts,
                        last_error,
                        job.http_method,
                        job.url
                    ),
                })
            } else {
                serde_json::json!({
                    "resource_type": resource_type,
                    "resource_id": job.id,
                    "last_error": last_error,
                    "status_code": status_code,
                    "attempts": job.attempts,
                    "url": job.url,
                    "http_method": job.http_method,
                    "failed_at": format_timestamp(job.updated_at),
                    "replay_of": job.replay_of,
                    "channel_id": channel.id,
                })
            };
            let request = OutboundRequest {
                method: "POST".into(),
                url: channel.target.clone(),
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(body.to_string().into_bytes()),
                timeout_ms: WEBHOOK_TIMEOUT_MS,
            };
            self.deliver(transport, &job.project_id, request);
        }
    }

    /// Posts the job webhook when the job has a `webhook_url`; best effort: its outcome changes
    /// nothing and costs nothing.
    fn send_webhook(
        &self,
        transport: &dyn Transport,
        job: &JobRecord,
        status_code: Option<u16>,
        last_error: Option<&str>,
    ) {
        if let Some(url) = &job.webhook_url {
            let request = webhook_request(job, url, status_code, last_error);
            self.deliver(transport, &job.project_id, request);
        }
    }

    /// Sends a webhook or alert of `project_id`, signed when the project has a secret; best
    /// effort: its outcome changes nothing.
    fn deliver(&self, transport: &dyn Transport, project_id: &str, mut request: OutboundRequest) {
        self.sign_delivery(project_id, "", None, &mut request);
        let _ = transport.send(&request);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_retries_every_failure_and_the_engine_s_deliveries_stop_on_a_client_error() {
        for code in [
            None,
            Some(301),
            Some(302),
            Some(400),
            Some(404),
            Some(410),
            Some(500),
        ] {
            assert!(is_retryable(JobKind::Call, code), "{code:?}");
        }
        for kind in [JobKind::Event, JobKind::SimSwap] {
            assert!(is_retryable(kind, None));
            for code in [408, 429, 500, 502, 503, 599] {
                assert!(is_retryable(kind, Some(code)), "{code}");
            }
            for code in [302, 400, 401, 403, 404, 409, 410, 422] {
                assert!(!is_retryable(kind, Some(code)), "{code}");
            }
        }
    }

    #[test]
    fn backoff_is_jittered_below_a_doubling_ceiling_and_capped() {
        for attempt in 1..40 {
            let ceiling = (BACKOFF_BASE_MS << (attempt - 1).min(30)).min(BACKOFF_CAP_MS);
            for random in [0, 1, 12_345, u64::MAX / 3, u64::MAX] {
                let delay = retry_delay_ms(attempt, None, random);
                assert!((0..=ceiling).contains(&delay), "{attempt} {delay}");
            }
        }
        assert_eq!(
            retry_delay_ms(1, None, BACKOFF_BASE_MS as u64),
            BACKOFF_BASE_MS
        );
        // Retry-After is honoured up to the cap.
        assert_eq!(retry_delay_ms(1, Some(120), 0), 120_000);
        assert_eq!(retry_delay_ms(1, Some(999_999), 0), BACKOFF_CAP_MS);
    }
}
