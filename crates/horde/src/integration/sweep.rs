//! The integration field by row sweeps: alternate top-down and bottom-up passes over the rows,
//! each row first taking the best of its three neighbours in the row before it (no dependency
//! between the cells of a row: the compiler vectorises it) and then scanning along itself both
//! ways. Values only ever decrease and are always costs of real paths, so the fixed point is the
//! shortest-path field: the same values as the Dijkstra wave, hence the same flow.
//!
//! Only what can change is swept: each row keeps, per direction, the chunks of 8 columns where
//! the row before it changed, and a scan along a row stops where cells stop improving. On open
//! maps this settles in a few streaming passes, with no queue and no random access. Maps whose
//! shortest paths wind back and forth need more passes (rooms joined by one-cell doors two or
//! three times as many, still cheaper than the wave), mazes many more: when the work passes a
//! budget, the map goes to the wave, and the next builds of that size go straight there.

use super::columns::transpose_finish;
use super::{IntegrationBuilder, TOUCHED_BLOCK, UNREACHABLE, small_footprint};
use crate::cost::{CostModel, WALL};
use crate::simd::Cpu;

/// "No value yet" during the sweeps: any real value + any step stays below 2³².
pub(crate) const INF: u32 = (1 << 31) - 1;
/// The step price of a wall: a wall's candidates all exceed `INF`, so it keeps `INF`.
const WALL_STEP: u32 = 1 << 31;
/// Work (columns swept, and `RUN_WORK` a run; in units of the map's cells) after which the
/// sweeps hand the map to the wave: open maps settle within a third of it and rooms joined by
/// one-cell doors mostly within it, where the sweeps beat the wave; mazes pass it, where the wave
/// is cheaper (the work and times per map are in `docs/benchmarks.md`). A map handed over cost
/// one try of sweeps, and the next builds of its size go straight to the wave.
const MAX_WORK: u64 = 10;
/// The work of a run of columns beyond its columns: the row pass's set-up and tails and the
/// telling of the neighbour rows cost about as much as this many columns swept, which on mazes
/// (runs of a few blocks) is much of the work.
const RUN_WORK: u64 = 16;
/// A build whose sweeps did more than this many columns of work per cell reached sends the next
/// builds of its size to the wave: a column swept costs about a tenth of a cell settled by the
/// wave, less on mazes, whose wave walks its corridors: maze512-1-0's sweeps do 11.9 columns a
/// cell (since the back marks keep to the cells that improve) in four times the wave's time,
/// while maps of rooms that suit the sweeps do at most about 7 (the work and times per map are
/// in `docs/benchmarks.md`).
const WAVE_BELOW_WORK_PER_CELL: u64 = 10;
/// After a map was handed to the wave, the next builds of the same size go straight to the wave,
/// and the sweeps are tried again only after this many; twice as many after each further hand-over
/// in a row, up to `RETRY_AFTER << MAX_BACKOFF` (a try costs up to about twice a wave build, three
/// times on two threads: on a map the sweeps never suit, tries grow rare).
pub(crate) const RETRY_AFTER: u32 = 16;
/// Sweeps that did more than this many columns of work per cell reached mark the map as
/// winding: the next one-shot build over it, unchanged, looks for rooms (see `rooms`), which
/// costs a pass over the map once. Measured with the goals of `docs/benchmarks.md`: 8room_000
/// 6.4 (5.6–7.1 over other goals), orz100d 4.1, the other Moving AI maps 1.3–3.8, 1024²
/// dungeons 18–21.
const ROOMS_AFTER_WORK_PER_CELL: u64 = 5;
pub(crate) const MAX_BACKOFF: u32 = 4;

/// An interval of columns (padded x), empty when `lo > hi`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub(crate) lo: u32,
    pub(crate) hi: u32,
}

pub(crate) const EMPTY: Span = Span {
    lo: u32::MAX,
    hi: 0,
};

/// Columns per bit of a row's needs. A row's pass looks only at the chunks of columns where a
/// neighbouring row changed, so that changes at both ends of a row do not make the pass sweep
/// all the columns between them (on open maps, the late passes change a few cells per row). A
/// block of the AVX2 kernel: on caves, chunks of 16 made a seventh more work, and the field
/// took 1.05 times as long (lak303d; see `docs/benchmarks.md`).
const COLUMNS_PER_MARK: usize = 8;

/// Per-build scratch of the sweeps: per row, the chunks of columns each direction's next pass
/// must look at (a bit per `COLUMNS_PER_MARK` columns and direction: 1/32 byte per cell); a row of
/// candidates and two rows of marks. Step prices come from the padded costs (1 byte per cell) as
/// the rows are swept, so each pass streams 5 bytes per cell.
#[derive(Debug, Default, Clone)]
pub(crate) struct SweepScratch {
    /// Chunks of columns of each row whose neighbour row changed there, per pass direction
    /// (0 top-down: the row above changed; 1 bottom-up: the row below changed): `words` words
    /// of bits per row.
    need: [Vec<u64>; 2],
    /// Per pass direction, a bit per row whose needs may hold a mark (2 bits per row): the
    /// passes go from one such row to the next instead of looking at every row's needs.
    needy: [Vec<u64>; 2],
    words: usize,
    candidates: Vec<u32>,
    /// The chunks of columns next to cells the current row changed (`words` words).
    marks: Vec<u64>,
    /// Per row, the chunks of columns that hold a walkable cell (`words` words a row, 1/8 bit a
    /// cell), for the map along rows and turned (along columns): needs are kept only there,
    /// since a chunk of walls never changes. Worked out at the second build over one map version
    /// and layout (`open_of`, see `open_chunks`); all ones before (a map edited at every build
    /// never pays the pass over its costs).
    open: [Vec<u64>; 2],
    open_of: [OpenOf; 2],
    open_seen: [OpenOf; 2],
    /// Which of `open` the sweeps under way read (1: along columns).
    layout: usize,
    /// The chunks of columns next to cells the current row improved along itself (by the
    /// scans, not by an offer from the row before): on a map of plain ground only these can
    /// improve the row before, which the pass came from (see [`tell_neighbours`]).
    back: Vec<u64>,
    /// Builds left to send straight to the wave, and the map size that earned it; hand-overs of
    /// that size in a row (each doubles the wait, see `RETRY_AFTER`).
    skip: u32,
    skip_size: (usize, usize),
    handovers: u32,
    /// The padded size of the map being swept, as rows (whichever way it is swept).
    size: (usize, usize),
    /// Which way suits the map (see `columns`), and the map being swept (its cost version, 0
    /// when it may not go along columns).
    ways: super::columns::Ways,
    map: u64,
    turned_seeds: Vec<(u32, u32)>,
    /// See [`winding`](Self::winding).
    winding: bool,
    cursor: SweepCursor,
    /// Tests: the plain row pass goes over runs grown to blocks of this many columns, as the
    /// AVX-512 pass does (0: as they are), and counts the runs it grew.
    #[cfg(test)]
    grow_runs: (usize, usize),
    /// Base prices of a straight and a diagonal step in this build's model.
    prices: Prices,
    /// The vector kernels this CPU runs (asked once per build, not per row).
    cpu: Cpu,
    /// The price of a straight step from each terrain value (walls: `WALL_STEP`), for the scans
    /// along rows, where a table lookup is cheaper than the multiply and the wall test.
    straight_table: Vec<u32>,
    /// The straight step's base price `straight_table` was made for.
    table_straight: u32,
    /// Parallel rounds: a copy of the row beyond each band's edge, and each band's own rows.
    #[cfg(feature = "parallel")]
    snapshot: Vec<u32>,
    #[cfg(feature = "parallel")]
    bands: Vec<BandScratch>,
    /// The mean row of the seeds: bands above it sweep upwards first, the others downwards.
    #[cfg(feature = "parallel")]
    seed_row: usize,
}

/// The map layout [`SweepScratch::open`] describes: the cost version (0: none), whether the
/// map is turned (swept along columns), and the padded width.
type OpenOf = (u64, bool, usize);

/// Base prices of a straight and a diagonal step; a step costs its base times the terrain of the
/// cell it leaves.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Prices {
    pub(crate) straight: u32,
    pub(crate) diagonal: u32,
    /// Every walkable cell of the map is of terrain `PLAIN`, so that a step costs its base price:
    /// the vector row passes then skip widening the terrain and multiplying by it.
    pub(crate) plain: bool,
}

/// The price of leaving a cell of terrain `t` by a step of base price `base`; leaving a wall
/// costs `WALL_STEP`, so a wall never gets a value.
#[inline(always)]
fn price(t: u8, base: u32) -> u32 {
    if t == WALL {
        WALL_STEP
    } else {
        base * t as u32
    }
}

impl SweepScratch {
    /// A map of padded `size` goes to the wave: the next builds of that size skip the sweeps.
    fn hand_to_wave(&mut self, size: (usize, usize)) {
        self.winding = true;
        self.handovers = if self.skip_size == size {
            (self.handovers + 1).min(MAX_BACKOFF + 1)
        } else {
            1
        };
        self.skip = RETRY_AFTER << (self.handovers - 1);
        self.skip_size = size;
    }

    /// The sweeps suited a map of padded `size`: a later hand-over of that size waits the least.
    fn kept(&mut self, size: (usize, usize)) {
        if self.skip_size == size {
            self.handovers = 0;
        }
    }

    /// After sweeps of `work` columns converged on a map of padded `size`: far more columns
    /// swept than cells reached (a map mostly rock, such as rooms joined by corridors) sends the
    /// next builds of this size to the wave, whose work follows the cells it reaches. A build
    /// `finish` refused (values out of range) says nothing about the map's shape.
    fn judge(&mut self, size: (usize, usize), work: u64, outcome: &SweepOutcome) {
        if let SweepOutcome::Done(reached) = *outcome {
            self.winding = work > ROOMS_AFTER_WORK_PER_CELL * reached as u64;
            if work > WAVE_BELOW_WORK_PER_CELL * reached as u64 {
                self.hand_to_wave(size);
            } else {
                self.kept(size);
            }
        }
    }

    /// The last sweeps to converge did more than `ROOMS_AFTER_WORK_PER_CELL` columns of work
    /// per cell reached (or handed over): the map winds, and may have rooms worth crossing.
    pub(crate) fn winding(&self) -> bool {
        self.winding
    }

    /// The step prices of the sweeps under way.
    pub(crate) fn prices(&self) -> Prices {
        self.prices
    }

    fn table(&self) -> &[u32; 256] {
        self.straight_table[..]
            .try_into()
            .expect("a price per terrain value")
    }

    /// Set the work after which the sweeps under way hand the map to the wave.
    #[cfg(test)]
    pub(crate) fn set_budget(&mut self, columns: u64) {
        self.cursor.budget = columns;
    }

    /// A build of this size was handed to the wave lately.
    #[cfg(test)]
    pub(crate) fn handed_over_lately(&self) -> bool {
        self.skip > 0
    }

    /// Builds of the size handed over last that will still go straight to the wave.
    #[cfg(test)]
    pub(crate) fn skips_left(&self) -> u32 {
        self.skip
    }

    /// The hand-over history (builds left to skip, hand-overs in a row) for maps of `size`,
    /// zero if it is another size's.
    pub(crate) fn history(&self, size: (usize, usize)) -> (u32, u32) {
        if self.skip_size == size {
            (self.skip, self.handovers)
        } else {
            (0, 0)
        }
    }

    /// Take up a history kept by [`SweepScratch::history`] for maps of `size`.
    pub(crate) fn set_history(&mut self, size: (usize, usize), (skip, handovers): (u32, u32)) {
        self.skip_size = size;
        self.skip = skip;
        self.handovers = handovers;
    }

    /// What was learned about sweeping the map each way.
    #[cfg(test)]
    pub(crate) fn ways(&self) -> &super::columns::Ways {
        &self.ways
    }

