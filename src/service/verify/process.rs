//! `process-video` on the engine: the key's services, the consent rules, one analysis of the clip,
//! comparison with the enrolled templates, scoring by the key's rule set, auto-enrollment of a
//! first-time user, and the session's faces kept for match-faces.
//!
//! Consent rules (the spec's): without authorization consent Face and Voice Recognition are
//! removed (`removed_services`) and no template is computed at all; a user with both consents and
//! no template of a modality is enrolled from the video (`auto_enrolled`), which without storage
//! consent is skipped silently. Auto-enrollment also needs the clip to prove a live presentation of
//! the phrase (live, speaking, phrase recognised) and every modality the user already has to have
//! matched in this call, so a video cannot attach a stranger's voice to an enrolled face.
//! `X-Auto-Enroll: true` says the call left the user enrolled in both face and voice. A call that
//! enrolled templates is decided against them.
//!
//! Attempt limits ([`super::attempts`]): every call is counted before the clip is decoded; a user
//! held back gets a failed decision at once (`attempts_exceeded` or `attempts_disabled`, with
//! [`VideoVerification::hold`]), no model runs and nothing is enrolled.

use crate::auth::ApiKey;
use crate::error::{Error, Result};
use crate::recognition::Service;
use crate::scoring::{Decision, Outcome, Policy, RuleSource};
use crate::service::events::{self, Event, ProcessVideoCompleted, RuleSetRef};
use crate::service::store::{FaceSource, Modality, TemplateModel};
use crate::service::{new_id, Engine};
use vouch_bio::{
    FaceTemplate, Language, LivenessCheck, LivenessCode, Phrase, PhraseCheck, PhraseCode,
    SpeakerCheck, SpeakerCode,
};
use vouch_media::Clip;

use super::attempts::{Counted, HoldNotice};
use super::face::{self, FaceRecognition, FaceStatus};
use super::templates::{current_model, face_enroll_blockers, voice_enroll_blockers};
use super::video::VideoAnalysis;
use super::voice::{self, VoiceRecognition, VoiceStatus};
use crate::service::store::AttemptOutcome;

/// Who and what a process-video call is about.
#[derive(Debug, Clone, Copy)]
pub struct VideoRequest<'a> {
    /// The caller's API key (project, services, scoring rules).
    pub key: &'a ApiKey,
    /// The user (`X-User-Fullname`).
    pub fullname: &'a str,
    /// The session (`X-Session-ID`), whose faces are kept for match-faces.
    pub session_id: Option<&'a str>,
    /// The call's id, named by its `process_video.completed` event (over HTTP, the answer's
    /// `X-Request-Id`); `None`: the engine names one (`req_<32 hex>`).
    pub request_id: Option<&'a str>,
    /// The displayed phrase.
    pub phrase: &'a str,
    /// The phrase's language (the request's `language` tag); `None`: found from its script and
    /// the audio (see `vouch_bio::check_phrase`).
    pub language: Option<Language>,
    /// Whether the backend says this call is a registration (`X-Action-Trigger: registration`,
    /// or the `trigger` part): only then may the call that enrols a first-time user pass, unless
    /// the rule set's `first_use` is `skip`.
    pub registration: bool,
}

impl VideoRequest<'_> {
    /// The phrase and its language, as the phrase check takes them.
    pub fn spoken_phrase(&self) -> Phrase<'_> {
        Phrase {
            text: self.phrase,
            language: self.language,
        }
    }
}

/// One service's result in a process-video call.
#[derive(Debug, Clone)]
pub enum ServiceResult {
    /// `Active Speaker Detection`.
    ActiveSpeaker(SpeakerCheck),
    /// `Visual Speech Recognition`: the phrase check.
    VisualSpeech(PhraseCheck),
    /// `Face Liveness Detection`.
    Liveness(LivenessCheck),
    /// `Voice Recognition`.
    Voice(VoiceRecognition),
    /// `Face Recognition`.
    Face(FaceRecognition),
}

