//! AAC-LC decoding through symphonia: [`AacDecoder`] implements [`AudioDecoder`] for raw AAC
//! access units (as MP4 and Matroska store them) described by an AudioSpecificConfig.
//!
//! The codec parameters are built here from the AudioSpecificConfig rather than by symphonia's
//! MP4 reader (which ignores edit lists and so the priming; see /work/shared/MEDIA.md). Priming
//! and padding are the caller's job (`AudioTrack::skip_samples` / `valid_samples`).

use symphonia::core::codecs::audio::well_known::CODEC_ID_AAC;
use symphonia::core::codecs::audio::{
    AudioCodecParameters, AudioDecoder as _, AudioDecoderOptions,
};
use symphonia::core::packet::PacketRef;
use symphonia::core::units::{Duration, Timestamp};
use symphonia::default::codecs::AacDecoder as SymphoniaAac;

use super::demux::AudioDecoder;
use super::error::MediaError;
use super::mp4::asc_rate_channels;

const CODEC: &str = "AAC";

/// AudioSpecificConfig sampling frequency indices (ISO/IEC 14496-3 1.6.3.4).
const RATES: [u32; 13] = [
    96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
];

/// An AAC-LC decoder producing interleaved f32.
pub(crate) struct AacDecoder {
    inner: SymphoniaAac,
    /// Reused per-packet buffer (symphonia's copy overwrites its destination).
    scratch: Vec<f32>,
    channels: u16,
}

impl std::fmt::Debug for AacDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AacDecoder")
            .field("channels", &self.channels)
            .finish_non_exhaustive()
    }
}

impl AacDecoder {
    /// Creates a decoder from an AudioSpecificConfig. When the config is empty (some Matroska
    /// writers), an AAC-LC one is built from `sample_rate` and `channels`.
    pub(crate) fn new(
        audio_specific_config: &[u8],
        sample_rate: u32,
        channels: u16,
    ) -> Result<Self, MediaError> {
        let asc = if audio_specific_config.is_empty() {
            lc_config(sample_rate, channels)?
        } else {
            audio_specific_config.to_vec()
        };
        let (object_type, rate, channels) =
            asc_rate_channels(&asc).ok_or_else(|| MediaError::Decode {
                codec: CODEC,
                detail: "unreadable AudioSpecificConfig".into(),
            })?;
        match object_type {
            2 => {}
            // SBR and PS: symphonia decodes AAC-LC only.
            5 | 29 => {
                return Err(MediaError::UnsupportedCodec {
                    codec: "AAC (HE-AAC)".into(),
                    feature: None,
                })
            }
            other => {
                return Err(MediaError::UnsupportedCodec {
                    codec: format!("AAC (audio object type {other})"),
                    feature: None,
                })
            }
        }
        if channels > 2 {
            return Err(MediaError::UnsupportedCodec {
                codec: format!("AAC with {channels} channels"),
                feature: None,
            });
        }
        let mut params = AudioCodecParameters::new();
        params
            .for_codec(CODEC_ID_AAC)
            .with_sample_rate(rate)
            .with_extra_data(asc.into_boxed_slice());
        let inner =
            SymphoniaAac::try_new(&params, &AudioDecoderOptions::default()).map_err(|e| {
                // The ASC passed our checks, so a refusal here is a variant symphonia cannot decode
                // (e.g. 960-sample frames).
                MediaError::UnsupportedCodec {
                    codec: format!("AAC variant ({e})"),
                    feature: None,
                }
            })?;
        Ok(AacDecoder {
            inner,
            scratch: Vec::new(),
            channels,
        })
    }
}

/// A two-byte AAC-LC AudioSpecificConfig (or five with an explicit rate).
fn lc_config(sample_rate: u32, channels: u16) -> Result<Vec<u8>, MediaError> {
    if !(1..=2).contains(&channels) || sample_rate == 0 || sample_rate >= 1 << 24 {
        return Err(MediaError::Decode {
            codec: CODEC,
            detail: format!("no AudioSpecificConfig for {sample_rate} Hz, {channels} channels"),
        });
    }
    let channels = u64::from(channels);
    let bits: u64 = match RATES.iter().position(|&r| r == sample_rate) {
        Some(index) => (2 << 11) | ((index as u64) << 7) | (channels << 3),
        // Escape index 15 and a 24-bit rate: 5 + 4 + 24 + 4 bits, padded to 40.
        None => (2 << 35) | (15 << 31) | (u64::from(sample_rate) << 7) | (channels << 3),
    };
    Ok(if bits >> 16 == 0 {
        (bits as u16).to_be_bytes().to_vec()
    } else {
        bits.to_be_bytes()[3..].to_vec()
    })
}

