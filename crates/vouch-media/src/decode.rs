//! The decode step: [`open_video`] demuxes a video file and checks every limit before anything
//! is decoded; the [`VideoFile`] it returns decodes the audio ([`VideoFile::decode_audio`]) and
//! streams the sampled frames to a sink one at a time ([`VideoFile::decode_frames`]), so that an
//! analysis never needs the whole clip in memory. [`decode_video`] collects a whole [`Clip`] (under
//! [`DecodeLimits::max_frame_bytes`]), [`decode_audio`] an audio file into [`Pcm`].
//!
//! Every video packet must be decoded (inter prediction), but only the pictures the sampler keeps
//! are shrunk to [`DecodeOptions::max_side`], converted to RGB and rotated, and decoding stops
//! after the last kept picture. The audio is decoded first: its limit is checked before the
//! expensive video work.

use super::demux::{AudioTrack, Demuxed, VideoDecoder, VideoTrack, YuvView};
use super::error::MediaError;
use super::sniff::{is_video_container, sniff_container};
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
    /// Largest coded picture, pixels (width x height).
    pub max_pixels: u64,
    /// Most packets in the video track.
    pub max_video_packets: usize,
    /// Longest presentation, ms.
    pub max_duration_ms: i64,
    /// Most frames returned (after sampling).
    pub max_output_frames: usize,
    /// Most bytes of RGB a decoded [`Clip`] may hold (frames x width x height x 3, after
    /// shrinking), checked before decoding. Streaming with [`VideoFile::decode_frames`] holds one
    /// frame at a time and is not bound by it.
    pub max_frame_bytes: usize,
}

impl Default for DecodeLimits {
    fn default() -> DecodeLimits {
        DecodeLimits {
            max_bytes: 100 * 1024 * 1024,
            max_dimension: 4096,
            max_pixels: DEFAULT_MAX_PIXELS,
            max_video_packets: 36_000,
            max_duration_ms: 10 * 60 * 1000,
            max_output_frames: 1_000,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
        }
    }
}

/// Default of [`DecodeLimits::max_pixels`]: 4096x2304 (9.4 million), the largest picture of
/// H.264 level 5.2 and HEVC level 5.2; 4K UHD (3840x2160) fits, 4096x4096 does not. With
/// the decoders' own picture-buffer limits it bounds what decoding can hold.
pub const DEFAULT_MAX_PIXELS: u64 = 4096 * 2304;

/// Default of [`DecodeLimits::max_frame_bytes`]: 512 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 512 * 1024 * 1024;

/// Default of [`DecodeOptions::max_side`]: pictures larger than 1280 pixels on their longer side
/// are shrunk by a whole factor until they fit (1920x1080 to 960x540, 4096x4096 to 1024x1024).
/// Every model of the face pipeline looks at 256 pixels or fewer, and a selfie's face is a large
/// part of the picture.
pub const DEFAULT_MAX_SIDE: u32 = 1280;

/// How to decode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeOptions {
    /// Which pictures to keep.
    pub sampler: FrameSampler,
    /// Longest side of a returned frame, pixels, reached by shrinking by a whole factor (a box
    /// average); 0 keeps the decoded size.
    pub max_side: u32,
    /// Safety caps.
    pub limits: DecodeLimits,
    /// Decode the audio track (a file without one still decodes; `Clip::audio` is `None`).
    pub audio: bool,
}

impl Default for DecodeOptions {
    fn default() -> DecodeOptions {
        DecodeOptions {
            sampler: FrameSampler::MaxFps(10.0),
            max_side: DEFAULT_MAX_SIDE,
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

fn demux(bytes: &[u8]) -> Result<Demuxed<'_>, MediaError> {
    match sniff_container(bytes) {
        Some(Container::Mp4 | Container::QuickTime) => mp4::demux_mp4(bytes),
        Some(Container::Matroska) => mkv::demux_matroska(bytes),
        _ => Err(MediaError::UnknownFormat {
            expected: "MP4, MOV, WebM or Matroska video",
        }),
    }
}

fn exceeds(what: &'static str, value: u64, limit: u64) -> Result<(), MediaError> {
    if value > limit {
        Err(MediaError::LimitExceeded { what, value, limit })
    } else {
        Ok(())
    }
}

/// A video file whose container has been read and whose limits have been checked; nothing is
/// decoded yet.
pub struct VideoFile<'a> {
    demuxed: Demuxed<'a>,
    options: DecodeOptions,
    /// Presentation times of the video track in order, ms.
    presentation: Vec<i64>,
    /// Indices into `presentation` of the pictures the sampler keeps.
    kept: Vec<usize>,
}

impl std::fmt::Debug for VideoFile<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("VideoFile")
            .field("info", &self.info())
            .field("frames", &self.kept.len())
            .finish_non_exhaustive()
    }
}

