//! How often point lookups probe each table's filter, for adaptive filter allocation
//! ([`FilterAllocation::Adaptive`](siftdb_filter::FilterAllocation::Adaptive)).
//!
//! A tree counts the point lookups that search its tables (its clock); each table counts the
//! lookups that probed its filter and remembers the clock when it was opened. A table's probes
//! over the lookups of its life are the chance that a lookup probes it — per key of the table,
//! its *density*. Monkey assumes every lookup probes one table of every level, a density of
//! `1 / keys of the level` everywhere; adaptive allocation gives a table written where the
//! density was measured higher (a hot key range) a lower FPR, and a cold one a higher FPR.
//!
//! The measured density is blended with a prior worth [`PRIOR_LOOKUPS`] lookups: Monkey's
//! density times the heat the table was written with (the estimate its compaction made from
//! its inputs; 1 for a flushed table). So a tree that is only written plans as Monkey does, and
//! a table written while nobody reads keeps the heat its key range had until reads say
//! otherwise — through any number of rewrites.
//! Counting costs one relaxed increment per lookup and per filter probe, only under adaptive
//! allocation.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Lookups' worth of weight Monkey's density has in a table's estimate.
pub(crate) const PRIOR_LOOKUPS: f64 = 2_000.0;

/// The point lookups that searched a tree's tables.
#[derive(Debug, Default)]
pub(crate) struct LookupClock(AtomicU64);

impl LookupClock {
    /// Counts `lookups` lookups.
    pub(crate) fn tick_by(&self, lookups: u64) {
        self.0.fetch_add(lookups, Relaxed);
    }

    pub(crate) fn now(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// One table's filter probes (and the false positives among them) since it was opened.
#[derive(Debug)]
pub(crate) struct TableHeat {
    probes: AtomicU64,
    false_positives: AtomicU64,
    /// The tree's clock when the table was opened.
    born_at: AtomicU64,
    /// The heat it was written with (`f64` bits): its prior's multiplier.
    inherited: AtomicU64,
}

impl Default for TableHeat {
    fn default() -> Self {
        TableHeat {
            probes: AtomicU64::new(0),
            false_positives: AtomicU64::new(0),
            born_at: AtomicU64::new(0),
            inherited: AtomicU64::new(1.0f64.to_bits()),
        }
    }
}

impl TableHeat {
    /// Counts the table's life from clock value `now`, written with `heat` (a table opened at
    /// recovery starts at 0, with its tree's clock, at heat 1).
    pub(crate) fn start(&self, now: u64, heat: f64) {
        self.born_at.store(now, Relaxed);
        self.inherited.store(heat.to_bits(), Relaxed);
    }

    /// Counts one filter probe, and whether it was a false positive ("maybe" for a key the
    /// table does not hold).
    pub(crate) fn probed(&self, false_positive: bool) {
        self.probes.fetch_add(1, Relaxed);
        if false_positive {
            self.false_positives.fetch_add(1, Relaxed);
        }
    }

    /// The false positives counted so far.
    pub(crate) fn false_positives(&self) -> u64 {
        self.false_positives.load(Relaxed)
    }

    /// The probes counted so far.
    pub(crate) fn probes(&self) -> u64 {
        self.probes.load(Relaxed)
    }

    /// The chance per lookup that a lookup probes one given key's place in this table — probes
    /// over lookups, spread over its `keys` — blended with `prior` (Monkey's density) times the
    /// inherited heat (see the module documentation), at clock value `now`.
    pub(crate) fn density(&self, now: u64, keys: u64, prior: f64) -> f64 {
        let lookups = now.saturating_sub(self.born_at.load(Relaxed)) as f64;
        let keys = keys.max(1) as f64;
        let probes = self.probes() as f64;
        let prior = prior * f64::from_bits(self.inherited.load(Relaxed));
        (probes + PRIOR_LOOKUPS * prior * keys) / ((lookups + PRIOR_LOOKUPS) * keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_moves_from_the_prior_to_the_measure() {
        let heat = TableHeat::default();
        heat.start(1_000, 1.0);
        // No lookups yet: the prior.
        assert!((heat.density(1_000, 100, 0.001) - 0.001).abs() < 1e-12);
        // Probed by every lookup of 1M: each key's place was hit with 1/100 chance.
        for i in 0..1_000_000 {
            heat.probed(i % 100 == 0);
        }
        assert_eq!((heat.probes(), heat.false_positives()), (1_000_000, 10_000));
        let d = heat.density(1_001_000, 100, 0.001);
        assert!((d - 0.01).abs() < 0.0001, "{d}");
        // Never probed by 1M lookups: far below the prior.
        let cold = TableHeat::default();
        assert!(cold.density(1_000_000, 100, 0.001) < 0.00001);
        // Written hot and not read since: still hot.
        let kept = TableHeat::default();
        kept.start(50, 4.0);
        assert!((kept.density(50, 100, 0.001) - 0.004).abs() < 1e-12);
    }
}
