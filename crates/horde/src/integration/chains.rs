//! Chains: runs of corridor cells, which a one-shot wave crosses in one step and whose inner
//! cells it writes straight into the outputs afterwards.
//!
//! A corridor cell has at most two legal steps, both straight (a legal diagonal needs both
//! straight cells beside it open, which gives a third step). A run of them on plain ground,
//! `c[0] .. c[n-1]`, is a path that the rest of the map meets only at its two ends, so an inner
//! cell's cheapest way to a goal leaves through one end or the other:
//! `value(c[i]) = min(value(c[0]) + i·s, value(c[n-1]) + (n-1-i)·s)` with `s` the straight
//! step's price. The wave therefore settles only the ends (each end offers its steps out of the
//! chain, and the other end at `(n-1)·s`), and the inner cells — never in the wave's buffer, its
//! footprint, the copy into the field or the arrows' pass — are written into the field and the
//! flow field run by run at the end. On a dungeon every row of a vertical corridor is a block of
//! the footprint of its own: these cells were most of the blocks the passes over the footprint
//! read.
//!
//! Exact: the same values and arrows as a wave through every cell. An inner cell's arrow looks at
//! its two neighbours along the chain only: its other straight neighbours are walls, and no
//! diagonal step touches it (a diagonal past it would give it, or the cell beside it, a third
//! legal step).

use std::sync::atomic::{AtomicU64, Ordering};

use super::UNREACHABLE;
use super::ranked::RankedCells;
use crate::cost::{PLAIN, WALL};
use crate::flow::{FLOW_GOAL, FLOW_UNREACHABLE};

/// Cells of a chain at the least: a shorter one has no inner cell.
const MIN_CELLS: usize = 3;

/// Cells of a chain at the most: a longer run is cut into chains end to end, so that crossing
/// one stays within a lap of the wave's buckets (511 straight steps on plain ground).
pub(crate) const MAX_CELLS: usize = 512;

/// Numbers the layouts worked out, so that a field written through one can tell whether the
/// builder writing it next knows its inner cells.
static NEXT_LAYOUT: AtomicU64 = AtomicU64::new(1);

/// One chain: `cells[first..first + len]`, part of run `run` (the pieces of one long run are
/// left out of a build together).
#[derive(Debug, Clone, Copy)]
struct Chain {
    first: u32,
    len: u32,
    run: u32,
    /// The cells beside the first and the last cell outside the chain (`NONE` at a dead end).
    outside: [u32; 2],
}

/// No cell.
const NONE: u32 = u32::MAX;

/// An end of a chain as the wave finds it by its cell: that cell, its chain, the cell at the chain's other
/// end, the legal step (a bit of `moves_of_row`) that leads into the chain, and the straight
/// steps from one end to the other.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChainEnd {
    cell: u32,
    chain: u32,
    pub(crate) other: u32,
    pub(crate) into: u8,
    pub(crate) steps: u32,
}

/// The chains of one map, and which of them the last build reached.
///
/// Memory: a bit and a half per padded cell (which cells are chain ends, and a count per 64),
/// 9 bytes per chain cell, 8 more per inner cell (for finding seeds), 24 per chain and 20 per
/// end, a bit and 12 bytes per chain reached; while worked out, a byte per padded cell.
#[derive(Debug, Default, Clone)]
pub(crate) struct Chains {
    /// This layout's number (0: none worked out).
    pub(crate) layout: u64,
    chains: Vec<Chain>,
    /// Padded cells, chain after chain, in order along each.
    cells: Vec<u32>,
    /// Each of `cells` as an index of the map (unpadded).
    map_index: Vec<u32>,
    /// Each of `cells`' flow directions to the cell before it along the chain (low half) and
    /// after it (high half); the cells beside the ends outside the chain count as before the
    /// first and after the last.
    dirs: Vec<u8>,
    /// The ends, in the order of their cells, found by cell through `end_cells`.
    ends: Vec<ChainEnd>,
    end_cells: RankedCells,
    /// Inner cells with their chains, by cell (seeds are looked up here).
    inner: Vec<(u32, u32)>,
    disabled: Vec<bool>,
    disabled_list: Vec<u32>,
    /// The most steps from one end of a chain to the other.
    longest: u32,
    /// Chains whose ends the last build reached, in order, and as a bit per chain.
    reached: Vec<u32>,
    /// The values of the reached chains' first and last cells, as `reached`: read once by
    /// `settle`, a cache miss each, and not again for the inner cells' values and arrows.
    reached_ends: Vec<[u32; 2]>,
    reached_bits: Vec<u64>,
}

