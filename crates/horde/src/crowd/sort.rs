//! Filing the agents: the sort that puts them in neighbour-grid order (slot `k` is the grid's
//! entry `k` afterwards), and the refresh that takes their positions into the grid's snapshot
//! between sorts.

use super::*;
use crate::crowd::neighbours::sort_parts;

impl Crowd {
    /// Sort the living agents by neighbour-grid cell, dropping removed ones, so that afterwards
    /// slot `k` is the grid's entry `k`. The grid's snapshot already holds the positions in the
    /// new order, so the old positions' buffer serves as scratch through which every other
    /// array is gathered (in parallel): sorting costs no memory beyond the grid.
    pub(crate) fn sort_agents(&mut self) {
        self.rebuild_neighbours();
        let live = self.neighbours.slots.len();
        let order = &self.neighbours.slots;
        let mut scratch = std::mem::take(&mut self.positions);
        scratch.resize(scratch.len().max(live), Vec2::ZERO);

        let velocities = &self.velocities;
        gather(order, &mut scratch, |o| velocities[o]);
        std::mem::swap(&mut self.velocities, &mut scratch);
        self.velocities.truncate(live);
        scratch.resize(scratch.len().max(live), Vec2::ZERO);

        // The other fields go two at a time, as the bits of a `Vec2`'s lanes (moving an `f32`
        // keeps its bits exactly).
        let (radii, speeds) = (&self.radii, &self.max_speeds);
        gather(order, &mut scratch, |o| Vec2::new(radii[o], speeds[o]));
        unpack(
            &scratch[..live],
            &mut self.radii,
            &mut self.max_speeds,
            |v| (v.x, v.y),
        );
        let (anchors, timers) = (&self.anchors, &self.timers);
        gather(order, &mut scratch, |o| Vec2::new(anchors[o], timers[o]));
        unpack(&scratch[..live], &mut self.anchors, &mut self.timers, |v| {
            (v.x, v.y)
        });
        let (ids, groups, flags) = (&self.ids, &self.groups, &self.flags);
        gather(order, &mut scratch, |o| {
            let tag = groups[o] as u32 | (flags[o].bits() as u32) << 16;
            Vec2::new(f32::from_bits(ids[o]), f32::from_bits(tag))
        });
        self.ids.resize(live, 0);
        self.groups.resize(live, 0);
        self.flags.resize(live, AgentFlags::default());
        let tags = &scratch[..live];
        type Tags<'t> = (
            usize,
            ((&'t mut [u32], &'t mut [u16]), &'t mut [AgentFlags]),
        );
        let work = |(c, ((ids, groups), flags)): Tags| {
            let entries = ids.iter_mut().zip(groups).zip(flags);
            for (((id, group), flags), tag) in entries.zip(&tags[c * SLOTS_PER_REDUCTION..]) {
                let bits = tag.y.to_bits();
                let flag_bits = AgentFlags::from_bits((bits >> 16) as u8);
                (*id, *group, *flags) = (tag.x.to_bits(), bits as u16, flag_bits);
            }
        };
        each_piece!(SLOTS_PER_REDUCTION, work, self.ids, self.groups, self.flags);
        self.states.clear();
        self.states.extend_from_slice(&self.neighbours.states);
        // Each id's new slot is the new slot of its old one. Where each old slot went is parked
        // as bits in the scratch, each thread taking a run of old slots (reading the whole
        // order, which mostly keeps them in place); then each id reads its own, its removed
        // ones keeping none. (Writing each slot at its id instead costs more: the ids
        // lie in no order the sort keeps, and random writes cost more than random reads.)
        let width = scratch.len().div_ceil(sort_parts()).max(1);
        each_chunk(&mut scratch, width, |c, run| {
            let lo = c * width;
            for (k, &old) in order.iter().enumerate() {
                let at = (old as usize).wrapping_sub(lo);
                if at < run.len() {
                    run[at].x = f32::from_bits(k as u32);
                }
            }
        });
        let went = &scratch;
        each_chunk(&mut self.id_slots, SLOTS_PER_REDUCTION, |_, piece| {
            for slot in piece {
                if *slot != u32::MAX {
                    *slot = went[*slot as usize].x.to_bits();
                }
            }
        });

        scratch.truncate(live);
        let ng = &self.neighbours;
        fill(&mut scratch, |k| ng.point(k));
        self.positions = scratch;
        self.sorted = true;
        self.snapshot_current = true;
    }

    /// Take the current positions into the neighbour grid's snapshot, keeping the grid. Only
    /// while slot k is entry k (`sorted`). The clearances that the last step left in the sort
    /// order's buffer are not read again, so they are left as they are.
    pub(crate) fn refresh_snapshot(&mut self) {
        if self.snapshot_current {
            // Nothing moved since: the refresh would change no bits.
            #[cfg(test)]
            for (k, &p) in self.positions.iter().enumerate() {
                assert!(p == self.neighbours.point(k), "agent {k} moved since");
            }
            return;
        }
        self.snapshot_current = true;
        let mut scratch = std::mem::take(&mut self.neighbours.slots);
        scratch.resize(self.positions.len(), 0);
        self.neighbours.refresh_points::<false>(
            &self.positions,
            &mut scratch,
            &mut self.scratch.partial_moves,
        );
        self.neighbours.slots = scratch;
    }

    pub(crate) fn rebuild_neighbours(&mut self) {
        self.neighbours.rebuild(
            &self.positions,
            &self.flags,
            &self.radii,
            &self.states,
            self.alive,
        );
    }
}
