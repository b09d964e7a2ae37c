//! The runner's resident-set measurement (`runner::memory`) on Linux: the peak follows an
//! allocation after a reset, and freed memory is handed back. One test in its own process, so
//! no other test allocates or frees beside it while the resident set is read.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn peak_rss_follows_allocations_and_freed_memory_is_handed_back() {
    use siftdb_bench::runner::memory::{read, release_free_memory, reset_peak};

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
