//! The speaker encoder's front end: a 40-band **power** mel spectrogram exactly as Resemblyzer
//! computes it with librosa (`models/reference/resemblyzer-notes.md` section 2): 16 kHz,
//! 400-sample periodic Hann window, hop 160, zero padding of 200 samples at both ends, |rfft|²,
//! Slaney mel filterbank (0-8000 Hz, area-normalised). The FFT is `realfft`; the filterbank is
//! applied as dense dot products over contiguous rows, which vectorise.

use std::sync::Arc;

use realfft::{RealFftPlanner, RealToComplex};

/// Samples per frame.
pub const N_FFT: usize = 400;
/// Samples between frames (10 ms).
pub const HOP: usize = 160;
/// Mel bands.
pub const N_MELS: usize = 40;
const BINS: usize = N_FFT / 2 + 1;
const SAMPLE_RATE: f64 = 16_000.0;

/// A reusable front end (window, filterbank and FFT plan).
pub struct MelFrontEnd {
    power: PowerMel,
}

/// The short-time power mel spectrogram both front ends share (the speaker encoder's 40 bands and
/// Whisper's 80): 400-sample periodic Hann frames every 160 samples, |rfft|², a Slaney filterbank.
/// How the signal is padded is the caller's.
pub(crate) struct PowerMel {
    window: Vec<f32>,
    /// [n_mels][BINS], row-major.
    filters: Vec<f32>,
    n_mels: usize,
    fft: Arc<dyn RealToComplex<f32>>,
}

impl PowerMel {
    /// The window, the `n_mels`-band filterbank and the FFT plan.
    pub(crate) fn new(n_mels: usize) -> PowerMel {
        PowerMel {
            window: hann_window(N_FFT),
            filters: slaney_filterbank(n_mels),
            n_mels,
            fft: RealFftPlanner::<f32>::new().plan_fft_forward(N_FFT),
        }
    }

    /// Calls `each(t, mel)` for frames `t` in `0..frames` with the frame's `n_mels` power mel
    /// values; frame t covers samples `160 t .. 160 t + 400` of the padded signal, whose sample
    /// `i` is `padded(i)`.
    pub(crate) fn for_each_frame(
        &self,
        frames: usize,
        padded: impl Fn(usize) -> f32,
        mut each: impl FnMut(usize, &[f32]),
    ) {
        let mut input = self.fft.make_input_vec();
        let mut spectrum = self.fft.make_output_vec();
        let mut scratch = self.fft.make_scratch_vec();
        let mut power = [0f32; BINS];
        let mut mel = vec![0f32; self.n_mels];
        for t in 0..frames {
            for (n, slot) in input.iter_mut().enumerate() {
                *slot = padded(t * HOP + n) * self.window[n];
            }
            // The lengths are the plan's own, so processing cannot fail; if it did, the frame
            // would be silence.
            let ok = self
                .fft
                .process_with_scratch(&mut input, &mut spectrum, &mut scratch)
                .is_ok();
            for (p, c) in power.iter_mut().zip(&spectrum) {
                *p = if ok { c.re * c.re + c.im * c.im } else { 0.0 };
            }
            for (m, value) in mel.iter_mut().enumerate() {
                let row = &self.filters[m * BINS..(m + 1) * BINS];
                *value = row.iter().zip(&power).map(|(w, p)| w * p).sum();
            }
            each(t, &mel);
        }
    }
}

impl std::fmt::Debug for MelFrontEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MelFrontEnd").finish_non_exhaustive()
    }
}

impl Default for MelFrontEnd {
    fn default() -> Self {
        MelFrontEnd::new()
    }
}

