//! Finding the machine-readable zone's lines in a document image, without a model: the MRZ is two
//! or three long, parallel, evenly spaced lines of dark monospace characters. Dark text is
//! brought out with a black-hat (closing minus image), characters are joined into line blobs by
//! their horizontal gradient and a wide closing, and each blob's second moments give its centre,
//! direction, length and thickness, so a skewed line is cut out straight. Lines that run down the
//! page are found by running the same steps on the image turned a quarter.

/// A grey image, values 0..255.
#[derive(Debug, Clone, PartialEq)]
pub struct Grey {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Row-major values.
    pub data: Vec<f32>,
}

impl Grey {
    /// A `width x height` image of `value`.
    pub fn filled(width: usize, height: usize, value: f32) -> Grey {
        Grey {
            width,
            height,
            data: vec![value; width * height],
        }
    }

    /// Luma (BT.601) of packed RGB.
    pub fn from_rgb(width: usize, height: usize, rgb: &[u8]) -> Grey {
        let data = rgb
            .chunks_exact(3)
            .map(|p| 0.299 * f32::from(p[0]) + 0.587 * f32::from(p[1]) + 0.114 * f32::from(p[2]))
            .collect();
        Grey {
            width,
            height,
            data,
        }
    }

    /// The value at (x, y), clamped to the border.
    fn at(&self, x: isize, y: isize) -> f32 {
        let x = x.clamp(0, self.width as isize - 1) as usize;
        let y = y.clamp(0, self.height as isize - 1) as usize;
        self.data[y * self.width + x]
    }

    /// Bilinear sample at (x, y); outside the image: `outside`.
    pub fn sample(&self, x: f32, y: f32, outside: f32) -> f32 {
        if x < -0.5 || y < -0.5 || x > self.width as f32 - 0.5 || y > self.height as f32 - 0.5 {
            return outside;
        }
        let (x0, y0) = (x.floor(), y.floor());
        let (fx, fy) = (x - x0, y - y0);
        let (x0, y0) = (x0 as isize, y0 as isize);
        let top = self.at(x0, y0) * (1.0 - fx) + self.at(x0 + 1, y0) * fx;
        let bottom = self.at(x0, y0 + 1) * (1.0 - fx) + self.at(x0 + 1, y0 + 1) * fx;
        top * (1.0 - fy) + bottom * fy
    }

    /// Resized by area averaging (shrinking) or bilinear sampling (enlarging).
    pub fn resize(&self, width: usize, height: usize) -> Grey {
        let (sx, sy) = (
            self.width as f32 / width as f32,
            self.height as f32 / height as f32,
        );
        let mut out = Grey::filled(width, height, 0.0);
        for y in 0..height {
            for x in 0..width {
                out.data[y * width + x] = if sx > 1.0 || sy > 1.0 {
                    // Box average over the source footprint.
                    let (x0, x1) = (
                        (x as f32 * sx) as usize,
                        ((x + 1) as f32 * sx).ceil() as usize,
                    );
                    let (y0, y1) = (
                        (y as f32 * sy) as usize,
                        ((y + 1) as f32 * sy).ceil() as usize,
                    );
                    let (x1, y1) = (
                        x1.min(self.width).max(x0 + 1),
                        y1.min(self.height).max(y0 + 1),
                    );
                    let mut sum = 0.0;
                    for yy in y0..y1 {
                        sum += self.data[yy * self.width + x0..yy * self.width + x1]
                            .iter()
                            .sum::<f32>();
                    }
                    sum / ((x1 - x0) * (y1 - y0)) as f32
                } else {
                    self.sample(
                        (x as f32 + 0.5) * sx - 0.5,
                        (y as f32 + 0.5) * sy - 0.5,
                        0.0,
                    )
                };
            }
        }
        out
    }

    /// Turned a quarter clockwise.
    pub fn rotate90(&self) -> Grey {
        let mut out = Grey::filled(self.height, self.width, 0.0);
        for y in 0..self.height {
            for x in 0..self.width {
                out.data[x * self.height + (self.height - 1 - y)] = self.data[y * self.width + x];
            }
        }
        out
    }
}

