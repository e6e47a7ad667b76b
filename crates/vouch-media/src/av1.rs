//! AV1 decoding through rav1d (the Rust port of dav1d): [`Av1Decoder`] implements
//! [`VideoDecoder`] for AV1 samples as MP4 (`av01`) and Matroska/WebM (`V_AV1`) store them: one
//! temporal unit per packet, OBUs with size fields, no temporal delimiters.
//!
//! Behind the `av1` cargo feature, off by default (build time and size). rav1d 1.1 only exposes
//! dav1d's C API (`dav1d_open`, `dav1d_send_data`, `dav1d_get_picture`, ...) as Rust `extern "C"`
//! functions, so this module wraps those; every `unsafe` block says why it is sound. It runs two
//! rav1d threads with two frame contexts (see [`Av1Decoder::new`] for why not one). The configuration OBUs of
//! the `av1C` record (the sequence header) go in front of the first packet. Only 8-bit 4:2:0 is
//! supported; anything else is [`MediaError::UnsupportedCodec`].

use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};

use rav1d::include::dav1d::data::Dav1dData;
use rav1d::include::dav1d::dav1d::{Dav1dContext, Dav1dSettings};
use rav1d::include::dav1d::headers::{
    DAV1D_MC_BT709, DAV1D_PIXEL_LAYOUT_I400, DAV1D_PIXEL_LAYOUT_I420, DAV1D_PIXEL_LAYOUT_I422,
};
use rav1d::include::dav1d::picture::Dav1dPicture;
use rav1d::src::lib::{
    dav1d_close, dav1d_data_create, dav1d_data_unref, dav1d_default_settings, dav1d_get_picture,
    dav1d_open, dav1d_picture_unref, dav1d_send_data,
};
use rav1d::Dav1dResult;

// The largest picture side decoded (rav1d is told the matching area limit).
use super::demux::{ColorInfo, VideoDecoder, YuvView};
use super::error::MediaError;
use super::level::LEVEL_MAX_SIDE as MAX_SIDE;

const CODEC: &str = "AV1";

/// Upper bound on send/receive rounds for one packet: dav1d always makes progress, so this only
/// turns a decoder bug into an error instead of a hang.
const MAX_ROUNDS: usize = 100_000;

/// dav1d's `DAV1D_ERR(EAGAIN)`: not an error, "take pictures out (or put data in) first".
fn is_again(result: Dav1dResult) -> bool {
    result.0 == -libc::EAGAIN
}

/// Turns a negative dav1d status into a [`MediaError`].
fn status_error(result: Dav1dResult) -> MediaError {
    let code = -result.0;
    if code == libc::ENOPROTOOPT {
        return MediaError::unsupported_form(CODEC, "a bit depth this build cannot decode");
    }
    let detail = match code {
        libc::EINVAL => "invalid or unsupported bitstream".to_owned(),
        libc::ENOMEM => "out of memory".to_owned(),
        libc::ERANGE => format!("frame larger than {MAX_SIDE}x{MAX_SIDE} pixels"),
        _ => format!("error {code}"),
    };
    MediaError::decode(CODEC, detail)
}

/// An AV1 decoder.
pub(crate) struct Av1Decoder {
    /// The dav1d context; `Some` from `new` until `Drop`.
    context: Option<Dav1dContext>,
    /// Configuration OBUs from the av1C; sent with the first packet, then emptied.
    config_obus: Vec<u8>,
}

impl std::fmt::Debug for Av1Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Av1Decoder").finish_non_exhaustive()
    }
}

impl Drop for Av1Decoder {
    fn drop(&mut self) {
        // SAFETY: `self.context` is the `Option<Dav1dContext>` that `dav1d_open` wrote and no one
        // else holds; `dav1d_close` frees it and sets it to `None`.
        unsafe { dav1d_close(Some(NonNull::from(&mut self.context))) };
    }
}

/// A `Dav1dData` that is released however the function holding it returns.
struct DataGuard(Dav1dData);

impl Drop for DataGuard {
    fn drop(&mut self) {
        // SAFETY: the data came from `dav1d_data_create` (or was emptied by `dav1d_send_data`);
        // unref of either is valid.
        unsafe { dav1d_data_unref(Some(NonNull::from(&mut self.0))) };
    }
}

/// A `Dav1dPicture` returned by `dav1d_get_picture`, released on drop.
struct PictureGuard(Dav1dPicture);

