//! Engine options, [`EngineOptions`], parsed from JSON with every field checked and every unknown field
//! rejected, so a typo in a host's configuration fails at open instead of being ignored.

use std::fmt;
use std::path::PathBuf;

use base64::Engine as _;
use serde::Deserialize;

use crate::address::AddressPolicy;
use crate::error::{Error, Result};

/// Largest worker count accepted for `threads`; more is a configuration mistake on any device.
pub const MAX_THREADS: usize = 256;

/// Default of `session_faces_ttl_s`: a day.
pub const DEFAULT_SESSION_FACES_TTL_S: u64 = 86_400;

/// Longest `session_faces_ttl_s` accepted: 30 days.
pub const MAX_SESSION_FACES_TTL_S: u64 = 30 * 86_400;

/// Latest `fixed_clock_ms` accepted: 9999-12-31T23:59:59.999Z, the last instant an RFC 3339
/// timestamp can write (later values printed as 1970 before).
pub const MAX_CLOCK_MS: i64 = 253_402_300_799_999;

/// Options for [`crate::Engine::open`]. JSON example:
///
/// ```json
/// {
///   "database": "/data/vouch.sqlite",
///   "template_key": "<base64 of 32 random bytes>",
///   "api_keys": { "hs256_secret": "<base64, at least 32 bytes>",
///                 "public_keys": [ { "kid": "backend-1", "algorithm": "EdDSA", "pem": "-----BEGIN PUBLIC KEY-----..." } ] },
///   "threads": 0,
///   "models_dir": "models"
/// }
/// ```
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineOptions {
    /// Path of the SQLite database file, created when missing; `:memory:` keeps everything in
    /// memory. A `postgres://` (or `postgresql://`) URL opens a PostgreSQL database instead, in
    /// builds with the `postgres` feature (`vouch serve`; docs/http.md "A fleet").
    pub database: String,
    /// Most connections a PostgreSQL `database` is opened with (1 to 256; default 8). SQLite has
    /// one connection and ignores it.
    #[serde(default = "default_database_pool_size")]
    pub database_pool_size: usize,
    /// Base64 of the 32-byte key that seals templates at rest. The host keeps it (Keychain, Keystore).
    pub template_key: String,
    /// How API keys (JWTs) are verified and, with an HS256 secret, minted.
    #[serde(default)]
    pub api_keys: ApiKeyOptions,
    /// Worker threads of the engine's own pool; 0 means one per available core.
    #[serde(default)]
    pub threads: usize,
    /// Folder holding the ONNX models (`models/` of the repository): their files are checked for
    /// at open, and each loads (its sha256 checked) on the first call that needs it, or at open
    /// with `preload_models`; without it, operations that need models fail with `Error::Model`.
    #[serde(default)]
    pub models_dir: Option<PathBuf>,
    /// Fixes the engine's clock at this Unix millisecond (0 to `MAX_CLOCK_MS`, year 9999); for
    /// reproducible demos and tests only.
    #[serde(default)]
    pub fixed_clock_ms: Option<i64>,
    /// Seconds the faces kept with a session for match-faces live (1 to 30 days; default a
    /// day): older ones are deleted, even from a session never ended.
    #[serde(default = "default_session_faces_ttl_s")]
    pub session_faces_ttl_s: u64,
    /// Address ranges that job calls, webhooks and alerts may reach although they are private,
    /// loopback or otherwise refused (`docs/jobs.md`), e.g. `["192.168.1.0/24"]` for a receiver on
    /// the kiosk's LAN. Empty by default: only public addresses.
    #[serde(default)]
    pub allow_private: Vec<String>,
    /// Where `sessions/end` sends its SIM-swap checks (`docs/events.md`); without it a check is
    /// recorded as `unavailable`.
    #[serde(default)]
    pub sim_swap: Option<SimSwapProvider>,
    /// Runs the AASIST synthetic-speech detector on process-video's audio (with authorization
    /// consent): Voice Recognition reports `synthetic_speech` (`bona_fide`, `inconclusive` or
    /// `spoof`), and `spoof` fails the decision (`voice_synthetic_speech`) and blocks
    /// auto-enrollment. Off by default: it adds about 0.8 s per call on a phone-class CPU and
    /// misses modern neural voices (`docs/voice.md`). Needs `models_dir`.
    #[serde(default)]
    pub voice_spoof_check: bool,
    /// Loads every model process-video needs when the engine opens (in parallel on its pool,
    /// each file's sha256 checked), instead of in the first calls that need them. Off by default:
    /// opening then only checks that the files are there, so an app starts at once and a call
    /// that needs no model (a session, a job) never loads one; the first process-video loads
    /// what it needs as it goes (`docs/performance.md`). `vouch serve` turns it on.
    #[serde(default)]
    pub preload_models: bool,
}

