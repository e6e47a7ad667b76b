//! Active Speaker Detection: does the visible mouth move with the speech? The mouth-opening signal
//! is correlated with the level of the sound's first-formant band (300-1000 Hz, which rises as the
//! mouth opens) at every lag up to [`CONTEXT_MS`] either way. The evidence is how much the
//! correlation near zero lag (within [`SYNC_MS`]) stands above the median over all lags: speech in
//! general has the same slow rhythm of words and pauses, so only a peak at the right moment shows
//! that this mouth made this sound (the same idea as SyncNet's offset confidence). The contrast is
//! mapped to a score in 0..1 that is 0.5 at [`PASS_CONTRAST`].

use super::{logistic, pearson, Signals, GRID_MS};

/// Lags within this of zero count as in sync, ms (one grid step: lips lead or trail the sound by
/// about a frame).
pub const SYNC_MS: i64 = 40;

/// Lags up to this either way give the baseline correlation, ms.
pub const CONTEXT_MS: i64 = 320;

/// Contrast at which the score is 0.5 (the pass threshold of the default rules). Chosen by
/// `vouch eval videos` on real talking heads against the same videos with other clips' audio.
pub const PASS_CONTRAST: f32 = 0.14;

/// Slope of the logistic map from contrast to score.
const SLOPE: f32 = 30.0;

/// Audio levels more than this far under the clip's loudest are treated as silence, so that
/// background hiss does not count as sound.
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
    /// Correlation near zero lag minus the median correlation over all lags.
    pub contrast: f32,
    /// Best mouth-to-sound correlation near zero lag.
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
    let Some(sync) = synchrony(&signals.mouth, &signals.band_db) else {
        return failed(SpeakerCode::NoFace);
    };
    let score = logistic(sync.contrast, PASS_CONTRAST, SLOPE);
    SpeakerCheck {
        code: if score >= 0.5 {
            SpeakerCode::Speaking
        } else {
            SpeakerCode::NotSpeaking
        },
        score,
        contrast: sync.contrast,
        correlation: sync.correlation,
        lag_ms: sync.lag_ms,
    }
}

/// How well a mouth signal and a sound level line up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Synchrony {
    /// Best correlation within [`SYNC_MS`] minus the median over [`CONTEXT_MS`].
    pub contrast: f32,
    /// Best correlation within [`SYNC_MS`].
    pub correlation: f32,
    /// Its lag, ms.
    pub lag_ms: i64,
}

/// Correlations of `mouth[i]` with `level[i + lag]`; `None` when the clip is too short for them.
pub fn synchrony(mouth: &[f32], level_db: &[f32]) -> Option<Synchrony> {
    let loudest = level_db.iter().copied().fold(f32::MIN, f32::max);
    let level: Vec<f32> = level_db
        .iter()
        .map(|&db| db.max(loudest - LEVEL_RANGE_DB))
        .collect();
    let n = mouth.len().min(level.len()) as i64;
    let (sync, context) = (SYNC_MS / GRID_MS, CONTEXT_MS / GRID_MS);
    if n < 2 * context + 10 {
        return None;
    }
    let mut all = Vec::new();
    let mut best = (f32::MIN, 0);
    for lag in -context..=context {
        let (start, end) = (0.max(-lag), n.min(n - lag));
        let a = &mouth[start as usize..end as usize];
        let b = &level[(start + lag) as usize..(end + lag) as usize];
        let r = pearson(a, b);
        all.push(r);
        if lag.abs() <= sync && r > best.0 {
            best = (r, lag * GRID_MS);
        }
    }
    all.sort_by(f32::total_cmp);
    let median = all[all.len() / 2];
    Some(Synchrony {
        contrast: best.0 - median,
        correlation: best.0,
        lag_ms: best.1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synchronous_sound_stands_out_and_a_shifted_one_does_not() {
        // An irregular "syllable" pattern, so that shifted copies do not line up by chance.
        let mouth: Vec<f32> = (0..120)
            .map(|i| ((i as f32 * 0.9).sin() + (i as f32 * 0.23).sin()).max(0.0))
            .collect();
        let level: Vec<f32> = mouth.iter().map(|m| -40.0 + 20.0 * m).collect();
        let same = synchrony(&mouth, &level).unwrap();
        assert!(same.contrast > 0.5 && same.lag_ms == 0, "{same:?}");
        let late: Vec<f32> = level[..]
            .iter()
            .cycle()
            .skip(30)
            .take(120)
            .copied()
            .collect();
        let shifted = synchrony(&mouth, &late).unwrap();
        assert!(shifted.contrast < same.contrast - 0.3, "{shifted:?}");
        assert!(synchrony(&mouth[..10], &level[..10]).is_none());
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
