//! Pixels to the engine's format: [`shrink`] brings a large picture down to the size analysis
//! works at (a box average over whole blocks, before any RGB is made), [`yuv_to_rgb`] turns a
//! decoder's 4:2:0 picture into packed RGB (yuvutils-rs, SIMD), and [`rotate`] turns it upright.
//! Only frames the sampler keeps pass through here.

use yuvutils_rs::{yuv420_to_rgb, YuvPlanarImage, YuvRange, YuvStandardMatrix};

use super::demux::YuvView;
use super::error::MediaError;
use super::types::Rotation;

/// Whether a plane of `len` bytes holds `rows` rows of `row_len` bytes `stride` apart.
fn plane_fits(len: usize, stride: usize, rows: usize, row_len: usize) -> bool {
    stride >= row_len
        && rows.checked_sub(1).is_none_or(|last| {
            last.checked_mul(stride)
                .and_then(|start| start.checked_add(row_len))
                .is_some_and(|end| end <= len)
        })
}

/// Checks that the view's planes hold its picture, so that converters may index freely.
fn check_planes(view: &YuvView<'_>) -> Result<(), MediaError> {
    let (width, height) = (view.width as usize, view.height as usize);
    let (chroma_width, chroma_height) = (width.div_ceil(2), height.div_ceil(2));
    if !plane_fits(view.y.len(), view.y_stride, height, width)
        || !plane_fits(view.u.len(), view.u_stride, chroma_height, chroma_width)
        || !plane_fits(view.v.len(), view.v_stride, chroma_height, chroma_width)
    {
        return Err(MediaError::InvalidRaw(format!(
            "planes too small for a {width}x{height} picture"
        )));
    }
    Ok(())
}

/// The whole factor that brings the longer side of a `width` x `height` picture to at most
/// `max_side` pixels (1 when it fits already, or when `max_side` is 0: no limit).
pub(crate) fn shrink_factor(width: u32, height: u32, max_side: u32) -> u32 {
    if max_side == 0 {
        1
    } else {
        width.max(height).div_ceil(max_side).max(1)
    }
}

/// A 4:2:0 picture with its own tightly packed planes.
pub(crate) struct Planes {
    width: u32,
    height: u32,
    y: Vec<u8>,
    u: Vec<u8>,
    v: Vec<u8>,
}

impl Planes {
    /// A view of the planes, with the source's colour facts.
    pub(crate) fn view(&self, color: super::demux::ColorInfo) -> YuvView<'_> {
        let chroma_width = (self.width as usize).div_ceil(2);
        YuvView {
            width: self.width,
            height: self.height,
            y: &self.y,
            u: &self.u,
            v: &self.v,
            y_stride: self.width as usize,
            u_stride: chroma_width,
            v_stride: chroma_width,
            color,
        }
    }
}

/// The picture shrunk by a whole `factor` (2 or more): every output sample is the mean of a
/// `factor` x `factor` block of the source plane (an antialiasing decimation), in luma and chroma
/// alike, so 4:2:0 stays aligned. The last `width % factor` columns and `height % factor` rows are
/// dropped. Working on the planes keeps the full-size picture from ever existing in RGB.
pub(crate) fn shrink(view: &YuvView<'_>, factor: u32) -> Result<Planes, MediaError> {
    check_planes(view)?;
    let factor = factor.max(1) as usize;
    let (width, height) = (view.width as usize, view.height as usize);
    let (out_width, out_height) = ((width / factor).max(1), (height / factor).max(1));
    let plane =
        |source: &[u8], stride: usize, source_size: (usize, usize), size: (usize, usize)| {
            let mut out = Vec::with_capacity(size.0 * size.1);
            let mut sums = vec![0u32; size.0];
            for out_y in 0..size.1 {
                sums.fill(0);
                let rows = (out_y * factor)..((out_y + 1) * factor).min(source_size.1);
                let row_count = rows.len();
                for row in rows {
                    let line = &source[row * stride..row * stride + source_size.0];
                    for (out_x, sum) in sums.iter_mut().enumerate() {
                        let start = out_x * factor;
                        let end = (start + factor).min(source_size.0);
                        *sum += line[start..end].iter().map(|&s| u32::from(s)).sum::<u32>();
                    }
                }
                for (out_x, &sum) in sums.iter().enumerate() {
                    let columns = (out_x * factor + factor).min(source_size.0) - out_x * factor;
                    let count = (columns * row_count) as u32;
                    out.push(((sum + count / 2) / count) as u8);
                }
            }
            out
        };
    let chroma = (width.div_ceil(2), height.div_ceil(2));
    let out_chroma = (out_width.div_ceil(2), out_height.div_ceil(2));
    Ok(Planes {
        width: out_width as u32,
        height: out_height as u32,
        y: plane(
            view.y,
            view.y_stride,
            (width, height),
            (out_width, out_height),
        ),
        u: plane(view.u, view.u_stride, chroma, out_chroma),
        v: plane(view.v, view.v_stride, chroma, out_chroma),
    })
}

