//! The inference core: ONNX models run by tract.
//!
//! A [`Model`] is loaded once (by the engine's first call that needs it, [`Lazy`]), given
//! concrete input shapes, optimised into a typed plan and then shared: [`Model::run`] takes `&self`, so the engine's rayon pool runs many
//! frames or faces through one plan at the same time. Batch 1 per run, parallelism across runs:
//! tract runs batch 1 fastest (see `../shared/MODELS.md`), and rayon spreads the runs over cores.
//!
//! [`ModelSet`] is the set of files the engine knows, checked against the sha256 sums in
//! `models/SHA256SUMS` when they are loaded, so a damaged or swapped file is refused with a clear
//! error instead of producing wrong embeddings.

mod prelu;
mod stream;
mod tied;

pub use tied::{split_tied_embedding, TiedEmbedding, EMBEDDINGS_INPUT};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use half::slice::HalfFloatSliceExt;
use sha2::{Digest, Sha256};
use tract_onnx::prelude::{
    f16, tvec, Datum, Framework, InferenceFact, InferenceModelExt, IntoTValue, Tensor,
    TypedRunnableModel,
};

/// Why a model could not be loaded or run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelError {
    /// The engine was opened without `models_dir`.
    NoModelsDir,
    /// The file is missing or unreadable.
    Missing {
        /// The model's file name.
        file: &'static str,
        /// The I/O error.
        detail: String,
    },
    /// The file's sha256 is not the one this build expects.
    Checksum {
        /// The model's file name.
        file: &'static str,
    },
    /// tract refused the model or failed while running it.
    Runtime {
        /// The model's file name.
        file: &'static str,
        /// tract's message.
        detail: String,
    },
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelError::NoModelsDir => {
                f.write_str("the engine was opened without models_dir, so it has no models")
            }
            ModelError::Missing { file, detail } => write!(f, "model {file} is missing: {detail}"),
            ModelError::Checksum { file } => write!(
                f,
                "model {file} does not match its sha256 in models/SHA256SUMS (damaged or replaced)"
            ),
            ModelError::Runtime { file, detail } => write!(f, "model {file} failed: {detail}"),
        }
    }
}

impl std::error::Error for ModelError {}

/// A model file the engine uses, with its expected sha256 and input shape.
#[derive(Debug, Clone, Copy)]
pub struct ModelSpec {
    /// File name inside `models_dir`.
    pub file: &'static str,
    /// Lowercase hex sha256 of the file (as in `models/SHA256SUMS`).
    pub sha256: &'static str,
    /// The inputs' concrete shapes, in the model's input order (all float32); empty for models
    /// with symbolic shapes, loaded with [`VariableModel`].
    pub inputs: &'static [&'static [usize]],
    /// Load with tract's `with_ignore_value_info(true)`: for graphs that declare intermediate
    /// shapes with named dimensions tract cannot reconcile (PP-OCRv6).
    pub ignore_value_info: bool,
}

/// BlazeFace short range: [1,128,128,3] RGB in [-1, 1] -> regressors [1,896,16], logits [1,896,1].
pub const FACE_DETECTOR_SHORT: ModelSpec = ModelSpec {
    file: "face_detection_short_range.onnx",
    sha256: "c4f5595cd99e00d7d0753949ad2eb8ed9bb534cc6ac1a7cbc0440e8e9cd3d012",
    inputs: &[&[1, 128, 128, 3]],
    ignore_value_info: false,
};

/// BlazeFace full range: [1,192,192,3] RGB in [-1, 1] -> regressors [1,2304,16], logits [1,2304,1].
pub const FACE_DETECTOR_FULL: ModelSpec = ModelSpec {
    file: "face_detection_full_range.onnx",
    sha256: "1823f1e55b4c55d7d61199436a5828e2de205e208e72593543e6462217219b79",
    inputs: &[&[1, 192, 192, 3]],
    ignore_value_info: false,
};

/// FaceMesh: [1,192,192,3] RGB in [0, 1] -> 468 x (x, y, z) crop pixels, face-presence logit.
pub const FACE_LANDMARKS: ModelSpec = ModelSpec {
    file: "face_landmark.onnx",
    sha256: "014506376ffcfafa35cfeafbb135f334c43710c8e4fcce41583fa5b28efec6e9",
    inputs: &[&[1, 192, 192, 3]],
    ignore_value_info: false,
};

/// dlib ResNet-29: [1,150,150,3] RGB 0..255 aligned chip -> [1,128] descriptor.
pub const FACE_EMBEDDER: ModelSpec = ModelSpec {
    file: "dlib_face_recognition_resnet_v1.onnx",
    sha256: "ecd56f224f4b3e8b8aa44df5a9a3a9b9a3571b4570bd69f5aa952720bc98e9bf",
    inputs: &[&[1, 150, 150, 3]],
    ignore_value_info: false,
};

