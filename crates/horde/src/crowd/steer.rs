//! One agent's step: the desired direction from its flow field, separation from its nearest
//! neighbours (DetourCrowd's kernel), the velocity, and the move. Every agent writes only its
//! own entries and reads the others in the neighbour grid's snapshot, so the loop runs in
//! pieces on any number of threads, compiled twice and chosen per CPU ([`update`]); the x86-64-v3
//! compilation steps most agents eight at once (`steer8`).

use super::*;
#[cfg(target_arch = "x86_64")]
use crate::simd::x86_64::steer8::StagedLanes;
use crate::simd::{Level, Plain, V3};

/// The unit vector from neighbour `j` to agent `i`; coincident agents split deterministically,
/// along a direction made from the pair's slots, never by a random draw.
pub(crate) fn coincident_safe_dir(diff: Vec2, d: f32, i: u32, j: u32) -> Vec2 {
    if d > 1e-5 {
        return diff / d;
    }
    let (lo, hi) = (i.min(j), i.max(j));
    let a = lo.wrapping_mul(2_654_435_761) ^ hi.wrapping_mul(40_503);
    let angle = (a % 3600) as f32 * (std::f32::consts::TAU / 3600.0);
    let v = Vec2::new(angle.cos(), angle.sin());
    if i < j { v } else { -v }
}

/// What an agent learns from its nearest neighbours.
pub(crate) struct Contacts {
    /// DetourCrowd's separation push.
    pub(crate) push: Vec2,
    /// Touching an arrived agent of its group that is nearer the goal.
    pub(crate) blocked_by_arrived: bool,
    /// Touching an arrived agent of its group.
    pub(crate) touching_arrived: bool,
    /// Half of every overlap, as a displacement away from the neighbours.
    pub(crate) unpenetrate: Vec2,
    /// Unit vectors from touching neighbours to the agent.
    pub(crate) normals: [Vec2; MOST_NEIGHBOURS],
    /// How many of `normals` are set.
    pub(crate) touching: usize,
    /// A lower bound on the distance to every other agent ([`NeighbourGrid::for_each_near`]).
    pub(crate) clearance: f32,
}

/// What the second half of an agent's step ([`StepContext::finish`]) takes from the first.
#[derive(Clone, Copy)]
pub(crate) struct Walk {
    /// Where its field says to go (a unit vector, or zero once it arrived or has no way).
    pub(crate) desired: Vec2,
    /// The separation push.
    pub(crate) push: Vec2,
    /// Half of every overlap, as a displacement away from the neighbours.
    pub(crate) unpenetrate: Vec2,
    pub(crate) dist_goal: f32,
    /// The radius of the pile round its goal.
    pub(crate) pile: f32,
    /// Touching an arrived agent of its group.
    pub(crate) touching_arrived: bool,
}

/// Most touching neighbours an agent may have for its step to be finished eight at once. Two
/// would do in a crowd walking in lanes, but in one pressed together (a million on 1024 × 1024
/// after a few seconds) nearly half touch three or more, and twelve seconds in one in six
/// touches five or more. (The eight-at-once separation takes up to four or up to six, see
/// `separation8`.)
pub(crate) const STAGED_NORMALS: usize = 6;

/// An agent's step between [`StepContext::start`] and [`StepContext::finish`]: its walk, its
/// state so far, and the normals of the neighbours it touches (the first `touching`).
#[derive(Clone, Copy)]
pub(crate) struct Staged {
    pub(crate) walk: Walk,
    pub(crate) state: AgentState,
    pub(crate) normals: [Vec2; STAGED_NORMALS],
    pub(crate) touching: usize,
}

/// One agent's position, velocity, state, anchor, timer and flags, as the update writes them.
pub(crate) type Entries<'r> = (
    &'r mut Vec2,
    &'r mut Vec2,
    &'r mut AgentState,
    &'r mut f32,
    &'r mut f32,
    &'r mut AgentFlags,
);

/// A piece of every slot array that the update writes, as [`each_piece`] hands them out.
pub(crate) type AgentPiece<'r> = (
    usize,
    (
        (
            (
                (
                    ((&'r mut [Vec2], &'r mut [Vec2]), &'r mut [AgentState]),
                    &'r mut [f32],
                ),
                &'r mut [f32],
            ),
            &'r mut [AgentFlags],
        ),
        &'r mut [u32],
    ),
);

/// The entries of the slots `first..first + positions.len()` that the update writes.
pub(crate) struct AgentRows<'r> {
    pub(crate) first: usize,
    pub(crate) positions: &'r mut [Vec2],
    pub(crate) velocities: &'r mut [Vec2],
    pub(crate) states: &'r mut [AgentState],
    pub(crate) anchors: &'r mut [f32],
    pub(crate) timers: &'r mut [f32],
    pub(crate) flags: &'r mut [AgentFlags],
    pub(crate) clearances: &'r mut [u32],
}

/// Slots per piece of the loops that [`update`] dispatches: small enough to balance two threads
/// on 10,000 agents, large enough that the dispatch is free.
pub(crate) const SLOTS_PER_PIECE: usize = 1024;

/// The update of every living agent among `rows`, in the compilation this CPU runs: the
/// baseline x86-64 (SSE2) one, or with a `V3` the one for x86-64-v3 (AVX2, BMI1/2, LZCNT:
/// three-operand instructions and bit tricks, and most of the update eight agents at once,
/// `FlowField::bilinear8`, `StepContext::start8` and `StepContext::finish8`). Rust never fuses
/// a multiply and an add on its own, and the eight-lane code does the same operations in the
/// same order, so both give the same bits (tested).
pub(crate) fn update(v3: Option<V3>, ctx: &StepContext, rows: AgentRows) {
    #[cfg(target_arch = "x86_64")]
    if let Some(v3) = v3 {
        return v3.update_rows(ctx, rows);
    }
    let _ = v3;
    update_rows(Plain, ctx, rows)
}

