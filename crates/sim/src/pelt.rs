// SPDX-License-Identifier: GPL-2.0-only
//! PELT's decay in its continuous form: after `dt` ns a past value weighs
//! exp(-dt ln 2 / 32 ms) (docs/model.md, PELT and schedutil). The fair
//! class's run queue and task loads and the CPUs' and tasks' utilisations
//! all decay by it.
//!
//! The same few gaps come back again and again (a task that sleeps 100 us
//! decays its load over exactly 100,000 ns at every wake-up; three
//! quarters of the storm's gaps were seen before in a 256-entry table), so
//! `Decay` remembers the factor of recent gaps: the very number `exp` gave
//! for the same gap, so results do not change, for a load and a compare
//! instead of a call into libm.

use std::cell::Cell;

/// PELT's half-life (docs/model.md, PELT and schedutil: `LOAD_AVG_PERIOD`
/// 32 periods of 1,024 us, y^32 = 1/2, taken as 32 ms).
pub const HALF_LIFE_NS: f64 = 32e6;

/// The decay over `t` ns, computed.
#[inline]
pub fn decay(t: f64) -> f64 {
    (-t * (std::f64::consts::LN_2 / HALF_LIFE_NS)).exp()
}

const SLOTS: usize = 256;

/// `decay` of recent integer gaps, one gap per slot (the slot picked by a
/// multiplicative hash of the gap). Interior mutability: the fair class
/// reads loads from `&self` methods.
#[derive(Clone)]
pub struct Decay {
    slots: Box<[Cell<(u64, f64)>; SLOTS]>,
}

impl Default for Decay {
    fn default() -> Self {
        // A gap of 0 decays by exactly 1: every slot starts true.
        Decay { slots: Box::new([const { Cell::new((0, 1.0)) }; SLOTS]) }
    }
}

impl std::fmt::Debug for Decay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decay")
    }
}

impl Decay {
    /// The decay over `dt` ns: `decay(dt as f64)`.
    #[inline]
    pub fn after(&self, dt: u64) -> f64 {
        let slot = &self.slots[(dt.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize];
        let (gap, factor) = slot.get();
        if gap == dt {
            return factor;
        }
        let factor = decay(dt as f64);
        slot.set((dt, factor));
        factor
    }

    /// `v` after `dt` ns of decaying toward `target`.
    #[inline]
    pub fn toward(&self, target: f64, v: f64, dt: u64) -> f64 {
        target + (v - target) * self.after(dt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Remembered or not, the factor is the bit pattern `decay` gives,
    /// including for gaps that share a slot and evict each other.
    #[test]
    fn remembered_factors_are_the_computed_ones() {
        let d = Decay::default();
        let mut gaps: Vec<u64> = (0..5_000u64).map(|i| i * 7_919 % 3_000_001).collect();
        gaps.extend([0, 1, 100_000, 32_000_000, u64::MAX / 2, 100_000, 0]);
        for _ in 0..3 {
            for &g in &gaps {
                assert_eq!(d.after(g).to_bits(), decay(g as f64).to_bits(), "gap {g}");
            }
        }
        assert!((d.after(32_000_000) - 0.5).abs() < 1e-15);
    }
}