/// Running min or max over a window along rows (`horizontal`) or columns.
fn running(image: &Grey, radius: usize, horizontal: bool, max: bool) -> Grey {
    let mut out = image.clone();
    let (outer, inner) = if horizontal {
        (image.height, image.width)
    } else {
        (image.width, image.height)
    };
    let index = |o: usize, i: usize| {
        if horizontal {
            o * image.width + i
        } else {
            i * image.width + o
        }
    };
    let mut line = vec![0f32; inner];
    for o in 0..outer {
        for (i, v) in line.iter_mut().enumerate() {
            *v = image.data[index(o, i)];
        }
        for i in 0..inner {
            let (lo, hi) = (i.saturating_sub(radius), (i + radius + 1).min(inner));
            let window = &line[lo..hi];
            out.data[index(o, i)] = if max {
                window.iter().copied().fold(f32::MIN, f32::max)
            } else {
                window.iter().copied().fold(f32::MAX, f32::min)
            };
        }
    }
    out
}

/// Grey dilation (`max`) or erosion with a `2rx+1 x 2ry+1` rectangle.
fn morph(image: &Grey, rx: usize, ry: usize, max: bool) -> Grey {
    running(&running(image, rx, true, max), ry, false, max)
}

/// Closing (dilation, then erosion).
fn close(image: &Grey, rx: usize, ry: usize) -> Grey {
    morph(&morph(image, rx, ry, true), rx, ry, false)
}

/// Otsu's threshold of values in 0..=255.
fn otsu(values: &[f32]) -> f32 {
    let mut histogram = [0f64; 256];
    for &v in values {
        histogram[v.clamp(0.0, 255.0) as usize] += 1.0;
    }
    let total: f64 = histogram.iter().sum();
    let sum_all: f64 = histogram
        .iter()
        .enumerate()
        .map(|(i, h)| i as f64 * h)
        .sum();
    let (mut weight_b, mut sum_b, mut best, mut threshold) = (0.0, 0.0, -1.0, 0usize);
    for (i, &h) in histogram.iter().enumerate() {
        weight_b += h;
        if weight_b == 0.0 || weight_b == total {
            continue;
        }
        sum_b += i as f64 * h;
        let weight_f = total - weight_b;
        let between =
            weight_b * weight_f * (sum_b / weight_b - (sum_all - sum_b) / weight_f).powi(2);
        if between > best {
            best = between;
            threshold = i;
        }
    }
    threshold as f32
}

/// A line-shaped blob: centre, unit direction (pointing right, or down when vertical), length and
/// thickness in pixels of the image it was found in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineBlob {
    /// Centre x.
    pub cx: f32,
    /// Centre y.
    pub cy: f32,
    /// Direction x component.
    pub dx: f32,
    /// Direction y component.
    pub dy: f32,
    /// Length along the direction.
    pub length: f32,
    /// Thickness across it.
    pub thickness: f32,
}

impl LineBlob {
    /// Distance of another blob's centre across this line's direction (signed; positive below).
    fn across(&self, other: &LineBlob) -> f32 {
        (other.cx - self.cx) * -self.dy + (other.cy - self.cy) * self.dx
    }

    /// Distance of another blob's centre along this line's direction.
    fn along(&self, other: &LineBlob) -> f32 {
        (other.cx - self.cx) * self.dx + (other.cy - self.cy) * self.dy
    }
}

/// A line blob of the pixels `(x, y)`: centre, principal direction, length and thickness from the
/// second moments.
fn blob_of(pixels: &[(f32, f32)]) -> LineBlob {
    let n = pixels.len().max(1) as f64;
    let (mut sx, mut sy, mut sxx, mut syy, mut sxy) = (0f64, 0f64, 0f64, 0f64, 0f64);
    for &(x, y) in pixels {
        let (x, y) = (f64::from(x), f64::from(y));
        sx += x;
        sy += y;
        sxx += x * x;
        syy += y * y;
        sxy += x * y;
    }
    let (mx, my) = (sx / n, sy / n);
    let (vxx, vyy, vxy) = (sxx / n - mx * mx, syy / n - my * my, sxy / n - mx * my);
    // Eigen-decomposition of the 2x2 covariance.
    let half_trace = (vxx + vyy) / 2.0;
    let root = (((vxx - vyy) / 2.0).powi(2) + vxy * vxy).sqrt();
    let (major, minor) = (half_trace + root, (half_trace - root).max(0.0));
    let angle = 0.5 * (2.0 * vxy).atan2(vxx - vyy);
    let (mut dx, mut dy) = (angle.cos() as f32, angle.sin() as f32);
    if dx < 0.0 || (dx == 0.0 && dy < 0.0) {
        dx = -dx;
        dy = -dy;
    }
    LineBlob {
        cx: mx as f32,
        cy: my as f32,
        dx,
        dy,
        // A uniform bar of length L has variance L^2 / 12 along it.
        length: (12.0 * major).sqrt() as f32,
        thickness: (12.0 * minor).sqrt() as f32,
    }
}

