//! Attempt limits (NIST SP 800-63B §5.2.3): consecutive failed decisions per user and project, the
//! wait they earned ([`AttemptHold`]) or the disabling, and an audit row ([`AttemptEvent`]) for
//! every hold, disabling and reset.
//!
//! An attempt is counted when it starts ([`Store::start_user_attempt`]), before any model runs, and
//! settled when it ends ([`Store::settle_user_attempt`]): a pass clears the count, a failure keeps it,
//! and an attempt that reached no decision (an error, or a call that could not be a guess) gives
//! its count back. Counting at the start means parallel calls cannot all slip past the limit while
//! each one's analysis runs.

use super::sql::{params, OptionalExtension};

use super::sql::{Conn, DbResult};
use super::{ensure_user, lock_user, storage, Store};
use crate::error::Result;

/// What a project's rule set says about failed attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptPolicy {
    /// Consecutive failures after which the user is held back (at least 1).
    pub limit: u32,
    /// The first wait, ms; each further failure doubles it.
    pub first_wait_ms: i64,
    /// The longest wait, ms.
    pub max_wait_ms: i64,
    /// Disable biometric attempts until the backend resets them, instead of waiting.
    pub disable: bool,
}

impl AttemptPolicy {
    /// The wait that `failures` consecutive failures (at least `limit`) earn: the first wait,
    /// doubled for every failure beyond the limit, at most `max_wait_ms`.
    pub fn wait_ms(&self, failures: u32) -> i64 {
        let doublings = failures.saturating_sub(self.limit).min(62);
        self.first_wait_ms
            .max(0)
            .saturating_mul(1_i64 << doublings)
            .min(self.max_wait_ms)
    }
}

/// A user held back: no attempt may start until `until_ms`, or, when it is `None`, until the
/// backend resets the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptHold {
    /// Consecutive failed attempts.
    pub failures: u32,
    /// When the next attempt is allowed, Unix ms; `None` while attempts are disabled.
    pub until_ms: Option<i64>,
}

/// How a started attempt began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptStart {
    /// It may run; settle it with [`Store::settle_user_attempt`].
    Allowed(AttemptTicket),
    /// The user is held back: answer at once, run nothing.
    Held(AttemptHold),
}

/// A counted attempt, to be settled once its decision is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptTicket {
    user_id: i64,
    /// The hold this attempt puts in force should it fail (set when it starts).
    restraint: Option<AttemptHold>,
}

/// How a counted attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The decision passed: the count starts again.
    Passed,
    /// The decision failed: the count stands.
    Failed,
    /// No decision that could be a guess (an error, or a user with nothing enrolled to guess
    /// against): the attempt is given back.
    Withdrawn,
}

/// One audit row: a hold, a disabling or a reset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptEvent {
    /// `hold`, `disable` or `reset`.
    pub event: String,
    /// Consecutive failures when it happened (before a reset).
    pub failures: u32,
    /// For a hold, until when, Unix ms.
    pub held_until: Option<i64>,
    /// When, Unix ms.
    pub created_at: i64,
}

/// Where a user stands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AttemptState {
    /// Consecutive failed attempts (attempts in progress included).
    pub failures: u32,
    /// The hold in force, if any (a hold that has run out is not reported).
    pub held_until: Option<i64>,
    /// Whether attempts are disabled until a reset.
    pub disabled: bool,
    /// The latest audit rows, newest first.
    pub events: Vec<AttemptEvent>,
}

/// How many audit rows [`Store::attempt_state`] returns.
pub const ATTEMPT_EVENTS_SHOWN: usize = 20;

fn counter(connection: &Conn<'_>, user_id: i64) -> Result<Option<(u32, Option<i64>, bool)>> {
    connection
        .query_row(
            "SELECT failures, held_until, disabled FROM attempt_counters WHERE user_id = ?1",
            [user_id],
            |row| Ok((row.get::<u32>(0)?, row.get(1)?, row.get::<i64>(2)? == 1)),
        )
        .optional()
        .map_err(storage)
}