impl AudioDecoder for AacDecoder {
    fn decode(&mut self, packet: &[u8], out: &mut Vec<f32>) -> Result<(), MediaError> {
        let packet = PacketRef::new(0, Timestamp::from(0i64), Duration::from(1024u64), packet);
        let decoded = self
            .inner
            .decode_ref(&packet)
            .map_err(|e| MediaError::Decode {
                codec: CODEC,
                detail: e.to_string(),
            })?;
        decoded.copy_to_vec_interleaved(&mut self.scratch);
        out.extend_from_slice(&self.scratch);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mp4::demux_mp4;

    fn media(name: &str) -> Vec<u8> {
        let path = format!("{}/../../tests/media/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Decodes a file's audio track and trims priming and padding as the pipeline will.
    fn decode_trimmed(name: &str) -> (Vec<f32>, u32) {
        let bytes = media(name);
        let audio = demux_mp4(&bytes).expect("demux").audio.expect("audio");
        assert_eq!(audio.channels, 1);
        let mut decoder =
            AacDecoder::new(&audio.config, audio.sample_rate, audio.channels).expect("decoder");
        let mut pcm = Vec::new();
        for packet in &audio.packets {
            decoder.decode(&packet.data, &mut pcm).expect("decode");
        }
        assert_eq!(pcm.len(), audio.packets.len() * 1024);
        let skip = usize::try_from(audio.skip_samples)
            .expect("skip")
            .min(pcm.len());
        pcm.drain(..skip);
        if let Some(valid) = audio.valid_samples {
            pcm.truncate(usize::try_from(valid).expect("valid"));
        }
        (pcm, audio.sample_rate)
    }

    /// Start (ms) of the first 1 ms window whose RMS is over 0.1, and of the last one.
    fn loud_span_ms(pcm: &[f32], rate: u32) -> Option<(f64, f64)> {
        let window = (rate / 1000) as usize;
        let loud = |start: usize| {
            let sum: f32 = pcm[start..start + window].iter().map(|s| s * s).sum();
            (sum / window as f32).sqrt() > 0.1
        };
        let starts = 0..pcm.len().checked_sub(window)?;
        let first = starts.clone().find(|&i| loud(i))?;
        let last = starts.rev().find(|&i| loud(i))?;
        let ms = |i: usize| i as f64 * 1000.0 / f64::from(rate);
        Some((ms(first), ms(last + window)))
    }

    #[test]
    fn beep_lines_up_with_the_flash() {
        for name in ["h264_aac.mp4", "h264_aac.mov", "h264_baseline_aac.mp4"] {
            let (pcm, rate) = decode_trimmed(name);
            assert_eq!(rate, 44_100);
            let seconds = pcm.len() as f64 / f64::from(rate);
            assert!((1.99..=2.01).contains(&seconds), "{name}: {seconds} s");
            let (onset, end) = loud_span_ms(&pcm, rate).expect("a beep");
            eprintln!("{name}: beep {onset:.1}..{end:.1} ms, {seconds:.4} s");
            assert!(
                (990.0..=1010.0).contains(&onset),
                "{name}: beep starts at {onset} ms"
            );
            assert!(
                (1190.0..=1210.0).contains(&end),
                "{name}: beep ends at {end} ms"
            );
        }
    }

    #[test]
    fn tone_m4a() {
        let (pcm, rate) = decode_trimmed("tone.m4a");
        let seconds = pcm.len() as f64 / f64::from(rate);
        assert!((0.99..=1.01).contains(&seconds), "{seconds} s");
        let (onset, end) = loud_span_ms(&pcm, rate).expect("a tone");
        assert!(onset <= 10.0, "tone starts at {onset} ms");
        assert!((490.0..=510.0).contains(&end), "tone ends at {end} ms");
    }

    #[test]
    fn configs() {
        assert_eq!(lc_config(44_100, 1).unwrap(), vec![0x12, 0x08]);
        assert_eq!(
            asc_rate_channels(&lc_config(48_000, 2).unwrap()),
            Some((2, 48_000, 2))
        );
        assert_eq!(
            asc_rate_channels(&lc_config(44_000, 2).unwrap()),
            Some((2, 44_000, 2))
        );
        assert!(AacDecoder::new(&[], 44_100, 2).is_ok());
        // HE-AAC (object type 5) and AAC Main (1) are refused with a clear error.
        assert_eq!(
            AacDecoder::new(&[0x2B, 0x92, 0x08, 0x00], 22_050, 2).unwrap_err(),
            MediaError::UnsupportedCodec {
                codec: "AAC (HE-AAC)".into(),
                feature: None
            }
        );
        assert!(matches!(
            AacDecoder::new(&[0x0A, 0x08], 44_100, 1),
            Err(MediaError::UnsupportedCodec { .. })
        ));
        assert!(AacDecoder::new(&[0xFF], 44_100, 1).is_err());
    }

    #[test]
    fn garbage_packets_are_errors_not_panics() {
        let mut decoder = AacDecoder::new(&[0x12, 0x08], 44_100, 1).expect("decoder");
        let mut out = Vec::new();
        for len in [0usize, 1, 7, 100, 1500] {
            let packet: Vec<u8> = (0..len as u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 9) as u8)
                .collect();
            let _ = decoder.decode(&packet, &mut out);
        }
        // Real packets cut short.
        let bytes = media("tone.m4a");
        let audio = demux_mp4(&bytes).expect("demux").audio.expect("audio");
        for packet in &audio.packets {
            let _ = decoder.decode(&packet.data[..packet.data.len() / 2], &mut out);
        }
    }
}
