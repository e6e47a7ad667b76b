//! Consent on the engine: give, withdraw and read authorization and storage consent.

use crate::error::{Error, Result};
pub use crate::service::store::{ConsentKind, ConsentRecord, ConsentState};
use crate::service::Engine;

/// Longest accepted user identifier (`X-User-Fullname`, `user_fullname`), in bytes.
pub const MAX_FULLNAME_LEN: usize = 256;

/// Checks a user identifier: 1 to [`MAX_FULLNAME_LEN`] bytes, no control characters. It is compared
/// exactly (the spec requires the identical string on every request), so it is not trimmed.
pub fn check_fullname(fullname: &str, what: &str) -> Result<()> {
    if fullname.is_empty()
        || fullname.len() > MAX_FULLNAME_LEN
        || fullname.chars().any(char::is_control)
    {
        return Err(Error::InvalidArgument(format!(
            "{what} must be 1 to {MAX_FULLNAME_LEN} bytes without control characters"
        )));
    }
    Ok(())
}

/// Users' consents: give, withdraw (which deletes what they gate), read ([`Engine::consents`]).
#[derive(Debug, Clone, Copy)]
pub struct Consents<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// Users' consents: give, withdraw (which deletes what they gate), read.
    pub fn consents(&self) -> Consents<'_> {
        Consents(self)
    }
}

impl Consents<'_> {
    /// Gives or withdraws a consent. Withdrawing storage consent deletes the user's templates at once;
    /// the second value says how many.
    pub fn set(
        &self,
        project_id: &str,
        fullname: &str,
        kind: ConsentKind,
        given: bool,
    ) -> Result<(ConsentRecord, usize)> {
        let engine = self.0;
        check_fullname(fullname, "user_fullname")?;
        engine
            .store
            .set_consent(project_id, fullname, kind, given, engine.now_ms())
    }

    /// Both consents of a user.
    pub fn get(&self, project_id: &str, fullname: &str) -> Result<ConsentState> {
        let engine = self.0;
        check_fullname(fullname, "user_fullname")?;
        engine.store.consent(project_id, fullname)
    }
}
