//! The eye-aligned face crop for learned face-forgery detectors: a 96x96 RGB picture in which the
//! eye line is level, the eyes' midpoint sits at [`EYES_AT`] and the eyes are [`INTEROCULAR`]
//! pixels apart, so the face fills the middle of the crop with some background around it (the
//! seam of a pasted face lies there). Trainers (`models/blend-study`) learn from crops this code
//! wrote (`vouch eval face-crops`), so that a detector the engine ran would see the same pictures.
//!
//! A face larger than the crop is first shrunk with the image's triangle filter, so that fine
//! detail is averaged rather than aliased; a smaller one is sampled bilinearly.

use super::image::RgbImage;
use super::landmarks::Landmarks;

/// Side of the crop in pixels.
pub const CROP_SIDE: usize = 96;

/// Where the eyes' midpoint lands in the crop (x, y; pixel edges at integers).
pub const EYES_AT: (f32, f32) = (48.0, 38.4);

/// Distance between the eye centres in the crop (pixels).
pub const INTEROCULAR: f32 = 28.8;

/// Least eye distance in the source (pixels) for a crop worth making.
pub const MIN_SOURCE_INTEROCULAR: f32 = 8.0;

/// A face cut out of a frame, with its landmarks moved into the crop.
#[derive(Debug, Clone, PartialEq)]
pub struct FaceCrop {
    /// `CROP_SIDE * CROP_SIDE * 3` bytes, RGB, rows top to bottom.
    pub rgb: Vec<u8>,
    /// The FaceMesh landmarks (x, y) in crop pixels (pixel centres at +0.5).
    pub marks: Vec<[f32; 2]>,
}

/// The similarity that maps crop points to image points: `image = centre + scale * R * (crop -
/// EYES_AT)`, with `R` the rotation by the eye line's angle.
#[derive(Debug, Clone, Copy)]
struct Similarity {
    centre: (f32, f32),
    scale: f32,
    cos: f32,
    sin: f32,
}

impl Similarity {
    fn of(landmarks: &Landmarks) -> Option<Similarity> {
        let (a, b) = (landmarks.eye_centre(true), landmarks.eye_centre(false));
        // The eye on the image's left first, whichever the mesh calls left.
        let (l, r) = if a.0 <= b.0 { (a, b) } else { (b, a) };
        let (dx, dy) = (r.0 - l.0, r.1 - l.1);
        let distance = (dx * dx + dy * dy).sqrt();
        if !distance.is_finite() || distance < MIN_SOURCE_INTEROCULAR {
            return None;
        }
        Some(Similarity {
            centre: ((l.0 + r.0) / 2.0, (l.1 + r.1) / 2.0),
            scale: distance / INTEROCULAR,
            cos: dx / distance,
            sin: dy / distance,
        })
    }

    fn image_point(self, u: f32, v: f32) -> (f32, f32) {
        let (du, dv) = ((u - EYES_AT.0) * self.scale, (v - EYES_AT.1) * self.scale);
        (
            self.centre.0 + self.cos * du - self.sin * dv,
            self.centre.1 + self.sin * du + self.cos * dv,
        )
    }

    fn crop_point(self, x: f32, y: f32) -> [f32; 2] {
        let (dx, dy) = (x - self.centre.0, y - self.centre.1);
        [
            EYES_AT.0 + (self.cos * dx + self.sin * dy) / self.scale,
            EYES_AT.1 + (-self.sin * dx + self.cos * dy) / self.scale,
        ]
    }
}

