//! The neighbour grid, as DetourCrowd's proximity grid: the living agents filed into cells by a
//! counting sort, a snapshot of their positions in cell order, and the searches that read it,
//! [`LANES`] candidates at a time without branches. It also keeps what is known of how far
//! everyone moved since (the drift, and each agent's clearance as a lower bound), so that
//! searches and collision passes skip agents that cannot have anyone in reach.

use super::*;

/// Uniform grid of the agents' positions, rebuilt every step by a counting sort, with a
/// cell-sorted snapshot of what changes during a step and neighbours read (position, state).
#[derive(Debug, Clone, Default)]
pub(super) struct NeighbourGrid {
    /// Smallest cell side: the longest distance at which agents interact.
    pub(super) reach: f32,
    /// The widest radius of a living agent.
    pub(super) widest: f32,
    /// How far outside its cell any entry of the snapshot may stand, along either axis (the
    /// cell it was filed in when the grid was built; an edge cell reaches beyond the grid's
    /// edge). Measured at each refresh of the snapshot, so a crowd that jostles in place keeps
    /// a small drift however far its members wander to and fro.
    pub(super) drift: f32,
    /// The same as a distance.
    pub(super) moved: f32,
    /// The box round the living agents when the grid was built.
    pub(super) extent: Vec2,
    pub(super) origin: Vec2,
    pub(super) cell: f32,
    pub(super) inv_cell: f32,
    pub(super) cols: u32,
    pub(super) rows: u32,
    /// The last column and row, as floats.
    pub(super) last: Vec2,
    /// More than the rounding error of any distance or clearance on this grid.
    pub(super) slack: f32,
    /// No clearance is taken to be more than this (so that [`Self::take_moves`] knows how far
    /// a move can lower one).
    pub(super) cap: f32,
    /// `starts[c]..starts[c + 1]` are the sorted entries of cell `c`.
    pub(super) starts: Vec<u32>,
    /// Slot of each sorted entry.
    pub(super) slots: Vec<u32>,
    /// Position of each sorted entry, x and y apart (so that [`Self::for_each_near`] measures
    /// eight at once), padded by [`LANES`] entries out of everyone's reach.
    pub(super) xs: Vec<f32>,
    pub(super) ys: Vec<f32>,
    /// Scratch of the parallel reduction that finds the box.
    pub(super) partial_boxes: Vec<(Vec2, Vec2, f32)>,
    /// State of each sorted entry before the step.
    pub(super) states: Vec<AgentState>,
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
    /// stood when the grid was built. Entries are measured [`LANES`] at a time without
    /// branches, so only the few in range reach branchy code (with `AVX2`, not even that: they
    /// are gathered into a list, then visited); the snapshot is padded for the last chunk.
    ///
    /// Without `CLEARANCE` it returns 0 and skips the work of measuring the clearance.
    #[inline(always)]
    pub(super) fn for_each_near<const CLEARANCE: bool>(
        &self,
        p: Vec2,
        me: usize,
        within: f32,
        visit: impl FnMut(usize, Vec2, f32),
    ) -> f32 {
        self.for_each_near_in::<CLEARANCE, false>(p, me, within, visit)
    }

