//! How the CLI opens an engine: every command writes engine options as JSON (the document a C host
//! passes to `vouch_engine_new`) and opens them here, the one call of `Engine::open_json`.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{json, Value};
use vouch::Engine;

use crate::source_path;

/// Opens an engine from its options (JSON text).
pub(crate) fn open(options: &str) -> Result<Engine, String> {
    Engine::open_json(options).map_err(|error| error.to_string())
}

/// Options for a new database: a fresh random template key and API-key secret.
pub(crate) fn fresh_options(database: &str) -> Value {
    json!({
        "database": database,
        "template_key": random_base64(),
        "api_keys": { "hs256_secret": random_base64() },
    })
}

/// Options for evaluations: an in-memory database, a throwaway template key, the models, loaded
/// at open (so that the first clip's time per clip does not include loading them).
pub(crate) fn eval_options(models: &Path, threads: usize) -> Value {
    json!({
        "database": ":memory:",
        "template_key": base64::engine::general_purpose::STANDARD.encode([7u8; 32]),
        "threads": threads,
        "models_dir": models,
        "preload_models": true,
    })
}

/// The source tree's models directory, when the CLI runs from a checkout.
pub(crate) fn source_models() -> Option<PathBuf> {
    source_path("models/SHA256SUMS").and_then(|path| path.parent().map(Path::to_path_buf))
}

fn random_base64() -> String {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).expect("the operating system provides randomness");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
