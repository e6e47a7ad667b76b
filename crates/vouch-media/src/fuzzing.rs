//! Entry points for the cargo-fuzz targets in `fuzz/`: thin wrappers that run one internal parser
//! on arbitrary bytes and discard the result. Not part of the public API.

/// Runs the MP4/MOV demuxer; the result is discarded.
#[doc(hidden)]
pub fn demux_mp4(bytes: &[u8]) {
    let _ = super::mp4::demux_mp4(bytes);
}

/// Runs the Matroska/WebM demuxer; the result is discarded.
#[doc(hidden)]
pub fn demux_matroska(bytes: &[u8]) {
    let _ = super::mkv::demux_matroska(bytes);
}

/// Runs the audio-file decoder (WAV, FLAC, Ogg); the result is discarded.
#[doc(hidden)]
pub fn decode_audio_file(bytes: &[u8]) {
    let _ = super::audio_file::decode_audio_file(bytes);
}
