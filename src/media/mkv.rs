//! Matroska and WebM demuxing: [`demux_matroska`] turns a file into a [`Demuxed`] (first video and
//! first audio track, packets with millisecond timestamps) using the `matroska-demuxer` crate.
//!
//! Browser recordings ("live" WebM from `MediaRecorder`) have no Cues, no Duration and clusters of
//! unknown size; everything here works from the blocks alone, so those files demux like any other.
//! The crate does not expose `DiscardPadding` (Opus end trimming), so [`last_discard_padding`]
//! walks the EBML structure itself for that one element.

use std::borrow::Cow;
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use matroska_demuxer::{
    ContentCompAlgo, ContentEncodingValue, DemuxError, Frame, MatroskaFile, TrackEntry, TrackType,
};

use super::demux::{AudioTrack, Demuxed, Packet, VideoTrack};
use super::error::MediaError;
use super::types::{AudioCodec, Container, Rotation, VideoCodec};

/// The most packets (video plus audio) a file may have: about 55 minutes of 30 fps video with 20 ms
/// audio packets, far beyond any verification clip; a guard against decompression bombs.
const MAX_PACKETS: usize = 200_000;

/// The EBML magic every Matroska and WebM file starts with.
const EBML_MAGIC: [u8; 4] = [0x1A, 0x45, 0xDF, 0xA3];

/// What the caller is told a file should have been.
const EXPECTED: &str = "MP4, MOV, WebM or Matroska video";

/// Opus always decodes at 48 kHz, whatever the track's `SamplingFrequency` says.
const OPUS_RATE: u32 = 48_000;

/// Demuxes a Matroska or WebM file.
///
/// Timestamps are relative to the first packet of the chosen tracks. A file cut inside a cluster
/// yields the packets before the cut; a file cut before its first cluster is [`MediaError::Truncated`].
pub(crate) fn demux_matroska(bytes: &[u8]) -> Result<Demuxed<'_>, MediaError> {
    demux_with_limit(bytes, MAX_PACKETS)
}

fn demux_with_limit(bytes: &[u8], max_packets: usize) -> Result<Demuxed<'static>, MediaError> {
    if bytes.is_empty() {
        return Err(MediaError::Empty);
    }
    if !bytes.starts_with(&EBML_MAGIC) {
        return Err(MediaError::UnknownFormat { expected: EXPECTED });
    }
    // matroska-demuxer 0.8.1 loops forever when the Segment's first child is a CRC-32 element (its
    // SeekHead search re-seeks to the Segment start and skips the CRC-32 again); found by fuzzing.
    let patched = canonical_start(bytes)?;
    let bytes = patched.as_deref().unwrap_or(bytes);
    // The crate forbids unwrap but still has an `expect_err` on crafted SeekHeads; input is
    // untrusted, so a panic inside it must become an error, not take the engine down.
    catch_unwind(AssertUnwindSafe(|| demux_inner(bytes, max_packets))).unwrap_or_else(|_| {
        Err(MediaError::Malformed(
            "the Matroska structure is inconsistent".into(),
        ))
    })
}

/// A track chosen for output, with what is needed to turn its frames into packets.
struct Chosen<'t> {
    number: u64,
    /// Bytes removed by header-stripping compression, to put back in front of every frame.
    strip_prefix: Vec<u8>,
    entry: &'t TrackEntry,
}

