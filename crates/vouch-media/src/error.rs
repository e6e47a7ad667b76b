//! [`MediaError`]: why bytes could not become a [`super::Clip`], in words a user can act on.

/// A media decoding failure. Every variant says what was wrong with the input; none carries media bytes.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    /// No bytes at all.
    #[error("the file is empty")]
    Empty,
    /// More bytes than the limit allows.
    #[error("the file is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// Size of the input.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The first bytes match no supported container or image format.
    #[error("unrecognised file format: expected {expected}")]
    UnknownFormat {
        /// What was expected, e.g. "MP4, MOV, WebM or Matroska video".
        expected: &'static str,
    },
    /// The file ends before its structure does.
    #[error("the file is truncated: {0}")]
    Truncated(String),
    /// The container or bitstream is invalid.
    #[error("the file is malformed: {0}")]
    Malformed(String),
    /// A codec this build cannot decode; names the cargo feature that enables it, if any.
    #[error("unsupported codec {codec}{}", feature.map(|f| format!(" (enable the cargo feature \"{f}\")")).unwrap_or_default())]
    UnsupportedCodec {
        /// The codec's name, e.g. "HEVC".
        codec: String,
        /// The cargo feature that adds a decoder for it.
        feature: Option<&'static str>,
    },
    /// The file has no video track (for an operation that needs one).
    #[error("the file has no video track")]
    NoVideoTrack,
    /// The file has no audio track (for an operation that needs one).
    #[error("the file has no audio track")]
    NoAudioTrack,
    /// Width, height, frame count, duration or sample count beyond the decode limits: a guard
    /// against decompression bombs.
    #[error("{what} is {value}, over the limit of {limit}")]
    LimitExceeded {
        /// What was measured, e.g. "frame width".
        what: &'static str,
        /// Its value.
        value: u64,
        /// The limit.
        limit: u64,
    },
    /// The decoder rejected the bitstream.
    #[error("{codec} decoding failed: {detail}")]
    Decode {
        /// The codec.
        codec: &'static str,
        /// The decoder's reason.
        detail: String,
    },
    /// Raw frames or audio handed over by the host were inconsistent (strides, sizes, formats).
    #[error("invalid raw input: {0}")]
    InvalidRaw(String),
}

impl MediaError {
    /// The decoder of `codec` rejected the bitstream.
    #[cfg(any(feature = "h264", feature = "hevc", feature = "av1"))]
    pub(crate) fn decode(codec: &'static str, detail: impl Into<String>) -> MediaError {
        MediaError::Decode {
            codec,
            detail: detail.into(),
        }
    }

    /// A stream of `codec` in a form the decoders do not take (`what`: a bit depth, a chroma
    /// layout): only 8-bit 4:2:0 pictures are decoded.
    #[cfg(any(feature = "hevc", feature = "av1"))]
    pub(crate) fn unsupported_form(codec: &str, what: &str) -> MediaError {
        MediaError::UnsupportedCodec {
            codec: format!("{codec} with {what} (only 8-bit 4:2:0 is supported)"),
            feature: None,
        }
    }
}
