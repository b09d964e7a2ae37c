//! Zstd frames for block compression, through libzstd (the `c-zstd` feature, the default: the
//! `zstd` crate at level 3, as RocksDB's default) or through ruzstd, pure Rust (without the
//! feature: no C toolchain is needed; its encoder has only its fastest level, ≈ zstd's 1, and it
//! decodes more slowly). Both write and read standard Zstd frames, so a table written by one
//! build reads in the other.

#[cfg(feature = "c-zstd")]
pub(crate) use libzstd::{compress as zstd_compress, decompress as zstd_decompress};
#[cfg(not(feature = "c-zstd"))]
pub(crate) use pure::{compress as zstd_compress, decompress as zstd_decompress};

#[cfg(feature = "c-zstd")]
mod libzstd {
    use std::cell::RefCell;

    /// Zstd's level (its default, as RocksDB's).
    const LEVEL: i32 = 3;

    thread_local! {
        // A Zstd context costs ~100 KiB of workspace to set up, more than decoding a 4 KiB
        // block (measured: 5 ms per 256 blocks with a context per call); each thread keeps one
        // of each.
        static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> =
            const { RefCell::new(None) };
        static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { RefCell::new(None) };
    }

    /// `contents` as a Zstd frame, with this thread's compression context; `None` on failure.
    pub(crate) fn compress(contents: &[u8]) -> Option<Vec<u8>> {
        COMPRESSOR.with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            if slot.is_none() {
                *slot = Some(zstd::bulk::Compressor::new(LEVEL).ok()?);
            }
            slot.as_mut()?.compress(contents).ok()
        })
    }

    /// A Zstd frame of at most `size` bytes decoded with this thread's decompression context
    /// (a one-shot context if this thread's is unavailable).
    pub(crate) fn decompress(payload: &[u8], size: usize) -> Result<Vec<u8>, String> {
        let reused = DECOMPRESSOR.with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            if slot.is_none() {
                *slot = zstd::bulk::Decompressor::new().ok();
            }
            Some(slot.as_mut()?.decompress(payload, size))
        });
        reused
            .unwrap_or_else(|| zstd::bulk::decompress(payload, size))
            .map_err(|e| format!("zstd: {e}"))
    }
}

/// ruzstd: the codec of the build without `c-zstd`, and, in tests, the other side of the
/// frame-compatibility checks.
#[cfg(any(test, not(feature = "c-zstd")))]
mod pure {
    use std::cell::RefCell;

    use ruzstd::decoding::FrameDecoder;
    use ruzstd::encoding::{compress_to_vec, CompressionLevel};

    thread_local! {
        // A decoder's buffers are reused from block to block on the same thread.
        static DECODER: RefCell<FrameDecoder> = RefCell::new(FrameDecoder::new());
    }

    /// `contents` as a Zstd frame at ruzstd's fastest level (its only one).
    pub(crate) fn compress(contents: &[u8]) -> Option<Vec<u8>> {
        Some(compress_to_vec(contents, CompressionLevel::Fastest))
    }

    /// A Zstd frame of at most `size` bytes decoded (a frame of more is an error: the output
    /// buffer is exactly `size` bytes).
    pub(crate) fn decompress(payload: &[u8], size: usize) -> Result<Vec<u8>, String> {
        let mut out = vec![0u8; size];
        let written = DECODER
            .with(|cell| match cell.try_borrow_mut() {
                Ok(mut decoder) => decoder.decode_all(payload, &mut out),
                Err(_) => FrameDecoder::new().decode_all(payload, &mut out),
            })
            .map_err(|e| format!("zstd: {e}"))?;
        out.truncate(written);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::pure;

    fn block(seed: u64, len: usize) -> Vec<u8> {
        // Key/value-like text: compressible, as blocks are.
        (0..len)
            .map(|i| b"key0123456789value-abcdefgh"[(i as u64 * 7 + seed) as usize % 27])
            .collect()
    }

    #[cfg(feature = "c-zstd")]
    #[test]
    fn frames_of_one_codec_decode_in_the_other() {
        for len in [0, 1, 100, 4096, 70_000] {
            let contents = block(len as u64, len);
            let by_c = super::libzstd::compress(&contents).unwrap();
            assert_eq!(pure::decompress(&by_c, len).unwrap(), contents, "len {len}");
            let by_rust = pure::compress(&contents).unwrap();
            assert_eq!(
                super::libzstd::decompress(&by_rust, len).unwrap(),
                contents,
                "len {len}"
            );
        }
    }

    #[test]
    fn pure_codec_round_trips_and_refuses_a_frame_larger_than_announced() {
        let contents = block(3, 5000);
        let frame = pure::compress(&contents).unwrap();
        assert!(frame.len() < contents.len() / 2, "{} bytes", frame.len());
        assert_eq!(pure::decompress(&frame, 5000).unwrap(), contents);
        assert!(pure::decompress(&frame, 4999).is_err());
    }

    proptest! {
        /// Damaged frames give an error or other bytes, never a panic or more than announced.
        #[test]
        fn pure_decoder_survives_damaged_frames(
            seed in any::<u64>(),
            len in 1usize..3000,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            cut in any::<usize>(),
        ) {
            let contents = block(seed, len);
            let mut frame = pure::compress(&contents).unwrap();
            for (at, mask) in flips {
                let at = at % frame.len();
                frame[at] ^= mask | 1;
            }
            frame.truncate(frame.len() - cut % frame.len().min(8));
            if let Ok(out) = pure::decompress(&frame, len) {
                prop_assert!(out.len() <= len);
            }
        }
    }
}
