//! Attempt limits on the engine (NIST SP 800-63B §5.2.3): consecutive failed decisions of a user
//! (process-video, match-faces) hold the user back as the rule set says, before any model runs;
//! a pass starts the count again, and the backend can reset it after another factor.
//!
//! The counter lives in the store, so it holds across processes and restarts. Only attempts that
//! could be a guess count: a call for a user with nothing enrolled (a first use, or no
//! authorization consent) and a call that ended in an error give their count back.

use serde::Serialize;

use crate::clock::format_timestamp;
use crate::error::Result;
use crate::scoring::{Lockout, RuleSet};
use crate::service::consent::check_fullname;
use crate::service::store::{
    AttemptHold, AttemptOutcome, AttemptPolicy, AttemptStart, AttemptState,
};
use crate::service::Engine;

/// The decision reason while a user waits (and on the failure that started the wait).
pub const ATTEMPTS_EXCEEDED_REASON: &str = "attempts_exceeded";

/// The decision reason while a user's attempts are disabled until a reset (and on the failure
/// that disabled them).
pub const ATTEMPTS_DISABLED_REASON: &str = "attempts_disabled";

/// The rule set's limit as the store applies it.
fn attempt_policy(rules: &RuleSet) -> AttemptPolicy {
    AttemptPolicy {
        limit: rules.attempt_limit,
        first_wait_ms: i64::from(rules.attempt_wait_s) * 1000,
        max_wait_ms: i64::from(crate::scoring::MAX_ATTEMPT_WAIT_S) * 1000,
        disable: rules.attempt_lockout == Lockout::Disable,
    }
}

/// Whole seconds from `now_ms` until `until_ms`, rounded up (what `Retry-After` says).
fn seconds_until(until_ms: i64, now_ms: i64) -> i64 {
    ((until_ms - now_ms).max(0) + 999) / 1000
}

/// How a counted attempt went ([`Engine::counted`]).
pub(in crate::service) enum Counted<T> {
    /// The user is held back: nothing ran.
    Held(HoldNotice),
    /// The work ran; with the hold its failure started, if it did.
    Ran(T, Option<HoldNotice>),
}

/// A hold as an answer shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldNotice {
    /// The hold.
    pub hold: AttemptHold,
    /// Seconds until the next attempt is allowed, rounded up (the `Retry-After` value); `None`
    /// while attempts are disabled.
    pub retry_after_s: Option<i64>,
}

impl HoldNotice {
    /// The notice of `hold` at `now_ms`.
    pub fn new(hold: AttemptHold, now_ms: i64) -> HoldNotice {
        HoldNotice {
            hold,
            retry_after_s: hold.until_ms.map(|until| seconds_until(until, now_ms)),
        }
    }

    /// `attempts_exceeded` or `attempts_disabled`.
    pub fn reason(&self) -> &'static str {
        if self.hold.until_ms.is_some() {
            ATTEMPTS_EXCEEDED_REASON
        } else {
            ATTEMPTS_DISABLED_REASON
        }
    }

    /// What an answer says to a caller held back.
    pub fn message(&self) -> String {
        match self.retry_after_s {
            Some(seconds) => format!(
                "too many failed attempts for this user; the next is allowed in {seconds} s"
            ),
            None => "too many failed attempts for this user; attempts are disabled until the \
                     backend resets them"
                .to_owned(),
        }
    }
}

/// One audit row as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptEventView {
    /// `hold`, `disable` or `reset`.
    pub event: String,
    /// Consecutive failures when it happened.
    pub failures: u32,
    /// For a hold, until when (RFC 3339).
    pub held_until: Option<String>,
    /// When (RFC 3339).
    pub created_at: String,
}

/// Where a user stands, as the API and the C ABI show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptStatus {
    /// The user.
    pub user_fullname: String,
    /// Consecutive failed attempts.
    pub failures: u32,
    /// The project's limit (from the rule set that decides for the caller's key, or the
    /// default's).
    pub limit: u32,
    /// Until when attempts wait (RFC 3339), if they do now.
    pub held_until: Option<String>,
    /// Seconds until the next attempt is allowed, rounded up, if attempts wait now.
    pub retry_after_s: Option<i64>,
    /// Whether attempts are disabled until a reset.
    pub disabled: bool,
    /// The latest holds, disablings and resets, newest first.
    pub events: Vec<AttemptEventView>,
}

