//! Still images for faces and identity documents: [`decode_image`] turns JPEG, PNG or WebP bytes
//! into an upright RGB [`Frame`], within the bounds of [`ImageLimits`].
//!
//! JPEG, PNG and WebP (phones and browsers save photos as WebP, often under a `.jpg` name) are
//! accepted, recognised by their magic bytes, never by a file name. HEIC/HEIF (iPhone photos) is
//! refused as an unknown format: its codec is HEVC, which the library does not carry by default;
//! hosts convert it (iOS `UIImage.jpegData`). The EXIF orientation (JPEG APP1, PNG eXIf or the
//! WebP EXIF chunk) is applied, so phone photos come out upright. Grey,
//! 16-bit, CMYK and alpha images all become 8-bit RGB; alpha is composited over white, because a
//! transparent background usually hides black (0,0,0,0) pixels that would otherwise surround the
//! face or document. Dimensions are checked from the header before any pixel is decoded, so a small
//! file that claims a huge picture (a decompression bomb) fails cheaply.

use std::io::Cursor;

use ::image::codecs::jpeg::JpegDecoder;
use ::image::codecs::png::PngDecoder;
use ::image::codecs::webp::WebPDecoder;
use ::image::error::{ImageError, LimitError, LimitErrorKind};
use ::image::{DynamicImage, ImageDecoder, RgbImage};

use super::{Frame, MediaError};

/// What [`decode_image`] accepts, listed in [`MediaError::UnknownFormat`].
const EXPECTED: &str = "jpg, jpeg, png or webp image";

/// JPEG files start with SOI followed by the first marker's 0xFF.
const JPEG_MAGIC: &[u8] = &[0xFF, 0xD8, 0xFF];
/// The 8-byte PNG signature.
const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Whether `bytes` start like a WebP file: a RIFF container of form type `WEBP`.
fn is_webp(bytes: &[u8]) -> bool {
    bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP"
}

/// Bounds on the images [`decode_image`] will decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// Largest accepted file, bytes.
    pub max_bytes: usize,
    /// Largest accepted stored width, pixels.
    pub max_width: u32,
    /// Largest accepted stored height, pixels.
    pub max_height: u32,
    /// Largest accepted `width * height`.
    pub max_pixels: u64,
}

impl Default for ImageLimits {
    /// 50 MiB, 8192 x 8192, 40 megapixels: above any phone camera or document scanner at 600 dpi,
    /// below what would exhaust memory on a phone (40 Mpx of 16-bit RGBA is 320 MB while decoding).
    fn default() -> Self {
        ImageLimits {
            max_bytes: 50 * 1024 * 1024,
            max_width: 8192,
            max_height: 8192,
            max_pixels: 40_000_000,
        }
    }
}

/// The accepted formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Jpeg,
    Png,
    WebP,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Jpeg => "JPEG",
            Format::Png => "PNG",
            Format::WebP => "WebP",
        }
    }
}

