//! Canonical correlation between two multichannel series on a common grid, at circular lags: the
//! arithmetic behind Active Speaker Detection ([`super::speaker`]). [`LaggedCanonical`] whitens
//! both series once (ridge-regularised, since clips are short) and then gives, for any lag, the
//! first canonical correlation of one series with the other circularly shifted. Whitening does not
//! change under a circular shift, so every lag costs only one cross-covariance and one small
//! eigenvalue problem. [`symmetric_eigen`] is the cyclic Jacobi method: the matrices are at most
//! a few dozen wide, and it needs no linear-algebra library (the engine cross-compiles to phones);
//! the top eigenvalue at each lag is found by power iteration.

/// Smallest standard deviation of a channel that counts as moving; quieter channels are left out
/// (set to zero) rather than blown up by the standardisation.
const STILL: f64 = 1e-9;

/// Two whitened series of equal length, ready for canonical correlations at any lag.
#[derive(Debug, Clone)]
pub struct LaggedCanonical {
    /// Channels of the first series after whitening, one after another (`x_width * len` values).
    x: Vec<f64>,
    /// Channels of the second series after whitening, one after another (`y_width * len` values).
    y: Vec<f64>,
    x_width: usize,
    y_width: usize,
    len: usize,
}

impl LaggedCanonical {
    /// Whitens `x` and `y` (rows: time steps; both cut to the shorter). The covariance of each
    /// is shrunk towards the identity by `ridge` (0..1) after standardising its channels. `None`
    /// when either series has no moving channel or fewer than three rows.
    pub fn new<const P: usize, const Q: usize>(
        x: &[[f64; P]],
        y: &[[f64; Q]],
        ridge: f64,
    ) -> Option<LaggedCanonical> {
        let len = x.len().min(y.len());
        if len < 3 {
            return None;
        }
        let x = channels(
            &whiten(x[..len].iter().flatten().copied().collect(), P, ridge)?,
            P,
        );
        let y = channels(
            &whiten(y[..len].iter().flatten().copied().collect(), Q, ridge)?,
            Q,
        );
        Some(LaggedCanonical {
            x,
            y,
            x_width: P,
            y_width: Q,
            len,
        })
    }

    /// Number of rows (time steps).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no rows (never true for a built value).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// First canonical correlation of `x[t]` with `y[(t + lag) mod len]`, 0..1.
    pub fn at_lag(&self, lag: i64) -> f64 {
        let (p, q, n) = (self.x_width, self.y_width, self.len);
        let shift = lag.rem_euclid(n as i64) as usize;
        // Cross-covariance of the whitened series; its largest singular value is the first
        // canonical correlation. y[(t + shift) mod n] is y[shift..] followed by y[..shift].
        let head = n - shift;
        let mut cross = vec![0f64; p * q];
        for (a, out) in cross.chunks_exact_mut(q).enumerate() {
            let x_channel = &self.x[a * n..(a + 1) * n];
            for (b, o) in out.iter_mut().enumerate() {
                let y_channel = &self.y[b * n..(b + 1) * n];
                *o = dot(&x_channel[..head], &y_channel[shift..])
                    + dot(&x_channel[head..], &y_channel[..shift]);
            }
        }
        // The largest eigenvalue of the q x q Gram matrix cross^T cross / n^2 is the square of the
        // first canonical correlation.
        let mut gram = vec![0f64; q * q];
        for row in cross.chunks_exact(q) {
            for i in 0..q {
                for j in i..q {
                    gram[i * q + j] += row[i] * row[j];
                }
            }
        }
        let scale = 1.0 / (n as f64 * n as f64);
        for i in 0..q {
            for j in i..q {
                let v = gram[i * q + j] * scale;
                gram[i * q + j] = v;
                gram[j * q + i] = v;
            }
        }
        largest_eigenvalue(&gram, q).max(0.0).sqrt().min(1.0)
    }
}

