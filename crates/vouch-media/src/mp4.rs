//! MP4 / QuickTime MOV / fragmented MP4 demuxing: [`demux_mp4`] turns ISO base media bytes into
//! [`Demuxed`] (the first video and the first audio track as packet lists borrowed from the input).
//!
//! The box reader here is our own, over a byte slice, with every offset checked. `re_mp4` 0.5.1
//! was the plan, but on hostile input it indexes sample tables unchecked (panics on an empty `stsc`
//! or a chunk index past `stco`), loops forever on a zero-sized child box in `moov`
//! (`skip_box` seeks back to the box start), builds up to 2^32 samples from a `trun` with no
//! per-sample fields, and drops what we need (raw AudioSpecificConfig, `avc3`, Opus `dOps`). The
//! subset of ISO/IEC 14496-12 needed to list samples is small, so owning it is the safer trade.

use std::borrow::Cow;

use super::demux::{AudioTrack, Demuxed, Packet, VideoTrack};
use super::error::MediaError;
use super::types::{AudioCodec, Container, Rotation, VideoCodec};

/// Most samples one track may have: a guard against tables that claim millions of samples.
const MAX_SAMPLES: u64 = 200_000;

const EXPECTED: &str = "MP4, MOV, WebM or Matroska video";

fn truncated(what: &str) -> MediaError {
    MediaError::Truncated(format!("MP4 {what} is cut short"))
}

fn malformed(what: impl Into<String>) -> MediaError {
    MediaError::Malformed(format!("MP4: {}", what.into()))
}

/// A big-endian cursor over a box body; every read is bounds-checked.
struct Be<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Be<'a> {
    fn new(data: &'a [u8], what: &'static str) -> Self {
        Be { data, pos: 0, what }
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], MediaError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| truncated(self.what))?;
        let slice = self
            .data
            .get(self.pos..end)
            .ok_or_else(|| truncated(self.what))?;
        self.pos = end;
        Ok(slice)
    }

    fn skip(&mut self, n: usize) -> Result<(), MediaError> {
        self.bytes(n).map(|_| ())
    }

    fn u8(&mut self) -> Result<u8, MediaError> {
        Ok(self.bytes(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, MediaError> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, MediaError> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, MediaError> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// Reads `version` and `flags` of a full box.
    fn full_header(&mut self) -> Result<(u8, u32), MediaError> {
        let v = self.u32()?;
        Ok(((v >> 24) as u8, v & 0x00FF_FFFF))
    }

    /// Reads an entry count and checks that `count` entries of `entry_size` bytes fit in the rest
    /// of the box, so nothing is ever allocated or looped over beyond the box's real size.
    fn count(&mut self, entry_size: usize) -> Result<usize, MediaError> {
        let count = self.u32()? as usize;
        if count
            .checked_mul(entry_size)
            .is_none_or(|bytes| bytes > self.remaining())
        {
            return Err(truncated(self.what));
        }
        Ok(count)
    }
}

/// One box: its type, its body, and the body's offset in the file.
#[derive(Clone, Copy)]
struct Mp4Box<'a> {
    kind: [u8; 4],
    body: &'a [u8],
    /// Offset of the box header's first byte in the file.
    start: usize,
}

/// Iterates the boxes in `data` (a box body or the whole file), `base` being `data`'s offset in
/// the file. `top_level` tolerates an `mdat` that runs past the end (a file cut inside its media
/// data): it is clipped, and the sample range checks report the truncation.
struct Boxes<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
    top_level: bool,
}

impl<'a> Boxes<'a> {
    fn new(data: &'a [u8], base: usize) -> Self {
        Boxes {
            data,
            pos: 0,
            base,
            top_level: false,
        }
    }
}

impl<'a> Iterator for Boxes<'a> {
    type Item = Result<Mp4Box<'a>, MediaError>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.data.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        // Some writers pad container bodies with up to 7 zero bytes (or a 32-bit zero terminator).
        if rest.len() < 8 && rest.iter().all(|&b| b == 0) {
            return None;
        }
        let result = (|| {
            let mut be = Be::new(rest, "box header");
            let size32 = be.u32()?;
            let kind: [u8; 4] = be
                .bytes(4)?
                .try_into()
                .map_err(|_| truncated("box header"))?;
            let (header, size) = match size32 {
                0 => (8, rest.len() as u64),
                1 => (16, be.u64()?),
                n => (8, u64::from(n)),
            };
            if size < header as u64 {
                return Err(malformed(format!(
                    "box {} has an impossible size",
                    fourcc(kind)
                )));
            }
            let size = if size > rest.len() as u64 {
                if self.top_level && &kind == b"mdat" {
                    rest.len() as u64
                } else {
                    return Err(truncated(&format!("box {}", fourcc(kind))));
                }
            } else {
                size
            };
            // `size <= rest.len()` here, so the casts and the slice are in range.
            let size = size as usize;
            let body = rest.get(header..size).ok_or_else(|| truncated("box"))?;
            let start = self.base + self.pos;
            self.pos += size;
            Ok(Mp4Box { kind, body, start })
        })();
        if result.is_err() {
            // Stop after the first error.
            self.pos = self.data.len();
        }
        Some(result)
    }
}

fn fourcc(kind: [u8; 4]) -> String {
    kind.iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect()
}

/// The first child of `parent` with type `kind`.
fn child<'a>(parent: &Mp4Box<'a>, kind: &[u8; 4]) -> Result<Option<Mp4Box<'a>>, MediaError> {
    for b in Boxes::new(parent.body, parent.start + 8) {
        let b = b?;
        if &b.kind == kind {
            return Ok(Some(b));
        }
    }
    Ok(None)
}

fn require<'a>(parent: &Mp4Box<'a>, kind: &[u8; 4]) -> Result<Mp4Box<'a>, MediaError> {
    child(parent, kind)?.ok_or_else(|| malformed(format!("missing {} box", fourcc(*kind))))
}

