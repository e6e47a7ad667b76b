//! Voices on the engine: templates from audio files and host PCM, enrollment (consent-gated,
//! sealed, several per user) and the `Voice Recognition` result of a verification. Work runs on
//! the engine's own pool; nothing biometric is logged.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::service::store::Modality;
use crate::service::Engine;
pub use vouch_bio::VoiceAnalysis;
use vouch_bio::{SpeechQuality, SpeechReason, VoiceError, VoiceResult, VoiceTemplate};
use vouch_bio::{SpoofVerdict, SyntheticSpeech};
use vouch_media::raw::{pcm_from_raw, RawAudio};
use vouch_media::DecodeLimits;

/// A stored voice enrollment.
#[derive(Debug, Clone, Serialize)]
pub struct VoiceEnrollment {
    /// Row id of the new sealed template.
    pub template_id: i64,
    /// Voice templates the user has now.
    pub templates: usize,
    /// Speech measures of the enrolled recording.
    pub quality: SpeechQuality,
}

/// Outcome of comparing an utterance with the user's enrolled voice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VoiceStatus {
    /// The best-matching enrolled template is under the calibrated threshold.
    Identified,
    /// Compared, and no enrolled template is under the threshold.
    NotIdentified,
    /// The user has no voice template at all.
    NotEnrolled,
    /// The user's voice templates were made by an earlier speaker model, and templates of two
    /// models are never compared: the next process-video that proves a live presentation and
    /// matches the user's face re-enrolls the voice (or `enroll/voice` does), and the old
    /// templates are deleted then. Scored as `not_enrolled`.
    ModelOutdated,
    /// Silence, no speech, or less than a second of speech: nothing to compare.
    NotEnoughSpeech,
}

/// The `Voice Recognition` result of a verification.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VoiceRecognition {
    /// What the comparison found.
    pub status: VoiceStatus,
    /// Calibrated probability (0..1) that the speaker is the enrolled user, from the
    /// best-matching template; 0 when nothing was compared.
    pub score: f32,
    /// Seconds of speech found.
    pub speech_seconds: f32,
    /// Speech-quality reasons (`docs/voice.md`).
    pub reasons: Vec<SpeechReason>,
    /// The synthetic-speech detector's finding, when the engine runs it (`voice_spoof_check`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic_speech: Option<SyntheticSpeechResult>,
}

/// The synthetic-speech detector's finding on the verification audio (`docs/voice.md`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SyntheticSpeechResult {
    /// AASIST's bona-fide logit (higher is more likely genuine; uncalibrated).
    pub score: f32,
    /// `bona_fide`, `inconclusive` or `spoof`.
    pub verdict: &'static str,
}

impl SyntheticSpeechResult {
    /// Whether the verdict is `spoof`.
    pub fn is_spoof(&self) -> bool {
        self.verdict == SpoofVerdict::Spoof.as_str()
    }
}

impl From<SyntheticSpeech> for SyntheticSpeechResult {
    fn from(found: SyntheticSpeech) -> Self {
        SyntheticSpeechResult {
            score: found.score,
            verdict: found.verdict.as_str(),
        }
    }
}

fn analysis(result: std::result::Result<VoiceResult, VoiceError>) -> Result<VoiceAnalysis> {
    match result {
        Ok(voice) => Ok(voice.into()),
        Err(VoiceError::NoSpeech(quality)) => Ok(VoiceAnalysis {
            template: None,
            quality,
            synthetic: None,
        }),
        Err(VoiceError::Model(error)) => Err(Error::Model(error.to_string())),
    }
}

/// The template of an analysis, or [`Error::NoSpeech`] naming why there is none.
fn require_template(voice: VoiceAnalysis) -> Result<(VoiceTemplate, SpeechQuality)> {
    match voice.template {
        Some(template) => Ok((template, voice.quality)),
        None if voice.quality.reasons.contains(&SpeechReason::Silence) => {
            Err(Error::NoSpeech("the audio is silent".to_owned()))
        }
        None => Err(Error::NoSpeech("no speech found in the audio".to_owned())),
    }
}