/// Whether legal steps `m` are a corridor cell's: one or two, all straight.
#[inline(always)]
fn corridor(m: u8) -> bool {
    m != 0 && m < 16 && m.count_ones() <= 2
}

/// The padded offset of straight step `bit` (0 north, 1 east, 2 south, 3 west).
#[inline(always)]
fn offset(bit: u32, pw: usize) -> isize {
    [-(pw as isize), 1, pw as isize, -1][bit as usize]
}

/// The flow direction (index of [`crate::Dir8::ALL`]) of straight step `bit`.
#[inline(always)]
fn direction(bit: u32) -> usize {
    2 * bit as usize
}

/// The straight step bit from padded cell `c` to its neighbour `n`.
#[inline(always)]
fn bit_towards(c: u32, n: u32, pw: usize) -> u32 {
    let d = n as isize - c as isize;
    (0..4)
        .find(|&b| offset(b, pw) == d)
        .expect("a straight neighbour")
}

impl Chains {
    /// Work the chains out from the padded `costs` and legal steps `moves` (width `pw`, map
    /// rows `1..=h`): every run of corridor cells on plain ground whose ends meet cells that are
    /// not corridor cells, cut into pieces of at most `MAX_CELLS`. O(cells).
    pub(crate) fn work_out(&mut self, costs: &[u8], moves: &[u8], pw: usize, h: usize) {
        self.chains.clear();
        self.cells.clear();
        self.map_index.clear();
        self.dirs.clear();
        self.ends.clear();
        self.inner.clear();
        self.longest = 0;
        self.reached.clear();
        self.reached_ends.clear();
        let plen = costs.len();
        let is_corridor = |c: usize| costs[c] != WALL && corridor(moves[c]);
        let mut seen = vec![false; plen];
        let mut run = Vec::new();
        let mut runs = 0u32;
        for y in 1..=h {
            for x in 1..pw - 1 {
                let c = y * pw + x;
                if seen[c] || !is_corridor(c) {
                    continue;
                }
                // Back to one end of the run (or round a ring, which has none).
                let (mut at, mut from) = (c, usize::MAX);
                let ring = loop {
                    let Some(next) = Self::along(moves[at], at, from, pw, &is_corridor) else {
                        break false;
                    };
                    (from, at) = (at, next);
                    if at == c {
                        break true;
                    }
                };
                // Then forward to the other end, taking every cell.
                run.clear();
                let (mut prev, mut cur) = (usize::MAX, at);
                loop {
                    seen[cur] = true;
                    run.push(cur as u32);
                    match Self::along(moves[cur], cur, prev, pw, &is_corridor) {
                        Some(next) if !seen[next] => (prev, cur) = (cur, next),
                        _ => break,
                    }
                }
                // A ring is met by nothing; a run with rough ground is left to the wave, whose
                // walks along it then never step onto a chain.
                if ring || run.iter().any(|&c| costs[c as usize] != PLAIN) {
                    continue;
                }
                // Cut into pieces of even length, each a chain: a piece too short to be one would
                // be a corridor cell beside a chain's end, from which a walk could step onto it.
                if run.len() >= MIN_CELLS {
                    let size = run.len().div_ceil(run.len().div_ceil(MAX_CELLS));
                    for piece in run.chunks(size) {
                        self.add(piece, moves, runs, pw);
                    }
                }
                runs += 1;
            }
        }
        // The ends in the order of their cells, found by rank in the bits.
        self.ends.sort_unstable_by_key(|e| e.cell);
        self.end_cells
            .build(plen, self.ends.iter().map(|e| e.cell as usize));
        self.inner.sort_unstable();
        self.disabled.clear();
        self.disabled.resize(self.chains.len(), false);
        self.disabled_list.clear();
        self.reached_bits.clear();
        self.reached_bits.resize(self.chains.len().div_ceil(64), 0);
        self.layout = NEXT_LAYOUT.fetch_add(1, Ordering::Relaxed);
    }

