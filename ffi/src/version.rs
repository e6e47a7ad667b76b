//! Version: `VOUCH_VERSION_*` macros in the header and [`vouch_version`] at run time. A test ties both
//! to Cargo.toml so they cannot drift.

use std::ffi::c_char;

/// Major version of the library (Cargo.toml).
pub const VOUCH_VERSION_MAJOR: u32 = 0;
/// Minor version of the library (Cargo.toml).
pub const VOUCH_VERSION_MINOR: u32 = 1;
/// Patch version of the library (Cargo.toml).
pub const VOUCH_VERSION_PATCH: u32 = 0;

/// The library's version as `MAJOR.MINOR.PATCH`. Static; never NULL; never free it.
#[no_mangle]
pub extern "C" fn vouch_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_constants_match_cargo_toml() {
        assert_eq!(
            VOUCH_VERSION_MAJOR.to_string(),
            env!("CARGO_PKG_VERSION_MAJOR")
        );
        assert_eq!(
            VOUCH_VERSION_MINOR.to_string(),
            env!("CARGO_PKG_VERSION_MINOR")
        );
        assert_eq!(
            VOUCH_VERSION_PATCH.to_string(),
            env!("CARGO_PKG_VERSION_PATCH")
        );
        // SAFETY: vouch_version returns a static NUL-terminated string.
        let runtime = unsafe { std::ffi::CStr::from_ptr(vouch_version()) };
        assert_eq!(runtime.to_str().unwrap(), vouch::VERSION);
    }
}
