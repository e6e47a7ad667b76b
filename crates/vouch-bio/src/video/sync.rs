//! The audio-visual sync model behind Active Speaker Detection ([`super::speaker`]): fixed
//! linear maps ([`SyncMap`]), learned once from real recordings (`models/train_sync.py`), from what
//! the sound says to how the lips should be moving. Their input is, at each 40 ms grid step and the
//! steps around it ([`SyncMap::context`]), the spectral envelope ([`Signals::speech_mel`]) and the
//! viseme probabilities of the phoneme recogniser ([`Signals::visemes`]), both normalised within
//! the clip; their output is the eighteen lip and jaw distances ([`Signals::lips`]) in one of two
//! views: standardised within the clip (raw), or first less their moving average over one second
//! (high-passed: what changes slower than speech, a head turning or a camera zooming, removed).
//! [`Aligned`] then measures, per view, how well the predicted lips follow the seen ones at any
//! circular lag: one correlation over all eighteen distances.
//!
//! A map learned across many clips knows how sounds move lips, where a fit to the clip itself (the
//! canonical correlation this replaced) finds some agreement between any two signals of a few
//! seconds. The weights are compiled in (`models/sync_map.json`, 7.4 k numbers); the sha256 of the
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
    views: Vec<ViewFile>,
}

/// One view's map in the weights file.
#[derive(Deserialize)]
struct ViewFile {
    /// Width of the moving average taken off the lips, steps (0: only the mean).
    highpass_steps: usize,
    /// `(context steps * SOUND_FEATURES + 1)` rows of `LIP_DISTANCES`; the last row is the bias.
    weights: Vec<Vec<f64>>,
}

/// The views of the lips the maps predict, in the order of the weights file.
pub const VIEWS: usize = 2;

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
    /// One map per view of the lips.
    views: [View; VIEWS],
}

