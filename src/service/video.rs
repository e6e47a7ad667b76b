//! One pass over a talking-head clip: a single face track (detection, landmarks, a few
//! embeddings) and a single audio pass (speech detection, speaker template, phrase check), run in
//! parallel on the engine's pool, then Active Speaker Detection and liveness from the two. A video
//! file is analysed while it decodes ([`Analysis::file`]): memory stays bounded whatever its
//! length or picture size.

use crate::bio::face::passive::PassiveScore;
use crate::bio::face::{FaceTrack, FaceTracker, RgbImage};
use crate::bio::speech::phonemes::Visemes;
use crate::bio::speech::whisper;
use crate::bio::video::liveness::{self, LivenessCheck};
use crate::bio::video::phrase::{self, Phrase, PhraseCheck};
use crate::bio::video::speaker::{self, SpeakerCheck, SyncStrength};
use crate::bio::video::Signals;
use crate::bio::voice::vad::Segment;
use crate::bio::voice::{SpeechQuality, VoiceModels};
use crate::error::{Error, Result};
use crate::infer::{ModelError, AASIST};
use crate::media::{
    open_video, Clip, DecodeLimits, DecodeOptions, FrameSampler, Pcm, DEFAULT_MAX_SIDE,
};
use crate::service::Engine;

use super::voice::VoiceAnalysis;

/// Frames per second the face track samples: enough for lip movement at syllable rate.
pub const TRACK_FPS: f32 = 15.0;

/// Longest clip process-video analyses, ms.
pub const MAX_CLIP_MS: i64 = 60_000;

/// Audio kept either side of the speech for the phrase check: 300 ms at 16 kHz (room for a
/// quiet first or last consonant the speech detector missed).
const SPAN_PAD_SAMPLES: usize = 16_000 * 300 / 1000;

/// Everything process-video learns from one clip.
#[derive(Debug, Clone)]
pub struct VideoAnalysis {
    /// Sampled frames.
    pub frames: usize,
    /// Clip length, ms.
    pub duration_ms: i64,
    /// The face track.
    pub track: FaceTrack,
    /// Time of each sampled frame, ms.
    pub timestamps_ms: Vec<i64>,
    /// The speech segments the voice-activity detector found (samples of the clip's audio).
    pub segments: Vec<Segment>,
    /// The face and audio signals on one time grid.
    pub signals: Signals,
    /// The voice: template (when there is speech) and speech measures.
    pub voice: VoiceAnalysis,
    /// Active Speaker Detection.
    pub speaker: SpeakerCheck,
    /// Face Liveness Detection.
    pub liveness: LivenessCheck,
    /// The spoken-phrase check.
    pub phrase: PhraseCheck,
    /// Viseme probabilities of the clip's sound per 20 ms (the sync model's input).
    pub visemes: Visemes,
}

impl VideoAnalysis {
    /// Judges Active Speaker Detection again at a project's strength (the analysis judged it at
    /// the default), and liveness, which needs the lips to follow the voice, with it.
    pub fn judge_sync(&mut self, strength: SyncStrength) {
        if strength == SyncStrength::default() {
            return;
        }
        self.speaker = speaker::check_at(&self.signals, strength);
        self.liveness = liveness::check(
            &self.signals,
            &self.speaker,
            PassiveScore::mean(&self.track.passive),
        );
    }
}

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

pub(super) fn no_frames() -> Error {
    Error::InvalidArgument("the video has no frames".to_owned())
}

pub(super) fn model_error(error: ModelError) -> Error {
    Error::Model(error.to_string())
}

/// What the audio branch finds: the voice, the speech segments, the phrase check and the
/// viseme probabilities of the sound.
type AudioFindings = (VoiceAnalysis, Vec<Segment>, PhraseCheck, Visemes);