impl Drop for PictureGuard {
    fn drop(&mut self) {
        // SAFETY: the picture was written by `dav1d_get_picture` (or is the default, empty one).
        unsafe { dav1d_picture_unref(Some(NonNull::from(&mut self.0))) };
    }
}

impl Av1Decoder {
    /// Creates a decoder from an `AV1CodecConfigurationRecord` (av1C; Matroska `CodecPrivate` is
    /// the same record). An empty record is accepted: the sequence header then comes in band.
    pub(crate) fn new(av1c: &[u8]) -> Result<Self, MediaError> {
        let config_obus = if av1c.is_empty() {
            Vec::new()
        } else {
            parse_av1c(av1c)?.to_vec()
        };
        let mut settings = MaybeUninit::<Dav1dSettings>::uninit();
        // SAFETY: `dav1d_default_settings` writes a whole `Dav1dSettings` to the pointer, which
        // is valid for writes; after it the value is initialised.
        let mut settings = unsafe {
            dav1d_default_settings(NonNull::from(&mut settings).cast());
            settings.assume_init()
        };
        // Two threads and two frame contexts, not one: with a single frame context any decode
        // error panics inside rav1d 1.1 (`on_error` unwraps a frame header already taken) and,
        // the panic crossing `extern "C"`, aborts the process (memorysafety/rav1d#1497, fix
        // pending in #1496/#1503). Go back to 1/1 once a fixed rav1d is out.
        settings.n_threads = 2;
        settings.max_frame_delay = 2;
        // Only the highest spatial layer of scalable streams: one picture per temporal unit.
        settings.all_layers = 0;
        settings.frame_size_limit = MAX_SIDE * MAX_SIDE;
        let mut context: Option<Dav1dContext> = None;
        // SAFETY: both pointers come from live locals; `dav1d_open` reads the settings and writes
        // the context (or `None` on failure).
        let result = unsafe {
            dav1d_open(
                Some(NonNull::from(&mut context)),
                Some(NonNull::from(&mut settings)),
            )
        };
        if result.0 < 0 || context.is_none() {
            return Err(MediaError::decode(
                CODEC,
                format!("could not start rav1d: {}", status_error(result)),
            ));
        }
        Ok(Av1Decoder {
            context,
            config_obus,
        })
    }

    /// Hands every picture dav1d has ready to `on_frame`.
    fn drain(
        &mut self,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        for _ in 0..MAX_ROUNDS {
            let mut picture = PictureGuard(Dav1dPicture::default());
            // SAFETY: the context is open (`Some` from `new` until `Drop`); the picture pointer is
            // a live local that dav1d overwrites.
            let result =
                unsafe { dav1d_get_picture(self.context, Some(NonNull::from(&mut picture.0))) };
            if is_again(result) {
                return Ok(());
            }
            if result.0 < 0 {
                return Err(status_error(result));
            }
            emit(&picture.0, on_frame)?;
        }
        Err(MediaError::decode(
            CODEC,
            "decoder did not stop producing pictures",
        ))
    }
}

