//! Media through the C ABI: decode a file into a `vouch_clip`, or build one from frames and audio
//! the app decoded with the platform (`vouch_frame`, `vouch_audio`), then read its RGB frames, its
//! 16 kHz mono audio and its facts.

use std::ffi::{c_char, CString};

use serde::Deserialize;
use serde_json::json;

use super::boundary::{boundary, check_out, read_bytes, read_optional_str, FfiError};
use super::engine::{engine_ref, vouch_engine};
use super::status::vouch_status;
use vouch::{
    Clip, DecodeLimits, DecodeOptions, FrameSampler, PixelFormat, RawAudio, RawFrame, RawPlane,
    Rotation, SampleFormat,
};

/// Most frames `vouch_clip_from_raw` accepts in one call.
const MAX_RAW_FRAMES: usize = 1_000;

/// `vouch_frame.format` values.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[expect(non_camel_case_types, reason = "C naming of the exported type")]
pub enum vouch_pixel_format {
    /// Planar Y, U, V 4:2:0 (U and V may have pixel stride 2, as Android's YUV_420_888).
    I420 = 1,
    /// Y plane and interleaved U,V plane.
    Nv12 = 2,
    /// Y plane and interleaved V,U plane.
    Nv21 = 3,
    /// Packed B,G,R,A.
    Bgra = 4,
    /// Packed R,G,B,A.
    Rgba = 5,
    /// Packed R,G,B.
    Rgb24 = 6,
}

/// `vouch_audio.sample_format` values.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[expect(non_camel_case_types, reason = "C naming of the exported type")]
pub enum vouch_sample_format {
    /// Signed 16-bit integers, native endianness.
    S16 = 1,
    /// 32-bit floats in -1..1.
    F32 = 2,
}

/// One plane of a frame. The bytes are read during the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct vouch_plane {
    /// First byte of the plane.
    pub data: *const u8,
    /// Bytes readable from `data`.
    pub len: usize,
    /// Bytes from one row to the next.
    pub row_stride: usize,
    /// Bytes from one sample to the next within a row (1 for planar Y, 2 for NV12 UV or Android
    /// interleaved chroma, 4 for BGRA/RGBA, 3 for RGB24).
    pub pixel_stride: usize,
}

/// A frame the app decoded (AVFoundation, MediaCodec). Copied during the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct vouch_frame {
    /// A `vouch_pixel_format` value; others are rejected.
    pub format: u32,
    /// Width in pixels, before rotation.
    pub width: u32,
    /// Height in pixels, before rotation.
    pub height: u32,
    /// Planes: Y,U,V for I420; Y,UV for NV12/NV21; one for packed formats.
    pub planes: [vouch_plane; 3],
    /// How many entries of `planes` are used.
    pub n_planes: u32,
    /// Clockwise degrees that make the picture upright: 0, 90, 180 or 270 (iOS
    /// `preferredTransform`, Android `KEY_ROTATION`).
    pub rotation_degrees: u32,
    /// Non-zero for limited (video) range YUV, zero for full range.
    pub limited_range: u32,
    /// Presentation time, ms.
    pub timestamp_ms: i64,
}

/// Audio the app decoded: interleaved samples. Copied during the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct vouch_audio {
    /// First byte of the samples.
    pub data: *const u8,
    /// Bytes at `data`.
    pub len: usize,
    /// A `vouch_sample_format` value.
    pub sample_format: u32,
    /// Sample rate, Hz (4000 to 384000).
    pub sample_rate: u32,
    /// Interleaved channels.
    pub channels: u32,
    /// Presentation time of the first sample, ms.
    pub timestamp_ms: i64,
}

/// A decoded clip: RGB frames, 16 kHz mono audio, facts. Read it from one thread at a time.
#[expect(non_camel_case_types, reason = "C naming of the exported type")]
pub struct vouch_clip {
    pub(super) clip: Clip,
    info_json: CString,
}

