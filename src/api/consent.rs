//! `/api-consent/consent` (authorization) and `/api-consent/strg-consent` (storage): POST gives or
//! withdraws (`is_consent_given`), GET `?user_fullname=` reads; `/api-consent/status` reads both.

use serde::Deserialize;
use serde_json::{json, Value};

use super::call::{Call, Handler, Reply};
use super::endpoint::Endpoint;
use super::error::ApiError;
use crate::clock::format_timestamp;
use crate::service::consent::{ConsentKind, ConsentRecord};

/// The spec's consent input: `{"is_consent_given": true, "user_fullname": "..."}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsentBody {
    is_consent_given: bool,
    user_fullname: String,
}

fn kind_of(endpoint: Endpoint) -> ConsentKind {
    match endpoint {
        Endpoint::StorageConsent | Endpoint::StorageConsentRead => ConsentKind::Storage,
        _ => ConsentKind::Authorization,
    }
}

fn record_json(kind: ConsentKind, record: ConsentRecord) -> Value {
    json!({
        "consent_type": kind.as_str(),
        "is_consent_given": record.given,
        "given_at": record.given_at.map(format_timestamp),
        "withdrawn_at": record.withdrawn_at.map(format_timestamp),
    })
}

/// POST: gives or withdraws one consent.
pub(super) fn set(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let kind = kind_of(call.endpoint);
    let body: ConsentBody = call
        .json_body("an object with is_consent_given and user_fullname")?
        .ok_or_else(|| {
            ApiError::bad_request(
                "request body must be JSON with is_consent_given and user_fullname",
            )
        })?;
    call.audit_fullname = Some(body.user_fullname.clone());
    crate::service::consent::check_fullname(&body.user_fullname, "user_fullname")
        .map_err(|error| call.error(error))?;
    call.lock_session(&body.user_fullname)?;
    let (record, templates_deleted) = call
        .engine
        .consents()
        .set(
            &call.key.project_id,
            &body.user_fullname,
            kind,
            body.is_consent_given,
        )
        .map_err(|error| call.error(error))?;
    let mut data = record_json(kind, record);
    data["user_fullname"] = Value::String(body.user_fullname);
    if kind == ConsentKind::Storage && !body.is_consent_given {
        data["templates_deleted"] = json!(templates_deleted);
    }
    let verb = if body.is_consent_given {
        "given"
    } else {
        "withdrawn"
    };
    Ok(Reply::ok(
        json!({ "message": format!("{} consent {verb}", kind.as_str()), "data": data }),
    ))
}

/// GET: reads one consent, or both for `/api-consent/status`.
pub(super) fn read(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let fullname = call
        .query_value(&["user_fullname"], "user_fullname")?
        .ok_or_else(|| ApiError::bad_request("user_fullname query parameter is required"))?
        .to_owned();
    call.audit_fullname = Some(fullname.clone());
    let state = call
        .engine
        .consents()
        .get(&call.key.project_id, &fullname)
        .map_err(|error| call.error(error))?;
    let data = if call.endpoint == Endpoint::ConsentStatus {
        json!({
            "user_fullname": fullname,
            "authorization": record_json(ConsentKind::Authorization, state.authorization),
            "storage": record_json(ConsentKind::Storage, state.storage),
        })
    } else {
        let kind = kind_of(call.endpoint);
        let mut data = record_json(kind, state.get(kind));
        data["user_fullname"] = Value::String(fullname);
        data
    };
    Ok(Reply::ok(json!({ "message": "ok", "data": data })))
}

/// The endpoints this module answers, and how (read by the dispatch in `handle.rs`).
pub(super) const HANDLERS: &[(Endpoint, Handler)] = &[
    (Endpoint::AuthorizationConsent, set),
    (Endpoint::StorageConsent, set),
    (Endpoint::AuthorizationConsentRead, read),
    (Endpoint::StorageConsentRead, read),
    (Endpoint::ConsentStatus, read),
];
