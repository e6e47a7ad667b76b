//! Machine-readable zones (ICAO 9303 Parts 3-7): the five layouts (TD1, TD2, TD3, MRV-A, MRV-B),
//! their fields, every check digit and the composite digit, and the repair of OCR confusions
//! (O/0, I/1, B/8, S/5, Z/2, G/6) from what each position may hold and from the check digits.
//!
//! [`parse`] takes the zone's lines as recognised and never fails on a wrong check digit: the
//! fields come back with each check's validity, as a document check must report them.

use serde::Serialize;

/// The MRZ alphabet: filler, digits, capital letters.
pub const ALPHABET: &str = "<0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// An MRZ layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// ID card size 1: three lines of 30.
    Td1,
    /// ID card size 2: two lines of 36.
    Td2,
    /// Passport: two lines of 44.
    Td3,
    /// Visa type A: two lines of 44.
    MrvA,
    /// Visa type B: two lines of 36.
    MrvB,
}

impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl Format {
    /// ICAO's name: `TD1`, `TD2`, `TD3`, `MRV-A`, `MRV-B`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Td1 => "TD1",
            Format::Td2 => "TD2",
            Format::Td3 => "TD3",
            Format::MrvA => "MRV-A",
            Format::MrvB => "MRV-B",
        }
    }

    /// The layout of `lines` (by line count and length; a `V` document type makes it a visa).
    pub fn of(lines: &[&str]) -> Option<Format> {
        let visa = lines.first().is_some_and(|l| l.starts_with('V'));
        match (lines.len(), lines.first().map(|l| l.len())) {
            (3, Some(30)) if lines.iter().all(|l| l.len() == 30) => Some(Format::Td1),
            (2, Some(36)) if lines[1].len() == 36 => {
                Some(if visa { Format::MrvB } else { Format::Td2 })
            }
            (2, Some(44)) if lines[1].len() == 44 => {
                Some(if visa { Format::MrvA } else { Format::Td3 })
            }
            _ => None,
        }
    }

    /// Characters per line.
    pub fn line_length(self) -> usize {
        match self {
            Format::Td1 => 30,
            Format::Td2 | Format::MrvB => 36,
            Format::Td3 | Format::MrvA => 44,
        }
    }

    /// Lines in the zone.
    pub fn line_count(self) -> usize {
        if self == Format::Td1 {
            3
        } else {
            2
        }
    }
}

/// The value of an MRZ character in a check-digit sum (`<` 0, digits, A-Z 10-35); `None` outside
/// the alphabet.
pub fn char_value(c: u8) -> Option<u32> {
    match c {
        b'<' => Some(0),
        b'0'..=b'9' => Some(u32::from(c - b'0')),
        b'A'..=b'Z' => Some(u32::from(c - b'A') + 10),
        _ => None,
    }
}

/// The ICAO 9303 Part 3 check digit of `data` (weights 7, 3, 1 repeating, sum mod 10); `None` if
/// a character is outside the alphabet.
pub fn check_digit(data: &[u8]) -> Option<u8> {
    let mut sum = 0u32;
    for (i, &c) in data.iter().enumerate() {
        sum += char_value(c)? * [7, 3, 1][i % 3];
    }
    Some(b'0' + (sum % 10) as u8)
}

/// Whether `digit` is the check digit of `data`. A `<` digit is accepted for an all-filler field
/// (ICAO allows it for empty optional data).
fn check_ok(data: &[u8], digit: u8) -> bool {
    if digit == b'<' {
        return data.iter().all(|&c| c == b'<');
    }
    check_digit(data) == Some(digit)
}

/// One check digit and whether it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What it protects: `document_number`, `date_of_birth`, `expiry_date`, `personal_number`,
    /// `optional_data` or `composite`.
    pub field: &'static str,
    /// Whether the printed digit matches the data.
    pub valid: bool,
}