    /// The corridor cell a legal straight step of corridor cell `c` (steps `m`) leads to, other
    /// than `from`.
    fn along(
        m: u8,
        c: usize,
        from: usize,
        pw: usize,
        is_corridor: &impl Fn(usize) -> bool,
    ) -> Option<usize> {
        (0..4)
            .filter(|&b| m & (1 << b) != 0)
            .map(|b| (c as isize + offset(b, pw)) as usize)
            .find(|&n| n != from && is_corridor(n))
    }

    fn add(&mut self, piece: &[u32], moves: &[u8], run: u32, pw: usize) {
        let chain = self.chains.len() as u32;
        let first = self.cells.len() as u32;
        let n = piece.len();
        self.cells.extend_from_slice(piece);
        self.map_index.extend(piece.iter().map(|&c| {
            let (x, y) = (c as usize % pw, c as usize / pw);
            ((y - 1) * (pw - 2) + x - 1) as u32
        }));
        for &c in &piece[1..n - 1] {
            self.inner.push((c, chain));
        }
        let (a, b) = (piece[0], piece[n - 1]);
        let steps = (n - 1) as u32;
        self.ends.push(ChainEnd {
            cell: a,
            chain,
            other: b,
            into: 1 << bit_towards(a, piece[1], pw),
            steps,
        });
        self.ends.push(ChainEnd {
            cell: b,
            chain,
            other: a,
            into: 1 << bit_towards(b, piece[n - 2], pw),
            steps,
        });
        self.longest = self.longest.max(steps);
        // The step out of an end: its legal step that does not lead into the chain.
        let out_of = |c: u32, inner: u32| {
            let m = moves[c as usize] & !(1 << bit_towards(c, inner, pw));
            (m != 0).then(|| (c as isize + offset(m.trailing_zeros(), pw)) as u32)
        };
        let outside = [
            out_of(a, piece[1]).unwrap_or(NONE),
            out_of(b, piece[n - 2]).unwrap_or(NONE),
        ];
        for k in 0..n {
            let before = if k > 0 { piece[k - 1] } else { outside[0] };
            let after = if k + 1 < n { piece[k + 1] } else { outside[1] };
            let dir = |o: u32| {
                if o == NONE {
                    0
                } else {
                    direction(bit_towards(piece[k], o, pw)) as u8
                }
            };
            self.dirs.push(dir(before) | dir(after) << 4);
        }
        self.chains.push(Chain {
            first,
            len: n as u32,
            run,
            outside,
        });
    }

    /// The most steps from one end of a chain to the other.
    pub(crate) fn longest(&self) -> u32 {
        self.longest
    }

    /// Leave out of this build every chain whose run has one of the padded `seeds` among its
    /// inner cells (the wave goes through their cells as through any others). O(seeds × log
    /// cells).
    pub(crate) fn begin(&mut self, seeds: &[(u32, u32)]) {
        for &c in &self.disabled_list {
            self.disabled[c as usize] = false;
        }
        self.disabled_list.clear();
        for &(_, s) in seeds {
            let at = self.inner.partition_point(|&(c, _)| c < s);
            if let Some(&(c, chain)) = self.inner.get(at)
                && c == s
            {
                let run = self.chains[chain as usize].run;
                for (i, ch) in self.chains.iter().enumerate() {
                    if ch.run == run && !self.disabled[i] {
                        self.disabled[i] = true;
                        self.disabled_list.push(i as u32);
                    }
                }
            }
        }
    }

