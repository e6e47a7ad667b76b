//! Alert channels on the engine (`docs/jobs.md`): create, list, pause or resume, delete. The
//! pump notifies every enabled channel of the job's project when a job fails for good.

use serde::Deserialize;

use crate::address::check_url;
use crate::error::{Error, Result};
use crate::service::new_id;
use crate::service::project::Project;
pub use crate::service::store::AlertChannel;

/// Channel types: a JSON webhook, or a chat-service incoming webhook that takes `{"text"}`.
pub const ALERT_TYPES: [&str; 2] = ["webhook", "slack"];
/// Longest channel name, bytes.
pub const MAX_ALERT_NAME_LEN: usize = 128;

/// The fields of `POST /alerts`. Unknown fields are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewAlertChannel {
    /// `webhook` or `slack`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Destination URL.
    pub target: String,
    /// Optional label.
    #[serde(default)]
    pub name: Option<String>,
}

/// The alert channels of one project
/// ([`Project::alerts`](crate::service::project::Project::alerts)).
#[derive(Debug, Clone, Copy)]
pub struct Alerts<'e>(pub(in crate::service) Project<'e>);

impl<'e> Project<'e> {
    /// The project's alert channels (`/alerts`).
    pub fn alerts(self) -> Alerts<'e> {
        Alerts(self)
    }
}

impl Alerts<'_> {
    /// Creates an enabled channel (`POST /alerts`); any type but `webhook` and `slack` is refused.
    pub fn create(&self, channel: &NewAlertChannel) -> Result<AlertChannel> {
        let Project { engine, key } = self.0;
        if !ALERT_TYPES.contains(&channel.kind.as_str()) {
            return Err(Error::InvalidArgument(
                "type must be webhook or slack".to_owned(),
            ));
        }
        check_url(&channel.target, "target", &engine.addresses)?;
        if channel.name.as_ref().is_some_and(|name| {
            name.len() > MAX_ALERT_NAME_LEN || name.chars().any(char::is_control)
        }) {
            return Err(Error::InvalidArgument(format!(
                "name must be at most {MAX_ALERT_NAME_LEN} bytes without control characters"
            )));
        }
        let now = engine.now_ms();
        let record = AlertChannel {
            id: new_id("alt_"),
            project_id: key.project_id.clone(),
            kind: channel.kind.clone(),
            target: channel.target.clone(),
            name: channel.name.clone(),
            enabled: true,
            created_at: now,
            updated_at: now,
        };
        engine.store.insert_alert_channel(&record)?;
        Ok(record)
    }

    /// The key's project's channels, oldest first.
    pub fn list(&self) -> Result<Vec<AlertChannel>> {
        let Project { engine, key } = self.0;
        engine.store.alert_channels(&key.project_id, false)
    }

    /// Pauses (`false`) or resumes (`true`) a channel.
    pub fn set_enabled(&self, id: &str, enabled: bool) -> Result<()> {
        let Project { engine, key } = self.0;
        engine
            .store
            .set_alert_channel_enabled(&key.project_id, id, enabled, engine.now_ms())
    }

    /// Deletes a channel.
    pub fn delete(&self, id: &str) -> Result<()> {
        let Project { engine, key } = self.0;
        engine.store.delete_alert_channel(&key.project_id, id)
    }
}
