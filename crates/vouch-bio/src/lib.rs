//! Vouch's biometric pipelines, built on [`infer`] (ONNX models run by tract): faces, voices, the
//! speech recogniser, documents, the audio-visual checks of process-video, calibration and the
//! evaluation metrics. Depends on `vouch-media` and on no other part of Vouch: the engine, store
//! and API live in the `vouch` crate above it, which re-exports the few types its own public
//! signatures carry; the evaluations in `vouch-cli` depend on this crate directly.
//!
//! The modules are private and this list is the crate's surface, so that what other crates may
//! use is a decision made here and not an accident of `pub` inside a module. [`infer`] stays a
//! public module: it is the model catalogue (one `ModelSpec` per ONNX file) and tract's runtime,
//! read as `infer::AASIST`, `infer::ModelError`. Names that two pipelines share are prefixed
//! here (`FACE_MODEL_ID`, `VOICE_MODEL_ID`, `GE2E_MODEL_ID`).

pub mod infer;

mod calibration;
mod document;
mod embedding;
mod eval;
mod face;
mod speech;
mod video;
mod voice;

pub use calibration::{fit as fit_calibration, Calibration, Fit as CalibrationFit, Match};

pub use document::mrz::{
    parse as parse_mrz, Check as MrzCheck, Format as MrzFormat, MrzError, MrzFields,
    ALPHABET as MRZ_ALPHABET,
};
pub use document::{DocumentModels, MrzRead};

pub use eval::{
    bootstrap, det_curve, metrics, min_dcf, rule_of_three, Confidence, DetPoint, GroupedScore,
    Interval, Metrics,
};

pub use face::align::ChipDetails;
pub use face::crop::{face_crop, FaceCrop, CROP_SIDE, EYES_AT, INTEROCULAR};
pub use face::detect::Detection as FaceDetection;
pub use face::landmarks::Landmarks as FaceLandmarks;
pub use face::passive::PassiveScore;
pub use face::template::{
    CALIBRATION as FACE_CALIBRATION, MODEL_ID as FACE_MODEL_ID, MODEL_VERSION as FACE_MODEL_VERSION,
};
pub use face::{
    EmbeddedFace, FaceError, FaceModels, FaceResult, FaceTemplate, FaceTrack, FaceTracker,
    Quality as FaceQuality, QualityReason as FaceQualityReason, RgbImage, TrackedFace,
};

pub use speech::phonemes::{PhonemeRecognizer, Visemes, VISEMES, VISEME_GROUPS};
pub use speech::whisper::{
    Variant as WhisperVariant, BASE as WHISPER_BASE, D_MODEL as TINY_EN_WIDTH,
    TINY_EN as WHISPER_TINY_EN,
};
pub use speech::{
    phrase_script, Encoded, Language, LogMel, PhraseScore, Script, TokenScore, Tokenizer, Whisper,
};

pub use video::analysis::{
    clip as analyze_clip, file as analyze_file, speech_span, AnalysisError, LentModels,
    Models as AnalysisModels, VideoAnalysis,
};
pub use video::forgery::{
    judge as judge_forgery, Finding as ForgeryFinding, ForgeryEvidence, ForgeryVerdict, GrayFrame,
    Prediction, Signal as ForgerySignal,
};
pub use video::liveness::{check as check_liveness, LivenessCheck, LivenessCode};
pub use video::phrase::{
    check as check_phrase, words, Phrase, PhraseCheck, PhraseCode, Recognizers,
};
pub use video::speaker::{
    check as check_speaker, null_statistics, SpeakerCheck, SpeakerCode, SyncStrength,
    PASS_Z as SYNC_PASS_Z,
};
pub use video::{grid_log_mel, Signals, LIP_DISTANCES, MEL_BANDS};

pub use voice::fbank::KaldiFbank;
pub use voice::ge2e::{
    normalize_volume, Ge2e, MODEL_ID as GE2E_MODEL_ID, SHIPPED_THRESHOLD as GE2E_SHIPPED_THRESHOLD,
};
pub use voice::spoof::{SpoofDetector, SpoofVerdict, SyntheticSpeech, BONA_FIDE_FROM, SPOOF_BELOW};
pub use voice::template::{
    CALIBRATION as VOICE_CALIBRATION, MODEL_ID as VOICE_MODEL_ID,
    MODEL_VERSION as VOICE_MODEL_VERSION, TEMPLATE_BYTES as VOICE_TEMPLATE_BYTES,
};
pub use voice::vad::Segment as SpeechSegment;
pub use voice::{
    SpeechQuality, SpeechReason, VoiceAnalysis, VoiceError, VoiceModels, VoiceResult,
    VoiceTemplate, EMBEDDING_SIZE as VOICE_EMBEDDING_SIZE,
};