    /// Columns swept so far in this build.
    pub(crate) fn cursor_work(&self) -> u64 {
        self.cursor.work
    }
}

/// How far a time-sliced sweep has come.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SweepCursor {
    /// 0 top-down pass, 1 bottom-up pass.
    dir: usize,
    /// Rows of the current pass already swept.
    k: usize,
    /// Rows that changed in the current round (a down pass and an up pass).
    changed: usize,
    /// Columns swept so far, and the budget after which the wave takes over.
    work: u64,
    budget: u64,
}

/// What a slice of sweeping ended with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SweepOutcome {
    /// The field is final in `dist` (builder conventions); reachable cells.
    Done(usize),
    /// The budget of this call ran out.
    Running,
    /// Too winding, or values out of the sweep's range: the wave must build it.
    HandOver,
}

impl IntegrationBuilder {
    /// Set up the sweeps for seeds (value, padded cell) on the padded costs `prepare` made.
    /// False when the map goes straight to the wave (it was handed over lately).
    pub(crate) fn sweep_begin(&mut self, seeds: &[(u32, u32)], model: CostModel) -> bool {
        let size = (self.padded_width, self.height);
        let sc = &mut self.sweep;
        if sc.skip > 0 && sc.skip_size == size {
            sc.skip -= 1;
            return false;
        }
        // A seed beyond the values the sweeps can hold (INF marks "none yet") is the wave's:
        // clipped to INF it would read as no seed at all.
        let limit = INF - 1 - model.diagonal() * WALL as u32;
        if seeds.iter().any(|&(v, _)| v > limit) {
            return false;
        }
        sc.size = size;
        // What suits a map is learned in one-shot builds over it; they go along columns only
        // over the map built last, unchanged (see `columns`).
        let map = if self.one_shot { self.cost_version } else { 0 };
        let may_turn = self.rows_changed == 0;
        sc.map = map;
        // The seeds turned with the map, in a buffer kept from build to build.
        let mut turned = std::mem::take(&mut sc.turned_seeds);
        let seeds = if sc.ways.choose(map, may_turn) {
            turned.clear();
            turned.extend_from_slice(seeds);
            self.turn_to_columns(&mut turned);
            &turned[..]
        } else {
            seeds
        };
        let pw = self.padded_width;
        let h = self.height;
        let sc = &mut self.sweep;
        sc.cpu = crate::simd::cpu();
        sc.prices = Prices {
            straight: model.straight(),
            diagonal: model.diagonal(),
            plain: self.max_terrain == crate::cost::PLAIN,
        };
        // The table depends on the model only: kept between builds (on small maps rebuilding it
        // was a visible part of a build).
        if sc.straight_table.len() != 256 || sc.table_straight != model.straight() {
            sc.straight_table.clear();
            sc.straight_table
                .extend((0..=255u8).map(|t| price(t, model.straight())));
            sc.table_straight = model.straight();
        }
        sc.words = pw.div_ceil(COLUMNS_PER_MARK).div_ceil(64);
        let rows = h + 2;
        for dir in &mut sc.need {
            dir.clear();
            dir.resize(rows * sc.words, 0);
        }
        for dir in &mut sc.needy {
            dir.clear();
            dir.resize(rows.div_ceil(64), 0);
        }
        open_chunks(sc, &self.costs, (self.cost_version, self.columns, pw));
        sc.candidates.clear();
        sc.candidates.resize(pw, INF);
        sc.marks.clear();
        sc.marks.resize(sc.words, 0);
        sc.back.clear();
        sc.back.resize(sc.words, 0);
        #[cfg(feature = "parallel")]
        {
            let rows: usize = seeds.iter().map(|&(_, c)| c as usize / pw).sum();
            sc.seed_row = rows / seeds.len().max(1);
        }
        let dist = &mut self.dist;
        if std::mem::take(&mut self.inf_outside)
            && !self.columns
            && self.touched_valid
            && self.touched.len() == dist.len().div_ceil(TOUCHED_BLOCK * 64)
        {
            // Beyond the last sweeps' footprint, the cells still hold INF.
            fill_blocks(dist, &self.touched, INF);
        } else if !(self.columns && self.dist_inf) {
            fill_inf(dist);
        }
        self.dist_inf = false;
        // The footprint starts empty: every cell the sweeps change is marked in it, so that the
        // copy-out and the arrows can skip the rest (see `list_spans`).
        self.touched_valid = false;
        self.touched.clear();
        self.touched
            .resize(dist.len().div_ceil(TOUCHED_BLOCK * 64), 0);
        for &(v, c) in seeds {
            let c = c as usize;
            dist[c] = dist[c].min(v.min(INF));
        }
        for &(_, c) in seeds {
            let (y, x) = (c as usize / pw, (c as usize % pw) as u32);
            let row = &mut dist[y * pw..(y + 1) * pw];
            let span = scan(row, &self.costs[y * pw..(y + 1) * pw], sc.table(), x, x);
            touch_cells(&mut self.touched, c as usize, c as usize);
            touch_span(&mut self.touched, y * pw, span);
            mark_span(&mut sc.marks, span);
            spread(sc, y, h);
        }
        sc.cursor = SweepCursor {
            budget: MAX_WORK * dist.len() as u64,
            ..SweepCursor::default()
        };
        sc.turned_seeds = turned;
        true
    }

    /// Sweep rows until the field is final or about `budget` cells were visited.
    pub(crate) fn sweep_run(&mut self, budget: usize, model: CostModel) -> SweepOutcome {
        let outcome = self.sweep_run_here(budget, model);
        let sc = &mut self.sweep;
        let reached = match outcome {
            SweepOutcome::Done(reached) => Some(Some(reached)),
            // Past the budget (not values out of range, which say nothing about the way).
            SweepOutcome::HandOver if sc.cursor.work > sc.cursor.budget => Some(None),
            _ => None,
        };
        if let Some(reached) = reached {
            let len = self.dist.len();
            let small = self.inf_outside;
            sc.ways
                .learn(sc.map, self.columns, sc.cursor.work, len, reached, small);
        }
        if self.columns && outcome != SweepOutcome::Running {
            self.turn_back_to_rows();
        }
        outcome
    }

    /// [`sweep_run`](Self::sweep_run) in the layout the sweeps began in.
    fn sweep_run_here(&mut self, budget: usize, model: CostModel) -> SweepOutcome {
        let pw = self.padded_width;
        let h = self.height;
        let sc = &mut self.sweep;
        let dist = &mut self.dist[..];
        let costs = &self.costs[..];
        let touched = &mut self.touched[..];
        let stop_at = sc.cursor.work.saturating_add(budget as u64);
        #[cfg(feature = "parallel")]
        {
            // A one-shot build of a large map: bands of rows on rayon's threads.
            let fresh = sc.cursor.work == 0 && sc.cursor.k == 0 && sc.cursor.dir == 0;
            let threads = rayon::current_num_threads();
            if budget == usize::MAX && fresh && threads >= 2 && h >= 256 && pw * h >= 1 << 18 {
                let converged = parallel_rounds(dist, costs, sc, pw, h, threads);
                // The work of all bands, or past the budget.
                sc.cursor.work = converged.unwrap_or(sc.cursor.budget + 1);
                let outcome = match converged {
                    Some(_) if self.columns => {
                        self.other_dist_inf = true;
                        transpose_finish(dist, pw, h + 2, &mut self.other_dist, model)
                    }
                    Some(_) => finish(dist, model),
                    None => SweepOutcome::HandOver,
                };
                match converged {
                    Some(work) => sc.judge(sc.size, work, &outcome),
                    None => sc.hand_to_wave(sc.size),
                }
                return outcome;
            }
        }
        loop {
            if !sweep_pass(
                sc.cpu,
                (&mut *dist, costs, &mut *touched),
                sc,
                pw,
                h,
                stop_at,
            ) {
                return SweepOutcome::Running;
            }
            sc.cursor.k = 0;
            if sc.cursor.dir == 0 {
                sc.cursor.dir = 1;
                continue;
            }
            sc.cursor.dir = 0;
            if sc.cursor.changed == 0 {
                break;
            }
            sc.cursor.changed = 0;
            if sc.cursor.work > sc.cursor.budget {
                sc.hand_to_wave(sc.size);
                return SweepOutcome::HandOver;
            }
        }
        // A small footprint is finished alone: the rest of the map keeps INF, which the copy
        // into the field never reads and the arrows read as no value, and the next sweeps need
        // not fill it again (on a map mostly rock, brc202d, the two passes over the whole map
        // were a seventh of a build).
        let small = !self.columns && small_footprint(touched, dist.len());
        let outcome = if small {
            finish_blocks(dist, touched, model)
        } else if self.columns {
            // Along columns, the end pass turns the distances back into rows as it goes, and
            // leaves INF behind for the next sweeps along columns (swapped out and in with
            // `other_dist`).
            self.other_dist_inf = true;
            transpose_finish(dist, pw, h + 2, &mut self.other_dist, model)
        } else {
            finish(dist, model)
        };
        // Every cell the sweeps changed is in the footprint, and the rest are UNREACHABLE (or
        // INF beyond a small footprint).
        let done = matches!(outcome, SweepOutcome::Done(_));
        self.touched_valid = done;
        self.inf_outside = done && small;
        sc.judge(sc.size, sc.cursor.work, &outcome);
        outcome
    }
}

/// Back to the builder's conventions, checking the range the sweeps can represent.
fn finish(dist: &mut [u32], model: CostModel) -> SweepOutcome {
    #[cfg(target_arch = "x86_64")]
    {
        let cpu = crate::simd::cpu();
        if let Some(avx512) = cpu.avx512 {
            return avx512.finish(dist, model);
        }
        if let Some(avx2) = cpu.avx2 {
            return avx2.finish(dist, model);
        }
    }
    finish_plain(dist, model)
}

/// [`finish`] over the blocks marked in `blocks` (a bit per `TOUCHED_BLOCK` padded cells) only:
/// the cells beyond keep INF. O(blocks marked + cells / 1024).
fn finish_blocks(dist: &mut [u32], blocks: &[u64], model: CostModel) -> SweepOutcome {
    #[cfg(target_arch = "x86_64")]
    {
        let cpu = crate::simd::cpu();
        if let Some(avx512) = cpu.avx512 {
            return avx512.finish_blocks(dist, blocks, model);
        }
        if let Some(avx2) = cpu.avx2 {
            return avx2.finish_blocks(dist, blocks, model);
        }
    }
    finish_blocks_plain(dist, blocks, model)
}

/// [`finish_plain`] over the blocks marked in `blocks`.
pub(crate) fn finish_blocks_plain(
    dist: &mut [u32],
    blocks: &[u64],
    model: CostModel,
) -> SweepOutcome {
    let mut counts = [0u32; TOUCHED_BLOCK];
    let mut tops = [0u32; TOUCHED_BLOCK];
    let (whole, n) = (dist.len() / TOUCHED_BLOCK, dist.len());
    for_marked(blocks, |b| {
        if b < whole {
            let at = b * TOUCHED_BLOCK;
            for (l, v) in dist[at..at + TOUCHED_BLOCK].iter_mut().enumerate() {
                let finite = *v < INF;
                counts[l] += finite as u32;
                tops[l] = tops[l].max(if finite { *v } else { 0 });
                *v = if finite { *v } else { UNREACHABLE };
            }
        }
    });
    finish_lanes(&counts, &tops, last_block(dist, blocks, whole, n), model)
}

/// The cells of the last, partial block of `dist` if it is marked in `blocks` (else none):
/// the block kernels leave them to [`finish_lanes`].
pub(crate) fn last_block<'a>(
    dist: &'a mut [u32],
    blocks: &[u64],
    whole: usize,
    n: usize,
) -> &'a mut [u32] {
    let marked = blocks
        .get(whole / 64)
        .is_some_and(|w| w >> (whole % 64) & 1 != 0);
    if marked {
        &mut dist[(whole * TOUCHED_BLOCK).min(n)..]
    } else {
        &mut []
    }
}

