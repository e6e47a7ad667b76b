//! Response bodies written from the services' typed results: process-video's and the document
//! check's. Answers are written here and in the C ABI crate, at the edge; the only JSON the service
//! makes is the `data` of the events it queues (`service::events`), which no layer reads back.

use serde_json::{json, Map, Value};

use crate::clock::format_timestamp;
use crate::service::avf::{AvfRecord, AvfStatus};
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
    let mut scoring_result = json!({
        "status": decision.status(),
        "rule_set": {
            "id": decision.rule_set_id,
            "version": decision.rule_set_version,
            "source": verification.rule_source.as_str(),
        },
    });
    // A call held back ran nothing: its message says why and when to come back.
    let held_back = verification.hold.is_some() && verification.results.is_empty();
    let message = match &verification.hold {
        Some(notice) if held_back => notice.message(),
        _ => decision.message().to_owned(),
    };
    if let Some(notice) = &verification.hold {
        scoring_result["hold"] = json!({
            "failures": notice.hold.failures,
            "until": notice.hold.until_ms.map(format_timestamp),
            "retry_after_s": notice.retry_after_s,
            "disabled": notice.hold.until_ms.is_none(),
        });
    }
    json!({
        "message": message,
        "data": data,
        "scoring_result": scoring_result,
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
pub fn document_json(check: &DocumentCheck, with_validation: bool) -> Value {
    let mut json = serde_json::to_value(&check.fields).unwrap_or_default();
    json["portrait"] = serde_json::to_value(&check.portrait).unwrap_or_default();
    if with_validation {
        json["mrz_validation"] = serde_json::to_value(&check.validation).unwrap_or_default();
    }
    json
}

/// The AVF record of the spec (`message`, `data.success`, `data.message`, `data.prediction`,
/// `data.confidence`, `data.score`, `data.metadata.{request_id, source_filename, received_at}`)
/// for `record`, with Vouch's additions: `data.status`, `data.reasons`, `data.signals`,
/// `data.error` and the metadata's `started_at` and `completed_at` (Unix seconds, like
/// `received_at`). The result slots are null until the analysis completes.
pub(super) fn avf_body(record: &AvfRecord, accepted: bool) -> Value {
    let seconds = |ms: i64| ms.div_euclid(1000);
    let verdict = record.verdict.as_ref();
    let (message, detail) = match record.status {
        _ if accepted => (
            "video accepted for forgery analysis",
            format!(
                "the analysis is queued: poll GET /api-gateway/avf/status/{}",
                record.request_id
            ),
        ),
        AvfStatus::Pending => (
            "analysis pending",
            "the video waits for its analysis".to_owned(),
        ),
        AvfStatus::Processing => (
            "analysis processing",
            "the video is being analysed".to_owned(),
        ),
        AvfStatus::Completed => (
            "analysis completed",
            verdict
                .and_then(|v| v.reasons.first().cloned())
                .unwrap_or_default(),
        ),
        AvfStatus::Failed => ("analysis failed", record.error.clone().unwrap_or_default()),
    };
    json!({
        "message": message,
        "data": {
            "success": record.status != AvfStatus::Failed,
            "message": detail,
            "status": record.status.as_str(),
            "prediction": verdict.map(|v| v.prediction),
            "confidence": verdict.map(|v| rounded(v.confidence)),
            "score": verdict.map(|v| rounded(v.score)),
            "reasons": verdict.map(|v| v.reasons.clone()),
            "signals": verdict.map(|v| {
                v.signals.iter().map(|signal| json!({
                    "name": signal.name,
                    "finding": signal.finding,
                    "score": signal.score.map(rounded),
                    "value": signal.value.map(rounded),
                    "fused": signal.fused,
                    "detail": signal.detail,
                })).collect::<Vec<_>>()
            }),
            "error": record.error,
            "metadata": {
                "request_id": record.request_id,
                "source_filename": record.source_filename,
                "received_at": seconds(record.received_at_ms),
                "started_at": record.started_at_ms.map(seconds),
                "completed_at": record.completed_at_ms.map(seconds),
            },
        },
    })
}