/// One edit-list entry (times: segment in movie timescale, media time in media timescale).
#[derive(Debug, Clone, Copy)]
struct Edit {
    segment_duration: u64,
    media_time: i64,
}

/// What a track's boxes say, before samples are listed.
struct TrakInfo<'a> {
    track_id: u32,
    matrix: [i32; 4],
    tkhd_width: u32,
    tkhd_height: u32,
    timescale: u32,
    media_duration: u64,
    handler: [u8; 4],
    entry: Option<Mp4Box<'a>>,
    edits: Vec<Edit>,
    stbl: Mp4Box<'a>,
}

/// One sample, in track timescale units.
#[derive(Debug, Clone, Copy)]
struct Sample {
    offset: u64,
    size: u64,
    dts: i64,
    cts: i64,
    duration: u64,
    sync: bool,
}

fn parse_trak<'a>(trak: &Mp4Box<'a>) -> Result<TrakInfo<'a>, MediaError> {
    let tkhd = require(trak, b"tkhd")?;
    let mut be = Be::new(tkhd.body, "tkhd");
    let (version, _) = be.full_header()?;
    let track_id;
    if version == 1 {
        be.skip(16)?;
        track_id = be.u32()?;
        be.skip(4 + 8)?;
    } else {
        be.skip(8)?;
        track_id = be.u32()?;
        be.skip(4 + 4)?;
    }
    // reserved(8) layer(2) alternate_group(2) volume(2) reserved(2), then the 3x3 matrix.
    be.skip(16)?;
    let mut m = [0i32; 9];
    for v in &mut m {
        *v = be.u32()? as i32;
    }
    let tkhd_width = be.u32()? >> 16;
    let tkhd_height = be.u32()? >> 16;

    let mut edits = Vec::new();
    if let Some(edts) = child(trak, b"edts")? {
        if let Some(elst) = child(&edts, b"elst")? {
            let mut be = Be::new(elst.body, "elst");
            let (version, _) = be.full_header()?;
            let count = be.count(if version == 1 { 20 } else { 12 })?;
            for _ in 0..count.min(64) {
                let (segment_duration, media_time) = if version == 1 {
                    (be.u64()?, be.u64()? as i64)
                } else {
                    (u64::from(be.u32()?), i64::from(be.u32()? as i32))
                };
                be.skip(4)?; // media rate
                edits.push(Edit {
                    segment_duration,
                    media_time,
                });
            }
        }
    }

    let mdia = require(trak, b"mdia")?;
    let mdhd = require(&mdia, b"mdhd")?;
    let mut be = Be::new(mdhd.body, "mdhd");
    let (version, _) = be.full_header()?;
    let (timescale, media_duration) = if version == 1 {
        be.skip(16)?;
        (be.u32()?, be.u64()?)
    } else {
        be.skip(8)?;
        (be.u32()?, u64::from(be.u32()?))
    };
    if timescale == 0 {
        return Err(malformed("track timescale is 0"));
    }
    let mut handler = [0u8; 4];
    if let Some(hdlr) = child(&mdia, b"hdlr")? {
        let mut be = Be::new(hdlr.body, "hdlr");
        be.skip(8)?;
        handler.copy_from_slice(be.bytes(4)?);
    }
    let minf = require(&mdia, b"minf")?;
    let stbl = require(&minf, b"stbl")?;
    let stsd = require(&stbl, b"stsd")?;
    let entry = {
        let body = stsd.body.get(8..).ok_or_else(|| truncated("stsd"))?;
        Boxes::new(body, stsd.start + 16).next().transpose()?
    };
    Ok(TrakInfo {
        track_id,
        matrix: [m[0], m[1], m[3], m[4]],
        tkhd_width,
        tkhd_height,
        timescale,
        media_duration,
        handler,
        entry,
        edits,
        stbl,
    })
}

fn too_many(value: u64) -> MediaError {
    MediaError::LimitExceeded {
        what: "MP4 sample count",
        value,
        limit: MAX_SAMPLES,
    }
}