/// A SIM-swap provider that answers the CAMARA SIM Swap `check` operation: `POST` of
/// `{"phoneNumber": "+...", "maxAge": hours}`, answered `{"swapped": true|false}`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSwapProvider {
    /// The provider's `check` URL (`https`, or `http` to an address `allow_private` opens).
    pub check_url: String,
    /// Headers of every check, e.g. `{"Authorization": "Bearer ..."}`.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// The window asked about, hours (1 to 2400; CAMARA's default 240).
    #[serde(default = "default_sim_swap_max_age_hours")]
    pub max_age_hours: u32,
}

fn default_sim_swap_max_age_hours() -> u32 {
    240
}

fn default_database_pool_size() -> usize {
    8
}

fn default_session_faces_ttl_s() -> u64 {
    DEFAULT_SESSION_FACES_TTL_S
}

/// API-key verification keys.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyOptions {
    /// Base64 of the HS256 shared secret (at least 32 bytes). Needed to create keys on the device.
    #[serde(default)]
    pub hs256_secret: Option<String>,
    /// Public keys for asymmetric tokens minted by the customer's backend.
    #[serde(default)]
    pub public_keys: Vec<PublicKeyOption>,
}

/// One public verification key.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicKeyOption {
    /// Key id; a token whose header names a `kid` is checked only against the key with that id.
    #[serde(default)]
    pub kid: Option<String>,
    /// `EdDSA` (Ed25519) or `ES256` (P-256).
    pub algorithm: String,
    /// The public key in PEM (`-----BEGIN PUBLIC KEY-----`).
    pub pem: String,
}

impl EngineOptions {
    /// Parses and checks options from JSON text.
    pub fn from_json(text: &str) -> Result<EngineOptions> {
        let options: EngineOptions =
            serde_json::from_str(text).map_err(|error| Error::InvalidOptions(error.to_string()))?;
        options.validate()?;
        Ok(options)
    }

    /// Checks every field; the error names the field and says what is wrong.
    pub fn validate(&self) -> Result<()> {
        if self.database.trim().is_empty() {
            return Err(invalid(
                "database must be a file path, \":memory:\" or a postgres:// URL",
            ));
        }
        if !(1..=256).contains(&self.database_pool_size) {
            return Err(invalid(format!(
                "database_pool_size must be between 1 and 256, got {}",
                self.database_pool_size
            )));
        }
        self.template_key_bytes()?;
        if self.threads > MAX_THREADS {
            return Err(invalid(format!(
                "threads must be between 0 and {MAX_THREADS}, got {}",
                self.threads
            )));
        }
        if let Some(dir) = &self.models_dir {
            if !dir.is_dir() {
                return Err(invalid(format!(
                    "models_dir {} is not a directory",
                    dir.display()
                )));
            }
        }
        if !(1..=MAX_SESSION_FACES_TTL_S).contains(&self.session_faces_ttl_s) {
            return Err(invalid(format!(
                "session_faces_ttl_s must be between 1 and {MAX_SESSION_FACES_TTL_S} (30 days), got {}",
                self.session_faces_ttl_s
            )));
        }
        if let Some(fixed) = self.fixed_clock_ms {
            // Timestamps are written as RFC 3339 with four-digit years.
            if !(0..=MAX_CLOCK_MS).contains(&fixed) {
                return Err(invalid(format!(
                    "fixed_clock_ms must be between 0 and {MAX_CLOCK_MS} (9999-12-31T23:59:59.999Z)"
                )));
            }
        }
        let addresses = self.address_policy()?;
        if let Some(provider) = &self.sim_swap {
            crate::address::check_url(&provider.check_url, "sim_swap.check_url", &addresses)
                .map_err(|error| invalid(error.to_string()))?;
            crate::address::check_headers(&provider.headers, "sim_swap.headers")
                .map_err(|error| invalid(error.to_string()))?;
            if !(1..=2400).contains(&provider.max_age_hours) {
                return Err(invalid(format!(
                    "sim_swap.max_age_hours must be between 1 and 2400, got {}",
                    provider.max_age_hours
                )));
            }
        }
        self.api_keys.hs256_secret_bytes()?;
        for (index, key) in self.api_keys.public_keys.iter().enumerate() {
            if key.algorithm != "EdDSA" && key.algorithm != "ES256" {
                return Err(invalid(format!(
                    "api_keys.public_keys[{index}].algorithm must be \"EdDSA\" or \"ES256\", got \"{}\"",
                    key.algorithm
                )));
            }
            if !key.pem.contains("-----BEGIN PUBLIC KEY-----") {
                return Err(invalid(format!(
                    "api_keys.public_keys[{index}].pem must be a PEM public key (-----BEGIN PUBLIC KEY-----)"
                )));
            }
        }
        Ok(())
    }

