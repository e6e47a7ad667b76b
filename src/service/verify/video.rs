//! Clip analysis on the engine: process-video's one pass over a clip, written in
//! `bio::video::analysis` (pure: a face track and an audio pass in parallel, then Active Speaker
//! Detection and liveness), run here with the engine's models (each loaded on first use) on the
//! engine's pool, and the spoken-phrase check with the engine's recognisers. A video file is
//! analysed while it decodes ([`Analysis::file`]): memory stays bounded whatever its length or
//! picture size.

use crate::error::{Error, Result};
use crate::service::Engine;
use vouch_bio::infer::{ModelError, AASIST};
use vouch_bio::{
    analyze_clip, analyze_file, check_phrase, AnalysisError, AnalysisModels as Models, LentModels,
    Phrase, PhraseCheck, Recognizers, SpoofDetector, Visemes, WHISPER_BASE, WHISPER_TINY_EN,
};
use vouch_media::{open_video, Clip, DecodeLimits, DecodeOptions, FrameSampler, DEFAULT_MAX_SIDE};

pub(crate) use vouch_bio::speech_span;
pub use vouch_bio::VideoAnalysis;

/// Most frames per second the face track samples: enough for lip movement at syllable rate. A
/// frame is kept when it comes at least 1000 / 15 - 0.5 ms after the last one kept, by the file's
/// millisecond timestamps, so a 25 fps file gives 12.5 frames a second and a 30 fps file (frames
/// 33 or 34 ms apart) 10.
pub const TRACK_FPS: f32 = 15.0;

/// Longest clip process-video analyses, ms.
pub const MAX_CLIP_MS: i64 = 60_000;

/// How process-video decodes: [`TRACK_FPS`] frames per second with audio, at most a minute,
/// frames shrunk to at most [`DEFAULT_MAX_SIDE`] pixels.
pub fn decode_options() -> DecodeOptions {
    DecodeOptions {
        sampler: FrameSampler::MaxFps(TRACK_FPS),
        max_side: DEFAULT_MAX_SIDE,
        limits: DecodeLimits {
            max_duration_ms: MAX_CLIP_MS,
            ..DecodeLimits::default()
        },
        audio: true,
    }
}

pub(in crate::service) fn no_frames() -> Error {
    Error::InvalidArgument("the video has no frames".to_owned())
}

pub(in crate::service) fn model_error(error: ModelError) -> Error {
    Error::Model(error.to_string())
}

pub(in crate::service) fn bad_frame() -> Error {
    Error::InvalidArgument("a frame's size does not match its pixels".to_owned())
}

/// An analysis that failed, as the engine reports it.
fn analysis_error(error: AnalysisError) -> Error {
    match error {
        AnalysisError::NoFrames => no_frames(),
        AnalysisError::BadFrame => bad_frame(),
        AnalysisError::Media(error) => Error::Media(error),
        AnalysisError::Model(error) => model_error(error),
    }
}

/// The models the engine lends an analysis on demand: the sync model, the synthetic-speech
/// detector (engine option `voice_spoof_check`) and the phrase recognisers.
struct Lent<'e>(&'e Engine);

impl LentModels for Lent<'_> {
    fn visemes(&self, samples: &[f32]) -> std::result::Result<Visemes, ModelError> {
        self.0.visemes_of(samples)
    }

    fn spoof_detector(&self) -> std::result::Result<Option<&SpoofDetector>, ModelError> {
        self.0
            .process_video_spoof_check()
            .map_err(|error| ModelError::Runtime {
                file: AASIST.file,
                detail: error.to_string(),
            })
    }

    fn check_phrase(
        &self,
        speech: &[f32],
        phrase: Phrase<'_>,
    ) -> std::result::Result<PhraseCheck, ModelError> {
        self.0.analysis().spoken_phrase(speech, phrase)
    }
}

impl Engine {
    /// The speech span of a clip's whole audio, as the audio branch takes it (empty without
    /// speech).
    fn speech_of<'a>(&self, samples: &'a [f32]) -> Result<&'a [f32]> {
        let voices = self.voice_models()?;
        let (segments, _) = self
            .install(|| voices.speech(samples))
            .map_err(|error| Error::Model(error.to_string()))?;
        Ok(speech_span(&segments, samples.len()).map_or(&[][..], |(a, b)| &samples[a..b]))
    }
}

