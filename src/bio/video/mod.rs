//! What a talking-head video says beyond identity: whether the visible mouth moves with the speech
//! ([`speaker`], Active Speaker Detection), whether the face is live ([`liveness`]), and whether
//! the expected phrase was spoken ([`phrase`]). [`Signals`] puts the face track and the audio on
//! one time grid so the checks compare like with like.

pub mod liveness;
pub mod phrase;
pub mod speaker;

use super::face::FaceTrack;
use super::voice::vad::Segment;
use crate::media::{Pcm, PCM_SAMPLE_RATE};

/// Step of the common time grid, ms (25 per second: enough for syllables at 4-5 per second).
pub const GRID_MS: i64 = 40;

/// The face and audio signals of a clip on a common grid of [`GRID_MS`] steps, from the first to
/// the last sampled frame. Face signals are interpolated linearly between frames with a face.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Signals {
    /// Time of each grid point, ms.
    pub times_ms: Vec<i64>,
    /// Mouth opening (inner-lip gap over mouth width).
    pub mouth: Vec<f32>,
    /// Eye openness (lid gap over eye width).
    pub eyes: Vec<f32>,
    /// Head pose (yaw, pitch) in degrees.
    pub pose: Vec<(f32, f32)>,
    /// Face position: nose tip over the interocular distance, relative to the first frame.
    pub position: Vec<(f32, f32)>,
    /// Level of the first-formant band ([`MOUTH_BAND_HZ`]) in the 40 ms window centred on each
    /// grid point, dB (-90 for silence or no audio): the part of the sound that follows how far
    /// the mouth is open.
    pub band_db: Vec<f32>,
    /// Share of sampled frames with a face.
    pub face_coverage: f32,
    /// Seconds of detected speech.
    pub speech_seconds: f32,
}

/// Floor of [`Signals::band_db`].
const SILENCE_FLOOR_DB: f32 = -90.0;

/// The first-formant band, Hz: F1 rises as the jaw and lips open.
pub const MOUTH_BAND_HZ: (f32, f32) = (300.0, 1000.0);

/// Samples in one grid window (40 ms at 16 kHz).
const WINDOW: usize = (GRID_MS as usize) * (PCM_SAMPLE_RATE as usize) / 1000;

impl Signals {
    /// Builds the signals from a face track over frames at `timestamps_ms` and the clip's audio
    /// with its speech segments (samples of `pcm`).
    pub fn new(
        track: &FaceTrack,
        timestamps_ms: &[i64],
        pcm: Option<&Pcm>,
        segments: &[Segment],
    ) -> Signals {
        let (Some(&first), Some(&last)) = (timestamps_ms.first(), timestamps_ms.last()) else {
            return Signals::default();
        };
        let times_ms: Vec<i64> = (0..=((last - first) / GRID_MS))
            .map(|step| first + step * GRID_MS)
            .collect();
        let with_face: Vec<(i64, [f32; 6])> = timestamps_ms
            .iter()
            .zip(&track.faces)
            .filter_map(|(&time, face)| {
                let face = face.as_ref()?;
                let landmarks = &face.landmarks;
                let (yaw, pitch, _) = landmarks.pose_degrees();
                let scale = landmarks.interocular().max(1.0);
                let nose = landmarks.points[super::face::landmarks::index::NOSE_TIP];
                Some((
                    time,
                    [
                        landmarks.mouth_open(),
                        landmarks.eyes_open(),
                        yaw,
                        pitch,
                        nose[0] / scale,
                        nose[1] / scale,
                    ],
                ))
            })
            .collect();
        let face_at: Vec<[f32; 6]> = times_ms
            .iter()
            .map(|&time| interpolate(&with_face, time))
            .collect();
        let origin = face_at.first().copied().unwrap_or_default();
        let band_db = match pcm {
            Some(pcm) => {
                let mut meter = BandMeter::new();
                times_ms
                    .iter()
                    .map(|&time| meter.measure(pcm, time))
                    .collect()
            }
            None => vec![SILENCE_FLOOR_DB; times_ms.len()],
        };
        let speech_samples: usize = segments.iter().map(|s| s.end - s.start).sum();
        Signals {
            mouth: face_at.iter().map(|v| v[0]).collect(),
            eyes: face_at.iter().map(|v| v[1]).collect(),
            pose: face_at.iter().map(|v| (v[2], v[3])).collect(),
            position: face_at
                .iter()
                .map(|v| (v[4] - origin[4], v[5] - origin[5]))
                .collect(),
            band_db,
            face_coverage: if track.faces.is_empty() {
                0.0
            } else {
                track.frames_with_face() as f32 / track.faces.len() as f32
            },
            speech_seconds: if pcm.is_some() {
                speech_samples as f32 / PCM_SAMPLE_RATE as f32
            } else {
                0.0
            },
            times_ms,
        }
    }
}

