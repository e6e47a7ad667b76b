//! Passive (single-frame) anti-spoofing with Human's two tiny models (`models/README.md`, section
//! "Human's passive liveness models"): `antispoof` scores how real a face crop looks (1 = real),
//! `liveness` is a 32x32 classifier whose output order is not documented reliably. Both are weak:
//! on the development images they called a printed photo and a tablet replay as real as live
//! faces. Process-video therefore uses them only as a veto for faces they call confidently fake
//! (`bio::video::liveness`), and reports their scores.
//!
//! The crop is Human's: the detector box enlarged 1.4 times about its centre, made square, cut
//! from the frame to 192x192 with TensorFlow's `crop_and_resize` (bilinear, zero outside), then
//! resized to each model's input with TensorFlow's legacy bilinear resize, values in 0..1.

use super::detect::Detection;
use super::image::RgbImage;
use crate::infer::{Model, ModelError};

/// Side of Human's face crop, pixels.
pub const CROP_SIZE: usize = 192;

/// How much the detector box is enlarged about its centre before the crop.
pub const BOX_SCALE: f32 = 1.4;

/// Input side of the antispoof model.
const ANTISPOOF_SIZE: usize = 128;

/// Input side of the liveness model.
const LIVENESS_SIZE: usize = 32;

/// The passive models' scores of one face.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PassiveScore {
    /// Antispoof: how real the face looks, 0..1 (1 = real).
    pub real: f32,
    /// Liveness: output 0 of the 32x32 classifier, 0..1 (Human reads it as live; see the module
    /// comment).
    pub live: f32,
}

impl PassiveScore {
    /// The mean of several frames' scores; `None` for none.
    pub fn mean(scores: &[PassiveScore]) -> Option<PassiveScore> {
        if scores.is_empty() {
            return None;
        }
        let n = scores.len() as f32;
        Some(PassiveScore {
            real: scores.iter().map(|s| s.real).sum::<f32>() / n,
            live: scores.iter().map(|s| s.live).sum::<f32>() / n,
        })
    }
}

/// The two passive models.
#[derive(Debug, Clone)]
pub struct PassiveModels {
    pub(super) antispoof: Model,
    pub(super) liveness: Model,
}

impl PassiveModels {
    /// Scores the face of `detection` in `image`.
    pub fn score(
        &self,
        image: &RgbImage,
        detection: &Detection,
    ) -> Result<PassiveScore, ModelError> {
        let crop = face_crop(image, &square_box(&detection.bbox));
        let real = self
            .antispoof
            .run(&[&resize_legacy(&crop, CROP_SIZE, ANTISPOOF_SIZE)])?;
        let live = self
            .liveness
            .run(&[&resize_legacy(&crop, CROP_SIZE, LIVENESS_SIZE)])?;
        Ok(PassiveScore {
            real: real[0].first().copied().unwrap_or(0.0),
            live: live[0].first().copied().unwrap_or(0.0),
        })
    }
}

/// Human's crop box for a detector box (left, top, right, bottom): enlarged [`BOX_SCALE`] times
/// about its centre, then squared on the longer side, corners rounded to whole pixels.
pub fn square_box(bbox: &[f32; 4]) -> [f32; 4] {
    let (cx, cy) = ((bbox[0] + bbox[2]) / 2.0, (bbox[1] + bbox[3]) / 2.0);
    let side = (bbox[2] - bbox[0]).max(bbox[3] - bbox[1]) * BOX_SCALE;
    [
        (cx - side / 2.0).round(),
        (cy - side / 2.0).round(),
        (cx + side / 2.0).round(),
        (cy + side / 2.0).round(),
    ]
}