/// Clip analysis: process-video's one pass over a clip (face track, audio branch, lip sync,
/// liveness) and the spoken-phrase check ([`Engine::analysis`]).
#[derive(Debug, Clone, Copy)]
pub struct Analysis<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// Clip analysis: process-video's one pass over a clip (face track, audio branch, lip sync,
    /// liveness) and the spoken-phrase check.
    pub fn analysis(&self) -> Analysis<'_> {
        Analysis(self)
    }
}

impl Analysis<'_> {
    /// Decodes a video file and analyses it ([`Analysis::file`], with identity).
    pub fn video(&self, bytes: &[u8], phrase: Phrase<'_>) -> Result<VideoAnalysis> {
        let engine = self.0;
        engine.analysis().file(bytes, phrase, true)
    }

    /// Analyses a video file while it is decoded: every limit is checked first, then the audio is
    /// decoded, then the face track is built frame by frame as the video decodes ([`FaceTracker`])
    /// while the audio branch runs in parallel. No more than a chunk of frames is ever held, so
    /// memory does not grow with the clip's length or picture size. `identity` as in
    /// [`Analysis::clip`].
    pub fn file(&self, bytes: &[u8], phrase: Phrase<'_>, identity: bool) -> Result<VideoAnalysis> {
        let engine = self.0;
        let lent = Lent(engine);
        let models = Models {
            faces: engine.face_models()?,
            voices: engine.voice_models()?,
            lent: &lent,
        };
        engine.install(|| {
            let file = open_video(bytes, &decode_options())?;
            analyze_file(models, &file, phrase, identity).map_err(analysis_error)
        })
    }

    /// Analyses a decoded clip: the face track and the audio branch run in parallel. With
    /// `identity` false no face or voice template is computed (no authorization consent):
    /// liveness, active speaker and the phrase still run.
    pub fn clip(&self, clip: Clip, phrase: Phrase<'_>, identity: bool) -> Result<VideoAnalysis> {
        let engine = self.0;
        let lent = Lent(engine);
        let models = Models {
            faces: engine.face_models()?,
            voices: engine.voice_models()?,
            lent: &lent,
        };
        engine
            .install(|| analyze_clip(models, clip, phrase, identity))
            .map_err(analysis_error)
    }

    /// The spoken-phrase check of a clip's whole 16 kHz mono audio, as process-video runs it:
    /// speech detection first, then the check on the speech span.
    pub fn phrase_in_audio(&self, samples: &[f32], phrase: Phrase<'_>) -> Result<PhraseCheck> {
        let engine = self.0;
        let speech = engine.speech_of(samples)?;
        engine
            .analysis()
            .spoken_phrase(speech, phrase)
            .map_err(|error| Error::Model(error.to_string()))
    }

    /// The spoken-phrase check of 16 kHz mono speech (`unavailable` on an engine without models).
    pub fn spoken_phrase(
        &self,
        speech: &[f32],
        phrase: Phrase<'_>,
    ) -> std::result::Result<PhraseCheck, ModelError> {
        let engine = self.0;
        if engine.models_dir().is_none() {
            return Ok(PhraseCheck::unavailable("unavailable"));
        }
        // A recogniser that fails to load is a model error that names its file.
        let failed = |file: &'static str| {
            move |error: Error| ModelError::Runtime {
                file,
                detail: error.to_string(),
            }
        };
        let english = || {
            engine
                .english_recognizer()
                .map_err(failed(WHISPER_TINY_EN.decoder.file))
        };
        let multilingual = || {
            engine
                .multilingual_recognizer()
                .map_err(failed(WHISPER_BASE.decoder.file))
        };
        let recognizers = Recognizers {
            english: &english,
            multilingual: &multilingual,
        };
        engine.install(|| check_phrase(&recognizers, speech, phrase))
    }

    /// What the recogniser hears in a clip's whole 16 kHz mono audio (the speech span; Whisper
    /// hears its first 30 s), for evaluations of sets without transcripts.
    pub fn transcribe(&self, samples: &[f32]) -> Result<String> {
        let engine = self.0;
        let whisper = engine.english_recognizer()?;
        let speech = engine.speech_of(samples)?;
        if speech.is_empty() {
            return Ok(String::new());
        }
        engine
            .install(|| whisper.transcribe(speech, 96))
            .map_err(|error| Error::Model(error.to_string()))
    }
}