/// One frame of a clip, borrowed: `rgb` stays valid until `vouch_clip_free`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct vouch_rgb_frame {
    /// Width in pixels (upright).
    pub width: u32,
    /// Height in pixels (upright).
    pub height: u32,
    /// Presentation time, ms.
    pub timestamp_ms: i64,
    /// Packed RGB, `width * height * 3` bytes, rows top to bottom.
    pub rgb: *const u8,
    /// Bytes at `rgb`.
    pub len: usize,
}

/// A clip's audio, borrowed: `samples` stays valid until `vouch_clip_free`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct vouch_pcm {
    /// Mono samples in -1..1.
    pub samples: *const f32,
    /// Number of samples.
    pub len: usize,
    /// Always 16000.
    pub sample_rate: u32,
    /// Presentation time of the first sample, ms.
    pub start_ms: i64,
}

/// Options of `vouch_clip_decode`, as JSON: `{"sampler": "all" | {"evenly": 16} | {"max_fps": 10},
/// "audio": true, "max_output_frames": 1000, "max_side": 1280, "max_frame_bytes": 536870912}`;
/// every field optional.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DecodeOptionsJson {
    #[serde(default)]
    sampler: Option<SamplerJson>,
    #[serde(default)]
    audio: Option<bool>,
    #[serde(default)]
    max_output_frames: Option<usize>,
    #[serde(default)]
    max_side: Option<u32>,
    #[serde(default)]
    max_frame_bytes: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum SamplerJson {
    All,
    Evenly(usize),
    MaxFps(f32),
}

fn decode_options(text: Option<&str>) -> Result<DecodeOptions, FfiError> {
    let mut options = DecodeOptions::default();
    let Some(text) = text else { return Ok(options) };
    let parsed: DecodeOptionsJson = serde_json::from_str(text).map_err(|error| {
        FfiError::new(vouch_status::InvalidJson, format!("options_json: {error}"))
    })?;
    if let Some(sampler) = parsed.sampler {
        options.sampler = match sampler {
            SamplerJson::All => FrameSampler::All,
            SamplerJson::Evenly(count) => FrameSampler::Evenly(count),
            SamplerJson::MaxFps(fps) if fps.is_finite() && fps > 0.0 => FrameSampler::MaxFps(fps),
            SamplerJson::MaxFps(_) => {
                return Err(FfiError::new(
                    vouch_status::InvalidArgument,
                    "options_json: max_fps must be above 0",
                ))
            }
        };
    }
    if let Some(audio) = parsed.audio {
        options.audio = audio;
    }
    if let Some(max) = parsed.max_output_frames {
        options.limits.max_output_frames = max;
    }
    if let Some(max) = parsed.max_side {
        options.max_side = max;
    }
    if let Some(max) = parsed.max_frame_bytes {
        options.limits.max_frame_bytes = max;
    }
    Ok(options)
}

fn info_json(clip: &Clip) -> CString {
    let info = &clip.info;
    let text = json!({
        "container": format!("{:?}", info.container),
        "video_codec": info.video_codec.map(|codec| codec.name()),
        "audio_codec": info.audio_codec.map(|codec| codec.name()),
        "duration_ms": info.duration_ms,
        "coded_width": info.coded_width,
        "coded_height": info.coded_height,
        "rotation_degrees": info.rotation.degrees(),
        "video_frame_count": info.video_frame_count,
        "frames": clip.frames.len(),
        "audio_sample_rate": info.audio_sample_rate,
        "audio_channels": info.audio_channels,
        "has_audio": clip.audio.is_some(),
    })
    .to_string();
    CString::new(text).unwrap_or_default()
}

fn hand_over(clip: Clip, out_clip: *mut *mut vouch_clip) {
    let info_json = info_json(&clip);
    // SAFETY: callers checked `out_clip` for NULL before doing any work.
    unsafe { *out_clip = Box::into_raw(Box::new(vouch_clip { clip, info_json })) };
}

