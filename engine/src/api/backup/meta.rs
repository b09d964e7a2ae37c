//! A backup's metadata file (`meta/<id>`): what the backup holds, one line per file, checksummed
//! as a whole. Writing it (to `meta/<id>.tmp`, synced, renamed) is the moment a backup exists;
//! removing it, the moment it stops existing. The format is in `docs/FORMAT.md` ("Backups").
//!
//! ```text
//! siftdb-backup 1
//! id 3
//! timestamp 1733400000
//! sequence 120034
//! app_metadata 6e696768746c79
//! file shared/000012_1a2b3c4d_4096.sst 000012.sst 4096 1a2b3c4d
//! file private/000003_MANIFEST-000020 MANIFEST-000020 1234 0badf00d
//! checksum 5e1f00ab
//! ```

use crate::base::error::{Corruption, Error, Result};

const HEADER: &str = "siftdb-backup 1";

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BackupFile {
    /// Where it is stored, relative to the backup directory (`shared/...` or `private/...`).
    pub stored: String,
    /// Its name in a restored database.
    pub name: String,
    /// Its length in bytes.
    pub size: u64,
    /// CRC-32 of its bytes.
    pub crc: u32,
}

/// What one backup holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BackupMeta {
    pub id: u32,
    /// Seconds since the Unix epoch when the backup was made.
    pub timestamp: u64,
    /// The database's sequence number at the backup's point.
    pub sequence: u64,
    /// What the application attached to the backup.
    pub app_metadata: String,
    pub files: Vec<BackupFile>,
}

impl BackupMeta {
    /// The metadata file's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        use std::fmt::Write as _;
        let mut text = String::new();
        let _ = writeln!(text, "{HEADER}");
        let _ = writeln!(text, "id {}", self.id);
        let _ = writeln!(text, "timestamp {}", self.timestamp);
        let _ = writeln!(text, "sequence {}", self.sequence);
        let _ = writeln!(text, "app_metadata {}", hex(self.app_metadata.as_bytes()));
        for f in &self.files {
            let _ = writeln!(
                text,
                "file {} {} {} {:08x}",
                f.stored, f.name, f.size, f.crc
            );
        }
        let crc = crc32fast::hash(text.as_bytes());
        let _ = writeln!(text, "checksum {crc:08x}");
        text.into_bytes()
    }

    /// Parses a metadata file (`what` names it in errors): a `Corruption` for anything but the
    /// format [`BackupMeta::encode`] writes, checksum included.
    pub(crate) fn decode(bytes: &[u8], what: &str) -> Result<BackupMeta> {
        let bad = |reason: &str| Error::Corruption(Corruption::in_file(what, reason));
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8 text"))?;
        let text = text.strip_suffix('\n').ok_or_else(|| bad("cut short"))?;
        let body_end = text
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or_else(|| bad("too short"))?;
        let (body, last) = text.split_at(body_end);
        let stored_crc = last
            .strip_prefix("checksum ")
            .ok_or_else(|| bad("no checksum line"))?;
        // Exactly as written (lower-case, eight digits): any other spelling is damage.
        if format!("{:08x}", crc32fast::hash(body.as_bytes())) != stored_crc {
            return Err(bad("checksum mismatch"));
        }
        parse_body(body).map_err(|reason| bad(&reason))
    }
}

/// The lines of a metadata file before its checksum (already verified).
fn parse_body(body: &str) -> std::result::Result<BackupMeta, String> {
    let mut lines = body.lines();
    if lines.next() != Some(HEADER) {
        return Err(format!("does not start with {HEADER:?}"));
    }
    let mut field = |name: &str| -> std::result::Result<String, String> {
        lines
            .next()
            .and_then(|l| l.strip_prefix(name))
            .and_then(|l| l.strip_prefix(' '))
            .map(str::to_string)
            .ok_or_else(|| format!("no {name} line"))
    };
    let number = |s: String, name: &str| s.parse::<u64>().map_err(|_| format!("bad {name}"));
    let id = u32::try_from(number(field("id")?, "id")?).map_err(|_| "bad id".to_string())?;
    let timestamp = number(field("timestamp")?, "timestamp")?;
    let sequence = number(field("sequence")?, "sequence")?;
    let app_metadata = unhex(&field("app_metadata")?)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or("bad app_metadata")?;
    let files = lines
        .map(parse_file)
        .collect::<std::result::Result<_, _>>()?;
    Ok(BackupMeta {
        id,
        timestamp,
        sequence,
        app_metadata,
        files,
    })
}

/// One `file <stored> <name> <size> <crc>` line. Stored paths stay inside the backup
/// directory and names are plain file names: a damaged (or hostile) metadata file cannot make
/// a restore read or write elsewhere.
fn parse_file(line: &str) -> std::result::Result<BackupFile, String> {
    let bad = || format!("bad file line {line:?}");
    let mut parts = line.strip_prefix("file ").ok_or_else(bad)?.split(' ');
    let (Some(stored), Some(name), Some(size), Some(crc), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(bad());
    };
    let inside = |p: &str| {
        let mut segments = p.split('/');
        matches!(segments.next(), Some("shared" | "private"))
            && segments.next().is_some_and(plain_name)
            && segments.next().is_none()
    };
    if !inside(stored) || !plain_name(name) {
        return Err(bad());
    }
    Ok(BackupFile {
        stored: stored.to_string(),
        name: name.to_string(),
        size: size.parse().map_err(|_| bad())?,
        crc: u32::from_str_radix(crc, 16).map_err(|_| bad())?,
    })
}

/// A file name with no path in it.
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\'])
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> BackupMeta {
        BackupMeta {
            id: 3,
            timestamp: 1_733_400_000,
            sequence: 120_034,
            app_metadata: "nightly run".to_string(),
            files: vec![
                BackupFile {
                    stored: "shared/000012_1a2b3c4d_4096.sst".to_string(),
                    name: "000012.sst".to_string(),
                    size: 4096,
                    crc: 0x1a2b_3c4d,
                },
                BackupFile {
                    stored: "private/000003_CURRENT".to_string(),
                    name: "CURRENT".to_string(),
                    size: 16,
                    crc: 7,
                },
            ],
        }
    }

    #[test]
    fn metadata_round_trips() {
        let m = meta();
        assert_eq!(
            BackupMeta::decode(&m.encode(), "meta/3").expect("decode"),
            m
        );
    }

    #[test]
    fn every_flipped_bit_and_cut_is_refused() {
        let bytes = meta().encode();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[i] ^= 1 << bit;
                assert!(
                    BackupMeta::decode(&damaged, "meta/3").is_err(),
                    "byte {i} bit {bit}"
                );
            }
        }
        for len in 0..bytes.len() {
            let cut = BackupMeta::decode(&bytes[..len], "meta/3");
            assert!(matches!(cut, Err(Error::Corruption(_))), "cut at {len}");
        }
    }

    #[test]
    fn paths_outside_the_backup_are_refused() {
        for line in [
            "file ../x/000012.sst 000012.sst 1 0",
            "file shared/../../etc 000012.sst 1 0",
            "file shared/a/b 000012.sst 1 0",
            "file other/x 000012.sst 1 0",
            "file shared/x ../000012.sst 1 0",
            "file shared/x .. 1 0",
        ] {
            assert!(parse_file(line).is_err(), "{line}");
        }
        assert!(parse_file("file shared/x 000012.sst 1 0").is_ok());
    }
}
