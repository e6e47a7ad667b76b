//! [`ApiError`]: a status and a text, and the mapping of [`crate::Error`] to the spec's statuses.
//!
//! Authentication follows the spec's status table: a missing token or a header that is not
//! `Bearer <token>` is an authentication failure (401); a token that fails validation (bad signature,
//! malformed, expired, revoked) is an "API key validation failure", which the spec files under 500,
//! except on `avf/infer`, where the spec says a missing or invalid token is 401.

use serde_json::json;

use super::endpoint::Endpoint;
use crate::auth::AuthError;
use crate::error::Error;

/// An error response: HTTP status and the `error` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// The text of the body's `error` field.
    pub message: String,
    /// The job-scheduling spec's error code; set, the body is `{"error": {"code", "message"}}`
    /// (the verification spec's is `{"error": "..."}`).
    pub code: Option<&'static str>,
}

impl ApiError {
    /// An error with this status and text.
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            code: None,
        }
    }

    /// The same error in the job-scheduling spec's shape: `code` given, or the status's
    /// ([`job_error_code`]).
    pub fn for_jobs(mut self, code: Option<&'static str>) -> ApiError {
        self.code = Some(
            code.or(self.code)
                .unwrap_or_else(|| job_error_code(self.status)),
        );
        self
    }

    /// 400 with this text.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, message)
    }

    /// The body: `{"error": "..."}`, or `{"error": {"code": "...", "message": "..."}}` for the
    /// job-scheduling endpoints.
    pub fn body(&self) -> serde_json::Value {
        match self.code {
            Some(code) => json!({ "error": { "code": code, "message": self.message } }),
            None => json!({ "error": self.message }),
        }
    }

    /// Maps a library error met while serving `endpoint`.
    pub fn from_error(error: Error, endpoint: Endpoint) -> ApiError {
        let status = match &error {
            Error::Auth(auth) => auth_status(auth, endpoint),
            Error::InvalidArgument(_)
            | Error::InvalidScheduledAt(_)
            | Error::RuleSet(_)
            | Error::Media(_)
            | Error::NoFace(_)
            | Error::NoSpeech(_)
            | Error::NoDocument(_) => 400,
            Error::Forbidden(_) | Error::ConsentRequired(_) => 403,
            Error::NotFound(_) => 404,
            Error::Conflict(_) => 409,
            Error::CreditsExhausted(_) => 402,
            Error::DailyLimit(_) => 429,
            Error::TemplateUnreadable
            | Error::Storage(_)
            | Error::InvalidOptions(_)
            | Error::Model(_) => 500,
            Error::Unavailable(_) => 503,
        };
        let code = match &error {
            Error::InvalidScheduledAt(_) => Some("invalid_scheduled_at"),
            _ => None,
        };
        let api_error = ApiError::new(status, error.to_string());
        if endpoint.is_jobs() {
            api_error.for_jobs(code)
        } else {
            api_error
        }
    }
}

/// The job-scheduling endpoints' error code for a status (`docs/jobs.md` lists them):
/// `invalid_request` (400), `unauthorized` (401), `insufficient_credits` (402), `forbidden` (403),
/// `not_found` (404), `method_not_allowed` (405), `conflict` (409), `payload_too_large` (413),
/// `misdirected_request` (421, `vouch serve`'s Host check), `daily_limit_exceeded` (429),
/// `service_unavailable` (503, the database cannot be reached), `internal_error` (500 and
/// anything else). `invalid_scheduled_at`
/// (400) names a `scheduled_at` that is not a future timestamp.
pub fn job_error_code(status: u16) -> &'static str {
    match status {
        400 => "invalid_request",
        401 => "unauthorized",
        402 => "insufficient_credits",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        409 => "conflict",
        413 => "payload_too_large",
        421 => "misdirected_request",
        429 => "daily_limit_exceeded",
        503 => "service_unavailable",
        _ => "internal_error",
    }
}

fn auth_status(error: &AuthError, endpoint: Endpoint) -> u16 {
    match error {
        AuthError::MissingToken | AuthError::InvalidFormat => 401,
        _ => endpoint.declaration().rejected_key,
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

    #[test]
    fn an_error_takes_the_shape_of_the_service_its_path_belongs_to() {
        let shaped = |path: &str| ApiError::new(421, "no").for_path(path).code.is_some();
        for path in [
            "/jobs",
            "/jobs/job_1/executions?limit=5",
            "/jobs/job_1/nothing",
            "/schedules/sch_1",
            "/alerts",
            "/stats/usage",
            "/signing-secrets",
        ] {
            assert!(shaped(path), "{path}");
        }
        for path in [
            "/api-gateway/process-video",
            "/api-consent/status?user_fullname=a",
            "/api-projects/webhooks",
            "/nothing",
            "/jobsearch",
        ] {
            assert!(!shaped(path), "{path}");
        }
    }
}
