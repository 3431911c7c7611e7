//! One step of a crowd, stage by stage, as DetourCrowd's `dtCrowd::update` reads: check the
//! call, file the agents in the neighbour grid, plan what the step measures, update every agent
//! (its flow direction, separation, velocity and move), push overlapping agents apart, keep the
//! clearances for the next step, and count the states and the piles round the goals.

use super::*;

impl Crowd {
    /// Advance every agent by `dt` seconds. `groups[k]` is the field and goal of the agents with
    /// `group == k`. O(agents × neighbours): the neighbour grid has at most one cell per two
    /// agents.
    ///
    /// ```
    /// use glam::{UVec2, Vec2};
    /// use horde::crowd::{AgentParams, AgentState, Crowd, CrowdConfig, Group};
    /// use horde::{CostField, CostModel, FlowField, Grid, IntegrationBuilder};
    /// let cost = CostField::new(Grid::new(32, 32).unwrap());
    /// let goal = UVec2::new(30, 30);
    /// let mut b = IntegrationBuilder::new();
    /// b.build(&cost, &[goal], CostModel::TenFourteen).unwrap();
    /// let mut flow = FlowField::new(*cost.grid());
    /// b.flow_into(&mut flow).unwrap();
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let a = crowd.add_agent(&cost, AgentParams {
    ///     position: Vec2::new(2.5, 2.5), radius: 0.4, max_speed: 4.0, group: 0,
    /// }).unwrap();
    /// let groups = [Group { flow: &flow, goal: cost.grid().cell_center(goal) }];
    /// for _ in 0..400 {
    ///     crowd.step(0.05, &cost, &groups).unwrap();
    /// }
    /// assert_eq!(crowd.state(a).unwrap(), AgentState::Arrived);
    /// ```
    pub fn step(
        &mut self,
        dt: f32,
        cost: &CostField,
        groups: &[Group],
    ) -> Result<StepStats, CrowdError> {
        let fastest = self.check_step(dt, cost, groups)?;
        self.file_agents();
        let track = self.plan_step();
        // A little more than a walking step (a few agents go a little further, nudged off a
        // neighbour or a wall): see `since` in `collide`.
        let walk_bound = fastest * dt * 1.02;
        // The sort order is not needed again this step: its buffer holds each agent's clearance
        // (see `collision_pass`), so that costs no memory.
        let mut clearances = std::mem::take(&mut self.neighbours.slots);
        self.update_agents(dt, cost, groups, walk_bound, track, &mut clearances);
        let since = self.collide(cost, &mut clearances, walk_bound, track);
        if track {
            self.keep_clearances(&mut clearances, since);
        }
        self.neighbours.slots = clearances;
        let stats = self.tally(groups);
        self.stuck_last_step = stats.stuck;
        Ok(stats)
    }

    /// Refuse a bad call before anything changes; returns the top speed of the fastest agent.
    fn check_step(
        &mut self,
        dt: f32,
        cost: &CostField,
        groups: &[Group],
    ) -> Result<f32, CrowdError> {
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(CrowdError::BadValue {
                what: "dt",
                value: dt,
                reason: "must be a finite number, 0 or above",
            });
        }
        self.check_grid("cost field", cost.grid())?;
        for g in groups {
            self.check_grid("flow field", g.flow.grid())?;
            finite_vec("group goal", g.goal)?;
        }
        let (highest, fastest) = match self.highest_and_fastest {
            Some(reach) => reach,
            None => {
                let (flags, group_of) = (&self.flags, &self.groups);
                let max_speeds = &self.max_speeds;
                let reach = fold_chunks(
                    self.flags.len(),
                    &mut self.scratch.partial_reach,
                    (0, 0.0f32),
                    |range| {
                        range
                            .filter(|&i| flags[i].is_alive())
                            .fold((0, 0.0f32), |(g, v), i| {
                                (g.max(group_of[i] as u32 + 1), larger(v, max_speeds[i]))
                            })
                    },
                    |a, b| (a.0.max(b.0), a.1.max(b.1)),
                );
                self.highest_and_fastest = Some(reach);
                reach
            }
        };
        if highest as usize > groups.len() {
            let i = (0..self.flags.len())
                .find(|&i| self.flags[i].is_alive() && self.groups[i] as usize >= groups.len())
                .expect("an agent of a missing group");
            return Err(CrowdError::NoSuchGroup {
                id: self.ids[i],
                group: self.groups[i],
                groups: groups.len(),
            });
        }
        Ok(fastest)
    }

    /// File the agents in the neighbour grid: sort them again when they have drifted too far
    /// from where they were filed (or every few steps), else take their positions into the
    /// grid's snapshot.
    fn file_agents(&mut self) {
        let due = !self.sorted || self.unsorted_steps >= MAX_UNSORTED_STEPS;
        if !due {
            // Bring the snapshot up to the positions the step starts from, so that the drift
            // (and the choice below) measures where everyone stands, whichever way the last step
            // went. (A sort takes them all afresh.)
            self.refresh_snapshot();
        }
        let fresh = !self.sorted;
        let ng = &self.neighbours;
        if due || ng.drift > RESORT_DRIFT * ng.cell {
            self.sort_agents();
            self.unsorted_steps = 0;
            // Agents just added or put somewhere have no clearances to skip searches with, and
            // measuring them (see `keep_clearances`) costs a dense crowd more than half a step
            // again: guess from the grid instead. (Either way this step's moves come out the
            // same; only its work differs, and with it the bounds that decide when the next
            // sort comes.)
            #[cfg(test)]
            let fresh = fresh && !self.test.no_density_guess;
            if fresh && self.dense_steps == 0 {
                self.dense_steps = self.guess_dense_steps();
            }
        } else {
            // Everyone is still filed near enough to where it stands: keep the grid (the drift
            // covers the difference) and take the states the step starts from.
            self.unsorted_steps += 1;
            self.neighbours.states.copy_from_slice(&self.states);
        }
    }

    /// What the step measures: whether it keeps clearances (see `density`), and room for the
    /// lists of the collision passes. True when it keeps clearances.
    fn plan_step(&mut self) -> bool {
        let track = self.dense_steps == 0;
        self.make_room_for_few();
        // Everyone is about to move.
        self.snapshot_current = false;
        let ng = &mut self.neighbours;
        ng.cap = 4.0 * larger(self.config.separation_radius, 2.0 * ng.widest);
        if !track {
            self.dense_steps -= 1;
            self.clearance_unit = 0.0;
            // A crowd still pressed together by the grid's count would measure next step only
            // to find hardly anyone clear (a step and a half of work for nothing): it waits
            // another while.
            #[cfg(test)]
            let guess = !self.test.no_density_guess;
            #[cfg(not(test))]
            let guess = true;
            if guess && self.dense_steps == 0 && self.guess_dense_steps() == 4 * DENSE_STEPS {
                self.dense_steps = 4 * DENSE_STEPS;
            }
        }
        track
    }

    /// Every living agent's update, in pieces on any number of threads: each writes only its
    /// own entries, and reads the others in the neighbour grid's snapshot.
    fn update_agents(
        &mut self,
        dt: f32,
        cost: &CostField,
        groups: &[Group],
        walk_bound: f32,
        track: bool,
        clearances: &mut [u32],
    ) {
        // Who was flagged stuck, for `StepContext::queued` (the flags change during the update).
        let was_stuck = &mut self.scratch.was_stuck;
        was_stuck.clear();
        if self.stuck_last_step > 0 {
            was_stuck.resize(self.flags.len().div_ceil(64), 0);
            for (k, f) in self.flags.iter().enumerate() {
                was_stuck[k / 64] |= (f.is_stuck() as u64) << (k % 64);
            }
        }
        let passing = self.config.passing_range > 0.0 && groups.len() > 1;
        if passing {
            self.traffic.count(
                self.grid,
                &self.positions,
                &self.flags,
                &self.states,
                &self.groups,
                groups,
            );
        }
        let ctx = StepContext {
            dt,
            config: &self.config,
            grid: self.grid,
            costs: cost.costs(),
            groups,
            neighbours: &self.neighbours,
            radii: &self.radii,
            max_speeds: &self.max_speeds,
            group_of: &self.groups,
            piles: &self.piles,
            clearance_unit: self.clearance_unit,
            track_clearances: track,
            walk_bound,
            passing,
            traffic: &self.traffic,
            was_stuck: &self.scratch.was_stuck,
        };
        // Each agent writes only its own entries; everything it reads of others is the snapshot
        // in the neighbour grid. So the step runs in place, in any order, on any thread count.
        let isa = self.isa();
        let work = |(k, ((((((pos, vel), state), anchor), timer), flags), clear)): AgentPiece| {
            let rows = AgentRows {
                first: k * SLOTS_PER_PIECE,
                positions: pos,
                velocities: vel,
                states: state,
                anchors: anchor,
                timers: timer,
                flags,
                clearances: clear,
            };
            update(isa, &ctx, rows);
        };
        each_piece!(
            SLOTS_PER_PIECE,
            work,
            self.positions,
            self.velocities,
            self.states,
            self.anchors,
            self.timers,
            self.flags,
            clearances
        );
    }

    /// The collision passes: returns what is known of the moves since the snapshot was last
    /// refreshed (see [`NeighbourGrid::take_moves`]).
    fn collide(
        &mut self,
        cost: &CostField,
        clearances: &mut [u32],
        walk_bound: f32,
        track: bool,
    ) -> Option<f32> {
        // What is known of the moves since the snapshot was last refreshed: everyone but the
        // agents in `pushed` moved at most this far (see `NeighbourGrid::take_moves`). The
        // step flagged those that moved further than walking pace (knocked by an overlap).
        let mut since = (track && self.list_pushed(false)).then_some(walk_bound);
        #[cfg(test)]
        if let Some(walk_bound) = since {
            // The promise that the collision passes' bookkeeping rests on.
            for k in 0..self.positions.len() {
                let own = move_bound(self.positions[k] - self.neighbours.point(k));
                let listed = self.pushed.contains(&(k as u32));
                assert!(
                    own <= walk_bound || listed,
                    "agent {k} went {own}, past {walk_bound}"
                );
            }
        }
        for pass in 0..self.config.collision_passes {
            let sparse = pass > 0 && since == Some(0.0);
            // After a pass that pushed too many to list: those it pushed are flagged (see
            // `list_pushed`).
            let flagged = pass > 0 && since.is_none();
            #[cfg(test)]
            let (sparse, flagged) = (
                sparse && !self.test.search_everyone,
                flagged && !self.test.search_everyone,
            );
            // Marking those near the flagged pays while they are few; when many are flagged
            // (a crowd pressed together) nearly everyone is marked, and the marking is a second
            // search of each: then the pass goes over everyone (the same bits either way).
            let flagged = flagged && self.count_flagged() * MARK_BELOW_EVERY_NTH < self.alive;
            if flagged {
                if track {
                    self.marked_pass::<true>(cost, clearances);
                } else {
                    self.marked_pass::<false>(cost, clearances);
                }
                since = self.list_pushed(false).then_some(0.0);
                continue;
            }
            let sparse = if track {
                self.collision_pass::<true>(cost, clearances, since, sparse)
            } else {
                self.collision_pass::<false>(cost, clearances, since, sparse)
            };
            since = self.list_pushed(sparse).then_some(0.0);
        }
        since
    }

    /// The states counted, and the pile of arrived agents round each goal measured for the
    /// next step.
    fn tally(&mut self, groups: &[Group]) -> StepStats {
        // The pile round each goal: arrived agents packed at about 80 % density fill a disc of
        // radius sqrt(sum of their areas / 0.8), plus the arrival radius and a body of slack.
        // (Area and widest radius per group, gathered in the reused `pile_parts`.)
        // Summed piece by piece in parallel, then the pieces in order: deterministic. The same
        // pass counts the states.
        let n = self.positions.len();
        let g = groups.len().max(1);
        let (flags, states, radii, group_of) =
            (&self.flags, &self.states, &self.radii, &self.groups);
        let pieces = n.div_ceil(SLOTS_PER_REDUCTION);
        self.scratch.pile_partials.clear();
        self.scratch.pile_partials.resize(pieces * g, (0.0, 0.0));
        self.scratch.partial_stats.clear();
        self.scratch
            .partial_stats
            .resize(pieces, StepStats::default());
        type Piece<'p> = (usize, (&'p mut [(f32, f32)], &'p mut StepStats));
        let work = |(c, (parts, stats)): Piece| {
            for i in c * SLOTS_PER_REDUCTION..((c + 1) * SLOTS_PER_REDUCTION).min(n) {
                if !flags[i].is_alive() {
                    continue;
                }
                match states[i] {
                    AgentState::Moving => stats.moving += 1,
                    AgentState::Arrived => {
                        stats.arrived += 1;
                        let (area, widest) = &mut parts[group_of[i] as usize];
                        *area += std::f32::consts::PI * radii[i] * radii[i];
                        *widest = widest.max(radii[i]);
                    }
                    AgentState::NoPath => stats.no_path += 1,
                }
                stats.stuck += (flags[i].is_stuck()) as usize;
            }
        };
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            self.scratch
                .pile_partials
                .par_chunks_mut(g)
                .zip(self.scratch.partial_stats.par_iter_mut())
                .enumerate()
                .for_each(work);
        }
        #[cfg(not(feature = "parallel"))]
        self.scratch
            .pile_partials
            .chunks_mut(g)
            .zip(self.scratch.partial_stats.iter_mut())
            .enumerate()
            .for_each(work);
        self.scratch.pile_parts.clear();
        self.scratch.pile_parts.resize(groups.len(), (0.0, 0.0));
        for parts in self.scratch.pile_partials.chunks(g) {
            for (total, part) in self.scratch.pile_parts.iter_mut().zip(parts) {
                total.0 += part.0;
                total.1 = total.1.max(part.1);
            }
        }
        self.piles.clear();
        self.piles
            .extend(self.scratch.pile_parts.iter().map(|&(a, r)| {
                self.config.arrival_radius + (a / (0.8 * std::f32::consts::PI)).sqrt() + 2.0 * r
            }));
        self.scratch
            .partial_stats
            .iter()
            .fold(StepStats::default(), |a, b| StepStats {
                moving: a.moving + b.moving,
                arrived: a.arrived + b.arrived,
                no_path: a.no_path + b.no_path,
                stuck: a.stuck + b.stuck,
            })
    }
}
