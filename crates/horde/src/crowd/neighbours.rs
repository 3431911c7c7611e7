//! The neighbour grid, as DetourCrowd's proximity grid: the living agents filed into cells by a
//! counting sort, a snapshot of their positions in cell order, and the searches that read it,
//! [`ENTRIES_AT_ONCE`] candidates at a time without branches. It also keeps what is known of how far
//! everyone moved since (the drift, and each agent's clearance as a lower bound), so that
//! searches and collision passes skip agents that cannot have anyone in reach.

use super::*;
use crate::simd::baseline::{NearestSquared, cells_of, near_mask, side_room};
use crate::simd::{Level, Plain};

/// Uniform grid of the agents' positions, rebuilt every step by a counting sort, with a
/// cell-sorted snapshot of what changes during a step and neighbours read (position, state).
#[derive(Debug, Clone, Default)]
pub(crate) struct NeighbourGrid {
    /// Smallest cell side: the longest distance at which agents interact.
    pub(crate) reach: f32,
    /// The widest radius of a living agent.
    pub(crate) widest: f32,
    /// How far outside its cell any entry of the snapshot may stand, along either axis (the
    /// cell it was filed in when the grid was built; an edge cell reaches beyond the grid's
    /// edge). Measured at each refresh of the snapshot, so a crowd that jostles in place keeps
    /// a small drift however far its members wander to and fro.
    pub(crate) drift: f32,
    /// The same as a distance.
    pub(crate) moved: f32,
    /// The box round the living agents when the grid was built.
    pub(crate) extent: Vec2,
    pub(crate) origin: Vec2,
    pub(crate) cell: f32,
    pub(crate) inv_cell: f32,
    pub(crate) cols: u32,
    pub(crate) rows: u32,
    /// The last column and row, as floats.
    pub(crate) last: Vec2,
    /// More than the rounding error of any distance or clearance on this grid.
    pub(crate) slack: f32,
    /// No clearance is taken to be more than this (so that [`Self::take_moves`] knows how far
    /// a move can lower one).
    pub(crate) cap: f32,
    /// `starts[c]..starts[c + 1]` are the sorted entries of cell `c`.
    pub(crate) starts: Vec<u32>,
    /// Slot of each sorted entry.
    pub(crate) slots: Vec<u32>,
    /// Position of each sorted entry, x and y apart (so that [`Self::for_each_near`] measures
    /// eight at once), padded by [`ENTRIES_AT_ONCE`] entries out of everyone's reach.
    pub(crate) xs: Vec<f32>,
    pub(crate) ys: Vec<f32>,
    /// Scratch of the parallel reduction that finds the box.
    pub(crate) partial_boxes: Vec<(Vec2, Vec2, f32)>,
    /// State of each sorted entry before the step.
    pub(crate) states: Vec<AgentState>,
}

impl NeighbourGrid {
    /// The cells of two positions, as [`cells_of`].
    fn cells_of(&self, a: Vec2, b: Vec2) -> [u32; 4] {
        cells_of(a, b, self.origin, self.inv_cell, self.last)
    }

    /// Call `visit(j, p - position[j], distance²)` for every entry `j != me` closer to `p` than
    /// `within`, in entry order, and return a lower bound on the distance from `p` to every
    /// entry but `me` (its clearance). The cells searched are those that overlap the square of
    /// half side `within + drift` round `p`, since an entry is filed under the cell of where it
    /// stood when the grid was built. Entries are measured [`ENTRIES_AT_ONCE`] at a time without
    /// branches, so only the few in range reach branchy code (with a `V3`, not even that: they
    /// are gathered into a list, then visited); the snapshot is padded for the last chunk.
    ///
    /// Without `CLEARANCE` it returns 0 and skips the work of measuring the clearance.
    #[inline(always)]
    pub(crate) fn for_each_near<const CLEARANCE: bool>(
        &self,
        p: Vec2,
        me: usize,
        within: f32,
        visit: impl FnMut(usize, Vec2, f32),
    ) -> f32 {
        self.for_each_near_in::<CLEARANCE>(Plain, p, me, within, visit)
    }