/// Linear interpolation of `points` (sorted by time) at `time`; the ends are held.
fn interpolate(points: &[(i64, [f32; 6])], time: i64) -> [f32; 6] {
    let Some(after) = points.iter().position(|(t, _)| *t >= time) else {
        return points.last().map(|p| p.1).unwrap_or_default();
    };
    if after == 0 || points[after].0 == time {
        return points[after].1;
    }
    let (t0, v0) = points[after - 1];
    let (t1, v1) = points[after];
    let w = (time - t0) as f32 / (t1 - t0) as f32;
    std::array::from_fn(|i| v0[i] + (v1[i] - v0[i]) * w)
}

/// Measures the first-formant band level of the 40 ms of audio centred on a time.
struct BandMeter {
    fft: std::sync::Arc<dyn realfft::RealToComplex<f32>>,
    window: Vec<f32>,
    input: Vec<f32>,
    output: Vec<realfft::num_complex::Complex<f32>>,
    bins: std::ops::Range<usize>,
}

impl BandMeter {
    fn new() -> BandMeter {
        let fft = realfft::RealFftPlanner::<f32>::new().plan_fft_forward(WINDOW);
        let window = (0..WINDOW)
            .map(|i| 0.5 - 0.5 * (2.0 * std::f32::consts::PI * i as f32 / WINDOW as f32).cos())
            .collect();
        let hz_per_bin = PCM_SAMPLE_RATE as f32 / WINDOW as f32;
        let bins = (MOUTH_BAND_HZ.0 / hz_per_bin).ceil() as usize
            ..(MOUTH_BAND_HZ.1 / hz_per_bin).floor() as usize + 1;
        BandMeter {
            input: fft.make_input_vec(),
            output: fft.make_output_vec(),
            fft,
            window,
            bins,
        }
    }

    /// The band level at `time`, dB.
    fn measure(&mut self, pcm: &Pcm, time: i64) -> f32 {
        let rate = i64::from(PCM_SAMPLE_RATE);
        let centre = (time - pcm.start_ms) * rate / 1000;
        let start = centre - WINDOW as i64 / 2;
        for (i, value) in self.input.iter_mut().enumerate() {
            let at = start + i as i64;
            let sample = if at >= 0 && (at as usize) < pcm.samples.len() {
                pcm.samples[at as usize]
            } else {
                0.0
            };
            *value = sample * self.window[i];
        }
        if self.fft.process(&mut self.input, &mut self.output).is_err() {
            return SILENCE_FLOOR_DB;
        }
        let power = self.output[self.bins.clone()]
            .iter()
            .map(|c| c.norm_sqr())
            .sum::<f32>()
            / (WINDOW * WINDOW) as f32;
        (10.0 * power.max(1e-12).log10()).max(SILENCE_FLOOR_DB)
    }
}

/// Pearson correlation of two equally long series (0 when either is constant).
pub(crate) fn pearson(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    if n < 2 {
        return 0.0;
    }
    let mean = |x: &[f32]| x[..n].iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
    let (ma, mb) = (mean(a), mean(b));
    let (mut sab, mut saa, mut sbb) = (0f64, 0f64, 0f64);
    for i in 0..n {
        let (da, db) = (f64::from(a[i]) - ma, f64::from(b[i]) - mb);
        sab += da * db;
        saa += da * da;
        sbb += db * db;
    }
    if saa <= 1e-12 || sbb <= 1e-12 {
        0.0
    } else {
        (sab / (saa * sbb).sqrt()) as f32
    }
}

/// Standard deviation.
pub(crate) fn std_dev(values: &[f32]) -> f32 {
    if values.len() < 2 {
        return 0.0;
    }
    let mean = values.iter().sum::<f32>() / values.len() as f32;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / values.len() as f32).sqrt()
}

/// A logistic map of `value` that is 0.5 at `midpoint`.
pub(crate) fn logistic(value: f32, midpoint: f32, slope: f32) -> f32 {
    1.0 / (1.0 + (-(value - midpoint) * slope).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correlation_and_spread() {
        let a = [0.0, 1.0, 2.0, 3.0];
        assert!((pearson(&a, &[1.0, 3.0, 5.0, 7.0]) - 1.0).abs() < 1e-6);
        assert!((pearson(&a, &[3.0, 2.0, 1.0, 0.0]) + 1.0).abs() < 1e-6);
        assert_eq!(pearson(&a, &[1.0; 4]), 0.0);
        assert!((std_dev(&[1.0, 3.0]) - 1.0).abs() < 1e-6);
        assert!((logistic(0.3, 0.3, 10.0) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn interpolation_holds_the_ends() {
        let points = [(0, [0.0; 6]), (100, [1.0; 6])];
        assert_eq!(interpolate(&points, -10)[0], 0.0);
        assert!((interpolate(&points, 40)[0] - 0.4).abs() < 1e-6);
        assert_eq!(interpolate(&points, 200)[0], 1.0);
        assert_eq!(interpolate(&[], 5), [0.0; 6]);
    }
}
