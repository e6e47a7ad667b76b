//! What a talking-head video says beyond identity: whether the visible mouth moves with the speech
//! ([`speaker`], Active Speaker Detection), whether the face is live ([`liveness`]), and whether
//! the expected phrase was spoken ([`phrase`]). [`Signals`] puts the face track and the audio on
//! one time grid so the checks compare like with like.

pub mod analysis;
pub mod forgery;
pub mod liveness;
pub mod phrase;
pub mod speaker;
pub mod sync;

use super::face::FaceTrack;
use super::speech::mel::{LogMel, N_MELS};
use super::speech::phonemes::{Visemes, FRAME_MS as VISEME_FRAME_MS, VISEMES};
use super::voice::vad::Segment;
use vouch_media::{Pcm, PCM_SAMPLE_RATE};

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
    /// Lip and jaw distances ([`LIP_PAIRS`]) over the face height (forehead to chin), the mouth's
    /// shape in more detail than [`Signals::mouth`], for Active Speaker Detection.
    pub lips: Vec<[f32; LIP_DISTANCES]>,
    /// Levels of [`SPEECH_BANDS`] mel-spaced bands over [`SPEECH_BAND_HZ`] in the 40 ms window
    /// centred on each grid point, dB (-90 for silence or no audio): the spectral envelope, which
    /// follows the whole vocal tract and not only how far the mouth is open.
    pub speech_bands_db: Vec<[f32; SPEECH_BANDS]>,
    /// Whisper's log-mel ([`grid_log_mel`]) averaged over groups of [`MEL_POOL`] adjacent bins:
    /// [`MEL_BANDS`] bands from 0 to 8 kHz on the grid (0 without audio), the sound side of the
    /// sync model ([`speaker`]).
    pub speech_mel: Vec<[f32; MEL_BANDS]>,
    /// Viseme probabilities ([`crate::speech::phonemes`]) of the 40 ms around each grid point
    /// (the blank alone without audio), the other sound side of the sync model.
    pub visemes: Vec<[f32; VISEMES]>,
    /// Inner over outer eye-corner distance ([`EYE_CORNERS`]): four points nearly on a line, so the
    /// ratio does not change when a flat picture is moved, turned or tilted, and changes little
    /// with a real head's pose. What spread it has is the landmarks' jitter, the floor under which
    /// no mouth motion can be told from noise (liveness).
    pub eye_corners: Vec<f32>,
    /// Median over the frames with a face of the outer eye-corner distance over the mouth width:
    /// scales the spread of [`Signals::eye_corners`] to that of [`Signals::mouth`] for the same
    /// landmark jitter in pixels (0 without a face).
    pub eyes_over_mouth: f32,
    /// Whether each grid point falls in a detected speech segment (all false without audio).
    pub speech: Vec<bool>,
    /// Share of sampled frames with a face.
    pub face_coverage: f32,
    /// Seconds of detected speech.
    pub speech_seconds: f32,
}

/// Floor of [`Signals::band_db`].
const SILENCE_FLOOR_DB: f32 = -90.0;

/// The first-formant band, Hz: F1 rises as the jaw and lips open.
pub const MOUTH_BAND_HZ: (f32, f32) = (300.0, 1000.0);

/// FaceMesh point pairs whose distances make [`Signals::lips`]: seven inner-lip gaps and seven
/// outer-lip heights from corner to corner, the inner and outer mouth widths, and the jaw (nose tip
/// and lip centre to chin). Many distances let the canonical correlation find whichever lip motion
/// this speaker's sound follows.
pub const LIP_PAIRS: [(usize, usize); LIP_DISTANCES] = [
    (82, 87),
    (13, 14),
    (312, 317),
    (81, 178),
    (311, 402),
    (80, 88),
    (310, 318),
    (37, 84),
    (0, 17),
    (267, 314),
    (39, 181),
    (269, 405),
    (40, 91),
    (270, 321),
    (61, 291),
    (78, 308),
    (1, 152),
    (13, 152),
];

/// Number of [`LIP_PAIRS`].
pub const LIP_DISTANCES: usize = 18;

