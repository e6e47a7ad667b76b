//! The audit trail on the engine: one row per API call (who, what, when, and a result without
//! biometric data), listed newest first a page at a time, or read by request id.

use crate::error::Result;
pub use crate::service::store::{TransactionFilter, TransactionPage, TransactionRecord};
use crate::service::Engine;

impl Engine {
    /// Writes one audit row.
    pub fn insert_transaction(&self, record: &TransactionRecord) -> Result<()> {
        self.store.atomically(|tx| tx.insert_transaction(record))
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
