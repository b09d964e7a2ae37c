//! Moving a backup's bytes: copies that checksum what they copy, checksums of files in place,
//! and the names of shared files.

use std::io::{Read, Write};
use std::path::Path;

use crate::base::error::{Corruption, Error, Result};
use crate::base::fs::FileSystem;

/// Bytes read per step of a copy or checksum.
const CHUNK: usize = 1 << 20;

/// A file's length and CRC-32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sum {
    pub size: u64,
    pub crc: u32,
}

/// The length and CRC-32 of the file at `path`, read once from start to end.
pub(crate) fn sum_of(fs: &dyn FileSystem, path: &Path) -> Result<Sum> {
    pump(&mut *fs.open_sequential(path)?, &mut std::io::sink())
}

/// Copies `from` (read through `from_fs`) to `to` (created or truncated through `to_fs`),
/// synced; returns the sum of what it copied. With `expected`, a copy whose sum differs is a
/// `Corruption` naming `from`, and `to` is removed.
pub(crate) fn copy_summed(
    (from_fs, from): (&dyn FileSystem, &Path),
    (to_fs, to): (&dyn FileSystem, &Path),
    expected: Option<Sum>,
) -> Result<Sum> {
    let mut input = from_fs.open_sequential(from)?;
    let mut output = to_fs.create(to)?;
    let sum = pump(&mut *input, &mut output)?;
    output.sync()?;
    match expected {
        Some(e) if e != sum => {
            drop(output);
            let _ = to_fs.remove(to);
            Err(mismatch(from, e, sum))
        }
        _ => Ok(sum),
    }
}

/// Streams `input` to its end into `output`, summing what passes.
fn pump(input: &mut dyn Read, output: &mut dyn Write) -> Result<Sum> {
    let mut hasher = crc32fast::Hasher::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = read_some(input, &mut buf)?;
        if n == 0 {
            return Ok(Sum {
                size,
                crc: hasher.finalize(),
            });
        }
        hasher.update(&buf[..n]);
        output.write_all(&buf[..n])?;
        size += n as u64;
    }
}

/// The `Corruption` for a file whose sum is not the one recorded.
pub(crate) fn mismatch(path: &Path, expected: Sum, found: Sum) -> Error {
    let reason = if expected.size != found.size {
        format!(
            "the backup recorded {} bytes, the file has {}",
            expected.size, found.size
        )
    } else {
        format!(
            "checksum {:08x} does not match the backup's {:08x}",
            found.crc, expected.crc
        )
    };
    Error::Corruption(Corruption::in_file(path.display().to_string(), reason))
}

/// Fills as much of `buf` as the input gives in one go (retrying interrupted reads).
fn read_some(input: &mut dyn Read, buf: &mut [u8]) -> Result<usize> {
    loop {
        match input.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::Io(e)),
        }
    }
}

/// The name a shared file is stored under: its database name with its sum in it
/// (`000012.sst` → `000012_1a2b3c4d_4096.sst`, RocksDB's `share_files_with_checksum`), so two
/// databases' (or one restored database's) different files of one number never collide.
pub(crate) fn shared_name(name: &str, sum: Sum) -> String {
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    format!("{stem}_{:08x}_{}.{ext}", sum.crc, sum.size)
}

/// The database name and sum in a shared file's name (`None` for anything else: a temporary
/// file, a foreign one).
pub(crate) fn parse_shared_name(stored: &str) -> Option<(String, Sum)> {
    let (rest, ext) = stored.rsplit_once('.')?;
    let mut parts = rest.rsplitn(3, '_');
    let size = parts.next()?.parse().ok()?;
    let crc = u32::from_str_radix(parts.next()?, 16).ok()?;
    let stem = parts.next()?;
    (ext == "sst" || ext == "blob").then(|| (format!("{stem}.{ext}"), Sum { size, crc }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_names_round_trip() {
        let sum = Sum {
            size: 4096,
            crc: 0x1a2b_3c4d,
        };
        let stored = shared_name("000012.sst", sum);
        assert_eq!(stored, "000012_1a2b3c4d_4096.sst");
        assert_eq!(
            parse_shared_name(&stored),
            Some(("000012.sst".to_string(), sum))
        );
        assert_eq!(parse_shared_name("000012.sst.tmp"), None);
        assert_eq!(parse_shared_name("000012.sst"), None);
    }
}
