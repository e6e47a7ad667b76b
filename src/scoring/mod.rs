//! Scoring rule sets as data: a [`RuleSet`] turns the per-service [`Outcome`]s of one verification
//! into a [`Decision`], the spec's `scoring_result` (`status`, `score`, `decision_reasons`).
//! [`RuleSetError`] explains why a rule set document was rejected, and [`choose_rule_set`] applies
//! the precedence rule, reporting the winner's [`RuleSource`].
//!
//! # Rule set documents
//!
//! A rule set is a versioned JSON document ([`RuleSet::from_json`], [`RuleSet::to_json`]). The
//! built-in default ([`RuleSet::default_rules`]) is:
//!
//! ```json
//! {
//!   "schema": 1,
//!   "id": "default",
//!   "version": 1,
//!   "min_score": 60,
//!   "not_enrolled": "fail",
//!   "removed_for_consent": "skip",
//!   "unavailable": "fail",
//!   "no_identity": "fail",
//!   "sync_strength": "standard",
//!   "first_use": "fail",
//!   "attempt_limit": 10,
//!   "attempt_wait_s": 30,
//!   "attempt_lockout": "wait",
//!   "services": {
//!     "Face Recognition":          { "required": true,  "weight": 0.35, "pass_at": 0.5 },
//!     "Voice Recognition":         { "required": true,  "weight": 0.25, "pass_at": 0.5 },
//!     "Face Liveness Detection":   { "required": true,  "weight": 0.2,  "pass_at": 0.5 },
//!     "Active Speaker Detection":  { "required": true,  "weight": 0.1,  "pass_at": 0.5 },
//!     "Visual Speech Recognition": { "required": true,  "weight": 0.1,  "pass_at": 0.5 }
//!   }
//! }
//! ```
//!
//! Every field but `no_identity`, `sync_strength` and `first_use` is mandatory; `first_use`
//! (`"fail"` or `"skip"`: whether the process-video call that enrols a first-time user may pass
//! when the backend did not mark it `X-Action-Trigger: registration`) means `"fail"` when left
//! out; `no_identity` may be left out
//! and then means `"fail"` (rule sets written before it existed keep reading, and fail closed);
//! `sync_strength` (`"lenient"`, `"standard"` or `"strict"`: how much sound that does not follow
//! the mouth Active Speaker Detection lets through, about 10, 5 or 1 %) means `"standard"` when
//! left out. It sets the threshold of Active Speaker Detection, and with it liveness (which needs
//! the lips to follow the voice) and auto-enrollment (which needs both). The attempt limit
//! (NIST SP 800-63B §5.2.3) is optional too: `attempt_limit` (1 to 100, default 10) consecutive
//! failed decisions of one user hold that user back; `attempt_lockout` `"wait"` (the default)
//! makes the next attempt wait `attempt_wait_s` (1 to 86400, default 30) seconds, doubling with
//! each further failure up to a day, and `"disable"` refuses every attempt until the backend
//! resets the count. Unknown fields (at either level), unknown service names and keys that
//! appear twice in one object are rejected. Constraints: `schema` is 1; `id` has 1 to 64 characters
//! from `A-Z a-z 0-9 _ . -`; `version` is at least 1; `min_score` lies in 0..=100; each `weight` is
//! a finite number >= 0 and each `pass_at` lies in 0..=1; the three policies are `"fail"` or
//! `"skip"`; at least one service has a weight above 0. Services may be left out of `services`.
//!
//! # Evaluation
//!
//! [`RuleSet::evaluate`] looks at the services in
//! [`Service::ALL`](crate::recognition::Service::ALL) order (Active Speaker Detection,
//! Visual Speech Recognition, Face Liveness Detection, Voice Recognition, Face Recognition), not in
//! input order, so the reasons are deterministic. If a service appears more than once in the input,
//! its last outcome wins. A service without an entry in the rule set is ignored entirely: it adds no
//! reason, no weight and no requirement.
//!
//! Each service's reasons start with its prefix: `face_match` (Face Recognition), `voice_match`
//! (Voice Recognition), `liveness` (Face Liveness Detection), `active_speaker` (Active Speaker
//! Detection), `phrase` (Visual Speech Recognition).
//!
//! - **Score(p)**: `p` is clamped into 0..=1, and a non-finite `p` counts as 0. The check passes if
//!   `p >= pass_at` (reason `<prefix>_passed`), otherwise it fails (`<prefix>_failed`). `p * 100`
//!   counts toward the score with the service's weight. A failed check of a `required` service fails
//!   the decision.
//! - **NotEnrolled**: reason `<prefix>_not_enrolled`. With `"not_enrolled": "fail"` the decision
//!   fails if the service is required; with `"skip"` the service is left out of the requirements.
//!   Either way it is left out of the score.
//! - **Unavailable { reason }**: reasons `<prefix>_unavailable` and then `<prefix>_<reason>` (e.g.
//!   `liveness_unavailable`, `liveness_no_face_detected`); the second is omitted when the code is
//!   `unavailable` or empty. The `unavailable` policy applies as for `not_enrolled`.
//! - **RemovedForConsent**: no per-service reason. The single reason
//!   `services_removed_missing_consent` is added once, however many services were removed, after all
//!   per-service reasons. With `"removed_for_consent": "skip"` (the default, because the spec makes
//!   the removal silent) the service is simply left out; with `"fail"` the decision fails whether or
//!   not the service is required.
//!
//! - **Identity evidence**: a decision has it when Face Recognition or Voice Recognition has an
//!   entry in the rule set and produced a score at or above its `pass_at`. Without it, and with
//!   `"no_identity": "fail"` (the default), the decision fails with the reason
//!   `no_identity_evidence`, added after `services_removed_missing_consent`: removing both for
//!   missing authorization consent, no enrolled template, or no usable face and voice never yields
//!   `pass`. A project that wants liveness-only decisions says `"no_identity": "skip"` in its own
//!   rule set.
//!
//! The score is the weighted mean of `p * 100` over the services that produced a score and have a
//! weight above 0, rounded to 2 decimals. If there are none, the score is 0 and the decision fails
//! with reason `no_services_scored`. Otherwise the decision passes only if no required check failed,
//! no `"fail"` policy applied, and the rounded score is at least `min_score`; when the score is the
//! only cause of failure, the reason `score_below_minimum` is added last.
//!
//! # Precedence
//!
//! A custom rule set (the API key's `scores_id` matched a stored set) beats the project's rule set,
//! which beats the built-in default; see [`choose_rule_set`].

