//! Speech quality: how much speech an utterance has, whether it is silent or clipped, as measures
//! and machine-readable reasons (`docs/voice.md`). Measured on the 16 kHz mono input before any
//! volume change.

use serde::{Serialize, Serializer};

use super::vad::Segment;
use vouch_media::PCM_SAMPLE_RATE;

/// Speech needed for a usable voice template, in seconds. One encoder window is 1.6 s of audio;
/// below a second of speech the embedding is dominated by too few phonemes.
pub const MIN_SPEECH_SECONDS: f32 = 1.0;
/// RMS under which a recording without speech is reported as silence (a muted or missing
/// microphone), in dBFS. The quietest development recording is at -50 dBFS.
pub const SILENCE_DBFS: f32 = -60.0;
/// Sample magnitude (full scale 1.0) counted as clipped; resampling blurs a clipped plateau, so
/// this is a little under full scale. No development recording reaches it.
pub const CLIP_LEVEL: f32 = 0.98;
/// Share of speech samples at or over [`CLIP_LEVEL`] that is reported as clipping. Clean speech
/// has a high crest factor: the development recordings have none there.
pub const CLIP_SHARE: f32 = 0.001;

/// Why an utterance is not good speech for voice recognition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeechReason {
    /// Nothing (or almost nothing) was recorded: RMS under [`SILENCE_DBFS`] and no speech.
    Silence,
    /// Sound without speech (noise, music, or speech under a quarter of a second).
    NoSpeech,
    /// Speech, but less than [`MIN_SPEECH_SECONDS`].
    TooLittleSpeech,
    /// More than [`CLIP_SHARE`] of the speech samples at full scale.
    Clipping,
}

impl SpeechReason {
    /// The machine-readable reason.
    pub fn as_str(self) -> &'static str {
        match self {
            SpeechReason::Silence => "silence",
            SpeechReason::NoSpeech => "no_speech",
            SpeechReason::TooLittleSpeech => "too_little_speech",
            SpeechReason::Clipping => "clipping",
        }
    }

    /// Whether a template from this utterance would not be worth comparing or keeping.
    pub fn is_not_enough_speech(self) -> bool {
        matches!(
            self,
            SpeechReason::Silence | SpeechReason::NoSpeech | SpeechReason::TooLittleSpeech
        )
    }
}

impl Serialize for SpeechReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Speech measures of an utterance and the reasons they give.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpeechQuality {
    /// Length of the audio, seconds.
    pub duration_seconds: f32,
    /// Speech found by the detector, seconds.
    pub speech_seconds: f32,
    /// RMS level of the whole audio, dBFS (-120 for digital silence).
    pub rms_dbfs: f32,
    /// Share of speech samples at or over [`CLIP_LEVEL`].
    pub clipped_share: f32,
    /// What is wrong, if anything.
    pub reasons: Vec<SpeechReason>,
}

impl SpeechQuality {
    /// Measures `pcm` (16 kHz mono, full scale 1.0) given the detector's speech segments.
    pub fn measure(pcm: &[f32], segments: &[Segment]) -> SpeechQuality {
        let rate = PCM_SAMPLE_RATE as f32;
        let mean_square = if pcm.is_empty() {
            0.0
        } else {
            pcm.iter()
                .map(|&s| f64::from(s) * f64::from(s))
                .sum::<f64>()
                / pcm.len() as f64
        };
        let rms_dbfs = (10.0 * mean_square.max(1e-12).log10()) as f32;
        let speech_samples: usize = segments.iter().map(|s| s.end - s.start).sum();
        let clipped: usize = segments
            .iter()
            .filter_map(|s| pcm.get(s.start..s.end))
            .map(|speech| speech.iter().filter(|s| s.abs() >= CLIP_LEVEL).count())
            .sum();
        let clipped_share = if speech_samples == 0 {
            0.0
        } else {
            clipped as f32 / speech_samples as f32
        };
        let speech_seconds = speech_samples as f32 / rate;
        let mut reasons = Vec::new();
        if speech_samples == 0 {
            reasons.push(if rms_dbfs < SILENCE_DBFS {
                SpeechReason::Silence
            } else {
                SpeechReason::NoSpeech
            });
        } else if speech_seconds < MIN_SPEECH_SECONDS {
            reasons.push(SpeechReason::TooLittleSpeech);
        }
        if clipped_share > CLIP_SHARE {
            reasons.push(SpeechReason::Clipping);
        }
        SpeechQuality {
            duration_seconds: pcm.len() as f32 / rate,
            speech_seconds,
            rms_dbfs,
            clipped_share,
            reasons,
        }
    }

    /// Whether there is too little speech to compare (silence, no speech, too little speech).
    pub fn is_not_enough_speech(&self) -> bool {
        self.reasons.iter().any(|r| r.is_not_enough_speech())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(seconds: f32, amplitude: f32) -> Vec<f32> {
        (0..(seconds * 16_000.0) as usize)
            .map(|i| amplitude * (i as f32 * 0.1).sin())
            .collect()
    }

    #[test]
    fn reasons_follow_the_measures() {
        let all = |pcm: &[f32]| {
            [Segment {
                start: 0,
                end: pcm.len(),
            }]
        };
        let silent = vec![0.0; 16_000];
        let q = SpeechQuality::measure(&silent, &[]);
        assert_eq!(q.reasons, [SpeechReason::Silence]);
        assert!(q.rms_dbfs <= -119.0);
        let noise = tone(1.0, 0.05);
        assert_eq!(
            SpeechQuality::measure(&noise, &[]).reasons,
            [SpeechReason::NoSpeech]
        );
        let short = tone(0.5, 0.3);
        let q = SpeechQuality::measure(&short, &all(&short));
        assert_eq!(q.reasons, [SpeechReason::TooLittleSpeech]);
        assert!((q.speech_seconds - 0.5).abs() < 1e-6);
        let clean = tone(2.0, 0.5);
        let q = SpeechQuality::measure(&clean, &all(&clean));
        assert!(q.reasons.is_empty() && !q.is_not_enough_speech(), "{q:?}");
        assert!((q.rms_dbfs - (-9.03)).abs() < 0.05, "{}", q.rms_dbfs);
        let clipped: Vec<f32> = tone(2.0, 4.0).iter().map(|s| s.clamp(-1.0, 1.0)).collect();
        let q = SpeechQuality::measure(&clipped, &all(&clipped));
        assert_eq!(q.reasons, [SpeechReason::Clipping]);
        assert!(q.clipped_share > 0.5);
        // Segments past the end (never from the detector) are ignored, not a panic.
        let q = SpeechQuality::measure(
            &short,
            &[Segment {
                start: 0,
                end: 1 << 30,
            }],
        );
        assert_eq!(q.clipped_share, 0.0);
    }
}
