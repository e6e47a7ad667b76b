//! The audit trail on the engine: one row per API call (who, what, when, and a result without
//! biometric data), listed newest first a page at a time, or read by request id.

use crate::error::Result;
use crate::service::events::{self, Event, EVENT_TYPES};
pub use crate::service::store::{TransactionFilter, TransactionPage, TransactionRecord};
use crate::service::Engine;

impl Engine {
    /// Writes one audit row and, in the same transaction, queues `event` (type and `data`) for
    /// the project's webhook endpoints that want it (`docs/events.md`).
    pub fn insert_transaction(
        &self,
        record: &TransactionRecord,
        event: Option<(&str, serde_json::Value)>,
    ) -> Result<()> {
        self.store.atomically(|tx| {
            // Only the event types endpoints can subscribe to are queued.
            let event = event.and_then(|(event_type, data)| {
                let event_type = EVENT_TYPES.into_iter().find(|known| *known == event_type)?;
                Some(Event { event_type, data })
            });
            if let Some(event) = event {
                events::queue(tx, &record.project_id, &event, record.created_at)?;
            }
            tx.insert_transaction(record)
        })
    }

    /// A page of the project's audit rows, newest first, strictly older than `before` when given.
    pub fn transactions(
        &self,
        project_id: &str,
        filter: &TransactionFilter,
        before: Option<i64>,
        limit: usize,
    ) -> Result<TransactionPage> {
        self.store.transactions(project_id, filter, before, limit)
    }

    /// The project's audit row with this request id.
    pub fn transaction(
        &self,
        project_id: &str,
        request_id: &str,
    ) -> Result<Option<TransactionRecord>> {
        self.store.transaction(project_id, request_id)
    }
}