/// The largest eigenvalue of a symmetric positive semi-definite `size` x `size` matrix, by power
/// iteration from a fixed start (the Rayleigh quotient converges from below, quadratically in the
/// eigenvector's error): a few microseconds against the Jacobi method's tens, at every lag.
fn largest_eigenvalue(a: &[f64], size: usize) -> f64 {
    // A start with a part along every axis, so it is not orthogonal to the top eigenvector of
    // any matrix met in practice.
    let mut v: Vec<f64> = (0..size).map(|i| 1.0 + 0.1 * i as f64).collect();
    let mut value = 0.0;
    let mut next = vec![0f64; size];
    for _ in 0..200 {
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm <= 1e-300 {
            return 0.0;
        }
        v.iter_mut().for_each(|x| *x /= norm);
        for (i, out) in next.iter_mut().enumerate() {
            *out = a[i * size..(i + 1) * size]
                .iter()
                .zip(&v)
                .map(|(x, y)| x * y)
                .sum();
        }
        let rayleigh: f64 = next.iter().zip(&v).map(|(x, y)| x * y).sum();
        std::mem::swap(&mut v, &mut next);
        if (rayleigh - value).abs() <= 1e-10 * rayleigh.abs() {
            return rayleigh;
        }
        value = rayleigh;
    }
    value
}

/// Row-major `rows` (`width` values per row) rearranged channel after channel.
fn channels(rows: &[f64], width: usize) -> Vec<f64> {
    (0..width)
        .flat_map(|c| rows.iter().skip(c).step_by(width).copied())
        .collect()
}

/// Dot product of two equally long slices, in four running sums so that it vectorises.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sums = [0f64; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = a4
        .remainder()
        .iter()
        .zip(b4.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a4.zip(b4) {
        for k in 0..4 {
            sums[k] += x[k] * y[k];
        }
    }
    sums.iter().sum::<f64>() + tail
}

/// Standardises each channel of `rows` (`width` values per row), shrinks their covariance
/// towards the identity by `ridge` and multiplies by its inverse square root, so that the result
/// has (regularised) identity covariance. `None` when no channel moves.
fn whiten(mut rows: Vec<f64>, width: usize, ridge: f64) -> Option<Vec<f64>> {
    let n = rows.len() / width;
    let mut moving = false;
    for c in 0..width {
        let mean = (0..n).map(|t| rows[t * width + c]).sum::<f64>() / n as f64;
        let variance = (0..n)
            .map(|t| (rows[t * width + c] - mean).powi(2))
            .sum::<f64>()
            / n as f64;
        let sd = variance.sqrt();
        let still = sd.is_nan() || sd <= STILL;
        moving |= !still;
        for t in 0..n {
            let v = &mut rows[t * width + c];
            *v = if still { 0.0 } else { (*v - mean) / sd };
        }
    }
    if !moving {
        return None;
    }
    let mut covariance = vec![0f64; width * width];
    for row in rows.chunks_exact(width) {
        for i in 0..width {
            for j in i..width {
                covariance[i * width + j] += row[i] * row[j];
            }
        }
    }
    let ridge = ridge.clamp(1e-6, 1.0);
    for i in 0..width {
        for j in i..width {
            let shrunk = (1.0 - ridge) * covariance[i * width + j] / n as f64
                + if i == j { ridge } else { 0.0 };
            covariance[i * width + j] = shrunk;
            covariance[j * width + i] = shrunk;
        }
    }
    let (values, vectors) = symmetric_eigen(covariance, width);
    // W = V diag(1 / sqrt(lambda)) V^T; the ridge keeps every lambda at least `ridge`.
    let mut whitening = vec![0f64; width * width];
    for (k, &value) in values.iter().enumerate() {
        let weight = 1.0 / value.max(1e-12).sqrt();
        for i in 0..width {
            let vik = vectors[i * width + k] * weight;
            for j in 0..width {
                whitening[i * width + j] += vik * vectors[j * width + k];
            }
        }
    }
    let mut out = vec![0f64; rows.len()];
    for (row, out_row) in rows.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
        for (i, &v) in row.iter().enumerate() {
            for (o, w) in out_row
                .iter_mut()
                .zip(&whitening[i * width..(i + 1) * width])
            {
                *o += v * w;
            }
        }
    }
    Some(out)
}

