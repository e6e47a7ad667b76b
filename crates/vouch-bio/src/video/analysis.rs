//! One pass over a talking-head clip, as process-video runs it: a single face track (detection,
//! landmarks, a few embeddings) and a single audio pass (speech detection, speaker template,
//! phrase check) in parallel, then Active Speaker Detection and liveness from the two. Pure: the
//! models are lent by their holder ([`Models`]; the engine loads each on first use) and the
//! parallel work runs on whatever rayon pool the caller installs. A video file is analysed while
//! it decodes ([`file`]): memory stays bounded whatever its length or picture size.

use vouch_media::{Clip, MediaError, Pcm, VideoFile};

use super::liveness::{self, LivenessCheck};
use super::phrase::{Phrase, PhraseCheck};
use super::speaker::{self, SpeakerCheck, SyncStrength};
use super::Signals;
use crate::face::passive::PassiveScore;
use crate::face::{FaceModels, FaceTrack, FaceTracker, RgbImage};
use crate::infer::ModelError;
use crate::speech::phonemes::Visemes;
use crate::voice::spoof::SpoofDetector;
use crate::voice::vad::Segment;
use crate::voice::{SpeechQuality, VoiceAnalysis, VoiceModels};

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

/// What the analysis needs beyond the face and voice models, which their holder may load only
/// when asked (the engine loads each on first use, once).
pub trait LentModels: Sync {
    /// Viseme probabilities of the sound per 20 ms; empty when there is no sync model.
    fn visemes(&self, samples: &[f32]) -> Result<Visemes, ModelError>;
    /// The synthetic-speech detector, when the analysis is to run it.
    fn spoof_detector(&self) -> Result<Option<&SpoofDetector>, ModelError>;
    /// The spoken-phrase check of 16 kHz mono speech.
    fn check_phrase(&self, speech: &[f32], phrase: Phrase<'_>) -> Result<PhraseCheck, ModelError>;
}

/// The models of one analysis.
#[derive(Clone, Copy)]
pub struct Models<'a> {
    /// Faces: detection, landmarks, embeddings, passive liveness.
    pub faces: &'a FaceModels,
    /// Voices: speech detection and the speaker template.
    pub voices: &'a VoiceModels,
    /// The rest, as their holder lends them.
    pub lent: &'a dyn LentModels,
}

/// Why a clip could not be analysed.
#[derive(Debug)]
pub enum AnalysisError {
    /// The video has no frames.
    NoFrames,
    /// A host frame's size does not match its pixels.
    BadFrame,
    /// The file did not decode.
    Media(MediaError),
    /// A model failed.
    Model(ModelError),
}

impl std::fmt::Display for AnalysisError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnalysisError::NoFrames => formatter.write_str("the video has no frames"),
            AnalysisError::BadFrame => {
                formatter.write_str("a frame's size does not match its pixels")
            }
            AnalysisError::Media(error) => error.fmt(formatter),
            AnalysisError::Model(error) => error.fmt(formatter),
        }
    }
}

impl std::error::Error for AnalysisError {}

impl From<MediaError> for AnalysisError {
    fn from(error: MediaError) -> Self {
        AnalysisError::Media(error)
    }
}

impl From<ModelError> for AnalysisError {
    fn from(error: ModelError) -> Self {
        AnalysisError::Model(error)
    }
}

/// What the audio branch finds: the voice, the speech segments, the phrase check and the
/// viseme probabilities of the sound.
type AudioFindings = (VoiceAnalysis, Vec<Segment>, PhraseCheck, Visemes);

/// Analyses a video file while it is decoded: the audio is decoded first, then the face track is
/// built frame by frame as the video decodes ([`FaceTracker`]) while the audio branch runs in
/// parallel. No more than a chunk of frames is ever held, so memory does not grow with the clip's
/// length or picture size. `identity` as in [`clip`].
pub fn file(
    models: Models<'_>,
    file: &VideoFile<'_>,
    phrase: Phrase<'_>,
    identity: bool,
) -> Result<VideoAnalysis, AnalysisError> {
    if file.frame_count() == 0 {
        return Err(AnalysisError::NoFrames);
    }
    let pcm = file.decode_audio()?;
    let samples: &[f32] = pcm.as_ref().map_or(&[], |pcm| &pcm.samples);
    let (video, audio) = rayon::join(
        || {
            let mut tracker = FaceTracker::new(models.faces, file.frame_count(), identity);
            let mut timestamps = Vec::with_capacity(file.frame_count());
            file.decode_frames(|frame| {
                timestamps.push(frame.timestamp_ms);
                let image = RgbImage::from_frame(frame).ok_or(AnalysisError::BadFrame)?;
                tracker.push(image).map_err(AnalysisError::from)
            })?;
            Ok::<_, AnalysisError>((tracker.finish()?, timestamps))
        },
        || audio_branch(models, samples, phrase, identity),
    );
    let (track, timestamps) = video?;
    conclude(
        track,
        timestamps,
        audio,
        pcm.as_ref(),
        file.info().duration_ms,
    )
}