impl Engine {
    /// The audio branch: speech detection once, then the voice (a template only with
    /// `identity`) and the spoken-phrase check in parallel. The phrase is decoded from the speech
    /// span only, so that noise before and after the speech cannot be heard as extra words.
    fn audio_branch(
        &self,
        voices: &VoiceModels,
        samples: &[f32],
        phrase: Phrase<'_>,
        identity: bool,
    ) -> std::result::Result<AudioFindings, ModelError> {
        if samples.is_empty() {
            let quality = SpeechQuality::measure(&[], &[]);
            let voice = VoiceAnalysis {
                template: None,
                quality,
                synthetic: None,
            };
            let phrase = self.analysis().spoken_phrase(&[], phrase)?;
            return Ok((voice, Vec::new(), phrase, Visemes::default()));
        }
        // The phoneme recogniser runs beside speech detection: the sync model reads the whole
        // sound, speech or not.
        let (speech, visemes) = rayon::join(|| voices.speech(samples), || self.visemes_of(samples));
        let ((segments, quality), visemes) = (speech?, visemes?);
        // No speech found: nothing to check the phrase against.
        let span = speech_span(&segments, samples.len()).map_or(&[][..], |(a, b)| &samples[a..b]);
        // The synthetic-speech check (engine option `voice_spoof_check`) belongs to Voice
        // Recognition, so it runs under the same consent as the template.
        let ((template, synthetic), phrase) = rayon::join(
            || {
                rayon::join(
                    || {
                        (identity && !segments.is_empty())
                            .then(|| voices.template_of(samples, &segments))
                            .transpose()
                    },
                    || {
                        if !identity || segments.is_empty() {
                            return Ok(None);
                        }
                        match self.process_video_spoof_check() {
                            Ok(Some(detector)) => detector.check(samples).map(Some),
                            Ok(None) => Ok(None),
                            Err(error) => Err(ModelError::Runtime {
                                file: AASIST.file,
                                detail: error.to_string(),
                            }),
                        }
                    },
                )
            },
            || self.analysis().spoken_phrase(span, phrase),
        );
        let voice = VoiceAnalysis {
            template: template?,
            quality,
            synthetic: synthetic?,
        };
        Ok((voice, segments, phrase?, visemes))
    }

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

pub(super) fn bad_frame() -> Error {
    Error::InvalidArgument("a frame's size does not match its pixels".to_owned())
}

/// Active Speaker Detection and liveness from the face track and the audio branch's findings.
fn conclude(
    track: FaceTrack,
    timestamps: Vec<i64>,
    audio: std::result::Result<AudioFindings, ModelError>,
    pcm: Option<&Pcm>,
    duration_ms: i64,
) -> Result<VideoAnalysis> {
    if timestamps.is_empty() {
        return Err(no_frames());
    }
    let (voice, segments, phrase, visemes) = audio.map_err(model_error)?;
    let signals = Signals::new(&track, &timestamps, pcm, &segments, Some(&visemes));
    let speaker = speaker::check(&signals);
    let liveness = liveness::check(&signals, &speaker, PassiveScore::mean(&track.passive));
    Ok(VideoAnalysis {
        frames: timestamps.len(),
        duration_ms,
        track,
        timestamps_ms: timestamps,
        segments,
        signals,
        voice,
        speaker,
        liveness,
        phrase,
        visemes,
    })
}

/// Samples from [`SPAN_PAD_SAMPLES`] before the first speech segment to as many after the last.
pub(super) fn speech_span(segments: &[Segment], len: usize) -> Option<(usize, usize)> {
    let start = segments.first()?.start.saturating_sub(SPAN_PAD_SAMPLES);
    let end = (segments.last()?.end + SPAN_PAD_SAMPLES).min(len);
    (start < end).then_some((start, end))
}

/// Clip analysis: process-video's one pass over a clip (face track, audio branch, lip sync,
/// liveness) and the spoken-phrase check ([`Engine::analysis`]).
#[derive(Debug, Clone, Copy)]
pub struct Analysis<'e>(pub(super) &'e Engine);

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
        let faces = engine.face_models()?;
        let voices = engine.voice_models()?;
        engine.install(|| {
            let file = open_video(bytes, &decode_options())?;
            if file.frame_count() == 0 {
                return Err(no_frames());
            }
            let pcm = file.decode_audio()?;
            let samples: &[f32] = pcm.as_ref().map_or(&[], |pcm| &pcm.samples);
            let (video, audio) = rayon::join(
                || {
                    let mut tracker = FaceTracker::new(faces, file.frame_count(), identity);
                    let mut timestamps = Vec::with_capacity(file.frame_count());
                    file.decode_frames(|frame| {
                        timestamps.push(frame.timestamp_ms);
                        let image = RgbImage::from_frame(frame).ok_or_else(bad_frame)?;
                        tracker.push(image).map_err(model_error)
                    })?;
                    Ok::<_, Error>((tracker.finish().map_err(model_error)?, timestamps))
                },
                || engine.audio_branch(voices, samples, phrase, identity),
            );
            let (track, timestamps) = video?;
            conclude(
                track,
                timestamps,
                audio,
                pcm.as_ref(),
                file.info().duration_ms,
            )
        })
    }

    /// Analyses a decoded clip: the face track and the audio branch run in parallel. With
    /// `identity` false no face or voice template is computed (no authorization consent):
    /// liveness, active speaker and the phrase still run.
    pub fn clip(&self, clip: Clip, phrase: Phrase<'_>, identity: bool) -> Result<VideoAnalysis> {
        let engine = self.0;
        let faces = engine.face_models()?;
        let voices = engine.voice_models()?;
        if clip.frames.is_empty() {
            return Err(no_frames());
        }
        let timestamps: Vec<i64> = clip.frames.iter().map(|f| f.timestamp_ms).collect();
        let images: Vec<RgbImage> = clip
            .frames
            .into_iter()
            .map(RgbImage::from_frame)
            .collect::<Option<_>>()
            .ok_or_else(bad_frame)?;
        let pcm = clip.audio;
        let samples: &[f32] = pcm.as_ref().map_or(&[], |pcm| &pcm.samples);
        let (track, audio) = engine.install(|| {
            rayon::join(
                || faces.track(images, identity),
                || engine.audio_branch(voices, samples, phrase, identity),
            )
        });
        let track = track.map_err(model_error)?;
        conclude(
            track,
            timestamps,
            audio,
            pcm.as_ref(),
            clip.info.duration_ms,
        )
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
        let english = engine
            .english_recognizer()
            .map_err(|error| ModelError::Runtime {
                file: whisper::TINY_EN.decoder.file,
                detail: error.to_string(),
            })?;
        let multilingual = || {
            engine
                .multilingual_recognizer()
                .map_err(|error| ModelError::Runtime {
                    file: whisper::BASE.decoder.file,
                    detail: error.to_string(),
                })
        };
        let recognizers = phrase::Recognizers {
            english,
            multilingual: &multilingual,
        };
        engine.install(|| phrase::check(&recognizers, speech, phrase))
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
