//! API-key administration and scoring rule sets through the C ABI. Inputs and outputs are JSON.

use std::ffi::c_char;

use super::boundary::{boundary, check_out, into_c_string, read_optional_str, read_str, FfiError};
use super::engine::{engine_ref, vouch_engine};
use super::status::vouch_status;
use vouch::service::keys::NewApiKey;
use vouch::RuleSet;

/// Creates an HS256 API key (needs `api_keys.hs256_secret` in the options).
///
/// `request_json`: `{"project_id": "p1", "selected_services": ["Face Recognition", ...],
/// "scores_id": null, "label": "kiosk"}` (unknown fields rejected). On success `*out_key_json` gets
/// `{"id", "project_id", "token", "selected_services", "scores_id", "label", "created_at"}`; the token
/// is shown only here. Free it with `vouch_string_free`.
///
/// # Safety
/// `engine` live or NULL; strings NULL or NUL-terminated; `out_key_json` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_api_key_create(
    engine: *const vouch_engine,
    request_json: *const c_char,
    out_key_json: *mut *mut c_char,
) -> vouch_status {
    boundary(|| {
        check_out(out_key_json, "out_key_json")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let text = unsafe { read_str(request_json, "request_json") }?;
        let new_key: NewApiKey = serde_json::from_str(text).map_err(|error| {
            FfiError::new(vouch_status::InvalidJson, format!("request_json: {error}"))
        })?;
        let created = engine.api_keys().create(&new_key)?;
        let json = serde_json::to_string(&created).expect("plain data serialises");
        // SAFETY: checked non-NULL above.
        unsafe { *out_key_json = into_c_string(json) };
        Ok(())
    })
}

/// Lists a project's keys as a JSON array (no tokens): `[{"id", "status": "active"|"revoked", ...}]`.
/// Free the string with `vouch_string_free`.
///
/// # Safety
/// As for `vouch_api_key_create`.
#[no_mangle]
pub unsafe extern "C" fn vouch_api_key_list(
    engine: *const vouch_engine,
    project_id: *const c_char,
    out_keys_json: *mut *mut c_char,
) -> vouch_status {
    boundary(|| {
        check_out(out_keys_json, "out_keys_json")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let project_id = unsafe { read_str(project_id, "project_id") }?;
        let keys = engine.api_keys().list(project_id)?;
        let json = serde_json::to_string(&keys).expect("plain data serialises");
        // SAFETY: checked non-NULL above.
        unsafe { *out_keys_json = into_c_string(json) };
        Ok(())
    })
}

/// Revokes a key of a project; requests with it then get `api key is not active`. Revoking a revoked
/// key succeeds. `VOUCH_STATUS_NOT_FOUND` when the project has no such key.
///
/// # Safety
/// `engine` live or NULL; strings NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn vouch_api_key_revoke(
    engine: *const vouch_engine,
    project_id: *const c_char,
    key_id: *const c_char,
) -> vouch_status {
    boundary(|| {
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let project_id = unsafe { read_str(project_id, "project_id") }?;
        let key_id = unsafe { read_str(key_id, "key_id") }?;
        engine.api_keys().revoke(project_id, key_id)?;
        Ok(())
    })
}

/// Stores a scoring rule set (JSON, see the README) for a project, or, with a non-NULL `scores_id`,
/// as the custom set that keys with that `scores_id` use. Invalid rule sets are
/// `VOUCH_STATUS_INVALID_ARGUMENT` with a message naming the field.
///
/// # Safety
/// `engine` live or NULL; strings NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn vouch_scoring_rules_set(
    engine: *const vouch_engine,
    project_id: *const c_char,
    scores_id: *const c_char,
    rules_json: *const c_char,
) -> vouch_status {
    boundary(|| {
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let project_id = unsafe { read_str(project_id, "project_id") }?;
        let scores_id = unsafe { read_optional_str(scores_id, "scores_id") }?;
        let rules = RuleSet::from_json(unsafe { read_str(rules_json, "rules_json") }?)
            .map_err(vouch::Error::from)?;
        engine.rules().set(project_id, scores_id, &rules)?;
        Ok(())
    })
}
