//! `sessions/start` and `sessions/end/{session_id}`.

use serde::Deserialize;
use serde_json::json;

use super::call::{Call, Handler, Reply};
use super::endpoint::Endpoint;
use super::error::ApiError;
use crate::clock::format_timestamp;
use crate::service::session::normalise_phone_number;

/// Body of `sessions/end`: `{"phone_number": "+4915112345678"}`, all optional.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndBody {
    #[serde(default)]
    phone_number: Option<String>,
}

/// `POST /api-gateway/sessions/start` -> `{"data": "<session id>", "message": "session started"}`.
pub(super) fn start(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let session = call
        .engine
        .sessions()
        .start(&call.key)
        .map_err(|error| call.error(error))?;
    call.audit_session = Some(session.id.clone());
    Ok(Reply::ok(
        json!({ "data": session.id, "message": "session started" }),
    ))
}

/// `POST /api-gateway/sessions/end/{session_id}`: applies the session lock to the caller's fullname,
/// ends the session, and starts a SIM-swap check when `phone_number` is given (`pending`, or
/// `unavailable` without a provider).
pub(super) fn end(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let session_id = call
        .path_id
        .clone()
        .ok_or_else(|| ApiError::new(404, "session not found"))?;
    if call
        .context
        .session_id
        .as_ref()
        .is_some_and(|header| *header != session_id)
    {
        return Err(ApiError::bad_request(
            "X-Session-ID header does not match the session in the path",
        ));
    }
    call.audit_session = Some(session_id.clone());
    let body: Option<EndBody> = call.json_body("an object with an optional phone_number")?;
    // Checked before the session lock, so a rejected request changes nothing.
    let phone_number = body
        .and_then(|body| body.phone_number)
        .map(|number| normalise_phone_number(&number))
        .transpose()
        .map_err(|error| call.error(error))?;
    let fullname = call
        .context
        .fullname
        .clone()
        .ok_or_else(|| ApiError::bad_request("X-User-Fullname header is required"))?;
    call.engine
        .sessions()
        .bind(&call.key, &session_id, &fullname)
        .map_err(|error| call.error(error))?;
    let (session, sim_swap_check) = call
        .engine
        .sessions()
        .end(&call.key, &session_id, phone_number.as_deref())
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(json!({
        "message": "session ended",
        "data": {
            "session_id": session.id,
            "user_fullname": session.user_fullname,
            "started_at": format_timestamp(session.started_at),
            "ended_at": session.ended_at.map(format_timestamp),
            "sim_swap_check": sim_swap_check,
        }
    })))
}

/// The endpoints this module answers, and how (read by the dispatch in `handle.rs`).
pub(super) const HANDLERS: &[(Endpoint, Handler)] =
    &[(Endpoint::SessionStart, start), (Endpoint::SessionEnd, end)];
