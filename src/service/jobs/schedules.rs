//! Cron schedules on the engine (`docs/jobs.md`): create, list and delete; the pump spawns one
//! job per slot. Expressions have exactly five fields (minute, hour, day of month, month, day of
//! week), evaluated in UTC by the `croner` crate with POSIX semantics: when both day fields are
//! restricted, a day matching either runs. Seconds, a sixth field and `@` nicknames are refused,
//! and so is an expression that never fires (`0 0 31 2 *`).

use std::collections::BTreeMap;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use croner::Cron;
use serde::Deserialize;

use super::calls::check_call;
use crate::error::{Error, Result};
use crate::service::new_id;
use crate::service::project::Project;
use crate::service::store::Store;
pub use crate::service::store::{SchedulePage, ScheduleRecord};

/// The fields of `POST /schedules`. Unknown fields are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSchedule {
    /// Target of every spawned job.
    pub url: String,
    /// Default `POST`.
    #[serde(default)]
    pub http_method: Option<String>,
    /// Five fields, UTC.
    pub cron: String,
    /// Headers of every spawned job.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Body of every spawned job.
    #[serde(default)]
    pub body: Option<String>,
    /// Retries of every spawned job (0 to 10, default 0).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Copied to every spawned job.
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// Copied to every spawned job.
    #[serde(default)]
    pub webhook_headers: Option<BTreeMap<String, String>>,
}

/// A parsed 5-field cron expression.
#[derive(Debug, Clone)]
pub struct CronSchedule(Cron);

impl CronSchedule {
    /// Parses a 5-field expression strictly (see the module documentation).
    pub fn parse(text: &str) -> Result<CronSchedule> {
        let fields = text.split_whitespace().count();
        if fields != 5 || text.contains('@') {
            return Err(Error::InvalidArgument(
                "cron must have exactly five fields (minute hour day-of-month month day-of-week), \
                 without seconds or @ nicknames"
                    .to_owned(),
            ));
        }
        let cron = Cron::from_str(text)
            .map_err(|error| Error::InvalidArgument(format!("cron is not valid: {error}")))?;
        Ok(CronSchedule(cron))
    }

    /// The first occurrence strictly after `after_ms`, Unix ms; `None` when there is none.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let start = DateTime::<Utc>::from_timestamp_millis(after_ms)?;
        self.0
            .find_next_occurrence(&start, false)
            .ok()
            .map(|time| time.timestamp_millis())
    }

    /// The last occurrence at or before `at_ms`, Unix ms; `None` when there is none.
    pub fn latest_at_or_before(&self, at_ms: i64) -> Option<i64> {
        let start = DateTime::<Utc>::from_timestamp_millis(at_ms)?;
        self.0
            .find_previous_occurrence(&start, true)
            .ok()
            .map(|time| time.timestamp_millis())
    }
}

/// Spawns the jobs of every active schedule whose slot has come, in one transaction: the slot to
/// run is the latest occurrence at or before `now_ms` (slots missed while the device was off
/// collapse into one), and the schedule's next run moves to the first slot after it. A slot that
/// already has its job (another pump, another process) spawns nothing: the `(schedule_id, slot)`
/// key allows one. Returns how many jobs were spawned.
pub(in crate::service) fn spawn_due_jobs(store: &Store, now_ms: i64) -> Result<usize> {
    store.atomically(|tx| {
        let mut spawned = 0;
        for schedule in tx.due_schedules(now_ms)? {
            let (slot, next_run_at) = plan_slot(&schedule, now_ms);
            if let Some(slot) = slot {
                if tx.insert_slot_job(&schedule, slot, &new_id("job_"), now_ms)? {
                    spawned += 1;
                }
            }
            tx.set_next_run(&schedule.id, next_run_at, now_ms)?;
        }
        Ok(spawned)
    })
}

/// The slot a due schedule runs now and its next slot: the latest occurrence at or before
/// `now_ms` (the slots missed while the device was off collapse into this one), and the first
/// after it. A stored expression that no longer parses spawns nothing and stops.
fn plan_slot(schedule: &ScheduleRecord, now_ms: i64) -> (Option<i64>, Option<i64>) {
    match CronSchedule::parse(&schedule.cron) {
        Ok(cron) => (cron.latest_at_or_before(now_ms), cron.next_after(now_ms)),
        Err(_) => (None, None),
    }
}

/// The cron schedules of one project
/// ([`Project::schedules`](crate::service::project::Project::schedules)).
#[derive(Debug, Clone, Copy)]
pub struct Schedules<'e>(pub(in crate::service) Project<'e>);

impl<'e> Project<'e> {
    /// The project's cron schedules (`/schedules`).
    pub fn schedules(self) -> Schedules<'e> {
        Schedules(self)
    }
}

