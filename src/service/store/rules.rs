//! Stored scoring rule sets: the project's own (`scores_id` empty) and custom ones named by a key's
//! `scores_id`. The store keeps the validated JSON text; `scoring` parses it.

use super::sql::{params, OptionalExtension};

use super::{ensure_project, storage, Store};
use crate::error::Result;

impl Store {
    /// Stores (replacing) the project's rule set, or the custom set `scores_id` when given.
    pub fn put_rule_set(
        &self,
        project_id: &str,
        scores_id: Option<&str>,
        rules_json: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.write(|transaction| {
            ensure_project(transaction, project_id, now_ms)?;
            transaction
                .execute(
                    "INSERT INTO scoring_rule_sets (project_id, scores_id, rules, updated_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (project_id, scores_id) DO UPDATE SET rules = excluded.rules, updated_at = excluded.updated_at",
                    params![project_id, scores_id.unwrap_or(""), rules_json, now_ms],
                )
                .map_err(storage)?;
            Ok(())
        })
    }

    /// The stored JSON of the project's rule set, or of the custom set `scores_id`.
    pub fn rule_set(&self, project_id: &str, scores_id: Option<&str>) -> Result<Option<String>> {
        self.read(|connection| {
            connection
                .query_row(
                    "SELECT rules FROM scoring_rule_sets WHERE project_id = ?1 AND scores_id = ?2",
                    params![project_id, scores_id.unwrap_or("")],
                    |row| row.get(0),
                )
                .optional()
                .map_err(storage)
        })
    }
}