/// Silero VAD (16 kHz, static shapes): `input` [1,576] (64 samples of context, then 512 new ones),
/// `state` [2,1,128] -> speech probability [1,1], next state [2,1,128].
pub const VOICE_ACTIVITY: ModelSpec = ModelSpec {
    file: "silero_vad_16k.onnx",
    sha256: "7776b81ad1b0350c15d7f1555943b9232eb53e9ca5d989c6d0cea9ebc8664d87",
    inputs: &[&[1, 576], &[2, 1, 128]],
    ignore_value_info: false,
};

/// Resemblyzer GE2E speaker encoder, Voice Recognition's model before CAM++ (kept for evaluations,
/// `voice::ge2e`): `mels` [1,160,40] (1.6 s of 40-band power mel) -> [1,256], L2-normalised.
pub const SPEAKER_EMBEDDER_GE2E: ModelSpec = ModelSpec {
    file: "resemblyzer_ge2e.onnx",
    sha256: "80bdc4f0ed04d9b3deb2f5c9324ed8e740eeb33fd7fa86ceb5622b6b45dd7011",
    inputs: &[&[1, 160, 40]],
    ignore_value_info: false,
};

/// CAM++ speaker encoder (3D-Speaker zh_en common advanced), Voice Recognition's model:
/// `feature` [1,298,80], the mean-normalised Kaldi fbank of one 3 s window (`voice::fbank`) ->
/// `embedding` [1,192], not normalised (compare by cosine).
pub const SPEAKER_EMBEDDER: ModelSpec = ModelSpec {
    file: "campplus_sv_zh_en_3s.onnx",
    sha256: "1442dd8663487fecea23d7f22a76b96cbece27b2e73f413f0f122d736c907f07",
    inputs: &[&[1, 298, 80]],
    ignore_value_info: false,
};

/// AASIST spoofed-speech detector (NAVER's official ASVspoof 2019 LA checkpoint;
/// `models/aasist-notes.md`): `waveform` [1,64600], 4.0375 s of raw 16 kHz samples in [-1, 1],
/// not normalised (shorter clips tiled, longer ones cut: `voice::spoof::window`) -> `logits`
/// [1,2]; index 1 is bona fide and is the score (higher = more likely genuine, uncalibrated).
/// Loaded by the engine's first forgery analysis (`avf/infer`) or, with the `voice_spoof_check`
/// option, its first process-video (or at open with `preload_models`).
pub const AASIST: ModelSpec = ModelSpec {
    file: "aasist.onnx",
    sha256: "adc8384d85d7bc26e3995cbbb338252f051d2aa8b4e166557965f88fd9cd4070",
    inputs: &[&[1, 64600]],
    ignore_value_info: false,
};

/// PP-OCRv6 small text-line recogniser: [1,3,48,800] grey line in [-1, 1] (the same value in
/// the three channels) -> CTC probabilities [1,100,18710] (column 0 blank).
pub const TEXT_RECOGNIZER: ModelSpec = ModelSpec {
    file: "ppocrv6_rec_small.onnx",
    sha256: "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884",
    inputs: &[&[1, 3, 48, 800]],
    ignore_value_info: true,
};

/// Human's antispoof: [1,128,128,3] RGB face crop in [0, 1] -> [1,1] sigmoid, 1 = real.
pub const PASSIVE_ANTISPOOF: ModelSpec = ModelSpec {
    file: "human_antispoof.onnx",
    sha256: "6d0dbdd07c9dae4da5ddc9f5aeafc9a5a11ff7079fda3ff9d4a2c666ee40b1a8",
    inputs: &[&[1, 128, 128, 3]],
    ignore_value_info: false,
};

/// Human's liveness: [1,32,32,3] RGB face crop in [0, 1] -> [1,2] softmax.
pub const PASSIVE_LIVENESS: ModelSpec = ModelSpec {
    file: "human_liveness.onnx",
    sha256: "e9d12835e49e89d0d8f89fecc2c5ad240728285023cf8f9affba2a9ab0504399",
    inputs: &[&[1, 32, 32, 3]],
    ignore_value_info: false,
};

/// Whisper tiny.en encoder: `mel` [1,80,N] (log-mel, N even, at most 3000) -> `features`
/// [1,N/2,384]. The shapes are symbolic: load it with [`VariableModel`].
pub const WHISPER_ENCODER: ModelSpec = ModelSpec {
    file: "whisper_tiny_en_encoder.onnx",
    sha256: "3902c65626d65d8c4a1708e7a2668be217fd0f81c5ee0e235330380d6f4d262c",
    inputs: &[],
    ignore_value_info: false,
};