impl AttemptStatus {
    fn new(fullname: &str, limit: u32, state: AttemptState, now_ms: i64) -> AttemptStatus {
        AttemptStatus {
            user_fullname: fullname.to_owned(),
            failures: state.failures,
            limit,
            held_until: state.held_until.map(format_timestamp),
            retry_after_s: state.held_until.map(|until| seconds_until(until, now_ms)),
            disabled: state.disabled,
            events: state
                .events
                .into_iter()
                .map(|event| AttemptEventView {
                    event: event.event,
                    failures: event.failures,
                    held_until: event.held_until.map(format_timestamp),
                    created_at: format_timestamp(event.created_at),
                })
                .collect(),
        }
    }
}

impl Engine {
    /// Runs `work` as one attempt of a user against the limit of `rules`: not at all while the
    /// user is held back; otherwise counted before it starts and settled by `outcome` of its
    /// result (an error gives the attempt back).
    pub(in crate::service) fn counted<T>(
        &self,
        (project_id, fullname): (&str, &str),
        rules: &RuleSet,
        work: impl FnOnce() -> Result<T>,
        outcome: impl FnOnce(&T) -> AttemptOutcome,
    ) -> Result<Counted<T>> {
        let policy = attempt_policy(rules);
        let ticket =
            match self
                .store
                .start_user_attempt(project_id, fullname, &policy, self.now_ms())?
            {
                AttemptStart::Allowed(ticket) => ticket,
                AttemptStart::Held(hold) => {
                    return Ok(Counted::Held(HoldNotice::new(hold, self.now_ms())))
                }
            };
        let done = work();
        let settled = self.store.settle_user_attempt(
            ticket,
            done.as_ref().map_or(AttemptOutcome::Withdrawn, outcome),
            self.now_ms(),
        );
        let value = done?;
        let started = settled?.map(|hold| HoldNotice::new(hold, self.now_ms()));
        Ok(Counted::Ran(value, started))
    }
}

/// The attempt limit: where a user stands, and the backend's reset ([`Engine::attempts`]).
#[derive(Debug, Clone, Copy)]
pub struct Attempts<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// The attempt limit: where a user stands, and the backend's reset.
    pub fn attempts(&self) -> Attempts<'_> {
        Attempts(self)
    }
}

impl Attempts<'_> {
    /// Where a user of a project stands against the attempt limit of `rules`.
    pub fn status(
        &self,
        project_id: &str,
        fullname: &str,
        rules: &RuleSet,
    ) -> Result<AttemptStatus> {
        let engine = self.0;
        check_fullname(fullname, "user_fullname")?;
        let now = engine.now_ms();
        let state = engine.store.attempt_state(project_id, fullname, now)?;
        Ok(AttemptStatus::new(
            fullname,
            rules.attempt_limit,
            state,
            now,
        ))
    }

    /// Clears a user's failed attempts, wait and disabling (the backend's reset after another
    /// factor); the reset is an audit row.
    pub fn reset(
        &self,
        project_id: &str,
        fullname: &str,
        rules: &RuleSet,
    ) -> Result<AttemptStatus> {
        let engine = self.0;
        check_fullname(fullname, "user_fullname")?;
        let now = engine.now_ms();
        let state = engine.store.reset_attempts(project_id, fullname, now)?;
        Ok(AttemptStatus::new(
            fullname,
            rules.attempt_limit,
            state,
            now,
        ))
    }

    /// The rule set a project decides with when no key names a custom one: its own, or the
    /// default (what the C ABI's and the CLI's attempt calls report the limit of).
    pub fn project_rules(&self, project_id: &str) -> Result<RuleSet> {
        let engine = self.0;
        match engine.rules().get(project_id, None)? {
            Some(json) => Ok(RuleSet::from_json(&json)?),
            None => Ok(RuleSet::default_rules()),
        }
    }
}