/// A plane as the converter reads it: in whole strides (`chunks_exact(stride)`). A plane whose
/// last row is tight, shorter than its stride (which [`check_planes`] accepts, and decoders and
/// hosts give), would lose its last rows there, or with a single chroma row make the converter
/// panic (found by the `video_decode` fuzzer on a VP8 picture one row high). Such a plane is
/// copied with its rows packed, `rows * row_len` bytes, which the picture-size limit bounds;
/// others are used as they are.
pub(crate) fn whole_strides(
    plane: &[u8],
    stride: usize,
    rows: usize,
    row_len: usize,
) -> (std::borrow::Cow<'_, [u8]>, usize) {
    if rows
        .checked_mul(stride)
        .is_some_and(|whole| whole <= plane.len())
    {
        return (std::borrow::Cow::Borrowed(plane), stride);
    }
    // Here `stride > row_len`: with equal ones `check_planes` guarantees whole strides.
    (packed_rows(plane, stride, rows, row_len), row_len)
}

/// A plane with its rows packed back to back (`rows * row_len` bytes, stride `row_len`), as the
/// converter's semi-planar (NV12/NV21) path requires of the interleaved chroma plane: it refuses
/// any other length (`ChromaPlaneSizeMismatch`), so a host's row padding, which Android's camera
/// buffers have, would otherwise be refused. Borrowed when the rows are packed already.
pub(crate) fn packed_rows(
    plane: &[u8],
    stride: usize,
    rows: usize,
    row_len: usize,
) -> std::borrow::Cow<'_, [u8]> {
    if stride == row_len {
        // The plane's checks guarantee `(rows - 1) * stride + row_len` bytes.
        return std::borrow::Cow::Borrowed(&plane[..rows * row_len]);
    }
    let mut packed = Vec::with_capacity(rows * row_len);
    for row in 0..rows {
        // The plane's checks guarantee every row's first `row_len` bytes.
        packed.extend_from_slice(&plane[row * stride..row * stride + row_len]);
    }
    std::borrow::Cow::Owned(packed)
}

/// Converts a 4:2:0 8-bit picture to packed RGB (`width * height * 3` bytes).
pub(crate) fn yuv_to_rgb(view: &YuvView<'_>) -> Result<Vec<u8>, MediaError> {
    let (width, height) = (view.width as usize, view.height as usize);
    check_planes(view)?;
    let (chroma_width, chroma_height) = (width.div_ceil(2), height.div_ceil(2));
    let (y, y_stride) = whole_strides(view.y, view.y_stride, height, width);
    let (u, u_stride) = whole_strides(view.u, view.u_stride, chroma_height, chroma_width);
    let (v, v_stride) = whole_strides(view.v, view.v_stride, chroma_height, chroma_width);
    let stride = |value: usize| {
        u32::try_from(value).map_err(|_| MediaError::InvalidRaw("stride too large".to_owned()))
    };
    let image = YuvPlanarImage {
        y_plane: &y,
        y_stride: stride(y_stride)?,
        u_plane: &u,
        u_stride: stride(u_stride)?,
        v_plane: &v,
        v_stride: stride(v_stride)?,
        width: view.width,
        height: view.height,
    };
    let mut rgb = vec![0u8; width * height * 3];
    let range = if view.color.full_range {
        YuvRange::Full
    } else {
        YuvRange::Limited
    };
    let matrix = if view.color.bt709 {
        YuvStandardMatrix::Bt709
    } else {
        YuvStandardMatrix::Bt601
    };
    yuv420_to_rgb(&image, &mut rgb, view.width * 3, range, matrix)
        .map_err(|error| MediaError::InvalidRaw(format!("YUV to RGB: {error:?}")))?;
    Ok(rgb)
}

