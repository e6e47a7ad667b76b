//! The voice pipeline: speech detection ([`vad`]), the Kaldi filterbank front end ([`fbank`]) and
//! the CAM++ speaker embedding of an utterance, each checked against the reference
//! implementation's own outputs (`models/reference/`); speech quality ([`quality`]) and templates
//! ([`template`]). [`ge2e`] keeps the previous model (Resemblyzer's GE2E) for comparison in
//! evaluations only.
//!
//! [`VoiceModels::analyze`]: Silero's speech segments, the speech joined, then CAM++ over 3 s
//! windows every 3 s plus one ending at the last sample (the converted model's fixed input; speech
//! shorter than 3 s is repeated to fill one window), each window's embedding scaled to unit length, their mean scaled to unit
//! length. Why these settings: `docs/voice.md` (measured with `vouch eval voices`).

pub mod fbank;
pub mod ge2e;
pub mod mel;
pub mod quality;
pub mod spoof;
pub mod template;
pub mod vad;

pub use self::quality::{SpeechQuality, SpeechReason};
pub use self::template::VoiceTemplate;

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::infer::{check_present, Lazy, Model, ModelError, SPEAKER_EMBEDDER, VOICE_ACTIVITY};

use self::fbank::KaldiFbank;
use self::vad::{speech_segments, Vad, VadParams};

/// Values in a speaker embedding (CAM++).
pub const EMBEDDING_SIZE: usize = 192;
/// Samples in one encoder window (3 s at 16 kHz: the converted model's fixed input).
pub const WINDOW_SAMPLES: usize = 48_000;
/// Samples between window starts (3 s: windows do not overlap, apart from the last one, which ends
/// at the last sample; overlapping by half measured the same EER at 1.5 times the cost).
pub const WINDOW_HOP: usize = 48_000;

/// The voice models: speech detection, loaded with them (small, needed by every clip with sound),
/// and the speaker embedder (CAM++, the slowest model to load: 0.7 s), loaded by the first
/// template.
#[derive(Debug)]
pub struct VoiceModels {
    vad: Vad,
    encoder: Lazy<Model>,
    dir: PathBuf,
    fbank: KaldiFbank,
}

/// Window starts over `samples` samples (at least [`WINDOW_SAMPLES`]): every [`WINDOW_HOP`], plus
/// one ending at the last sample so no speech at the end is left out.
pub fn window_starts(samples: usize) -> Vec<usize> {
    let last = samples.saturating_sub(WINDOW_SAMPLES);
    let mut starts: Vec<usize> = (0..=last).step_by(WINDOW_HOP).collect();
    if starts.last() != Some(&last) {
        starts.push(last);
    }
    starts
}

/// `speech` repeated until it fills one window, when it is shorter (the model's input is fixed).
fn fill_window(speech: &[f32]) -> std::borrow::Cow<'_, [f32]> {
    if speech.len() >= WINDOW_SAMPLES || speech.is_empty() {
        return std::borrow::Cow::Borrowed(speech);
    }
    let mut filled = Vec::with_capacity(WINDOW_SAMPLES);
    while filled.len() < WINDOW_SAMPLES {
        let room = WINDOW_SAMPLES - filled.len();
        filled.extend_from_slice(&speech[..speech.len().min(room)]);
    }
    std::borrow::Cow::Owned(filled)
}

/// Scales `values` to unit length (a zero vector stays zero).
fn unit(values: &mut [f32]) {
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        values.iter_mut().for_each(|v| *v /= norm);
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

/// An utterance analysed: its template when it has speech, and its speech measures either way.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceAnalysis {
    /// The speaker template; `None` when no speech was found.
    pub template: Option<VoiceTemplate>,
    /// Speech measures and reasons.
    pub quality: SpeechQuality,
    /// The synthetic-speech detector's finding (when its holder runs it).
    pub synthetic: Option<spoof::SyntheticSpeech>,
}

impl From<VoiceResult> for VoiceAnalysis {
    fn from(voice: VoiceResult) -> Self {
        VoiceAnalysis {
            template: Some(voice.template),
            quality: voice.quality,
            synthetic: None,
        }
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
    /// Speaker template and speech quality of 16 kHz mono audio: Silero's speech segments, then
    /// [`Self::embed_speech`] of the speech they hold. Speech under
    /// [`quality::MIN_SPEECH_SECONDS`] still gives a template, with the reason
    /// `too_little_speech`.
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
        let speech: Vec<f32> = segments
            .iter()
            .flat_map(|s| pcm[s.start..s.end].iter().copied())
            .collect();
        Ok(VoiceTemplate::new(self.embed_speech(&speech)?))
    }