impl Schedules<'_> {
    /// Creates an active schedule (`POST /schedules`) whose `next_run_at` is the first slot after
    /// now.
    pub fn create(&self, schedule: &NewSchedule) -> Result<ScheduleRecord> {
        let Project { engine, key } = self.0;
        let now = engine.now_ms();
        let call = check_call(
            &engine.addresses,
            (&schedule.url, schedule.webhook_url.as_deref()),
            schedule.http_method.as_deref(),
            schedule.headers.as_ref(),
            schedule.body.as_deref(),
            schedule.max_retries,
            schedule.webhook_headers.as_ref(),
        )?;
        let cron = CronSchedule::parse(&schedule.cron)?;
        let next_run_at = cron.next_after(now).ok_or_else(|| {
            Error::InvalidArgument("cron never fires (for example 0 0 31 2 *)".to_owned())
        })?;
        let record = ScheduleRecord {
            id: new_id("sched_"),
            project_id: key.project_id.clone(),
            url: schedule.url.clone(),
            http_method: call.method,
            cron: schedule
                .cron
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            headers: call.headers,
            body: schedule.body.clone(),
            max_retries: call.max_retries,
            webhook_url: schedule.webhook_url.clone(),
            webhook_headers: call.webhook_headers,
            active: true,
            next_run_at: Some(next_run_at),
            created_at: now,
        };
        engine.store.insert_schedule(&record, now)?;
        Ok(record)
    }

    /// A page of the key's project's active schedules, newest first.
    pub fn list(&self, before: Option<i64>, limit: usize) -> Result<SchedulePage> {
        let Project { engine, key } = self.0;
        engine.store.schedules(&key.project_id, before, limit)
    }

    /// Deletes a schedule (`DELETE /schedules/{id}`): no later slot spawns a job.
    pub fn delete(&self, schedule_id: &str) -> Result<ScheduleRecord> {
        let Project { engine, key } = self.0;
        engine
            .store
            .delete_schedule(&key.project_id, schedule_id, engine.now_ms())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: i64 = 60_000;

    /// A brute-force matcher of one field: `*`, numbers, ranges `a-b`, steps `/n`, lists.
    fn field_matches(field: &str, value: u32, low: u32, high: u32) -> bool {
        field.split(',').any(|part| {
            let (range, step) = match part.split_once('/') {
                Some((range, step)) => (range, step.parse::<u32>().unwrap()),
                None => (part, 1),
            };
            let (start, end) = if range == "*" {
                (low, high)
            } else if let Some((a, b)) = range.split_once('-') {
                (a.parse().unwrap(), b.parse().unwrap())
            } else {
                let a: u32 = range.parse().unwrap();
                (a, if part.contains('/') { high } else { a })
            };
            value >= start && value <= end && (value - start).is_multiple_of(step)
        })
    }

    /// POSIX cron by brute force: minute, hour and month must match; the day matches when either
    /// restricted day field does (when only one is restricted, that one decides).
    fn brute_force_matches(expression: &str, at_ms: i64) -> bool {
        use chrono::{Datelike, Timelike};
        let time = DateTime::<Utc>::from_timestamp_millis(at_ms).unwrap();
        let f: Vec<&str> = expression.split_whitespace().collect();
        let weekday = time.weekday().num_days_from_sunday();
        let dom = field_matches(f[2], time.day(), 1, 31);
        let dow =
            field_matches(f[4], weekday, 0, 6) || (weekday == 0 && field_matches(f[4], 7, 0, 7));
        let day = match (f[2] == "*", f[4] == "*") {
            (true, true) => true,
            (true, false) => dow,
            (false, true) => dom,
            (false, false) => dom || dow,
        };
        field_matches(f[0], time.minute(), 0, 59)
            && field_matches(f[1], time.hour(), 0, 23)
            && field_matches(f[3], time.month(), 1, 12)
            && day
    }

    #[test]
    fn next_occurrences_match_a_brute_force_minute_matcher_over_two_years() {
        // 2027-01-01T00:00Z, walked minute by minute for two years (2028 has a 29 February).
        let start = 1_798_761_600_000i64;
        let end = start + 2 * 366 * 24 * 60 * MINUTE;
        let expressions = [
            "*/15 * * * *",
            "0 12 1 * 1",
            "30 2 29 2 *",
            "5 4 * * 0",
            "0 9-17/2 * * 1-5",
            "0 0 13 * 5",
            "59 23 31 12 *",
            "0 6,18 1,15 * *",
            "7 7 * 7 7",
        ];
        for expression in expressions {
            let cron = CronSchedule::parse(expression).unwrap();
            let mut expected = Vec::new();
            let mut at = start;
            while at < end {
                if brute_force_matches(expression, at) {
                    expected.push(at);
                }
                at += MINUTE;
            }
            let mut found = Vec::new();
            let mut cursor = start - 1;
            while let Some(next) = cron.next_after(cursor) {
                if next >= end {
                    break;
                }
                found.push(next);
                cursor = next;
            }
            assert!(!expected.is_empty(), "{expression}");
            assert_eq!(found, expected, "{expression}");
        }
    }

    #[test]
    fn only_five_field_expressions_that_fire_are_accepted() {
        for bad in [
            "* * * * * *",
            "0 * * * * *",
            "@daily",
            "@hourly",
            "* * * *",
            "60 * * * *",
            "* 24 * * *",
            "",
        ] {
            assert!(CronSchedule::parse(bad).is_err(), "{bad:?}");
        }
        let never = CronSchedule::parse("0 0 31 2 *").unwrap();
        assert_eq!(never.next_after(1_767_225_600_000), None);
    }

    #[test]
    fn missed_slots_collapse_into_the_latest() {
        let cron = CronSchedule::parse("0 * * * *").unwrap();
        // 2026-01-01T05:30Z: the slots of 01:00 to 05:00 were missed; 05:00 runs, 06:00 is next.
        let at = 1_767_225_600_000 + 5 * 3_600_000 + 30 * MINUTE;
        assert_eq!(
            cron.latest_at_or_before(at),
            Some(1_767_225_600_000 + 5 * 3_600_000)
        );
        assert_eq!(cron.next_after(at), Some(1_767_225_600_000 + 6 * 3_600_000));
    }
}
