//! Expiring values (`Db::put_with_ttl`) and the clock they are judged by.
//!
//! An expiring value is stored as an entry of kind `ExpiringPut` whose value starts with its
//! expiry time — milliseconds since the Unix epoch, 8 bytes little-endian — followed by the
//! value; values written without a TTL are plain `Put`s and carry no extra byte. A read compares
//! the expiry with [`Options::clock`](crate::Options::clock): an expired value reads as absent
//! (hiding older versions, as the overwrite it was), and compactions remove it.
//!
//! Readers judge an expiring value when they meet one: `get` and `multi_get` read the clock only
//! then; an iterator reads it once, at creation (one cursor, one time). An expired value answers
//! like a tombstone. Compactions remove expired values through their `JobFilter`
//! (`compaction_filter.rs`), with the time fixed when the job starts; a merge operand stacked on
//! an expiring value is left for reads to judge.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::base::error::{Error, Result};

/// Where the time comes from for expiring values. [`SystemClock`] by default; tests inject a
/// clock they move by hand.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Bytes of the expiry time in front of an expiring value.
pub(crate) const EXPIRY_LEN: usize = 8;

/// `time` in milliseconds since the Unix epoch (0 before it).
pub(crate) fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The expiry time of a value written now with `ttl`, in milliseconds.
pub(crate) fn expiry_after(clock: &dyn Clock, ttl: Duration) -> u64 {
    let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    millis(clock.now()).saturating_add(ttl)
}

/// The stored form of `value` expiring at `expiry`.
pub(crate) fn encode(expiry: u64, value: &[u8]) -> Vec<u8> {
    let mut stored = Vec::with_capacity(EXPIRY_LEN + value.len());
    stored.extend_from_slice(&expiry.to_le_bytes());
    stored.extend_from_slice(value);
    stored
}

/// The expiry time and the value of a stored expiring value; `None` if it is too short.
pub(crate) fn decode(stored: &[u8]) -> Option<(u64, &[u8])> {
    let (expiry, value) = stored.split_at_checked(EXPIRY_LEN)?;
    Some((u64::from_le_bytes(expiry.try_into().ok()?), value))
}

/// Whether the stored expiring value in `buf` is still live at `now` (milliseconds): then its
/// expiry is removed and `buf` holds the value. A value too short to hold an expiry is corrupt.
pub(crate) fn resolve_in_place(buf: &mut Vec<u8>, now: u64) -> Result<bool> {
    let (expiry, _) = decode(buf).ok_or_else(|| {
        Error::corruption("an expiring value is shorter than its expiry time".to_string())
    })?;
    if now >= expiry {
        return Ok(false);
    }
    buf.drain(..EXPIRY_LEN);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiring_values_round_trip_and_expire_at_their_time() {
        let stored = encode(1_000, b"v");
        assert_eq!(decode(&stored), Some((1_000, &b"v"[..])));
        let mut buf = stored.clone();
        assert!(resolve_in_place(&mut buf, 999).unwrap());
        assert_eq!(buf, b"v");
        let mut buf = stored;
        assert!(!resolve_in_place(&mut buf, 1_000).unwrap());
        assert!(resolve_in_place(&mut vec![1, 2, 3], 0).is_err());
        assert_eq!(decode(&[0; 7]), None);
    }
}
