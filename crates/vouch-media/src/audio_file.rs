//! Audio files for voice enrollment: [`decode_audio_file`] reads WAV, FLAC and Ogg (Vorbis, FLAC,
//! Opus) and returns an [`AudioFile`]: either [`DecodedAudio`] (interleaved f32 at the source rate)
//! or, for Ogg Opus, the packets as a [`Demuxed`] for the Opus decoder module.
//!
//! WAV, FLAC and Ogg Vorbis go through symphonia's readers and decoders. Ogg Opus is parsed here
//! (pages, lacing, granule positions) because symphonia has no Opus decoder in this build and the
//! Opus decoder wants the OpusHead, the pre-skip and the end trimming that only the Ogg layer knows.

use std::borrow::Cow;
use std::io::Cursor;

use symphonia::core::codecs::audio::well_known::{CODEC_ID_FLAC, CODEC_ID_VORBIS};
use symphonia::core::codecs::audio::AudioDecoderOptions;
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::{FormatOptions, FormatReader, TrackType};
use symphonia::core::io::{MediaSourceStream, MediaSourceStreamOptions};
use symphonia::default::formats::{FlacReader, OggReader, WavReader};

use super::demux::{AudioTrack, Demuxed, Packet};
use super::opus_format::{packet_samples, OpusHead};
use super::{AudioCodec, Container, MediaError};

/// What [`decode_audio_file`] accepts, listed in [`MediaError::UnknownFormat`].
const EXPECTED: &str = "WAV, FLAC or Ogg (Opus, Vorbis) audio";

/// Longest accepted audio, seconds: far beyond a voice enrollment, short enough to bound memory.
const MAX_SECONDS: u64 = 600;

/// Most interleaved samples decoded: ten minutes of 48 kHz stereo (230 MB of f32), so a file with
/// many channels or a high rate cannot exhaust memory within the per-channel duration limit.
const MAX_INTERLEAVED_SAMPLES: u64 = MAX_SECONDS * 48_000 * 2;

/// Opus always decodes at 48 kHz; granule positions and pre-skip count 48 kHz samples.
const OPUS_RATE: u32 = 48_000;

/// An audio file after [`decode_audio_file`].
#[derive(Debug)]
pub(crate) enum AudioFile<'a> {
    /// Decoded here (WAV, FLAC, Vorbis).
    Decoded(DecodedAudio),
    /// Ogg Opus, demuxed only: an [`AudioTrack`] with codec Opus for the Opus decoder module.
    Packets(Demuxed<'a>),
}

/// Audio decoded at its source rate and channel count.
#[derive(Clone, PartialEq)]
pub(crate) struct DecodedAudio {
    /// The container.
    pub container: Container,
    /// The codec.
    pub codec: AudioCodec,
    /// Sample rate, Hz.
    pub sample_rate: u32,
    /// Channels.
    pub channels: u16,
    /// Samples in -1..1, interleaved by channel; encoder delay and padding already trimmed.
    pub interleaved: Vec<f32>,
}

impl std::fmt::Debug for DecodedAudio {
    // Voice samples are biometric data: never print them.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DecodedAudio")
            .field("container", &self.container)
            .field("codec", &self.codec)
            .field("sample_rate", &self.sample_rate)
            .field("channels", &self.channels)
            .field("samples", &self.interleaved.len())
            .finish()
    }
}

/// Reads a WAV, FLAC or Ogg audio file, recognised by its magic bytes.
///
/// WAV (PCM), FLAC and Ogg Vorbis/FLAC are decoded to [`DecodedAudio`]; Ogg Opus is returned as
/// [`AudioFile::Packets`] with the OpusHead as `config`, the pre-skip as `skip_samples` and the
/// valid length from the last granule position.
///
/// # Errors
/// [`MediaError::Empty`], [`MediaError::UnknownFormat`], [`MediaError::Truncated`] when the file ends
/// before its stated length or end-of-stream page, [`MediaError::Malformed`],
/// [`MediaError::Decode`], [`MediaError::UnsupportedCodec`] (e.g. a non-PCM WAV), and
/// [`MediaError::LimitExceeded`] beyond ten minutes of audio.
pub(crate) fn decode_audio_file(bytes: &[u8]) -> Result<AudioFile<'_>, MediaError> {
    if bytes.is_empty() {
        return Err(MediaError::Empty);
    }
    match super::sniff::sniff_container(bytes) {
        Some(container @ (Container::Wav | Container::Flac)) => {
            decode_with_symphonia(bytes, container).map(AudioFile::Decoded)
        }
        Some(Container::Ogg) if first_ogg_packet_is_opus_head(bytes) => {
            demux_ogg_opus(bytes).map(AudioFile::Packets)
        }
        Some(Container::Ogg) => {
            decode_with_symphonia(bytes, Container::Ogg).map(AudioFile::Decoded)
        }
        _ => Err(MediaError::UnknownFormat { expected: EXPECTED }),
    }
}

