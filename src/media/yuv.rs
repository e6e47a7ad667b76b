//! Pixels to the engine's format: [`yuv_to_rgb`] turns a decoder's 4:2:0 picture into packed RGB
//! (yuvutils-rs, SIMD), and [`rotate`] turns it upright. Only frames the sampler keeps pass through
//! here.

use yuvutils_rs::{yuv420_to_rgb, YuvPlanarImage, YuvRange, YuvStandardMatrix};

use super::demux::YuvView;
use super::error::MediaError;
use super::types::Rotation;

/// Converts a 4:2:0 8-bit picture to packed RGB (`width * height * 3` bytes).
pub(crate) fn yuv_to_rgb(view: &YuvView<'_>) -> Result<Vec<u8>, MediaError> {
    let (width, height) = (view.width as usize, view.height as usize);
    let chroma_height = height.div_ceil(2);
    let chroma_width = width.div_ceil(2);
    let plane_fits = |len: usize, stride: usize, rows: usize, row_len: usize| {
        stride >= row_len
            && rows
                .checked_sub(1)
                .is_none_or(|last| last * stride + row_len <= len)
    };
    if !plane_fits(view.y.len(), view.y_stride, height, width)
        || !plane_fits(view.u.len(), view.u_stride, chroma_height, chroma_width)
        || !plane_fits(view.v.len(), view.v_stride, chroma_height, chroma_width)
    {
        return Err(MediaError::InvalidRaw(format!(
            "planes too small for a {width}x{height} picture"
        )));
    }
    let stride = |value: usize| {
        u32::try_from(value).map_err(|_| MediaError::InvalidRaw("stride too large".to_owned()))
    };
    let image = YuvPlanarImage {
        y_plane: view.y,
        y_stride: stride(view.y_stride)?,
        u_plane: view.u,
        u_stride: stride(view.u_stride)?,
        v_plane: view.v,
        v_stride: stride(view.v_stride)?,
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
    use crate::media::demux::ColorInfo;

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
