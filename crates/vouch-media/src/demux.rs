//! What a demuxer hands to the decoders: [`Demuxed`] with a [`VideoTrack`] and an [`AudioTrack`],
//! each a list of [`Packet`]s in decode order, plus the decoder traits [`VideoDecoder`] and
//! [`AudioDecoder`] that codec modules implement.

use std::borrow::Cow;

use super::error::MediaError;
use super::types::{AudioCodec, Container, Rotation, VideoCodec};

/// One compressed packet (a video access unit or an audio frame).
#[derive(Debug, Clone)]
pub struct Packet<'a> {
    /// Presentation time, ms from the start of the clip (edit lists and stream offsets applied).
    pub pts_ms: i64,
    /// Whether decoding can start here.
    pub keyframe: bool,
    /// The packet's bytes, borrowed from the input where possible.
    pub data: Cow<'a, [u8]>,
}

/// The video track of a file.
#[derive(Debug, Clone)]
pub struct VideoTrack<'a> {
    /// Codec.
    pub codec: VideoCodec,
    /// Coded width.
    pub width: u32,
    /// Coded height.
    pub height: u32,
    /// Display rotation (MP4 track matrix; Matroska has none).
    pub rotation: Rotation,
    /// Decoder configuration: the `AVCDecoderConfigurationRecord` (avcC) for H.264 in MP4 and
    /// Matroska (`CodecPrivate`), the hvcC for HEVC, empty for VP8/VP9.
    pub config: Vec<u8>,
    /// Packets in decode order. H.264/HEVC packets are length-prefixed NAL units (AVCC form) as
    /// both MP4 and Matroska store them.
    pub packets: Vec<Packet<'a>>,
}

/// The audio track of a file.
#[derive(Debug, Clone)]
pub struct AudioTrack<'a> {
    /// Codec.
    pub codec: AudioCodec,
    /// Sample rate of the decoded audio.
    pub sample_rate: u32,
    /// Channels.
    pub channels: u16,
    /// Decoder configuration: AudioSpecificConfig for AAC, the OpusHead for Opus (Matroska
    /// `CodecPrivate`; built from `dOps` for Opus in MP4), empty otherwise.
    pub config: Vec<u8>,
    /// Decoded samples (per channel) to drop at the start: AAC priming from the edit list, Opus
    /// pre-skip.
    pub skip_samples: u64,
    /// Total valid samples (per channel) after the skip, when the container says (edit-list duration,
    /// Opus end trimming); decoded audio beyond it is padding and is dropped.
    pub valid_samples: Option<u64>,
    /// Packets in decode order.
    pub packets: Vec<Packet<'a>>,
}

/// A demuxed file.
#[derive(Debug, Clone)]
pub struct Demuxed<'a> {
    /// The container.
    pub container: Container,
    /// Duration, ms (longest track).
    pub duration_ms: i64,
    /// The first video track, if any.
    pub video: Option<VideoTrack<'a>>,
    /// The first audio track, if any.
    pub audio: Option<AudioTrack<'a>>,
}

/// Colour facts needed to turn YUV into RGB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ColorInfo {
    /// Full-range (0..255) rather than limited-range (16..235) luma.
    pub full_range: bool,
    /// BT.709 matrix rather than BT.601.
    pub bt709: bool,
}

/// A decoded 8-bit 4:2:0 picture, borrowed from the decoder until the callback returns.
#[derive(Debug, Clone, Copy)]
pub struct YuvView<'a> {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Luma plane.
    pub y: &'a [u8],
    /// Cb plane (half width, half height, rounded up).
    pub u: &'a [u8],
    /// Cr plane.
    pub v: &'a [u8],
    /// Bytes per luma row.
    pub y_stride: usize,
    /// Bytes per Cb row.
    pub u_stride: usize,
    /// Bytes per Cr row.
    pub v_stride: usize,
    /// Range and matrix.
    pub color: ColorInfo,
}

/// A video decoder. Frames come out in presentation order; the caller matches them to the sorted
/// presentation times of the packets, so decoders need not carry timestamps.
pub trait VideoDecoder {
    /// Decodes one packet (decode order), calling `on_frame` for every picture it outputs.
    fn decode(
        &mut self,
        packet: &[u8],
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError>;

    /// Outputs the pictures still held for reordering at the end of the stream.
    fn flush(
        &mut self,
        on_frame: &mut dyn FnMut(YuvView<'_>) -> Result<(), MediaError>,
    ) -> Result<(), MediaError>;
}

/// An audio decoder producing interleaved f32 samples at the track's rate and channel count.
pub trait AudioDecoder {
    /// Decodes one packet, appending interleaved samples to `out`.
    fn decode(&mut self, packet: &[u8], out: &mut Vec<f32>) -> Result<(), MediaError>;
}
