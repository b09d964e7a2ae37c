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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_percent_decoded_bytes() {
        assert_eq!(key_of_path("/kv/abc"), Some(b"abc".to_vec()));
        assert_eq!(key_of_path("/kv/a%2Fb%00%FF"), Some(b"a/b\0\xff".to_vec()));
        assert_eq!(key_of_path("/kv/batch"), Some(b"batch".to_vec()));
        assert_eq!(key_of_path("/kv/"), None);
        assert_eq!(key_of_path("/kv/a/b"), None);
        assert_eq!(key_of_path("/other/a"), None);
    }
}