impl ServiceResult {
    /// The service this is the result of.
    pub fn service(&self) -> Service {
        match self {
            ServiceResult::ActiveSpeaker(_) => Service::ActiveSpeakerDetection,
            ServiceResult::VisualSpeech(_) => Service::VisualSpeechRecognition,
            ServiceResult::Liveness(_) => Service::FaceLivenessDetection,
            ServiceResult::Voice(_) => Service::VoiceRecognition,
            ServiceResult::Face(_) => Service::FaceRecognition,
        }
    }

    /// What the result gives the scoring rules.
    fn outcome(&self) -> Outcome {
        match self {
            ServiceResult::ActiveSpeaker(speaker) => match speaker.code {
                SpeakerCode::Speaking | SpeakerCode::NotSpeaking => {
                    Outcome::Score(f64::from(speaker.score))
                }
                SpeakerCode::NoFace => unavailable("no_face_detected"),
                SpeakerCode::NoSpeech => unavailable("not_enough_speech"),
            },
            ServiceResult::VisualSpeech(phrase) => match phrase.code {
                PhraseCode::Matched => Outcome::Score(1.0),
                PhraseCode::Differs => Outcome::Score(0.0),
                PhraseCode::NoSpeech => unavailable("not_enough_speech"),
                PhraseCode::Unavailable => unavailable(phrase.reason.unwrap_or("unavailable")),
            },
            ServiceResult::Liveness(liveness) => match liveness.code {
                LivenessCode::Live
                | LivenessCode::NoMotion
                | LivenessCode::LipsDoNotFollowVoice
                | LivenessCode::PassiveSpoof => Outcome::Score(f64::from(liveness.score)),
                LivenessCode::NoFace => unavailable("no_face_detected"),
                LivenessCode::NoSpeech => unavailable("not_enough_speech"),
            },
            ServiceResult::Voice(voice) => match voice.status {
                VoiceStatus::Identified | VoiceStatus::NotIdentified => {
                    Outcome::Score(f64::from(voice.score))
                }
                VoiceStatus::NotEnrolled | VoiceStatus::ModelOutdated => Outcome::NotEnrolled,
                VoiceStatus::NotEnoughSpeech => unavailable("not_enough_speech"),
            },
            ServiceResult::Face(face) => match face.status {
                FaceStatus::Identified | FaceStatus::NotIdentified => {
                    Outcome::Score(f64::from(face.probability))
                }
                FaceStatus::NotEnrolled => Outcome::NotEnrolled,
                FaceStatus::NoFace => unavailable("no_face_detected"),
            },
        }
    }
}

fn unavailable(reason: &str) -> Outcome {
    Outcome::Unavailable {
        reason: reason.to_owned(),
    }
}

/// The result of process-video: typed; `api` writes the spec's response body from it.
#[derive(Debug, Clone)]
pub struct VideoVerification {
    /// The results of the key's services that ran, in the spec's service order (services removed
    /// for missing authorization consent have none).
    pub results: Vec<ServiceResult>,
    /// The decision.
    pub decision: Decision,
    /// Where the rule set that decided came from.
    pub rule_source: RuleSource,
    /// Whether Face or Voice Recognition was removed for missing authorization consent
    /// (`X-Removed-Services: true`).
    pub removed_services: bool,
    /// Whether this video enrolled the user, who now has both a face and a voice template
    /// (`X-Auto-Enroll: true`).
    pub auto_enrolled: bool,
    /// The attempt limit's hold in force after this call: the one that stopped it before any
    /// model ran (`results` empty), or the one its failure started (`Retry-After`).
    pub hold: Option<HoldNotice>,
}

/// The decision reason when the call enrolled a first-time user but was not a registration (and
/// the rule set's `first_use` is `fail`): the user must verify in another call.
pub const ENROLLED_VERIFY_AGAIN_REASON: &str = "enrolled_verify_again";

/// The decision reason when one of the user's templates no longer opens.
pub const TEMPLATE_UNREADABLE_REASON: &str = "template_unreadable";