/// Splits a blob that is several touching lines (an MRZ's lines closed into one) at the valleys
/// of its profile across its direction; a single line comes back whole.
fn split_lines(blob: &LineBlob, pixels: &[(f32, f32)]) -> Vec<LineBlob> {
    let across = |&(x, y): &(f32, f32)| (x - blob.cx) * -blob.dy + (y - blob.cy) * blob.dx;
    let offsets: Vec<f32> = pixels.iter().map(across).collect();
    let low = offsets.iter().copied().fold(f32::MAX, f32::min).floor();
    let high = offsets.iter().copied().fold(f32::MIN, f32::max).ceil();
    let bins = (high - low) as usize + 1;
    if bins < 6 {
        return vec![*blob];
    }
    let mut profile = vec![0f32; bins];
    for &o in &offsets {
        profile[(o - low) as usize] += 1.0;
    }
    let smooth: Vec<f32> = (0..bins)
        .map(|i| {
            let (a, b) = (i.saturating_sub(1), (i + 2).min(bins));
            profile[a..b].iter().sum::<f32>() / (b - a) as f32
        })
        .collect();
    let peak = smooth.iter().copied().fold(0.0, f32::max);
    // Runs of the profile over 40 % of its peak are lines; what lies between splits them.
    let mut runs = Vec::new();
    let mut start = None;
    for (i, &v) in smooth.iter().enumerate() {
        match (v > 0.4 * peak, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, bins));
    }
    if runs.len() < 2 {
        return vec![*blob];
    }
    runs.iter()
        .filter_map(|&(a, b)| {
            let part: Vec<(f32, f32)> = pixels
                .iter()
                .zip(&offsets)
                .filter(|(_, &o)| {
                    let bin = (o - low) as usize;
                    bin >= a && bin < b
                })
                .map(|(p, _)| *p)
                .collect();
            (part.len() > 10).then(|| LineBlob {
                // Keep the parent's direction: a thin part's own axis is noisier.
                dx: blob.dx,
                dy: blob.dy,
                ..blob_of(&part)
            })
        })
        .collect()
}