/// Slots that the x86-64-v3 update takes together: their flow samples, then the first halves
/// of their steps (but for the neighbour searches), then the second halves, eight at once.
pub(crate) const AGENTS_PER_BLOCK: usize = 8;

/// The update of the living agents among `rows`: one at a time, or with a `V3` (compiled for
/// x86-64-v3 by `V3::update_rows`) a block of [`AGENTS_PER_BLOCK`] at a time, their flow samples, the first halves of
/// their steps but for the searches, and the second halves taken eight at once
/// ([`StepContext::sample8`], [`StepContext::start8`], [`StepContext::finish8`]). The bits are
/// the same.
#[inline(always)]
pub(crate) fn update_rows(level: impl Level, ctx: &StepContext, rows: AgentRows) {
    #[cfg(target_arch = "x86_64")]
    let v3 = level.v3();
    #[cfg(not(target_arch = "x86_64"))]
    let v3: Option<()> = None;
    if v3.is_none() {
        // One agent at a time, its sample and its step.
        let entries = rows
            .positions
            .iter_mut()
            .zip(rows.velocities.iter_mut())
            .zip(rows.states.iter_mut())
            .zip(rows.anchors.iter_mut())
            .zip(rows.timers.iter_mut())
            .zip(rows.flags.iter_mut())
            .zip(rows.clearances.iter_mut());
        for (i, ((((((pos, vel), state), anchor), timer), flags), clear)) in
            (rows.first..).zip(entries)
        {
            if flags.is_alive() {
                let sample = ctx.sample(i, *pos);
                let entries = (pos, vel, state, anchor, timer, flags);
                ctx.start::<false>(Plain, i, entries, clear, sample);
            }
        }
        return;
    }
    let blocks = rows
        .positions
        .chunks_mut(AGENTS_PER_BLOCK)
        .zip(rows.velocities.chunks_mut(AGENTS_PER_BLOCK))
        .zip(rows.states.chunks_mut(AGENTS_PER_BLOCK))
        .zip(rows.anchors.chunks_mut(AGENTS_PER_BLOCK))
        .zip(rows.timers.chunks_mut(AGENTS_PER_BLOCK))
        .zip(rows.flags.chunks_mut(AGENTS_PER_BLOCK))
        .zip(rows.clearances.chunks_mut(AGENTS_PER_BLOCK));
    let mut first = rows.first;
    #[cfg(target_arch = "x86_64")]
    let mut walks = StagedLanes::default();
    for ((((((positions, velocities), states), anchors), timers), flags), clearances) in blocks {
        #[cfg(target_arch = "x86_64")]
        if let Some(v3) = v3
            && let (Ok(positions), Ok(velocities), Ok(states), Ok(anchors), Ok(timers), Ok(flags)) = (
                <&mut [Vec2; AGENTS_PER_BLOCK]>::try_from(&mut *positions),
                <&mut [Vec2; AGENTS_PER_BLOCK]>::try_from(&mut *velocities),
                <&mut [AgentState; AGENTS_PER_BLOCK]>::try_from(&mut *states),
                <&mut [f32; AGENTS_PER_BLOCK]>::try_from(&mut *anchors),
                <&mut [f32; AGENTS_PER_BLOCK]>::try_from(&mut *timers),
                <&mut [AgentFlags; AGENTS_PER_BLOCK]>::try_from(&mut *flags),
            )
        {
            walks.clear();
            let mut rows = (positions, velocities, states, anchors, timers, flags);
            if let Some(eight) = v3.sample8(ctx, first, rows.0, rows.5) {
                // The first halves eight at once but for the searches.
                v3.start8(ctx, first, &eight, &mut walks, &mut rows, clearances);
            } else {
                // The first halves one by one.
                let alive =
                    (0..AGENTS_PER_BLOCK).fold(0, |m, l| m | (rows.5[l].is_alive() as u32) << l);
                v3.start_lanes(ctx, first, alive, &mut walks, &mut rows, clearances);
            }
            // Then those left staged eight at once.
            if walks.staged != 0 {
                v3.finish8(ctx, first, &walks, rows);
            }
            first += AGENTS_PER_BLOCK;
            continue;
        }
        let entries = positions
            .iter_mut()
            .zip(velocities.iter_mut())
            .zip(states.iter_mut())
            .zip(anchors.iter_mut())
            .zip(timers.iter_mut())
            .zip(flags.iter_mut())
            .zip(clearances.iter_mut());
        for (i, ((((((pos, vel), state), anchor), timer), flags), clear)) in (first..).zip(entries)
        {
            if flags.is_alive() {
                let sample = ctx.sample(i, *pos);
                let entries = (pos, vel, state, anchor, timer, flags);
                ctx.start::<false>(Plain, i, entries, clear, sample);
            }
        }
        first += AGENTS_PER_BLOCK;
    }
}

pub(crate) struct StepContext<'a> {
    pub(crate) dt: f32,
    pub(crate) config: &'a CrowdConfig,
    pub(crate) grid: Grid,
    pub(crate) costs: &'a [u8],
    pub(crate) groups: &'a [Group<'a>],
    pub(crate) neighbours: &'a NeighbourGrid,
    pub(crate) radii: &'a [f32],
    pub(crate) max_speeds: &'a [f32],
    pub(crate) group_of: &'a [u16],
    pub(crate) piles: &'a [f32],
    pub(crate) clearance_unit: f32,
    pub(crate) track_clearances: bool,
    /// Agents that move further than this are flagged `PUSHED` (when clearances are tracked).
    pub(crate) walk_bound: f32,
    /// Agents of different groups keep to their right of each other (see [`Self::pass_side`]).
    pub(crate) passing: bool,
    pub(crate) traffic: &'a Traffic,
    /// Bit k set if slot k was flagged stuck when the step began (empty when no one was).
    pub(crate) was_stuck: &'a [u64],
}