// ---------------------------------------------------------------------------------------------
// WAV, FLAC, Vorbis through symphonia
// ---------------------------------------------------------------------------------------------

fn container_name(container: Container) -> &'static str {
    match container {
        Container::Wav => "WAV",
        Container::Flac => "FLAC",
        _ => "Ogg",
    }
}

/// Maps an error from symphonia's readers; `codec` is set for errors from its decoders.
fn map_symphonia_error(
    error: SymphoniaError,
    container: Container,
    codec: Option<AudioCodec>,
) -> MediaError {
    let name = container_name(container);
    match (error, codec) {
        (SymphoniaError::IoError(io), _) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            MediaError::Truncated(format!("the {name} file ends early"))
        }
        (SymphoniaError::DecodeError(detail), Some(codec)) => MediaError::Decode {
            codec: codec.name(),
            detail: detail.to_string(),
        },
        (SymphoniaError::Unsupported(what), _) => MediaError::UnsupportedCodec {
            codec: format!("{what} in {name}"),
            feature: None,
        },
        (other, _) => MediaError::Malformed(format!("{name}: {other}")),
    }
}

fn decode_with_symphonia(bytes: &[u8], container: Container) -> Result<DecodedAudio, MediaError> {
    let source = MediaSourceStream::new(
        Box::new(Cursor::new(bytes)),
        MediaSourceStreamOptions::default(),
    );
    let options = FormatOptions::default();
    let reader: Result<Box<dyn FormatReader + '_>, SymphoniaError> = match container {
        Container::Wav => WavReader::try_new(source, options)
            .map(|reader| Box::new(reader) as Box<dyn FormatReader>),
        Container::Flac => FlacReader::try_new(source, options)
            .map(|reader| Box::new(reader) as Box<dyn FormatReader>),
        _ => OggReader::try_new(source, options)
            .map(|reader| Box::new(reader) as Box<dyn FormatReader>),
    };
    let mut reader = reader.map_err(|error| map_symphonia_error(error, container, None))?;

    let track = reader
        .first_track(TrackType::Audio)
        .ok_or(MediaError::NoAudioTrack)?;
    let track_id = track.id;
    let expected_frames = track.num_frames;
    let params = track
        .codec_params
        .as_ref()
        .and_then(|params| params.audio())
        .ok_or_else(|| {
            MediaError::Malformed(format!(
                "the {} audio track has no codec parameters",
                container_name(container)
            ))
        })?
        .clone();
    let codec = match container {
        Container::Wav => AudioCodec::Pcm,
        Container::Flac => AudioCodec::Flac,
        _ if params.codec == CODEC_ID_VORBIS => AudioCodec::Vorbis,
        _ if params.codec == CODEC_ID_FLAC => AudioCodec::Flac,
        _ => {
            return Err(MediaError::UnsupportedCodec {
                codec: "this Ogg codec".into(),
                feature: None,
            })
        }
    };
    let sample_rate = params.sample_rate.filter(|rate| *rate > 0).ok_or_else(|| {
        MediaError::Malformed(format!(
            "the {} audio track has no sample rate",
            container_name(container)
        ))
    })?;
    let max_frames = u64::from(sample_rate) * MAX_SECONDS;
    if let Some(frames) = expected_frames {
        // Refuse long files from the header, before decoding any of them.
        check_frames(frames, max_frames)?;
    }

    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|error| map_symphonia_error(error, container, Some(codec)))?;

    let mut channels = params
        .channels
        .as_ref()
        .map(|channels| channels.count())
        .unwrap_or(0);
    let mut interleaved: Vec<f32> = Vec::new();
    let mut packet_samples: Vec<f32> = Vec::new();
    let mut frames: u64 = 0;
    loop {
        let packet = match reader.next_packet() {
            Ok(Some(packet)) => packet,
            Ok(None) => break,
            Err(error) => return Err(map_symphonia_error(error, container, None)),
        };
        if packet.track_id != track_id {
            continue;
        }
        let buffer = decoder
            .decode(&packet)
            .map_err(|error| map_symphonia_error(error, container, Some(codec)))?;
        let buffer_channels = buffer.spec().channels().count();
        if buffer.spec().rate() != sample_rate || (channels != 0 && buffer_channels != channels) {
            return Err(MediaError::Malformed(format!(
                "the {} stream changes its format midway",
                container_name(container)
            )));
        }
        channels = buffer_channels;
        if channels == 0 {
            return Err(MediaError::Malformed(format!(
                "the {} stream has no channels",
                container_name(container)
            )));
        }
        // The decoders trim encoder delay and padding themselves (`AudioDecoderOptions::gapless`
        // is on by default), so every decoded frame is kept.
        buffer.copy_to_vec_interleaved(&mut packet_samples);
        let kept = packet_samples.as_slice();
        frames += buffer.frames() as u64;
        check_frames(frames, max_frames)?;
        let total = (interleaved.len() + kept.len()) as u64;
        if total > MAX_INTERLEAVED_SAMPLES {
            return Err(MediaError::LimitExceeded {
                what: "decoded audio samples (all channels)",
                value: total,
                limit: MAX_INTERLEAVED_SAMPLES,
            });
        }
        interleaved.extend_from_slice(kept);
    }

    if let Some(expected) = expected_frames {
        // WAV and FLAC state their length up front; a shorter stream is a cut-off file.
        if frames < expected {
            return Err(MediaError::Truncated(format!(
                "the {} file holds {frames} of its {expected} samples",
                container_name(container)
            )));
        }
    }
    if frames == 0 {
        return Err(MediaError::Malformed(format!(
            "the {} file holds no audio",
            container_name(container)
        )));
    }
    let channels = u16::try_from(channels).map_err(|_| {
        MediaError::Malformed(format!(
            "the {} stream has {channels} channels",
            container_name(container)
        ))
    })?;
    Ok(DecodedAudio {
        container,
        codec,
        sample_rate,
        channels,
        interleaved,
    })
}

