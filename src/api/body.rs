//! Response bodies written from the services' typed results: process-video's and the document
//! check's. JSON is made here and in `ffi`, at the edge, never in `service`.

use serde_json::{json, Map, Value};

use crate::scoring::RuleSource;
use crate::service::document::DocumentCheck;
use crate::service::process::{ServiceResult, VideoVerification};

/// `message`, `data` (one object per service that ran, keyed by the service's name),
/// `scoring_result`, `score` and `decision_reasons`.
pub(super) fn verification_body(verification: &VideoVerification, fullname: &str) -> Value {
    let mut data = Map::new();
    for result in &verification.results {
        data.insert(
            result.service().name().to_owned(),
            result_json(result, fullname),
        );
    }
    let decision = &verification.decision;
    json!({
        "message": decision.message(),
        "data": data,
        "scoring_result": {
            "status": decision.status(),
            "rule_set": {
                "id": decision.rule_set_id,
                "version": decision.rule_set_version,
                "source": match verification.rule_source {
                    RuleSource::Custom => "custom",
                    RuleSource::Project => "project",
                    RuleSource::Default => "default",
                },
            },
        },
        "score": decision.score,
        "decision_reasons": decision.decision_reasons,
    })
}

fn result_json(result: &ServiceResult, fullname: &str) -> Value {
    use crate::service::face::FaceStatus;
    match result {
        ServiceResult::ActiveSpeaker(speaker) => {
            json!({ "code": speaker.code as u8, "result": rounded(speaker.score) })
        }
        ServiceResult::VisualSpeech(phrase) => {
            json!({ "code": phrase.code as u8, "result": phrase.recognized })
        }
        ServiceResult::Liveness(liveness) => json!({
            "code": liveness.code as u8,
            "result": liveness.live,
            "score": rounded(liveness.score),
        }),
        ServiceResult::Voice(voice) => {
            let reasons: Vec<&str> = voice.reasons.iter().map(|r| r.as_str()).collect();
            let mut json = json!({
                "status": voice.status,
                "score": rounded(voice.score),
                "speech_seconds": rounded(voice.speech_seconds),
                "reasons": reasons,
            });
            if let Some(synthetic) = &voice.synthetic_speech {
                json["synthetic_speech"] = json!({
                    "score": rounded(synthetic.score),
                    "verdict": synthetic.verdict,
                });
            }
            json
        }
        ServiceResult::Face(face) => {
            let instances = match face.status {
                FaceStatus::Identified | FaceStatus::NotIdentified => json!([{
                    "search": { "probability": rounded(face.probability), "searchName": fullname },
                }]),
                FaceStatus::NotEnrolled | FaceStatus::NoFace => json!([]),
            };
            json!({ "instances": instances, "status": face.status.as_str() })
        }
    }
}

/// A probability for JSON: four decimals, without the noise of widening an f32.
fn rounded(value: f32) -> f64 {
    (f64::from(value) * 1e4).round() / 1e4
}

/// The document object of `docauth/check` and `vouch_document_read`: the fields, `portrait`, and
/// `mrz_validation` when asked for.
pub(crate) fn document_json(check: &DocumentCheck, with_validation: bool) -> Value {
    let mut json = serde_json::to_value(&check.fields).unwrap_or_default();
    json["portrait"] = serde_json::to_value(&check.portrait).unwrap_or_default();
    if with_validation {
        json["mrz_validation"] = serde_json::to_value(&check.validation).unwrap_or_default();
    }
    json
}
