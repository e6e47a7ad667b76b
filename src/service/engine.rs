//! The [`Engine`]: one value holding the store, the key verifier, the clock and the worker pool.
//! Every operation takes `&self`; an `Engine` is `Send + Sync` and is meant to be shared by all
//! threads of the host for the lifetime of the app.

use std::path::PathBuf;
use std::sync::Arc;

use crate::address::AddressPolicy;
use crate::auth::KeyVerifier;
use crate::bio::document::DocumentModels;
use crate::bio::face::FaceModels;
use crate::bio::speech::phonemes::{PhonemeRecognizer, Visemes};
use crate::bio::speech::whisper::{self, Whisper};
use crate::bio::voice::spoof::SpoofDetector;
use crate::bio::voice::VoiceModels;
use crate::clock::{Clock, ManualClock, SystemClock};
use crate::error::{Error, Result};
use crate::infer::ModelError;
use crate::options::EngineOptions;
use crate::service::store::{Store, TemplateKey};

/// The verification engine. See the crate documentation for an example.
pub struct Engine {
    pub(super) store: Store,
    pub(super) keys: KeyVerifier,
    pub(super) clock: Arc<dyn Clock>,
    pool: rayon::ThreadPool,
    models_dir: Option<PathBuf>,
    /// The face models, loaded at open when `models_dir` is set.
    pub(super) face: Option<FaceModels>,
    /// The voice models, loaded at open when `models_dir` is set.
    pub(super) voice: Option<VoiceModels>,
    /// The document models, loaded by the first document call (their file's sha256 is checked
    /// at open): most engines never read a document, and the text recogniser is 23 MB of heap.
    document: std::sync::OnceLock<DocumentModels>,
    /// Held while the document models load, so two first calls do not both load them.
    /// Held while a lazily loaded model loads, so that two first calls load it once.
    loading: std::sync::Mutex<()>,
    /// The speech recogniser of the spoken-phrase check, loaded at open when `models_dir` is set.
    pub(super) speech: Option<Whisper>,
    /// The multilingual recogniser (Whisper base) for phrases in other languages than English:
    /// loaded by the first call that needs it (its files are checked for at open), since most
    /// engines hear English only and it holds 239 MiB more (`tests/memory.rs`).
    multilingual: std::sync::OnceLock<Whisper>,
    /// The phoneme recogniser whose viseme probabilities feed the audio-visual sync model, loaded
    /// at open (last) when `models_dir` is set.
    pub(super) phonemes: Option<PhonemeRecognizer>,
    /// The synthetic-speech detector: loaded at open when `voice_spoof_check` is on, otherwise by
    /// the first forgery analysis.
    spoof: std::sync::OnceLock<SpoofDetector>,
    /// Whether process-video runs the synthetic-speech check (`voice_spoof_check`).
    pub(super) voice_spoof_check: bool,
    /// How long faces kept with a session live, ms.
    pub(super) session_faces_ttl_ms: i64,
    /// Which addresses job calls, webhooks and alerts may reach.
    pub(super) addresses: AddressPolicy,
    /// Where SIM-swap checks go, if anywhere.
    pub(super) sim_swap: Option<crate::options::SimSwapProvider>,
    /// The job deliveries in flight, for the delivery limits (`service::pump`).
    pub(super) deliveries: crate::service::pump::DeliveryGate,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Engine")
            .field("threads", &self.pool.current_num_threads())
            .field("models_dir", &self.models_dir)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Opens an engine: checks the options, opens (creating or migrating) the database, loads the
    /// verification keys and starts the worker pool. The clock is the system's unless
    /// `fixed_clock_ms` is set.
    pub fn open(options: EngineOptions) -> Result<Engine> {
        let clock: Arc<dyn Clock> = match options.fixed_clock_ms {
            Some(fixed) => Arc::new(ManualClock::new(fixed)),
            None => Arc::new(SystemClock),
        };
        Engine::open_with_clock(options, clock)
    }

    /// Opens an engine from options given as JSON text.
    pub fn open_json(options_json: &str) -> Result<Engine> {
        Engine::open(EngineOptions::from_json(options_json)?)
    }