/// Rotates packed RGB clockwise by `rotation`; returns the pixels and the new width and height.
pub(crate) fn rotate(
    rgb: Vec<u8>,
    width: u32,
    height: u32,
    rotation: Rotation,
) -> (Vec<u8>, u32, u32) {
    let (w, h) = (width as usize, height as usize);
    let pixel = |x: usize, y: usize| 3 * (y * w + x);
    match rotation {
        Rotation::None => (rgb, width, height),
        Rotation::Rotate180 => {
            let mut out = Vec::with_capacity(rgb.len());
            for source in rgb.chunks_exact(3).rev() {
                out.extend_from_slice(source);
            }
            (out, width, height)
        }
        Rotation::Clockwise90 | Rotation::Clockwise270 => {
            // Output is h wide and w tall; walk the output row by row so writes are sequential.
            let mut out = Vec::with_capacity(rgb.len());
            for out_y in 0..w {
                for out_x in 0..h {
                    let (x, y) = if rotation == Rotation::Clockwise90 {
                        (out_y, h - 1 - out_x)
                    } else {
                        (w - 1 - out_y, out_x)
                    };
                    out.extend_from_slice(&rgb[pixel(x, y)..pixel(x, y) + 3]);
                }
            }
            (out, height, width)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demux::ColorInfo;

    #[test]
    fn grey_and_colour_convert_with_the_right_range() {
        // 4x2 picture: limited-range mid grey (Y 126, chroma neutral) converts to about 128.
        let y = [126u8; 8];
        let (u, v) = ([128u8; 2], [128u8; 2]);
        let view = YuvView {
            width: 4,
            height: 2,
            y: &y,
            u: &u,
            v: &v,
            y_stride: 4,
            u_stride: 2,
            v_stride: 2,
            color: ColorInfo::default(),
        };
        let rgb = yuv_to_rgb(&view).unwrap();
        assert_eq!(rgb.len(), 24);
        assert!(rgb.iter().all(|&c| (127..=129).contains(&c)), "{rgb:?}");
        // Pure red in BT.601 limited range: Y 81, Cb 90, Cr 240.
        let (y, u, v) = ([81u8; 8], [90u8; 2], [240u8; 2]);
        let view = YuvView {
            y: &y,
            u: &u,
            v: &v,
            ..view
        };
        let rgb = yuv_to_rgb(&view).unwrap();
        assert!(
            rgb[0] > 245 && rgb[1] < 10 && rgb[2] < 10,
            "{:?}",
            &rgb[..3]
        );
    }

    #[test]
    fn short_planes_are_errors_not_panics() {
        let (y, u, v) = ([0u8; 7], [0u8; 2], [0u8; 2]);
        let view = YuvView {
            width: 4,
            height: 2,
            y: &y,
            u: &u,
            v: &v,
            y_stride: 4,
            u_stride: 2,
            v_stride: 2,
            color: ColorInfo::default(),
        };
        assert!(matches!(yuv_to_rgb(&view), Err(MediaError::InvalidRaw(_))));
    }

    /// Planes whose last row is shorter than the stride convert like padded ones: a picture one
    /// row high no longer panics in the converter (a `video_decode` fuzzing find), and the last
    /// rows of an even-height picture are no longer left black.
    #[test]
    fn tight_last_rows_convert_like_padded_ones() {
        for (width, height) in [(4usize, 1usize), (5, 1), (4, 2), (6, 3), (7, 4)] {
            let (cw, ch) = (width.div_ceil(2), height.div_ceil(2));
            let (ys, cs) = (width + 3, cw + 5);
            let padded = |stride: usize, rows: usize, seed: usize| -> Vec<u8> {
                (0..stride * rows)
                    .map(|i| (60 + (i * 37 + seed * 11) % 150) as u8)
                    .collect()
            };
            let (y, u, v) = (padded(ys, height, 1), padded(cs, ch, 2), padded(cs, ch, 3));
            let view = YuvView {
                width: width as u32,
                height: height as u32,
                y: &y,
                u: &u,
                v: &v,
                y_stride: ys,
                u_stride: cs,
                v_stride: cs,
                color: ColorInfo::default(),
            };
            let expected = yuv_to_rgb(&view).unwrap();
            // The same planes cut just after the last row's pixels.
            let tight = YuvView {
                y: &y[..(height - 1) * ys + width],
                u: &u[..(ch - 1) * cs + cw],
                v: &v[..(ch - 1) * cs + cw],
                ..view
            };
            assert_eq!(yuv_to_rgb(&tight).unwrap(), expected, "{width}x{height}");
        }
    }

    #[test]
    fn shrinking_averages_whole_blocks_in_luma_and_chroma() {
        assert_eq!(shrink_factor(4096, 4096, 1280), 4);
        assert_eq!(shrink_factor(1920, 1080, 1280), 2);
        assert_eq!(shrink_factor(1280, 720, 1280), 1);
        assert_eq!(shrink_factor(8000, 10, 0), 1);
        // 5x4 luma, rows 10, 20, 30, 40; chroma 3x2 with 100 left, 200 right.
        let y: Vec<u8> = (0..4).flat_map(|row| [10 * (row + 1); 5]).collect();
        let u = [100u8, 100, 200, 100, 100, 200];
        let v = [128u8; 6];
        let view = YuvView {
            width: 5,
            height: 4,
            y: &y,
            u: &u,
            v: &v,
            y_stride: 5,
            u_stride: 3,
            v_stride: 3,
            color: ColorInfo::default(),
        };
        let planes = shrink(&view, 2).unwrap();
        assert_eq!((planes.width, planes.height), (2, 2));
        // Rows (10, 20) and (30, 40) average to 15 and 35; the fifth column is dropped.
        assert_eq!(planes.y, vec![15, 15, 35, 35]);
        // 1x1 chroma from the 2x2 top-left block of the 3x2 plane.
        assert_eq!(planes.u, vec![100]);
        assert_eq!(
            yuv_to_rgb(&planes.view(ColorInfo::default()))
                .unwrap()
                .len(),
            12
        );
        // Strides that wrap are refused, not indexed.
        let wrapping = YuvView {
            y_stride: usize::MAX / 2,
            ..view
        };
        assert!(shrink(&wrapping, 2).is_err());
    }

    #[test]
    fn rotations_move_the_corner_pixel() {
        // 3x2 image, pixel values = index so positions are recognisable.
        let rgb: Vec<u8> = (0..6u8).flat_map(|index| [index, index, index]).collect();
        let (out, w, h) = rotate(rgb.clone(), 3, 2, Rotation::Clockwise90);
        assert_eq!((w, h), (2, 3));
        // Clockwise: the bottom-left source pixel (index 3) becomes the top-left.
        assert_eq!(
            out.chunks(3).map(|p| p[0]).collect::<Vec<_>>(),
            vec![3, 0, 4, 1, 5, 2]
        );
        let (out, w, h) = rotate(rgb.clone(), 3, 2, Rotation::Clockwise270);
        assert_eq!((w, h), (2, 3));
        assert_eq!(
            out.chunks(3).map(|p| p[0]).collect::<Vec<_>>(),
            vec![2, 5, 1, 4, 0, 3]
        );
        let (out, _, _) = rotate(rgb, 3, 2, Rotation::Rotate180);
        assert_eq!(
            out.chunks(3).map(|p| p[0]).collect::<Vec<_>>(),
            vec![5, 4, 3, 2, 1, 0]
        );
    }
}