/// The map of one view of the lips.
#[derive(Debug, Clone)]
struct View {
    /// Width of the moving average taken off the seen lips, steps (0: only the mean).
    highpass: usize,
    /// Rows as in [`ViewFile::weights`].
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
        if file.format != "vouch-sync-map-2"
            || file.mel_bands != MEL_BANDS
            || file.visemes != VISEMES
            || file.lips != LIP_DISTANCES
            || file.context[0] > file.context[1]
            || file.smoothing == 0
        {
            return Err("sync map: features or format do not match this engine".into());
        }
        let steps = (file.context[1] - file.context[0] + 1) as usize;
        let views: Vec<View> = file
            .views
            .iter()
            .map(|view| {
                if view.weights.len() != steps * SOUND_FEATURES + 1 {
                    return Err("sync map: wrong number of weight rows".to_owned());
                }
                let weights = view
                    .weights
                    .iter()
                    .map(|row| {
                        <[f64; LIP_DISTANCES]>::try_from(row.as_slice())
                            .map_err(|_| "sync map: wrong row width".to_owned())
                    })
                    .collect::<Result<_, _>>()?;
                Ok(View {
                    highpass: view.highpass_steps,
                    weights,
                })
            })
            .collect::<Result<_, String>>()?;
        let views = <[View; VIEWS]>::try_from(views)
            .map_err(|_| format!("sync map: {VIEWS} views expected"))?;
        Ok(SyncMap {
            context: file.context[0]..=file.context[1],
            mel_floor: file.mel_floor,
            viseme_floor: file.viseme_floor,
            smoothing: file.smoothing,
            views,
        })
    }

    /// Width of each view's moving average taken off the lips, steps (0: only the mean).
    pub fn highpass_steps(&self) -> [usize; VIEWS] {
        self.views.each_ref().map(|view| view.highpass)
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

    /// The lip distances the sound predicts at every step in each view (standardised units,
    /// before centring).
    pub fn predict(
        &self,
        mel: &[[f32; MEL_BANDS]],
        visemes: &[[f32; VISEMES]],
    ) -> [Vec<[f64; LIP_DISTANCES]>; VIEWS] {
        let features = self.sound_features(mel, visemes);
        self.views
            .each_ref()
            .map(|view| self.predict_view(view, &features))
    }

    fn predict_view(
        &self,
        view: &View,
        features: &[[f64; SOUND_FEATURES]],
    ) -> Vec<[f64; LIP_DISTANCES]> {
        let n = features.len() as i64;
        let bias = view.weights[view.weights.len() - 1];
        (0..n)
            .map(|t| {
                let mut out = bias;
                for (block, offset) in self.context.clone().enumerate() {
                    let row = &features[(t + offset).clamp(0, n - 1) as usize];
                    for (k, value) in row.iter().enumerate() {
                        let weights = &view.weights[block * SOUND_FEATURES + k];
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

/// Seen and predicted lips of every view, centred, ready for correlations at any circular lag.
#[derive(Debug, Clone)]
pub struct Aligned {
    views: [AlignedView; VIEWS],
}

/// One view's seen and predicted lips.
#[derive(Debug, Clone)]
struct AlignedView {
    lips: Vec<[f64; LIP_DISTANCES]>,
    predicted: Vec<[f64; LIP_DISTANCES]>,
    /// Product of the two series' norms.
    scale: f64,
}

impl Aligned {
    /// The clip's lips in each view (each distance less its mean or its moving average, then
    /// standardised within the clip: [`seen_lips`]), against the map's prediction from the clip's
    /// sound. `None` when the two lengths differ, the clip has under three steps, or either series
    /// of a view never changes (a still mouth, a silent track).
    pub fn new(map: &SyncMap, signals: &Signals) -> Option<Aligned> {
        let lips = &signals.lips;
        let n = lips.len();
        if n < 3 || signals.speech_mel.len() != n || signals.visemes.len() != n {
            return None;
        }
        let predicted = map.predict(&signals.speech_mel, &signals.visemes);
        let views: Vec<AlignedView> = map
            .highpass_steps()
            .into_iter()
            .zip(predicted)
            .map(|(width, predicted)| AlignedView::new(seen_lips(lips, width), predicted))
            .collect::<Option<_>>()?;
        Some(Aligned {
            views: views.try_into().ok()?,
        })
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.views[0].lips.len()
    }

    /// Per view, the correlation of `lips[t]` with `predicted[(t + lag) mod len]` over all
    /// distances, -1..1.
    pub fn at_lag(&self, lag: i64) -> [f64; VIEWS] {
        self.views.each_ref().map(|view| view.at_lag(lag))
    }
}

impl AlignedView {
    fn new(
        mut seen: Vec<[f64; LIP_DISTANCES]>,
        mut predicted: Vec<[f64; LIP_DISTANCES]>,
    ) -> Option<AlignedView> {
        centre(&mut seen);
        centre(&mut predicted);
        let norm =
            |rows: &[[f64; LIP_DISTANCES]]| rows.iter().flatten().map(|v| v * v).sum::<f64>();
        let scale = (norm(&seen) * norm(&predicted)).sqrt();
        (scale > STILL).then_some(AlignedView {
            lips: seen,
            predicted,
            scale,
        })
    }

    fn at_lag(&self, lag: i64) -> f64 {
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

/// The seen lips of one view: each distance less its centred moving average over `highpass`
/// steps (the ends repeated; 0: less its mean), then over its standard deviation (a distance that
/// never changes is left at 0), as `models/train_sync.py` prepares its targets.
pub fn seen_lips(lips: &[[f32; LIP_DISTANCES]], highpass: usize) -> Vec<[f64; LIP_DISTANCES]> {
    let n = lips.len();
    let mut seen = vec![[0f64; LIP_DISTANCES]; n];
    if n == 0 {
        return seen;
    }
    for k in 0..LIP_DISTANCES {
        let values: Vec<f64> = lips.iter().map(|l| f64::from(l[k])).collect();
        let mut residual: Vec<f64> = if highpass == 0 {
            let mean = values.iter().sum::<f64>() / n as f64;
            values.iter().map(|v| v - mean).collect()
        } else {
            // Padded with the end values: highpass / 2 before, the rest after.
            let before = (highpass / 2) as i64;
            let at = |u: i64| values[u.clamp(0, n as i64 - 1) as usize];
            let mut sum: f64 = (-before..highpass as i64 - before).map(at).sum();
            let mut out = Vec::with_capacity(n);
            for t in 0..n as i64 {
                out.push(values[t as usize] - sum / highpass as f64);
                sum += at(t + highpass as i64 - before) - at(t - before);
            }
            out
        };
        let mean = residual.iter().sum::<f64>() / n as f64;
        let sd = (residual.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        let sd = if sd > STILL { sd } else { 1.0 };
        for v in &mut residual {
            *v /= sd;
        }
        for (row, value) in seen.iter_mut().zip(&residual) {
            row[k] = *value;
        }
    }
    seen
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

    fn rows<const N: usize>(values: &[f32]) -> Vec<[f32; N]> {
        values
            .chunks_exact(N)
            .map(|c| c.try_into().unwrap())
            .collect()
    }

    /// The engine's features and prediction in both views against the trainer's
    /// (`models/train_sync.py` wrote the reference from its first GRID clip).
    #[test]
    fn the_prediction_matches_the_trainer() {
        let mel = rows::<MEL_BANDS>(&crate::infer::reference_f32("sync_map/mel.f32"));
        let visemes = rows::<VISEMES>(&crate::infer::reference_f32("sync_map/visemes.f32"));
        let expected = crate::infer::reference_f32("sync_map/predicted.f32");
        let map = SyncMap::shipped().expect("map");
        let predicted: Vec<f32> = map
            .predict(&mel, &visemes)
            .iter()
            .flatten()
            .flatten()
            .map(|&v| v as f32)
            .collect();
        assert_eq!(predicted.len(), expected.len());
        let worst = crate::infer::max_abs_diff(&predicted, &expected);
        assert!(worst < 1e-4, "largest difference {worst}");
    }

    /// The seen lips of both views (the high-pass included) against the trainer's targets.
    #[test]
    fn the_seen_lips_match_the_trainer() {
        let lips = rows::<LIP_DISTANCES>(&crate::infer::reference_f32("sync_map/lips.f32"));
        let expected = crate::infer::reference_f32("sync_map/seen.f32");
        let map = SyncMap::shipped().expect("map");
        assert_eq!(map.highpass_steps(), [0, 25]);
        let seen: Vec<f32> = map
            .highpass_steps()
            .iter()
            .flat_map(|&width| seen_lips(&lips, width))
            .flatten()
            .map(|v| v as f32)
            .collect();
        assert_eq!(seen.len(), expected.len());
        let worst = crate::infer::max_abs_diff(&seen, &expected);
        assert!(worst < 1e-4, "largest difference {worst}");
    }

    /// A slow drift (a head moving away) is taken off by the high-pass and left by the raw view.
    #[test]
    fn the_high_pass_removes_a_slow_drift() {
        let lips: Vec<[f32; LIP_DISTANCES]> = (0..200)
            .map(|t| [t as f32 * 0.01 + if t % 6 < 3 { 0.1 } else { 0.0 }; LIP_DISTANCES])
            .collect();
        let slow = |seen: &[[f64; LIP_DISTANCES]]| {
            // Correlation of the first distance with the time index.
            let n = seen.len() as f64;
            let mt = (n - 1.0) / 2.0;
            let ms = seen.iter().map(|r| r[0]).sum::<f64>() / n;
            let (mut c, mut vt, mut vs) = (0.0, 0.0, 0.0);
            for (t, r) in seen.iter().enumerate() {
                let (a, b) = (t as f64 - mt, r[0] - ms);
                c += a * b;
                vt += a * a;
                vs += b * b;
            }
            c / (vt * vs).sqrt()
        };
        assert!(slow(&seen_lips(&lips, 0)) > 0.9);
        assert!(slow(&seen_lips(&lips, 25)).abs() < 0.1);
    }

    #[test]
    fn the_shipped_map_loads() {
        let map = SyncMap::shipped().expect("models/sync_map.json");
        assert!(map.context.contains(&0));
    }
}