/// The box cut from `image` to [`CROP_SIZE`] squared, RGB in 0..1, as TensorFlow's
/// `crop_and_resize` does with normalised box corners: bilinear, sample `i` at
/// `top * (h - 1) / h + i * (bottom - top) * (h - 1) / (h * (CROP_SIZE - 1))` in pixels, zero outside.
pub fn face_crop(image: &RgbImage, bbox: &[f32; 4]) -> Vec<f32> {
    let (w, h) = (image.width as f32, image.height as f32);
    let axis = |start: f32, end: f32, size: f32, i: usize| {
        let (a, b) = (start / size, end / size);
        a * (size - 1.0) + i as f32 * (b - a) * (size - 1.0) / (CROP_SIZE - 1) as f32
    };
    let mut out = vec![0f32; CROP_SIZE * CROP_SIZE * 3];
    for y in 0..CROP_SIZE {
        let sy = axis(bbox[1], bbox[3], h, y);
        if sy < 0.0 || sy > h - 1.0 {
            continue;
        }
        let (y0, fy) = (sy.floor() as usize, sy - sy.floor());
        let y1 = (y0 + 1).min(image.height - 1);
        for x in 0..CROP_SIZE {
            let sx = axis(bbox[0], bbox[2], w, x);
            if sx < 0.0 || sx > w - 1.0 {
                continue;
            }
            let (x0, fx) = (sx.floor() as usize, sx - sx.floor());
            let x1 = (x0 + 1).min(image.width - 1);
            let (a, b, c, d) = (
                image.pixel(x0, y0),
                image.pixel(x1, y0),
                image.pixel(x0, y1),
                image.pixel(x1, y1),
            );
            for ch in 0..3 {
                let top = f32::from(a[ch]) + (f32::from(b[ch]) - f32::from(a[ch])) * fx;
                let bottom = f32::from(c[ch]) + (f32::from(d[ch]) - f32::from(c[ch])) * fx;
                out[(y * CROP_SIZE + x) * 3 + ch] = (top + (bottom - top) * fy) / 255.0;
            }
        }
    }
    out
}

/// TensorFlow's legacy bilinear resize (`align_corners` and `half_pixel_centers` false) of a
/// square RGB image of side `from` to side `to`: output pixel `i` samples the input at
/// `i * from / to`.
pub fn resize_legacy(pixels: &[f32], from: usize, to: usize) -> Vec<f32> {
    let scale = from as f32 / to as f32;
    let mut out = vec![0f32; to * to * 3];
    for y in 0..to {
        let sy = y as f32 * scale;
        let (y0, fy) = (sy.floor() as usize, sy - sy.floor());
        let y1 = (y0 + 1).min(from - 1);
        for x in 0..to {
            let sx = x as f32 * scale;
            let (x0, fx) = (sx.floor() as usize, sx - sx.floor());
            let x1 = (x0 + 1).min(from - 1);
            for ch in 0..3 {
                let at = |yy: usize, xx: usize| pixels[(yy * from + xx) * 3 + ch];
                let top = at(y0, x0) + (at(y0, x1) - at(y0, x0)) * fx;
                let bottom = at(y1, x0) + (at(y1, x1) - at(y1, x0)) * fx;
                out[(y * to + x) * 3 + ch] = top + (bottom - top) * fy;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::reference_f32;

    #[test]
    fn the_resize_matches_tensorflow_on_the_reference_crops() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/reference/");
        for (model, size) in [
            ("human_antispoof", ANTISPOOF_SIZE),
            ("human_liveness", LIVENESS_SIZE),
        ] {
            let crop: Vec<f32> = std::fs::read(format!("{dir}{model}/face_crop_u8.bin"))
                .expect("crop")
                .into_iter()
                .map(|v| f32::from(v) / 255.0)
                .collect();
            let got = resize_legacy(&crop, CROP_SIZE, size);
            let expected = reference_f32(&format!("{model}/input.f32"));
            let diff = got
                .iter()
                .zip(&expected)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert_eq!(got.len(), expected.len());
            assert!(diff < 1e-5, "{model}: max diff {diff}");
        }
    }

    #[test]
    fn the_box_is_enlarged_and_squared_about_its_centre() {
        assert_eq!(
            square_box(&[100.0, 50.0, 200.0, 130.0]),
            [80.0, 20.0, 220.0, 160.0]
        );
    }

    #[test]
    fn a_crop_of_the_whole_image_keeps_its_corners_and_zeroes_outside() {
        let mut rgb = vec![0u8; 4 * 4 * 3];
        rgb[0] = 255; // top-left red
        let image = RgbImage::new(4, 4, rgb).expect("image");
        let whole = face_crop(&image, &[0.0, 0.0, 4.0, 4.0]);
        assert_eq!(whole[0], 1.0, "the first sample is the top-left pixel");
        assert_eq!(
            whole[whole.len() - 3],
            0.0,
            "the last is the bottom-right pixel"
        );
        let outside = face_crop(&image, &[-8.0, -8.0, -4.0, -4.0]);
        assert!(outside.iter().all(|&v| v == 0.0));
    }
}