fn event(
    transaction: &Conn<'_>,
    user_id: i64,
    kind: &str,
    (failures, held_until): (u32, Option<i64>),
    now_ms: i64,
) -> Result<()> {
    transaction
        .execute(
            "INSERT INTO attempt_events (user_id, event, failures, held_until, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![user_id, kind, failures, held_until, now_ms],
        )
        .map_err(storage)?;
    Ok(())
}

impl Store {
    /// Starts an attempt of a user: [`AttemptStart::Held`] while a hold is in force or attempts
    /// are disabled; otherwise the attempt is counted as a failure until it is settled, and, if it
    /// reaches the limit, the hold it would earn is put in force now.
    pub fn start_user_attempt(
        &self,
        project_id: &str,
        fullname: &str,
        policy: &AttemptPolicy,
        now_ms: i64,
    ) -> Result<AttemptStart> {
        self.write(|transaction| {
            let user_id = ensure_user(transaction, project_id, fullname, now_ms)?;
            // The count read here is written back below: one server at a time.
            lock_user(transaction, user_id)?;
            let (failures, held_until, disabled) =
                counter(transaction, user_id)?.unwrap_or((0, None, false));
            if disabled {
                return Ok(AttemptStart::Held(AttemptHold {
                    failures,
                    until_ms: None,
                }));
            }
            if let Some(until) = held_until.filter(|until| *until > now_ms) {
                return Ok(AttemptStart::Held(AttemptHold {
                    failures,
                    until_ms: Some(until),
                }));
            }
            let failures = failures.saturating_add(1);
            let limit = policy.limit.max(1);
            let restraint = (failures >= limit).then(|| AttemptHold {
                failures,
                until_ms: (!policy.disable).then(|| now_ms + policy.wait_ms(failures)),
            });
            let (held_until, disabled) = match restraint {
                Some(AttemptHold {
                    until_ms: Some(until),
                    ..
                }) => (Some(until), false),
                Some(AttemptHold { until_ms: None, .. }) => (None, true),
                None => (None, false),
            };
            transaction
                .execute(
                    "INSERT INTO attempt_counters (user_id, failures, held_until, disabled, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (user_id) DO UPDATE SET failures = excluded.failures,
                        held_until = excluded.held_until, disabled = excluded.disabled,
                        updated_at = excluded.updated_at",
                    params![user_id, failures, held_until, i64::from(disabled), now_ms],
                )
                .map_err(storage)?;
            Ok(AttemptStart::Allowed(AttemptTicket { user_id, restraint }))
        })
    }

    /// Settles a counted attempt. Returns the hold a failure put in force (audited as a `hold`
    /// or `disable` row), if it did.
    pub fn settle_user_attempt(
        &self,
        ticket: AttemptTicket,
        outcome: AttemptOutcome,
        now_ms: i64,
    ) -> Result<Option<AttemptHold>> {
        self.write(|transaction| {
            let user_id = ticket.user_id;
            match outcome {
                AttemptOutcome::Passed => {
                    transaction
                        .execute(
                            "UPDATE attempt_counters SET failures = 0, held_until = NULL,
                                disabled = 0, updated_at = ?2 WHERE user_id = ?1",
                            params![user_id, now_ms],
                        )
                        .map_err(storage)?;
                    Ok(None)
                }
                AttemptOutcome::Failed => {
                    if let Some(hold) = ticket.restraint {
                        let kind = if hold.until_ms.is_some() {
                            "hold"
                        } else {
                            "disable"
                        };
                        event(
                            transaction,
                            user_id,
                            kind,
                            (hold.failures, hold.until_ms),
                            now_ms,
                        )?;
                    }
                    Ok(ticket.restraint)
                }
                AttemptOutcome::Withdrawn => {
                    // Give the count back, and the hold or disabling this attempt put in force
                    // (a later attempt's own is left alone).
                    let (until, disabled) = match ticket.restraint {
                        Some(hold) => (hold.until_ms, hold.until_ms.is_none()),
                        None => (None, false),
                    };
                    transaction
                        .execute(
                            "UPDATE attempt_counters SET failures = CASE WHEN failures > 0 THEN failures - 1 ELSE 0 END,
                                held_until = CASE WHEN CAST(?2 AS BIGINT) IS NOT NULL AND held_until = ?2
                                    THEN NULL ELSE held_until END,
                                disabled = CASE WHEN ?3 THEN 0 ELSE disabled END,
                                updated_at = ?4
                             WHERE user_id = ?1",
                            params![user_id, until, disabled, now_ms],
                        )
                        .map_err(storage)?;
                    Ok(None)
                }
            }
        })
    }

