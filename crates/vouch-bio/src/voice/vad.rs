//! Speech detection with Silero VAD v6 (16 kHz): per-32 ms speech probabilities and silero's
//! `get_speech_timestamps` segmentation, transcribed from `models/reference/silero-vad-notes.md`
//! (without the maximum-speech-duration cut, which verification clips never reach).

use crate::infer::{Model, ModelError};

/// New samples per model call.
pub const CHUNK: usize = 512;
const CONTEXT: usize = 64;
const STATE: usize = 2 * 128;

/// Segmentation parameters (silero's defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VadParams {
    /// Speech starts at a probability of at least this.
    pub threshold: f32,
    /// Speech segments not longer than this are dropped (ms).
    pub min_speech_ms: u32,
    /// A pause must last this long to end a segment (ms).
    pub min_silence_ms: u32,
    /// Each segment grows by this much on both sides (ms).
    pub speech_pad_ms: u32,
}

impl Default for VadParams {
    fn default() -> Self {
        VadParams {
            threshold: 0.5,
            min_speech_ms: 250,
            min_silence_ms: 100,
            speech_pad_ms: 30,
        }
    }
}

/// A speech segment in samples, `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// First sample.
    pub start: usize,
    /// One past the last sample.
    pub end: usize,
}

/// The VAD model.
#[derive(Debug)]
pub struct Vad {
    model: Model,
}

impl Vad {
    /// Wraps a loaded Silero model.
    pub fn new(model: Model) -> Vad {
        Vad { model }
    }

    /// Speech probability of every 512-sample chunk of 16 kHz audio (the last one zero-padded),
    /// with the model's state and 64 samples of context carried from chunk to chunk.
    pub fn probabilities(&self, audio: &[f32]) -> Result<Vec<f32>, ModelError> {
        let mut state = vec![0f32; STATE];
        let mut input = vec![0f32; CONTEXT + CHUNK];
        let mut probs = Vec::with_capacity(audio.len().div_ceil(CHUNK));
        for chunk in audio.chunks(CHUNK) {
            // Context: the previous chunk's last 64 samples, already at the end of `input`.
            input.copy_within(CHUNK.., 0);
            input[CONTEXT..CONTEXT + chunk.len()].copy_from_slice(chunk);
            input[CONTEXT + chunk.len()..].fill(0.0);
            let outputs = self.model.run(&[&input, &state])?;
            let (Some(p), Some(next)) = (outputs.first().and_then(|o| o.first()), outputs.get(1))
            else {
                return Err(ModelError::Runtime {
                    file: self.model.spec().file,
                    detail: "unexpected VAD outputs".into(),
                });
            };
            probs.push(*p);
            state.copy_from_slice(next);
        }
        Ok(probs)
    }
}

/// silero's `get_speech_timestamps_from_probs` at 16 kHz (no maximum speech duration).
pub fn speech_segments(probs: &[f32], audio_len: usize, params: &VadParams) -> Vec<Segment> {
    let rate = 16_000.0f64;
    let min_speech = rate * f64::from(params.min_speech_ms) / 1000.0;
    let pad = rate * f64::from(params.speech_pad_ms) / 1000.0;
    let min_silence = rate * f64::from(params.min_silence_ms) / 1000.0;
    let neg_threshold = (params.threshold - 0.15).max(0.01);

    let mut segments: Vec<Segment> = Vec::new();
    let mut triggered = false;
    let mut start = 0usize;
    let mut temp_end = 0usize;
    for (i, &p) in probs.iter().enumerate() {
        let cur = CHUNK * i;
        if p >= params.threshold && temp_end != 0 {
            temp_end = 0;
        }
        if p >= params.threshold && !triggered {
            triggered = true;
            start = cur;
            continue;
        }
        if p < neg_threshold && triggered {
            if temp_end == 0 {
                temp_end = cur;
            }
            if ((cur - temp_end) as f64) < min_silence {
                continue;
            }
            if (temp_end - start) as f64 > min_speech {
                segments.push(Segment {
                    start,
                    end: temp_end,
                });
            }
            temp_end = 0;
            triggered = false;
        }
    }
    if triggered && (audio_len.saturating_sub(start)) as f64 > min_speech {
        segments.push(Segment {
            start,
            end: audio_len,
        });
    }
    // Padding: segments grow by `pad`, or meet halfway when closer than two pads.
    let n = segments.len();
    for i in 0..n {
        if i == 0 {
            segments[0].start = (segments[0].start as f64 - pad).max(0.0) as usize;
        }
        if i + 1 < n {
            let silence = segments[i + 1].start as i64 - segments[i].end as i64;
            if (silence as f64) < 2.0 * pad {
                let half = silence.div_euclid(2);
                segments[i].end = (segments[i].end as i64 + half).max(0) as usize;
                segments[i + 1].start = (segments[i + 1].start as i64 - half).max(0) as usize;
            } else {
                segments[i].end = (segments[i].end as f64 + pad).min(audio_len as f64) as usize;
                segments[i + 1].start = (segments[i + 1].start as f64 - pad).max(0.0) as usize;
            }
        } else {
            segments[i].end = (segments[i].end as f64 + pad).min(audio_len as f64) as usize;
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::{reference_f32, VOICE_ACTIVITY};

    fn vad() -> Vad {
        let dir = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        Vad::new(Model::load(&dir, VOICE_ACTIVITY).expect("model"))
    }

    #[test]
    fn probabilities_and_segments_match_silero() {
        let audio = reference_f32("silero_vad_16k/input.f32");
        let expected = reference_f32("silero_vad_16k/probs.f32");
        let probs = vad().probabilities(&audio).expect("run");
        assert_eq!(probs.len(), expected.len());
        let worst = probs
            .iter()
            .zip(&expected)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-4, "max diff {worst}");

        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/reference/silero_vad_16k/speech_timestamps.json"
        );
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("json")).expect("json");
        let mut checked = 0;
        for set in json["param_sets"].as_array().expect("sets") {
            let p = &set["params"];
            if p.get("max_speech_duration_s").is_some() || p.get("return_seconds").is_some() {
                continue; // not implemented: see the module documentation
            }
            let defaults = VadParams::default();
            let params = VadParams {
                threshold: p["threshold"]
                    .as_f64()
                    .map_or(defaults.threshold, |v| v as f32),
                min_speech_ms: p["min_speech_duration_ms"]
                    .as_u64()
                    .map_or(defaults.min_speech_ms, |v| v as u32),
                min_silence_ms: p["min_silence_duration_ms"]
                    .as_u64()
                    .map_or(defaults.min_silence_ms, |v| v as u32),
                speech_pad_ms: p["speech_pad_ms"]
                    .as_u64()
                    .map_or(defaults.speech_pad_ms, |v| v as u32),
            };
            let want: Vec<Segment> = set["speech_timestamps"]
                .as_array()
                .expect("timestamps")
                .iter()
                .map(|s| Segment {
                    start: s["start"].as_u64().unwrap() as usize,
                    end: s["end"].as_u64().unwrap() as usize,
                })
                .collect();
            // The reference probabilities, so the segmentation is checked on its own.
            let got = speech_segments(&expected, audio.len(), &params);
            assert_eq!(got, want, "{}", set["name"]);
            checked += 1;
        }
        assert!(checked >= 4, "only {checked} parameter sets checked");
    }
}
