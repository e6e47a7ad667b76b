//! The one claim/lease rule of the store's three work queues: jobs (`jobs.lease_until`), forgery
//! analyses (`avf_requests.lease_until`) and the outbox (`outbox.claimed_until`).
//!
//! A worker holds a row until an instant (Unix ms) and nobody else may take it before then; the
//! hold has lapsed at that instant. [`Tx::take_lease`] takes a row only if it is free, in the same
//! statement, so two workers can never both hold it, whatever the backend or the isolation it
//! gives. Free means: nobody ever held it, or its holder let it go ([`Tx::drop_lease`]), or, for
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
        self.take_lease_setting(queue, key, now_ms, until, &[])
    }

    /// [`Tx::take_lease`] that also sets the row's columns `also` (name, value) in the same
    /// statement, when it takes the row: one round trip for a claim that writes the row anyway.
    pub(in crate::service) fn take_lease_setting(
        &self,
        queue: Queue,
        key: &dyn ToValue,
        now_ms: i64,
        until: i64,
        also: &[(&str, &dyn ToValue)],
    ) -> Result<bool> {
        // `?1` the hold, `?2` the key, then the other columns, then `now` where the rule reads it
        // (a job's rule does not; a statement takes exactly the parameters it names).
        let mut values: Vec<&dyn ToValue> = vec![&until, key];
        let mut sets = String::new();
        for (column, value) in also {
            values.push(*value);
            sets.push_str(&format!(", {column} = ?{}", values.len()));
        }
        let now = format!("?{}", values.len() + 1);
        if queue != Queue::Jobs {
            values.push(&now_ms);
        }
        let sql = format!(
            "UPDATE {table} SET {column} = ?1{sets} WHERE {key} = ?2 AND {free}",
            table = queue.table(),
            column = queue.column(),
            key = queue.key(),
            free = queue.free_at(&now),
        );
        // Once per claim: the statement is prepared once per shape and connection.
        let changed = self
            .rows
            .prepare_cached(&sql)
            .and_then(|mut statement| statement.execute(values.as_slice()))
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
