//! The pump's group commit: how its attempts ended, written by whichever sender gets to the store
//! first, in one transaction for every outcome waiting at that moment. A pump sends up to
//! [`super::pump::MAX_IN_FLIGHT`] attempts at once; written one transaction each, their ends cost
//! a `BEGIN` and a `COMMIT` apiece, which on PostgreSQL are round trips of their own (issue 41).
//! No outcome waits for a timer: a sender that finds nobody writing writes at once, and the
//! outcomes that arrive meanwhile go together in the next write.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::service::lifecycle;
use crate::service::store::{AttemptResult, Claim, JobRecord, Store};

/// One pump call's writer of attempt outcomes, shared by its sending threads.
pub(super) struct Recorder<'s> {
    store: &'s Store,
    state: Mutex<State>,
    written: Condvar,
}

#[derive(Default)]
struct State {
    next_ticket: u64,
    /// Outcomes not yet written, by ticket.
    waiting: Vec<(u64, Claim, AttemptResult, i64)>,
    /// Written outcomes not yet picked up: the job when it ended, or the write's error.
    done: HashMap<u64, Result<Option<JobRecord>>>,
    /// A sender is writing now.
    writing: bool,
}

impl<'s> Recorder<'s> {
    pub(super) fn new(store: &'s Store) -> Self {
        Recorder {
            store,
            state: Mutex::new(State::default()),
            written: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is changed only in whole steps under the lock: a poisoned one is consistent.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records how `claim`'s attempt ended at `now_ms` (`lifecycle::finish_attempts`), together
    /// with whatever other outcomes are waiting: the job when it reached a terminal state.
    pub(super) fn record(
        &self,
        claim: Claim,
        result: AttemptResult,
        now_ms: i64,
    ) -> Result<Option<JobRecord>> {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push((ticket, claim, result, now_ms));
        loop {
            if let Some(outcome) = state.done.remove(&ticket) {
                return outcome;
            }
            if state.writing {
                state = self
                    .written
                    .wait(state)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                continue;
            }
            state.writing = true;
            let batch = std::mem::take(&mut state.waiting);
            drop(state);
            // Whatever happens in the write (a panic included), the others are woken.
            let mut writing = Writing {
                recorder: self,
                tickets: batch.iter().map(|(ticket, ..)| *ticket).collect(),
                outcomes: None,
            };
            let ended: Vec<(&Claim, &AttemptResult, i64)> = batch
                .iter()
                .map(|(_, claim, result, now)| (claim, result, *now))
                .collect();
            writing.outcomes = Some(write(self.store, &ended));
            drop(writing);
            state = self.lock();
        }
    }
}

/// Writes `ended` in one transaction, each outcome's result in order. When that fails for
/// another reason than the database being out of reach, each is written again on its own, so
/// that one outcome the database refuses (a SIM-swap result, a text it cannot store) fails
/// alone, not the group it happened to share a write with.
fn write(store: &Store, ended: &[(&Claim, &AttemptResult, i64)]) -> Vec<Result<Option<JobRecord>>> {
    match lifecycle::finish_attempts(store, ended) {
        Ok(jobs) => jobs.into_iter().map(Ok).collect(),
        Err(error) if ended.len() == 1 || matches!(error, Error::Unavailable(_)) => {
            ended.iter().map(|_| Err(copy(&error))).collect()
        }
        Err(_) => ended
            .iter()
            .map(|one| {
                lifecycle::finish_attempts(store, std::slice::from_ref(one))
                    .map(|mut jobs| jobs.pop().flatten())
            })
            .collect(),
    }
}

/// A write in progress: hands its outcomes out (or, when the write never finished, an error for
/// each) and wakes the waiting senders when dropped.
struct Writing<'r, 's> {
    recorder: &'r Recorder<'s>,
    tickets: Vec<u64>,
    outcomes: Option<Vec<Result<Option<JobRecord>>>>,
}

impl Drop for Writing<'_, '_> {
    fn drop(&mut self) {
        let mut state = self.recorder.lock();
        match self.outcomes.take() {
            Some(outcomes) => state
                .done
                .extend(self.tickets.iter().copied().zip(outcomes)),
            None => {
                for ticket in &self.tickets {
                    state.done.insert(
                        *ticket,
                        Err(Error::Storage("recording the attempt failed".into())),
                    );
                }
            }
        }
        state.writing = false;
        drop(state);
        self.recorder.written.notify_all();
    }
}

/// The write's error for each outcome of its group (a store error: its kind and its text).
fn copy(error: &Error) -> Error {
    match error {
        Error::Unavailable(text) => Error::Unavailable(text.clone()),
        Error::Storage(text) => Error::Storage(text.clone()),
        other => Error::Storage(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::service::lifecycle::{claim_due_jobs, insert_job, Admit};
    use crate::service::store::{JobKind, JobStatus, TemplateKey};

    /// A project's call to `https://example.com/`, due at 0.
    fn job(id: &str, max_retries: u32) -> JobRecord {
        let url = "https://example.com/";
        JobRecord {
            id: id.into(),
            kind: JobKind::Call,
            subject: None,
            ..JobRecord::internal(JobKind::Event, "p", url, String::new(), max_retries, "", 0)
        }
    }

    fn claim(store: &Store, now_ms: i64, lease_ms: i64, max: usize, exec: &str) -> Vec<Claim> {
        let mut n = 0;
        let (claims, _) = claim_due_jobs(
            store,
            now_ms,
            lease_ms,
            max,
            16,
            &mut || {
                n += 1;
                format!("{exec}{n}")
            },
            &mut |_| Admit::Yes,
        )
        .unwrap();
        claims
    }

    fn result(success: bool, retry_at: Option<i64>) -> AttemptResult {
        AttemptResult {
            success,
            status_code: Some(if success { 200 } else { 503 }),
            error: (!success).then(|| "the target answered HTTP 503".to_owned()),
            duration_ms: 5,
            retry_at,
            sim_swap: None,
        }
    }

    /// Outcomes sent from several threads at once are written together, each as it would be
    /// alone: a success ends its job, a failure with retries left waits for its retry, and the
    /// late outcome of an attempt whose lease another pump already took over changes nothing.
    #[test]
    fn outcomes_written_together_each_end_their_own_job() {
        let store = Store::open(":memory:", TemplateKey::new([7; 32]), 1).unwrap();
        for (id, retries) in [("job_late", 0), ("job_ok", 0), ("job_retry", 1)] {
            insert_job(&store, &job(id, retries), 0).unwrap();
        }
        // The first pump takes one job and stalls past its lease; the next one closes that
        // attempt as interrupted (no retries left: the job failed) and takes the other two.
        let late = claim(&store, 10, 100, 1, "exec_a");
        assert_eq!(late.len(), 1);
        assert_eq!(late[0].job.id, "job_late");
        let mut claims = claim(&store, 200, 1_000, 10, "exec_b");
        claims.sort_by(|a, b| a.job.id.cmp(&b.job.id));
        let ids: Vec<&str> = claims.iter().map(|claim| claim.job.id.as_str()).collect();
        assert_eq!(ids, ["job_ok", "job_retry"]);
        let recorder = Recorder::new(&store);
        let mut work: Vec<(Claim, AttemptResult)> = vec![(late[0].clone(), result(true, None))];
        for claim in claims {
            let outcome = if claim.job.id == "job_ok" {
                result(true, None)
            } else {
                result(false, Some(5_000))
            };
            work.push((claim, outcome));
        }
        let ended: Vec<(String, Option<JobStatus>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = work
                .into_iter()
                .map(|(claim, outcome)| {
                    let recorder = &recorder;
                    scope.spawn(move || {
                        let id = claim.job.id.clone();
                        let ended = recorder.record(claim, outcome, 300).unwrap();
                        (id, ended.map(|job| job.status))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ended: BTreeMap<String, Option<JobStatus>> = ended.into_iter().collect();
        assert_eq!(ended["job_late"], None, "a late outcome changes nothing");
        assert_eq!(ended["job_ok"], Some(JobStatus::Success));
        assert_eq!(ended["job_retry"], None, "a retried job goes on");
        let status = |id: &str| store.job("p", id).unwrap().unwrap().0.status;
        assert_eq!(status("job_late"), JobStatus::Failed);
        assert_eq!(status("job_ok"), JobStatus::Success);
        assert_eq!(status("job_retry"), JobStatus::Scheduled);
        let executions = |id: &str| -> Vec<String> {
            store
                .job_executions("p", id)
                .unwrap()
                .into_iter()
                .map(|execution| execution.status)
                .collect()
        };
        assert_eq!(executions("job_late"), ["interrupted"]);
        assert_eq!(executions("job_ok"), ["success"]);
        assert_eq!(executions("job_retry"), ["failed"]);
        // The retried job is free again and due at its retry, not before.
        assert!(claim(&store, 4_999, 1_000, 10, "exec_c").is_empty());
        let retried = claim(&store, 5_000, 1_000, 10, "exec_d");
        assert_eq!(retried.len(), 1);
        assert_eq!(retried[0].job.id, "job_retry");
        assert_eq!(retried[0].attempt_num, 2);
    }
}