/// FaceMesh mouth corners (as in the mouth opening's width).
const MOUTH_WIDTH: (usize, usize) = (61, 291);

/// FaceMesh points of the face height that scales [`Signals::lips`] (forehead centre, chin).
const FACE_HEIGHT: (usize, usize) = (10, 152);

/// FaceMesh eye corners of [`Signals::eye_corners`]: outer (33, 263), inner (133, 362).
pub const EYE_CORNERS: ((usize, usize), (usize, usize)) = ((33, 263), (133, 362));

/// Number of bands in [`Signals::speech_bands_db`].
pub const SPEECH_BANDS: usize = 12;

/// The speech band split into [`SPEECH_BANDS`] (Hz): voicing to the upper formants.
pub const SPEECH_BAND_HZ: (f32, f32) = (100.0, 4000.0);

/// Face values interpolated onto the grid: mouth, eyes, yaw, pitch, nose x, nose y, the lip
/// distances, then the eye-corner ratio and the outer eye-corner distance over the mouth width.
const FACE_VALUES: usize = 6 + LIP_DISTANCES + 2;

/// Whisper log-mel bins averaged into one band of [`Signals::speech_mel`].
pub const MEL_POOL: usize = 4;

/// Number of bands in [`Signals::speech_mel`].
pub const MEL_BANDS: usize = N_MELS / MEL_POOL;

/// Samples in one grid window (40 ms at 16 kHz).
const WINDOW: usize = (GRID_MS as usize) * (PCM_SAMPLE_RATE as usize) / 1000;

