//! The verification service's outbound events (`docs/events.md`). A project registers webhook
//! endpoints (`/api-projects/webhooks`), each with the event types it wants and its own signing
//! secret, shown once at creation and after each rotation. Every event is queued in the
//! transaction that made it happen, as one job of kind `event` per subscribed endpoint, and the
//! job pump delivers it like any job: retries with backoff, at-least-once, signed with the
//! endpoint's secrets (Standard Webhooks; the `webhook-id` is the delivery's job id, the same on
//! every retry). Event deliveries cost no credits and do not count in the job stats.

pub mod signing;

use serde::Serialize;

use crate::clock::format_timestamp;
use crate::error::{Error, Result};
use crate::service::new_id;
use crate::service::project::Project;
use crate::service::signing::{CreatedSigningSecret, SigningSecretInfo};
use crate::service::store::{JobKind, JobRecord, SessionRecord, SimSwapOutcome, Tx};
pub use crate::service::store::{SimSwapResult, WebhookEndpoint};

/// Attempts after the first one for an event delivery: with the pump's backoff (full jitter
/// below 10 s doubling, capped at an hour) the retries spread over at most about 12.4 hours
/// (half that on average), enough to outlast a receiver's maintenance window.
pub const EVENT_MAX_RETRIES: u32 = 20;

/// An event of the verification service, built from the typed result that made it happen: one
/// variant per type of [`EVENT_TYPES`], each with its `data` as a type of its own (never
/// biometric data). Serialised, an event is its `data` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(in crate::service) enum Event {
    /// `process_video.completed`.
    ProcessVideoCompleted(ProcessVideoCompleted),
    /// `session.ended`.
    SessionEnded(SessionEnded),
    /// `sim_swap.completed`.
    SimSwapCompleted(SimSwapCompleted),
    /// `avf.completed`.
    AvfCompleted(AvfCompleted),
}

// The `data` of each event. Fields are in alphabetical order: the bodies keep the bytes they had
// when they were written from JSON objects (whose keys serde_json sorts), so a receiver that
// stored or compared them sees no change.

/// `process_video.completed`: the call, the decision, its reasons and the rule set that made it;
/// no per-service results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(in crate::service) struct ProcessVideoCompleted {
    pub decision_reasons: Vec<String>,
    pub request_id: String,
    pub rule_set: RuleSetRef,
    pub score: f64,
    pub session_id: Option<String>,
    pub status: &'static str,
    pub user_fullname: String,
}

/// The rule set that decided, in `process_video.completed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(in crate::service) struct RuleSetRef {
    pub id: String,
    pub source: &'static str,
    pub version: u32,
}

/// `session.ended`: the session and its SIM-swap check's status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(in crate::service) struct SessionEnded {
    pub ended_at: Option<String>,
    pub session_id: String,
    pub sim_swap_check: &'static str,
    pub started_at: String,
    pub user_fullname: Option<String>,
}

/// `sim_swap.completed`: how the session's check ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(in crate::service) struct SimSwapCompleted {
    pub detail: Option<String>,
    pub session_id: String,
    pub status: &'static str,
    pub swapped: Option<bool>,
}

/// `avf.completed`: the request, how it ended and the verdict's summary (no media, no per-signal
/// values). Numbers are widened to `f64` as they always were on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(in crate::service) struct AvfCompleted {
    pub confidence: Option<f64>,
    pub error: Option<String>,
    pub prediction: Option<vouch_bio::Prediction>,
    pub reasons: Option<Vec<String>>,
    pub request_id: String,
    pub score: Option<f64>,
    pub session_id: Option<String>,
    pub status: &'static str,
    pub user_fullname: Option<String>,
}

/// The body every endpoint gets: `{"created_at", "data", "id", "type"}` (fields in that order,
/// as they always were).
#[derive(Serialize)]
struct Envelope<'a> {
    created_at: String,
    data: &'a Event,
    id: String,
    #[serde(rename = "type")]
    event_type: &'a str,
}

impl Event {
    /// Its type, one of [`EVENT_TYPES`].
    pub(in crate::service) fn event_type(&self) -> &'static str {
        match self {
            Event::ProcessVideoCompleted(_) => "process_video.completed",
            Event::SessionEnded(_) => "session.ended",
            Event::SimSwapCompleted(_) => "sim_swap.completed",
            Event::AvfCompleted(_) => "avf.completed",
        }
    }

    /// `session.ended` of an ended session, with its SIM-swap check's status.
    pub(in crate::service) fn session_ended(
        session: &SessionRecord,
        sim_swap_check: &'static str,
    ) -> Event {
        Event::SessionEnded(SessionEnded {
            session_id: session.id.clone(),
            user_fullname: session.user_fullname.clone(),
            started_at: format_timestamp(session.started_at),
            ended_at: session.ended_at.map(format_timestamp),
            sim_swap_check,
        })
    }

    /// `sim_swap.completed` of the session's check.
    pub(in crate::service) fn sim_swap_completed(
        session_id: &str,
        outcome: &SimSwapOutcome,
    ) -> Event {
        Event::SimSwapCompleted(SimSwapCompleted {
            session_id: session_id.to_owned(),
            status: outcome.status,
            swapped: outcome.swapped,
            detail: outcome.detail.clone(),
        })
    }
}