/// Validates one decoded picture and lends its planes to `on_frame` as a [`YuvView`].
fn emit(
    picture: &Dav1dPicture,
    on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
) -> Result<(), MediaError> {
    let p = &picture.p;
    if p.bpc != 8 {
        return Err(MediaError::unsupported_form(
            CODEC,
            &format!("{}-bit samples", p.bpc),
        ));
    }
    match p.layout {
        DAV1D_PIXEL_LAYOUT_I420 => {}
        DAV1D_PIXEL_LAYOUT_I400 => {
            return Err(MediaError::unsupported_form(
                CODEC,
                "monochrome (4:0:0) pictures",
            ))
        }
        DAV1D_PIXEL_LAYOUT_I422 => return Err(MediaError::unsupported_form(CODEC, "4:2:2 chroma")),
        _ => return Err(MediaError::unsupported_form(CODEC, "4:4:4 chroma")),
    }
    let inconsistent =
        || MediaError::decode(CODEC, "rav1d returned a picture with inconsistent planes");
    let width = usize::try_from(p.w).map_err(|_| inconsistent())?;
    let height = usize::try_from(p.h).map_err(|_| inconsistent())?;
    let y_stride = usize::try_from(picture.stride[0]).map_err(|_| inconsistent())?;
    let uv_stride = usize::try_from(picture.stride[1]).map_err(|_| inconsistent())?;
    let (chroma_w, chroma_h) = (width.div_ceil(2), height.div_ceil(2));
    if width == 0 || height == 0 || y_stride < width || uv_stride < chroma_w {
        return Err(inconsistent());
    }
    let (Some(y), Some(u), Some(v)) = (picture.data[0], picture.data[1], picture.data[2]) else {
        return Err(inconsistent());
    };
    // Exactly the bytes the picture covers: last row only up to its width.
    let y_len = (height - 1) * y_stride + width;
    let uv_len = (chroma_h - 1) * uv_stride + chroma_w;
    // SAFETY: for an 8-bit I420 picture dav1d allocates the luma plane as `stride[0]` bytes per
    // row for `h` rows and each chroma plane as `stride[1]` bytes per row for `ceil(h / 2)` rows
    // (strides checked positive and at least the row width above); the planes stay valid and
    // unmodified until the picture is unreferenced, which happens after `on_frame` returns.
    let (y, u, v) = unsafe {
        (
            std::slice::from_raw_parts(y.as_ptr().cast::<u8>(), y_len),
            std::slice::from_raw_parts(u.as_ptr().cast::<u8>(), uv_len),
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), uv_len),
        )
    };
    let color = match picture.seq_hdr {
        // SAFETY: a picture from dav1d holds a reference to its sequence header, valid while the
        // picture is.
        Some(header) => {
            let header = unsafe { header.as_ref() };
            ColorInfo {
                full_range: header.color_range != 0,
                bt709: header.mtrx == DAV1D_MC_BT709,
            }
        }
        None => ColorInfo::default(),
    };
    on_frame(YuvView {
        width: u32::try_from(width).map_err(|_| inconsistent())?,
        height: u32::try_from(height).map_err(|_| inconsistent())?,
        y,
        u,
        v,
        y_stride,
        u_stride: uv_stride,
        v_stride: uv_stride,
        color,
    })
}

impl VideoDecoder for Av1Decoder {
    fn decode(
        &mut self,
        packet: &[u8],
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        let config = std::mem::take(&mut self.config_obus);
        let len = config.len() + packet.len();
        if len == 0 {
            return Ok(());
        }
        let mut data = DataGuard(Dav1dData::default());
        // SAFETY: `data.0` is a live, default (empty) `Dav1dData` that dav1d overwrites with a
        // new buffer of `len` bytes.
        let buffer = unsafe { dav1d_data_create(Some(NonNull::from(&mut data.0)), len) };
        if buffer.is_null() {
            return Err(MediaError::decode(
                CODEC,
                "could not allocate the packet buffer",
            ));
        }
        // SAFETY: `buffer` points to `len` writable bytes owned by `data`, which cannot overlap
        // `config` or `packet`.
        unsafe {
            ptr::copy_nonoverlapping(config.as_ptr(), buffer, config.len());
            ptr::copy_nonoverlapping(packet.as_ptr(), buffer.add(config.len()), packet.len());
        }
        for _ in 0..MAX_ROUNDS {
            // SAFETY: the context is open; `data.0` is valid for reads and writes. On success
            // dav1d takes the data and empties `data.0`; on EAGAIN it leaves it for a retry.
            let result = unsafe { dav1d_send_data(self.context, Some(NonNull::from(&mut data.0))) };
            if result.0 < 0 && !is_again(result) {
                return Err(status_error(result));
            }
            self.drain(on_frame)?;
            if data.0.sz == 0 {
                return Ok(());
            }
        }
        Err(MediaError::decode(
            CODEC,
            "decoder did not accept the packet",
        ))
    }

    fn flush(
        &mut self,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        // With no data pending, dav1d_get_picture drains the frame threads one picture at a time.
        self.drain(on_frame)
    }
}

