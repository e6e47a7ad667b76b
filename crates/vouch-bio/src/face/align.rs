//! Alignment to the embedding model's chip: dlib's `get_face_chip(img, shape, 150, 0.25)` from
//! five points (eye corners and nose base), reproduced from `models/reference/dlib-alignment-notes.md`:
//! a least-squares similarity fit to dlib's mean-face template, an image pyramid (dlib's integer
//! 5-tap `pyramid_down<2>`) for faces much larger than the chip, and a truncating bilinear sample.
//! The hot loop is plain indexed arithmetic over contiguous rows, which the compiler vectorises.

use super::image::RgbImage;

/// Chip side in pixels.
pub const CHIP: usize = 150;
const PADDING: f64 = 0.25;
const MAX_AREA: f64 = (CHIP * CHIP) as f64;

/// dlib's 5-point template in the unit face square, in dlib's part order: image-right eye outer,
/// image-right eye inner, image-left eye outer, image-left eye inner, nose base.
const TEMPLATE: [(f64, f64); 5] = [
    (0.859_567_459_599_2, 0.213_498_153_801_4),
    (0.646_060_476_410_4, 0.228_967_438_767_7),
    (0.120_575_062_078_9, 0.213_727_452_684_8),
    (0.334_085_061_371_2, 0.229_064_240_324_2),
    (0.490_112_313_567_9, 0.627_797_531_647_5),
];

/// Where the chip lies in the image: dlib's `chip_details` (rectangle before rotation, and angle).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChipDetails {
    /// left, top, right, bottom (pixels, pixel centres at integers).
    pub rect: [f64; 4],
    /// Rotation, radians.
    pub angle: f64,
}

/// dlib's chip for five points given in dlib's order and dlib's pixel convention (pixel centres at
/// integer coordinates).
pub fn chip_details(points: &[(f64, f64); 5]) -> ChipDetails {
    let from: Vec<(f64, f64)> = TEMPLATE
        .iter()
        .map(|&(x, y)| {
            (
                (PADDING + x) / (2.0 * PADDING + 1.0) * CHIP as f64,
                (PADDING + y) / (2.0 * PADDING + 1.0) * CHIP as f64,
            )
        })
        .collect();
    let (m, t) = similarity(&from, points);
    let angle = m[1][0].atan2(m[0][0]);
    let scale = (m[0][0] * m[0][0] + m[1][0] * m[1][0]).sqrt();
    let half_chip = CHIP as f64 / 2.0;
    let centre = (
        m[0][0] * half_chip + m[0][1] * half_chip + t.0,
        m[1][0] * half_chip + m[1][1] * half_chip + t.1,
    );
    let half = (CHIP as f64 * scale - 1.0) / 2.0;
    ChipDetails {
        rect: [
            centre.0 - half,
            centre.1 - half,
            centre.0 + half,
            centre.1 + half,
        ],
        angle,
    }
}

/// Least-squares similarity (rotation, uniform scale, translation; no reflection) taking `from`
/// onto `to` (Umeyama; in 2-D the optimum has a closed form).
fn similarity(from: &[(f64, f64)], to: &[(f64, f64); 5]) -> ([[f64; 2]; 2], (f64, f64)) {
    let n = from.len() as f64;
    let mean = |p: &mut dyn Iterator<Item = (f64, f64)>| {
        let (sx, sy) = p.fold((0.0, 0.0), |(ax, ay), (x, y)| (ax + x, ay + y));
        (sx / n, sy / n)
    };
    let mf = mean(&mut from.iter().copied());
    let mt = mean(&mut to.iter().copied());
    let (mut a, mut b, mut norm) = (0.0, 0.0, 0.0);
    for (f, t) in from.iter().zip(to) {
        let (fx, fy) = (f.0 - mf.0, f.1 - mf.1);
        let (tx, ty) = (t.0 - mt.0, t.1 - mt.1);
        a += fx * tx + fy * ty;
        b += fx * ty - fy * tx;
        norm += fx * fx + fy * fy;
    }
    let (a, b) = if norm > 0.0 {
        (a / norm, b / norm)
    } else {
        (1.0, 0.0)
    };
    let m = [[a, -b], [b, a]];
    let t = (
        mt.0 - (m[0][0] * mf.0 + m[0][1] * mf.1),
        mt.1 - (m[1][0] * mf.0 + m[1][1] * mf.1),
    );
    (m, t)
}

fn rect_area(r: &[f64; 4]) -> f64 {
    // dlib's drectangle: width = right - left + 1.
    (r[2] - r[0] + 1.0).max(0.0) * (r[3] - r[1] + 1.0).max(0.0)
}

