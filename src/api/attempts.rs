//! `GET /api-gateway/attempts` and `POST /api-gateway/attempts/reset`: where `X-User-Fullname`
//! stands against the attempt limit of the rule set that decides for the caller's key, and the
//! backend's reset after another factor (an audit row, and a transaction row like every gateway
//! call that changes something).

use serde_json::json;

use super::call::{Call, Handler, Reply};
use super::endpoint::Endpoint;
use super::error::ApiError;

/// Both endpoints: `{"message", "data": {"user_fullname", "failures", "limit", "held_until",
/// "retry_after_s", "disabled", "events"}}`.
pub(super) fn answer(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let fullname = &call.media_preamble()?;
    // A reset takes no body; one that is there must at least be an empty JSON object, so a
    // client that thinks it is sending options learns that it is not.
    if let Some(body) =
        call.json_body::<serde_json::Map<String, serde_json::Value>>("an empty object")?
    {
        if let Some(field) = body.keys().next() {
            return Err(ApiError::bad_request(format!(
                "unknown field `{field}`: {} takes no body",
                call.endpoint.name()
            )));
        }
    }
    let (rules, _) = call
        .engine
        .rules()
        .for_key(&call.key)
        .map_err(|error| call.error(error))?;
    let reset = call.endpoint == Endpoint::AttemptsReset;
    let status = if reset {
        call.engine
            .attempts()
            .reset(&call.key.project_id, fullname, &rules)
    } else {
        call.engine
            .attempts()
            .status(&call.key.project_id, fullname, &rules)
    }
    .map_err(|error| call.error(error))?;
    Ok(Reply::ok(json!({
        "message": if reset { "attempts reset" } else { "attempts read" },
        "data": status,
    })))
}

/// The endpoints this module answers, and how (read by the dispatch in `handle.rs`).
pub(super) const HANDLERS: &[(Endpoint, Handler)] = &[
    (Endpoint::AttemptsRead, answer),
    (Endpoint::AttemptsReset, answer),
];