/// Every cell of the blocks marked in `blocks` (a bit per `TOUCHED_BLOCK` cells) to `v`: the
/// sweeps' refill of their last footprint, and the wave's reset of its own.
pub(crate) fn fill_blocks(dist: &mut [u32], blocks: &[u64], v: u32) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx512) = crate::simd::cpu().avx512 {
        return avx512.fill_blocks(dist, blocks, v);
    }
    fill_blocks_plain(dist, blocks, v);
}

/// [`fill_blocks`] without vector stores.
pub(crate) fn fill_blocks_plain(dist: &mut [u32], blocks: &[u64], v: u32) {
    let n = dist.len();
    for_marked(blocks, |b| {
        let at = (b * TOUCHED_BLOCK).min(n);
        // A whole block is a fixed-size store, inline (a call to `memset` per block was a
        // visible part of a dungeon's build).
        match dist.get_mut(at..at + TOUCHED_BLOCK) {
            Some(block) => {
                let block: &mut [u32; TOUCHED_BLOCK] = block.try_into().expect("a block");
                *block = [v; TOUCHED_BLOCK];
            }
            None => dist[at..].fill(v),
        }
    });
}

/// `f(k)` for every bit `k` set in `bits`, in order.
#[inline(always)]
pub(crate) fn for_marked(bits: &[u64], mut f: impl FnMut(usize)) {
    for (w, &word) in bits.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            f(w * 64 + rest.trailing_zeros() as usize);
            rest &= rest - 1;
        }
    }
}

/// Every cell to INF ("no value yet"), in the widest stores the CPU has: a pass over the whole
/// map at each build, which in the baseline's 16-byte stores was a tenth of a build on a map
/// mostly rock (brc202d).
fn fill_inf(dist: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx512) = crate::simd::cpu().avx512 {
        return avx512.fill(dist, INF);
    }
    dist.fill(INF);
}

#[inline(always)]
pub(crate) fn finish_plain(dist: &mut [u32], model: CostModel) -> SweepOutcome {
    // Lane-wise counts and maxima over chunks of 8, which the compiler turns into vector code.
    let mut counts = [0u32; 8];
    let mut tops = [0u32; 8];
    let mut chunks = dist.chunks_exact_mut(8);
    for chunk in &mut chunks {
        for (l, v) in chunk.iter_mut().enumerate() {
            let finite = *v < INF;
            counts[l] += finite as u32;
            tops[l] = tops[l].max(if finite { *v } else { 0 });
            *v = if finite { *v } else { UNREACHABLE };
        }
    }
    finish_lanes(&counts, &tops, chunks.into_remainder(), model)
}

/// The end of [`finish_plain`] and of its vector forms: the lanes' counts of reached cells and
/// their largest values, then the cells left over one at a time, and the range check.
#[inline(always)]
pub(crate) fn finish_lanes(
    counts: &[u32],
    tops: &[u32],
    rest: &mut [u32],
    model: CostModel,
) -> SweepOutcome {
    let limit = INF - 1 - model.diagonal() * WALL as u32;
    let mut reachable = counts.iter().map(|&c| c as usize).sum::<usize>();
    let mut largest = tops.iter().copied().max().unwrap_or(0);
    for v in rest {
        if *v < INF {
            reachable += 1;
            largest = largest.max(*v);
        } else {
            *v = UNREACHABLE;
        }
    }
    if largest > limit {
        return SweepOutcome::HandOver;
    }
    SweepOutcome::Done(reachable)
}

/// Rounds with the rows split into one band per thread, all bands swept at once, each round a
/// pass each way (each band in its own order). A band's first row reads the neighbouring band's
/// edge row as it was before the pass (a copy), so news cross a band edge one pass later; the
/// fixed point is the same. Returns the work done (columns swept), or `None` when it passes the
/// budget (the map goes to the wave).
#[cfg(feature = "parallel")]
fn parallel_rounds(
    dist: &mut [u32],
    costs: &[u8],
    sc: &mut SweepScratch,
    pw: usize,
    h: usize,
    threads: usize,
) -> Option<u64> {
    use rayon::prelude::*;
    let bands = threads.min(h / 64).max(2);
    let rows_per = h.div_ceil(bands);
    let bands = h.div_ceil(rows_per);
    sc.snapshot.resize(bands * pw, INF);
    let words = sc.words;
    sc.bands.resize_with(bands, BandScratch::default);
    for b in &mut sc.bands {
        b.candidates.resize(pw, INF);
        b.marks.resize(words, 0);
        b.back.clear();
        b.back.resize(words, 0);
        for edge in &mut b.edges {
            edge.resize(words, 0);
        }
    }
    let (prices, cpu) = (sc.prices, sc.cpu);
    let table: [u32; 256] = *sc.table();
    let table = &table;
    let mut work = 0u64;
    let seed_row = sc.seed_row;
    // Each band first sweeps away from the seeds: a band below them downwards, a band above them
    // upwards, so that the first round fills every band at once (with one direction for all, the
    // bands on the far side of the seeds would idle through the first pass).
    let band_rows = |k: usize| (1 + k * rows_per, ((k + 1) * rows_per).min(h));
    let upward_first = |k: usize| {
        let (a, b) = band_rows(k);
        seed_row >= b || (seed_row >= a && seed_row - a > b - seed_row)
    };
    loop {
        let mut changed = 0usize;
        for second in [false, true] {
            // Each band's first row (in its pass's order) reads a copy of the row beyond it.
            for k in 0..bands {
                let (a, b) = band_rows(k);
                let pred = if upward_first(k) != second {
                    b + 1
                } else {
                    a - 1
                };
                sc.snapshot[k * pw..(k + 1) * pw]
                    .copy_from_slice(&dist[pred * pw..(pred + 1) * pw]);
            }
            let [need_down, need_up] = &mut sc.need;
            dist[pw..(h + 1) * pw]
                .par_chunks_mut(rows_per * pw)
                .zip(need_down[words..(h + 1) * words].par_chunks_mut(rows_per * words))
                .zip(need_up[words..(h + 1) * words].par_chunks_mut(rows_per * words))
                .zip(sc.bands.par_iter_mut())
                .zip(sc.snapshot.par_chunks(pw))
                .enumerate()
                .for_each(|(k, ((((rows, need_down), need_up), scratch), snap))| {
                    let result = sweep_band(
                        rows,
                        costs,
                        [need_down, need_up],
                        scratch,
                        snap,
                        Band {
                            first: band_rows(k).0,
                            pw,
                            words,
                            h,
                            upward: upward_first(k) != second,
                            prices,
                            table,
                            cpu,
                        },
                    );
                    scratch.result = result;
                });
            for b in &mut sc.bands {
                let r = &b.result;
                changed += r.changed;
                work += r.work;
                for (dir, edge) in r.outgoing.iter().enumerate() {
                    if let Some(row) = *edge {
                        let need = &mut sc.need[dir][row * words..][..words];
                        for (n, m) in need.iter_mut().zip(&mut b.edges[dir]) {
                            *n |= std::mem::take(m);
                        }
                    }
                }
            }
        }
        if changed == 0 {
            return Some(work);
        }
        if work > sc.cursor.budget {
            return None;
        }
    }
}

/// Where a band lies and which way the pass goes.
#[cfg(feature = "parallel")]
#[derive(Clone, Copy)]
struct Band<'a> {
    /// Padded row index of the band's top row.
    first: usize,
    pw: usize,
    /// Words of needs per row.
    words: usize,
    h: usize,
    upward: bool,
    prices: Prices,
    table: &'a [u32; 256],
    cpu: Cpu,
}

/// What a band's pass did: rows changed, columns swept, and needs for rows of other bands.
#[cfg(feature = "parallel")]
#[derive(Debug, Default, Clone)]
struct BandResult {
    changed: usize,
    work: u64,
    /// Per direction, the row beyond the band's edge to tell (its marks are the band's
    /// `edges`).
    outgoing: [Option<usize>; 2],
}

/// A band's own scratch: a candidate row, the marks of the row being swept, the marks for the
/// rows beyond its two edges, and what its last pass did.
#[cfg(feature = "parallel")]
#[derive(Debug, Default, Clone)]
struct BandScratch {
    candidates: Vec<u32>,
    marks: Vec<u64>,
    /// The back marks, unused: every change is told to both rows (a band's edge row reads a
    /// copy of the row beyond it).
    back: Vec<u64>,
    edges: [Vec<u64>; 2],
    result: BandResult,
}

/// One pass over one band's rows (`rows` holds them, `need` their needs per direction).
#[cfg(feature = "parallel")]
fn sweep_band(
    rows: &mut [u32],
    costs: &[u8],
    need: [&mut [u64]; 2],
    scratch: &mut BandScratch,
    snapshot: &[u32],
    band: Band,
) -> BandResult {
    let Band {
        first,
        pw,
        words,
        h,
        upward,
        prices,
        table,
        cpu,
    } = band;
    let n = rows.len() / pw;
    let last = first + n - 1;
    let [need_down, need_up] = need;
    let mut out = BandResult {
        changed: 0,
        work: 0,
        outgoing: [None, None],
    };
    for k in 0..n {
        let local = if upward { n - 1 - k } else { k };
        let y = first + local;
        let r = y * pw;
        let p = if upward { r + pw } else { r - pw };
        out.work += 1;
        let mut row_changed = false;
        loop {
            let need = if upward {
                &mut need_up[local * words..][..words]
            } else {
                &mut need_down[local * words..][..words]
            };
            let Some((lo, hi)) = take_run(need, pw) else {
                break;
            };
            // The band's first row reads the copy of the row beyond the band's edge.
            let (cur, prev) = if k == 0 {
                (&mut rows[local * pw..(local + 1) * pw], snapshot)
            } else {
                let pred_local = if upward { local + 1 } else { local - 1 };
                rows_mut(rows, local, pred_local, pw)
            };
            let span = row_pass(
                cpu,
                cur,
                prev,
                &costs[r..r + pw],
                &costs[p..p + pw],
                prices,
                table,
                &mut scratch.candidates,
                (&mut scratch.marks, &mut scratch.back),
                lo,
                hi,
            );
            out.work += (hi + 1 - lo) as u64 + RUN_WORK;
            row_changed |= span.lo <= span.hi;
        }
        if !row_changed {
            continue;
        }
        out.changed += 1;
        // The row below must look here on the next top-down pass, the row above on the next
        // bottom-up one; rows beyond the band's edges are told after the pass.
        let marks = &mut scratch.marks;
        if y < last {
            or_marks(&mut need_down[(local + 1) * words..][..words], marks);
        } else if y < h {
            or_marks(&mut scratch.edges[0], marks);
            out.outgoing[0] = Some(y + 1);
        }
        if y > first {
            or_marks(&mut need_up[(local - 1) * words..][..words], marks);
        } else if y > 1 {
            or_marks(&mut scratch.edges[1], marks);
            out.outgoing[1] = Some(y - 1);
        }
        marks.fill(0);
        scratch.back.fill(0);
    }
    out
}

