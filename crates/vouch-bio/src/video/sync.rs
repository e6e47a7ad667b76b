//! The audio-visual sync model behind Active Speaker Detection ([`super::speaker`]): a fixed
//! linear map ([`SyncMap`]), learned once from real recordings (`models/train_sync.py`), from what
//! the sound says to how the lips should be moving. Its input is, at each 40 ms grid step and the
//! steps around it ([`SyncMap::context`]), the spectral envelope ([`Signals::speech_mel`]) and the
//! viseme probabilities of the phoneme recogniser ([`Signals::visemes`]), both normalised within
//! the clip; its output is the eighteen lip and jaw distances ([`Signals::lips`]), standardised
//! within the clip. [`Aligned`] then measures how well the predicted lips follow the seen ones at
//! any circular lag: one correlation over all eighteen distances.
//!
//! A map learned across many clips knows how sounds move lips, where a fit to the clip itself (the
//! canonical correlation this replaced) finds some agreement between any two signals of a few
//! seconds. The weights are compiled in (`models/sync_map.json`, 3.7 k numbers); the sha256 of the
//! data they were trained on is recorded in that file.

use std::sync::LazyLock;

use serde::Deserialize;

use super::{Signals, LIP_DISTANCES, MEL_BANDS};
use crate::speech::phonemes::VISEMES;

/// Sound features per grid step: the mel bands, then the visemes.
pub const SOUND_FEATURES: usize = MEL_BANDS + VISEMES;

/// Smallest standard deviation of a lip distance that counts as moving.
const STILL: f64 = 1e-9;

/// The weights file as `models/train_sync.py` writes it.
#[derive(Deserialize)]
struct MapFile {
    format: String,
    mel_bands: usize,
    visemes: usize,
    lips: usize,
    context: [i64; 2],
    mel_floor: f64,
    viseme_floor: f64,
    smoothing: usize,
    /// `(context steps * SOUND_FEATURES + 1)` rows of `LIP_DISTANCES`; the last row is the bias.
    weights: Vec<Vec<f64>>,
}

/// The shipped map's weights, compiled in.
const SHIPPED_JSON: &str = include_str!("../../../../models/sync_map.json");

static SHIPPED: LazyLock<Result<SyncMap, String>> =
    LazyLock::new(|| SyncMap::from_json(SHIPPED_JSON));

/// A learned map from sound features to lip distances.
#[derive(Debug, Clone)]
pub struct SyncMap {
    /// Grid steps of sound around each lip step, first..=last (the mouth moves before its sound,
    /// so the context reaches further after than before).
    context: std::ops::RangeInclusive<i64>,
    /// Added to a mel band's standard deviation before dividing by it.
    mel_floor: f64,
    /// Added to a viseme probability before its logarithm.
    viseme_floor: f64,
    /// Width of the moving average over the viseme probabilities, steps.
    smoothing: usize,
    /// Rows as in [`MapFile::weights`].
    weights: Vec<[f64; LIP_DISTANCES]>,
}

impl SyncMap {
    /// The map shipped with the library (`models/sync_map.json`).
    pub fn shipped() -> Result<&'static SyncMap, String> {
        SHIPPED.as_ref().map_err(Clone::clone)
    }

    /// Reads a weights file.
    pub fn from_json(text: &str) -> Result<SyncMap, String> {
        let file: MapFile = serde_json::from_str(text).map_err(|e| format!("sync map: {e}"))?;
        if file.format != "vouch-sync-map-1"
            || file.mel_bands != MEL_BANDS
            || file.visemes != VISEMES
            || file.lips != LIP_DISTANCES
            || file.context[0] > file.context[1]
            || file.smoothing == 0
        {
            return Err("sync map: features or format do not match this engine".into());
        }
        let steps = (file.context[1] - file.context[0] + 1) as usize;
        if file.weights.len() != steps * SOUND_FEATURES + 1 {
            return Err("sync map: wrong number of weight rows".into());
        }
        let weights = file
            .weights
            .iter()
            .map(|row| {
                <[f64; LIP_DISTANCES]>::try_from(row.as_slice())
                    .map_err(|_| "sync map: wrong row width".to_owned())
            })
            .collect::<Result<_, _>>()?;
        Ok(SyncMap {
            context: file.context[0]..=file.context[1],
            mel_floor: file.mel_floor,
            viseme_floor: file.viseme_floor,
            smoothing: file.smoothing,
            weights,
        })
    }

    /// Grid steps of sound the map reads around each step.
    pub fn context(&self) -> std::ops::RangeInclusive<i64> {
        self.context.clone()
    }

    /// The clip-normalised sound features: each mel band less its mean over the clip, over its
    /// standard deviation plus `mel_floor`; each viseme probability smoothed over `smoothing`
    /// steps (zero beyond the clip), its logarithm (plus `viseme_floor`) less its mean.
    pub fn sound_features(
        &self,
        mel: &[[f32; MEL_BANDS]],
        visemes: &[[f32; VISEMES]],
    ) -> Vec<[f64; SOUND_FEATURES]> {
        let n = mel.len().min(visemes.len());
        let mut features = vec![[0f64; SOUND_FEATURES]; n];
        if n == 0 {
            return features;
        }
        for band in 0..MEL_BANDS {
            let values: Vec<f64> = mel[..n].iter().map(|m| f64::from(m[band])).collect();
            let mean = values.iter().sum::<f64>() / n as f64;
            let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            for (row, value) in features.iter_mut().zip(&values) {
                row[band] = (value - mean) / (sd + self.mel_floor);
            }
        }
        let half = (self.smoothing / 2) as i64;
        for group in 0..VISEMES {
            let logs: Vec<f64> = (0..n as i64)
                .map(|t| {
                    let sum: f64 = (t - half..t - half + self.smoothing as i64)
                        .filter(|&u| u >= 0 && u < n as i64)
                        .map(|u| f64::from(visemes[u as usize][group]))
                        .sum();
                    (sum / self.smoothing as f64 + self.viseme_floor).ln()
                })
                .collect();
            let mean = logs.iter().sum::<f64>() / n as f64;
            for (row, value) in features.iter_mut().zip(&logs) {
                row[MEL_BANDS + group] = value - mean;
            }
        }
        features
    }

    /// The lip distances the sound predicts at every step (standardised units, before centring).
    pub fn predict(
        &self,
        mel: &[[f32; MEL_BANDS]],
        visemes: &[[f32; VISEMES]],
    ) -> Vec<[f64; LIP_DISTANCES]> {
        let features = self.sound_features(mel, visemes);
        let n = features.len() as i64;
        let bias = self.weights[self.weights.len() - 1];
        (0..n)
            .map(|t| {
                let mut out = bias;
                for (block, offset) in self.context.clone().enumerate() {
                    let row = &features[(t + offset).clamp(0, n - 1) as usize];
                    for (k, value) in row.iter().enumerate() {
                        let weights = &self.weights[block * SOUND_FEATURES + k];
                        for (o, w) in out.iter_mut().zip(weights) {
                            *o += value * w;
                        }
                    }
                }
                out
            })
            .collect()
    }
}

