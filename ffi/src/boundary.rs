//! The one boundary helper every export goes through: clears the thread's last error, catches panics,
//! and turns errors into a [`vouch_status`] plus a message. Also the checked readers of C arguments.

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use super::status::{clear_last_error, set_last_error, vouch_status};
use vouch::Error;

/// A failed call: the status to return and the message for `vouch_last_error_message`.
#[derive(Debug)]
pub(super) struct FfiError {
    pub status: vouch_status,
    pub message: String,
}

impl FfiError {
    pub fn new(status: vouch_status, message: impl Into<String>) -> FfiError {
        FfiError {
            status,
            message: message.into(),
        }
    }

    pub fn null(name: &str) -> FfiError {
        FfiError::new(vouch_status::NullArgument, format!("{name} is NULL"))
    }
}

impl From<Error> for FfiError {
    fn from(error: Error) -> FfiError {
        let status = match &error {
            Error::InvalidOptions(_) => vouch_status::InvalidOptions,
            Error::InvalidArgument(_) | Error::InvalidScheduledAt(_) | Error::RuleSet(_) => {
                vouch_status::InvalidArgument
            }
            Error::CreditsExhausted(_) => vouch_status::CreditsExhausted,
            Error::DailyLimit(_) => vouch_status::DailyLimit,
            Error::NotFound(_) => vouch_status::NotFound,
            Error::Conflict(_) => vouch_status::Conflict,
            Error::Auth(_) => vouch_status::AuthFailed,
            Error::Forbidden(_) => vouch_status::Forbidden,
            Error::ConsentRequired(_) => vouch_status::ConsentRequired,
            Error::TemplateUnreadable => vouch_status::TemplateUnreadable,
            // The library a host links opens SQLite only; a database it cannot reach is storage.
            Error::Storage(_) | Error::Unavailable(_) => vouch_status::Storage,
            // Inconsistent frames or audio handed over by the caller are the caller's argument error.
            Error::Media(vouch::MediaError::InvalidRaw(_)) => vouch_status::InvalidArgument,
            Error::Media(_) => vouch_status::Media,
            Error::NoFace(_) => vouch_status::NoFace,
            Error::NoSpeech(_) => vouch_status::NoSpeech,
            Error::NoDocument(_) => vouch_status::NoDocument,
            Error::Model(_) => vouch_status::Model,
            // `vouch::Error` is `#[non_exhaustive]`: a kind added after this table is the
            // engine's own failure until it gets a status of its own here.
            _ => vouch_status::Storage,
        };
        FfiError::new(status, error.to_string())
    }
}

/// Exports running now, on any thread (a panic on one of the engine's worker threads belongs to the
/// export that is waiting for it).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Panics kept off stderr because an export was running (for tests and diagnostics).
static QUIETED: AtomicUsize = AtomicUsize::new(0);

static QUIET_HOOK: Once = Once::new();

/// Marks an export as running for as long as it lives.
pub(super) struct InFlight;

impl InFlight {
    /// Installs the quiet panic hook (once per process) and marks an export as running.
    pub(super) fn enter() -> InFlight {
        QUIET_HOOK.call_once(|| {
            // The host owns its stderr: a panic that the boundary will catch and report as
            // VOUCH_STATUS_PANIC (with its message in vouch_last_error_message) is not also
            // printed by Rust's default hook. Panics while no export runs (another Rust library
            // in the same process) still reach the hook that was there before.
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if IN_FLIGHT.load(Ordering::SeqCst) > 0 {
                    QUIETED.fetch_add(1, Ordering::SeqCst);
                } else {
                    previous(info);
                }
            }));
        });
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs the body of an export. A panic is caught here, never unwinds into C and is not printed
/// to the host's stderr (see [`InFlight`]).
pub(super) fn boundary(body: impl FnOnce() -> Result<(), FfiError>) -> vouch_status {
    clear_last_error();
    let _running = InFlight::enter();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => vouch_status::Ok,
        Ok(Err(error)) => {
            set_last_error(&error.message);
            error.status
        }
        Err(payload) => {
            let detail = payload
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            set_last_error(&format!(
                "internal error: a panic was caught at the C boundary: {detail}"
            ));
            vouch_status::Panic
        }
    }
}

/// Reads a required C string argument.
///
/// # Safety
/// `pointer` must be NULL or point to a NUL-terminated string that outlives `'a`.
pub(super) unsafe fn read_str<'a>(pointer: *const c_char, name: &str) -> Result<&'a str, FfiError> {
    // SAFETY: forwarded from the caller's contract.
    unsafe { read_optional_str(pointer, name) }?.ok_or_else(|| FfiError::null(name))
}

/// Reads an optional (NULL allowed) C string argument.
///
/// # Safety
/// `pointer` must be NULL or point to a NUL-terminated string that outlives `'a`.
pub(super) unsafe fn read_optional_str<'a>(
    pointer: *const c_char,
    name: &str,
) -> Result<Option<&'a str>, FfiError> {
    if pointer.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    let text = unsafe { CStr::from_ptr(pointer) };
    text.to_str().map(Some).map_err(|_| {
        FfiError::new(
            vouch_status::InvalidUtf8,
            format!("{name} is not valid UTF-8"),
        )
    })
}

/// Reads a byte buffer argument; NULL is allowed only with length 0.
///
/// # Safety
/// `pointer` must be NULL or valid for reads of `len` bytes for `'a`.
pub(super) unsafe fn read_bytes<'a>(
    pointer: *const u8,
    len: usize,
    name: &str,
) -> Result<&'a [u8], FfiError> {
    if pointer.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(FfiError::null(name))
        };
    }
    if len > isize::MAX as usize {
        return Err(FfiError::new(
            vouch_status::InvalidArgument,
            format!("{name} length is too large"),
        ));
    }
    // SAFETY: non-NULL, valid for `len` bytes per the caller's contract, len checked above.
    Ok(unsafe { std::slice::from_raw_parts(pointer, len) })
}

/// Hands a Rust string to C as a `char *` the caller frees with `vouch_string_free`.
pub(super) fn into_c_string(text: String) -> *mut c_char {
    CString::new(text.replace('\0', " "))
        .unwrap_or_default()
        .into_raw()
}

/// Checks an out-parameter for NULL.
pub(super) fn check_out<T>(pointer: *mut T, name: &str) -> Result<(), FfiError> {
    if pointer.is_null() {
        Err(FfiError::null(name))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_a_status_and_a_message() {
        let quieted = QUIETED.load(Ordering::SeqCst);
        let status = boundary(|| panic!("boom"));
        assert_eq!(status, vouch_status::Panic);
        // The panic went to the quiet hook, not to stderr.
        assert!(QUIETED.load(Ordering::SeqCst) > quieted);
        // SAFETY: the last error pointer is valid until the next call on this thread.
        let message = unsafe { CStr::from_ptr(super::super::vouch_last_error_message()) }
            .to_str()
            .unwrap()
            .to_owned();
        assert!(message.contains("boom"), "{message}");
        assert_eq!(boundary(|| Ok(())), vouch_status::Ok);
        // SAFETY: as above.
        let cleared = unsafe { CStr::from_ptr(super::super::vouch_last_error_message()) };
        assert!(cleared.to_bytes().is_empty());
    }
}
