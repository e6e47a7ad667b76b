//! The schemas of the OpenAPI document (`openapi.rs`): the success answers the endpoint table
//! names (`vouch::api::Answer`), written from the code that builds each answer (`src/api/*.rs`,
//! the services' `Serialize` types). Shapes used more than once live in
//! `components/schemas` ([`components`]) and are referenced with `$ref`. Fields that are always
//! present are `required`; a field that may be `null` has a `["type", "null"]` type; objects stay
//! open to new fields.

use serde_json::{json, Map, Value};

use crate::serve::admin::Admin;

/// One success answer of an operation.
pub(crate) struct Answer {
    /// HTTP status.
    pub status: u16,
    /// What the answer is.
    pub description: &'static str,
    /// The JSON body's schema; `None` for a 204 without a body.
    pub schema: Option<Value>,
    /// Response headers this answer always carries besides `X-Request-Id`.
    pub headers: &'static [&'static str],
}

fn answer(status: u16, description: &'static str, schema: Value) -> Answer {
    Answer {
        status,
        description,
        schema: Some(schema),
        headers: &[],
    }
}

/// `{"$ref": "#/components/schemas/<name>"}`.
pub(crate) fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// An object with these properties, of which `required` are always present.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

/// An object whose properties are all always present.
fn record(properties: Value) -> Value {
    let required: Vec<&str> = properties
        .as_object()
        .map(|map| map.keys().map(String::as_str).collect())
        .unwrap_or_default();
    object(properties.clone(), &required)
}

fn array(items: Value) -> Value {
    json!({ "type": "array", "items": items })
}

fn string() -> Value {
    json!({ "type": "string" })
}

fn nullable_string() -> Value {
    json!({ "type": ["string", "null"] })
}

fn integer() -> Value {
    json!({ "type": "integer", "minimum": 0 })
}

fn number() -> Value {
    json!({ "type": "number" })
}

fn boolean() -> Value {
    json!({ "type": "boolean" })
}

/// An RFC 3339 time (`2026-01-31T12:00:00.000Z`).
fn timestamp() -> Value {
    json!({ "type": "string", "format": "date-time" })
}

fn nullable_timestamp() -> Value {
    json!({ "type": ["string", "null"], "format": "date-time" })
}