    /// Speech segments and speech quality alone, without the speaker template (for checks that
    /// need to know where speech is but must not compute biometric data).
    pub fn speech(&self, pcm: &[f32]) -> Result<(Vec<vad::Segment>, SpeechQuality), ModelError> {
        let mut audio = pcm.to_vec();
        ge2e::normalize_volume(&mut audio);
        let probs = self.vad.probabilities(&audio)?;
        let segments = speech_segments(&probs, audio.len(), &VadParams::default());
        let quality = SpeechQuality::measure(pcm, &segments);
        Ok((segments, quality))
    }

    /// Loads the speech detector from `dir` and checks that the speaker embedder is there; the
    /// embedder loads (and its sha256 is checked) with the first template, or [`Self::preload`].
    pub fn load(dir: &Path) -> Result<VoiceModels, ModelError> {
        check_present(dir, SPEAKER_EMBEDDER.file)?;
        Ok(VoiceModels {
            vad: Vad::new(Model::load(dir, VOICE_ACTIVITY)?),
            encoder: Lazy::default(),
            dir: dir.to_path_buf(),
            fbank: KaldiFbank::new(),
        })
    }

    /// Loads the speaker embedder now rather than with the first template.
    pub fn preload(&self) -> Result<(), ModelError> {
        self.encoder().map(drop)
    }

    fn encoder(&self) -> Result<&Model, ModelError> {
        self.encoder
            .get_or_load(|| Model::load(&self.dir, SPEAKER_EMBEDDER))
    }

    /// The speech detector.
    pub fn vad(&self) -> &Vad {
        &self.vad
    }

    /// The CAM++ embedding of 16 kHz speech (silences already cut): 3 s windows every 3 s plus one
    /// ending at the last sample, speech under 3 s repeated to fill one; each window's
    /// embedding scaled to unit length, their mean scaled to unit length. Empty speech gives the
    /// zero vector (at distance 1 from everything).
    pub fn embed_speech(&self, speech: &[f32]) -> Result<[f32; EMBEDDING_SIZE], ModelError> {
        let mut sum = [0f32; EMBEDDING_SIZE];
        if speech.is_empty() {
            return Ok(sum);
        }
        let encoder = self.encoder()?;
        let audio = fill_window(speech);
        // Windows are independent: they run in parallel on the caller's rayon pool, and are summed
        // in order afterwards so the result does not depend on the thread count.
        let embeddings: Vec<Vec<f32>> = window_starts(audio.len())
            .par_iter()
            .map(|&start| {
                let features: Vec<f32> = self
                    .fbank
                    .features(&audio[start..start + WINDOW_SAMPLES])
                    .into_iter()
                    .flatten()
                    .collect();
                let mut embedding = encoder
                    .run(&[&features])?
                    .into_iter()
                    .next()
                    .filter(|e| e.len() == EMBEDDING_SIZE)
                    .ok_or_else(|| ModelError::Runtime {
                        file: SPEAKER_EMBEDDER.file,
                        detail: "the embedding is not 192 values".into(),
                    })?;
                unit(&mut embedding);
                Ok(embedding)
            })
            .collect::<Result<_, ModelError>>()?;
        for embedding in &embeddings {
            for (s, e) in sum.iter_mut().zip(embedding) {
                *s += e;
            }
        }
        unit(&mut sum);
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::{max_abs_diff, reference_f32};

    fn models() -> VoiceModels {
        let dir = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        VoiceModels::load(&dir).expect("models")
    }

    #[test]
    fn windows_cover_the_speech() {
        assert_eq!(window_starts(48_000), [0]);
        assert_eq!(window_starts(72_000), [0, 24_000]);
        // 5 s: 0, and one ending at 5 s.
        assert_eq!(window_starts(80_000), [0, 32_000]);
        assert_eq!(window_starts(96_000), [0, 48_000]);
        assert_eq!(window_starts(120_000), [0, 48_000, 72_000]);
        // Short speech is repeated to one full window.
        let short: Vec<f32> = (0..20_000).map(|i| i as f32).collect();
        let filled = fill_window(&short);
        assert_eq!(filled.len(), WINDOW_SAMPLES);
        assert_eq!(filled[20_000], 0.0);
        assert_eq!(filled[47_999], 7_999.0);
        assert_eq!(fill_window(&[]).len(), 0);
    }

    #[test]
    fn one_window_is_the_reference_embedding_scaled() {
        // The reference waveform is one 3 s window: the pipeline's embedding is PyTorch's, unit
        // length.
        let models = models();
        let got = models
            .embed_speech(&reference_f32("campplus_sv_zh_en_3s/input.f32"))
            .expect("embedding");
        let mut expected = reference_f32("campplus_sv_zh_en_3s/embedding.f32");
        unit(&mut expected);
        let diff = max_abs_diff(&got, &expected);
        assert!(diff <= 1e-4, "max diff {diff}");
        assert_eq!(
            models.embed_speech(&[]).expect("empty"),
            [0.0; EMBEDDING_SIZE]
        );
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
}
