//! Whisper's front end: [`LogMel`] computes the 80-band log-mel spectrogram exactly as
//! `whisper/audio.py` `log_mel_spectrogram(audio, padding=480000)` does (16 kHz, 400-sample
//! periodic Hann window, hop 160, reflect padding of 200 samples at the start, |rfft|², the Slaney
//! mel filterbank librosa makes for `n_mels=80`, log10 clamped at 1e-10 and at 8 below the
//! maximum, then (x + 4) / 4). Whisper pads 30 s of zeros after the audio before the STFT, so the
//! frames past the end of the speech see zeros, not a reflection.

use std::sync::Arc;

use realfft::{RealFftPlanner, RealToComplex};

/// Samples per frame.
pub const N_FFT: usize = 400;
/// Samples between frames (10 ms).
pub const HOP: usize = 160;
/// Mel bands.
pub const N_MELS: usize = 80;
/// Frames in Whisper's 30 s window.
pub const MAX_FRAMES: usize = 3000;
/// Sample rate the model expects.
pub const SAMPLE_RATE: usize = 16_000;
const BINS: usize = N_FFT / 2 + 1;

/// A reusable front end (window, filterbank and FFT plan).
pub struct LogMel {
    window: Vec<f32>,
    /// [N_MELS][BINS], row-major.
    filters: Vec<f32>,
    fft: Arc<dyn RealToComplex<f32>>,
}

impl std::fmt::Debug for LogMel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogMel").finish_non_exhaustive()
    }
}

impl Default for LogMel {
    fn default() -> Self {
        LogMel::new()
    }
}

/// Hz to mel on the Slaney scale (linear below 1 kHz, logarithmic above).
fn hz_to_mel(hz: f64) -> f64 {
    let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
    let log_step = 6.4f64.ln() / 27.0;
    if hz >= min_log_hz {
        min_log_hz / f_sp + (hz / min_log_hz).ln() / log_step
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

/// librosa's `filters.mel(sr=16000, n_fft=400, n_mels=80)` (Slaney scale and area norm), the
/// matrix whisper ships as `mel_filters.npz`, computed in f64 and stored as f32.
fn mel_filterbank() -> Vec<f32> {
    let max_mel = hz_to_mel(SAMPLE_RATE as f64 / 2.0);
    let mel_f: Vec<f64> = (0..N_MELS + 2)
        .map(|i| mel_to_hz(max_mel * i as f64 / (N_MELS + 1) as f64))
        .collect();
    let mut filters = vec![0f32; N_MELS * BINS];
    for i in 0..N_MELS {
        let (lower, centre, upper) = (mel_f[i], mel_f[i + 1], mel_f[i + 2]);
        let norm = 2.0 / (upper - lower);
        for k in 0..BINS {
            let f = k as f64 * SAMPLE_RATE as f64 / N_FFT as f64;
            let rising = (f - lower) / (centre - lower);
            let falling = (upper - f) / (upper - centre);
            filters[i * BINS + k] = (rising.min(falling).max(0.0) * norm) as f32;
        }
    }
    filters
}

impl LogMel {
    /// Builds the window, filterbank and FFT plan.
    pub fn new() -> LogMel {
        let window = (0..N_FFT)
            .map(|n| {
                (0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / N_FFT as f64).cos()) as f32
            })
            .collect();
        LogMel {
            window,
            filters: mel_filterbank(),
            fft: RealFftPlanner::<f32>::new().plan_fft_forward(N_FFT),
        }
    }

    /// The first `frames` frames of Whisper's log-mel of `pcm` (16 kHz), [N_MELS][frames]
    /// row-major, the layout of the encoder's `mel` input. Frame t is centred on sample 160 t.
    pub fn compute(&self, pcm: &[f32], frames: usize) -> Vec<f32> {
        // Every frame that touches the audio takes part in the maximum, as in Whisper (its
        // padded frames are all at the 1e-10 floor, so they never raise it).
        let total = frames.max(pcm.len() / HOP + 2);
        let pad = N_FFT / 2;
        let mut input = self.fft.make_input_vec();
        let mut spectrum = self.fft.make_output_vec();
        let mut scratch = self.fft.make_scratch_vec();
        let mut power = [0f32; BINS];
        let mut log_spec = vec![0f32; N_MELS * total];
        let mut maximum = f32::NEG_INFINITY;
        for t in 0..total {
            // padded = reflect(pcm[1..=200]) + pcm + zeros; frame t is padded[160 t..160 t + 400].
            for (n, slot) in input.iter_mut().enumerate() {
                let at = t * HOP + n;
                let sample = if at < pad {
                    pcm.get(pad - at).copied().unwrap_or(0.0)
                } else {
                    pcm.get(at - pad).copied().unwrap_or(0.0)
                };
                *slot = sample * self.window[n];
            }
            // The lengths are the plan's own, so processing cannot fail.
            let ok = self
                .fft
                .process_with_scratch(&mut input, &mut spectrum, &mut scratch)
                .is_ok();
            for (p, c) in power.iter_mut().zip(&spectrum) {
                *p = if ok { c.re * c.re + c.im * c.im } else { 0.0 };
            }
            for m in 0..N_MELS {
                let row = &self.filters[m * BINS..(m + 1) * BINS];
                let value: f32 = row.iter().zip(&power).map(|(w, p)| w * p).sum();
                let value = value.max(1e-10).log10();
                maximum = maximum.max(value);
                log_spec[m * total + t] = value;
            }
        }
        let floor = maximum - 8.0;
        let mut out = vec![0f32; N_MELS * frames];
        for m in 0..N_MELS {
            for t in 0..frames {
                out[m * frames + t] = (log_spec[m * total + t].max(floor) + 4.0) / 4.0;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::reference_f32;

    /// The numpy re-implementation of whisper's `log_mel_spectrogram` (float64) on the espeak-ng
    /// reference utterance (models/convert_whisper.py).
    #[test]
    fn log_mel_matches_whisper() {
        let pcm = reference_f32("whisper_tiny_en/pcm.f32");
        let expected = reference_f32("whisper_tiny_en/mel.f32");
        let frames = expected.len() / N_MELS;
        let got = LogMel::new().compute(&pcm, frames);
        assert_eq!(got.len(), expected.len());
        let worst = got
            .iter()
            .zip(&expected)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= 1e-4, "max diff {worst}");
    }

    #[test]
    fn silence_is_flat() {
        let got = LogMel::new().compute(&[0.0; 1600], 20);
        assert!(got.iter().all(|&v| (v - (-1.5)).abs() < 1e-6));
    }
}
