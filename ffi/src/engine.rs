//! `vouch_engine`: open from JSON options, free.

use std::ffi::c_char;

use super::boundary::{boundary, check_out, read_str, FfiError};
use super::status::vouch_status;
use vouch::Engine;

/// An open engine: the database, the keys, the worker pool.
///
/// Thread safety: one `vouch_engine` may be used from any number of threads at once; every call
/// taking `const vouch_engine *` is safe to make concurrently. Free it once, after all calls on it
/// have returned.
#[expect(non_camel_case_types, reason = "C naming of the exported type")]
pub struct vouch_engine(pub(super) Engine);

/// Opens an engine from JSON options (see `EngineOptions` in the README: `database`,
/// `template_key`, `api_keys`, `threads`, `models_dir`).
///
/// On success writes a new engine to `*out_engine`; free it with `vouch_engine_free`.
/// Errors: `VOUCH_STATUS_NULL_ARGUMENT`, `VOUCH_STATUS_INVALID_UTF8`, `VOUCH_STATUS_INVALID_OPTIONS`
/// (the message names the field), `VOUCH_STATUS_STORAGE`.
///
/// # Safety
/// `options_json` must be NULL or a NUL-terminated string; `out_engine` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_engine_new(
    options_json: *const c_char,
    out_engine: *mut *mut vouch_engine,
) -> vouch_status {
    boundary(|| {
        check_out(out_engine, "out_engine")?;
        // SAFETY: per this function's contract.
        let options = unsafe { read_str(options_json, "options_json") }?;
        let engine = Engine::open_json(options).map_err(FfiError::from)?;
        // SAFETY: checked non-NULL above; the caller provides a writable pointer.
        unsafe { *out_engine = Box::into_raw(Box::new(vouch_engine(engine))) };
        Ok(())
    })
}

/// Closes an engine and frees it. NULL is a no-op.
///
/// # Safety
/// `engine` must be NULL or a pointer from `vouch_engine_new` not freed yet, with no call on it still
/// running on another thread.
#[no_mangle]
pub unsafe extern "C" fn vouch_engine_free(engine: *mut vouch_engine) {
    if engine.is_null() {
        return;
    }
    // Dropping closes the database and joins the worker pool; a panic there must not reach C,
    // nor the host's stderr.
    let _running = super::boundary::InFlight::enter();
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: from Box::into_raw in vouch_engine_new, freed once per the contract.
        drop(unsafe { Box::from_raw(engine) });
    }));
}

/// Borrows the engine behind a C pointer.
///
/// # Safety
/// `engine` must be NULL or a live pointer from `vouch_engine_new`.
pub(super) unsafe fn engine_ref<'a>(engine: *const vouch_engine) -> Result<&'a Engine, FfiError> {
    if engine.is_null() {
        return Err(FfiError::null("engine"));
    }
    // SAFETY: non-NULL and live per the contract.
    Ok(unsafe { &(*engine).0 })
}
