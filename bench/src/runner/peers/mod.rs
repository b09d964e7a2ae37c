//! The peers siftdb is compared with, behind the cargo feature `peers`: RocksDB
//! ([`rocks::RocksEngine`]) and fjall ([`fjall::FjallEngine`]). Each maps the run's settings as
//! closely as it allows and says how in [`Engine::settings`](super::Engine::settings).

pub mod fjall;
pub mod rocks;
