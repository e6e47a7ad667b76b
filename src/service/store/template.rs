//! Sealed biometric templates: [`Modality`], [`TemplateModel`] and [`StoredTemplate`]. Writing needs
//! authorization and storage consent and reading needs authorization consent; both are checked inside
//! the same transaction as the row access, so a concurrent withdrawal cannot slip between check and use.

use super::sql::params;

use super::consent::{read_consent, ConsentKind};
use super::seal::{insert_sealed, Binding, Owner};
use super::sql::Conn;
use super::{ensure_user, storage, Store};
use crate::error::{Error, Result};

/// What a template describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Modality {
    /// A face embedding.
    Face,
    /// A voice (speaker) embedding.
    Voice,
}

impl Modality {
    /// `face` or `voice`.
    pub fn as_str(self) -> &'static str {
        match self {
            Modality::Face => "face",
            Modality::Voice => "voice",
        }
    }
}

/// The model that produced a template; templates of another model or version are not comparable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateModel {
    /// Stable model identifier, e.g. `dlib-resnet29`.
    pub model_id: String,
    /// Version of the model's weights and preprocessing.
    pub model_version: u32,
}

/// One opened template.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTemplate {
    /// Row id.
    pub id: i64,
    /// Face or voice.
    pub modality: Modality,
    /// The model that made it.
    pub model: TemplateModel,
    /// The opened template bytes.
    pub data: Vec<u8>,
    /// Enrollment time, Unix ms.
    pub created_at: i64,
}

impl Store {
    /// Seals and stores a template for the user. Fails with [`Error::ConsentRequired`] unless both
    /// authorization and storage consent are given.
    pub fn insert_template(
        &self,
        project_id: &str,
        fullname: &str,
        modality: Modality,
        model: &TemplateModel,
        template: &[u8],
        now_ms: i64,
    ) -> Result<i64> {
        let ids =
            self.insert_templates(project_id, fullname, &[(modality, model, template)], now_ms)?;
        Ok(ids[0])
    }

    /// Seals and stores several templates for the user in one transaction (all or none), e.g. the
    /// face and the voice of one auto-enrollment. Needs both consents, like [`Self::insert_template`].
    /// The user's templates of the same modality made by another model are deleted in the same
    /// transaction: they can never be compared again.
    pub fn insert_templates(
        &self,
        project_id: &str,
        fullname: &str,
        templates: &[(Modality, &TemplateModel, &[u8])],
        now_ms: i64,
    ) -> Result<Vec<i64>> {
        self.write(|transaction| {
            require_consent(
                transaction,
                project_id,
                fullname,
                ConsentKind::Authorization,
            )?;
            require_consent(transaction, project_id, fullname, ConsentKind::Storage)?;
            let user_id = ensure_user(transaction, project_id, fullname, now_ms)?;
            let mut ids = Vec::with_capacity(templates.len());
            for &(modality, model, template) in templates {
                let binding = Binding {
                    project_id,
                    fullname,
                    modality: modality.as_str(),
                    model_id: &model.model_id,
                    model_version: model.model_version,
                };
                ids.push(insert_sealed(
                    transaction,
                    &self.key,
                    Owner::User { user_id },
                    &binding,
                    template,
                    now_ms,
                )?);
                // Templates of an earlier model are never compared with this one's: once the
                // user has a template of this model, theirs are deleted (model migration,
                // `docs/voice.md`).
                transaction
                    .execute(
                        "DELETE FROM templates WHERE user_id = ?1 AND modality = ?2
                         AND NOT (model_id = ?3 AND model_version = ?4)",
                        params![
                            user_id,
                            modality.as_str(),
                            model.model_id,
                            model.model_version
                        ],
                    )
                    .map_err(storage)?;
            }
            Ok(ids)
        })
    }

    /// Opens every template of one modality of the user, oldest first. Needs authorization consent;
    /// a template that fails to open is [`Error::TemplateUnreadable`], never skipped silently.
    pub fn templates(
        &self,
        project_id: &str,
        fullname: &str,
        modality: Modality,
    ) -> Result<Vec<StoredTemplate>> {
        self.read(|connection| {
            require_consent(connection, project_id, fullname, ConsentKind::Authorization)?;
            let mut statement = connection
                .prepare(
                    "SELECT t.id, t.model_id, t.model_version, t.format_version, t.sealed, t.created_at
                     FROM templates t JOIN users u ON u.id = t.user_id
                     WHERE u.project_id = ?1 AND u.fullname = ?2 AND t.modality = ?3 ORDER BY t.id",
                )
                .map_err(storage)?;
            let rows = statement
                .query_map(params![project_id, fullname, modality.as_str()], |row| {
                    Ok((
                        row.get::<i64>(0)?,
                        row.get::<String>(1)?,
                        row.get::<u32>(2)?,
                        row.get::<u32>(3)?,
                        row.get::<Vec<u8>>(4)?,
                        row.get::<i64>(5)?,
                    ))
                })
                .map_err(storage)?;
            let mut templates = Vec::new();
            for row in rows {
                let (id, model_id, model_version, format_version, sealed, created_at) = row.map_err(storage)?;
                let binding =
                    Binding { project_id, fullname, modality: modality.as_str(), model_id: &model_id, model_version };
                let data = self.key.open(&binding, format_version, &sealed)?;
                templates.push(StoredTemplate {
                    id,
                    modality,
                    model: TemplateModel { model_id, model_version },
                    data,
                    created_at,
                });
            }
            Ok(templates)
        })
    }

    /// How many templates of each modality the user has, without opening them (no consent needed to
    /// count: nothing biometric is read).
    pub fn template_count(
        &self,
        project_id: &str,
        fullname: &str,
        modality: Modality,
    ) -> Result<usize> {
        self.read(|connection| {
            connection
                .query_row(
                    "SELECT COUNT(*) FROM templates t JOIN users u ON u.id = t.user_id
                     WHERE u.project_id = ?1 AND u.fullname = ?2 AND t.modality = ?3",
                    params![project_id, fullname, modality.as_str()],
                    |row| row.get::<i64>(0),
                )
                .map(|count| count as usize)
                .map_err(storage)
        })
    }
}

impl Store {
    /// How many of the user's templates of a modality were made by a model other than `current`
    /// (templates waiting for re-enrollment after a model change). Nothing biometric is read, so
    /// no consent is needed.
    pub fn outdated_template_count(
        &self,
        project_id: &str,
        fullname: &str,
        modality: Modality,
        current: &TemplateModel,
    ) -> Result<usize> {
        self.read(|connection| {
            connection
                .query_row(
                    "SELECT COUNT(*) FROM templates t JOIN users u ON u.id = t.user_id
                     WHERE u.project_id = ?1 AND u.fullname = ?2 AND t.modality = ?3
                     AND NOT (t.model_id = ?4 AND t.model_version = ?5)",
                    params![
                        project_id,
                        fullname,
                        modality.as_str(),
                        current.model_id,
                        current.model_version
                    ],
                    |row| row.get::<i64>(0),
                )
                .map(|count| count as usize)
                .map_err(storage)
        })
    }
}

pub(super) fn require_consent(
    connection: &Conn<'_>,
    project_id: &str,
    fullname: &str,
    kind: ConsentKind,
) -> Result<()> {
    // Held until the transaction ends: a withdrawal waits for this write, or this write sees it.
    super::lock_user_named(connection, project_id, fullname)?;
    if read_consent(connection, project_id, fullname, kind)?.given {
        Ok(())
    } else {
        Err(Error::ConsentRequired(format!(
            "{} consent is required",
            kind.as_str()
        )))
    }
}
