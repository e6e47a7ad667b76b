//! [`ApiError`]: a status and a text, and the mapping of [`crate::Error`] to the spec's statuses.
//!
//! Authentication follows the spec's status table: a missing token or a header that is not
//! `Bearer <token>` is an authentication failure (401); a token that fails validation (bad signature,
//! malformed, expired, revoked) is an "API key validation failure", which the spec files under 500,
//! except on `avf/infer`, where the spec says a missing or invalid token is 401.

use serde_json::json;

use super::route::Endpoint;
use crate::auth::AuthError;
use crate::error::Error;

/// An error response: HTTP status and the `error` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// The text of the body's `error` field.
    pub message: String,
}

impl ApiError {
    /// An error with this status and text.
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// 400 with this text.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, message)
    }

    /// The body: `{"error": "..."}`.
    pub fn body(&self) -> serde_json::Value {
        json!({ "error": self.message })
    }

    /// Maps a library error met while serving `endpoint`.
    pub fn from_error(error: Error, endpoint: Endpoint) -> ApiError {
        let status = match &error {
            Error::Auth(auth) => auth_status(auth, endpoint),
            Error::InvalidArgument(_)
            | Error::RuleSet(_)
            | Error::Media(_)
            | Error::NoFace(_)
            | Error::NoSpeech(_)
            | Error::NoDocument(_) => 400,
            Error::Forbidden(_) | Error::ConsentRequired(_) => 403,
            Error::NotFound(_) => 404,
            Error::Conflict(_) => 409,
            Error::TemplateUnreadable
            | Error::Storage(_)
            | Error::InvalidOptions(_)
            | Error::Model(_) => 500,
        };
        ApiError::new(status, error.to_string())
    }
}

fn auth_status(error: &AuthError, endpoint: Endpoint) -> u16 {
    match error {
        AuthError::MissingToken | AuthError::InvalidFormat => 401,
        _ if endpoint == Endpoint::AvfInfer => 401,
        _ => 500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_statuses_follow_the_spec_table() {
        let status =
            |error: AuthError, endpoint| ApiError::from_error(Error::Auth(error), endpoint).status;
        assert_eq!(status(AuthError::MissingToken, Endpoint::SessionStart), 401);
        assert_eq!(
            status(AuthError::InvalidFormat, Endpoint::ProcessVideo),
            401
        );
        assert_eq!(status(AuthError::NotActive, Endpoint::ProcessVideo), 500);
        assert_eq!(
            status(
                AuthError::Invalid("x".into()),
                Endpoint::AuthorizationConsent
            ),
            500
        );
        assert_eq!(status(AuthError::NotActive, Endpoint::AvfInfer), 401);
        assert_eq!(status(AuthError::Expired, Endpoint::AvfInfer), 401);
    }
}
