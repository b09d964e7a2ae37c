//! Keys and values in and out: UTF-8 text, or hex with `--hex`.

use crate::Failure;

/// The bytes an argument names: its UTF-8 bytes, or with `hex` the bytes its hex digits spell.
pub(crate) fn parse(arg: &str, hex: bool, what: &str) -> Result<Vec<u8>, Failure> {
    if !hex {
        return Ok(arg.as_bytes().to_vec());
    }
    let digits = arg.strip_prefix("0x").unwrap_or(arg);
    if !digits.len().is_multiple_of(2) {
        return Err(Failure(format!(
            "{what} {arg:?} is not hex: an odd number of digits"
        )));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| Failure(format!("{what} {arg:?} is not hex")))
        })
        .collect()
}

/// How bytes are printed: hex with `hex`, else as text (bytes that are not printable UTF-8
/// escaped as `\xNN`).
pub(crate) fn show(bytes: &[u8], hex: bool) -> String {
    if hex {
        return to_hex(bytes);
    }
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(char::is_control) => s.to_string(),
        _ => bytes.escape_ascii().to_string(),
    }
}

/// Lower-case hex digits of `bytes`.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An internal key as `key@sequence kind`.
pub(crate) fn key_info(k: &siftdb::inspect::KeyInfo, hex: bool) -> String {
    format!(
        "{}@{} {}",
        show(&k.user_key, hex),
        k.sequence,
        k.kind.name()
    )
}
