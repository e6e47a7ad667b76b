//! The Opus format facts every layer needs, in one place: the OpusHead (RFC 7845, section 5.1)
//! and the number of samples in a packet (RFC 6716, section 3.1). The Ogg and Matroska demuxers
//! use them to time and trim tracks, the decoder (`opus.rs`, behind the `opus` feature) to set
//! itself up.

use super::error::MediaError;

/// The longest Opus packet: 120 ms at 48 kHz, per channel.
pub(crate) const MAX_PACKET_SAMPLES: u64 = 5_760;

/// The fields of an OpusHead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpusHead {
    /// Output channels.
    pub(crate) channels: u8,
    /// Samples (48 kHz, per channel) to drop at the start.
    pub(crate) pre_skip: u16,
    /// Output gain, Q7.8 dB.
    pub(crate) gain_q8: i16,
    /// Channel mapping family: 0 (mono or stereo) or 1 (Vorbis order, up to 8 channels).
    pub(crate) family: u8,
}

impl OpusHead {
    /// Parses an OpusHead: version 0.x, at least one channel, mapping family 0 with one or two
    /// channels or family 1 with its mapping table; other families are unsupported.
    pub(crate) fn parse(packet: &[u8]) -> Result<OpusHead, MediaError> {
        let malformed = |what: &str| MediaError::Malformed(format!("the OpusHead {what}"));
        if packet.len() < 19 || !packet.starts_with(b"OpusHead") {
            return Err(malformed("is missing or too short"));
        }
        // Only the major version (high nibble) breaks compatibility.
        if packet[8] >> 4 != 0 {
            return Err(MediaError::UnsupportedCodec {
                codec: format!("Opus header version {}", packet[8]),
                feature: None,
            });
        }
        let channels = packet[9];
        if channels == 0 {
            return Err(malformed("declares no channels"));
        }
        let family = packet[18];
        match family {
            0 if channels > 2 => {
                return Err(malformed(
                    "declares more than 2 channels for mapping family 0",
                ))
            }
            0 => {}
            1 if packet.len() < 21 + usize::from(channels) => {
                return Err(malformed("has a short channel mapping table"))
            }
            1 => {}
            family => {
                return Err(MediaError::UnsupportedCodec {
                    codec: format!("Opus with channel mapping family {family}"),
                    feature: None,
                })
            }
        }
        Ok(OpusHead {
            channels,
            pre_skip: u16::from_le_bytes([packet[10], packet[11]]),
            gain_q8: i16::from_le_bytes([packet[16], packet[17]]),
            family,
        })
    }
}

/// Samples (48 kHz, per channel) in one Opus packet, from its TOC byte; an empty packet, a code 3
/// packet without its frame count, and a count of no samples or of more than 120 ms are malformed.
pub(crate) fn packet_samples(packet: &[u8]) -> Result<u64, MediaError> {
    let toc = *packet
        .first()
        .ok_or_else(|| MediaError::Malformed("an Opus packet is empty".into()))?;
    let config = usize::from(toc >> 3);
    let frame: u64 = match config {
        // SILK: 10, 20, 40, 60 ms.
        0..=11 => [480, 960, 1920, 2880][config % 4],
        // Hybrid: 10, 20 ms.
        12..=15 => [480, 960][config % 2],
        // CELT: 2.5, 5, 10, 20 ms.
        _ => [120, 240, 480, 960][config % 4],
    };
    let frames = match toc & 0x03 {
        0 => 1,
        1 | 2 => 2,
        _ => {
            let count = packet.get(1).ok_or_else(|| {
                MediaError::Malformed("an Opus packet misses its frame count".into())
            })?;
            u64::from(count & 0x3F)
        }
    };
    let samples = frame * frames;
    if samples == 0 || samples > MAX_PACKET_SAMPLES {
        return Err(MediaError::Malformed(format!(
            "an Opus packet claims {samples} samples"
        )));
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_samples_follow_the_toc_byte() {
        assert_eq!(packet_samples(&[0xFC]).ok(), Some(960)); // CELT 20 ms, one frame
        assert_eq!(packet_samples(&[31 << 3]).ok(), Some(960));
        assert_eq!(packet_samples(&[0x0B << 3 | 1]).ok(), Some(2 * 2880)); // SILK 60 ms, two
        assert_eq!(packet_samples(&[(3 << 3) | 3, 2]).ok(), Some(5760));
        assert_eq!(packet_samples(&[0x10 << 3 | 3, 0x03]).ok(), Some(3 * 120)); // CELT 2.5 ms x3
        assert!(packet_samples(&[]).is_err());
        assert!(packet_samples(&[0x03]).is_err()); // code 3 without a frame count
        assert!(packet_samples(&[0x0B << 3 | 3, 0x03]).is_err()); // 180 ms is over 120 ms
        assert!(packet_samples(&[0x0B << 3 | 3, 0x00]).is_err()); // no frames
    }

    #[test]
    fn opus_heads_are_checked() {
        // As ffmpeg writes it: stereo, pre-skip 312, 48 kHz, gain -256 (-1 dB), family 0.
        let mut head = b"OpusHead\x01\x02\x38\x01\x80\xbb\x00\x00\x00\xff\x00".to_vec();
        assert_eq!(
            OpusHead::parse(&head).unwrap(),
            OpusHead {
                channels: 2,
                pre_skip: 312,
                gain_q8: -256,
                family: 0
            }
        );
        assert!(OpusHead::parse(&head[..18]).is_err());
        head[9] = 3;
        assert!(OpusHead::parse(&head).is_err()); // three channels in family 0
        head[18] = 2;
        assert!(matches!(
            OpusHead::parse(&head),
            Err(MediaError::UnsupportedCodec { .. })
        ));
        head[18] = 1;
        assert!(OpusHead::parse(&head).is_err()); // family 1 without its table
        head.extend_from_slice(&[2, 1, 0, 1, 2]);
        assert_eq!(OpusHead::parse(&head).unwrap().family, 1);
        head[8] = 0x10;
        assert!(OpusHead::parse(&head).is_err());
    }
}
