//! The byte form of a template's embedding, shared by faces and voices: one format-version byte,
//! then the values as little-endian f32. Parsing refuses a wrong length, version or a non-finite
//! value, so a damaged or foreign buffer never becomes a template.

/// Version byte followed by `values` as little-endian f32.
pub(crate) fn to_bytes(version: u8, values: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + values.len() * 4);
    out.push(version);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Parses what [`to_bytes`] wrote with `version` and `N` values.
pub(crate) fn from_bytes<const N: usize>(version: u8, bytes: &[u8]) -> Option<[f32; N]> {
    let (&found, rest) = bytes.split_first()?;
    if found != version || rest.len() != N * 4 {
        return None;
    }
    let mut values = [0f32; N];
    for (v, chunk) in values.iter_mut().zip(rest.chunks_exact(4)) {
        *v = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        if !v.is_finite() {
            return None;
        }
    }
    Some(values)
}
