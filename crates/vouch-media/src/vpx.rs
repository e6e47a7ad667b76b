//! VP8 and VP9 decoding through the system libvpx: [`VpxDecoder`], a small safe wrapper over
//! `env-libvpx-sys` implementing [`VideoDecoder`].
//!
//! Only 8-bit 4:2:0 output is accepted (what browsers and phones record); VP9 profiles 1-3 and high
//! bit depth are refused with [`MediaError::UnsupportedCodec`]. The decoder runs single-threaded:
//! the engine parallelises across clips, not inside one.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::raw::c_uint;
use std::ptr;

use vpx_sys as sys;

use super::demux::{ColorInfo, VideoDecoder, YuvView};
use super::error::MediaError;
use super::level::{LEVEL_MAX_FRAME_MBS, LEVEL_MAX_SIDE};
use super::types::VideoCodec;
use super::vp_format;

/// libvpx's `VPX_IMG_FMT_I420`, compared as a raw integer (see [`VpxDecoder::emit`]).
const FMT_I420: u32 = 0x102;
/// libvpx's `VPX_CS_BT_709`.
const CS_BT_709: u32 = 2;
/// libvpx's `VPX_CR_FULL_RANGE`.
const CR_FULL_RANGE: u32 = 1;

/// The largest picture a stream may make libvpx decode, pixels: the same bound as H.264's level
/// 5.2 frame (4096x2304), so a hostile stream cannot make libvpx allocate frames larger than any
/// phone records (VP8's header allows 16383x16383, VP9's 65536x65536).
const MAX_PICTURE_PIXELS: u64 = LEVEL_MAX_FRAME_MBS * 256;
/// The longest side a stream may give, pixels (as for H.264).
const MAX_PICTURE_SIDE: u32 = LEVEL_MAX_SIDE;

/// Refuses a declared picture over [`MAX_PICTURE_SIDE`] or [`MAX_PICTURE_PIXELS`].
fn check_declared_size(codec: VideoCodec, (width, height): (u32, u32)) -> Result<(), MediaError> {
    let side = width.max(height);
    if side > MAX_PICTURE_SIDE {
        return Err(MediaError::LimitExceeded {
            what: match codec {
                VideoCodec::Vp8 => "VP8 picture side",
                _ => "VP9 picture side",
            },
            value: u64::from(side),
            limit: u64::from(MAX_PICTURE_SIDE),
        });
    }
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_PICTURE_PIXELS {
        return Err(MediaError::LimitExceeded {
            what: match codec {
                VideoCodec::Vp8 => "VP8 picture size in pixels",
                _ => "VP9 picture size in pixels",
            },
            value: pixels,
            limit: MAX_PICTURE_PIXELS,
        });
    }
    Ok(())
}

/// A libvpx decoding context for one stream.
pub(crate) struct VpxDecoder {
    /// Boxed so its address stays fixed: libvpx keeps internal pointers tied to the context.
    ctx: Box<sys::vpx_codec_ctx_t>,
    codec: VideoCodec,
}

// SAFETY: the context is owned exclusively by this struct (no aliases escape: `YuvView`s borrow
// `&mut self` for the duration of a callback only), and libvpx decoder contexts carry no
// thread-affine state (no TLS, no thread handles with threads = 1), so moving the whole context to
// another thread between calls is sound. It is not `Sync`: libvpx calls on one context must not
// run concurrently, which `&mut self` on every method already guarantees.
unsafe impl Send for VpxDecoder {}