/// Fill [`SweepScratch::open`] for the padded costs `costs` of layout `of`: worked out once per
/// map version and layout, from the second build over it on; all ones (every chunk may change)
/// before and for a map without a version. O(cells) when worked out, O(cells / 512) otherwise.
fn open_chunks(sc: &mut SweepScratch, costs: &[u8], of: OpenOf) {
    let (words, pw) = (sc.words, of.2);
    let rows = costs.len() / pw;
    let layout = usize::from(of.1);
    sc.layout = layout;
    let open = &mut sc.open[layout];
    if of.0 != 0 && sc.open_of[layout] == of && open.len() == rows * words {
        return;
    }
    open.clear();
    if of.0 == 0 || sc.open_seen[layout] != of {
        sc.open_seen[layout] = of;
        sc.open_of[layout] = (0, false, 0);
        open.resize(rows * words, u64::MAX);
        return;
    }
    open.resize(rows * words, 0);
    for (row, open) in costs.chunks_exact(pw).zip(open.chunks_exact_mut(words)) {
        for (k, chunk) in row.chunks(COLUMNS_PER_MARK).enumerate() {
            if chunk.iter().any(|&c| c != WALL) {
                open[k / 64] |= 1 << (k % 64);
            }
        }
    }
    sc.open_of[layout] = of;
}

/// `need |= marks`.
#[cfg(feature = "parallel")]
#[inline]
fn or_marks(need: &mut [u64], marks: &[u64]) {
    for (n, &m) in need.iter_mut().zip(marks) {
        *n |= m;
    }
}

/// The first run of consecutive marked chunks in a row's needs, cleared, as columns (padded
/// x, within the map); one unmarked chunk between two marked ones of a word joins them. One
/// pass over a run instead of one per chunk: each pass over a row has a fixed cost, more than
/// sweeping a chunk more.
#[inline]
fn take_run(need: &mut [u64], pw: usize) -> Option<(usize, usize)> {
    loop {
        let w = need.iter().position(|&b| b != 0)?;
        let word = need[w];
        need[w] |= (word << 1) & (word >> 1);
        let start = w * 64 + need[w].trailing_zeros() as usize;
        let mut end = start;
        while end / 64 < need.len() {
            let (word, bit) = (end / 64, end % 64);
            // The marked chunks from `bit` on, up to the first unmarked one.
            let ones = ((!(need[word] >> bit)).trailing_zeros() as usize).min(64 - bit);
            need[word] &= !(u64::MAX.checked_shl(ones as u32).map_or(u64::MAX, |m| !m) << bit);
            end += ones;
            if bit + ones < 64 {
                break;
            }
        }
        // A run of only the border column has no column to sweep.
        let (lo, hi) = (
            (start * COLUMNS_PER_MARK).max(1),
            (end * COLUMNS_PER_MARK - 1).min(pw - 2),
        );
        if lo <= hi {
            return Some((lo, hi));
        }
    }
}

/// The columns a vector row pass goes over for a run `lo..=hi` of a padded row of `len` cells:
/// a run shorter than a `block` of the kernel's cells grows to one block (rightwards, or
/// leftwards at the row's end), since the pass takes the cells of a run shorter than its
/// blocks one at a time, which on caves (runs of one chunk are an eighth of lak303d's) cost
/// more than a block (see `docs/benchmarks.md`). The columns beside the run take offers that
/// are theirs already, or better ones, which the pass marks like any change: the sweeps end at
/// the same fixed point.
#[inline(always)]
pub(crate) fn run_of_a_block(lo: usize, hi: usize, len: usize, block: usize) -> (usize, usize) {
    // `hi + 1 - lo` is at least 1: a `block` of 0 or 1 keeps every run.
    if hi + 1 - lo >= block || len < block + 2 {
        return (lo, hi);
    }
    let lo = lo.min(len - 1 - block);
    (lo, hi.max(lo + block - 1))
}

/// Mark the chunks of columns `lo - 1..=hi + 1`: the cells next to columns `lo..=hi`
/// (straight and diagonal steps), for the rows above and below. Marks beyond the map's columns
/// are dropped when the marks are read.
#[inline(always)]
pub(crate) fn mark_cells(marks: &mut [u64], lo: usize, hi: usize) {
    set_bits(
        marks,
        (lo - 1) / COLUMNS_PER_MARK,
        (hi + 1) / COLUMNS_PER_MARK,
    );
}

/// Mark the chunks of columns holding columns `lo..=hi` (themselves, not their neighbours).
#[inline(always)]
pub(crate) fn mark_columns(marks: &mut [u64], lo: usize, hi: usize) {
    set_bits(marks, lo / COLUMNS_PER_MARK, hi / COLUMNS_PER_MARK);
}

/// Mark the footprint blocks of padded cells `lo..=hi`.
#[inline(always)]
fn touch_cells(touched: &mut [u64], lo: usize, hi: usize) {
    set_bits(touched, lo / TOUCHED_BLOCK, hi / TOUCHED_BLOCK);
}

/// Set bits `first..=last`, whole words at a time: a loop over the bits was a mispredicted
/// exit at almost every block a row pass changed (two or three chunks each), and a row pass on
/// open ground marks a whole row.
#[inline(always)]
fn set_bits(bits: &mut [u64], first: usize, last: usize) {
    let (head, tail) = (u64::MAX << (first % 64), u64::MAX >> (63 - last % 64));
    let (w0, w1) = (first / 64, last / 64);
    if w0 == w1 {
        bits[w0] |= head & tail;
    } else {
        bits[w0] |= head;
        bits[w0 + 1..w1].fill(u64::MAX);
        bits[w1] |= tail;
    }
}

/// [`touch_cells`] for a span of the row starting at padded cell `row`, if it is not empty.
#[inline(always)]
fn touch_span(touched: &mut [u64], row: usize, span: Span) {
    if span.lo <= span.hi {
        touch_cells(touched, row + span.lo as usize, row + span.hi as usize);
    }
}

/// [`mark_cells`] for a span, if it is not empty.
#[inline]
fn mark_span(marks: &mut [u64], span: Span) {
    if span.lo <= span.hi {
        mark_cells(marks, span.lo as usize, span.hi as usize);
    }
}

/// Row `y` changed next to its marks: the rows above and below must look there. Clears the
/// marks.
fn spread(sc: &mut SweepScratch, y: usize, h: usize) {
    let marked = (&mut sc.marks[..], &mut sc.back[..]);
    let needs = (&mut sc.need, &mut sc.needy);
    tell_neighbours(needs, &sc.open[sc.layout], sc.words, y, h, marked, None);
}

/// The rows above and below row `y` must look at `marks` on their next pass (bottom-up for the
/// row above, top-down for the row below); during a pass (`pass`: 0 top-down, 1 bottom-up) on a
/// map of plain ground, the row the pass came from looks only at `back`. Clears both marks, in
/// the same loop (a `fill` of a row's one or two words was a call to `memset` per row changed).
///
/// Why `back` is enough there: a cell that took an offer from the row before, from cell `p`,
/// cannot improve any cell `q` of that row. That row is consistent along itself (every row is
/// after its passes), so `q` is at most `p` plus the straight steps between them: none, one, or
/// two with the cell between walkable (the corner rule wants it for a diagonal offer). The way
/// from `q` through the cell to `p` is two steps, one of them diagonal unless `q` is `p`: with
/// every walkable cell's terrain 1 it costs more (10 + 14 > 10, 14 + 14 > 20). Heavier terrain
/// breaks that (two straight steps across a swamp), so other maps tell both rows everything.
/// The AVX2 kernel goes further on plain ground: of the cells beside those the scans improved,
/// it marks back only the chunks whose cells an offer from the row's final values improves
/// (most improve nothing there: on caves a fifth of the next pass's visits found nothing).
#[inline(always)]
fn tell_neighbours(
    (need, needy): (&mut [Vec<u64>; 2], &mut [Vec<u64>; 2]),
    open: &[u64],
    words: usize,
    y: usize,
    h: usize,
    (marks, back): (&mut [u64], &mut [u64]),
    pass: Option<usize>,
) {
    // The padded rows 0 and h + 1 have needs too, which no pass reads.
    let [down, up] = need;
    let below = &mut down[(y + 1) * words..][..words];
    let above = &mut up[(y - 1) * words..][..words];
    let open_below = &open[(y + 1) * words..][..words];
    let open_above = &open[(y - 1) * words..][..words];
    let (mut to_below, mut to_above) = (0, 0);
    let rows = below.iter_mut().zip(above.iter_mut());
    let open = open_below.iter().zip(open_above);
    let marked = marks.iter_mut().zip(back.iter_mut());
    for (((b, a), (ob, oa)), (m, k)) in rows.zip(open).zip(marked) {
        let (for_below, for_above) = match pass {
            None => (*m, *m),
            Some(0) => (*m, *k),
            Some(_) => (*k, *m),
        };
        let (for_below, for_above) = (for_below & ob, for_above & oa);
        *b |= for_below;
        *a |= for_above;
        to_below |= for_below;
        to_above |= for_above;
        *m = 0;
        *k = 0;
    }
    if y < h && to_below != 0 {
        needy[0][(y + 1) / 64] |= 1 << ((y + 1) % 64);
    }
    if y > 1 && to_above != 0 {
        needy[1][(y - 1) / 64] |= 1 << ((y - 1) % 64);
    }
}

/// The first bit set in `bits` at `from` or after.
#[inline(always)]
fn next_set(bits: &[u64], from: usize) -> Option<usize> {
    let mut w = from / 64;
    let mut word = *bits.get(w)? & (u64::MAX << (from % 64));
    loop {
        if word != 0 {
            return Some(w * 64 + word.trailing_zeros() as usize);
        }
        w += 1;
        word = *bits.get(w)?;
    }
}

/// The last bit set in `bits` at `from` or before.
#[inline(always)]
fn last_set(bits: &[u64], from: usize) -> Option<usize> {
    let mut w = from / 64;
    let mut word = bits[w] & (u64::MAX >> (63 - from % 64));
    loop {
        if word != 0 {
            return Some(w * 64 + 63 - word.leading_zeros() as usize);
        }
        w = w.checked_sub(1)?;
        word = bits[w];
    }
}

/// The rest of the current pass, in the vector kernels the CPU has: see [`sweep_rows`].
#[inline]
fn sweep_pass(
    cpu: Cpu,
    rows: SweptMap,
    sc: &mut SweepScratch,
    pw: usize,
    h: usize,
    stop_at: u64,
) -> bool {
    // Tests may ask the plain pass to grow runs as the AVX-512 pass does.
    #[cfg(test)]
    let vector = sc.grow_runs.0 == 0;
    #[cfg(not(test))]
    let vector = true;
    #[cfg(target_arch = "x86_64")]
    if vector {
        if let Some(avx512) = cpu.avx512 {
            return avx512.sweep_rows(rows, sc, pw, h, stop_at);
        }
        if let Some(avx2) = cpu.avx2 {
            return avx2.sweep_rows(rows, sc, pw, h, stop_at);
        }
    }
    let _ = (cpu, vector);
    #[cfg(test)]
    if sc.grow_runs.0 > 0 {
        let (block, mut grown) = sc.grow_runs;
        let pass = |(rows, prices, table, cand, marks, lo, hi): RowPassArgs| {
            let run = run_of_a_block(lo, hi, rows.0.len(), block);
            grown += usize::from(run != (lo, hi));
            plain_row_pass((rows, prices, table, cand, marks, run.0, run.1))
        };
        let done = sweep_rows(rows, sc, pw, h, stop_at, pass);
        sc.grow_runs.1 = grown;
        return done;
    }
    sweep_rows(rows, sc, pw, h, stop_at, plain_row_pass)
}

/// What a pass of the sweeps works over: the padded distances, the padded costs and the
/// footprint's blocks.
pub(crate) type SweptMap<'a> = (&'a mut [u32], &'a [u8], &'a mut [u64]);

/// A row and the row before it, and their terrain: `(cur, prev, terrain, prev_terrain)`.
pub(crate) type Rows<'a> = (&'a mut [u32], &'a [u32], &'a [u8], &'a [u8]);

/// A row pass's marks: the chunks next to every cell it changed, and `back`, the chunks next to
/// the cells it improved along the row (see [`SweepScratch::back`]); a superset will do.
pub(crate) type Marked<'a> = (&'a mut [u64], &'a mut [u64]);