/// Whisper tiny.en decoder without a key/value cache: `tokens` int64 [1,L], `features`
/// [1,S,384] -> `logits` [1,L,51864]. The shapes are symbolic: load it with [`VariableModel`].
pub const WHISPER_DECODER: ModelSpec = ModelSpec {
    file: "whisper_tiny_en_decoder.onnx",
    sha256: "6f2a018710bce4ae26df2d2a8201b2011d7d4a1b75748e262ece66314a39025a",
    inputs: &[],
    ignore_value_info: false,
};

/// Whisper base (multilingual) encoder: `mel` [1,80,N] -> `features` [1,N/2,512], as
/// [`WHISPER_ENCODER`] (`models/convert-whisper-base.sh`).
pub const WHISPER_BASE_ENCODER: ModelSpec = ModelSpec {
    file: "whisper_base_encoder.onnx",
    sha256: "e41fcd6d8d48dfaf9141d4e45fb2f49ef469b69474586bee71f37df37e3b5421",
    inputs: &[],
    ignore_value_info: false,
};

/// Whisper base (multilingual) decoder without a key/value cache: `tokens` int64 [1,L],
/// `features` [1,S,512] -> `logits` [1,L,51865], as [`WHISPER_DECODER`].
pub const WHISPER_BASE_DECODER: ModelSpec = ModelSpec {
    file: "whisper_base_decoder.onnx",
    sha256: "46e9027fcfeedffef03397a438b83d8f03b45bcc6aa50885f289364b7f077486",
    inputs: &[],
    ignore_value_info: false,
};

/// hama's phoneme recogniser (PyPI hama 1.3.13, Apache-2.0; `models/convert-hama.sh`): `waveform`
/// [1,N] 16 kHz in [-1, 1] -> `log_probs` [1,F,191], CTC log-probabilities per 20 ms frame over
/// `hama_phoneme_tokens.txt` (190 the blank). The length is symbolic: load it with
/// [`VariableModel`].
pub const PHONEME_RECOGNIZER: ModelSpec = ModelSpec {
    file: "hama_phoneme.onnx",
    sha256: "5f3f4a25053a2cf0ad45b7f22bfb6c6bded6630e923c0ef8f240dfb8edf0c766",
    inputs: &[],
    ignore_value_info: false,
};

/// A loaded, optimised model.
#[derive(Clone)]
pub struct Model {
    spec: ModelSpec,
    plan: Arc<TypedRunnableModel>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("file", &self.spec.file)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Loads `spec.file` from `dir`, checks its sha256 and optimises it for its input shape.
    pub fn load(dir: &Path, spec: ModelSpec) -> Result<Model, ModelError> {
        let mut proto = stream::read_proto(dir, spec)?;
        let runtime = |error: tract_onnx::prelude::TractError| ModelError::Runtime {
            file: spec.file,
            detail: format!("{error:#}"),
        };
        let onnx = tract_onnx::onnx().with_ignore_value_info(spec.ignore_value_info);
        rewrite_for_tract(&mut proto);
        let model = onnx.model_for_proto_model(&proto);
        // tract's graph holds its own copy of the weights from here on.
        drop(proto);
        let plan = model
            .and_then(|mut model| {
                for (index, shape) in spec.inputs.iter().enumerate() {
                    model = model.with_input_fact(
                        index,
                        InferenceFact::dt_shape(f32::datum_type(), *shape),
                    )?;
                }
                Ok(model)
            })
            .and_then(|model| model.into_optimized())
            .and_then(tract_onnx::prelude::IntoRunnable::into_runnable)
            .map_err(runtime)?;
        Ok(Model { spec, plan })
    }

    /// The model's spec.
    pub fn spec(&self) -> ModelSpec {
        self.spec
    }

