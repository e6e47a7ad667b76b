//! The RGB image the face pipeline works on, with the two resamplers it needs: an antialiased
//! resize (detector input) and a rotated bilinear crop (landmark input).

use vouch_media::Frame;

/// An 8-bit RGB image, rows top to bottom, no padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbImage {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width * height * 3` bytes.
    pub rgb: Vec<u8>,
}

impl RgbImage {
    /// Wraps RGB bytes; `None` if the length does not match or a side is zero.
    pub fn new(width: usize, height: usize, rgb: Vec<u8>) -> Option<RgbImage> {
        (width > 0 && height > 0 && width.checked_mul(height)?.checked_mul(3)? == rgb.len())
            .then_some(RgbImage { width, height, rgb })
    }

    /// Takes a decoded frame's pixels.
    pub fn from_frame(frame: Frame) -> Option<RgbImage> {
        RgbImage::new(frame.width as usize, frame.height as usize, frame.rgb)
    }

    /// The pixel at (x, y) (must be inside).
    #[inline]
    pub fn pixel(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// A resized copy: a separable triangle filter whose support widens with the shrink factor
    /// (antialiased, like Pillow's `BILINEAR`), so small detector inputs do not alias.
    pub fn resize(&self, width: usize, height: usize) -> RgbImage {
        if (width, height) == (self.width, self.height) {
            return self.clone();
        }
        let horizontal = Kernel::new(self.width, width);
        let vertical = Kernel::new(self.height, height);
        // Horizontal pass into f32 rows, then vertical pass into bytes.
        let mut tmp = vec![0f32; self.height * width * 3];
        for y in 0..self.height {
            let row = &self.rgb[y * self.width * 3..(y + 1) * self.width * 3];
            let out = &mut tmp[y * width * 3..(y + 1) * width * 3];
            for (x, taps) in horizontal.taps.iter().enumerate() {
                let mut acc = [0f32; 3];
                for &(index, weight) in taps {
                    for c in 0..3 {
                        acc[c] += f32::from(row[index * 3 + c]) * weight;
                    }
                }
                out[x * 3..x * 3 + 3].copy_from_slice(&acc);
            }
        }
        let mut rgb = vec![0u8; height * width * 3];
        for (y, taps) in vertical.taps.iter().enumerate() {
            let out = &mut rgb[y * width * 3..(y + 1) * width * 3];
            for (x, value) in out.iter_mut().enumerate() {
                let mut acc = 0f32;
                for &(index, weight) in taps {
                    acc += tmp[index * width * 3 + x] * weight;
                }
                *value = acc.round().clamp(0.0, 255.0) as u8;
            }
        }
        RgbImage { width, height, rgb }
    }

    /// Samples a `size` x `size` crop of the parallelogram whose corners top-left, top-right and
    /// bottom-left are given (image pixels, pixel centres at +0.5), bilinearly, black outside the
    /// image; returns it as floats scaled by `scale` and shifted by `offset` (NHWC RGB).
    pub fn crop_rotated(
        &self,
        top_left: (f32, f32),
        top_right: (f32, f32),
        bottom_left: (f32, f32),
        size: usize,
        scale: f32,
        offset: f32,
    ) -> Vec<f32> {
        let step_x = (
            (top_right.0 - top_left.0) / size as f32,
            (top_right.1 - top_left.1) / size as f32,
        );
        let step_y = (
            (bottom_left.0 - top_left.0) / size as f32,
            (bottom_left.1 - top_left.1) / size as f32,
        );
        let (w, h) = (self.width as f32, self.height as f32);
        let mut out = vec![offset; size * size * 3];
        for j in 0..size {
            for i in 0..size {
                let (u, v) = (i as f32 + 0.5, j as f32 + 0.5);
                let x = top_left.0 + u * step_x.0 + v * step_y.0;
                let y = top_left.1 + u * step_x.1 + v * step_y.1;
                if !(0.0..w).contains(&x) || !(0.0..h).contains(&y) {
                    continue;
                }
                let pixel = self.bilinear(x - 0.5, y - 0.5);
                let o = (j * size + i) * 3;
                for c in 0..3 {
                    out[o + c] = pixel[c] * scale + offset;
                }
            }
        }
        out
    }

    /// Bilinear sample with pixel centres at integers, clamped to the edge pixels.
    #[inline]
    fn bilinear(&self, x: f32, y: f32) -> [f32; 3] {
        let max_x = (self.width - 1) as f32;
        let max_y = (self.height - 1) as f32;
        let x = x.clamp(0.0, max_x);
        let y = y.clamp(0.0, max_y);
        let (x0, y0) = (x.floor() as usize, y.floor() as usize);
        let (x1, y1) = ((x0 + 1).min(self.width - 1), (y0 + 1).min(self.height - 1));
        let (fx, fy) = (x - x0 as f32, y - y0 as f32);
        let (a, b) = (self.pixel(x0, y0), self.pixel(x1, y0));
        let (c, d) = (self.pixel(x0, y1), self.pixel(x1, y1));
        let mut out = [0f32; 3];
        for k in 0..3 {
            let top = f32::from(a[k]) * (1.0 - fx) + f32::from(b[k]) * fx;
            let bottom = f32::from(c[k]) * (1.0 - fx) + f32::from(d[k]) * fx;
            out[k] = top * (1.0 - fy) + bottom * fy;
        }
        out
    }
}

/// Per output index, the input indices and normalised weights of a triangle filter.
struct Kernel {
    taps: Vec<Vec<(usize, f32)>>,
}

impl Kernel {
    fn new(input: usize, output: usize) -> Kernel {
        let ratio = input as f32 / output as f32;
        let support = ratio.max(1.0);
        let taps = (0..output)
            .map(|o| {
                let centre = (o as f32 + 0.5) * ratio;
                let first = ((centre - support).floor().max(0.0)) as usize;
                let last = ((centre + support).ceil() as usize).min(input);
                let mut taps: Vec<(usize, f32)> = (first..last)
                    .filter_map(|i| {
                        let distance = ((i as f32 + 0.5) - centre).abs() / support;
                        let weight = 1.0 - distance;
                        (weight > 0.0).then_some((i, weight))
                    })
                    .collect();
                if taps.is_empty() {
                    let nearest = (centre.floor() as usize).min(input - 1);
                    taps.push((nearest, 1.0));
                }
                let total: f32 = taps.iter().map(|t| t.1).sum();
                for tap in &mut taps {
                    tap.1 /= total;
                }
                taps
            })
            .collect();
        Kernel { taps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resize_keeps_flat_colours_and_averages_stripes() {
        let flat = RgbImage::new(40, 30, [10u8, 200, 90].repeat(1200)).unwrap();
        let small = flat.resize(7, 5);
        assert!(small.rgb.chunks(3).all(|p| p == [10, 200, 90]));
        // One-pixel black/white stripes shrink to grey, not to an aliased pattern.
        let stripes: Vec<u8> = (0..64 * 8)
            .flat_map(|i| if i % 2 == 0 { [0u8; 3] } else { [255u8; 3] })
            .collect();
        let striped = RgbImage::new(64, 8, stripes).unwrap();
        let shrunk = striped.resize(8, 1);
        assert!(
            shrunk.rgb.iter().all(|&v| (110..=145).contains(&v)),
            "{:?}",
            shrunk.rgb
        );
    }

    #[test]
    fn rotated_crop_of_an_identity_rectangle_copies_pixels() {
        let rgb: Vec<u8> = (0..16 * 16 * 3).map(|i| (i % 251) as u8).collect();
        let image = RgbImage::new(16, 16, rgb).unwrap();
        let crop = image.crop_rotated((4.0, 4.0), (12.0, 4.0), (4.0, 12.0), 8, 1.0, 0.0);
        for j in 0..8 {
            for i in 0..8 {
                let p = image.pixel(4 + i, 4 + j);
                for c in 0..3 {
                    assert!((crop[(j * 8 + i) * 3 + c] - f32::from(p[c])).abs() < 1e-3);
                }
            }
        }
        // Outside the image: the offset (black after scaling).
        let outside =
            image.crop_rotated((-40.0, -40.0), (-32.0, -40.0), (-40.0, -32.0), 4, 1.0, -1.0);
        assert!(outside.iter().all(|&v| v == -1.0));
    }
}