/// Lists the samples of a non-fragmented track from its sample tables.
fn table_samples(stbl: &Mp4Box<'_>) -> Result<Vec<Sample>, MediaError> {
    // Sizes.
    let Some(stsz) = child(stbl, b"stsz")? else {
        // Fragmented files have an empty table; compact stz2 is not supported (rare).
        if child(stbl, b"stz2")?.is_some() {
            return Err(MediaError::Malformed(
                "MP4: compact sample sizes (stz2) are not supported".into(),
            ));
        }
        return Ok(Vec::new());
    };
    let mut be = Be::new(stsz.body, "stsz");
    be.full_header()?;
    let constant_size = be.u32()?;
    let count = u64::from(be.u32()?);
    if count > MAX_SAMPLES {
        return Err(too_many(count));
    }
    let count = count as usize;
    if count == 0 {
        return Ok(Vec::new());
    }
    let mut sizes = Vec::with_capacity(count);
    if constant_size == 0 {
        let table = be.bytes(count.checked_mul(4).ok_or_else(|| truncated("stsz"))?)?;
        sizes.extend(
            table
                .chunks_exact(4)
                .map(|c| u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]))),
        );
    } else {
        sizes.resize(count, u64::from(constant_size));
    }

    // Chunk offsets.
    let chunk_offsets: Vec<u64> = if let Some(stco) = child(stbl, b"stco")? {
        let mut be = Be::new(stco.body, "stco");
        be.full_header()?;
        let n = be.count(4)?;
        (0..n)
            .map(|_| be.u32().map(u64::from))
            .collect::<Result<_, _>>()?
    } else if let Some(co64) = child(stbl, b"co64")? {
        let mut be = Be::new(co64.body, "co64");
        be.full_header()?;
        let n = be.count(8)?;
        (0..n).map(|_| be.u64()).collect::<Result<_, _>>()?
    } else {
        return Err(malformed("missing chunk offsets (stco/co64)"));
    };

    // Sample-to-chunk runs: (first_chunk 1-based, samples_per_chunk).
    let stsc = require(stbl, b"stsc")?;
    let mut be = Be::new(stsc.body, "stsc");
    be.full_header()?;
    let n = be.count(12)?;
    let mut runs = Vec::with_capacity(n);
    for _ in 0..n {
        let first = be.u32()?;
        let per_chunk = be.u32()?;
        be.skip(4)?;
        runs.push((u64::from(first), u64::from(per_chunk)));
    }
    let mut offsets = Vec::with_capacity(count);
    let mut run = 0usize;
    for (chunk_index, &chunk_offset) in chunk_offsets.iter().enumerate() {
        let chunk_number = chunk_index as u64 + 1;
        while run + 1 < runs.len() && runs[run + 1].0 <= chunk_number {
            run += 1;
        }
        let per_chunk = runs.get(run).map_or(0, |r| r.1);
        let mut offset = chunk_offset;
        for _ in 0..per_chunk {
            let Some(&size) = sizes.get(offsets.len()) else {
                break;
            };
            offsets.push(offset);
            offset = offset.saturating_add(size);
        }
        if offsets.len() == count {
            break;
        }
    }
    if offsets.len() < count {
        return Err(malformed(
            "the sample-to-chunk table covers fewer samples than the size table",
        ));
    }

    // Decode times.
    let stts = require(stbl, b"stts")?;
    let mut be = Be::new(stts.body, "stts");
    be.full_header()?;
    let n = be.count(8)?;
    let mut durations = Vec::with_capacity(count);
    let mut last_delta = 0u64;
    for _ in 0..n {
        let run_count = be.u32()? as usize;
        let delta = u64::from(be.u32()?);
        last_delta = delta;
        let take = run_count.min(count - durations.len());
        durations.resize(durations.len() + take, delta);
        if durations.len() == count {
            break;
        }
    }
    // A short stts (seen in the wild) repeats its last delta rather than failing the file.
    durations.resize(count, last_delta);

    // Composition offsets.
    let mut cts_offsets = vec![0i64; count];
    if let Some(ctts) = child(stbl, b"ctts")? {
        let mut be = Be::new(ctts.body, "ctts");
        be.full_header()?;
        let n = be.count(8)?;
        let mut i = 0usize;
        for _ in 0..n {
            let run_count = be.u32()? as usize;
            // Version 0 is nominally unsigned, but writers store negative offsets there too.
            let offset = i64::from(be.u32()? as i32);
            let end = i.saturating_add(run_count).min(count);
            if let Some(slots) = cts_offsets.get_mut(i..end) {
                slots.fill(offset);
            }
            i = end;
            if i == count {
                break;
            }
        }
    }

    // Sync samples: absent means every sample is a sync sample.
    let mut sync = vec![true; count];
    if let Some(stss) = child(stbl, b"stss")? {
        sync.fill(false);
        let mut be = Be::new(stss.body, "stss");
        be.full_header()?;
        let n = be.count(4)?;
        for _ in 0..n {
            let number = be.u32()? as usize;
            if let Some(flag) = number.checked_sub(1).and_then(|i| sync.get_mut(i)) {
                *flag = true;
            }
        }
    }

    let mut samples = Vec::with_capacity(count);
    let mut dts = 0i64;
    for i in 0..count {
        samples.push(Sample {
            offset: offsets[i],
            size: sizes[i],
            dts,
            cts: dts.saturating_add(cts_offsets[i]),
            duration: durations[i],
            sync: sync[i],
        });
        dts = dts.saturating_add(durations[i] as i64);
    }
    Ok(samples)
}

/// Per-track defaults from `trex`.
#[derive(Debug, Clone, Copy, Default)]
struct Trex {
    duration: u32,
    size: u32,
    flags: u32,
}

/// Appends the samples of one `traf` of the `moof` starting at `moof_start`.
fn traf_samples(
    traf: &Mp4Box<'_>,
    moof_start: usize,
    trex: Trex,
    next_dts: &mut i64,
    samples: &mut Vec<Sample>,
) -> Result<(), MediaError> {
    let tfhd = require(traf, b"tfhd")?;
    let mut be = Be::new(tfhd.body, "tfhd");
    let (_, flags) = be.full_header()?;
    be.u32()?; // track id, matched by the caller
    let base_offset = if flags & 0x01 != 0 {
        Some(be.u64()?)
    } else {
        None
    };
    if flags & 0x02 != 0 {
        be.u32()?;
    }
    let default_duration = if flags & 0x08 != 0 {
        be.u32()?
    } else {
        trex.duration
    };
    let default_size = if flags & 0x10 != 0 {
        be.u32()?
    } else {
        trex.size
    };
    let default_flags = if flags & 0x20 != 0 {
        be.u32()?
    } else {
        trex.flags
    };
    // Without an explicit base, ISO says the previous traf's data end, but every writer we know
    // (ffmpeg, Safari, Chrome) sets default-base-is-moof or puts one traf per moof.
    let base = base_offset.unwrap_or(moof_start as u64);

    if let Some(tfdt) = child(traf, b"tfdt")? {
        let mut be = Be::new(tfdt.body, "tfdt");
        let (version, _) = be.full_header()?;
        let t = if version == 1 {
            be.u64()?
        } else {
            u64::from(be.u32()?)
        };
        *next_dts = i64::try_from(t).map_err(|_| malformed("tfdt decode time out of range"))?;
    }

    let mut data_pos = base;
    for trun in Boxes::new(traf.body, traf.start + 8) {
        let trun = trun?;
        if &trun.kind != b"trun" {
            continue;
        }
        let mut be = Be::new(trun.body, "trun");
        let (_, tflags) = be.full_header()?;
        let count = u64::from(be.u32()?);
        let total = samples.len() as u64 + count;
        if total > MAX_SAMPLES {
            return Err(too_many(total));
        }
        if tflags & 0x01 != 0 {
            let data_offset = i64::from(be.u32()? as i32);
            data_pos = base
                .checked_add_signed(data_offset)
                .ok_or_else(|| malformed("trun data offset"))?;
        }
        let first_flags = if tflags & 0x04 != 0 {
            Some(be.u32()?)
        } else {
            None
        };
        let per_sample = [0x100u32, 0x200, 0x400, 0x800]
            .iter()
            .filter(|&&f| tflags & f != 0)
            .count();
        if (count as usize).saturating_mul(per_sample * 4) > be.remaining() {
            return Err(truncated("trun"));
        }
        for i in 0..count {
            let duration = if tflags & 0x100 != 0 {
                be.u32()?
            } else {
                default_duration
            };
            let size = if tflags & 0x200 != 0 {
                be.u32()?
            } else {
                default_size
            };
            let mut sample_flags = if tflags & 0x400 != 0 {
                be.u32()?
            } else {
                default_flags
            };
            if i == 0 {
                if let Some(f) = first_flags {
                    sample_flags = f;
                }
            }
            let cts_offset = if tflags & 0x800 != 0 {
                i64::from(be.u32()? as i32)
            } else {
                0
            };
            let dts = *next_dts;
            samples.push(Sample {
                offset: data_pos,
                size: u64::from(size),
                dts,
                cts: dts.saturating_add(cts_offset),
                duration: u64::from(duration),
                // sample_is_non_sync_sample is bit 16.
                sync: sample_flags & 0x0001_0000 == 0,
            });
            data_pos = data_pos.saturating_add(u64::from(size));
            *next_dts = dts.saturating_add(i64::from(duration));
        }
    }
    Ok(())
}