    /// [`Self::for_each_near`] at `level`: with a [`crate::simd::V3`], measured in one AVX2
    /// register where SSE takes two, and the entries in reach gathered into a list before they
    /// are visited (the same bits).
    #[inline(always)]
    pub(crate) fn for_each_near_in<const CLEARANCE: bool>(
        &self,
        level: impl Level,
        p: Vec2,
        me: usize,
        within: f32,
        mut visit: impl FnMut(usize, Vec2, f32),
    ) -> f32 {
        let within2 = within * within;
        // A hundredth of a cell more, for rounding in the positions and the drift.
        let reach = Vec2::splat(within + self.drift + 0.01 * self.cell);
        let [x0, y0, x1, y1] = self.cells_of(p - reach, p + reach);
        let mut nearest2 = NearestSquared::none();
        let mut any = 0;
        // (The v3 code gathers the entries in reach here and visits them after the blocks.)
        let mut found = [0u32; FOUND];
        let mut count = 0;
        for y in y0..y1 + 1 {
            let row = (y * self.cols) as usize;
            let mut e = self.starts[row + x0 as usize] as usize;
            let end = self.starts[row + x1 as usize + 1] as usize;
            while e < end {
                let xs: &[f32; ENTRIES_AT_ONCE] = self.xs[e..e + ENTRIES_AT_ONCE]
                    .try_into()
                    .expect("the snapshot is padded by ENTRIES_AT_ONCE entries");
                let ys: &[f32; ENTRIES_AT_ONCE] =
                    self.ys[e..e + ENTRIES_AT_ONCE].try_into().expect("padded");
                // Lanes past `end` are entries of other cells or padding: true distances to
                // someone, or infinite, so they may lower the clearance but never wrongly.
                let own = me.wrapping_sub(e);
                #[cfg(target_arch = "x86_64")]
                let mask = match level.v3() {
                    Some(v3) => v3.near_mask8(p, xs, ys, within2, own, &mut nearest2),
                    None => near_mask(p, xs, ys, within2, own, &mut nearest2),
                };
                #[cfg(not(target_arch = "x86_64"))]
                let mask = near_mask(p, xs, ys, within2, own, &mut nearest2);
                // Without a branch: whether a block is the last of its run is a coin toss.
                let mut mask = mask & ((1 << (end - e).min(ENTRIES_AT_ONCE)) - 1);
                any |= mask;
                #[cfg(target_arch = "x86_64")]
                if let Some(v3) = level.v3() {
                    // In entry order, as below, but without a branch on how many a block
                    // holds: in a dense crowd that is a coin toss as well, and it cost more
                    // than the searching. `found` has room for eight more, since it is
                    // emptied as soon as it has less.
                    v3.append_lanes(&mut found, count, e, mask);
                    count += mask.count_ones() as usize;
                    if count > FOUND - ENTRIES_AT_ONCE {
                        for &j in &found[..count] {
                            let diff = p - self.point(j as usize);
                            visit(j as usize, diff, diff.length_squared());
                        }
                        count = 0;
                    }
                    e += ENTRIES_AT_ONCE;
                    continue;
                }
                while mask != 0 {
                    let j = e + mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    let diff = p - self.point(j);
                    visit(j, diff, diff.length_squared());
                }
                e += ENTRIES_AT_ONCE;
            }
        }
        for &j in &found[..count] {
            let diff = p - self.point(j as usize);
            visit(j as usize, diff, diff.length_squared());
        }
        if !CLEARANCE {
            return 0.0;
        }
        let nearest2 = nearest2.value();
        if any != 0 {
            // Someone within `within`, so nearer than anyone outside the searched cells.
            return nearest2.sqrt();
        }
        // Every entry outside the searched cells was filed outside them (none is filed beyond
        // the grid's edges, whatever it did since) and stands at most `drift` outside its cell
        // along either axis.
        let g = (p - self.origin) * self.inv_cell;
        let side = side_room(g, [x0, y0, x1, y1], self.cols, self.rows);
        smaller(nearest2.sqrt(), side * self.cell - self.drift)
    }

    /// The entries of the cells `x0..=x1` of row `y`.
    pub(crate) fn run(&self, y: u32, x0: u32, x1: u32) -> std::ops::Range<usize> {
        let row = y as usize * self.cols as usize;
        self.starts[row + x0 as usize] as usize..self.starts[row + x1 as usize + 1] as usize
    }