    /// Every chain's inner cells.
    pub(crate) fn all_inner_cells(&self) -> impl Iterator<Item = u32> + '_ {
        self.inner.iter().map(|&(c, _)| c)
    }

    /// The end of a chain at padded cell `c`, whichever chains this build left out. O(1).
    pub(crate) fn end_raw(&self, c: usize) -> Option<&ChainEnd> {
        Some(&self.ends[self.end_cells.rank_of(c)?])
    }

    /// Whether this build left a chain out (a seed lies inside it).
    pub(crate) fn any_left_out(&self) -> bool {
        !self.disabled_list.is_empty()
    }

    /// The end of a chain in this build at padded cell `c`, if it is one. O(1).
    #[inline(always)]
    pub(crate) fn end_at(&self, c: usize) -> Option<&ChainEnd> {
        let e = &self.ends[self.end_cells.rank_of(c)?];
        (self.disabled_list.is_empty() || !self.disabled[e.chain as usize]).then_some(e)
    }

    /// After the wave: note the chains it reached (both ends hold values), and return how many
    /// inner cells they have, or the first chain end whose chain could hold a value past
    /// `limit` (the wave then goes again through every cell, to name the cell a wave without
    /// chains would name). O(chains).
    pub(crate) fn settle(&mut self, dist: &[u32], straight: u32, limit: u32) -> Result<usize, u32> {
        self.reached.clear();
        self.reached_ends.clear();
        self.reached_bits.fill(0);
        let mut inner = 0;
        for (i, ch) in self.chains.iter().enumerate() {
            if self.disabled[i] {
                continue;
            }
            let a = self.cells[ch.first as usize];
            let b = self.cells[(ch.first + ch.len - 1) as usize];
            let (va, vb) = (dist[a as usize], dist[b as usize]);
            if va == UNREACHABLE && vb == UNREACHABLE {
                continue;
            }
            let top = va.max(vb) as u64 + straight as u64 * (ch.len as u64 - 1);
            if va == UNREACHABLE || vb == UNREACHABLE || top > limit as u64 {
                return Err(a);
            }
            self.reached.push(i as u32);
            self.reached_ends.push([va, vb]);
            self.reached_bits[i / 64] |= 1 << (i % 64);
            inner += ch.len as usize - 2;
        }
        Ok(inner)
    }

    /// Forget the chains reached (a build without them).
    pub(crate) fn forget_reached(&mut self) {
        self.reached.clear();
        self.reached_ends.clear();
        self.reached_bits.fill(0);
    }

    /// The chains the last build reached.
    pub(crate) fn reached(&self) -> &[u32] {
        &self.reached
    }

    /// Chain `i`'s inner cells: padded cells and map indices.
    fn inner_cells(&self, i: u32) -> impl Iterator<Item = (usize, usize)> + '_ {
        let ch = self.chains[i as usize];
        let inner = ch.first as usize + 1..(ch.first + ch.len - 1) as usize;
        self.cells[inner.clone()]
            .iter()
            .zip(&self.map_index[inner])
            .map(|(&c, &m)| (c as usize, m as usize))
    }

    /// Whether the last build reached chain `i` through its ends.
    fn was_reached(&self, i: u32) -> bool {
        self.reached_bits
            .get(i as usize / 64)
            .is_some_and(|b| b & 1 << (i % 64) != 0)
    }

    /// Write the inner cells of the chains reached into `values` (the map's), and the
    /// build's own values (`dist`: UNREACHABLE, or a value if the build went through the
    /// chain's cells; from `none` on, no value) into those of `stale` chains (a field's of
    /// before) not crossed now.
    pub(crate) fn write_values(
        &self,
        dist: &[u32],
        straight: u32,
        stale: &[u32],
        none: u32,
        values: &mut [u32],
    ) {
        for &i in stale {
            if !self.was_reached(i) {
                for (c, m) in self.inner_cells(i) {
                    values[m] = if dist[c] >= none {
                        UNREACHABLE
                    } else {
                        dist[c]
                    };
                }
            }
        }
        for (&i, &ends) in self.reached.iter().zip(&self.reached_ends) {
            let slope = self.slope(i, ends, straight);
            let (first, last) = (self.chains[i as usize].first as usize, slope.last);
            let map = &self.map_index[first..first + last];
            // Nearer the first end up to the turn, nearer the last after it.
            let turn = slope.turn.clamp(1, last);
            for (k, &m) in map.iter().enumerate().take(turn).skip(1) {
                values[m as usize] = slope.from_a + k as u32 * straight;
            }
            for (k, &m) in map.iter().enumerate().skip(turn) {
                values[m as usize] = slope.from_b - k as u32 * straight;
            }
        }
    }

    /// Chain `i`'s values as two slopes from its ends' values `[va, vb]` (both reached).
    #[inline(always)]
    fn slope(&self, i: u32, [va, vb]: [u32; 2], straight: u32) -> Slope {
        let last = self.chains[i as usize].len as usize - 1;
        // Cell k holds va + k·straight while that is at most vb + (last - k)·straight, that
        // is while 2k·straight <= vb - va + last·straight: up to and including cell
        // `turn - 1`.
        let rise = vb as i64 - va as i64 + (last as i64) * straight as i64;
        let turn = if rise < 0 {
            0
        } else {
            (rise / (2 * straight as i64) + 1).min(last as i64 + 1) as usize
        };
        Slope {
            from_a: va,
            from_b: vb + last as u32 * straight,
            last,
            turn,
        }
    }

    /// Write the arrows of every cell of the chains reached (ends included: the arrows' pass
    /// saw no inner values) into `flow` (the map's bytes), and FLOW_UNREACHABLE into the inner
    /// cells of `stale` chains not crossed now that the build did not reach either (`dist` at
    /// `none` or above).
    pub(crate) fn write_arrows(
        &self,
        dist: &[u32],
        straight: u32,
        stale: &[u32],
        none: u32,
        flow: &mut [u8],
    ) {
        for &i in stale {
            if !self.was_reached(i) {
                // A cell the build reached is in its footprint, whose arrows are written.
                for (c, m) in self.inner_cells(i) {
                    if dist[c] >= none {
                        flow[m] = FLOW_UNREACHABLE;
                    }
                }
            }
        }
        // Each cell's two offers, from the cells before and after it: the arrow takes the
        // cheaper, the lower direction on a tie (as the arrows' kernel), and a cell neither
        // offers less than its value is a sink (a seed at an end).
        let offer = |v: u32| v.min(UNREACHABLE - straight) + straight;
        for (&i, &ends) in self.reached.iter().zip(&self.reached_ends) {
            let ch = self.chains[i as usize];
            let [a, b] = ch.outside.map(|o| {
                if o == NONE {
                    UNREACHABLE
                } else {
                    dist[o as usize]
                }
            });
            let slope = self.slope(i, ends, straight);
            let last = slope.last;
            let first = ch.first as usize;
            let (dirs, map) = (
                &self.dirs[first..=first + last],
                &self.map_index[first..=first + last],
            );
            let here = |k: usize| {
                (slope.from_a + k as u32 * straight).min(slope.from_b - k as u32 * straight)
            };
            let arrow = |k: usize| {
                let before = if k == 0 { a } else { here(k - 1) };
                let after = if k == last { b } else { here(k + 1) };
                let (ob, oa) = (offer(before), offer(after));
                let (db, da) = (dirs[k] & 15, dirs[k] >> 4);
                let dir = match ob.cmp(&oa) {
                    std::cmp::Ordering::Less => db,
                    std::cmp::Ordering::Greater => da,
                    std::cmp::Ordering::Equal => db.min(da),
                };
                if ob.min(oa) > here(k) { FLOW_GOAL } else { dir }
            };
            // An inner cell whose neighbours are both on the first end's slope steps back
            // towards it (the cell before is cheaper by two steps); a cell on the last end's
            // slope steps on (the cell after is a step under it, and under the cell before).
            // Only the first end's slope's last cell compares offers, which may tie.
            // (No offer is clamped: `settle` keeps every value to the wave's limit, a dearest
            // step under UNREACHABLE.)
            let back_to = slope.turn.saturating_sub(1).clamp(1, last);
            let on_from = slope.turn.clamp(back_to, last);
            flow[map[0] as usize] = arrow(0);
            for k in 1..back_to {
                flow[map[k] as usize] = dirs[k] & 15;
            }
            for k in back_to..on_from {
                flow[map[k] as usize] = arrow(k);
            }
            for k in on_from..last {
                flow[map[k] as usize] = dirs[k] >> 4;
            }
            flow[map[last] as usize] = arrow(last);
        }
    }
}