    /// Runs the model on inputs of the spec's shapes (float32, row-major, in the model's input
    /// order); returns every output flattened, in the model's output order.
    pub fn run(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>, ModelError> {
        let runtime = |detail: String| ModelError::Runtime {
            file: self.spec.file,
            detail,
        };
        if inputs.len() != self.spec.inputs.len() {
            return Err(runtime(format!(
                "{} inputs given, the model takes {}",
                inputs.len(),
                self.spec.inputs.len()
            )));
        }
        let mut values = tvec!();
        for (data, shape) in inputs.iter().zip(self.spec.inputs) {
            let tensor =
                Tensor::from_shape(shape, data).map_err(|error| runtime(format!("{error:#}")))?;
            values.push(tensor.into_tvalue());
        }
        let outputs = self
            .plan
            .run(values)
            .map_err(|error| runtime(format!("{error:#}")))?;
        outputs
            .iter()
            .map(|output| {
                output
                    .to_plain_array_view::<f32>()
                    .map(|view| view.iter().copied().collect())
                    .map_err(|error| runtime(format!("{error:#}")))
            })
            .collect()
    }
}

/// Where the time of loading one model goes, seconds per stage of tract's path from the ONNX file
/// to a runnable plan (`vouch eval models`): reading the file and checking its sha256, parsing
/// the protobuf into tract's inference graph, type and shape analysis, decluttering (tract's
/// graph simplification), optimising (kernel selection, weight packing) and making it runnable.
/// It follows [`Model::load`]'s path (the input shapes fixed as the spec says); the Whisper and
/// phoneme loaders add a few rewrites of their own, so their real loads are timed as wholes.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadProfile {
    /// Reading the file, decoding its protobuf and checking its sha256 (one streamed pass).
    pub read_check: f64,
    /// Protobuf to inference graph.
    pub parse: f64,
    /// Types and shapes.
    pub typed: f64,
    /// Graph simplification.
    pub declutter: f64,
    /// Kernels and packed weights.
    pub optimise: f64,
    /// The runnable plan.
    pub runnable: f64,
    /// Nodes after decluttering.
    pub nodes: usize,
}

/// Loads `spec` stage by stage and times each stage ([`LoadProfile`]); the model is dropped.
pub fn profile_load(dir: &Path, spec: ModelSpec) -> Result<LoadProfile, ModelError> {
    use std::time::Instant;
    let runtime = |error: tract_onnx::prelude::TractError| ModelError::Runtime {
        file: spec.file,
        detail: format!("{error:#}"),
    };
    let mut profile = LoadProfile::default();
    let start = Instant::now();
    let mut proto = stream::read_proto(dir, spec)?;
    profile.read_check = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let onnx = tract_onnx::onnx().with_ignore_value_info(spec.ignore_value_info);
    rewrite_for_tract(&mut proto);
    let mut model = onnx.model_for_proto_model(&proto).map_err(runtime)?;
    for (index, shape) in spec.inputs.iter().enumerate() {
        model = model
            .with_input_fact(index, InferenceFact::dt_shape(f32::datum_type(), *shape))
            .map_err(runtime)?;
    }
    profile.parse = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let typed = model.into_typed().map_err(runtime)?;
    profile.typed = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let decluttered = typed.into_decluttered().map_err(runtime)?;
    profile.declutter = start.elapsed().as_secs_f64();
    profile.nodes = decluttered.nodes().len();
    let start = Instant::now();
    let optimised = decluttered.into_optimized().map_err(runtime)?;
    profile.optimise = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let plan = tract_onnx::prelude::IntoRunnable::into_runnable(optimised).map_err(runtime)?;
    profile.runnable = start.elapsed().as_secs_f64();
    drop(plan);
    Ok(profile)
}

/// The graph rewrites every model gets before tract reads it, each exact (the outputs are the
/// same bit for bit) and only for speed: [`prelu::rewrite_prelu`].
fn rewrite_for_tract(proto: &mut tract_onnx::pb::ModelProto) {
    if let Some(graph) = proto.graph.as_mut() {
        prelu::rewrite_prelu(graph);
    }
}

/// Checks that `spec.file` is in `dir` with its sha256, without loading it.
pub fn check_file(dir: &Path, spec: ModelSpec) -> Result<(), ModelError> {
    read_checked(dir, spec).map(drop)
}

/// Checks that `file` is a file in `dir`, without reading it: what the engine checks at open for
/// the models it loads on first use (their sha256 is checked when they load, so a damaged file
/// is refused then, naming it). Hashing every file at open would cost a quarter of a second.
pub fn check_present(dir: &Path, file: &'static str) -> Result<(), ModelError> {
    let path = dir.join(file);
    if path.is_file() {
        Ok(())
    } else {
        Err(ModelError::Missing {
            file,
            detail: format!("{}: not a file", path.display()),
        })
    }
}