impl VpxDecoder {
    /// A decoder for `codec` (VP8 or VP9).
    pub(crate) fn new(codec: VideoCodec) -> Result<Self, MediaError> {
        // SAFETY: both functions return a pointer to a static interface table inside libvpx.
        let iface = unsafe {
            match codec {
                VideoCodec::Vp8 => sys::vpx_codec_vp8_dx(),
                VideoCodec::Vp9 => sys::vpx_codec_vp9_dx(),
                other => {
                    return Err(MediaError::UnsupportedCodec {
                        codec: other.name().to_string(),
                        feature: None,
                    })
                }
            }
        };
        if iface.is_null() {
            return Err(MediaError::UnsupportedCodec {
                codec: codec.name().to_string(),
                feature: Some("vpx"),
            });
        }
        // One thread: the engine runs clips in parallel; w/h 0 means "from the stream".
        let cfg = sys::vpx_codec_dec_cfg_t {
            threads: 1,
            w: 0,
            h: 0,
        };
        // SAFETY: an all-zero vpx_codec_ctx_t (null pointers, zero ints, err 0 = VPX_CODEC_OK) is the
        // documented initial state that vpx_codec_dec_init_ver fills in.
        let mut ctx: Box<sys::vpx_codec_ctx_t> =
            Box::new(unsafe { MaybeUninit::zeroed().assume_init() });
        // SAFETY: ctx points to writable memory for a context, iface is libvpx's static table, cfg
        // lives across the call (libvpx copies it), and the ABI version is the one the bindings were
        // generated for (the build script picks bindings matching the installed libvpx).
        let status = unsafe {
            sys::vpx_codec_dec_init_ver(
                &mut *ctx,
                iface,
                &cfg,
                0,
                sys::VPX_DECODER_ABI_VERSION as i32,
            )
        };
        if status != sys::vpx_codec_err_t::VPX_CODEC_OK {
            // On failure libvpx leaves the context uninitialised (priv_ null), so no destroy needed.
            return Err(MediaError::Decode {
                codec: codec.name(),
                detail: format!("initialisation failed ({status:?})"),
            });
        }
        Ok(VpxDecoder { ctx, codec })
    }

    /// The decoder's own explanation of the last error.
    fn error_detail(&mut self) -> String {
        // SAFETY: the context is initialised; vpx_codec_error returns a pointer to a static or
        // context-owned NUL-terminated string, valid until the next call on the context, and we copy
        // it out at once.
        let message = unsafe {
            let text = sys::vpx_codec_error(&mut *self.ctx);
            if text.is_null() {
                String::new()
            } else {
                CStr::from_ptr(text).to_string_lossy().into_owned()
            }
        };
        // SAFETY: as above; vpx_codec_error_detail may return null.
        let detail = unsafe {
            let text = sys::vpx_codec_error_detail(&mut *self.ctx);
            if text.is_null() {
                None
            } else {
                Some(CStr::from_ptr(text).to_string_lossy().into_owned())
            }
        };
        match detail {
            Some(detail) if !detail.is_empty() => format!("{message}: {detail}"),
            _ => message,
        }
    }

    /// Feeds `data` (null with length 0 to drain) and hands every resulting picture to `on_frame`.
    fn run(
        &mut self,
        data: &[u8],
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        let length = c_uint::try_from(data.len()).map_err(|_| MediaError::Decode {
            codec: self.codec.name(),
            detail: "packet over 4 GB".into(),
        })?;
        let pointer = if data.is_empty() {
            ptr::null()
        } else {
            data.as_ptr()
        };
        // SAFETY: the context is initialised; pointer/length describe `data` (or are null/0, the
        // documented flush call); libvpx does not keep the pointer after returning; user_priv is
        // unused (null) and deadline 0 means "best quality, no time limit".
        let status =
            unsafe { sys::vpx_codec_decode(&mut *self.ctx, pointer, length, ptr::null_mut(), 0) };
        match status {
            sys::vpx_codec_err_t::VPX_CODEC_OK => {}
            // What a libvpx built without high bit depth says for VP9 profile 2/3 streams.
            sys::vpx_codec_err_t::VPX_CODEC_UNSUP_BITSTREAM
            | sys::vpx_codec_err_t::VPX_CODEC_INCAPABLE => {
                let detail = self.error_detail();
                return Err(MediaError::UnsupportedCodec {
                    codec: format!(
                        "{} ({detail}; only 8-bit 4:2:0 is supported)",
                        self.codec.name()
                    ),
                    feature: None,
                });
            }
            _ => {
                let detail = self.error_detail();
                return Err(MediaError::Decode {
                    codec: self.codec.name(),
                    detail,
                });
            }
        }
        let mut iter: sys::vpx_codec_iter_t = ptr::null();
        loop {
            // SAFETY: the context is initialised and iter starts null as libvpx requires; the
            // returned image (if any) is owned by the context and valid until the next decode call.
            let image = unsafe { sys::vpx_codec_get_frame(&mut *self.ctx, &mut iter) };
            if image.is_null() {
                return Ok(());
            }
            // SAFETY: image is non-null and points to a vpx_image_t owned by the context, which no
            // one mutates until the next vpx_codec_decode (we hold &mut self throughout).
            unsafe { self.emit(image, on_frame)? };
        }
    }