impl Signals {
    /// Builds the signals from a face track over frames at `timestamps_ms` and the clip's audio
    /// with its speech segments (samples of `pcm`).
    /// `visemes` are the viseme probabilities of the same audio (`None`: none computed).
    pub fn new(
        track: &FaceTrack,
        timestamps_ms: &[i64],
        pcm: Option<&Pcm>,
        segments: &[Segment],
        visemes: Option<&Visemes>,
    ) -> Signals {
        let (Some(&first), Some(&last)) = (timestamps_ms.first(), timestamps_ms.last()) else {
            return Signals::default();
        };
        let times_ms: Vec<i64> = (0..=((last - first) / GRID_MS))
            .map(|step| first + step * GRID_MS)
            .collect();
        let with_face: Vec<(i64, [f32; FACE_VALUES])> = timestamps_ms
            .iter()
            .zip(&track.faces)
            .filter_map(|(&time, face)| {
                let face = face.as_ref()?;
                let landmarks = &face.landmarks;
                let (yaw, pitch, _) = landmarks.pose_degrees();
                let scale = landmarks.interocular().max(1.0);
                let points = &landmarks.points;
                let nose = points[super::face::landmarks::index::NOSE_TIP];
                let distance = |(a, b): (usize, usize)| {
                    let (pa, pb) = (points[a], points[b]);
                    ((pa[0] - pb[0]).powi(2) + (pa[1] - pb[1]).powi(2)).sqrt()
                };
                let height = distance(FACE_HEIGHT).max(1.0);
                let mut values = [0f32; FACE_VALUES];
                values[..6].copy_from_slice(&[
                    landmarks.mouth_open(),
                    landmarks.eyes_open(),
                    yaw,
                    pitch,
                    nose[0] / scale,
                    nose[1] / scale,
                ]);
                for (value, &pair) in values[6..].iter_mut().zip(&LIP_PAIRS) {
                    *value = distance(pair) / height;
                }
                let (outer, inner) = EYE_CORNERS;
                let outer = distance(outer);
                values[6 + LIP_DISTANCES] = distance(inner) / outer.max(1.0);
                values[7 + LIP_DISTANCES] = outer / distance(MOUTH_WIDTH).max(1.0);
                Some((time, values))
            })
            .collect();
        let face_at: Vec<[f32; FACE_VALUES]> = times_ms
            .iter()
            .map(|&time| interpolate(&with_face, time))
            .collect();
        let origin = face_at.first().copied().unwrap_or_default();
        let (band_db, speech_bands_db) = match pcm {
            Some(pcm) => {
                let mut meter = BandMeter::new();
                times_ms
                    .iter()
                    .map(|&time| meter.measure(pcm, time))
                    .unzip()
            }
            None => (
                vec![SILENCE_FLOOR_DB; times_ms.len()],
                vec![[SILENCE_FLOOR_DB; SPEECH_BANDS]; times_ms.len()],
            ),
        };
        let speech_mel = match pcm {
            Some(pcm) => grid_log_mel(pcm, &times_ms)
                .iter()
                .map(|bins| {
                    std::array::from_fn(|band| {
                        bins[band * MEL_POOL..(band + 1) * MEL_POOL]
                            .iter()
                            .sum::<f32>()
                            / MEL_POOL as f32
                    })
                })
                .collect(),
            None => vec![[0.0; MEL_BANDS]; times_ms.len()],
        };
        let visemes = match (pcm, visemes) {
            (Some(pcm), Some(visemes)) => grid_visemes(visemes, pcm.start_ms, &times_ms),
            _ => vec![BLANK_ONLY; times_ms.len()],
        };
        let speech_samples: usize = segments.iter().map(|s| s.end - s.start).sum();
        let mut eyes_over_mouth: Vec<f32> = with_face
            .iter()
            .map(|(_, v)| v[7 + LIP_DISTANCES])
            .collect();
        eyes_over_mouth.sort_by(f32::total_cmp);
        let speech = times_ms
            .iter()
            .map(|&time| {
                pcm.is_some_and(|pcm| {
                    let at = (time - pcm.start_ms) * i64::from(PCM_SAMPLE_RATE) / 1000;
                    segments
                        .iter()
                        .any(|s| (s.start as i64..s.end as i64).contains(&at))
                })
            })
            .collect();
        Signals {
            mouth: face_at.iter().map(|v| v[0]).collect(),
            eyes: face_at.iter().map(|v| v[1]).collect(),
            pose: face_at.iter().map(|v| (v[2], v[3])).collect(),
            position: face_at
                .iter()
                .map(|v| (v[4] - origin[4], v[5] - origin[5]))
                .collect(),
            lips: face_at
                .iter()
                .map(|v| std::array::from_fn(|i| v[6 + i]))
                .collect(),
            eye_corners: face_at.iter().map(|v| v[6 + LIP_DISTANCES]).collect(),
            eyes_over_mouth: eyes_over_mouth
                .get(eyes_over_mouth.len() / 2)
                .copied()
                .unwrap_or(0.0),
            band_db,
            speech_bands_db,
            speech_mel,
            visemes,
            speech,
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

/// The viseme row of a moment without sound: all the probability on the blank.
const BLANK_ONLY: [f32; VISEMES] = {
    let mut row = [0.0; VISEMES];
    row[VISEMES - 1] = 1.0;
    row
};

/// Whisper's log-mel of the whole audio (`LogMel`: log10 power, floored 8 below the clip's
/// loudest, scaled) averaged over the four 10 ms frames nearest each grid time: [time][80 bins].
/// 0 where the grid lies outside the audio.
pub fn grid_log_mel(pcm: &Pcm, times_ms: &[i64]) -> Vec<[f32; N_MELS]> {
    const FRAME_MS: f64 = 10.0;
    const FRAMES_PER_STEP: i64 = GRID_MS / 10;
    let frames = pcm.samples.len().div_ceil(160) + 1;
    let mel = LogMel::new().compute(&pcm.samples, frames);
    times_ms
        .iter()
        .map(|&time| {
            let centre = (time - pcm.start_ms) as f64 / FRAME_MS;
            let first = (centre - FRAMES_PER_STEP as f64 / 2.0).round() as i64;
            let inside: Vec<usize> = (first..first + FRAMES_PER_STEP)
                .filter(|&f| f >= 0 && (f as usize) < frames)
                .map(|f| f as usize)
                .collect();
            std::array::from_fn(|bin| {
                if inside.is_empty() {
                    return 0.0;
                }
                inside.iter().map(|&f| mel[bin * frames + f]).sum::<f32>() / inside.len() as f32
            })
        })
        .collect()
}

/// The viseme rows of the two 20 ms frames around each grid time, averaged (the blank alone
/// outside the audio).
pub fn grid_visemes(visemes: &Visemes, start_ms: i64, times_ms: &[i64]) -> Vec<[f32; VISEMES]> {
    times_ms
        .iter()
        .map(|&time| {
            let centre = ((time - start_ms) as f64 / VISEME_FRAME_MS as f64).floor() as i64;
            let rows: Vec<&[f32; VISEMES]> = (centre - 1..=centre)
                .filter(|&f| f >= 0)
                .filter_map(|f| visemes.frames.get(f as usize))
                .collect();
            if rows.is_empty() {
                return BLANK_ONLY;
            }
            std::array::from_fn(|g| rows.iter().map(|r| r[g]).sum::<f32>() / rows.len() as f32)
        })
        .collect()
}

/// Linear interpolation of `points` (sorted by time) at `time`; the ends are held.
fn interpolate<const N: usize>(points: &[(i64, [f32; N])], time: i64) -> [f32; N] {
    let Some(after) = points.iter().position(|(t, _)| *t >= time) else {
        return points.last().map_or([0.0; N], |p| p.1);
    };
    if after == 0 || points[after].0 == time {
        return points[after].1;
    }
    let (t0, v0) = points[after - 1];
    let (t1, v1) = points[after];
    let w = (time - t0) as f32 / (t1 - t0) as f32;
    std::array::from_fn(|i| v0[i] + (v1[i] - v0[i]) * w)
}

/// Measures the first-formant band level and the speech band levels of the 40 ms of audio
/// centred on a time.
struct BandMeter {
    fft: std::sync::Arc<dyn realfft::RealToComplex<f32>>,
    window: Vec<f32>,
    input: Vec<f32>,
    output: Vec<realfft::num_complex::Complex<f32>>,
    bins: std::ops::Range<usize>,
    speech_bins: [std::ops::Range<usize>; SPEECH_BANDS],
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
        // Mel-spaced edges; a bin belongs to the band its centre frequency falls in.
        let mel = |hz: f32| 2595.0 * (1.0 + hz / 700.0).log10();
        let hz = |mel: f32| 700.0 * (10f32.powf(mel / 2595.0) - 1.0);
        let (low, high) = (mel(SPEECH_BAND_HZ.0), mel(SPEECH_BAND_HZ.1));
        let edge = |k: usize| {
            let at = hz(low + (high - low) * k as f32 / SPEECH_BANDS as f32);
            (at / hz_per_bin).ceil() as usize
        };
        let speech_bins = std::array::from_fn(|k| edge(k)..edge(k + 1).max(edge(k) + 1));
        BandMeter {
            speech_bins,
            input: fft.make_input_vec(),
            output: fft.make_output_vec(),
            fft,
            window,
            bins,
        }
    }

    /// The first-formant band level and the speech band levels at `time`, dB.
    fn measure(&mut self, pcm: &Pcm, time: i64) -> (f32, [f32; SPEECH_BANDS]) {
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
            return (SILENCE_FLOOR_DB, [SILENCE_FLOOR_DB; SPEECH_BANDS]);
        }
        let level = |bins: &std::ops::Range<usize>| {
            let power = self.output[bins.clone()]
                .iter()
                .map(|c| c.norm_sqr())
                .sum::<f32>()
                / (WINDOW * WINDOW) as f32;
            (10.0 * power.max(1e-12).log10()).max(SILENCE_FLOOR_DB)
        };
        (
            level(&self.bins),
            std::array::from_fn(|k| level(&self.speech_bins[k])),
        )
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
    fn spread_and_logistic() {
        assert!((std_dev(&[1.0, 3.0]) - 1.0).abs() < 1e-6);
        assert!((logistic(0.3, 0.3, 10.0) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn interpolation_holds_the_ends() {
        let points = [(0, [0.0; 6]), (100, [1.0; 6])];
        assert_eq!(interpolate(&points, -10)[0], 0.0);
        assert!((interpolate(&points, 40)[0] - 0.4).abs() < 1e-6);
        assert_eq!(interpolate(&points, 200)[0], 1.0);
        assert_eq!(interpolate::<6>(&[], 5), [0.0; 6]);
    }
}