mod default;
mod error;
mod evaluate;
mod parse;
mod rules;

pub use error::RuleSetError;
pub use evaluate::{Decision, Outcome};
pub(crate) use rules::MAX_ATTEMPT_WAIT_S;
pub use rules::{Lockout, Policy, RuleSet, ServiceRule, MAX_ID_LENGTH, SUPPORTED_SCHEMA};

/// Where a rule set came from, for the precedence rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleSource {
    /// A stored rule set selected by the API key's `scores_id`.
    Custom,
    /// The project's rule set.
    Project,
    /// The built-in [`RuleSet::default_rules`].
    Default,
}

impl RuleSource {
    /// The answer's `scoring_result.rule_set.source`: `custom`, `project` or `default`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleSource::Custom => "custom",
            RuleSource::Project => "project",
            RuleSource::Default => "default",
        }
    }
}

/// Picks custom (the key's `scores_id` matched a stored set) over project over default.
pub fn choose_rule_set(custom: Option<RuleSet>, project: Option<RuleSet>) -> (RuleSet, RuleSource) {
    match (custom, project) {
        (Some(custom), _) => (custom, RuleSource::Custom),
        (None, Some(project)) => (project, RuleSource::Project),
        (None, None) => (RuleSet::default_rules(), RuleSource::Default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(id: &str) -> RuleSet {
        let mut rules = RuleSet::default_rules();
        rules.id = id.to_owned();
        rules
    }

    #[test]
    fn custom_beats_project() {
        let (chosen, source) = choose_rule_set(Some(named("custom")), Some(named("project")));
        assert_eq!((chosen.id(), source), ("custom", RuleSource::Custom));
    }

    #[test]
    fn custom_alone_is_used() {
        let (chosen, source) = choose_rule_set(Some(named("custom")), None);
        assert_eq!((chosen.id(), source), ("custom", RuleSource::Custom));
    }

    #[test]
    fn project_is_used_without_custom() {
        let (chosen, source) = choose_rule_set(None, Some(named("project")));
        assert_eq!((chosen.id(), source), ("project", RuleSource::Project));
    }

    #[test]
    fn default_is_used_without_either() {
        let (chosen, source) = choose_rule_set(None, None);
        assert_eq!(chosen, RuleSet::default_rules());
        assert_eq!(source, RuleSource::Default);
    }
}