/// What a machine-readable zone says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MrzFields {
    /// Layout.
    pub format: Format,
    /// Document code (`P`, `ID`, `I`, `V`, ...; fillers removed).
    pub document_type: String,
    /// Issuing state or organisation (ICAO 3-letter code, e.g. `UTO`; `D` for Germany).
    pub issuing_state: String,
    /// Primary identifier (surname), fillers turned into spaces.
    pub surname: String,
    /// Secondary identifier (given names), fillers turned into spaces.
    pub given_names: String,
    /// Document number, fillers removed (long TD1 numbers joined from the optional data).
    pub document_number: String,
    /// Nationality (ICAO 3-letter code).
    pub nationality: String,
    /// Date of birth as printed, `YYMMDD` (`<` where unknown).
    pub date_of_birth: String,
    /// Date of birth as `YYYY-MM-DD`, when it is a valid date (the century that does not put it
    /// after `today`).
    pub date_of_birth_iso: Option<String>,
    /// `M`, `F` or `<` (unspecified); `X` is read as unspecified too.
    pub sex: String,
    /// Expiry date as printed, `YYMMDD`.
    pub expiry_date: String,
    /// Expiry date as `YYYY-MM-DD` (20YY), when it is a valid date.
    pub expiry_date_iso: Option<String>,
    /// Whether the expiry date is before `today`; `None` without a valid expiry date.
    pub expired: Option<bool>,
    /// Personal number (TD3) or optional data (other layouts), fillers removed.
    pub personal_number: String,
    /// TD1's second optional-data field, fillers removed.
    pub optional_data_2: String,
    /// Every check digit of the layout and whether it holds.
    pub checks: Vec<Check>,
    /// All of them hold.
    pub all_checks_valid: bool,
    /// The zone as read after repair, one string per line.
    pub lines: Vec<String>,
}

/// Why lines are not a machine-readable zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MrzError {
    /// Not 3 x 30, 2 x 36 or 2 x 44 characters.
    Layout(String),
}

impl std::fmt::Display for MrzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MrzError::Layout(detail) => write!(f, "not a machine-readable zone: {detail}"),
        }
    }
}

impl std::error::Error for MrzError {}

/// What a position may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Digits (dates, check digits); `<` allowed.
    Numeric,
    /// Letters (names, states, sex); `<` allowed.
    Alpha,
    /// Anything (document numbers, optional data).
    Any,
}

/// The character a confusable one stands for where only digits are allowed (lines are upper case
/// by then: [`normalize_line`]).
fn as_digit(c: u8) -> u8 {
    match c {
        b'O' | b'D' | b'Q' | b'U' => b'0',
        b'I' | b'L' | b'T' | b'J' => b'1',
        b'Z' => b'2',
        b'A' => b'4',
        b'S' => b'5',
        b'G' => b'6',
        b'B' => b'8',
        _ => c,
    }
}

/// The character a confusable one stands for where only letters are allowed.
fn as_letter(c: u8) -> u8 {
    match c {
        b'0' => b'O',
        b'1' => b'I',
        b'2' => b'Z',
        b'4' => b'A',
        b'5' => b'S',
        b'6' => b'G',
        b'8' => b'B',
        _ => c,
    }
}

/// The other reading of a character OCR often confuses, if any.
fn swap(c: u8) -> Option<u8> {
    match c {
        b'0' => Some(b'O'),
        b'O' => Some(b'0'),
        b'1' => Some(b'I'),
        b'I' => Some(b'1'),
        b'8' => Some(b'B'),
        b'B' => Some(b'8'),
        b'5' => Some(b'S'),
        b'S' => Some(b'5'),
        b'2' => Some(b'Z'),
        b'Z' => Some(b'2'),
        b'6' => Some(b'G'),
        b'G' => Some(b'6'),
        _ => None,
    }
}

/// A field with a check digit: `line`, `range` of the data, `digit` position.
struct Checked {
    field: &'static str,
    line: usize,
    data: std::ops::Range<usize>,
    digit: usize,
}

/// The layout's positions: kinds per line, and its checked fields.
fn kinds(format: Format) -> Vec<Vec<Kind>> {
    use Kind::*;
    let fill = |kind, n| vec![kind; n];
    let mut lines = Vec::new();
    match format {
        Format::Td1 => {
            let mut l1 = fill(Alpha, 5);
            l1.extend(fill(Any, 9));
            l1.push(Numeric);
            l1.extend(fill(Any, 15));
            let mut l2 = fill(Numeric, 7);
            l2.push(Alpha);
            l2.extend(fill(Numeric, 7));
            l2.extend(fill(Alpha, 3));
            l2.extend(fill(Any, 11));
            l2.push(Numeric);
            lines.extend([l1, l2, fill(Alpha, 30)]);
        }
        _ => {
            let n = format.line_length();
            let l1 = fill(Alpha, n);
            let mut l2 = fill(Any, 9);
            l2.push(Numeric);
            l2.extend(fill(Alpha, 3));
            l2.extend(fill(Numeric, 7));
            l2.push(Alpha);
            l2.extend(fill(Numeric, 7));
            let rest = n - l2.len();
            match format {
                Format::Td3 => {
                    l2.extend(fill(Any, rest - 2));
                    l2.extend([Numeric, Numeric]);
                }
                Format::Td2 => {
                    l2.extend(fill(Any, rest - 1));
                    l2.push(Numeric);
                }
                _ => l2.extend(fill(Any, rest)),
            }
            lines.extend([l1, l2]);
        }
    }
    lines
}