/// The columns from the first to the last that a vector row pass's scans along the row
/// improved (or may have), empty when `lo > hi`: marked back once, at the end of the pass, so
/// that the blocks pay only a minimum and a maximum where they scan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scanned {
    pub(crate) lo: usize,
    pub(crate) hi: usize,
}

impl Scanned {
    pub(crate) const NONE: Scanned = Scanned {
        lo: usize::MAX,
        hi: 0,
    };

    /// Columns `lo..=hi` too.
    #[inline(always)]
    pub(crate) fn add(&mut self, lo: usize, hi: usize) {
        self.lo = self.lo.min(lo);
        self.hi = self.hi.max(hi);
    }
}

/// What a row pass takes: the rows, the build's prices and table of straight steps, a row of
/// scratch (the plain kernel's candidates), the marks, and columns `lo..=hi`.
pub(crate) type RowPassArgs<'a> = (
    Rows<'a>,
    Prices,
    &'a [u32; 256],
    &'a mut [u32],
    Marked<'a>,
    usize,
    usize,
);

/// The plain row pass: the candidates from the row before, then the scans along the row.
#[inline(always)]
fn plain_row_pass(
    ((cur, prev, terrain, prev_terrain), prices, table, cand, (marks, back), lo, hi): RowPassArgs,
) -> Span {
    candidates(prev, terrain, prev_terrain, prices, cand, lo, hi);
    let span = settle(cur, terrain, table, cand, lo, hi);
    mark_span(marks, span);
    mark_back(back, cur, cand, span, lo, hi);
    span
}

/// The back marks of a plain row pass over `lo..=hi` that changed `span`: the cells beyond
/// `lo..=hi` (only the scans reach them) and those below their offer (the scans improved them,
/// or they did not change), from the first to the last in one range as the vector passes mark
/// them ([`Scanned`]).
fn mark_back(back: &mut [u64], cur: &[u32], cand: &[u32], span: Span, lo: usize, hi: usize) {
    let scanned = |x: &usize| *x < lo || *x > hi || cur[*x] < cand[*x];
    let mut cells = span.lo as usize..=span.hi as usize;
    if let Some(first) = cells.find(scanned) {
        let last = cells.rev().find(scanned).unwrap_or(first);
        mark_cells(back, first, last);
    }
}

/// The rest of the current pass (`sc.cursor`), row by row, until its last row (true) or until
/// `stop_at` columns of work (false). The loop is compiled once per kernel, inside the kernel's
/// own target features, and goes from one row with needs to the next (`needy`): on caves, where
/// a pass sweeps many short runs, a dispatch and a look per row were a visible part of a build
/// (the figures are in `docs/benchmarks.md`).
#[inline(always)]
pub(crate) fn sweep_rows(
    (dist, costs, touched): SweptMap,
    sc: &mut SweepScratch,
    pw: usize,
    h: usize,
    stop_at: u64,
    mut row_pass: impl FnMut(RowPassArgs) -> Span,
) -> bool {
    let words = sc.words;
    let table: &[u32; 256] = sc.straight_table[..]
        .try_into()
        .expect("a price per terrain value");
    let prices = sc.prices;
    let upward = sc.cursor.dir == 1;
    let need = &mut sc.need;
    let needy = &mut sc.needy;
    let open = &sc.open[sc.layout][..];
    let marks = &mut sc.marks[..];
    let back = &mut sc.back[..];
    // On plain ground the row before looks only at `back` (see `tell_neighbours`).
    let back_only = sc.prices.plain;
    let cand = &mut sc.candidates[..];
    let cursor = &mut sc.cursor;
    while cursor.k < h {
        if cursor.work >= stop_at {
            return false;
        }
        // The next row of the pass with needs. Every row passed over counts one column of
        // work, as a look at it did, and a slice's budget may end among them.
        let from = if upward { h - cursor.k } else { cursor.k + 1 };
        let next = if upward {
            last_set(&needy[1], from).filter(|&y| y >= 1)
        } else {
            next_set(&needy[0], from).filter(|&y| y <= h)
        };
        let next_k = next.map_or(h, |y| if upward { h - y } else { y - 1 });
        let skip = (next_k - cursor.k) as u64;
        let room = stop_at - cursor.work;
        if skip > room || (skip == room && next.is_some()) {
            cursor.k += room as usize;
            cursor.work += room;
            return false;
        }
        let Some(y) = next else {
            cursor.k = h;
            cursor.work += skip;
            break;
        };
        cursor.k = next_k + 1;
        cursor.work += skip + 1;
        needy[upward as usize][y / 64] &= !(1 << (y % 64));
        let pred = if upward { y + 1 } else { y - 1 };
        let (r, p) = (y * pw, pred * pw);
        let mut changed = false;
        while let Some((lo, hi)) = take_run(&mut need[upward as usize][y * words..][..words], pw) {
            let (cur, prev) = rows_mut(dist, y, pred, pw);
            let rows = (cur, prev, &costs[r..r + pw], &costs[p..p + pw]);
            let marked = (&mut *marks, &mut *back);
            let span = row_pass((rows, prices, table, &mut *cand, marked, lo, hi));
            cursor.work += (hi + 1 - lo) as u64 + RUN_WORK;
            touch_span(touched, r, span);
            changed |= span.lo <= span.hi;
        }
        if changed {
            cursor.changed += 1;
            let pass = back_only.then_some(usize::from(upward));
            tell_neighbours((need, needy), open, words, y, h, (marks, back), pass);
        }
    }
    true
}

/// The row `y` mutably and the row `pred` (y ± 1) shared.
#[inline(always)]
fn rows_mut(dist: &mut [u32], y: usize, pred: usize, pw: usize) -> (&mut [u32], &[u32]) {
    if pred < y {
        let (a, b) = dist.split_at_mut(y * pw);
        (&mut b[..pw], &a[pred * pw..(pred + 1) * pw])
    } else {
        let (a, b) = dist.split_at_mut(pred * pw);
        (&mut a[y * pw..(y + 1) * pw], &b[..pw])
    }
}

/// One row over columns `lo..=hi`: the three neighbours in the row before, then the scans along
/// the row from the cells that improved. Returns the columns that changed, and marks the chunks
/// next to them in `marks` ([`mark_cells`]).
#[cfg(feature = "parallel")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn row_pass(
    cpu: Cpu,
    cur: &mut [u32],
    prev: &[u32],
    terrain: &[u8],
    prev_terrain: &[u8],
    prices: Prices,
    table: &[u32; 256],
    cand: &mut [u32],
    marks: Marked,
    lo: usize,
    hi: usize,
) -> Span {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(avx512) = cpu.avx512 {
            let (lo, hi) = run_of_a_block(lo, hi, cur.len(), crate::simd::Avx512::ROW_BLOCK);
            let rows = (cur, prev, terrain, prev_terrain);
            return avx512.row_pass(rows, prices, table, marks, lo, hi);
        }
        if let Some(avx2) = cpu.avx2 {
            let rows = (cur, prev, terrain, prev_terrain);
            return avx2.row_pass(rows, prices, table, marks, lo, hi);
        }
    }
    let rows = (cur, prev, terrain, prev_terrain);
    plain_row_pass((rows, prices, table, cand, marks, lo, hi))
}

/// The rightward part of a vector row pass after its blocks: cells `x..=hi` one by one from
/// `c`, the final value of cell `x - 1` (the offers and the scan together), then on past `hi`
/// while cells improve; `first..=last` are the columns the blocks changed (`first` is
/// `usize::MAX` when none). Returns the first column changed and the last, or `None`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn rightwards_tail(
    cur: &mut [u32],
    (prev, terrain, prev_terrain): (&[u32], &[u8], &[u8]),
    prices: Prices,
    table: &[u32; 256],
    marks: &mut [u64],
    scanned: &mut Scanned,
    mut x: usize,
    hi: usize,
    mut c: u32,
    mut first: usize,
    mut last: usize,
) -> Option<(usize, usize)> {
    while x <= hi {
        let offer = candidate(
            prev[x - 1],
            prev[x],
            prev[x + 1],
            terrain[x - 1],
            terrain[x],
            terrain[x + 1],
            prev_terrain[x],
            prices,
        );
        let v = cur[x];
        let taken = v.min(offer);
        c = taken.min(c + table[terrain[x] as usize]);
        cur[x] = c;
        if c < v {
            first = first.min(x);
            last = x;
            mark_cells(marks, x, x);
            if c < taken {
                scanned.add(x, x);
            }
        }
        x += 1;
    }
    if first == usize::MAX {
        return None;
    }
    let beyond = improve_right(cur, terrain, table, hi, c);
    let right = if beyond > hi {
        mark_cells(marks, hi + 1, beyond);
        scanned.add(hi + 1, beyond);
        beyond
    } else {
        last
    };
    Some((first, right))
}

/// The leftward part of a vector row pass after its blocks: cells `x - 1` down to `first` one
/// by one from `c`, the final value of cell `x`, then on past `first` while cells improve.
/// Returns the span changed, up to `right`. `mark_back(back, row, lo, hi)` marks the back marks
/// for the columns `lo..=hi` the scans improved, given the row's final values (every chunk
/// beside them, or on plain ground only those whose cells in the row before they improve).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn leftwards_tail(
    cur: &mut [u32],
    terrain: &[u8],
    table: &[u32; 256],
    (marks, back): Marked,
    mut scanned: Scanned,
    mut x: usize,
    first: usize,
    mut c: u32,
    right: usize,
    mark_back: impl FnOnce(&mut [u64], &[u32], usize, usize),
) -> Span {
    // Marked together (fewer cells than a block).
    let tail = x;
    while x > first {
        x -= 1;
        c = cur[x].min(c + table[terrain[x] as usize]);
        cur[x] = c;
    }
    if tail > first {
        mark_cells(marks, first, tail - 1);
        scanned.add(first, tail - 1);
    }
    let left = improve_left(cur, terrain, table, first, c);
    if left < first {
        mark_cells(marks, left, first - 1);
        scanned.add(left, first - 1);
    }
    if scanned.lo <= scanned.hi {
        mark_back(back, cur, scanned.lo, scanned.hi);
    }
    Span {
        lo: left as u32,
        hi: right as u32,
    }
}

/// What the cells `lo..lo + n` of a row see of the row before, cut to `n` cells each (so that
/// the loops over them need no bounds checks): values above left, above and above right, the
/// row's own terrain left, here and right (the corner rule), and the terrain above.
struct Above<'a> {
    pl: &'a [u32],
    pc: &'a [u32],
    pr: &'a [u32],
    tl: &'a [u8],
    tc: &'a [u8],
    tr: &'a [u8],
    pt: &'a [u8],
}

impl<'a> Above<'a> {
    #[inline(always)]
    fn new(
        prev: &'a [u32],
        terrain: &'a [u8],
        prev_terrain: &'a [u8],
        lo: usize,
        n: usize,
    ) -> Self {
        Above {
            pl: &prev[lo - 1..][..n],
            pc: &prev[lo..][..n],
            pr: &prev[lo + 1..][..n],
            tl: &terrain[lo - 1..][..n],
            tc: &terrain[lo..][..n],
            tr: &terrain[lo + 1..][..n],
            pt: &prev_terrain[lo..][..n],
        }
    }

    /// The best value cell `i` gets from the row before ([`candidate`]).
    #[inline(always)]
    fn offer(&self, i: usize, prices: Prices) -> u32 {
        let (l, c, r) = (self.pl[i], self.pc[i], self.pr[i]);
        candidate(
            l, c, r, self.tl[i], self.tc[i], self.tr[i], self.pt[i], prices,
        )
    }
}

