//! Active Speaker Detection: does the visible mouth move with the speech? The sync model
//! ([`super::sync`], a map learned once from real recordings) predicts from the sound (its
//! spectral envelope and the viseme probabilities of a phoneme recogniser) how the lips should move
//! (eighteen lip and jaw distances over the face height, [`Signals::lips`]), and the check measures
//! how well the lips seen follow the lips predicted: one correlation over all eighteen distances,
//! at the best lag within [`SYNC_LAG_STEPS`] (the mouth moves before its sound, and recordings add
//! their own audio-to-video offset).
//!
//! A correlation on a few seconds is judged against a null built from the same clip, as SyncNet's
//! offset confidence does: the correlation at up to [`NULL_SHIFTS`] circular shifts of the sound at
//! least [`MIN_NULL_SHIFT_MS`] beyond the lags searched. The evidence is
//! `z = (correlation - mean(null)) / sd(null)` in null standard deviations, the best over the lags
//! searched, with a prior against recording offsets: lags outside [`CORE_LAG_STEPS`] lose
//! [`OFFSET_PENALTY_Z`]. Because it is a best of several lags, z is above 0 for unrelated sound;
//! the threshold [`PASS_Z`] is the 95th percentile of the same statistic at null positions, not a
//! value fitted to genuine clips, and a project may choose another percentile
//! ([`SyncStrength`]). The score in 0..1 is 0.5 at the threshold. A clip too short for the null
//! (under about 2.2 s of grid) is not judged: code 3, as for too little speech, since a
//! correlation over fewer steps could not be told from chance.

use super::sync::{Aligned, SyncMap, VIEWS};
use super::{logistic, Signals, GRID_MS};

/// Lags of the sound after the mouth searched for the best correlation, grid steps
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
/// against a recording offset, so that the wider search costs less false acceptance (with the
/// canonical correlation this model replaced, the null's 95th percentile was 2.82 with it and
/// 3.08 without it).
pub const OFFSET_PENALTY_Z: f64 = 1.0;

/// Least distance of a null shift from every lag searched, ms: far enough that a shifted sound
/// cannot line up with the mouth that made it.
pub const MIN_NULL_SHIFT_MS: i64 = 600;

/// Most circular shifts in the null (evenly spaced over the allowed range).
pub const NULL_SHIFTS: usize = 80;

/// Least number of distinct null shifts; shorter clips (under about 2.2 s) cannot be judged.
const MIN_NULL_SHIFTS: usize = 12;

/// z at which the score is 0.5 under the default rules ([`SyncStrength::Standard`]). The rule: the
/// 95th percentile of the same statistic under the circular-shift null, i.e. a false-accept rate of
/// 5 % for a sound unrelated to the mouth ([`null_statistics`]: each null position's lags searched
/// like the real ones, scored against the shifts at least 600 ms away from both). `vouch eval
/// videos` reports it: over the 17 genuine talking-real clips (people the sync map never saw),
/// 2601 null positions, 95th percentile 2.17 (talking-more's 8: 2.22; GRID's 3 s clips are too
/// short for a position clear on both sides). Not fitted to the genuine clips. Speech of the same
/// fixed grammar (GRID sentences on another GRID face) passes far more often: its rhythm and words
/// follow the mouth almost as well, which is why the phrase and voice checks stand beside this one.
pub const PASS_Z: f32 = 2.17;

/// How hard Active Speaker Detection is on sound that does not follow the mouth (dubs, replays
/// with other audio): a project chooses in its rule set (`sync_strength`). Each level is a
/// percentile of the circular-shift null (see [`PASS_Z`]), so it is the share of unrelated sound
/// that passes whatever the corpus; `docs/scoring.md` gives genuine and dub acceptance per level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncStrength {
    /// The null's 90th percentile (z 1.89): about 10 % of unrelated sound passes.
    Lenient,
    /// The null's 95th percentile ([`PASS_Z`], z 2.17): about 5 %; the default.
    #[default]
    Standard,
    /// The null's 99th percentile (z 2.71): about 1 %.
    Strict,
}

