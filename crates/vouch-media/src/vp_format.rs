//! The VP8 and VP9 frame-header facts the demuxers and the decoder need, in one place (always
//! compiled: Matroska reads key frames from them without the `vpx` feature): whether a frame is a
//! key frame, and the picture size a frame declares, read before libvpx sees it (RFC 6386 for
//! VP8, the VP9 bitstream specification for VP9).

use super::types::VideoCodec;

/// Whether a VP8 or VP9 frame is a key frame: VP8's frame tag has bit 0 clear for key frames;
/// VP9's uncompressed header is frame_marker(2) profile_low(1) profile_high(1) [reserved(1) when
/// profile 3] show_existing_frame(1) frame_type(1, 0 = key).
pub(crate) fn is_key_frame(codec: VideoCodec, data: &[u8]) -> bool {
    match codec {
        VideoCodec::Vp8 => data.first().is_some_and(|b| b & 1 == 0),
        VideoCodec::Vp9 => {
            let mut bits = Bits { data, at: 2 };
            (|| {
                let low = bits.read(1)?;
                let profile = (bits.read(1)? << 1) | low;
                if profile == 3 {
                    bits.read(1)?;
                }
                Some(bits.read(1)? == 0 && bits.read(1)? == 0)
            })()
            .unwrap_or(false)
        }
        _ => false,
    }
}

#[cfg(feature = "vpx")]
/// The picture sizes `packet` declares in its frames' headers, read before libvpx sees it: a VP8
/// key frame's, and every VP9 frame's that gives one explicitly (key and intra-only frames, and
/// inter frames that take no reference's size), each frame of a VP9 superframe. Frames whose
/// header is too short to say are left to libvpx, which refuses them.
pub(crate) fn declared_sizes(codec: VideoCodec, packet: &[u8]) -> Vec<(u32, u32)> {
    match codec {
        VideoCodec::Vp8 => vp8_key_frame_size(packet).into_iter().collect(),
        VideoCodec::Vp9 => vp9_frames(packet).filter_map(vp9_frame_size).collect(),
        _ => Vec::new(),
    }
}

#[cfg(feature = "vpx")]
/// A VP8 key frame's size (RFC 6386, 9.1: a 3-byte frame tag whose low bit is 0 for a key frame,
/// the start code 9d 01 2a, then 14-bit width and height; the top two bits are a display scale).
fn vp8_key_frame_size(frame: &[u8]) -> Option<(u32, u32)> {
    if frame.len() < 10 || frame[0] & 1 != 0 || frame[3..6] != [0x9d, 0x01, 0x2a] {
        return None;
    }
    let width = u32::from(u16::from_le_bytes([frame[6], frame[7]]) & 0x3fff);
    let height = u32::from(u16::from_le_bytes([frame[8], frame[9]]) & 0x3fff);
    Some((width, height))
}

#[cfg(feature = "vpx")]
/// The frames of a VP9 packet: the frames a superframe index at its end lists (VP9 bitstream
/// specification, Annex B), or the packet itself.
fn vp9_frames(packet: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut frames = Vec::new();
    if let Some(&marker) = packet.last() {
        let count = usize::from(marker & 7) + 1;
        let bytes = usize::from((marker >> 3) & 3) + 1;
        let index = 2 + bytes * count;
        if marker & 0xe0 == 0xc0 && packet.len() >= index && packet[packet.len() - index] == marker
        {
            let sizes = &packet[packet.len() - index + 1..packet.len() - 1];
            let mut start = 0usize;
            for size in sizes.chunks_exact(bytes) {
                let size = size
                    .iter()
                    .rev()
                    .fold(0usize, |acc, &byte| (acc << 8) | usize::from(byte));
                let end = start.saturating_add(size).min(packet.len() - index);
                frames.push(&packet[start..end]);
                start = end;
            }
        }
    }
    if frames.is_empty() {
        frames.push(packet);
    }
    frames.into_iter()
}

#[cfg(feature = "vpx")]
/// Reads a VP9 uncompressed header up to the frame size (VP9 bitstream specification, 6.2) when
/// the frame gives one; `None` when it takes a reference's size, shows an existing frame, or is
/// too short.
fn vp9_frame_size(frame: &[u8]) -> Option<(u32, u32)> {
    let mut bits = Bits { data: frame, at: 0 };
    if bits.read(2)? != 2 {
        return None;
    }
    let low = bits.read(1)?;
    let profile = (bits.read(1)? << 1) | low;
    if profile == 3 {
        bits.read(1)?;
    }
    if bits.read(1)? == 1 {
        return None; // show_existing_frame
    }
    let key_frame = bits.read(1)? == 0;
    let show_frame = bits.read(1)? == 1;
    let error_resilient = bits.read(1)? == 1;
    let size = |bits: &mut Bits<'_>| Some((bits.read(16)? + 1, bits.read(16)? + 1));
    if key_frame {
        if bits.read(24)? != 0x49_83_42 {
            return None;
        }
        vp9_skip_color_config(&mut bits, profile)?;
        return size(&mut bits);
    }
    let intra_only = !show_frame && bits.read(1)? == 1;
    if !error_resilient {
        bits.read(2)?; // reset_frame_context
    }
    if intra_only {
        if bits.read(24)? != 0x49_83_42 {
            return None;
        }
        if profile > 0 {
            vp9_skip_color_config(&mut bits, profile)?;
        }
        bits.read(8)?; // refresh_frame_flags
        return size(&mut bits);
    }
    bits.read(8)?; // refresh_frame_flags
    for _ in 0..3 {
        bits.read(4)?; // ref_frame_idx, ref_frame_sign_bias
    }
    for _ in 0..3 {
        if bits.read(1)? == 1 {
            return None; // the size of a reference, itself checked when it was decoded
        }
    }
    size(&mut bits)
}

#[cfg(feature = "vpx")]
/// Skips a VP9 `color_config()`.
fn vp9_skip_color_config(bits: &mut Bits<'_>, profile: u32) -> Option<()> {
    if profile >= 2 {
        bits.read(1)?; // ten_or_twelve_bit
    }
    let color_space = bits.read(3)?;
    if color_space != 7 {
        bits.read(1)?; // color_range
        if profile == 1 || profile == 3 {
            bits.read(3)?; // subsampling_x, subsampling_y, reserved_zero
        }
    } else if profile == 1 || profile == 3 {
        bits.read(1)?; // reserved_zero
    }
    Some(())
}

/// A most-significant-bit-first reader.
struct Bits<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bits<'_> {
    fn read(&mut self, count: u32) -> Option<u32> {
        let mut value = 0u32;
        for _ in 0..count {
            let byte = *self.data.get(self.at / 8)?;
            value = (value << 1) | u32::from((byte >> (7 - self.at % 8)) & 1);
            self.at += 1;
        }
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_frames_of_profile_3_and_short_input() {
        // (The common cases are tested through the Matroska reader's `sniff_keyframe`.)
        // Profile 3: one reserved bit before show_existing_frame.
        assert!(is_key_frame(VideoCodec::Vp9, &[0b1011_0000]));
        assert!(!is_key_frame(VideoCodec::Vp9, &[]));
        assert!(!is_key_frame(VideoCodec::H264, &[0]));
    }
}