/// One loaded copy per model and models directory in the whole process: engines opened on the
/// same `models_dir` share their models (`Arc`) instead of each holding its own (hundreds of MiB
/// each). The registry holds them weakly, so a model is freed with the last engine that holds
/// it, and the next engine loads it again. `name` tells apart models of one type (Whisper tiny.en
/// and base); concurrent first loads of one model wait for one load, different models load in
/// parallel.
pub fn shared<T, E>(
    dir: &Path,
    name: &'static str,
    load: impl FnOnce() -> Result<T, E>,
) -> Result<Arc<T>, E>
where
    T: std::any::Any + Send + Sync,
{
    type Slot = std::sync::Mutex<Option<std::sync::Weak<dyn std::any::Any + Send + Sync>>>;
    type Registry = std::sync::Mutex<std::collections::HashMap<(PathBuf, &'static str), Arc<Slot>>>;
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    // The same folder named two ways is one folder; one that cannot be resolved is its own key.
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let slot = REGISTRY
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry((dir, name))
        .or_default()
        .clone();
    let mut held = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(value) = held
        .as_ref()
        .and_then(std::sync::Weak::upgrade)
        .and_then(|value| value.downcast::<T>().ok())
    {
        return Ok(value);
    }
    let value = Arc::new(load()?);
    let any: Arc<dyn std::any::Any + Send + Sync> = value.clone();
    *held = Some(Arc::downgrade(&any));
    Ok(value)
}

/// A value loaded on first use, once, however many threads ask for it at the same time: the
/// engine's models (and the speaker embedder inside [`crate::voice::VoiceModels`]) are loaded when
/// a call first needs them, so that opening costs nothing and two first calls that need different
/// models load them in parallel. A failed load leaves it empty: the next call tries again.
pub struct Lazy<T> {
    cell: std::sync::OnceLock<T>,
    loading: std::sync::Mutex<()>,
}

impl<T> Default for Lazy<T> {
    fn default() -> Self {
        Lazy {
            cell: std::sync::OnceLock::new(),
            loading: std::sync::Mutex::new(()),
        }
    }
}

impl<T> std::fmt::Debug for Lazy<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lazy")
            .field("loaded", &self.cell.get().is_some())
            .finish()
    }
}

impl<T> Lazy<T> {
    /// The value if it has been loaded.
    pub fn get(&self) -> Option<&T> {
        self.cell.get()
    }

    /// The value, loaded by `load` if this is the first call; concurrent first calls wait for
    /// one load instead of each loading a copy.
    pub fn get_or_load<E>(&self, load: impl FnOnce() -> Result<T, E>) -> Result<&T, E> {
        if let Some(value) = self.cell.get() {
            return Ok(value);
        }
        // A poisoned lock only means another first call panicked; loading again is safe.
        let _loading = self
            .loading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(value) = self.cell.get() {
            return Ok(value);
        }
        let value = load()?;
        Ok(self.cell.get_or_init(|| value))
    }
}

/// A digest as lower-case hex, the form of `models/SHA256SUMS`.
fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads `spec.file` from `dir` and checks its sha256.
pub(crate) fn read_checked(dir: &Path, spec: ModelSpec) -> Result<Vec<u8>, ModelError> {
    let path: PathBuf = dir.join(spec.file);
    let bytes = std::fs::read(&path).map_err(|error| ModelError::Missing {
        file: spec.file,
        detail: format!("{}: {error}", path.display()),
    })?;
    if hex(&Sha256::digest(&bytes)) != spec.sha256 {
        return Err(ModelError::Checksum { file: spec.file });
    }
    Ok(bytes)
}

/// Turns the graph's float16 initialisers into float32 ones (their `Cast` to float becomes a
/// no-op). tract keeps a `Cast` that would double a constant's size unfolded and runs it on every
/// call, which made Whisper's decoder five times slower; files keep the half-size weights.
fn widen_f16_initializers(proto: &mut tract_onnx::pb::ModelProto) {
    const FLOAT: i32 = 1;
    const FLOAT16: i32 = 10;
    let Some(graph) = proto.graph.as_mut() else {
        return;
    };
    for tensor in &mut graph.initializer {
        if tensor.data_type != FLOAT16 {
            continue;
        }
        let halves: Vec<f16> = if tensor.raw_data.is_empty() {
            // Without raw_data, ONNX stores each float16's bits in the low half of an int32.
            tensor
                .int32_data
                .iter()
                .map(|&v| f16::from_bits(v as u16))
                .collect()
        } else {
            tensor
                .raw_data
                .chunks_exact(2)
                .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]])))
                .collect()
        };
        // The slice conversion uses the CPU's half-precision instructions where it has them.
        let mut wide = vec![0f32; halves.len()];
        halves.convert_to_f32_slice(&mut wide);
        drop(halves);
        let mut raw = vec![0u8; wide.len() * 4];
        for (bytes, value) in raw.chunks_exact_mut(4).zip(wide) {
            bytes.copy_from_slice(&value.to_le_bytes());
        }
        tensor.raw_data = raw;
        tensor.int32_data.clear();
        tensor.data_type = FLOAT;
    }
}

/// An input shape fixed by [`VariableModel::load_fixed`]: the dimensions, and whether the input
/// is int64 (else float32).
pub type InputShape<'a> = (&'a [usize], bool);

/// One output of a [`VariableModel`] run: its shape and row-major float32 data.
pub type Output = (Vec<usize>, Vec<f32>);