/// A chain's values: `from_a + k·straight` for its cells `k` before `turn`, `from_b -
/// k·straight` from `turn` on (cells `0..=last`).
struct Slope {
    from_a: u32,
    from_b: u32,
    last: usize,
    turn: usize,
}

#[cfg(test)]
mod tests {
    use glam::UVec2;

    use super::super::{IntegrationBuilder, IntegrationField, UNREACHABLE};
    use crate::{CostField, CostModel, FlowField, Grid, WALL};

    /// Two generated dungeons side by side, a wall between: rooms joined by one-cell
    /// corridors, in two parts that do not reach each other.
    #[cfg(feature = "dungeon")]
    fn two_dungeons(seed: u64) -> CostField {
        use crate::dungeon::{DungeonConfig, generate};
        let config = DungeonConfig {
            width: 60,
            height: 60,
            rooms: 8,
            ..DungeonConfig::default()
        };
        let (a, b) = (
            generate(&config, seed).unwrap().to_cost_field(),
            generate(&config, seed + 1000).unwrap().to_cost_field(),
        );
        let mut cost = CostField::new(Grid::new(121, 60).unwrap());
        for y in 0..60 {
            for x in 0..121 {
                let t = match x {
                    0..60 => a.get(UVec2::new(x, y)),
                    60 => Some(WALL),
                    _ => b.get(UVec2::new(x - 61, y)),
                };
                cost.set(UVec2::new(x, y), t.unwrap()).unwrap();
            }
        }
        cost
    }