impl SyncStrength {
    /// Every level, weakest first.
    pub const ALL: [SyncStrength; 3] = [
        SyncStrength::Lenient,
        SyncStrength::Standard,
        SyncStrength::Strict,
    ];

    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncStrength::Lenient => "lenient",
            SyncStrength::Standard => "standard",
            SyncStrength::Strict => "strict",
        }
    }

    /// The level of a JSON spelling.
    pub fn from_name(name: &str) -> Option<SyncStrength> {
        SyncStrength::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The z at which the score is 0.5 (the 90th, 95th and 99th percentiles of the null over the
    /// genuine talking-real clips: 1.89, 2.17, 2.71).
    pub fn pass_z(self) -> f32 {
        match self {
            SyncStrength::Lenient => 1.89,
            SyncStrength::Standard => PASS_Z,
            SyncStrength::Strict => 2.71,
        }
    }
}

/// Slope of the logistic map from z to score (0.05 and 0.95 two null standard deviations either
/// side of the threshold).
const SLOPE: f32 = 1.5;

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
    /// The evidence the score is mapped from: z, the correlation's distance above its null in
    /// null standard deviations (see the module documentation). The name is kept from the
    /// first-formant contrast it replaced.
    pub contrast: f32,
    /// Correlation of the lips seen and predicted at the lag of the best z, -1..1.
    pub correlation: f32,
    /// Lag of that correlation, ms (positive: the sound comes after the mouth).
    pub lag_ms: i64,
}

/// Runs the check on a clip's signals at the default strength.
pub fn check(signals: &Signals) -> SpeakerCheck {
    check_at(signals, SyncStrength::Standard)
}

/// Runs the check on a clip's signals at a project's strength.
pub fn check_at(signals: &Signals, strength: SyncStrength) -> SpeakerCheck {
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
    let Some(sync) = audio_visual_sync(signals) else {
        // Too short to judge, or a signal that never changes (a still mouth, a silent track).
        return failed(if signals.lips.len() < MIN_STEPS {
            SpeakerCode::NoSpeech
        } else {
            SpeakerCode::NotSpeaking
        });
    };
    let score = logistic(sync.z, strength.pass_z(), SLOPE);
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
    /// The correlation at that lag.
    pub correlation: f32,
    /// Its lag, ms (positive: the sound comes after the mouth).
    pub lag_ms: i64,
    /// Mean of the correlation over the circularly shifted sound.
    pub null_mean: f32,
}

/// The z of the lips' correlation with the lips the sound predicts ([`super::sync`]), `lips[i]`
/// against the prediction at `i + lag` (same grid; the sound is cut or padded with silence to the
/// lips' length). `None` when the clip is too short for the null or either signal never changes.
pub fn audio_visual_sync(signals: &Signals) -> Option<Synchrony> {
    let cca = aligned(signals)?;
    let null = null_shifts(cca.len())?;
    let values: Vec<[f64; VIEWS]> = null.iter().map(|&shift| cca.at_lag(shift)).collect();
    let moments = null_moments(&values)?;
    let (z, correlation, lag) = best_lag(&cca, 0, &moments);
    Some(Synchrony {
        z: z as f32,
        correlation: correlation as f32,
        lag_ms: lag * GRID_MS,
        null_mean: (moments.iter().map(|m| m.0).sum::<f64>() / VIEWS as f64) as f32,
    })
}

/// Each view's null mean and standard deviation; `None` when a view's null does not vary.
fn null_moments(values: &[[f64; VIEWS]]) -> Option<[(f64, f64); VIEWS]> {
    let moments: Vec<(f64, f64)> = (0..VIEWS)
        .map(|v| mean_sd(&values.iter().map(|row| row[v]).collect::<Vec<_>>()))
        .collect::<Option<_>>()?;
    moments.try_into().ok()
}