    /// Sort the living agents into the cells of a grid over the box round them. The cell side is
    /// at least `reach` (so the 3 × 3 block round an agent, which `max_overlap` reads, holds
    /// every neighbour in reach) and grows on sparse crowds so that the grid has at most about
    /// one cell per two agents: the work per step is O(agents), whatever the map's size, and the
    /// cell starts cost at most 2 bytes per agent.
    pub(crate) fn rebuild(
        &mut self,
        positions: &[Vec2],
        flags: &[AgentFlags],
        radii: &[f32],
        states: &[AgentState],
        alive: usize,
    ) {
        // The box round the living agents, and the widest of them (in parallel; min and max
        // are exact in any order).
        let none = (
            Vec2::splat(f32::INFINITY),
            Vec2::splat(f32::NEG_INFINITY),
            0.0f32,
        );
        let (low, high, max_radius) = fold_chunks(
            positions.len(),
            &mut self.partial_boxes,
            none,
            |range| {
                range
                    .filter(|&i| flags[i].is_alive())
                    .fold(none, |(lo, hi, r), i| {
                        (lo.min(positions[i]), hi.max(positions[i]), r.max(radii[i]))
                    })
            },
            |a, b| (a.0.min(b.0), a.1.max(b.1), a.2.max(b.2)),
        );
        // The grid covers only that box, so a crowd gathered in one place (a pile round its
        // goal, an army on the march) gets cells sized for its own density. Agents that drift
        // out of the box during the step fall in the edge cells.
        (self.origin, self.extent) = if low.x <= high.x {
            (low, high - low)
        } else {
            (Vec2::ZERO, Vec2::ZERO)
        };
        self.widest = max_radius;
        self.drift = 0.0;
        self.moved = 0.0;
        let reach = self.reach.max(2.0 * max_radius);
        let area = (self.extent.x * self.extent.y).max(1e-6);
        self.cell = reach.max((2.0 * area / alive.max(1) as f32).sqrt());
        self.cols = ((self.extent.x / self.cell).ceil() as u32).clamp(1, 1 << 12);
        self.rows = ((self.extent.y / self.cell).ceil() as u32).clamp(1, 1 << 12);
        // Rounding each side up can leave more cells than that, most of all on a long thin
        // crowd (a column on the march): widen the cells until there is at most one per two
        // agents, which the memory per agent counts on.
        let most = (alive / 2).max(1) as u64;
        while self.cols as u64 * self.rows as u64 > most {
            self.cell *= 1.25;
            self.cols = ((self.extent.x / self.cell).ceil() as u32).clamp(1, 1 << 12);
            self.rows = ((self.extent.y / self.cell).ceil() as u32).clamp(1, 1 << 12);
        }
        self.cell = self
            .cell
            .max(self.extent.x / self.cols as f32)
            .max(self.extent.y / self.rows as f32);
        self.inv_cell = self.cell.recip();
        self.last = Vec2::new((self.cols - 1) as f32, (self.rows - 1) as f32);
        // Distances, cell borders and drifts are all computed from coordinates of at most this
        // size, each to within a few ulps (1.2e-7 of it).
        let size = self.origin.abs().max_element() + self.extent.max_element() + self.cell + 1.0;
        self.slack = 1e-5 * size;
        let cells = (self.cols * self.rows) as usize;
        // Every slot's cell (u32::MAX for removed agents), found in parallel and parked as bits
        // in the snapshot's x column until the snapshot is rewritten below.
        let n_old = positions.len();
        let (origin, inv_cell, cols, last) = (self.origin, self.inv_cell, self.cols, self.last);
        self.xs.resize(n_old, 0.0);
        fill(&mut self.xs, |i| {
            let cell = if flags[i].is_alive() {
                cell_index(positions[i], origin, inv_cell, cols, last)
            } else {
                u32::MAX
            };
            f32::from_bits(cell)
        });
        self.starts.clear();
        self.starts.resize(cells + 1, 0);
        // A counting sort, each thread taking a run of cells (reading every key, writing only
        // its own cells' counts and slots).
        let parts = sort_parts();
        count_cells(&self.xs, &mut self.starts[1..], 0, parts);
        // Prefix sums, with the running total in a register.
        let mut total = 0u32;
        for start in &mut self.starts {
            total += *start;
            *start = total;
        }
        let n = self.starts[cells] as usize;
        self.slots.resize(n, 0);
        // Fill in slot order so that each cell's entries stay sorted by slot: deterministic.
        // `starts[c]` serves as cell c's cursor, and ends at the start of cell c + 1.
        scatter_slots(
            &self.xs,
            &mut self.starts[..cells],
            0,
            &mut self.slots,
            0,
            parts,
        );
        self.starts.copy_within(0..cells, 1);
        self.starts[0] = 0;
        // The snapshot, gathered in sorted order.
        let slots = &self.slots;
        self.xs.resize(n, 0.0);
        self.ys.resize(n, 0.0);
        self.states.resize(n, AgentState::Moving);
        // (One pass over the sort order for the three.)
        type Snapshot<'s> = (
            usize,
            ((&'s mut [f32], &'s mut [f32]), &'s mut [AgentState]),
        );
        let work = |(c, ((xs, ys), snapshot_states)): Snapshot| {
            let entries = xs.iter_mut().zip(ys).zip(snapshot_states);
            for (((x, y), state), &slot) in entries.zip(&slots[c * SLOTS_PER_REDUCTION..]) {
                let slot = slot as usize;
                (*x, *y, *state) = (positions[slot].x, positions[slot].y, states[slot]);
            }
        };
        each_piece!(SLOTS_PER_REDUCTION, work, self.xs, self.ys, self.states);
        self.xs.extend_from_slice(&[f32::INFINITY; ENTRIES_AT_ONCE]);
        self.ys.extend_from_slice(&[f32::INFINITY; ENTRIES_AT_ONCE]);
    }

    /// The share of the `alive` agents that would have no one within `reach` if they stood at
    /// random (a Poisson crowd) at the density of the occupied cells: a guess at how many a
    /// neighbour search would find clear, from the cell starts alone. O(cells).
    pub(crate) fn clear_share(&self, alive: usize, reach: f32) -> f32 {
        let occupied = self.starts.windows(2).filter(|w| w[1] > w[0]).count();
        let density = alive as f32 / (occupied.max(1) as f32 * self.cell * self.cell);
        (-density * std::f32::consts::PI * reach * reach).exp()
    }