/// One input of a [`VariableModel`] run: its shape and row-major data.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// A float32 tensor.
    F32(&'a [usize], &'a [f32]),
    /// An int64 tensor (token ids).
    I64(&'a [usize], &'a [i64]),
}

/// A model whose input shapes are chosen per run (the file's symbolic dimensions, such as
/// Whisper's audio and text lengths), or fixed once at load time with
/// [`VariableModel::load_fixed`] when one shape is run often enough to deserve its own plan.
#[derive(Clone)]
pub struct VariableModel {
    spec: ModelSpec,
    plan: Arc<TypedRunnableModel>,
}

impl std::fmt::Debug for VariableModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VariableModel")
            .field("file", &self.spec.file)
            .finish_non_exhaustive()
    }
}

impl VariableModel {
    /// Loads `spec.file` from `dir`, checks its sha256 and optimises it with its symbolic input
    /// shapes.
    pub fn load(dir: &Path, spec: ModelSpec) -> Result<VariableModel, ModelError> {
        VariableModel::load_with(dir, spec, &[], |_| Ok(()))
    }

    /// Like [`VariableModel::load`], with the inputs fixed to `shapes` (float32 unless the
    /// entry says int64), so tract plans for exactly that shape.
    pub fn load_fixed(
        dir: &Path,
        spec: ModelSpec,
        shapes: &[InputShape<'_>],
    ) -> Result<VariableModel, ModelError> {
        VariableModel::load_with(dir, spec, shapes, |_| Ok(()))
    }

    /// Like [`VariableModel::load`] for a decoder whose token embedding `table` is tied to its
    /// output projection: the matrix is cut out of the graph by [`split_tied_embedding`] and
    /// returned, so the plan takes token embeddings ([`TiedEmbedding::lookup`]) where it took
    /// the ids of `ids_input`, and returns the hidden states that [`TiedEmbedding::project`]
    /// turns into scores. The matrix is then held once, in float16, instead of twice in float32.
    pub fn load_tied(
        dir: &Path,
        spec: ModelSpec,
        table: &str,
        ids_input: &str,
    ) -> Result<(VariableModel, TiedEmbedding), ModelError> {
        let mut tied = None;
        let model = VariableModel::load_with(dir, spec, &[], |proto| {
            tied = Some(split_tied_embedding(proto, table, ids_input)?);
            Ok(())
        })?;
        let tied = tied.ok_or(ModelError::Runtime {
            file: spec.file,
            detail: "the tied embedding was not split".into(),
        })?;
        Ok((model, tied))
    }

    fn load_with(
        dir: &Path,
        spec: ModelSpec,
        shapes: &[InputShape<'_>],
        rewrite: impl FnOnce(&mut tract_onnx::pb::ModelProto) -> Result<(), String>,
    ) -> Result<VariableModel, ModelError> {
        let mut proto = stream::read_proto(dir, spec)?;
        let runtime = |error: tract_onnx::prelude::TractError| ModelError::Runtime {
            file: spec.file,
            detail: format!("{error:#}"),
        };
        let onnx = tract_onnx::onnx().with_ignore_value_info(spec.ignore_value_info);
        rewrite(&mut proto).map_err(|detail| ModelError::Runtime {
            file: spec.file,
            detail,
        })?;
        widen_f16_initializers(&mut proto);
        rewrite_for_tract(&mut proto);
        let model = onnx.model_for_proto_model(&proto);
        drop(proto);
        let plan = model
            .and_then(|mut model| {
                for (index, (shape, int64)) in shapes.iter().enumerate() {
                    let datum = if *int64 {
                        i64::datum_type()
                    } else {
                        f32::datum_type()
                    };
                    model = model.with_input_fact(index, InferenceFact::dt_shape(datum, *shape))?;
                }
                Ok(model)
            })
            .and_then(|model| model.into_optimized())
            .and_then(tract_onnx::prelude::IntoRunnable::into_runnable)
            .map_err(runtime)?;
        Ok(VariableModel { spec, plan })
    }

    /// The model's spec.
    pub fn spec(&self) -> ModelSpec {
        self.spec
    }

    /// Runs the model; returns every output as (shape, row-major float32 data), in the model's
    /// output order.
    pub fn run(&self, inputs: &[Input<'_>]) -> Result<Vec<Output>, ModelError> {
        let runtime = |detail: String| ModelError::Runtime {
            file: self.spec.file,
            detail,
        };
        let mut values = tvec!();
        for input in inputs {
            let tensor = match input {
                Input::F32(shape, data) => Tensor::from_shape(shape, data),
                Input::I64(shape, data) => Tensor::from_shape(shape, data),
            }
            .map_err(|error| runtime(format!("{error:#}")))?;
            values.push(tensor.into_tvalue());
        }
        let outputs = self
            .plan
            .run(values)
            .map_err(|error| runtime(format!("{error:#}")))?;
        outputs
            .iter()
            .map(|output| {
                output
                    .to_plain_array_view::<f32>()
                    .map(|view| (view.shape().to_vec(), view.iter().copied().collect()))
                    .map_err(|error| runtime(format!("{error:#}")))
            })
            .collect()
    }
}

/// A little-endian f32 reference file under `models/reference/` (test helper).
#[cfg(test)]
pub(crate) fn reference_f32(path: &str) -> Vec<f32> {
    let path = format!(
        "{}/../../models/reference/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path)
        .unwrap_or_else(|error| panic!("{path}: {error}"))
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The largest element-wise difference of two equally long vectors (test helper).
#[cfg(test)]
pub(crate) fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::reference_f32 as read_f32;
    use super::*;

    pub(crate) fn models_dir() -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"))
    }

    /// `shared` gives every caller of one directory and name the same copy while someone holds
    /// it, loads again once nobody does, and keeps names and directories apart.
    #[test]
    fn shared_models_are_one_copy_while_held() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static LOADS: AtomicUsize = AtomicUsize::new(0);
        let load = |value: u64| {
            move || {
                LOADS.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ModelError>(value)
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let first = shared(dir.path(), "test-a", load(1)).unwrap();
        // The same folder through another path is the same folder.
        let again = shared(&dir.path().join("."), "test-a", load(2)).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!((*again, LOADS.load(Ordering::SeqCst)), (1, 1));
        let named = shared(dir.path(), "test-b", load(3)).unwrap();
        let elsewhere = shared(other.path(), "test-a", load(4)).unwrap();
        assert_eq!(
            (*named, *elsewhere, LOADS.load(Ordering::SeqCst)),
            (3, 4, 3)
        );
        drop((first, again));
        let reloaded = shared(dir.path(), "test-a", load(5)).unwrap();
        assert_eq!((*reloaded, LOADS.load(Ordering::SeqCst)), (5, 4));
        // A failed load leaves nothing behind.
        let failed = shared::<u64, _>(dir.path(), "test-c", || Err("no"));
        assert_eq!(failed.unwrap_err(), "no");
        assert_eq!(*shared(dir.path(), "test-c", load(6)).unwrap(), 6);
    }

    /// Each model in tract against the reference vectors its original runtime (TFLite, TensorFlow, dlib)
    /// produced; see `models/README.md`.
    #[test]
    fn models_match_their_original_runtimes() {
        let dir = models_dir();
        let cases: [(ModelSpec, &str, &[&str], f32); 5] = [
            (
                FACE_DETECTOR_SHORT,
                "face_detection_short_range/input.f32",
                &[
                    "face_detection_short_range/regressors.f32",
                    "face_detection_short_range/classificators.f32",
                ],
                1e-3,
            ),
            (
                FACE_DETECTOR_FULL,
                "face_detection_full_range/input.f32",
                &[
                    "face_detection_full_range/reshaped_regressor_face_4.f32",
                    "face_detection_full_range/reshaped_classifier_face_4.f32",
                ],
                1e-3,
            ),
            (
                FACE_LANDMARKS,
                "face_landmark/input.f32",
                &["face_landmark/conv2d_20.f32", "face_landmark/conv2d_30.f32"],
                1e-3,
            ),
            (
                PASSIVE_ANTISPOOF,
                "human_antispoof/input.f32",
                &["human_antispoof/activation_4.f32"],
                1e-4,
            ),
            (
                PASSIVE_LIVENESS,
                "human_liveness/input.f32",
                &["human_liveness/activation_6.f32"],
                1e-4,
            ),
        ];
        for (spec, input, outputs, tolerance) in cases {
            let model = Model::load(&dir, spec).expect("load");
            let got = model.run(&[&read_f32(input)]).expect("run");
            assert_eq!(got.len(), outputs.len(), "{}", spec.file);
            for (got, expected) in got.iter().zip(outputs) {
                let diff = max_abs_diff(got, &read_f32(expected));
                assert!(
                    diff <= tolerance,
                    "{} {expected}: max diff {diff}",
                    spec.file
                );
            }
        }

        // dlib: four 150x150 chips (u8) and dlib's own descriptors for them.
        let model = Model::load(&dir, FACE_EMBEDDER).expect("load");
        let chips =
            std::fs::read(dir.join("reference/dlib_face_recognition_resnet_v1/inputs_u8.bin"))
                .expect("chips");
        let expected = read_f32("dlib_face_recognition_resnet_v1/embeddings_dlib_f32.bin");
        let chip_len = 150 * 150 * 3;
        assert_eq!(chips.len() % chip_len, 0);
        for (i, chip) in chips.chunks_exact(chip_len).enumerate() {
            let input: Vec<f32> = chip.iter().map(|&v| f32::from(v)).collect();
            let got = model.run(&[&input]).expect("run");
            let diff = max_abs_diff(&got[0], &expected[i * 128..(i + 1) * 128]);
            assert!(diff <= 1e-4, "chip {i}: max diff {diff}");
        }
    }

    /// The voice models against the packages' own outputs (onnxruntime driven by silero-vad's
    /// wrapper; resemblyzer's VoiceEncoder in torch).
    #[test]
    fn voice_models_match_their_original_runtimes() {
        let dir = models_dir();
        let vad = Model::load(&dir, VOICE_ACTIVITY).expect("load");
        let got = vad
            .run(&[
                &read_f32("silero_vad_16k/step_input.f32"),
                &read_f32("silero_vad_16k/step_state.f32"),
            ])
            .expect("run");
        assert_eq!(got.len(), 2);
        let diff = max_abs_diff(&got[0], &read_f32("silero_vad_16k/step_output.f32"));
        assert!(diff <= 1e-4, "VAD probability: max diff {diff}");
        let diff = max_abs_diff(&got[1], &read_f32("silero_vad_16k/step_stateN.f32"));
        assert!(diff <= 1e-4, "VAD state: max diff {diff}");

        let encoder = Model::load(&dir, SPEAKER_EMBEDDER_GE2E).expect("load");
        let mel = read_f32("resemblyzer_ge2e/mel.f32");
        let partials = read_f32("resemblyzer_ge2e/partial_embeddings.f32");
        // The reference's window slices (reference.json `mel_slices`): 160 frames every 77.
        for (k, start) in [0usize, 77, 154, 231, 308].into_iter().enumerate() {
            let window = &mel[start * 40..(start + 160) * 40];
            let got = encoder.run(&[window]).expect("run");
            let diff = max_abs_diff(&got[0], &partials[k * 256..(k + 1) * 256]);
            assert!(diff <= 1e-4, "GE2E window {k}: max diff {diff}");
        }
    }

    /// CAM++ against PyTorch: on the reference features, and end to end from the waveform
    /// through the Rust fbank (`models/reference/campplus_sv_zh_en_3s/`).
    #[test]
    fn campplus_matches_pytorch_from_the_waveform() {
        let model = Model::load(&models_dir(), SPEAKER_EMBEDDER).expect("load");
        let expected = read_f32("campplus_sv_zh_en_3s/embedding.f32");
        let got = model
            .run(&[&read_f32("campplus_sv_zh_en_3s/feature.f32")])
            .expect("run");
        let diff = max_abs_diff(&got[0], &expected);
        assert!(
            diff <= 1e-4,
            "CAM++ on the reference features: max diff {diff}"
        );
        let fbank = crate::voice::fbank::KaldiFbank::new();
        let features: Vec<f32> = fbank
            .features(&read_f32("campplus_sv_zh_en_3s/input.f32"))
            .into_iter()
            .flatten()
            .collect();
        let got = model.run(&[&features]).expect("run");
        let diff = max_abs_diff(&got[0], &expected);
        assert!(diff <= 1e-3, "CAM++ from the waveform: max diff {diff}");
    }

    #[test]
    fn damaged_or_missing_models_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Model::load(dir.path(), FACE_DETECTOR_SHORT),
            Err(ModelError::Missing { .. })
        ));
        let mut bytes = std::fs::read(models_dir().join(FACE_DETECTOR_SHORT.file)).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(dir.path().join(FACE_DETECTOR_SHORT.file), bytes).unwrap();
        let error = Model::load(dir.path(), FACE_DETECTOR_SHORT).unwrap_err();
        assert_eq!(
            error,
            ModelError::Checksum {
                file: FACE_DETECTOR_SHORT.file
            }
        );
        assert!(error.to_string().contains("sha256"));
    }

    /// The tied-embedding split refuses a matrix that is not read as the token lookup and the
    /// output projection, instead of computing something else.
    #[test]
    fn a_tied_embedding_of_another_shape_is_refused() {
        let dir = models_dir();
        let refused = |table: &str, ids: &str| match VariableModel::load_tied(
            &dir,
            WHISPER_DECODER,
            table,
            ids,
        ) {
            Err(ModelError::Runtime { detail, .. }) => detail,
            other => panic!("{table}/{ids}: {other:?}"),
        };
        assert!(refused("no.such.matrix", "tokens").contains("no initialiser"));
        // The positional table is sliced, not looked up.
        assert!(refused("decoder.position_encodings.encodings", "tokens").contains("Slice"));
        assert!(refused("decoder.embeddings.weight.T", "features").contains("Gather"));
    }
}
