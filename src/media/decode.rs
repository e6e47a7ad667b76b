//! The decode step: [`decode_video`] turns a video file into a [`Clip`], [`decode_audio`] an audio
//! file into [`Pcm`], under [`DecodeOptions`] (a [`FrameSampler`] and [`DecodeLimits`]).
//!
//! One pass: the container is demuxed once; the video and audio branches run in parallel (on the
//! engine's pool when called inside it). Every video packet must be decoded (inter prediction), but
//! only the pictures the sampler keeps are converted to RGB and rotated, and decoding stops after
//! the last kept picture.

use super::demux::{AudioTrack, Demuxed, VideoDecoder, VideoTrack, YuvView};
use super::error::MediaError;
use super::types::{AudioCodec, Clip, Container, Frame, MediaInfo, Pcm, VideoCodec};
use super::{audio_file, mkv, mp4, resample, yuv};

/// Which decoded pictures become [`Frame`]s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FrameSampler {
    /// Every picture.
    All,
    /// This many pictures, spread evenly over the clip (first and last included).
    Evenly(usize),
    /// At most this many pictures per second of presentation time.
    MaxFps(f32),
}

/// Caps that keep hostile files (decompression bombs, absurd headers) from exhausting the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest input, bytes.
    pub max_bytes: usize,
    /// Largest coded width or height, pixels.
    pub max_dimension: u32,
    /// Most packets in the video track.
    pub max_video_packets: usize,
    /// Longest presentation, ms.
    pub max_duration_ms: i64,
    /// Most frames returned (after sampling).
    pub max_output_frames: usize,
}

impl Default for DecodeLimits {
    fn default() -> DecodeLimits {
        DecodeLimits {
            max_bytes: 100 * 1024 * 1024,
            max_dimension: 4096,
            max_video_packets: 36_000,
            max_duration_ms: 10 * 60 * 1000,
            max_output_frames: 1_000,
        }
    }
}

/// How to decode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeOptions {
    /// Which pictures to keep.
    pub sampler: FrameSampler,
    /// Safety caps.
    pub limits: DecodeLimits,
    /// Decode the audio track (a file without one still decodes; `Clip::audio` is `None`).
    pub audio: bool,
}

impl Default for DecodeOptions {
    fn default() -> DecodeOptions {
        DecodeOptions {
            sampler: FrameSampler::MaxFps(10.0),
            limits: DecodeLimits::default(),
            audio: true,
        }
    }
}

fn check_size(bytes: &[u8], limits: &DecodeLimits) -> Result<(), MediaError> {
    if bytes.is_empty() {
        return Err(MediaError::Empty);
    }
    if bytes.len() > limits.max_bytes {
        return Err(MediaError::TooLarge {
            size: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    Ok(())
}

fn is_iso_media(bytes: &[u8]) -> bool {
    bytes.len() >= 8
        && matches!(
            &bytes[4..8],
            b"ftyp" | b"moov" | b"mdat" | b"wide" | b"free" | b"skip" | b"styp"
        )
}

fn is_ebml(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1A, 0x45, 0xDF, 0xA3])
}

fn demux(bytes: &[u8]) -> Result<Demuxed<'_>, MediaError> {
    if is_iso_media(bytes) {
        mp4::demux_mp4(bytes)
    } else if is_ebml(bytes) {
        mkv::demux_matroska(bytes)
    } else {
        Err(MediaError::UnknownFormat {
            expected: "MP4, MOV, WebM or Matroska video",
        })
    }
}

fn exceeds(what: &'static str, value: u64, limit: u64) -> Result<(), MediaError> {
    if value > limit {
        Err(MediaError::LimitExceeded { what, value, limit })
    } else {
        Ok(())
    }
}

/// Decodes a video file (MP4, MOV, fragmented MP4, WebM, Matroska) into sampled frames and 16 kHz
/// mono audio. A file without a video track is [`MediaError::NoVideoTrack`]; one without audio
/// decodes with `audio: None`.
pub fn decode_video(bytes: &[u8], options: &DecodeOptions) -> Result<Clip, MediaError> {
    check_size(bytes, &options.limits)?;
    let demuxed = demux(bytes)?;
    let video = demuxed.video.as_ref().ok_or(MediaError::NoVideoTrack)?;
    let limits = &options.limits;
    exceeds(
        "frame width",
        u64::from(video.width),
        u64::from(limits.max_dimension),
    )?;
    exceeds(
        "frame height",
        u64::from(video.height),
        u64::from(limits.max_dimension),
    )?;
    exceeds(
        "video frame count",
        video.packets.len() as u64,
        limits.max_video_packets as u64,
    )?;
    exceeds(
        "duration in ms",
        demuxed.duration_ms.max(0) as u64,
        limits.max_duration_ms as u64,
    )?;
    let audio_track = demuxed.audio.as_ref().filter(|_| options.audio);
    let (frames, audio) = rayon::join(
        || decode_frames(video, options),
        || {
            audio_track
                .map(|track| decode_track_audio(track, limits))
                .transpose()
        },
    );
    let frames = frames?;
    let audio = audio?;
    Ok(Clip {
        frames,
        audio,
        info: info_of(&demuxed),
    })
}