    /// [`Self::for_each_near`], measuring with AVX2 if `AVX2` (in one register, where SSE takes
    /// two; the same bits). Only code compiled for x86-64-v3 may set `AVX2`.
    #[inline(always)]
    pub(super) fn for_each_near_in<const CLEARANCE: bool, const AVX2: bool>(
        &self,
        p: Vec2,
        me: usize,
        within: f32,
        mut visit: impl FnMut(usize, Vec2, f32),
    ) -> f32 {
        let within2 = within * within;
        // A hundredth of a cell more, for rounding in the positions and the drift.
        let reach = Vec2::splat(within + self.drift + 0.01 * self.cell);
        let [x0, y0, x1, y1] = self.cells_of(p - reach, p + reach);
        let mut nearest2 = Least::none();
        let mut any = 0;
        // (The v3 code gathers the entries in reach here and visits them after the blocks.)
        let mut found = [0u32; FOUND];
        let mut count = 0;
        for y in y0..y1 + 1 {
            let row = (y * self.cols) as usize;
            let mut e = self.starts[row + x0 as usize] as usize;
            let end = self.starts[row + x1 as usize + 1] as usize;
            while e < end {
                let xs: &[f32; LANES] = self.xs[e..e + LANES]
                    .try_into()
                    .expect("the snapshot is padded by LANES entries");
                let ys: &[f32; LANES] = self.ys[e..e + LANES].try_into().expect("padded");
                // Lanes past `end` are entries of other cells or padding: true distances to
                // someone, or infinite, so they may lower the clearance but never wrongly.
                let own = me.wrapping_sub(e);
                #[cfg(target_arch = "x86_64")]
                let mask = if AVX2 {
                    // SAFETY: `AVX2`, `near_mask8`'s only requirement, is set only by callers
                    // compiled for x86-64-v3, which run only where the CPU has it.
                    unsafe { near_mask8(p, xs, ys, within2, own, &mut nearest2) }
                } else {
                    near_mask(p, xs, ys, within2, own, &mut nearest2)
                };
                #[cfg(not(target_arch = "x86_64"))]
                let mask = near_mask(p, xs, ys, within2, own, &mut nearest2);
                // Without a branch: whether a block is the last of its run is a coin toss.
                let mut mask = mask & ((1 << (end - e).min(LANES)) - 1);
                any |= mask;
                #[cfg(target_arch = "x86_64")]
                if AVX2 {
                    // In entry order, as below, but without a branch on how many a block
                    // holds: in a dense crowd that is a coin toss as well, and it cost more
                    // than the searching (a tenth of a step of a crowd walking in lanes).
                    // SAFETY: as `near_mask8` above; `found` has room for eight more, since
                    // it is emptied as soon as it has less.
                    unsafe { append_lanes(&mut found, count, e, mask) };
                    count += mask.count_ones() as usize;
                    if count > FOUND - LANES {
                        for &j in &found[..count] {
                            let diff = p - self.point(j as usize);
                            visit(j as usize, diff, diff.length_squared());
                        }
                        count = 0;
                    }
                    e += LANES;
                    continue;
                }
                while mask != 0 {
                    let j = e + mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    let diff = p - self.point(j);
                    visit(j, diff, diff.length_squared());
                }
                e += LANES;
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
    fn run(&self, y: u32, x0: u32, x1: u32) -> std::ops::Range<usize> {
        let row = y as usize * self.cols as usize;
        self.starts[row + x0 as usize] as usize..self.starts[row + x1 as usize + 1] as usize
    }

    /// The searched cells of eight agents within `within` of `(px, py)`, as
    /// [`Self::for_each_near`] finds them (grid coordinates, clamped: x0, y0, x1, y1), and the
    /// cells round those of the agents in `lanes` (first and last column and row); `None` if
    /// these hold too many entries for one pass over them to pay (more than 12 an agent, and
    /// 16).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[allow(clippy::type_complexity)]
    fn union8(
        &self,
        lanes: u32,
        (px, py): (std::arch::x86_64::__m256, std::arch::x86_64::__m256),
        within: std::arch::x86_64::__m256,
    ) -> Option<([std::arch::x86_64::__m256; 4], [u32; 4])> {
        use std::arch::x86_64::*;
        let splat = _mm256_set1_ps;
        let infinity = splat(f32::INFINITY);
        // Each agent's searched cells, as `for_each_near` finds them (`cells_of`).
        let reach = _mm256_add_ps(
            _mm256_add_ps(within, splat(self.drift)),
            splat(0.01 * self.cell),
        );
        let grid = |v: __m256, origin: f32, last: f32| {
            let g = _mm256_mul_ps(_mm256_sub_ps(v, splat(origin)), splat(self.inv_cell));
            _mm256_min_ps(_mm256_max_ps(g, _mm256_setzero_ps()), splat(last))
        };
        let (ox, oy, last) = (self.origin.x, self.origin.y, self.last);
        let x0 = grid(_mm256_sub_ps(px, reach), ox, last.x);
        let y0 = grid(_mm256_sub_ps(py, reach), oy, last.y);
        let x1 = grid(_mm256_add_ps(px, reach), ox, last.x);
        let y1 = grid(_mm256_add_ps(py, reach), oy, last.y);
        // The cells round all of them (the grid positions are clamped, and exact as integers
        // once truncated).
        let searching = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
            _mm256_and_si256(
                _mm256_set1_epi32(lanes as i32),
                _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128),
            ),
            _mm256_setzero_si256(),
        ));
        let least = |v: __m256| {
            let v = _mm256_blendv_ps(infinity, v, searching);
            let v = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let v = _mm_min_ps(v, _mm_movehl_ps(v, v));
            _mm_cvtss_f32(_mm_min_ss(v, _mm_shuffle_ps::<1>(v, v))) as u32
        };
        let most = |v: __m256| {
            let v = _mm256_blendv_ps(_mm256_setzero_ps(), v, searching);
            let v = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let v = _mm_max_ps(v, _mm_movehl_ps(v, v));
            _mm_cvtss_f32(_mm_max_ss(v, _mm_shuffle_ps::<1>(v, v))) as u32
        };
        let (ux0, uy0, ux1, uy1) = (least(x0), least(y0), most(x1), most(y1));
        let total: usize = (uy0..=uy1).map(|y| self.run(y, ux0, ux1).len()).sum();
        if total > 12 * lanes.count_ones() as usize + 16 {
            return None;
        }
        Some(([x0, y0, x1, y1], [ux0, uy0, ux1, uy1]))
    }

