//! `vouch eval face-crops`: the eye-aligned face crops the forgery analysis shows its face-blend
//! detector (`Forgery::face_crops`), written as NumPy arrays for training and studying it
//! (`models/train_blend.py`). Per clip `<stem>.crops.npy` (uint8, N x 96 x 96 x 3, RGB) and
//! `<stem>.marks.npy` (float32, N x 468 x 2: the FaceMesh landmarks in crop pixels); one
//! `index.csv` per output folder names every clip with its label, generator family, identity, the
//! sha256 of the source file and the number of crops.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::eval::progress::Progress;
use crate::eval::{clip_column, eval_engine, header_of, read_columns};

/// Options of `vouch eval face-crops`.
#[derive(clap::Args)]
pub struct FaceCrops {
    /// CSV with a header naming `file` (or `mp4`) and `identity`, and optionally `label`
    /// (real/fake; real when absent), `family` and `kind`.
    #[arg(long)]
    pub clips: PathBuf,
    /// Folder the clip names are relative to.
    #[arg(long)]
    pub dir: PathBuf,
    /// Name of the set, written on every row.
    #[arg(long)]
    pub set: String,
    /// Output folder (created; `index.csv` in it is replaced).
    #[arg(long)]
    pub out: PathBuf,
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// One clip of the list: file, identity, label, family, kind.
struct Row {
    file: String,
    identity: String,
    label: String,
    family: String,
    kind: String,
}

fn rows(path: &Path) -> Result<Vec<Row>, String> {
    let header = header_of(path)?;
    let mut names = vec![clip_column(&header), "identity"];
    let optional = ["label", "family", "kind"];
    names.extend(optional.iter().filter(|n| header.iter().any(|h| h == *n)));
    let at = |row: &[String], name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .map(|i| row[i].clone())
    };
    Ok(read_columns(path, &names)?
        .into_iter()
        .map(|row| {
            let label = at(&row, "label").unwrap_or_else(|| "real".to_owned());
            let family =
                at(&row, "family").unwrap_or_else(|| family_of(&row[0], &label).to_owned());
            Row {
                file: row[0].clone(),
                identity: row[1].clone(),
                kind: at(&row, "kind").unwrap_or_else(|| "bona_fide".to_owned()),
                label,
                family,
            }
        })
        .collect())
}

/// The generator family of a list without a `family` column (talking-real): a word of the file's
/// name (`hyperlips_result_video1`, `akash_wav2lip_result_voice`, `vasa1_3`).
fn family_of(file: &str, label: &str) -> &'static str {
    if label != "fake" {
        return "real";
    }
    let name = file.rsplit('/').next().unwrap_or(file);
    ["hyperlips", "wav2lip", "geneface", "vasa1", "emo"]
        .into_iter()
        .find(|family| name.split(['_', '.']).any(|word| word == *family))
        .unwrap_or("other")
}

/// A NumPy `.npy` file (format 1.0) of the given dtype (`|u1`, `<f4`) and shape.
fn write_npy(path: &Path, dtype: &str, shape: &[usize], data: &[u8]) -> Result<(), String> {
    let dims = match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{dtype}', 'fortran_order': False, 'shape': {dims}, }}");
    // Magic (6) + version (2) + length (2) + header, padded with spaces to 64 bytes, then '\n'.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut bytes = Vec::with_capacity(10 + header.len() + data.len());
    bytes.extend_from_slice(b"\x93NUMPY\x01\x00");
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// A file name for the clip's arrays: its path with separators and dots turned into underscores.
fn stem_of(file: &str) -> String {
    let without = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    without
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes the crops of every clip of the list.
pub fn run(options: &FaceCrops) -> Result<(), String> {
    let clips = rows(&options.clips)?;
    let engine = eval_engine(&options.models, options.threads)?;
    std::fs::create_dir_all(&options.out).map_err(|e| format!("{}: {e}", options.out.display()))?;
    let index_path = options.out.join("index.csv");
    let mut index = std::io::BufWriter::new(
        std::fs::File::create(&index_path).map_err(|e| format!("{}: {e}", index_path.display()))?,
    );
    writeln!(index, "set,file,label,family,kind,identity,sha256,crops,n")
        .map_err(|e| e.to_string())?;
    let progress = Progress::new(clips.len(), "face crops", false);
    for row in &clips {
        progress.tick();
        let bytes =
            std::fs::read(options.dir.join(&row.file)).map_err(|e| format!("{}: {e}", row.file))?;
        let crops = match engine.forgery().face_crops(&bytes) {
            Ok(crops) => crops,
            Err(e) => {
                eprintln!("{}: {e}", row.file);
                continue;
            }
        };
        let stem = stem_of(&row.file);
        let side = vouch_bio::CROP_SIDE;
        let pixels: Vec<u8> = crops.iter().flat_map(|c| c.rgb.iter().copied()).collect();
        let marks: Vec<u8> = crops
            .iter()
            .flat_map(|c| {
                c.marks
                    .iter()
                    .flat_map(|m| m.iter().flat_map(|v| v.to_le_bytes()))
            })
            .collect();
        let points = crops.first().map_or(468, |c| c.marks.len());
        write_npy(
            &options.out.join(format!("{stem}.crops.npy")),
            "|u1",
            &[crops.len(), side, side, 3],
            &pixels,
        )?;
        write_npy(
            &options.out.join(format!("{stem}.marks.npy")),
            "<f4",
            &[crops.len(), points, 2],
            &marks,
        )?;
        let sha = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>();
        let quote = |v: &str| {
            if v.contains(',') || v.contains('"') {
                format!("\"{}\"", v.replace('"', "\"\""))
            } else {
                v.to_owned()
            }
        };
        writeln!(
            index,
            "{},{},{},{},{},{},{sha},{stem},{}",
            quote(&options.set),
            quote(&row.file),
            quote(&row.label),
            quote(&row.family),
            quote(&row.kind),
            quote(&row.identity),
            crops.len()
        )
        .map_err(|e| e.to_string())?;
    }
    index.flush().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_headers_are_aligned_and_say_the_shape() {
        let dir = std::env::temp_dir().join(format!("vouch-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("a.npy");
        write_npy(&path, "<f4", &[2, 3], &[0u8; 24]).expect("write");
        let bytes = std::fs::read(&path).expect("read");
        let length = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
        assert_eq!((10 + length) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + length]).expect("ascii");
        assert!(
            header.contains("'shape': (2, 3)") && header.ends_with('\n'),
            "{header}"
        );
        assert_eq!(bytes.len(), 10 + length + 24);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn talking_real_families_come_from_the_file_name() {
        assert_eq!(family_of("fake/wav2lip_x.mp4", "fake"), "wav2lip");
        assert_eq!(family_of("fake/hyperlips_1.mp4", "fake"), "hyperlips");
        assert_eq!(
            family_of("fake/akash_wav2lip_result_voice.mp4", "fake"),
            "wav2lip"
        );
        assert_eq!(family_of("fake/emo_talk_emotion.mp4", "fake"), "emo");
        assert_eq!(family_of("fake/demo_clip.mp4", "fake"), "other");
        assert_eq!(family_of("real/vox2_1.mp4", "real"), "real");
        assert_eq!(stem_of("fake/vasa1.x.mp4"), "fake_vasa1_x");
    }
}