    /// Take new positions into the snapshot without re-sorting, measure the drift that searches
    /// allow for, and take how far each agent moved off its clearance (see
    /// [`Crowd::collision_pass`]). Only while slot `k` is entry `k` (the agents were sorted
    /// with this grid). One pass over the agents, in parallel pieces. Without `CLEARANCE` the
    /// clearances are left alone. (After a step's walk, [`Self::refresh_walked`] does the same
    /// for less.)
    pub(crate) fn refresh_points<const CLEARANCE: bool>(
        &mut self,
        positions: &[Vec2],
        clearances: &mut [u32],
        partials: &mut Vec<(f32, f32, f32)>,
    ) {
        let n = positions.len();
        let (starts, cols) = (&self.starts, self.cols as usize);
        let (origin, inv_cell, last) = (self.origin, self.inv_cell, self.last);
        let work = |(c, (((xs, ys), clear), part)): RefreshPiece| {
            let (mut along, mut most, mut out) = (0.0f32, 0.0f32, 0.0f32);
            // The cells are walked along with the entries, which are in cell order. How far out
            // of its cell an entry stands grows with how far out its coordinates lie, so only
            // each cell's extremes are measured against its box (the same bits as measuring
            // every entry).
            let first = c * SLOTS_PER_REDUCTION;
            let mut cell = filed_cell(starts, first);
            let mut next = starts[cell + 1] as usize;
            let (mut lo, mut hi) = (Vec2::INFINITY, Vec2::NEG_INFINITY);
            let points = xs.iter_mut().zip(ys.iter_mut()).zip(clear.iter_mut());
            for (e, (&p, ((x, y), clear))) in (first..).zip(positions[first..].iter().zip(points)) {
                if next <= e {
                    let box_ = cell_box(cell, cols, last);
                    out = larger(out, outside(lo, box_, origin, inv_cell));
                    out = larger(out, outside(hi, box_, origin, inv_cell));
                    (lo, hi) = (Vec2::INFINITY, Vec2::NEG_INFINITY);
                    while next <= e {
                        cell += 1;
                        next = starts[cell + 1] as usize;
                    }
                }
                take_move::<CLEARANCE>(p, x, y, clear, &mut along, &mut most);
                (lo, hi) = (lo.min(p), hi.max(p));
            }
            let box_ = cell_box(cell, cols, last);
            out = larger(out, outside(lo, box_, origin, inv_cell));
            out = larger(out, outside(hi, box_, origin, inv_cell));
            *part = (along, most, out);
        };
        refresh_pieces(
            &mut self.xs[..n],
            &mut self.ys[..n],
            clearances,
            partials,
            work,
        );
        let (along, most, out) = partials.iter().fold((0.0f32, 0.0f32, 0.0f32), |a, b| {
            (a.0.max(b.0), a.1.max(b.1), a.2.max(b.2))
        });
        self.drift = out * self.cell;
        self.add_moves::<CLEARANCE>(along, most, None);
    }

    /// Count moves into `moved`: `walk_bound` if given, else the largest move (without clearances,
    /// the bound that the largest move along an axis gives).
    fn add_moves<const CLEARANCE: bool>(&mut self, along: f32, most: f32, walk_bound: Option<f32>) {
        // Without clearances nobody reads `moved`; it stays a bound all the same.
        self.moved += match walk_bound {
            Some(walk_bound) => walk_bound,
            None if CLEARANCE => most,
            None => along * std::f32::consts::SQRT_2 * (1.0 + 1e-6),
        };
    }

    /// Take new positions into the snapshot, knowing (`since`, if known) that everyone but the
    /// agents in `listed` moved at most that far since the last refresh. With clearances, the
    /// listed agents' moves do not go into `moved`, which every clearance pays for: instead
    /// each agent within [`Self::cap`] of one takes the distance to it as its clearance if that
    /// is less (a few searches, where a few far moves would cost everyone's clearance as much).
    pub(crate) fn take_moves<const CLEARANCE: bool>(
        &mut self,
        positions: &[Vec2],
        since: Option<f32>,
        listed: &[u32],
        clearances: &mut [u32],
        partials: &mut Vec<(f32, f32, f32)>,
    ) {
        match since {
            Some(walk_bound) if CLEARANCE => {
                if walk_bound > 0.0 {
                    self.refresh_walked(positions, walk_bound, listed, clearances);
                } else {
                    self.refresh_some::<true>(positions, clearances, listed, Some(0.0));
                }
                for &o in listed {
                    let o = o as usize;
                    let (moved, within) = (self.moved, self.cap + self.slack);
                    self.for_each_near::<false>(self.point(o), o, within, |i, _, d2| {
                        let near = d2.sqrt() + moved;
                        if near < f32::from_bits(clearances[i]) {
                            clearances[i] = near.to_bits();
                        }
                    });
                }
            }
            // (Only the listed moved.)
            Some(0.0) => self.refresh_some::<CLEARANCE>(positions, clearances, listed, None),
            // Without clearances nothing pays for a loose drift but a search's box.
            _ if !CLEARANCE => self.refresh_unmeasured(positions, clearances, partials),
            _ => self.refresh_points::<CLEARANCE>(positions, clearances, partials),
        }
    }

    /// [`Self::refresh_points`] without clearances and without measuring the drift: the same
    /// snapshot and `moved`, and a drift that is the old one plus the largest move along an
    /// axis, a bound rather than the measure (in a crowd on the march, nearly the same). So no
    /// cell is walked, and the loop over everyone is a copy. A step's first refresh measures
    /// the drift again (see `Crowd::refresh_snapshot`), so the bound never outlives the step.
    fn refresh_unmeasured(
        &mut self,
        positions: &[Vec2],
        clearances: &mut [u32],
        partials: &mut Vec<(f32, f32, f32)>,
    ) {
        let n = positions.len();
        // (The clearances are not kept here: they are left as they are.)
        let work = |(c, (((xs, ys), _), part)): RefreshPiece| {
            let (mut along, mut unused) = (0.0f32, 0.0f32);
            let points = xs.iter_mut().zip(ys.iter_mut());
            for (&p, (x, y)) in positions[c * SLOTS_PER_REDUCTION..].iter().zip(points) {
                take_move::<false>(p, x, y, &mut 0, &mut along, &mut unused);
            }
            part.0 = along;
        };
        refresh_pieces(
            &mut self.xs[..n],
            &mut self.ys[..n],
            clearances,
            partials,
            work,
        );
        let along = partials.iter().fold(0.0f32, |a, b| a.max(b.0));
        // Along either axis no one went further than `along` (and the slack covers how the
        // measure rounds).
        self.drift += along + self.slack;
        self.add_moves::<false>(along, 0.0, None);
        #[cfg(test)]
        self.assert_drift_holds(positions);
    }