    /// [`Self::for_each_near`] with `CLEARANCE` of the agents of entries `first + l` for the
    /// lanes `l` set in `lanes` (not none), standing at `(px[l], py[l])`, each within
    /// `within[l]`, at once, for
    /// agents that mostly find no one: the lanes whose search would visit someone, and for each
    /// of the others the clearance its search would return, with the same bits. `None` if their
    /// searched cells together hold too many entries for this to pay.
    ///
    /// One pass over the entries of the box round all their searched cells, each measured
    /// against the eight agents in one AVX2 register, as `near_mask` measures. Someone within
    /// reach of an agent stands in its own searched cells, so the lanes that find someone are
    /// those of a search of its own. An agent that finds no one gets the nearest of all the
    /// entries measured, or the room to its own cells' sides, whichever is less: the entries
    /// beyond its own cells stand at least that room away, so the least is that of its own
    /// search, which measures the entries of its cells and a few others.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub(super) fn probe8(
        &self,
        first: usize,
        lanes: u32,
        (px, py): (std::arch::x86_64::__m256, std::arch::x86_64::__m256),
        within: std::arch::x86_64::__m256,
    ) -> Option<(u32, std::arch::x86_64::__m256)> {
        use std::arch::x86_64::*;
        let splat = _mm256_set1_ps;
        let infinity = splat(f32::INFINITY);
        let ([x0, y0, x1, y1], [ux0, uy0, ux1, uy1]) = self.union8(lanes, (px, py), within)?;
        let (ox, oy) = (self.origin.x, self.origin.y);
        // The nearest entry to each agent but itself. (Someone is within reach if the nearest
        // is.)
        let mut nearest = infinity;
        for y in uy0..=uy1 {
            let entries = self.run(y, ux0, ux1);
            let (xs, ys) = (&self.xs[entries.clone()], &self.ys[entries.clone()]);
            for (e, (&x, &y)) in entries.zip(xs.iter().zip(ys)) {
                let d2 = distances8(px, py, x, y, e.wrapping_sub(first));
                nearest = _mm256_min_ps(nearest, d2);
            }
        }
        let visited = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OS>(
            nearest,
            _mm256_mul_ps(within, within),
        )) as u32
            & lanes;
        // Those who found no one: as `for_each_near` ends then (`side_room`), eight at once.
        let (x0, y0) = (_mm256_cvttps_epi32(x0), _mm256_cvttps_epi32(y0));
        let ones = _mm256_set1_epi32(1);
        let x1 = _mm256_add_epi32(_mm256_cvttps_epi32(x1), ones);
        let y1 = _mm256_add_epi32(_mm256_cvttps_epi32(y1), ones);
        let gx = _mm256_mul_ps(_mm256_sub_ps(px, splat(ox)), splat(self.inv_cell));
        let gy = _mm256_mul_ps(_mm256_sub_ps(py, splat(oy)), splat(self.inv_cell));
        let side = |room: __m256, at: __m256i, edge: i32| {
            let open = _mm256_cmpeq_epi32(at, _mm256_set1_epi32(edge));
            _mm256_blendv_ps(room, infinity, _mm256_castsi256_ps(open))
        };
        let west = side(_mm256_sub_ps(gx, _mm256_cvtepi32_ps(x0)), x0, 0);
        let north = side(_mm256_sub_ps(gy, _mm256_cvtepi32_ps(y0)), y0, 0);
        let east = side(
            _mm256_sub_ps(_mm256_cvtepi32_ps(x1), gx),
            x1,
            self.cols as i32,
        );
        let south = side(
            _mm256_sub_ps(_mm256_cvtepi32_ps(y1), gy),
            y1,
            self.rows as i32,
        );
        let room = _mm256_min_ps(_mm256_min_ps(west, east), _mm256_min_ps(north, south));
        let beyond = _mm256_sub_ps(_mm256_mul_ps(room, splat(self.cell)), splat(self.drift));
        Some((visited, _mm256_min_ps(_mm256_sqrt_ps(nearest), beyond)))
    }

    /// The entries that the searches of the agents of entries `first + l` for the lanes `l`
    /// set in `lanes`, standing at `(px[l], py[l])`, each within `within[l]`, would visit, all
    /// in entry order: listed in `list`, how many returned. One pass over the entries of the
    /// cells round all their searched cells, each measured against the eight agents in one
    /// AVX2 register as `near_mask` measures (an entry outside an agent's own cells is out of
    /// its reach). `None` where that does not pay (see [`Self::union8`]).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub(super) fn near8(
        &self,
        first: usize,
        lanes: u32,
        (px, py): (std::arch::x86_64::__m256, std::arch::x86_64::__m256),
        within: std::arch::x86_64::__m256,
        list: &mut [u32; NEAR8],
    ) -> Option<usize> {
        use std::arch::x86_64::*;
        let (_, [ux0, uy0, ux1, uy1]) = self.union8(lanes, (px, py), within)?;
        let within2 = _mm256_mul_ps(within, within);
        let mut count = 0;
        for y in uy0..=uy1 {
            let entries = self.run(y, ux0, ux1);
            let (xs, ys) = (&self.xs[entries.clone()], &self.ys[entries.clone()]);
            for (e, (&x, &y)) in entries.zip(xs.iter().zip(ys)) {
                let d2 = distances8(px, py, x, y, e.wrapping_sub(first));
                let near = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OS>(d2, within2)) as u32;
                // Listed without a branch: whether an entry is near one of the eight is a
                // coin toss.
                list[count] = e as u32;
                count += (near & lanes != 0) as usize;
            }
        }
        Some(count)
    }

    /// Sort the living agents into the cells of a grid over the box round them. The cell side is
    /// at least `reach` (so the 3 × 3 block round an agent, which `max_overlap` reads, holds
    /// every neighbour in reach) and grows on sparse crowds so that the grid has at most about
    /// one cell per two agents: the work per step is O(agents), whatever the map's size, and the
    /// cell starts cost at most 2 bytes per agent.
    pub(super) fn rebuild(
        &mut self,
        positions: &[Vec2],
        flags: &[u8],
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
                    .filter(|&i| flags[i] & ALIVE != 0)
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
            let cell = if flags[i] & ALIVE != 0 {
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
            for (((x, y), state), &slot) in entries.zip(&slots[c * CHUNK..]) {
                let slot = slot as usize;
                (*x, *y, *state) = (positions[slot].x, positions[slot].y, states[slot]);
            }
        };
        each_piece!(CHUNK, work, self.xs, self.ys, self.states);
        self.xs.extend_from_slice(&[f32::INFINITY; LANES]);
        self.ys.extend_from_slice(&[f32::INFINITY; LANES]);
    }

    /// The share of the `alive` agents that would have no one within `reach` if they stood at
    /// random (a Poisson crowd) at the density of the occupied cells: a guess at how many a
    /// neighbour search would find clear, from the cell starts alone. O(cells).
    pub(super) fn clear_share(&self, alive: usize, reach: f32) -> f32 {
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
    pub(super) fn refresh_points<const CLEARANCE: bool>(
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
            let first = c * CHUNK;
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

    /// Count moves into `moved`: `calm` if given, else the largest move (without clearances,
    /// the bound that the largest move along an axis gives).
    fn add_moves<const CLEARANCE: bool>(&mut self, along: f32, most: f32, calm: Option<f32>) {
        // Without clearances nobody reads `moved`; it stays a bound all the same.
        self.moved += match calm {
            Some(calm) => calm,
            None if CLEARANCE => most,
            None => along * std::f32::consts::SQRT_2 * (1.0 + 1e-6),
        };
    }

    /// Take new positions into the snapshot, knowing (`since`, if known) that everyone but the
    /// agents in `listed` moved at most that far since the last refresh. With clearances, the
    /// listed agents' moves do not go into `moved`, which every clearance pays for: instead
    /// each agent within [`Self::cap`] of one takes the distance to it as its clearance if that
    /// is less (a few searches, where a few far moves would cost everyone's clearance as much).
    pub(super) fn take_moves<const CLEARANCE: bool>(
        &mut self,
        positions: &[Vec2],
        since: Option<f32>,
        listed: &[u32],
        clearances: &mut [u32],
        partials: &mut Vec<(f32, f32, f32)>,
    ) {
        match since {
            Some(calm) if CLEARANCE => {
                if calm > 0.0 {
                    self.refresh_walked(positions, calm, listed, clearances);
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
            for (&p, (x, y)) in positions[c * CHUNK..].iter().zip(points) {
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
    /// at most `calm` (a step's walk): the same snapshot, clearances and `moved`, and a drift
    /// that is the old one plus `calm` (measured only for the listed), so no cell is walked and
    /// the loop over everyone vectorises. The drift is then a bound rather than the measure:
    /// since someone stands at a cell's edge and walks out of it, they are nearly the same.
    fn refresh_walked(
        &mut self,
        positions: &[Vec2],
        calm: f32,
        listed: &[u32],
        clearances: &mut [u32],
    ) {
        let n = positions.len();
        type Piece<'p> = (usize, ((&'p mut [f32], &'p mut [f32]), &'p mut [u32]));
        let work = |(c, ((xs, ys), clear)): Piece| {
            let first = c * CHUNK;
            let points = xs.iter_mut().zip(ys.iter_mut()).zip(clear.iter_mut());
            for (&p, ((x, y), clear)) in positions[first..].iter().zip(points) {
                let own = move_bound(p - Vec2::new(*x, *y));
                *clear = (f32::from_bits(*clear) - own).to_bits();
                (*x, *y) = (p.x, p.y);
            }
        };
        let (xs, ys) = (&mut self.xs[..n], &mut self.ys[..n]);
        each_piece!(CHUNK, work, xs, ys, clearances[..n]);
        // Along either axis no one but the listed went further than `calm`.
        let mut out = 0.0f32;
        for &k in listed {
            let k = k as usize;
            out = larger(out, self.outside_filed_cell(k, positions[k]));
        }
        self.drift = larger(self.drift + calm, out * self.cell);
        self.add_moves::<true>(0.0, 0.0, Some(calm));
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
        calm: Option<f32>,
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
        self.add_moves::<CLEARANCE>(along, most, calm);
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
    /// (`AVX2` as in [`Self::for_each_near_in`].)
    #[inline(always)]
    pub(super) fn for_each_touched<const AVX2: bool>(
        &self,
        m: usize,
        is: Vec2,
        radius: f32,
        mut mark: impl FnMut(usize),
    ) {
        let within = radius + self.widest + (is - self.point(m)).length() + self.slack;
        mark(m);
        self.for_each_near_in::<false, AVX2>(is, m, within, |j, _, _| mark(j));
    }

    /// Position of a sorted entry.
    pub(super) fn point(&self, e: usize) -> Vec2 {
        Vec2::new(self.xs[e], self.ys[e])
    }
}

/// One piece of [`CHUNK`] entries of a snapshot refresh: its positions, clearances and partial
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
    partials.resize(xs.len().div_ceil(CHUNK), (0.0, 0.0, 0.0));
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        xs.par_chunks_mut(CHUNK)
            .zip(ys.par_chunks_mut(CHUNK))
            .zip(clearances.par_chunks_mut(CHUNK))
            .zip(partials.par_iter_mut())
            .enumerate()
            .for_each(work);
    }
    #[cfg(not(feature = "parallel"))]
    xs.chunks_mut(CHUNK)
        .zip(ys.chunks_mut(CHUNK))
        .zip(clearances.chunks_mut(CHUNK))
        .zip(partials.iter_mut())
        .enumerate()
        .for_each(work);
}

/// How far an agent moved by `d`, rounded up by a few ulps so that the clearance bounds hold
/// for the distances computed later. The step flags agents by the same number that the
/// snapshot's refresh takes off their clearances.
#[inline(always)]
pub(super) fn move_bound(d: Vec2) -> f32 {
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

/// The neighbour-grid cells (column, row) of two positions, `[x(a), y(a), x(b), y(b)]`, each
/// clamped to the grid.
#[inline(always)]
fn cells_of(a: Vec2, b: Vec2, origin: Vec2, inv_cell: f32, last: Vec2) -> [u32; 4] {
    // Clamped to `0..=last` (the last column and row, as floats: the sides are under 2^13, so
    // exact), so truncation is the floor and the clamp needs no integer compare.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is enabled at compile time (the cfg above); no memory is touched but
        // the local array the result is stored to. `cells_of_agrees_with_the_scalar_cells`
        // covers this against `cells_of_scalar`.
        unsafe {
            let v = _mm_setr_ps(a.x, a.y, b.x, b.y);
            let o = _mm_setr_ps(origin.x, origin.y, origin.x, origin.y);
            let top = _mm_setr_ps(last.x, last.y, last.x, last.y);
            let g = _mm_mul_ps(_mm_sub_ps(v, o), _mm_set1_ps(inv_cell));
            let g = _mm_min_ps(_mm_max_ps(g, _mm_setzero_ps()), top);
            let mut out = [0u32; 4];
            _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_cvttps_epi32(g));
            out
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    cells_of_scalar(a, b, origin, inv_cell, last)
}

/// [`cells_of`] one axis at a time.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn cells_of_scalar(a: Vec2, b: Vec2, origin: Vec2, inv_cell: f32, last: Vec2) -> [u32; 4] {
    let cell = |p: Vec2| {
        // Clamped at 0 first, so truncation is the floor (and needs no libm call).
        let g = ((p - origin) * inv_cell).max(Vec2::ZERO);
        (
            (g.x as u32).min(last.x as u32),
            (g.y as u32).min(last.y as u32),
        )
    };
    let ((ax, ay), (bx, by)) = (cell(a), cell(b));
    [ax, ay, bx, by]
}

/// How far (in cells) grid position `g` lies inside the block of cells `[x0, y0, x1, y1]`
/// from its nearest side that is not the grid's edge (infinite if every side is), for the
/// clearance bound of [`NeighbourGrid::for_each_near`]. Which side is nearest is anyone's
/// guess, so it is taken without branches.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn side_room(g: Vec2, [x0, y0, x1, y1]: [u32; 4], cols: u32, rows: u32) -> f32 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is enabled at compile time (the cfg above); no memory is touched.
    // `side_room_agrees_with_the_scalar_room` covers this against `side_room_scalar`.
    unsafe {
        let sides = _mm_setr_epi32(x0 as i32, y0 as i32, (x1 + 1) as i32, (y1 + 1) as i32);
        let edges = _mm_setr_epi32(0, 0, cols as i32, rows as i32);
        let open = _mm_castsi128_ps(_mm_cmpeq_epi32(sides, edges));
        let (at, s) = (_mm_setr_ps(g.x, g.y, g.x, g.y), _mm_cvtepi32_ps(sides));
        // From the low sides up to `g`, from `g` up to the high sides.
        let room = _mm_shuffle_ps::<0b11_10_01_00>(_mm_sub_ps(at, s), _mm_sub_ps(s, at));
        let inf = _mm_set1_ps(f32::INFINITY);
        let room = _mm_or_ps(_mm_andnot_ps(open, room), _mm_and_ps(open, inf));
        let m = _mm_min_ps(room, _mm_movehl_ps(room, room));
        _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps::<1>(m, m)))
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn side_room(g: Vec2, cells: [u32; 4], cols: u32, rows: u32) -> f32 {
    side_room_scalar(g, cells, cols, rows)
}

/// [`side_room`] one side at a time.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn side_room_scalar(g: Vec2, [x0, y0, x1, y1]: [u32; 4], cols: u32, rows: u32) -> f32 {
    let mut side = f32::INFINITY;
    if x0 > 0 {
        side = smaller(side, g.x - x0 as i32 as f32);
    }
    if x1 + 1 < cols {
        side = smaller(side, (x1 + 1) as i32 as f32 - g.x);
    }
    if y0 > 0 {
        side = smaller(side, g.y - y0 as i32 as f32);
    }
    if y1 + 1 < rows {
        side = smaller(side, (y1 + 1) as i32 as f32 - g.y);
    }
    side
}

/// The neighbour-grid cell index of a position.
#[inline(always)]
fn cell_index(p: Vec2, origin: Vec2, inv_cell: f32, cols: u32, last: Vec2) -> u32 {
    let [x, y, ..] = cells_of(p, p, origin, inv_cell, last);
    y * cols + x
}

/// The least of some squared distances, gathered [`LANES`] at a time by [`near_mask`].
#[derive(Clone, Copy)]
struct Least {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    lanes: std::arch::x86_64::__m128,
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    value: f32,
}

impl Least {
    #[inline(always)]
    fn none() -> Least {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            // SAFETY: SSE2 is enabled at compile time (the cfg) and no memory is touched.
            let lanes = unsafe { std::arch::x86_64::_mm_set1_ps(f32::INFINITY) };
            Least { lanes }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        Least {
            value: f32::INFINITY,
        }
    }

    #[inline(always)]
    fn value(self) -> f32 {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        // SAFETY: SSE2 is enabled at compile time (the cfg) and no memory is touched.
        unsafe {
            use std::arch::x86_64::*;
            let m = self.lanes;
            let m = _mm_min_ps(m, _mm_movehl_ps(m, m));
            _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps::<1>(m, m)))
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        self.value
    }
}