/// Checks an `AV1CodecConfigurationRecord` (AV1-ISOBMFF 2.3.3) and returns its configuration
/// OBUs (normally the sequence header).
fn parse_av1c(av1c: &[u8]) -> Result<&[u8], MediaError> {
    // marker (1) = 1, version (7) = 1.
    if av1c.len() < 4 || av1c[0] != 0x81 {
        return Err(MediaError::decode(
            CODEC,
            "malformed av1C decoder configuration record",
        ));
    }
    // seq_tier_0 (1), high_bitdepth (1), twelve_bit (1), monochrome (1), chroma_subsampling_x (1),
    // chroma_subsampling_y (1), chroma_sample_position (2).
    let flags = av1c[2];
    if flags & 0x40 != 0 {
        let bits = if flags & 0x20 != 0 { 12 } else { 10 };
        return Err(MediaError::unsupported_form(
            CODEC,
            &format!("{bits}-bit samples"),
        ));
    }
    if flags & 0x10 != 0 {
        return Err(MediaError::unsupported_form(
            CODEC,
            "monochrome (4:0:0) pictures",
        ));
    }
    match (flags & 0x08 != 0, flags & 0x04 != 0) {
        (true, true) => {}
        (true, false) => return Err(MediaError::unsupported_form(CODEC, "4:2:2 chroma")),
        _ => return Err(MediaError::unsupported_form(CODEC, "4:4:4 chroma")),
    }
    Ok(&av1c[4..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mp4::demux_mp4;
    use crate::test_support::{decode_damaged_packets, media};
    use crate::{decode_video, DecodeOptions, FrameSampler};

    fn all_frames() -> DecodeOptions {
        DecodeOptions {
            sampler: FrameSampler::All,
            audio: false,
            ..DecodeOptions::default()
        }
    }

    /// Mean of the R, G and B bytes of a frame.
    fn mean(rgb: &[u8]) -> f64 {
        rgb.iter().map(|&b| f64::from(b)).sum::<f64>() / rgb.len() as f64
    }

    #[test]
    fn decodes_av1_mp4_flash() {
        let clip = decode_video(&media("av1.mp4"), &all_frames()).expect("decode");
        assert_eq!(clip.frames.len(), 50);
        for (i, frame) in clip.frames.iter().enumerate() {
            assert_eq!((frame.width, frame.height), (320, 240), "frame {i}");
            let at = (4 * 320 + 4) * 3;
            let (r, g, b) = (frame.rgb[at], frame.rgb[at + 1], frame.rgb[at + 2]);
            assert!(
                r > 200 && g < 60 && b < 60,
                "frame {i}: red square, got {:?}",
                (r, g, b)
            );
        }
        let white: Vec<usize> = (0..clip.frames.len())
            .filter(|&i| mean(&clip.frames[i].rgb) > 200.0)
            .collect();
        assert_eq!(white, [25], "exactly one white frame");
        let at = clip.frames[25].timestamp_ms;
        assert!((960..=1040).contains(&at), "white frame at {at} ms");
        assert!(clip
            .frames
            .iter()
            .enumerate()
            .all(|(i, f)| i == 25 || mean(&f.rgb) < 40.0));
    }

    #[test]
    fn reads_av1c() {
        let bytes = media("av1.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        let obus = parse_av1c(&video.config).expect("av1C");
        // A sequence header OBU (type 1) with its size field.
        assert_eq!(obus.first().map(|b| (b >> 3) & 0x0F), Some(1));
        // The same record claiming 10-bit, monochrome, 4:4:4.
        for (flags, what) in [(0x4C, "10-bit"), (0x1C, "monochrome"), (0x00, "4:4:4")] {
            let mut record = video.config.clone();
            record[2] = flags;
            match Av1Decoder::new(&record) {
                Err(MediaError::UnsupportedCodec {
                    codec,
                    feature: None,
                }) => {
                    assert!(codec.contains(what), "{codec}")
                }
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(Av1Decoder::new(&[1, 2, 3]).is_err());
        assert!(Av1Decoder::new(&[0; 40]).is_err());
        // A valid empty-config decoder fed a frame OBU before any sequence header, then garbage.
        let mut decoder = Av1Decoder::new(&[]).expect("decoder");
        let mut frames = 0;
        let mut count = |_: YuvView<'_>| {
            frames += 1;
            Ok(())
        };
        // OBU_FRAME (type 6) with has_size_field and a 3-byte payload.
        assert!(matches!(
            decoder.decode(&[0x32, 0x03, 0x10, 0x00, 0x00], &mut count),
            Err(MediaError::Decode { codec: "AV1", .. })
        ));
        let garbage: Vec<u8> = (0..2000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        let _ = decoder.decode(&garbage, &mut count);
        let _ = decoder.flush(&mut count);
        assert_eq!(frames, 0);
    }

    #[test]
    fn corrupted_packets_do_not_crash() {
        let bytes = media("av1.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        // Keep the OBU header; damage the payload.
        decode_damaged_packets(&video.packets, 4, || {
            Box::new(Av1Decoder::new(&video.config).expect("decoder"))
        });
    }
}
