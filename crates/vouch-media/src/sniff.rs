//! What a file is, from its first bytes: the one place that knows the containers' magic numbers
//! (images have theirs in `image.rs`, next to their decoders). Names and content types are never
//! trusted: phones save files under names that do not match their content.

use super::types::Container;

/// The container of a video or audio file from its first bytes, without decoding: ISO media
/// (MP4, M4A, fragmented MP4; QuickTime when its brand says so), EBML (Matroska, WebM), RIFF
/// WAVE, FLAC or Ogg.
pub fn sniff_container(bytes: &[u8]) -> Option<Container> {
    if is_iso_media(bytes) {
        Some(if bytes.get(8..12) == Some(b"qt  ") {
            Container::QuickTime
        } else {
            Container::Mp4
        })
    } else if bytes.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
        Some(Container::Matroska)
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WAVE" {
        Some(Container::Wav)
    } else if bytes.starts_with(b"fLaC") {
        Some(Container::Flac)
    } else if bytes.starts_with(b"OggS") {
        Some(Container::Ogg)
    } else {
        None
    }
}

/// Whether `bytes` start like a container that can hold video (ISO media or Matroska/WebM).
pub fn is_video_container(bytes: &[u8]) -> bool {
    matches!(
        sniff_container(bytes),
        Some(Container::Mp4 | Container::QuickTime | Container::Matroska)
    )
}

/// Whether `bytes` start like any container the audio decoders read (every video container
/// too: their audio track is used).
pub fn is_audio_container(bytes: &[u8]) -> bool {
    sniff_container(bytes).is_some()
}

/// An ISO base media file: one of the top-level boxes such files start with.
fn is_iso_media(bytes: &[u8]) -> bool {
    bytes.len() >= 8
        && matches!(
            &bytes[4..8],
            b"ftyp" | b"moov" | b"mdat" | b"wide" | b"free" | b"skip" | b"styp"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_are_known_by_their_first_bytes() {
        assert_eq!(sniff_container(b"\0\0\0\x18ftypmp42"), Some(Container::Mp4));
        assert_eq!(
            sniff_container(b"\0\0\0\x14ftypqt  "),
            Some(Container::QuickTime)
        );
        assert_eq!(
            sniff_container(&[0x1A, 0x45, 0xDF, 0xA3, 1]),
            Some(Container::Matroska)
        );
        assert_eq!(sniff_container(b"RIFF\0\0\0\0WAVE"), Some(Container::Wav));
        assert_eq!(sniff_container(b"RIFF\0\0\0\0AVI "), None);
        assert_eq!(sniff_container(b"fLaC"), Some(Container::Flac));
        assert_eq!(sniff_container(b"OggS"), Some(Container::Ogg));
        assert_eq!(sniff_container(b"\xFF\xD8\xFF"), None);
        assert!(is_video_container(b"\0\0\0\x18ftypisom"));
        assert!(!is_video_container(b"OggS"));
        assert!(is_audio_container(b"OggS"));
        assert!(!is_audio_container(b""));
    }
}