/// Bit `l` set where `(xs[l], ys[l])` lies closer to `p` than `sqrt(within2)`, except lane
/// `own` (no lane when `own >= LANES`); the squared distances of the other lanes go into
/// `least`. The distance is computed as [`Vec2::length_squared`] computes it, so it has the
/// same bits.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn near_mask(
    p: Vec2,
    xs: &[f32; LANES],
    ys: &[f32; LANES],
    within2: f32,
    own: usize,
    least: &mut Least,
) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is enabled at compile time (the cfg above; every x86-64 CPU has it); each
    // unaligned load reads 4 floats at offset 0 or 4 of an array of 8, or of a row of
    // `OWN_LANE`. The compiler does not find the compare-to-bitmask pattern on its own (its
    // reduction costs 3x the instructions); `near_mask_agrees_with_the_scalar_distance`
    // covers this against `near_mask_scalar`.
    unsafe {
        let (px, py, w2) = (_mm_set1_ps(p.x), _mm_set1_ps(p.y), _mm_set1_ps(within2));
        // Infinity in the own lane, so that it is neither near nor the least.
        let skip = OWN_LANE[own.min(LANES)].as_ptr();
        let half = |l: usize| {
            let x = _mm_loadu_ps(xs.as_ptr().add(l));
            let y = _mm_loadu_ps(ys.as_ptr().add(l));
            let (dx, dy) = (_mm_sub_ps(px, x), _mm_sub_ps(py, y));
            let d2 = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
            let d2 = _mm_add_ps(d2, _mm_loadu_ps(skip.add(l)));
            (_mm_movemask_ps(_mm_cmplt_ps(d2, w2)) as u32, d2)
        };
        let ((lo, a), (hi, b)) = (half(0), half(4));
        least.lanes = _mm_min_ps(least.lanes, _mm_min_ps(a, b));
        lo | hi << 4
    }
}