/// `value * num / den`, rounded down, without overflow for any realistic input.
fn rescale(value: i64, num: u64, den: u64) -> i64 {
    if den == 0 {
        return 0;
    }
    let r = i128::from(value) * i128::from(num) / i128::from(den);
    r.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// How a track's media times map to presentation: `pts = (cts - media_start)` in media units plus
/// `delay_ms` from leading empty edits.
struct Timeline {
    media_start: i64,
    delay_ms: i64,
    /// Duration of the first non-empty edit, movie timescale.
    segment_duration: Option<u64>,
}

fn timeline(edits: &[Edit], movie_timescale: u32) -> Timeline {
    let mut delay = 0u64;
    for edit in edits {
        if edit.media_time == -1 {
            delay = delay.saturating_add(edit.segment_duration);
        } else {
            return Timeline {
                media_start: edit.media_time.max(0),
                delay_ms: rescale(delay as i64, 1000, u64::from(movie_timescale)),
                segment_duration: (edit.segment_duration > 0).then_some(edit.segment_duration),
            };
        }
    }
    Timeline {
        media_start: 0,
        delay_ms: rescale(
            delay.min(i64::MAX as u64) as i64,
            1000,
            u64::from(movie_timescale),
        ),
        segment_duration: None,
    }
}

/// Turns samples into packets borrowed from `bytes`, checking every range.
fn packets<'a>(
    bytes: &'a [u8],
    samples: &[Sample],
    info: &TrakInfo<'_>,
    timeline: &Timeline,
) -> Result<Vec<Packet<'a>>, MediaError> {
    let timescale = u64::from(info.timescale);
    samples
        .iter()
        .map(|s| {
            let start = usize::try_from(s.offset).map_err(|_| truncated("media data"))?;
            let len = usize::try_from(s.size).map_err(|_| truncated("media data"))?;
            let end = start.checked_add(len).ok_or_else(|| truncated("media data"))?;
            let data = bytes.get(start..end).ok_or_else(|| {
                MediaError::Truncated(format!("MP4 sample data at bytes {start}..{end} lies past the end of the file ({} bytes)", bytes.len()))
            })?;
            Ok(Packet {
                pts_ms: rescale(s.cts.saturating_sub(timeline.media_start), 1000, timescale) + timeline.delay_ms,
                keyframe: s.sync,
                data: Cow::Borrowed(data),
            })
        })
        .collect()
}

/// Fixed part of a VisualSampleEntry after the box header.
const VISUAL_ENTRY_FIXED: usize = 78;

fn video_codec(entry: &Mp4Box<'_>) -> Result<(VideoCodec, Vec<u8>, u32, u32), MediaError> {
    let mut be = Be::new(entry.body, "video sample entry");
    be.skip(24)?;
    let width = u32::from(be.u16()?);
    let height = u32::from(be.u16()?);
    let children = entry
        .body
        .get(VISUAL_ENTRY_FIXED..)
        .ok_or_else(|| truncated("video sample entry"))?;
    let inner = Mp4Box {
        kind: entry.kind,
        body: children,
        start: entry.start + 8 + VISUAL_ENTRY_FIXED - 8,
    };
    let config_of = |kind: &[u8; 4]| -> Result<Vec<u8>, MediaError> {
        Ok(child(&inner, kind)?
            .map(|b| b.body.to_vec())
            .unwrap_or_default())
    };
    let (codec, config) = match &entry.kind {
        b"avc1" | b"avc3" => (VideoCodec::H264, config_of(b"avcC")?),
        b"hvc1" | b"hev1" => (VideoCodec::Hevc, config_of(b"hvcC")?),
        b"vp08" => (VideoCodec::Vp8, Vec::new()),
        b"vp09" => (VideoCodec::Vp9, Vec::new()),
        b"av01" => (VideoCodec::Av1, config_of(b"av1C")?),
        other => {
            return Err(MediaError::UnsupportedCodec {
                codec: format!("video \"{}\"", fourcc(*other)),
                feature: None,
            })
        }
    };
    if matches!(codec, VideoCodec::H264 | VideoCodec::Hevc)
        && config.is_empty()
        && &entry.kind != b"avc3"
        && &entry.kind != b"hev1"
    {
        return Err(malformed(format!(
            "{} sample entry without its configuration record",
            codec.name()
        )));
    }
    Ok((codec, config, width, height))
}