fn checked_fields(format: Format) -> Vec<Checked> {
    let c = |field, line, data: std::ops::Range<usize>, digit| Checked {
        field,
        line,
        data,
        digit,
    };
    match format {
        Format::Td1 => vec![
            c("document_number", 0, 5..14, 14),
            c("date_of_birth", 1, 0..6, 6),
            c("expiry_date", 1, 8..14, 14),
        ],
        Format::Td3 => vec![
            c("document_number", 1, 0..9, 9),
            c("date_of_birth", 1, 13..19, 19),
            c("expiry_date", 1, 21..27, 27),
            c("personal_number", 1, 28..42, 42),
        ],
        _ => vec![
            c("document_number", 1, 0..9, 9),
            c("date_of_birth", 1, 13..19, 19),
            c("expiry_date", 1, 21..27, 27),
        ],
    }
}

/// Where the composite check's data is (line, range) and where its digit is (line, position).
type Composite = (Vec<(usize, std::ops::Range<usize>)>, (usize, usize));

/// The layout's composite check, if it has one.
fn composite(format: Format) -> Option<Composite> {
    match format {
        Format::Td1 => Some((
            vec![(0, 5..30), (1, 0..7), (1, 8..15), (1, 18..29)],
            (1, 29),
        )),
        Format::Td2 => Some((vec![(1, 0..10), (1, 13..20), (1, 21..35)], (1, 35))),
        Format::Td3 => Some((vec![(1, 0..10), (1, 13..20), (1, 21..43)], (1, 43))),
        Format::MrvA | Format::MrvB => None,
    }
}

fn composite_ok(format: Format, lines: &[Vec<u8>]) -> Option<bool> {
    let (ranges, (line, at)) = composite(format)?;
    let data: Vec<u8> = ranges
        .iter()
        .flat_map(|(l, r)| lines[*l][r.clone()].iter().copied())
        .collect();
    Some(check_ok(&data, lines[line][at]))
}

/// Normalises a recognised line: upper case, spaces dropped, look-alikes of `<` mapped to it.
pub fn normalize_line(line: &str) -> String {
    line.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| match c {
            '«' | '‹' | '(' | '[' | '{' => '<',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}

/// Parses the lines of a zone (as recognised; see [`normalize_line`]) on the date `today`
/// (`YYYY-MM-DD`, for the birth century and `expired`). Positions are repaired to what they may
/// hold (a digit where a date is, a letter in a name), then ambiguous characters of checked
/// alphanumeric fields (document number, optional data) are tried both ways, keeping the reading
/// whose check digits hold with the fewest changes.
pub fn parse(lines: &[&str], today: &str) -> Result<MrzFields, MrzError> {
    let normalized: Vec<String> = lines.iter().map(|l| normalize_line(l)).collect();
    let refs: Vec<&str> = normalized.iter().map(String::as_str).collect();
    let format = Format::of(&refs).ok_or_else(|| {
        MrzError::Layout(format!(
            "{} lines of {:?} characters",
            refs.len(),
            refs.iter().map(|l| l.len()).collect::<Vec<_>>()
        ))
    })?;
    let mut bytes: Vec<Vec<u8>> = normalized.iter().map(|l| l.as_bytes().to_vec()).collect();
    // 1. Per-position repair.
    for (line, kinds) in bytes.iter_mut().zip(kinds(format)) {
        for (c, kind) in line.iter_mut().zip(kinds) {
            *c = match kind {
                Kind::Numeric => as_digit(*c),
                Kind::Alpha => as_letter(*c),
                Kind::Any => *c,
            };
            if char_value(*c).is_none() {
                *c = b'<';
            }
        }
    }
    // 2. Checked fields that fail: try the other readings of their confusable characters.
    let checked = checked_fields(format);
    let long_td1_number = format == Format::Td1 && bytes[0][14] == b'<';
    for field in &checked {
        let line = &bytes[field.line];
        // Dates hold only digits after step 1: a failed date check is reported, not "repaired".
        if check_ok(&line[field.data.clone()], line[field.digit])
            || (long_td1_number && field.field == "document_number")
            || matches!(field.field, "date_of_birth" | "expiry_date")
        {
            continue;
        }
        if let Some(fixed) = repair(&line[field.data.clone()], line[field.digit]) {
            bytes[field.line][field.data.clone()].copy_from_slice(&fixed);
        }
    }
    // TD1's optional data is under the composite check only.
    if format == Format::Td1 && composite_ok(format, &bytes) == Some(false) {
        let original = bytes.clone();
        let positions: Vec<(usize, usize)> = (15..30)
            .map(|i| (0, i))
            .chain((18..29).map(|i| (1, i)))
            .filter(|&(l, i)| swap(original[l][i]).is_some())
            .collect();
        if positions.len() <= 10 {
            'search: for changes in 1..=positions.len().min(3) {
                for combination in combinations(positions.len(), changes) {
                    let mut trial = original.clone();
                    for &k in &combination {
                        let (l, i) = positions[k];
                        trial[l][i] = swap(trial[l][i]).unwrap_or(trial[l][i]);
                    }
                    if composite_ok(format, &trial) == Some(true) {
                        bytes = trial;
                        break 'search;
                    }
                }
            }
        }
    }
    Ok(fields(format, bytes, &checked, today))
}

