//! Signed deliveries (Standard Webhooks): every job webhook and alert a project's pump posts
//! carries `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`: `v1,` and the
//! base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` under the project's secret, so the receiver
//! knows the call came from this engine and was not replayed later. A project creates its secret
//! with `POST /signing-secrets`, which shows it once (`whsec_` + base64, as the scheme's libraries
//! expect); calling it again rotates: the new secret signs at once and the previous ones keep
//! signing beside it for a day (several space-separated signatures, which the scheme's verifiers
//! accept), so receivers can switch without losing a delivery. A project without a secret gets
//! unsigned deliveries.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::service::project::Project;
use crate::service::store::SigningSecret;
use crate::service::transport::OutboundRequest;
use crate::service::{new_id, Engine};

/// How long a replaced secret keeps signing, ms (a day).
pub(crate) const ROTATION_GRACE_MS: i64 = 86_400_000;
/// Secret length in bytes.
const SECRET_LEN: usize = 32;

/// A secret just created: the only time its value is shown.
#[derive(Clone, PartialEq, Eq)]
pub struct CreatedSigningSecret {
    /// `whk_<32 hex>`.
    pub id: String,
    /// `whsec_` + base64 of the secret's bytes.
    pub secret: String,
    /// Unix ms.
    pub created_at: i64,
    /// When the secrets it replaced stop signing (Unix ms), if there were any.
    pub previous_expire_at: Option<i64>,
}

impl std::fmt::Debug for CreatedSigningSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CreatedSigningSecret")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// A secret in use, without its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningSecretInfo {
    /// `whk_<32 hex>`.
    pub id: String,
    /// Unix ms.
    pub created_at: i64,
    /// When it stops signing (Unix ms): `None` for the current secret.
    pub expires_at: Option<i64>,
}

impl From<SigningSecret> for SigningSecretInfo {
    fn from(secret: SigningSecret) -> SigningSecretInfo {
        SigningSecretInfo {
            id: secret.id,
            created_at: secret.created_at,
            expires_at: secret.expires_at,
        }
    }
}

/// The Standard Webhooks signature of one delivery: `v1,` + base64 of
/// HMAC-SHA256(secret, `{id}.{timestamp}.{body}`).
pub fn signature(secret: &[u8], id: &str, timestamp_s: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp_s.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(tag)
    )
}

/// The secrets that sign one project's job webhooks and alerts
/// ([`Project::signing_secrets`](crate::service::project::Project::signing_secrets)).
#[derive(Debug, Clone, Copy)]
pub struct SigningSecrets<'e>(pub(in crate::service) Project<'e>);

impl<'e> Project<'e> {
    /// The secrets that sign the project's job webhooks and alerts (`/signing-secrets`).
    pub fn signing_secrets(self) -> SigningSecrets<'e> {
        SigningSecrets(self)
    }
}

impl SigningSecrets<'_> {
    /// Creates the project's new signing secret (`POST /signing-secrets`); older secrets keep
    /// signing for [`ROTATION_GRACE_MS`] beside it.
    pub fn rotate(&self) -> Result<CreatedSigningSecret> {
        let Project { engine, key } = self.0;
        engine.rotate_secret_of(&key.project_id, "")
    }

    /// The project's secrets that sign now, newest first, without their values.
    pub fn list(&self) -> Result<Vec<SigningSecretInfo>> {
        let Project { engine, key } = self.0;
        Ok(engine
            .store
            .signing_secrets(&key.project_id, "", engine.now_ms())?
            .into_iter()
            .map(SigningSecretInfo::from)
            .collect())
    }
}

impl Engine {
    /// A fresh secret for `owner` ('' for the project's job deliveries, else a webhook
    /// endpoint's id); older secrets of the owner keep signing for [`ROTATION_GRACE_MS`].
    pub(crate) fn rotate_secret_of(
        &self,
        project_id: &str,
        owner: &str,
    ) -> Result<CreatedSigningSecret> {
        let (record, shown) = new_secret(self.now_ms())?;
        let previous_expire_at = self.store.rotate_signing_secret(
            project_id,
            owner,
            &record,
            record.created_at + ROTATION_GRACE_MS,
        )?;
        Ok(CreatedSigningSecret {
            id: record.id,
            secret: shown,
            created_at: record.created_at,
            previous_expire_at,
        })
    }

    /// Adds the Standard Webhooks headers to a delivery of `project_id` signed with the secrets
    /// of `owner` ('' for the project's job deliveries, a webhook endpoint's id for its events);
    /// `message_id` is the `webhook-id` (a fresh `msg_` id when `None`). Unchanged when the owner
    /// has no secret, or its secrets cannot be read; returns whether it signed.
    pub(crate) fn sign_delivery(
        &self,
        project_id: &str,
        owner: &str,
        message_id: Option<&str>,
        request: &mut OutboundRequest,
    ) -> bool {
        let now = self.now_ms();
        let Ok(secrets) = self.store.signing_secrets(project_id, owner, now) else {
            return false;
        };
        if secrets.is_empty() {
            return false;
        }
        let id = message_id.map_or_else(|| new_id("msg_"), str::to_owned);
        let timestamp_s = now.div_euclid(1000);
        let body = request.body.as_deref().unwrap_or_default();
        let signatures: Vec<String> = secrets
            .iter()
            .map(|secret| signature(&secret.secret, &id, timestamp_s, body))
            .collect();
        request.headers.push(("webhook-id".into(), id));
        request
            .headers
            .push(("webhook-timestamp".into(), timestamp_s.to_string()));
        request
            .headers
            .push(("webhook-signature".into(), signatures.join(" ")));
        true
    }
}

/// A new random secret, stored form and shown form (`whsec_` + base64).
pub(crate) fn new_secret(now: i64) -> Result<(SigningSecret, String)> {
    let mut bytes = [0u8; SECRET_LEN];
    getrandom::getrandom(&mut bytes)
        .map_err(|error| Error::Storage(format!("no randomness for a secret: {error}")))?;
    let shown = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    );
    Ok((
        SigningSecret {
            id: new_id("whk_"),
            secret: bytes.to_vec(),
            created_at: now,
            expires_at: None,
        },
        shown,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_standard_webhooks_reference() {
        // The scheme's published example (its specification and reference libraries).
        let secret = base64::engine::general_purpose::STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        assert_eq!(
            signature(
                &secret,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