    /// The outbound address policy: the default refusals with `allow_private` opened.
    pub fn address_policy(&self) -> Result<AddressPolicy> {
        AddressPolicy::parse(&self.allow_private)
            .map_err(|message| invalid(format!("allow_private: {message}")))
    }

    /// The decoded 32-byte template key.
    pub fn template_key_bytes(&self) -> Result<[u8; 32]> {
        let bytes = decode_base64("template_key", &self.template_key)?;
        <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
            invalid(format!(
                "template_key must decode to 32 bytes, got {}",
                bytes.len()
            ))
        })
    }
}

impl ApiKeyOptions {
    /// The decoded HS256 secret, when one is configured.
    pub fn hs256_secret_bytes(&self) -> Result<Option<Vec<u8>>> {
        let Some(text) = &self.hs256_secret else {
            return Ok(None);
        };
        let bytes = decode_base64("api_keys.hs256_secret", text)?;
        if bytes.len() < 32 {
            return Err(invalid(format!(
                "api_keys.hs256_secret must decode to at least 32 bytes, got {}",
                bytes.len()
            )));
        }
        Ok(Some(bytes))
    }
}

fn decode_base64(field: &str, text: &str) -> Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|error| invalid(format!("{field} is not valid base64: {error}")))
}

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidOptions(message.into())
}

/// A database URL without its password (`postgres://user:secret@host/db` shows
/// `postgres://user:<redacted>@host/db`); a file path as it is.
fn redacted_database(database: &str) -> String {
    let database = &redacted_password_parameter(database);
    let Some(scheme_end) = database.find("://") else {
        return database.to_owned();
    };
    let rest = &database[scheme_end + 3..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return database.to_owned();
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:<redacted>{}",
            &database[..scheme_end + 3],
            &rest[..colon],
            &rest[at..]
        ),
        None => database.to_owned(),
    }
}

/// `password=...` in a URL's query or a key=value connection string, redacted.
fn redacted_password_parameter(database: &str) -> String {
    let lower = database.to_ascii_lowercase();
    let Some(start) = lower.find("password=") else {
        return database.to_owned();
    };
    let value = start + "password=".len();
    let end = database[value..]
        .find(['&', ' '])
        .map_or(database.len(), |offset| value + offset);
    format!(
        "{}<redacted>{}",
        &database[..value],
        redacted_password_parameter(&database[end..])
    )
}

// Secrets never reach logs or panic messages through Debug.
impl fmt::Debug for EngineOptions {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("EngineOptions")
            .field("database", &redacted_database(&self.database))
            .field("database_pool_size", &self.database_pool_size)
            .field("template_key", &"<redacted>")
            .field("api_keys", &self.api_keys)
            .field("threads", &self.threads)
            .field("models_dir", &self.models_dir)
            .field("fixed_clock_ms", &self.fixed_clock_ms)
            .field("session_faces_ttl_s", &self.session_faces_ttl_s)
            .field("allow_private", &self.allow_private)
            .field("sim_swap", &self.sim_swap.as_ref().map(|_| "<configured>"))
            .field("voice_spoof_check", &self.voice_spoof_check)
            .field("preload_models", &self.preload_models)
            .finish()
    }
}