/// Decodes an audio file for voice enrollment: WAV, FLAC, Ogg (Opus, Vorbis), MP4/M4A (AAC), WebM
/// (Opus); a video file's audio track works too. Returns 16 kHz mono and facts about the source.
pub fn decode_audio(bytes: &[u8], limits: &DecodeLimits) -> Result<(Pcm, MediaInfo), MediaError> {
    check_size(bytes, limits)?;
    if is_iso_media(bytes) || is_ebml(bytes) {
        let demuxed = demux(bytes)?;
        let track = demuxed.audio.as_ref().ok_or(MediaError::NoAudioTrack)?;
        exceeds(
            "duration in ms",
            demuxed.duration_ms.max(0) as u64,
            limits.max_duration_ms as u64,
        )?;
        let pcm = decode_track_audio(track, limits)?;
        return Ok((pcm, info_of(&demuxed)));
    }
    match audio_file::decode_audio_file(bytes)? {
        audio_file::AudioFile::Packets(demuxed) => {
            let track = demuxed.audio.as_ref().ok_or(MediaError::NoAudioTrack)?;
            let pcm = decode_track_audio(track, limits)?;
            Ok((pcm, info_of(&demuxed)))
        }
        audio_file::AudioFile::Decoded(decoded) => {
            let frames = decoded.interleaved.len() as u64 / u64::from(decoded.channels.max(1));
            let duration_ms = (frames * 1000 / u64::from(decoded.sample_rate.max(1))) as i64;
            exceeds(
                "duration in ms",
                duration_ms as u64,
                limits.max_duration_ms as u64,
            )?;
            let samples =
                resample::to_mono_16k(&decoded.interleaved, decoded.sample_rate, decoded.channels)?;
            let info = MediaInfo {
                container: decoded.container,
                video_codec: None,
                audio_codec: Some(decoded.codec),
                duration_ms,
                coded_width: 0,
                coded_height: 0,
                rotation: Default::default(),
                video_frame_count: 0,
                audio_sample_rate: Some(decoded.sample_rate),
                audio_channels: Some(decoded.channels),
            };
            Ok((
                Pcm {
                    samples,
                    start_ms: 0,
                },
                info,
            ))
        }
    }
}

fn info_of(demuxed: &Demuxed<'_>) -> MediaInfo {
    let video = demuxed.video.as_ref();
    let audio = demuxed.audio.as_ref();
    MediaInfo {
        container: demuxed.container,
        video_codec: video.map(|track| track.codec),
        audio_codec: audio.map(|track| track.codec),
        duration_ms: demuxed.duration_ms,
        coded_width: video.map_or(0, |track| track.width),
        coded_height: video.map_or(0, |track| track.height),
        rotation: video.map(|track| track.rotation).unwrap_or_default(),
        video_frame_count: video.map_or(0, |track| track.packets.len()),
        audio_sample_rate: audio.map(|track| track.sample_rate),
        audio_channels: audio.map(|track| track.channels),
    }
}

/// Indices (into presentation order) of the pictures to keep.
pub(crate) fn select_frames(presentation_ms: &[i64], sampler: FrameSampler) -> Vec<usize> {
    let count = presentation_ms.len();
    match sampler {
        FrameSampler::All => (0..count).collect(),
        FrameSampler::Evenly(wanted) if wanted == 0 || count == 0 => Vec::new(),
        FrameSampler::Evenly(wanted) if wanted >= count => (0..count).collect(),
        FrameSampler::Evenly(1) => vec![count / 2],
        FrameSampler::Evenly(wanted) => {
            let mut indices: Vec<usize> = (0..wanted)
                .map(|index| ((index * (count - 1)) as f64 / (wanted - 1) as f64).round() as usize)
                .collect();
            indices.dedup();
            indices
        }
        FrameSampler::MaxFps(fps) => {
            if !(fps.is_finite() && fps > 0.0) {
                return Vec::new();
            }
            // Half a millisecond of slack so that 30 fps sources sampled at 10 fps keep every third frame.
            let spacing = 1000.0 / f64::from(fps) - 0.5;
            let mut kept: Vec<usize> = Vec::new();
            for (index, &pts) in presentation_ms.iter().enumerate() {
                if kept
                    .last()
                    .is_none_or(|&last| (pts - presentation_ms[last]) as f64 >= spacing)
                {
                    kept.push(index);
                }
            }
            kept
        }
    }
}