impl Engine {
    /// Turns `not_enrolled` into `model_outdated` when the user has voice templates of an earlier
    /// model only.
    pub(crate) fn mark_outdated_voice(
        &self,
        project_id: &str,
        fullname: &str,
        result: &mut VoiceRecognition,
    ) -> Result<()> {
        if result.status == VoiceStatus::NotEnrolled
            && self.store.outdated_template_count(
                project_id,
                fullname,
                Modality::Voice,
                &super::templates::current_model(Modality::Voice),
            )? > 0
        {
            result.status = VoiceStatus::ModelOutdated;
        }
        Ok(())
    }
}

/// Compares an analysed utterance with the enrolled templates.
pub(crate) fn recognize(enrolled: &[VoiceTemplate], voice: VoiceAnalysis) -> VoiceRecognition {
    let mut result = VoiceRecognition {
        status: VoiceStatus::NotEnoughSpeech,
        score: 0.0,
        speech_seconds: voice.quality.speech_seconds,
        reasons: voice.quality.reasons.clone(),
        synthetic_speech: voice.synthetic.map(SyntheticSpeechResult::from),
    };
    let Some(template) = voice
        .template
        .filter(|_| !voice.quality.is_not_enough_speech())
    else {
        return result;
    };
    let best = super::templates::best_match(enrolled, |e| e.compare(&template));
    match best {
        None => result.status = VoiceStatus::NotEnrolled,
        Some(best) => {
            result.score = best.probability;
            result.status = if best.is_match {
                VoiceStatus::Identified
            } else {
                VoiceStatus::NotIdentified
            };
        }
    }
    result
}

/// Voices: speaker templates from audio, enrollment, verification ([`Engine::voices`]).
#[derive(Debug, Clone, Copy)]
pub struct Voices<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// Voices: speaker templates from audio, enrollment, verification.
    pub fn voices(&self) -> Voices<'_> {
        Voices(self)
    }
}

