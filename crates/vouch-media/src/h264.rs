//! H.264 decoding with the pure-Rust `rusty_h264-decoder` (BSD-2-Clause; Baseline, Main and
//! High 4:2:0 8-bit, CAVLC and CABAC): [`H264Decoder`] implements [`VideoDecoder`] for AVCC
//! (length-prefixed) packets, as MP4 and Matroska store them.
//!
//! The decoder wants Annex B, so each packet's NAL units are rewritten with start codes, and the
//! SPS/PPS from the `avcC` record go in front of the first packet. It returns pictures in decode
//! order with their picture order count; a small reorder buffer (as deep as the SPS says B-frames
//! may reorder, 16 when it does not say, emptied at every IDR) puts them in presentation order.
//! Colour range and matrix come from the SPS VUI ([`sps_facts`]).

use rusty_h264_common::YuvFrame;
use rusty_h264_decoder::{DecodeError, Decoder};

use super::demux::{ColorInfo, VideoDecoder, YuvView};
use super::error::MediaError;
use super::level::{LEVEL_MAX_FRAME_MBS as MAX_FRAME_MBS, LEVEL_MAX_SIDE as MAX_SIDE};

const CODEC: &str = "H.264";

/// The most pictures H.264 may hold back for reordering (the largest DPB).
const MAX_REORDER: usize = 16;

/// Level 5.2's decoded picture buffer, macroblocks (MaxDpbMbs, Table A-1): what a conforming
/// stream at level 5.2 or below keeps, whatever its level says. Reference pictures beyond it are
/// refused, and the reordering buffer is sized by it, so the pictures a stream can make the
/// decoder hold are bounded (at 4K, five pictures of each).
const MAX_DPB_MBS: u64 = 184_320;

/// Checks an SPS (from the avcC or in band) against the level 5.2 limits; returns its facts.
fn checked_sps(sps: &[u8]) -> Result<SpsFacts, MediaError> {
    let facts = sps_facts(sps)
        .ok_or_else(|| MediaError::decode(CODEC, "unreadable sequence parameter set"))?;
    if facts.width > MAX_SIDE || facts.height > MAX_SIDE {
        return Err(MediaError::LimitExceeded {
            what: "H.264 picture side",
            value: u64::from(facts.width.max(facts.height)),
            limit: u64::from(MAX_SIDE),
        });
    }
    if facts.frame_mbs > MAX_FRAME_MBS {
        return Err(MediaError::LimitExceeded {
            what: "H.264 picture size in macroblocks",
            value: facts.frame_mbs,
            limit: MAX_FRAME_MBS,
        });
    }
    let references = u64::from(facts.max_num_ref_frames) * facts.frame_mbs;
    if references > MAX_DPB_MBS {
        return Err(MediaError::LimitExceeded {
            what: "H.264 reference picture macroblocks",
            value: references,
            limit: MAX_DPB_MBS,
        });
    }
    Ok(facts)
}

/// How many pictures may wait for reordering: the SPS's own figure when it gives one, else the
/// largest buffer level 5.2 allows at this picture size (the standard's default), never more
/// than that.
fn reorder_depth(facts: &SpsFacts) -> usize {
    let buffer = (MAX_DPB_MBS / facts.frame_mbs.max(1)).clamp(1, MAX_REORDER as u64) as usize;
    facts
        .max_num_reorder_frames
        .map_or(buffer, |depth| (depth as usize).min(buffer))
}

const START_CODE: [u8; 4] = [0, 0, 0, 1];

/// An H.264 decoder fed with AVCC packets.
pub(crate) struct H264Decoder {
    decoder: Decoder,
    /// Bytes in each NAL length prefix (1, 2 or 4).
    nal_length_size: usize,
    /// SPS and PPS from the avcC in Annex B form; sent with the first packet, then emptied.
    parameter_sets: Vec<u8>,
    color: ColorInfo,
    /// Pictures held back for reordering, with their picture order counts.
    pending: Vec<(i32, YuvFrame)>,
    /// How many pictures may wait in `pending` before the earliest must come out.
    reorder_depth: usize,
    /// Reused Annex B buffer, to avoid one allocation per packet.
    annex_b: Vec<u8>,
}

