//! Opus decoding with the pure-Rust `opus-rs` crate: [`OpusDecoder`] parses the OpusHead (RFC 7845)
//! and implements [`AudioDecoder`], producing interleaved f32 at 48 kHz.
//!
//! Only channel mapping family 0 (mono or stereo, what browsers and phones record) is supported.
//! The decoder does not trim: the demuxer reports pre-skip and end padding in
//! [`super::demux::AudioTrack`] and the caller drops those samples.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::demux::AudioDecoder;
use super::error::MediaError;
use super::opus_format::{OpusHead, MAX_PACKET_SAMPLES};

/// Opus always decodes at 48 kHz here (the OpusHead's input rate is informational).
pub(crate) const OPUS_SAMPLE_RATE: u32 = 48_000;

/// The longest Opus packet: 120 ms at 48 kHz, per channel.
const MAX_FRAME_SAMPLES: usize = MAX_PACKET_SAMPLES as usize;

/// Parses an OpusHead for the decoder: mapping family 0 only (mono or stereo).
fn decoder_head(head: &[u8]) -> Result<OpusHead, MediaError> {
    let head = OpusHead::parse(head)?;
    if head.family != 0 {
        return Err(MediaError::UnsupportedCodec {
            codec: format!(
                "Opus with channel mapping family {} ({} channels)",
                head.family, head.channels
            ),
            feature: None,
        });
    }
    Ok(head)
}

/// An Opus decoder for one mono or stereo stream.
pub(crate) struct OpusDecoder {
    inner: opus_rs::OpusDecoder,
    head: OpusHead,
    /// Linear gain applied to the output (from the head's Q7.8 dB output gain).
    gain: f32,
    /// One packet's worth of interleaved output.
    scratch: Vec<f32>,
    /// Set when the decoder panicked: its state is then unknown and it refuses further packets.
    poisoned: bool,
}

impl OpusDecoder {
    /// A decoder for the stream described by `opus_head` (the Matroska `CodecPrivate`).
    pub(crate) fn new(opus_head: &[u8]) -> Result<Self, MediaError> {
        let head = decoder_head(opus_head)?;
        let inner = opus_rs::OpusDecoder::new(OPUS_SAMPLE_RATE as i32, usize::from(head.channels))
            .map_err(|reason| MediaError::Decode {
                codec: "Opus",
                detail: reason.to_string(),
            })?;
        Ok(OpusDecoder {
            inner,
            head,
            gain: 10f32.powf(f32::from(head.gain_q8) / (20.0 * 256.0)),
            scratch: vec![0.0; MAX_FRAME_SAMPLES * usize::from(head.channels)],
            poisoned: false,
        })
    }

    /// The parsed OpusHead.
    #[cfg(test)]
    pub(crate) fn head(&self) -> OpusHead {
        self.head
    }
}

