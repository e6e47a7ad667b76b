//! The attempt limit through the C ABI: where a user stands, and the backend's reset after
//! another factor. The limit reported is the project's rule set's (or the default's); over
//! `vouch_request`, `GET /api-gateway/attempts` and `POST /api-gateway/attempts/reset` report
//! the limit of the rule set that decides for the calling key.

use std::ffi::c_char;

use super::boundary::{boundary, check_out, into_c_string, read_str};
use super::engine::{engine_ref, vouch_engine};
use super::status::vouch_status;
use vouch::service::attempts::AttemptStatus;
use vouch::Engine;
use vouch::RuleSet;

/// Where a user of a project stands against the attempt limit. On success `*out_json` gets
/// `{"user_fullname", "failures", "limit", "held_until", "retry_after_s", "disabled", "events"}`
/// (`docs/process-video.md`); free it with `vouch_string_free`.
///
/// # Safety
/// `engine` live or NULL; strings NULL or NUL-terminated; `out_json` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_attempts_get(
    engine: *const vouch_engine,
    project_id: *const c_char,
    user_fullname: *const c_char,
    out_json: *mut *mut c_char,
) -> vouch_status {
    // SAFETY: per this function's contract, which is `attempts`'.
    unsafe {
        attempts(
            engine,
            project_id,
            user_fullname,
            out_json,
            |engine, project, user, rules| engine.attempts().status(project, user, rules),
        )
    }
}

/// Clears a user's failed attempts, wait and disabling (after the backend checked another
/// factor); the reset is an audit row. `*out_json` gets where the user stands afterwards, as
/// `vouch_attempts_get` writes it; free it with `vouch_string_free`.
///
/// # Safety
/// As for `vouch_attempts_get`.
#[no_mangle]
pub unsafe extern "C" fn vouch_attempts_reset(
    engine: *const vouch_engine,
    project_id: *const c_char,
    user_fullname: *const c_char,
    out_json: *mut *mut c_char,
) -> vouch_status {
    // SAFETY: per this function's contract, which is `attempts`'.
    unsafe {
        attempts(
            engine,
            project_id,
            user_fullname,
            out_json,
            |engine, project, user, rules| engine.attempts().reset(project, user, rules),
        )
    }
}

/// Both calls: the arguments read and checked, `operation` run with the project's rule set, its
/// status written as JSON.
///
/// # Safety
/// As for `vouch_attempts_get`.
unsafe fn attempts(
    engine: *const vouch_engine,
    project_id: *const c_char,
    user_fullname: *const c_char,
    out_json: *mut *mut c_char,
    operation: fn(&Engine, &str, &str, &RuleSet) -> vouch::Result<AttemptStatus>,
) -> vouch_status {
    boundary(|| {
        check_out(out_json, "out_json")?;
        // SAFETY: per the caller's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let project_id = unsafe { read_str(project_id, "project_id") }?;
        let fullname = unsafe { read_str(user_fullname, "user_fullname") }?;
        let rules = engine.attempts().project_rules(project_id)?;
        let status = operation(engine, project_id, fullname, &rules)?;
        let json = serde_json::to_string(&status).expect("plain data serialises");
        // SAFETY: checked non-NULL above.
        unsafe { *out_json = into_c_string(json) };
        Ok(())
    })
}