    /// [`Self::refresh_points`] with clearances when everyone but the agents in `listed` moved
    /// at most `walk_bound` (a step's walk): the same snapshot, clearances and `moved`, and a drift
    /// that is the old one plus `walk_bound` (measured only for the listed), so no cell is walked and
    /// the loop over everyone vectorises. The drift is then a bound rather than the measure:
    /// since someone stands at a cell's edge and walks out of it, they are nearly the same.
    fn refresh_walked(
        &mut self,
        positions: &[Vec2],
        walk_bound: f32,
        listed: &[u32],
        clearances: &mut [u32],
    ) {
        let n = positions.len();
        type Piece<'p> = (usize, ((&'p mut [f32], &'p mut [f32]), &'p mut [u32]));
        let work = |(c, ((xs, ys), clear)): Piece| {
            let first = c * SLOTS_PER_REDUCTION;
            let points = xs.iter_mut().zip(ys.iter_mut()).zip(clear.iter_mut());
            for (&p, ((x, y), clear)) in positions[first..].iter().zip(points) {
                let own = move_bound(p - Vec2::new(*x, *y));
                *clear = (f32::from_bits(*clear) - own).to_bits();
                (*x, *y) = (p.x, p.y);
            }
        };
        let (xs, ys) = (&mut self.xs[..n], &mut self.ys[..n]);
        each_piece!(SLOTS_PER_REDUCTION, work, xs, ys, clearances[..n]);
        // Along either axis no one but the listed went further than `walk_bound`.
        let mut out = 0.0f32;
        for &k in listed {
            let k = k as usize;
            out = larger(out, self.outside_filed_cell(k, positions[k]));
        }
        self.drift = larger(self.drift + walk_bound, out * self.cell);
        self.add_moves::<true>(0.0, 0.0, Some(walk_bound));
        #[cfg(test)]
        self.assert_drift_holds(positions);
    }

    /// [`Self::refresh_points`] when only the agents in `moved` can have moved: the same
    /// snapshot, `moved` and clearances, and a drift at least the measured one (it is only
    /// raised), in O(moved log cells).
    fn refresh_some<const CLEARANCE: bool>(
        &mut self,
        positions: &[Vec2],
        clearances: &mut [u32],
        moved: &[u32],
        walk_bound: Option<f32>,
    ) {
        let (mut along, mut most, mut out) = (0.0f32, 0.0f32, 0.0f32);
        for &k in moved {
            let k = k as usize;
            out = larger(out, self.outside_filed_cell(k, positions[k]));
            let (x, y) = (&mut self.xs[k], &mut self.ys[k]);
            take_move::<CLEARANCE>(
                positions[k],
                x,
                y,
                &mut clearances[k],
                &mut along,
                &mut most,
            );
        }
        // Everyone else stands where the last measure found them.
        self.drift = larger(self.drift, out * self.cell);
        self.add_moves::<CLEARANCE>(along, most, walk_bound);
    }

    /// The promise of `drift`: no entry stands further out of the cell it was filed in.
    #[cfg(test)]
    fn assert_drift_holds(&self, positions: &[Vec2]) {
        for (k, &p) in positions.iter().enumerate() {
            let out = self.outside_filed_cell(k, p) * self.cell;
            assert!(
                out <= self.drift,
                "entry {k} stands {out} out, past {}",
                self.drift
            );
        }
    }

    /// How far `p` stands outside the cell that entry `e` was filed in, in cells along either
    /// axis (see `drift`). O(log cells).
    fn outside_filed_cell(&self, e: usize, p: Vec2) -> f32 {
        let cell = cell_box(filed_cell(&self.starts, e), self.cols as usize, self.last);
        outside(p, cell, self.origin, self.inv_cell)
    }

    /// Call `mark` for entry `m`, which moved to `is` since the snapshot was taken, and for
    /// every entry that touched it where it stood or touches it where it stands (rounding
    /// aside): everyone whose push its move can change. `radius` is its radius.
    /// (`level` as in [`Self::for_each_near_in`].)
    #[inline(always)]
    pub(crate) fn for_each_touched(
        &self,
        level: impl Level,
        m: usize,
        is: Vec2,
        radius: f32,
        mut mark: impl FnMut(usize),
    ) {
        let within = radius + self.widest + (is - self.point(m)).length() + self.slack;
        mark(m);
        self.for_each_near_in::<false>(level, is, m, within, |j, _, _| mark(j));
    }

    /// Position of a sorted entry.
    pub(crate) fn point(&self, e: usize) -> Vec2 {
        Vec2::new(self.xs[e], self.ys[e])
    }
}

/// One piece of [`SLOTS_PER_REDUCTION`] entries of a snapshot refresh: its positions, clearances and partial
/// result (largest move along an axis, largest move, drift).
type RefreshPiece<'p> = (
    usize,
    (
        ((&'p mut [f32], &'p mut [f32]), &'p mut [u32]),
        &'p mut (f32, f32, f32),
    ),
);

