//! HEVC (H.265) decoding through libde265 ([`libde265_rs`], C source built by `libde265-sys2`):
//! [`HevcDecoder`] implements [`VideoDecoder`] for length-prefixed (hvcC-style) packets, as MP4
//! and Matroska store them.
//!
//! Behind the `hevc` cargo feature, off by default: libde265 is LGPL-3.0 (statically linked here)
//! and HEVC is covered by patent pools. On phones, let the platform decode and hand over frames.
//!
//! libde265 takes whole NAL units without start codes, so no Annex B rewrite is needed: the
//! VPS/SPS/PPS from the `hvcC` record go in first, then each packet's NAL units. Pictures come out
//! of libde265's reorder buffer in output order. Only 8-bit 4:2:0 is supported; anything else is
//! [`MediaError::UnsupportedCodec`]. Decoding runs on the calling thread.

use libde265_rs::{
    new_decoder, Channel, ChromaFormat, DeError, DecodeResult, DecoderInput, DecoderOutput, Image,
};

// The largest picture side decoded, checked on every SPS before libde265 allocates.
use super::demux::{ColorInfo, VideoDecoder, YuvView};
use super::error::MediaError;
use super::level::LEVEL_MAX_SIDE as MAX_SIDE;

const CODEC: &str = "HEVC";

/// NAL unit types (ITU-T H.265 table 7-1) of the parameter sets.
const NAL_VPS: u8 = 32;
const NAL_SPS: u8 = 33;
const NAL_PPS: u8 = 34;

/// An HEVC decoder fed with length-prefixed packets.
pub(crate) struct HevcDecoder {
    input: DecoderInput,
    output: DecoderOutput,
    /// Bytes in each NAL length prefix (1, 2 or 4).
    nal_length_size: usize,
}

impl std::fmt::Debug for HevcDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HevcDecoder")
            .field("nal_length_size", &self.nal_length_size)
            .finish_non_exhaustive()
    }
}

impl HevcDecoder {
    /// Creates a decoder from an `HEVCDecoderConfigurationRecord` (hvcC). An empty record (MP4
    /// `hev1` without one, parameter sets in band) means 4-byte NAL lengths.
    pub(crate) fn new(hvcc: &[u8]) -> Result<Self, MediaError> {
        let (input, output) = new_decoder()
            .map_err(|e| MediaError::decode(CODEC, format!("could not start libde265: {e}")))?;
        let mut decoder = HevcDecoder {
            input,
            output,
            nal_length_size: 4,
        };
        if hvcc.is_empty() {
            return Ok(decoder);
        }
        let record = parse_hvcc(hvcc)?;
        if record.chroma_format != 1 {
            return Err(MediaError::unsupported_form(
                CODEC,
                chroma_name(record.chroma_format),
            ));
        }
        if record.bit_depth_luma != 8 || record.bit_depth_chroma != 8 {
            return Err(MediaError::unsupported_form(
                CODEC,
                &format!(
                    "{}-bit samples",
                    record.bit_depth_luma.max(record.bit_depth_chroma)
                ),
            ));
        }
        decoder.nal_length_size = record.nal_length_size;
        for nal in &record.parameter_sets {
            decoder.push_nal(nal)?;
        }
        Ok(decoder)
    }

    /// Checks an SPS against the size and format limits, then hands a NAL unit to libde265.
    fn push_nal(&mut self, nal: &[u8]) -> Result<(), MediaError> {
        if nal.len() < 2 {
            return Err(MediaError::decode(
                CODEC,
                "NAL unit shorter than its header",
            ));
        }
        if (nal[0] >> 1) & 0x3F == NAL_SPS {
            let sps = sps_facts(nal)
                .ok_or_else(|| MediaError::decode(CODEC, "unreadable sequence parameter set"))?;
            if sps.width > MAX_SIDE || sps.height > MAX_SIDE {
                return Err(MediaError::LimitExceeded {
                    what: "HEVC picture side",
                    value: u64::from(sps.width.max(sps.height)),
                    limit: u64::from(MAX_SIDE),
                });
            }
            if sps.chroma_format != 1 {
                return Err(MediaError::unsupported_form(
                    CODEC,
                    chroma_name(sps.chroma_format),
                ));
            }
            if sps.bit_depth_luma != 8 || sps.bit_depth_chroma != 8 {
                return Err(MediaError::unsupported_form(
                    CODEC,
                    &format!(
                        "{}-bit samples",
                        sps.bit_depth_luma.max(sps.bit_depth_chroma)
                    ),
                ));
            }
        }
        self.input
            .push_nal(nal, 0, 0)
            .map_err(|e| MediaError::decode(CODEC, e.to_string()))
    }