/// [`near_mask`] in one AVX2 register: the same operations, so the same bits.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "avx2")]
#[inline]
fn near_mask8(
    p: Vec2,
    xs: &[f32; LANES],
    ys: &[f32; LANES],
    within2: f32,
    own: usize,
    least: &mut Least,
) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: each unaligned load reads the 8 floats of an array of 8 (the positions, a row of
    // `OWN_LANE`). `near_mask_agrees_with_the_scalar_distance` covers this.
    let (x, y, skip) = unsafe {
        (
            _mm256_loadu_ps(xs.as_ptr()),
            _mm256_loadu_ps(ys.as_ptr()),
            _mm256_loadu_ps(OWN_LANE[own.min(LANES)].as_ptr()),
        )
    };
    let dx = _mm256_sub_ps(_mm256_set1_ps(p.x), x);
    let dy = _mm256_sub_ps(_mm256_set1_ps(p.y), y);
    let d2 = _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy));
    // Infinity in the own lane, so that it is neither near nor the least.
    let d2 = _mm256_add_ps(d2, skip);
    let (a, b) = (_mm256_castps256_ps128(d2), _mm256_extractf128_ps::<1>(d2));
    least.lanes = _mm_min_ps(least.lanes, _mm_min_ps(a, b));
    _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OS>(d2, _mm256_set1_ps(within2))) as u32
}