/// Decodes a video file (MP4, MOV, fragmented MP4, WebM, Matroska; H.264, VP8, VP9, AAC, Opus) on
/// the engine's worker pool. `options_json` may be NULL: at most 10 frames per second (frames at
/// least 100 ms apart), audio on, frames shrunk by a whole factor to at most 1280 pixels on their
/// longer side (`"max_side": 0` keeps the decoded size), and at most 512 MiB of frames in the clip
/// (`max_frame_bytes`, checked before decoding; pictures over 4096x2304 pixels are refused).
/// Frames come out upright (the file's rotation applied) as packed RGB. Errors: `VOUCH_STATUS_MEDIA` with a
/// message naming the problem (truncated, malformed, unsupported codec and the feature that adds it,
/// no video track, over a limit). Free the clip with `vouch_clip_free`.
///
/// # Safety
/// `engine` live or NULL; `data` valid for `len` bytes or NULL with `len` 0; `options_json` NULL or
/// NUL-terminated; `out_clip` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_clip_decode(
    engine: *const vouch_engine,
    data: *const u8,
    len: usize,
    options_json: *const c_char,
    out_clip: *mut *mut vouch_clip,
) -> vouch_status {
    boundary(|| {
        check_out(out_clip, "out_clip")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let bytes = unsafe { read_bytes(data, len, "data") }?;
        let options = decode_options(unsafe { read_optional_str(options_json, "options_json") }?)?;
        hand_over(engine.media().decode_video(bytes, &options)?, out_clip);
        Ok(())
    })
}

/// Decodes an audio file (WAV, FLAC, Ogg Opus or Vorbis, M4A, WebM; or a video's audio track) into a
/// clip with no frames and 16 kHz mono audio. Free with `vouch_clip_free`.
///
/// # Safety
/// As for `vouch_clip_decode`.
#[no_mangle]
pub unsafe extern "C" fn vouch_audio_decode(
    engine: *const vouch_engine,
    data: *const u8,
    len: usize,
    out_clip: *mut *mut vouch_clip,
) -> vouch_status {
    boundary(|| {
        check_out(out_clip, "out_clip")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let bytes = unsafe { read_bytes(data, len, "data") }?;
        let (pcm, info) = engine
            .media()
            .decode_audio(bytes, &DecodeLimits::default())?;
        hand_over(
            Clip {
                frames: Vec::new(),
                audio: Some(pcm),
                info,
            },
            out_clip,
        );
        Ok(())
    })
}

fn pixel_format(value: u32) -> Option<PixelFormat> {
    Some(match value {
        1 => PixelFormat::I420,
        2 => PixelFormat::Nv12,
        3 => PixelFormat::Nv21,
        4 => PixelFormat::Bgra,
        5 => PixelFormat::Rgba,
        6 => PixelFormat::Rgb24,
        _ => return None,
    })
}