    /// Lets libde265 decode what it has been given, handing every output picture to `on_frame`.
    fn run(
        &mut self,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        loop {
            let drained = self.drain(on_frame)?;
            match self.input.decode() {
                Ok(DecodeResult::CallAgain) => {}
                Ok(DecodeResult::Done) | Err(DeError::ErrorWaitingForInputData) => break,
                // The picture buffer is full until pictures are taken out; if draining freed
                // nothing, calling again would spin.
                Err(DeError::ErrorImageBufferFull) if drained > 0 => {}
                Err(DeError::ErrorImageBufferFull) => {
                    return Err(MediaError::decode(CODEC, "decoded picture buffer full"))
                }
                // Warnings (damaged slices, missing references): libde265 conceals and goes on.
                Err(e) if is_warning(e) => {}
                Err(e) => return Err(MediaError::decode(CODEC, e.to_string())),
            }
        }
        // Warnings also queue up on the side; empty that queue so it never fills.
        while self.input.get_warning().is_err() {}
        self.drain(on_frame)?;
        Ok(())
    }

    /// Hands every picture in libde265's output queue to `on_frame`; returns how many.
    fn drain(
        &mut self,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<usize, MediaError> {
        let mut count = 0;
        while let Some(image) = self.output.next_picture() {
            // The image is released (de265_release_next_picture) when dropped, error or not.
            emit(&image, on_frame)?;
            count += 1;
        }
        Ok(count)
    }
}

/// libde265 status codes from 1000 up are warnings; the wrapper names them `Warning*`.
fn is_warning(error: DeError) -> bool {
    format!("{error:?}").starts_with("Warning")
}

fn chroma_name(chroma_format: u32) -> &'static str {
    match chroma_format {
        0 => "monochrome (4:0:0) pictures",
        2 => "4:2:2 chroma",
        3 => "4:4:4 chroma",
        _ => "an unknown chroma format",
    }
}

/// Validates one decoded picture and lends its planes to `on_frame` as a [`YuvView`].
fn emit(
    image: &Image<'_>,
    on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
) -> Result<(), MediaError> {
    match image.chroma_format() {
        ChromaFormat::C420 => {}
        ChromaFormat::Mono => return Err(MediaError::unsupported_form(CODEC, chroma_name(0))),
        ChromaFormat::C422 => return Err(MediaError::unsupported_form(CODEC, chroma_name(2))),
        ChromaFormat::C444 => return Err(MediaError::unsupported_form(CODEC, chroma_name(3))),
    }
    let depth = [Channel::Y, Channel::Cb, Channel::Cr]
        .iter()
        .map(|&c| image.bits_per_pixel(c))
        .max()
        .unwrap_or(0);
    if depth != 8 {
        return Err(MediaError::unsupported_form(
            CODEC,
            &format!("{depth}-bit samples"),
        ));
    }
    let width = image.width(Channel::Y);
    let height = image.height(Channel::Y);
    let (y, y_stride) = image.plane(Channel::Y);
    let (u, u_stride) = image.plane(Channel::Cb);
    let (v, v_stride) = image.plane(Channel::Cr);
    let (w, h) = (width as usize, height as usize);
    let (chroma_w, chroma_h) = (w.div_ceil(2), h.div_ceil(2));
    // Only hand over planes that really hold the picture, so converters can index freely.
    let fits = |plane: &[u8], stride: usize, w: usize, h: usize| {
        stride >= w
            && h.checked_sub(1)
                .is_none_or(|last| last.saturating_mul(stride).saturating_add(w) <= plane.len())
    };
    if w == 0
        || h == 0
        || !fits(y, y_stride, w, h)
        || !fits(u, u_stride, chroma_w, chroma_h)
        || !fits(v, v_stride, chroma_w, chroma_h)
    {
        return Err(MediaError::decode(
            CODEC,
            "libde265 returned a picture with inconsistent planes",
        ));
    }
    on_frame(YuvView {
        width,
        height,
        y,
        u,
        v,
        y_stride,
        u_stride,
        v_stride,
        color: ColorInfo {
            full_range: image.full_range(),
            bt709: image.matrix_coefficients() == 1,
        },
    })
}