/// Reads an MPEG-4 descriptor header (tag, length with up to four 7-bit bytes).
fn descriptor(be: &mut Be<'_>) -> Result<(u8, usize), MediaError> {
    let tag = be.u8()?;
    let mut len = 0usize;
    for _ in 0..4 {
        let b = be.u8()?;
        len = (len << 7) | usize::from(b & 0x7F);
        if b & 0x80 == 0 {
            break;
        }
    }
    Ok((tag, len))
}

/// The AudioSpecificConfig inside an `esds` body.
fn esds_audio_specific_config(esds: &[u8]) -> Result<Vec<u8>, MediaError> {
    let mut be = Be::new(esds, "esds");
    be.full_header()?;
    let (tag, _) = descriptor(&mut be)?;
    if tag != 0x03 {
        return Err(malformed("esds without an ES descriptor"));
    }
    be.u16()?; // ES_ID
    let flags = be.u8()?;
    if flags & 0x80 != 0 {
        be.u16()?;
    }
    if flags & 0x40 != 0 {
        let n = be.u8()?;
        be.skip(usize::from(n))?;
    }
    if flags & 0x20 != 0 {
        be.u16()?;
    }
    let (tag, _) = descriptor(&mut be)?;
    if tag != 0x04 {
        return Err(malformed("esds without a decoder config descriptor"));
    }
    let object_type = be.u8()?;
    if object_type != 0x40 && object_type != 0x66 && object_type != 0x67 && object_type != 0x68 {
        return Err(MediaError::UnsupportedCodec {
            codec: format!("MPEG-4 audio object type 0x{object_type:02x} (not AAC)"),
            feature: None,
        });
    }
    be.skip(12)?;
    let (tag, len) = descriptor(&mut be)?;
    if tag != 0x05 {
        return Err(malformed("esds without an AudioSpecificConfig"));
    }
    Ok(be.bytes(len)?.to_vec())
}

/// Sample rate and channel count from an AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1).
pub(crate) fn asc_rate_channels(asc: &[u8]) -> Option<(u8, u32, u16)> {
    const RATES: [u32; 13] = [
        96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
    ];
    let mut bits = BitReader { data: asc, pos: 0 };
    let mut object_type = bits.read(5)?;
    if object_type == 31 {
        object_type = 32 + bits.read(6)?;
    }
    let index = bits.read(4)?;
    let rate = if index == 15 {
        bits.read(24)?
    } else {
        *RATES.get(index as usize)?
    };
    let channel_config = bits.read(4)?;
    let channels = match channel_config {
        1..=6 => channel_config as u16,
        7 => 8,
        _ => return None,
    };
    Some((object_type as u8, rate, channels))
}

/// MSB-first bit reader for small headers.
struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl BitReader<'_> {
    fn read(&mut self, n: u32) -> Option<u32> {
        let mut v = 0u32;
        for _ in 0..n {
            let byte = *self.data.get(self.pos / 8)?;
            let bit = (byte >> (7 - (self.pos % 8))) & 1;
            v = (v << 1) | u32::from(bit);
            self.pos += 1;
        }
        Some(v)
    }
}

/// Audio codec, config, rate, channels and (Opus) pre-skip of an audio sample entry.
fn audio_codec(entry: &Mp4Box<'_>) -> Result<(AudioCodec, Vec<u8>, u32, u16, u64), MediaError> {
    let mut be = Be::new(entry.body, "audio sample entry");
    be.skip(8)?;
    let version = be.u16()?;
    be.skip(6)?;
    let entry_channels = be.u16()?;
    be.skip(6)?;
    let entry_rate = be.u32()? >> 16;
    // QuickTime sound description versions 1 and 2 append 16 and 36 bytes.
    let fixed = match version {
        1 => 28 + 16,
        2 => 28 + 36,
        _ => 28,
    };
    let children = entry
        .body
        .get(fixed..)
        .ok_or_else(|| truncated("audio sample entry"))?;
    let inner = Mp4Box {
        kind: entry.kind,
        body: children,
        start: entry.start + fixed,
    };
    match &entry.kind {
        b"mp4a" => {
            // MOV nests the esds in a `wave` box.
            let esds = match child(&inner, b"esds")? {
                Some(esds) => esds,
                None => match child(&inner, b"wave")? {
                    Some(wave) => require(&wave, b"esds")?,
                    None => return Err(malformed("mp4a sample entry without esds")),
                },
            };
            let asc = esds_audio_specific_config(esds.body)?;
            let (_, rate, channels) = asc_rate_channels(&asc)
                .or_else(|| {
                    (entry_rate > 0 && entry_channels > 0).then_some((
                        2,
                        entry_rate,
                        entry_channels,
                    ))
                })
                .ok_or_else(|| malformed("unreadable AudioSpecificConfig"))?;
            Ok((AudioCodec::Aac, asc, rate, channels, 0))
        }
        b"Opus" => {
            let dops = require(&inner, b"dOps")?;
            let mut be = Be::new(dops.body, "dOps");
            be.u8()?; // version 0
            let channels = be.u8()?;
            let pre_skip = be.u16()?;
            let input_rate = be.u32()?;
            let gain = be.u16()?;
            let family = be.u8()?;
            // OpusHead (RFC 7845 5.1) is little-endian where dOps is big-endian.
            let mut head = Vec::with_capacity(19 + 2 + usize::from(channels));
            head.extend_from_slice(b"OpusHead");
            head.push(1);
            head.push(channels);
            head.extend_from_slice(&pre_skip.to_le_bytes());
            head.extend_from_slice(&input_rate.to_le_bytes());
            head.extend_from_slice(&gain.to_le_bytes());
            head.push(family);
            if family != 0 {
                // stream count, coupled count, channel mapping: byte-for-byte the same.
                head.extend_from_slice(be.bytes(2 + usize::from(channels))?);
            }
            Ok((
                AudioCodec::Opus,
                head,
                48_000,
                u16::from(channels),
                u64::from(pre_skip),
            ))
        }
        other => Err(MediaError::UnsupportedCodec {
            codec: format!("audio \"{}\"", fourcc(*other)),
            feature: None,
        }),
    }
}

