//! Template sealing: [`TemplateKey`] seals biometric templates with XChaCha20-Poly1305.
//!
//! The associated data binds the project, the user, the modality, the model id and version and the
//! sealed format's version, so a sealed template copied to another user's row, relabelled as another
//! model, or opened with another key fails authentication instead of silently matching.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use super::sql::{params, Conn};
use crate::error::{Error, Result};

/// Version of the sealed layout (`nonce || ciphertext+tag`) and of the associated-data encoding.
pub const TEMPLATE_FORMAT_VERSION: u32 = 1;

const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;

/// The 32-byte key the host provides at engine open. It never leaves memory and never reaches `Debug`.
#[derive(Clone)]
pub struct TemplateKey([u8; 32]);

/// Whose a sealed row is: a user's template, or a face kept with a session.
#[derive(Debug, Clone, Copy)]
pub(super) enum Owner<'a> {
    /// A row of `templates`.
    User { user_id: i64 },
    /// A row of `session_faces`; `source` is the `FaceSource` text.
    Session {
        session_id: &'a str,
        source: &'a str,
    },
}

/// Seals `plaintext` under `binding` and inserts it with its model, format version and time: the
/// one place a sealed biometric row is written. Returns the new row id.
pub(super) fn insert_sealed(
    connection: &Conn<'_>,
    key: &TemplateKey,
    owner: Owner<'_>,
    binding: &Binding<'_>,
    plaintext: &[u8],
    now_ms: i64,
) -> Result<i64> {
    let sealed = key.seal(binding, plaintext)?;
    let (sql, first, second): (&str, &dyn super::sql::ToValue, &dyn super::sql::ToValue) = match &owner {
        Owner::User { user_id } => (
            "INSERT INTO templates (user_id, modality, model_id, model_version, format_version, sealed, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
            user_id,
            &binding.modality,
        ),
        Owner::Session { session_id, source } => (
            "INSERT INTO session_faces (session_id, source, model_id, model_version, format_version, sealed, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
            session_id,
            source,
        ),
    };
    connection
        .query_row(
            sql,
            params![
                first,
                second,
                binding.model_id,
                binding.model_version,
                TEMPLATE_FORMAT_VERSION,
                sealed,
                now_ms
            ],
            |row| row.get(0),
        )
        .map_err(super::storage)
}

impl TemplateKey {
    /// Wraps the host's 32 key bytes.
    pub fn new(bytes: [u8; 32]) -> TemplateKey {
        TemplateKey(bytes)
    }
}

impl std::fmt::Debug for TemplateKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("TemplateKey(<redacted>)")
    }
}

/// Who and what a sealed template belongs to; all of it is authenticated.
#[derive(Debug, Clone, Copy)]
pub(super) struct Binding<'a> {
    pub project_id: &'a str,
    pub fullname: &'a str,
    pub modality: &'a str,
    pub model_id: &'a str,
    pub model_version: u32,
}

impl Binding<'_> {
    /// Length-prefixed fields, so that no two different bindings encode to the same bytes.
    fn associated_data(&self, format_version: u32) -> Vec<u8> {
        let mut data = Vec::with_capacity(96);
        data.extend_from_slice(b"vouch.template");
        data.extend_from_slice(&format_version.to_le_bytes());
        for field in [self.project_id, self.fullname, self.modality, self.model_id] {
            data.extend_from_slice(&(field.len() as u32).to_le_bytes());
            data.extend_from_slice(field.as_bytes());
        }
        data.extend_from_slice(&self.model_version.to_le_bytes());
        data
    }
}

impl TemplateKey {
    /// Seals `plaintext` for `binding` with a fresh random nonce.
    pub(super) fn seal(&self, binding: &Binding<'_>, plaintext: &[u8]) -> Result<Vec<u8>> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::getrandom(&mut nonce).map_err(|error| {
            Error::Storage(format!("no randomness for a template nonce: {error}"))
        })?;
        let cipher = XChaCha20Poly1305::new((&self.0).into());
        let aad = binding.associated_data(TEMPLATE_FORMAT_VERSION);
        let ciphertext = cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .map_err(|_| Error::Storage("template sealing failed".to_owned()))?;
        let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&ciphertext);
        Ok(sealed)
    }

    /// Opens a sealed template; any mismatch of key, binding, format or bytes is
    /// [`Error::TemplateUnreadable`].
    pub(super) fn open(
        &self,
        binding: &Binding<'_>,
        format_version: u32,
        sealed: &[u8],
    ) -> Result<Vec<u8>> {
        if format_version != TEMPLATE_FORMAT_VERSION || sealed.len() < NONCE_LEN + TAG_LEN {
            return Err(Error::TemplateUnreadable);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let cipher = XChaCha20Poly1305::new((&self.0).into());
        let aad = binding.associated_data(format_version);
        cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| Error::TemplateUnreadable)
    }
}

/// What the key-check row seals.
const KEY_CHECK_TEXT: &[u8] = b"vouch template key check";

/// The binding of the key-check row (no user: the modality names it).
const KEY_CHECK: Binding<'static> = Binding {
    project_id: "",
    fullname: "",
    modality: "key_check",
    model_id: "vouch",
    model_version: 1,
};

/// A database's oldest template, for checking the key of a database made before the key check.
struct OldestTemplate {
    /// Project, user, modality and model id.
    owner: [String; 4],
    model_version: u32,
    format_version: u32,
    sealed: Vec<u8>,
}