/// Seen and predicted lips, centred, ready for correlations at any circular lag.
#[derive(Debug, Clone)]
pub struct Aligned {
    lips: Vec<[f64; LIP_DISTANCES]>,
    predicted: Vec<[f64; LIP_DISTANCES]>,
    /// Product of the two series' norms.
    scale: f64,
}

impl Aligned {
    /// The clip's lips, each distance standardised within the clip, against the map's prediction
    /// from the clip's sound. `None` when the two lengths differ, the clip has under three steps,
    /// or either series never changes (a still mouth, a silent track).
    pub fn new(map: &SyncMap, signals: &Signals) -> Option<Aligned> {
        let lips = &signals.lips;
        let n = lips.len();
        if n < 3 || signals.speech_mel.len() != n || signals.visemes.len() != n {
            return None;
        }
        let mut seen = vec![[0f64; LIP_DISTANCES]; n];
        for k in 0..LIP_DISTANCES {
            let values: Vec<f64> = lips.iter().map(|l| f64::from(l[k])).collect();
            let mean = values.iter().sum::<f64>() / n as f64;
            let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            let sd = if sd > STILL { sd } else { 1.0 };
            for (row, value) in seen.iter_mut().zip(&values) {
                row[k] = (value - mean) / sd;
            }
        }
        let mut predicted = map.predict(&signals.speech_mel, &signals.visemes);
        centre(&mut predicted);
        let norm =
            |rows: &[[f64; LIP_DISTANCES]]| rows.iter().flatten().map(|v| v * v).sum::<f64>();
        let scale = (norm(&seen) * norm(&predicted)).sqrt();
        (scale > STILL).then_some(Aligned {
            lips: seen,
            predicted,
            scale,
        })
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.lips.len()
    }

    /// Whether there are no steps (never true for a built value).
    pub fn is_empty(&self) -> bool {
        self.lips.is_empty()
    }

    /// Correlation of `lips[t]` with `predicted[(t + lag) mod len]` over all distances, -1..1.
    pub fn at_lag(&self, lag: i64) -> f64 {
        let n = self.lips.len();
        let shift = lag.rem_euclid(n as i64) as usize;
        let sum: f64 = self
            .lips
            .iter()
            .enumerate()
            .map(|(t, seen)| {
                let predicted = &self.predicted[(t + shift) % n];
                seen.iter().zip(predicted).map(|(a, b)| a * b).sum::<f64>()
            })
            .sum();
        sum / self.scale
    }
}

/// Subtracts each column's mean.
fn centre(rows: &mut [[f64; LIP_DISTANCES]]) {
    let n = rows.len().max(1) as f64;
    for k in 0..LIP_DISTANCES {
        let mean = rows.iter().map(|r| r[k]).sum::<f64>() / n;
        for row in rows.iter_mut() {
            row[k] -= mean;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine's features and prediction against the trainer's (`models/train_sync.py` wrote
    /// the reference from its first GRID clip).
    #[test]
    fn the_prediction_matches_the_trainer() {
        let mel = crate::infer::reference_f32("sync_map/mel.f32");
        let visemes = crate::infer::reference_f32("sync_map/visemes.f32");
        let expected = crate::infer::reference_f32("sync_map/predicted.f32");
        let mel: Vec<[f32; MEL_BANDS]> = mel
            .chunks_exact(MEL_BANDS)
            .map(|c| c.try_into().unwrap())
            .collect();
        let visemes: Vec<[f32; VISEMES]> = visemes
            .chunks_exact(VISEMES)
            .map(|c| c.try_into().unwrap())
            .collect();
        let map = SyncMap::shipped().expect("map");
        let predicted: Vec<f32> = map
            .predict(&mel, &visemes)
            .iter()
            .flatten()
            .map(|&v| v as f32)
            .collect();
        assert_eq!(predicted.len(), expected.len());
        let worst = crate::infer::max_abs_diff(&predicted, &expected);
        assert!(worst < 1e-4, "largest difference {worst}");
    }

    #[test]
    fn the_shipped_map_loads() {
        let map = SyncMap::shipped().expect("models/sync_map.json");
        assert!(map.context().contains(&0));
    }
}