    /// The field of a builder that has never built before (a wave through every cell).
    fn wave_through_every_cell(
        cost: &CostField,
        seeds: &[(UVec2, u32)],
        model: CostModel,
    ) -> Result<IntegrationField, crate::IntegrationError> {
        let mut fresh = IntegrationBuilder::new();
        fresh.set_sweeps(false);
        fresh.build_seeded(cost, seeds, model)
    }

    /// Cells of the map that are inner cells of a chain, and ends of one.
    fn chain_cells(b: &IntegrationBuilder) -> (Vec<UVec2>, Vec<UVec2>) {
        let chains = &b.rooms.chains;
        let pw = b.padded_width as u32;
        let at = |c: u32| UVec2::new(c % pw - 1, c / pw - 1);
        let inner = chains.inner.iter().map(|&(c, _)| at(c)).collect();
        let ends = chains.ends.iter().map(|e| at(e.cell)).collect();
        (inner, ends)
    }

    #[test]
    #[cfg(feature = "dungeon")]
    fn waves_cross_chains_and_give_the_values_and_arrows_of_a_wave_through_every_cell() {
        for seed in 0..4 {
            let cost = two_dungeons(seed);
            for model in [CostModel::TenFourteen, CostModel::Octile] {
                let mut b = IntegrationBuilder::new();
                b.set_sweeps(false);
                let (mut field, mut flow) = (
                    IntegrationField::new(*cost.grid(), model),
                    FlowField::new(*cost.grid()),
                );
                let room = |x: u32| {
                    (0..60)
                        .flat_map(|y| (x..x + 60).map(move |x| UVec2::new(x, y)))
                        .find(|&p| cost.is_walkable(p))
                        .unwrap()
                };
                // The second build over the map works its chains out, for it and the next ones.
                for _ in 0..2 {
                    b.build_into(&cost, &[room(0)], model, &mut field).unwrap();
                }
                let (inner, ends) = chain_cells(&b);
                assert!(inner.len() > 40, "seed {seed}: {} inner cells", inner.len());
                let goal_sets: Vec<Vec<UVec2>> = vec![
                    vec![room(0)],
                    vec![room(61)], // the other part: the first part's chains are cleared
                    vec![inner[inner.len() / 2]], // inside a chain: its run is left out
                    vec![ends[0], room(61)],
                    vec![room(0)],
                    vec![inner[3], inner[inner.len() - 3], room(30)],
                ];
                let mut crossed = 0;
                for goals in &goal_sets {
                    let seeds: Vec<(UVec2, u32)> = goals.iter().map(|&g| (g, 0)).collect();
                    let want = wave_through_every_cell(&cost, &seeds, model).unwrap();
                    let stats = b.build_into(&cost, goals, model, &mut field).unwrap();
                    assert_eq!(field, want, "seed {seed} goals {goals:?}");
                    crossed += b.chains_used as usize;
                    let reachable = want.values().iter().filter(|&&v| v != UNREACHABLE);
                    assert_eq!(stats.settled, reachable.count(), "goals {goals:?}");
                    b.flow_into(&mut flow).unwrap();
                    let arrows = FlowField::from_integration(&cost, &want).unwrap();
                    assert_eq!(flow, arrows, "seed {seed} goals {goals:?}");
                }
                assert!(crossed >= 4, "seed {seed}: {crossed} builds crossed chains");
                // Outputs last written by another builder, or by hand, are written whole.
                let other = room(61);
                let mut foreign = IntegrationBuilder::new();
                foreign.set_sweeps(false);
                for _ in 0..2 {
                    foreign
                        .build_into(&cost, &[other], model, &mut field)
                        .unwrap();
                    foreign.flow_into(&mut flow).unwrap();
                }
                b.build_into(&cost, &[room(0)], model, &mut field).unwrap();
                b.flow_into(&mut flow).unwrap();
                let want = wave_through_every_cell(&cost, &[(room(0), 0)], model).unwrap();
                assert_eq!(field, want);
                assert_eq!(flow, FlowField::from_integration(&cost, &want).unwrap());
                field.values_mut()[0] = 7;
                flow.cells_mut()[0] = 3;
                b.build_into(&cost, &[room(0)], model, &mut field).unwrap();
                b.flow_into(&mut flow).unwrap();
                assert_eq!(field, want);
                assert_eq!(flow, FlowField::from_integration(&cost, &want).unwrap());
            }
        }
    }

