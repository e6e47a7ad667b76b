//! Document primitive: the machine-readable zone of a document image, read, parsed and validated.
//! `docauth/check` through `vouch_request` returns the same fields.

use std::ffi::c_char;

use super::boundary::{boundary, check_out, into_c_string, read_bytes};
use super::engine::{engine_ref, vouch_engine};
use super::status::vouch_status;

/// Reads the machine-readable zone of a document image (JPEG or PNG; skewed, sideways or upside
/// down) into a JSON string to free with `vouch_string_free`: the fields (`mrz_format`,
/// `document_type`, `issuing_state`, `surname`, `given_names`, `name`, `document_number`,
/// `nationality`, `date_of_birth`, `sex`, `expiry_date`, `expired`, `personal_number`,
/// `optional_data_2`), `portrait` (box and score, or null) and `mrz_validation` (`checks`,
/// `valid`, `lines`). Failed check digits are reported there, not as an error.
/// `VOUCH_STATUS_NO_DOCUMENT` when no zone is found, `VOUCH_STATUS_MEDIA` for an undecodable
/// image, `VOUCH_STATUS_MODEL` when the engine was opened without `models_dir`.
///
/// # Safety
/// `engine` live or NULL; `data` valid for `len` bytes; `out_json` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_document_read(
    engine: *const vouch_engine,
    data: *const u8,
    len: usize,
    out_json: *mut *mut c_char,
) -> vouch_status {
    boundary(|| {
        check_out(out_json, "out_json")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let bytes = unsafe { read_bytes(data, len, "data") }?;
        let check = engine.documents().check(bytes)?;
        // SAFETY: checked non-NULL above.
        unsafe { *out_json = into_c_string(vouch::api::document_json(&check, true).to_string()) };
        Ok(())
    })
}
