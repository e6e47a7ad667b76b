//! Frames and audio the host decoded itself (iOS AVFoundation, Android MediaCodec): [`RawFrame`]
//! (planes with row and pixel strides, a [`PixelFormat`], rotation, timestamp) and [`RawAudio`]
//! (interleaved s16 or f32) become the same [`Frame`] and [`Pcm`] as decoded files.

use yuvutils_rs::{
    yuv_nv12_to_rgb, yuv_nv21_to_rgb, YuvBiPlanarImage, YuvConversionMode, YuvRange,
    YuvStandardMatrix,
};

use super::demux::{ColorInfo, YuvView};
use super::error::MediaError;
use super::resample;
use super::types::{Frame, Pcm, Rotation};
use super::yuv;

/// Largest width or height accepted from the host.
pub const MAX_RAW_DIMENSION: u32 = 8192;

/// Pixel layouts hosts hand over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelFormat {
    /// Planar Y, U, V; chroma half width and height. Chroma pixel stride may be 1 or more
    /// (Android `YUV_420_888`).
    I420,
    /// Y plane plus one interleaved U,V plane (iOS `420YpCbCr8BiPlanar`).
    Nv12,
    /// Y plane plus one interleaved V,U plane (Android camera default).
    Nv21,
    /// Packed B, G, R, A bytes (iOS `32BGRA`).
    Bgra,
    /// Packed R, G, B, A bytes.
    Rgba,
    /// Packed R, G, B bytes.
    Rgb24,
}

/// One plane of a raw frame.
#[derive(Debug, Clone, Copy)]
pub struct RawPlane<'a> {
    /// The plane's bytes (from its first pixel to at least the end of its last row's last pixel).
    pub data: &'a [u8],
    /// Bytes from one row to the next.
    pub row_stride: usize,
    /// Bytes from one pixel (sample) to the next within a row.
    pub pixel_stride: usize,
}

/// A frame the host decoded.
#[derive(Debug, Clone)]
pub struct RawFrame<'a> {
    /// Layout of `planes`.
    pub format: PixelFormat,
    /// Width in pixels (before rotation).
    pub width: u32,
    /// Height in pixels (before rotation).
    pub height: u32,
    /// Y, U, V for I420; Y, UV for NV12/NV21; one plane for packed formats.
    pub planes: Vec<RawPlane<'a>>,
    /// Clockwise rotation that makes the picture upright.
    pub rotation: Rotation,
    /// Limited (video) range rather than full range, for YUV formats.
    pub limited_range: bool,
    /// Presentation time, ms.
    pub timestamp_ms: i64,
}

/// Sample formats of host audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleFormat {
    /// Signed 16-bit little-endian (native) integers.
    S16,
    /// 32-bit floats in -1..1.
    F32,
}

/// Audio the host decoded: interleaved samples.
#[derive(Debug, Clone, Copy)]
pub struct RawAudio<'a> {
    /// The samples as bytes, native endianness, interleaved.
    pub data: &'a [u8],
    /// Their format.
    pub format: SampleFormat,
    /// Sample rate, Hz.
    pub sample_rate: u32,
    /// Channels.
    pub channels: u16,
    /// Presentation time of the first sample, ms.
    pub timestamp_ms: i64,
}

fn invalid(message: impl Into<String>) -> MediaError {
    MediaError::InvalidRaw(message.into())
}

/// Checks that a plane holds `rows` rows of `columns` samples at its strides.
fn check_plane(
    plane: &RawPlane<'_>,
    name: &str,
    columns: usize,
    rows: usize,
    sample_bytes: usize,
) -> Result<(), MediaError> {
    // Checked arithmetic: strides come from the host and may be anything (a huge row stride
    // must be refused, not wrap round).
    let row_bytes = plane
        .pixel_stride
        .checked_mul(columns - 1)
        .and_then(|bytes| bytes.checked_add(sample_bytes));
    if plane.pixel_stride < sample_bytes || row_bytes.is_none_or(|bytes| plane.row_stride < bytes) {
        return Err(invalid(format!(
            "{name} plane strides (row {}, pixel {}) are too small for {columns} samples per row",
            plane.row_stride, plane.pixel_stride
        )));
    }
    let needed = plane
        .row_stride
        .checked_mul(rows - 1)
        .and_then(|bytes| bytes.checked_add(row_bytes?))
        .ok_or_else(|| {
            invalid(format!(
                "{name} plane strides (row {}, pixel {}) are too large for {rows} rows",
                plane.row_stride, plane.pixel_stride
            ))
        })?;
    if plane.data.len() < needed {
        return Err(invalid(format!(
            "{name} plane has {} bytes, needs {needed}",
            plane.data.len()
        )));
    }
    Ok(())
}

