//! Active Speaker Detection: does the visible mouth move with the speech? The lips' shape
//! ([`Signals::lips`]: eighteen lip and jaw distances over the face height) and the sound's
//! spectral envelope ([`Signals::speech_bands_db`]: twelve mel bands, 100-4000 Hz) are compared by
//! their first canonical correlation ([`super::sync`]): the combination of lip motions that best
//! follows some combination of band levels. Both are taken as first differences (changes per
//! 40 ms step), so that the slow loud-quiet rhythm every sentence shares counts for little, and
//! the best lag within [`SYNC_LAG_STEPS`] is kept (the mouth moves before its sound, and recordings
//! add their own audio-to-video offset).
//!
//! A canonical correlation over 30 dimensions is high even for unrelated signals on a few seconds,
//! so it is judged against a null built from the same clip, as SyncNet's offset confidence does:
//! the correlation at up to [`NULL_SHIFTS`] circular shifts of the audio at least
//! [`MIN_NULL_SHIFT_MS`] beyond the lags searched. The evidence is
//! `z = (correlation - mean(null)) / sd(null)` in null standard deviations, the best over the lags
//! searched, with a prior against recording offsets: lags outside [`CORE_LAG_STEPS`] lose
//! [`OFFSET_PENALTY_Z`]. Because it is a best of several lags, z is above 0 for unrelated sound
//! (about 1.2 on mismatched real speech); the threshold [`PASS_Z`] is the 95th percentile of the
//! same statistic at null positions, not a value fitted to genuine clips. The score in 0..1 is 0.5 at
//! [`PASS_Z`].

use super::sync::LaggedCanonical;
use super::{logistic, Signals, GRID_MS, LIP_DISTANCES, SPEECH_BANDS};

/// Lags of the sound after the mouth searched for the best canonical correlation, grid steps
/// (-40 to +360 ms), like SyncNet's offset search but one-sided towards the sound coming late.
/// Articulation leads its sound (the correlation peaks with the sound 40-160 ms after the mouth on
/// real talking heads), and consumer recordings add audio-to-video offsets of a few hundred ms:
/// two of the development clips peak at +320 ms.
pub const SYNC_LAG_STEPS: std::ops::RangeInclusive<i64> = -1..=9;

/// The lags of articulation alone (-40 to +160 ms), where the correlation peaks on real talking
/// heads recorded in sync. Lags outside it, in [`SYNC_LAG_STEPS`], are a recording's offset and
/// less likely a priori: their z is lowered by [`OFFSET_PENALTY_Z`].
pub const CORE_LAG_STEPS: std::ops::RangeInclusive<i64> = -1..=4;

/// Null standard deviations taken off the z of a lag outside [`CORE_LAG_STEPS`]: the prior
/// against a recording offset, so that the wider search costs less false acceptance (the null's
/// 95th percentile is 2.82 with it, 3.08 without it).
pub const OFFSET_PENALTY_Z: f64 = 1.0;

/// Least distance of a null shift from every lag searched, ms: far enough that a shifted sound
/// cannot line up with the mouth that made it.
pub const MIN_NULL_SHIFT_MS: i64 = 600;

/// Most circular shifts in the null (evenly spaced over the allowed range).
pub const NULL_SHIFTS: usize = 80;

/// Least number of distinct null shifts; shorter clips (under about 2.2 s) cannot be judged.
const MIN_NULL_SHIFTS: usize = 12;

/// Ridge (shrinkage towards the identity) of both covariance matrices: a few seconds give 40 to
/// 250 steps for 30 dimensions.
const RIDGE: f64 = 0.1;

/// z at which the score is 0.5 (the pass threshold of the default rules). The rule: the 95th
/// percentile of the same statistic under the circular-shift null, i.e. a false-accept rate of 5 %
/// for a sound unrelated to the mouth ([`null_statistics`]: each null position's lags searched like
/// the real ones, scored against the shifts at least 600 ms away from both). `vouch eval videos`
/// reports it: over the 17 genuine talking-real clips, 2584 null positions, 95th percentile 2.80,
/// 5.2 % at or above 2.8 (GRID's 3 s clips are too short for a position clear on both sides).
/// Mismatched real speech is close (6.2 % of 272 pairs at or above 2.8). Not fitted to the
/// genuine clips. Speech of the same fixed grammar (GRID sentences on another GRID face) passes
/// far more often (about half): its rhythm follows the mouth, which is why the phrase and voice
/// checks stand beside this one.
pub const PASS_Z: f32 = 2.8;