/// Queues `event` for every endpoint of the project that subscribed to its type, in the caller's
/// transaction: one job of kind `event` each, due at once, all with the same body and event id.
/// Returns how many deliveries were queued.
pub(in crate::service) fn queue(
    tx: &Tx<'_>,
    project_id: &str,
    event: &Event,
    now_ms: i64,
) -> Result<usize> {
    let endpoints = tx.subscribed_endpoints(project_id, event.event_type())?;
    if endpoints.is_empty() {
        return Ok(0);
    }
    let body = serde_json::to_string(&Envelope {
        created_at: format_timestamp(now_ms),
        data: event,
        id: new_id("evt_"),
        event_type: event.event_type(),
    })
    .map_err(|error| Error::Storage(format!("the event did not serialise: {error}")))?;
    for endpoint in &endpoints {
        tx.insert_job(&JobRecord::internal(
            JobKind::Event,
            project_id,
            &endpoint.url,
            body.clone(),
            EVENT_MAX_RETRIES,
            &endpoint.id,
            now_ms,
        ))?;
    }
    Ok(endpoints.len())
}

/// Ends a SIM-swap check's job as `outcome` says, in the caller's transaction: records it, forgets
/// the phone number the job's body carried and queues `sim_swap.completed`.
pub(in crate::service) fn finish_sim_swap(
    tx: &Tx<'_>,
    job: &JobRecord,
    outcome: &SimSwapOutcome,
    now_ms: i64,
) -> Result<()> {
    let session_id = job.subject.as_deref().unwrap_or_default();
    tx.end_sim_swap_check(session_id, outcome, now_ms)?;
    tx.forget_job_body(&job.id)?;
    queue(
        tx,
        &job.project_id,
        &Event::sim_swap_completed(session_id, outcome),
        now_ms,
    )?;
    Ok(())
}

/// The event types an endpoint may subscribe to.
pub const EVENT_TYPES: [&str; 4] = [
    "process_video.completed",
    "session.ended",
    "sim_swap.completed",
    "avf.completed",
];

/// Most webhook endpoints a project may have.
pub const MAX_WEBHOOKS: usize = 16;
/// Longest description, bytes.
const MAX_DESCRIPTION_LEN: usize = 256;

/// What `POST /api-projects/webhooks` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewWebhook {
    /// Where events go.
    pub url: String,
    /// The event types wanted; `None` for all of [`EVENT_TYPES`].
    pub events: Option<Vec<String>>,
    /// A note for the project's own use.
    pub description: Option<String>,
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}

/// The webhook endpoints of one project
/// ([`Project::webhooks`](crate::service::project::Project::webhooks)).
#[derive(Debug, Clone, Copy)]
pub struct Webhooks<'e>(pub(in crate::service) Project<'e>);

impl<'e> Project<'e> {
    /// The project's webhook endpoints for the verification service's events
    /// (`/api-projects/webhooks`).
    pub fn webhooks(self) -> Webhooks<'e> {
        Webhooks(self)
    }
}

