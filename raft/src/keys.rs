//! Keyspace names and the keys of the meta keyspace.

/// The log: key = big-endian log index, value = the encoded entry.
pub(crate) const LOG: &str = "raft_log";
/// Small records, each under one of the keys below.
pub(crate) const META: &str = "raft_meta";
/// State keyspaces are named this prefix and a generation; the meta record `STATE` names the
/// live one.
pub(crate) const STATE_PREFIX: &str = "raft_state.";

/// The last saved vote.
pub(crate) const VOTE: &[u8] = b"vote";
/// The last saved committed log id.
pub(crate) const COMMITTED: &[u8] = b"committed";
/// The last purged log id (entries up to it are gone from the log).
pub(crate) const PURGED: &[u8] = b"purged";
/// The state machine's last applied log id.
pub(crate) const APPLIED: &[u8] = b"applied";
/// The state machine's last membership.
pub(crate) const MEMBERSHIP: &[u8] = b"membership";
/// The generation of the live state keyspace (u64 big-endian).
pub(crate) const STATE: &[u8] = b"state";

/// The log key of `index`: big-endian, so keys sort as indexes do.
pub(crate) fn log_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

/// The name of the state keyspace of `generation`.
pub(crate) fn state_keyspace(generation: u64) -> String {
    format!("{STATE_PREFIX}{generation}")
}