/// Analyses a decoded clip: the face track and the audio branch run in parallel. With
/// `identity` false no face or voice template is computed (no authorization consent): liveness,
/// active speaker and the phrase still run.
pub fn clip(
    models: Models<'_>,
    clip: Clip,
    phrase: Phrase<'_>,
    identity: bool,
) -> Result<VideoAnalysis, AnalysisError> {
    if clip.frames.is_empty() {
        return Err(AnalysisError::NoFrames);
    }
    let timestamps: Vec<i64> = clip.frames.iter().map(|f| f.timestamp_ms).collect();
    let images: Vec<RgbImage> = clip
        .frames
        .into_iter()
        .map(RgbImage::from_frame)
        .collect::<Option<_>>()
        .ok_or(AnalysisError::BadFrame)?;
    let pcm = clip.audio;
    let samples: &[f32] = pcm.as_ref().map_or(&[], |pcm| &pcm.samples);
    let (track, audio) = rayon::join(
        || models.faces.track(images, identity),
        || audio_branch(models, samples, phrase, identity),
    );
    conclude(
        track?,
        timestamps,
        audio,
        pcm.as_ref(),
        clip.info.duration_ms,
    )
}

/// The audio branch: speech detection once, then the voice (a template only with `identity`)
/// and the spoken-phrase check in parallel. The phrase is decoded from the speech span only, so
/// that noise before and after the speech cannot be heard as extra words.
fn audio_branch(
    models: Models<'_>,
    samples: &[f32],
    phrase: Phrase<'_>,
    identity: bool,
) -> Result<AudioFindings, ModelError> {
    let voices = models.voices;
    if samples.is_empty() {
        let quality = SpeechQuality::measure(&[], &[]);
        let voice = VoiceAnalysis {
            template: None,
            quality,
            synthetic: None,
        };
        let phrase = models.lent.check_phrase(&[], phrase)?;
        return Ok((voice, Vec::new(), phrase, Visemes::default()));
    }
    // The phoneme recogniser runs beside speech detection: the sync model reads the whole
    // sound, speech or not.
    let (speech, visemes) = rayon::join(|| voices.speech(samples), || models.lent.visemes(samples));
    let ((segments, quality), visemes) = (speech?, visemes?);
    // No speech found: nothing to check the phrase against.
    let span = speech_span(&segments, samples.len()).map_or(&[][..], |(a, b)| &samples[a..b]);
    // The synthetic-speech check belongs to Voice Recognition, so it runs under the same consent
    // as the template.
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
                    match models.lent.spoof_detector()? {
                        Some(detector) => detector.check(samples).map(Some),
                        None => Ok(None),
                    }
                },
            )
        },
        || models.lent.check_phrase(span, phrase),
    );
    let voice = VoiceAnalysis {
        template: template?,
        quality,
        synthetic: synthetic?,
    };
    Ok((voice, segments, phrase?, visemes))
}

/// Active Speaker Detection and liveness from the face track and the audio branch's findings.
fn conclude(
    track: FaceTrack,
    timestamps: Vec<i64>,
    audio: Result<AudioFindings, ModelError>,
    pcm: Option<&Pcm>,
    duration_ms: i64,
) -> Result<VideoAnalysis, AnalysisError> {
    if timestamps.is_empty() {
        return Err(AnalysisError::NoFrames);
    }
    let (voice, segments, phrase, visemes) = audio?;
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

/// Samples from 300 ms before the first speech segment to as many after the last: the span the
/// phrase check hears.
pub fn speech_span(segments: &[Segment], len: usize) -> Option<(usize, usize)> {
    let start = segments.first()?.start.saturating_sub(SPAN_PAD_SAMPLES);
    let end = (segments.last()?.end + SPAN_PAD_SAMPLES).min(len);
    (start < end).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_speech_span_pads_and_stays_inside_the_audio() {
        let segment = |start, end| Segment { start, end };
        assert_eq!(speech_span(&[], 10_000), None);
        assert_eq!(
            speech_span(&[segment(10_000, 12_000), segment(20_000, 30_000)], 100_000),
            Some((10_000 - SPAN_PAD_SAMPLES, 30_000 + SPAN_PAD_SAMPLES))
        );
        assert_eq!(speech_span(&[segment(100, 900)], 1_000), Some((0, 1_000)));
    }
}
