//! Data blocks compressed off the thread that builds the table (RocksDB's
//! `CompressionOptions::parallel_threads`): a table builder with
//! [`TableBuildOptions::compression_threads`](crate::TableBuildOptions) above 1 hands each
//! finished block to one of that many workers and takes the results back in block order, so
//! the bytes written are those a single thread would write. While a worker compresses, the
//! building thread goes on with the next keys, their filter hashes and the next block.
//!
//! Blocks travel in batches of [`BATCH`]: handing each 4 KiB block over alone cost a thread
//! wake-up or two per block, as much as compressing it. Batch `n` goes to worker
//! `n % workers`, and results are taken from the workers in the same turn: each worker answers
//! in the order it was asked, so no reordering is needed.

use std::collections::VecDeque;
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

/// Blocks handed to a worker at once.
const BATCH: usize = 16;

struct Worker {
    jobs: Sender<Vec<Job>>,
    done: Receiver<Vec<Compressed>>,
}

/// The workers of one table builder. Dropping it closes their queues: they finish what they
/// hold and exit.
pub(crate) struct CompressPool {
    workers: Vec<Worker>,
    /// Blocks submitted and not yet handed to a worker (fewer than a batch).
    pending: Vec<Job>,
    /// Batches handed out and batches received back.
    batches_sent: u64,
    batches_taken: u64,
    /// Blocks of the last batch received, not yet taken.
    ready: VecDeque<Compressed>,
    /// Blocks submitted and blocks taken back.
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
                let (jobs, inbox) = channel::<Vec<Job>>();
                let (outbox, done) = channel::<Vec<Compressed>>();
                std::thread::spawn(move || {
                    for batch in inbox {
                        let compressed = batch.into_iter().map(compress).collect();
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
            pending: Vec::with_capacity(BATCH),
            batches_sent: 0,
            batches_taken: 0,
            ready: VecDeque::new(),
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
    /// back: eight batches per worker (512 KiB of 4 KiB blocks each), so none waits for work,
    /// and the building thread goes on while the worker holding the oldest batch is not
    /// scheduled (with two, the builder waited for it a fifth of a bulk load); memory stays
    /// bounded.
    pub(crate) fn capacity(&self) -> u64 {
        (8 * BATCH * self.workers.len()) as u64
    }

    /// Hands block `contents` out to be compressed with `codec` (with the next blocks, as one
    /// batch).
    pub(crate) fn submit(&mut self, contents: Vec<u8>, codec: Compression) -> Result<()> {
        self.raw_in_flight += contents.len() as u64;
        self.pending.push(Job { contents, codec });
        self.sent += 1;
        if self.pending.len() >= BATCH {
            self.send_pending()?;
        }
        Ok(())
    }

    /// Hands the pending blocks to the worker whose turn it is.
    fn send_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.pending, Vec::with_capacity(BATCH));
        let worker = self.worker(self.batches_sent);
        self.workers[worker]
            .jobs
            .send(batch)
            .map_err(|_| stopped())?;
        self.batches_sent += 1;
        Ok(())
    }

    /// The oldest block handed out, compressed (waiting for it); `None` when none is in flight.
    pub(crate) fn take(&mut self) -> Result<Option<Compressed>> {
        if self.in_flight() == 0 {
            return Ok(None);
        }
        if self.ready.is_empty() {
            if self.batches_taken == self.batches_sent {
                self.send_pending()?; // the oldest block is in the batch not yet sent
            }
            let worker = self.worker(self.batches_taken);
            let batch = self.workers[worker].done.recv().map_err(|_| stopped())?;
            self.batches_taken += 1;
            self.ready.extend(batch);
        }
        let compressed = self.ready.pop_front().ok_or_else(stopped)?;
        self.taken += 1;
        self.raw_in_flight -= compressed.raw_len as u64;
        Ok(Some(compressed))
    }

    fn worker(&self, batch: u64) -> usize {
        (batch % self.workers.len() as u64) as usize
    }
}

/// One block compressed, or kept as it is when compressing does not pay.
fn compress(job: Job) -> Compressed {
    let raw_len = job.contents.len();
    match job.codec.compress(&job.contents) {
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
