//! The CAM++ speaker encoder's front end: Kaldi's log mel filterbank as
//! `torchaudio.compliance.kaldi.fbank` computes it with the settings of 3D-Speaker's `FBank(80,
//! 16000, mean_nor=True)` (`models/campplus-notes.md`): 16 kHz samples in [-1, 1], 25 ms frames
//! every 10 ms with Kaldi's `snip_edges` (only whole frames), per frame DC removal, pre-emphasis
//! 0.97 and the Povey window (Hann to the power 0.85), zero-padded to 512 for the FFT, the power
//! spectrum through 80 triangular bands evenly spaced on Kaldi's mel scale (1127 ln(1 + f/700))
//! from 20 Hz to 8 kHz, the natural log floored at float32's epsilon; then each band minus its
//! mean over the window's frames. Computed in f64 and returned as f32.

use std::sync::Arc;

use realfft::{RealFftPlanner, RealToComplex};

/// Samples per frame (25 ms).
pub const FRAME: usize = 400;
/// Samples between frames (10 ms).
pub const SHIFT: usize = 160;
/// Mel bands.
pub const BANDS: usize = 80;
/// The FFT length: the frame rounded up to a power of two.
const PADDED: usize = 512;
const BINS: usize = PADDED / 2 + 1;
const SAMPLE_RATE: f64 = 16_000.0;
const LOW_HZ: f64 = 20.0;
const PREEMPHASIS: f64 = 0.97;

/// Frames in `samples` samples with `snip_edges` (0 when shorter than a frame).
pub fn frames(samples: usize) -> usize {
    if samples < FRAME {
        0
    } else {
        1 + (samples - FRAME) / SHIFT
    }
}

fn mel(hz: f64) -> f64 {
    1127.0 * (1.0 + hz / 700.0).ln()
}

/// The reusable front end: window, filterbank and FFT plan.
pub struct KaldiFbank {
    window: Vec<f64>,
    /// [BANDS][BINS], row-major.
    banks: Vec<f64>,
    fft: Arc<dyn RealToComplex<f64>>,
}

impl std::fmt::Debug for KaldiFbank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KaldiFbank").finish_non_exhaustive()
    }
}

impl Default for KaldiFbank {
    fn default() -> Self {
        Self::new()
    }
}

impl KaldiFbank {
    /// The Povey window, the 80 mel bands and the FFT plan.
    pub fn new() -> KaldiFbank {
        let window = (0..FRAME)
            .map(|n| {
                let hann =
                    0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / (FRAME - 1) as f64).cos();
                hann.powf(0.85)
            })
            .collect();
        KaldiFbank {
            window,
            banks: mel_banks(),
            fft: RealFftPlanner::<f64>::new().plan_fft_forward(PADDED),
        }
    }

    /// The filterbank, [80][257] row-major (the last column, the Nyquist bin, is zero as in
    /// torchaudio).
    pub fn banks(&self) -> Vec<f32> {
        self.banks.iter().map(|&w| w as f32).collect()
    }

    /// The log mel energies of every whole frame of `wav` (16 kHz, in [-1, 1]), frames x 80,
    /// before mean normalisation.
    pub fn log_mel(&self, wav: &[f32]) -> Vec<[f32; BANDS]> {
        let mut input = self.fft.make_input_vec();
        let mut spectrum = self.fft.make_output_vec();
        let mut power = [0f64; BINS];
        let mut out = Vec::with_capacity(frames(wav.len()));
        for f in 0..frames(wav.len()) {
            let frame = &wav[f * SHIFT..f * SHIFT + FRAME];
            let mean = frame.iter().map(|&s| f64::from(s)).sum::<f64>() / FRAME as f64;
            let mut previous = f64::from(frame[0]) - mean;
            for (n, &sample) in frame.iter().enumerate() {
                let x = f64::from(sample) - mean;
                // x[n] - 0.97 x[n - 1], with x[-1] = x[0] (Kaldi's pre-emphasis of the first sample).
                input[n] = (x - PREEMPHASIS * previous) * self.window[n];
                previous = x;
            }
            input[FRAME..].fill(0.0);
            // The plan's lengths are its own, so it cannot fail.
            let _ = self.fft.process(&mut input, &mut spectrum);
            for (p, c) in power.iter_mut().zip(&spectrum) {
                *p = c.norm_sqr();
            }
            let mut row = [0f32; BANDS];
            for (band, value) in row.iter_mut().enumerate() {
                let weights = &self.banks[band * BINS..(band + 1) * BINS];
                let energy: f64 = weights.iter().zip(&power).map(|(w, p)| w * p).sum();
                *value = energy.max(f64::from(f32::EPSILON)).ln() as f32;
            }
            out.push(row);
        }
        out
    }

    /// The encoder's input: [`KaldiFbank::log_mel`] minus each band's mean over the frames.
    pub fn features(&self, wav: &[f32]) -> Vec<[f32; BANDS]> {
        let mut rows = self.log_mel(wav);
        if rows.is_empty() {
            return rows;
        }
        let mut means = [0f64; BANDS];
        for row in &rows {
            for (mean, &v) in means.iter_mut().zip(row) {
                *mean += f64::from(v);
            }
        }
        let count = rows.len() as f64;
        for row in &mut rows {
            for (v, mean) in row.iter_mut().zip(&means) {
                *v = (f64::from(*v) - mean / count) as f32;
            }
        }
        rows
    }
}

