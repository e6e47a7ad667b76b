//! JPEG/PNG decoding (EXIF orientation, CMYK, grey, 16-bit, alpha) through `decode_image` on
//! arbitrary bytes, under 2048 x 2048 / 4 Mpx limits. It must return `Ok` within the limits or
//! `Err`, never panic, abort or allocate past the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vouch_media::{decode_image, ImageLimits};

fuzz_target!(|data: &[u8]| {
    let limits = ImageLimits {
        max_width: 2048,
        max_height: 2048,
        max_pixels: 4_000_000,
        ..Default::default()
    };
    let _ = decode_image(data, &limits);
});