/// `work` for each piece of a snapshot refresh (in parallel with `parallel`), each with its
/// partial result in `partials` (zeroed first).
fn refresh_pieces(
    xs: &mut [f32],
    ys: &mut [f32],
    clearances: &mut [u32],
    partials: &mut Vec<(f32, f32, f32)>,
    work: impl Fn(RefreshPiece) + Sync + Send,
) {
    partials.clear();
    partials.resize(xs.len().div_ceil(SLOTS_PER_REDUCTION), (0.0, 0.0, 0.0));
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        xs.par_chunks_mut(SLOTS_PER_REDUCTION)
            .zip(ys.par_chunks_mut(SLOTS_PER_REDUCTION))
            .zip(clearances.par_chunks_mut(SLOTS_PER_REDUCTION))
            .zip(partials.par_iter_mut())
            .enumerate()
            .for_each(work);
    }
    #[cfg(not(feature = "parallel"))]
    xs.chunks_mut(SLOTS_PER_REDUCTION)
        .zip(ys.chunks_mut(SLOTS_PER_REDUCTION))
        .zip(clearances.chunks_mut(SLOTS_PER_REDUCTION))
        .zip(partials.iter_mut())
        .enumerate()
        .for_each(work);
}

/// How far an agent moved by `d`, rounded up by a few ulps so that the clearance bounds hold
/// for the distances computed later. The step flags agents by the same number that the
/// snapshot's refresh takes off their clearances.
#[inline(always)]
pub(crate) fn move_bound(d: Vec2) -> f32 {
    d.length() * (1.0 + 1e-6)
}

/// Take one agent's move to `p` into its snapshot entry `(x, y)`: the largest move along an
/// axis and (with `CLEARANCE`) the largest move so far, and the move off its clearance.
#[inline(always)]
fn take_move<const CLEARANCE: bool>(
    p: Vec2,
    x: &mut f32,
    y: &mut f32,
    clear: &mut u32,
    along: &mut f32,
    most: &mut f32,
) {
    let d = p - Vec2::new(*x, *y);
    *along = larger(larger(*along, d.x.abs()), d.y.abs());
    if CLEARANCE {
        let own = move_bound(d);
        *most = larger(*most, own);
        *clear = (f32::from_bits(*clear) - own).to_bits();
    }
    (*x, *y) = (p.x, p.y);
}

/// The cell whose entries `starts[c]..starts[c + 1]` hold entry `e`.
fn filed_cell(starts: &[u32], e: usize) -> usize {
    starts.partition_point(|&s| s as usize <= e) - 1
}

/// Cell `cell`'s sides in grid units (x from, x to, y from, y to), open beyond the grid's edges,
/// where the edge cells take in whoever strays past them.
#[inline(always)]
fn cell_box(cell: usize, cols: usize, last: Vec2) -> [f32; 4] {
    let (x, y) = ((cell % cols) as f32, (cell / cols) as f32);
    let inf = f32::INFINITY;
    [
        if x > 0.0 { x } else { -inf },
        if x < last.x { x + 1.0 } else { inf },
        if y > 0.0 { y } else { -inf },
        if y < last.y { y + 1.0 } else { inf },
    ]
}

/// How far, in cells along either axis, `p` stands outside a cell's box (0 inside), computed
/// from the same grid position that files it.
#[inline(always)]
fn outside(p: Vec2, [x0, x1, y0, y1]: [f32; 4], origin: Vec2, inv_cell: f32) -> f32 {
    let g = (p - origin) * inv_cell;
    larger(
        larger(larger(x0 - g.x, g.x - x1), larger(y0 - g.y, g.y - y1)),
        0.0,
    )
}

/// The neighbour-grid cell index of a position.
#[inline(always)]
fn cell_index(p: Vec2, origin: Vec2, inv_cell: f32, cols: u32, last: Vec2) -> u32 {
    let [x, y, ..] = cells_of(p, p, origin, inv_cell, last);
    y * cols + x
}

/// How many runs of cells (or ids) a sort's scatters are split into: one per thread, up to
/// eight (each run reads every key once, and writes only its own share).
pub(crate) fn sort_parts() -> usize {
    #[cfg(feature = "parallel")]
    {
        rayon::current_num_threads().clamp(1, 8)
    }
    #[cfg(not(feature = "parallel"))]
    1
}

/// `counts[c - lo] += 1` for each key (a cell's bits, `u32::MAX` for none) of a cell in
/// `lo..lo + counts.len()`, split into `parts` runs of cells (in parallel with `parallel`).
fn count_cells(keys: &[f32], counts: &mut [u32], lo: usize, parts: usize) {
    if parts > 1 && counts.len() > 1 {
        let mid = counts.len() / 2;
        let (left, right) = counts.split_at_mut(mid);
        let (a, b) = (parts / 2, parts - parts / 2);
        join(
            || count_cells(keys, left, lo, a),
            || count_cells(keys, right, lo + mid, b),
        );
        return;
    }
    for key in keys {
        // (`u32::MAX` wraps far out of any run.)
        let c = (key.to_bits() as usize).wrapping_sub(lo);
        if c < counts.len() {
            counts[c] += 1;
        }
    }
}

/// Slot `i` of each key (as in [`count_cells`]) of a cell in `lo..lo + cursors.len()` into
/// `slots` at its cell's cursor, which then moves on: `cursors` holds where each cell starts,
/// `slots` the entries from `base` on. In slot order within each cell. Split into `parts`
/// runs of cells, each with the entries its cells start at (in parallel with `parallel`).
fn scatter_slots(
    keys: &[f32],
    cursors: &mut [u32],
    lo: usize,
    slots: &mut [u32],
    base: usize,
    parts: usize,
) {
    if parts > 1 && cursors.len() > 1 {
        let mid = cursors.len() / 2;
        let split = cursors[mid] as usize - base;
        let (left, right) = cursors.split_at_mut(mid);
        let (first, second) = slots.split_at_mut(split);
        let (a, b) = (parts / 2, parts - parts / 2);
        join(
            || scatter_slots(keys, left, lo, first, base, a),
            || scatter_slots(keys, right, lo + mid, second, base + split, b),
        );
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        let c = (key.to_bits() as usize).wrapping_sub(lo);
        if c < cursors.len() {
            let k = cursors[c] as usize;
            cursors[c] += 1;
            slots[k - base] = i as u32;
        }
    }
}

