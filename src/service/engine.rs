//! The [`Engine`]: one value holding the store, the key verifier, the clock and the worker pool.
//! Every operation takes `&self`; an `Engine` is `Send + Sync` and is meant to be shared by all
//! threads of the host for the lifetime of the app.

use std::path::PathBuf;
use std::sync::Arc;

use crate::address::AddressPolicy;
use crate::auth::KeyVerifier;
use crate::clock::{Clock, ManualClock, SystemClock};
use crate::error::{Error, Result};
use crate::options::EngineOptions;
use crate::service::store::{Store, TemplateKey};
use vouch_bio::infer::{
    check_present, Lazy, ModelError, AASIST, PHONEME_RECOGNIZER, SPEAKER_EMBEDDER, VOICE_ACTIVITY,
};
use vouch_bio::{
    DocumentModels, FaceModels, PhonemeRecognizer, SpoofDetector, Visemes, VoiceModels, Whisper,
    WHISPER_BASE, WHISPER_TINY_EN,
};

/// The verification engine. See the crate documentation for an example.
pub struct Engine {
    pub(super) store: Store,
    pub(super) keys: KeyVerifier,
    pub(super) clock: Arc<dyn Clock>,
    pool: rayon::ThreadPool,
    models_dir: Option<PathBuf>,
    /// The models, each loaded by the first call that needs it ([`Lazy`]; `docs/performance.md`
    /// says which call loads which), or all at once at open with `preload_models`. Opening
    /// only checks that their files are there.
    face: Lazy<Arc<FaceModels>>,
    voice: Lazy<Arc<VoiceModels>>,
    /// The document models: most engines never read a document, and the text recogniser is
    /// 23 MB of heap.
    document: Lazy<Arc<DocumentModels>>,
    /// The speech recogniser of the spoken-phrase check (Whisper tiny.en).
    speech: Lazy<Arc<Whisper>>,
    /// The multilingual recogniser (Whisper base) for phrases in other languages than English:
    /// loaded by the first call that needs it even with `preload_models`, since most engines
    /// hear English only and it holds 239 MiB more (`tests/memory.rs`).
    multilingual: Lazy<Arc<Whisper>>,
    /// The phoneme recogniser whose viseme probabilities feed the audio-visual sync model.
    phonemes: Lazy<Arc<PhonemeRecognizer>>,
    /// The synthetic-speech detector (process-video's `voice_spoof_check`, forgery analysis).
    spoof: Lazy<Arc<SpoofDetector>>,
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
            options.database_pool_size,
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
        // Models load on first use (`Lazy`): opening only checks that the files of every model
        // the options may need are there, so a missing one still fails the open. Each file's
        // sha256 is checked when it loads.
        if let Some(dir) = &options.models_dir {
            let model_error = |error: ModelError| {
                Error::InvalidOptions(format!("models_dir {}: {error}", dir.display()))
            };
            FaceModels::check_present(dir).map_err(model_error)?;
            for spec in [VOICE_ACTIVITY, SPEAKER_EMBEDDER] {
                check_present(dir, spec.file).map_err(model_error)?;
            }
            Whisper::check_present(dir, &WHISPER_TINY_EN).map_err(model_error)?;
            Whisper::check_present(dir, &WHISPER_BASE).map_err(model_error)?;
            PhonemeRecognizer::check_present(dir).map_err(model_error)?;
            DocumentModels::check_present(dir).map_err(model_error)?;
            if options.voice_spoof_check {
                check_present(dir, AASIST.file).map_err(model_error)?;
            }
        } else if options.voice_spoof_check {
            return Err(Error::InvalidOptions(
                "voice_spoof_check needs models_dir".to_owned(),
            ));
        }
        let preload = options.preload_models;
        let engine = Engine {
            store,
            keys,
            clock,
            pool,
            session_faces_ttl_ms: (options.session_faces_ttl_s as i64).saturating_mul(1000),
            addresses,
            sim_swap: options.sim_swap,
            deliveries: Default::default(),
            models_dir: options.models_dir,
            face: Lazy::default(),
            voice: Lazy::default(),
            document: Lazy::default(),
            speech: Lazy::default(),
            multilingual: Lazy::default(),
            phonemes: Lazy::default(),
            spoof: Lazy::default(),
            voice_spoof_check: options.voice_spoof_check,
        };
        if preload {
            engine.load_models()?;
        }
        Ok(engine)
    }

    /// Process-video's models now, in parallel on the pool ([`super::runtime::Runtime::load_models`]).
    pub(crate) fn load_models(&self) -> Result<()> {
        if self.models_dir.is_none() {
            return Ok(());
        }
        use rayon::prelude::*;
        type Load<'a> = &'a (dyn Fn() -> Result<()> + Sync);
        let loads: [Load<'_>; 5] = [
            &|| self.face_models().map(drop),
            &|| {
                self.voice_models()?
                    .preload()
                    .map_err(|error| self.model_error(error))
            },
            &|| self.english_recognizer().map(drop),
            &|| self.phoneme_recognizer().map(drop),
            &|| match self.voice_spoof_check {
                true => self.spoof_detector().map(drop),
                false => Ok(()),
            },
        ];
        self.install(|| loads.par_iter().map(|load| load()).collect())
    }

    /// Which addresses the engine's outbound calls may reach (`allow_private` of the options):
    /// a host's transport applies it to every address it resolves.
    pub(crate) fn address_policy(&self) -> &AddressPolicy {
        &self.addresses
    }

    /// The schema version of the open database (`vouch::service::SCHEMA_VERSION` after open).
    pub(crate) fn schema_version(&self) -> Result<u32> {
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
    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Worker threads in the engine's pool.
    pub(crate) fn thread_count(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The models directory the engine was opened with.
    pub(crate) fn models_dir(&self) -> Option<&std::path::Path> {
        self.models_dir.as_deref()
    }

    /// The face models, or [`Error::Model`] when the engine was opened without `models_dir`.
    pub(crate) fn face_models(&self) -> Result<&FaceModels> {
        self.load_once(&self.face, "face recognition", FaceModels::load)
    }

    /// The phoneme recogniser, or [`Error::Model`] without `models_dir`.
    fn phoneme_recognizer(&self) -> Result<&PhonemeRecognizer> {
        self.load_once(
            &self.phonemes,
            "the audio-visual sync model",
            PhonemeRecognizer::load,
        )
    }

    /// Viseme probabilities of 16 kHz mono audio per 20 ms (none without `models_dir`).
    pub(crate) fn visemes_of(&self, samples: &[f32]) -> std::result::Result<Visemes, ModelError> {
        if self.models_dir.is_none() {
            return Ok(Visemes::default());
        }
        self.phoneme_recognizer()
            .map_err(|error| ModelError::Runtime {
                file: PHONEME_RECOGNIZER.file,
                detail: error.to_string(),
            })?
            .visemes(samples)
    }

    /// The voice models, or [`Error::Model`] when the engine was opened without `models_dir`.
    pub(crate) fn voice_models(&self) -> Result<&VoiceModels> {
        self.load_once(&self.voice, "voice recognition", VoiceModels::load)
    }

    /// Whisper tiny.en, or [`Error::Model`] without `models_dir`.
    pub(crate) fn english_recognizer(&self) -> Result<&Whisper> {
        self.load_once(&self.speech, "speech recognition", Whisper::load)
    }

    /// The document models, or [`Error::Model`] when the engine was opened without `models_dir`.
    /// Loaded by the first call (a few hundred ms), then kept.
    pub(crate) fn document_models(&self) -> Result<&DocumentModels> {
        self.load_once(&self.document, "document reading", DocumentModels::load)
    }

    /// The synthetic-speech detector (AASIST), or [`Error::Model`] when the engine was opened
    /// without `models_dir`.
    pub(crate) fn spoof_detector(&self) -> Result<&SpoofDetector> {
        self.load_once(
            &self.spoof,
            "synthetic-speech detection",
            SpoofDetector::load,
        )
    }

    /// The multilingual recogniser now ([`super::runtime::Runtime::load_multilingual`]).
    pub(crate) fn load_multilingual(&self) -> Result<()> {
        self.multilingual_recognizer().map(drop)
    }

    /// The multilingual recogniser, or [`Error::Model`] when the engine was opened without
    /// `models_dir`. Loaded by the first phrase in another language than English, then kept.
    pub(crate) fn multilingual_recognizer(&self) -> Result<&Whisper> {
        self.load_once(
            &self.multilingual,
            "multilingual speech recognition",
            |dir| Whisper::load_variant(dir, &WHISPER_BASE),
        )
    }

    /// The detector when process-video is to run it (`voice_spoof_check`).
    pub(super) fn process_video_spoof_check(&self) -> Result<Option<&SpoofDetector>> {
        self.voice_spoof_check
            .then(|| self.spoof_detector())
            .transpose()
    }

    /// A model that failed to load or run, as the engine reports it.
    fn model_error(&self, error: ModelError) -> Error {
        match &self.models_dir {
            Some(dir) => Error::Model(format!("models_dir {}: {error}", dir.display())),
            None => Error::Model(error.to_string()),
        }
    }

    /// The value of `cell`, loaded from `models_dir` by `load` on first use ([`Lazy`]: concurrent
    /// first calls load it once), or shared with another engine of the process that already
    /// holds it ([`vouch_bio::infer::shared`]: one copy per models directory).
    fn load_once<'a, T: std::any::Any + Send + Sync>(
        &'a self,
        cell: &'a Lazy<Arc<T>>,
        what: &'static str,
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
        cell.get_or_load(|| {
            vouch_bio::infer::shared(dir, what, || load(dir))
                .map_err(|error| self.model_error(error))
        })
        .map(|value| &**value)
    }

    /// Runs `work` on the engine's pool (rayon parallel iterators inside it use that pool).
    pub(crate) fn install<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn open_with_models() -> Engine {
        let options = EngineOptions::from_json(&format!(
            r#"{{"database":":memory:","template_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","models_dir":"{}/models"}}"#,
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("options");
        Engine::open(options).expect("engine")
    }

    /// Two engines of one process on one models directory hold one copy of a model.
    #[test]
    fn engines_share_their_models() {
        let (a, b) = (open_with_models(), open_with_models());
        assert!(a.face.get().is_none(), "opening loads no model");
        let (face_a, face_b) = (a.face_models().unwrap(), b.face_models().unwrap());
        assert!(std::ptr::eq(face_a, face_b));
    }
}
