//! The density policy: when the step keeps each agent's clearance (a lower bound on its
//! distance to everyone else, which lets searches and collision passes skip agents that cannot
//! reach anyone), and when a crowd pressed together goes without them because hardly anyone
//! would be clear.

use super::*;
use crate::simd::{V3, baseline, generic};

/// Steps that a dense crowd goes without clearances before they are measured again (four times
/// as many where hardly anyone was clear).
pub(crate) const DENSE_STEPS: u32 = 15;
/// A collision pass after one that flagged more than one agent in this many goes over everyone
/// instead of marking those near the flagged (see `Crowd::marked_pass`): about where marking
/// stops paying on a crowd of a million (the measurement is in `docs/benchmarks.md`).
pub(crate) const MARK_BELOW_EVERY_NTH: usize = 4;

impl Crowd {
    /// Carry each agent's clearance (see `collision_pass`) into the next step, as a lower bound
    /// at its final position kept in its flags: the next step's separation search then skips
    /// agents that cannot have anyone in reach (exactly: it would find no one).
    /// `since`: what is known of the moves since the snapshot was refreshed (see
    /// [`NeighbourGrid::take_moves`], with the agents in `pushed`).
    pub(crate) fn keep_clearances(&mut self, clearances: &mut [u32], since: Option<f32>) {
        // Bring the bounds up to the final positions.
        self.neighbours.take_moves::<true>(
            &self.positions,
            since,
            &self.pushed,
            clearances,
            &mut self.scratch.partial_moves,
        );
        let ng = &self.neighbours;
        // Levels fine enough for the reaches that matter (a few separation radii).
        let unit = self.config.separation_radius.max(2.0 * ng.widest) / 16.0;
        let (less, inv_unit) = (ng.moved + ng.slack, unit.recip());
        // In a dense crowd nearly everyone has someone in reach, and measuring clearances costs
        // more than the searches it saves: then do without for a while. Those clear of the
        // reach are counted in the same pass, piece by piece.
        let reach_level = reach_level(self.config.separation_radius + ng.slack, inv_unit);
        let n = self.flags.len();
        self.scratch.partial_counts.clear();
        self.scratch
            .partial_counts
            .resize(n.div_ceil(SLOTS_PER_REDUCTION), 0);
        let isa = self.isa();
        let work = |(c, (flags, count)): (usize, (&mut [AgentFlags], &mut u32))| {
            let clear = &clearances[c * SLOTS_PER_REDUCTION..c * SLOTS_PER_REDUCTION + flags.len()];
            *count = levels(isa, flags, clear, less, inv_unit, reach_level);
        };
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            self.flags
                .par_chunks_mut(SLOTS_PER_REDUCTION)
                .zip(self.scratch.partial_counts.par_iter_mut())
                .enumerate()
                .for_each(work);
        }
        #[cfg(not(feature = "parallel"))]
        self.flags
            .chunks_mut(SLOTS_PER_REDUCTION)
            .zip(self.scratch.partial_counts.iter_mut())
            .enumerate()
            .for_each(work);
        self.clearance_unit = unit;
        #[cfg(test)]
        if self.test.search_everyone {
            self.clearance_unit = 0.0;
        }
        let clear: u32 = self.scratch.partial_counts.iter().sum();
        if (clear as usize) < self.alive / 8 {
            // Measuring again costs a step and a half of a dense crowd: one far from clearing
            // up (a crowd pressed together) is measured four times less often.
            self.dense_steps = if (clear as usize) < self.alive / 64 {
                4 * DENSE_STEPS
            } else {
                DENSE_STEPS
            };
        }
        // (`take_moves` took the step's last moves.)
        self.snapshot_current = true;
    }

    /// How many steps to go without clearances, guessed from the grid's occupied cells (see
    /// [`NeighbourGrid::clear_share`]) with the rule `keep_clearances` applies to the measured
    /// share of agents clear of the separation reach: none for one in 8 or more, four times
    /// as many under one in 64. O(cells).
    pub(crate) fn guess_dense_steps(&self) -> u32 {
        let ng = &self.neighbours;
        let reach = self.config.separation_radius.max(2.0 * ng.widest);
        let clear = ng.clear_share(self.alive, reach);
        if clear * 64.0 < 1.0 {
            4 * DENSE_STEPS
        } else if clear * 8.0 < 1.0 {
            DENSE_STEPS
        } else {
            0
        }
    }
}