/// Eigenvalues and eigenvectors (columns of the returned row-major matrix) of the symmetric
/// `size` x `size` matrix `a`, by cyclic Jacobi rotations.
pub fn symmetric_eigen(mut a: Vec<f64>, size: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0f64; size * size];
    for i in 0..size {
        v[i * size + i] = 1.0;
    }
    let total: f64 = a.iter().map(|x| x * x).sum();
    for _sweep in 0..50 {
        let off: f64 = (0..size)
            .flat_map(|i| (0..size).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * size + j].powi(2))
            .sum();
        if off <= 1e-24 * total.max(1e-300) {
            break;
        }
        for p in 0..size {
            for q in p + 1..size {
                let apq = a[p * size + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let (app, aqq) = (a[p * size + p], a[q * size + q]);
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..size {
                    let (akp, akq) = (a[k * size + p], a[k * size + q]);
                    a[k * size + p] = c * akp - s * akq;
                    a[k * size + q] = s * akp + c * akq;
                }
                for k in 0..size {
                    let (apk, aqk) = (a[p * size + k], a[q * size + k]);
                    a[p * size + k] = c * apk - s * aqk;
                    a[q * size + k] = s * apk + c * aqk;
                }
                for k in 0..size {
                    let (vkp, vkq) = (v[k * size + p], v[k * size + q]);
                    v[k * size + p] = c * vkp - s * vkq;
                    v[k * size + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..size).map(|i| a[i * size + i]).collect(), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_diagonalises_a_symmetric_matrix() {
        let a = vec![4.0, 1.0, 2.0, 1.0, 3.0, 0.5, 2.0, 0.5, 5.0];
        let (values, vectors) = symmetric_eigen(a.clone(), 3);
        for k in 0..3 {
            for i in 0..3 {
                let av: f64 = (0..3).map(|j| a[i * 3 + j] * vectors[j * 3 + k]).sum();
                assert!((av - values[k] * vectors[i * 3 + k]).abs() < 1e-9);
            }
        }
        let trace: f64 = values.iter().sum();
        assert!((trace - 12.0).abs() < 1e-9);
    }

    #[test]
    fn power_iteration_finds_the_largest_eigenvalue() {
        let a = vec![4.0, 1.0, 2.0, 1.0, 3.0, 0.5, 2.0, 0.5, 5.0];
        let (values, _) = symmetric_eigen(a.clone(), 3);
        let top = values.iter().copied().fold(f64::MIN, f64::max);
        assert!((largest_eigenvalue(&a, 3) - top).abs() < 1e-8);
        assert_eq!(largest_eigenvalue(&[0.0; 4], 2), 0.0);
    }

    #[test]
    fn a_copied_channel_correlates_fully_at_its_lag_only() {
        let x: Vec<[f64; 2]> = (0..200)
            .map(|i| {
                let t = i as f64;
                [(t * 0.7).sin() + (t * 0.13).cos(), (t * 1.9).sin()]
            })
            .collect();
        // y[t] = x[t - 3][0] plus an unrelated channel: x[t] meets its copy at lag +3.
        let y: Vec<[f64; 2]> = (0..200)
            .map(|i| [x[(i + 197) % 200][0], (i as f64 * 2.9).cos()])
            .collect();
        let cca = LaggedCanonical::new(&x, &y, 1e-3).unwrap();
        assert!(cca.at_lag(3) > 0.99, "{}", cca.at_lag(3));
        assert!(cca.at_lag(0) < 0.9, "{}", cca.at_lag(0));
        let constant = vec![[1.0; 2]; 200];
        assert!(LaggedCanonical::new(&x, &constant, 0.1).is_none());
        assert!(LaggedCanonical::new(&x[..2], &y[..2], 0.1).is_none());
    }
}
