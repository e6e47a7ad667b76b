//! Voice templates (192-d CAM++ speaker embeddings), their byte form and comparison: cosine
//! distance, a calibrated probability of the same speaker, and the default decision threshold.
//!
//! `CALIBRATION` is fitted by `vouch eval voices --calibrate` (`scripts/calibrate-voices`) on the
//! development recordings; see `docs/voice.md` for how and on what.

use super::EMBEDDING_SIZE;
pub use crate::calibration::{compare_distance, Calibration, Match};
use crate::embedding;

/// Identifies the model a template came from; stored with sealed templates, so templates of
/// another model are never compared with these.
pub const MODEL_ID: &str = "campplus-sv-zh-en-3s+silero-vad6";

/// Byte form version (1 was GE2E's 256 values; its bytes are refused as not a template).
pub const FORMAT_VERSION: u8 = 2;

/// Version of the weights and preprocessing (speech segments, volume, calibration inputs) behind
/// `MODEL_ID`.
pub const MODEL_VERSION: u32 = 1;

/// Bytes of [`VoiceTemplate::to_bytes`].
pub const TEMPLATE_BYTES: usize = 1 + EMBEDDING_SIZE * 4;

/// The shipped calibration, from `scripts/calibrate-voices` (2026-11-25, CAM++ with Silero's
/// speech segments): logistic fit over 510 genuine and 4,875 impostor pairs of the LibriSpeech and
/// FSDD-phrase development recordings (classes weighted equally). The threshold is the fitted FMR
/// 1e-3 distance (0.4959: 4 of 4,875 impostors closer) rounded down to two decimals; the FNMR there
/// is 1.0 % (5 of 510). So few impostors pin the 1e-3 point only roughly: re-fit when more
/// development speakers are available.
pub const CALIBRATION: Calibration = Calibration {
    midpoint: 0.5344,
    slope: 41.86,
    threshold: 0.49,
};

/// A speaker embedding (L2-normalised).
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceTemplate {
    values: [f32; EMBEDDING_SIZE],
}

impl VoiceTemplate {
    /// Wraps embedding values.
    pub fn new(values: [f32; EMBEDDING_SIZE]) -> VoiceTemplate {
        VoiceTemplate { values }
    }

    /// The values.
    pub fn values(&self) -> &[f32; EMBEDDING_SIZE] {
        &self.values
    }

    /// Byte form: version byte, then 192 little-endian f32.
    pub fn to_bytes(&self) -> Vec<u8> {
        embedding::to_bytes(FORMAT_VERSION, &self.values)
    }

    /// Parses the byte form; `None` if it is not one (wrong length, version or non-finite values).
    pub fn from_bytes(bytes: &[u8]) -> Option<VoiceTemplate> {
        embedding::from_bytes(FORMAT_VERSION, bytes).map(|values| VoiceTemplate { values })
    }

    /// Cosine distance `1 - cos(a, b)`, 0 (same direction) to 2 (opposite). A zero template is at
    /// distance 1 from everything. Accumulated in f64, so any finite values (a host's template may
    /// hold anything up to f32::MAX) give a distance in 0..2, never NaN.
    pub fn distance(&self, other: &VoiceTemplate) -> f32 {
        // Independent accumulators let the compiler vectorise the loop.
        let (mut dot, mut na, mut nb) = ([0f64; 4], [0f64; 4], [0f64; 4]);
        for (a, b) in self
            .values
            .chunks_exact(4)
            .zip(other.values.chunks_exact(4))
        {
            for k in 0..4 {
                let (a, b) = (f64::from(a[k]), f64::from(b[k]));
                dot[k] += a * b;
                na[k] += a * a;
                nb[k] += b * b;
            }
        }
        let sum = |v: [f64; 4]| v[0] + v[1] + v[2] + v[3];
        let norms = sum(na).sqrt() * sum(nb).sqrt();
        if !(norms > 0.0 && norms.is_finite()) {
            return 1.0;
        }
        (1.0 - sum(dot) / norms).clamp(0.0, 2.0) as f32
    }

    /// Compares with the shipped calibration.
    pub fn compare(&self, other: &VoiceTemplate) -> Match {
        compare_distance(self.distance(other), &CALIBRATION)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(seed: u32) -> VoiceTemplate {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        let mut values = std::array::from_fn(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state % 1000) as f32 / 1000.0
        });
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        values.iter_mut().for_each(|v| *v /= norm);
        VoiceTemplate::new(values)
    }

    #[test]
    fn bytes_round_trip_and_reject_garbage() {
        let t = template(3);
        let bytes = t.to_bytes();
        assert_eq!(bytes.len(), TEMPLATE_BYTES);
        assert_eq!(VoiceTemplate::from_bytes(&bytes), Some(t));
        assert_eq!(
            VoiceTemplate::from_bytes(&bytes[..TEMPLATE_BYTES - 1]),
            None
        );
        let mut wrong = bytes.clone();
        wrong[0] = 3;
        assert_eq!(VoiceTemplate::from_bytes(&wrong), None);
        let mut inf = bytes;
        inf[5..9].copy_from_slice(&f32::INFINITY.to_le_bytes());
        assert_eq!(VoiceTemplate::from_bytes(&inf), None);
        // A face template is not a voice template, nor is a GE2E one (format 1, 256 values).
        assert_eq!(VoiceTemplate::from_bytes(&[1u8; 513]), None);
        let mut ge2e = vec![0u8; 1025];
        ge2e[0] = 1;
        assert_eq!(VoiceTemplate::from_bytes(&ge2e), None);
    }

    #[test]
    fn cosine_distance() {
        let (a, b) = (template(1), template(2));
        assert!(a.distance(&a) < 1e-6);
        let naive = 1.0
            - a.values()
                .iter()
                .zip(b.values())
                .map(|(x, y)| x * y)
                .sum::<f32>();
        assert!((a.distance(&b) - naive).abs() < 1e-5);
        let opposite = VoiceTemplate::new(a.values().map(|v| -v));
        assert!((a.distance(&opposite) - 2.0).abs() < 1e-5);
        let zero = VoiceTemplate::new([0.0; EMBEDDING_SIZE]);
        assert_eq!(a.distance(&zero), 1.0);
        // Extreme finite values (a host's bytes) stay in range: no overflow to NaN.
        for extreme in [f32::MAX, -f32::MAX, f32::MIN_POSITIVE, 1e-40] {
            let big = VoiceTemplate::new([extreme; EMBEDDING_SIZE]);
            for other in [&a, &big, &zero] {
                let d = big.distance(other);
                assert!((0.0..=2.0).contains(&d), "{extreme}: {d}");
                assert!(!big.compare(other).probability.is_nan(), "{extreme}");
            }
        }
        assert!(
            VoiceTemplate::new([f32::MAX; EMBEDDING_SIZE])
                .distance(&VoiceTemplate::new([f32::MAX; EMBEDDING_SIZE]))
                < 1e-6
        );
        let same = a.compare(&a);
        assert!(same.is_match && same.probability > 0.99, "{same:?}");
        let other = a.compare(&opposite);
        assert!(!other.is_match && other.probability < 0.01, "{other:?}");
    }
}