/// [`clearance_levels`] in the compilation this CPU runs (x86-64-v3 with a `V3`).
/// The clearance level an agent must reach to have no one within `reach`: one above the level
/// of `reach` itself, saturating (a unit so small that the reach is beyond every level leaves no
/// one clear, rather than wrapping round to everyone).
fn reach_level(reach: f32, inv_unit: f32) -> u8 {
    ((reach * inv_unit) as u8).saturating_add(1)
}

fn levels(
    v3: Option<V3>,
    flags: &mut [AgentFlags],
    clear: &[u32],
    less: f32,
    inv_unit: f32,
    reach: u8,
) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(v3) = v3 {
        return v3.clearance_levels(flags, clear, less, inv_unit, reach);
    }
    let _ = v3;
    clearance_levels(flags, clear, less, inv_unit, reach)
}

/// Each agent's clearance (`f32` bits), less `less`, in levels of `1 / inv_unit` rounded down,
/// into the flags' clearance bits; returns how many reach `reach` levels. Four at a time
/// ([`baseline::levels4`]), the rest one by one, with the same levels.
#[inline(always)]
pub(crate) fn clearance_levels(
    flags: &mut [AgentFlags],
    clear: &[u32],
    less: f32,
    inv_unit: f32,
    reach: u8,
) -> u32 {
    let mut count = 0u32;
    let whole = flags.len().min(clear.len()) / 4 * 4;
    let shift = AgentFlags::CLEARANCE_SHIFT;
    let low_bits = u32::from_ne_bytes([(1 << shift) - 1; 4]);
    let most = AgentFlags::CLEARANCE_LEVELS;
    for (flags, clear) in flags[..whole]
        .chunks_exact_mut(4)
        .zip(clear.chunks_exact(4))
    {
        let (flags, clear): (&mut [AgentFlags; 4], &[u32; 4]) =
            (flags.try_into().expect("4"), clear.try_into().expect("4"));
        let (levels, reached) = baseline::levels4(clear, less, inv_unit, most, reach);
        let word = AgentFlags::word4(flags);
        AgentFlags::set_word4(flags, (word & low_bits) | (levels << shift));
        count += reached;
    }
    for (flags, &clearance) in flags[whole..].iter_mut().zip(&clear[whole..]) {
        let level = generic::level(clearance, less, inv_unit, most);
        flags.set_clearance_level(level);
        count += (level >= reach) as u32;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reach_beyond_every_level_saturates_instead_of_wrapping() {
        // Found by fuzzing the crowd: a separation radius of 2.3e-38 cells made the unit so
        // small that the reach's level overflowed (0 in a release build: everyone "clear").
        assert_eq!(reach_level(1.0, 16.0), 17);
        assert_eq!(reach_level(1.0, 1.0 / 1e-39), 255);
        assert_eq!(reach_level(1.0, f32::INFINITY), 255);
        assert_eq!(reach_level(0.0, f32::INFINITY), 1);
    }

    #[test]
    fn the_fuzzed_crowd_with_a_vanishing_separation_radius_steps() {
        // The fuzzer's input, as a test on stable: no agents, a separation radius of 2.3e-38.
        let cost = CostField::new(Grid::new(12, 12).unwrap());
        let config = CrowdConfig {
            separation_radius: 2.286_703_9e-38,
            separation_weight: 0.0,
            arrival_radius: 1.799_975_7e-38,
            collision_passes: 131 % 8,
            ..CrowdConfig::default()
        };
        let mut crowd = Crowd::new(*cost.grid(), config).unwrap();
        let flow = FlowField::new(*cost.grid());
        let groups = [Group {
            flow: &flow,
            goal: Vec2::new(0.5, 9.5),
        }];
        crowd.step(0.0, &cost, &groups).unwrap();
        assert!(crowd.is_empty());
    }
}
