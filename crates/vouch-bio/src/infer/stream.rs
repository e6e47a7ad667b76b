//! An ONNX file decoded as it is read, its sha256 computed on the way.
//!
//! Reading the whole file and then decoding it held the model three times at the peak of a
//! load: the file's bytes, the copy tract's `proto_model_for_read` makes of them, and the decoded
//! protobuf (177 MB for Whisper tiny.en's 59 MB decoder, while CAM++ loaded beside it). Here the
//! protobuf decoder reads the file through [`HashingWindow`], a [`Buf`] over a small window that
//! is refilled from the file and hashed as it goes, so only the decoded protobuf is held. The
//! sha256 is known once the decoder has consumed the file, and a mismatch refuses the model before
//! tract reads anything of it; decoding an unchecked file is safe (the decoder bounds every length
//! by what is left of the file, and fails on malformed input).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use prost::bytes::Buf;
use prost::Message;
use sha2::{Digest, Sha256};
use tract_onnx::pb::ModelProto;

use super::{ModelError, ModelSpec};

/// Bytes read from the file at a time.
const WINDOW: usize = 1 << 20;

/// A [`Buf`] over a file: a window of it, refilled when consumed, every byte hashed once as it
/// is read. A read that fails or ends early fills the rest with zeros so that [`Buf`]'s contract
/// (`remaining` bytes can be read) holds; the error is kept and reported by [`HashingWindow::finish`].
struct HashingWindow {
    file: File,
    window: Vec<u8>,
    /// Next unread byte in `window`.
    at: usize,
    /// Bytes of the file not yet consumed, including the unread part of `window`.
    left: usize,
    hasher: Sha256,
    error: Option<std::io::Error>,
}

impl HashingWindow {
    fn open(path: &Path) -> std::io::Result<HashingWindow> {
        let file = File::open(path)?;
        let len = usize::try_from(file.metadata()?.len()).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, "file too large to load")
        })?;
        let mut window = HashingWindow {
            file,
            window: Vec::with_capacity(WINDOW.min(len)),
            at: 0,
            left: len,
            hasher: Sha256::new(),
            error: None,
        };
        window.refill();
        Ok(window)
    }

    /// Reads the next window of the file (at most what is left of it) and hashes it.
    fn refill(&mut self) {
        let want = WINDOW.min(self.left);
        self.window.clear();
        self.window.resize(want, 0);
        self.at = 0;
        let mut filled = 0;
        while filled < want && self.error.is_none() {
            match self.file.read(&mut self.window[filled..]) {
                Ok(0) => {
                    self.error = Some(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the file shrank while it was read",
                    ))
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => self.error = Some(e),
            }
        }
        // After an error the zeros of `resize` stand in for the unread bytes.
        self.hasher.update(&self.window[..filled]);
    }

    /// The file's sha256 as lower-case hex, or the read error.
    fn finish(mut self) -> std::io::Result<String> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        // A file that grew while it was read: the bytes past the length read at open count too
        // (hashed as they stream past, never held).
        std::io::copy(&mut self.file, &mut self.hasher)?;
        Ok(super::hex(&self.hasher.finalize()))
    }
}

impl Buf for HashingWindow {
    fn remaining(&self) -> usize {
        self.left
    }

    fn chunk(&self) -> &[u8] {
        &self.window[self.at..]
    }

    fn advance(&mut self, mut count: usize) {
        assert!(count <= self.left, "advance past the end of the file");
        while count > 0 {
            let step = count.min(self.window.len() - self.at);
            self.at += step;
            self.left -= step;
            count -= step;
            if self.at == self.window.len() && self.left > 0 {
                self.refill();
            }
        }
    }
}

/// Decodes `spec.file` from `dir` as an ONNX protobuf and checks its sha256, holding only the
/// decoded protobuf and a 1 MiB window (see the module's documentation).
pub(crate) fn read_proto(dir: &Path, spec: ModelSpec) -> Result<ModelProto, ModelError> {
    let path = dir.join(spec.file);
    let missing = |error: std::io::Error| ModelError::Missing {
        file: spec.file,
        detail: format!("{}: {error}", path.display()),
    };
    let mut window = HashingWindow::open(&path).map_err(missing)?;
    let decoded = ModelProto::decode(&mut window);
    // Consume whatever the decoder left (it stops at the first malformed field) so the hash is
    // the whole file's: a damaged file is then reported as damaged, not as unreadable protobuf.
    let rest = window.remaining();
    window.advance(rest);
    let sha256 = window.finish().map_err(missing)?;
    if sha256 != spec.sha256 {
        return Err(ModelError::Checksum { file: spec.file });
    }
    decoded.map_err(|error| ModelError::Runtime {
        file: spec.file,
        detail: format!("not an ONNX model: {error}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_for(file: &'static str, sha256: &'static str) -> ModelSpec {
        ModelSpec {
            file,
            sha256,
            ..crate::infer::FACE_LANDMARKS
        }
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        crate::infer::hex(&Sha256::digest(bytes))
    }

    /// A model written by prost, several windows long, decodes to the same protobuf as a decode
    /// of the whole file at once, and its sum is checked.
    #[test]
    fn a_file_of_several_windows_decodes_as_a_whole() {
        use tract_onnx::pb::{GraphProto, TensorProto};
        let graph = GraphProto {
            name: "g".into(),
            initializer: (0..5)
                .map(|i| TensorProto {
                    name: format!("t{i}"),
                    dims: vec![700_001],
                    data_type: 2,
                    raw_data: (0..700_001u32).map(|v| (v * 7 + i) as u8).collect(),
                    ..TensorProto::default()
                })
                .collect(),
            ..GraphProto::default()
        };
        let model = ModelProto {
            ir_version: 8,
            graph: Some(graph),
            ..ModelProto::default()
        };
        let bytes = model.encode_to_vec();
        assert!(bytes.len() > 3 * WINDOW);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m.onnx"), &bytes).unwrap();
        let sum: &'static str = Box::leak(sha256_hex(&bytes).into_boxed_str());
        let read = read_proto(dir.path(), spec_for("m.onnx", sum)).unwrap();
        assert_eq!(read, model);

        let wrong = read_proto(dir.path(), spec_for("m.onnx", "00")).unwrap_err();
        assert_eq!(wrong, ModelError::Checksum { file: "m.onnx" });
    }

    /// A truncated file is refused by its sum (not as a protobuf error), a missing one as missing.
    #[test]
    fn a_truncated_or_missing_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cut.onnx"), [0x0a, 0xff, 0xff, 0x7f, 1, 2]).unwrap();
        let cut = read_proto(dir.path(), spec_for("cut.onnx", "00")).unwrap_err();
        assert_eq!(cut, ModelError::Checksum { file: "cut.onnx" });
        let gone = read_proto(dir.path(), spec_for("gone.onnx", "00")).unwrap_err();
        assert!(matches!(
            gone,
            ModelError::Missing {
                file: "gone.onnx",
                ..
            }
        ));
    }
}
