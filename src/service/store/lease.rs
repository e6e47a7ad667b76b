//! The one claim/lease rule of the store's three work queues: jobs (`jobs.lease_until`), forgery
//! analyses (`avf_requests.lease_until`) and the outbox (`outbox.claimed_until`).
//!
//! A worker holds a row until an instant (Unix ms) and nobody else may take it before then. A row
//! is free at `now` when nobody ever held it, its holder let it go, or the hold ran out at or
//! before `now`; [`Tx::take_lease`] takes a row only if it is free, in the same statement, so two
//! workers can never both hold it, whatever the backend or the isolation it gives. What a queue
//! does with a lapsed hold is the service's policy, not the store's: a job's attempt is first
//! closed as interrupted and retried or failed by its `max_retries` (`service/jobs/lifecycle.rs`), an
//! analysis counts the attempt and gives up after `AVF_MAX_ATTEMPTS` (`service/avf.rs`), an outbox
//! delivery is simply sent again (at least once, `service/jobs/pump.rs`).

use rusqlite::{params, ToSql};

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

    fn column(self) -> &'static str {
        match self {
            Queue::Outbox => "claimed_until",
            Queue::Jobs | Queue::Analyses => "lease_until",
        }
    }

    /// The SQL condition "nobody holds the row at `now`", with `now` the statement's parameter
    /// `now` (`?1`, `?2`, ...): for the queries that pick rows to claim.
    pub(super) fn free_at(self, now: &str) -> String {
        let column = self.column();
        format!("({column} IS NULL OR {column} <= {now})")
    }

    /// The SQL condition "held, and the hold ran out at or before `now`".
    pub(super) fn lapsed_at(self, now: &str) -> String {
        let column = self.column();
        format!("({column} IS NOT NULL AND {column} <= {now})")
    }
}

impl Tx<'_> {
    /// Takes the row `key` of `queue` for the caller until `until`, if nobody holds it at `now_ms`
    /// (one statement: check and take are one step). `false` when another worker holds it, or the
    /// row is gone.
    pub(in crate::service) fn take_lease(
        &self,
        queue: Queue,
        key: &dyn ToSql,
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
        let changed = self
            .rows
            .execute(&sql, params![until, key, now_ms])
            .map_err(storage)?;
        Ok(changed > 0)
    }

    /// Lets go of the row `key` of `queue` (its work ended or was put back to wait).
    pub(in crate::service) fn drop_lease(&self, queue: Queue, key: &dyn ToSql) -> Result<()> {
        let sql = format!(
            "UPDATE {table} SET {column} = NULL WHERE {key} = ?1",
            table = queue.table(),
            column = queue.column(),
            key = queue.key(),
        );
        self.rows.execute(&sql, params![key]).map_err(storage)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::store::{Store, TemplateKey};

    #[test]
    fn a_held_row_is_taken_by_one_worker_until_its_hold_runs_out() {
        let store = Store::open(":memory:", TemplateKey::new([7; 32])).unwrap();
        store
            .atomically(|tx| {
                tx.ensure_project("p", 0)?;
                tx.rows
                    .execute(
                        "INSERT INTO outbox (project_id, url, headers, body, timeout_ms, created_at)
                         VALUES ('p', 'https://example.com/', '{}', '{}', 1000, 0)",
                        [],
                    )
                    .map_err(storage)?;
                let seq = tx.rows.last_insert_rowid();
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
            })
            .unwrap();
    }
}