fn demux_inner(bytes: &[u8], max_packets: usize) -> Result<Demuxed<'static>, MediaError> {
    let mut mkv = match MatroskaFile::open(Cursor::new(Cow::Borrowed(bytes))) {
        Ok(mkv) => mkv,
        // A cut file: the SeekHead points at Cues and Tags past the cut, which the crate then fails
        // to read. Hide the SeekHead so the crate scans the top-level elements that are there.
        Err(error) if is_truncation(&error) => match without_seek_head(bytes) {
            Some(patched) => {
                MatroskaFile::open(Cursor::new(Cow::Owned(patched))).map_err(map_open_error)?
            }
            None => return Err(map_open_error(error)),
        },
        Err(error) => return Err(map_open_error(error)),
    };

    let container = match mkv.ebml_header().doc_type().trim_end_matches('\0') {
        "webm" => Container::WebM,
        _ => Container::Matroska,
    };
    let timestamp_scale = mkv.info().timestamp_scale().get();

    let tracks = mkv.tracks().to_vec();
    let (video_codec, video) = choose_video(&tracks)?;
    let (audio_codec, audio) = choose_audio(&tracks)?;
    let video_number = video.as_ref().map(|t| t.number);
    let audio_number = audio.as_ref().map(|t| t.number);
    // Matroska says CodecDelay "MUST be subtracted from each frame timestamp": audio packet times
    // then mark their first decoded sample, and dropping `skip_samples` lands on the true start.
    let audio_delay_ns = audio
        .as_ref()
        .and_then(|t| t.entry.codec_delay())
        .unwrap_or(0);

    let mut video_packets: Vec<Packet<'static>> = Vec::new();
    let mut audio_packets: Vec<Packet<'static>> = Vec::new();
    // Raw timestamps (timestamp-scale units) of the first packet, and of the previous audio packet
    // (laced frames share their block's timestamp).
    let mut first_raw: Option<u64> = None;
    let mut last_audio_raw: Option<u64> = None;
    let mut frame = Frame::default();

    loop {
        match mkv.next_frame(&mut frame) {
            Ok(true) => {}
            Ok(false) => break,
            // A cut inside a cluster: keep what came before, like a browser would play it.
            Err(error)
                if is_truncation(&error)
                    && !(video_packets.is_empty() && audio_packets.is_empty()) =>
            {
                break
            }
            Err(error) => return Err(map_error(error)),
        }
        let is_video = Some(frame.track) == video_number;
        let is_audio = Some(frame.track) == audio_number;
        if !is_video && !is_audio {
            continue;
        }
        if video_packets.len() + audio_packets.len() >= max_packets {
            return Err(MediaError::LimitExceeded {
                what: "packet count",
                value: (max_packets + 1) as u64,
                limit: max_packets as u64,
            });
        }
        let first = *first_raw.get_or_insert(frame.timestamp);
        let delay_ns = if is_audio { audio_delay_ns } else { 0 };
        let mut pts_ms = raw_to_ms(frame.timestamp, first, timestamp_scale, delay_ns);
        let prefix = if is_video {
            video.as_ref().map(|t| t.strip_prefix.as_slice())
        } else {
            audio.as_ref().map(|t| t.strip_prefix.as_slice())
        }
        .unwrap_or_default();
        let data = if prefix.is_empty() {
            std::mem::take(&mut frame.data)
        } else {
            let mut data = Vec::with_capacity(prefix.len() + frame.data.len());
            data.extend_from_slice(prefix);
            data.extend_from_slice(&frame.data);
            data
        };

        if is_video {
            let keyframe = match (frame.is_keyframe, video_codec) {
                (Some(keyframe), _) => keyframe,
                // Blocks inside BlockGroups carry no keyframe flag; the bitstream says.
                (None, Some(codec)) => sniff_keyframe(codec, &data),
                (None, None) => false,
            };
            video_packets.push(Packet {
                pts_ms,
                keyframe,
                data: Cow::Owned(data),
            });
        } else {
            // Laced audio frames share the block timestamp: place each after the previous one.
            if last_audio_raw == Some(frame.timestamp) {
                if let (Some(previous), Some(AudioCodec::Opus)) =
                    (audio_packets.last(), audio_codec)
                {
                    let step = opus_packet_samples(&previous.data).unwrap_or(0) * 1000
                        / u64::from(OPUS_RATE);
                    pts_ms = previous.pts_ms.saturating_add(step as i64);
                }
            }
            last_audio_raw = Some(frame.timestamp);
            audio_packets.push(Packet {
                pts_ms,
                keyframe: true,
                data: Cow::Owned(data),
            });
        }
    }

    let video_track = match (video, video_codec) {
        (Some(chosen), Some(codec)) => Some(build_video(&chosen, codec, video_packets)?),
        _ => None,
    };
    let audio_track = match (audio, audio_codec) {
        (Some(chosen), Some(codec)) => Some(build_audio(bytes, &chosen, codec, audio_packets)),
        _ => None,
    };
    if video_track.is_none() && audio_track.is_none() {
        // Say "unsupported" when there is audio we cannot read, not "malformed".
        if let Some(track) = tracks.iter().find(|t| t.track_type() == TrackType::Audio) {
            return Err(MediaError::UnsupportedCodec {
                codec: track.codec_id().to_string(),
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
        return Err(MediaError::Truncated(
            "the Matroska file ends before its first frame".into(),
        ));
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
        container,
        duration_ms: video_end.max(audio_end),
        video: video_track,
        audio: audio_track,
    })
}

/// Converts a block timestamp to milliseconds after `first`, minus `delay_ns` (rounded to nearest).
fn raw_to_ms(raw: u64, first: u64, timestamp_scale: u64, delay_ns: u64) -> i64 {
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
        (Some(AudioCodec::Opus), Some(packet)) => opus_packet_samples(&packet.data)
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
fn choose_video(
    tracks: &[TrackEntry],
) -> Result<(Option<VideoCodec>, Option<Chosen<'_>>), MediaError> {
    let mut videos = tracks.iter().filter(|t| t.track_type() == TrackType::Video);
    let Some(first) = videos.next() else {
        return Ok((None, None));
    };
    let Some(codec) = video_codec_of(first.codec_id()) else {
        return Err(MediaError::UnsupportedCodec {
            codec: first.codec_id().to_string(),
            feature: None,
        });
    };
    Ok((Some(codec), Some(chosen(first)?)))
}

/// The first audio track with a codec we recognise. Other audio codecs (AC-3, MP3, ...) are
/// skipped rather than failing the file, so face-only checks still work on such files.
fn choose_audio(
    tracks: &[TrackEntry],
) -> Result<(Option<AudioCodec>, Option<Chosen<'_>>), MediaError> {
    for track in tracks.iter().filter(|t| t.track_type() == TrackType::Audio) {
        if let Some(codec) = audio_codec_of(track.codec_id()) {
            return Ok((Some(codec), Some(chosen(track)?)));
        }
    }
    Ok((None, None))
}

/// Checks the track's content encodings: header stripping (old mkvmerge files) is undone per frame;
/// zlib and friends or encryption are refused.
fn chosen(entry: &TrackEntry) -> Result<Chosen<'_>, MediaError> {
    let mut strip_prefix = Vec::new();
    for encoding in entry.content_encodings().unwrap_or_default() {
        // Scope bit 1 is "frame contents"; other scopes (CodecPrivate, next encoding) need nothing here.
        if encoding.scope() & 1 == 0 {
            continue;
        }
        match encoding.encoding() {
            ContentEncodingValue::Compression(compression)
                if compression.algo() == ContentCompAlgo::Stripping =>
            {
                strip_prefix.extend_from_slice(compression.settings().unwrap_or_default());
            }
            _ => {
                return Err(MediaError::UnsupportedCodec {
                    codec: format!("{} with compressed or encrypted frames", entry.codec_id()),
                    feature: None,
                })
            }
        }
    }
    Ok(Chosen {
        number: entry.track_number().get(),
        strip_prefix,
        entry,
    })
}

fn build_video(
    chosen: &Chosen<'_>,
    codec: VideoCodec,
    packets: Vec<Packet<'static>>,
) -> Result<VideoTrack<'static>, MediaError> {
    let video = chosen
        .entry
        .video()
        .ok_or_else(|| MediaError::Malformed("the video track has no video settings".into()))?;
    let width = u32::try_from(video.pixel_width().get())
        .map_err(|_| MediaError::Malformed("the video width does not fit 32 bits".into()))?;
    let height = u32::try_from(video.pixel_height().get())
        .map_err(|_| MediaError::Malformed("the video height does not fit 32 bits".into()))?;
    let config = match codec {
        VideoCodec::H264 | VideoCodec::Hevc | VideoCodec::Av1 => {
            chosen.entry.codec_private().unwrap_or_default().to_vec()
        }
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

fn build_audio(
    bytes: &[u8],
    chosen: &Chosen<'_>,
    codec: AudioCodec,
    packets: Vec<Packet<'static>>,
) -> AudioTrack<'static> {
    let entry = chosen.entry;
    let config = entry.codec_private().unwrap_or_default().to_vec();
    let (track_rate, track_channels) = entry.audio().map_or((0.0, 1), |audio| {
        (audio.sampling_frequency(), audio.channels().get())
    });
    let channels = u16::try_from(track_channels).unwrap_or(u16::MAX);
    let track_rate = if track_rate.is_finite() && track_rate > 0.0 {
        track_rate.round().min(f64::from(u32::MAX)) as u32
    } else {
        0
    };

    let sample_rate = if codec == AudioCodec::Opus {
        OPUS_RATE
    } else {
        track_rate
    };
    // CodecDelay is in nanoseconds; in samples of the decoded rate.
    let codec_delay = entry.codec_delay().map(|ns| {
        (u128::from(ns) * u128::from(sample_rate) / 1_000_000_000).min(u128::from(u64::MAX)) as u64
    });

    let (skip_samples, valid_samples) = if codec == AudioCodec::Opus {
        // The OpusHead pre-skip is authoritative; CodecDelay is the container's copy of it.
        let skip = opus_head_pre_skip(&config).or(codec_delay).unwrap_or(0);
        let valid = last_discard_padding(bytes, chosen.number).map(|padding_ns| {
            let padding = u64::try_from(padding_ns.max(0)).unwrap_or(0) * u64::from(OPUS_RATE)
                / 1_000_000_000;
            let total: u64 = packets
                .iter()
                .map(|p| opus_packet_samples(&p.data).unwrap_or(0))
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

/// The pre-skip of an OpusHead (little-endian u16 at offset 10), if the header is one.
fn opus_head_pre_skip(head: &[u8]) -> Option<u64> {
    if head.len() < 19 || !head.starts_with(b"OpusHead") {
        return None;
    }
    Some(u64::from(u16::from_le_bytes([head[10], head[11]])))
}

/// Samples (per channel, 48 kHz) in one Opus packet, from its TOC byte (RFC 6716 section 3.1).
pub(crate) fn opus_packet_samples(packet: &[u8]) -> Option<u64> {
    let toc = *packet.first()?;
    let config = toc >> 3;
    let per_frame: u64 = match config {
        0..=11 => [480, 960, 1920, 2880][usize::from(config % 4)],
        12..=15 => [480, 960][usize::from(config % 2)],
        _ => [120, 240, 480, 960][usize::from(config % 4)],
    };
    let frames: u64 = match toc & 3 {
        0 => 1,
        1 | 2 => 2,
        _ => u64::from(*packet.get(1)? & 0x3F),
    };
    Some(per_frame * frames)
}

/// Whether a packet from a BlockGroup (which has no keyframe flag) starts a keyframe.
fn sniff_keyframe(codec: VideoCodec, data: &[u8]) -> bool {
    match codec {
        // VP8 frame tag: bit 0 is 0 for key frames.
        VideoCodec::Vp8 => data.first().is_some_and(|b| b & 1 == 0),
        // VP9 uncompressed header: frame_marker(2) profile_low(1) profile_high(1) [reserved(1) when
        // profile 3] show_existing_frame(1) frame_type(1, 0 = key).
        VideoCodec::Vp9 => data.first().is_some_and(|&b| {
            let profile = ((b >> 5) & 1) | (((b >> 4) & 1) << 1);
            let shift = if profile == 3 { 2 } else { 3 };
            let show_existing = (b >> shift) & 1 == 1;
            !show_existing && (b >> (shift - 1)) & 1 == 0
        }),
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

fn is_truncation(error: &DemuxError) -> bool {
    matches!(
        error,
        DemuxError::IoError(_) | DemuxError::ElementSizeExceedsStream { .. }
    )
}

/// Errors while reading the header: a missing element there means the file stops early.
fn map_open_error(error: DemuxError) -> MediaError {
    match error {
        DemuxError::ElementNotFound(id) => {
            MediaError::Truncated(format!("the Matroska file ends before its {id:?} element"))
        }
        DemuxError::CantFindCluster => {
            MediaError::Truncated("the Matroska file ends before its first cluster".into())
        }
        DemuxError::InvalidEbmlHeader(message) if message.contains("DocType:") => {
            MediaError::UnknownFormat { expected: EXPECTED }
        }
        other => map_error(other),
    }
}

fn map_error(error: DemuxError) -> MediaError {
    match error {
        DemuxError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            MediaError::Truncated("the Matroska file ends inside an element".into())
        }
        DemuxError::ElementSizeExceedsStream {
            declared,
            available,
        } => MediaError::Truncated(format!(
            "a Matroska element declares {declared} bytes but only {available} remain"
        )),
        DemuxError::IoError(io) => MediaError::Malformed(format!("Matroska read error: {io}")),
        other => MediaError::Malformed(format!("invalid Matroska structure: {other}")),
    }
}

// --- DiscardPadding: a minimal EBML walk, since the crate skips the element. ---

const ID_SEGMENT: u32 = 0x1853_8067;
const ID_CLUSTER: u32 = 0x1F43_B675;
const ID_BLOCK_GROUP: u32 = 0xA0;
const ID_BLOCK: u32 = 0xA1;
const ID_SIMPLE_BLOCK: u32 = 0xA3;
const ID_DISCARD_PADDING: u32 = 0x75A2;
const ID_SEEK_HEAD: u32 = 0x114D_9B74;
const ID_VOID: u8 = 0xEC;
const ID_CRC32: u8 = 0xBF;
const ID_EBML: u32 = 0x1A45_DFA3;
/// Top-level elements that end a cluster of unknown size.
const TOP_LEVEL_IDS: [u32; 8] = [
    ID_CLUSTER,
    0x1C53_BB6B,
    0x1254_C367,
    0x1043_A770,
    0x1941_A469,
    0x114D_9B74,
    0x1549_A966,
    0x1654_AE6B,
];

/// A copy of `bytes` with the Segment's first SeekHead turned into a Void element of the same
/// length, or `None` when there is no SeekHead (or its size field is too long to rewrite).
fn without_seek_head(bytes: &[u8]) -> Option<Vec<u8>> {
    let (_, header_start, header_size) = element_header(bytes, 0)?;
    let (segment_id, mut at, _) =
        element_header(bytes, data_end(bytes, header_start, header_size))?;
    if segment_id != ID_SEGMENT {
        return None;
    }
    loop {
        let (id, start, size) = element_header(bytes, at)?;
        match id {
            ID_SEEK_HEAD => {
                let size = size?;
                let id_and_size = start - at;
                // Void: 1-byte ID, then a size field 3 bytes longer than the SeekHead's (whose ID has 4).
                let size_len = id_and_size - 4 + 3;
                if size_len > 8 {
                    return None;
                }
                let mut patched = bytes.to_vec();
                patched[at] = ID_VOID;
                let marker = 1u64 << (7 * size_len);
                let field = (marker | size).to_be_bytes();
                patched[at + 1..start].copy_from_slice(&field[8 - size_len..]);
                return Some(patched);
            }
            ID_CLUSTER => return None,
            _ => at = data_end(bytes, start, Some(size?)),
        }
    }
}

/// Checks that the file starts canonically, so that matroska-demuxer finds the same Segment start
/// this module does, and neutralises a leading CRC-32 element there. Returns a patched copy when
/// one was needed.
///
/// The crate skips bytes that cannot start an element ID and reads the EBML header child by child;
/// a header whose children overrun its size, junk before the Segment, or a CRC-32 as the Segment's
/// first child made its SeekHead search (which re-seeks to the Segment start and skips a CRC-32)
/// loop forever. Found by fuzzing; a valid file has none of that junk, so it is refused instead.
fn canonical_start(bytes: &[u8]) -> Result<Option<Vec<u8>>, MediaError> {
    let malformed = |what: &str| MediaError::Malformed(format!("Matroska: {what}"));
    let cut = |what: &str| MediaError::Truncated(format!("the {what} is cut short"));
    let (header_id, header_start, header_size) =
        element_header(bytes, 0).ok_or_else(|| cut("EBML header"))?;
    let header_size = header_size
        .filter(|_| header_id == ID_EBML)
        .ok_or_else(|| malformed("bad EBML header"))?;
    let header_end = usize::try_from(header_size)
        .ok()
        .and_then(|size| header_start.checked_add(size))
        .filter(|end| *end <= bytes.len())
        .ok_or_else(|| cut("EBML header"))?;
    let mut at = header_start;
    while at < header_end {
        let (_, start, size) =
            element_header(bytes, at).ok_or_else(|| malformed("bad EBML header element"))?;
        at = size
            .and_then(|size| usize::try_from(size).ok())
            .and_then(|size| start.checked_add(size))
            .filter(|end| *end <= header_end)
            .ok_or_else(|| malformed("an EBML header element overruns the header"))?;
    }
    let (segment_id, first_child, _) =
        element_header(bytes, header_end).ok_or_else(|| cut("Segment header"))?;
    if segment_id != ID_SEGMENT {
        return Err(malformed("no Segment directly after the EBML header"));
    }
    match bytes.get(first_child) {
        None => Err(cut("Segment")),
        // No element ID starts with four zero bits.
        Some(byte) if byte & 0xF0 == 0 => {
            Err(malformed("the Segment does not start with an element"))
        }
        Some(&ID_CRC32) => {
            let mut patched = bytes.to_vec();
            // Both IDs are one byte, so the element keeps its size and the file its layout.
            patched[first_child] = ID_VOID;
            Ok(Some(patched))
        }
        Some(_) => Ok(None),
    }
}

/// An element header: id, data start, data size (`None` when unknown, as in live WebM).
fn element_header(bytes: &[u8], at: usize) -> Option<(u32, usize, Option<u64>)> {
    let first = *bytes.get(at)?;
    let id_len = first.leading_zeros() as usize + 1;
    if id_len > 4 {
        return None;
    }
    let id = bytes
        .get(at..at + id_len)?
        .iter()
        .fold(0u32, |acc, &b| (acc << 8) | u32::from(b));
    let size_at = at + id_len;
    let first = *bytes.get(size_at)?;
    let size_len = first.leading_zeros() as usize + 1;
    if size_len > 8 {
        return None;
    }
    let raw = bytes.get(size_at..size_at + size_len)?;
    let mask = if size_len == 8 { 0 } else { 0xFFu8 >> size_len };
    let mut size = u64::from(raw[0] & mask);
    for &b in &raw[1..] {
        size = (size << 8) | u64::from(b);
    }
    let all_ones = size == (1u64 << (7 * size_len)) - 1;
    Some((
        id,
        size_at + size_len,
        if all_ones { None } else { Some(size) },
    ))
}

/// The end of an element's data, clamped to the input (a truncated file still yields what it has).
fn data_end(bytes: &[u8], start: usize, size: Option<u64>) -> usize {
    size.and_then(|s| usize::try_from(s).ok())
        .and_then(|s| start.checked_add(s))
        .map_or(bytes.len(), |end| end.min(bytes.len()))
}

/// The DiscardPadding (ns) of the last block of `track`, if that block carries one.
fn last_discard_padding(bytes: &[u8], track: u64) -> Option<i64> {
    // Skip the EBML header, find the Segment.
    let (_, header_start, header_size) = element_header(bytes, 0)?;
    let mut at = data_end(bytes, header_start, header_size);
    let (segment_start, segment_end) = loop {
        let (id, start, size) = element_header(bytes, at)?;
        if id == ID_SEGMENT {
            break (start, data_end(bytes, start, size));
        }
        at = data_end(bytes, start, size);
    };

    let mut last: Option<Option<i64>> = None;
    let mut at = segment_start;
    while let Some((id, start, size)) = element_header(bytes, at) {
        if at >= segment_end {
            break;
        }
        if id != ID_CLUSTER {
            if size.is_none() {
                break; // no way to step over an unknown-size non-cluster element
            }
            at = data_end(bytes, start, size);
            continue;
        }
        let cluster_end = data_end(bytes, start, size);
        let mut child = start;
        while child < cluster_end {
            let Some((child_id, child_start, child_size)) = element_header(bytes, child) else {
                break;
            };
            if size.is_none() && TOP_LEVEL_IDS.contains(&child_id) {
                break; // an unknown-size cluster ends where the next top-level element starts
            }
            let child_end = data_end(bytes, child_start, child_size);
            match child_id {
                ID_SIMPLE_BLOCK
                    if block_track(bytes.get(child_start..child_end)?) == Some(track) =>
                {
                    last = Some(None)
                }
                ID_BLOCK_GROUP => {
                    if let Some(padding) = group_padding(bytes.get(child_start..child_end)?, track)
                    {
                        last = Some(padding);
                    }
                }
                _ => {}
            }
            if child_end <= child {
                break;
            }
            child = child_end;
        }
        if cluster_end <= at {
            break;
        }
        at = cluster_end;
    }
    last.flatten()
}

/// For a BlockGroup of `track`: `Some(padding)`; for other tracks `None`.
fn group_padding(group: &[u8], track: u64) -> Option<Option<i64>> {
    let mut at = 0;
    let mut mine = false;
    let mut padding = None;
    while let Some((id, start, size)) = element_header(group, at) {
        let end = data_end(group, start, size);
        let data = group.get(start..end)?;
        match id {
            ID_BLOCK => mine = block_track(data) == Some(track),
            ID_DISCARD_PADDING if (1..=8).contains(&data.len()) => {
                // Signed big-endian integer.
                let mut value = if data[0] & 0x80 != 0 { -1i64 } else { 0 };
                for &b in data {
                    value = (value << 8) | i64::from(b);
                }
                padding = Some(value);
            }
            _ => {}
        }
        if end <= at {
            break;
        }
        at = end;
    }
    mine.then_some(padding)
}

/// The track number (an EBML variable-length integer) a block starts with.
fn block_track(block: &[u8]) -> Option<u64> {
    let first = *block.first()?;
    let len = first.leading_zeros() as usize + 1;
    if len > 8 {
        return None;
    }
    let raw = block.get(..len)?;
    let mask = if len == 8 { 0 } else { 0xFFu8 >> len };
    Some(raw[1..].iter().fold(u64::from(raw[0] & mask), |acc, &b| {
        (acc << 8) | u64::from(b)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn media(name: &str) -> Vec<u8> {
        let path = format!("{}/tests/media/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
    }

    fn sorted_pts(packets: &[Packet<'_>]) -> Vec<i64> {
        let mut pts: Vec<i64> = packets.iter().map(|p| p.pts_ms).collect();
        pts.sort_unstable();
        pts
    }

    /// The flash/beep clips: 50 frames at 25 fps, mono Opus with 312 samples of pre-skip.
    fn check_flash_clip(name: &str, container: Container, codec: VideoCodec) -> Demuxed<'static> {
        let bytes = media(name);
        let demuxed =
            demux_with_limit(&bytes, MAX_PACKETS).unwrap_or_else(|error| panic!("{name}: {error}"));
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
        check_flash_clip("vp8_opus.webm", Container::WebM, VideoCodec::Vp8);
        check_flash_clip("vp9_opus.webm", Container::WebM, VideoCodec::Vp9);
        check_flash_clip("vp9_opus.mkv", Container::Matroska, VideoCodec::Vp9);
    }

    #[test]
    fn live_webm_without_cues_or_duration_matches_the_normal_file() {
        let live_bytes = media("vp8_opus_live.webm");
        // The file really is "live": no Cues element, no Duration in Info.
        let live_file = MatroskaFile::open(Cursor::new(&live_bytes[..])).expect("open");
        assert!(live_file.info().duration().is_none());
        let live = check_flash_clip("vp8_opus_live.webm", Container::WebM, VideoCodec::Vp8);
        let normal = check_flash_clip("vp8_opus.webm", Container::WebM, VideoCodec::Vp8);
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
        // TOC config 31 (CELT 20 ms), code 0: 960 samples; config 3 (SILK 60 ms) x code 3 with 2 frames.
        assert_eq!(opus_packet_samples(&[31 << 3]), Some(960));
        assert_eq!(opus_packet_samples(&[(3 << 3) | 3, 2]), Some(5760));
        assert_eq!(opus_packet_samples(&[]), None);
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
        for input in [input, second] {
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || sender.send(demux_matroska(&input).is_err()).unwrap());
            let failed = receiver
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("demux_matroska returned (it used to loop forever)");
            assert!(failed, "neither input is a usable file");
        }
    }
}
