//! [`vouch_status`], the per-thread last error message, and freeing returned strings.

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};

/// Result of every fallible call. Values are explicit and never reused.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[expect(non_camel_case_types, reason = "C naming of the exported type")]
pub enum vouch_status {
    /// Success; outputs were written.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullArgument = 1,
    /// A string argument was not valid UTF-8.
    InvalidUtf8 = 2,
    /// A JSON argument was not valid JSON or not of the expected shape.
    InvalidJson = 3,
    /// The engine options were rejected.
    InvalidOptions = 4,
    /// An argument was rejected (the message says which and why).
    InvalidArgument = 5,
    /// The named resource does not exist.
    NotFound = 6,
    /// The call conflicts with the resource's state.
    Conflict = 7,
    /// An API key was missing, invalid or revoked.
    AuthFailed = 8,
    /// The operation is not allowed.
    Forbidden = 9,
    /// A consent the operation needs is missing.
    ConsentRequired = 10,
    /// A sealed template could not be opened (wrong key, wrong owner, altered).
    TemplateUnreadable = 11,
    /// The database failed.
    Storage = 12,
    /// Media could not be decoded: malformed, truncated, an unsupported codec (the message names the
    /// cargo feature that adds it), or over a decode limit.
    Media = 13,
    /// No usable face was found in the image or frames (none, or too poor; the message says which).
    NoFace = 14,
    /// The models the call needs are not loaded (the engine was opened without `models_dir`) or
    /// failed to run.
    Model = 15,
    /// Not enough usable speech in the audio (silent, no speech, too little, or clipped when
    /// enrolling; the message says which).
    NoSpeech = 16,
    /// No machine-readable zone was found in the document image.
    NoDocument = 17,
    /// The project's job credits are exhausted (job create and replay; HTTP 402).
    CreditsExhausted = 18,
    /// The project's daily job execution cap is reached (HTTP 429).
    DailyLimit = 19,
    /// A bug in the library: a Rust panic was caught at the boundary. The engine may still be used.
    Panic = 100,
}

impl vouch_status {
    fn text(self) -> &'static CStr {
        match self {
            vouch_status::Ok => c"ok",
            vouch_status::NullArgument => c"a required argument was NULL",
            vouch_status::InvalidUtf8 => c"a string argument was not valid UTF-8",
            vouch_status::InvalidJson => c"a JSON argument was invalid",
            vouch_status::InvalidOptions => c"the engine options were rejected",
            vouch_status::InvalidArgument => c"an argument was rejected",
            vouch_status::NotFound => c"not found",
            vouch_status::Conflict => c"conflicts with the current state",
            vouch_status::AuthFailed => c"api key missing, invalid or revoked",
            vouch_status::Forbidden => c"not allowed",
            vouch_status::ConsentRequired => c"consent required",
            vouch_status::TemplateUnreadable => c"template could not be opened",
            vouch_status::Storage => c"storage error",
            vouch_status::Media => c"media could not be decoded",
            vouch_status::NoFace => c"no usable face found",
            vouch_status::Model => c"models not loaded or failed",
            vouch_status::NoSpeech => c"not enough usable speech",
            vouch_status::NoDocument => c"no machine-readable zone found",
            vouch_status::CreditsExhausted => c"job credits exhausted",
            vouch_status::DailyLimit => c"daily job execution limit reached",
            vouch_status::Panic => c"internal error (panic caught)",
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

pub(super) fn set_last_error(message: &str) {
    // Interior NULs would cut the message short in C; replace them.
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|slot| *slot.borrow_mut() = Some(message));
}

pub(super) fn clear_last_error() {
    LAST_ERROR.with(|slot| *slot.borrow_mut() = None);
}

/// The message of the last failed `vouch_` call on this thread, or an empty string.
///
/// The pointer stays valid until the next `vouch_` call on the same thread; copy it to keep it.
/// Never NULL. Messages never contain biometric data.
#[no_mangle]
pub extern "C" fn vouch_last_error_message() -> *const c_char {
    LAST_ERROR.with(|slot| match slot.borrow().as_ref() {
        Some(message) => message.as_ptr(),
        None => c"".as_ptr(),
    })
}

/// A static description of a status value; any value, even one not in `vouch_status`, is accepted
/// (unknown values give "unknown status"). Never NULL; never free it.
#[no_mangle]
pub extern "C" fn vouch_status_text(status: u32) -> *const c_char {
    let known = [
        vouch_status::Ok,
        vouch_status::NullArgument,
        vouch_status::InvalidUtf8,
        vouch_status::InvalidJson,
        vouch_status::InvalidOptions,
        vouch_status::InvalidArgument,
        vouch_status::NotFound,
        vouch_status::Conflict,
        vouch_status::AuthFailed,
        vouch_status::Forbidden,
        vouch_status::ConsentRequired,
        vouch_status::TemplateUnreadable,
        vouch_status::Storage,
        vouch_status::Media,
        vouch_status::NoFace,
        vouch_status::Model,
        vouch_status::NoSpeech,
        vouch_status::NoDocument,
        vouch_status::CreditsExhausted,
        vouch_status::DailyLimit,
        vouch_status::Panic,
    ];
    known
        .into_iter()
        .find(|candidate| *candidate as u32 == status)
        .map_or(c"unknown status", vouch_status::text)
        .as_ptr()
}

/// Frees a string the library returned through an out-parameter (`char **`). NULL is a no-op.
///
/// # Safety
/// `string` must be NULL or a pointer returned by this library that has not been freed yet.
#[no_mangle]
pub unsafe extern "C" fn vouch_string_free(string: *mut c_char) {
    if string.is_null() {
        return;
    }
    // SAFETY: the caller passes a pointer from `CString::into_raw` in this library, freed once.
    drop(unsafe { CString::from_raw(string) });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_status_values_have_a_defined_text() {
        // SAFETY: vouch_status_text returns static C strings.
        let text = |value| {
            unsafe { CStr::from_ptr(vouch_status_text(value)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(text(0), "ok");
        assert_eq!(text(100), "internal error (panic caught)");
        assert_eq!(text(57), "unknown status");
        assert_eq!(text(u32::MAX), "unknown status");
    }
}
