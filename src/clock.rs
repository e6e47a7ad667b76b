//! Time sources: [`Clock`], the real [`SystemClock`] and the [`ManualClock`] tests and demos inject.

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in Unix milliseconds. Every timestamp the engine stores or checks
/// (consent, sessions, transactions, token expiry) comes from the engine's clock.
pub trait Clock: Send + Sync + Debug {
    /// Milliseconds since the Unix epoch, UTC.
    fn now_ms(&self) -> i64;
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        // A clock before 1970 is a broken device; treat it as the epoch rather than fail every call.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis() as i64)
    }
}

/// A clock that only moves when told to. Thread-safe.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `now_ms`.
    pub fn new(now_ms: i64) -> ManualClock {
        ManualClock {
            now_ms: AtomicI64::new(now_ms),
        }
    }

    /// Sets the time.
    pub fn set(&self, now_ms: i64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time forward by `delta_ms`.
    pub fn advance(&self, delta_ms: i64) {
        self.now_ms.fetch_add(delta_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

/// Formats Unix milliseconds as RFC 3339 UTC with millisecond precision, e.g. `2026-11-21T10:52:05.123Z`,
/// the form every timestamp takes in responses.
pub fn format_timestamp(unix_ms: i64) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ms) * 1_000_000)
        .ok()
        .and_then(|instant| instant.format(&format).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
}

/// Parses an RFC 3339 timestamp with any offset (`2026-11-21T10:52:05Z`,
/// `2026-11-21T11:52:05.5+01:00`) into Unix milliseconds, or the same without an offset
/// (`2026-11-21T10:52:05`, `2026-11-21T10:52:05.123`) read as UTC, as the job spec keeps its
/// times in UTC; `None` when it is neither.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let instant =
        match time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339) {
            Ok(instant) => instant,
            Err(_) => {
                let local = time::macros::format_description!(
                    "[year]-[month]-[day]T[hour]:[minute]:[second][optional [.[subsecond]]]"
                );
                time::PrimitiveDateTime::parse(text, &local)
                    .ok()?
                    .assume_utc()
            }
        };
    i64::try_from(instant.unix_timestamp_nanos() / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_timestamp(1_795_257_125_123),
            "2026-11-21T10:32:05.123Z"
        );
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        clock.advance(500);
        assert_eq!(clock.now_ms(), 1_500);
        clock.set(7);
        assert_eq!(clock.now_ms(), 7);
    }

    #[test]
    fn parses_rfc3339_with_offsets() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(
            parse_timestamp("2026-11-21T11:52:05.123+01:00").map(format_timestamp),
            Some("2026-11-21T10:52:05.123Z".to_owned())
        );
        // Without an offset: UTC, as the spec keeps its times.
        assert_eq!(
            parse_timestamp("2026-11-21T10:52:05.123").map(format_timestamp),
            Some("2026-11-21T10:52:05.123Z".to_owned())
        );
        assert_eq!(
            parse_timestamp("2026-11-21T10:52:05").map(format_timestamp),
            Some("2026-11-21T10:52:05.000Z".to_owned())
        );
        assert_eq!(parse_timestamp("2026-11-21 10:52:05"), None);
        assert_eq!(parse_timestamp("2026-11-21T10:52"), None);
        assert_eq!(parse_timestamp("tomorrow"), None);
    }
}
