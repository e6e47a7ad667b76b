//! The library's one error type, [`Error`]. The request surface (`api`) maps it to the spec's statuses
//! and texts; the C ABI (`ffi/`) maps it to `vouch_status` values.

use crate::scoring::RuleSetError;
use vouch_media::MediaError;

/// Everything that can go wrong in a call of the Rust API.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The engine options were rejected; the text names the field and the reason.
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// An argument of a call was rejected; the text names it and says why.
    #[error("{0}")]
    InvalidArgument(String),
    /// The named resource (key, session, transaction, rule set) does not exist in this project.
    #[error("{0}")]
    NotFound(String),
    /// The call conflicts with the resource's state (for example ending a session twice).
    #[error("{0}")]
    Conflict(String),
    /// The API key was missing, malformed, not verifiable or revoked.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The project's credits are exhausted (job create and replay).
    #[error("{0}")]
    CreditsExhausted(String),
    /// The project's daily execution cap is reached (job create and replay).
    #[error("{0}")]
    DailyLimit(String),
    /// A job's `scheduled_at` is not a timestamp in the future.
    #[error("{0}")]
    InvalidScheduledAt(String),
    /// The caller may not do this (for example a session locked to another user).
    #[error("{0}")]
    Forbidden(String),
    /// The user has not given the consent this operation needs; the text names it.
    #[error("{0}")]
    ConsentRequired(String),
    /// A sealed template could not be opened: another template key, another owner, or altered bytes.
    #[error("template could not be opened: wrong template key, wrong owner or altered data")]
    TemplateUnreadable,
    /// A scoring rule set was rejected.
    #[error(transparent)]
    RuleSet(#[from] RuleSetError),
    /// Media could not be decoded (malformed, truncated, unsupported codec, over a limit).
    #[error(transparent)]
    Media(#[from] MediaError),
    /// The database failed (I/O, corruption, locked beyond the busy timeout).
    #[error("storage error: {0}")]
    Storage(String),
    /// The database cannot be reached now (a PostgreSQL server down or every pooled connection
    /// busy past the wait); the call may be tried again (it changed nothing, unless the
    /// connection broke during its commit).
    #[error("{0}")]
    Unavailable(String),
    /// No usable face in the image or frames (the text says why: none found, or too poor to use).
    #[error("{0}")]
    NoFace(String),
    /// Not enough speech in the audio (silent, no speech, too little, or too poor to enroll; the
    /// text says which).
    #[error("{0}")]
    NoSpeech(String),
    /// No machine-readable zone found in the document image.
    #[error("{0}")]
    NoDocument(String),
    /// The models an operation needs are not loaded (no `models_dir`) or failed to run.
    #[error("{0}")]
    Model(String),
}

/// Shorthand for results of the Rust API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an API key was refused.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header.
    #[error("missing authorization token")]
    MissingToken,
    /// The header does not start with `Bearer ` or has nothing after it.
    #[error("invalid api key format")]
    InvalidFormat,
    /// The token is malformed, its signature does not verify, or its claims are unusable.
    #[error("invalid api key: {0}")]
    Invalid(String),
    /// The token carries an `exp` claim that has passed.
    #[error("api key has expired")]
    Expired,
    /// The token carries an `nbf` claim still in the future.
    #[error("api key is not valid yet")]
    NotYetValid,
    /// The key was revoked.
    #[error("api key is not active")]
    NotActive,
}