/// Connected blobs of a binary mask (8-neighbourhood) as line blobs, touching lines split.
fn blobs(mask: &[bool], width: usize, height: usize) -> Vec<LineBlob> {
    let mut seen = vec![false; mask.len()];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..mask.len() {
        if !mask[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        let mut pixels = Vec::new();
        while let Some(p) = stack.pop() {
            let (px, py) = (p % width, p / width);
            pixels.push((px as f32, py as f32));
            for ny in py.saturating_sub(1)..=(py + 1).min(height - 1) {
                for nx in px.saturating_sub(1)..=(px + 1).min(width - 1) {
                    let q = ny * width + nx;
                    if mask[q] && !seen[q] {
                        seen[q] = true;
                        stack.push(q);
                    }
                }
            }
        }
        if pixels.len() < 20 {
            continue;
        }
        let blob = blob_of(&pixels);
        if blob.length > 4.0 * blob.thickness {
            out.extend(split_lines(&blob, &pixels));
        } else {
            out.push(blob);
        }
    }
    out
}

/// Working width the search runs at: MRZ characters are then about 15-25 px tall.
const WORK_WIDTH: usize = 1000;

/// Longest vertical run of the line mask a row of characters can make at [`WORK_WIDTH`]: twice
/// the tallest MRZ character. Longer runs are a border or a frame line.
const MAX_STROKE_RUN: usize = 50;

/// Clears the mask's vertical runs longer than [`MAX_STROKE_RUN`]. The horizontal closing that
/// joins a line's characters also joins them to a vertical line close by, such as the edge of a
/// card photographed on a page or a table rule: every MRZ line would then be one blob with the
/// border and none would look like a line.
fn drop_tall_strokes(mask: &mut [bool], width: usize, height: usize) {
    for x in 0..width {
        let mut y = 0;
        while y < height {
            if !mask[y * width + x] {
                y += 1;
                continue;
            }
            let start = y;
            while y < height && mask[y * width + x] {
                y += 1;
            }
            if y - start > MAX_STROKE_RUN {
                for row in start..y {
                    mask[row * width + x] = false;
                }
            }
        }
    }
}

/// Candidate MRZ line groups in `image` (as found, in its own pixels), best first: groups of two or
/// three parallel blobs of similar length, evenly spaced, ordered top to bottom.
pub fn line_groups(image: &Grey) -> Vec<Vec<LineBlob>> {
    let scale = WORK_WIDTH as f32 / image.width.max(image.height) as f32;
    let (w, h) = (
        ((image.width as f32 * scale).round() as usize).max(8),
        ((image.height as f32 * scale).round() as usize).max(8),
    );
    let work = image.resize(w, h);
    // Black-hat: dark strokes narrower than the kernel.
    let closed = close(&work, 8, 6);
    let mut hat = closed.clone();
    for (h, w) in hat.data.iter_mut().zip(&work.data) {
        *h -= w;
    }
    // Horizontal gradient magnitude (Sobel x), normalised.
    let mut gradient = Grey::filled(w, h, 0.0);
    let mut peak = 0f32;
    for y in 0..h as isize {
        for x in 0..w as isize {
            let g = (hat.at(x + 1, y - 1) + 2.0 * hat.at(x + 1, y) + hat.at(x + 1, y + 1))
                - (hat.at(x - 1, y - 1) + 2.0 * hat.at(x - 1, y) + hat.at(x - 1, y + 1));
            let g = g.abs();
            gradient.data[y as usize * w + x as usize] = g;
            peak = peak.max(g);
        }
    }
    if peak <= 0.0 {
        return Vec::new();
    }
    for g in &mut gradient.data {
        *g = *g * 255.0 / peak;
    }
    // Join the characters of a line, keep lines apart.
    let joined = close(&gradient, 12, 1);
    let threshold = otsu(&joined.data).max(20.0);
    let mut mask: Vec<bool> = joined.data.iter().map(|&v| v > threshold).collect();
    drop_tall_strokes(&mut mask, w, h);
    let lines: Vec<LineBlob> = blobs(&mask, w, h)
        .into_iter()
        .filter(|b| b.length > 0.25 * w.min(h) as f32 && b.length > 10.0 * b.thickness.max(1.0))
        .map(|b| LineBlob {
            cx: b.cx / scale,
            cy: b.cy / scale,
            length: b.length / scale,
            thickness: b.thickness / scale,
            ..b
        })
        .collect();
    let mut groups: Vec<Vec<LineBlob>> = Vec::new();
    for a in &lines {
        let mut group: Vec<LineBlob> = lines
            .iter()
            .filter(|b| {
                let parallel = (a.dx * b.dx + a.dy * b.dy).abs() > 0.995;
                let similar = (a.length - b.length).abs() < 0.2 * a.length.max(b.length);
                let near = a.across(b).abs() < 6.0 * a.thickness.max(b.thickness)
                    && a.along(b).abs() < 0.2 * a.length;
                parallel && similar && near
            })
            .copied()
            .collect();
        if group.len() < 2 {
            continue;
        }
        group.sort_by(|p, q| a.across(p).total_cmp(&a.across(q)));
        group.truncate(3);
        // Each group once.
        if !groups.iter().any(|g| g == &group) {
            groups.push(group);
        }
    }
    // Longest lines first: the MRZ spans (nearly) the whole document.
    groups.sort_by(|a, b| {
        let total = |g: &Vec<LineBlob>| g.iter().map(|l| l.length).sum::<f32>() / g.len() as f32;
        total(b).total_cmp(&total(a))
    });
    groups
}

/// The strip along `line`, read straight: `band` times the line's thickness across (the margin
/// above and below the characters) and a little longer than it, `height` output rows and as many
/// columns as keep the aspect ratio. `flip` reads it turned half a turn.
pub fn cut_line(image: &Grey, line: &LineBlob, height: usize, band: f32, flip: bool) -> Grey {
    let band = line.thickness * band;
    let length = line.length * 1.06 + band;
    let width = ((length / band) * height as f32).round().max(1.0) as usize;
    let step = band / height as f32;
    let mut out = Grey::filled(width, height, 255.0);
    let (dx, dy) = if flip {
        (-line.dx, -line.dy)
    } else {
        (line.dx, line.dy)
    };
    // Across direction: the direction turned a quarter clockwise (down for a left-to-right line).
    let (ax, ay) = (-dy, dx);
    for row in 0..height {
        let v = (row as f32 + 0.5) * step - band / 2.0;
        for col in 0..width {
            let u = (col as f32 + 0.5) * step - length / 2.0;
            let x = line.cx + u * dx + v * ax;
            let y = line.cy + u * dy + v * ay;
            out.data[row * width + col] = image.sample(x, y, 255.0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dark dashes (characters) along rows, like MRZ lines, on a light page.
    fn page(angle_deg: f32) -> Grey {
        let (w, h) = (800, 560);
        let mut g = Grey::filled(w, h, 230.0);
        let (s, c) = angle_deg.to_radians().sin_cos();
        for y0 in [440.0f32, 480.0] {
            for k in 0..44 {
                let x0 = 60.0 + k as f32 * 15.5;
                for yy in 0..18 {
                    for xx in 0..9 {
                        if (xx + yy) % 4 == 0 {
                            continue; // strokes, not solid blocks
                        }
                        let (px, py) = (x0 + xx as f32 - 400.0, y0 + yy as f32 - 280.0);
                        let (rx, ry) = (px * c - py * s + 400.0, px * s + py * c + 280.0);
                        let (ix, iy) = (rx.round() as usize, ry.round() as usize);
                        if ix < w && iy < h {
                            g.data[iy * w + ix] = 30.0;
                        }
                    }
                }
            }
        }
        g
    }

    #[test]
    fn finds_two_parallel_lines_straight_and_skewed() {
        for angle in [0.0f32, 4.0, -6.0] {
            let groups = line_groups(&page(angle));
            let best = groups
                .first()
                .unwrap_or_else(|| panic!("no group at {angle}"));
            assert_eq!(best.len(), 2, "{angle}: {best:?}");
            for line in best {
                let found = line.dy.atan2(line.dx).to_degrees();
                assert!((found - angle).abs() < 1.5, "{angle}: {found}");
                assert!((line.length - 680.0).abs() < 60.0, "{angle}: {line:?}");
            }
            assert!(best[0].across(&best[1]) > 0.0, "top to bottom");
        }
        // Turned a quarter, the lines run down the page and are not found as rows.
        let turned = page(0.0).rotate90();
        assert!(line_groups(&turned).iter().all(|g| g[0].dx.abs() < 0.5));
    }

    #[test]
    fn cut_line_straightens_a_skewed_line() {
        let g = page(5.0);
        let best = line_groups(&g)[0][0];
        let strip = cut_line(&g, &best, 48, 1.5, false);
        assert_eq!(strip.height, 48);
        assert!(strip.width > 600, "{}", strip.width);
        // Ink in the middle rows, paper at the top and bottom rows.
        let row_mean = |r: usize| {
            strip.data[r * strip.width..(r + 1) * strip.width]
                .iter()
                .sum::<f32>()
                / strip.width as f32
        };
        assert!(
            row_mean(24) < row_mean(1) - 40.0,
            "{} {}",
            row_mean(24),
            row_mean(1)
        );
        let flipped = cut_line(&g, &best, 48, 1.5, true);
        assert_eq!(flipped.width, strip.width);
    }

    #[test]
    fn otsu_splits_two_levels() {
        let values: Vec<f32> = (0..100)
            .map(|i| if i < 50 { 20.0 } else { 200.0 })
            .collect();
        let t = otsu(&values);
        assert!((20.0..200.0).contains(&t), "{t}");
    }
}
