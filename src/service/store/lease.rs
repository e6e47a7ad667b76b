//! The one claim/lease rule of the store's three work queues: jobs (`jobs.lease_until`), forgery
//! analyses (`avf_requests.lease_until`) and the outbox (`outbox.claimed_until`).
//!
//! A worker holds a row until an instant (Unix ms) and nobody else may take it before then; the
//! hold has lapsed at that instant. [`Tx::take_lease`] takes a row only if it is free, in the same
//! statement, so two workers can never both hold it, whatever the backend or the isolation it
//! gives (jobs are taken a look's batch at a time by `Tx::claim_jobs`, the same statement over
//! many ids, with the same [`Queue::free_at`] rule). Free means: nobody ever held it, or its holder let it go ([`Tx::drop_lease`]), or, for
//! analyses and the outbox, the hold has lapsed. A job's lapsed hold is not free: its attempt's
//! execution row is still `running` and must first be closed as interrupted, and the job retried or
//! failed by its `max_retries`, by lease recovery (`service/jobs/lifecycle.rs`), which lets go of
//! it; so no store call can hand a job to a second worker while the first one's attempt is open.
//! An analysis whose hold lapsed counts the attempt and gives up after `AVF_MAX_ATTEMPTS`
//! (`service/avf.rs`); an outbox delivery is simply sent again (at least once,
//! `service/jobs/pump.rs`).

use super::sql::{params, ToValue};

use super::{storage, Tx};
use crate::error::Result;

/// A table whose rows are work that one worker at a time holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::service) enum Queue {
    /// Job attempts (`jobs`, by `id`).
    Jobs,
    /// Forgery analyses (`avf_requests`, by `id`).
    Analyses,
    /// Webhook and alert deliveries (`outbox`, by `seq`).
    Outbox,
}

impl Queue {
    fn table(self) -> &'static str {
        match self {
            Queue::Jobs => "jobs",
            Queue::Analyses => "avf_requests",
            Queue::Outbox => "outbox",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Queue::Outbox => "seq",
            Queue::Jobs | Queue::Analyses => "id",
        }
    }

    pub(super) fn column(self) -> &'static str {
        match self {
            Queue::Outbox => "claimed_until",
            Queue::Jobs | Queue::Analyses => "lease_until",
        }
    }

    /// The SQL condition "the row is free at `now`" (see the module's rule), with `now` the
    /// statement's parameter (`?1`, `?2`, ...): for the queries that pick rows to claim.
    pub(super) fn free_at(self, now: &str) -> String {
        let column = self.column();
        match self {
            // A lapsed job is freed by lease recovery only. The index `jobs_free_due` (schema
            // version 13) is partial on this same condition: keep the two alike.
            Queue::Jobs => format!("{column} IS NULL"),
            Queue::Analyses | Queue::Outbox => format!("({column} IS NULL OR {column} <= {now})"),
        }
    }

    /// The SQL assignment that lets go of a row's hold, for a statement that changes the row
    /// anyway (as [`Tx::drop_lease`] does on its own).
    pub(super) fn released(self) -> String {
        format!("{} = NULL", self.column())
    }

    /// The SQL condition "held, and the hold ran out at or before `now`".
    pub(super) fn lapsed_at(self, now: &str) -> String {
        let column = self.column();
        format!("({column} IS NOT NULL AND {column} <= {now})")
    }
}

