//! Which instruction set the hot filter kernels run with, chosen at run time.
//!
//! Why: a service that depends on siftdb builds it for the baseline of its target (x86-64 v1:
//! no POPCNT, BMI1 or BMI2), whatever this workspace's own build settings say. The query and
//! build kernels of the blocked bloom and ribbon filters are compiled twice — for the baseline
//! and, on x86-64, for the scalar part of the "v3" level the machines of the last decade have
//! (BMI1, BMI2, POPCNT, LZCNT; AVX2 is left out: with it the compiler vectorizes the probe loops
//! into gathers, measured 10–20 % slower) — and each call takes the best one the CPU running it
//! supports. The
//! choice is made once per process (`SIFTDB_FILTER_KERNEL=portable` forces the baseline, for
//! comparisons and tests) and costs one relaxed atomic load per call.
//!
//! Both versions run the same source (an `#[inline(always)]` body), so they give identical
//! answers: only the instructions differ.

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction set the filter kernels can run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The target's baseline instructions only (what any build of the target can run).
    Portable,
    /// The scalar part of x86-64 v3: BMI1, BMI2, POPCNT and LZCNT (Haswell, Zen and later).
    X86V3,
}

impl Kernel {
    /// A short name for reports (`portable`, `x86-64-v3`).
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            Kernel::X86V3 => "x86-64-v3",
        }
    }
}

const UNKNOWN: u8 = 0;
const PORTABLE: u8 = 1;
const X86_V3: u8 = 2;

static CHOSEN: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The kernel this process runs the filters with.
pub fn active() -> Kernel {
    match chosen() {
        X86_V3 => Kernel::X86V3,
        _ => Kernel::Portable,
    }
}

/// Whether the x86-64 v3 kernels may run here (decided once).
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn x86_v3() -> bool {
    chosen() == X86_V3
}

#[inline(always)]
fn chosen() -> u8 {
    match CHOSEN.load(Ordering::Relaxed) {
        UNKNOWN => choose(),
        known => known,
    }
}

#[cold]
fn choose() -> u8 {
    let forced_portable =
        std::env::var("SIFTDB_FILTER_KERNEL").is_ok_and(|v| v.eq_ignore_ascii_case("portable"));
    let choice = if !forced_portable && cpu_has_x86_v3() {
        X86_V3
    } else {
        PORTABLE
    };
    // Every thread that races here computes the same answer.
    CHOSEN.store(choice, Ordering::Relaxed);
    choice
}

fn cpu_has_x86_v3() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("lzcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_stable_and_named() {
        let first = active();
        assert_eq!(active(), first);
        assert!(matches!(first.name(), "portable" | "x86-64-v3"));
        #[cfg(not(target_arch = "x86_64"))]
        assert_eq!(first, Kernel::Portable);
    }
}