/// Builds a clip from frames and audio the app decoded itself: frames are converted to upright RGB
/// on the engine's pool (and sorted by timestamp), audio to 16 kHz mono. Everything is copied during
/// the call. `frames` may be NULL when `n_frames` is 0; `audio` may be NULL. At most 1000 frames
/// and 512 MiB of RGB (width x height x 3 summed over the frames; `VOUCH_STATUS_MEDIA` beyond).
/// Inconsistent input (unknown format, bad rotation, planes shorter than their strides need, a bad
/// sample rate) is `VOUCH_STATUS_INVALID_ARGUMENT` with a message naming `frames[i]` or `audio`.
///
/// # Safety
/// `engine` live or NULL; `frames` valid for `n_frames` elements with every plane valid for its
/// `len`; `audio` NULL or valid with its data; `out_clip` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_clip_from_raw(
    engine: *const vouch_engine,
    frames: *const vouch_frame,
    n_frames: usize,
    audio: *const vouch_audio,
    out_clip: *mut *mut vouch_clip,
) -> vouch_status {
    boundary(|| {
        check_out(out_clip, "out_clip")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        if n_frames > MAX_RAW_FRAMES {
            return Err(FfiError::new(
                vouch_status::InvalidArgument,
                format!("n_frames must be at most {MAX_RAW_FRAMES}"),
            ));
        }
        let c_frames: &[vouch_frame] = if n_frames == 0 {
            &[]
        } else if frames.is_null() {
            return Err(FfiError::null("frames"));
        } else {
            // SAFETY: non-NULL, `n_frames` elements per the contract.
            unsafe { std::slice::from_raw_parts(frames, n_frames) }
        };
        let mut raw_frames = Vec::with_capacity(c_frames.len());
        for (index, frame) in c_frames.iter().enumerate() {
            let invalid = |message: String| {
                FfiError::new(
                    vouch_status::InvalidArgument,
                    format!("frames[{index}]: {message}"),
                )
            };
            let format = pixel_format(frame.format)
                .ok_or_else(|| invalid(format!("unknown pixel format {}", frame.format)))?;
            // Exactly the documented values: 360 or 450 is a host's mistake, not a turn.
            let rotation = matches!(frame.rotation_degrees, 0 | 90 | 180 | 270)
                .then(|| Rotation::from_degrees(i64::from(frame.rotation_degrees)))
                .flatten()
                .ok_or_else(|| {
                    invalid(format!(
                        "rotation_degrees {} is not 0, 90, 180 or 270",
                        frame.rotation_degrees
                    ))
                })?;
            if frame.n_planes > 3 {
                return Err(invalid(format!("n_planes {} is over 3", frame.n_planes)));
            }
            let mut planes = Vec::with_capacity(frame.n_planes as usize);
            for (plane_index, plane) in frame.planes[..frame.n_planes as usize].iter().enumerate() {
                // SAFETY: each used plane is valid for `len` bytes per the contract.
                let data = unsafe {
                    read_bytes(
                        plane.data,
                        plane.len,
                        &format!("frames[{index}].planes[{plane_index}].data"),
                    )
                }?;
                planes.push(RawPlane {
                    data,
                    row_stride: plane.row_stride,
                    pixel_stride: plane.pixel_stride,
                });
            }
            raw_frames.push(RawFrame {
                format,
                width: frame.width,
                height: frame.height,
                planes,
                rotation,
                limited_range: frame.limited_range != 0,
                timestamp_ms: frame.timestamp_ms,
            });
        }
        // SAFETY: NULL or valid per the contract.
        // SAFETY: `audio` NULL or valid per the contract.
        let raw_audio = match unsafe { audio.as_ref() } {
            None => None,
            Some(audio) => Some(unsafe { raw_audio(audio) }?),
        };
        hand_over(
            engine
                .media()
                .clip_from_raw(&raw_frames, raw_audio.as_ref())?,
            out_clip,
        );
        Ok(())
    })
}

/// The host audio a `vouch_audio` describes, checked.
///
/// # Safety
/// `audio.data` valid for `audio.len` bytes (or NULL, which is refused).
pub(super) unsafe fn raw_audio(audio: &vouch_audio) -> Result<RawAudio<'_>, FfiError> {
    let format = match audio.sample_format {
        1 => SampleFormat::S16,
        2 => SampleFormat::F32,
        other => {
            return Err(FfiError::new(
                vouch_status::InvalidArgument,
                format!("audio: unknown sample format {other}"),
            ))
        }
    };
    let channels = u16::try_from(audio.channels)
        .map_err(|_| FfiError::new(vouch_status::InvalidArgument, "audio: too many channels"))?;
    Ok(RawAudio {
        // SAFETY: valid for `len` bytes per the contract.
        data: unsafe { read_bytes(audio.data, audio.len, "audio.data") }?,
        format,
        sample_rate: audio.sample_rate,
        channels,
        timestamp_ms: audio.timestamp_ms,
    })
}