/// Slope of the logistic map from z to score (0.05 at z = 1, 0.95 at z = 5).
const SLOPE: f32 = 1.5;

/// Band levels more than this far under the clip's loudest band level are treated as silence, so
/// that background hiss does not count as sound.
const LEVEL_RANGE_DB: f32 = 45.0;

/// Least share of frames with a face.
pub const MIN_FACE_COVERAGE: f32 = 0.5;

/// Least speech, seconds.
pub const MIN_SYNC_SPEECH_SECONDS: f32 = 0.5;

/// The service's `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeakerCode {
    /// 0: the visible person is speaking (score at or above 0.5).
    Speaking = 0,
    /// 1: the mouth does not move with the speech.
    NotSpeaking = 1,
    /// 2: no face in enough frames.
    NoFace = 2,
    /// 3: not enough speech in the audio.
    NoSpeech = 3,
}

/// The outcome of Active Speaker Detection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeakerCheck {
    /// What was found.
    pub code: SpeakerCode,
    /// Score in 0..1 (0 when the check could not run).
    pub score: f32,
    /// The evidence the score is mapped from: z, the canonical correlation's distance above its
    /// null in null standard deviations (see the module documentation). The name is kept from the
    /// first-formant contrast it replaced.
    pub contrast: f32,
    /// First canonical correlation of lips and sound at the lag of the best z, 0..1.
    pub correlation: f32,
    /// Lag of that correlation, ms (positive: the sound comes after the mouth).
    pub lag_ms: i64,
}

/// Runs the check on a clip's signals.
pub fn check(signals: &Signals) -> SpeakerCheck {
    let failed = |code| SpeakerCheck {
        code,
        score: 0.0,
        contrast: 0.0,
        correlation: 0.0,
        lag_ms: 0,
    };
    if signals.face_coverage < MIN_FACE_COVERAGE {
        return failed(SpeakerCode::NoFace);
    }
    if signals.speech_seconds < MIN_SYNC_SPEECH_SECONDS {
        return failed(SpeakerCode::NoSpeech);
    }
    let Some(sync) = audio_visual_sync(&signals.lips, &signals.speech_bands_db) else {
        // Too short to judge, or a signal that never changes (a still mouth, a silent track).
        return failed(if signals.lips.len() < MIN_STEPS {
            SpeakerCode::NoSpeech
        } else {
            SpeakerCode::NotSpeaking
        });
    };
    let score = logistic(sync.z, PASS_Z, SLOPE);
    SpeakerCheck {
        code: if score >= 0.5 {
            SpeakerCode::Speaking
        } else {
            SpeakerCode::NotSpeaking
        },
        score,
        contrast: sync.z,
        correlation: sync.correlation,
        lag_ms: sync.lag_ms,
    }
}

/// Circular shifts excluded from the null: the lags searched and those less than
/// [`MIN_NULL_SHIFT_MS`] from them.
const EXCLUDED_SHIFTS: usize = (*SYNC_LAG_STEPS.end() - *SYNC_LAG_STEPS.start()) as usize
    + 2 * (MIN_NULL_SHIFT_MS / GRID_MS) as usize;

/// Grid steps needed for [`MIN_NULL_SHIFTS`] null shifts (one more than the changes).
const MIN_STEPS: usize = EXCLUDED_SHIFTS + MIN_NULL_SHIFTS + 1;

/// How well the lips and the sound line up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Synchrony {
    /// The best over [`SYNC_LAG_STEPS`] of (correlation - mean of the null) / its standard
    /// deviation, less [`OFFSET_PENALTY_Z`] outside [`CORE_LAG_STEPS`].
    pub z: f32,
    /// The first canonical correlation at that lag.
    pub correlation: f32,
    /// Its lag, ms (positive: the sound comes after the mouth).
    pub lag_ms: i64,
    /// Mean of the correlation over the circularly shifted sound.
    pub null_mean: f32,
}