impl StepContext<'_> {
    /// True if the straight segment from `a` to `b` crosses no wall cell, squeezes past no wall
    /// corner, and crosses no terrain costlier than the cell it starts on, walking the cells it
    /// passes through. (The field may go round costly terrain; a line through it would pull the
    /// agent off the field's way at one spot and let it back at the next, and it would swing
    /// between the two.)
    pub(crate) fn clear_line(&self, a: Vec2, b: Vec2) -> bool {
        let g = self.grid;
        let (pa, pb) = (g.world_to_grid(a), g.world_to_grid(b));
        let cost = |x: f32, y: f32| {
            if x < 0.0 || y < 0.0 || x >= g.width() as f32 || y >= g.height() as f32 {
                WALL
            } else {
                self.costs[y as usize * g.width() as usize + x as usize]
            }
        };
        let mut prev = pa.floor();
        let start = cost(prev.x, prev.y);
        if start == WALL {
            return false;
        }
        let d = pb - pa;
        let steps = (d.x.abs().max(d.y.abs()) * 2.0).ceil().max(1.0) as u32;
        for s in 1..=steps {
            let q = (pa + d * (s as f32 / steps as f32)).floor();
            if q != prev {
                let wall = |x: f32, y: f32| cost(x, y) == WALL;
                if cost(q.x, q.y) > start
                    || (q.x != prev.x && q.y != prev.y && (wall(q.x, prev.y) || wall(prev.x, q.y)))
                {
                    return false;
                }
                prev = q;
            }
        }
        true
    }

    /// How far from the goal of group `group` its pile of arrived agents reaches (from the last
    /// step).
    #[inline(always)]
    pub(crate) fn pile_radius(&self, group: u16) -> f32 {
        let cfg = self.config;
        self.piles
            .get(group as usize)
            .copied()
            .unwrap_or(cfg.arrival_radius)
    }

    /// The walk of an agent in `state`, heading `desired`, `dist_goal` from its goal, once its
    /// `contact`s are known, and its state after them. A moving agent pressed against an
    /// arrived one that is nearer the goal, within the `pile`, is as close as it will get: it
    /// arrives too, so a crowd piles up round its flag instead of pushing.
    #[inline(always)]
    pub(crate) fn walk(
        &self,
        mut state: AgentState,
        mut desired: Vec2,
        contact: &Contacts,
        dist_goal: f32,
        pile: f32,
    ) -> (AgentState, Walk) {
        if state == AgentState::Moving && contact.blocked_by_arrived && dist_goal <= pile {
            state = AgentState::Arrived;
            desired = Vec2::ZERO;
        }
        let walk = Walk {
            desired,
            push: contact.push,
            unpenetrate: contact.unpenetrate,
            dist_goal,
            pile,
            touching_arrived: contact.touching_arrived,
        };
        (state, walk)
    }

    /// The flow sample of agent `i`, standing at `p`, in the crowd's way of sampling.
    #[inline(always)]
    pub(crate) fn sample(&self, i: usize, p: Vec2) -> FlowSample {
        let grp = &self.groups[self.group_of[i] as usize];
        match self.config.sampling {
            Sampling::Nearest => grp.flow.sample_nearest(p),
            Sampling::Bilinear => grp.flow.bilinear(p),
        }
    }

    /// One agent's step, written into its own entries: where it wants to go and who it touches
    /// ([`Self::start`]), then how it moves ([`Self::finish`]).
    ///
    /// With `STAGE`, an agent that touches at most [`STAGED_NORMALS`] neighbours (nearly
    /// everyone) is left where it stands with its entries unchanged but its clearance, and
    /// returned [`Staged`], so that eight agents can finish at once (`finish8`). `level` is
    /// that of the neighbour search ([`NeighbourGrid::for_each_near_in`]).
    #[inline(always)]
    pub(crate) fn start<const STAGE: bool>(
        &self,
        level: impl Level,
        i: usize,
        entries: Entries,
        clearance: &mut u32,
        sample: FlowSample,
    ) -> Option<Staged> {
        let (position, velocity, agent_state, anchor, timer, flags) = entries;
        let cfg = self.config;
        let p = *position;
        let grp = &self.groups[self.group_of[i] as usize];
        let to_goal = grp.goal - p;
        let dist_goal = to_goal.length();
        let radius = self.radii[i];

        // Where the field says to go: `sample`.
        let mut state = AgentState::Moving;
        let mut desired = match sample {
            FlowSample::Direction(d) => d,
            FlowSample::Goal => to_goal.normalize_or_zero(),
            // Pushed onto a cell its field walls off although the map does not (a size class's
            // inflated field): head back to the nearest cell of the field that has a way.
            FlowSample::NoDirection(NoDirection::Wall) => match self.way_back(grp.flow, p) {
                Some(d) => d,
                None => {
                    state = AgentState::NoPath;
                    Vec2::ZERO
                }
            },
            FlowSample::NoDirection(_) => {
                state = AgentState::NoPath;
                Vec2::ZERO
            }
        };
        // Arrival sticks: an arrived agent that is jostled stays arrived (it only gives way).
        if state == AgentState::Moving
            && (dist_goal <= cfg.arrival_radius || *agent_state == AgentState::Arrived)
        {
            state = AgentState::Arrived;
        }
        if state == AgentState::Moving
            && dist_goal <= cfg.line_of_sight_range
            && dist_goal > 1e-6
            && self.goal_cell(grp)
            && self.clear_line(p, grp.goal)
        {
            desired = to_goal / dist_goal;
        }
        if state != AgentState::Moving {
            desired = Vec2::ZERO;
        } else if self.passing && self.in_traffic(i, p) {
            desired = self.pass_side(i, p, radius, desired);
        }

        // Separation from the k nearest neighbours (DetourCrowd's kernel).
        // The clearance kept from the last step, still a lower bound: no one moved since.
        let known = flags.clearance_level() as f32 * self.clearance_unit;
        // (`STAGE` only in the x86-64-v3 compilation.)
        let contact =
            self.separation::<false>(level, i, p, radius, state, grp.goal, dist_goal, known);
        // Measured on the snapshot the step starts from.
        let ng = self.neighbours;
        *clearance = (smaller(contact.clearance, ng.cap) + ng.moved).to_bits();
        let pile = self.pile_radius(self.group_of[i]);
        let (state, walk) = self.walk(state, desired, &contact, dist_goal, pile);
        if STAGE && contact.touching <= STAGED_NORMALS {
            // (Those past `touching` are zero, as `Contacts` starts.)
            let normals = contact.normals[..STAGED_NORMALS]
                .try_into()
                .expect("no more than Contacts holds");
            return Some(Staged {
                walk,
                state,
                normals,
                touching: contact.touching,
            });
        }
        let normals = &contact.normals[..contact.touching];
        let entries = (position, velocity, agent_state, anchor, timer, flags);
        self.finish(i, &walk, state, normals, entries);
        None
    }

    /// The rest of agent `i`'s step once [`Self::start`] knows where it wants to go (`walk`),
    /// its state so far and the normals of the neighbours it touches: its velocity, its move
    /// along the walls, and whether it is stuck. `entries` are its position, velocity, state,
    /// anchor, timer and flags, read and written.
    #[inline(always)]
    pub(crate) fn finish(
        &self,
        i: usize,
        walk: &Walk,
        mut state: AgentState,
        normals: &[Vec2],
        entries: Entries,
    ) {
        let (position, velocity, agent_state, anchor, timer, flags) = entries;
        let cfg = self.config;
        let (p, v) = (*position, *velocity);
        let (max_speed, radius) = (self.max_speeds[i], self.radii[i]);
        let (unpenetrate, dist_goal, pile) = (walk.unpenetrate, walk.dist_goal, walk.pile);
        let target = if state == AgentState::NoPath {
            Vec2::ZERO
        } else {
            let (desired, push) = (walk.desired, walk.push);
            let blend = desired * cfg.flow_weight + push * cfg.separation_weight;
            let speed = if state == AgentState::Arrived {
                // Arrived agents only give way, at most at walking pace.
                (push.length() * cfg.separation_weight).min(1.0) * max_speed
            } else if cfg.slowdown_radius > 0.0 {
                max_speed * (dist_goal / cfg.slowdown_radius).clamp(0.25, 1.0)
            } else {
                max_speed
            };
            blend.normalize_or_zero() * speed
        };
        // A unit vector (or zero) times a finite speed, whatever the weights.
        debug_assert!(target.is_finite());
        let dv = (target - v).clamp_length_max(cfg.max_acceleration * self.dt);
        let mut vel = (v + dv).clamp_length_max(max_speed);
        // Nobody walks into someone they already touch: the part of the velocity heading into a
        // touching neighbour is removed, so a queue at a door presses no deeper than contact.
        for n in normals {
            let into = vel.dot(*n);
            if into < 0.0 {
                vel -= *n * into;
            }
        }

        // Move, one axis at a time, never into a wall cell: the agent slides along walls and a
        // diagonal move is two straight ones, so it cannot squeeze between two wall corners.
        let cell = self.grid.cell_size();
        // The velocity's step plus half of every overlap with a neighbour (the neighbour moves the
        // other half in its own update), as DetourCrowd's collision resolution does.
        let step = (vel * self.dt + unpenetrate).clamp_length_max(0.45 * cell);
        let walls = WallContext {
            grid: self.grid,
            costs: self.costs,
        };
        let pos = walls.slide(p, step, radius);
        // A blocked axis stops the velocity along it, so it does not build up against a wall.
        let moved = pos - p;
        if moved.x.abs() < 0.5 * step.x.abs() {
            vel.x = 0.0;
        }
        if moved.y.abs() < 0.5 * step.y.abs() {
            vel.y = 0.0;
        }

        // Stuck: no straight-line progress towards the goal for `stuck_time`.
        // (The clearance bits are read in `start`, and written again at the end of the step if
        // they are kept: clear, they serve the collision passes.)
        flags.begin_update();
        *timer += self.dt;
        if state != AgentState::Moving || *anchor - dist_goal >= cfg.stuck_distance {
            *anchor = dist_goal;
            *timer = 0.0;
        } else if *timer >= cfg.stuck_time {
            if dist_goal <= pile + cfg.slowdown_radius || walk.touching_arrived {
                // Held up near the goal, or against agents of its group that got there first
                // (in a winding corridor or a crowded dead end the queue reaches beyond the
                // pile, and what blocks it need not lie straight ahead): as close as it will
                // get.
                state = AgentState::Arrived;
                *timer = 0.0;
            } else if !self.queued(i, p, dist_goal) {
                flags.set_stuck();
            }
        }
        if self.track_clearances && move_bound(pos - p) > self.walk_bound {
            flags.set_pushed();
        }
        *position = pos;
        *velocity = vel;
        *agent_state = state;
    }

    /// True when agents head against agent `i`, standing at `p`, in the blocks ahead of it
    /// (its field's arrow on its cell, and up to `passing_range` along it; see `Traffic`):
    /// agents of another group anywhere, and of its own group unless it is within
    /// `passing_range` of its pile (there its group converges on the goal from every side,
    /// and no one makes way for anyone). Away from the goal, its own group's agents coming
    /// from both sides of a door or a corridor's mouth count too: keeping right there leaves
    /// the other side of the mouth to those coming out. Whole numbers but for the distance
    /// to the goal, which both compilations take alike, so the eight-lane update takes the
    /// same agents out of its lanes (`sample8`) as the one-by-one update steers aside.
    /// O(range / block).
    #[inline(always)]
    pub(crate) fn in_traffic(&self, i: usize, p: Vec2) -> bool {
        let Some(cell) = self.grid.world_to_cell(p) else {
            return false;
        };
        let own = self.group_of[i];
        let grp = &self.groups[own as usize];
        let Some(b) = grp
            .flow
            .byte(cell)
            .filter(|&b| (b as usize) < Dir8::ALL.len())
        else {
            return false;
        };
        let step = Dir8::ALL[b as usize].offset();
        let block = TRAFFIC_BLOCK as i64;
        // (At most 16 blocks, 64 cells, ahead whatever the range.)
        let range = self.config.passing_range;
        let block_side = self.grid.cell_size() * TRAFFIC_BLOCK as f32;
        let blocks = (range / block_side).min(16.0) as i64;
        let near_goal = grp.goal.distance(p) <= self.pile_radius(own) + range;
        (0..=blocks).any(|k| {
            let x = cell.x as i64 + step.0 as i64 * block * k;
            let y = cell.y as i64 + step.1 as i64 * block * k;
            let seen = self.traffic.oncoming(x, y, step, own);
            seen.other_group || (seen.count > 0 && !near_goal)
        })
    }

    /// Keep right of oncoming agents: agent `i` at `p`, heading `desired` with agents heading
    /// against it ahead ([`Self::in_traffic`]), turns to its right, and steps aside instead of
    /// forward when one of another group stands in its way close ahead; unless a wall already
    /// holds it on its right, where it follows its field. O(neighbours within a body or two).
    fn pass_side(&self, i: usize, p: Vec2, radius: f32, desired: Vec2) -> Vec2 {
        let cfg = self.config;
        let right = Vec2::new(-desired.y, desired.x);
        let ng = self.neighbours;
        let own = self.group_of[i];
        let mut close = false;
        // A little slack beside the bodies, a tenth of a cell.
        let slack = 0.1 * self.grid.cell_size();
        let near = 1.6 * (radius + ng.widest + slack);
        ng.for_each_near_in::<false>(Plain, p, i, near, |e, _, _| {
            let g = self.group_of[e];
            if close || g == own || ng.states[e] != AgentState::Moving {
                return;
            }
            let q = ng.point(e);
            let d = q - p;
            let ahead = d.dot(desired);
            if ahead <= 0.0 {
                return;
            }
            let heading = match self.groups[g as usize].flow.sample_nearest(q) {
                FlowSample::Direction(h) => h,
                _ => return,
            };
            if heading.dot(desired) > -0.3 {
                return;
            }
            let need = radius + self.radii[e] + slack;
            let short = d.dot(right) + need;
            close = short > 0.0 && ahead < need * 1.6;
        });
        // A wall within a third of a cell of its right side: it is as far right as it gets.
        let probe = p + right * (radius + 0.35 * self.grid.cell_size());
        let hugging = self.grid.world_to_cell(probe).is_none_or(|c| {
            self.costs[c.y as usize * self.grid.width() as usize + c.x as usize] == WALL
        });
        if hugging {
            // Along its field: turning right would only press it into the wall (beside a
            // corridor's mouth, it would slide away from the mouth).
            desired
        } else if close {
            right
        } else {
            (desired + right * cfg.passing_weight).normalize_or_zero()
        }
    }

    /// True when agent `i`, standing at `p`, `dist_goal` from its goal, waits its turn: it
    /// touches a moving agent of its group that stands nearer the goal (straight-line) and was
    /// not stuck when the step began. Such an agent is held up by its own queue, which moves:
    /// only the head of a queue is flagged stuck, and then, a step later each, those behind
    /// it. Asked only of agents whose stuck timer ran out. O(neighbours within two bodies).
    pub(crate) fn queued(&self, i: usize, p: Vec2, dist_goal: f32) -> bool {
        let ng = self.neighbours;
        let (own, radius) = (self.group_of[i], self.radii[i]);
        let goal = self.groups[own as usize].goal;
        let slack = 0.1 * self.grid.cell_size();
        let mut queued = false;
        ng.for_each_near_in::<false>(Plain, p, i, radius + ng.widest + slack, |e, _, d2| {
            queued = queued
                || (self.group_of[e] == own
                    && ng.states[e] == AgentState::Moving
                    && self
                        .was_stuck
                        .get(e / 64)
                        .is_none_or(|w| w >> (e % 64) & 1 == 0)
                    && d2.sqrt() < radius + self.radii[e] + slack
                    && ng.point(e).distance(goal) < dist_goal);
        });
        queued
    }

    /// For an agent on a walkable map cell that its flow field marks as wall: the direction to
    /// the centre of the first neighbouring cell (in direction order) where the field has a way.
    fn way_back(&self, flow: &FlowField, p: Vec2) -> Option<Vec2> {
        let cell = self.grid.world_to_cell(p)?;
        let w = self.grid.width() as usize;
        if self.costs[cell.y as usize * w + cell.x as usize] == WALL {
            return None;
        }
        Dir8::ALL.into_iter().find_map(|d| {
            let n = self.grid.neighbour(cell, d)?;
            let b = flow.byte(n)?;
            (b <= FLOW_GOAL).then(|| (self.grid.cell_center(n) - p).normalize_or_zero())
        })
    }

    /// True if the agent's flow field has a goal cell at the group's goal position (so a straight
    /// line at the goal point heads for that goal).
    pub(crate) fn goal_cell(&self, grp: &Group) -> bool {
        self.grid
            .world_to_cell(grp.goal)
            .is_some_and(|c| grp.flow.byte(c) == Some(FLOW_GOAL))
    }

    /// The separation push and the contacts with the nearest neighbours. With `SEARCH` the
    /// caller has found that the agent searches (`max_neighbours` is above 0 and `known`, its
    /// clearance, does not exceed its reach); without, that is checked here. `level` is that
    /// of the search ([`NeighbourGrid::for_each_near_in`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn separation<const SEARCH: bool>(
        &self,
        level: impl Level,
        i: usize,
        p: Vec2,
        radius: f32,
        state: AgentState,
        goal: Vec2,
        dist_goal: f32,
        known: f32,
    ) -> Contacts {
        let cfg = self.config;
        let ng = self.neighbours;
        let k = cfg.max_neighbours.min(MOST_NEIGHBOURS);
        let mut contacts = Contacts {
            push: Vec2::ZERO,
            blocked_by_arrived: false,
            touching_arrived: false,
            unpenetrate: Vec2::ZERO,
            normals: [Vec2::ZERO; MOST_NEIGHBOURS],
            touching: 0,
            clearance: known,
        };
        let reach = larger(cfg.separation_radius, 2.0 * radius);
        if !SEARCH && (k == 0 || known > reach + ng.slack) {
            // No one to push (or no one in reach: the search would find nobody).
            return contacts;
        }
        let reach2 = reach * reach;
        // Slot j is the grid's entry j (the step sorted the agents).
        let mut nearest = NearestK::new(k);
        let visit = |e: usize, _, d2: f32| nearest.offer(d2, e);
        contacts.clearance = if self.track_clearances {
            ng.for_each_near_in::<true>(level, p, i, reach, visit)
        } else {
            ng.for_each_near_in::<false>(level, p, i, reach, visit)
        };
        let mut sum = Vec2::ZERO;
        let mut unpenetrate = Vec2::ZERO;
        let mut blocked = false;
        let mut touching_arrived = false;
        let count = nearest.count;
        for &key in &nearest.keys[..count] {
            let (d2, j) = NearestK::parts(key);
            let e = j as usize;
            let diff = p - ng.point(e);
            let d = d2.sqrt();
            let other = ng.states[e];
            let touch = (radius + self.radii[j as usize]) * 1.5;
            if other == AgentState::Arrived
                && d < touch
                && (p - diff).distance(goal) < dist_goal
                && self.group_of[j as usize] == self.group_of[i]
            {
                blocked = true;
            }
            if other == AgentState::Arrived
                && d < touch
                && self.group_of[j as usize] == self.group_of[i]
            {
                touching_arrived = true;
            }
            let w = 1.0 - d2 / reach2;
            let dir = coincident_safe_dir(diff, d, i as u32, j);
            let overlap = radius + self.radii[j as usize] - d;
            if overlap > 0.0 {
                unpenetrate += dir * (overlap * 0.5);
            }
            if overlap > -0.05 * radius {
                contacts.normals[contacts.touching] = dir;
                contacts.touching += 1;
            }
            let mut weight = w;
            if state == AgentState::Arrived && other == AgentState::Moving {
                weight *= cfg.arrived_yield;
            } else if state == AgentState::Moving && other == AgentState::Arrived {
                weight /= cfg.arrived_yield.max(1.0);
            }
            sum += dir * weight;
        }
        contacts.push = if count > 0 {
            sum / count as f32
        } else {
            Vec2::ZERO
        };
        contacts.blocked_by_arrived = blocked;
        contacts.touching_arrived = touching_arrived;
        contacts.unpenetrate = unpenetrate;
        contacts
    }
}