/// Hz to mel on the Slaney scale (linear below 1 kHz, logarithmic above).
fn hz_to_mel(hz: f64) -> f64 {
    let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
    let min_log_mel = min_log_hz / f_sp;
    let log_step = 6.4f64.ln() / 27.0;
    if hz >= min_log_hz {
        min_log_mel + (hz / min_log_hz).ln() / log_step
    } else {
        hz / f_sp
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
    let min_log_mel = min_log_hz / f_sp;
    let log_step = 6.4f64.ln() / 27.0;
    if mel >= min_log_mel {
        min_log_hz * (log_step * (mel - min_log_mel)).exp()
    } else {
        f_sp * mel
    }
}

/// librosa's `filters.mel(sr=16000, n_fft=400, n_mels)` (Slaney scale and area norm), computed in
/// f64 and stored as f32, [n_mels][201]: shared by the speaker encoder's 40 bands and Whisper's 80.
pub(crate) fn slaney_filterbank(n_mels: usize) -> Vec<f32> {
    let max_mel = hz_to_mel(SAMPLE_RATE / 2.0);
    let mel_f: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(max_mel * i as f64 / (n_mels + 1) as f64))
        .collect();
    let fft_f: Vec<f64> = (0..BINS)
        .map(|k| k as f64 * SAMPLE_RATE / N_FFT as f64)
        .collect();
    let mut filters = vec![0f32; n_mels * BINS];
    for i in 0..n_mels {
        let (lower, centre, upper) = (mel_f[i], mel_f[i + 1], mel_f[i + 2]);
        let norm = 2.0 / (upper - lower);
        for (k, &f) in fft_f.iter().enumerate() {
            let rising = (f - lower) / (centre - lower);
            let falling = (upper - f) / (upper - centre);
            filters[i * BINS + k] = (rising.min(falling).max(0.0) * norm) as f32;
        }
    }
    filters
}

/// The periodic Hann window of `len` samples (as `torch.hann_window` and librosa use).
pub(crate) fn hann_window(len: usize) -> Vec<f32> {
    (0..len)
        .map(|n| (0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / len as f64).cos()) as f32)
        .collect()
}

impl MelFrontEnd {
    /// Builds the window, filterbank and FFT plan.
    pub fn new() -> MelFrontEnd {
        MelFrontEnd {
            power: PowerMel::new(N_MELS),
        }
    }

    /// Frames of 40 power mel values, `1 + len / 160` of them (frame t centred on sample 160 t).
    pub fn power_mel(&self, wav: &[f32]) -> Vec<[f32; N_MELS]> {
        let frames = 1 + wav.len() / HOP;
        let pad = N_FFT / 2;
        let mut out = Vec::with_capacity(frames);
        // The padded signal is 200 zeros + wav + 200 zeros.
        let padded = |at: usize| {
            at.checked_sub(pad)
                .and_then(|i| wav.get(i))
                .copied()
                .unwrap_or(0.0)
        };
        self.power.for_each_frame(frames, padded, |_, mel| {
            let mut frame = [0f32; N_MELS];
            frame.copy_from_slice(mel);
            out.push(frame);
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::reference_f32;

    #[test]
    fn filterbank_matches_librosa() {
        let expected = reference_f32("resemblyzer_ge2e/mel_filters.f32");
        let got = slaney_filterbank(N_MELS);
        assert_eq!(got.len(), expected.len());
        let worst = got
            .iter()
            .zip(&expected)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-7, "max diff {worst}");
    }

    /// Resemblyzer's mel of its preprocessed reference signal (zero-padded to 74880 samples).
    #[test]
    fn mel_matches_librosa() {
        let mut wav = reference_f32("resemblyzer_ge2e/preprocessed.f32");
        wav.resize(74_880, 0.0);
        let expected = reference_f32("resemblyzer_ge2e/mel.f32");
        let got = MelFrontEnd::new().power_mel(&wav);
        assert_eq!(got.len() * N_MELS, expected.len());
        let largest = expected.iter().copied().fold(0.0f32, f32::max);
        let worst = got
            .iter()
            .flatten()
            .zip(&expected)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= largest * 1e-5, "max diff {worst} of {largest}");
    }
}
