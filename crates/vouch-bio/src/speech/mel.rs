//! Whisper's front end: [`LogMel`] computes the 80-band log-mel spectrogram exactly as
//! `whisper/audio.py` `log_mel_spectrogram(audio, padding=480000)` does (16 kHz, 400-sample
//! periodic Hann window, hop 160, reflect padding of 200 samples at the start, |rfft|², the Slaney
//! mel filterbank librosa makes for `n_mels=80`, log10 clamped at 1e-10 and at 8 below the
//! maximum, then (x + 4) / 4). Whisper pads 30 s of zeros after the audio before the STFT, so the
//! frames past the end of the speech see zeros, not a reflection.

use crate::voice::mel::PowerMel;
pub use crate::voice::mel::{HOP, N_FFT};

/// Mel bands.
pub const N_MELS: usize = 80;
/// Frames in Whisper's 30 s window.
pub const MAX_FRAMES: usize = 3000;
/// Sample rate the model expects.
pub const SAMPLE_RATE: usize = 16_000;

/// A reusable front end (window, filterbank and FFT plan).
pub struct LogMel {
    power: PowerMel,
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

impl LogMel {
    /// Builds the window, filterbank and FFT plan.
    pub fn new() -> LogMel {
        // librosa's `filters.mel(sr=16000, n_fft=400, n_mels=80)`: the matrix Whisper ships as
        // `mel_filters.npz`; the same construction as the speaker encoder's 40 bands.
        LogMel {
            power: PowerMel::new(N_MELS),
        }
    }

    /// The first `frames` frames of Whisper's log-mel of `pcm` (16 kHz), [N_MELS][frames]
    /// row-major, the layout of the encoder's `mel` input. Frame t is centred on sample 160 t.
    pub fn compute(&self, pcm: &[f32], frames: usize) -> Vec<f32> {
        // Every frame that touches the audio takes part in the maximum, as in Whisper (its
        // padded frames are all at the 1e-10 floor, so they never raise it).
        let total = frames.max(pcm.len() / HOP + 2);
        let pad = N_FFT / 2;
        let mut log_spec = vec![0f32; N_MELS * total];
        let mut maximum = f32::NEG_INFINITY;
        // padded = reflect(pcm[1..=200]) + pcm + zeros.
        let padded = |at: usize| {
            if at < pad {
                pcm.get(pad - at).copied().unwrap_or(0.0)
            } else {
                pcm.get(at - pad).copied().unwrap_or(0.0)
            }
        };
        self.power.for_each_frame(total, padded, |t, mel| {
            for (m, &value) in mel.iter().enumerate() {
                let value = value.max(1e-10).log10();
                maximum = maximum.max(value);
                log_spec[m * total + t] = value;
            }
        });
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
