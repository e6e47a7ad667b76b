//! Synthetic and converted speech: the AASIST detector (`infer::AASIST`, `models/aasist-notes.md`)
//! on one 4 s window of raw 16 kHz audio, as the official evaluation feeds it. Converted, checked
//! against PyTorch and measured (`models/aasist-notes.md`, study); not yet part of Voice
//! Recognition or the decision: on the development sets it rejects most genuine audio that is not
//! clean read speech (8 kHz phrases, video soundtracks) at a threshold that keeps 95 % of
//! LibriSpeech, and it costs about 0.8 s per window in tract.

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