/// The smallest set of swaps (up to 3 of at most 12 candidates) that makes `data`'s check digit
/// hold; `None` when there is none, or when two different repairs are equally small.
fn repair(data: &[u8], digit: u8) -> Option<Vec<u8>> {
    let positions: Vec<usize> = (0..data.len())
        .filter(|&i| swap(data[i]).is_some())
        .collect();
    if positions.is_empty() || positions.len() > 12 {
        return None;
    }
    for changes in 1..=positions.len().min(3) {
        let mut found: Option<Vec<u8>> = None;
        for combination in combinations(positions.len(), changes) {
            let mut trial = data.to_vec();
            for &k in &combination {
                trial[positions[k]] = swap(trial[positions[k]]).unwrap_or(trial[positions[k]]);
            }
            if check_ok(&trial, digit) {
                if found.is_some() {
                    // Two different repairs with as few changes: do not guess.
                    return None;
                }
                found = Some(trial);
            }
        }
        if found.is_some() {
            return found;
        }
    }
    None
}

/// All `k`-element subsets of `0..n`, in lexicographic order.
fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current = Vec::with_capacity(k);
    fn walk(start: usize, n: usize, k: usize, current: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if current.len() == k {
            out.push(current.clone());
            return;
        }
        for i in start..n {
            current.push(i);
            walk(i + 1, n, k, current, out);
            current.pop();
        }
    }
    walk(0, n, k, &mut current, &mut out);
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Fillers removed from both ends, inner fillers as spaces.
fn clean(bytes: &[u8]) -> String {
    text(bytes)
        .trim_matches('<')
        .split('<')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn iso_date(yymmdd: &str, birth: bool, today: &str) -> Option<String> {
    let digits: Vec<u32> = yymmdd
        .chars()
        .map(|c| c.to_digit(10))
        .collect::<Option<_>>()?;
    if digits.len() != 6 {
        return None;
    }
    let (yy, mm, dd) = (
        digits[0] * 10 + digits[1],
        digits[2] * 10 + digits[3],
        digits[4] * 10 + digits[5],
    );
    let days = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=12).contains(&mm) || dd == 0 || dd > days[mm as usize - 1] {
        return None;
    }
    // Births: the most recent century that does not put the date after today. Expiry: 20xx
    // (documents are valid for at most ten years).
    let date = format!("{:04}-{mm:02}-{dd:02}", 2000 + yy);
    if birth && date.as_str() > today {
        return Some(format!("{:04}-{mm:02}-{dd:02}", 1900 + yy));
    }
    Some(date)
}