/// The canonical-correlation z of `lips[i]` with `bands_db[i + lag]` (same grid; the sound is cut
/// or padded with silence to the lips' length). `None` when the clip is too short for the null or
/// either signal never changes.
pub fn audio_visual_sync(
    lips: &[[f32; LIP_DISTANCES]],
    bands_db: &[[f32; SPEECH_BANDS]],
) -> Option<Synchrony> {
    let cca = changes(lips, bands_db)?;
    let null = null_shifts(cca.len())?;
    let values: Vec<f64> = null.iter().map(|&shift| cca.at_lag(shift)).collect();
    let (mean, sd) = mean_sd(&values)?;
    let (z, correlation, lag) = best_lag(&cca, 0, mean, sd);
    Some(Synchrony {
        z: z as f32,
        correlation: correlation as f32,
        lag_ms: lag * GRID_MS,
        null_mean: mean as f32,
    })
}

/// The statistic of [`audio_visual_sync`] where the sound is unrelated to the mouth, for checking
/// [`PASS_Z`] on a clip: at every circular shift `p` of the sound that stays [`MIN_NULL_SHIFT_MS`]
/// clear of the lags searched, the best z over the lags `p + SYNC_LAG_STEPS` (with the same offset
/// prior), against the null shifts at least [`MIN_NULL_SHIFT_MS`] from those lags too (leave one
/// position out). The 95th percentile of these values over a set of clips is the false-accept
/// rule of [`PASS_Z`]; `vouch eval videos` reports it. Empty when the clip is too short.
pub fn null_statistics(
    lips: &[[f32; LIP_DISTANCES]],
    bands_db: &[[f32; SPEECH_BANDS]],
) -> Vec<f32> {
    let Some(cca) = changes(lips, bands_db) else {
        return Vec::new();
    };
    let Some(null) = null_shifts(cca.len()) else {
        return Vec::new();
    };
    let n = cca.len() as i64;
    let guard = MIN_NULL_SHIFT_MS / GRID_MS;
    let (low, high) = (*SYNC_LAG_STEPS.start(), *SYNC_LAG_STEPS.end());
    let first = high - low + guard;
    (first..=n - (high - low) - guard)
        .filter_map(|p| {
            let values: Vec<f64> = null
                .iter()
                .filter(|&&shift| !(p + low - guard < shift && shift < p + high + guard))
                .map(|&shift| cca.at_lag(shift))
                .collect();
            if values.len() < MIN_NULL_SHIFTS {
                return None;
            }
            let (mean, sd) = mean_sd(&values)?;
            Some(best_lag(&cca, p, mean, sd).0 as f32)
        })
        .collect()
}

/// The first differences of both signals, whitened for canonical correlations (see
/// [`audio_visual_sync`]). `None` when the clip is too short or a signal never changes.
fn changes(
    lips: &[[f32; LIP_DISTANCES]],
    bands_db: &[[f32; SPEECH_BANDS]],
) -> Option<LaggedCanonical> {
    let steps = lips.len();
    if steps < MIN_STEPS {
        return None;
    }
    let loudest = bands_db.iter().flatten().copied().fold(f32::MIN, f32::max);
    let floor = loudest - LEVEL_RANGE_DB;
    let band = |i: usize| -> [f32; SPEECH_BANDS] {
        bands_db
            .get(i)
            .map_or([floor; SPEECH_BANDS], |b| b.map(|db| db.max(floor)))
    };
    let lip_changes: Vec<[f64; LIP_DISTANCES]> = lips
        .windows(2)
        .map(|w| std::array::from_fn(|k| f64::from(w[1][k] - w[0][k])))
        .collect();
    let band_changes: Vec<[f64; SPEECH_BANDS]> = (1..steps)
        .map(|i| {
            let (before, now) = (band(i - 1), band(i));
            std::array::from_fn(|k| f64::from(now[k] - before[k]))
        })
        .collect();
    LaggedCanonical::new(&lip_changes, &band_changes, RIDGE)
}