/// The aligned crop of the face whose landmarks are given (`None` when the eyes are closer than
/// [`MIN_SOURCE_INTEROCULAR`] pixels or the landmarks are not finite). Outside the image the crop
/// is black.
pub fn face_crop(image: &RgbImage, landmarks: &Landmarks) -> Option<FaceCrop> {
    if image.width == 0 || image.height == 0 {
        return None;
    }
    let map = Similarity::of(landmarks)?;
    let side = CROP_SIDE as f32;
    let corners = [
        map.image_point(0.0, 0.0),
        map.image_point(side, 0.0),
        map.image_point(0.0, side),
        map.image_point(side, side),
    ];
    let samples = if map.scale > 1.25 {
        // Shrink the crop's bounding box first (antialiased), then sample it bilinearly.
        let min_x = corners.iter().map(|c| c.0).fold(f32::INFINITY, f32::min);
        let max_x = corners
            .iter()
            .map(|c| c.0)
            .fold(f32::NEG_INFINITY, f32::max);
        let min_y = corners.iter().map(|c| c.1).fold(f32::INFINITY, f32::min);
        let max_y = corners
            .iter()
            .map(|c| c.1)
            .fold(f32::NEG_INFINITY, f32::max);
        let x0 = (min_x.floor().max(0.0) as usize).min(image.width - 1);
        let y0 = (min_y.floor().max(0.0) as usize).min(image.height - 1);
        let x1 = (max_x.ceil().max(0.0) as usize).clamp(x0 + 1, image.width);
        let y1 = (max_y.ceil().max(0.0) as usize).clamp(y0 + 1, image.height);
        let (w, h) = (x1 - x0, y1 - y0);
        let mut part = Vec::with_capacity(w * h * 3);
        for y in y0..y1 {
            part.extend_from_slice(
                &image.rgb[(y * image.width + x0) * 3..(y * image.width + x1) * 3],
            );
        }
        let part = RgbImage::new(w, h, part)?;
        let small_w = ((w as f32 / map.scale).round() as usize).max(1);
        let small_h = ((h as f32 / map.scale).round() as usize).max(1);
        let small = part.resize(small_w, small_h);
        let (fx, fy) = (small_w as f32 / w as f32, small_h as f32 / h as f32);
        let at = |(x, y): (f32, f32)| ((x - x0 as f32) * fx, (y - y0 as f32) * fy);
        small.crop_rotated(
            at(corners[0]),
            at(corners[1]),
            at(corners[2]),
            CROP_SIDE,
            1.0,
            0.0,
        )
    } else {
        image.crop_rotated(corners[0], corners[1], corners[2], CROP_SIDE, 1.0, 0.0)
    };
    let rgb = samples
        .into_iter()
        .map(|v| v.round().clamp(0.0, 255.0) as u8)
        .collect();
    let marks = landmarks
        .points
        .iter()
        .map(|p| map.crop_point(p[0], p[1]))
        .collect::<Vec<_>>();
    if marks.iter().any(|m| !m[0].is_finite() || !m[1].is_finite()) {
        return None;
    }
    Some(FaceCrop { rgb, marks })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::face::landmarks::index;

    fn marks_with_eyes(l: (f32, f32), r: (f32, f32)) -> Landmarks {
        let mut points = vec![[0.0f32; 3]; 468];
        for (i, p) in [
            (index::LEFT_EYE_OUTER, l),
            (index::LEFT_EYE_INNER, l),
            (index::RIGHT_EYE_INNER, r),
            (index::RIGHT_EYE_OUTER, r),
        ] {
            points[i] = [p.0, p.1, 0.0];
        }
        Landmarks {
            points,
            presence: 1.0,
        }
    }

    #[test]
    fn the_eyes_land_where_the_crop_puts_them() {
        // A tilted face on a 250x250 gradient (red = x, green = y), eyes 67 px apart (shrunk
        // first) and 26 px apart (sampled directly).
        let (w, h) = (250, 250);
        let rgb = (0..w * h)
            .flat_map(|i| [(i % w) as u8, (i / w) as u8, 128])
            .collect();
        let image = RgbImage::new(w, h, rgb).expect("image");
        for (l, r) in [
            ((100.0, 100.0), (160.0, 130.9)),
            ((110.0, 120.0), (134.0, 130.0)),
        ] {
            check_crop(&image, l, r);
        }
    }

    fn check_crop(image: &RgbImage, l: (f32, f32), r: (f32, f32)) {
        let crop = face_crop(image, &marks_with_eyes(r, l)).expect("crop");
        assert_eq!(crop.rgb.len(), CROP_SIDE * CROP_SIDE * 3);
        let le = crop.marks[index::RIGHT_EYE_INNER];
        let re = crop.marks[index::LEFT_EYE_INNER];
        assert!(
            (le[0] - (EYES_AT.0 - INTEROCULAR / 2.0)).abs() < 1e-3,
            "{le:?}"
        );
        assert!(
            (re[0] - (EYES_AT.0 + INTEROCULAR / 2.0)).abs() < 1e-3,
            "{re:?}"
        );
        assert!((le[1] - EYES_AT.1).abs() < 1e-3 && (re[1] - EYES_AT.1).abs() < 1e-3);
        // Every crop pixel shows the image point the similarity sends it to.
        let (dx, dy) = (r.0 - l.0, r.1 - l.1);
        let distance = (dx * dx + dy * dy).sqrt();
        let (scale, cos, sin) = (distance / INTEROCULAR, dx / distance, dy / distance);
        for (u, v) in [(48usize, 48usize), (30, 20), (70, 70)] {
            let (du, dv) = (
                (u as f32 + 0.5 - EYES_AT.0) * scale,
                (v as f32 + 0.5 - EYES_AT.1) * scale,
            );
            let x = (l.0 + r.0) / 2.0 + cos * du - sin * dv;
            let y = (l.1 + r.1) / 2.0 + sin * du + cos * dv;
            let o = (v * CROP_SIDE + u) * 3;
            let got = (f32::from(crop.rgb[o]), f32::from(crop.rgb[o + 1]));
            assert!(
                (got.0 - (x - 0.5)).abs() < 2.0,
                "x at ({u},{v}): {got:?} vs {x}"
            );
            assert!(
                (got.1 - (y - 0.5)).abs() < 2.0,
                "y at ({u},{v}): {got:?} vs {y}"
            );
            assert_eq!(crop.rgb[o + 2], 128);
        }
    }

    #[test]
    fn eyes_too_close_give_no_crop() {
        let image = RgbImage::new(64, 64, vec![0; 64 * 64 * 3]).expect("image");
        assert!(face_crop(&image, &marks_with_eyes((30.0, 30.0), (34.0, 30.0))).is_none());
    }
}