/// Decision reason when the synthetic-speech detector judged the voice a machine's
/// (`voice_spoof_check`); the decision fails.
pub const SYNTHETIC_SPEECH_REASON: &str = "voice_synthetic_speech";

/// The `process_video.completed` event of a decision: the call, the decision, its reasons and
/// the rule set that made it; nothing biometric (no per-service results).
fn completed_event(request: &VideoRequest<'_>, verification: &VideoVerification) -> Event {
    let decision = &verification.decision;
    let request_id = request
        .request_id
        .map_or_else(|| new_id("req_"), str::to_owned);
    Event::ProcessVideoCompleted(ProcessVideoCompleted {
        request_id,
        session_id: request.session_id.map(str::to_owned),
        user_fullname: request.fullname.to_owned(),
        status: decision.status(),
        score: decision.score,
        decision_reasons: decision.decision_reasons.clone(),
        rule_set: RuleSetRef {
            id: decision.rule_set_id.clone(),
            version: decision.rule_set_version,
            source: verification.rule_source.as_str(),
        },
    })
}

/// The templates, or none (with `unreadable` set) when one of them no longer opens.
fn readable<T>(templates: Result<Vec<T>>, unreadable: &mut bool) -> Result<Vec<T>> {
    match templates {
        Err(Error::TemplateUnreadable) => {
            *unreadable = true;
            Ok(Vec::new())
        }
        other => other,
    }
}

/// process-video: a clip checked against the user's templates, consents, attempt limit and the
/// project's scoring rules ([`Engine::verification`]).
#[derive(Debug, Clone, Copy)]
pub struct Verification<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// process-video on a file or on frames the host decoded.
    pub fn verification(&self) -> Verification<'_> {
        Verification(self)
    }
}

impl Verification<'_> {
    /// process-video on a video file.
    pub fn process_video(
        &self,
        request: &VideoRequest<'_>,
        video: &[u8],
    ) -> Result<VideoVerification> {
        let engine = self.0;
        // Without models there is nothing to do: say so before decoding anything.
        engine.face_models()?;
        engine.voice_models()?;
        engine.process_with(request, |identity| {
            engine
                .analysis()
                .file(video, request.spoken_phrase(), identity)
        })
    }

    /// process-video on a decoded clip (frames and audio a host decoded itself).
    pub fn process_clip(
        &self,
        request: &VideoRequest<'_>,
        clip: Clip,
    ) -> Result<VideoVerification> {
        let engine = self.0;
        engine.process_with(request, |identity| {
            engine
                .analysis()
                .clip(clip, request.spoken_phrase(), identity)
        })
    }
}

impl Engine {
    /// process-video around an analysis, which is told whether identity may be computed.
    fn process_with(
        &self,
        request: &VideoRequest<'_>,
        analyze: impl FnOnce(bool) -> Result<VideoAnalysis>,
    ) -> Result<VideoVerification> {
        let project = request.key.project_id.as_str();
        let fullname = request.fullname;
        let consent = self.consents().get(project, fullname)?;
        let authorized = consent.authorization.given;
        let selected: Vec<Service> = Service::ALL
            .into_iter()
            .filter(|service| request.key.services.contains(service))
            .collect();
        let removed_services =
            !authorized && selected.iter().any(|s| s.needs_authorization_consent());
        let (rules, source) = self.rules().for_key(request.key)?;
        // The attempt limit, before anything is decoded: a user held back gets a failed decision
        // at once, so a guesser learns nothing and spends nothing of ours. A pass clears the
        // count, a failure against enrolled templates keeps it, an error or a user with nothing
        // to guess against gives it back.
        let counted = self.counted(
            (project, fullname),
            &rules,
            || {
                self.decide(
                    request,
                    &selected,
                    (&consent, removed_services),
                    (&rules, source),
                    analyze,
                )
            },
            |(verification, had_templates)| match (verification.decision.passed, had_templates) {
                (true, _) => AttemptOutcome::Passed,
                (false, true) => AttemptOutcome::Failed,
                (false, false) => AttemptOutcome::Withdrawn,
            },
        )?;
        let verification = match counted {
            Counted::Held(notice) => VideoVerification {
                results: Vec::new(),
                decision: Decision {
                    passed: false,
                    score: 0.0,
                    decision_reasons: vec![notice.reason().to_owned()],
                    rule_set_id: rules.id.clone(),
                    rule_set_version: rules.version,
                },
                rule_source: source,
                removed_services,
                auto_enrolled: false,
                hold: Some(notice),
            },
            Counted::Ran((mut verification, _), started) => {
                if let Some(notice) = started {
                    verification
                        .decision
                        .decision_reasons
                        .push(notice.reason().to_owned());
                    verification.hold = Some(notice);
                }
                verification
            }
        };
        // Every decision is an event, however the call came (HTTP, the C ABI, a Rust host).
        let event = completed_event(request, &verification);
        let now = self.now_ms();
        self.store
            .atomically(|tx| events::queue(tx, project, &event, now))?;
        Ok(verification)
    }

