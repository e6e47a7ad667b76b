//! Matroska and WebM demuxing: [`demux_matroska`] turns a file into a [`Demuxed`] (first video and
//! first audio track, packets with millisecond timestamps).
//!
//! The reader is our own: a bounds-checked EBML walk over the input slice that reads the EBML
//! header, Info, Tracks and Clusters and nothing else (SeekHead, Cues, Tags and Chapters are stepped
//! over by size). Every step moves forward by at least one element header and nothing recurses
//! deeper than the fixed Matroska layout, so no input can make it loop or overflow the stack; a
//! crate we used before looped forever on crafted SeekHeads (see `docs/fuzzing.md`).
//!
//! Browser recordings ("live" WebM from `MediaRecorder`) have no Cues, no Duration and clusters of
//! unknown size; everything here works from the blocks alone, so those files demux like any other.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use super::demux::{AudioTrack, Demuxed, Packet, VideoTrack};
use super::error::MediaError;
use super::opus_format::{packet_samples, OpusHead};
use super::types::{AudioCodec, Container, Rotation, VideoCodec};
use super::vp_format;

/// The most packets (video plus audio) a file may have: about 55 minutes of 30 fps video with 20 ms
/// audio packets, far beyond any verification clip; a guard against decompression bombs.
const MAX_PACKETS: usize = 200_000;

/// The most tracks a file may declare; real recordings have two or three.
const MAX_TRACKS: usize = 64;

/// The EBML magic every Matroska and WebM file starts with.
const EBML_MAGIC: [u8; 4] = [0x1A, 0x45, 0xDF, 0xA3];

/// What the caller is told a file should have been.
const EXPECTED: &str = "MP4, MOV, WebM or Matroska video";

/// Opus always decodes at 48 kHz, whatever the track's `SamplingFrequency` says.
const OPUS_RATE: u32 = 48_000;

// Element IDs (Matroska specification, RFC 9559), with their length markers.
const ID_EBML: u32 = 0x1A45_DFA3;
const ID_DOC_TYPE: u32 = 0x4282;
const ID_SEGMENT: u32 = 0x1853_8067;
const ID_INFO: u32 = 0x1549_A966;
const ID_TIMESTAMP_SCALE: u32 = 0x2A_D7B1;
const ID_TRACKS: u32 = 0x1654_AE6B;
const ID_TRACK_ENTRY: u32 = 0xAE;
const ID_TRACK_NUMBER: u32 = 0xD7;
const ID_TRACK_TYPE: u32 = 0x83;
const ID_CODEC_ID: u32 = 0x86;
const ID_CODEC_PRIVATE: u32 = 0x63A2;
const ID_CODEC_DELAY: u32 = 0x56AA;
const ID_VIDEO: u32 = 0xE0;
const ID_PIXEL_WIDTH: u32 = 0xB0;
const ID_PIXEL_HEIGHT: u32 = 0xBA;
const ID_AUDIO: u32 = 0xE1;
const ID_SAMPLING_FREQUENCY: u32 = 0xB5;
const ID_CHANNELS: u32 = 0x9F;
const ID_CONTENT_ENCODINGS: u32 = 0x6D80;
const ID_CONTENT_ENCODING: u32 = 0x6240;
const ID_CONTENT_ENCODING_SCOPE: u32 = 0x5032;
const ID_CONTENT_ENCODING_TYPE: u32 = 0x5033;
const ID_CONTENT_COMPRESSION: u32 = 0x5034;
const ID_CONTENT_COMP_ALGO: u32 = 0x4254;
const ID_CONTENT_COMP_SETTINGS: u32 = 0x4255;
const ID_CLUSTER: u32 = 0x1F43_B675;
const ID_CLUSTER_TIMESTAMP: u32 = 0xE7;
const ID_BLOCK_GROUP: u32 = 0xA0;
const ID_BLOCK: u32 = 0xA1;
const ID_SIMPLE_BLOCK: u32 = 0xA3;
const ID_DISCARD_PADDING: u32 = 0x75A2;
/// Top-level elements: one of these ends a cluster of unknown size.
const TOP_LEVEL_IDS: [u32; 9] = [
    ID_EBML,
    ID_CLUSTER,
    0x1C53_BB6B, // Cues
    0x1254_C367, // Tags
    0x1043_A770, // Chapters
    0x1941_A469, // Attachments
    0x114D_9B74, // SeekHead
    ID_INFO,
    ID_TRACKS,
];

const TRACK_VIDEO: u64 = 1;
const TRACK_AUDIO: u64 = 2;

/// Demuxes a Matroska or WebM file.
///
/// Timestamps are relative to the first packet of the chosen tracks. A file cut inside a cluster
/// yields the packets before the cut; a file cut before its first cluster is [`MediaError::Truncated`].
pub(crate) fn demux_matroska(bytes: &[u8]) -> Result<Demuxed<'_>, MediaError> {
    demux_with_limit(bytes, MAX_PACKETS)
}

fn demux_with_limit(bytes: &[u8], max_packets: usize) -> Result<Demuxed<'_>, MediaError> {
    if bytes.is_empty() {
        return Err(MediaError::Empty);
    }
    if !bytes.starts_with(&EBML_MAGIC) {
        return Err(MediaError::UnknownFormat { expected: EXPECTED });
    }
    let file = read_file(bytes, max_packets)?;
    assemble(bytes, file)
}

// --- The EBML walk ---

/// One element: where its data starts and ends (clamped to the input when the file is cut).
#[derive(Debug, Clone, Copy)]
struct Element {
    id: u32,
    /// Where its data starts.
    start: usize,
    /// Where its data ends: the declared end, or the parent's end for an unknown size or a cut file.
    end: usize,
    /// The size field said "unknown" (live WebM Segments and Clusters).
    unknown_size: bool,
    /// The declared size runs past the end of the input: the file was cut inside this element.
    cut: bool,
}

fn truncated() -> MediaError {
    MediaError::Truncated("the Matroska file ends inside an element".into())
}

fn malformed(what: &str) -> MediaError {
    MediaError::Malformed(format!("invalid Matroska structure: {what}"))
}