impl std::fmt::Debug for H264Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H264Decoder")
            .field("nal_length_size", &self.nal_length_size)
            .field("reorder_depth", &self.reorder_depth)
            .finish_non_exhaustive()
    }
}

impl H264Decoder {
    /// Creates a decoder from an `AVCDecoderConfigurationRecord` (avcC). An empty record (MP4
    /// `avc3`, parameter sets in band) means 4-byte NAL lengths.
    pub(crate) fn new(avcc: &[u8]) -> Result<Self, MediaError> {
        let mut nal_length_size = 4;
        let mut parameter_sets = Vec::new();
        let mut color = ColorInfo::default();
        let mut reorder_depth = MAX_REORDER;
        if !avcc.is_empty() {
            let record = parse_avcc(avcc)?;
            nal_length_size = record.nal_length_size;
            for (i, sps) in record.sps.iter().enumerate() {
                let facts = checked_sps(sps)?;
                if i == 0 {
                    color = facts.color;
                    reorder_depth = self::reorder_depth(&facts);
                }
                parameter_sets.extend_from_slice(&START_CODE);
                parameter_sets.extend_from_slice(sps);
            }
            for pps in &record.pps {
                parameter_sets.extend_from_slice(&START_CODE);
                parameter_sets.extend_from_slice(pps);
            }
        }
        Ok(H264Decoder {
            decoder: Decoder::new(),
            nal_length_size,
            parameter_sets,
            color,
            pending: Vec::new(),
            reorder_depth,
            annex_b: Vec::new(),
        })
    }

    /// The colour facts from the first SPS (BT.601 limited range when it has no VUI).
    #[cfg(test)]
    pub(crate) fn color(&self) -> ColorInfo {
        self.color
    }

    /// Hands the held-back picture with the lowest order count to `on_frame`.
    fn emit_earliest(
        &mut self,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        let Some(index) = (0..self.pending.len()).min_by_key(|&i| self.pending[i].0) else {
            return Ok(());
        };
        let (_, frame) = self.pending.remove(index);
        emit(&frame, self.color, on_frame)
    }
}

/// Hands one decoded picture to `on_frame`.
fn emit(
    frame: &YuvFrame,
    color: ColorInfo,
    on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
) -> Result<(), MediaError> {
    let (width, height) = (frame.width, frame.height);
    let chroma_w = width.div_ceil(2);
    let chroma_h = height.div_ceil(2);
    // Only hand over planes that really hold the picture, so converters can index freely.
    if width == 0
        || height == 0
        || frame.y.len() < width * height
        || frame.u.len() < chroma_w * chroma_h
        || frame.v.len() < chroma_w * chroma_h
    {
        return Err(MediaError::decode(
            CODEC,
            "the decoder returned a picture with inconsistent planes",
        ));
    }
    on_frame(YuvView {
        width: u32::try_from(width).map_err(|_| MediaError::decode(CODEC, "picture too wide"))?,
        height: u32::try_from(height).map_err(|_| MediaError::decode(CODEC, "picture too tall"))?,
        y: &frame.y,
        u: &frame.u,
        v: &frame.v,
        y_stride: width,
        u_stride: chroma_w,
        v_stride: chroma_w,
        color,
    })
}

fn map_decode_error(error: DecodeError) -> MediaError {
    match error {
        DecodeError::Unsupported(tool) => MediaError::UnsupportedCodec {
            codec: format!("H.264 with {tool}"),
            feature: None,
        },
        other => MediaError::decode(CODEC, other.to_string()),
    }
}

impl VideoDecoder for H264Decoder {
    fn decode(
        &mut self,
        packet: &[u8],
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        self.annex_b.clear();
        self.annex_b.append(&mut self.parameter_sets);
        let idr = avcc_to_annex_b(packet, self.nal_length_size, &mut self.annex_b)?;
        if self.annex_b.is_empty() {
            return Ok(());
        }
        // An IDR restarts the order counts: everything before it is shown first.
        if idr {
            while !self.pending.is_empty() {
                self.emit_earliest(on_frame)?;
            }
        }
        let picture = self
            .decoder
            .decode(&self.annex_b)
            .map_err(map_decode_error)?;
        if let Some(frame) = picture {
            self.pending.push((self.decoder.last_poc(), frame));
            while self.pending.len() > self.reorder_depth {
                self.emit_earliest(on_frame)?;
            }
        }
        Ok(())
    }