/// The statistic of [`audio_visual_sync`] where the sound is unrelated to the mouth, for checking
/// [`PASS_Z`] on a clip: at every circular shift `p` of the sound that stays [`MIN_NULL_SHIFT_MS`]
/// clear of the lags searched, the best z over the lags `p + SYNC_LAG_STEPS` (with the same offset
/// prior), against the null shifts at least [`MIN_NULL_SHIFT_MS`] from those lags too (leave one
/// position out). The 95th percentile of these values over a set of clips is the false-accept
/// rule of [`PASS_Z`]; `vouch eval videos` reports it. Empty when the clip is too short.
pub fn null_statistics(signals: &Signals) -> Vec<f32> {
    let Some(cca) = aligned(signals) else {
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
            let values: Vec<[f64; VIEWS]> = null
                .iter()
                .filter(|&&shift| !(p + low - guard < shift && shift < p + high + guard))
                .map(|&shift| cca.at_lag(shift))
                .collect();
            if values.len() < MIN_NULL_SHIFTS {
                return None;
            }
            let moments = null_moments(&values)?;
            Some(best_lag(&cca, p, &moments).0 as f32)
        })
        .collect()
}

/// The shipped sync map's seen and predicted lips for a clip ([`super::sync`]). `None` when the
/// clip is too short for the null, the map cannot be read, or a signal never changes.
fn aligned(signals: &Signals) -> Option<Aligned> {
    if signals.lips.len() < MIN_STEPS {
        return None;
    }
    Aligned::new(SyncMap::shipped().ok()?, signals)
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
/// offset prior: (z, correlation, lag relative to `centre`). At each lag, z and the correlation
/// are the means over the views, each view's z against its own null.
fn best_lag(cca: &Aligned, centre: i64, moments: &[(f64, f64); VIEWS]) -> (f64, f64, i64) {
    SYNC_LAG_STEPS
        .map(|lag| {
            let correlations = cca.at_lag(centre + lag);
            let penalty = if CORE_LAG_STEPS.contains(&lag) {
                0.0
            } else {
                OFFSET_PENALTY_Z
            };
            let z = correlations
                .iter()
                .zip(moments)
                .map(|(c, (mean, sd))| (c - mean) / sd)
                .sum::<f64>()
                / VIEWS as f64;
            let correlation = correlations.iter().sum::<f64>() / VIEWS as f64;
            (z - penalty, correlation, lag)
        })
        .fold(
            (f64::MIN, 0.0, 0),
            |best, v| if v.0 > best.0 { v } else { best },
        )
}

#[cfg(test)]
mod tests {
    use super::super::sync::SOUND_FEATURES;
    use super::super::{LIP_DISTANCES, MEL_BANDS};
    use super::*;
    use crate::speech::phonemes::VISEMES;

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

    /// A made-up sound: smooth random mel bands and viseme probabilities, `n` steps.
    fn sound(seed: u64, n: usize) -> (Vec<[f32; MEL_BANDS]>, Vec<[f32; VISEMES]>) {
        let raw = noise(seed, (n + 2) * SOUND_FEATURES);
        let at = |i: usize, k: usize| {
            (raw[i * SOUND_FEATURES + k]
                + raw[(i + 1) * SOUND_FEATURES + k]
                + raw[(i + 2) * SOUND_FEATURES + k])
                / 3.0
        };
        let mel = (0..n)
            .map(|i| std::array::from_fn(|k| -0.5 + 0.4 * at(i, k)))
            .collect();
        let visemes = (0..n)
            .map(|i| {
                let row: [f32; VISEMES] =
                    std::array::from_fn(|k| (3.0 * at(i, MEL_BANDS + k)).exp());
                let total: f32 = row.iter().sum();
                row.map(|v| v / total)
            })
            .collect();
        (mel, visemes)
    }

    /// Signals whose lips move as the shipped map's raw view predicts from `own` (plus landmark
    /// jitter),
    /// heard with the sound `heard`.
    fn signals(
        own: &(Vec<[f32; MEL_BANDS]>, Vec<[f32; VISEMES]>),
        heard: &(Vec<[f32; MEL_BANDS]>, Vec<[f32; VISEMES]>),
        seed: u64,
    ) -> Signals {
        let map = SyncMap::shipped().expect("map");
        let [predicted, _] = map.predict(&own.0, &own.1);
        let jitter = noise(seed, predicted.len() * LIP_DISTANCES);
        let lips = predicted
            .iter()
            .enumerate()
            .map(|(i, row)| {
                std::array::from_fn(|k| {
                    0.1 + 0.01 * row[k] as f32 + 0.002 * jitter[i * LIP_DISTANCES + k]
                })
            })
            .collect();
        Signals {
            face_coverage: 1.0,
            speech_seconds: 2.0,
            lips,
            speech_mel: heard.0.clone(),
            visemes: heard.1.clone(),
            ..Signals::default()
        }
    }

    /// `sound` delayed by `steps` (the first steps repeat the first row).
    fn delayed(
        sound: &(Vec<[f32; MEL_BANDS]>, Vec<[f32; VISEMES]>),
        steps: usize,
    ) -> (Vec<[f32; MEL_BANDS]>, Vec<[f32; VISEMES]>) {
        let n = sound.0.len();
        let at = |i: usize| i.saturating_sub(steps);
        (
            (0..n).map(|i| sound.0[at(i)]).collect(),
            (0..n).map(|i| sound.1[at(i)]).collect(),
        )
    }

    #[test]
    fn a_mouth_and_its_own_sound_stand_far_above_the_null() {
        let own = sound(7, 150);
        let sync = audio_visual_sync(&signals(&own, &own, 11)).unwrap();
        assert!(sync.z > 5.0 && sync.lag_ms == 0, "{sync:?}");
        let late = audio_visual_sync(&signals(&own, &delayed(&own, 2), 11)).unwrap();
        assert!(late.z > 5.0 && late.lag_ms == 80, "{late:?}");
    }

    #[test]
    fn a_shifted_or_unrelated_sound_does_not() {
        let own = sound(7, 150);
        // Circularly shifted by a second: the right sound at the wrong time.
        let shift = |rows: &[[f32; MEL_BANDS]]| -> Vec<[f32; MEL_BANDS]> {
            rows.iter()
                .cycle()
                .skip(25)
                .take(rows.len())
                .copied()
                .collect()
        };
        let shifted_visemes: Vec<[f32; VISEMES]> = own
            .1
            .iter()
            .cycle()
            .skip(25)
            .take(own.1.len())
            .copied()
            .collect();
        let shifted = (shift(&own.0), shifted_visemes);
        let shifted = audio_visual_sync(&signals(&own, &shifted, 11)).unwrap();
        assert!(shifted.z < PASS_Z, "{shifted:?}");
        // Other sounds of the same kind: within chance.
        let mut above = 0;
        for seed in 0..20 {
            let other = sound(100 + seed, 150);
            let z = audio_visual_sync(&signals(&own, &other, 11)).unwrap().z;
            assert!(z < 4.5, "seed {seed}: {z}");
            above += usize::from(z >= PASS_Z);
        }
        assert!(above <= 2, "{above} of 20 unrelated sounds pass");
    }

    #[test]
    fn the_null_statistic_stays_under_the_threshold_for_most_shifts() {
        let own = sound(7, 150);
        let whole = signals(&own, &own, 11);
        let null = null_statistics(&whole);
        // Every shift whose lags stay 600 ms clear of those searched.
        assert_eq!(null.len(), 150 - 2 * (10 + 15) + 1);
        let above = null.iter().filter(|&&z| z >= PASS_Z).count();
        // Made-up sound smoothed over three steps is more alike from shift to shift than
        // speech, so its null is wider than real clips' 5 % (about a fifth at z 2.17): most
        // positions still stay under, and none comes near the sound at its own place.
        assert!(
            above * 4 <= null.len(),
            "{above} of {} null positions pass",
            null.len()
        );
        let own_z = audio_visual_sync(&whole).unwrap().z;
        let highest = null.iter().copied().fold(f32::MIN, f32::max);
        assert!(highest + 2.0 < own_z, "null up to {highest}, own {own_z}");
        let short = sound(7, 30);
        assert!(null_statistics(&signals(&short, &short, 11)).is_empty());
    }

    #[test]
    fn degenerate_signals_are_not_scored_and_do_not_panic() {
        let own = sound(7, 150);
        let mut signals = signals(&own, &own, 11);
        let lips = signals.lips.clone();
        let silent = (vec![[0.0; MEL_BANDS]; 150], {
            let mut blank = [0.0; VISEMES];
            blank[VISEMES - 1] = 1.0;
            vec![blank; 150]
        });
        signals.lips = vec![[0.1; LIP_DISTANCES]; 150];
        assert!(audio_visual_sync(&signals).is_none());
        let still = check(&signals);
        assert_eq!((still.code, still.score), (SpeakerCode::NotSpeaking, 0.0));
        signals.lips = lips[..20].to_vec();
        assert!(audio_visual_sync(&signals).is_none());
        assert_eq!(check(&signals).code, SpeakerCode::NoSpeech);
        signals.lips = lips.clone();
        let (mel, visemes) = (signals.speech_mel.clone(), signals.visemes.clone());
        (signals.speech_mel, signals.visemes) = silent;
        // Silence predicts a still mouth but for the clip's edges (the smoothing reads zeros
        // beyond them): never a pass.
        assert!(audio_visual_sync(&signals).is_none_or(|sync| sync.z < PASS_Z));
        assert_eq!(check(&signals).code, SpeakerCode::NotSpeaking);
        signals.speech_mel = mel[..60].to_vec();
        assert!(audio_visual_sync(&signals).is_none(), "lengths differ");
        (signals.speech_mel, signals.visemes) = (mel, visemes);
        let speaking = check(&signals);
        assert_eq!(speaking.code, SpeakerCode::Speaking);
        assert!(
            speaking.score > 0.9 && speaking.contrast > PASS_Z,
            "{speaking:?}"
        );
        assert!(audio_visual_sync(&Signals::default()).is_none());
    }

    #[test]
    fn a_project_s_strength_moves_the_threshold_on_the_same_evidence() {
        let own = sound(7, 150);
        let other = sound(300, 150);
        // The own sound mixed with another clip's: evidence from a match down to chance.
        let mix = |w: f32| -> (Vec<[f32; MEL_BANDS]>, Vec<[f32; VISEMES]>) {
            (
                own.0
                    .iter()
                    .zip(&other.0)
                    .map(|(a, b)| std::array::from_fn(|k| w * a[k] + (1.0 - w) * b[k]))
                    .collect(),
                own.1
                    .iter()
                    .zip(&other.1)
                    .map(|(a, b)| std::array::from_fn(|k| w * a[k] + (1.0 - w) * b[k]))
                    .collect(),
            )
        };
        let mut between = 0;
        for w in [1.0, 0.5, 0.3, 0.2, 0.17, 0.15, 0.13, 0.1, 0.0] {
            let signals = signals(&own, &mix(w), 11);
            let z = audio_visual_sync(&signals).unwrap().z;
            let decisions: Vec<bool> = SyncStrength::ALL
                .iter()
                .map(|&strength| {
                    let check = check_at(&signals, strength);
                    assert_eq!(
                        check.contrast, z,
                        "the evidence does not depend on the strength"
                    );
                    check.code == SpeakerCode::Speaking
                })
                .collect();
            for (strength, speaking) in SyncStrength::ALL.iter().zip(&decisions) {
                assert_eq!(*speaking, z >= strength.pass_z(), "{strength:?} at z {z}");
            }
            between += usize::from(decisions.first() != decisions.last());
        }
        assert!(between > 0, "some evidence passes lenient and fails strict");
        assert_eq!(SyncStrength::default(), SyncStrength::Standard);
        assert_eq!(SyncStrength::Standard.pass_z(), PASS_Z);
        assert_eq!(
            SyncStrength::from_name("strict"),
            Some(SyncStrength::Strict)
        );
        assert_eq!(SyncStrength::from_name("Strict"), None);
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