/// An EBML variable-length integer at `at`: (value with the length marker removed, length, whether
/// all value bits are ones). `None` when the input ends first; `Err` for a first byte of zero.
fn read_vint(bytes: &[u8], at: usize, max_len: usize) -> Result<Option<(u64, usize, bool)>, ()> {
    let Some(&first) = bytes.get(at) else {
        return Ok(None);
    };
    let len = first.leading_zeros() as usize + 1;
    if len > max_len {
        return Err(());
    }
    let Some(raw) = bytes.get(at..at + len) else {
        return Ok(None);
    };
    let mask = if len == 8 { 0 } else { 0xFFu8 >> len };
    let value = raw[1..].iter().fold(u64::from(raw[0] & mask), |acc, &b| {
        (acc << 8) | u64::from(b)
    });
    let all_ones = value == (1u64 << (7 * len)) - 1;
    Ok(Some((value, len, all_ones)))
}

/// Reads the element whose header starts at `at`, inside a parent whose data ends at `limit`.
fn read_element(bytes: &[u8], at: usize, limit: usize) -> Result<Element, MediaError> {
    let window = &bytes[..limit];
    let at_eof = limit == bytes.len();
    let overrun = || {
        if at_eof {
            truncated()
        } else {
            malformed("an element header runs past its parent")
        }
    };
    let (id_value, id_len, _) = read_vint(window, at, 4)
        .map_err(|()| malformed("an element ID is invalid"))?
        .ok_or_else(overrun)?;
    // IDs keep their length marker.
    let id = (id_value as u32) | (1u32 << (7 * id_len));
    let (size, size_len, unknown_size) = read_vint(window, at + id_len, 8)
        .map_err(|()| malformed("an element size is invalid"))?
        .ok_or_else(overrun)?;
    let start = at + id_len + size_len;
    if unknown_size {
        return Ok(Element {
            id,
            start,
            end: limit,
            unknown_size: true,
            cut: false,
        });
    }
    let declared_end = usize::try_from(size)
        .ok()
        .and_then(|size| start.checked_add(size));
    match declared_end {
        Some(end) if end <= limit => Ok(Element {
            id,
            start,
            end,
            unknown_size: false,
            cut: false,
        }),
        // The parent reaches the end of the input, so the file was cut inside this element.
        _ if at_eof => Ok(Element {
            id,
            start,
            end: limit,
            unknown_size: false,
            cut: true,
        }),
        _ => Err(malformed("an element runs past its parent")),
    }
}

/// The children of `parent`, in order. Stops at the first error, which it yields.
fn children(
    bytes: &[u8],
    parent: Element,
) -> impl Iterator<Item = Result<Element, MediaError>> + '_ {
    let mut at = parent.start;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || at >= parent.end {
            return None;
        }
        let child = read_element(bytes, at, parent.end);
        match &child {
            // Only Segments and Clusters may have an unknown size, and they are read elsewhere.
            Ok(element) if element.unknown_size => {
                failed = true;
                return Some(Err(malformed(
                    "an element other than a Cluster has an unknown size",
                )));
            }
            Ok(element) => at = element.end,
            Err(_) => failed = true,
        }
        Some(child)
    })
}

fn read_uint(bytes: &[u8], element: Element) -> Result<u64, MediaError> {
    let data = &bytes[element.start..element.end];
    if element.cut {
        return Err(truncated());
    }
    if data.len() > 8 {
        return Err(malformed("an unsigned integer is longer than 8 bytes"));
    }
    Ok(data.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b)))
}

fn read_int(bytes: &[u8], element: Element) -> Result<i64, MediaError> {
    let data = &bytes[element.start..element.end];
    if element.cut {
        return Err(truncated());
    }
    match data.first() {
        None => Ok(0),
        Some(_) if data.len() > 8 => Err(malformed("a signed integer is longer than 8 bytes")),
        Some(&first) => {
            let sign = if first & 0x80 != 0 { -1i64 } else { 0 };
            Ok(data.iter().fold(sign, |acc, &b| (acc << 8) | i64::from(b)))
        }
    }
}

fn read_float(bytes: &[u8], element: Element) -> Result<f64, MediaError> {
    let data = &bytes[element.start..element.end];
    if element.cut {
        return Err(truncated());
    }
    match data.len() {
        0 => Ok(0.0),
        4 => Ok(f64::from(f32::from_be_bytes([
            data[0], data[1], data[2], data[3],
        ]))),
        8 => {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(data);
            Ok(f64::from_be_bytes(raw))
        }
        _ => Err(malformed("a float is neither 4 nor 8 bytes")),
    }
}

fn read_string(bytes: &[u8], element: Element) -> Result<String, MediaError> {
    if element.cut {
        return Err(truncated());
    }
    let data = &bytes[element.start..element.end];
    let data = data.split(|&b| b == 0).next().unwrap_or_default();
    Ok(String::from_utf8_lossy(data).into_owned())
}

fn read_binary(bytes: &[u8], element: Element) -> Result<&[u8], MediaError> {
    if element.cut {
        return Err(truncated());
    }
    Ok(&bytes[element.start..element.end])
}

/// A TrackEntry's fields that matter here.
#[derive(Debug, Clone)]
struct Track {
    number: u64,
    kind: u64,
    codec_id: String,
    codec_private: Vec<u8>,
    codec_delay_ns: Option<u64>,
    width: u64,
    height: u64,
    sampling_frequency: f64,
    channels: u64,
    /// Bytes removed by header-stripping compression, to put back in front of every frame.
    strip_prefix: Vec<u8>,
    /// Frames are zlib-compressed or encrypted: not readable here.
    opaque_frames: bool,
}

/// One frame of a block (a block holds several when laced).
#[derive(Debug, Clone)]
struct BlockFrame {
    track: u64,
    /// Absolute timestamp in TimestampScale units.
    timestamp: i64,
    /// The SimpleBlock keyframe flag; `None` for a Block inside a BlockGroup.
    keyframe: Option<bool>,
    data: Range<usize>,
}

/// What the walk found.
struct File {
    container: Container,
    timestamp_scale: u64,
    tracks: Vec<Track>,
    frames: Vec<BlockFrame>,
    /// Per track, the DiscardPadding (ns) of its last block, `None` when that block has none.
    last_padding: HashMap<u64, Option<i64>>,
    /// The input ended inside an element.
    cut: bool,
}