    fn flush(
        &mut self,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError> {
        while !self.pending.is_empty() {
            self.emit_earliest(on_frame)?;
        }
        Ok(())
    }
}

/// Appends the NAL units of an AVCC packet to `out` with Annex B start codes; returns whether
/// one of them is an IDR slice.
fn avcc_to_annex_b(
    packet: &[u8],
    length_size: usize,
    out: &mut Vec<u8>,
) -> Result<bool, MediaError> {
    let mut idr = false;
    let mut rest = packet;
    while !rest.is_empty() {
        let (prefix, tail) = rest
            .split_at_checked(length_size)
            .ok_or_else(|| MediaError::decode(CODEC, "packet ends inside a NAL length prefix"))?;
        let len = prefix
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        let (nal, tail) = tail
            .split_at_checked(len)
            .ok_or_else(|| MediaError::decode(CODEC, "NAL unit runs past the end of its packet"))?;
        if let Some(&header) = nal.first() {
            idr |= header & 0x1F == 5;
            // A sequence parameter set in band is held to the same limits as the avcC's.
            if header & 0x1F == 7 {
                checked_sps(nal)?;
            }
            out.extend_from_slice(&START_CODE);
            out.extend_from_slice(nal);
        }
        rest = tail;
    }
    Ok(idr)
}

/// The parts of an avcC that decoding needs.
struct AvcC<'a> {
    nal_length_size: usize,
    sps: Vec<&'a [u8]>,
    pps: Vec<&'a [u8]>,
}

fn parse_avcc(avcc: &[u8]) -> Result<AvcC<'_>, MediaError> {
    let bad = || MediaError::decode(CODEC, "malformed avcC decoder configuration record");
    if avcc.len() < 7 || avcc[0] != 1 {
        return Err(bad());
    }
    let nal_length_size = usize::from(avcc[4] & 0x03) + 1;
    if nal_length_size == 3 {
        return Err(bad());
    }
    let mut pos = 5;
    // Reads `count` length-prefixed parameter sets; counts are at most 31 and 255 by syntax.
    let read_sets = |count: usize, pos: &mut usize| -> Result<Vec<&[u8]>, MediaError> {
        let mut sets = Vec::with_capacity(count);
        for _ in 0..count {
            let len_bytes = avcc.get(*pos..*pos + 2).ok_or_else(bad)?;
            let len = usize::from(u16::from_be_bytes([len_bytes[0], len_bytes[1]]));
            let set = avcc.get(*pos + 2..*pos + 2 + len).ok_or_else(bad)?;
            *pos += 2 + len;
            if !set.is_empty() {
                sets.push(set);
            }
        }
        Ok(sets)
    };
    let sps_count = usize::from(avcc[pos] & 0x1F);
    pos += 1;
    let sps = read_sets(sps_count, &mut pos)?;
    let pps_count = usize::from(*avcc.get(pos).ok_or_else(bad)?);
    pos += 1;
    let pps = read_sets(pps_count, &mut pos)?;
    if sps.is_empty() || pps.is_empty() {
        return Err(bad());
    }
    Ok(AvcC {
        nal_length_size,
        sps,
        pps,
    })
}

/// What we read from an SPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SpsFacts {
    width: u32,
    height: u32,
    /// Macroblocks in a frame.
    frame_mbs: u64,
    /// Reference pictures the decoder keeps.
    max_num_ref_frames: u32,
    color: ColorInfo,
    /// From the VUI's bitstream restriction, when present.
    max_num_reorder_frames: Option<u32>,
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

    fn se(&mut self) -> Option<i64> {
        let k = i64::from(self.ue()?);
        Some(if k % 2 == 1 { (k + 1) / 2 } else { -(k / 2) })
    }
}