impl Webhooks<'_> {
    /// Registers a webhook endpoint and creates its first secret, shown only in the answer.
    pub fn create(&self, webhook: &NewWebhook) -> Result<(WebhookEndpoint, CreatedSigningSecret)> {
        let Project { engine, key } = self.0;
        crate::address::check_url(&webhook.url, "url", &engine.addresses)?;
        let events = match &webhook.events {
            None => EVENT_TYPES.iter().map(|kind| (*kind).to_owned()).collect(),
            Some(events) => {
                if events.is_empty() {
                    return Err(invalid(format!(
                        "events must name at least one of {}",
                        EVENT_TYPES.join(", ")
                    )));
                }
                let mut chosen: Vec<String> = Vec::new();
                for kind in events {
                    if !EVENT_TYPES.contains(&kind.as_str()) {
                        return Err(invalid(format!(
                            "events: \"{kind}\" is not an event type (one of {})",
                            EVENT_TYPES.join(", ")
                        )));
                    }
                    if !chosen.contains(kind) {
                        chosen.push(kind.clone());
                    }
                }
                chosen
            }
        };
        if let Some(description) = &webhook.description {
            if description.len() > MAX_DESCRIPTION_LEN || description.chars().any(char::is_control)
            {
                return Err(invalid(format!(
                    "description must be at most {MAX_DESCRIPTION_LEN} bytes without control characters"
                )));
            }
        }
        let now = engine.now_ms();
        let endpoint = WebhookEndpoint {
            id: new_id("wh_"),
            project_id: key.project_id.clone(),
            url: webhook.url.clone(),
            events,
            description: webhook.description.clone(),
            created_at: now,
        };
        let (secret, shown) = crate::service::signing::new_secret(now)?;
        engine
            .store
            .insert_webhook_endpoint(&endpoint, &secret, MAX_WEBHOOKS)?;
        Ok((
            endpoint,
            CreatedSigningSecret {
                id: secret.id,
                secret: shown,
                created_at: now,
                previous_expire_at: None,
            },
        ))
    }

    /// The key's project's webhook endpoints, oldest first.
    pub fn list(&self) -> Result<Vec<WebhookEndpoint>> {
        let Project { engine, key } = self.0;
        engine.store.webhook_endpoints(&key.project_id)
    }

    /// One webhook endpoint of the key's project and the secrets that sign its events now
    /// (without their values); [`Error::NotFound`] when absent.
    pub fn get(&self, id: &str) -> Result<(WebhookEndpoint, Vec<SigningSecretInfo>)> {
        let Project { engine, key } = self.0;
        let endpoint = engine
            .store
            .webhook_endpoint(&key.project_id, id)?
            .ok_or_else(|| Error::NotFound("webhook not found".to_owned()))?;
        let secrets = engine
            .store
            .signing_secrets(&key.project_id, id, engine.now_ms())?
            .into_iter()
            .map(SigningSecretInfo::from)
            .collect();
        Ok((endpoint, secrets))
    }

    /// A new secret for the endpoint, shown only in the answer; the old ones keep signing for
    /// `ROTATION_GRACE_MS` (a day) beside it.
    pub fn rotate_secret(&self, id: &str) -> Result<CreatedSigningSecret> {
        let Project { engine, key } = self.0;
        engine.rotate_secret_of(&key.project_id, id)
    }

    /// Deletes the endpoint, its secrets and its deliveries still waiting.
    pub fn delete(&self, id: &str) -> Result<()> {
        let Project { engine, key } = self.0;
        engine
            .store
            .delete_webhook_endpoint(&key.project_id, id, engine.now_ms())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The typed events serialise to the bytes the `json!` objects they replaced gave.
    #[test]
    fn typed_events_keep_their_bytes() {
        let same = |event: Event, old: serde_json::Value| {
            assert_eq!(
                serde_json::to_string(&event).unwrap(),
                serde_json::to_string(&old).unwrap()
            );
        };
        same(
            Event::AvfCompleted(AvfCompleted {
                request_id: "req_1".into(),
                session_id: None,
                user_fullname: Some("alice".into()),
                status: "completed",
                prediction: Some(vouch_bio::Prediction::Fake),
                confidence: Some(f64::from(0.7f32)),
                score: Some(f64::from(12.3f32)),
                reasons: Some(vec!["lip_sync".into()]),
                error: None,
            }),
            json!({
                "request_id": "req_1", "session_id": null, "user_fullname": "alice",
                "status": "completed", "prediction": vouch_bio::Prediction::Fake,
                "confidence": 0.7f32, "score": 12.3f32, "reasons": ["lip_sync"], "error": null,
            }),
        );
        same(
            Event::ProcessVideoCompleted(ProcessVideoCompleted {
                request_id: "req_2".into(),
                session_id: Some("sess_1".into()),
                user_fullname: "bob".into(),
                status: "fail",
                score: 41.5,
                decision_reasons: vec!["face_mismatch".into()],
                rule_set: RuleSetRef {
                    id: "default".into(),
                    version: 3,
                    source: "default",
                },
            }),
            json!({
                "request_id": "req_2", "session_id": "sess_1", "user_fullname": "bob",
                "status": "fail", "score": 41.5, "decision_reasons": ["face_mismatch"],
                "rule_set": { "id": "default", "version": 3, "source": "default" },
            }),
        );
        same(
            Event::SimSwapCompleted(SimSwapCompleted {
                session_id: "sess_1".into(),
                status: "failed",
                swapped: None,
                detail: Some("timeout".into()),
            }),
            json!({ "session_id": "sess_1", "status": "failed", "swapped": null,
                    "detail": "timeout" }),
        );
        same(
            Event::SessionEnded(SessionEnded {
                session_id: "sess_1".into(),
                user_fullname: None,
                started_at: "2026-01-01T00:00:00.000Z".into(),
                ended_at: Some("2026-01-01T00:01:00.000Z".into()),
                sim_swap_check: "not_requested",
            }),
            json!({ "session_id": "sess_1", "user_fullname": null,
                    "started_at": "2026-01-01T00:00:00.000Z",
                    "ended_at": "2026-01-01T00:01:00.000Z", "sim_swap_check": "not_requested" }),
        );
    }
}