/// Most neighbours that push an agent, whatever `max_neighbours` asks.
pub(crate) const MOST_NEIGHBOURS: usize = 16;

/// The k nearest of the neighbours a search visits, by (distance², entry), in no particular
/// order: the search visits in entry order, the same in both compilations, so the first k are
/// kept in that order and each nearer one later takes the place of the farthest kept.
/// (Keeping them sorted cost a mispredicted loop exit per neighbour; most agents have fewer
/// than k in reach, and then an offer is a store.) Each is one number, distance² (never
/// negative, so its bits order as it does) above the entry. 152 bytes on the stack.
struct NearestK {
    keys: [u64; MOST_NEIGHBOURS],
    count: usize,
    /// Where the farthest kept is, once k are.
    farthest: usize,
    k: usize,
}

impl NearestK {
    /// Room for `k` (at most [`MOST_NEIGHBOURS`], at least 1).
    fn new(k: usize) -> NearestK {
        debug_assert!((1..=MOST_NEIGHBOURS).contains(&k));
        NearestK {
            keys: [u64::MAX; MOST_NEIGHBOURS],
            count: 0,
            farthest: 0,
            k,
        }
    }

    /// Keep entry `e` at distance² `d2` if it is among the k nearest so far. Entries must come
    /// in rising order (so that an equal distance loses the tie). O(1), or O(k) when it takes
    /// the k-th place or displaces one.
    #[inline(always)]
    fn offer(&mut self, d2: f32, e: usize) {
        let key = (d2.to_bits() as u64) << 32 | e as u64;
        if self.count < self.k {
            self.keys[self.count] = key;
            self.count += 1;
            if self.count < self.k {
                return;
            }
        } else if key < self.keys[self.farthest] {
            self.keys[self.farthest] = key;
        } else {
            return;
        }
        let kept = &self.keys[..self.k];
        let mut at = 0;
        for m in 1..kept.len() {
            at = if kept[m] > kept[at] { m } else { at };
        }
        self.farthest = at;
    }

