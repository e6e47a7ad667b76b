//! `/api-projects`: the project's webhook endpoints (`/webhooks`, `/webhooks/{id}`,
//! `/webhooks/{id}/rotate`) and the SIM-swap check of a session (`/sessions/{id}/sim-swap`),
//! in the verification spec's shapes (`{"message", "data"}`; errors `{"error"}`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::call::{Call, Handler, Reply};
use super::endpoint::Endpoint;
use super::error::ApiError;
use crate::clock::format_timestamp;
use crate::service::events::NewWebhook;
use crate::service::events::WebhookEndpoint;
use crate::service::signing::CreatedSigningSecret;

/// Body of `POST /api-projects/webhooks`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookBody {
    url: String,
    #[serde(default)]
    events: Option<Vec<String>>,
    #[serde(default)]
    description: Option<String>,
}

fn webhook_json(endpoint: &WebhookEndpoint) -> Value {
    json!({
        "id": endpoint.id,
        "url": endpoint.url,
        "events": endpoint.events,
        "description": endpoint.description,
        "created_at": format_timestamp(endpoint.created_at),
    })
}

fn secret_json(id: &str, secret: &CreatedSigningSecret) -> Value {
    json!({
        "id": id,
        "secret_id": secret.id,
        "secret": secret.secret,
        "created_at": format_timestamp(secret.created_at),
        "previous_expires_at": secret.previous_expire_at.map(format_timestamp),
    })
}

fn path_id(call: &Call<'_>) -> String {
    call.path_id.clone().unwrap_or_default()
}

/// `POST /api-projects/webhooks` with `{"url", "events"?, "description"?}`: 201 with the endpoint
/// and its `secret` (`whsec_...`), shown here and never again.
pub(super) fn create_webhook(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let body: WebhookBody = call
        .json_body("an object with url, and optional events and description")?
        .ok_or_else(|| ApiError::bad_request("a JSON body with url is required"))?;
    let (endpoint, secret) = call
        .engine
        .project(&call.key)
        .webhooks()
        .create(&NewWebhook {
            url: body.url,
            events: body.events,
            description: body.description,
        })
        .map_err(|error| call.error(error))?;
    let mut data = webhook_json(&endpoint);
    data["secret_id"] = json!(secret.id);
    data["secret"] = json!(secret.secret);
    Ok(Reply {
        status: 201,
        ..Reply::ok(json!({ "message": "webhook created", "data": data }))
    })
}

/// `GET /api-projects/webhooks`: every endpoint, oldest first, without secrets.
pub(super) fn list_webhooks(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let endpoints = call
        .engine
        .project(&call.key)
        .webhooks()
        .list()
        .map_err(|error| call.error(error))?;
    let data: Vec<Value> = endpoints.iter().map(webhook_json).collect();
    Ok(Reply::ok(json!({ "message": "ok", "data": data })))
}

/// `GET /api-projects/webhooks/{id}`: the endpoint and its secrets that sign now (ids and
/// expiry only).
pub(super) fn get_webhook(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let (endpoint, secrets) = call
        .engine
        .project(&call.key)
        .webhooks()
        .get(&path_id(call))
        .map_err(|error| call.error(error))?;
    let mut data = webhook_json(&endpoint);
    data["secrets"] = secrets.iter().map(super::jobs::secret_info_json).collect();
    Ok(Reply::ok(json!({ "message": "ok", "data": data })))
}

/// `POST /api-projects/webhooks/{id}/rotate`: a new secret, shown here only; the old ones keep
/// signing until `previous_expires_at`.
pub(super) fn rotate_webhook(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let id = path_id(call);
    let secret = call
        .engine
        .project(&call.key)
        .webhooks()
        .rotate_secret(&id)
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(json!({
        "message": "webhook secret rotated",
        "data": secret_json(&id, &secret),
    })))
}

/// `DELETE /api-projects/webhooks/{id}`: the endpoint, its secrets and its waiting deliveries.
pub(super) fn delete_webhook(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let id = path_id(call);
    call.engine
        .project(&call.key)
        .webhooks()
        .delete(&id)
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(
        json!({ "message": "webhook deleted", "data": { "id": id } }),
    ))
}

/// `GET /api-projects/sessions/{session_id}/sim-swap`: `status` (`pending`, `completed`,
/// `failed`, `unavailable`), `swapped` (when completed), `detail`, `requested_at`,
/// `completed_at`; 404 when the session asked for no check.
pub(super) fn get_sim_swap(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let result = call
        .engine
        .sessions()
        .sim_swap_result(&call.key, &path_id(call))
        .map_err(|error| call.error(error))?
        .ok_or_else(|| ApiError::new(404, "no SIM-swap check was requested for this session"))?;
    Ok(Reply::ok(json!({
        "message": "ok",
        "data": {
            "session_id": result.session_id,
            "status": result.status,
            "swapped": result.swapped,
            "detail": result.detail,
            "requested_at": format_timestamp(result.requested_at),
            "completed_at": result.completed_at.map(format_timestamp),
        }
    })))
}

/// The endpoints this module answers, and how (read by the dispatch in `handle.rs`).
pub(super) const HANDLERS: &[(Endpoint, Handler)] = &[
    (Endpoint::WebhookCreate, create_webhook),
    (Endpoint::WebhookList, list_webhooks),
    (Endpoint::WebhookGet, get_webhook),
    (Endpoint::WebhookRotate, rotate_webhook),
    (Endpoint::WebhookDelete, delete_webhook),
    (Endpoint::SimSwapGet, get_sim_swap),
];