fn one_of(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

/// A header map (`{"Name": "value"}`).
fn string_map() -> Value {
    json!({ "type": "object", "additionalProperties": { "type": "string" } })
}

/// The verification service's answer: `{"message", "data"}`.
fn envelope(data: Value) -> Value {
    record(json!({ "message": string(), "data": data }))
}

/// `schema` with more properties, of which `required` are always present.
fn extended(schema: Value, properties: Value, required: &[&str]) -> Value {
    json!({ "allOf": [schema, object(properties, required)] })
}

/// A success answer of the endpoint table, its schema name resolved: `Name` is the component,
/// `data:Name` the verification service's envelope around it, `data[]:Name` an envelope around a
/// list of it, `page:Name` the job service's cursor page of it.
pub(crate) fn success(declared: &vouch::api::Answer) -> Answer {
    let schema = declared.schema.map(|name| {
        if let Some(item) = name.strip_prefix("data[]:") {
            envelope(array(reference(item)))
        } else if let Some(item) = name.strip_prefix("data:") {
            envelope(reference(item))
        } else if let Some(item) = name.strip_prefix("page:") {
            page(reference(item))
        } else {
            reference(name)
        }
    });
    Answer {
        status: declared.status,
        description: declared.description,
        schema,
        headers: declared.headers,
    }
}

/// The answers' shapes that only one endpoint gives.
fn answers(add: &mut impl FnMut(&str, Value)) {
    let consent_of_user = || {
        extended(
            reference("Consent"),
            json!({ "user_fullname": string() }),
            &["user_fullname"],
        )
    };
    add("SessionId", string());
    add(
        "ConsentChange",
        extended(
            consent_of_user(),
            json!({ "templates_deleted": integer() }),
            &[],
        ),
    );
    add("ConsentOfUser", consent_of_user());
    add(
        "ConsentStatus",
        record(json!({
            "user_fullname": string(),
            "authorization": reference("Consent"),
            "storage": reference("Consent"),
        })),
    );
    add(
        "TransactionPage",
        record(json!({
            "message": string(),
            "data": array(reference("Transaction")),
            "next_cursor": nullable_string(),
        })),
    );
    add(
        "Executions",
        record(json!({ "executions": array(reference("Execution")) })),
    );
    add(
        "AlertChannels",
        record(json!({ "channels": array(reference("AlertChannel")) })),
    );
    add(
        "CreatedSigningSecret",
        record(json!({
            "id": string(),
            "secret": string(),
            "created_at": timestamp(),
            "previous_expires_at": nullable_timestamp(),
        })),
    );
    add(
        "SigningSecrets",
        record(json!({ "secrets": array(reference("SigningSecretInfo")) })),
    );
    add(
        "CreatedWebhook",
        extended(
            reference("WebhookEndpoint"),
            json!({ "secret_id": string(), "secret": string() }),
            &["secret_id", "secret"],
        ),
    );
    add(
        "WebhookWithSecrets",
        extended(
            reference("WebhookEndpoint"),
            json!({ "secrets": array(reference("SigningSecretInfo")) }),
            &["secrets"],
        ),
    );
    add("DeletedId", record(json!({ "id": string() })));
    add(
        "RotatedWebhookSecret",
        record(json!({
            "id": string(),
            "secret_id": string(),
            "secret": string(),
            "created_at": timestamp(),
            "previous_expires_at": nullable_timestamp(),
        })),
    );
}

/// A cursor page of the job service: `{"data": [...], "next_cursor": "..." | null}`.
fn page(item: Value) -> Value {
    record(json!({ "data": array(item), "next_cursor": nullable_string() }))
}

/// The success answer of a key-administration operation.
pub(crate) fn admin_success(operation: Admin) -> Answer {
    match operation {
        Admin::Create => answer(
            201,
            "the key and its token (shown only here)",
            envelope(reference("CreatedApiKey")),
        ),
        Admin::List => answer(200, "the keys", envelope(array(reference("ApiKey")))),
        Admin::Revoke => answer(200, "the revoked key", envelope(reference("ApiKey"))),
        Admin::CreditsRead => answer(200, "the project's credits", envelope(reference("Credits"))),
        Admin::CreditsSet => answer(200, "the credits set", envelope(reference("Credits"))),
        Admin::ScoringRulesRead => answer(
            200,
            "the stored rule set",
            envelope(json!({ "type": "object" })),
        ),
        Admin::ScoringRulesSet => answer(
            200,
            "the rule set stored",
            envelope(json!({ "type": "object" })),
        ),
    }
}

/// The shapes used by more than one operation, and the error bodies.
pub(crate) fn components() -> Map<String, Value> {
    let mut schemas = Map::new();
    let mut add = |name: &str, schema: Value| {
        schemas.insert(name.to_owned(), schema);
    };
    answers(&mut add);
    for (name, schema) in request_bodies() {
        add(name, schema);
    }
    shared_shapes(&mut add);
    verification_shapes(&mut add);
    job_shapes(&mut add);
    administration_shapes(&mut add);
    schemas
}

/// The error bodies and the shapes several families answer with.
fn shared_shapes(add: &mut impl FnMut(&str, Value)) {
    add("Error", record(json!({ "error": string() })));
    add(
        "Credits",
        record(json!({
            "balance": { "type": "integer" },
            "plan": string(),
            "daily_limit": { "type": ["integer", "null"] },
        })),
    );
    add(
        "JobError",
        record(json!({ "error": record(json!({ "code": string(), "message": string() })) })),
    );
    add(
        "Consent",
        record(json!({
            "consent_type": one_of(&["authorization", "storage"]),
            "is_consent_given": boolean(),
            "given_at": nullable_timestamp(),
            "withdrawn_at": nullable_timestamp(),
        })),
    );
    add(
        "Session",
        record(json!({
            "session_id": string(),
            "user_fullname": nullable_string(),
            "started_at": timestamp(),
            "ended_at": nullable_timestamp(),
            "sim_swap_check": one_of(&["not_requested", "pending", "unavailable"]),
        })),
    );
    add(
        "Transaction",
        record(json!({
            "request_id": string(),
            "method": string(),
            "endpoint": string(),
            "status_code": integer(),
            "user_fullname": nullable_string(),
            "session_id": nullable_string(),
            "action_trigger": {
                "type": ["string", "null"],
                "enum": ["authentication", "registration", "confirmation", null],
            },
            "device_info": { "type": ["object", "null"] },
            "geo_location": { "type": ["object", "null"] },
            "request_tags": array(string()),
            "result": {
                "description": "the answer's body (a document check keeps only what kind of document it was)",
            },
            "created_at": timestamp(),
        })),
    );
}

/// The verification service's shapes: process-video, enrollment, documents, and (through
/// [`analysis_and_webhook_shapes`]) the forgery analysis and the webhooks.
fn verification_shapes(add: &mut impl FnMut(&str, Value)) {
    add("VideoVerification", video_verification());
    add(
        "AttemptStatus",
        record(json!({
            "user_fullname": string(),
            "failures": integer(),
            "limit": integer(),
            "held_until": nullable_timestamp(),
            "retry_after_s": { "type": ["integer", "null"], "minimum": 0 },
            "disabled": boolean(),
            "events": array(record(json!({
                "event": one_of(&["hold", "disable", "reset"]),
                "failures": integer(),
                "held_until": nullable_timestamp(),
                "created_at": timestamp(),
            }))),
        })),
    );
    add("FaceQuality", face_quality());
    add(
        "SpeechQuality",
        record(json!({
            "duration_seconds": number(),
            "speech_seconds": number(),
            "rms_dbfs": number(),
            "clipped_share": number(),
            "reasons": speech_reasons(),
        })),
    );
    add(
        "FaceEnrollment",
        record(json!({
            "template_id": integer(),
            "templates": integer(),
            "is_document": boolean(),
            "face_count": integer(),
            "quality": reference("FaceQuality"),
        })),
    );
    add(
        "VoiceEnrollment",
        record(json!({
            "template_id": integer(),
            "templates": integer(),
            "quality": reference("SpeechQuality"),
        })),
    );
    add("Document", document());
    add(
        "FaceMatch",
        record(json!({
            "match": boolean(),
            "similarity": number(),
            "probability": number(),
            "threshold": number(),
            "distance": number(),
            "reasons": array(string()),
            "best_frame": integer(),
            "frames_with_face": integer(),
            "document_quality": { "anyOf": [reference("FaceQuality"), { "type": "null" }] },
        })),
    );
    analysis_and_webhook_shapes(add);
}

/// The forgery analysis's, the SIM-swap check's and the webhooks' shapes.
fn analysis_and_webhook_shapes(add: &mut impl FnMut(&str, Value)) {
    let nullable_number = || json!({ "type": ["number", "null"] });
    let finding =
        || json!({ "type": ["string", "null"], "enum": ["real", "fake", "inconclusive", null] });
    add(
        "AvfRecord",
        envelope(record(json!({
            "success": boolean(),
            "message": string(),
            "status": one_of(&["pending", "processing", "completed", "failed"]),
            "prediction": finding(),
            "confidence": nullable_number(),
            "score": nullable_number(),
            "reasons": { "type": ["array", "null"], "items": string() },
            "signals": {
                "type": ["array", "null"],
                "items": record(json!({
                    "name": string(),
                    "finding": one_of(&["real", "fake", "inconclusive", "not_measured"]),
                    "score": nullable_number(),
                    "value": nullable_number(),
                    "fused": boolean(),
                    "detail": string(),
                })),
            },
            "error": nullable_string(),
            "metadata": record(json!({
                "request_id": string(),
                "source_filename": string(),
                "received_at": integer(),
                "started_at": { "type": ["integer", "null"] },
                "completed_at": { "type": ["integer", "null"] },
            })),
        }))),
    );
    add(
        "SimSwapCheck",
        record(json!({
            "session_id": string(),
            "status": one_of(&["pending", "completed", "failed", "unavailable"]),
            "swapped": { "type": ["boolean", "null"] },
            "detail": nullable_string(),
            "requested_at": timestamp(),
            "completed_at": nullable_timestamp(),
        })),
    );
    add(
        "WebhookEndpoint",
        record(json!({
            "id": string(),
            "url": string(),
            "events": array(string()),
            "description": nullable_string(),
            "created_at": timestamp(),
        })),
    );
    add(
        "SigningSecretInfo",
        record(json!({
            "id": string(),
            "created_at": timestamp(),
            "expires_at": nullable_timestamp(),
        })),
    );
}

/// The job service's shapes.
fn job_shapes(add: &mut impl FnMut(&str, Value)) {
    add("Job", job());
    add(
        "Execution",
        record(json!({
            "id": string(),
            "attempt_num": integer(),
            "status": one_of(&["running", "success", "failed", "interrupted"]),
            "status_code": { "type": ["integer", "null"] },
            "error": nullable_string(),
            "duration_ms": { "type": ["integer", "null"] },
            "executed_at": timestamp(),
        })),
    );
    add(
        "Schedule",
        record(json!({
            "id": string(),
            "url": string(),
            "http_method": string(),
            "cron": string(),
            "headers": string_map(),
            "body": nullable_string(),
            "max_retries": integer(),
            "webhook_url": nullable_string(),
            "webhook_headers": string_map(),
            "status": one_of(&["active", "deleted"]),
            "created_at": timestamp(),
            "next_run_at": nullable_timestamp(),
        })),
    );
    add(
        "JobStats",
        record(json!({
            "total_executions": integer(),
            "succeeded": integer(),
            "failed": integer(),
            "success_rate": { "type": "number", "minimum": 0, "maximum": 1 },
            "avg_duration_ms": number(),
            "p95_duration_ms": { "type": "integer" },
            "since_days": integer(),
        })),
    );
    add(
        "Usage",
        record(json!({
            "buckets": array(record(json!({
                "date": { "type": "string", "format": "date" },
                "job_executions": integer(),
                "buffer_executions": integer(),
            }))),
            "total_job_executions": integer(),
            "total_buffer_executions": integer(),
            "balance": { "type": ["integer", "null"] },
            "plan": string(),
            "since_days": integer(),
        })),
    );
    add(
        "AlertChannel",
        record(json!({
            "id": string(),
            "type": one_of(&["webhook", "slack"]),
            "target": string(),
            "name": nullable_string(),
            "enabled": boolean(),
            "created_at": timestamp(),
            "updated_at": timestamp(),
        })),
    );
}

/// The administration paths' shapes (`serve/admin.rs`).
fn administration_shapes(add: &mut impl FnMut(&str, Value)) {
    add(
        "ApiKey",
        record(json!({
            "id": string(),
            "project_id": string(),
            "selected_services": array(string()),
            "scores_id": nullable_string(),
            "label": nullable_string(),
            "origin": one_of(&["created", "seen"]),
            "status": one_of(&["active", "revoked"]),
            "created_at": timestamp(),
            "revoked_at": nullable_timestamp(),
        })),
    );
    add(
        "CreatedApiKey",
        record(json!({
            "id": string(),
            "project_id": string(),
            "token": string(),
            "selected_services": array(string()),
            "scores_id": nullable_string(),
            "label": nullable_string(),
            "created_at": timestamp(),
        })),
    );
}

fn speech_reasons() -> Value {
    array(one_of(&[
        "silence",
        "no_speech",
        "too_little_speech",
        "clipping",
    ]))
}

fn face_quality() -> Value {
    let mut properties = Map::new();
    for name in [
        "detection_score",
        "face_presence",
        "interocular_px",
        "sharpness",
        "brightness",
        "yaw",
        "pitch",
        "roll",
        "mouth_open",
        "eyes_open",
    ] {
        properties.insert(name.to_owned(), number());
    }
    properties.insert("face_count".to_owned(), integer());
    properties.insert(
        "reasons".to_owned(),
        array(one_of(&[
            "face_too_small",
            "blurry",
            "pose_yaw",
            "pose_pitch",
            "pose_roll",
            "too_dark",
            "too_bright",
            "multiple_faces",
            "low_face_confidence",
        ])),
    );
    record(Value::Object(properties))
}

/// process-video's answer (`src/api/body.rs`): `data` holds one object per service that ran,
/// keyed by the service's name.
fn video_verification() -> Value {
    let code = |max: u8| json!({ "type": "integer", "minimum": 0, "maximum": max });
    let data = json!({
        "type": "object",
        "properties": {
            "Active Speaker Detection": record(json!({ "code": code(3), "result": number() })),
            "Visual Speech Recognition": record(json!({ "code": code(3), "result": string() })),
            "Face Liveness Detection": record(json!({
                "code": code(5), "result": boolean(), "score": number(),
            })),
            "Voice Recognition": object(
                json!({
                    "status": one_of(&["identified", "not_identified", "not_enrolled", "model_outdated", "not_enough_speech"]),
                    "score": number(),
                    "speech_seconds": number(),
                    "reasons": speech_reasons(),
                    // Only from an engine opened with `voice_spoof_check`.
                    "synthetic_speech": record(json!({
                        "score": number(),
                        "verdict": one_of(&["bona_fide", "inconclusive", "spoof"]),
                    })),
                }),
                &["status", "score", "speech_seconds", "reasons"],
            ),
            "Face Recognition": record(json!({
                "instances": array(record(json!({ "search": record(json!({
                    "probability": number(), "searchName": string(),
                })) }))),
                "status": one_of(&["identified", "not_identified", "not_enrolled", "no_face_detected"]),
            })),
        },
    });
    record(json!({
        "message": string(),
        "data": data,
        "scoring_result": object(json!({
            "status": one_of(&["pass", "fail"]),
            "rule_set": record(json!({
                "id": string(),
                "version": integer(),
                "source": one_of(&["custom", "project", "default"]),
            })),
            // Only when the attempt limit holds the user back (or this failure started it).
            "hold": record(json!({
                "failures": integer(),
                "until": nullable_timestamp(),
                "retry_after_s": { "type": ["integer", "null"], "minimum": 0 },
                "disabled": boolean(),
            })),
        }), &["status", "rule_set"]),
        "score": { "type": "number", "minimum": 0, "maximum": 100 },
        "decision_reasons": array(string()),
    }))
}

/// docauth/check's document (`src/service/verify/document.rs`): the zone's fields, `portrait` and,
/// with `X-Inhouse-MRZ: true`, `mrz_validation`.
fn document() -> Value {
    let mut properties = Map::new();
    for name in [
        "mrz_format",
        "document_type",
        "issuing_state",
        "surname",
        "given_names",
        "name",
        "document_number",
        "nationality",
        "date_of_birth",
        "sex",
        "expiry_date",
        "personal_number",
        "optional_data_2",
    ] {
        properties.insert(name.to_owned(), string());
    }
    properties.insert("expired".to_owned(), json!({ "type": ["boolean", "null"] }));
    properties.insert(
        "portrait".to_owned(),
        json!({ "anyOf": [
            record(json!({
                "box": { "type": "array", "items": number(), "minItems": 4, "maxItems": 4 },
                "score": number(),
            })),
            { "type": "null" },
        ] }),
    );
    let mut required: Vec<String> = properties.keys().cloned().collect();
    properties.insert(
        "mrz_validation".to_owned(),
        record(json!({
            "checks": array(record(json!({ "field": string(), "valid": boolean() }))),
            "valid": boolean(),
            "lines": array(string()),
        })),
    );
    required.sort();
    json!({ "type": "object", "properties": properties, "required": required })
}

/// A job (`src/api/jobs.rs`): `replay_of` on replay clones, `execution_count` where known.
fn job() -> Value {
    let always = json!({
        "id": string(),
        "url": string(),
        "http_method": string(),
        "scheduled_at": timestamp(),
        "headers": string_map(),
        "body": nullable_string(),
        "max_retries": integer(),
        "idempotency_key": nullable_string(),
        "webhook_url": nullable_string(),
        "webhook_headers": string_map(),
        "status": one_of(&["scheduled", "pending", "success", "failed", "cancelled"]),
        "created_at": timestamp(),
        "updated_at": timestamp(),
    });
    let required: Vec<&str> = always
        .as_object()
        .map(|map| map.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut properties = always.clone();
    properties["replay_of"] = string();
    properties["execution_count"] = integer();
    object(properties, &required)
}

/// A user identifier (`X-User-Fullname`, `user_fullname`): 1 to 256 bytes (UTF-8) without
/// control characters, compared exactly.
pub(crate) fn fullname() -> Value {
    json!({ "type": "string", "minLength": 1, "maxLength": 256,
            "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$", "examples": ["alice"] })
}

/// The JSON bodies the endpoint table names (`Body::Json`'s `schema`), for `components/schemas`.
/// Every JSON body is read with unknown fields refused (serde's `deny_unknown_fields`).
fn request_bodies() -> Vec<(&'static str, Value)> {
    let object = |properties: Value, required: &[&str]| {
        json!({ "type": "object", "properties": properties, "required": required,
                "additionalProperties": false })
    };
    let call = |extra: Value, required: &[&str]| {
        // The optional fields are `Option`s: `null` is the same as leaving them out.
        let mut properties = json!({
            "url": { "type": "string", "format": "uri" },
            "http_method": { "type": ["string", "null"] },
            "headers": { "type": ["object", "null"], "additionalProperties": { "type": "string" } },
            "body": { "type": ["string", "null"] },
            "max_retries": { "type": ["integer", "null"], "minimum": 0 },
            "webhook_url": { "type": ["string", "null"], "format": "uri" },
            "webhook_headers": { "type": ["object", "null"], "additionalProperties": { "type": "string" } },
        });
        for (name, schema) in extra.as_object().into_iter().flatten() {
            properties[name] = schema.clone();
        }
        object(properties, required)
    };
    vec![
        (
            "SessionEndBody",
            object(
                json!({ "phone_number": { "type": ["string", "null"] } }),
                &[],
            ),
        ),
        (
            "ConsentBody",
            object(
                json!({ "is_consent_given": { "type": "boolean" }, "user_fullname": fullname() }),
                &["is_consent_given", "user_fullname"],
            ),
        ),
        (
            "JobCreateBody",
            call(
                json!({ "scheduled_at": { "type": "string", "format": "date-time" },
                        "idempotency_key": { "type": ["string", "null"] } }),
                &["url", "scheduled_at"],
            ),
        ),
        (
            "ScheduleCreateBody",
            call(json!({ "cron": { "type": "string" } }), &["url", "cron"]),
        ),
        (
            "AlertCreateBody",
            object(
                json!({ "type": { "enum": ["webhook", "slack"] }, "target": { "type": "string" },
                        "name": { "type": ["string", "null"] } }),
                &["type", "target"],
            ),
        ),
        (
            "AlertUpdateBody",
            object(json!({ "enabled": { "type": "boolean" } }), &["enabled"]),
        ),
        (
            "WebhookCreateBody",
            object(
                json!({ "url": { "type": "string", "format": "uri" },
                        "events": { "type": ["array", "null"], "minItems": 1, "items": {
                            "enum": ["process_video.completed", "session.ended", "sim_swap.completed"] } },
                        "description": { "type": ["string", "null"] } }),
                &["url"],
            ),
        ),
    ]
}