/// Copies a strided chroma plane into a tight one (Android planes with pixel stride 2).
fn gather(plane: &RawPlane<'_>, columns: usize, rows: usize) -> Vec<u8> {
    let mut tight = Vec::with_capacity(columns * rows);
    for row in 0..rows {
        let start = row * plane.row_stride;
        tight.extend((0..columns).map(|column| plane.data[start + column * plane.pixel_stride]));
    }
    tight
}

/// Converts a host frame to an upright RGB [`Frame`]; the input is only read.
pub fn frame_from_raw(raw: &RawFrame<'_>) -> Result<Frame, MediaError> {
    let (width, height) = (raw.width, raw.height);
    if width == 0 || height == 0 || width > MAX_RAW_DIMENSION || height > MAX_RAW_DIMENSION {
        return Err(invalid(format!(
            "frame size {width}x{height} is outside 1..={MAX_RAW_DIMENSION}"
        )));
    }
    let (w, h) = (width as usize, height as usize);
    let (chroma_w, chroma_h) = (w.div_ceil(2), h.div_ceil(2));
    let expected_planes = match raw.format {
        PixelFormat::I420 => 3,
        PixelFormat::Nv12 | PixelFormat::Nv21 => 2,
        PixelFormat::Bgra | PixelFormat::Rgba | PixelFormat::Rgb24 => 1,
    };
    if raw.planes.len() != expected_planes {
        return Err(invalid(format!(
            "{:?} needs {expected_planes} planes, got {}",
            raw.format,
            raw.planes.len()
        )));
    }
    let color = ColorInfo {
        full_range: !raw.limited_range,
        bt709: false,
    };
    let rgb = match raw.format {
        PixelFormat::I420 => {
            let [y, u, v] = [raw.planes[0], raw.planes[1], raw.planes[2]];
            check_plane(&y, "Y", w, h, 1)?;
            if y.pixel_stride != 1 {
                return Err(invalid("Y plane pixel stride must be 1"));
            }
            check_plane(&u, "U", chroma_w, chroma_h, 1)?;
            check_plane(&v, "V", chroma_w, chroma_h, 1)?;
            let (u_tight, v_tight);
            let (u_data, u_stride, v_data, v_stride) = if u.pixel_stride == 1 && v.pixel_stride == 1
            {
                (u.data, u.row_stride, v.data, v.row_stride)
            } else {
                u_tight = gather(&u, chroma_w, chroma_h);
                v_tight = gather(&v, chroma_w, chroma_h);
                (&u_tight[..], chroma_w, &v_tight[..], chroma_w)
            };
            yuv::yuv_to_rgb(&YuvView {
                width,
                height,
                y: y.data,
                u: u_data,
                v: v_data,
                y_stride: y.row_stride,
                u_stride,
                v_stride,
                color,
            })?
        }
        PixelFormat::Nv12 | PixelFormat::Nv21 => {
            let [y, uv] = [raw.planes[0], raw.planes[1]];
            check_plane(&y, "Y", w, h, 1)?;
            check_plane(&uv, "UV", chroma_w, chroma_h, 2)?;
            if y.pixel_stride != 1 || uv.pixel_stride != 2 {
                return Err(invalid("NV12/NV21 need pixel strides 1 (Y) and 2 (UV)"));
            }
            let stride =
                |value: usize| u32::try_from(value).map_err(|_| invalid("stride too large"));
            // The converter reads whole strides and takes the chroma plane only with its rows
            // packed: a tight last row (`yuv::whole_strides`) and row padding
            // (`yuv::packed_rows`), both common in Android's camera buffers, are repacked.
            let (y_data, y_stride) = yuv::whole_strides(y.data, y.row_stride, h, w);
            let uv_data = yuv::packed_rows(uv.data, uv.row_stride, chroma_h, chroma_w * 2);
            let uv_stride = chroma_w * 2;
            let image = YuvBiPlanarImage {
                y_plane: &y_data,
                y_stride: stride(y_stride)?,
                uv_plane: &uv_data,
                uv_stride: stride(uv_stride)?,
                width,
                height,
            };
            let mut rgb = vec![0u8; w * h * 3];
            let range = if raw.limited_range {
                YuvRange::Limited
            } else {
                YuvRange::Full
            };
            let convert = if raw.format == PixelFormat::Nv12 {
                yuv_nv12_to_rgb
            } else {
                yuv_nv21_to_rgb
            };
            convert(
                &image,
                &mut rgb,
                width * 3,
                range,
                YuvStandardMatrix::Bt601,
                YuvConversionMode::Balanced,
            )
            .map_err(|error| invalid(format!("NV to RGB: {error:?}")))?;
            rgb
        }
        PixelFormat::Bgra | PixelFormat::Rgba | PixelFormat::Rgb24 => {
            let plane = raw.planes[0];
            let bytes = if raw.format == PixelFormat::Rgb24 {
                3
            } else {
                4
            };
            if plane.pixel_stride != bytes {
                return Err(invalid(format!(
                    "{:?} needs pixel stride {bytes}",
                    raw.format
                )));
            }
            check_plane(&plane, "packed", w, h, bytes)?;
            let mut rgb = Vec::with_capacity(w * h * 3);
            for row in 0..h {
                let line = &plane.data[row * plane.row_stride..row * plane.row_stride + w * bytes];
                for pixel in line.chunks_exact(bytes) {
                    match raw.format {
                        PixelFormat::Bgra => rgb.extend_from_slice(&[pixel[2], pixel[1], pixel[0]]),
                        _ => rgb.extend_from_slice(&pixel[..3]),
                    }
                }
            }
            rgb
        }
    };
    let (rgb, width, height) = yuv::rotate(rgb, width, height, raw.rotation);
    Ok(Frame {
        timestamp_ms: raw.timestamp_ms,
        width,
        height,
        rgb,
    })
}

