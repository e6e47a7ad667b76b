//! The picture limits every video decoder checks its stream headers against, before it
//! allocates: one place for the H.264, HEVC, VP8/VP9 and AV1 decoders, below all of them.

/// The largest picture side any decoder is handed, pixels: a guard against stream headers that
/// would make a decoder allocate gigabytes (H.264's and HEVC's SPS, VP8/VP9 frame headers, AV1
/// sequence headers).
#[cfg(any(feature = "h264", feature = "vpx", feature = "hevc", feature = "av1"))]
pub(crate) const LEVEL_MAX_SIDE: u32 = 8192;

/// Level 5.2's largest frame, macroblocks (H.264 Table A-1, MaxFS): 4096x2304, room for the 4K
/// UHD phones record. Larger pictures (levels 6 and up, 8K) are refused before decoding, in the
/// H.264 parameter sets and in VP8/VP9 frame headers alike.
#[cfg(any(feature = "h264", feature = "vpx"))]
pub(crate) const LEVEL_MAX_FRAME_MBS: u64 = 36_864;
