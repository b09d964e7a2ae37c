//! The environment (RocksDB's `Env`). siftdb runs its own background threads, sized by
//! `Options::set_max_background_jobs`; an `Env` is accepted and its settings have no effect.

use crate::db_options::no_effect;
use crate::Error;

/// An environment: accepted, with no effect on siftdb.
#[derive(Debug, Clone, Default)]
pub struct Env {
    _private: (),
}

impl Env {
    /// The default environment.
    pub fn new() -> Result<Env, Error> {
        Ok(Env::default())
    }

    /// An in-memory environment: siftdb databases live in directories; refused.
    pub fn mem_env() -> Result<Env, Error> {
        Err(Error::not_supported("an in-memory environment"))
    }

    no_effect! {
        /// Background threads.
        set_background_threads(num_threads: i32);
        /// High-priority background threads.
        set_high_priority_background_threads(n: i32);
        /// Low-priority background threads.
        set_low_priority_background_threads(n: i32);
        /// Bottom-priority background threads.
        set_bottom_priority_background_threads(n: i32);
        /// Lowers the CPU priority of the high-priority pool.
        lower_high_priority_thread_pool_cpu_priority();
        /// Lowers the CPU priority of the low-priority pool.
        lower_thread_pool_cpu_priority();
        /// Lowers the I/O priority of the high-priority pool.
        lower_high_priority_thread_pool_io_priority();
        /// Lowers the I/O priority of the low-priority pool.
        lower_thread_pool_io_priority();
        /// Waits for background jobs to be joined.
        join_all_threads();
    }
}