fn video_decoder(track: &VideoTrack<'_>) -> Result<Box<dyn VideoDecoder>, MediaError> {
    match track.codec {
        #[cfg(feature = "h264")]
        VideoCodec::H264 => Ok(Box::new(super::h264::H264Decoder::new(&track.config)?)),
        #[cfg(feature = "vpx")]
        VideoCodec::Vp8 | VideoCodec::Vp9 => {
            Ok(Box::new(super::vpx::VpxDecoder::new(track.codec)?))
        }
        #[cfg(feature = "hevc")]
        VideoCodec::Hevc => Ok(Box::new(super::hevc::HevcDecoder::new(&track.config)?)),
        #[cfg(feature = "av1")]
        VideoCodec::Av1 => Ok(Box::new(super::av1::Av1Decoder::new(&track.config)?)),
        // Unreachable when every decoder feature is on.
        #[allow(unreachable_patterns)]
        codec => Err(MediaError::UnsupportedCodec {
            codec: codec.name().to_owned(),
            feature: match codec {
                VideoCodec::H264 => Some("h264"),
                VideoCodec::Vp8 | VideoCodec::Vp9 => Some("vpx"),
                VideoCodec::Hevc => Some("hevc"),
                VideoCodec::Av1 => Some("av1"),
            },
        }),
    }
}

fn decode_frames(
    track: &VideoTrack<'_>,
    options: &DecodeOptions,
) -> Result<Vec<Frame>, MediaError> {
    let mut presentation: Vec<i64> = track.packets.iter().map(|packet| packet.pts_ms).collect();
    presentation.sort_unstable();
    let kept = select_frames(&presentation, options.sampler);
    exceeds(
        "sampled frame count",
        kept.len() as u64,
        options.limits.max_output_frames as u64,
    )?;
    let Some(&last_kept) = kept.last() else {
        return Ok(Vec::new());
    };
    let mut decoder = video_decoder(track)?;
    let mut frames = Vec::with_capacity(kept.len());
    // Shared with the callback, and read between packets to stop once the last kept picture is out.
    let output_index = std::cell::Cell::new(0usize);
    let mut next_kept = 0usize;
    let mut on_frame = |view: YuvView<'_>| -> Result<(), MediaError> {
        let index = output_index.get();
        if index < presentation.len() && kept.get(next_kept) == Some(&index) {
            let rgb = yuv::yuv_to_rgb(&view)?;
            let (rgb, width, height) = yuv::rotate(rgb, view.width, view.height, track.rotation);
            frames.push(Frame {
                timestamp_ms: presentation[index],
                width,
                height,
                rgb,
            });
            next_kept += 1;
        }
        output_index.set(index + 1);
        Ok(())
    };
    for packet in &track.packets {
        decoder.decode(&packet.data, &mut on_frame)?;
        if output_index.get() > last_kept {
            return Ok(frames);
        }
    }
    decoder.flush(&mut on_frame)?;
    Ok(frames)
}

/// Samples per channel of end padding allowed beyond the duration limit: more than one frame of
/// any supported codec (AAC 1024 or 2048 with SBR, Opus up to 5760 at 48 kHz).
const CODEC_PADDING_SAMPLES: usize = 8192;

fn decode_track_audio(track: &AudioTrack<'_>, limits: &DecodeLimits) -> Result<Pcm, MediaError> {
    let mut decoder: Box<dyn super::demux::AudioDecoder> = match track.codec {
        AudioCodec::Aac => Box::new(super::aac::AacDecoder::new(
            &track.config,
            track.sample_rate,
            track.channels,
        )?),
        #[cfg(feature = "opus")]
        AudioCodec::Opus => Box::new(super::opus::OpusDecoder::new(&track.config)?),
        codec => {
            return Err(MediaError::UnsupportedCodec {
                codec: codec.name().to_owned(),
                feature: (codec == AudioCodec::Opus).then_some("opus"),
            })
        }
    };
    let channels = usize::from(track.channels.max(1));
    // The limit is on presentation time: the decoder also outputs the encoder's priming (the
    // samples skipped below) and up to a frame of end padding, which a clip exactly at the
    // duration limit must not be refused for.
    let slack = (track.skip_samples as usize).saturating_add(CODEC_PADDING_SAMPLES);
    let max_samples = ((limits.max_duration_ms.max(0) as u64 * u64::from(track.sample_rate) / 1000)
        as usize)
        .saturating_add(slack)
        .saturating_mul(channels);
    let mut interleaved = Vec::new();
    for packet in &track.packets {
        decoder.decode(&packet.data, &mut interleaved)?;
        if interleaved.len() > max_samples {
            return Err(MediaError::LimitExceeded {
                what: "decoded audio samples",
                value: interleaved.len() as u64,
                limit: max_samples as u64,
            });
        }
    }
    // Drop encoder priming / pre-skip so sample 0 is presentation time 0, then the end padding.
    let skip = (track.skip_samples as usize)
        .saturating_mul(channels)
        .min(interleaved.len());
    interleaved.drain(..skip);
    if let Some(valid) = track.valid_samples {
        interleaved.truncate((valid as usize).saturating_mul(channels));
    }
    let start_ms = track
        .packets
        .first()
        .map_or(0, |packet| packet.pts_ms.max(0));
    let samples = resample::to_mono_16k(&interleaved, track.sample_rate, track.channels)?;
    Ok(Pcm { samples, start_ms })
}