impl Tx<'_> {
    /// Takes the row `key` of `queue` for the caller until `until`, if it is free at `now_ms`
    /// (one statement: check and take are one step). `false` when another worker holds it (or a
    /// job's lapsed hold waits for recovery), or the row is gone.
    pub(in crate::service) fn take_lease(
        &self,
        queue: Queue,
        key: &dyn ToValue,
        now_ms: i64,
        until: i64,
    ) -> Result<bool> {
        let sql = format!(
            "UPDATE {table} SET {column} = ?1 WHERE {key} = ?2 AND {free}",
            table = queue.table(),
            column = queue.column(),
            key = queue.key(),
            free = queue.free_at("?3"),
        );
        // A job's rule does not read `now` (see `free_at`), and a statement takes exactly the
        // parameters it names.
        // Once per claim: the statement is prepared once per queue and connection.
        let mut statement = self.rows.prepare_cached(&sql).map_err(storage)?;
        let changed = match queue {
            Queue::Jobs => statement.execute(params![until, key]),
            Queue::Analyses | Queue::Outbox => statement.execute(params![until, key, now_ms]),
        }
        .map_err(storage)?;
        Ok(changed > 0)
    }

    /// Lets go of the row `key` of `queue` (its work ended or was put back to wait).
    pub(in crate::service) fn drop_lease(&self, queue: Queue, key: &dyn ToValue) -> Result<()> {
        let sql = format!(
            "UPDATE {table} SET {released} WHERE {key} = ?1",
            table = queue.table(),
            released = queue.released(),
            key = queue.key(),
        );
        self.rows
            .prepare_cached(&sql)
            .and_then(|mut statement| statement.execute(params![key]))
            .map_err(storage)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::store::{Store, TemplateKey};

    /// Runs `work` in one transaction of a fresh in-memory store, after inserting project `p`
    /// and the row `insert` writes.
    fn with_row(insert: &str, work: impl Fn(&Tx<'_>) -> Result<()>) {
        let store = Store::open(":memory:", TemplateKey::new([7; 32]), 1).unwrap();
        store
            .atomically(|tx| {
                tx.ensure_project("p", 0)?;
                tx.rows.execute(insert, params![]).map_err(storage)?;
                work(tx)
            })
            .unwrap();
    }

    #[test]
    fn a_held_row_is_taken_by_one_worker_until_its_hold_runs_out() {
        with_row(
            "INSERT INTO outbox (project_id, url, headers, body, timeout_ms, created_at)
             VALUES ('p', 'https://example.com/', '{}', '{}', 1000, 0)",
            |tx| {
                let seq: i64 = tx
                    .rows
                    .query_row("SELECT MAX(seq) FROM outbox", params![], |row| row.get(0))
                    .map_err(storage)?;
                assert!(tx.take_lease(Queue::Outbox, &seq, 100, 200)?);
                // Held until 200: nobody else takes it before then.
                assert!(!tx.take_lease(Queue::Outbox, &seq, 150, 300)?);
                assert!(!tx.take_lease(Queue::Outbox, &seq, 199, 300)?);
                // At 200 the hold ran out.
                assert!(tx.take_lease(Queue::Outbox, &seq, 200, 300)?);
                tx.drop_lease(Queue::Outbox, &seq)?;
                assert!(tx.take_lease(Queue::Outbox, &seq, 0, 10)?);
                // A row that is gone is never taken.
                assert!(!tx.take_lease(Queue::Outbox, &(seq + 1), 0, 10)?);
                Ok(())
            },
        );
    }

    /// A job whose hold lapsed is not free until lease recovery lets go of it.
    #[test]
    fn a_lapsed_job_waits_for_recovery() {
        with_row(
            "INSERT INTO jobs (id, project_id, url, http_method, headers, scheduled_at,
                 max_retries, status, next_attempt_at, created_at, updated_at)
             VALUES ('job_1', 'p', 'https://example.com/', 'POST', '{}', 0, 0, 'pending', 0, 0, 0)",
            |tx| {
                assert!(tx.take_lease(Queue::Jobs, &"job_1", 100, 200)?);
                assert!(!tx.take_lease(Queue::Jobs, &"job_1", 500, 600)?);
                tx.drop_lease(Queue::Jobs, &"job_1")?;
                assert!(tx.take_lease(Queue::Jobs, &"job_1", 500, 600)?);
                Ok(())
            },
        );
    }
}