fn read_file(bytes: &[u8], max_packets: usize) -> Result<File, MediaError> {
    let header = read_element(bytes, 0, bytes.len())?;
    if header.id != ID_EBML || header.unknown_size {
        return Err(malformed("bad EBML header"));
    }
    if header.cut {
        return Err(MediaError::Truncated("the EBML header is cut short".into()));
    }
    let mut doc_type = String::from("matroska");
    for child in children(bytes, header) {
        let child = child?;
        if child.id == ID_DOC_TYPE {
            doc_type = read_string(bytes, child)?;
        }
    }
    let container = match doc_type.as_str() {
        "webm" => Container::WebM,
        "matroska" => Container::Matroska,
        _ => return Err(MediaError::UnknownFormat { expected: EXPECTED }),
    };

    // Top-level elements other than the Segment (Void, CRC-32) may sit before it.
    let mut at = header.end;
    let segment = loop {
        if at >= bytes.len() {
            return Err(MediaError::Truncated(
                "the Matroska file ends before its Segment".into(),
            ));
        }
        let element = read_element(bytes, at, bytes.len())?;
        if element.id == ID_SEGMENT {
            break element;
        }
        if element.unknown_size || element.cut {
            return Err(malformed("no Segment after the EBML header"));
        }
        at = element.end;
    };

    let mut file = File {
        container,
        timestamp_scale: 1_000_000,
        tracks: Vec::new(),
        frames: Vec::new(),
        last_padding: HashMap::new(),
        cut: segment.cut,
    };
    let mut seen_tracks = false;
    let mut at = segment.start;
    while at < segment.end {
        let element = match read_element(bytes, at, segment.end) {
            Ok(element) => element,
            Err(MediaError::Truncated(_)) => {
                file.cut = true;
                break;
            }
            Err(error) => return Err(error),
        };
        // A second EBML document chained after this one: not ours to read.
        if element.id == ID_EBML {
            break;
        }
        let next = match element.id {
            ID_CLUSTER => read_cluster(bytes, element, &mut file, max_packets)?,
            _ if element.unknown_size => {
                return Err(malformed(
                    "an element other than a Cluster has an unknown size",
                ))
            }
            ID_INFO => {
                read_info(bytes, element, &mut file)?;
                element.end
            }
            ID_TRACKS if !seen_tracks => {
                seen_tracks = true;
                file.tracks = read_tracks(bytes, element)?;
                element.end
            }
            _ => element.end,
        };
        if element.cut {
            file.cut = true;
            break;
        }
        at = next;
    }
    if !seen_tracks {
        return Err(if file.cut {
            MediaError::Truncated("the Matroska file ends before its Tracks element".into())
        } else {
            malformed("the file has no Tracks element")
        });
    }
    Ok(file)
}

fn read_info(bytes: &[u8], info: Element, file: &mut File) -> Result<(), MediaError> {
    for child in children(bytes, info) {
        let child = child?;
        if child.id == ID_TIMESTAMP_SCALE {
            file.timestamp_scale = read_uint(bytes, child)?;
            if file.timestamp_scale == 0 {
                return Err(malformed("TimestampScale is zero"));
            }
        }
    }
    Ok(())
}

fn read_tracks(bytes: &[u8], tracks: Element) -> Result<Vec<Track>, MediaError> {
    let mut out = Vec::new();
    for entry in children(bytes, tracks) {
        let entry = entry?;
        if entry.id != ID_TRACK_ENTRY {
            continue;
        }
        if out.len() == MAX_TRACKS {
            return Err(MediaError::LimitExceeded {
                what: "track count",
                value: MAX_TRACKS as u64 + 1,
                limit: MAX_TRACKS as u64,
            });
        }
        out.push(read_track(bytes, entry)?);
    }
    Ok(out)
}

fn read_track(bytes: &[u8], entry: Element) -> Result<Track, MediaError> {
    let mut track = Track {
        number: 0,
        kind: 0,
        codec_id: String::new(),
        codec_private: Vec::new(),
        codec_delay_ns: None,
        width: 0,
        height: 0,
        sampling_frequency: 8000.0,
        channels: 1,
        strip_prefix: Vec::new(),
        opaque_frames: false,
    };
    for child in children(bytes, entry) {
        let child = child?;
        match child.id {
            ID_TRACK_NUMBER => track.number = read_uint(bytes, child)?,
            ID_TRACK_TYPE => track.kind = read_uint(bytes, child)?,
            ID_CODEC_ID => track.codec_id = read_string(bytes, child)?,
            ID_CODEC_PRIVATE => track.codec_private = read_binary(bytes, child)?.to_vec(),
            ID_CODEC_DELAY => track.codec_delay_ns = Some(read_uint(bytes, child)?),
            ID_VIDEO => {
                for setting in children(bytes, child) {
                    let setting = setting?;
                    match setting.id {
                        ID_PIXEL_WIDTH => track.width = read_uint(bytes, setting)?,
                        ID_PIXEL_HEIGHT => track.height = read_uint(bytes, setting)?,
                        _ => {}
                    }
                }
            }
            ID_AUDIO => {
                for setting in children(bytes, child) {
                    let setting = setting?;
                    match setting.id {
                        ID_SAMPLING_FREQUENCY => {
                            track.sampling_frequency = read_float(bytes, setting)?
                        }
                        ID_CHANNELS => track.channels = read_uint(bytes, setting)?,
                        _ => {}
                    }
                }
            }
            ID_CONTENT_ENCODINGS => read_encodings(bytes, child, &mut track)?,
            _ => {}
        }
    }
    if track.number == 0 {
        return Err(malformed("a track has no TrackNumber"));
    }
    Ok(track)
}