/// How many runs of cells (or ids) a sort's scatters are split into: one per thread, up to
/// eight (each run reads every key once, and writes only its own share).
pub(super) fn sort_parts() -> usize {
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
pub(super) const NEAR8: usize = 12 * LANES + 16;

/// Distance² from eight agents at `(px, py)` to the entry at `(x, y)`, as `near_mask`
/// measures it: infinite in lane `own` if that is under [`LANES`] (the entry is that agent).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn distances8(
    px: std::arch::x86_64::__m256,
    py: std::arch::x86_64::__m256,
    x: f32,
    y: f32,
    own: usize,
) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let dx = _mm256_sub_ps(px, _mm256_set1_ps(x));
    let dy = _mm256_sub_ps(py, _mm256_set1_ps(y));
    let d2 = _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy));
    // SAFETY: reads 8 floats from a row of `OWN_LANE`.
    _mm256_add_ps(d2, unsafe {
        _mm256_loadu_ps(OWN_LANE[own.min(LANES)].as_ptr())
    })
}

/// Room for the entries a search gathers before it visits them (see `append_lanes`).
const FOUND: usize = 16;

/// Lane numbers of the bits set in each 8-bit mask, in order (the rest 0).
#[cfg(target_arch = "x86_64")]
static SET_LANES: [[u8; LANES]; 256] = {
    let mut table = [[0u8; LANES]; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut l, mut k) = (0, 0);
        while l < LANES {
            if mask >> l & 1 != 0 {
                table[mask][k] = l as u8;
                k += 1;
            }
            l += 1;
        }
        mask += 1;
    }
    table
};

