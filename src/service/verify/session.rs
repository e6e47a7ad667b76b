//! Sessions on the engine: start, the fullname lock, end with an optional SIM-swap check.

use crate::auth::ApiKey;
use crate::error::{Error, Result};
use crate::options::SimSwapProvider;
use crate::service::events::{self, Event};
use crate::service::store::{
    JobKind, JobRecord, SessionBinding, SessionRecord, SimSwapOutcome, SimSwapResult,
};
use crate::service::{new_id, Engine};

/// What ending a session does about its phone number.
enum SimSwapPlan {
    /// No phone number was given.
    NotRequested,
    /// A phone number was given but no provider is configured: recorded as `unavailable`.
    Unavailable,
    /// The check's job, to the provider.
    Check(Box<JobRecord>),
}

/// Attempts after the first one for a SIM-swap check.
const SIM_SWAP_MAX_RETRIES: u32 = 5;

/// The job of a SIM-swap check: CAMARA's `check` of `phone_number` over the provider's window.
fn sim_swap_job(
    key: &ApiKey,
    session_id: &str,
    phone_number: &str,
    provider: &SimSwapProvider,
    now: i64,
) -> JobRecord {
    // The provider's credentials are not stored with the job: the pump adds them when it sends.
    JobRecord::internal(
        JobKind::SimSwap,
        &key.project_id,
        &provider.check_url,
        serde_json::json!({ "phoneNumber": phone_number, "maxAge": provider.max_age_hours })
            .to_string(),
        SIM_SWAP_MAX_RETRIES,
        session_id,
        now,
    )
}

/// Normalises a phone number to `+` and digits (E.164 form): spaces, dashes, dots and brackets are
/// dropped; 6 to 15 digits must remain.
pub fn normalise_phone_number(text: &str) -> Result<String> {
    let mut digits = String::with_capacity(16);
    for (index, character) in text.trim().chars().enumerate() {
        match character {
            '0'..='9' => digits.push(character),
            '+' if index == 0 => {}
            ' ' | '-' | '.' | '(' | ')' => {}
            _ => return Err(invalid_phone()),
        }
    }
    if !(6..=15).contains(&digits.len()) {
        return Err(invalid_phone());
    }
    Ok(format!("+{digits}"))
}

fn invalid_phone() -> Error {
    Error::InvalidArgument(
        "phone_number must be a phone number in international form, e.g. +4915112345678".to_owned(),
    )
}

/// Sessions: start, the fullname lock, end with an optional SIM-swap check ([`Engine::sessions`]).
#[derive(Debug, Clone, Copy)]
pub struct Sessions<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// Sessions: start, the fullname lock, end with an optional SIM-swap check.
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions(self)
    }
}

impl Sessions<'_> {
    /// Starts a session for the key's project.
    pub fn start(&self, key: &ApiKey) -> Result<SessionRecord> {
        let engine = self.0;
        engine.store.insert_session(
            &new_id("sess_"),
            &key.project_id,
            &key.key_id,
            engine.now_ms(),
        )
    }

    /// Applies the spec's session lock: the first fullname used in the session binds it, a different
    /// fullname later is [`Error::Forbidden`]. An unknown (or other project's) session is
    /// [`Error::NotFound`], an ended one [`Error::Conflict`].
    pub fn bind(&self, key: &ApiKey, session_id: &str, fullname: &str) -> Result<SessionRecord> {
        let engine = self.0;
        let session = engine
            .store
            .session(&key.project_id, session_id)?
            .ok_or_else(|| Error::NotFound("session not found".to_owned()))?;
        if session.ended_at.is_some() {
            return Err(Error::Conflict("session has ended".to_owned()));
        }
        match engine
            .store
            .bind_session(&key.project_id, session_id, fullname)?
        {
            SessionBinding::Bound(record) => Ok(record),
            SessionBinding::OtherUser => Err(Error::Forbidden(
                "session belongs to another user".to_owned(),
            )),
        }
    }

    /// Ends a session and queues its `session.ended` event. A `phone_number` is checked for form
    /// and becomes a SIM-swap check: a job to the configured provider (`pending` until it
    /// answers), or `unavailable` at once when the engine has no provider. Returns the session
    /// and the check's status (`not_requested`, `pending` or `unavailable`).
    pub fn end(
        &self,
        key: &ApiKey,
        session_id: &str,
        phone_number: Option<&str>,
    ) -> Result<(SessionRecord, &'static str)> {
        let engine = self.0;
        let phone_number = phone_number.map(normalise_phone_number).transpose()?;
        let now = engine.now_ms();
        let plan = match (phone_number, &engine.sim_swap) {
            (None, _) => SimSwapPlan::NotRequested,
            (Some(_), None) => SimSwapPlan::Unavailable,
            (Some(number), Some(provider)) => SimSwapPlan::Check(Box::new(sim_swap_job(
                key, session_id, &number, provider, now,
            ))),
        };
        engine.store.atomically(|tx| {
            let session = tx.end_session(&key.project_id, session_id, now)?;
            let check = match &plan {
                SimSwapPlan::NotRequested => "not_requested",
                SimSwapPlan::Unavailable => {
                    let outcome = SimSwapOutcome {
                        status: "unavailable",
                        swapped: None,
                        detail: Some(
                            "no SIM-swap provider is configured on this engine".to_owned(),
                        ),
                    };
                    tx.insert_sim_swap_check(&session, Some(&outcome), None, now)?;
                    let event = Event::sim_swap_completed(&session.id, &outcome);
                    events::queue(tx, &session.project_id, &event, now)?;
                    "unavailable"
                }
                SimSwapPlan::Check(job) => {
                    tx.insert_sim_swap_check(&session, None, Some(&job.id), now)?;
                    tx.insert_job(job)?;
                    "pending"
                }
            };
            let event = Event::session_ended(&session, check);
            events::queue(tx, &session.project_id, &event, now)?;
            Ok((session, check))
        })
    }

    /// A session of the project, if there is one with this id.
    pub fn get(&self, project_id: &str, session_id: &str) -> Result<Option<SessionRecord>> {
        let engine = self.0;
        engine.store.session(project_id, session_id)
    }

    /// The SIM-swap check of the key's project's session, if one was requested.
    pub fn sim_swap_result(&self, key: &ApiKey, session_id: &str) -> Result<Option<SimSwapResult>> {
        let engine = self.0;
        engine.store.sim_swap_result(&key.project_id, session_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phone_numbers_are_normalised_or_refused() {
        assert_eq!(
            normalise_phone_number("+49 151 1234-5678").unwrap(),
            "+4915112345678"
        );
        assert_eq!(
            normalise_phone_number("(030) 123456").unwrap(),
            "+030123456"
        );
        assert!(normalise_phone_number("12345").is_err());
        assert!(normalise_phone_number("+1234567890123456").is_err());
        assert!(normalise_phone_number("call me").is_err());
        assert!(normalise_phone_number("12+3456789").is_err());
    }
}
