//! Documents end to end on the real models: `docauth/check` through the request path on generated
//! document pages (upright, turned 183 degrees, a card whose composite check digit fails), its
//! headers, and bad input. One engine per test binary (models load once).
//!
//! Runs everywhere on `tests/media/doc_*` (`scripts/make-test-media`); when
//! `../shared/data/mrz-documents` exists it also reads the real specimen documents, and says loudly
//! when it does not.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::*;
use serde_json::{json, Value};
use vouch::api::Request;
use vouch::Engine;

struct Fixture {
    _db: Db,
    engine: Engine,
    token: String,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let db = Db::new();
        let engine = db.open_with_models();
        let token = create_key(&engine, "proj-doc").token;
        Fixture {
            _db: db,
            engine,
            token,
        }
    })
}

fn check(file: &str, data: Vec<u8>, headers: &[(&str, &str)]) -> vouch::api::Response {
    let f = fixture();
    let content_type = if file.ends_with(".png") {
        "image/png"
    } else {
        "image/jpeg"
    };
    let mut request: Request = gateway("/api-gateway/docauth/check", &f.token, "dana").file_part(
        "document",
        file,
        content_type,
        data,
    );
    for (name, value) in headers {
        request = request.header(name, value);
    }
    vouch::api::handle(&f.engine, request)
}

fn td3_fields() -> Value {
    json!({
        "mrz_format": "TD3",
        "document_type": "P",
        "issuing_state": "UTO",
        "surname": "ERIKSSON",
        "given_names": "ANNA MARIA",
        "name": "ANNA MARIA ERIKSSON",
        "document_number": "L898902C3",
        "nationality": "UTO",
        "date_of_birth": "1974-08-12",
        "sex": "F",
        "expiry_date": "2012-04-15",
        "expired": true,
        "personal_number": "ZE184226B",
        "optional_data_2": "",
    })
}

#[test]
fn passport_pages_read_upright_and_turned() {
    for file in ["doc_td3.png", "doc_td3_turned.jpg"] {
        let response = check(file, media(file), &[("X-Inhouse-MRZ", "true")]);
        assert_eq!(response.status, 200, "{file}: {:?}", response.body);
        assert_eq!(response.body["message"], "document checked");
        let data = &response.body["data"];
        for (key, value) in td3_fields().as_object().unwrap() {
            assert_eq!(&data[key], value, "{file}: {key}");
        }
        assert_eq!(data["mrz_validation"]["valid"], true, "{file}");
        assert_eq!(
            data["mrz_validation"]["lines"],
            json!([
                "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
                "L898902C36UTO7408122F1204159ZE184226B<<<<<10"
            ])
        );
    }
    // Without X-Inhouse-MRZ the fields come without the validation.
    let plain = check("doc_td3.png", media("doc_td3.png"), &[]);
    assert_eq!(plain.status, 200);
    assert!(plain.body["data"].get("mrz_validation").is_none());
}

#[test]
fn the_transaction_row_keeps_no_personal_data_of_the_document() {
    let f = fixture();
    let response = check(
        "doc_td3.png",
        media("doc_td3.png"),
        &[("X-Inhouse-MRZ", "true")],
    );
    assert_eq!(response.status, 200);
    let row = transaction(&f.engine, &f.token, response.request_id());
    assert_eq!(
        row["result"]["data"],
        json!({
            "mrz_format": "TD3",
            "document_type": "P",
            "issuing_state": "UTO",
            "expired": true,
            "mrz_valid": true,
        })
    );
    assert_eq!(row["result"]["message"], response.body["message"]);
    let stored = row.to_string();
    for personal in ["ERIKSSON", "ANNA", "L898902C3", "1974-08-12", "ZE184226B"] {
        assert!(!stored.contains(personal), "{personal} in {stored}");
    }
}

/// The `data` of a docauth/check of one of the generated pages of ICAO's TD1 specimen card, after
/// checking that the card was read.
fn specimen_card(file: &str) -> Value {
    let response = check("card.png", media(file), &[("X-Inhouse-MRZ", "true")]);
    assert_eq!(response.status, 200, "{:?}", response.body);
    let data = response.body["data"].clone();
    assert_eq!(data["mrz_format"], "TD1");
    assert_eq!(data["document_number"], "D23145890");
    assert_eq!(data["surname"], "ERIKSSON");
    data
}