impl VideoDecoder for HevcDecoder {
    fn decode(
        &mut self,
        packet: &[u8],
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        let mut rest = packet;
        while !rest.is_empty() {
            let (prefix, tail) = rest.split_at_checked(self.nal_length_size).ok_or_else(|| {
                MediaError::decode(CODEC, "packet ends inside a NAL length prefix")
            })?;
            let len = prefix
                .iter()
                .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
            let (nal, tail) = tail.split_at_checked(len).ok_or_else(|| {
                MediaError::decode(CODEC, "NAL unit runs past the end of its packet")
            })?;
            if !nal.is_empty() {
                self.push_nal(nal)?;
            }
            rest = tail;
        }
        // A picture is finished when the next one starts (or at the end of the stream); marking
        // the end of each packet instead would flush libde265's reorder buffer every time and
        // put B-frames out of order.
        self.run(on_frame)
    }

    fn flush(
        &mut self,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        self.input
            .flush_data()
            .map_err(|e| MediaError::decode(CODEC, e.to_string()))?;
        self.run(on_frame)
    }
}

/// The parts of an hvcC that decoding needs.
#[derive(Debug)]
struct HvcC<'a> {
    nal_length_size: usize,
    chroma_format: u32,
    bit_depth_luma: u32,
    bit_depth_chroma: u32,
    /// VPS, SPS and PPS NAL units, in record order.
    parameter_sets: Vec<&'a [u8]>,
}

/// Parses an `HEVCDecoderConfigurationRecord` (ISO/IEC 14496-15 8.3.3.1): 23 fixed bytes, then
/// arrays of NAL units by type. SEI arrays are skipped.
fn parse_hvcc(hvcc: &[u8]) -> Result<HvcC<'_>, MediaError> {
    let bad = || MediaError::decode(CODEC, "malformed hvcC decoder configuration record");
    if hvcc.len() < 23 || hvcc[0] != 1 {
        return Err(bad());
    }
    let nal_length_size = usize::from(hvcc[21] & 0x03) + 1;
    if nal_length_size == 3 {
        return Err(bad());
    }
    let mut parameter_sets = Vec::new();
    let mut has_sps = false;
    let mut pos = 23;
    let read_u16 = |pos: usize| -> Result<usize, MediaError> {
        let b = hvcc.get(pos..pos + 2).ok_or_else(bad)?;
        Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
    };
    for _ in 0..hvcc[22] {
        let nal_type = hvcc.get(pos).ok_or_else(bad)? & 0x3F;
        let count = read_u16(pos + 1)?;
        pos += 3;
        for _ in 0..count {
            let len = read_u16(pos)?;
            let nal = hvcc.get(pos + 2..pos + 2 + len).ok_or_else(bad)?;
            pos += 2 + len;
            if matches!(nal_type, NAL_VPS | NAL_SPS | NAL_PPS) && !nal.is_empty() {
                has_sps |= nal_type == NAL_SPS;
                parameter_sets.push(nal);
            }
        }
    }
    if !has_sps {
        return Err(bad());
    }
    Ok(HvcC {
        nal_length_size,
        chroma_format: u32::from(hvcc[16] & 0x03),
        bit_depth_luma: u32::from(hvcc[17] & 0x07) + 8,
        bit_depth_chroma: u32::from(hvcc[18] & 0x07) + 8,
        parameter_sets,
    })
}

/// What we read from an SPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SpsFacts {
    width: u32,
    height: u32,
    chroma_format: u32,
    bit_depth_luma: u32,
    bit_depth_chroma: u32,
}