impl fmt::Debug for ApiKeyOptions {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ApiKeyOptions")
            .field(
                "hs256_secret",
                &self.hs256_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("public_keys", &self.public_keys.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    fn error_of(json: &str) -> String {
        EngineOptions::from_json(json)
            .expect_err("options should be rejected")
            .to_string()
    }

    #[test]
    fn a_database_password_never_reaches_debug() {
        assert_eq!(
            redacted_database("postgres://vouch:s3cret@db.internal:5432/vouch?sslmode=disable"),
            "postgres://vouch:<redacted>@db.internal:5432/vouch?sslmode=disable"
        );
        assert_eq!(
            redacted_database("postgres://vouch@db/v"),
            "postgres://vouch@db/v"
        );
        assert_eq!(
            redacted_database("postgres://db/v?user=vouch&password=s3cret&sslmode=disable"),
            "postgres://db/v?user=vouch&password=<redacted>&sslmode=disable"
        );
        assert_eq!(
            redacted_database("host=db user=vouch password=s3cret dbname=v"),
            "host=db user=vouch password=<redacted> dbname=v"
        );
        assert_eq!(
            redacted_database("/data/vouch.sqlite"),
            "/data/vouch.sqlite"
        );
    }

    #[test]
    fn minimal_options_parse() {
        let options = EngineOptions::from_json(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}"}}"#
        ))
        .unwrap();
        assert_eq!(options.threads, 0);
        assert_eq!(options.template_key_bytes().unwrap()[31], 31);
    }

    #[test]
    fn every_bad_field_is_named() {
        assert!(error_of(r#"{"template_key":"x"}"#).contains("missing field `database`"));
        assert!(error_of(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}","treads":2}}"#
        ))
        .contains("unknown field `treads`"));
        assert!(error_of(r#"{"database":":memory:","template_key":"AAAA"}"#)
            .contains("template_key must decode to 32 bytes, got 3"));
        assert!(error_of(r#"{"database":":memory:","template_key":"!!"}"#)
            .contains("template_key is not valid base64"));
        assert!(
            error_of(&format!(r#"{{"database":" ","template_key":"{KEY}"}}"#))
                .contains("database must be")
        );
        assert!(error_of(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}","threads":1000}}"#
        ))
        .contains("threads must be between 0 and 256, got 1000"));
        assert!(error_of(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}","models_dir":"/nonexistent/x"}}"#
        ))
        .contains("models_dir /nonexistent/x is not a directory"));
        assert!(error_of(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}","api_keys":{{"hs256_secret":"AAAA"}}}}"#
        ))
        .contains("api_keys.hs256_secret must decode to at least 32 bytes, got 3"));
        assert!(error_of(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}","api_keys":{{"public_keys":[{{"algorithm":"RS256","pem":"x"}}]}}}}"#
        ))
        .contains("api_keys.public_keys[0].algorithm must be"));
        assert!(error_of(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}","threads":-1}}"#
        ))
        .contains("invalid value"));
        assert!(error_of("not json").starts_with("invalid options:"));
        assert!(error_of(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}","allow_private":["127.0.0.0/8","lan"]}}"#
        ))
        .contains("allow_private: \"lan\" is not an address range"));
        for ttl in [0, MAX_SESSION_FACES_TTL_S + 1] {
            assert!(error_of(&format!(
                r#"{{"database":":memory:","template_key":"{KEY}","session_faces_ttl_s":{ttl}}}"#
            ))
            .contains("session_faces_ttl_s must be between 1 and 2592000 (30 days)"));
        }
        for clock in [-1, MAX_CLOCK_MS + 1, i64::MAX] {
            assert!(error_of(&format!(
                r#"{{"database":":memory:","template_key":"{KEY}","fixed_clock_ms":{clock}}}"#
            ))
            .contains("fixed_clock_ms must be between 0 and 253402300799999"));
        }
        assert!(EngineOptions::from_json(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}","fixed_clock_ms":{MAX_CLOCK_MS}}}"#
        ))
        .is_ok());
    }

    #[test]
    fn debug_never_shows_secrets() {
        let options = EngineOptions::from_json(&format!(
            r#"{{"database":":memory:","template_key":"{KEY}","api_keys":{{"hs256_secret":"{KEY}"}}}}"#
        ))
        .unwrap();
        let shown = format!("{options:?}");
        assert!(!shown.contains(KEY), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