fn check_frames(frames: u64, max_frames: u64) -> Result<(), MediaError> {
    if frames > max_frames {
        Err(MediaError::LimitExceeded {
            what: "audio samples per channel",
            value: frames,
            limit: max_frames,
        })
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Ogg pages and Opus (RFC 3533, RFC 7845)
// ---------------------------------------------------------------------------------------------

/// Header-type flag: the page's first packet continues one from the previous page.
const CONTINUED: u8 = 0x01;
/// Header-type flag: first page of a logical stream.
const BEGINNING_OF_STREAM: u8 = 0x02;
/// Header-type flag: last page of a logical stream.
const END_OF_STREAM: u8 = 0x04;

/// One Ogg page, borrowed from the input.
struct OggPage<'a> {
    header_type: u8,
    /// Granule position; -1 when no packet ends on this page.
    granule: i64,
    serial: u32,
    /// Lacing values.
    segments: &'a [u8],
    body: &'a [u8],
    /// Offset of the body in the input, for error messages.
    offset: usize,
}

/// Reads the page at `at`, checking its structure and CRC; returns it and the next page's offset.
fn read_ogg_page(bytes: &[u8], at: usize) -> Result<(OggPage<'_>, usize), MediaError> {
    let truncated =
        || MediaError::Truncated(format!("the Ogg file ends inside the page at byte {at}"));
    let header = bytes.get(at..at + 27).ok_or_else(truncated)?;
    if &header[..4] != b"OggS" {
        return Err(MediaError::Malformed(format!("no Ogg page at byte {at}")));
    }
    if header[4] != 0 {
        return Err(MediaError::Malformed(format!(
            "unknown Ogg version {} at byte {at}",
            header[4]
        )));
    }
    let header_type = header[5];
    let granule = i64::from_le_bytes([
        header[6], header[7], header[8], header[9], header[10], header[11], header[12], header[13],
    ]);
    let serial = u32::from_le_bytes([header[14], header[15], header[16], header[17]]);
    let crc = u32::from_le_bytes([header[22], header[23], header[24], header[25]]);
    let segment_count = usize::from(header[26]);
    let segments = bytes
        .get(at + 27..at + 27 + segment_count)
        .ok_or_else(truncated)?;
    let body_start = at + 27 + segment_count;
    let body_len: usize = segments.iter().map(|&lace| usize::from(lace)).sum();
    let body = bytes
        .get(body_start..body_start + body_len)
        .ok_or_else(truncated)?;
    let page = bytes.get(at..body_start + body_len).ok_or_else(truncated)?;
    if ogg_crc(page) != crc {
        return Err(MediaError::Malformed(format!(
            "the Ogg page at byte {at} fails its checksum"
        )));
    }
    Ok((
        OggPage {
            header_type,
            granule,
            serial,
            segments,
            body,
            offset: at,
        },
        body_start + body_len,
    ))
}

/// The Ogg CRC-32 (polynomial 0x04C11DB7, no reflection, initial value 0) over a page whose CRC
/// field (bytes 22..26) counts as zero.
fn ogg_crc(page: &[u8]) -> u32 {
    let mut crc = 0u32;
    for (index, &byte) in page.iter().enumerate() {
        let byte = if (22..26).contains(&index) { 0 } else { byte };
        crc ^= u32::from(byte) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04C1_1DB7
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Whether the first page's first packet is an OpusHead (RFC 7845 puts it alone on the BOS page).
fn first_ogg_packet_is_opus_head(bytes: &[u8]) -> bool {
    // The body of a page with one segment starts at 28; allow any segment count.
    let Some(&segment_count) = bytes.get(26) else {
        return false;
    };
    bytes
        .get(27 + usize::from(segment_count)..)
        .is_some_and(|body| body.starts_with(b"OpusHead"))
}

/// A packet reassembled from one logical stream, with the page it ended on.
struct OggPacket<'a> {
    data: Cow<'a, [u8]>,
    /// Index of the page (among this stream's pages) on which the packet ends.
    page: usize,
}

/// The packets of the first logical stream, and the granule position and flags of each of its pages.
struct OggStream<'a> {
    packets: Vec<OggPacket<'a>>,
    granules: Vec<i64>,
    ended: bool,
}

/// Splits the first logical stream into packets (other multiplexed streams are skipped).
fn read_ogg_stream(bytes: &[u8]) -> Result<OggStream<'_>, MediaError> {
    let mut stream = OggStream {
        packets: Vec::new(),
        granules: Vec::new(),
        ended: false,
    };
    let mut serial = None;
    // A packet still open at the end of a page: its bytes so far.
    let mut partial: Option<Vec<u8>> = None;
    let mut at = 0;
    while at < bytes.len() {
        let (page, next) = read_ogg_page(bytes, at)?;
        at = next;
        match serial {
            None if page.header_type & BEGINNING_OF_STREAM == 0 => {
                return Err(MediaError::Malformed(
                    "the first Ogg page does not begin a stream".into(),
                ));
            }
            None => serial = Some(page.serial),
            Some(first) if first != page.serial => continue,
            Some(_) => {}
        }
        if stream.ended {
            // Chained streams after the end of the first one are not part of this recording.
            break;
        }
        let page_index = stream.granules.len();
        stream.granules.push(page.granule);
        let continued = page.header_type & CONTINUED != 0;
        if continued != partial.is_some() {
            return Err(MediaError::Malformed(format!(
                "the Ogg page at byte {} breaks the packet sequence (a page is missing)",
                page.offset
            )));
        }
        let mut start = 0;
        let mut end = 0;
        for &lace in page.segments {
            end += usize::from(lace);
            if lace == 255 {
                continue;
            }
            let piece = page.body.get(start..end).unwrap_or_default();
            let data = match partial.take() {
                Some(mut head) => {
                    head.extend_from_slice(piece);
                    Cow::Owned(head)
                }
                None => Cow::Borrowed(piece),
            };
            stream.packets.push(OggPacket {
                data,
                page: page_index,
            });
            start = end;
        }
        if start < end {
            // The page ends on a lacing value of 255: the last packet goes on on the next page.
            let mut head = partial.take().unwrap_or_default();
            head.extend_from_slice(page.body.get(start..end).unwrap_or_default());
            partial = Some(head);
        }
        if page.header_type & END_OF_STREAM != 0 {
            stream.ended = true;
        }
    }
    if !stream.ended {
        return Err(MediaError::Truncated(
            "the Ogg stream ends without its end-of-stream page".into(),
        ));
    }
    if partial.is_some() {
        return Err(MediaError::Truncated(
            "the last Ogg packet is cut off".into(),
        ));
    }
    Ok(stream)
}