fn wrong_key() -> Error {
    Error::InvalidOptions(
        "template_key does not open this database's templates (they were sealed with another key)"
            .to_owned(),
    )
}

/// Checks at open that `key` is the database's template key: the key-check row must open with it.
/// A database without the row (new, or made before schema 3) gets one, after checking that the
/// key opens its oldest template if it has any. Runs in one write transaction; two engines
/// opening a new database at once write one row: the second waits for SQLite's lock and finds it,
/// or, on PostgreSQL, its insert does nothing and it checks the row the first one wrote.
pub(super) fn check_key(connection: &Conn<'_>, key: &TemplateKey) -> Result<()> {
    use super::sql::OptionalExtension;
    use super::storage;
    let transaction = connection;
    if let Some(checked) = check_row(transaction, key)? {
        return checked;
    }
    let oldest: Option<OldestTemplate> = transaction
        .query_row(
            "SELECT u.project_id, u.fullname, t.modality, t.model_id, t.model_version,
                    t.format_version, t.sealed
             FROM templates t JOIN users u ON u.id = t.user_id ORDER BY t.id LIMIT 1",
            params![],
            |row| {
                Ok(OldestTemplate {
                    owner: [row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?],
                    model_version: row.get(4)?,
                    format_version: row.get(5)?,
                    sealed: row.get(6)?,
                })
            },
        )
        .optional()
        .map_err(storage)?;
    if let Some(oldest) = oldest {
        let [project_id, fullname, modality, model_id] = &oldest.owner;
        let binding = Binding {
            project_id,
            fullname,
            modality,
            model_id,
            model_version: oldest.model_version,
        };
        key.open(&binding, oldest.format_version, &oldest.sealed)
            .map_err(|_| wrong_key())?;
    }
    let sealed = key.seal(&KEY_CHECK, KEY_CHECK_TEXT)?;
    let written = transaction
        .execute(
            "INSERT INTO key_check (id, format_version, sealed) VALUES (1, ?1, ?2)
             ON CONFLICT DO NOTHING",
            params![TEMPLATE_FORMAT_VERSION, sealed],
        )
        .map_err(storage)?;
    if written == 0 {
        // Another server wrote the row since the look above: it must open with this key too.
        return check_row(transaction, key)?.unwrap_or_else(|| Err(wrong_key()));
    }
    Ok(())
}

/// The key-check row opened with `key`: `None` when there is no row, else whether it opened.
fn check_row(transaction: &Conn<'_>, key: &TemplateKey) -> Result<Option<Result<()>>> {
    use super::sql::OptionalExtension;
    let check: Option<(u32, Vec<u8>)> = transaction
        .query_row(
            "SELECT format_version, sealed FROM key_check WHERE id = 1",
            params![],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(super::storage)?;
    Ok(check.map(
        |(format_version, sealed)| match key.open(&KEY_CHECK, format_version, &sealed) {
            Ok(text) if text == KEY_CHECK_TEXT => Ok(()),
            _ => Err(wrong_key()),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding<'a>(fullname: &'a str, model_version: u32) -> Binding<'a> {
        Binding {
            project_id: "p1",
            fullname,
            modality: "face",
            model_id: "dlib-resnet29",
            model_version,
        }
    }

    #[test]
    fn round_trip_and_every_binding_field_matters() {
        let key = TemplateKey::new([7; 32]);
        let sealed = key.seal(&binding("alice", 1), b"template bytes").unwrap();
        assert_eq!(
            key.open(&binding("alice", 1), 1, &sealed).unwrap(),
            b"template bytes"
        );
        assert!(matches!(
            key.open(&binding("bob", 1), 1, &sealed),
            Err(Error::TemplateUnreadable)
        ));
        assert!(matches!(
            key.open(&binding("alice", 2), 1, &sealed),
            Err(Error::TemplateUnreadable)
        ));
        assert!(matches!(
            key.open(&binding("alice", 1), 2, &sealed),
            Err(Error::TemplateUnreadable)
        ));
        let other = Binding {
            modality: "voice",
            ..binding("alice", 1)
        };
        assert!(matches!(
            key.open(&other, 1, &sealed),
            Err(Error::TemplateUnreadable)
        ));
        assert!(matches!(
            TemplateKey::new([8; 32]).open(&binding("alice", 1), 1, &sealed),
            Err(Error::TemplateUnreadable)
        ));
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(matches!(
            key.open(&binding("alice", 1), 1, &flipped),
            Err(Error::TemplateUnreadable)
        ));
        assert!(matches!(
            key.open(&binding("alice", 1), 1, &sealed[..10]),
            Err(Error::TemplateUnreadable)
        ));
    }

    #[test]
    fn nonces_are_fresh() {
        let key = TemplateKey::new([7; 32]);
        let first = key.seal(&binding("alice", 1), b"same").unwrap();
        let second = key.seal(&binding("alice", 1), b"same").unwrap();
        assert_ne!(first, second);
    }

    #[test]
    fn field_boundaries_cannot_be_shifted() {
        let shifted_a = Binding {
            project_id: "ab",
            fullname: "c",
            ..binding("x", 1)
        };
        let shifted_b = Binding {
            project_id: "a",
            fullname: "bc",
            ..binding("x", 1)
        };
        assert_ne!(shifted_a.associated_data(1), shifted_b.associated_data(1));
    }
}