/// Exp-Golomb bit reader over an RBSP (emulation prevention bytes already removed).
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    fn bit(&mut self) -> Option<u32> {
        let byte = *self.data.get(self.pos / 8)?;
        let bit = (byte >> (7 - self.pos % 8)) & 1;
        self.pos += 1;
        Some(u32::from(bit))
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.pos += n;
        (self.pos <= self.data.len() * 8).then_some(())
    }

    fn bits(&mut self, n: u32) -> Option<u32> {
        (0..n).try_fold(0u32, |acc, _| Some((acc << 1) | self.bit()?))
    }

    fn ue(&mut self) -> Option<u32> {
        let mut zeros = 0;
        while self.bit()? == 0 {
            zeros += 1;
            if zeros > 31 {
                return None;
            }
        }
        let rest = self.bits(zeros)?;
        Some(((1u64 << zeros) - 1 + u64::from(rest)).min(u64::from(u32::MAX)) as u32)
    }
}

/// Reads size, chroma format and bit depth from an SPS NAL unit (ITU-T H.265 7.3.2.2.1), up to
/// `bit_depth_chroma_minus8`. The size is the conformance-window (cropped) size.
fn sps_facts(nal: &[u8]) -> Option<SpsFacts> {
    // Drop the two-byte NAL header and the emulation prevention bytes (00 00 03 -> 00 00).
    let mut rbsp = Vec::with_capacity(nal.len());
    let mut zeros = 0;
    for &b in nal.get(2..)? {
        if zeros >= 2 && b == 3 {
            zeros = 0;
            continue;
        }
        zeros = if b == 0 { zeros + 1 } else { 0 };
        rbsp.push(b);
    }
    let mut r = Bits {
        data: &rbsp,
        pos: 0,
    };
    r.bits(4)?; // sps_video_parameter_set_id
    let max_sub_layers_minus1 = r.bits(3)? as usize;
    r.bit()?; // sps_temporal_id_nesting_flag
              // profile_tier_level(1, max_sub_layers_minus1): general part is 96 bits.
    r.skip(96)?;
    let mut present = [(false, false); 8];
    for flags in present.iter_mut().take(max_sub_layers_minus1) {
        *flags = (r.bit()? == 1, r.bit()? == 1);
    }
    if max_sub_layers_minus1 > 0 {
        r.skip(2 * (8 - max_sub_layers_minus1))?; // reserved_zero_2bits
    }
    for &(profile, level) in present.iter().take(max_sub_layers_minus1) {
        if profile {
            r.skip(88)?;
        }
        if level {
            r.skip(8)?;
        }
    }
    r.ue()?; // sps_seq_parameter_set_id
    let chroma_format = r.ue()?;
    if chroma_format > 3 {
        return None;
    }
    let separate_planes = chroma_format == 3 && r.bit()? == 1;
    let width = u64::from(r.ue()?);
    let height = u64::from(r.ue()?);
    let mut crop = [0u64; 4];
    if r.bit()? == 1 {
        for c in &mut crop {
            *c = u64::from(r.ue()?);
        }
    }
    // SubWidthC and SubHeightC (table 6-1); 1 for monochrome and separate colour planes.
    let (sub_w, sub_h) = match (chroma_format, separate_planes) {
        (1, _) => (2, 2),
        (2, _) => (2, 1),
        _ => (1, 1),
    };
    let width = width.saturating_sub(sub_w * (crop[0] + crop[1]));
    let height = height.saturating_sub(sub_h * (crop[2] + crop[3]));
    let bit_depth_luma = r.ue()?.saturating_add(8);
    let bit_depth_chroma = r.ue()?.saturating_add(8);
    Some(SpsFacts {
        width: width.min(u64::from(u32::MAX)) as u32,
        height: height.min(u64::from(u32::MAX)) as u32,
        chroma_format,
        bit_depth_luma,
        bit_depth_chroma,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mp4::demux_mp4;
    use crate::test_support::{decode_damaged_packets, media};
    use crate::{decode_video, DecodeOptions, FrameSampler};

    fn all_frames() -> DecodeOptions {
        DecodeOptions {
            sampler: FrameSampler::All,
            audio: false,
            ..DecodeOptions::default()
        }
    }

    #[test]
    fn decodes_hevc_mp4() {
        let clip = decode_video(&media("hevc_aac.mp4"), &all_frames()).expect("decode");
        assert_eq!(clip.frames.len(), 13, "0.52 s at 25 fps");
        for (i, frame) in clip.frames.iter().enumerate() {
            assert_eq!((frame.width, frame.height), (320, 240), "frame {i}");
            let px = |x: usize, y: usize| {
                let at = (y * 320 + x) * 3;
                (frame.rgb[at], frame.rgb[at + 1], frame.rgb[at + 2])
            };
            let (r, g, b) = px(4, 4);
            assert!(
                r > 200 && g < 60 && b < 60,
                "frame {i}: red square, got {:?}",
                (r, g, b)
            );
            let (r, g, b) = px(160, 120);
            assert!(
                r < 60 && g < 60 && b < 60,
                "frame {i}: black middle, got {:?}",
                (r, g, b)
            );
        }
        let times: Vec<i64> = clip.frames.iter().map(|f| f.timestamp_ms).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    }

    #[test]
    fn reads_hvcc_and_sps() {
        let bytes = media("hevc_aac.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        let record = parse_hvcc(&video.config).expect("hvcC");
        assert_eq!(record.nal_length_size, 4);
        assert_eq!(
            (
                record.chroma_format,
                record.bit_depth_luma,
                record.bit_depth_chroma
            ),
            (1, 8, 8)
        );
        let types: Vec<u8> = record
            .parameter_sets
            .iter()
            .map(|nal| (nal[0] >> 1) & 0x3F)
            .collect();
        assert_eq!(types, [NAL_VPS, NAL_SPS, NAL_PPS]);
        let sps = sps_facts(record.parameter_sets[1]).expect("sps");
        assert_eq!(
            sps,
            SpsFacts {
                width: 320,
                height: 240,
                chroma_format: 1,
                bit_depth_luma: 8,
                bit_depth_chroma: 8
            }
        );
    }

    #[test]
    fn refuses_other_formats() {
        let bytes = media("hevc_aac.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        // The same record claiming 10-bit luma, then 4:4:4.
        let mut ten_bit = video.config.clone();
        ten_bit[17] = (ten_bit[17] & !0x07) | 2;
        assert!(matches!(
            HevcDecoder::new(&ten_bit),
            Err(MediaError::UnsupportedCodec { feature: None, .. })
        ));
        let mut yuv444 = video.config.clone();
        yuv444[16] = (yuv444[16] & !0x03) | 3;
        assert!(matches!(
            HevcDecoder::new(&yuv444),
            Err(MediaError::UnsupportedCodec { feature: None, .. })
        ));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(HevcDecoder::new(&[1, 2, 3]).is_err());
        assert!(HevcDecoder::new(&[0; 40]).is_err());
        let bytes = media("hevc_aac.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        for cut in 0..video.config.len() {
            let _ = HevcDecoder::new(&video.config[..cut]);
        }
        let mut decoder = HevcDecoder::new(&video.config).expect("decoder");
        let mut ignore = |_: YuvView<'_>| Ok(());
        assert!(matches!(
            decoder.decode(&[0, 0, 0, 50, 0x26, 1, 2], &mut ignore),
            Err(MediaError::Decode { codec: "HEVC", .. })
        ));
        assert!(decoder.decode(&[0, 0], &mut ignore).is_err());
        // Garbage slice payloads: an error or nothing, never a crash.
        let mut garbage: Vec<u8> = vec![0x26, 0x01];
        garbage.extend((0..2000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8));
        let mut packet = (garbage.len() as u32).to_be_bytes().to_vec();
        packet.extend_from_slice(&garbage);
        let _ = decoder.decode(&packet, &mut ignore);
        let _ = decoder.flush(&mut ignore);
    }

    #[test]
    fn corrupted_packets_do_not_crash() {
        let bytes = media("hevc_aac.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        // Keep the length prefix and NAL header; damage the payload.
        decode_damaged_packets(&video.packets, 7, || {
            Box::new(HevcDecoder::new(&video.config).expect("decoder"))
        });
    }
}