    /// Opens an engine that reads time from `clock` (tests move a [`ManualClock`]).
    pub fn open_with_clock(options: EngineOptions, clock: Arc<dyn Clock>) -> Result<Engine> {
        options.validate()?;
        let addresses = options.address_policy()?;
        let keys = KeyVerifier::new(&options.api_keys)?;
        let store = Store::open(
            &options.database,
            TemplateKey::new(options.template_key_bytes()?),
        )?;
        let threads = if options.threads == 0 {
            std::thread::available_parallelism().map_or(1, |count| count.get())
        } else {
            options.threads
        };
        // The engine's own pool: a host app may use rayon's global pool for its own work.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|index| format!("vouch-worker-{index}"))
            .build()
            .map_err(|error| {
                Error::InvalidOptions(format!("cannot start {threads} worker threads: {error}"))
            })?;
        // Models are loaded (and their sha256 checked) once, here; a damaged file fails the open.
        let model_error = |dir: &std::path::Path, error: ModelError| {
            Error::InvalidOptions(format!("models_dir {}: {error}", dir.display()))
        };
        // What a model holds while it loads is two to three times what it keeps, so the order
        // sets the process's peak: the voice models first (CAM++'s load-time copies would
        // otherwise stack on everything else), then the largest, Whisper, while little else is
        // held (`tests/memory.rs`: 224 MB this way, 244 MB with the voice models last).
        // The phoneme recogniser comes last: small, its load-time copies then stack on nothing
        // larger.
        let (speech, face, voice, phonemes) = match &options.models_dir {
            Some(dir) => {
                let voice = VoiceModels::load(dir).map_err(|error| model_error(dir, error))?;
                let speech = Whisper::load(dir).map_err(|error| model_error(dir, error))?;
                Whisper::check_present(dir, &whisper::BASE)
                    .map_err(|error| model_error(dir, error))?;
                let face = FaceModels::load(dir).map_err(|error| model_error(dir, error))?;
                DocumentModels::check(dir).map_err(|error| model_error(dir, error))?;
                let phonemes =
                    PhonemeRecognizer::load(dir).map_err(|error| model_error(dir, error))?;
                (Some(speech), Some(face), Some(voice), Some(phonemes))
            }
            None => (None, None, None, None),
        };
        let spoof = std::sync::OnceLock::new();
        match (&options.models_dir, options.voice_spoof_check) {
            (Some(dir), true) => {
                let detector = SpoofDetector::load(dir).map_err(|error| model_error(dir, error))?;
                let _ = spoof.set(detector);
            }
            (None, true) => {
                return Err(Error::InvalidOptions(
                    "voice_spoof_check needs models_dir".to_owned(),
                ))
            }
            (_, false) => {}
        }
        Ok(Engine {
            store,
            keys,
            clock,
            pool,
            session_faces_ttl_ms: (options.session_faces_ttl_s as i64).saturating_mul(1000),
            addresses,
            sim_swap: options.sim_swap,
            deliveries: Default::default(),
            models_dir: options.models_dir,
            face,
            voice,
            document: std::sync::OnceLock::new(),
            loading: std::sync::Mutex::new(()),
            speech,
            multilingual: std::sync::OnceLock::new(),
            phonemes,
            spoof,
            voice_spoof_check: options.voice_spoof_check,
        })
    }

    /// Which addresses the engine's outbound calls may reach (`allow_private` of the options):
    /// a host's transport applies it to every address it resolves.
    pub fn address_policy(&self) -> &AddressPolicy {
        &self.addresses
    }

    /// The schema version of the open database (`vouch::service::SCHEMA_VERSION` after open).
    pub fn schema_version(&self) -> Result<u32> {
        self.store.schema_version()
    }

