//! What decoding produces: [`Clip`] (sampled [`Frame`]s plus [`Pcm`] audio and [`MediaInfo`]) and
//! the vocabulary around it ([`Container`], [`VideoCodec`], [`AudioCodec`], [`Rotation`]).

/// Sample rate of every [`Pcm`] the engine works with.
pub const PCM_SAMPLE_RATE: u32 = 16_000;

/// One decoded, sampled video frame in display orientation (rotation already applied).
#[derive(Clone, PartialEq, Eq)]
pub struct Frame {
    /// Presentation time from the start of the clip, ms.
    pub timestamp_ms: i64,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Packed RGB, 3 bytes per pixel, rows top to bottom, no padding: `width * height * 3` bytes.
    pub rgb: Vec<u8>,
}

impl std::fmt::Debug for Frame {
    // Pixels are biometric data: never print them.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Frame")
            .field("timestamp_ms", &self.timestamp_ms)
            .field("width", &self.width)
            .field("height", &self.height)
            .finish_non_exhaustive()
    }
}

/// Mono audio at [`PCM_SAMPLE_RATE`], samples in -1..1.
#[derive(Clone, PartialEq, Default)]
pub struct Pcm {
    /// The samples.
    pub samples: Vec<f32>,
    /// Presentation time of the first sample, ms (after priming and pre-skip are trimmed).
    pub start_ms: i64,
}

impl Pcm {
    /// Duration in milliseconds.
    pub fn duration_ms(&self) -> i64 {
        self.samples.len() as i64 * 1000 / i64::from(PCM_SAMPLE_RATE)
    }
}

impl std::fmt::Debug for Pcm {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Pcm")
            .field("samples", &self.samples.len())
            .field("start_ms", &self.start_ms)
            .finish()
    }
}

/// The container a file was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Container {
    /// ISO MP4 (including fragmented MP4 and M4A).
    Mp4,
    /// QuickTime MOV.
    QuickTime,
    /// WebM.
    WebM,
    /// Matroska.
    Matroska,
    /// RIFF WAVE.
    Wav,
    /// FLAC.
    Flac,
    /// Ogg (Opus or Vorbis).
    Ogg,
    /// Frames or audio handed over already decoded by the host.
    Raw,
}

/// Video codecs the demuxers recognise (decoding depends on cargo features).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VideoCodec {
    /// H.264 / AVC.
    H264,
    /// H.265 / HEVC.
    Hevc,
    /// VP8.
    Vp8,
    /// VP9.
    Vp9,
    /// AV1.
    Av1,
}

impl VideoCodec {
    /// Display name, e.g. "H.264".
    pub fn name(self) -> &'static str {
        match self {
            VideoCodec::H264 => "H.264",
            VideoCodec::Hevc => "HEVC",
            VideoCodec::Vp8 => "VP8",
            VideoCodec::Vp9 => "VP9",
            VideoCodec::Av1 => "AV1",
        }
    }
}

/// Audio codecs the demuxers recognise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AudioCodec {
    /// AAC-LC.
    Aac,
    /// Opus.
    Opus,
    /// Vorbis.
    Vorbis,
    /// FLAC.
    Flac,
    /// Linear PCM.
    Pcm,
}

impl AudioCodec {
    /// Display name, e.g. "AAC".
    pub fn name(self) -> &'static str {
        match self {
            AudioCodec::Aac => "AAC",
            AudioCodec::Opus => "Opus",
            AudioCodec::Vorbis => "Vorbis",
            AudioCodec::Flac => "FLAC",
            AudioCodec::Pcm => "PCM",
        }
    }
}

/// Clockwise rotation to apply to decoded pictures to show them upright.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Rotation {
    /// Upright already.
    #[default]
    None,
    /// Rotate 90 degrees clockwise (iPhone portrait).
    Clockwise90,
    /// Rotate 180 degrees.
    Rotate180,
    /// Rotate 270 degrees clockwise (90 counter-clockwise).
    Clockwise270,
}

impl Rotation {
    /// Clockwise degrees: 0, 90, 180 or 270.
    pub fn degrees(self) -> u32 {
        match self {
            Rotation::None => 0,
            Rotation::Clockwise90 => 90,
            Rotation::Rotate180 => 180,
            Rotation::Clockwise270 => 270,
        }
    }

    /// From clockwise degrees (any multiple of 90, negative allowed); other values are `None`.
    pub fn from_degrees(degrees: i64) -> Option<Rotation> {
        match degrees.rem_euclid(360) {
            0 => Some(Rotation::None),
            90 => Some(Rotation::Clockwise90),
            180 => Some(Rotation::Rotate180),
            270 => Some(Rotation::Clockwise270),
            _ => None,
        }
    }

    /// From a track matrix's first four entries `(a, b, c, d)` (MP4 `tkhd`, 16.16 fixed point
    /// already divided out): `(0,1,-1,0)` is 90 clockwise, `(-1,0,0,-1)` 180, `(0,-1,1,0)` 270.
    pub fn from_matrix(a: f64, b: f64, c: f64, d: f64) -> Rotation {
        let near = |x: f64, y: f64| (x - y).abs() < 0.01;
        if near(a, 0.0) && near(b, 1.0) && near(c, -1.0) && near(d, 0.0) {
            Rotation::Clockwise90
        } else if near(a, -1.0) && near(b, 0.0) && near(c, 0.0) && near(d, -1.0) {
            Rotation::Rotate180
        } else if near(a, 0.0) && near(b, -1.0) && near(c, 1.0) && near(d, 0.0) {
            Rotation::Clockwise270
        } else {
            Rotation::None
        }
    }
}

/// Facts about the decoded file.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaInfo {
    /// The container.
    pub container: Container,
    /// The video codec, when there is a video track.
    pub video_codec: Option<VideoCodec>,
    /// The audio codec, when there is an audio track.
    pub audio_codec: Option<AudioCodec>,
    /// Duration of the longest track, ms.
    pub duration_ms: i64,
    /// Coded picture width (before rotation).
    pub coded_width: u32,
    /// Coded picture height (before rotation).
    pub coded_height: u32,
    /// The rotation applied to frames.
    pub rotation: Rotation,
    /// Frames in the video track.
    pub video_frame_count: usize,
    /// Source audio sample rate.
    pub audio_sample_rate: Option<u32>,
    /// Source audio channels.
    pub audio_channels: Option<u16>,
}

/// A decoded clip: the sampled frames, the audio as 16 kHz mono, and facts.
#[derive(Debug, Clone, PartialEq)]
pub struct Clip {
    /// Sampled frames in presentation order.
    pub frames: Vec<Frame>,
    /// The audio; `None` when the file has no audio track (or audio was not asked for).
    pub audio: Option<Pcm>,
    /// Facts about the source.
    pub info: MediaInfo,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_from_matrix_and_degrees() {
        assert_eq!(
            Rotation::from_matrix(0.0, 1.0, -1.0, 0.0),
            Rotation::Clockwise90
        );
        assert_eq!(
            Rotation::from_matrix(-1.0, 0.0, 0.0, -1.0),
            Rotation::Rotate180
        );
        assert_eq!(
            Rotation::from_matrix(0.0, -1.0, 1.0, 0.0),
            Rotation::Clockwise270
        );
        assert_eq!(Rotation::from_matrix(1.0, 0.0, 0.0, 1.0), Rotation::None);
        assert_eq!(Rotation::from_degrees(-90), Some(Rotation::Clockwise270));
        assert_eq!(Rotation::from_degrees(45), None);
    }
}