/// Number of frames in a clip; 0 for NULL.
///
/// # Safety
/// `clip` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn vouch_clip_frame_count(clip: *const vouch_clip) -> usize {
    // SAFETY: NULL or live per the contract.
    unsafe { clip.as_ref() }.map_or(0, |clip| clip.clip.frames.len())
}

/// Borrows frame `index` of a clip into `*out_frame` (pixels stay valid until `vouch_clip_free`).
/// `VOUCH_STATUS_NOT_FOUND` when `index` is out of range.
///
/// # Safety
/// `clip` NULL or live; `out_frame` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_clip_frame(
    clip: *const vouch_clip,
    index: usize,
    out_frame: *mut vouch_rgb_frame,
) -> vouch_status {
    boundary(|| {
        check_out(out_frame, "out_frame")?;
        // SAFETY: NULL or live per the contract.
        let clip = unsafe { clip.as_ref() }.ok_or_else(|| FfiError::null("clip"))?;
        let frame = clip.clip.frames.get(index).ok_or_else(|| {
            FfiError::new(
                vouch_status::NotFound,
                format!(
                    "frame {index} does not exist; the clip has {}",
                    clip.clip.frames.len()
                ),
            )
        })?;
        let view = vouch_rgb_frame {
            width: frame.width,
            height: frame.height,
            timestamp_ms: frame.timestamp_ms,
            rgb: frame.rgb.as_ptr(),
            len: frame.rgb.len(),
        };
        // SAFETY: checked non-NULL above.
        unsafe { *out_frame = view };
        Ok(())
    })
}

/// Borrows a clip's audio into `*out_pcm`. `VOUCH_STATUS_NOT_FOUND` when the clip has no audio
/// (a video without an audio track).
///
/// # Safety
/// `clip` NULL or live; `out_pcm` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_clip_audio(
    clip: *const vouch_clip,
    out_pcm: *mut vouch_pcm,
) -> vouch_status {
    boundary(|| {
        check_out(out_pcm, "out_pcm")?;
        // SAFETY: NULL or live per the contract.
        let clip = unsafe { clip.as_ref() }.ok_or_else(|| FfiError::null("clip"))?;
        let pcm = clip
            .clip
            .audio
            .as_ref()
            .ok_or_else(|| FfiError::new(vouch_status::NotFound, "the clip has no audio"))?;
        let view = vouch_pcm {
            samples: pcm.samples.as_ptr(),
            len: pcm.samples.len(),
            sample_rate: vouch::PCM_SAMPLE_RATE,
            start_ms: pcm.start_ms,
        };
        // SAFETY: checked non-NULL above.
        unsafe { *out_pcm = view };
        Ok(())
    })
}

/// Facts about a clip as JSON (`container`, `video_codec`, `audio_codec`, `duration_ms`,
/// `coded_width`, `coded_height`, `rotation_degrees`, `video_frame_count`, `frames`,
/// `audio_sample_rate`, `audio_channels`, `has_audio`); NULL for NULL. Owned by the clip.
///
/// # Safety
/// `clip` NULL or live.
#[no_mangle]
pub unsafe extern "C" fn vouch_clip_info_json(clip: *const vouch_clip) -> *const c_char {
    // SAFETY: NULL or live per the contract.
    unsafe { clip.as_ref() }.map_or(std::ptr::null(), |clip| clip.info_json.as_ptr())
}

/// Frees a clip and everything borrowed from it. NULL is a no-op.
///
/// # Safety
/// `clip` NULL or a clip from this library not freed yet.
#[no_mangle]
pub unsafe extern "C" fn vouch_clip_free(clip: *mut vouch_clip) {
    if !clip.is_null() {
        // SAFETY: from Box::into_raw in hand_over, freed once per the contract.
        drop(unsafe { Box::from_raw(clip) });
    }
}