    /// Validates one decoded image and lends it to `on_frame` as a [`YuvView`].
    ///
    /// # Safety
    /// `image` must point to a valid image returned by `vpx_codec_get_frame` on this context, not
    /// yet invalidated by another decode call.
    unsafe fn emit(
        &self,
        image: *const sys::vpx_image_t,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        // The bindings model fmt/cs/range as Rust enums; a value libvpx adds later would be UB to
        // read as such, so read the raw u32 behind each instead.
        // SAFETY (whole block): the caller guarantees `image` is valid; the three enum fields are
        // #[repr(u32)] so reading them as u32 is a plain integer read.
        let (fmt, cs, range, image) = unsafe {
            (
                ptr::addr_of!((*image).fmt).cast::<u32>().read(),
                ptr::addr_of!((*image).cs).cast::<u32>().read(),
                ptr::addr_of!((*image).range).cast::<u32>().read(),
                &*image,
            )
        };
        if fmt != FMT_I420 || image.bit_depth != 8 {
            return Err(MediaError::UnsupportedCodec {
                codec: format!(
                    "{} with {} (only 8-bit 4:2:0 is supported)",
                    self.codec.name(),
                    if image.bit_depth > 8 {
                        format!("{}-bit samples", image.bit_depth)
                    } else {
                        "a chroma format other than 4:2:0".into()
                    }
                ),
                feature: None,
            });
        }
        let width = image.d_w;
        let height = image.d_h;
        let chroma_width = width.div_ceil(2) as usize;
        let chroma_height = height.div_ceil(2) as usize;
        let mut planes: [&[u8]; 3] = [&[]; 3];
        let mut strides = [0usize; 3];
        for (index, (rows, columns)) in [
            (height as usize, width as usize),
            (chroma_height, chroma_width),
            (chroma_height, chroma_width),
        ]
        .into_iter()
        .enumerate()
        {
            let stride = usize::try_from(image.stride[index]).map_err(|_| MediaError::Decode {
                codec: self.codec.name(),
                detail: "negative plane stride".into(),
            })?;
            if image.planes[index].is_null() || stride < columns {
                return Err(MediaError::Decode {
                    codec: self.codec.name(),
                    detail: "invalid picture planes".into(),
                });
            }
            // The last row needs only `columns` bytes: never claim memory past the plane's end.
            let length = if rows == 0 {
                0
            } else {
                stride * (rows - 1) + columns
            };
            // SAFETY: libvpx allocates each plane with at least `stride` bytes per row for the
            // (aligned) image height, which covers `rows` rows of the display size; the memory stays
            // valid and unmodified until the next decode call, which cannot happen while the slice
            // (tied to &self) is alive.
            planes[index] = unsafe { std::slice::from_raw_parts(image.planes[index], length) };
            strides[index] = stride;
        }
        let color = ColorInfo {
            full_range: range == CR_FULL_RANGE,
            bt709: cs == CS_BT_709,
        };
        on_frame(YuvView {
            width,
            height,
            y: planes[0],
            u: planes[1],
            v: planes[2],
            y_stride: strides[0],
            u_stride: strides[1],
            v_stride: strides[2],
            color,
        })
    }
}

impl VideoDecoder for VpxDecoder {
    fn decode(
        &mut self,
        packet: &[u8],
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        if packet.is_empty() {
            // An empty packet would mean "flush" to libvpx; Matroska never stores one for video.
            return Ok(());
        }
        for size in vp_format::declared_sizes(self.codec, packet) {
            check_declared_size(self.codec, size)?;
        }
        self.run(packet, on_frame)
    }

    fn flush(
        &mut self,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        self.run(&[], on_frame)
    }
}

