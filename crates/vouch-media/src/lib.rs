//! Media ingest: bytes in, a [`Clip`] out (sampled RGB [`Frame`]s with timestamps and 16 kHz mono
//! [`Pcm`]), with [`MediaError`] for everything that can be wrong with the input.
//!
//! Demuxers (`mp4`, `mkv`) turn containers into packet lists ([`demux`]); codec modules (`h264`,
//! `vpx`, `aac`, `opus`) implement the [`demux::VideoDecoder`] and [`demux::AudioDecoder`] traits;
//! `yuv` converts and rotates only the frames the sampler keeps; `resample` brings audio to 16 kHz
//! mono. Decoder crates stay inside this module.

pub mod demux;
mod error;
mod types;

pub use self::image::{decode_image, is_image, ImageLimits};
pub use decode::{
    decode_audio, decode_video, open_video, DecodeLimits, DecodeOptions, FrameSampler, VideoFile,
    DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_PIXELS, DEFAULT_MAX_SIDE,
};
pub use error::MediaError;
pub use sniff::{is_audio_container, is_video_container, sniff_container};
pub use types::{
    AudioCodec, Clip, Container, Frame, MediaInfo, Pcm, Rotation, VideoCodec, PCM_SAMPLE_RATE,
};

mod aac;
mod audio_file;
#[cfg(feature = "av1")]
mod av1;
mod decode;
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "h264")]
mod h264;
#[cfg(feature = "hevc")]
mod hevc;
mod image;
#[cfg(any(feature = "h264", feature = "vpx", feature = "hevc", feature = "av1"))]
mod level;
mod mkv;
mod mp4;
#[cfg(feature = "opus")]
mod opus;
mod opus_format;
pub mod raw;
mod resample;
mod sniff;
#[cfg(test)]
mod test_support;
mod vp_format;
#[cfg(feature = "vpx")]
mod vpx;
mod yuv;