/// The container of a video or audio file from its first bytes, without decoding.
pub fn sniff_container(bytes: &[u8]) -> Option<Container> {
    if is_iso_media(bytes) {
        Some(if bytes.get(8..12) == Some(b"qt  ") {
            Container::QuickTime
        } else {
            Container::Mp4
        })
    } else if is_ebml(bytes) {
        Some(Container::Matroska)
    } else if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WAVE" {
        Some(Container::Wav)
    } else if bytes.starts_with(b"fLaC") {
        Some(Container::Flac)
    } else if bytes.starts_with(b"OggS") {
        Some(Container::Ogg)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samplers_pick_the_right_frames() {
        let pts: Vec<i64> = (0..50).map(|index| index * 40).collect();
        assert_eq!(select_frames(&pts, FrameSampler::All).len(), 50);
        assert_eq!(
            select_frames(&pts, FrameSampler::Evenly(5)),
            vec![0, 12, 25, 37, 49]
        );
        assert_eq!(select_frames(&pts, FrameSampler::Evenly(1)), vec![25]);
        assert_eq!(select_frames(&pts, FrameSampler::Evenly(80)).len(), 50);
        assert!(select_frames(&pts, FrameSampler::Evenly(0)).is_empty());
        // 25 fps at 5 fps: every fifth frame.
        assert_eq!(
            select_frames(&pts, FrameSampler::MaxFps(5.0)),
            vec![0, 5, 10, 15, 20, 25, 30, 35, 40, 45]
        );
        let thirty: Vec<i64> = (0..30)
            .map(|index| (index as f64 * 1000.0 / 30.0).round() as i64)
            .collect();
        assert_eq!(select_frames(&thirty, FrameSampler::MaxFps(10.0)).len(), 10);
        assert!(select_frames(&pts, FrameSampler::MaxFps(f32::NAN)).is_empty());
        assert!(select_frames(&[], FrameSampler::Evenly(3)).is_empty());
    }

    /// A clip exactly as long as the duration limit decodes: the encoder's priming and end
    /// padding are not counted against it (a 60.0 s AAC clip was refused at the 60 s limit).
    #[test]
    fn a_clip_at_the_duration_limit_is_accepted() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/media/tone.m4a");
        let bytes = std::fs::read(path).expect("tone.m4a");
        let (pcm, info) = decode_audio(&bytes, &DecodeLimits::default()).expect("decodes");
        let exact_ms = (pcm.samples.len() as u64 * 1000).div_ceil(16_000) as i64;
        assert!(info.duration_ms <= exact_ms, "{info:?} {exact_ms}");
        let at_limit = DecodeLimits {
            max_duration_ms: exact_ms,
            ..DecodeLimits::default()
        };
        let (again, _) = decode_audio(&bytes, &at_limit).expect("a clip at the limit decodes");
        assert_eq!(again.samples.len(), pcm.samples.len());
        // Well over the limit is still refused.
        let under = DecodeLimits {
            max_duration_ms: exact_ms / 2,
            ..DecodeLimits::default()
        };
        assert!(matches!(
            decode_audio(&bytes, &under),
            Err(MediaError::LimitExceeded { .. })
        ));
    }

    #[test]
    fn bad_inputs_are_named() {
        let options = DecodeOptions::default();
        assert_eq!(decode_video(&[], &options), Err(MediaError::Empty));
        assert!(matches!(
            decode_video(b"GIF89a not a video", &options),
            Err(MediaError::UnknownFormat { .. })
        ));
        let tiny = DecodeOptions {
            limits: DecodeLimits {
                max_bytes: 4,
                ..DecodeLimits::default()
            },
            ..options
        };
        assert_eq!(
            decode_video(b"12345", &tiny),
            Err(MediaError::TooLarge { size: 5, limit: 4 })
        );
    }
}