impl Drop for VpxDecoder {
    fn drop(&mut self) {
        // SAFETY: the context was initialised successfully in `new` (no VpxDecoder exists otherwise)
        // and is destroyed exactly once, here.
        unsafe {
            sys::vpx_codec_destroy(&mut *self.ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demux::Demuxed;
    use crate::mkv::demux_matroska;

    fn media(name: &str) -> Vec<u8> {
        let path = format!("{}/../../tests/media/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
    }

    /// Decodes every video packet; returns (sorted pts, mean luma per output frame, colour).
    fn decode_all(demuxed: &Demuxed<'_>) -> (Vec<i64>, Vec<f64>, Vec<ColorInfo>) {
        let video = demuxed.video.as_ref().expect("video track");
        let mut decoder = VpxDecoder::new(video.codec).expect("decoder");
        let mut means = Vec::new();
        let mut colors = Vec::new();
        let mut on_frame = |view: YuvView<'_>| {
            assert_eq!((view.width, view.height), (video.width, video.height));
            let mut sum = 0u64;
            for row in 0..view.height as usize {
                let start = row * view.y_stride;
                sum += view.y[start..start + view.width as usize]
                    .iter()
                    .map(|&b| u64::from(b))
                    .sum::<u64>();
            }
            means.push(sum as f64 / f64::from(view.width * view.height));
            colors.push(view.color);
            Ok(())
        };
        for packet in &video.packets {
            decoder.decode(&packet.data, &mut on_frame).expect("decode");
        }
        decoder.flush(&mut on_frame).expect("flush");
        let mut pts: Vec<i64> = video.packets.iter().map(|p| p.pts_ms).collect();
        pts.sort_unstable();
        (pts, means, colors)
    }

    fn check_flash(name: &str, codec: VideoCodec) {
        let bytes = media(name);
        let demuxed = demux_matroska(&bytes).expect("demux");
        assert_eq!(demuxed.video.as_ref().map(|v| v.codec), Some(codec));
        let (pts, means, colors) = decode_all(&demuxed);
        assert_eq!(means.len(), 50, "{name}: every packet gives a picture");
        assert!(
            colors.iter().all(|c| !c.full_range),
            "{name}: ffmpeg writes limited range"
        );
        let white: Vec<i64> = means
            .iter()
            .zip(&pts)
            .filter(|(m, _)| **m > 200.0)
            .map(|(_, t)| *t)
            .collect();
        assert_eq!(
            white.len(),
            1,
            "{name}: exactly one white frame, got {white:?}"
        );
        assert!(
            (white[0] - 1000).abs() <= 40,
            "{name}: white frame at {} ms",
            white[0]
        );
        // The other frames are black apart from the small red square.
        assert!(
            means.iter().filter(|m| **m < 40.0).count() == 49,
            "{name}: {means:?}"
        );
    }

    #[test]
    fn vp8_flash_frame_at_one_second() {
        check_flash("vp8_opus.webm", VideoCodec::Vp8);
        check_flash("vp8_opus_live.webm", VideoCodec::Vp8);
    }

    #[test]
    fn vp9_flash_frame_at_one_second() {
        check_flash("vp9_opus.webm", VideoCodec::Vp9);
        check_flash("vp9_opus.mkv", VideoCodec::Vp9);
    }

    /// The header reader agrees with the container on real streams: every size a frame
    /// declares is the track's, and every key frame declares one.
    #[test]
    fn declared_sizes_are_read_from_real_streams() {
        for (name, codec) in [
            ("vp8_opus.webm", VideoCodec::Vp8),
            ("vp9_opus.webm", VideoCodec::Vp9),
            ("bench_vp9_opus.webm", VideoCodec::Vp9),
        ] {
            let bytes = media(name);
            let demuxed = demux_matroska(&bytes).expect("demux");
            let video = demuxed.video.as_ref().expect("video");
            assert_eq!(video.codec, codec);
            let first = vp_format::declared_sizes(codec, &video.packets[0].data);
            assert_eq!(first, vec![(video.width, video.height)], "{name}");
            for packet in &video.packets {
                for size in vp_format::declared_sizes(codec, &packet.data) {
                    assert_eq!(size, (video.width, video.height), "{name}");
                }
            }
        }
    }

    /// A key frame whose header claims a picture larger than any phone records is refused
    /// before libvpx allocates it, whatever the container says (the container's size is checked
    /// separately); before, libvpx was handed it.
    #[test]
    fn an_oversized_key_frame_is_refused_before_decoding() {
        let refused = |codec: VideoCodec, packet: &[u8]| {
            let mut decoder = VpxDecoder::new(codec).expect("decoder");
            let mut frames = 0;
            let result = decoder.decode(packet, &mut |_| {
                frames += 1;
                Ok(())
            });
            assert_eq!(frames, 0);
            match result {
                Err(MediaError::LimitExceeded { what, .. }) => what,
                other => panic!("{codec:?}: {other:?}"),
            }
        };
        let vp8 = media("vp8_opus.webm");
        let demuxed = demux_matroska(&vp8).expect("demux");
        let mut key = demuxed.video.as_ref().unwrap().packets[0].data.to_vec();
        key[6..8].copy_from_slice(&6000u16.to_le_bytes());
        key[8..10].copy_from_slice(&6000u16.to_le_bytes());
        assert_eq!(refused(VideoCodec::Vp8, &key), "VP8 picture size in pixels");
        key[6..8].copy_from_slice(&16383u16.to_le_bytes());
        key[8..10].copy_from_slice(&16u16.to_le_bytes());
        assert_eq!(refused(VideoCodec::Vp8, &key), "VP8 picture side");

        let vp9 = media("vp9_opus.webm");
        let demuxed = demux_matroska(&vp9).expect("demux");
        let mut key = demuxed.video.as_ref().unwrap().packets[0].data.to_vec();
        // Profile 0 key frame: 8 bits of flags, the 24-bit sync code, 4 bits of colour, then
        // width - 1 and height - 1 in 16 bits each.
        let set = |data: &mut [u8], from: usize, value: u32| {
            for bit in 0..16 {
                let at = from + bit;
                let on = (value >> (15 - bit)) & 1 == 1;
                let mask = 0x80u8 >> (at % 8);
                if on {
                    data[at / 8] |= mask;
                } else {
                    data[at / 8] &= !mask;
                }
            }
        };
        assert_eq!(vp_format::declared_sizes(VideoCodec::Vp9, &key)[0].0, 320);
        set(&mut key, 36, 5999);
        set(&mut key, 52, 5999);
        assert_eq!(
            vp_format::declared_sizes(VideoCodec::Vp9, &key),
            vec![(6000, 6000)]
        );
        assert_eq!(refused(VideoCodec::Vp9, &key), "VP9 picture size in pixels");
    }

    #[test]
    fn other_codecs_and_garbage_are_errors_not_panics() {
        assert!(matches!(
            VpxDecoder::new(VideoCodec::H264),
            Err(MediaError::UnsupportedCodec { .. })
        ));
        let mut decoder = VpxDecoder::new(VideoCodec::Vp8).expect("decoder");
        let mut frames = 0;
        let mut count = |_: YuvView<'_>| {
            frames += 1;
            Ok(())
        };
        // Deterministic pseudo-random bytes (xorshift), no frame before a keyframe.
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let garbage: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let _ = decoder.decode(&garbage, &mut count);
        let _ = decoder.decode(&garbage[..3], &mut count);
        let _ = decoder.flush(&mut count);
        let mut vp9 = VpxDecoder::new(VideoCodec::Vp9).expect("decoder");
        let _ = vp9.decode(&garbage, &mut |_| Ok(()));
        let _ = vp9.flush(&mut |_| Ok(()));
    }

    #[test]
    fn corrupted_packets_are_errors_not_panics() {
        for name in ["vp8_opus.webm", "vp9_opus.webm"] {
            let bytes = media(name);
            let demuxed = demux_matroska(&bytes).expect("demux");
            let video = demuxed.video.as_ref().expect("video");
            let mut state = 0x2545_F491_4F6C_DD1Du64;
            for round in 0..5 {
                let mut decoder = VpxDecoder::new(video.codec).expect("decoder");
                for packet in &video.packets {
                    let mut data = packet.data.to_vec();
                    for _ in 0..=round {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let at = (state >> 16) as usize % data.len();
                        data[at] ^= state as u8;
                    }
                    let _ = decoder.decode(&data, &mut |view| {
                        assert!(
                            view.y.len()
                                >= view.y_stride * (view.height as usize - 1) + view.width as usize
                        );
                        Ok(())
                    });
                }
                let _ = decoder.flush(&mut |_| Ok(()));
            }
        }
    }

    #[test]
    fn decoder_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<VpxDecoder>();
    }

    /// Prints decode time of the 640x480 30 fps 5 s benchmark clips:
    /// `cargo test --release -p vouch-media --lib vpx::tests::bench -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing, run by hand"]
    fn bench_clips_decode_time() {
        for (name, codec) in [
            ("bench_vp8_opus.webm", VideoCodec::Vp8),
            ("bench_vp9_opus.webm", VideoCodec::Vp9),
        ] {
            let bytes = media(name);
            let start = std::time::Instant::now();
            let demuxed = demux_matroska(&bytes).expect("demux");
            let demux_time = start.elapsed();
            let video = demuxed.video.as_ref().expect("video");
            assert_eq!(video.codec, codec);
            let mut decoder = VpxDecoder::new(codec).expect("decoder");
            let mut frames = 0;
            let mut on_frame = |_: YuvView<'_>| {
                frames += 1;
                Ok(())
            };
            let decode_start = std::time::Instant::now();
            for packet in &video.packets {
                decoder.decode(&packet.data, &mut on_frame).expect("decode");
            }
            decoder.flush(&mut on_frame).expect("flush");
            let decode_time = decode_start.elapsed();
            assert_eq!(frames, 150, "{name}");
            println!(
                "{name}: demux {demux_time:?}, decode {frames} frames {decode_time:?} (one thread)"
            );
        }
    }
}