fn fields(format: Format, lines: Vec<Vec<u8>>, checked: &[Checked], today: &str) -> MrzFields {
    let mut checks: Vec<Check> = checked
        .iter()
        .map(|f| Check {
            field: f.field,
            valid: check_ok(&lines[f.line][f.data.clone()], lines[f.line][f.digit]),
        })
        .collect();
    if let Some(valid) = composite_ok(format, &lines) {
        checks.push(Check {
            field: "composite",
            valid,
        });
    }
    let (type_state, names_line, names_range) = match format {
        Format::Td1 => (&lines[0], 2, 0..30),
        _ => (&lines[0], 0, 5..format.line_length()),
    };
    let names = text(&lines[names_line][names_range]);
    let (surname, given) = names.split_once("<<").unwrap_or((names.as_str(), ""));
    let (mut document_number, personal_number, optional_2, dob, sex, expiry, nationality) =
        match format {
            Format::Td1 => (
                text(&lines[0][5..14]),
                text(&lines[0][15..30]),
                text(&lines[1][18..29]),
                text(&lines[1][0..6]),
                lines[1][7],
                text(&lines[1][8..14]),
                text(&lines[1][15..18]),
            ),
            _ => {
                let end = match format {
                    Format::Td3 => 42,
                    Format::Td2 => 35,
                    _ => format.line_length(),
                };
                (
                    text(&lines[1][0..9]),
                    text(&lines[1][28..end]),
                    String::new(),
                    text(&lines[1][13..19]),
                    lines[1][20],
                    text(&lines[1][21..27]),
                    text(&lines[1][10..13]),
                )
            }
        };
    let mut personal_number = personal_number;
    // A TD1 document number longer than nine characters: a filler where its check digit would be,
    // and the rest of the number, then its check digit, at the start of the optional data.
    if format == Format::Td1 && lines[0][14] == b'<' {
        let optional = &lines[0][15..30];
        let end = optional
            .iter()
            .position(|&c| c == b'<')
            .unwrap_or(optional.len());
        if end >= 1 {
            let mut full = lines[0][5..14].to_vec();
            full.extend_from_slice(&optional[..end - 1]);
            let valid = check_ok(&full, optional[end - 1]);
            if let Some(check) = checks.iter_mut().find(|c| c.field == "document_number") {
                check.valid = valid;
            }
            document_number = text(&full);
            personal_number = text(&optional[end..]);
        }
    }
    let all_checks_valid = checks.iter().all(|c| c.valid);
    let expiry_date_iso = iso_date(&expiry, false, today);
    MrzFields {
        format,
        document_type: clean(&type_state[0..2]),
        issuing_state: clean(&type_state[2..5]),
        surname: clean(surname.as_bytes()),
        given_names: clean(given.as_bytes()),
        document_number: document_number.replace('<', ""),
        nationality: clean(nationality.as_bytes()),
        date_of_birth_iso: iso_date(&dob, true, today),
        date_of_birth: dob,
        sex: match sex {
            b'M' => "M",
            b'F' => "F",
            _ => "<",
        }
        .to_owned(),
        expired: expiry_date_iso.as_deref().map(|expiry| expiry < today),
        expiry_date_iso,
        expiry_date: expiry,
        personal_number: clean(personal_number.as_bytes()),
        optional_data_2: clean(optional_2.as_bytes()),
        checks,
        all_checks_valid,
        lines: lines.iter().map(|l| text(l)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TODAY: &str = "2026-11-21";

    #[test]
    fn check_digits_follow_icao_part_3() {
        // ICAO 9303 Part 3 worked examples.
        assert_eq!(check_digit(b"520727"), Some(b'3'));
        assert_eq!(check_digit(b"L898902C3"), Some(b'6'));
        assert_eq!(check_digit(b"AB2134<<<"), Some(b'5'));
        assert_eq!(check_digit(b"a"), None);
    }

    #[test]
    fn td3_specimen() {
        let f = parse(
            &[
                "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
                "L898902C36UTO7408122F1204159ZE184226B<<<<<10",
            ],
            TODAY,
        )
        .unwrap();
        assert_eq!(f.format, Format::Td3);
        assert_eq!(
            (f.document_type.as_str(), f.issuing_state.as_str()),
            ("P", "UTO")
        );
        assert_eq!(
            (f.surname.as_str(), f.given_names.as_str()),
            ("ERIKSSON", "ANNA MARIA")
        );
        assert_eq!(f.document_number, "L898902C3");
        assert_eq!(f.nationality, "UTO");
        assert_eq!(f.date_of_birth_iso.as_deref(), Some("1974-08-12"));
        assert_eq!(f.sex, "F");
        assert_eq!(f.expiry_date_iso.as_deref(), Some("2012-04-15"));
        assert_eq!(f.personal_number, "ZE184226B");
        assert!(f.all_checks_valid, "{:?}", f.checks);
        assert_eq!(f.checks.len(), 5);
        assert_eq!(f.expired, Some(true));
        let young = parse(
            &[
                "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
                "L898902C36UTO2001012F3204153ZE184226B<<<<<10",
            ],
            TODAY,
        )
        .unwrap();
        assert_eq!(young.date_of_birth_iso.as_deref(), Some("2020-01-01"));
        assert_eq!(young.expired, Some(false));
    }

    #[test]
    fn td1_td2_and_visas() {
        let td1 = parse(
            &[
                "I<UTOD231458907<<<<<<<<<<<<<<<",
                "7408122F1204159UTO<<<<<<<<<<<6",
                "ERIKSSON<<ANNA<MARIA<<<<<<<<<<",
            ],
            TODAY,
        )
        .unwrap();
        assert_eq!(td1.format, Format::Td1);
        assert_eq!(td1.document_number, "D23145890");
        assert_eq!(td1.surname, "ERIKSSON");
        assert!(td1.all_checks_valid, "{:?}", td1.checks);
        let td2 = parse(
            &[
                "I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<",
                "D231458907UTO7408122F1204159<<<<<<<6",
            ],
            TODAY,
        )
        .unwrap();
        assert_eq!(td2.format, Format::Td2);
        assert!(td2.all_checks_valid, "{:?}", td2.checks);
        let mrv_a = parse(
            &[
                "V<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
                "L8988901C4XXX4009078F96121096ZE184226B<<<<<<",
            ],
            TODAY,
        )
        .unwrap();
        assert_eq!(mrv_a.format, Format::MrvA);
        assert!(mrv_a.all_checks_valid, "{:?}", mrv_a.checks);
        assert!(mrv_a.checks.iter().all(|c| c.field != "composite"));
        let mrv_b = parse(
            &[
                "V<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<",
                "L8988901C4XXX4009078F9612109<<<<<<<<",
            ],
            TODAY,
        )
        .unwrap();
        assert_eq!(mrv_b.format, Format::MrvB);
        assert!(mrv_b.all_checks_valid, "{:?}", mrv_b.checks);
    }

    #[test]
    fn ocr_confusions_are_settled_by_position_and_check_digits() {
        // Dates with O and I, a name with 0, and a document number whose 0/O is wrong.
        let f = parse(
            &[
                "P<UT0ERIKSS0N<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<",
                "L898902C36UTO74O8I22F12O4159ZE184226B<<<<<1O",
            ],
            TODAY,
        )
        .unwrap();
        assert!(f.all_checks_valid, "{:?}", f.checks);
        assert_eq!(f.surname, "ERIKSSON");
        assert_eq!(f.issuing_state, "UTO");
        assert_eq!(f.date_of_birth, "740812");
        let f = parse(
            &[
                "P<CZESPECIMEN<<VZOR<<<<<<<<<<<<<<<<<<<<<<<<<",
                "99OO3853<1CZE1101018M1207046110101111<<<<<94",
            ],
            TODAY,
        )
        .unwrap();
        assert_eq!(f.document_number, "99003853");
        assert!(f.all_checks_valid, "{:?}", f.checks);
    }

    #[test]
    fn failed_check_digits_are_reported_not_refused() {
        let f = parse(
            &[
                "IDCMW<512849702<<<<<<<<<<<<<<<",
                "6104128M1402209CMW<<<<<<<<<<<1",
                "PUBLIC<<JON<<<<<<<<<<<<<<<<<<<",
            ],
            TODAY,
        )
        .unwrap();
        assert!(!f.all_checks_valid);
        let failed: Vec<&str> = f
            .checks
            .iter()
            .filter(|c| !c.valid)
            .map(|c| c.field)
            .collect();
        assert_eq!(failed, ["composite"]);
        assert_eq!(f.surname, "PUBLIC");
        assert!(parse(&["P<UTO", "123"], TODAY).is_err());
    }

    #[test]
    fn long_td1_document_numbers_join_the_optional_data() {
        // ICAO 9303 Part 5: a 12-character number, its last 3 characters and check digit in the
        // optional data after a filler at position 15.
        let number = b"D23145890123";
        let digit = check_digit(number).unwrap() as char;
        let line1 = format!("I<UTOD23145890<123{digit}<<<<<<<<<<<");
        let mut line2 = "7408122F1204159UTO<<<<<<<<<<<".to_owned();
        let composite_data = format!(
            "{}{}{}{}",
            &line1[5..30],
            &line2[0..7],
            &line2[8..15],
            &line2[18..29]
        );
        line2.push(check_digit(composite_data.as_bytes()).unwrap() as char);
        let f = parse(&[&line1, &line2, "ERIKSSON<<ANNA<MARIA<<<<<<<<<<"], TODAY).unwrap();
        assert_eq!(f.document_number, "D23145890123");
        assert!(f.all_checks_valid, "{:?}", f.checks);
    }
}