/// Both, in parallel with `parallel`.
fn join(a: impl FnOnce() + Send, b: impl FnOnce() + Send) {
    #[cfg(feature = "parallel")]
    rayon::join(a, b);
    #[cfg(not(feature = "parallel"))]
    {
        a();
        b();
    }
}

/// Most entries [`NeighbourGrid::near8`] lists: those of the cells round eight agents'
/// searched cells, when they are few enough to pay (see [`NeighbourGrid::union8`]).
pub(crate) const NEAR8: usize = 12 * ENTRIES_AT_ONCE + 16;

/// Room for the entries a search gathers before it visits them (see `append_lanes`).
pub(crate) const FOUND: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::tests::*;

    #[test]
    fn the_counting_sort_in_runs_of_cells_matches_a_stable_sort() {
        let mut next = uniform(0x5eed);
        let cells = 37;
        // Cells' bits as the rebuild parks them, a few agents filed nowhere.
        let keys: Vec<f32> = (0..500)
            .map(|k| {
                let cell = if k % 29 == 0 {
                    u32::MAX
                } else {
                    (next() * cells as f32) as u32
                };
                f32::from_bits(cell)
            })
            .collect();
        let mut expected: Vec<u32> = (0..500u32)
            .filter(|&i| keys[i as usize].to_bits() != u32::MAX)
            .collect();
        expected.sort_by_key(|&i| keys[i as usize].to_bits());
        for parts in [1, 2, 3, 8] {
            let mut starts = vec![0u32; cells + 1];
            count_cells(&keys, &mut starts[1..], 0, parts);
            let mut total = 0;
            for s in &mut starts {
                total += *s;
                *s = total;
            }
            let mut slots = vec![u32::MAX; total as usize];
            scatter_slots(&keys, &mut starts[..cells], 0, &mut slots, 0, parts);
            assert_eq!(slots, expected, "{parts} runs");
        }
    }

    #[test]
    fn clearance_never_exceeds_the_distance_to_the_nearest_agent() {
        let mut next = uniform(0x0dd_ba11_u64);
        let mut useful = 0;
        for round in 0..40 {
            let n = 50 + round * 20;
            let side = 5.0 + next() * 60.0;
            let (mut ng, mut sorted) = scattered_grid(&mut next, n, side, 200.0);
            // Then everyone moves a little, twice.
            let (mut partials, mut clearances) = (Vec::new(), vec![0; n]);
            for _ in 0..=round % 3 {
                let most = next() * 1.5;
                for p in &mut sorted {
                    *p += (Vec2::new(next(), next()) - 0.5) * most;
                }
                ng.refresh_points::<true>(&sorted, &mut clearances, &mut partials);
            }
            for k in 0..n {
                let within = 0.2 + next() * 1.5;
                let clearance = ng.for_each_near::<true>(sorted[k], k, within, |_, _, _| {});
                let nearest = nearest_distance(&sorted, k);
                assert!(
                    clearance <= nearest + 1e-4,
                    "round {round}, entry {k}: clearance {clearance} but someone at {nearest}"
                );
                useful += (clearance > within) as usize;
            }
        }
        assert!(
            useful > 1000,
            "clearances beyond the search radius: {useful}"
        );
    }

    #[test]
    fn clearances_stay_bounds_when_few_agents_move_far() {
        // Everyone walks at most `walk_bound`, a few listed agents go further (or only they move):
        // the listed moves stay out of `moved` and lower the clearances near them instead.
        let mut next = uniform(0x7ea_5eed_u64);
        let mut useful = 0;
        for round in 0..30 {
            let n = 60 + round * 25;
            let side = 8.0 + next() * 40.0;
            let (mut ng, mut sorted) = scattered_grid(&mut next, n, side, 100.0);
            ng.cap = 3.0;
            let mut clearances: Vec<u32> = (0..n)
                .map(|k| smaller(nearest_distance(&sorted, k), ng.cap).to_bits())
                .collect();
            let mut partials = Vec::new();
            for walk_bound in [0.2, 0.0, 0.3, 0.0] {
                let listed: Vec<u32> = (0..n as u32).filter(|_| next() < 0.05).collect();
                for (k, p) in sorted.iter_mut().enumerate() {
                    let far = listed.contains(&(k as u32));
                    let length = if far {
                        next() * 1.5
                    } else {
                        next() * walk_bound
                    };
                    let angle = next() * std::f32::consts::TAU;
                    *p += Vec2::new(angle.cos(), angle.sin()) * length;
                }
                ng.take_moves::<true>(
                    &sorted,
                    Some(walk_bound),
                    &listed,
                    &mut clearances,
                    &mut partials,
                );
                for (k, clearance) in clearances.iter().enumerate() {
                    let bound = f32::from_bits(*clearance) - ng.moved;
                    let nearest = nearest_distance(&sorted, k);
                    assert!(
                        bound <= nearest + 1e-4,
                        "round {round}, entry {k}: clearance {bound} but someone at {nearest}"
                    );
                    useful += (bound > 0.5) as usize;
                }
            }
        }
        assert!(useful > 10_000, "clearances over half a cell: {useful}");
    }

    #[test]
    fn searches_find_everyone_in_reach_after_moves_without_a_resort() {
        // Points wander off the cells they were filed in, some far, and are taken into the
        // snapshot by full and by listed refreshes; every search must still find exactly the
        // points in reach, and its clearance must stay a lower bound.
        let mut next = uniform(0x2545_f491_4f6c_dd1du64);
        for round in 0..6 {
            let n = [300, 1200][round % 2];
            let (mut ng, mut points) = scattered_grid(&mut next, n, 25.0, 200.0);
            let (mut clearances, mut partials) = (vec![0u32; n], Vec::new());
            for refresh in 0..8 {
                let listed: Vec<u32> = if refresh % 3 == 2 {
                    (0..n as u32).filter(|_| next() < 0.05).collect()
                } else {
                    (0..n as u32).collect()
                };
                for &k in &listed {
                    let far = if next() < 0.05 { 3.0 } else { 0.6 };
                    points[k as usize] += (Vec2::new(next(), next()) - 0.5) * 2.0 * far;
                }
                if listed.len() == n {
                    ng.refresh_points::<false>(&points, &mut clearances, &mut partials);
                } else {
                    ng.refresh_some::<false>(&points, &mut clearances, &listed, None);
                }
                for (e, &p) in points.iter().enumerate() {
                    let off = ng.outside_filed_cell(e, p);
                    assert!(off * ng.cell <= ng.drift, "entry {e} is {off} cells out");
                }
                for k in (0..n).step_by(7) {
                    for within in [0.5f32, 1.0, 2.5] {
                        let mut found = Vec::new();
                        let clearance =
                            ng.for_each_near::<true>(points[k], k, within, |j, _, _| found.push(j));
                        found.sort_unstable();
                        let want: Vec<usize> = (0..n)
                            .filter(|&j| {
                                j != k && (points[k] - points[j]).length_squared() < within * within
                            })
                            .collect();
                        assert_eq!(found, want, "round {round}, refresh {refresh}, point {k}");
                        let nearest = nearest_distance(&points, k);
                        assert!(clearance <= nearest + 1e-4, "{clearance} > {nearest}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_walk_refresh_takes_the_moves_as_the_measuring_refresh_does() {
        // After a walk (everyone but a listed few moved at most `walk_bound`), `refresh_walked` must
        // leave the snapshot and the clearances bit for bit as `refresh_points` leaves them, add
        // `walk_bound` to `moved`, and keep a drift no smaller than the measured one (it asserts that
        // bound against every entry itself).
        let mut next = uniform(0x7a1c_0ffe_u64);
        for round in 0..6 {
            let n = [300, 1200][round % 2];
            let (mut walked, mut points) = scattered_grid(&mut next, n, 25.0, 200.0);
            let mut measured = walked.clone();
            let mut walked_clear: Vec<u32> = (0..n).map(|_| (next() * 4.0).to_bits()).collect();
            let mut measured_clear = walked_clear.clone();
            let mut partials = Vec::new();
            let walk_bound = 0.2;
            for refresh in 0..5 {
                let mut listed = Vec::new();
                for (k, p) in points.iter_mut().enumerate() {
                    if next() < 0.03 {
                        *p += (Vec2::new(next(), next()) - 0.5) * 4.0;
                        listed.push(k as u32);
                    } else {
                        let d = (Vec2::new(next(), next()) - 0.5).normalize_or_zero();
                        *p += d * (0.99 * walk_bound * next());
                    }
                }
                let before = walked.moved;
                walked.refresh_walked(&points, walk_bound, &listed, &mut walked_clear);
                measured.refresh_points::<true>(&points, &mut measured_clear, &mut partials);
                assert_eq!(walked.xs, measured.xs, "round {round}, refresh {refresh}");
                assert_eq!(walked.ys, measured.ys, "round {round}, refresh {refresh}");
                assert_eq!(
                    walked_clear, measured_clear,
                    "round {round}, refresh {refresh}"
                );
                assert_eq!(walked.moved, before + walk_bound);
                assert!(
                    walked.drift >= measured.drift,
                    "round {round}, refresh {refresh}"
                );
            }
        }
    }

    #[test]
    fn the_neighbour_grid_has_at_most_one_cell_per_two_agents() {
        // Columns on the march (one row of agents along a long map), spread crowds, tiny ones.
        let cost = CostField::new(Grid::new(1000, 40).unwrap());
        for (n, column) in [
            (10, true),
            (1000, true),
            (3, false),
            (1000, false),
            (5000, false),
        ] {
            let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
            for k in 0..n {
                let p = if column {
                    Vec2::new(k as f32 * 999.0 / n as f32 + 0.5, 20.5)
                } else {
                    Vec2::new((k * 37 % 1000) as f32 + 0.5, (k * 11 % 40) as f32 + 0.5)
                };
                crowd.add_agent(&cost, params(p)).unwrap();
            }
            crowd.rebuild_neighbours();
            let ng = &crowd.neighbours;
            let cells = ng.cols as usize * ng.rows as usize;
            assert!(cells <= (n / 2).max(1), "{n} agents, {cells} cells");
            // Cells are never narrower than the reach of a push.
            assert!(ng.cell >= ng.reach.max(2.0 * ng.widest));
            assert_eq!(ng.slots.len(), n);
        }
    }
}
