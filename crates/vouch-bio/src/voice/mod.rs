//! The voice pipeline: speech detection ([`vad`]), the mel front end ([`mel`]) and the GE2E
//! speaker embedding of an utterance, each checked against the reference implementation's own
//! outputs (`models/reference/`); speech quality ([`quality`]) and templates ([`template`]).
//!
//! [`VoiceModels::analyze`] follows Resemblyzer's `preprocess_wav` + `embed_utterance`, except that
//! silences are cut with Silero's speech segments where Resemblyzer uses WebRTC's VAD.

pub mod fbank;
pub mod mel;
pub mod quality;
pub mod template;
pub mod vad;

pub use self::quality::{SpeechQuality, SpeechReason};
pub use self::template::VoiceTemplate;

use std::path::Path;

use rayon::prelude::*;

use crate::infer::{Model, ModelError, SPEAKER_EMBEDDER, VOICE_ACTIVITY};

use self::mel::{MelFrontEnd, HOP, N_MELS};
use self::vad::{speech_segments, Vad, VadParams};

/// Values in a speaker embedding.
pub const EMBEDDING_SIZE: usize = 256;
/// Mel frames per encoder window (1.6 s).
const WINDOW_FRAMES: usize = 160;
/// Frames between windows: round((16000 / 1.3) / 160).
const WINDOW_STEP: usize = 77;
/// The last window is dropped when it covers less than this share of audio.
const MIN_COVERAGE: f64 = 0.75;

/// The voice models, loaded once.
#[derive(Debug)]
pub struct VoiceModels {
    vad: Vad,
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

/// Why an utterance gave no embedding.
#[derive(Debug, Clone, PartialEq)]
pub enum VoiceError {
    /// Silero found no speech segment (silence, noise, or under 0.25 s of speech); the measures
    /// say which (`silence` or `no_speech`).
    NoSpeech(SpeechQuality),
    /// A model could not run.
    Model(ModelError),
}

impl std::fmt::Display for VoiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VoiceError::NoSpeech(quality) => match quality.reasons.first() {
                Some(SpeechReason::Silence) => f.write_str("the audio is silent"),
                _ => f.write_str("no speech found in the audio"),
            },
            VoiceError::Model(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for VoiceError {}

impl From<ModelError> for VoiceError {
    fn from(error: ModelError) -> Self {
        VoiceError::Model(error)
    }
}

/// An utterance's speaker template and its speech quality.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceResult {
    /// The speaker template (L2-normalised GE2E embedding).
    pub template: VoiceTemplate,
    /// Speech measures and reasons.
    pub quality: SpeechQuality,
    /// Speech segments (samples of the 16 kHz input).
    pub segments: Vec<vad::Segment>,
}

impl VoiceModels {
    /// Speaker template and speech quality of 16 kHz mono audio: volume normalised as Resemblyzer
    /// does, silences cut out with Silero's speech segments (where Resemblyzer uses WebRTC's VAD),
    /// then [`Self::embed_utterance`]. Speech under [`quality::MIN_SPEECH_SECONDS`] still gives a
    /// template, with the reason `too_little_speech`.
    pub fn analyze(&self, pcm: &[f32]) -> Result<VoiceResult, VoiceError> {
        let (segments, quality) = self.speech(pcm)?;
        if segments.is_empty() {
            return Err(VoiceError::NoSpeech(quality));
        }
        Ok(VoiceResult {
            template: self.template_of(pcm, &segments)?,
            quality,
            segments,
        })
    }

    /// The template of the speech in `segments` (non-empty, found by [`VoiceModels::speech`]) of
    /// `pcm`.
    pub fn template_of(
        &self,
        pcm: &[f32],
        segments: &[vad::Segment],
    ) -> Result<VoiceTemplate, ModelError> {
        let mut audio = pcm.to_vec();
        normalize_volume(&mut audio);
        let speech: Vec<f32> = segments
            .iter()
            .flat_map(|s| audio[s.start..s.end].iter().copied())
            .collect();
        Ok(VoiceTemplate::new(self.embed_utterance(&speech)?))
    }

    /// Speech segments and speech quality alone, without the speaker template (for checks that
    /// need to know where speech is but must not compute biometric data).
    pub fn speech(&self, pcm: &[f32]) -> Result<(Vec<vad::Segment>, SpeechQuality), ModelError> {
        let mut audio = pcm.to_vec();
        normalize_volume(&mut audio);
        let probs = self.vad.probabilities(&audio)?;
        let segments = speech_segments(&probs, audio.len(), &VadParams::default());
        let quality = SpeechQuality::measure(pcm, &segments);
        Ok((segments, quality))
    }

    /// Loads and checks the voice models from `dir`.
    pub fn load(dir: &Path) -> Result<VoiceModels, ModelError> {
        Ok(VoiceModels {
            vad: Vad::new(Model::load(dir, VOICE_ACTIVITY)?),
            encoder: Model::load(dir, SPEAKER_EMBEDDER)?,
            mel: MelFrontEnd::new(),
        })
    }

    /// The speech detector.
    pub fn vad(&self) -> &Vad {
        &self.vad
    }

    /// Resemblyzer's `embed_utterance` of already preprocessed 16 kHz audio: 1.6 s windows every
    /// 0.77 s, each embedded, averaged and L2-normalised.
    pub fn embed_utterance(&self, wav: &[f32]) -> Result<[f32; EMBEDDING_SIZE], ModelError> {
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
                            file: SPEAKER_EMBEDDER.file,
                            detail: "the utterance is shorter than its windows".into(),
                        })?;
                let window: Vec<f32> = frames.iter().flatten().copied().collect();
                debug_assert_eq!(window.len(), WINDOW_FRAMES * N_MELS);
                self.encoder
                    .run(&[&window])?
                    .into_iter()
                    .next()
                    .filter(|e| e.len() == EMBEDDING_SIZE)
                    .ok_or_else(|| ModelError::Runtime {
                        file: SPEAKER_EMBEDDER.file,
                        detail: "the embedding is not 256 values".into(),
                    })
            })
            .collect::<Result<_, _>>()?;
        let mut sum = [0f32; EMBEDDING_SIZE];
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
        let models = VoiceModels::load(&dir).expect("models");
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
    fn silence_and_noise_have_no_speech_and_speech_has_an_embedding() {
        let dir = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        let models = VoiceModels::load(&dir).expect("models");
        let reasons = |pcm: &[f32]| match models.analyze(pcm) {
            Err(VoiceError::NoSpeech(quality)) => quality.reasons,
            other => panic!("{other:?}"),
        };
        assert_eq!(reasons(&vec![0.0; 32_000]), [SpeechReason::Silence]);
        assert_eq!(reasons(&[]), [SpeechReason::Silence]);
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let noise: Vec<f32> = (0..48_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.02
            })
            .collect();
        assert_eq!(reasons(&noise), [SpeechReason::NoSpeech]);
        // The VAD reference signal: speech-like phrases from two synthetic voices.
        let speech = reference_f32("silero_vad_16k/input.f32");
        let voice = models.analyze(&speech).expect("speech");
        assert!(voice.quality.speech_seconds > 3.0, "{:?}", voice.quality);
        assert!(voice.quality.reasons.is_empty(), "{:?}", voice.quality);
        assert_eq!(voice.segments.len(), 4);
        let norm: f32 = voice
            .template
            .values()
            .iter()
            .map(|v| v * v)
            .sum::<f32>()
            .sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
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