/// Demuxes Ogg Opus into a [`Demuxed`] with one Opus [`AudioTrack`].
fn demux_ogg_opus(bytes: &[u8]) -> Result<Demuxed<'_>, MediaError> {
    let stream = read_ogg_stream(bytes)?;
    let mut packets = stream.packets.into_iter();
    let head_packet = packets
        .next()
        .ok_or_else(|| MediaError::Truncated("the Ogg Opus file has no OpusHead".into()))?;
    let head = OpusHead::parse(&head_packet.data)?;
    let tags = packets
        .next()
        .ok_or_else(|| MediaError::Truncated("the Ogg Opus file has no OpusTags".into()))?;
    if !tags.data.starts_with(b"OpusTags") {
        return Err(MediaError::Malformed(
            "the second Ogg Opus packet is not OpusTags".into(),
        ));
    }
    let audio: Vec<OggPacket<'_>> = packets.collect();
    let durations = audio
        .iter()
        .map(|packet| packet_samples(&packet.data))
        .collect::<Result<Vec<u64>, _>>()?;
    let total: u64 = durations.iter().sum();
    let max_samples = u64::from(OPUS_RATE) * MAX_SECONDS;
    check_frames(total, max_samples)?;

    // The granule position of a page is the sample count (pre-skip included) at the end of the
    // last packet finished on it, so the stream's starting position follows from the first page
    // with a granule and the packets finished up to it (RFC 7845 section 4). It is 0 unless the
    // recording was cut from a longer stream.
    let granule_of = |page: usize| stream.granules.get(page).copied().unwrap_or(-1);
    let mut start: u64 = 0;
    let mut finished: u64 = 0;
    for (index, (packet, duration)) in audio.iter().zip(&durations).enumerate() {
        finished += duration;
        let last_on_page = audio
            .get(index + 1)
            .is_none_or(|next| next.page != packet.page);
        if let Ok(granule) = u64::try_from(granule_of(packet.page)) {
            if last_on_page {
                // A granule below the samples finished only happens on a final page with end
                // trimming, where the start is 0 by definition: saturate.
                start = granule.saturating_sub(finished);
                break;
            }
        }
    }
    let last_granule = audio
        .last()
        .map(|packet| granule_of(packet.page))
        .filter(|granule| *granule >= 0)
        .and_then(|granule| u64::try_from(granule).ok())
        .ok_or_else(|| {
            MediaError::Malformed("the last Ogg Opus page has no granule position".into())
        })?;
    let pre_skip = u64::from(head.pre_skip);
    let valid = last_granule
        .saturating_sub(start)
        .saturating_sub(pre_skip)
        .min(total.saturating_sub(pre_skip));

    let mut position = start;
    let mut out = Vec::with_capacity(audio.len());
    for (packet, duration) in audio.into_iter().zip(durations) {
        // Presentation time with the pre-skip applied, so the first kept sample is at 0 ms (the
        // first packet starts slightly before it).
        let samples = i64::try_from(position)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::from(head.pre_skip));
        out.push(Packet {
            pts_ms: (samples * 1000).div_euclid(i64::from(OPUS_RATE)),
            keyframe: true,
            data: packet.data,
        });
        position += duration;
    }
    let duration_ms = i64::try_from(valid * 1000 / u64::from(OPUS_RATE)).unwrap_or(i64::MAX);
    Ok(Demuxed {
        container: Container::Ogg,
        duration_ms,
        video: None,
        audio: Some(AudioTrack {
            codec: AudioCodec::Opus,
            sample_rate: OPUS_RATE,
            channels: u16::from(head.channels),
            config: head_packet.data.into_owned(),
            skip_samples: pre_skip,
            valid_samples: Some(valid),
            packets: out,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn media_path(name: &str) -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/media/")).join(name)
    }

    fn read(name: &str) -> Vec<u8> {
        std::fs::read(media_path(name))
            .unwrap_or_else(|error| panic!("{name}: {error} (run scripts/make-test-media)"))
    }

    fn decoded(name: &str) -> DecodedAudio {
        match decode_audio_file(&read(name)) {
            Ok(AudioFile::Decoded(audio)) => audio,
            other => panic!("{name}: {other:?}"),
        }
    }

    fn rms(samples: &[f32]) -> f32 {
        (samples.iter().map(|sample| sample * sample).sum::<f32>() / samples.len().max(1) as f32)
            .sqrt()
    }

    /// The tone files: a 1 kHz sine at amplitude 0.5 for 0.5 s, then silence to 1.0 s.
    fn assert_tone(name: &str, container: Container, codec: AudioCodec, rate: u32, channels: u16) {
        let audio = decoded(name);
        assert_eq!(
            (
                audio.container,
                audio.codec,
                audio.sample_rate,
                audio.channels
            ),
            (container, codec, rate, channels),
            "{name}"
        );
        let frames = audio.interleaved.len() / usize::from(channels);
        assert_eq!(audio.interleaved.len() % usize::from(channels), 0, "{name}");
        let tolerance = rate as usize / 1000;
        assert!(
            frames.abs_diff(rate as usize) <= tolerance,
            "{name}: {frames} frames, expected {rate} +-1 ms"
        );
        let half = rate as usize / 2 * usize::from(channels);
        // Skip 10 ms around the edges, where lossy codecs smear the tone's start and end.
        let margin = rate as usize / 100 * usize::from(channels);
        let tone = rms(&audio.interleaved[margin..half - margin]);
        let silence = rms(&audio.interleaved[half + margin..]);
        assert!((tone - 0.3536).abs() < 0.02, "{name}: tone RMS {tone}");
        assert!(silence < 0.003, "{name}: silence RMS {silence}");
        assert!(
            audio.interleaved.iter().all(|sample| sample.abs() <= 1.0),
            "{name}"
        );
    }

    #[test]
    fn wav_stereo_48k() {
        assert_tone("tone.wav", Container::Wav, AudioCodec::Pcm, 48_000, 2);
        // Lossless: exactly one second.
        assert_eq!(decoded("tone.wav").interleaved.len(), 96_000);
    }

    #[test]
    fn flac_mono_44k() {
        assert_tone("tone.flac", Container::Flac, AudioCodec::Flac, 44_100, 1);
        assert_eq!(decoded("tone.flac").interleaved.len(), 44_100);
    }

    #[test]
    fn ogg_vorbis_mono_44k() {
        assert_tone(
            "tone_vorbis.ogg",
            Container::Ogg,
            AudioCodec::Vorbis,
            44_100,
            1,
        );
    }

    #[test]
    fn ogg_opus_is_demuxed_into_packets() {
        let bytes = read("tone_opus.ogg");
        let demuxed = match decode_audio_file(&bytes) {
            Ok(AudioFile::Packets(demuxed)) => demuxed,
            other => panic!("{other:?}"),
        };
        assert_eq!(demuxed.container, Container::Ogg);
        assert_eq!(demuxed.duration_ms, 1000);
        assert!(demuxed.video.is_none());
        let track = demuxed.audio.expect("audio track");
        assert_eq!(
            (track.codec, track.sample_rate, track.channels),
            (AudioCodec::Opus, 48_000, 1)
        );
        assert!(track.config.starts_with(b"OpusHead"));
        assert_eq!(track.config.len(), 19);
        assert_eq!(track.skip_samples, 312);
        assert_eq!(track.valid_samples, Some(48_000));
        // 1.0065 s of 20 ms packets.
        assert_eq!(track.packets.len(), 51);
        assert_eq!(track.packets[0].pts_ms, -7);
        assert_eq!(track.packets[1].pts_ms, 13);
        assert!(track
            .packets
            .windows(2)
            .all(|pair| pair[1].pts_ms > pair[0].pts_ms));
        assert!(track
            .packets
            .iter()
            .all(|packet| packet.keyframe && !packet.data.is_empty()));
        // Small packets lie inside one page and are borrowed from the input.
        assert!(track
            .packets
            .iter()
            .all(|packet| matches!(packet.data, Cow::Borrowed(_))));
        let total: u64 = track
            .packets
            .iter()
            .map(|packet| packet_samples(&packet.data).unwrap_or(0))
            .sum();
        assert_eq!(total, 51 * 960);
    }

    /// Builds an Ogg page of stream 7 with a correct CRC.
    fn ogg_page(
        header_type: u8,
        granule: i64,
        sequence: u32,
        lacing: &[u8],
        body: &[u8],
    ) -> Vec<u8> {
        let mut page = b"OggS\x00".to_vec();
        page.push(header_type);
        page.extend_from_slice(&granule.to_le_bytes());
        page.extend_from_slice(&7u32.to_le_bytes());
        page.extend_from_slice(&sequence.to_le_bytes());
        page.extend_from_slice(&[0, 0, 0, 0]);
        page.push(u8::try_from(lacing.len()).expect("at most 255 segments"));
        page.extend_from_slice(lacing);
        page.extend_from_slice(body);
        let crc = ogg_crc(&page);
        page[22..26].copy_from_slice(&crc.to_le_bytes());
        page
    }

    #[test]
    fn packets_spanning_pages_are_joined() {
        // OpusHead (pre-skip 312, mono) and OpusTags, then 5 packets of 300 bytes (TOC 0xFC: one
        // 20 ms CELT frame), each split as 255 bytes on one page and 45 on a continuation page;
        // the last granule trims the end to 4 * 960 samples after the pre-skip.
        let mut head = b"OpusHead\x01\x01".to_vec();
        head.extend_from_slice(&312u16.to_le_bytes());
        head.extend_from_slice(&48_000u32.to_le_bytes());
        head.extend_from_slice(&[0, 0, 0]);
        let tags = b"OpusTags\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
        let packets: Vec<Vec<u8>> = (0..5u8)
            .map(|index| {
                std::iter::once(0xFC)
                    .chain(std::iter::repeat_n(index, 299))
                    .collect()
            })
            .collect();
        let mut file = ogg_page(BEGINNING_OF_STREAM, 0, 0, &[head.len() as u8], &head);
        file.extend(ogg_page(0, 0, 1, &[tags.len() as u8], &tags));
        let mut sequence = 2;
        for (index, packet) in packets.iter().enumerate() {
            file.extend(ogg_page(0, -1, sequence, &[255], &packet[..255]));
            let last = index + 1 == packets.len();
            let granule = if last {
                312 + 4 * 960
            } else {
                960 * (index as i64 + 1)
            };
            let flags = CONTINUED | if last { END_OF_STREAM } else { 0 };
            file.extend(ogg_page(
                flags,
                granule,
                sequence + 1,
                &[45],
                &packet[255..],
            ));
            sequence += 2;
        }
        let demuxed = match decode_audio_file(&file) {
            Ok(AudioFile::Packets(demuxed)) => demuxed,
            other => panic!("{other:?}"),
        };
        assert_eq!(demuxed.duration_ms, 80);
        let track = demuxed.audio.expect("audio");
        assert_eq!(
            (track.skip_samples, track.valid_samples, track.channels),
            (312, Some(4 * 960), 1)
        );
        assert_eq!(track.config, head);
        assert_eq!(track.packets.len(), 5);
        for (joined, packet) in track.packets.iter().zip(&packets) {
            assert_eq!(joined.data.as_ref(), packet.as_slice());
            assert!(matches!(joined.data, Cow::Owned(_)));
        }
        let pts: Vec<i64> = track.packets.iter().map(|packet| packet.pts_ms).collect();
        assert_eq!(pts, [-7, 13, 33, 53, 73]);

        // A missing continuation page breaks the sequence.
        let cut = 28 + head.len() + 28 + tags.len();
        let mut broken = file[..cut].to_vec();
        broken.extend_from_slice(&file[cut + 27 + 1 + 255..]);
        assert!(
            matches!(decode_audio_file(&broken), Err(MediaError::Malformed(message)) if message.contains("missing"))
        );
        // Without the end-of-stream page the file is truncated.
        let without_end = &file[..file.len() - (27 + 1 + 45)];
        assert!(matches!(
            decode_audio_file(without_end),
            Err(MediaError::Truncated(_))
        ));
    }

    #[test]
    fn empty_and_unknown_formats_are_refused() {
        assert_eq!(decode_audio_file(&[]).err(), Some(MediaError::Empty));
        let unknown = Some(MediaError::UnknownFormat { expected: EXPECTED });
        assert_eq!(
            decode_audio_file(b"ID3\x04\x00\x00\x00\x00\x00\x00").err(),
            unknown
        );
        assert_eq!(decode_audio_file(&read("tone.m4a")).err(), unknown);
        assert_eq!(decode_audio_file(&read("tone_opus.webm")).err(), unknown);
        assert_eq!(
            decode_audio_file(b"RIFF\x00\x00\x00\x00AVI LIST").err(),
            unknown
        );
    }

    #[test]
    fn truncated_files_are_errors() {
        for name in ["tone.wav", "tone.flac", "tone_vorbis.ogg", "tone_opus.ogg"] {
            let bytes = read(name);
            for cut in [bytes.len() / 2, bytes.len() - 1, 100, 30, 5] {
                let result = decode_audio_file(&bytes[..cut]);
                assert!(
                    matches!(result, Err(MediaError::Truncated(_) | MediaError::Malformed(_) | MediaError::Decode { .. }))
                        // Fewer bytes than the WAV magic (RIFF....WAVE) are no longer a WAV.
                        || (cut < 12 && matches!(result, Err(MediaError::UnknownFormat { .. }))),
                    "{name} cut at {cut}: {result:?}"
                );
            }
            // Cutting in half loses samples the header or the end-of-stream page promised.
            let result = decode_audio_file(&bytes[..bytes.len() / 2]);
            assert!(
                matches!(result, Err(MediaError::Truncated(_))),
                "{name} cut in half: {result:?}"
            );
        }
    }

    #[test]
    fn corrupted_ogg_page_fails_its_checksum() {
        let mut bytes = read("tone_opus.ogg");
        let last = bytes.len() - 10;
        bytes[last] ^= 0x55;
        assert!(
            matches!(decode_audio_file(&bytes), Err(MediaError::Malformed(message)) if message.contains("checksum"))
        );
    }

    #[test]
    fn over_ten_minutes_is_refused_from_the_header() {
        // A WAV header claiming 11 minutes of 8 kHz mono 16-bit audio, followed by a little data.
        let frames: u32 = 8_000 * 660;
        let mut wav = b"RIFF".to_vec();
        wav.extend_from_slice(&(36 + frames * 2).to_le_bytes());
        wav.extend_from_slice(b"WAVEfmt ");
        wav.extend_from_slice(&16u32.to_le_bytes());
        wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
        wav.extend_from_slice(&1u16.to_le_bytes()); // mono
        wav.extend_from_slice(&8_000u32.to_le_bytes());
        wav.extend_from_slice(&16_000u32.to_le_bytes());
        wav.extend_from_slice(&2u16.to_le_bytes());
        wav.extend_from_slice(&16u16.to_le_bytes());
        wav.extend_from_slice(b"data");
        wav.extend_from_slice(&(frames * 2).to_le_bytes());
        wav.extend_from_slice(&[0; 1000]);
        assert_eq!(
            decode_audio_file(&wav).err(),
            Some(MediaError::LimitExceeded {
                what: "audio samples per channel",
                value: u64::from(frames),
                limit: 8_000 * 600
            })
        );
    }

    #[test]
    fn garbage_after_a_valid_magic_never_panics() {
        let mut state = 0x9E37_79B9u32;
        for len in [4usize, 12, 30, 60, 300, 3000] {
            for magic in [
                &b"RIFF\x10\x00\x00\x00WAVEfmt "[..],
                b"fLaC",
                b"OggS\x00\x02",
            ] {
                let mut bytes = magic.to_vec();
                while bytes.len() < len {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    bytes.push((state >> 24) as u8);
                }
                assert!(decode_audio_file(&bytes).is_err());
            }
        }
        // Flipping bytes of real files must not panic either (errors or odd audio are both fine).
        for name in ["tone.wav", "tone.flac", "tone_vorbis.ogg", "tone_opus.ogg"] {
            let original = read(name);
            for step in 0..40 {
                let mut bytes = original.clone();
                let at = (step * 7919) % bytes.len();
                bytes[at] = bytes[at].wrapping_add(0x5A);
                let _ = decode_audio_file(&bytes);
            }
        }
    }
}