    /// The engine's store, for the crate's own tests and tools that inspect rows directly
    /// (cargo feature `inspect`, off by default: the library's layers reach the store only
    /// through `service`).
    #[cfg(feature = "inspect")]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The current time of the engine's clock, Unix ms.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Worker threads in the engine's pool.
    pub fn thread_count(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The face models, or [`Error::Model`] when the engine was opened without `models_dir`.
    pub(crate) fn face_models(&self) -> Result<&FaceModels> {
        self.face.as_ref().ok_or_else(|| {
            Error::Model(
                "face recognition needs models: open the engine with models_dir".to_owned(),
            )
        })
    }

    /// Viseme probabilities of 16 kHz mono audio per 20 ms (none without `models_dir`).
    pub(crate) fn visemes_of(&self, samples: &[f32]) -> std::result::Result<Visemes, ModelError> {
        match &self.phonemes {
            Some(recognizer) => recognizer.visemes(samples),
            None => Ok(Visemes::default()),
        }
    }

    /// The voice models, or [`Error::Model`] when the engine was opened without `models_dir`.
    pub(crate) fn voice_models(&self) -> Result<&VoiceModels> {
        self.voice.as_ref().ok_or_else(|| {
            Error::Model(
                "voice recognition needs models: open the engine with models_dir".to_owned(),
            )
        })
    }

    /// The document models, or [`Error::Model`] when the engine was opened without `models_dir`.
    /// Loaded by the first call (a few hundred ms), then kept.
    pub(crate) fn document_models(&self) -> Result<&DocumentModels> {
        self.load_once(&self.document, "document reading", DocumentModels::load)
    }

    /// The synthetic-speech detector (AASIST), or [`Error::Model`] when the engine was opened
    /// without `models_dir`. Loaded at open with `voice_spoof_check`, otherwise by the first call.
    pub(crate) fn spoof_detector(&self) -> Result<&SpoofDetector> {
        self.load_once(
            &self.spoof,
            "synthetic-speech detection",
            SpoofDetector::load,
        )
    }

    /// Loads the multilingual recogniser (Whisper base) now instead of on the first phrase that
    /// needs it: about a second of CPU and 239 MiB more held (318 MiB at once while it loads), which an app that expects phrases in
    /// other languages than English may rather pay at start-up than in a user's first call.
    pub fn load_multilingual(&self) -> Result<()> {
        self.multilingual_recognizer().map(drop)
    }

    /// The multilingual recogniser, or [`Error::Model`] when the engine was opened without
    /// `models_dir`. Loaded by the first phrase in another language than English, then kept.
    pub(crate) fn multilingual_recognizer(&self) -> Result<&Whisper> {
        self.load_once(
            &self.multilingual,
            "multilingual speech recognition",
            |dir| Whisper::load_variant(dir, &whisper::BASE),
        )
    }

    /// The detector when process-video is to run it (`voice_spoof_check`).
    pub(super) fn process_video_spoof_check(&self) -> Option<&SpoofDetector> {
        self.voice_spoof_check.then(|| self.spoof.get()).flatten()
    }

    /// The value of `cell`, loaded from `models_dir` by `load` on first use, under
    /// [`Engine::loading`] so that concurrent first calls load it once.
    fn load_once<'a, T>(
        &'a self,
        cell: &'a std::sync::OnceLock<T>,
        what: &str,
        load: impl FnOnce(&std::path::Path) -> std::result::Result<T, ModelError>,
    ) -> Result<&'a T> {
        if let Some(value) = cell.get() {
            return Ok(value);
        }
        let Some(dir) = &self.models_dir else {
            return Err(Error::Model(format!(
                "{what} needs models: open the engine with models_dir"
            )));
        };
        // A poisoned lock only means another first call panicked; loading again is safe.
        let _loading = self
            .loading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(value) = cell.get() {
            return Ok(value);
        }
        let value = load(dir)
            .map_err(|error| Error::Model(format!("models_dir {}: {error}", dir.display())))?;
        Ok(cell.get_or_init(|| value))
    }

    /// Runs `work` on the engine's pool (rayon parallel iterators inside it use that pool).
    pub fn install<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        self.pool.install(work)
    }
}

/// A fresh random identifier: `prefix` followed by 32 hex digits (128 random bits).
pub(crate) fn new_id(prefix: &str) -> String {
    let mut bytes = [0u8; 16];
    // getrandom only fails on platforms without an entropy source, where nothing here is safe anyway.
    getrandom::getrandom(&mut bytes).expect("the operating system provides randomness");
    let mut id = String::with_capacity(prefix.len() + 32);
    id.push_str(prefix);
    for byte in bytes {
        id.push_str(&format!("{byte:02x}"));
    }
    id
}
