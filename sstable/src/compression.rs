//! Block compression: the codecs a table's blocks may be stored with.
//!
//! A compressed block's stored contents are `varint uncompressed_len | codec payload`; the block
//! trailer's first byte names the codec (`0` none, `1` LZ4 block format, `2` Zstd). The trailer's
//! CRC covers the stored (compressed) bytes. A block is stored compressed only when that saves
//! at least an eighth of its size (RocksDB's rule); otherwise it is stored as is with codec `0`.

use crate::coding::{get_len, put_varint};
use crate::zstd_codec::{zstd_compress, zstd_decompress};

/// A block codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Blocks stored as they are.
    #[default]
    None,
    /// LZ4 block format (`lz4_flex`, pure Rust): fast to compress and to decompress.
    Lz4,
    /// Zstandard: smaller, slower to compress. Level 3 through libzstd (the `zstd` crate, with
    /// the `c-zstd` feature, the default), or ruzstd's fastest level (≈ zstd's 1) in pure Rust
    /// without it. Both write standard Zstd frames: a table written by either build reads in
    /// the other.
    Zstd,
}

/// Largest uncompressed block accepted when decoding (a size field above it is corruption, not
/// an allocation).
const MAX_UNCOMPRESSED: usize = 1 << 30;

impl Compression {
    /// The byte naming the codec in a block trailer.
    pub fn byte(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
            Compression::Zstd => 2,
        }
    }

    /// The codec a trailer byte names.
    pub fn from_byte(byte: u8) -> Option<Compression> {
        match byte {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            2 => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The codec's name (`none`, `lz4`, `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// The codec named `name` (`none`, `lz4`, `zstd`).
    pub fn from_name(name: &str) -> Option<Compression> {
        [Compression::None, Compression::Lz4, Compression::Zstd]
            .into_iter()
            .find(|c| c.name() == name)
    }

    /// `contents` compressed, or `None` when the codec is `None`, fails, or saves less than an
    /// eighth of the size (the block is then stored as is).
    pub fn compress(self, contents: &[u8]) -> Option<Vec<u8>> {
        let payload = match self {
            Compression::None => return None,
            Compression::Lz4 => lz4_flex::block::compress(contents),
            Compression::Zstd => zstd_compress(contents)?,
        };
        let mut stored = Vec::with_capacity(payload.len() + 5);
        put_varint(&mut stored, contents.len() as u64);
        stored.extend_from_slice(&payload);
        (stored.len() <= contents.len() - contents.len() / 8).then_some(stored)
    }

    /// The contents of a block stored with this codec; `Err(reason)` when the stored bytes do not
    /// decompress to exactly the size they announce.
    pub fn decompress(self, stored: &[u8]) -> Result<Vec<u8>, String> {
        let contents = match self {
            Compression::None => return Ok(stored.to_vec()),
            Compression::Lz4 => {
                let (size, payload) = announced(stored)?;
                lz4_flex::block::decompress(payload, size).map_err(|e| format!("lz4: {e}"))?
            }
            Compression::Zstd => {
                let (size, payload) = announced(stored)?;
                zstd_decompress(payload, size)?
            }
        };
        let (size, _) = announced(stored)?;
        if contents.len() != size {
            return Err(format!(
                "{} block decompressed to {} bytes, {size} announced",
                self.name(),
                contents.len()
            ));
        }
        Ok(contents)
    }
}

/// The uncompressed size a compressed block announces, and its codec payload.
fn announced(stored: &[u8]) -> Result<(usize, &[u8]), String> {
    let mut pos = 0;
    let size = get_len(stored, &mut pos).ok_or("compressed block without its size")?;
    if size > MAX_UNCOMPRESSED {
        return Err(format!("compressed block announces {size} bytes"));
    }
    Ok((size, &stored[pos..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..4096u32)
            .map(|i| b"abcdefgh"[(i % 8) as usize] ^ (i / 512) as u8)
            .collect()
    }

    #[test]
    fn codecs_round_trip_and_refuse_damage() {
        let data = sample();
        for codec in [Compression::Lz4, Compression::Zstd] {
            let stored = codec.compress(&data).expect("compressible");
            assert!(stored.len() < data.len() / 2, "{codec:?}");
            assert_eq!(codec.decompress(&stored).unwrap(), data);
            assert_eq!(Compression::from_byte(codec.byte()), Some(codec));
            assert_eq!(Compression::from_name(codec.name()), Some(codec));
            // Every truncation and every byte flip is an error or the announced size, never a
            // panic.
            for cut in 0..stored.len() {
                let _ = codec.decompress(&stored[..cut]);
            }
            for at in 0..stored.len() {
                let mut bad = stored.clone();
                bad[at] ^= 0x5a;
                if let Ok(out) = codec.decompress(&bad) {
                    assert_eq!(out.len(), data.len());
                }
            }
        }
    }

    #[test]
    fn incompressible_blocks_are_stored_as_they_are() {
        // splitmix64: bytes with no structure for a codec to find.
        let mut state = 7u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                (z ^ (z >> 31)) as u8
            })
            .collect();
        assert_eq!(Compression::Lz4.compress(&noise), None);
        assert_eq!(Compression::None.compress(&sample()), None);
    }
}