impl AudioDecoder for OpusDecoder {
    fn decode(&mut self, packet: &[u8], out: &mut Vec<f32>) -> Result<(), MediaError> {
        if self.poisoned {
            return Err(MediaError::Decode {
                codec: "Opus",
                detail: "the decoder failed on an earlier packet".into(),
            });
        }
        if packet.is_empty() {
            // An empty packet asks opus-rs for loss concealment; containers never store one.
            return Ok(());
        }
        let (inner, scratch) = (&mut self.inner, &mut self.scratch);
        // opus-rs is a young port that has had panics on hostile packets; packets are untrusted
        // input, so a panic becomes a decode error instead of tearing down the engine.
        let result = catch_unwind(AssertUnwindSafe(|| {
            inner.decode(packet, MAX_FRAME_SAMPLES, scratch)
        }));
        let samples = match result {
            Ok(Ok(samples)) => samples,
            Ok(Err(reason)) => {
                return Err(MediaError::Decode {
                    codec: "Opus",
                    detail: reason.to_string(),
                })
            }
            Err(_) => {
                self.poisoned = true;
                return Err(MediaError::Decode {
                    codec: "Opus",
                    detail: "invalid packet".into(),
                });
            }
        };
        let produced = self
            .scratch
            .get(..samples * usize::from(self.head.channels))
            .ok_or_else(|| MediaError::Decode {
                codec: "Opus",
                detail: "the decoder reported more samples than it wrote".into(),
            })?;
        if (self.gain - 1.0).abs() < f32::EPSILON {
            out.extend_from_slice(produced);
        } else {
            out.extend(produced.iter().map(|s| s * self.gain));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demux::AudioTrack;
    use crate::mkv::demux_matroska;

    fn media(name: &str) -> Vec<u8> {
        let path = format!("{}/../../tests/media/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
    }

    /// Decodes a track, drops pre-skip and end padding; returns (start ms, mono samples).
    fn decode_trimmed(track: &AudioTrack<'_>) -> (f64, Vec<f32>) {
        let mut decoder = OpusDecoder::new(&track.config).expect("decoder");
        assert_eq!(u64::from(decoder.head().pre_skip), track.skip_samples);
        let mut pcm = Vec::new();
        for packet in &track.packets {
            decoder.decode(&packet.data, &mut pcm).expect("decode");
        }
        let channels = usize::from(decoder.head().channels);
        let skip = track.skip_samples as usize * channels;
        let mut pcm = pcm.split_off(skip.min(pcm.len()));
        if let Some(valid) = track.valid_samples {
            pcm.truncate(valid as usize * channels);
        }
        let start_ms =
            track.packets[0].pts_ms as f64 + track.skip_samples as f64 * 1000.0 / 48_000.0;
        (
            start_ms,
            pcm.chunks(channels)
                .map(|frame| frame.iter().sum::<f32>() / channels as f32)
                .collect(),
        )
    }

    fn rms(samples: &[f32]) -> f32 {
        (samples.iter().map(|s| s * s).sum::<f32>() / samples.len().max(1) as f32).sqrt()
    }

    /// 10 ms windows (480 samples) and their RMS.
    fn window_rms(samples: &[f32]) -> Vec<f32> {
        samples.chunks(480).map(rms).collect()
    }

    #[test]
    fn beep_onset_is_aligned_with_the_flash() {
        for name in [
            "vp8_opus.webm",
            "vp9_opus.webm",
            "vp8_opus_live.webm",
            "vp9_opus.mkv",
        ] {
            let bytes = media(name);
            let demuxed = demux_matroska(&bytes).expect("demux");
            let track = demuxed.audio.as_ref().expect("audio");
            let (start_ms, pcm) = decode_trimmed(track);
            let duration_ms = pcm.len() as f64 * 1000.0 / 48_000.0;
            assert!(
                (duration_ms - 2000.0).abs() <= 10.0,
                "{name}: {duration_ms} ms of audio"
            );
            let windows = window_rms(&pcm);
            let onset =
                windows.iter().position(|r| *r > 0.1).expect("a beep") as f64 * 10.0 + start_ms;
            assert!(
                (onset - 1000.0).abs() <= 10.0,
                "{name}: onset at {onset} ms"
            );
            let end =
                windows.iter().rposition(|r| *r > 0.1).expect("a beep") as f64 * 10.0 + start_ms;
            assert!(
                (end - 1190.0).abs() <= 10.0,
                "{name}: beep ends at {end} ms"
            );
            // Silence elsewhere, a 0.5-amplitude sine (RMS 0.354) inside.
            assert!(
                windows[..90].iter().all(|r| *r < 0.01),
                "{name}: silent before the beep"
            );
            let inside = rms(&pcm[48_000 + 480..48_000 + 9_120]);
            assert!((inside - 0.354).abs() < 0.03, "{name}: beep RMS {inside}");
        }
    }

    #[test]
    fn tone_has_the_right_pitch_and_length() {
        let bytes = media("tone_opus.webm");
        let demuxed = demux_matroska(&bytes).expect("demux");
        assert!(demuxed.video.is_none());
        let track = demuxed.audio.as_ref().expect("audio");
        let (start_ms, pcm) = decode_trimmed(track);
        assert!(start_ms.abs() < 1.0, "starts at {start_ms} ms");
        assert!(
            (pcm.len() as i64 - 48_000).abs() <= 480,
            "{} samples",
            pcm.len()
        );
        // 1 kHz: 2 zero crossings per ms over 100..400 ms.
        let tone = &pcm[4_800..19_200];
        let crossings = tone
            .windows(2)
            .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
            .count();
        assert!(
            (crossings as i64 - 600).abs() <= 4,
            "{crossings} zero crossings in 300 ms"
        );
        assert!((rms(tone) - 0.354).abs() < 0.03, "tone RMS {}", rms(tone));
        assert!(rms(&pcm[26_400..]) < 0.01, "silence after 0.55 s");
    }

    /// Prints Opus decode time of the 5 s benchmark clips:
    /// `cargo test --release -p vouch-media --lib opus::tests::bench -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing, run by hand"]
    fn bench_clips_decode_time() {
        for name in ["bench_vp8_opus.webm", "bench_vp9_opus.webm"] {
            let bytes = media(name);
            let demuxed = demux_matroska(&bytes).expect("demux");
            let track = demuxed.audio.as_ref().expect("audio");
            let start = std::time::Instant::now();
            let (_, pcm) = decode_trimmed(track);
            println!(
                "{name}: Opus {} packets, {} samples in {:?}",
                track.packets.len(),
                pcm.len(),
                start.elapsed()
            );
        }
    }

    #[test]
    fn bad_headers_are_refused() {
        assert!(matches!(
            OpusDecoder::new(b""),
            Err(MediaError::Malformed(_))
        ));
        assert!(matches!(
            OpusDecoder::new(b"OpusTags\x01\x01\x38\x01\x80\xbb\0\0\0\0\0"),
            Err(MediaError::Malformed(_))
        ));
        let mut head = b"OpusHead\x01\x06\x38\x01\x80\xbb\0\0\0\0\x01".to_vec();
        head.extend_from_slice(&[4, 2, 0, 4, 1, 2, 3, 5]);
        assert!(matches!(
            OpusDecoder::new(&head),
            Err(MediaError::UnsupportedCodec { .. })
        ));
        let three_channels = b"OpusHead\x01\x03\x38\x01\x80\xbb\0\0\0\0\0";
        assert!(matches!(
            OpusDecoder::new(three_channels),
            Err(MediaError::Malformed(_))
        ));
        let stereo =
            OpusDecoder::new(b"OpusHead\x01\x02\x38\x01\x80\xbb\0\0\0\0\0").expect("stereo");
        assert_eq!(
            stereo.head(),
            OpusHead {
                channels: 2,
                pre_skip: 312,
                gain_q8: 0,
                family: 0
            }
        );
    }

    #[test]
    fn corrupted_real_packets_are_errors_not_panics() {
        let bytes = media("vp8_opus.webm");
        let demuxed = demux_matroska(&bytes).expect("demux");
        let track = demuxed.audio.as_ref().expect("audio");
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..20 {
            let mut decoder = OpusDecoder::new(&track.config).expect("decoder");
            let mut out = Vec::new();
            for packet in &track.packets {
                let mut data = packet.data.to_vec();
                for _ in 0..=round % 4 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let at = (state >> 16) as usize % data.len();
                    data[at] ^= state as u8;
                }
                let _ = decoder.decode(&data, &mut out);
            }
            assert!(out.iter().all(|s| s.is_finite()));
        }
    }

    #[test]
    fn garbage_packets_are_errors_not_panics() {
        let mut decoder =
            OpusDecoder::new(b"OpusHead\x01\x01\x38\x01\x80\xbb\0\0\0\0\0").expect("decoder");
        let mut out = Vec::new();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for length in [1usize, 2, 3, 7, 60, 200, 1275] {
            for _ in 0..50 {
                let packet: Vec<u8> = (0..length)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        state as u8
                    })
                    .collect();
                let _ = decoder.decode(&packet, &mut out);
            }
        }
    }
}
