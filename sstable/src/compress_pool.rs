//! Data blocks compressed off the thread that builds the table (RocksDB's
//! `CompressionOptions::parallel_threads`): a table builder with
//! [`TableBuildOptions::compression_threads`](crate::TableBuildOptions) above 1 hands each
//! finished block to one of that many workers and takes the results back in block order, so
//! the bytes written are those a single thread would write. While a worker compresses, the
//! building thread goes on with the next keys, their filter hashes and the next block.
//!
//! Block `n` goes to worker `n % workers`, and results are taken from the workers in the same
//! turn: each worker answers in the order it was asked, so no reordering is needed.

use std::sync::mpsc::{channel, Receiver, Sender};

use crate::compression::Compression;
use crate::error::{Result, SstError};

/// A block to compress.
struct Job {
    contents: Vec<u8>,
    codec: Compression,
}

/// A compressed block, in order: what to store and with which codec (the contents themselves,
/// uncompressed, when compressing did not pay), and the contents' size.
pub(crate) struct Compressed {
    pub stored: Vec<u8>,
    pub codec: Compression,
    pub raw_len: usize,
}

struct Worker {
    jobs: Sender<Job>,
    done: Receiver<Compressed>,
}

/// The workers of one table builder. Dropping it closes their queues: they finish what they
/// hold and exit.
pub(crate) struct CompressPool {
    workers: Vec<Worker>,
    /// Blocks handed out and blocks taken back.
    sent: u64,
    taken: u64,
    /// Bytes of the blocks handed out and not yet taken back.
    raw_in_flight: u64,
}

impl CompressPool {
    /// `threads` workers (at least one).
    pub(crate) fn new(threads: usize) -> CompressPool {
        let workers = (0..threads.max(1))
            .map(|_| {
                let (jobs, inbox) = channel::<Job>();
                let (outbox, done) = channel::<Compressed>();
                std::thread::spawn(move || {
                    for job in inbox {
                        let raw_len = job.contents.len();
                        let compressed = match job.codec.compress(&job.contents) {
                            Some(stored) => Compressed {
                                stored,
                                codec: job.codec,
                                raw_len,
                            },
                            None => Compressed {
                                stored: job.contents,
                                codec: Compression::None,
                                raw_len,
                            },
                        };
                        if outbox.send(compressed).is_err() {
                            return; // the builder went away
                        }
                    }
                });
                Worker { jobs, done }
            })
            .collect();
        CompressPool {
            workers,
            sent: 0,
            taken: 0,
            raw_in_flight: 0,
        }
    }

    /// Blocks handed out and not yet taken back.
    pub(crate) fn in_flight(&self) -> u64 {
        self.sent - self.taken
    }

    /// Bytes of those blocks, uncompressed.
    pub(crate) fn raw_in_flight(&self) -> u64 {
        self.raw_in_flight
    }

    /// How many blocks may be in flight before [`CompressPool::submit`]'s caller must take one
    /// back: a few per worker, so none waits for work and memory stays bounded.
    pub(crate) fn capacity(&self) -> u64 {
        4 * self.workers.len() as u64
    }

    /// Hands block `contents` out to be compressed with `codec`.
    pub(crate) fn submit(&mut self, contents: Vec<u8>, codec: Compression) -> Result<()> {
        let worker = self.worker(self.sent);
        self.raw_in_flight += contents.len() as u64;
        self.workers[worker]
            .jobs
            .send(Job { contents, codec })
            .map_err(|_| stopped())?;
        self.sent += 1;
        Ok(())
    }

    /// The oldest block handed out, compressed (waiting for it); `None` when none is in flight.
    pub(crate) fn take(&mut self) -> Result<Option<Compressed>> {
        if self.in_flight() == 0 {
            return Ok(None);
        }
        let worker = self.worker(self.taken);
        let compressed = self.workers[worker].done.recv().map_err(|_| stopped())?;
        self.taken += 1;
        self.raw_in_flight -= compressed.raw_len as u64;
        Ok(Some(compressed))
    }

    fn worker(&self, block: u64) -> usize {
        (block % self.workers.len() as u64) as usize
    }
}

fn stopped() -> SstError {
    SstError::InvalidArgument("a block compression worker stopped".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compress_pool_returns_blocks_in_order_as_one_thread_would_store_them() {
        let mut pool = CompressPool::new(3);
        let blocks: Vec<Vec<u8>> = (0..40u8)
            .map(|i| {
                if i % 3 == 0 {
                    (0..2000u32).map(|j| (j * 7919 % 251) as u8 ^ i).collect() // incompressible
                } else {
                    vec![i; 3000]
                }
            })
            .collect();
        let mut out = Vec::new();
        for b in &blocks {
            pool.submit(b.clone(), Compression::Lz4).unwrap();
            if pool.in_flight() >= pool.capacity() {
                out.push(pool.take().unwrap().unwrap());
            }
        }
        while let Some(c) = pool.take().unwrap() {
            out.push(c);
        }
        assert_eq!(pool.raw_in_flight(), 0);
        assert_eq!(out.len(), blocks.len());
        for (b, c) in blocks.iter().zip(&out) {
            match Compression::Lz4.compress(b) {
                Some(stored) => assert_eq!((&c.stored, c.codec), (&stored, Compression::Lz4)),
                None => assert_eq!((&c.stored, c.codec), (b, Compression::None)),
            }
            assert_eq!(c.raw_len, b.len());
        }
    }
}
