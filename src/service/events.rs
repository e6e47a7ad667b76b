//! The verification service's outbound events (`docs/events.md`). A project registers webhook
//! endpoints (`/api-projects/webhooks`), each with the event types it wants and its own signing
//! secret, shown once at creation and after each rotation. Every event is queued in the
//! transaction that made it happen, as one job of kind `event` per subscribed endpoint, and the
//! job pump delivers it like any job: retries with backoff, at-least-once, signed with the
//! endpoint's secrets (Standard Webhooks; the `webhook-id` is the delivery's job id, the same on
//! every retry). Event deliveries cost no credits and do not count in the job stats.

use crate::auth::ApiKey;
use crate::error::{Error, Result};
use crate::service::signing::{CreatedSigningSecret, SigningSecretInfo};
pub use crate::service::store::{SimSwapResult, WebhookEndpoint};
use crate::service::{new_id, Engine};

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

impl Engine {
    /// Registers a webhook endpoint and creates its first secret, shown only in the answer.
    pub fn create_webhook(
        &self,
        key: &ApiKey,
        webhook: &NewWebhook,
    ) -> Result<(WebhookEndpoint, CreatedSigningSecret)> {
        crate::service::jobs::check_url(&webhook.url, "url", &self.addresses)?;
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
        let now = self.now_ms();
        let endpoint = WebhookEndpoint {
            id: new_id("wh_"),
            project_id: key.project_id.clone(),
            url: webhook.url.clone(),
            events,
            description: webhook.description.clone(),
            created_at: now,
        };
        let (secret, shown) = crate::service::signing::new_secret(now)?;
        self.store
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
    pub fn webhooks(&self, key: &ApiKey) -> Result<Vec<WebhookEndpoint>> {
        self.store.webhook_endpoints(&key.project_id)
    }

    /// One webhook endpoint of the key's project and the secrets that sign its events now
    /// (without their values); [`Error::NotFound`] when absent.
    pub fn webhook(
        &self,
        key: &ApiKey,
        id: &str,
    ) -> Result<(WebhookEndpoint, Vec<SigningSecretInfo>)> {
        let endpoint = self
            .store
            .webhook_endpoint(&key.project_id, id)?
            .ok_or_else(|| Error::NotFound("webhook not found".to_owned()))?;
        let secrets = self
            .store
            .signing_secrets(&key.project_id, id, self.now_ms())?
            .into_iter()
            .map(SigningSecretInfo::from)
            .collect();
        Ok((endpoint, secrets))
    }

    /// A new secret for the endpoint, shown only in the answer; the old ones keep signing for
    /// `ROTATION_GRACE_MS` (a day) beside it.
    pub fn rotate_webhook_secret(&self, key: &ApiKey, id: &str) -> Result<CreatedSigningSecret> {
        self.rotate_secret_of(&key.project_id, id)
    }

    /// Deletes the endpoint, its secrets and its deliveries still waiting.
    pub fn delete_webhook(&self, key: &ApiKey, id: &str) -> Result<()> {
        self.store
            .delete_webhook_endpoint(&key.project_id, id, self.now_ms())
    }
}
