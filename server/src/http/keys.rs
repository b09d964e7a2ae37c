//! Keys in URLs: `/kv/{key}`, the key's bytes percent-encoded into one path segment.

use percent_encoding::percent_decode_str;

/// The key of a `/kv/{key}` path, decoded to its bytes; `None` for another path or an empty key.
pub(crate) fn key_of_path(path: &str) -> Option<Vec<u8>> {
    let encoded = path.strip_prefix("/kv/")?;
    if encoded.is_empty() || encoded.contains('/') {
        return None;
    }
    Some(percent_decode_str(encoded).collect())
}