/// The best value a cell gets from the three cells of the row before: straight from `pc` at
/// the straight price of its terrain `tc`, diagonally from `pl` and `pr` at the diagonal price
/// when both cells the step passes between are walkable (the corner rule).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn candidate(pl: u32, pc: u32, pr: u32, tl: u8, tc: u8, tr: u8, pt: u8, prices: Prices) -> u32 {
    let n_ok = pt != WALL;
    let s = price(tc, prices.straight);
    let g = price(tc, prices.diagonal);
    let a = pc + s;
    let b = if n_ok & (tl != WALL) { pl + g } else { INF };
    let c = if n_ok & (tr != WALL) { pr + g } else { INF };
    a.min(b).min(c)
}

/// The best value each cell of `lo..=hi` gets from the row before. No dependency between cells
/// (the compiler vectorises it). A diagonal needs both cells it passes between to be walkable
/// (the corner rule).
#[inline(always)]
fn candidates(
    prev: &[u32],
    terrain: &[u8],
    prev_terrain: &[u8],
    prices: Prices,
    cand: &mut [u32],
    lo: usize,
    hi: usize,
) {
    let n = hi + 1 - lo;
    let above = Above::new(prev, terrain, prev_terrain, lo, n);
    let out = &mut cand[lo..][..n];
    // An index over slices that all have n cells: the compiler drops the bounds checks.
    #[allow(clippy::needless_range_loop)]
    for i in 0..n {
        out[i] = above.offer(i, prices);
    }
}

/// Take the candidates that improve, then scan along the row from them both ways until nothing
/// improves. Returns the columns that changed.
#[inline]
fn settle(
    cur: &mut [u32],
    terrain: &[u8],
    straight: &[u32; 256],
    cand: &[u32],
    lo: usize,
    hi: usize,
) -> Span {
    let (row, offered) = (&mut cur[lo..=hi], &cand[lo..=hi]);
    let Some(first) = row.iter().zip(offered).position(|(c, n)| n < c) else {
        return EMPTY;
    };
    let last = row
        .iter()
        .zip(offered)
        .rposition(|(c, n)| n < c)
        .expect("there is a first");
    for (c, &n) in row[first..=last].iter_mut().zip(&offered[first..=last]) {
        *c = (*c).min(n);
    }
    scan(
        cur,
        terrain,
        straight,
        (lo + first) as u32,
        (lo + last) as u32,
    )
}

/// Scans along a row from the improved columns `lo..=hi`, both ways: through `lo..=hi` without
/// branches, then beyond it as far as cells keep improving (the row was consistent along itself
/// before). Returns the columns that changed, `lo..=hi` included.
#[inline]
fn scan(cur: &mut [u32], terrain: &[u8], straight: &[u32; 256], lo: u32, hi: u32) -> Span {
    let (lo, hi) = (lo as usize, hi as usize);
    let mut carry = cur[lo];
    for x in lo + 1..=hi {
        carry = cur[x].min(carry + straight[terrain[x] as usize]);
        cur[x] = carry;
    }
    let right = improve_right(cur, terrain, straight, hi, carry);
    let mut carry = cur[right];
    for x in (lo..right).rev() {
        carry = cur[x].min(carry + straight[terrain[x] as usize]);
        cur[x] = carry;
    }
    Span {
        lo: improve_left(cur, terrain, straight, lo, carry) as u32,
        hi: right as u32,
    }
}

/// Beyond column `hi`, where the scan ends with value `carry`: improve cells rightwards while
/// they improve (the row was consistent along itself before). Returns the last column changed,
/// or `hi`.
#[inline(always)]
fn improve_right(
    cur: &mut [u32],
    terrain: &[u8],
    straight: &[u32; 256],
    hi: usize,
    mut carry: u32,
) -> usize {
    let end = cur.len() - 1;
    let mut right = hi;
    let mut x = hi + 1;
    while x < end {
        let v = carry + straight[terrain[x] as usize];
        if v >= cur[x] {
            break;
        }
        cur[x] = v;
        carry = v;
        right = x;
        x += 1;
    }
    right
}