/// Reads a video file's container (MP4, MOV, fragmented MP4, WebM, Matroska) and checks the
/// limits that can be checked without decoding: size, picture size, packet count, duration,
/// sampled frame count. A file without a video track is [`MediaError::NoVideoTrack`].
pub fn open_video<'a>(
    bytes: &'a [u8],
    options: &DecodeOptions,
) -> Result<VideoFile<'a>, MediaError> {
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
        "picture size in pixels",
        u64::from(video.width) * u64::from(video.height),
        limits.max_pixels,
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
    let mut presentation: Vec<i64> = video.packets.iter().map(|packet| packet.pts_ms).collect();
    presentation.sort_unstable();
    let kept = select_frames(&presentation, options.sampler);
    exceeds(
        "sampled frame count",
        kept.len() as u64,
        limits.max_output_frames as u64,
    )?;
    Ok(VideoFile {
        demuxed,
        options: *options,
        presentation,
        kept,
    })
}

impl VideoFile<'_> {
    /// Facts about the file.
    pub fn info(&self) -> MediaInfo {
        info_of(&self.demuxed)
    }

    /// How many frames [`Self::decode_frames`] will hand over (fewer if the stream ends early).
    pub fn frame_count(&self) -> usize {
        self.kept.len()
    }

    /// Width and height of the frames after shrinking and rotation, from the track header.
    pub fn frame_size(&self) -> (u32, u32) {
        let Some(video) = self.demuxed.video.as_ref() else {
            return (0, 0);
        };
        let factor = yuv::shrink_factor(video.width, video.height, self.options.max_side);
        let (width, height) = (
            (video.width / factor).max(1),
            (video.height / factor).max(1),
        );
        match video.rotation {
            super::types::Rotation::Clockwise90 | super::types::Rotation::Clockwise270 => {
                (height, width)
            }
            _ => (width, height),
        }
    }

    /// Bytes of RGB the sampled frames hold together (an upper bound from the track header).
    pub fn frame_bytes(&self) -> u64 {
        let (width, height) = self.frame_size();
        u64::from(width) * u64::from(height) * 3 * self.kept.len() as u64
    }

    /// The audio track as 16 kHz mono; `None` when there is none or the options leave it out.
    pub fn decode_audio(&self) -> Result<Option<Pcm>, MediaError> {
        self.demuxed
            .audio
            .as_ref()
            .filter(|_| self.options.audio)
            .map(|track| decode_track_audio(track, &self.options.limits))
            .transpose()
    }

    /// Decodes the video and hands each sampled frame, in presentation order, to `sink`, which
    /// owns it from then on. A sink error stops decoding and is returned as it is.
    pub fn decode_frames<E: From<MediaError>>(
        &self,
        mut sink: impl FnMut(Frame) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(track) = self.demuxed.video.as_ref() else {
            return Ok(());
        };
        let Some(&last_kept) = self.kept.last() else {
            return Ok(());
        };
        let mut decoder = video_decoder(track)?;
        // The decoders' callbacks speak MediaError: a sink error is kept here, and the callback
        // stops the decoder with a placeholder that is never returned.
        let mut stopped: Option<E> = None;
        // Shared with the callback, and read between packets to stop once the last kept picture
        // is out.
        let output_index = std::cell::Cell::new(0usize);
        let mut next_kept = 0usize;
        let mut on_frame = |view: YuvView<'_>| -> Result<(), MediaError> {
            let index = output_index.get();
            if index < self.presentation.len() && self.kept.get(next_kept) == Some(&index) {
                // From the picture itself: the track header may not tell its real size.
                let factor = yuv::shrink_factor(view.width, view.height, self.options.max_side);
                let shrunk = (factor > 1)
                    .then(|| yuv::shrink(&view, factor))
                    .transpose()?;
                let view = shrunk
                    .as_ref()
                    .map_or(view, |planes| planes.view(view.color));
                let rgb = yuv::yuv_to_rgb(&view)?;
                let (rgb, width, height) =
                    yuv::rotate(rgb, view.width, view.height, track.rotation);
                next_kept += 1;
                let frame = Frame {
                    timestamp_ms: self.presentation[index],
                    width,
                    height,
                    rgb,
                };
                if let Err(error) = sink(frame) {
                    stopped = Some(error);
                    return Err(MediaError::Empty);
                }
            }
            output_index.set(index + 1);
            Ok(())
        };
        let mut run = || -> Result<(), MediaError> {
            for packet in &track.packets {
                decoder.decode(&packet.data, &mut on_frame)?;
                if output_index.get() > last_kept {
                    return Ok(());
                }
            }
            decoder.flush(&mut on_frame)
        };
        let result = run();
        match (stopped, result) {
            (Some(error), _) => Err(error),
            (None, result) => Ok(result?),
        }
    }
}