/// Decodes a JPEG, PNG or WebP image into an upright 8-bit RGB [`Frame`] with timestamp 0.
///
/// The EXIF orientation is applied (all eight values), so `width`/`height` are the display size.
/// Alpha is composited over white; grey is replicated to RGB; 16-bit samples are rounded to 8 bits;
/// CMYK JPEGs are converted to RGB.
///
/// # Errors
/// [`MediaError::Empty`], [`MediaError::TooLarge`] over `limits.max_bytes`,
/// [`MediaError::UnknownFormat`] for anything but JPEG, PNG or WebP, [`MediaError::LimitExceeded`] when the
/// header's dimensions exceed the limits (checked before decoding pixels),
/// [`MediaError::Truncated`] when the file ends early, and [`MediaError::Decode`] when the decoder
/// rejects the data.
pub fn decode_image(bytes: &[u8], limits: &ImageLimits) -> Result<Frame, MediaError> {
    if bytes.is_empty() {
        return Err(MediaError::Empty);
    }
    if bytes.len() > limits.max_bytes {
        return Err(MediaError::TooLarge {
            size: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    let format = sniff(bytes).ok_or(MediaError::UnknownFormat { expected: EXPECTED })?;
    let decoder_limits = decoder_limits(limits);
    let err = |error| map_image_error(error, format);
    let (image, orientation) = match format {
        Format::Png => {
            // Our own look at IHDR first: a bomb is refused before the decoder reads further.
            let (width, height) = png_header_dimensions(bytes)?;
            check_dimensions(width, height, limits)?;
            let decoder =
                PngDecoder::with_limits(Cursor::new(bytes), decoder_limits.clone()).map_err(err)?;
            decode_bounded(decoder, limits, decoder_limits, format)?
        }
        Format::Jpeg => {
            // `image` runs zune-jpeg in lenient mode, which accepts a scan that stops early (a
            // file missing its last bytes decodes "fine"), so completeness is checked separately.
            check_jpeg_complete(bytes)?;
            let decoder = JpegDecoder::new(Cursor::new(bytes)).map_err(err)?;
            decode_bounded(decoder, limits, decoder_limits, format)?
        }
        // The decoder reads only the headers here (VP8/VP8L/VP8X dimensions), so a bomb is
        // refused before any pixel is decoded.
        Format::WebP => {
            let decoder = WebPDecoder::new(Cursor::new(bytes)).map_err(err)?;
            decode_bounded(decoder, limits, decoder_limits, format)?
        }
    };
    let mut upright = DynamicImage::ImageRgb8(to_rgb_over_white(image));
    upright.apply_orientation(orientation);
    let rgb = upright.into_rgb8();
    Ok(Frame {
        timestamp_ms: 0,
        width: rgb.width(),
        height: rgb.height(),
        rgb: rgb.into_raw(),
    })
}

/// Decodes the pixels of an opened decoder once its header's dimensions pass the limits, with the
/// decoder's own allocation limits set, and reads the EXIF orientation.
fn decode_bounded(
    mut decoder: impl ImageDecoder,
    limits: &ImageLimits,
    decoder_limits: ::image::Limits,
    format: Format,
) -> Result<(DynamicImage, ::image::metadata::Orientation), MediaError> {
    let err = |error| map_image_error(error, format);
    let (width, height) = decoder.dimensions();
    check_dimensions(width, height, limits)?;
    decoder.set_limits(decoder_limits).map_err(err)?;
    let orientation = decoder.orientation().map_err(err)?;
    let image = DynamicImage::from_decoder(decoder).map_err(err)?;
    Ok((image, orientation))
}

/// Whether `bytes` start like an image [`decode_image`] takes (JPEG, PNG or WebP), by content
/// alone: the check the request path makes before accepting an image part.
pub fn is_image(bytes: &[u8]) -> bool {
    sniff(bytes).is_some()
}

/// Recognises the format by its magic bytes.
fn sniff(bytes: &[u8]) -> Option<Format> {
    if bytes.starts_with(JPEG_MAGIC) {
        Some(Format::Jpeg)
    } else if bytes.starts_with(PNG_MAGIC) {
        Some(Format::Png)
    } else if is_webp(bytes) {
        Some(Format::WebP)
    } else {
        None
    }
}

/// The decoder's own limits, a second line of defence behind [`check_dimensions`]: they bound the
/// allocation for the largest pixel type (16-bit RGBA, 8 bytes per pixel).
fn decoder_limits(limits: &ImageLimits) -> ::image::Limits {
    let mut decoder_limits = ::image::Limits::default();
    decoder_limits.max_image_width = Some(limits.max_width);
    decoder_limits.max_image_height = Some(limits.max_height);
    decoder_limits.max_alloc = Some(limits.max_pixels.saturating_mul(8).max(1 << 20));
    decoder_limits
}

fn check_dimensions(width: u32, height: u32, limits: &ImageLimits) -> Result<(), MediaError> {
    if width == 0 || height == 0 {
        return Err(MediaError::Malformed(format!(
            "the image is {width}x{height} pixels"
        )));
    }
    if width > limits.max_width {
        return Err(MediaError::LimitExceeded {
            what: "image width",
            value: u64::from(width),
            limit: u64::from(limits.max_width),
        });
    }
    if height > limits.max_height {
        return Err(MediaError::LimitExceeded {
            what: "image height",
            value: u64::from(height),
            limit: u64::from(limits.max_height),
        });
    }
    let pixels = u64::from(width) * u64::from(height);
    if pixels > limits.max_pixels {
        return Err(MediaError::LimitExceeded {
            what: "image pixel count",
            value: pixels,
            limit: limits.max_pixels,
        });
    }
    Ok(())
}

/// Width and height from the PNG IHDR chunk, which the format requires to come first.
fn png_header_dimensions(bytes: &[u8]) -> Result<(u32, u32), MediaError> {
    // Signature (8), chunk length (4), "IHDR" (4), width (4), height (4).
    let header = bytes
        .get(8..24)
        .ok_or_else(|| MediaError::Truncated("the PNG ends inside its header".into()))?;
    if &header[4..8] != b"IHDR" {
        return Err(MediaError::Malformed(
            "the PNG does not start with an IHDR chunk".into(),
        ));
    }
    let width = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    let height = u32::from_be_bytes([header[12], header[13], header[14], header[15]]);
    Ok((width, height))
}

/// Checks that a JPEG has an end-of-image marker after its first scan.
///
/// The marker segments before the first SOS are walked by their lengths (an EXIF thumbnail in APP1
/// carries its own EOI, which must not count); inside entropy-coded data a 0xFF byte is always
/// followed by 0x00 or a restart/SOS/DHT marker, so `FF D9` there is the real end.
fn check_jpeg_complete(bytes: &[u8]) -> Result<(), MediaError> {
    let truncated = || MediaError::Truncated("the JPEG ends before its end-of-image marker".into());
    let mut at = 2; // after SOI
    loop {
        let marker = bytes.get(at..at + 2).ok_or_else(truncated)?;
        if marker[0] != 0xFF {
            return Err(MediaError::Malformed(format!(
                "expected a JPEG marker at byte {at}"
            )));
        }
        match marker[1] {
            // Fill bytes before a marker.
            0xFF => at += 1,
            // Stand-alone markers without a length.
            0x01 | 0xD0..=0xD7 => at += 2,
            0xD9 => {
                return Err(MediaError::Malformed(
                    "the JPEG ends before its first scan".into(),
                ))
            }
            0xDA => break,
            _ => {
                let length = bytes.get(at + 2..at + 4).ok_or_else(truncated)?;
                at += 2 + usize::from(u16::from_be_bytes([length[0], length[1]]));
            }
        }
    }
    let scan = bytes.get(at..).unwrap_or_default();
    if scan.windows(2).any(|pair| pair == [0xFF, 0xD9]) {
        Ok(())
    } else {
        Err(truncated())
    }
}

/// Converts any decoded image to 8-bit RGB, compositing alpha over white.
fn to_rgb_over_white(image: DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        // Grey is replicated, 16-bit is rounded, by `image`'s own conversion.
        return image.into_rgb8();
    }
    let rgba = image.into_rgba8();
    let (width, height) = rgba.dimensions();
    let mut rgb = RgbImage::new(width, height);
    for (out, pixel) in rgb.pixels_mut().zip(rgba.pixels()) {
        let [red, green, blue, alpha] = pixel.0;
        let alpha = u32::from(alpha);
        // Rounded c * a + 255 * (1 - a); the result is at most 255, so the conversion never saturates.
        let over_white = |channel: u8| {
            u8::try_from((u32::from(channel) * alpha + 255 * (255 - alpha) + 127) / 255)
                .unwrap_or(u8::MAX)
        };
        out.0 = [over_white(red), over_white(green), over_white(blue)];
    }
    rgb
}

/// Maps `image` errors to [`MediaError`]s that say what was wrong with the file.
fn map_image_error(error: ImageError, format: Format) -> MediaError {
    let codec = format.name();
    match error {
        ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            MediaError::Truncated(format!("the {codec} image ends early"))
        }
        ImageError::Limits(limit) => limit_error(&limit, codec),
        ImageError::Decoding(decoding) => {
            let detail = decoding.to_string();
            // The png crate reports a file that stops mid-chunk as a decoding error about EOF.
            if detail.to_ascii_lowercase().contains("eof") || detail.contains("end of file") {
                MediaError::Truncated(format!("the {codec} image ends early ({detail})"))
            } else {
                MediaError::Decode { codec, detail }
            }
        }
        other => MediaError::Decode {
            codec,
            detail: other.to_string(),
        },
    }
}

fn limit_error(limit: &LimitError, codec: &'static str) -> MediaError {
    match limit.kind() {
        LimitErrorKind::DimensionError => MediaError::Decode {
            codec,
            detail: "the image dimensions exceed the decoder's limits".into(),
        },
        _ => MediaError::Decode {
            codec,
            detail: format!("the image needs more memory than allowed ({limit})"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn media_path(name: &str) -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/media/")).join(name)
    }

    fn read(name: &str) -> Vec<u8> {
        std::fs::read(media_path(name))
            .unwrap_or_else(|error| panic!("{name}: {error} (run scripts/make-test-media)"))
    }

    fn decode(name: &str) -> Frame {
        decode_image(&read(name), &ImageLimits::default())
            .unwrap_or_else(|error| panic!("{name}: {error}"))
    }

    fn pixel(frame: &Frame, x: u32, y: u32) -> [u8; 3] {
        let at = ((y * frame.width + x) * 3) as usize;
        [frame.rgb[at], frame.rgb[at + 1], frame.rgb[at + 2]]
    }

    fn assert_close(name: &str, actual: [u8; 3], expected: [u8; 3], tolerance: u8) {
        let close = actual
            .iter()
            .zip(expected)
            .all(|(a, e)| a.abs_diff(e) <= tolerance);
        assert!(
            close,
            "{name}: pixel {actual:?}, expected {expected:?} +-{tolerance}"
        );
    }

    /// The marker picture: 64x48, red 8x8 top-left, blue 8x8 bottom-right, white elsewhere.
    fn assert_marker(name: &str, tolerance: u8) {
        let frame = decode(name);
        assert_eq!((frame.width, frame.height), (64, 48), "{name}");
        assert_eq!(frame.rgb.len(), 64 * 48 * 3, "{name}");
        assert_eq!(frame.timestamp_ms, 0);
        for (x, y) in [(0, 0), (3, 3), (6, 1)] {
            assert_close(name, pixel(&frame, x, y), [255, 0, 0], tolerance);
        }
        for (x, y) in [(63, 47), (60, 44), (57, 46)] {
            assert_close(name, pixel(&frame, x, y), [0, 0, 255], tolerance);
        }
        for (x, y) in [(63, 0), (0, 47), (20, 20), (12, 3), (50, 44)] {
            assert_close(name, pixel(&frame, x, y), [255, 255, 255], tolerance);
        }
    }

    #[test]
    fn png_rgb_is_exact() {
        assert_marker("marker.png", 0);
    }

    #[test]
    fn jpeg_rgb() {
        assert_marker("marker.jpg", 6);
    }

    /// WebP as phones save it: lossless exact, lossy close; recognised by content whatever the
    /// file is called; a WebP that claims a huge picture is refused from its header; a cut one is
    /// an error, not a panic.
    #[test]
    fn webp_decodes_and_is_bounded() {
        assert_marker("marker.webp", 0);
        assert_marker("marker_lossy.webp", 24);
        let bytes = read("marker.webp");
        assert!(is_webp(&bytes) && !is_webp(&read("marker.png")));
        let limits = ImageLimits {
            max_width: 32,
            ..ImageLimits::default()
        };
        assert_eq!(
            decode_image(&bytes, &limits),
            Err(MediaError::LimitExceeded {
                what: "image width",
                value: 64,
                limit: 32
            })
        );
        for cut in [bytes.len() - 4, bytes.len() / 2, 20, 12] {
            assert!(
                decode_image(&bytes[..cut], &ImageLimits::default()).is_err(),
                "cut at {cut}"
            );
        }
        // HEIC (an ISO box "ftypheic") is not an image this library decodes.
        assert!(matches!(
            decode_image(
                b"\0\0\0\x18ftypheic\0\0\0\0mif1heic",
                &ImageLimits::default()
            ),
            Err(MediaError::UnknownFormat { .. })
        ));
    }

    #[test]
    fn png_16_bit_rounds_to_8_bit() {
        assert_marker("marker_16bit.png", 0);
    }

    #[test]
    fn cmyk_jpeg_keeps_its_colours() {
        assert_marker("marker_cmyk.jpg", 12);
    }

    #[test]
    fn exif_orientation_6_is_applied() {
        assert_marker("marker_exif6.jpg", 6);
    }

    #[test]
    fn alpha_is_composited_over_white() {
        // Transparent pixels are stored as (0,0,0,0): dropping alpha would make them black.
        assert_marker("marker_rgba.png", 0);
        let frame = decode("marker_rgba.png");
        // Black at alpha 128 over white.
        assert_close("marker_rgba.png", pixel(&frame, 30, 22), [127, 127, 127], 1);
    }

    #[test]
    fn grey_is_replicated_to_rgb() {
        let frame = decode("marker_grey.png");
        assert_eq!((frame.width, frame.height), (64, 48));
        assert_eq!(pixel(&frame, 2, 2), [76, 76, 76]);
        assert_eq!(pixel(&frame, 61, 45), [29, 29, 29]);
        assert_eq!(pixel(&frame, 30, 30), [255, 255, 255]);
    }

    #[test]
    fn all_eight_exif_orientations() {
        // Build every orientation from the upright marker: store the inverse transform of the
        // pixels plus the tag in a PNG eXIf chunk, and expect the upright marker back.
        let upright = decode("marker.png");
        let upright_image =
            RgbImage::from_raw(upright.width, upright.height, upright.rgb.clone()).expect("size");
        for orientation in 1..=8u8 {
            let stored = match orientation {
                1 => upright_image.clone(),
                2 => ::image::imageops::flip_horizontal(&upright_image),
                3 => ::image::imageops::rotate180(&upright_image),
                4 => ::image::imageops::flip_vertical(&upright_image),
                // 5 = transpose: display = transpose(stored), so stored = transpose(upright).
                5 => {
                    ::image::imageops::flip_horizontal(&::image::imageops::rotate90(&upright_image))
                }
                6 => ::image::imageops::rotate270(&upright_image),
                // 7 = transverse.
                7 => ::image::imageops::flip_horizontal(&::image::imageops::rotate270(
                    &upright_image,
                )),
                _ => ::image::imageops::rotate90(&upright_image),
            };
            let png = png_with_orientation(&stored, orientation);
            let frame = decode_image(&png, &ImageLimits::default())
                .unwrap_or_else(|error| panic!("orientation {orientation}: {error}"));
            assert_eq!(
                (frame.width, frame.height),
                (64, 48),
                "orientation {orientation}"
            );
            assert_eq!(frame.rgb, upright.rgb, "orientation {orientation}");
        }
    }

    /// Encodes `image` as PNG with an eXIf chunk holding only the Orientation tag.
    fn png_with_orientation(image: &RgbImage, orientation: u8) -> Vec<u8> {
        let mut png = Vec::new();
        ::image::DynamicImage::ImageRgb8(image.clone())
            .write_to(&mut Cursor::new(&mut png), ::image::ImageFormat::Png)
            .expect("encode");
        let mut exif = b"MM\x00\x2a\x00\x00\x00\x08\x00\x01".to_vec();
        exif.extend_from_slice(&[
            0x01,
            0x12,
            0x00,
            0x03,
            0x00,
            0x00,
            0x00,
            0x01,
            0x00,
            orientation,
            0x00,
            0x00,
        ]);
        exif.extend_from_slice(&[0, 0, 0, 0]);
        // Insert eXIf right after IHDR (8 signature + 25 IHDR bytes).
        let chunk = png_chunk(b"eXIf", &exif);
        png.splice(33..33, chunk);
        png
    }

    fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut chunk = (data.len() as u32).to_be_bytes().to_vec();
        chunk.extend_from_slice(kind);
        chunk.extend_from_slice(data);
        let crc = crc32(&chunk[4..]);
        chunk.extend_from_slice(&crc.to_be_bytes());
        chunk
    }

    fn crc32(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in data {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn empty_is_an_error() {
        assert_eq!(
            decode_image(&[], &ImageLimits::default()),
            Err(MediaError::Empty)
        );
    }

    #[test]
    fn truncated_files_are_errors() {
        for name in [
            "marker.jpg",
            "marker.png",
            "marker_cmyk.jpg",
            "marker_exif6.jpg",
            "marker_16bit.png",
        ] {
            let bytes = read(name);
            // A PNG cut inside its IEND trailer still holds every pixel and decodes; a JPEG must
            // keep its EOI marker.
            let last = if name.ends_with(".jpg") {
                bytes.len() - 1
            } else {
                bytes.len() / 2
            };
            for cut in [bytes.len() / 2, last, 12, 3] {
                let result = decode_image(&bytes[..cut], &ImageLimits::default());
                assert!(
                    matches!(result, Err(MediaError::Truncated(_) | MediaError::Malformed(_) | MediaError::Decode { .. }))
                        // Fewer bytes than the PNG signature are no longer recognisable as PNG.
                        || (cut < 8 && matches!(result, Err(MediaError::UnknownFormat { .. }))),
                    "{name} cut at {cut}: {result:?}"
                );
            }
        }
        let half = read("marker.jpg");
        assert!(matches!(
            decode_image(&half[..half.len() / 2], &ImageLimits::default()),
            Err(MediaError::Truncated(_))
        ));
    }

    #[test]
    fn other_formats_are_refused() {
        let expected = Err(MediaError::UnknownFormat {
            expected: "jpg, jpeg, png or webp image",
        });
        assert_eq!(
            decode_image(
                b"GIF89a\x40\x00\x30\x00\x00\x00\x00;",
                &ImageLimits::default()
            ),
            expected
        );
        assert_eq!(decode_image(b"\xFF\xD8", &ImageLimits::default()), expected);
        // A WebP header with nothing after it is a WebP that ends early.
        assert!(matches!(
            decode_image(b"RIFF\x00\x00\x00\x00WEBPVP8 ", &ImageLimits::default()),
            Err(MediaError::Truncated(_))
        ));
    }

    #[test]
    fn a_huge_png_header_is_refused_before_decoding() {
        let mut ihdr = 100_000u32.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&100_000u32.to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        let mut png = PNG_MAGIC.to_vec();
        png.extend(png_chunk(b"IHDR", &ihdr));
        // A valid-looking but tiny IDAT (empty zlib stream) and IEND.
        png.extend(png_chunk(
            b"IDAT",
            &[0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
        ));
        png.extend(png_chunk(b"IEND", &[]));
        assert_eq!(
            decode_image(&png, &ImageLimits::default()),
            Err(MediaError::LimitExceeded {
                what: "image width",
                value: 100_000,
                limit: 8192
            })
        );
        // Within width and height but over the pixel count.
        let limits = ImageLimits {
            max_pixels: 1000,
            ..ImageLimits::default()
        };
        assert_eq!(
            decode_image(&read("marker.png"), &limits),
            Err(MediaError::LimitExceeded {
                what: "image pixel count",
                value: 64 * 48,
                limit: 1000
            })
        );
        let limits = ImageLimits {
            max_height: 40,
            ..ImageLimits::default()
        };
        assert_eq!(
            decode_image(&read("marker.jpg"), &limits),
            Err(MediaError::LimitExceeded {
                what: "image height",
                value: 48,
                limit: 40
            })
        );
    }

    #[test]
    fn over_max_bytes_is_refused() {
        let bytes = read("marker.png");
        let limits = ImageLimits {
            max_bytes: 100,
            ..ImageLimits::default()
        };
        assert_eq!(
            decode_image(&bytes, &limits),
            Err(MediaError::TooLarge {
                size: bytes.len(),
                limit: 100
            })
        );
    }

    #[test]
    fn garbage_after_a_valid_magic_never_panics() {
        let mut state = 0x1234_5678u32;
        for len in [3usize, 10, 40, 200, 1000] {
            for magic in [JPEG_MAGIC, PNG_MAGIC] {
                let mut bytes = magic.to_vec();
                while bytes.len() < len {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    bytes.push((state >> 24) as u8);
                }
                assert!(decode_image(&bytes, &ImageLimits::default()).is_err());
            }
        }
    }
}