    #[test]
    fn a_chain_past_the_range_names_the_cell_a_wave_through_every_cell_names() {
        // Two rooms side by side through a door, and a U-shaped corridor of 173 cells out of
        // the first and back: its middle, 940 from the goal, is the farthest cell by far.
        let mut cost = CostField::new(Grid::new(45, 105).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::new(44, 104), WALL)
            .unwrap();
        cost.fill_rect(UVec2::new(1, 1), UVec2::new(20, 20), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(22, 1), UVec2::new(41, 20), 1)
            .unwrap();
        cost.set(UVec2::new(21, 10), 1).unwrap();
        cost.fill_rect(UVec2::new(3, 21), UVec2::new(3, 100), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(4, 100), UVec2::new(17, 100), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(17, 21), UVec2::new(17, 99), 1)
            .unwrap();
        let model = CostModel::TenFourteen;
        let goal = UVec2::new(10, 20);
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        for _ in 0..2 {
            let field = b.build(&cost, &[goal], model).unwrap();
            assert_eq!(field.get(UVec2::new(10, 100)), Some(940));
        }
        assert!(b.chains_used);
        let limit = UNREACHABLE - 1 - model.diagonal() * WALL as u32;
        // Past the range: the whole U, its middle only (every cell but the chain's inner ones
        // within it), nothing.
        for below in [0, 600, 3_000] {
            let seeds = [(goal, limit - below)];
            let want = wave_through_every_cell(&cost, &seeds, model);
            assert_eq!(want.is_err(), below < 3_000);
            assert_eq!(b.build_seeded(&cost, &seeds, model), want, "{below} below");
            assert!(b.build_seeded(&cost, &[(goal, 0)], model).is_ok());
            assert!(b.chains_used);
        }
    }