/// Reads size and colour facts from an SPS NAL unit (ITU-T H.264 7.3.2.1.1 and E.1.1). Only
/// `video_full_range_flag` and `matrix_coefficients` matter for colour: BT.709 when the matrix is
/// 1, else BT.601; limited range unless the flag says full. No VUI means BT.601 limited.
fn sps_facts(nal: &[u8]) -> Option<SpsFacts> {
    // Drop the NAL header byte and the emulation prevention bytes (00 00 03 -> 00 00).
    let mut rbsp = Vec::with_capacity(nal.len());
    let mut zeros = 0;
    for &b in nal.get(1..)? {
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
    let profile = r.bits(8)?;
    r.bits(16)?; // constraint flags, level
    r.ue()?; // sps id
    let mut chroma_format = 1;
    if matches!(
        profile,
        100 | 110 | 122 | 244 | 44 | 83 | 86 | 118 | 128 | 138 | 139 | 134 | 135
    ) {
        chroma_format = r.ue()?;
        if chroma_format == 3 {
            r.bit()?;
        }
        r.ue()?; // bit depth luma
        r.ue()?; // bit depth chroma
        r.bit()?; // qpprime_y_zero_transform_bypass
        if r.bit()? == 1 {
            let lists = if chroma_format == 3 { 12 } else { 8 };
            for i in 0..lists {
                if r.bit()? == 1 {
                    let size = if i < 6 { 16 } else { 64 };
                    let (mut last, mut next) = (8i64, 8i64);
                    for _ in 0..size {
                        if next != 0 {
                            next = (last + r.se()? + 256) % 256;
                        }
                        last = if next == 0 { last } else { next };
                    }
                }
            }
        }
    }
    r.ue()?; // log2_max_frame_num
    match r.ue()? {
        0 => {
            r.ue()?;
        }
        1 => {
            r.bit()?;
            r.se()?;
            r.se()?;
            let cycle = r.ue()?;
            if cycle > 255 {
                return None;
            }
            for _ in 0..cycle {
                r.se()?;
            }
        }
        _ => {}
    }
    let max_num_ref_frames = r.ue()?;
    r.bit()?; // gaps_in_frame_num_allowed
    let width_mbs = u64::from(r.ue()?) + 1;
    let height_units = u64::from(r.ue()?) + 1;
    let frame_mbs_only = r.bit()?;
    if frame_mbs_only == 0 {
        r.bit()?;
    }
    r.bit()?; // direct_8x8_inference
    let mut crop = [0u64; 4];
    if r.bit()? == 1 {
        for c in &mut crop {
            *c = u64::from(r.ue()?);
        }
    }
    let (crop_x, crop_y) = match chroma_format {
        0 => (1, 2 - u64::from(frame_mbs_only)),
        1 => (2, 2 * (2 - u64::from(frame_mbs_only))),
        2 => (2, 2 - u64::from(frame_mbs_only)),
        _ => (1, 2 - u64::from(frame_mbs_only)),
    };
    let width = (width_mbs * 16).saturating_sub(crop_x * (crop[0] + crop[1]));
    let height = (height_units * 16 * (2 - u64::from(frame_mbs_only)))
        .saturating_sub(crop_y * (crop[2] + crop[3]));
    let mut color = ColorInfo::default();
    let mut max_num_reorder_frames = None;
    // The VUI is optional and comes last; a truncated one just leaves the defaults.
    let vui = (|| -> Option<()> {
        if r.bit()? == 0 {
            return Some(());
        }
        if r.bit()? == 1 && r.bits(8)? == 255 {
            r.bits(32)?; // sample aspect ratio
        }
        if r.bit()? == 1 {
            r.bit()?; // overscan_appropriate
        }
        if r.bit()? == 1 {
            r.bits(3)?; // video_format
            color.full_range = r.bit()? == 1;
            if r.bit()? == 1 {
                r.bits(16)?; // colour primaries, transfer characteristics
                color.bt709 = r.bits(8)? == 1;
            }
        }
        if r.bit()? == 1 {
            r.ue()?; // chroma sample locations
            r.ue()?;
        }
        if r.bit()? == 1 {
            r.bits(32)?; // timing: num_units_in_tick, time_scale, fixed_frame_rate
            r.bits(32)?;
            r.bit()?;
        }
        let nal_hrd = r.bit()? == 1;
        if nal_hrd {
            skip_hrd(&mut r)?;
        }
        let vcl_hrd = r.bit()? == 1;
        if vcl_hrd {
            skip_hrd(&mut r)?;
        }
        if nal_hrd || vcl_hrd {
            r.bit()?; // low_delay_hrd
        }
        r.bit()?; // pic_struct_present
        if r.bit()? == 1 {
            r.bit()?; // motion_vectors_over_pic_boundaries
            for _ in 0..4 {
                r.ue()?; // max bytes/bits denominators, log2 max mv lengths
            }
            max_num_reorder_frames = Some(r.ue()?);
        }
        Some(())
    })();
    let _ = vui;
    Some(SpsFacts {
        width: width.min(u64::from(u32::MAX)) as u32,
        height: height.min(u64::from(u32::MAX)) as u32,
        frame_mbs: width_mbs * height_units * (2 - u64::from(frame_mbs_only)),
        max_num_ref_frames,
        color,
        max_num_reorder_frames,
    })
}

/// Steps over `hrd_parameters()` (H.264 E.1.2).
fn skip_hrd(r: &mut Bits<'_>) -> Option<()> {
    let count = r.ue()?.checked_add(1).filter(|n| *n <= 32)?;
    r.bits(8)?; // bit_rate_scale, cpb_size_scale
    for _ in 0..count {
        r.ue()?;
        r.ue()?;
        r.bit()?;
    }
    r.bits(20)?; // four 5-bit lengths
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mp4::demux_mp4;
    use crate::test_support::{decode_damaged_packets, media};

    /// Decodes every packet of a file's video track; returns (width, height, mean luma) per
    /// output picture in output order, and the sorted packet times.
    fn decode_all(name: &str) -> (Vec<(u32, u32, f64)>, Vec<i64>) {
        let bytes = media(name);
        let demuxed = demux_mp4(&bytes).expect("demux");
        let video = demuxed.video.expect("video");
        let mut decoder = H264Decoder::new(&video.config).expect("decoder");
        let mut frames = Vec::new();
        let mut on_frame = |f: YuvView<'_>| {
            let mut sum = 0u64;
            for row in 0..f.height as usize {
                let start = row * f.y_stride;
                sum += f.y[start..start + f.width as usize]
                    .iter()
                    .map(|&p| u64::from(p))
                    .sum::<u64>();
            }
            frames.push((
                f.width,
                f.height,
                sum as f64 / f64::from(f.width * f.height),
            ));
            Ok(())
        };
        for packet in &video.packets {
            decoder.decode(&packet.data, &mut on_frame).expect("decode");
        }
        decoder.flush(&mut on_frame).expect("flush");
        let mut pts: Vec<i64> = video.packets.iter().map(|p| p.pts_ms).collect();
        pts.sort_unstable();
        (frames, pts)
    }

    fn check_flash(name: &str) {
        let (frames, pts) = decode_all(name);
        assert_eq!(
            frames.len(),
            50,
            "{name}: all frames, including the flushed ones"
        );
        assert!(frames.iter().all(|f| (f.0, f.1) == (320, 240)));
        let white: Vec<usize> = (0..frames.len()).filter(|&i| frames[i].2 > 200.0).collect();
        assert_eq!(
            white.len(),
            1,
            "{name}: exactly one white frame, got {white:?}"
        );
        let at = pts[white[0]];
        assert!((960..=1040).contains(&at), "{name}: white frame at {at} ms");
        assert!(
            frames
                .iter()
                .enumerate()
                .all(|(i, f)| i == white[0] || f.2 < 40.0),
            "{name}: others dark"
        );
    }

    /// Every picture, in presentation order, is bit-exact with ffmpeg's H.264 decoder (the hashes
    /// come from `scripts/make-test-media`). This checks the reorder buffer as well as the decoder.
    #[test]
    fn pictures_match_ffmpeg_bit_for_bit() {
        use sha2::{Digest, Sha256};
        for name in ["bench_h264_aac.mp4", "h264_aac.mov"] {
            let expected = String::from_utf8(media(&format!("{name}.frames.sha256"))).unwrap();
            let expected: Vec<&str> = expected.lines().collect();
            let bytes = media(name);
            let video = demux_mp4(&bytes).expect("demux").video.expect("video");
            let mut decoder = H264Decoder::new(&video.config).expect("decoder");
            let mut hashes = Vec::new();
            let mut on_frame = |f: YuvView<'_>| {
                let mut hash = Sha256::new();
                let (w, h) = (f.width as usize, f.height as usize);
                let planes = [
                    (f.y, f.y_stride, w, h),
                    (f.u, f.u_stride, w.div_ceil(2), h.div_ceil(2)),
                    (f.v, f.v_stride, w.div_ceil(2), h.div_ceil(2)),
                ];
                for (plane, stride, width, rows) in planes {
                    for row in 0..rows {
                        hash.update(&plane[row * stride..row * stride + width]);
                    }
                }
                hashes.push(format!("{:x}", hash.finalize()));
                Ok(())
            };
            for packet in &video.packets {
                decoder.decode(&packet.data, &mut on_frame).expect("decode");
            }
            decoder.flush(&mut on_frame).expect("flush");
            assert_eq!(hashes.len(), expected.len(), "{name}: picture count");
            let differing: Vec<usize> = (0..hashes.len())
                .filter(|&i| hashes[i] != expected[i])
                .collect();
            assert!(
                differing.is_empty(),
                "{name}: pictures {differing:?} differ from ffmpeg"
            );
        }
    }

    #[test]
    fn decodes_high_profile_with_b_frames() {
        check_flash("h264_aac.mp4");
    }

    #[test]
    fn decodes_baseline() {
        check_flash("h264_baseline_aac.mp4");
    }

    #[test]
    fn decodes_fragmented_and_mov() {
        check_flash("h264_aac_fragmented.mp4");
        check_flash("h264_aac.mov");
    }

    #[test]
    fn reads_sps_size_and_colour() {
        let bytes = media("h264_aac.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        let record = parse_avcc(&video.config).expect("avcC");
        assert_eq!(record.nal_length_size, 4);
        let facts = sps_facts(record.sps[0]).expect("sps");
        assert_eq!((facts.width, facts.height), (320, 240));
        // x264 from yuv420p writes no colour description: BT.601 limited.
        assert_eq!(
            facts.color,
            ColorInfo {
                full_range: false,
                bt709: false
            }
        );
        assert_eq!(
            H264Decoder::new(&video.config).expect("decoder").color(),
            facts.color
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(H264Decoder::new(&[1, 2, 3]).is_err());
        assert!(H264Decoder::new(&[0; 40]).is_err());
        let bytes = media("h264_aac.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        // Truncated avcC records.
        for cut in 0..video.config.len() {
            let _ = H264Decoder::new(&video.config[..cut]);
        }
        let mut decoder = H264Decoder::new(&video.config).expect("decoder");
        let mut ignore = |_: YuvView<'_>| Ok(());
        // A NAL length running past the packet.
        assert!(matches!(
            decoder.decode(&[0, 0, 0, 50, 0x65, 1, 2], &mut ignore),
            Err(MediaError::Decode { codec: "H.264", .. })
        ));
        assert!(decoder.decode(&[0, 0], &mut ignore).is_err());
        // Garbage NAL payloads: an error or nothing, never a crash.
        let garbage: Vec<u8> = (0..2000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        let mut packet = (garbage.len() as u32).to_be_bytes().to_vec();
        packet.extend_from_slice(&garbage);
        let _ = decoder.decode(&packet, &mut ignore);
        let _ = decoder.flush(&mut ignore);
    }

    #[test]
    fn corrupted_packets_do_not_crash() {
        let bytes = media("h264_aac.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        // Keep the length prefix and NAL header; damage the payload.
        decode_damaged_packets(&video.packets, 6, || {
            Box::new(H264Decoder::new(&video.config).expect("decoder"))
        });
    }

    /// Decode time of the 640x480 30 fps 5 s clip (150 frames), one thread:
    /// `cargo test --release -p vouch-media --lib h264 -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing, run by hand"]
    fn bench_decode_time() {
        let bytes = media("bench_h264_aac.mp4");
        let video = demux_mp4(&bytes).expect("demux").video.expect("video");
        let mut best = f64::MAX;
        for _ in 0..5 {
            let start = std::time::Instant::now();
            let mut decoder = H264Decoder::new(&video.config).expect("decoder");
            let mut count = 0;
            let mut on_frame = |_: YuvView<'_>| {
                count += 1;
                Ok(())
            };
            for packet in &video.packets {
                decoder.decode(&packet.data, &mut on_frame).expect("decode");
            }
            decoder.flush(&mut on_frame).expect("flush");
            assert_eq!(count, video.packets.len());
            best = best.min(start.elapsed().as_secs_f64() * 1000.0);
        }
        println!(
            "bench_h264_aac.mp4: {} frames decoded in {best:.1} ms (best of 5)",
            video.packets.len()
        );
    }
}