#[test]
fn failed_check_digits_are_reported_with_the_fields() {
    let data = specimen_card("doc_td1_bad_composite.png");
    assert_eq!(data["mrz_validation"]["valid"], false);
    let failed: Vec<&Value> = data["mrz_validation"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["valid"] == false)
        .map(|c| &c["field"])
        .collect();
    assert_eq!(failed, [&json!("composite")]);
}

/// A TD1 card photographed front and back on one page, the zone 10 px above the card's dark
/// border with a rule just above it: the border's sides used to join every line of the zone into
/// one blob, and the answer was "no zone found".
#[test]
fn a_zone_next_to_a_card_border_and_a_rule_is_found() {
    let data = specimen_card("doc_td1_two_sides.png");
    assert_eq!(data["mrz_validation"]["valid"], true, "{data}");
}

#[test]
fn no_zone_bad_input_and_external_docauth_are_clear() {
    assert_error(
        &check("m.png", media("marker.png"), &[]),
        400,
        "no machine-readable zone found in the document",
    );
    let png = media("doc_td3.png");
    let cut = check("d.png", png[..png.len() / 3].to_vec(), &[]);
    assert_eq!(cut.status, 400, "{:?}", cut.body);
    assert_error(
        &check("d.png", png.clone(), &[("X-Inhouse-Docauth", "false")]),
        501,
        "external document authentication (X-Inhouse-Docauth: false) needs a provider on the \
         network, which an on-device engine does not reach: leave the header out or send true",
    );
    assert_400_like(
        &check("d.gif", b"GIF89a".to_vec(), &[]),
        "invalid file format",
        "jpg",
    );
}

#[test]
fn real_specimen_documents() {
    let Some(dir) = shared_data("mrz-documents", "the real-document test") else {
        return;
    };
    // Three kinds: a clean TD3 scan, a photo with perspective and glare, a sideways page.
    for (file, number) in [
        ("images/passport-td3.jpg", "L898902C3"),
        ("images/100_pass-lux.jpg", "S998527"),
        ("images/0_pass-lva.jpg", "LT0000000"),
    ] {
        let bytes = std::fs::read(dir.join(file)).expect("image");
        let response = check("doc.jpg", bytes, &[("X-Inhouse-MRZ", "true")]);
        assert_eq!(response.status, 200, "{file}: {:?}", response.body);
        assert_eq!(response.body["data"]["document_number"], number, "{file}");
        assert_eq!(
            response.body["data"]["mrz_validation"]["valid"], true,
            "{file}"
        );
    }
}

/// The text recogniser loads on the first document call, and its sha256 is checked then: a
/// damaged file is refused by that call with a message that names it (the engine does not read
/// it), and a missing one fails the open.
#[cfg(unix)]
#[test]
fn a_damaged_text_recogniser_is_refused_by_the_first_document_call() {
    let models = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/models"));
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&models).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        if name != "ppocrv6_rec_small.onnx" {
            std::os::unix::fs::symlink(&path, dir.path().join(name)).unwrap();
        }
    }
    let db = Db::new();
    let mut options = db.options();
    options.models_dir = Some(dir.path().to_path_buf());
    let error = Engine::open(options.clone()).unwrap_err().to_string();
    assert!(
        error.contains("ppocrv6_rec_small.onnx") && error.contains("missing"),
        "{error}"
    );
    let mut bytes = std::fs::read(models.join("ppocrv6_rec_small.onnx")).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(dir.path().join("ppocrv6_rec_small.onnx"), bytes).unwrap();
    let engine = Engine::open(options).unwrap();
    let page = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/media/doc_td3.png"
    ))
    .unwrap();
    let error = engine.documents().check(&page).unwrap_err().to_string();
    assert!(
        error.contains("ppocrv6_rec_small.onnx") && error.contains("sha256"),
        "{error}"
    );
}