/// Converts host audio to 16 kHz mono [`Pcm`].
pub fn pcm_from_raw(raw: &RawAudio<'_>) -> Result<Pcm, MediaError> {
    if raw.channels == 0 || raw.channels > 32 || !(4_000..=384_000).contains(&raw.sample_rate) {
        return Err(invalid(format!(
            "audio with {} channels at {} Hz",
            raw.channels, raw.sample_rate
        )));
    }
    let interleaved: Vec<f32> = match raw.format {
        SampleFormat::S16 => {
            if !raw.data.len().is_multiple_of(2) {
                return Err(invalid("s16 audio has an odd number of bytes"));
            }
            raw.data
                .chunks_exact(2)
                .map(|pair| f32::from(i16::from_ne_bytes([pair[0], pair[1]])) / 32768.0)
                .collect()
        }
        SampleFormat::F32 => {
            if !raw.data.len().is_multiple_of(4) {
                return Err(invalid("f32 audio is not a whole number of samples"));
            }
            raw.data
                .chunks_exact(4)
                .map(|bytes| {
                    let sample = f32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                    if sample.is_finite() {
                        sample.clamp(-1.0, 1.0)
                    } else {
                        0.0
                    }
                })
                .collect()
        }
    };
    if !interleaved.len().is_multiple_of(usize::from(raw.channels)) {
        return Err(invalid(
            "audio sample count is not a multiple of the channel count",
        ));
    }
    let samples = resample::to_mono_16k(&interleaved, raw.sample_rate, raw.channels)?;
    Ok(Pcm {
        samples,
        start_ms: raw.timestamp_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4x4 picture: left half red, right half blue, in the requested layout.
    fn packed(format: PixelFormat) -> Vec<u8> {
        let mut data = Vec::new();
        for _row in 0..4 {
            for column in 0..4 {
                let (r, g, b) = if column < 2 { (255, 0, 0) } else { (0, 0, 255) };
                match format {
                    PixelFormat::Bgra => data.extend_from_slice(&[b, g, r, 255]),
                    PixelFormat::Rgba => data.extend_from_slice(&[r, g, b, 255]),
                    _ => data.extend_from_slice(&[r, g, b]),
                }
            }
        }
        data
    }

    fn is_red(pixel: &[u8]) -> bool {
        pixel[0] > 200 && pixel[1] < 60 && pixel[2] < 60
    }

    fn is_blue(pixel: &[u8]) -> bool {
        pixel[2] > 200 && pixel[0] < 60 && pixel[1] < 60
    }

    /// Host strides whose products overflow are refused with a message, never a panic (a huge
    /// row stride made `row_stride * (rows - 1)` wrap).
    #[test]
    fn overflowing_strides_are_refused() {
        let data = packed(PixelFormat::Rgba);
        for (row_stride, pixel_stride) in [(usize::MAX, 4), (usize::MAX / 2, 4), (16, usize::MAX)] {
            let result = frame_from_raw(&RawFrame {
                format: PixelFormat::Rgba,
                width: 4,
                height: 4,
                planes: vec![RawPlane {
                    data: &data,
                    row_stride,
                    pixel_stride,
                }],
                rotation: Rotation::None,
                limited_range: false,
                timestamp_ms: 0,
            });
            assert!(
                matches!(&result, Err(MediaError::InvalidRaw(m)) if m.contains("stride")),
                "{row_stride} {pixel_stride}: {result:?}"
            );
        }
    }

    #[test]
    fn packed_formats_and_rotation() {
        for (format, bytes) in [
            (PixelFormat::Bgra, 4),
            (PixelFormat::Rgba, 4),
            (PixelFormat::Rgb24, 3),
        ] {
            let data = packed(format);
            let frame = frame_from_raw(&RawFrame {
                format,
                width: 4,
                height: 4,
                planes: vec![RawPlane {
                    data: &data,
                    row_stride: 4 * bytes,
                    pixel_stride: bytes,
                }],
                rotation: Rotation::Clockwise90,
                limited_range: false,
                timestamp_ms: 7,
            })
            .unwrap();
            // Rotated clockwise, the red left half becomes the top half.
            assert!(
                is_red(&frame.rgb[0..3]) && is_blue(&frame.rgb[3 * 12..3 * 12 + 3]),
                "{format:?}"
            );
            assert_eq!(frame.timestamp_ms, 7);
        }
    }

    /// BT.601 full-range YUV of red (76, 85, 255) and blue (29, 255, 107).
    fn yuv_planes() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let y: Vec<u8> = (0..16)
            .map(|index| if index % 4 < 2 { 76 } else { 29 })
            .collect();
        let u = vec![85, 255, 85, 255];
        let v = vec![255, 107, 255, 107];
        (y, u, v)
    }

    /// Semi-planar frames with padded rows (refused before: the converter takes the chroma plane
    /// only packed) and with planes that end just after the last row's samples (Android's camera
    /// buffers have both) convert like packed ones, at odd heights too (one chroma row could
    /// make the converter panic).
    #[test]
    fn semi_planar_padded_and_tight_rows_convert_alike() {
        for (width, height) in [(4usize, 1usize), (6, 3), (4, 2), (8, 5)] {
            let (cw, ch) = (width.div_ceil(2), height.div_ceil(2));
            let (ys, uvs) = (width + 4, cw * 2 + 6);
            let fill = |len: usize, seed: usize| -> Vec<u8> {
                (0..len)
                    .map(|i| (40 + (i * 29 + seed) % 170) as u8)
                    .collect()
            };
            let (y, uv) = (fill(ys * height, 3), fill(uvs * ch, 7));
            let frame = |y: &[u8], uv: &[u8], ys: usize, uvs: usize| {
                frame_from_raw(&RawFrame {
                    format: PixelFormat::Nv12,
                    width: width as u32,
                    height: height as u32,
                    planes: vec![
                        RawPlane {
                            data: y,
                            row_stride: ys,
                            pixel_stride: 1,
                        },
                        RawPlane {
                            data: uv,
                            row_stride: uvs,
                            pixel_stride: 2,
                        },
                    ],
                    rotation: Rotation::None,
                    limited_range: false,
                    timestamp_ms: 0,
                })
                .unwrap()
            };
            let padded = frame(&y, &uv, ys, uvs);
            let tight = frame(
                &y[..(height - 1) * ys + width],
                &uv[..(ch - 1) * uvs + cw * 2],
                ys,
                uvs,
            );
            assert_eq!(tight.rgb, padded.rgb, "{width}x{height}");
            // The same picture with its rows packed: no padding anywhere.
            let packed_y: Vec<u8> = y.chunks(ys).flat_map(|row| row[..width].to_vec()).collect();
            let packed_uv: Vec<u8> = uv
                .chunks(uvs)
                .flat_map(|row| row[..cw * 2].to_vec())
                .collect();
            let packed = frame(&packed_y, &packed_uv, width, cw * 2);
            assert_eq!(packed.rgb, padded.rgb, "{width}x{height}");
        }
    }

    #[test]
    fn planar_semi_planar_and_android_strided_yuv() {
        let (y, u, v) = yuv_planes();
        let frame = |format, planes| {
            frame_from_raw(&RawFrame {
                format,
                width: 4,
                height: 4,
                planes,
                rotation: Rotation::None,
                limited_range: false,
                timestamp_ms: 0,
            })
            .unwrap()
        };
        fn plane(data: &[u8], row_stride: usize, pixel_stride: usize) -> RawPlane<'_> {
            RawPlane {
                data,
                row_stride,
                pixel_stride,
            }
        }
        let i420 = frame(
            PixelFormat::I420,
            vec![plane(&y, 4, 1), plane(&u, 2, 1), plane(&v, 2, 1)],
        );
        let nv12_uv: Vec<u8> = u.iter().zip(&v).flat_map(|(u, v)| [*u, *v]).collect();
        let nv21_vu: Vec<u8> = u.iter().zip(&v).flat_map(|(u, v)| [*v, *u]).collect();
        let nv12 = frame(
            PixelFormat::Nv12,
            vec![plane(&y, 4, 1), plane(&nv12_uv, 4, 2)],
        );
        let nv21 = frame(
            PixelFormat::Nv21,
            vec![plane(&y, 4, 1), plane(&nv21_vu, 4, 2)],
        );
        // Android YUV_420_888 with pixel stride 2: U and V views into one interleaved buffer.
        let android = frame(
            PixelFormat::I420,
            vec![
                plane(&y, 4, 1),
                plane(&nv12_uv, 4, 2),
                plane(&nv12_uv[1..], 4, 2),
            ],
        );
        for picture in [&i420, &nv12, &nv21, &android] {
            assert!(
                is_red(&picture.rgb[0..3]) && is_blue(&picture.rgb[9..12]),
                "{:?}",
                &picture.rgb[..12]
            );
        }
    }

    #[test]
    fn inconsistent_frames_are_errors() {
        let data = vec![0u8; 10];
        let bad = |format, width, planes| {
            frame_from_raw(&RawFrame {
                format,
                width,
                height: 4,
                planes,
                rotation: Rotation::None,
                limited_range: false,
                timestamp_ms: 0,
            })
        };
        assert!(bad(
            PixelFormat::Rgb24,
            4,
            vec![RawPlane {
                data: &data,
                row_stride: 12,
                pixel_stride: 3
            }]
        )
        .is_err());
        assert!(bad(
            PixelFormat::Rgb24,
            0,
            vec![RawPlane {
                data: &data,
                row_stride: 12,
                pixel_stride: 3
            }]
        )
        .is_err());
        assert!(bad(PixelFormat::Rgb24, 9000, vec![]).is_err());
        assert!(bad(PixelFormat::I420, 4, vec![]).is_err());
        assert!(bad(
            PixelFormat::Bgra,
            4,
            vec![RawPlane {
                data: &data,
                row_stride: 2,
                pixel_stride: 4
            }]
        )
        .is_err());
    }

    #[test]
    fn host_audio_becomes_16k_mono() {
        let stereo_s16: Vec<u8> = (0..48_000)
            .flat_map(|_| [16384i16.to_ne_bytes(), 0i16.to_ne_bytes()])
            .flatten()
            .collect();
        let pcm = pcm_from_raw(&RawAudio {
            data: &stereo_s16,
            format: SampleFormat::S16,
            sample_rate: 48_000,
            channels: 2,
            timestamp_ms: 40,
        })
        .unwrap();
        assert!((pcm.samples.len() as i64 - 16_000).abs() <= 2);
        assert!(
            (pcm.samples[8_000] - 0.25).abs() < 0.01,
            "{}",
            pcm.samples[8_000]
        );
        assert_eq!(pcm.start_ms, 40);
        let f32_mono: Vec<u8> = [0.5f32, f32::NAN, 2.0]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        let pcm = pcm_from_raw(&RawAudio {
            data: &f32_mono,
            format: SampleFormat::F32,
            sample_rate: 16_000,
            channels: 1,
            timestamp_ms: 0,
        })
        .unwrap();
        assert_eq!(pcm.samples, vec![0.5, 0.0, 1.0]);
        let odd = [0u8; 3];
        assert!(pcm_from_raw(&RawAudio {
            data: &odd,
            format: SampleFormat::S16,
            sample_rate: 16_000,
            channels: 1,
            timestamp_ms: 0
        })
        .is_err());
        assert!(pcm_from_raw(&RawAudio {
            data: &[],
            format: SampleFormat::S16,
            sample_rate: 100,
            channels: 1,
            timestamp_ms: 0
        })
        .is_err());
        assert!(pcm_from_raw(&RawAudio {
            data: &[],
            format: SampleFormat::S16,
            sample_rate: 16_000,
            channels: 0,
            timestamp_ms: 0
        })
        .is_err());
    }
}