/// The null's circular shifts for `n` steps: from [`MIN_NULL_SHIFT_MS`] after the last lag
/// searched round to [`MIN_NULL_SHIFT_MS`] before the first, at most [`NULL_SHIFTS`] evenly
/// spaced. `None` when fewer than [`MIN_NULL_SHIFTS`] fit.
fn null_shifts(n: usize) -> Option<Vec<i64>> {
    let candidates = (n + 1).saturating_sub(EXCLUDED_SHIFTS);
    if candidates < MIN_NULL_SHIFTS {
        return None;
    }
    let first = *SYNC_LAG_STEPS.end() + MIN_NULL_SHIFT_MS / GRID_MS;
    let count = NULL_SHIFTS.min(candidates);
    Some(
        (0..count)
            .map(|i| {
                let offset = (i * (candidates - 1) + (count - 1) / 2) / (count - 1).max(1);
                first + offset as i64
            })
            .collect(),
    )
}

/// Mean and standard deviation; `None` when the values do not vary.
fn mean_sd(values: &[f64]) -> Option<(f64, f64)> {
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len().max(1) as f64)
        .sqrt();
    (sd > 1e-9).then_some((mean, sd))
}

/// The best z over the lags `centre + SYNC_LAG_STEPS`, those outside the core lowered by the
/// offset prior: (z, correlation, lag relative to `centre`).
fn best_lag(cca: &LaggedCanonical, centre: i64, mean: f64, sd: f64) -> (f64, f64, i64) {
    SYNC_LAG_STEPS
        .map(|lag| {
            let correlation = cca.at_lag(centre + lag);
            let penalty = if CORE_LAG_STEPS.contains(&lag) {
                0.0
            } else {
                OFFSET_PENALTY_Z
            };
            ((correlation - mean) / sd - penalty, correlation, lag)
        })
        .fold(
            (f64::MIN, 0.0, 0),
            |best, v| if v.0 > best.0 { v } else { best },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random sequence in -1..1 (xorshift), so tests need no crate.
    fn noise(seed: u64, len: usize) -> Vec<f32> {
        let mut state = seed.max(1);
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % 20_001) as f32 / 10_000.0 - 1.0
            })
            .collect()
    }

    /// An irregular syllable-like opening (0..1) smoothed over about three steps.
    fn opening(seed: u64, len: usize) -> Vec<f32> {
        let raw = noise(seed, len + 2);
        (0..len)
            .map(|i| ((raw[i] + raw[i + 1] + raw[i + 2]) / 3.0 + 0.5).clamp(0.0, 1.0))
            .collect()
    }

    /// Lips that open by `open` (with some landmark jitter).
    fn lips_of(open: &[f32], seed: u64) -> Vec<[f32; LIP_DISTANCES]> {
        let jitter = noise(seed, open.len() * LIP_DISTANCES);
        open.iter()
            .enumerate()
            .map(|(i, &o)| {
                std::array::from_fn(|k| {
                    let gain = if k < 14 { 0.05 } else { 0.01 };
                    0.1 + gain * o + 0.003 * jitter[i * LIP_DISTANCES + k]
                })
            })
            .collect()
    }

    /// A sound whose low bands rise with `open` `delay` steps later, with noise in every band.
    fn sound_of(open: &[f32], delay: usize, seed: u64) -> Vec<[f32; SPEECH_BANDS]> {
        let hiss = noise(seed, open.len() * SPEECH_BANDS);
        (0..open.len())
            .map(|i| {
                let o = if i >= delay { open[i - delay] } else { 0.0 };
                std::array::from_fn(|k| {
                    let follows = if k < 6 { 25.0 } else { 5.0 };
                    -60.0 + follows * o + 6.0 * hiss[i * SPEECH_BANDS + k]
                })
            })
            .collect()
    }

    #[test]
    fn a_mouth_and_its_own_sound_stand_far_above_the_null() {
        let open = opening(7, 150);
        let lips = lips_of(&open, 11);
        let sync = audio_visual_sync(&lips, &sound_of(&open, 0, 13)).unwrap();
        assert!(sync.z > 5.0 && sync.lag_ms == 0, "{sync:?}");
        let late = audio_visual_sync(&lips, &sound_of(&open, 2, 13)).unwrap();
        assert!(late.z > 5.0 && late.lag_ms == 80, "{late:?}");
    }

    #[test]
    fn a_shifted_or_unrelated_sound_does_not() {
        let open = opening(7, 150);
        let lips = lips_of(&open, 11);
        let own = sound_of(&open, 0, 13);
        // Circularly shifted by a second: the right sound at the wrong time.
        let shifted: Vec<_> = own
            .iter()
            .cycle()
            .skip(25)
            .take(own.len())
            .copied()
            .collect();
        let shifted = audio_visual_sync(&lips, &shifted).unwrap();
        assert!(shifted.z < PASS_Z, "{shifted:?}");
        // Other speech, same statistics: stays within chance.
        let mut above = 0;
        for seed in 0..20 {
            let other = sound_of(&opening(100 + seed, 150), 0, 200 + seed);
            let z = audio_visual_sync(&lips, &other).unwrap().z;
            assert!(z < 4.5, "seed {seed}: {z}");
            above += usize::from(z >= PASS_Z);
        }
        assert!(above <= 2, "{above} of 20 unrelated sounds pass");
    }

    #[test]
    fn the_null_statistic_stays_under_the_threshold_for_most_shifts() {
        let open = opening(7, 150);
        let lips = lips_of(&open, 11);
        let null = null_statistics(&lips, &sound_of(&open, 0, 13));
        // 150 steps make 149 changes: every shift whose lags stay 600 ms clear of those searched.
        assert_eq!(null.len(), 149 - 2 * (10 + 15) + 1);
        let above = null.iter().filter(|&&z| z >= PASS_Z).count();
        assert!(
            above * 10 <= null.len(),
            "{above} of {} null positions pass",
            null.len()
        );
        assert!(null_statistics(&lips[..30], &sound_of(&open, 0, 13)[..30]).is_empty());
    }

    #[test]
    fn degenerate_signals_are_not_scored_and_do_not_panic() {
        let open = opening(7, 150);
        let lips = lips_of(&open, 11);
        let sound = sound_of(&open, 0, 13);
        assert!(audio_visual_sync(&[[0.1; LIP_DISTANCES]; 150], &sound).is_none());
        assert!(audio_visual_sync(&lips, &[[-90.0; SPEECH_BANDS]; 150]).is_none());
        assert!(audio_visual_sync(&lips[..20], &sound[..20]).is_none());
        assert!(audio_visual_sync(&[], &[]).is_none());
        // Audio shorter than the video is padded with silence.
        assert!(audio_visual_sync(&lips, &sound[..60]).is_some());
        assert!(audio_visual_sync(&lips, &[]).is_none());
        let mut signals = Signals {
            face_coverage: 1.0,
            speech_seconds: 2.0,
            lips: vec![[0.1; LIP_DISTANCES]; 150],
            speech_bands_db: sound.clone(),
            ..Signals::default()
        };
        let still = check(&signals);
        assert_eq!((still.code, still.score), (SpeakerCode::NotSpeaking, 0.0));
        signals.lips = lips[..20].to_vec();
        assert_eq!(check(&signals).code, SpeakerCode::NoSpeech);
        signals.lips = lips;
        let speaking = check(&signals);
        assert_eq!(speaking.code, SpeakerCode::Speaking);
        assert!(
            speaking.score > 0.9 && speaking.contrast > PASS_Z,
            "{speaking:?}"
        );
    }

    #[test]
    fn no_face_or_speech_is_reported_not_scored() {
        let signals = Signals::default();
        assert_eq!(check(&signals).code, SpeakerCode::NoFace);
        let signals = Signals {
            face_coverage: 1.0,
            ..Signals::default()
        };
        assert_eq!(check(&signals).code, SpeakerCode::NoSpeech);
    }
}