    /// The analysis and the decision of one counted attempt on the key's `selected` services;
    /// the flag says whether the user had a template before the call (only then can a failure be
    /// a guess).
    fn decide(
        &self,
        request: &VideoRequest<'_>,
        selected: &[Service],
        (consent, removed_services): (&crate::service::store::ConsentState, bool),
        (rules, source): (&crate::scoring::RuleSet, RuleSource),
        analyze: impl FnOnce(bool) -> Result<VideoAnalysis>,
    ) -> Result<(VideoVerification, bool)> {
        let project = request.key.project_id.as_str();
        let fullname = request.fullname;
        let authorized = consent.authorization.given;
        let mut analysis = analyze(authorized)?;
        // The project's strength against sound that does not follow the mouth decides Active
        // Speaker Detection, and with it liveness and whether this clip may enrol anyone.
        analysis.judge_sync(rules.sync_strength);

        // Identity: only with authorization consent (templates are read under it, too).
        // A template that no longer opens (altered bytes: the key itself is checked at open)
        // must not turn the call into a server error, nor let a new template replace it: the
        // modality counts as unmatched, nothing is enrolled, and the decision fails with
        // `template_unreadable`.
        let mut unreadable = false;
        let (face_enrolled, voice_enrolled) = if authorized {
            (
                readable(self.faces().templates(project, fullname), &mut unreadable)?,
                readable(self.voices().templates(project, fullname), &mut unreadable)?,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let probe = analysis.track.mean_template();
        let mut face = face::recognize(&face_enrolled, probe.as_ref());
        let mut voice = voice::recognize(&voice_enrolled, analysis.voice.clone());

        // A first-time user is enrolled before the decision, and the decision is then the one the
        // enrolled templates give, so the response never says `not_enrolled` for a user it has just
        // enrolled.
        let enrollment = if authorized && consent.storage.given && !unreadable {
            let enrolled = (!face_enrolled.is_empty(), !voice_enrolled.is_empty());
            self.auto_enroll(
                project,
                fullname,
                enrolled,
                &analysis,
                (&face, &voice),
                probe.as_ref(),
            )?
        } else {
            AutoEnrollment::default()
        };
        let auto_enrolled = enrollment.complete;
        // Whatever this call enrolled (both, or the one modality whose sample was good enough)
        // is what the decision is made against.
        if enrollment.stored {
            face = face::recognize(&self.faces().templates(project, fullname)?, probe.as_ref());
            voice = voice::recognize(
                &self.voices().templates(project, fullname)?,
                analysis.voice.clone(),
            );
        }
        if authorized {
            self.mark_outdated_voice(project, fullname, &mut voice)?;
        }

        let mut results = Vec::new();
        let mut outcomes = Vec::new();
        for &service in selected {
            if !authorized && service.needs_authorization_consent() {
                outcomes.push((service, Outcome::RemovedForConsent));
                continue;
            }
            let result = match service {
                Service::ActiveSpeakerDetection => ServiceResult::ActiveSpeaker(analysis.speaker),
                Service::VisualSpeechRecognition => {
                    ServiceResult::VisualSpeech(analysis.phrase.clone())
                }
                Service::FaceLivenessDetection => ServiceResult::Liveness(analysis.liveness),
                Service::VoiceRecognition => ServiceResult::Voice(voice.clone()),
                Service::FaceRecognition => ServiceResult::Face(face),
            };
            outcomes.push((service, result.outcome()));
            results.push(result);
        }
        let mut decision = rules.evaluate(&outcomes);
        // A first-time user whose live call could not enrol both modalities is enrolled in
        // neither; the reasons say which sample was not good enough.
        decision
            .decision_reasons
            .extend(enrollment.withheld.iter().cloned());
        // First use is a registration only on purpose: a call that enrolled a user who had no
        // template at all enrols (the spec's auto-enrollment) but does not pass unless the
        // backend said it is a registration, so whoever comes first cannot become a user whose
        // owner has not enrolled yet and be authenticated in the same call.
        let first_use = auto_enrolled && face_enrolled.is_empty() && voice_enrolled.is_empty();
        if first_use && !request.registration && rules.first_use == Policy::Fail {
            decision.passed = false;
            decision
                .decision_reasons
                .push(ENROLLED_VERIFY_AGAIN_REASON.to_owned());
        }
        if unreadable {
            decision.passed = false;
            decision
                .decision_reasons
                .push(TEMPLATE_UNREADABLE_REASON.to_owned());
        }
        // Synthetic speech (engine option `voice_spoof_check`) fails the decision whatever the
        // rule set, as an unreadable template does: no weight makes a machine's voice a person's.
        let voice_reported = results
            .iter()
            .any(|result| matches!(result, ServiceResult::Voice(_)));
        if voice_reported && voice.synthetic_speech.is_some_and(|s| s.is_spoof()) {
            decision.passed = false;
            decision
                .decision_reasons
                .push(SYNTHETIC_SPEECH_REASON.to_owned());
        }

        // Faces kept with the session for match-faces are biometric data kept beyond the
        // request: both consents, as for templates.
        if let (Some(session_id), true) = (request.session_id, authorized && consent.storage.given)
        {
            let faces: Vec<Vec<u8>> = analysis
                .track
                .embedded
                .iter()
                .map(|face| face.template.to_bytes())
                .collect();
            if !faces.is_empty() {
                self.store
                    .purge_session_faces(self.now_ms() - self.session_faces_ttl_ms)?;
                self.store.replace_session_faces(
                    project,
                    (session_id, fullname),
                    FaceSource::Video,
                    &current_model(Modality::Face),
                    &faces,
                    self.now_ms(),
                )?;
            }
        }
        let had_templates = !face_enrolled.is_empty() || !voice_enrolled.is_empty();
        Ok((
            VideoVerification {
                results,
                decision,
                rule_source: source,
                removed_services,
                auto_enrolled,
                hold: None,
            },
            had_templates,
        ))
    }

    /// Enrolls the modalities the user has no current-model template of, from this video, in one
    /// transaction.
    ///
    /// The clip must prove a live presentation of the displayed phrase (liveness, the visible
    /// mouth speaking the audio, the phrase recognised), so a replayed or dubbed recording cannot
    /// create an identity, and what the user already has must have matched in this very call, so
    /// a video cannot attach a stranger's voice to an enrolled face.
    fn auto_enroll(
        &self,
        project: &str,
        fullname: &str,
        (has_face, has_voice): (bool, bool),
        analysis: &VideoAnalysis,
        (face, voice): (&FaceRecognition, &VoiceRecognition),
        probe: Option<&FaceTemplate>,
    ) -> Result<AutoEnrollment> {
        let nothing = AutoEnrollment::default();
        let proven = analysis.liveness.live
            && analysis.speaker.code == SpeakerCode::Speaking
            && analysis.phrase.code == PhraseCode::Matched
            && analysis
                .voice
                .synthetic
                .is_none_or(|s| s.verdict != vouch_bio::SpoofVerdict::Spoof);
        if has_face && has_voice || !proven {
            return Ok(nothing);
        }
        if has_face && face.status != FaceStatus::Identified
            || has_voice && voice.status != VoiceStatus::Identified
        {
            return Ok(nothing);
        }
        let (face_model, voice_model) = (
            current_model(Modality::Face),
            current_model(Modality::Voice),
        );
        let face_bytes = probe
            .filter(|_| !has_face)
            .filter(|_| {
                analysis
                    .track
                    .embedded
                    .iter()
                    .any(|embedded| face_enroll_blockers(&embedded.quality.reasons).is_empty())
            })
            .map(FaceTemplate::to_bytes);
        let voice_bytes = analysis
            .voice
            .template
            .as_ref()
            .filter(|_| !has_voice)
            .filter(|_| voice_enroll_blockers(&analysis.voice.quality.reasons).is_empty())
            .map(|t| t.to_bytes());
        // A first-time user is enrolled whole or not at all: one modality alone would leave a
        // user who can never pass a decision that requires both, and let a later call attach
        // the other from whoever presents it.
        if !has_face && !has_voice && (face_bytes.is_none() || voice_bytes.is_none()) {
            let mut withheld = vec![ENROLLMENT_WITHHELD_REASON.to_owned()];
            if face_bytes.is_none() {
                let blockers: Vec<&str> = analysis
                    .track
                    .embedded
                    .iter()
                    .flat_map(|embedded| face_enroll_blockers(&embedded.quality.reasons))
                    .collect();
                withheld.extend(sample_reasons("face", blockers, "no_usable_face"));
            }
            if voice_bytes.is_none() {
                let blockers = voice_enroll_blockers(&analysis.voice.quality.reasons);
                withheld.extend(sample_reasons("voice", blockers, "no_usable_voice"));
            }
            return Ok(AutoEnrollment {
                withheld,
                ..nothing
            });
        }
        let mut templates: Vec<(Modality, &TemplateModel, &[u8])> = Vec::new();
        if let Some(bytes) = &face_bytes {
            templates.push((Modality::Face, &face_model, bytes));
        }
        if let Some(bytes) = &voice_bytes {
            templates.push((Modality::Voice, &voice_model, bytes));
        }
        if templates.is_empty() {
            return Ok(nothing);
        }
        self.store
            .insert_templates(project, fullname, &templates, self.now_ms())?;
        // A modality whose sample was not good enough stays missing; the next live call of the
        // same person (matching what is enrolled now) adds it. Only a user left with both is
        // reported as enrolled.
        Ok(AutoEnrollment {
            stored: true,
            complete: (has_face || face_bytes.is_some()) && (has_voice || voice_bytes.is_some()),
            withheld: Vec::new(),
        })
    }
}

/// `enrollment_<modality>_<blocker>` for each distinct blocker, in first-seen order, or
/// `enrollment_<modality>_<otherwise>` when none is named.
fn sample_reasons(modality: &str, blockers: Vec<&str>, otherwise: &str) -> Vec<String> {
    let mut names: Vec<&str> = Vec::new();
    for blocker in blockers {
        if !names.contains(&blocker) {
            names.push(blocker);
        }
    }
    if names.is_empty() {
        names.push(otherwise);
    }
    names
        .into_iter()
        .map(|name| format!("enrollment_{modality}_{name}"))
        .collect()
}

/// Decision reason when a first-time user's proven live call did not enrol them because one
/// modality's sample was not good enough; `enrollment_face_*` and `enrollment_voice_*` reasons
/// follow, naming the blockers (`docs/process-video.md` says what the user should do for each).
pub const ENROLLMENT_WITHHELD_REASON: &str = "enrollment_withheld";

/// What auto-enrollment did in one call.
#[derive(Debug, Clone, Default)]
struct AutoEnrollment {
    /// Templates were stored.
    stored: bool,
    /// The user is now enrolled in both face and voice (`X-Auto-Enroll: true`).
    complete: bool,
    /// Decision reasons when a first-time user was not enrolled for want of one sample.
    withheld: Vec<String>,
}
