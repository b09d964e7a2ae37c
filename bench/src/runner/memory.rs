//! Resident memory of the runner's process, for the peak RSS of each workload and engine.
//!
//! Linux only (`/proc/self/status`); elsewhere nothing is reported. The peak (`VmHWM`) is reset
//! before each workload by writing `5` to `/proc/self/clear_refs` (Linux ≥ 4.0), so a
//! workload's peak is its own and an engine's is not the one before it: what the engine before
//! left behind still counts only as far as it is still resident (the start figure says how
//! much that is).

/// Resident set now and its peak since the last [`reset_peak`], in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rss {
    /// `VmRSS`.
    pub current: u64,
    /// `VmHWM`.
    pub peak: u64,
}

/// Reads the process's resident set; `None` where `/proc` does not say.
pub fn read() -> Option<Rss> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    Some(Rss {
        current: field_kib(&status, "VmRSS:")? * 1024,
        peak: field_kib(&status, "VmHWM:")? * 1024,
    })
}

/// Resets the peak to the current resident set; returns whether the kernel allowed it.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Hands the memory the allocators hold free back to the system, so the next engine's
/// resident set does not include what the engine before freed: mimalloc (the runner's Rust
/// allocator) keeps freed segments for a while, and glibc's malloc (RocksDB's C++ allocations)
/// keeps freed heap in its arenas.
pub fn release_free_memory() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any time;
    // with `force` it frees the segments mimalloc holds unused (the calling thread's and the
    // abandoned ones). It never touches memory still allocated.
    unsafe { libmimalloc_sys::mi_collect(true) };
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointers and is thread-safe in glibc; it only returns
    // free pages of the malloc arenas to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The value of a `Name:   1234 kB` line.
fn field_kib(status: &str, name: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(name))?;
    line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_parse() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(field_kib(status, "VmHWM:"), Some(2048));
        assert_eq!(field_kib(status, "VmRSS:"), Some(1024));
        assert_eq!(field_kib(status, "VmSwap:"), None);
    }

    /// Set in the child process that runs [`peak_rss_follows_allocations_and_freed_memory_is_handed_back`].
    const ALONE: &str = "SIFTDB_BENCH_MEMORY_TEST_ALONE";

    /// The peak follows an allocation after a reset, and freed memory is handed back. It runs
    /// in a process of its own (this test binary run again for it alone), so that no other
    /// test allocates or frees beside it while the resident set is read.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn peak_rss_follows_allocations_and_freed_memory_is_handed_back() {
        let name =
            "runner::memory::tests::peak_rss_follows_allocations_and_freed_memory_is_handed_back";
        if std::env::var_os(ALONE).is_none() {
            let exe = std::env::current_exe().unwrap();
            let out = std::process::Command::new(exe)
                .args(["--exact", name, "--nocapture", "--test-threads=1"])
                .env(ALONE, "1")
                .output()
                .unwrap();
            let shown = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && shown.contains("1 passed"),
                "{shown}"
            );
            return;
        }
        /// Writes the first byte of every page of `bytes` with stores the optimizer can neither drop
        /// nor move past the reading of `/proc`, so the pages are resident when it is read.
        fn touch(bytes: &mut [u8]) {
            for page in bytes.chunks_mut(4096) {
                // SAFETY: `page` is a live, exclusive slice of at least one byte; `write_volatile`
                // writes its first byte, in bounds and aligned (u8).
                unsafe { std::ptr::write_volatile(page.as_mut_ptr(), 1) };
            }
        }

        // The peak after a reset follows a 64 MiB allocation.
        assert!(reset_peak());
        let before = read().unwrap();
        let mut block = vec![0u8; 64 << 20];
        touch(&mut block);
        let during = read().unwrap();
        assert!(
            during.peak >= before.current + (60 << 20),
            "{before:?} {during:?}"
        );
        assert_eq!(block.chunks(4096).filter(|p| p[0] == 1).count(), 16 << 10);
        drop(block);

        // Many small blocks live in a malloc arena and can stay resident after free until trimmed.
        let mut blocks: Vec<Vec<u8>> = (0..8192).map(|_| vec![0u8; 16 << 10]).collect();
        for b in &mut blocks {
            touch(b);
        }
        let full = read().unwrap();
        drop(blocks);
        release_free_memory();
        let after = read().unwrap();
        assert!(
            after.current + (96 << 20) < full.current,
            "{full:?} {after:?}"
        );
        assert!(reset_peak());
        assert!(read().unwrap().peak < full.peak);
    }
}