/// Kaldi's triangular mel bands over the 257 power-spectrum bins of a 512-point FFT at 16 kHz,
/// from 20 Hz to the Nyquist frequency.
fn mel_banks() -> Vec<f64> {
    let (low, high) = (mel(LOW_HZ), mel(SAMPLE_RATE / 2.0));
    let delta = (high - low) / (BANDS + 1) as f64;
    let bin_hz = SAMPLE_RATE / PADDED as f64;
    let mut banks = vec![0f64; BANDS * BINS];
    for band in 0..BANDS {
        let left = low + band as f64 * delta;
        let center = left + delta;
        let right = center + delta;
        // Bins 0..256: torchaudio leaves the Nyquist bin out of every band.
        for bin in 0..BINS - 1 {
            let m = mel(bin_hz * bin as f64);
            let up = (m - left) / (center - left);
            let down = (right - m) / (right - center);
            banks[band * BINS + bin] = up.min(down).max(0.0);
        }
    }
    banks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::{max_abs_diff, reference_f32};

    /// Against torchaudio's own filterbank and fbank of the reference signal
    /// (`models/reference/campplus_sv_zh_en_3s/`).
    #[test]
    fn matches_torchaudio_kaldi_fbank() {
        let fbank = KaldiFbank::new();
        let banks = reference_f32("campplus_sv_zh_en_3s/mel_banks.f32");
        let diff = max_abs_diff(&fbank.banks(), &banks);
        // torchaudio computes the bands in float32; these are f64.
        assert!(diff <= 5e-5, "mel banks: max diff {diff}");
        let wav = reference_f32("campplus_sv_zh_en_3s/input.f32");
        assert_eq!(frames(wav.len()), 298);
        let flat = |rows: Vec<[f32; BANDS]>| rows.into_iter().flatten().collect::<Vec<f32>>();
        let diff = max_abs_diff(
            &flat(fbank.log_mel(&wav)),
            &reference_f32("campplus_sv_zh_en_3s/fbank.f32"),
        );
        assert!(diff <= 1e-3, "fbank: max diff {diff}");
        let diff = max_abs_diff(
            &flat(fbank.features(&wav)),
            &reference_f32("campplus_sv_zh_en_3s/feature.f32"),
        );
        assert!(diff <= 1e-3, "features: max diff {diff}");
        assert!(fbank.features(&wav[..399]).is_empty());
        assert_eq!(frames(400), 1);
    }
}