    #[test]
    fn corridors_become_chains_and_rings_and_rough_runs_do_not() {
        // Two rooms joined by an L-shaped corridor of 20 cells; a ring of corridor cells; a
        // corridor with a cell of rough ground, where the goal is.
        let mut cost = CostField::new(Grid::new(40, 30).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::new(39, 29), WALL)
            .unwrap();
        cost.fill_rect(UVec2::new(1, 1), UVec2::new(8, 8), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(20, 10), UVec2::new(25, 15), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(9, 3), UVec2::new(12, 3), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(12, 4), UVec2::new(12, 12), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(13, 12), UVec2::new(19, 12), 1)
            .unwrap();
        // the ring
        cost.fill_rect(UVec2::new(30, 20), UVec2::new(35, 20), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(30, 25), UVec2::new(35, 25), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(30, 21), UVec2::new(30, 24), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(35, 21), UVec2::new(35, 24), 1)
            .unwrap();
        // rough corridor from the second room down
        cost.fill_rect(UVec2::new(22, 16), UVec2::new(22, 27), 1)
            .unwrap();
        cost.set(UVec2::new(22, 20), 3).unwrap();
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        let goal = [UVec2::new(22, 27)];
        b.build(&cost, &goal, CostModel::TenFourteen).unwrap();
        b.build(&cost, &goal, CostModel::TenFourteen).unwrap();
        assert!(b.wave.rooms);
        let chains = &b.rooms.chains;
        // Only the L: 9..=12 on row 3, 4..=12 down column 12, 13..=19 on row 12.
        assert_eq!(chains.chains.len(), 1);
        assert_eq!(chains.chains[0].len, 4 + 9 + 7);
        assert_eq!(chains.longest(), 19);
        let (inner, ends) = chain_cells(&b);
        assert_eq!(inner.len(), 18);
        let mut ends = ends;
        ends.sort_by_key(|p| (p.x, p.y));
        assert_eq!(ends, vec![UVec2::new(9, 3), UVec2::new(19, 12)]);
        assert!(b.chains_used);
    }

    #[test]
    fn a_cell_as_far_from_both_ends_of_its_chain_points_the_lower_way() {
        // A U-shaped corridor out of a room and back, the goal on the room's edge halfway
        // between its two ends: the U's middle cell (12, 4) is 80 from the goal either way.
        let mut cost = CostField::new(Grid::new(30, 12).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::new(29, 11), WALL)
            .unwrap();
        cost.fill_rect(UVec2::new(1, 1), UVec2::new(8, 8), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(20, 1), UVec2::new(27, 8), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(9, 2), UVec2::new(12, 2), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(12, 3), UVec2::new(12, 5), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(9, 6), UVec2::new(12, 6), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(9, 8), UVec2::new(19, 8), 1)
            .unwrap();
        let goal = [UVec2::new(8, 4)];
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        let mut flow = FlowField::new(*cost.grid());
        for _ in 0..2 {
            let field = b.build(&cost, &goal, CostModel::TenFourteen).unwrap();
            assert_eq!(field.get(UVec2::new(12, 4)), Some(80));
            b.flow_into(&mut flow).unwrap();
            assert_eq!(flow, FlowField::from_integration(&cost, &field).unwrap());
        }
        assert!(b.chains_used);
        assert_eq!(flow.dir(UVec2::new(12, 4)), Some(crate::Dir8::N));
    }

    #[test]
    fn a_corridor_longer_than_a_chain_is_cut_into_chains_of_even_length() {
        // Two rooms joined by a straight corridor of 513 cells: one cell more than a chain.
        let mut cost = CostField::new(Grid::new(600, 32).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::new(599, 31), WALL)
            .unwrap();
        cost.fill_rect(UVec2::new(1, 1), UVec2::new(30, 30), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(31, 15), UVec2::new(543, 15), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(544, 1), UVec2::new(573, 30), 1)
            .unwrap();
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        let mut flow = FlowField::new(*cost.grid());
        for goal in [UVec2::new(2, 2), UVec2::new(570, 3), UVec2::new(2, 29)] {
            let want = wave_through_every_cell(&cost, &[(goal, 0)], CostModel::TenFourteen);
            let want = want.unwrap();
            for _ in 0..2 {
                let field = b.build(&cost, &[goal], CostModel::TenFourteen).unwrap();
                assert_eq!(field, want, "goal {goal:?}");
                b.flow_into(&mut flow).unwrap();
                assert_eq!(flow, FlowField::from_integration(&cost, &want).unwrap());
            }
        }
        assert!(b.chains_used);
        let lengths: Vec<u32> = b.rooms.chains.chains.iter().map(|c| c.len).collect();
        assert_eq!(lengths, vec![257, 256]);
    }
}
