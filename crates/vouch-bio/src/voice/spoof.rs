//! Synthetic and converted speech: the AASIST detector (`infer::AASIST`, `models/aasist-notes.md`)
//! on one 4 s window of raw 16 kHz audio, as the official evaluation feeds it, and the verdict
//! Voice Recognition reports when the engine's `voice_spoof_check` option is on.
//!
//! The verdict has an `inconclusive` band because the detector generalises poorly (the study in
//! `models/aasist-notes.md`): a threshold that keeps 95 % of LibriSpeech keeps only 35 % of the
//! talking-real clips' genuine audio. So only a score below every genuine development recording
//! of at least a second of speech is `spoof`; a score that LibriSpeech reaches 95 % of the time
//! is `bona_fide`; between the two the detector cannot say.

use std::path::Path;

use crate::infer::{Model, ModelError, AASIST};

/// Samples in AASIST's input window (4.0375 s at 16 kHz).
pub const WINDOW_SAMPLES: usize = 64_600;

/// The official evaluation's input (`data_utils.pad`): the first [`WINDOW_SAMPLES`] samples of a
/// longer clip; a shorter one tiled (repeated whole, then cut). Samples are not normalised: the
/// score depends on the level (`models/aasist-notes.md`). Empty audio gives silence.
pub fn window(clip: &[f32]) -> Vec<f32> {
    if clip.is_empty() {
        return vec![0.0; WINDOW_SAMPLES];
    }
    clip.iter().copied().cycle().take(WINDOW_SAMPLES).collect()
}

/// Under this bona-fide logit the audio is judged synthetic: half a logit under the lowest genuine
/// development recording with a second of speech or more, as the engine decodes it (a
/// talking-real clip at -5.47; LibriSpeech's lowest is -3.21, the FSDD phrases' -4.42;
/// `vouch eval spoof`), so that one more unlucky recording does not cross it.
pub const SPOOF_BELOW: f32 = -6.0;
/// From this bona-fide logit up the audio is judged genuine: 95 % of the LibriSpeech development
/// utterances score at least this (-1.54, rounded up).
pub const BONA_FIDE_FROM: f32 = -1.5;

/// What the detector concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpoofVerdict {
    /// Scored like genuine read speech.
    BonaFide,
    /// Between the two thresholds: genuine audio of other kinds (phone-band, video soundtracks)
    /// and many synthetic voices both land here.
    Inconclusive,
    /// Below every genuine development recording: synthetic or converted speech.
    Spoof,
}

impl SpoofVerdict {
    /// The JSON name: `bona_fide`, `inconclusive`, `spoof`.
    pub fn as_str(self) -> &'static str {
        match self {
            SpoofVerdict::BonaFide => "bona_fide",
            SpoofVerdict::Inconclusive => "inconclusive",
            SpoofVerdict::Spoof => "spoof",
        }
    }

    /// The verdict of a bona-fide logit (NaN is inconclusive).
    pub fn of(score: f32) -> SpoofVerdict {
        if score < SPOOF_BELOW {
            SpoofVerdict::Spoof
        } else if score >= BONA_FIDE_FROM {
            SpoofVerdict::BonaFide
        } else {
            SpoofVerdict::Inconclusive
        }
    }
}

/// The detector's score and verdict for one recording.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticSpeech {
    /// The bona-fide logit (higher is more likely genuine; uncalibrated).
    pub score: f32,
    /// [`SpoofVerdict::of`] the score.
    pub verdict: SpoofVerdict,
}

/// The AASIST detector, loaded once.
#[derive(Debug)]
pub struct SpoofDetector {
    model: Model,
}

impl SpoofDetector {
    /// Loads and checks the model from `dir`.
    pub fn load(dir: &Path) -> Result<SpoofDetector, ModelError> {
        Ok(SpoofDetector {
            model: Model::load(dir, AASIST)?,
        })
    }

    /// The bona-fide logit of 16 kHz mono audio in [-1, 1] (the official score: higher is more
    /// likely genuine; uncalibrated), from its first window.
    pub fn score(&self, pcm: &[f32]) -> Result<f32, ModelError> {
        let output = self.model.run(&[&window(pcm)])?;
        output
            .first()
            .and_then(|logits| logits.get(1).copied())
            .ok_or_else(|| ModelError::Runtime {
                file: AASIST.file,
                detail: "the model did not give two logits".into(),
            })
    }

    /// The score and its verdict.
    pub fn check(&self, pcm: &[f32]) -> Result<SyntheticSpeech, ModelError> {
        let score = self.score(pcm)?;
        Ok(SyntheticSpeech {
            score,
            verdict: SpoofVerdict::of(score),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::{max_abs_diff, reference_f32};

    #[test]
    fn the_window_is_the_official_pad() {
        // The reference clip (shorter than a window) tiled as `data_utils.pad` does.
        let clip = reference_f32("aasist/clip.f32");
        assert!(clip.len() < WINDOW_SAMPLES);
        assert_eq!(window(&clip), reference_f32("aasist/input.f32"));
        let long: Vec<f32> = (0..70_000).map(|i| i as f32).collect();
        assert_eq!(window(&long), long[..WINDOW_SAMPLES]);
        assert_eq!(window(&[]), vec![0.0; WINDOW_SAMPLES]);
    }

    #[test]
    fn verdicts_follow_the_thresholds() {
        assert_eq!(SpoofVerdict::of(-7.1), SpoofVerdict::Spoof);
        assert_eq!(SpoofVerdict::of(-5.9), SpoofVerdict::Inconclusive);
        assert_eq!(SpoofVerdict::of(SPOOF_BELOW), SpoofVerdict::Inconclusive);
        assert_eq!(SpoofVerdict::of(-2.45), SpoofVerdict::Inconclusive);
        assert_eq!(SpoofVerdict::of(BONA_FIDE_FROM), SpoofVerdict::BonaFide);
        assert_eq!(SpoofVerdict::of(f32::NAN), SpoofVerdict::Inconclusive);
        assert_eq!(SpoofVerdict::Spoof.as_str(), "spoof");
    }

    #[test]
    fn the_score_matches_pytorch() {
        let dir = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        let detector = SpoofDetector::load(&dir).expect("model");
        let expected = reference_f32("aasist/output.f32");
        let logits = detector
            .model
            .run(&[&reference_f32("aasist/input.f32")])
            .expect("run");
        let diff = max_abs_diff(&logits[0], &expected);
        assert!(diff <= 1e-3, "AASIST against PyTorch: max diff {diff}");
        let score = detector
            .score(&reference_f32("aasist/clip.f32"))
            .expect("score");
        assert!(
            (score - expected[1]).abs() <= 1e-3,
            "{score} vs {}",
            expected[1]
        );
    }
}
