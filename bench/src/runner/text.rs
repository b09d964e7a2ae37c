//! Settings and sizes in words, written the same way by the header, the settings table and
//! every engine's mapping (siftdb's and the peers'), so that one setting reads alike everywhere.

use super::args::{Config, FilterPolicyArg};

/// `bytes` with a binary unit (`116.0 MiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The per-level codecs as text: `lz4 on every level`, `none on L0-L1, lz4 from L2`.
pub fn compression_text(levels: &[siftdb::Compression]) -> String {
    match levels {
        [] => "none on every level".to_string(),
        [one] => format!("{} on every level", one.name()),
        _ => {
            let mut parts = Vec::new();
            let mut start = 0;
            for i in 1..=levels.len() {
                if i == levels.len() || levels[i] != levels[start] {
                    let name = levels[start].name();
                    parts.push(if i == levels.len() {
                        format!("{name} from L{start}")
                    } else if i - 1 == start {
                        format!("{name} on L{start}")
                    } else {
                        format!("{name} on L{start}-L{}", i - 1)
                    });
                    start = i;
                }
            }
            parts.join(", ")
        }
    }
}

/// The shared memtable budget as the settings lines print it (`--db_write_buffer_size`).
pub fn db_write_buffer_text(bytes: usize, stall: bool) -> String {
    match (bytes, stall) {
        (0, _) => "no shared memtable budget".to_string(),
        (n, false) => format!(
            "all memtables flushed at {}, no stall",
            human_bytes(n as u64)
        ),
        (n, true) => format!(
            "all memtables flushed at {}, writers stall there",
            human_bytes(n as u64)
        ),
    }
}

/// A peer's shared memtable budget, which never stalls: with `--allow_stall` siftdb's does,
/// and the text says so.
pub fn peer_db_write_buffer_text(bytes: usize, sift_stalls: bool) -> String {
    let text = db_write_buffer_text(bytes, false);
    if bytes > 0 && sift_stalls {
        format!("{text} (siftdb stalls on it in this run: --allow_stall is not mapped)")
    } else {
        text
    }
}

/// `max_open_files`, in words.
pub fn open_files_text(max_open_files: i32) -> String {
    match max_open_files {
        -1 => "every table file open".to_string(),
        n => format!("at most {n} table files open"),
    }
}

/// Which filter each level gets, in words.
pub fn filter_layout(config: &Config) -> String {
    let bbl = config.filter.bloom_before_level;
    let deep = if config.filter.policy == FilterPolicyArg::Fuse {
        "binary fuse"
    } else {
        "ribbon"
    };
    match (config.filter.policy, bbl) {
        (FilterPolicyArg::Bloom, _) => "blocked bloom on every level".to_string(),
        (_, 0) => format!("{deep} on every level"),
        (_, 1) => format!("blocked bloom on L0, {deep} from L1"),
        (_, b) if b >= siftdb::MAX_LEVELS => "blocked bloom on every level".to_string(),
        (_, b) => format!("blocked bloom on L0-L{}, {deep} from L{b}", b - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb::Compression::{Lz4, None as Off, Zstd};

    #[test]
    fn per_level_codecs_read_as_text() {
        assert_eq!(compression_text(&[Lz4]), "lz4 on every level");
        assert_eq!(
            compression_text(&[Off, Off, Lz4]),
            "none on L0-L1, lz4 from L2"
        );
        assert_eq!(
            compression_text(&[Off, Lz4, Zstd]),
            "none on L0, lz4 on L1, zstd from L2"
        );
    }

    #[test]
    fn bytes_are_human() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(110 << 20), "110.0 MiB");
    }
}
