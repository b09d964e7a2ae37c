//! `db_bench`'s `randomtransaction`: `--reads` transactions on `--threads` threads, each a
//! read-modify-write of `--transaction_sets` distinct records (`db_bench`'s
//! `RandomTransactionInserter`: a read for update of each, then a put of it, then a commit).
//!
//! The records are drawn as YCSB draws them (a Zipfian of θ `--zipf_theta` over the `--num`
//! records, ranks scattered by a fixed permutation), in the order drawn: a pessimistic engine
//! meets lock waits and deadlocks as an application that does not sort its keys would. A
//! transaction the engine aborts (a conflict at an optimistic commit, a lock timeout or a
//! deadlock) is counted and not retried, as `db_bench` counts its failures: the rate is of
//! committed transactions, and the report gives the abort rate beside it.

use super::{Workbench, STREAM_TRANSACTION};
use crate::runner::args::Benchmark;
use crate::runner::error::{Error, Result};
use crate::runner::keys::{Permutation, Variant};
use crate::runner::measure::{Measured, Outcome};
use crate::runner::zipf::Zipf;

impl Workbench<'_> {
    /// randomtransaction (see the module docs).
    pub(super) fn random_transaction(&self, stream: u64) -> Result<Measured> {
        let txn = self.config.transactions.ok_or_else(|| {
            Error::new("randomtransaction needs --optimistic_transaction_db or --transaction_db")
        })?;
        let records = self.config.num;
        let sets = (txn.sets as u64).min(records) as usize;
        let zipf = Zipf::new(records, self.config.zipf_theta);
        let scatter = Permutation::new(records, self.config.seed ^ STREAM_TRANSACTION);
        let ops = self.config.reads;
        self.timed(
            Benchmark::RandomTransaction,
            self.config.threads,
            ops,
            ops,
            stream,
            |ctx, _| {
                let mut indexes: Vec<u64> = Vec::with_capacity(sets);
                while indexes.len() < sets {
                    let index = scatter.get(zipf.sample(&mut ctx.rng));
                    if !indexes.contains(&index) {
                        indexes.push(index);
                    }
                }
                let keys: Vec<(usize, Vec<u8>)> = indexes
                    .iter()
                    .map(|&index| {
                        let mut key = vec![0; self.keys.key_size()];
                        self.keys.encode(index, Variant::Written, &mut key);
                        (self.keys.keyspace(index), key)
                    })
                    .collect();
                let keys: Vec<(usize, &[u8])> =
                    keys.iter().map(|(ks, k)| (*ks, k.as_slice())).collect();
                for &index in &indexes {
                    self.model.announce(index);
                }
                let fresh = self.values.value(&mut ctx.rng);
                let committed = self.engine.read_modify_write_txn(&txn, &keys, fresh)?;
                if committed {
                    for &index in &indexes {
                        self.model.set_live(index);
                    }
                }
                Ok(Outcome {
                    ops: u64::from(committed),
                    aborts: u64::from(!committed),
                    entries: if committed { sets as u64 } else { 0 },
                    ..Outcome::default()
                })
            },
        )
    }
}