/// [`improve_right`] leftwards of column `lo`. Returns the first column changed, or `lo`.
#[inline(always)]
fn improve_left(
    cur: &mut [u32],
    terrain: &[u8],
    straight: &[u32; 256],
    lo: usize,
    mut carry: u32,
) -> usize {
    let mut left = lo;
    let mut x = lo;
    while x > 1 {
        x -= 1;
        let v = carry + straight[terrain[x] as usize];
        if v >= cur[x] {
            break;
        }
        cur[x] = v;
        carry = v;
        left = x;
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::PLAIN;

    /// Rows of random values and terrain, with a wall border as in the builder.
    fn random_rows(seed: u64, n: usize) -> (Vec<u32>, Vec<u8>, Vec<u8>) {
        let mut s = seed | 1;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut prev = vec![INF; n];
        let mut terrain = vec![WALL; n];
        let mut prev_terrain = vec![WALL; n];
        for x in 1..n - 1 {
            let r = next();
            prev[x] = if r % 5 == 0 {
                INF
            } else {
                (r >> 8) as u32 % 100_000
            };
            if r % 7 != 0 {
                terrain[x] = 1 + (r >> 40) as u8 % 254;
            }
            if r % 11 != 0 {
                prev_terrain[x] = 1;
            }
        }
        (prev, terrain, prev_terrain)
    }

    const PRICES: Prices = Prices {
        straight: 10,
        diagonal: 14,
        plain: false,
    };

    /// A vector row pass, as the builder calls it.
    #[cfg(target_arch = "x86_64")]
    type VectorRowPass = Box<dyn Fn(Rows, Prices, &[u32; 256], Marked, usize, usize) -> Span>;

    /// The vector row passes this CPU can run, by name.
    #[cfg(target_arch = "x86_64")]
    fn vector_row_passes() -> Vec<(&'static str, VectorRowPass)> {
        use crate::simd::under_test;
        let mut kernels: Vec<(&'static str, VectorRowPass)> = Vec::new();
        if let Some(avx2) = under_test::avx2() {
            kernels.push((
                "AVX2",
                Box::new(move |r, p, t, m, lo, hi| avx2.row_pass(r, p, t, m, lo, hi)),
            ));
        }
        if let Some(avx512) = under_test::avx512() {
            kernels.push((
                "AVX-512",
                Box::new(move |r, p, t, m, lo, hi| avx512.row_pass(r, p, t, m, lo, hi)),
            ));
        }
        kernels
    }

    #[test]
    fn vectorised_and_plain_row_passes_agree() {
        // (Fewer under Miri, which runs the plain code a thousand times slower.)
        let seeds = if cfg!(miri) { 40 } else { 3000 };
        for seed in 0..seeds {
            let n = 3 + seed as usize * 7 % 300;
            let (prev, mut terrain, prev_terrain) = random_rows(seed, n);
            let mut prices = if seed % 2 == 0 {
                PRICES
            } else {
                Prices {
                    straight: CostModel::Octile.straight(),
                    diagonal: CostModel::Octile.diagonal(),
                    plain: false,
                }
            };
            // A third of the rows of plain ground only, passed as such.
            if seed % 3 == 1 {
                for t in terrain.iter_mut().filter(|t| **t != WALL) {
                    *t = PLAIN;
                }
                prices.plain = true;
            }
            let table: [u32; 256] = std::array::from_fn(|t| price(t as u8, prices.straight));
            let mut cand = vec![INF; n];
            candidates(&prev, &terrain, &prev_terrain, prices, &mut cand, 1, n - 2);
            // Walls never get a value below INF, whatever their neighbours hold.
            for x in 1..n - 1 {
                if terrain[x] == WALL {
                    assert!(cand[x] >= INF);
                }
            }
            // A row to improve as the builder keeps it: walls at INF, some values in, and
            // consistent along itself.
            let (mut row, _, _) = random_rows(seed + 1000, n);
            for x in 0..n {
                if terrain[x] == WALL || seed % 3 == 0 {
                    row[x] = INF;
                }
            }
            scan(&mut row, &terrain, &table, 1, n as u32 - 2);
            // Half the passes start at a chunk's first column, as the builder's runs do.
            let lo = if seed % 2 == 0 {
                1 + seed as usize % (n - 2)
            } else {
                (seed as usize * 7 % (n - 2) / COLUMNS_PER_MARK * COLUMNS_PER_MARK).max(1)
            };
            let hi = (lo + seed as usize * 13 % (n - 1 - lo)).min(n - 2);
            let mut plain = row.clone();
            candidates(&prev, &terrain, &prev_terrain, prices, &mut cand, lo, hi);
            let a = settle(&mut plain, &terrain, &table, &cand, lo, hi);
            // The cells the scans improved: below both what they held and their offer (cells
            // beyond the columns passed have no offer).
            let offer = |x: usize| if (lo..=hi).contains(&x) { cand[x] } else { INF };
            let scanned: Vec<usize> = (1..n - 1)
                .filter(|&x| plain[x] < row[x].min(offer(x)))
                .collect();
            let words = n.div_ceil(COLUMNS_PER_MARK).div_ceil(64);
            let marked = |bits: &[u64], x: usize| {
                [x - 1, x, x + 1]
                    .map(|x| x / COLUMNS_PER_MARK)
                    .iter()
                    .all(|&c| bits[c / 64] & 1 << (c % 64) != 0)
            };
            // The plain pass's back marks cover them.
            let (mut marks, mut back) = (vec![0u64; words], vec![0u64; words]);
            let rows = (
                &mut row.clone()[..],
                &prev[..],
                &terrain[..],
                &prev_terrain[..],
            );
            plain_row_pass((
                rows,
                prices,
                &table,
                &mut cand,
                (&mut marks, &mut back),
                lo,
                hi,
            ));
            for &x in &scanned {
                assert!(marked(&back, x), "plain: seed {seed}, cell {x}");
            }
            // The plain pass leaves the row consistent along itself too.
            let mut closed = plain.clone();
            scan(&mut closed, &terrain, &table, 1, n as u32 - 2);
            assert_eq!(plain, closed, "seed {seed}");
            // Each vector kernel the CPU has.
            #[cfg(target_arch = "x86_64")]
            for (name, kernel) in vector_row_passes() {
                let mut wide = row.clone();
                let (mut marks, mut back) = (vec![0u64; words], vec![0u64; words]);
                let rows = (&mut wide[..], &prev[..], &terrain[..], &prev_terrain[..]);
                let b = kernel(rows, prices, &table, (&mut marks, &mut back), lo, hi);
                assert_eq!(
                    plain, wide,
                    "{name}: seed {seed}, n {n}, columns {lo}..={hi}"
                );
                assert_eq!((a.lo, a.hi), (b.lo, b.hi), "{name}: seed {seed}");
                // Every cell next to a changed one is in a marked chunk, and next to one the scans
                // improved in a chunk marked back.
                for x in (1..n - 1).filter(|&x| wide[x] != row[x]) {
                    assert!(marked(&marks, x), "{name}: seed {seed}, cell {x}");
                }
                // On plain ground a kernel may mark back only the chunks of the cells of the row
                // before that an offer from the cells the scans improved improves (in the
                // builder, where the row before is consistent along itself, no other offer can
                // improve it: see `tell_neighbours`); elsewhere every chunk beside those cells.
                let from_scanned = |x: usize| {
                    if scanned.binary_search(&x).is_ok() {
                        wide[x]
                    } else {
                        INF
                    }
                };
                let improves = |x: usize| {
                    prev_terrain[x] != WALL
                        && candidate(
                            from_scanned(x - 1),
                            from_scanned(x),
                            from_scanned(x + 1),
                            prev_terrain[x - 1],
                            prev_terrain[x],
                            prev_terrain[x + 1],
                            terrain[x],
                            prices,
                        ) < prev[x]
                };
                let chunk_marked = |x: usize| {
                    let c = x / COLUMNS_PER_MARK;
                    back[c / 64] & 1 << (c % 64) != 0
                };
                for &x in &scanned {
                    if prices.plain {
                        for y in [x - 1, x, x + 1]
                            .into_iter()
                            .filter(|&y| (1..n - 1).contains(&y))
                        {
                            assert!(
                                !improves(y) || chunk_marked(y),
                                "{name}: back, seed {seed}, cell {y} beside {x}"
                            );
                        }
                    } else {
                        assert!(marked(&back, x), "{name}: back, seed {seed}, cell {x}");
                    }
                }
            }
        }
    }

    #[test]
    fn bits_set_by_words_are_the_range_set_bit_by_bit() {
        // Ranges within a word, ending at and crossing word boundaries, over several words.
        for (first, last) in [
            (0, 0),
            (3, 9),
            (0, 63),
            (63, 64),
            (60, 130),
            (64, 191),
            (5, 255),
        ] {
            let mut bits = vec![0u64; 4];
            set_bits(&mut bits, first, last);
            let mut want = vec![0u64; 4];
            for b in first..=last {
                want[b / 64] |= 1 << (b % 64);
            }
            assert_eq!(bits, want, "{first}..={last}");
        }
    }

    #[test]
    fn runs_of_marked_chunks_come_out_whole_and_in_order() {
        // 200 chunks of columns and one more for the border column (1599 + 2 padded columns);
        // runs within a word, across a word boundary, and one of only the border's chunk; the
        // runs 10..=11 and 13..=14, one unmarked chunk apart, come out as one.
        let pw = 200 * COLUMNS_PER_MARK + 1;
        let mut need = vec![0u64; (pw.div_ceil(COLUMNS_PER_MARK)).div_ceil(64)];
        let marked = [
            (0, 0),
            (3, 5),
            (10, 11),
            (13, 14),
            (60, 70),
            (127, 128),
            (150, 150),
        ];
        for (a, b) in marked {
            let (lo, hi) = (
                a * COLUMNS_PER_MARK + 1,
                b * COLUMNS_PER_MARK + COLUMNS_PER_MARK - 2,
            );
            mark_cells(&mut need, lo, hi);
        }
        let runs = [(0, 0), (3, 5), (10, 14), (60, 70), (127, 128), (150, 150)];
        let expected: Vec<_> = runs
            .iter()
            .map(|&(a, b)| {
                let lo = (a * COLUMNS_PER_MARK).max(1);
                (lo, b * COLUMNS_PER_MARK + COLUMNS_PER_MARK - 1)
            })
            .collect();
        need[200 / 64] |= 1 << (200 % 64);
        let mut got = Vec::new();
        while let Some(run) = take_run(&mut need, pw) {
            got.push(run);
        }
        assert_eq!(got, expected);
        assert!(need.iter().all(|&w| w == 0));
    }

    /// The closing pass one cell at a time, written out here apart from the lane-wise code:
    /// unreached cells marked, reached ones counted, too large a value handed over.
    fn finish_by_hand(dist: &mut [u32], model: CostModel) -> SweepOutcome {
        let limit = INF - 1 - model.diagonal() * WALL as u32;
        let (mut reachable, mut largest) = (0, 0);
        for v in dist.iter_mut() {
            if *v >= INF {
                *v = UNREACHABLE;
            } else {
                reachable += 1;
                largest = largest.max(*v);
            }
        }
        if largest > limit {
            SweepOutcome::HandOver
        } else {
            SweepOutcome::Done(reachable)
        }
    }

    #[test]
    fn vectorised_and_plain_finish_agree() {
        for seed in 0..300u64 {
            let n = 1 + seed as usize * 37 % 500;
            let (mut dist, _, _) = random_rows(seed, n.max(3));
            if seed % 10 == 0 {
                dist[seed as usize % n] = INF - 2; // past the representable range
            }
            // Cells left UNREACHABLE, or past INF, are no value either (the vector kernels
            // take the sign of v + 1).
            if seed % 7 == 3 {
                dist[seed as usize * 3 % n] = UNREACHABLE;
                dist[seed as usize * 5 % n] = INF + 1 + seed as u32;
                dist[seed as usize * 11 % n] = INF - 1;
            }
            let model = if seed % 2 == 0 {
                CostModel::TenFourteen
            } else {
                CostModel::Octile
            };
            let mut by_hand = dist.clone();
            let want = finish_by_hand(&mut by_hand, model);
            let mut plain = dist.clone();
            assert_eq!(finish_plain(&mut plain, model), want, "seed {seed}");
            assert_eq!(plain, by_hand, "seed {seed}");
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = crate::simd::under_test::avx2() {
                let mut wide = dist.clone();
                let vector = avx2.finish(&mut wide, model);
                assert_eq!(wide, by_hand, "seed {seed}");
                assert_eq!(vector, want, "seed {seed}");
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(avx512) = crate::simd::under_test::avx512() {
                let mut wide = dist.clone();
                let vector = avx512.finish(&mut wide, model);
                assert_eq!(wide, by_hand, "avx512: seed {seed}");
                assert_eq!(vector, want, "avx512: seed {seed}");
            }
        }
    }

    #[test]
    fn the_footprints_end_pass_and_fill_touch_its_blocks_only() {
        for seed in 0..300u64 {
            let n = 1 + seed as usize * 53 % 900;
            let (mut dist, _, _) = random_rows(seed, n.max(3));
            let n = dist.len();
            // Some cells with no value yet, one past the range now and then.
            for (i, v) in dist.iter_mut().enumerate() {
                if (i as u64 ^ seed).is_multiple_of(3) {
                    *v = INF;
                }
            }
            if seed % 10 == 0 {
                dist[seed as usize % n] = INF - 2;
            }
            // Blocks marked at random, the last (maybe partial) one among them now and then,
            // and bits past the end.
            let words = n.div_ceil(TOUCHED_BLOCK * 64);
            let mut blocks: Vec<u64> = (0..words)
                .map(|k| (seed.wrapping_add(k as u64)).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .collect();
            if seed % 4 == 0 {
                blocks.iter_mut().for_each(|w| *w = u64::MAX);
            }
            let model = if seed % 2 == 0 {
                CostModel::TenFourteen
            } else {
                CostModel::Octile
            };
            let marked = |i: usize| {
                let b = i / TOUCHED_BLOCK;
                blocks[b / 64] >> (b % 64) & 1 != 0
            };
            // By hand: the marked cells finished, the others as they were.
            let mut by_hand = dist.clone();
            let mut inside: Vec<u32> = (0..n).filter(|&i| marked(i)).map(|i| dist[i]).collect();
            let want = finish_by_hand(&mut inside, model);
            let mut k = 0;
            for (i, v) in by_hand.iter_mut().enumerate() {
                if marked(i) {
                    *v = inside[k];
                    k += 1;
                }
            }
            let mut plain = dist.clone();
            assert_eq!(
                finish_blocks_plain(&mut plain, &blocks, model),
                want,
                "seed {seed}"
            );
            assert_eq!(plain, by_hand, "seed {seed}");
            let mut filled = dist.clone();
            fill_blocks_plain(&mut filled, &blocks, 7);
            let want_filled: Vec<u32> = (0..n)
                .map(|i| if marked(i) { 7 } else { dist[i] })
                .collect();
            assert_eq!(filled, want_filled, "seed {seed}");
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = crate::simd::under_test::avx2() {
                let mut wide = dist.clone();
                let vector = avx2.finish_blocks(&mut wide, &blocks, model);
                assert_eq!(wide, by_hand, "avx2: seed {seed}");
                assert_eq!(vector, want, "avx2: seed {seed}");
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(avx512) = crate::simd::under_test::avx512() {
                let mut wide = dist.clone();
                let vector = avx512.finish_blocks(&mut wide, &blocks, model);
                assert_eq!(wide, by_hand, "avx512: seed {seed}");
                assert_eq!(vector, want, "avx512: seed {seed}");
                let mut wide = dist.clone();
                avx512.fill_blocks(&mut wide, &blocks, 7);
                assert_eq!(wide, want_filled, "avx512: seed {seed}");
            }
        }
    }

    /// A map of rock with two rooms that do not meet, one builder reused: goals in either room
    /// or both, the sweeps on and off, builds in one call and time-sliced. The sweeps' small
    /// footprints leave INF beyond them, which the next builds of either kind start from: each
    /// build's field and arrows equal a fresh builder's.
    #[test]
    fn builds_after_sweeps_that_left_inf_beyond_their_footprint_equal_fresh_builds() {
        use crate::{CostField, FlowField, Grid, IntegrationField};
        use glam::UVec2;
        let (w, h) = (150u32, 120u32);
        let mut cost = CostField::new(Grid::new(w, h).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::new(w - 1, h - 1), WALL)
            .unwrap();
        cost.fill_rect(UVec2::new(5, 6), UVec2::new(40, 30), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(90, 70), UVec2::new(130, 110), 2)
            .unwrap();
        cost.fill_rect(UVec2::new(100, 80), UVec2::new(120, 82), WALL)
            .unwrap();
        // A third room whose top row starts a block of padded cells (152 wide: cell (71, 40)
        // is padded cell 6304, 16 × 394) after a block of rock: from (70, 41) the diagonal to
        // (71, 40) passes that rock, which no build reaches, so it keeps INF, and the arrows
        // must read it as a wall.
        cost.fill_rect(UVec2::new(60, 41), UVec2::new(85, 55), 1)
            .unwrap();
        cost.fill_rect(UVec2::new(71, 40), UVec2::new(85, 40), 1)
            .unwrap();
        let goals: [&[UVec2]; 6] = [
            &[UVec2::new(10, 10)],
            &[UVec2::new(80, 40)],
            &[UVec2::new(100, 100)],
            &[UVec2::new(39, 29), UVec2::new(91, 71)],
            &[UVec2::new(72, 40)],
            &[UVec2::new(110, 75)],
        ];
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let mut reused = IntegrationBuilder::new();
            let mut field = IntegrationField::new(*cost.grid(), model);
            let mut flow = FlowField::new(*cost.grid());
            let mut left_inf = 0;
            for round in 0..12 {
                let g = goals[round % goals.len()];
                let sweeps = round % 4 != 3;
                let sliced = round % 3 == 2;
                reused.set_sweeps(sweeps);
                if sliced {
                    reused.start(&cost, g, model).unwrap();
                    while let BuildProgressKind::Running = progress(reused.advance(97).unwrap()) {}
                    reused.finish_into(&mut field).unwrap();
                } else {
                    reused.build_into(&cost, g, model, &mut field).unwrap();
                }
                reused.flow_into(&mut flow).unwrap();
                let mut fresh = IntegrationBuilder::new();
                fresh.set_sweeps(sweeps);
                let want = fresh.build(&cost, g, model).unwrap();
                let mut want_flow = FlowField::new(*cost.grid());
                fresh.flow_into(&mut want_flow).unwrap();
                assert_eq!(field.values(), want.values(), "{model:?} round {round}");
                assert_eq!(flow.bytes(), want_flow.bytes(), "{model:?} round {round}");
                left_inf += reused.inf_outside as usize;
            }
            // The sweeps, not the wave, built most rounds, from small footprints.
            assert!(left_inf >= 4, "{model:?}: {left_inf} builds left INF");
        }
    }

    #[test]
    fn runs_grow_to_a_block_within_the_row_and_keep_their_columns() {
        for len in [3usize, 17, 18, 19, 40, 200] {
            for block in [0usize, 1, 8, 16] {
                for lo in 1..len - 1 {
                    for hi in lo..len - 1 {
                        let (a, b) = run_of_a_block(lo, hi, len, block);
                        let case = format!("len {len}, block {block}, run {lo}..={hi}");
                        assert!(a >= 1 && b <= len - 2 && a <= lo && hi <= b, "{case}");
                        if hi + 1 - lo >= block || len < block + 2 {
                            assert_eq!((a, b), (lo, hi), "{case}");
                        } else {
                            assert_eq!(b + 1 - a, block, "{case}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn sweeps_over_runs_grown_to_a_block_give_the_waves_field() {
        use crate::{CostField, Grid, IntegrationField};
        use glam::UVec2;
        // Caves: walls scattered at random and grown into blobs, terrain 1 to 3 or plain.
        for seed in 1..7u64 {
            let (w, h) = (70 + 9 * seed as u32, 50 + 5 * seed as u32);
            let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = move || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            };
            let mut cost = CostField::new(Grid::new(w, h).unwrap());
            for _ in 0..w * h / 40 {
                let r = next();
                let (x, y) = ((r % w as u64) as u32, ((r >> 20) % h as u64) as u32);
                let (dx, dy) = ((r >> 40) as u32 % 6, (r >> 50) as u32 % 6);
                let max = UVec2::new((x + dx).min(w - 1), (y + dy).min(h - 1));
                cost.fill_rect(UVec2::new(x, y), max, WALL).unwrap();
            }
            if seed % 2 == 0 {
                // Patches of heavier ground between the walls.
                for _ in 0..w * h / 400 {
                    let r = next();
                    let (x, y) = ((r % w as u64) as u32, ((r >> 20) % h as u64) as u32);
                    let max = UVec2::new((x + 7).min(w - 1), (y + 5).min(h - 1));
                    let terrain = 2 + (r >> 40) as u8 % 2;
                    for cy in y..=max.y {
                        for cx in x..=max.x {
                            let cell = UVec2::new(cx, cy);
                            if cost.is_walkable(cell) {
                                cost.fill_rect(cell, cell, terrain).unwrap();
                            }
                        }
                    }
                }
            }
            let goal = cost.nearest_walkable(UVec2::new(w / 2, h / 2)).unwrap();
            for model in [CostModel::TenFourteen, CostModel::Octile] {
                let mut grown = IntegrationBuilder::new();
                grown.sweep.grow_runs = (16, 0);
                let mut field = IntegrationField::new(*cost.grid(), model);
                grown.build_into(&cost, &[goal], model, &mut field).unwrap();
                let mut wave = IntegrationBuilder::new();
                wave.set_sweeps(false);
                let want = wave.build(&cost, &[goal], model).unwrap();
                let case = format!("seed {seed}, {model:?}");
                let wrong = field
                    .values()
                    .iter()
                    .zip(want.values())
                    .position(|(a, b)| a != b);
                assert_eq!(wrong, None, "{case}: first cell that differs");
                // The sweeps built it, and grew runs on the way.
                assert!(!grown.sweep.handed_over_lately(), "{case}");
                assert!(grown.sweep.grow_runs.1 > 0, "{case}: no run grew");
            }
        }
    }

    #[test]
    fn needs_skip_chunks_of_walls_from_the_second_build_over_a_map_on() {
        use crate::{FlowField, IntegrationField};
        use glam::UVec2;
        let cost = crate::maps::scattered_map(150, 90, 7).unwrap();
        let walkable: Vec<UVec2> = (0..90)
            .flat_map(|y| (0..150).map(move |x| UVec2::new(x, y)))
            .filter(|&c| cost.is_walkable(c))
            .collect();
        let model = CostModel::TenFourteen;
        let mut reused = IntegrationBuilder::new();
        let mut field = IntegrationField::new(*cost.grid(), model);
        let mut flow = FlowField::new(*cost.grid());
        let mut rows_worked_out = 0;
        for (round, &goal) in walkable.iter().step_by(walkable.len() / 5).enumerate() {
            reused
                .build_into(&cost, &[goal], model, &mut field)
                .unwrap();
            let sc = &reused.sweep;
            let along_rows = (reused.cost_version, false, reused.padded_width);
            if round == 0 {
                // The first build over the map (along rows) keeps needs everywhere.
                assert_eq!(sc.layout, 0);
                assert!(sc.open[0].iter().all(|&w| w == u64::MAX));
            } else if sc.open_of[0] == along_rows {
                // From the second along rows on, only chunks of the padded rows with a walkable
                // cell.
                rows_worked_out += 1;
                let pw = reused.padded_width;
                for (y, row) in reused.costs.chunks_exact(pw).enumerate() {
                    for (k, chunk) in row.chunks(COLUMNS_PER_MARK).enumerate() {
                        let open = sc.open[0][y * sc.words + k / 64] >> (k % 64) & 1 == 1;
                        assert_eq!(open, chunk.iter().any(|&c| c != WALL), "row {y} chunk {k}");
                    }
                }
            }
            reused.flow_into(&mut flow).unwrap();
            let mut wave = IntegrationBuilder::new();
            wave.set_sweeps(false);
            let want = wave.build(&cost, &[goal], model).unwrap();
            let mut want_flow = FlowField::new(*cost.grid());
            wave.flow_into(&mut want_flow).unwrap();
            assert_eq!(field.values(), want.values(), "round {round}");
            assert_eq!(flow.bytes(), want_flow.bytes(), "round {round}");
        }
        assert!(
            rows_worked_out >= 2,
            "{rows_worked_out} builds along rows skipped walls"
        );
    }

    enum BuildProgressKind {
        Running,
        Done,
    }

    fn progress(p: crate::BuildProgress) -> BuildProgressKind {
        match p {
            crate::BuildProgress::Running { .. } => BuildProgressKind::Running,
            crate::BuildProgress::Done(_) => BuildProgressKind::Done,
        }
    }

    #[test]
    fn wide_and_plain_fills_agree() {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx512) = crate::simd::under_test::avx512() {
            for n in [0, 1, 15, 16, 17, 100, 1000] {
                let (mut wide, _, _) = random_rows(n as u64 + 1, n.max(3));
                let mut plain = wide.clone();
                plain.fill(INF);
                avx512.fill(&mut wide, INF);
                assert_eq!(wide, plain, "{n} cells");
            }
        }
    }

    /// A case for the prefix scans over `LANES` cells: values (some INF), step prices as the
    /// vector passes take them (INF from a wall, in both models' ranges) and a carry; and the
    /// plain scans' results rightwards and leftwards.
    fn prefix_scan_case<const LANES: usize>(
        seed: u64,
    ) -> ([u32; LANES], [u32; LANES], u32, [[u32; LANES]; 2]) {
        let (mut v, terrain, _) = random_rows(seed, LANES + 2);
        let base = if seed.is_multiple_of(2) { 10 } else { 13_860 };
        if seed.is_multiple_of(4) {
            v[seed as usize % (LANES + 2)] = INF;
        }
        let carry = if seed.is_multiple_of(5) { INF } else { v[0] };
        let cells: [u32; LANES] = v[1..=LANES].try_into().unwrap();
        let prices: [u32; LANES] = std::array::from_fn(|i| match terrain[i + 1] {
            WALL => INF,
            t => base * t as u32,
        });
        let mut scans = [[0u32; LANES]; 2];
        let mut c = carry;
        for i in 0..LANES {
            c = cells[i].min(c + prices[i]);
            scans[0][i] = c;
        }
        let mut c = carry;
        for i in (0..LANES).rev() {
            c = cells[i].min(c + prices[i]);
            scans[1][i] = c;
        }
        (cells, prices, carry, scans)
    }

    #[test]
    fn vectorised_and_plain_prefix_scans_agree() {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = crate::simd::under_test::avx2() {
            for seed in 0..3000u64 {
                let (cells, prices, carry, plain) = prefix_scan_case::<8>(seed);
                assert_eq!(
                    avx2.prefix_scans(cells, prices, carry),
                    plain,
                    "seed {seed}"
                );
            }
        }
    }

    /// The AVX2 row pass's back marks on plain ground hold the chunk of every cell of the row
    /// before beside the scanned columns that an offer from the row improves, and no chunk
    /// beyond the first and last cell that improves; none when no cell improves.
    #[test]
    fn back_marks_hold_the_cells_the_row_improves_in_the_row_before() {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = crate::simd::under_test::avx2() {
            for seed in 0..2000u64 {
                let n = 3 + seed as usize * 7 % 300;
                let (cur, terrain, _) = random_rows(seed, n);
                let (prev, _, prev_terrain) = random_rows(seed ^ 0x9e37_79b9, n);
                // Plain ground: every walkable cell's terrain 1.
                let plain = |t: &[u8]| {
                    t.iter()
                        .map(|&t| if t == WALL { WALL } else { 1 })
                        .collect::<Vec<_>>()
                };
                let (terrain, prev_terrain) = (plain(&terrain), plain(&prev_terrain));
                let lo = 1 + seed as usize % (n - 2);
                let hi = (lo + seed as usize / 3 % 60).min(n - 2);
                let mut back = vec![0u64; n.div_ceil(COLUMNS_PER_MARK).div_ceil(64)];
                let rows = (&cur[..], &prev[..], &terrain[..], &prev_terrain[..]);
                avx2.improving_back(&mut back, rows, (10, 14), lo, hi);
                let marked = |x: usize| {
                    back[x / COLUMNS_PER_MARK / 64] >> (x / COLUMNS_PER_MARK % 64) & 1 != 0
                };
                // Every cell that improves: those beside the scanned columns must be marked; the
                // blocks may test (and mark) a few more.
                let improving: Vec<usize> = (1..=n - 2)
                    .filter(|&x| {
                        prev_terrain[x] != WALL
                            && candidate(
                                cur[x - 1],
                                cur[x],
                                cur[x + 1],
                                prev_terrain[x - 1],
                                prev_terrain[x],
                                prev_terrain[x + 1],
                                terrain[x],
                                PRICES,
                            ) < prev[x]
                    })
                    .collect();
                if n < 10 {
                    continue;
                }
                for &x in improving.iter().filter(|&&x| lo <= x + 1 && x <= hi + 1) {
                    assert!(
                        marked(x),
                        "seed {seed}: cell {x} improves but is not marked"
                    );
                }
                let chunks = |x: usize| x / COLUMNS_PER_MARK;
                for x in 0..n {
                    if marked(x) {
                        let (a, b) = (improving.first(), improving.last());
                        assert!(
                            a.zip(b).is_some_and(
                                |(&a, &b)| chunks(a) <= chunks(x) && chunks(x) <= chunks(b)
                            ),
                            "seed {seed}: chunk of column {x} marked, improving {improving:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn wide_and_plain_prefix_scans_agree() {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx512) = crate::simd::under_test::avx512() {
            for seed in 0..3000u64 {
                let (cells, prices, carry, plain) = prefix_scan_case::<16>(seed);
                assert_eq!(
                    avx512.prefix_scans(cells, prices, carry),
                    plain,
                    "seed {seed}"
                );
            }
        }
    }

    #[test]
    fn scans_stop_where_cells_stop_improving_and_agree_with_a_full_scan() {
        for seed in 0..200 {
            let n = 3 + seed as usize * 13 % 200;
            let (_, terrain, _) = random_rows(seed, n);
            // A row consistent along itself: values from one source at its start.
            let mut row = vec![INF; n];
            row[1] = 0;
            let table: [u32; 256] = std::array::from_fn(|t| price(t as u8, 10));
            scan(&mut row, &terrain, &table, 1, 1);
            let before = row.clone();
            // Improve one cell, then settle from it; a full scan from the start must agree.
            let x = 1 + seed as usize % (n - 2);
            if terrain[x] == WALL {
                continue;
            }
            row[x] = row[x].min(3);
            let mut full = row.clone();
            let span = scan(&mut row, &terrain, &table, x as u32, x as u32);
            scan(&mut full, &terrain, &table, 1, (n - 2) as u32);
            assert_eq!(row, full, "seed {seed}");
            for (i, (&a, &b)) in row.iter().zip(&before).enumerate() {
                if a != b {
                    assert!((span.lo as usize..=span.hi as usize).contains(&i));
                }
            }
        }
    }
}