/// Decodes a video file (MP4, MOV, fragmented MP4, WebM, Matroska) into sampled frames and 16 kHz
/// mono audio. A file without a video track is [`MediaError::NoVideoTrack`]; one without audio
/// decodes with `audio: None`. The frames must fit [`DecodeLimits::max_frame_bytes`].
pub fn decode_video(bytes: &[u8], options: &DecodeOptions) -> Result<Clip, MediaError> {
    let file = open_video(bytes, options)?;
    exceeds(
        "bytes of decoded frames",
        file.frame_bytes(),
        options.limits.max_frame_bytes as u64,
    )?;
    let audio = file.decode_audio()?;
    let mut frames = Vec::with_capacity(file.frame_count());
    let mut held = 0u64;
    file.decode_frames(|frame| {
        // Checked again on the real pictures, which the header may understate.
        held += frame.rgb.len() as u64;
        exceeds(
            "bytes of decoded frames",
            held,
            options.limits.max_frame_bytes as u64,
        )?;
        frames.push(frame);
        Ok::<(), MediaError>(())
    })?;
    Ok(Clip {
        frames,
        audio,
        info: file.info(),
    })
}

/// Decodes an audio file for voice enrollment: WAV, FLAC, Ogg (Opus, Vorbis), MP4/M4A (AAC), WebM
/// (Opus); a video file's audio track works too. Returns 16 kHz mono and facts about the source.
pub fn decode_audio(bytes: &[u8], limits: &DecodeLimits) -> Result<(Pcm, MediaInfo), MediaError> {
    check_size(bytes, limits)?;
    if is_video_container(bytes) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `video_decode` fuzzing find (2026-11-28): a WebM whose VP8 pictures end in a plane
    /// shorter than a whole stride made the YUV converter panic (`yuv::whole_strides`). With the
    /// fuzz target's options it must return, not panic.
    #[cfg(feature = "vpx")]
    #[test]
    fn a_short_last_plane_row_is_no_panic() {
        use base64::Engine as _;
        let input = base64::engine::general_purpose::STANDARD
            .decode(concat!(
            "GkXfo59ChoEBQveBAULygQRC84EIQoKEd2VibUKHgQRChYECGFOAZwEAAAAAAAchEU2bdLpNu4tTq4QVSalmU6yB",
            "oU27i1OrhBZUrmtTrIHYTbuMU6uEElTDZ1OsggGETbuMU6uEHFO7a1OsggcLd+wBAAAAAAAAWQAAAAAAAAAAAAAA",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "AAAAAAAAAAAAAAAAFUmpZrIq17GDD0JATYCNTGF2ZjU5LjI3LjA1MFdBjUxhdmY1OS4yNy4xMDBEiYhAX8AAAAAA",
            "+RZUrmtApq4BAAAAAAAAONeBAXPFiIfLC/+0idfMnIEAIrWcg3VuZIiBAIaFVl9WUDiDgQEj44OEAmJaAOCJsIEg",
            "uoEgmoECrgEAAAAAAABc14ECc8WIGjmnX15Doo+cgQAitZyDdW5kiIEAhoZBX09QVVNWqoMhD4tWu4QExLQAg4EC",
            "4ZGfgQG1iEDPQAAAAAAAYmSBEGOik09wdXNIZWFkAQE4AYA+AAAAAAASVMNnQNhzc6BjwIBnyJpFo4dFTkNPREVS",
            "RIeNTGF2ZjU5LjI3LjEwMHNz12PAi2PFiIfLC/+0idfMZ8ihRaOHRU5DT0RFUkSHlExhdmM1OS4zNy4xMDAgbGli",
            "dnB4Z8iiRaOIRFVSQVRJT05Eh5QwMDowMDowMC4xMjcwMDAwMDAAAHNz2GPAi2PFiBo5p19eQ6KPZ8iiRaOHRU5D",
            "T0RFUkSHlUxhdmM1OS4zNy4xMDAgbGlib3B1c2fIokWjiERVUkFUSU9ORIeUMDA6MDA6MDAuMTA4MDAwMDAwAAAf",
            "Q7Z1RKPngQCjw4IAAIBIgi4DbH5A5gAAJhM8xHKol9VpbgbKe2PO0w522xv5hJ/YEQ0iN3pRlzzOT6UyR0shIPGK",
            "RoTvQ6MIZFRGdMCjQwOBAAeAMBcAnQEqIAABAAAAAAABJ6EAAEcIhYWIhYSIAgICdbokwb4r+Lv63fwHoeNBe2H6",
            "7ZQT4D+E/z78Xf8BvEX2Z////wfAB/RX+u+zx/Af5z2Picph1Ikdno4d7isIXlP65gw9wxD1zgZs83X+zB/6FSkQ",
            "PoBD7WwM1df/20YNwMEBNg7qEoIzkakrJCtK4tbajAdA52RqYSPE2MmqB//T+YnV0pHofOphDO+1H68qn0S9tHuE",
            "N6NRMfd+r/z+j6UJf+uueg6MP1n/4DX8qI1db/7RcTCnuFH0pt/y67WjuTeTFqXiHW3nzSw/4NmRPDMRtJ16C8//",
            "0SDYZ+dBfEHWDf90vIKuMDuTqHcex/2p6bOZ4XTXGheK0/2T1pbj08V/durIo/0+6KQSuI0nxn0bpn/+fmYpZ1Yh",
            "DxSOhweE/kitbbLm2ydjBXP/zwAjyHv9SoLw3DylH/83SMijXrnK9++JH4KYci7Xm85WM5Yi9rtceISVaEfKGhwG",
            "rkv3vfpHsTPS4WHlnhF/6rKy0O4ZlwGK23tZl/yLi1KK0Jz//v4XXsYLYcMitf//////////////////////////",
            "//////////////////////////////////////////////////////////////////////////////l4AheckWu+",
            "7uFeFSX0niHNfk1eFqyl9g/1vvazVU4bhMeYVWcFvRhdomI/0Wq4MZtnj98OX1BxnkjQhvu1n1ZfQVYx0CAt//Tf",
            "nYG9cNbrUppa2FCGPCGOVnD5r1fWLaCjy4VJ8CTOwpH/////////////////////////////////////////////",
            "hQNcBaeITJUh9BGLPtHKfdyygeKQxK+2gn031pXzGt7IgYLltSpngKO2ggApgEibKtJTqkh8l4nwMZI2ZoB5h/YA",
            "h9kLBqfWyjihJgDGySaqUOJL6y6eA9K6pnbYfgxAo7aBAC8AkQIAARAQARgMuj/+I/T/D/gP/AAKDgDMJJ7qvJt/",
            "Tc1D/SAeowcT1W/biXmvgVQ/vACjsYIAPYBImytPZ2dTSUkQ5OF6gPa4wFTtZDVyNaoT63RftFYXquVhkl1lGgEn",
            "ZIRS0USjsIIAUUiAmyMfdZz8STOzIReeCjZrX+znrFzIHsDbK0kZF/S2L/YnNWspwMUQzeqV8YICYvCBSA==",
            ))
            .unwrap();
        let options = DecodeOptions {
            sampler: FrameSampler::Evenly(3),
            max_side: 160,
            limits: DecodeLimits {
                max_dimension: 1024,
                max_pixels: 1024 * 768,
                max_video_packets: 2000,
                max_output_frames: 10,
                ..Default::default()
            },
            audio: true,
        };
        if let Ok(clip) = decode_video(&input, &options) {
            for frame in &clip.frames {
                assert_eq!(
                    frame.rgb.len(),
                    frame.width as usize * frame.height as usize * 3
                );
            }
        }
    }

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
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/media/tone.m4a");
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