impl Voices<'_> {
    /// Analyses 16 kHz mono audio: the speaker template (when there is speech) and speech measures.
    pub fn analyze(&self, pcm: &[f32]) -> Result<VoiceAnalysis> {
        let engine = self.0;
        let models = engine.voice_models()?;
        analysis(engine.install(|| models.analyze(pcm)))
    }

    /// The speaker template of an audio file (WAV, FLAC, Ogg Opus/Vorbis, M4A, WebM; any rate and
    /// channel count), or [`Error::NoSpeech`] when it has no speech.
    pub fn from_audio(&self, bytes: &[u8]) -> Result<(VoiceTemplate, SpeechQuality)> {
        let engine = self.0;
        engine.voice_models()?;
        let (pcm, _) = engine
            .media()
            .decode_audio(bytes, &DecodeLimits::default())?;
        require_template(engine.voices().analyze(&pcm.samples)?)
    }

    /// The speaker template of audio the host decoded itself (s16 or f32, interleaved, 4 to
    /// 384 kHz, mixed to mono and resampled to 16 kHz here).
    pub fn from_raw(&self, audio: &RawAudio<'_>) -> Result<(VoiceTemplate, SpeechQuality)> {
        let engine = self.0;
        engine.voice_models()?;
        let pcm = pcm_from_raw(audio)?;
        require_template(engine.voices().analyze(&pcm.samples)?)
    }

    /// Enrolls the voice of an audio file for a user: both consents must be given (checked before
    /// the audio is even decoded, and again when the sealed template is written); silence, no or
    /// too little speech, and clipping are refused with [`Error::NoSpeech`]; a voice that does not
    /// match the user's enrolled voice with [`Error::Conflict`].
    pub fn enroll(
        &self,
        project_id: &str,
        fullname: &str,
        audio: &[u8],
    ) -> Result<VoiceEnrollment> {
        let engine = self.0;
        engine.require_enrollment_consent(project_id, fullname)?;
        engine.voice_models()?;
        let (pcm, _) = engine
            .media()
            .decode_audio(audio, &DecodeLimits::default())?;
        let voice = engine.voices().analyze(&pcm.samples)?;
        let blocking = super::templates::voice_enroll_blockers(&voice.quality.reasons);
        let template = match (&voice.template, blocking.is_empty()) {
            (Some(template), true) => template,
            _ => {
                return Err(Error::NoSpeech(format!(
                    "the voice is not good enough to enroll: {}",
                    blocking.join(", ")
                )))
            }
        };
        // As for faces: a second voice must be the enrolled person's.
        let enrolled = engine
            .voices()
            .templates(project_id, fullname)
            .map_err(super::templates::unreadable_conflict)?;
        if !enrolled.is_empty() && !enrolled.iter().any(|t| t.compare(template).is_match) {
            return Err(Error::Conflict(
                "the voice does not match the voice already enrolled for this user".to_owned(),
            ));
        }
        let (template_id, templates) =
            engine.store_template(project_id, fullname, Modality::Voice, &template.to_bytes())?;
        Ok(VoiceEnrollment {
            template_id,
            templates,
            quality: voice.quality,
        })
    }

    /// The user's enrolled voice templates of the current model (needs authorization consent).
    pub fn templates(&self, project_id: &str, fullname: &str) -> Result<Vec<VoiceTemplate>> {
        let engine = self.0;
        Ok(engine
            .current_templates(project_id, fullname, Modality::Voice)?
            .iter()
            .filter_map(|bytes| VoiceTemplate::from_bytes(bytes))
            .collect())
    }

    /// The `Voice Recognition` result of 16 kHz mono speech against the user's enrolled voice
    /// (needs authorization consent): the best-matching template decides.
    pub fn verify(
        &self,
        project_id: &str,
        fullname: &str,
        pcm: &[f32],
    ) -> Result<VoiceRecognition> {
        let engine = self.0;
        let enrolled = engine.voices().templates(project_id, fullname)?;
        let voice = engine.voices().analyze(pcm)?;
        let mut result = recognize(&enrolled, voice);
        engine.mark_outdated_voice(project_id, fullname, &mut result)?;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vouch_bio::VOICE_EMBEDDING_SIZE as EMBEDDING_SIZE;

    fn unit(axis: usize) -> VoiceTemplate {
        let mut values = [0.0; EMBEDDING_SIZE];
        values[axis] = 1.0;
        VoiceTemplate::new(values)
    }

    fn analysis(template: Option<VoiceTemplate>, speech_seconds: f32) -> VoiceAnalysis {
        let samples = (speech_seconds * 16_000.0) as usize;
        let pcm = vec![0.1f32; samples.max(16_000)];
        let segments: Vec<_> = (samples > 0)
            .then_some(vouch_bio::SpeechSegment {
                start: 0,
                end: samples,
            })
            .into_iter()
            .collect();
        VoiceAnalysis {
            template,
            quality: SpeechQuality::measure(&pcm, &segments),
            synthetic: None,
        }
    }

    #[test]
    fn statuses() {
        let enrolled = [unit(0), unit(1)];
        let same = recognize(&enrolled, analysis(Some(unit(1)), 3.0));
        assert_eq!(same.status, VoiceStatus::Identified);
        assert!(same.score > 0.99, "{same:?}");
        let other = recognize(&enrolled, analysis(Some(unit(2)), 3.0));
        assert_eq!(other.status, VoiceStatus::NotIdentified);
        assert!(other.score < 0.01, "{other:?}");
        let nobody = recognize(&[], analysis(Some(unit(2)), 3.0));
        assert_eq!(nobody.status, VoiceStatus::NotEnrolled);
        assert_eq!(nobody.score, 0.0);
        let short = recognize(&enrolled, analysis(Some(unit(1)), 0.5));
        assert_eq!(short.status, VoiceStatus::NotEnoughSpeech);
        assert_eq!(short.reasons, [SpeechReason::TooLittleSpeech]);
        let none = recognize(&enrolled, analysis(None, 0.0));
        assert_eq!(none.status, VoiceStatus::NotEnoughSpeech);
        assert_eq!(
            serde_json::to_value(&none).unwrap(),
            serde_json::json!({
                "status": "not_enough_speech",
                "score": 0.0,
                "speech_seconds": 0.0,
                "reasons": ["no_speech"],
            })
        );
    }
}
