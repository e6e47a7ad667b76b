//! Scoring rule sets on the engine: store a project's or a custom set, and pick the one a key uses
//! (custom by `scores_id` > project > default).

use crate::auth::{ApiKey, AuthError};
use crate::error::{Error, Result};
use crate::scoring::{choose_rule_set, RuleSet, RuleSource};
use crate::service::Engine;

/// Scoring rule sets: store, read, and the set a key or project decides with ([`Engine::rules`]).
#[derive(Debug, Clone, Copy)]
pub struct Rules<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// Scoring rule sets: store, read, and the set a key or project decides with.
    pub fn rules(&self) -> Rules<'_> {
        Rules(self)
    }
}

impl Rules<'_> {
    /// Stores a validated rule set for the project, or as the custom set `scores_id`.
    pub fn set(&self, project_id: &str, scores_id: Option<&str>, rules: &RuleSet) -> Result<()> {
        let engine = self.0;
        rules.validate()?;
        if project_id.is_empty() || scores_id.is_some_and(str::is_empty) {
            return Err(Error::InvalidArgument(
                "project_id and scores_id must not be empty".to_owned(),
            ));
        }
        engine
            .store
            .put_rule_set(project_id, scores_id, &rules.to_json(), engine.now_ms())
    }

    /// The stored rule set of the project (`scores_id` `None`) or its custom set `scores_id`, as
    /// stored (JSON), if there is one.
    pub fn get(&self, project_id: &str, scores_id: Option<&str>) -> Result<Option<String>> {
        let engine = self.0;
        engine.store.rule_set(project_id, scores_id)
    }

    /// The rule set a request with this key is scored by, and where it came from. A key whose
    /// `scores_id` names no stored set fails as a key that cannot be used (`AuthError::Invalid`:
    /// 500 on the verification paths, as the spec files key validation failures), never falls
    /// back to laxer project or default rules: a stricter custom set must not be quietly ignored.
    pub fn for_key(&self, key: &ApiKey) -> Result<(RuleSet, RuleSource)> {
        let engine = self.0;
        let load = |scores_id: Option<&str>| -> Result<Option<RuleSet>> {
            engine
                .rules()
                .get(&key.project_id, scores_id)?
                .map(|json| RuleSet::from_json(&json))
                .transpose()
                .map_err(Error::from)
        };
        let custom = match key.scores_id.as_deref() {
            Some(scores_id) => Some(load(Some(scores_id))?.ok_or_else(|| {
                Error::Auth(AuthError::Invalid(format!(
                    "scores_id \"{scores_id}\" names no scoring rules stored for project \"{}\"",
                    key.project_id
                )))
            })?),
            None => None,
        };
        let project = load(None)?;
        Ok(choose_rule_set(custom, project))
    }
}