/// Header stripping (old mkvmerge files) is undone per frame; zlib and friends or encryption make
/// the frames opaque.
fn read_encodings(bytes: &[u8], encodings: Element, track: &mut Track) -> Result<(), MediaError> {
    for encoding in children(bytes, encodings) {
        let encoding = encoding?;
        if encoding.id != ID_CONTENT_ENCODING {
            continue;
        }
        let (mut scope, mut kind, mut algo, mut settings) = (1, 0, 0, Vec::new());
        for field in children(bytes, encoding) {
            let field = field?;
            match field.id {
                ID_CONTENT_ENCODING_SCOPE => scope = read_uint(bytes, field)?,
                ID_CONTENT_ENCODING_TYPE => kind = read_uint(bytes, field)?,
                ID_CONTENT_COMPRESSION => {
                    for compression in children(bytes, field) {
                        let compression = compression?;
                        match compression.id {
                            ID_CONTENT_COMP_ALGO => algo = read_uint(bytes, compression)?,
                            ID_CONTENT_COMP_SETTINGS => {
                                settings = read_binary(bytes, compression)?.to_vec()
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        // Scope bit 1 is "frame contents"; other scopes (CodecPrivate, next encoding) need nothing.
        if scope & 1 == 0 {
            continue;
        }
        // Type 0 is compression; algorithm 3 is header stripping.
        if kind == 0 && algo == 3 {
            track.strip_prefix.extend_from_slice(&settings);
        } else {
            track.opaque_frames = true;
        }
    }
    Ok(())
}

/// Reads one cluster, appending its frames; returns where the next top-level element starts.
fn read_cluster(
    bytes: &[u8],
    cluster: Element,
    file: &mut File,
    max_packets: usize,
) -> Result<usize, MediaError> {
    let mut timestamp: i64 = 0;
    let mut at = cluster.start;
    while at < cluster.end {
        let child = match read_element(bytes, at, cluster.end) {
            Ok(child) => child,
            Err(MediaError::Truncated(_)) => {
                file.cut = true;
                return Ok(bytes.len());
            }
            Err(error) => return Err(error),
        };
        if cluster.unknown_size && TOP_LEVEL_IDS.contains(&child.id) {
            // An unknown-size cluster ends where the next top-level element starts.
            return Ok(at);
        }
        if child.unknown_size {
            return Err(malformed("an element inside a Cluster has an unknown size"));
        }
        if child.cut {
            // A block cut short is garbage: keep what came before it.
            file.cut = true;
            return Ok(bytes.len());
        }
        match child.id {
            ID_CLUSTER_TIMESTAMP => {
                timestamp = i64::try_from(read_uint(bytes, child)?)
                    .map_err(|_| malformed("a Cluster timestamp is too large"))?;
            }
            ID_SIMPLE_BLOCK => {
                let track = read_block(bytes, child, timestamp, true, file, max_packets)?;
                file.last_padding.insert(track, None);
            }
            ID_BLOCK_GROUP => {
                let mut block = None;
                let mut padding = None;
                for part in children(bytes, child) {
                    let part = part?;
                    match part.id {
                        ID_BLOCK if block.is_none() => block = Some(part),
                        ID_DISCARD_PADDING => padding = Some(read_int(bytes, part)?),
                        _ => {}
                    }
                }
                if let Some(block) = block {
                    let track = read_block(bytes, block, timestamp, false, file, max_packets)?;
                    file.last_padding.insert(track, padding);
                }
            }
            _ => {}
        }
        at = child.end;
    }
    Ok(cluster.end)
}

/// Reads a Block or SimpleBlock, splitting laced frames; returns the block's track number.
fn read_block(
    bytes: &[u8],
    block: Element,
    cluster_timestamp: i64,
    simple: bool,
    file: &mut File,
    max_packets: usize,
) -> Result<u64, MediaError> {
    let bad = || malformed("a block is shorter than its header says");
    let data = &bytes[block.start..block.end];
    let (track, track_len, _) = read_vint(data, 0, 8)
        .map_err(|()| malformed("a block's track number is invalid"))?
        .ok_or_else(bad)?;
    let header = data.get(track_len..track_len + 3).ok_or_else(bad)?;
    let relative = i64::from(i16::from_be_bytes([header[0], header[1]]));
    let flags = header[2];
    let timestamp = cluster_timestamp.saturating_add(relative);
    let keyframe = simple.then_some(flags & 0x80 != 0);
    let mut at = track_len + 3;

    let mut sizes: Vec<usize> = Vec::new();
    let lacing = (flags >> 1) & 3;
    let count = if lacing == 0 {
        1
    } else {
        let count = usize::from(*data.get(at).ok_or_else(bad)?) + 1;
        at += 1;
        match lacing {
            // Xiph lacing: each size is a run of 255s plus a final byte.
            1 => {
                for _ in 1..count {
                    let mut size = 0usize;
                    loop {
                        let byte = *data.get(at).ok_or_else(bad)?;
                        at += 1;
                        size += usize::from(byte);
                        if byte != 255 {
                            break;
                        }
                    }
                    sizes.push(size);
                }
            }
            // EBML lacing: the first size, then signed differences.
            3 => {
                let (first, len, _) = read_vint(data, at, 8)
                    .map_err(|()| malformed("a lace size is invalid"))?
                    .ok_or_else(bad)?;
                at += len;
                let mut size = i128::from(first);
                sizes.push(usize::try_from(size).map_err(|_| bad())?);
                for _ in 2..count {
                    let (raw, len, _) = read_vint(data, at, 8)
                        .map_err(|()| malformed("a lace size is invalid"))?
                        .ok_or_else(bad)?;
                    at += len;
                    let bias = (1i128 << (7 * len - 1)) - 1;
                    size += i128::from(raw) - bias;
                    sizes.push(usize::try_from(size).map_err(|_| bad())?);
                }
            }
            // Fixed-size lacing: equal frames.
            _ => {
                let rest = data.len().saturating_sub(at);
                if rest % count != 0 {
                    return Err(malformed("fixed-size laced frames do not divide the block"));
                }
                sizes.resize(count - 1, rest / count);
            }
        }
        count
    };
    let laced: usize = sizes
        .iter()
        .try_fold(0usize, |sum, &size| sum.checked_add(size))
        .ok_or_else(bad)?;
    let last = data
        .len()
        .checked_sub(at)
        .and_then(|rest| rest.checked_sub(laced))
        .ok_or_else(bad)?;
    sizes.push(last);
    debug_assert_eq!(sizes.len(), count);

    if file.frames.len() + count > max_packets {
        return Err(MediaError::LimitExceeded {
            what: "packet count",
            value: (max_packets + 1) as u64,
            limit: max_packets as u64,
        });
    }
    for size in sizes {
        let start = block.start + at;
        at += size;
        file.frames.push(BlockFrame {
            track,
            timestamp,
            keyframe,
            data: start..block.start + at,
        });
    }
    Ok(track)
}

// --- From the walk to tracks of packets ---

fn assemble(bytes: &[u8], file: File) -> Result<Demuxed<'_>, MediaError> {
    let video = choose_video(&file.tracks)?;
    let audio = choose_audio(&file.tracks);
    for track in video.iter().chain(audio.iter()) {
        if track.opaque_frames {
            return Err(MediaError::UnsupportedCodec {
                codec: format!("{} with compressed or encrypted frames", track.codec_id),
                feature: None,
            });
        }
    }
    let video_codec = video.and_then(|t| video_codec_of(&t.codec_id));
    let audio_codec = audio.and_then(|t| audio_codec_of(&t.codec_id));
    let video_number = video.map(|t| t.number);
    let audio_number = audio.map(|t| t.number);
    // Matroska says CodecDelay "MUST be subtracted from each frame timestamp": audio packet times
    // then mark their first decoded sample, and dropping `skip_samples` lands on the true start.
    let audio_delay_ns = audio.and_then(|t| t.codec_delay_ns).unwrap_or(0);

    let mut video_packets: Vec<Packet<'_>> = Vec::new();
    let mut audio_packets: Vec<Packet<'_>> = Vec::new();
    let mut first_raw: Option<i64> = None;
    // Laced frames share their block's timestamp.
    let mut last_audio_raw: Option<i64> = None;

    for frame in &file.frames {
        let is_video = Some(frame.track) == video_number;
        let is_audio = Some(frame.track) == audio_number;
        let Some(track) = (if is_video {
            video
        } else if is_audio {
            audio
        } else {
            None
        }) else {
            continue;
        };
        let first = *first_raw.get_or_insert(frame.timestamp);
        let delay_ns = if is_audio { audio_delay_ns } else { 0 };
        let mut pts_ms = raw_to_ms(frame.timestamp, first, file.timestamp_scale, delay_ns);
        let raw = &bytes[frame.data.clone()];
        let data = if track.strip_prefix.is_empty() {
            Cow::Borrowed(raw)
        } else {
            let mut data = Vec::with_capacity(track.strip_prefix.len() + raw.len());
            data.extend_from_slice(&track.strip_prefix);
            data.extend_from_slice(raw);
            Cow::Owned(data)
        };

        if is_video {
            let keyframe = match (frame.keyframe, video_codec) {
                (Some(keyframe), _) => keyframe,
                // Blocks inside BlockGroups carry no keyframe flag; the bitstream says.
                (None, Some(codec)) => sniff_keyframe(codec, &data),
                (None, None) => false,
            };
            video_packets.push(Packet {
                pts_ms,
                keyframe,
                data,
            });
        } else {
            // Laced audio frames share the block timestamp: place each after the previous one.
            if last_audio_raw == Some(frame.timestamp) {
                if let (Some(previous), Some(AudioCodec::Opus)) =
                    (audio_packets.last(), audio_codec)
                {
                    let step =
                        packet_samples(&previous.data).unwrap_or(0) * 1000 / u64::from(OPUS_RATE);
                    pts_ms = previous.pts_ms.saturating_add(step as i64);
                }
            }
            last_audio_raw = Some(frame.timestamp);
            audio_packets.push(Packet {
                pts_ms,
                keyframe: true,
                data,
            });
        }
    }

    let video_track = match (video, video_codec) {
        (Some(track), Some(codec)) => Some(build_video(track, codec, video_packets)?),
        _ => None,
    };
    let audio_track = match (audio, audio_codec) {
        (Some(track), Some(codec)) => {
            let padding = file.last_padding.get(&track.number).copied().flatten();
            Some(build_audio(track, codec, padding, audio_packets))
        }
        _ => None,
    };
    if video_track.is_none() && audio_track.is_none() {
        // Say "unsupported" when there is audio we cannot read, not "malformed".
        if let Some(track) = file.tracks.iter().find(|t| t.kind == TRACK_AUDIO) {
            return Err(MediaError::UnsupportedCodec {
                codec: track.codec_id.clone(),
                feature: None,
            });
        }
        return Err(MediaError::Malformed(
            "the file has neither a video nor an audio track".into(),
        ));
    }
    let packet_count = video_track.as_ref().map_or(0, |t| t.packets.len())
        + audio_track.as_ref().map_or(0, |t| t.packets.len());
    if packet_count == 0 {
        return Err(if file.cut {
            MediaError::Truncated("the Matroska file ends before its first frame".into())
        } else {
            MediaError::Malformed("the Matroska file has no frames".into())
        });
    }

    let video_end = video_track
        .as_ref()
        .map_or(0, |t| track_end_ms(&t.packets, None));
    let audio_end =
        audio_track
            .as_ref()
            .map_or(0, |t| match (t.valid_samples, t.packets.first()) {
                // With end trimming known, the audio ends exactly after its valid samples.
                (Some(valid), Some(first)) if t.sample_rate > 0 => {
                    let samples = i128::from(t.skip_samples) + i128::from(valid);
                    let ms = samples * 1000 / i128::from(t.sample_rate);
                    first
                        .pts_ms
                        .saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
                }
                _ => track_end_ms(&t.packets, Some(t.codec)),
            });
    Ok(Demuxed {
        container: file.container,
        duration_ms: video_end.max(audio_end),
        video: video_track,
        audio: audio_track,
    })
}

/// Converts a block timestamp to milliseconds after `first`, minus `delay_ns` (rounded to nearest).
fn raw_to_ms(raw: i64, first: i64, timestamp_scale: u64, delay_ns: u64) -> i64 {
    let ns =
        (i128::from(raw) - i128::from(first)) * i128::from(timestamp_scale) - i128::from(delay_ns);
    let ms = (ns + 500_000).div_euclid(1_000_000);
    ms.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The end of a track: its last presentation time plus one packet duration (the median gap
/// between packets, or the Opus packet's own duration), since live WebM carries no Duration.
fn track_end_ms(packets: &[Packet<'_>], audio: Option<AudioCodec>) -> i64 {
    let Some(last) = packets.iter().map(|p| p.pts_ms).max() else {
        return 0;
    };
    let step = match (audio, packets.last()) {
        (Some(AudioCodec::Opus), Some(packet)) => packet_samples(&packet.data)
            .map_or(0, |samples| (samples * 1000 / u64::from(OPUS_RATE)) as i64),
        _ => {
            let mut times: Vec<i64> = packets.iter().map(|p| p.pts_ms).collect();
            times.sort_unstable();
            let mut gaps: Vec<i64> = times
                .windows(2)
                .map(|w| w[1] - w[0])
                .filter(|gap| *gap > 0)
                .collect();
            gaps.sort_unstable();
            gaps.get(gaps.len() / 2).copied().unwrap_or(0)
        }
    };
    last.saturating_add(step)
}

fn video_codec_of(codec_id: &str) -> Option<VideoCodec> {
    match codec_id {
        "V_VP8" => Some(VideoCodec::Vp8),
        "V_VP9" => Some(VideoCodec::Vp9),
        "V_MPEG4/ISO/AVC" => Some(VideoCodec::H264),
        "V_MPEGH/ISO/HEVC" => Some(VideoCodec::Hevc),
        "V_AV1" => Some(VideoCodec::Av1),
        _ => None,
    }
}

fn audio_codec_of(codec_id: &str) -> Option<AudioCodec> {
    match codec_id {
        "A_OPUS" => Some(AudioCodec::Opus),
        // "A_AAC" plus the old profile-suffixed ids ("A_AAC/MPEG4/LC", ...).
        id if id.starts_with("A_AAC") => Some(AudioCodec::Aac),
        "A_VORBIS" => Some(AudioCodec::Vorbis),
        "A_FLAC" => Some(AudioCodec::Flac),
        "A_PCM/INT/LIT" | "A_PCM/FLOAT/IEEE" => Some(AudioCodec::Pcm),
        _ => None,
    }
}

/// The first video track. A file whose only video tracks use other codecs is unsupported rather
/// than "no video", so the user learns why.
fn choose_video(tracks: &[Track]) -> Result<Option<&Track>, MediaError> {
    let Some(first) = tracks.iter().find(|t| t.kind == TRACK_VIDEO) else {
        return Ok(None);
    };
    if video_codec_of(&first.codec_id).is_none() {
        return Err(MediaError::UnsupportedCodec {
            codec: first.codec_id.clone(),
            feature: None,
        });
    }
    Ok(Some(first))
}

/// The first audio track with a codec we recognise. Other audio codecs (AC-3, MP3, ...) are
/// skipped rather than failing the file, so face-only checks still work on such files.
fn choose_audio(tracks: &[Track]) -> Option<&Track> {
    tracks
        .iter()
        .find(|t| t.kind == TRACK_AUDIO && audio_codec_of(&t.codec_id).is_some())
}

fn build_video<'a>(
    track: &Track,
    codec: VideoCodec,
    packets: Vec<Packet<'a>>,
) -> Result<VideoTrack<'a>, MediaError> {
    if track.width == 0 || track.height == 0 {
        return Err(MediaError::Malformed(
            "the video track has no picture size".into(),
        ));
    }
    let width = u32::try_from(track.width)
        .map_err(|_| MediaError::Malformed("the video width does not fit 32 bits".into()))?;
    let height = u32::try_from(track.height)
        .map_err(|_| MediaError::Malformed("the video height does not fit 32 bits".into()))?;
    let config = match codec {
        VideoCodec::H264 | VideoCodec::Hevc | VideoCodec::Av1 => track.codec_private.clone(),
        VideoCodec::Vp8 | VideoCodec::Vp9 => Vec::new(),
    };
    Ok(VideoTrack {
        codec,
        width,
        height,
        rotation: Rotation::None,
        config,
        packets,
    })
}

fn build_audio<'a>(
    track: &Track,
    codec: AudioCodec,
    last_discard_padding_ns: Option<i64>,
    packets: Vec<Packet<'a>>,
) -> AudioTrack<'a> {
    let config = track.codec_private.clone();
    let channels = u16::try_from(track.channels).unwrap_or(u16::MAX);
    let rate = track.sampling_frequency;
    let track_rate = if rate.is_finite() && rate > 0.0 {
        rate.round().min(f64::from(u32::MAX)) as u32
    } else {
        0
    };
    let sample_rate = if codec == AudioCodec::Opus {
        OPUS_RATE
    } else {
        track_rate
    };
    // CodecDelay is in nanoseconds; in samples of the decoded rate.
    let codec_delay = track.codec_delay_ns.map(|ns| {
        (u128::from(ns) * u128::from(sample_rate) / 1_000_000_000).min(u128::from(u64::MAX)) as u64
    });

    let (skip_samples, valid_samples) = if codec == AudioCodec::Opus {
        // The OpusHead pre-skip is authoritative; CodecDelay is the container's copy of it.
        let skip = OpusHead::parse(&config)
            .ok()
            .map(|head| u64::from(head.pre_skip))
            .or(codec_delay)
            .unwrap_or(0);
        let valid = last_discard_padding_ns.map(|padding_ns| {
            let padding = u64::try_from(padding_ns.max(0))
                .unwrap_or(0)
                .saturating_mul(u64::from(OPUS_RATE))
                / 1_000_000_000;
            let total: u64 = packets
                .iter()
                .map(|p| packet_samples(&p.data).unwrap_or(0))
                .sum();
            total.saturating_sub(skip).saturating_sub(padding)
        });
        (skip, valid)
    } else {
        (codec_delay.unwrap_or(0), None)
    };

    AudioTrack {
        codec,
        sample_rate,
        channels,
        config,
        skip_samples,
        valid_samples,
        packets,
    }
}

/// Whether a packet from a BlockGroup (which has no keyframe flag) starts a keyframe.
fn sniff_keyframe(codec: VideoCodec, data: &[u8]) -> bool {
    match codec {
        VideoCodec::Vp8 | VideoCodec::Vp9 => vp_format::is_key_frame(codec, data),
        // Length-prefixed NAL units (4-byte lengths as every muxer writes): look for an IDR slice.
        VideoCodec::H264 => nal_types(data).any(|header| header & 0x1F == 5),
        VideoCodec::Hevc => {
            nal_types(data).any(|header| (16..=23).contains(&((header >> 1) & 0x3F)))
        }
        VideoCodec::Av1 => false,
    }
}

/// The first byte of each NAL unit of a packet with 4-byte length prefixes.
fn nal_types(data: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let mut rest = data;
    std::iter::from_fn(move || {
        let length = rest.get(..4)?;
        let length = u32::from_be_bytes([length[0], length[1], length[2], length[3]]) as usize;
        let nal = rest.get(4..4usize.checked_add(length)?)?;
        rest = &rest[4 + length..];
        nal.first().copied()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn media(name: &str) -> Vec<u8> {
        let path = format!("{}/../../tests/media/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
    }

    fn sorted_pts(packets: &[Packet<'_>]) -> Vec<i64> {
        let mut pts: Vec<i64> = packets.iter().map(|p| p.pts_ms).collect();
        pts.sort_unstable();
        pts
    }

    /// The flash/beep clips: 50 frames at 25 fps, mono Opus with 312 samples of pre-skip.
    fn check_flash_clip<'b>(
        bytes: &'b [u8],
        name: &str,
        container: Container,
        codec: VideoCodec,
    ) -> Demuxed<'b> {
        let demuxed =
            demux_with_limit(bytes, MAX_PACKETS).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(demuxed.container, container, "{name}");
        let video = demuxed.video.as_ref().expect("video");
        assert_eq!(video.codec, codec, "{name}");
        assert_eq!(
            (video.width, video.height, video.rotation),
            (320, 240, Rotation::None),
            "{name}"
        );
        assert!(video.config.is_empty(), "{name}");
        assert_eq!(video.packets.len(), 50, "{name}");
        let pts = sorted_pts(&video.packets);
        // ffmpeg shifts the video by the Opus pre-skip (6.5 ms) when muxing, so it starts at 7 ms.
        assert!(
            (0..40).contains(&pts[0]),
            "{name}: first frame at {} ms",
            pts[0]
        );
        assert_eq!(pts[49] - pts[0], 1960, "{name}");
        assert!(pts.windows(2).all(|w| w[1] - w[0] == 40), "{name}: {pts:?}");
        let keyframes: Vec<usize> = video
            .packets
            .iter()
            .enumerate()
            .filter(|(_, p)| p.keyframe)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(keyframes, [0, 25], "{name}: -g 25");

        let audio = demuxed.audio.as_ref().expect("audio");
        assert_eq!(
            (audio.codec, audio.sample_rate, audio.channels),
            (AudioCodec::Opus, 48_000, 1),
            "{name}"
        );
        assert!(audio.config.starts_with(b"OpusHead"), "{name}");
        assert_eq!(audio.skip_samples, 312, "{name}");
        assert_eq!(
            audio.valid_samples,
            Some(96_000),
            "{name}: DiscardPadding of the last block"
        );
        assert_eq!(audio.packets.len(), 101, "{name}");
        // CodecDelay (6.5 ms) is subtracted: the first packet starts before the clip, and after the
        // pre-skip the first sample lands at 0 ms.
        assert_eq!(audio.packets[0].pts_ms, -6, "{name}");
        assert!(
            (demuxed.duration_ms - 2000).abs() <= 10,
            "{name}: duration {}",
            demuxed.duration_ms
        );
        demuxed
    }

    #[test]
    fn webm_and_matroska_vp8_vp9_opus() {
        for (name, container, codec) in [
            ("vp8_opus.webm", Container::WebM, VideoCodec::Vp8),
            ("vp9_opus.webm", Container::WebM, VideoCodec::Vp9),
            ("vp9_opus.mkv", Container::Matroska, VideoCodec::Vp9),
        ] {
            check_flash_clip(&media(name), name, container, codec);
        }
    }

    #[test]
    fn live_webm_without_cues_or_duration_matches_the_normal_file() {
        let live_bytes = media("vp8_opus_live.webm");
        // The file really is "live": no Cues element, no Duration in Info, unknown-size clusters.
        let header = read_element(&live_bytes, 0, live_bytes.len()).expect("header");
        let segment = read_element(&live_bytes, header.end, live_bytes.len()).expect("segment");
        assert!(segment.unknown_size);
        let info = children(&live_bytes, segment)
            .map(|e| e.expect("element"))
            .find(|e| e.id == ID_INFO)
            .expect("Info");
        assert!(children(&live_bytes, info).all(|e| e.expect("element").id != 0x4489));
        assert!(!live_bytes.windows(4).any(|w| w == [0x1C, 0x53, 0xBB, 0x6B]));
        let live = check_flash_clip(
            &live_bytes,
            "vp8_opus_live.webm",
            Container::WebM,
            VideoCodec::Vp8,
        );
        let normal_bytes = media("vp8_opus.webm");
        let normal = check_flash_clip(
            &normal_bytes,
            "vp8_opus.webm",
            Container::WebM,
            VideoCodec::Vp8,
        );
        assert_eq!(live.duration_ms, normal.duration_ms);
        for (a, b) in [
            (
                live.video.as_ref().map(|v| &v.packets),
                normal.video.as_ref().map(|v| &v.packets),
            ),
            (
                live.audio.as_ref().map(|a| &a.packets),
                normal.audio.as_ref().map(|a| &a.packets),
            ),
        ] {
            let (a, b) = (a.expect("track"), b.expect("track"));
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b) {
                assert_eq!(
                    (x.pts_ms, x.keyframe, &x.data),
                    (y.pts_ms, y.keyframe, &y.data)
                );
            }
        }
    }

    #[test]
    fn h264_aac_in_matroska() {
        let bytes = media("h264_aac.mkv");
        let demuxed = demux_matroska(&bytes).expect("demux");
        assert_eq!(demuxed.container, Container::Matroska);
        let video = demuxed.video.as_ref().expect("video");
        assert_eq!(
            (video.codec, video.width, video.height),
            (VideoCodec::H264, 320, 240)
        );
        assert_eq!(video.config.first(), Some(&1), "avcC configurationVersion");
        assert_eq!(video.packets.len(), 50);
        let pts = sorted_pts(&video.packets);
        assert_eq!((pts[0], pts[49]), (0, 1960));
        // B-frames: decode order differs from presentation order.
        assert_ne!(
            video.packets.iter().map(|p| p.pts_ms).collect::<Vec<_>>(),
            pts
        );
        assert!(
            video.packets[0].keyframe && sniff_keyframe(VideoCodec::H264, &video.packets[0].data)
        );
        assert!(!sniff_keyframe(VideoCodec::H264, &video.packets[1].data));
        let audio = demuxed.audio.as_ref().expect("audio");
        assert_eq!(
            (audio.codec, audio.sample_rate, audio.channels),
            (AudioCodec::Aac, 44_100, 1)
        );
        assert_eq!(
            audio.config.first().map(|b| b >> 3),
            Some(2),
            "AudioSpecificConfig of AAC-LC"
        );
        assert_eq!(audio.valid_samples, None);
    }

    #[test]
    fn audio_only_webm() {
        let bytes = media("tone_opus.webm");
        let demuxed = demux_matroska(&bytes).expect("demux");
        assert!(demuxed.video.is_none());
        let audio = demuxed.audio.as_ref().expect("audio");
        assert_eq!(
            (audio.codec, audio.skip_samples, audio.valid_samples),
            (AudioCodec::Opus, 312, Some(48_000))
        );
        assert!(
            (demuxed.duration_ms - 1000).abs() <= 10,
            "{}",
            demuxed.duration_ms
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        assert_eq!(demux_matroska(b"").err(), Some(MediaError::Empty));
        let bytes = media("vp8_opus.webm");
        assert!(
            matches!(demux_matroska(&bytes[..100]), Err(MediaError::Truncated(_))),
            "{:?}",
            demux_matroska(&bytes[..100]).err()
        );
        assert!(matches!(
            demux_matroska(&bytes[..4]),
            Err(MediaError::Truncated(_))
        ));
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut random = |length: usize| -> Vec<u8> {
            (0..length)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect()
        };
        assert_eq!(
            demux_matroska(&random(1000)).err(),
            Some(MediaError::UnknownFormat { expected: EXPECTED })
        );
        let mut magic_then_noise = EBML_MAGIC.to_vec();
        magic_then_noise.extend(random(1000));
        assert!(demux_matroska(&magic_then_noise).is_err());
        // Another EBML document type is not a video.
        let mut other = bytes.clone();
        let at = other
            .windows(4)
            .position(|w| w == b"webm")
            .expect("doctype");
        other[at..at + 4].copy_from_slice(b"abcd");
        assert_eq!(
            demux_matroska(&other).err(),
            Some(MediaError::UnknownFormat { expected: EXPECTED })
        );
    }

    #[test]
    fn a_file_cut_anywhere_gives_fewer_packets_or_an_error() {
        for name in ["vp8_opus.webm", "vp8_opus_live.webm", "h264_aac.mkv"] {
            let bytes = media(name);
            let full = demux_matroska(&bytes).expect("demux");
            let full_video = full.video.as_ref().map_or(0, |v| v.packets.len());
            let half = demux_matroska(&bytes[..bytes.len() / 2]).expect("half a file still plays");
            let half_video = half.video.as_ref().map_or(0, |v| v.packets.len());
            assert!(
                half_video > 0 && half_video < full_video,
                "{name}: {half_video} of {full_video}"
            );
            for cut in (0..bytes.len()).step_by(37) {
                match demux_matroska(&bytes[..cut]) {
                    Ok(demuxed) => {
                        assert!(demuxed.video.as_ref().map_or(0, |v| v.packets.len()) <= full_video)
                    }
                    Err(
                        MediaError::Empty | MediaError::Truncated(_) | MediaError::Malformed(_),
                    ) => {}
                    Err(other) => panic!("{name} cut at {cut}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn corrupted_bytes_never_panic() {
        let bytes = media("vp9_opus.webm");
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..300 {
            let mut copy = bytes.clone();
            for _ in 0..4 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Mostly the header region, where structure lives.
                let at = (state >> 8) as usize % if state & 1 == 0 { 600 } else { copy.len() };
                copy[at] = state as u8;
            }
            let _ = demux_matroska(&copy);
        }
    }

    #[test]
    fn packet_limit() {
        let bytes = media("vp8_opus.webm");
        assert!(matches!(
            demux_with_limit(&bytes, 100),
            Err(MediaError::LimitExceeded { limit: 100, .. })
        ));
        assert!(demux_with_limit(&bytes, 151).is_ok());
    }

    #[test]
    fn keyframe_sniffing_and_opus_durations() {
        assert!(sniff_keyframe(VideoCodec::Vp8, &[0x50, 0x00]));
        assert!(!sniff_keyframe(VideoCodec::Vp8, &[0x51, 0x00]));
        // VP9 profile 0: frame_marker 10, profile 00, show_existing 0, frame_type 0 (key) / 1.
        assert!(sniff_keyframe(VideoCodec::Vp9, &[0b1000_0000]));
        assert!(!sniff_keyframe(VideoCodec::Vp9, &[0b1000_0100]));
        assert!(!sniff_keyframe(VideoCodec::H264, &[0, 0, 0, 9]));
    }

    #[test]
    fn crafted_segment_starts_do_not_hang() {
        use base64::Engine as _;
        // Minimised from the matroska_demux fuzz target: EBML header, Segment, CRC-32 first.
        let input = base64::engine::general_purpose::STANDARD
            .decode("GkXfo6NCgYYBQveBAULygQRC84EIQoKIbWF0cm9za2FCh4EEQoWBAhhTgGcBAAAAAHECAAAAAAAAv4QpxuB0")
            .unwrap();
        // Second finding: junk inside the EBML header and before the Segment, then a CRC-32.
        let second = concat!(
            "1a45dfa3a34286810142f781012c42f2810442f381084282886d6174726f736b614287810442858102",
            "185380670185810218538067010000000000bf5e2d089e9f1a2d2a04038e828184"
        );
        let second: Vec<u8> = (0..second.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&second[i..i + 2], 16).unwrap())
            .collect();
        // Third: a SeekHead the old crate's `collect_children` looped on.
        let third = base64::engine::general_purpose::STANDARD
            .decode(concat!(
                "GkXfo6NChoEBQveBAULygQRC84EIQoKIbWF0cm9za2FCh4EEQoWBAhhTgGcBAAAAAAAsdxFNm3TAv4Qp",
                "xuB0TbuSU6uEEU2bdFOsgQAAAAAAAAAAAAAAAAAAAAChTbuL2quEFlSma1OsgcxNu4xTq4BpAACE/xAA",
                "AFdBgEy1nIN1bmSIgQCGhkFfT1BVU1aqg2MuoFa7hATEtACDMALhkZ+BAbWIQOdwAAAAAABiZIEgY6KT",
                "T3B1c0hlYWQBATcBgLsAAAAAABJUw2fSc3PPY8B1nDq6////+gAAAAFnyBpF36OfQoaBAUL3gQFC8hkZ",
                "AAAAFsCB"
            ))
            .unwrap();
        for input in [input, second, third] {
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || sender.send(demux_matroska(&input).is_err()).unwrap());
            let failed = receiver
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("demux_matroska returned (it used to loop forever)");
            assert!(failed, "neither input is a usable file");
        }
    }
}