fn rect_down(r: &[f64; 4]) -> [f64; 4] {
    [
        r[0] / 2.0 - 1.25,
        r[1] / 2.0 - 0.75,
        r[2] / 2.0 - 1.25,
        r[3] / 2.0 - 0.75,
    ]
}

/// The rectangle's corners (top-left, top-right, bottom-left) rotated by `angle` about its centre.
fn corners(r: &[f64; 4], angle: f64) -> [(f64, f64); 3] {
    let centre = ((r[0] + r[2]) / 2.0, (r[1] + r[3]) / 2.0);
    let (sin, cos) = angle.sin_cos();
    let rotate = |x: f64, y: f64| {
        let (dx, dy) = (x - centre.0, y - centre.1);
        (
            centre.0 + cos * dx - sin * dy,
            centre.1 + sin * dx + cos * dy,
        )
    };
    [rotate(r[0], r[1]), rotate(r[2], r[1]), rotate(r[0], r[3])]
}

/// dlib's `pyramid_down<2>` on 8-bit RGB: 5-tap [1 4 6 4 1] in both directions, integer sums,
/// truncated; output ((w-3)/2, (h-3)/2).
fn pyramid_down(image: &RgbImage) -> Option<RgbImage> {
    let (w, h) = (image.width, image.height);
    if w < 5 || h < 5 {
        return None;
    }
    let (ow, oh) = ((w - 3) / 2, (h - 3) / 2);
    let mut tmp = vec![0u32; h * ow * 3];
    for y in 0..h {
        let row = &image.rgb[y * w * 3..(y + 1) * w * 3];
        let out = &mut tmp[y * ow * 3..(y + 1) * ow * 3];
        for c in 0..ow {
            for k in 0..3 {
                let at = |i: usize| u32::from(row[(2 * c + i) * 3 + k]);
                out[c * 3 + k] = at(0) + 4 * at(1) + 6 * at(2) + 4 * at(3) + at(4);
            }
        }
    }
    let mut rgb = vec![0u8; oh * ow * 3];
    let stride = ow * 3;
    for i in 0..oh {
        let rows: [&[u32]; 5] =
            std::array::from_fn(|r| &tmp[(2 * i + r) * stride..(2 * i + r + 1) * stride]);
        let out = &mut rgb[i * stride..(i + 1) * stride];
        for (x, value) in out.iter_mut().enumerate() {
            let sum = rows[0][x] + 4 * rows[1][x] + 6 * rows[2][x] + 4 * rows[3][x] + rows[4][x];
            *value = (sum / 256) as u8;
        }
    }
    RgbImage::new(ow, oh, rgb)
}

/// A sub-image: columns `x0..=x1`, rows `y0..=y1` (inclusive, inside the image).
fn sub_image(image: &RgbImage, x0: usize, y0: usize, x1: usize, y1: usize) -> RgbImage {
    let (w, h) = (x1 - x0 + 1, y1 - y0 + 1);
    let mut rgb = Vec::with_capacity(w * h * 3);
    for y in y0..=y1 {
        rgb.extend_from_slice(
            &image.rgb[(y * image.width + x0) * 3..(y * image.width + x1 + 1) * 3],
        );
    }
    RgbImage {
        width: w,
        height: h,
        rgb,
    }
}

/// Cuts the 150x150 chip (RGB, 0..255) described by `details` out of `image`.
pub fn extract_chip(image: &RgbImage, details: &ChipDetails) -> Vec<u8> {
    let rect = details.rect;
    // How far the pyramid may go, and the margin its filters need.
    let mut r = rect_down(&rect);
    let mut grow = 2.0;
    while rect_area(&r) > MAX_AREA {
        r = rect_down(&r);
        grow = 2.0 * grow + 2.0;
    }
    // Crop to the rotated rectangle's bounding box plus the margin, clipped to the image.
    let [tl, tr, bl] = corners(&rect, details.angle);
    let br = (tr.0 + bl.0 - tl.0, tr.1 + bl.1 - tl.1);
    let xs = [tl.0, tr.0, bl.0, br.0];
    let ys = [tl.1, tr.1, bl.1, br.1];
    let min = |v: &[f64; 4]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64; 4]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let clip = |v: f64, hi: usize| (v.clamp(0.0, hi as f64) + 0.5).floor();
    let (wmax, hmax) = (image.width - 1, image.height - 1);
    let bx = clip(min(&xs) - grow, wmax);
    let by = clip(min(&ys) - grow, hmax);
    let ex = clip(max(&xs) + grow, wmax);
    let ey = clip(max(&ys) + grow, hmax);
    let mut chip = vec![0u8; CHIP * CHIP * 3];
    if ex < bx || ey < by {
        return chip; // entirely outside the image
    }
    let mut level_image = sub_image(image, bx as usize, by as usize, ex as usize, ey as usize);
    let mut r = [rect[0] - bx, rect[1] - by, rect[2] - bx, rect[3] - by];
    while rect_area(&rect_down(&r)) > MAX_AREA {
        match pyramid_down(&level_image) {
            Some(smaller) => level_image = smaller,
            None => break,
        }
        r = rect_down(&r);
    }
    sample(&level_image, &r, details.angle, &mut chip);
    chip
}

