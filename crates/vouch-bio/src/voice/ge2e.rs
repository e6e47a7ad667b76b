//! Resemblyzer's GE2E speaker encoder (2019), Voice Recognition's model before CAM++: kept so
//! `vouch eval voices --model ge2e` can measure it beside the shipped model (`docs/voice.md`). The
//! engine does not load it. [`Ge2e::embed`] follows Resemblyzer's `preprocess_wav` +
//! `embed_utterance` on speech already cut by the caller.

use std::path::Path;

use rayon::prelude::*;

use super::mel::{MelFrontEnd, HOP, N_MELS};
use crate::infer::{Model, ModelError, SPEAKER_EMBEDDER_GE2E};

/// The model id GE2E templates were stored under.
pub const MODEL_ID: &str = "resemblyzer-ge2e+silero-vad6";
/// The threshold Voice Recognition shipped with GE2E (cosine distance; FMR 1e-3 on the
/// development pairs), for evaluations that compare the two models.
pub const SHIPPED_THRESHOLD: f32 = 0.25;

/// Values in a GE2E embedding.
pub const GE2E_SIZE: usize = 256;
/// Mel frames per encoder window (1.6 s).
const WINDOW_FRAMES: usize = 160;
/// Frames between windows: round((16000 / 1.3) / 160).
const WINDOW_STEP: usize = 77;
/// The last window is dropped when it covers less than this share of audio.
const MIN_COVERAGE: f64 = 0.75;

/// The GE2E encoder and its mel front end.
#[derive(Debug)]
pub struct Ge2e {
    encoder: Model,
    mel: MelFrontEnd,
}

/// Encoder windows `[start, start + 160)` in mel frames for an utterance of `samples` samples
/// (Resemblyzer's `compute_partial_slices(n, rate=1.3, min_coverage=0.75)`).
pub fn window_starts(samples: usize) -> Vec<usize> {
    let frames = (samples + 1).div_ceil(HOP);
    let steps = (frames + WINDOW_STEP + 1)
        .saturating_sub(WINDOW_FRAMES)
        .max(1);
    let mut starts: Vec<usize> = (0..steps).step_by(WINDOW_STEP).collect();
    if starts.len() > 1 {
        let last_start = starts[starts.len() - 1] * HOP;
        let coverage = (samples as f64 - last_start as f64) / (WINDOW_FRAMES * HOP) as f64;
        if coverage < MIN_COVERAGE {
            starts.pop();
        }
    }
    starts
}

/// Scales quiet audio up to an RMS of -30 dBFS (loud audio is left as it is), as Resemblyzer's
/// `normalize_volume(wav, -30, increase_only=True)`; silence stays silence.
pub fn normalize_volume(wav: &mut [f32]) {
    if wav.is_empty() {
        return;
    }
    let mean_square = wav
        .iter()
        .map(|&s| f64::from(s * 32767.0).powi(2))
        .sum::<f64>()
        / wav.len() as f64;
    let rms = mean_square.sqrt();
    if rms <= 0.0 {
        return;
    }
    let change_db = -30.0 - 20.0 * (rms / 32767.0).log10();
    if change_db < 0.0 {
        return;
    }
    let gain = 10f64.powf(change_db / 20.0) as f32;
    for s in wav {
        *s *= gain;
    }
}

impl Ge2e {
    /// Loads and checks the encoder from `dir`.
    pub fn load(dir: &Path) -> Result<Ge2e, ModelError> {
        Ok(Ge2e {
            encoder: Model::load(dir, SPEAKER_EMBEDDER_GE2E)?,
            mel: MelFrontEnd::new(),
        })
    }

    /// The unit embedding of 16 kHz speech: volume normalised as Resemblyzer does, then
    /// [`Self::embed_utterance`].
    pub fn embed(&self, speech: &[f32]) -> Result<[f32; GE2E_SIZE], ModelError> {
        let mut audio = speech.to_vec();
        normalize_volume(&mut audio);
        self.embed_utterance(&audio)
    }

    /// Resemblyzer's `embed_utterance` of already preprocessed 16 kHz audio: 1.6 s windows every
    /// 0.77 s, each embedded, averaged and L2-normalised.
    pub fn embed_utterance(&self, wav: &[f32]) -> Result<[f32; GE2E_SIZE], ModelError> {
        let starts = window_starts(wav.len());
        let needed = (starts.last().copied().unwrap_or(0) + WINDOW_FRAMES) * HOP;
        let mut padded;
        let audio = if needed >= wav.len() {
            padded = wav.to_vec();
            padded.resize(needed, 0.0);
            &padded[..]
        } else {
            wav
        };
        let mel = self.mel.power_mel(audio);
        // Windows are independent: they run in parallel on the caller's rayon pool, and are summed
        // in order afterwards so the result does not depend on the thread count.
        let embeddings: Vec<Vec<f32>> = starts
            .par_iter()
            .map(|&start| {
                let frames =
                    mel.get(start..start + WINDOW_FRAMES)
                        .ok_or_else(|| ModelError::Runtime {
                            file: SPEAKER_EMBEDDER_GE2E.file,
                            detail: "the utterance is shorter than its windows".into(),
                        })?;
                let window: Vec<f32> = frames.iter().flatten().copied().collect();
                debug_assert_eq!(window.len(), WINDOW_FRAMES * N_MELS);
                self.encoder
                    .run(&[&window])?
                    .into_iter()
                    .next()
                    .filter(|e| e.len() == GE2E_SIZE)
                    .ok_or_else(|| ModelError::Runtime {
                        file: SPEAKER_EMBEDDER_GE2E.file,
                        detail: "the embedding is not 256 values".into(),
                    })
            })
            .collect::<Result<_, _>>()?;
        let mut sum = [0f32; GE2E_SIZE];
        for embedding in &embeddings {
            for (s, e) in sum.iter_mut().zip(embedding) {
                *s += e;
            }
        }
        let count = starts.len() as f32;
        for s in &mut sum {
            *s /= count;
        }
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            for s in &mut sum {
                *s /= norm;
            }
        }
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::reference_f32;

    #[test]
    fn windows_follow_resemblyzer() {
        // The reference utterance: 69120 samples -> windows at 0, 77, 154, 231, 308.
        assert_eq!(window_starts(69_120), [0, 77, 154, 231, 308]);
        // Shorter than one window: still one.
        assert_eq!(window_starts(3_000), [0]);
        assert_eq!(window_starts(0), [0]);
    }

    #[test]
    fn utterance_embedding_matches_resemblyzer() {
        let dir = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        let models = Ge2e::load(&dir).expect("models");
        let wav = reference_f32("resemblyzer_ge2e/preprocessed.f32");
        let got = models.embed_utterance(&wav).expect("embedding");
        let expected = reference_f32("resemblyzer_ge2e/embedding.f32");
        let worst = got
            .iter()
            .zip(&expected)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-4, "max diff {worst}");
    }

    #[test]
    fn volume_normalisation_only_raises_quiet_audio() {
        let mut quiet = vec![0.001f32; 1000];
        normalize_volume(&mut quiet);
        // -30 dBFS RMS = 0.0316 of full scale (32767 / 32767).
        assert!((quiet[0] - 0.031_62).abs() < 1e-4, "{}", quiet[0]);
        let mut loud = vec![0.5f32; 10];
        normalize_volume(&mut loud);
        assert_eq!(loud[0], 0.5);
        let mut silent = vec![0.0f32; 10];
        normalize_volume(&mut silent);
        assert!(silent.iter().all(|s| *s == 0.0));
    }
}