/// Write `e + l` for each lane `l` set in `mask` (under 256), in order, to `found[count..]`;
/// eight entries are written, of which the caller counts the set ones.
///
/// # Safety
/// The CPU has AVX2; `count + LANES <= found.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn append_lanes(found: &mut [u32; FOUND], count: usize, e: usize, mask: u32) {
    use std::arch::x86_64::*;
    debug_assert!(count + LANES <= FOUND && mask < 256);
    // SAFETY: the row of `SET_LANES` holds 8 bytes; the caller leaves room for 8 entries.
    unsafe {
        let lanes = _mm_loadl_epi64(SET_LANES[mask as usize & 255].as_ptr().cast());
        let entries = _mm256_add_epi32(_mm256_cvtepu8_epi32(lanes), _mm256_set1_epi32(e as i32));
        _mm256_storeu_si256(found.as_mut_ptr().add(count).cast(), entries);
    }
}

/// Row `l` is infinite in lane `l` only (row [`LANES`] nowhere), for [`near_mask`].
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
static OWN_LANE: [[f32; LANES]; LANES + 1] = {
    let mut rows = [[0.0; LANES]; LANES + 1];
    let mut l = 0;
    while l < LANES {
        rows[l][l] = f32::INFINITY;
        l += 1;
    }
    rows
};

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn near_mask(
    p: Vec2,
    xs: &[f32; LANES],
    ys: &[f32; LANES],
    within2: f32,
    own: usize,
    least: &mut Least,
) -> u32 {
    let (mask, low) = near_mask_scalar(p, xs, ys, within2, own);
    least.value = least.value.min(low);
    mask
}