    /// Clears a user's count, hold and disabling (the backend's reset after another factor), and
    /// writes a `reset` audit row. Returns where the user stands afterwards.
    pub fn reset_attempts(
        &self,
        project_id: &str,
        fullname: &str,
        now_ms: i64,
    ) -> Result<AttemptState> {
        self.write(|transaction| {
            let user_id = ensure_user(transaction, project_id, fullname, now_ms)?;
            lock_user(transaction, user_id)?;
            let (failures, held_until, _) =
                counter(transaction, user_id)?.unwrap_or((0, None, false));
            transaction
                .execute(
                    "UPDATE attempt_counters SET failures = 0, held_until = NULL, disabled = 0,
                        updated_at = ?2 WHERE user_id = ?1",
                    params![user_id, now_ms],
                )
                .map_err(storage)?;
            event(
                transaction,
                user_id,
                "reset",
                (failures, held_until),
                now_ms,
            )?;
            Ok(())
        })?;
        self.attempt_state(project_id, fullname, now_ms)
    }

    /// Where a user stands at `now_ms`, with the latest [`ATTEMPT_EVENTS_SHOWN`] audit rows.
    pub fn attempt_state(
        &self,
        project_id: &str,
        fullname: &str,
        now_ms: i64,
    ) -> Result<AttemptState> {
        self.read(|connection| {
            let user_id: Option<i64> = connection
                .query_row(
                    "SELECT id FROM users WHERE project_id = ?1 AND fullname = ?2",
                    params![project_id, fullname],
                    |row| row.get(0),
                )
                .optional()
                .map_err(storage)?;
            let Some(user_id) = user_id else {
                return Ok(AttemptState::default());
            };
            let (failures, held_until, disabled) =
                counter(connection, user_id)?.unwrap_or((0, None, false));
            let mut statement = connection
                .prepare(
                    "SELECT event, failures, held_until, created_at FROM attempt_events
                     WHERE user_id = ?1 ORDER BY id DESC LIMIT ?2",
                )
                .map_err(storage)?;
            let events = statement
                .query_map(params![user_id, ATTEMPT_EVENTS_SHOWN as i64], |row| {
                    Ok(AttemptEvent {
                        event: row.get(0)?,
                        failures: row.get(1)?,
                        held_until: row.get(2)?,
                        created_at: row.get(3)?,
                    })
                })
                .map_err(storage)?
                .collect::<DbResult<Vec<_>>>()
                .map_err(storage)?;
            Ok(AttemptState {
                failures,
                held_until: held_until.filter(|until| *until > now_ms),
                disabled,
                events,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::store::TemplateKey;

    const T0: i64 = 1_800_000_000_000;

    fn store() -> Store {
        Store::open(":memory:", TemplateKey::new([7; 32]), 1).unwrap()
    }

    fn policy(disable: bool) -> AttemptPolicy {
        AttemptPolicy {
            limit: 3,
            first_wait_ms: 30_000,
            max_wait_ms: 86_400_000,
            disable,
        }
    }

    fn fail(store: &Store, policy: &AttemptPolicy, now: i64) -> Option<AttemptHold> {
        match store.start_user_attempt("p", "u", policy, now).unwrap() {
            AttemptStart::Allowed(ticket) => store
                .settle_user_attempt(ticket, AttemptOutcome::Failed, now)
                .unwrap(),
            AttemptStart::Held(hold) => panic!("held at {now}: {hold:?}"),
        }
    }

    #[test]
    fn waits_start_at_the_limit_and_double() {
        let policy = policy(false);
        assert_eq!(policy.wait_ms(3), 30_000);
        assert_eq!(policy.wait_ms(4), 60_000);
        assert_eq!(policy.wait_ms(5), 120_000);
        assert_eq!(policy.wait_ms(200), 86_400_000);
    }

    #[test]
    fn the_limit_holds_then_one_attempt_then_a_doubled_wait() {
        let store = store();
        let policy = policy(false);
        assert_eq!(fail(&store, &policy, T0), None);
        assert_eq!(fail(&store, &policy, T0 + 1), None);
        let hold = fail(&store, &policy, T0 + 2).expect("the third failure holds");
        assert_eq!(hold.until_ms, Some(T0 + 2 + 30_000));
        // Held: nothing is counted.
        for now in [T0 + 3, T0 + 2 + 29_999] {
            assert_eq!(
                store.start_user_attempt("p", "u", &policy, now).unwrap(),
                AttemptStart::Held(AttemptHold {
                    failures: 3,
                    until_ms: Some(T0 + 30_002)
                })
            );
        }
        // The wait is over: one attempt, and its failure doubles the wait.
        let hold = fail(&store, &policy, T0 + 30_002).expect("held again");
        assert_eq!(hold.until_ms, Some(T0 + 30_002 + 60_000));
        let state = store.attempt_state("p", "u", T0 + 30_003).unwrap();
        assert_eq!(state.failures, 4);
        assert_eq!(state.held_until, Some(T0 + 90_002));
        assert_eq!(state.events.len(), 2);
        assert_eq!(state.events[0].event, "hold");
        // A pass clears it all.
        let AttemptStart::Allowed(ticket) = store
            .start_user_attempt("p", "u", &policy, T0 + 90_002)
            .unwrap()
        else {
            panic!("the wait is over")
        };
        store
            .settle_user_attempt(ticket, AttemptOutcome::Passed, T0 + 90_003)
            .unwrap();
        let state = store.attempt_state("p", "u", T0 + 90_004).unwrap();
        assert_eq!((state.failures, state.held_until), (0, None));
    }

    #[test]
    fn a_withdrawn_attempt_gives_back_its_count_and_its_hold() {
        let store = store();
        let policy = policy(false);
        fail(&store, &policy, T0);
        fail(&store, &policy, T0);
        let AttemptStart::Allowed(ticket) =
            store.start_user_attempt("p", "u", &policy, T0).unwrap()
        else {
            panic!("two failures do not hold")
        };
        // While it runs, the attempt counts: a parallel one is held.
        assert!(matches!(
            store.start_user_attempt("p", "u", &policy, T0).unwrap(),
            AttemptStart::Held(_)
        ));
        store
            .settle_user_attempt(ticket, AttemptOutcome::Withdrawn, T0)
            .unwrap();
        let state = store.attempt_state("p", "u", T0).unwrap();
        assert_eq!((state.failures, state.held_until), (2, None));
        assert!(state.events.is_empty());
    }

    #[test]
    fn disabling_lasts_until_a_reset_and_both_are_audited() {
        let store = store();
        let policy = policy(true);
        fail(&store, &policy, T0);
        fail(&store, &policy, T0);
        let hold = fail(&store, &policy, T0).expect("disabled");
        assert_eq!(hold.until_ms, None);
        let far = T0 + 365 * 86_400_000;
        assert_eq!(
            store.start_user_attempt("p", "u", &policy, far).unwrap(),
            AttemptStart::Held(AttemptHold {
                failures: 3,
                until_ms: None
            })
        );
        let state = store.reset_attempts("p", "u", far).unwrap();
        assert_eq!((state.failures, state.disabled), (0, false));
        let kinds: Vec<&str> = state.events.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(kinds, ["reset", "disable"]);
        assert_eq!(state.events[0].failures, 3);
        assert!(matches!(
            store.start_user_attempt("p", "u", &policy, far).unwrap(),
            AttemptStart::Allowed(_)
        ));
    }

    #[test]
    fn users_and_projects_are_counted_apart() {
        let store = store();
        let policy = policy(false);
        for _ in 0..3 {
            fail(&store, &policy, T0);
        }
        for (project, user) in [("p", "v"), ("q", "u")] {
            assert!(matches!(
                store
                    .start_user_attempt(project, user, &policy, T0)
                    .unwrap(),
                AttemptStart::Allowed(_)
            ));
        }
    }
}
