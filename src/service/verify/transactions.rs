//! The audit trail on the engine: one row per API call (who, what, when, and a result without
//! biometric data), listed newest first a page at a time, or read by request id.

use crate::error::Result;
pub use crate::service::store::{TransactionFilter, TransactionPage, TransactionRecord};
use crate::service::Engine;

/// The audit trail: one row per API call ([`Engine::audit`]).
#[derive(Debug, Clone, Copy)]
pub struct Audit<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// The audit trail: one row per API call.
    pub fn audit(&self) -> Audit<'_> {
        Audit(self)
    }
}

impl Audit<'_> {
    /// Writes one audit row.
    pub fn insert(&self, record: &TransactionRecord) -> Result<()> {
        let engine = self.0;
        engine.store.atomically(|tx| tx.insert_transaction(record))
    }

    /// A page of the project's audit rows, newest first, strictly older than `before` when given.
    pub fn list(
        &self,
        project_id: &str,
        filter: &TransactionFilter,
        before: Option<i64>,
        limit: usize,
    ) -> Result<TransactionPage> {
        let engine = self.0;
        engine.store.transactions(project_id, filter, before, limit)
    }

    /// The project's audit row with this request id.
    pub fn get(&self, project_id: &str, request_id: &str) -> Result<Option<TransactionRecord>> {
        let engine = self.0;
        engine.store.transaction(project_id, request_id)
    }
}
