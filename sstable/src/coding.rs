//! Varint and fixed-width integer coding with bounds-checked decoding (shared by the engine).

/// Appends `v` as a LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decodes a varint at `*pos`, advancing it; `None` if truncated or longer than 10 bytes.
pub fn get_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut result = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        result |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(result);
        }
    }
    None
}

/// Decodes a varint that must fit a `usize` length.
pub fn get_len(bytes: &[u8], pos: &mut usize) -> Option<usize> {
    usize::try_from(get_varint(bytes, pos)?).ok()
}

/// Reads a little-endian u16 at `at` (0 if out of range: callers check lengths first).
pub fn read_u16(bytes: &[u8], at: usize) -> u16 {
    bytes
        .get(at..at + 2)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
}

/// Appends a length-prefixed byte string.
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Decodes a length-prefixed byte string at `*pos`, advancing it.
pub fn get_bytes<'a>(bytes: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let len = get_len(bytes, pos)?;
    let end = pos.checked_add(len)?;
    let s = bytes.get(*pos..end)?;
    *pos = end;
    Some(s)
}

/// Reads a little-endian u32 at `at`.
pub fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// Reads a little-endian u64 at `at`.
pub fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        bytes.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trips_and_rejects_truncation() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut pos = 0;
            assert_eq!(get_varint(&out, &mut pos), Some(v));
            assert_eq!(pos, out.len());
            let mut pos = 0;
            assert_eq!(get_varint(&out[..out.len() - 1], &mut pos), None);
        }
        let mut pos = 0;
        assert_eq!(get_varint(&[0xff; 11], &mut pos), None);
    }
}