/// [`near_mask`] one lane at a time.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn near_mask_scalar(
    p: Vec2,
    xs: &[f32; LANES],
    ys: &[f32; LANES],
    within2: f32,
    own: usize,
) -> (u32, f32) {
    let (mut mask, mut least) = (0u32, f32::INFINITY);
    for l in (0..LANES).filter(|&l| l != own) {
        let d2 = (p - Vec2::new(xs[l], ys[l])).length_squared();
        mask |= ((d2 < within2) as u32) << l;
        least = least.min(d2);
    }
    (mask, least)
}

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
    #[cfg(target_arch = "x86_64")]
    fn append_lanes_gathers_the_set_lanes_in_order() {
        if !crate::simd_test::avx2() {
            return;
        }
        // Every mask, at both ends of the room and with entry numbers past 2^31.
        for mask in 0..256u32 {
            for (count, e) in [(0, 0), (3, 1234), (FOUND - LANES, u32::MAX as usize - 7)] {
                let mut found = [7u32; FOUND];
                // SAFETY: AVX2 is there (checked above) and `count + LANES <= FOUND`.
                unsafe { append_lanes(&mut found, count, e, mask) };
                let set: Vec<u32> = (0..LANES as u32)
                    .filter(|l| mask >> l & 1 != 0)
                    .map(|l| e as u32 + l)
                    .collect();
                let written = &found[count..count + set.len()];
                assert_eq!(written, &set[..], "mask {mask:08b} at {count}, entry {e}");
                assert!(
                    found[..count].iter().all(|&v| v == 7),
                    "wrote before {count}"
                );
            }
        }
    }

    #[test]
    fn near_mask_agrees_with_the_scalar_distance() {
        // A fixed pseudo-random sequence: positions round a point, radii round their distances
        // (ties included, since the bits must match exactly), infinite padding.
        let mut next = uniform(0x2545_f491_4f6c_dd1du64);
        for round in 0..20_000 {
            let p = Vec2::new(next() * 50.0, next() * 50.0);
            let xs: [f32; LANES] = std::array::from_fn(|_| p.x + (next() - 0.5) * 4.0);
            let mut ys: [f32; LANES] = std::array::from_fn(|_| p.y + (next() - 0.5) * 4.0);
            if round % 7 == 0 {
                ys[round % LANES] = f32::INFINITY;
            }
            let within2 = if round % 3 == 0 {
                (p - Vec2::new(xs[1], ys[1])).length_squared()
            } else {
                next() * 4.0
            };
            // Every own lane, and none (an index past the lanes, as for chunks before `me`).
            let own = [round % (LANES + 1), usize::MAX - round % 3][round % 2];
            let mut least = Least::none();
            let mask = near_mask(p, &xs, &ys, within2, own, &mut least);
            let (want_mask, want_least) = near_mask_scalar(p, &xs, &ys, within2, own);
            assert_eq!(mask, want_mask, "round {round}");
            assert_eq!(
                least.value().to_bits(),
                want_least.to_bits(),
                "round {round}"
            );
            if own < LANES {
                assert_eq!(mask >> own & 1, 0, "round {round}");
            }
            // The AVX2 one, where this CPU has it.
            #[cfg(target_arch = "x86_64")]
            if crate::simd_test::avx2() {
                let mut least8 = Least::none();
                // SAFETY: the CPU has AVX2, `near_mask8`'s only requirement.
                let mask8 = unsafe { near_mask8(p, &xs, &ys, within2, own, &mut least8) };
                assert_eq!(mask8, want_mask, "round {round}");
                assert_eq!(
                    least8.value().to_bits(),
                    want_least.to_bits(),
                    "round {round}"
                );
            }
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
        // Everyone walks at most `calm`, a few listed agents go further (or only they move):
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
            for calm in [0.2, 0.0, 0.3, 0.0] {
                let listed: Vec<u32> = (0..n as u32).filter(|_| next() < 0.05).collect();
                for (k, p) in sorted.iter_mut().enumerate() {
                    let far = listed.contains(&(k as u32));
                    let length = if far { next() * 1.5 } else { next() * calm };
                    let angle = next() * std::f32::consts::TAU;
                    *p += Vec2::new(angle.cos(), angle.sin()) * length;
                }
                ng.take_moves::<true>(&sorted, Some(calm), &listed, &mut clearances, &mut partials);
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
        // After a walk (everyone but a listed few moved at most `calm`), `refresh_walked` must
        // leave the snapshot and the clearances bit for bit as `refresh_points` leaves them, add
        // `calm` to `moved`, and keep a drift no smaller than the measured one (it asserts that
        // bound against every entry itself).
        let mut next = uniform(0x7a1c_0ffe_u64);
        for round in 0..6 {
            let n = [300, 1200][round % 2];
            let (mut walked, mut points) = scattered_grid(&mut next, n, 25.0, 200.0);
            let mut measured = walked.clone();
            let mut walked_clear: Vec<u32> = (0..n).map(|_| (next() * 4.0).to_bits()).collect();
            let mut measured_clear = walked_clear.clone();
            let mut partials = Vec::new();
            let calm = 0.2;
            for refresh in 0..5 {
                let mut listed = Vec::new();
                for (k, p) in points.iter_mut().enumerate() {
                    if next() < 0.03 {
                        *p += (Vec2::new(next(), next()) - 0.5) * 4.0;
                        listed.push(k as u32);
                    } else {
                        let d = (Vec2::new(next(), next()) - 0.5).normalize_or_zero();
                        *p += d * (0.99 * calm * next());
                    }
                }
                let before = walked.moved;
                walked.refresh_walked(&points, calm, &listed, &mut walked_clear);
                measured.refresh_points::<true>(&points, &mut measured_clear, &mut partials);
                assert_eq!(walked.xs, measured.xs, "round {round}, refresh {refresh}");
                assert_eq!(walked.ys, measured.ys, "round {round}, refresh {refresh}");
                assert_eq!(
                    walked_clear, measured_clear,
                    "round {round}, refresh {refresh}"
                );
                assert_eq!(walked.moved, before + calm);
                assert!(
                    walked.drift >= measured.drift,
                    "round {round}, refresh {refresh}"
                );
            }
        }
    }

    #[test]
    fn cells_of_agrees_with_the_scalar_cells() {
        let mut next = uniform(0x9e37_79b9_7f4a_7c15u64);
        for round in 0..20_000 {
            let (cols, rows) = (1 + (next() * 4095.0) as u32, 1 + (next() * 300.0) as u32);
            let origin = Vec2::new(next() * 100.0 - 50.0, next() * 100.0 - 50.0);
            let inv_cell = 0.05 + next() * 3.0;
            let last = Vec2::new((cols - 1) as f32, (rows - 1) as f32);
            // Inside the grid, beyond both ends, on cell borders and far away.
            let span = Vec2::new(cols as f32, rows as f32) / inv_cell;
            let mut point = || match round % 4 {
                0 => origin + Vec2::new(next(), next()) * span,
                1 => origin + (Vec2::new(next(), next()) * 3.0 - 1.0) * span,
                2 => origin + Vec2::new((next() * 9.0).floor(), (next() * 9.0).floor()) / inv_cell,
                _ => Vec2::new(next() - 0.5, next() - 0.5) * 1e12,
            };
            let (a, b) = (point(), point());
            assert_eq!(
                cells_of(a, b, origin, inv_cell, last),
                cells_of_scalar(a, b, origin, inv_cell, last),
                "round {round}: {a} {b} in {cols}x{rows} from {origin} by {inv_cell}"
            );
        }
    }

    #[test]
    fn side_room_agrees_with_the_scalar_room() {
        let mut next = uniform(0x51de_4007_e0f1_u64);
        for round in 0..20_000 {
            let (cols, rows) = (1 + (next() * 300.0) as u32, 1 + (next() * 300.0) as u32);
            let (x0, y0) = ((next() * cols as f32) as u32, (next() * rows as f32) as u32);
            let x1 = (x0 + (next() * 3.0) as u32).min(cols - 1);
            let y1 = (y0 + (next() * 3.0) as u32).min(rows - 1);
            // Inside the block, on its sides and off them.
            let g = match round % 3 {
                0 => Vec2::new(x0 as f32, y0 as f32) + Vec2::new(next(), next()) * 4.0,
                1 => Vec2::new(x0 as f32, (y1 + 1) as f32),
                _ => Vec2::new(next() * cols as f32, next() * rows as f32),
            };
            let cells = [x0, y0, x1, y1];
            let (fast, scalar) = (
                side_room(g, cells, cols, rows),
                side_room_scalar(g, cells, cols, rows),
            );
            assert_eq!(
                fast.to_bits(),
                scalar.to_bits(),
                "round {round}: {g} in {cells:?} of {cols}x{rows}: {fast} against {scalar}"
            );
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