/// Demuxes MP4, QuickTime MOV and fragmented MP4 into the first video and first audio track.
pub(crate) fn demux_mp4(bytes: &[u8]) -> Result<Demuxed<'_>, MediaError> {
    if bytes.is_empty() {
        return Err(MediaError::Empty);
    }
    let known_top = [
        b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide", b"pnot", b"styp", b"uuid", b"sidx",
    ];
    if bytes.len() < 8 || !known_top.iter().any(|k| bytes[4..8] == k[..]) {
        return Err(MediaError::UnknownFormat { expected: EXPECTED });
    }

    let mut container = Container::QuickTime; // MOVs from before ftyp existed start elsewhere
    let mut moov = None;
    let mut moofs = Vec::new();
    let mut top = Boxes::new(bytes, 0);
    top.top_level = true;
    for b in top {
        let b = b?;
        match &b.kind {
            b"ftyp" => {
                container = if b.body.get(..4) == Some(b"qt  ") {
                    Container::QuickTime
                } else {
                    Container::Mp4
                };
            }
            b"moov" if moov.is_none() => moov = Some(b),
            b"moof" => {
                if moofs.len() >= MAX_SAMPLES as usize {
                    return Err(too_many(moofs.len() as u64));
                }
                moofs.push(b);
            }
            _ => {}
        }
    }
    let moov = moov
        .ok_or_else(|| MediaError::Truncated("MP4 file has no movie header (moov box)".into()))?;

    let mvhd = require(&moov, b"mvhd")?;
    let mut be = Be::new(mvhd.body, "mvhd");
    let (version, _) = be.full_header()?;
    let (movie_timescale, movie_duration) = if version == 1 {
        be.skip(16)?;
        (be.u32()?, be.u64()?)
    } else {
        be.skip(8)?;
        (be.u32()?, u64::from(be.u32()?))
    };
    let movie_timescale = movie_timescale.max(1);

    let mut trexs: Vec<(u32, Trex)> = Vec::new();
    let mut fragment_duration = 0u64;
    if let Some(mvex) = child(&moov, b"mvex")? {
        for b in Boxes::new(mvex.body, mvex.start + 8) {
            let b = b?;
            let mut be = Be::new(b.body, "mvex");
            match &b.kind {
                b"trex" => {
                    be.full_header()?;
                    let id = be.u32()?;
                    be.u32()?;
                    let trex = Trex {
                        duration: be.u32()?,
                        size: be.u32()?,
                        flags: be.u32()?,
                    };
                    if trexs.len() < 64 {
                        trexs.push((id, trex));
                    }
                }
                b"mehd" => {
                    let (v, _) = be.full_header()?;
                    fragment_duration = if v == 1 {
                        be.u64()?
                    } else {
                        u64::from(be.u32()?)
                    };
                }
                _ => {}
            }
        }
    }

    let mut video = None;
    let mut audio = None;
    let mut longest_ms = 0i64;
    for trak in Boxes::new(moov.body, moov.start + 8) {
        let trak = trak?;
        if &trak.kind != b"trak" {
            continue;
        }
        let info = parse_trak(&trak)?;
        let is_video = &info.handler == b"vide";
        let is_audio = &info.handler == b"soun";
        if !(is_video && video.is_none() || is_audio && audio.is_none()) {
            continue;
        }
        let Some(entry) = info.entry else { continue };

        let mut samples = table_samples(&info.stbl)?;
        if !moofs.is_empty() {
            let trex = trexs
                .iter()
                .find(|(id, _)| *id == info.track_id)
                .map(|t| t.1)
                .unwrap_or_default();
            let mut next_dts = samples
                .last()
                .map_or(0, |s| s.dts.saturating_add(s.duration as i64));
            for moof in &moofs {
                for traf in Boxes::new(moof.body, moof.start + 8) {
                    let traf = traf?;
                    if &traf.kind != b"traf" {
                        continue;
                    }
                    let Some(tfhd) = child(&traf, b"tfhd")? else {
                        continue;
                    };
                    let id = Be::new(tfhd.body.get(4..).unwrap_or_default(), "tfhd").u32()?;
                    if id == info.track_id {
                        traf_samples(&traf, moof.start, trex, &mut next_dts, &mut samples)?;
                    }
                }
            }
        }
        let mut timeline = timeline(&info.edits, movie_timescale);
        if info.edits.is_empty() {
            // No edit list (ffmpeg's fragmented output has none): B-frame streams then start at
            // the first composition offset; start them at 0 as players do (FFmpeg calls this
            // `min_corrected_pts`). AAC priming is unknown here and stays in (about 23 ms).
            timeline.media_start = samples.iter().map(|s| s.cts).min().unwrap_or(0).max(0);
        }
        let track_packets = packets(bytes, &samples, &info, &timeline)?;
        let end_ms = samples
            .iter()
            .map(|s| {
                rescale(
                    s.cts
                        .saturating_add(s.duration as i64)
                        .saturating_sub(timeline.media_start),
                    1000,
                    u64::from(info.timescale),
                )
            })
            .max()
            .unwrap_or(0)
            + timeline.delay_ms;
        let track_ms = rescale(
            info.media_duration.min(i64::MAX as u64) as i64,
            1000,
            u64::from(info.timescale),
        );
        longest_ms = longest_ms
            .max(end_ms)
            .max(if moofs.is_empty() { track_ms } else { 0 });

        if is_video {
            let (codec, config, width, height) = video_codec(&entry)?;
            let [a, b, c, d] = info.matrix.map(|v| f64::from(v) / 65536.0);
            video = Some(VideoTrack {
                codec,
                width: if width > 0 { width } else { info.tkhd_width },
                height: if height > 0 { height } else { info.tkhd_height },
                rotation: Rotation::from_matrix(a, b, c, d),
                config,
                packets: track_packets,
            });
        } else {
            let (codec, config, sample_rate, channels, pre_skip) = audio_codec(&entry)?;
            let timescale = u64::from(info.timescale);
            let has_edit = !info.edits.is_empty();
            let skip_samples = match codec {
                AudioCodec::Opus => pre_skip,
                _ if has_edit => {
                    rescale(timeline.media_start, u64::from(sample_rate), timescale).max(0) as u64
                }
                _ => 0,
            };
            let valid_samples = timeline.segment_duration.map(|d| {
                rescale(
                    d.min(i64::MAX as u64) as i64,
                    u64::from(sample_rate),
                    u64::from(movie_timescale),
                )
                .max(0) as u64
            });
            audio = Some(AudioTrack {
                codec,
                sample_rate,
                channels,
                config,
                skip_samples,
                valid_samples,
                packets: track_packets,
            });
        }
    }

    let header_ms = if movie_duration > 0 {
        rescale(
            movie_duration.min(i64::MAX as u64) as i64,
            1000,
            u64::from(movie_timescale),
        )
    } else {
        rescale(
            fragment_duration.min(i64::MAX as u64) as i64,
            1000,
            u64::from(movie_timescale),
        )
    };
    let duration_ms = if header_ms > 0 { header_ms } else { longest_ms };
    Ok(Demuxed {
        container,
        duration_ms,
        video,
        audio,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn media(name: &str) -> Vec<u8> {
        let path = format!("{}/../../tests/media/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Checks the flash clip's video track: 50 packets, 320x240, pts 0..1960 every 40 ms.
    fn check_flash_video(d: &Demuxed<'_>, rotation: Rotation) {
        let v = d.video.as_ref().expect("video track");
        assert_eq!(v.codec, VideoCodec::H264);
        assert_eq!((v.width, v.height), (320, 240));
        assert_eq!(v.rotation, rotation);
        assert!(!v.config.is_empty());
        assert_eq!(v.config[0], 1, "avcC configurationVersion");
        assert_eq!(v.packets.len(), 50);
        assert!(v.packets[0].keyframe);
        let mut pts: Vec<i64> = v.packets.iter().map(|p| p.pts_ms).collect();
        pts.sort_unstable();
        assert_eq!(pts.first(), Some(&0));
        assert_eq!(pts.last(), Some(&1960));
        assert!(pts.windows(2).all(|w| w[1] - w[0] == 40), "{pts:?}");
        assert!(
            (1900..=2100).contains(&d.duration_ms),
            "duration {}",
            d.duration_ms
        );
    }

    fn check_flash_audio(d: &Demuxed<'_>) {
        let a = d.audio.as_ref().expect("audio track");
        assert_eq!(a.codec, AudioCodec::Aac);
        assert_eq!((a.sample_rate, a.channels), (44_100, 1));
        assert_eq!(asc_rate_channels(&a.config), Some((2, 44_100, 1)));
        assert_eq!(a.skip_samples, 1024, "ffmpeg's AAC priming");
        let valid = a.valid_samples.expect("edit list duration");
        assert!((88_000..=88_300).contains(&valid), "valid {valid}");
        assert!(a.packets.len() >= 87, "{} packets", a.packets.len());
        assert!(a.packets.iter().all(|p| !p.data.is_empty()));
    }

    #[test]
    fn mp4_h264_aac() {
        let bytes = media("h264_aac.mp4");
        let d = demux_mp4(&bytes).expect("demux");
        assert_eq!(d.container, Container::Mp4);
        check_flash_video(&d, Rotation::None);
        check_flash_audio(&d);
    }

    #[test]
    fn mov_h264_aac() {
        let bytes = media("h264_aac.mov");
        let d = demux_mp4(&bytes).expect("demux");
        assert_eq!(d.container, Container::QuickTime);
        check_flash_video(&d, Rotation::None);
        check_flash_audio(&d);
    }

    #[test]
    fn fragmented_h264_aac_matches_progressive() {
        let frag_bytes = media("h264_aac_fragmented.mp4");
        let frag = demux_mp4(&frag_bytes).expect("demux");
        assert_eq!(frag.container, Container::Mp4);
        check_flash_video(&frag, Rotation::None);
        let plain_bytes = media("h264_aac.mp4");
        let plain = demux_mp4(&plain_bytes).expect("demux");
        // Same streams, stream-copied: identical packets and times.
        let (fv, pv) = (frag.video.as_ref().unwrap(), plain.video.as_ref().unwrap());
        for (f, p) in fv.packets.iter().zip(&pv.packets) {
            assert_eq!(
                (f.pts_ms, f.keyframe, &f.data),
                (p.pts_ms, p.keyframe, &p.data)
            );
        }
        let (fa, pa) = (frag.audio.as_ref().unwrap(), plain.audio.as_ref().unwrap());
        assert_eq!(fa.packets.len(), pa.packets.len());
        assert_eq!(fa.config, pa.config);
        assert!(fa
            .packets
            .iter()
            .zip(&pa.packets)
            .all(|(f, p)| f.data == p.data));
    }

    #[test]
    fn rotated_and_noaudio_and_baseline() {
        let bytes = media("h264_aac_rotated90.mp4");
        check_flash_video(&demux_mp4(&bytes).expect("demux"), Rotation::Clockwise90);
        let bytes = media("h264_noaudio.mp4");
        let d = demux_mp4(&bytes).expect("demux");
        check_flash_video(&d, Rotation::None);
        assert!(d.audio.is_none());
        let bytes = media("h264_baseline_aac.mp4");
        let d = demux_mp4(&bytes).expect("demux");
        check_flash_video(&d, Rotation::None);
        check_flash_audio(&d);
    }

    #[test]
    fn hevc_track_is_recognised() {
        let bytes = media("hevc_aac.mp4");
        let d = demux_mp4(&bytes).expect("demux");
        let v = d.video.as_ref().expect("video");
        assert_eq!(v.codec, VideoCodec::Hevc);
        assert!(!v.config.is_empty());
        // The script encodes 0.5 s of HEVC: 13 frames at 25 fps.
        assert_eq!(v.packets.len(), 13);
    }

    #[test]
    fn m4a_audio_only() {
        let bytes = media("tone.m4a");
        let d = demux_mp4(&bytes).expect("demux");
        assert!(d.video.is_none());
        let a = d.audio.as_ref().expect("audio");
        assert_eq!(
            (a.codec, a.sample_rate, a.channels, a.skip_samples),
            (AudioCodec::Aac, 44_100, 1, 1024)
        );
        assert!((950..=1050).contains(&d.duration_ms), "{}", d.duration_ms);
    }

    #[test]
    fn bad_input_is_an_error_never_a_panic() {
        assert_eq!(demux_mp4(&[]).unwrap_err(), MediaError::Empty);
        let random: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert!(matches!(
            demux_mp4(&random),
            Err(MediaError::UnknownFormat { .. })
        ));
        let bytes = media("h264_aac.mp4");
        assert!(matches!(
            demux_mp4(&bytes[..100]),
            Err(MediaError::Truncated(_))
        ));
        // Cut inside mdat (ffmpeg puts moov last, so this loses moov) and inside moov.
        for cut in [bytes.len() / 2, bytes.len() - 200, bytes.len() - 1] {
            assert!(demux_mp4(&bytes[..cut]).is_err());
        }
        // Every prefix and single-byte corruption of the small files: no panic, no hang.
        for name in ["h264_aac.mp4", "h264_aac_fragmented.mp4", "h264_aac.mov"] {
            let bytes = media(name);
            for cut in (0..bytes.len()).step_by(7) {
                let _ = demux_mp4(&bytes[..cut]);
            }
            let mut copy = bytes.clone();
            for i in (0..bytes.len()).step_by(3) {
                for v in [0x00, 0xFF, 0x01] {
                    let old = copy[i];
                    copy[i] = v;
                    let _ = demux_mp4(&copy);
                    copy[i] = old;
                }
            }
        }
    }

    #[test]
    fn fast_start_file_cut_in_mdat_is_truncated() {
        // Move moov first (as `-movflags faststart` does) by hand is complex; instead fragmented
        // MP4 keeps moov first: cutting it mid-file must give an error or fewer samples.
        let bytes = media("h264_aac_fragmented.mp4");
        match demux_mp4(&bytes[..bytes.len() / 2]) {
            Err(MediaError::Truncated(_)) => {}
            Ok(d) => assert!(d.video.map_or(0, |v| v.packets.len()) < 50),
            Err(e) => panic!("unexpected {e:?}"),
        }
    }

    /// A box with `kind` and `body`.
    fn bx(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut v = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(kind);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn opus_sample_entry_becomes_opus_head() {
        // As ffmpeg writes it: stereo, pre-skip 312, 48 kHz, gain 0, mapping family 0.
        let dops = bx(b"dOps", &[0, 2, 0x01, 0x38, 0, 0, 0xBB, 0x80, 0, 0, 0]);
        let mut fixed = [0u8; 28];
        fixed[17] = 2; // channel count
        fixed[24..26].copy_from_slice(&48_000u16.to_be_bytes());
        let entry_bytes = bx(b"Opus", &[fixed.as_slice(), &dops].concat());
        let entry = Mp4Box {
            kind: *b"Opus",
            body: &entry_bytes[8..],
            start: 0,
        };
        let (codec, head, rate, channels, pre_skip) = audio_codec(&entry).expect("opus");
        assert_eq!(
            (codec, rate, channels, pre_skip),
            (AudioCodec::Opus, 48_000, 2, 312)
        );
        let mut expected = b"OpusHead".to_vec();
        expected.extend_from_slice(&[1, 2, 0x38, 0x01, 0x80, 0xBB, 0, 0, 0, 0, 0]);
        assert_eq!(head, expected);
    }

    #[test]
    fn random_mutations_never_panic() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for name in [
            "h264_aac.mp4",
            "h264_aac_fragmented.mp4",
            "h264_aac.mov",
            "tone.m4a",
        ] {
            let bytes = media(name);
            for _ in 0..1500 {
                let mut copy = bytes.clone();
                for _ in 0..1 + next() % 8 {
                    let i = (next() % copy.len() as u64) as usize;
                    copy[i] = next() as u8;
                }
                let _ = demux_mp4(&copy);
            }
        }
    }

    #[test]
    fn sample_count_is_capped() {
        // ftyp + moov/mvhd + trak with an stsz claiming 10 million constant-size samples.
        let ftyp = bx(b"ftyp", b"isom\0\0\0\0isom");
        let mvhd = bx(
            b"mvhd",
            &[[0u8; 12].as_slice(), &1000u32.to_be_bytes(), &[0u8; 84]].concat(),
        );
        let tkhd = bx(b"tkhd", &[0u8; 84]);
        let mdhd = bx(
            b"mdhd",
            &[[0u8; 12].as_slice(), &1000u32.to_be_bytes(), &[0u8; 8]].concat(),
        );
        let hdlr = bx(
            b"hdlr",
            &[[0u8; 8].as_slice(), b"vide", &[0u8; 13]].concat(),
        );
        let avc1 = bx(b"avc1", &[0u8; 78]);
        let stsd = bx(
            b"stsd",
            &[[0u8; 4].as_slice(), &1u32.to_be_bytes(), &avc1].concat(),
        );
        let stsz = bx(
            b"stsz",
            &[
                [0u8; 4].as_slice(),
                &1u32.to_be_bytes(),
                &10_000_000u32.to_be_bytes(),
            ]
            .concat(),
        );
        let stbl = bx(b"stbl", &[stsd, stsz].concat());
        let minf = bx(b"minf", &stbl);
        let mdia = bx(b"mdia", &[mdhd, hdlr, minf].concat());
        let trak = bx(b"trak", &[tkhd, mdia].concat());
        let moov = bx(b"moov", &[mvhd, trak].concat());
        let file = [ftyp, moov].concat();
        assert!(matches!(
            demux_mp4(&file),
            Err(MediaError::LimitExceeded {
                value: 10_000_000,
                ..
            })
        ));
    }
}
