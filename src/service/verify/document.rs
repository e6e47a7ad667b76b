//! Documents on the engine: the machine-readable zone of a document image, read, parsed and
//! validated, and where the document's portrait is. Work runs on the engine's own pool; no
//! document field is logged.

use serde::Serialize;

use super::templates::decode_rgb;
use crate::clock::format_timestamp;
use crate::error::{Error, Result};
use crate::service::Engine;
use vouch_bio::{MrzCheck as Check, MrzFields};

/// The fields of a document, as `docauth/check` returns them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocumentFields {
    /// MRZ layout: `TD1`, `TD2`, `TD3`, `MRV-A`, `MRV-B`.
    pub mrz_format: String,
    /// Document code (`P`, `ID`, `I`, `V`, ...).
    pub document_type: String,
    /// Issuing state or organisation (ICAO 3-letter code).
    pub issuing_state: String,
    /// Surname (primary identifier).
    pub surname: String,
    /// Given names (secondary identifier).
    pub given_names: String,
    /// Given names, then surname.
    pub name: String,
    /// Document number.
    pub document_number: String,
    /// Nationality (ICAO 3-letter code).
    pub nationality: String,
    /// `YYYY-MM-DD`, or the printed `YYMMDD` when it is not a valid date.
    pub date_of_birth: String,
    /// `M`, `F` or `<` (unspecified).
    pub sex: String,
    /// `YYYY-MM-DD`, or the printed `YYMMDD` when it is not a valid date.
    pub expiry_date: String,
    /// Whether the expiry date has passed (`null` when it is not a valid date).
    pub expired: Option<bool>,
    /// Personal number (passports) or optional data.
    pub personal_number: String,
    /// TD1's second optional-data field.
    pub optional_data_2: String,
}

/// The MRZ validation `X-Inhouse-MRZ: true` asks for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MrzValidation {
    /// Every check digit of the layout and whether it holds.
    pub checks: Vec<Check>,
    /// All of them hold.
    pub valid: bool,
    /// The zone as read (after repair of OCR confusions), one string per line.
    pub lines: Vec<String>,
}

/// Where the document's portrait is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Portrait {
    /// Box: left, top, right, bottom in image pixels.
    #[serde(rename = "box")]
    pub bbox: [f32; 4],
    /// Detector confidence, 0..1.
    pub score: f32,
}

/// What a document check found.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentCheck {
    /// The fields.
    pub fields: DocumentFields,
    /// The validation of the zone.
    pub validation: MrzValidation,
    /// The largest face on the document, if the face models found one.
    pub portrait: Option<Portrait>,
}

impl From<&MrzFields> for DocumentFields {
    fn from(f: &MrzFields) -> Self {
        DocumentFields {
            mrz_format: f.format.as_str().to_owned(),
            document_type: f.document_type.clone(),
            issuing_state: f.issuing_state.clone(),
            surname: f.surname.clone(),
            given_names: f.given_names.clone(),
            name: [f.given_names.as_str(), f.surname.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" "),
            document_number: f.document_number.clone(),
            nationality: f.nationality.clone(),
            date_of_birth: f
                .date_of_birth_iso
                .clone()
                .unwrap_or_else(|| f.date_of_birth.clone()),
            sex: f.sex.clone(),
            expiry_date: f
                .expiry_date_iso
                .clone()
                .unwrap_or_else(|| f.expiry_date.clone()),
            expired: f.expired,
            personal_number: f.personal_number.clone(),
            optional_data_2: f.optional_data_2.clone(),
        }
    }
}

/// Document checks: the machine-readable zone and the portrait of an identity document
/// ([`Engine::documents`]).
#[derive(Debug, Clone, Copy)]
pub struct Documents<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// Document checks.
    pub fn documents(&self) -> Documents<'_> {
        Documents(self)
    }
}

impl Documents<'_> {
    /// Reads the machine-readable zone of a document image (JPEG or PNG; EXIF orientation
    /// applied; the zone may be skewed, sideways or upside down). Failed check digits are reported
    /// in the validation, not as an error; no zone at all is [`Error::NoDocument`].
    pub fn check(&self, bytes: &[u8]) -> Result<DocumentCheck> {
        let engine = self.0;
        let models = engine.document_models()?;
        let image = decode_rgb(bytes)?;
        let today = format_timestamp(engine.now_ms())[..10].to_owned();
        let (read, portrait) = engine.install(|| {
            rayon::join(
                || models.read_mrz(&image, &today),
                || {
                    // `detect` gives the largest face first.
                    engine
                        .face_models()
                        .ok()
                        .and_then(|faces| faces.detect(&image).ok())
                        .and_then(|found| found.into_iter().next())
                        .map(|d| Portrait {
                            bbox: d.bbox,
                            score: d.score,
                        })
                },
            )
        });
        let read = read
            .map_err(|error| Error::Model(error.to_string()))?
            .ok_or_else(|| {
                Error::NoDocument("no machine-readable zone found in the document".to_owned())
            })?;
        Ok(DocumentCheck {
            fields: DocumentFields::from(&read.fields),
            validation: MrzValidation {
                checks: read.fields.checks.clone(),
                valid: read.fields.all_checks_valid,
                lines: read.fields.lines.clone(),
            },
            portrait,
        })
    }
}