/// Samples the chip from the rotated rectangle `r` (dlib's `extract_image_chip` step).
fn sample(image: &RgbImage, r: &[f64; 4], angle: f64, chip: &mut [u8]) {
    let [tl, tr, bl] = corners(r, angle);
    let last = (CHIP - 1) as f64;
    // The affine map chip pixel (u, v) -> image point, as dlib evaluates it: A00 u + A01 v + A02.
    let a = [
        [(tr.0 - tl.0) / last, (bl.0 - tl.0) / last, tl.0],
        [(tr.1 - tl.1) / last, (bl.1 - tl.1) / last, tl.1],
    ];
    let (w, h) = (image.width as i64, image.height as i64);
    for v in 0..CHIP {
        for u in 0..CHIP {
            let (uf, vf) = (u as f64, v as f64);
            let x = (a[0][0] * uf + a[0][1] * vf) + a[0][2];
            let y = (a[1][0] * uf + a[1][1] * vf) + a[1][2];
            let (left, top) = (x.floor() as i64, y.floor() as i64);
            if left < 0 || top < 0 || left + 1 >= w || top + 1 >= h {
                continue;
            }
            let (fx, fy) = (x - left as f64, y - top as f64);
            let (l, t) = (left as usize, top as usize);
            let p00 = image.pixel(l, t);
            let p01 = image.pixel(l + 1, t);
            let p10 = image.pixel(l, t + 1);
            let p11 = image.pixel(l + 1, t + 1);
            let o = (v * CHIP + u) * 3;
            for k in 0..3 {
                let value = (1.0 - fy) * ((1.0 - fx) * f64::from(p00[k]) + fx * f64::from(p01[k]))
                    + fy * ((1.0 - fx) * f64::from(p10[k]) + fx * f64::from(p11[k]));
                chip[o + k] = value.clamp(0.0, 255.0) as u8;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed cases from `models/reference/dlib_face_chip/`: a 320x240 scene and dlib's own
    /// chips for five landmark sets (upscaling, rotation, pyramid levels, a chip off the image).
    #[test]
    fn chips_match_dlib() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/reference/dlib_face_chip"
        );
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(format!("{dir}/reference.json")).unwrap())
                .unwrap();
        let scene = std::fs::read(format!("{dir}/scene_u8.bin")).unwrap();
        let chips = std::fs::read(format!("{dir}/chips_u8.bin")).unwrap();
        let shape = json["scene"]["shape"].as_array().expect("scene shape");
        let (h, w) = (
            shape[0].as_u64().unwrap() as usize,
            shape[1].as_u64().unwrap() as usize,
        );
        let image = RgbImage::new(w, h, scene).unwrap();
        let cases = json["cases"].as_array().expect("cases");
        assert!(!cases.is_empty());
        for (i, case) in cases.iter().enumerate() {
            let points: Vec<(f64, f64)> = case["landmarks_xy"]
                .as_array()
                .expect("landmarks")
                .iter()
                .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
                .collect();
            let points: [(f64, f64); 5] = points.try_into().expect("five points");
            let chip = extract_chip(&image, &chip_details(&points));
            let expected = &chips[i * CHIP * CHIP * 3..(i + 1) * CHIP * CHIP * 3];
            let differing = chip.iter().zip(expected).filter(|(a, b)| a != b).count();
            let worst = chip
                .iter()
                .zip(expected)
                .map(|(a, b)| a.abs_diff(*b))
                .max()
                .unwrap_or(0);
            // The closed-form fit and dlib's SVD differ in the last bits, which can flip a
            // truncated value by one.
            assert!(
                differing * 1000 <= chip.len() && worst <= 1,
                "case {i}: {differing} values differ, worst by {worst}"
            );
        }
    }
}
