//! Zipf-distributed ranks for `readzipf`: rank `r` of `0..n` drawn with probability
//! `∝ 1 / (r + 1)^θ`, by Gray et al.'s method ("Quickly generating billion-record synthetic
//! databases", SIGMOD 1994; what YCSB's `ZipfianGenerator` uses): O(n) set-up for `ζ(n, θ)`,
//! then O(1) per draw. Ranks 0 and 1 are exact; the rest follow a closed-form approximation of
//! the inverse (each rank near the head within about 20 % of its Zipf probability, the tail's
//! mass right), as YCSB's do.

use super::keys::Rng;

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zeta_n: f64,
    eta: f64,
}

/// `ζ(n, θ) = Σ_{i=1..n} 1 / i^θ`.
fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| (i as f64).powf(-theta)).sum()
}

impl Zipf {
    /// Ranks `0..n` (`n ≥ 2`) with skew `theta` in `(0, 1)` (0.99: YCSB's).
    pub fn new(n: u64, theta: f64) -> Zipf {
        let n = n.max(2);
        let zeta_n = zeta(n, theta);
        let zeta_2 = zeta(2, theta);
        Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta_n,
            eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n),
        }
    }

    /// One rank (0: the most frequent).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        // A uniform draw in [0, 1) from 53 random bits.
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let rank = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        rank.min(self.n - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_the_zipf_law() {
        let zipf = Zipf::new(100_000, 0.99);
        let mut rng = Rng::new(7, 1);
        let draws = 400_000;
        let mut counts = vec![0u64; 100_000];
        for _ in 0..draws {
            counts[zipf.sample(&mut rng) as usize] += 1;
        }
        let expected = |r: u64| draws as f64 * ((r + 1) as f64).powf(-0.99) / zeta(100_000, 0.99);
        // Ranks 0 and 1 are drawn exactly; beyond them the method's closed-form inverse is an
        // approximation (about 20 % off per rank near the head, as in YCSB).
        for (r, tolerance) in [(0u64, 0.05), (1, 0.05), (2, 0.3), (9, 0.3)] {
            let got = counts[r as usize] as f64;
            let off = (got / expected(r) - 1.0).abs();
            assert!(off < tolerance, "rank {r}: {got} vs {}", expected(r));
        }
        // The top 1 % of ranks take over half of the draws at θ = 0.99.
        let top: u64 = counts[..1_000].iter().sum();
        assert!(top as f64 > 0.5 * draws as f64, "{top}");
    }
}
