//! The process's storage I/O, for what each workload made the engine read and write on disk.
//!
//! Linux only (`/proc/self/io`); elsewhere nothing is reported. `write_bytes` counts the bytes
//! the process caused to be written to storage, attributed when a page is dirtied (so a file
//! written and deleted before writeback still counts; `cancelled_write_bytes` says how much of
//! that never reached the disk), and `read_bytes` the bytes fetched from storage (page cache hits
//! are not counted). Every engine's background threads belong to the process, and engines run
//! one after the other, so a workload's difference is its engine's own.

/// Storage bytes the process read and wrote, from `/proc/self/io`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskIo {
    /// `read_bytes`.
    pub read: u64,
    /// `write_bytes` less `cancelled_write_bytes`.
    pub written: u64,
}

impl DiskIo {
    /// What happened between `self` (earlier) and `later`.
    pub fn until(self, later: DiskIo) -> DiskIo {
        DiskIo {
            read: later.read.saturating_sub(self.read),
            written: later.written.saturating_sub(self.written),
        }
    }
}

/// Reads the process's storage I/O counters; `None` where `/proc` does not say.
pub fn read() -> Option<DiskIo> {
    parse(&std::fs::read_to_string("/proc/self/io").ok()?)
}

fn parse(io: &str) -> Option<DiskIo> {
    let field = |name: &str| -> Option<u64> {
        let line = io.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].trim().parse().ok()
    };
    let cancelled = field("cancelled_write_bytes:").unwrap_or(0);
    Some(DiskIo {
        read: field("read_bytes:")?,
        written: field("write_bytes:")?.saturating_sub(cancelled),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_fields_parse_and_subtract() {
        let io = "rchar: 10\nwchar: 20\nread_bytes: 4096\nwrite_bytes: 12288\n\
                  cancelled_write_bytes: 4096\n";
        let before = parse(io).unwrap_or_default();
        assert_eq!(
            before,
            DiskIo {
                read: 4096,
                written: 8192
            }
        );
        let after = DiskIo {
            read: 8192,
            written: 10000,
        };
        assert_eq!(
            before.until(after),
            DiskIo {
                read: 4096,
                written: 1808
            }
        );
        assert_eq!(parse("rchar: 1\n"), None);
    }
}