    /// The (distance², entry) of a kept key.
    #[inline(always)]
    fn parts(key: u64) -> (f32, u32) {
        (f32::from_bits((key >> 32) as u32), key as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::tests::*;
    use proptest::prelude::*;

    proptest! {
        /// The kept are the k least (distance², entry) pairs of all offered, each once, with
        /// ties going to the earlier entry: distances drawn from a few values tie often.
        #[test]
        fn nearest_k_keeps_the_k_nearest(
            levels in proptest::collection::vec(0u8..6, 0..40),
            k in 1usize..=MOST_NEIGHBOURS,
            gap in 1usize..4,
        ) {
            let offered: Vec<(f32, u32)> = levels
                .iter()
                .enumerate()
                .map(|(n, &level)| (level as f32 * 0.3, (n * gap) as u32))
                .collect();
            let mut nearest = NearestK::new(k);
            for &(d2, e) in &offered {
                nearest.offer(d2, e as usize);
            }
            let keys = &nearest.keys[..nearest.count];
            let mut kept: Vec<(f32, u32)> = keys.iter().map(|&key| NearestK::parts(key)).collect();
            kept.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut want = offered.clone();
            want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            want.truncate(k);
            prop_assert_eq!(kept, want);
        }
    }

    #[test]
    fn both_compilations_give_the_same_bits() {
        // The x86-64-v3 compilation of the per-agent loops (where this CPU has it, with its
        // eight-at-once flow samples and finishes) against the baseline one, on crowds that
        // spread, pack, arrive, get stuck, have no way and slide along walls, with both ways
        // of reading arrows and three groups: every entry of every agent, and the clearances
        // the steps keep.
        let (cost, walkable, target, f) = scattered_scene(48, 23);
        let goal = cost.grid().cell_center(target);
        let other_cell = walkable[walkable.len() / 3];
        let other = cost.grid().cell_center(other_cell);
        let f2 = field(&cost, other_cell);
        // A third group's field is cut in two by a wall the map does not have: its agents on
        // the far side have no way, those on the wall head back off it.
        let mut cut = cost.clone();
        let side = cost.grid().width();
        cut.fill_rect(
            UVec2::new(side / 2, 0),
            UVec2::new(side / 2, side - 1),
            WALL,
        )
        .unwrap();
        let f3 = field(&cut, target);
        let groups = [
            Group { flow: &f, goal },
            Group {
                flow: &f2,
                goal: other,
            },
            Group { flow: &f3, goal },
        ];
        for round in 0..6 {
            let sampling = match round {
                1 | 3 => Sampling::Nearest,
                _ => Sampling::Bilinear,
            };
            // The fourth round slows down over a long way and arrives late. The last one does
            // not slow down and gets stuck soon, so that agents held up behind those that
            // arrived, beyond the pile, arrive because they touch them.
            let (arrival_radius, slowdown_radius, stuck_time) = match round {
                3 => (0.2, 8.0, 3.0),
                5 => (1.5, 0.0, 0.5),
                _ => (1.5, 3.0, 3.0),
            };
            let config = CrowdConfig {
                sampling,
                arrival_radius,
                slowdown_radius,
                stuck_time,
                ..CrowdConfig::default()
            };
            let mut a = Crowd::new(*cost.grid(), config).unwrap();
            let mut next = uniform(0xb175_0000 + round as u64);
            // The third and the last rounds pack everyone into a sixth of the map; the fifth
            // has few agents, far apart, so that searches are skipped.
            let spread = if round == 2 || round == 5 { 6 } else { 1 };
            let agents = if round == 4 { 120 } else { 1200 };
            for k in 0..agents {
                let cell = walkable[(next() * walkable.len() as f32) as usize / spread];
                let offset = (Vec2::new(next(), next()) - 0.5) * 0.8;
                // Groups by region, so that most blocks of eight slots (sorted by position)
                // are of one group and start eight at once; the third group on both edges,
                // so that some of it is cut off its goal.
                let group = match cell.x * 8 / side {
                    0 | 7 => 2,
                    1 | 6 => 1,
                    _ => 0,
                };
                let params = AgentParams {
                    position: cost.grid().cell_center(cell) + offset,
                    radius: [0.35, 0.2, 0.6][k % 3],
                    max_speed: 1.0 + next() * 5.0,
                    group,
                };
                a.add_agent(&cost, params).unwrap();
            }
            let mut b = a.clone();
            b.test.baseline_only = true;
            let bits = |c: &Crowd| -> Vec<u32> {
                let both = c.positions().iter().chain(&c.velocities);
                both.flat_map(|p| [p.x.to_bits(), p.y.to_bits()]).collect()
            };
            let timing = |c: &Crowd| -> Vec<u32> {
                let both = c.anchors.iter().chain(&c.timers);
                both.map(|t| t.to_bits()).collect()
            };
            for step in 0..200 {
                // Now and then a step of no time, where no one moves.
                let dt = if step % 50 == 49 { 0.0 } else { 0.05 };
                let (sa, sb) = (
                    a.step(dt, &cost, &groups).unwrap(),
                    b.step(dt, &cost, &groups).unwrap(),
                );
                assert_eq!(sa, sb, "round {round}, step {step}");
                assert!(bits(&a) == bits(&b), "round {round}, step {step}");
                assert_eq!(a.states(), b.states());
                assert!(timing(&a) == timing(&b), "round {round}, step {step}");
                assert_eq!(a.flags, b.flags, "round {round}, step {step}");
                assert!(
                    a.neighbours.slots == b.neighbours.slots,
                    "round {round}, step {step}"
                );
            }
            assert!(a.states().contains(&AgentState::Arrived), "round {round}");
            assert!(a.states().contains(&AgentState::NoPath), "round {round}");
        }
    }

    #[test]
    fn both_compilations_agree_on_maps_too_small_to_read_eight_at_once() {
        // Maps of 3 and 4 cells (where a 4-byte read of the cost field reaches past its end
        // from every cell but the first) and a strip: the eight-at-once finish hands such
        // agents to the one-at-a-time one.
        for (w, h) in [(1, 3), (2, 2), (40, 1)] {
            let cost = CostField::new(Grid::new(w, h).unwrap());
            let goal = UVec2::new(w - 1, h - 1);
            let f = field(&cost, goal);
            let groups = [Group {
                flow: &f,
                goal: cost.grid().cell_center(goal),
            }];
            let mut a = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
            let mut next = uniform(0x5eed + w as u64);
            for _ in 0..16 {
                let at = Vec2::new(next() * w as f32, next() * h as f32);
                let params = AgentParams {
                    position: at,
                    radius: 0.1,
                    max_speed: 2.0,
                    group: 0,
                };
                a.add_agent(&cost, params).unwrap();
            }
            step_both_compilations(&mut a, &cost, &groups, 60, &format!("{w}x{h}"));
        }
    }

    /// Step `a` and a copy that runs the baseline compilation `steps` times, comparing every
    /// position, velocity and flag after each step.
    fn step_both_compilations(
        a: &mut Crowd,
        cost: &CostField,
        groups: &[Group],
        steps: usize,
        what: &str,
    ) {
        // Where the CPU runs the v3 compilation, `a` runs it and `b` the baseline one.
        #[cfg(target_arch = "x86_64")]
        crate::simd::under_test::v3();
        let mut b = a.clone();
        b.test.baseline_only = true;
        let bits = |c: &Crowd| -> Vec<u32> {
            let both = c.positions().iter().chain(&c.velocities);
            both.flat_map(|p| [p.x.to_bits(), p.y.to_bits()]).collect()
        };
        for step in 0..steps {
            a.step(0.05, cost, groups).unwrap();
            b.step(0.05, cost, groups).unwrap();
            assert!(bits(a) == bits(&b), "{what}, step {step}");
            assert_eq!(a.flags, b.flags, "{what}, step {step}");
        }
    }

    /// An open 16 × 16 map, the field to `goal`, the goal's centre and an empty crowd.
    fn open_scene(goal: UVec2) -> (CostField, FlowField, Vec2, Crowd) {
        let (cost, f, centre) = open_map(16, goal);
        let crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
        (cost, f, centre, crowd)
    }

    #[test]
    fn groups_in_counterflow_give_the_same_bits_in_both_compilations() {
        // Two groups of 96 swap ends of a 40 × 6 strip: blocks of eight of one group start
        // eight at once but for those in counterflow, who keep right one by one.
        let cost = CostField::new(Grid::new(40, 6).unwrap());
        let (east, west) = (UVec2::new(39, 3), UVec2::new(0, 2));
        let (fe, fw) = (field(&cost, east), field(&cost, west));
        let groups = [
            Group {
                flow: &fe,
                goal: cost.grid().cell_center(east),
            },
            Group {
                flow: &fw,
                goal: cost.grid().cell_center(west),
            },
        ];
        let mut a = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
        let mut next = uniform(0xc0de);
        for k in 0..192 {
            let group = (k % 2) as u16;
            let x = if group == 0 { 1.0 } else { 27.0 } + next() * 12.0;
            let params = AgentParams {
                position: Vec2::new(x, 0.5 + next() * 5.0),
                radius: 0.3,
                max_speed: 3.0,
                group,
            };
            a.add_agent(&cost, params).unwrap();
        }
        let mut off = a.clone();
        off.config.passing_range = 0.0;
        step_both_compilations(&mut a, &cost, &groups, 120, "counterflow");
        for _ in 0..120 {
            off.step(0.05, &cost, &groups).unwrap();
        }
        // Passing did something: the same crowd without it stands elsewhere.
        assert_ne!(a.positions(), off.positions());
    }

    #[test]
    fn a_heap_of_agents_gives_the_same_bits_in_both_compilations() {
        // 150 agents heaped within half a cell (some on the same spot): every search finds
        // far more in reach than the v3 search gathers before it visits them, so it empties
        // its list mid-search, many times a step.
        let (cost, f, goal, mut a) = open_scene(UVec2::new(15, 15));
        let groups = [Group { flow: &f, goal }];
        let mut next = uniform(0x4ea9);
        let centre = Vec2::new(8.0, 8.0);
        for k in 0..150 {
            let off = Vec2::new(next() - 0.5, next() - 0.5) * if k % 10 == 0 { 0.0 } else { 1.0 };
            let params = AgentParams {
                position: centre + off,
                radius: 0.3,
                max_speed: 2.0,
                group: 0,
            };
            a.add_agent(&cost, params).unwrap();
        }
        step_both_compilations(&mut a, &cost, &groups, 30, "heap");
        // The heap spread out: the agents were pushed apart, not left where they began.
        assert!(a.max_overlap() < 0.9, "overlap {}", a.max_overlap());
    }

    #[test]
    fn agents_put_on_each_other_in_a_dense_crowd_give_the_same_bits_in_both_compilations() {
        // Pairs on a lattice wider than the separation reach, each pair's second agent put back
        // on its first before every step: no one is clear of everyone, so the steps keep no
        // clearances, and each agent has only its partner in reach, on the same spot (split by
        // the pair's slots, which the eight-at-once separation leaves to the one-by-one).
        let (cost, f, goal, mut a) = open_scene(UVec2::new(15, 8));
        let groups = [Group { flow: &f, goal }];
        let mut pairs = Vec::new();
        for k in 0..49 {
            let at = Vec2::new(2.0 + 1.6 * (k % 7) as f32, 2.0 + 1.6 * (k / 7) as f32);
            let pair = [0, 1].map(|_| a.add_agent(&cost, params(at)).unwrap());
            pairs.push(pair);
        }
        let mut dense = 0;
        for step in 0..20 {
            for &[first, second] in &pairs {
                let p = a.position(first).unwrap();
                a.set_position(&cost, second, p).unwrap();
            }
            dense += (a.dense_steps > 0) as usize;
            step_both_compilations(&mut a, &cost, &groups, 1, &format!("pairs {step}"));
        }
        assert!(dense >= 15, "{dense} of 20 steps kept no clearances");
    }

    #[test]
    fn a_crowd_pressed_together_gives_the_same_bits_in_both_compilations() {
        // 480 agents on a hexagonal lattice closer than their bodies (six touching each), some
        // pairs on the same spot, against the map's edges: most touch several others for many
        // steps, so collision passes push eight at once (those on one spot left to the
        // one-by-one code), and separation stages agents touching up to six.
        let (cost, f, goal, mut a) = open_scene(UVec2::new(8, 8));
        let groups = [Group { flow: &f, goal }];
        for k in 0..480 {
            let (col, row) = ((k % 22) as f32, (k / 22) as f32);
            let shift = 0.3 * (row as u32 % 2) as f32;
            let at = Vec2::new(1.0 + 0.6 * col + shift, 1.0 + 0.52 * row);
            a.add_agent(&cost, params(at)).unwrap();
            if k % 37 == 0 {
                a.add_agent(&cost, params(at)).unwrap();
            }
        }
        let mut pushed_eight_at_once = 0;
        for step in 0..30 {
            let before = a.test.eight_pushes;
            step_both_compilations(&mut a, &cost, &groups, 1, &format!("pressed {step}"));
            pushed_eight_at_once += (a.test.eight_pushes > before) as usize;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::simd::under_test::v3().is_some() {
            assert!(
                pushed_eight_at_once >= 20,
                "{pushed_eight_at_once} of 30 steps"
            );
        }
        assert!(a.positions().iter().all(|p| p.is_finite()));
    }
}
