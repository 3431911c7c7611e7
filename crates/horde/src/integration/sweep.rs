//! The integration field by row sweeps: alternate top-down and bottom-up passes over the rows,
//! each row first taking the best of its three neighbours in the row before it (no dependency
//! between the cells of a row: the compiler vectorises it) and then scanning along itself both
//! ways. Values only ever decrease and are always costs of real paths, so the fixed point is the
//! shortest-path field: the same values as the Dijkstra wave, hence the same flow.
//!
//! Only what can change is swept: each row keeps, per direction, the span of columns where the
//! row before it changed, and a scan along a row stops where cells stop improving. On open maps
//! this settles in a few streaming passes, with no queue and no random access. Maps whose shortest
//! paths wind back and forth (mazes, rooms joined by one-cell doors) need many passes: when the
//! work passes a budget, the map goes to the wave, and the next builds of that size go straight
//! there.

use super::{IntegrationBuilder, UNREACHABLE};
use crate::cost::{CostModel, WALL};

/// "No value yet" during the sweeps: any real value + any step stays below 2³².
const INF: u32 = (1 << 31) - 1;
/// The step price of a wall: a wall's candidates all exceed `INF`, so it keeps `INF`.
const WALL_STEP: u32 = 1 << 31;
/// Work (columns swept, in units of the map's cells) after which the sweeps hand the map to the
/// wave. Open maps settle within about 4 (the built-in map 2.1, the 1024 x 1024 map 4.0, the
/// Moving AI city and game maps 0.9-4.0); mazes and rooms joined by one-cell doors take 9-15,
/// where the wave is cheaper. Stopping at 6 costs at most about twice the better of the two.
const MAX_WORK: u64 = 6;
/// After a map was handed to the wave, the next builds of the same size go straight to the wave,
/// and the sweeps are tried again only after this many.
const RETRY_AFTER: u32 = 16;

/// An interval of columns (padded x), empty when `lo > hi`.
#[derive(Debug, Clone, Copy)]
struct Span {
    lo: u32,
    hi: u32,
}

const EMPTY: Span = Span {
    lo: u32::MAX,
    hi: 0,
};

impl Span {
    fn add(&mut self, lo: u32, hi: u32) {
        self.lo = self.lo.min(lo);
        self.hi = self.hi.max(hi);
    }
}

/// Per-build scratch of the sweeps: per row, the columns each direction's next pass must look
/// at (16 bytes per row); a row of candidates. Step prices come from the padded costs (1 byte
/// per cell) as the rows are swept, so each pass streams 5 bytes per cell.
#[derive(Debug, Default, Clone)]
pub(crate) struct SweepScratch {
    /// Columns of each row whose neighbour row changed there, per pass direction (0 top-down:
    /// the row above changed; 1 bottom-up: the row below changed).
    need: [Vec<Span>; 2],
    candidates: Vec<u32>,
    /// Builds left to send straight to the wave, and the map size that earned it.
    skip: u32,
    skip_size: (usize, usize),
    cursor: SweepCursor,
    /// Base prices of a straight and a diagonal step in this build's model.
    prices: Prices,
    /// The price of a straight step from each terrain value (walls: `WALL_STEP`), for the scans
    /// along rows, where a table lookup is cheaper than the multiply and the wall test.
    straight_table: Vec<u32>,
    /// Parallel rounds: a copy of the row beyond each band's edge, and a candidate row per band.
    #[cfg(feature = "parallel")]
    snapshot: Vec<u32>,
    #[cfg(feature = "parallel")]
    band_candidates: Vec<Vec<u32>>,
}

/// Base prices of a straight and a diagonal step; a step costs its base times the terrain of the
/// cell it leaves.
#[derive(Debug, Default, Clone, Copy)]
struct Prices {
    straight: u32,
    diagonal: u32,
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
    fn table(&self) -> &[u32; 256] {
        self.straight_table[..]
            .try_into()
            .expect("a price per terrain value")
    }

    /// A build of this size was handed to the wave lately.
    #[cfg(test)]
    pub(crate) fn handed_over_lately(&self) -> bool {
        self.skip > 0
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
        let pw = self.padded_width;
        let h = self.height;
        let sc = &mut self.sweep;
        if sc.skip > 0 && sc.skip_size == (pw, h) {
            sc.skip -= 1;
            return false;
        }
        sc.prices = Prices {
            straight: model.straight(),
            diagonal: model.diagonal(),
        };
        sc.straight_table.clear();
        sc.straight_table
            .extend((0..=255u8).map(|t| price(t, model.straight())));
        let rows = h + 2;
        for dir in &mut sc.need {
            dir.clear();
            dir.resize(rows, EMPTY);
        }
        sc.candidates.clear();
        sc.candidates.resize(pw, INF);
        let dist = &mut self.dist;
        dist.fill(INF);
        for &(v, c) in seeds {
            let c = c as usize;
            dist[c] = dist[c].min(v.min(INF));
        }
        for &(_, c) in seeds {
            let (y, x) = (c as usize / pw, (c as usize % pw) as u32);
            let row = &mut dist[y * pw..(y + 1) * pw];
            let span = scan(row, &self.costs[y * pw..(y + 1) * pw], sc.table(), x, x);
            spread(sc, y, h, span);
        }
        sc.cursor = SweepCursor {
            budget: MAX_WORK * dist.len() as u64,
            ..SweepCursor::default()
        };
        true
    }

    /// Sweep rows until the field is final or about `budget` cells were visited.
    pub(crate) fn sweep_run(&mut self, budget: usize, model: CostModel) -> SweepOutcome {
        let pw = self.padded_width;
        let h = self.height;
        let sc = &mut self.sweep;
        let dist = &mut self.dist[..];
        let costs = &self.costs[..];
        let stop_at = sc.cursor.work.saturating_add(budget as u64);
        #[cfg(feature = "parallel")]
        {
            // A one-shot build of a large map: bands of rows on rayon's threads.
            let fresh = sc.cursor.work == 0 && sc.cursor.k == 0 && sc.cursor.dir == 0;
            let threads = rayon::current_num_threads();
            if budget == usize::MAX && fresh && threads >= 2 && h >= 256 && pw * h >= 1 << 18 {
                if !parallel_rounds(dist, costs, sc, pw, h, threads) {
                    sc.skip = RETRY_AFTER;
                    sc.skip_size = (pw, h);
                    return SweepOutcome::HandOver;
                }
                return finish(dist, model);
            }
        }
        loop {
            while sc.cursor.k < h {
                if sc.cursor.work >= stop_at {
                    return SweepOutcome::Running;
                }
                let k = sc.cursor.k;
                sc.cursor.k += 1;
                let (changed, work) = sweep_row(dist, costs, sc, pw, h, sc.cursor.dir == 1, k);
                sc.cursor.changed += changed as usize;
                sc.cursor.work += work;
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
                sc.skip = RETRY_AFTER;
                sc.skip_size = (pw, h);
                return SweepOutcome::HandOver;
            }
        }
        finish(dist, model)
    }
}

/// Back to the builder's conventions, checking the range the sweeps can represent.
fn finish(dist: &mut [u32], model: CostModel) -> SweepOutcome {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), the only requirement of a
            // `#[target_feature(enable = "avx2")]` function; the function itself is safe code.
            return unsafe { finish_avx2(dist, model) };
        }
    }
    finish_plain(dist, model)
}

/// [`finish_plain`] compiled for AVX2, which has the 32-bit unsigned maximum that the
/// baseline's SSE2 lacks (so there the loop stays one cell at a time).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn finish_avx2(dist: &mut [u32], model: CostModel) -> SweepOutcome {
    finish_plain(dist, model)
}

#[inline(always)]
fn finish_plain(dist: &mut [u32], model: CostModel) -> SweepOutcome {
    let limit = INF - 1 - model.diagonal() * WALL as u32;
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
    for (l, v) in chunks.into_remainder().iter_mut().enumerate() {
        let finite = *v < INF;
        counts[l] += finite as u32;
        tops[l] = tops[l].max(if finite { *v } else { 0 });
        *v = if finite { *v } else { UNREACHABLE };
    }
    let reachable = counts.iter().map(|&c| c as usize).sum::<usize>();
    let largest = tops.into_iter().max().unwrap_or(0);
    if largest > limit {
        return SweepOutcome::HandOver;
    }
    SweepOutcome::Done(reachable)
}

/// Rounds with the rows split into one band per thread, all bands swept at once. A band's first
/// row reads the neighbouring band's edge row as it was before the pass (a copy), so news cross
/// a band edge one pass later; the fixed point is the same. Returns false when the work passes
/// the budget (the map goes to the wave).
#[cfg(feature = "parallel")]
fn parallel_rounds(
    dist: &mut [u32],
    costs: &[u8],
    sc: &mut SweepScratch,
    pw: usize,
    h: usize,
    threads: usize,
) -> bool {
    use rayon::prelude::*;
    let bands = threads.min(h / 64).max(2);
    let rows_per = h.div_ceil(bands);
    let bands = h.div_ceil(rows_per);
    sc.snapshot.resize(bands * pw, INF);
    sc.band_candidates.resize_with(bands, Vec::new);
    for c in &mut sc.band_candidates {
        c.resize(pw, INF);
    }
    let prices = sc.prices;
    let table: [u32; 256] = *sc.table();
    let table = &table;
    let mut work = 0u64;
    loop {
        let mut changed = 0usize;
        for upward in [false, true] {
            // Each band's first row (in the pass's order) reads a copy of the row beyond it.
            for k in 0..bands {
                let (a, b) = (1 + k * rows_per, ((k + 1) * rows_per).min(h));
                let pred = if upward { b + 1 } else { a - 1 };
                sc.snapshot[k * pw..(k + 1) * pw]
                    .copy_from_slice(&dist[pred * pw..(pred + 1) * pw]);
            }
            let [need_down, need_up] = &mut sc.need;
            let results: Vec<BandResult> = dist[pw..(h + 1) * pw]
                .par_chunks_mut(rows_per * pw)
                .zip(need_down[1..=h].par_chunks_mut(rows_per))
                .zip(need_up[1..=h].par_chunks_mut(rows_per))
                .zip(sc.band_candidates.par_iter_mut())
                .zip(sc.snapshot.par_chunks(pw))
                .enumerate()
                .map(|(k, ((((rows, need_down), need_up), cand), snap))| {
                    sweep_band(
                        rows,
                        costs,
                        [need_down, need_up],
                        cand,
                        snap,
                        Band {
                            first: 1 + k * rows_per,
                            pw,
                            h,
                            upward,
                            prices,
                            table,
                        },
                    )
                })
                .collect();
            for r in results {
                changed += r.changed;
                work += r.work;
                for &(row, dir, span) in r.outgoing.iter().flatten() {
                    sc.need[dir][row].add(span.lo, span.hi);
                }
            }
        }
        if changed == 0 {
            return true;
        }
        if work > sc.cursor.budget {
            return false;
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
    h: usize,
    upward: bool,
    prices: Prices,
    table: &'a [u32; 256],
}

/// What a band's pass did: rows changed, columns swept, and needs for rows of other bands.
#[cfg(feature = "parallel")]
struct BandResult {
    changed: usize,
    work: u64,
    outgoing: [Option<(usize, usize, Span)>; 2],
}

/// One pass over one band's rows (`rows` holds them, `need` their spans per direction).
#[cfg(feature = "parallel")]
fn sweep_band(
    rows: &mut [u32],
    costs: &[u8],
    need: [&mut [Span]; 2],
    cand: &mut [u32],
    snapshot: &[u32],
    band: Band,
) -> BandResult {
    let Band {
        first,
        pw,
        h,
        upward,
        prices,
        table,
    } = band;
    let n = rows.len() / pw;
    let last = first + n - 1;
    let dir = upward as usize;
    let [need_down, need_up] = need;
    let mut out = BandResult {
        changed: 0,
        work: 0,
        outgoing: [None, None],
    };
    for k in 0..n {
        let local = if upward { n - 1 - k } else { k };
        let y = first + local;
        let slot = if dir == 0 {
            &mut need_down[local]
        } else {
            &mut need_up[local]
        };
        let want = std::mem::replace(slot, EMPTY);
        if want.lo > want.hi {
            out.work += 1;
            continue;
        }
        let lo = want.lo.max(1) as usize;
        let hi = want.hi.min(pw as u32 - 2) as usize;
        let r = y * pw;
        let p = if upward { r + pw } else { r - pw };
        // The band's first row reads the copy of the row beyond the band's edge.
        let (cur, prev) = if k == 0 {
            (&mut rows[local * pw..(local + 1) * pw], snapshot)
        } else {
            let pred_local = if upward { local + 1 } else { local - 1 };
            rows_mut(rows, local, pred_local, pw)
        };
        let span = row_pass(
            cur,
            prev,
            &costs[r..r + pw],
            &costs[p..p + pw],
            prices,
            table,
            cand,
            lo,
            hi,
        );
        out.work += (hi + 1 - lo) as u64;
        if span.lo > span.hi {
            continue;
        }
        out.changed += 1;
        let (slo, shi) = (span.lo - 1, span.hi + 1);
        // The row below must look here on the next top-down pass, the row above on the next
        // bottom-up one; rows beyond the band's edges are told after the pass.
        if y < last {
            need_down[local + 1].add(slo, shi);
        } else if y < h {
            out.outgoing[0] = Some((y + 1, 0, Span { lo: slo, hi: shi }));
        }
        if y > first {
            need_up[local - 1].add(slo, shi);
        } else if y > 1 {
            out.outgoing[1] = Some((y - 1, 1, Span { lo: slo, hi: shi }));
        }
    }
    out
}

/// Row `y` changed in columns `span`: the rows above and below must look there.
fn spread(sc: &mut SweepScratch, y: usize, h: usize, span: Span) {
    if span.lo > span.hi {
        return;
    }
    if y < h {
        sc.need[0][y + 1].add(span.lo - 1, span.hi + 1);
    }
    if y > 1 {
        sc.need[1][y - 1].add(span.lo - 1, span.hi + 1);
    }
}

/// Row `k` of a pass (top-down, or bottom-up): returns whether it changed, and the columns
/// swept.
fn sweep_row(
    dist: &mut [u32],
    costs: &[u8],
    sc: &mut SweepScratch,
    pw: usize,
    h: usize,
    upward: bool,
    k: usize,
) -> (bool, u64) {
    let dir = upward as usize;
    let y = if upward { h - k } else { k + 1 };
    let pred = if upward { y + 1 } else { y - 1 };
    let need = std::mem::replace(&mut sc.need[dir][y], EMPTY);
    if need.lo > need.hi {
        return (false, 1);
    }
    let lo = need.lo.max(1) as usize;
    let hi = need.hi.min(pw as u32 - 2) as usize;
    let (cur, prev) = rows_mut(dist, y, pred, pw);
    let r = y * pw;
    let p = pred * pw;
    let table: &[u32; 256] = sc.straight_table[..]
        .try_into()
        .expect("a price per terrain value");
    let span = row_pass(
        cur,
        prev,
        &costs[r..r + pw],
        &costs[p..p + pw],
        sc.prices,
        table,
        &mut sc.candidates,
        lo,
        hi,
    );
    let changed = span.lo <= span.hi;
    if changed {
        spread(sc, y, h, span);
    }
    (changed, (hi + 1 - lo) as u64)
}

/// The row `y` mutably and the row `pred` (y ± 1) shared.
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
/// the row from the cells that improved. Returns the columns that changed.
#[allow(clippy::too_many_arguments)]
#[inline]
fn row_pass(
    cur: &mut [u32],
    prev: &[u32],
    terrain: &[u8],
    prev_terrain: &[u8],
    prices: Prices,
    table: &[u32; 256],
    cand: &mut [u32],
    lo: usize,
    hi: usize,
) -> Span {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), the only requirement of a
            // `#[target_feature(enable = "avx2")]` function; the function itself is safe code.
            return unsafe {
                row_pass_avx2(cur, prev, terrain, prev_terrain, prices, table, lo, hi)
            };
        }
    }
    candidates(prev, terrain, prev_terrain, prices, cand, lo, hi);
    settle(cur, terrain, table, cand, lo, hi)
}

/// [`row_pass`] for AVX2: the offers from the row before are taken into the row in the same
/// pass that makes them (no candidate row to write and read again), then the vector scans.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
fn row_pass_avx2(
    cur: &mut [u32],
    prev: &[u32],
    terrain: &[u8],
    prev_terrain: &[u8],
    prices: Prices,
    table: &[u32; 256],
    lo: usize,
    hi: usize,
) -> Span {
    match offer(prev, terrain, prev_terrain, prices, cur, lo, hi) {
        None => EMPTY,
        Some((first, last)) => scan_avx2(cur, terrain, table, first as u32, last as u32),
    }
}

/// Take the offers of the row before into `cur[lo..=hi]` and return the first and last columns
/// that improved. Lane-wide operations only (the compiler vectorises it where AVX2 gives it a
/// 32-bit unsigned minimum and maximum).
#[inline(always)]
fn offer(
    prev: &[u32],
    terrain: &[u8],
    prev_terrain: &[u8],
    prices: Prices,
    cur: &mut [u32],
    lo: usize,
    hi: usize,
) -> Option<(usize, usize)> {
    let n = hi + 1 - lo;
    let above = Above::new(prev, terrain, prev_terrain, lo, n);
    let row = &mut cur[lo..][..n];
    let (mut first, mut last) = (u32::MAX, 0u32);
    // An index over slices that all have n cells: the compiler drops the bounds checks.
    #[allow(clippy::needless_range_loop)]
    for i in 0..n {
        let c = above.offer(i, prices);
        let better = c < row[i];
        row[i] = if better { c } else { row[i] };
        first = first.min(if better { i as u32 } else { u32::MAX });
        last = last.max(if better { i as u32 } else { 0 });
    }
    (first != u32::MAX).then(|| (lo + first as usize, lo + last as usize))
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

/// [`scan`] with the stretches it runs without branches done eight cells at a time: the same
/// values, bit for bit. Along a row, `out[x] = min(cur[x], out[x - 1] + price[x])` is a chain
/// of two dependent operations per cell; as a min-plus prefix scan (Hillis-Steele, three
/// steps of lane shifts) the chain runs once per eight cells. Prices of walls count as `INF`
/// here instead of `WALL_STEP` (either way nothing improves through a wall), and sums of prices
/// stop at `INF`, so no sum overflows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scan_avx2(cur: &mut [u32], terrain: &[u8], straight: &[u32; 256], lo: u32, hi: u32) -> Span {
    use std::arch::x86_64::{_mm256_cvtsi256_si32, _mm256_set1_epi32};
    let (lo, hi) = (lo as usize, hi as usize);
    let base = straight[1];
    let mut carry = cur[lo];
    let mut x = lo + 1;
    if x + LANES <= hi + 1 {
        // The carry stays in a register, in every lane, from one step to the next.
        let mut lanes = _mm256_set1_epi32(carry as i32);
        while x + LANES <= hi + 1 {
            lanes = scan_lanes::<false>(cur, terrain, base, x, lanes);
            x += LANES;
        }
        carry = _mm256_cvtsi256_si32(lanes) as u32;
    }
    while x <= hi {
        carry = cur[x].min(carry + straight[terrain[x] as usize]);
        cur[x] = carry;
        x += 1;
    }
    let right = improve_right(cur, terrain, straight, hi, carry);
    let mut carry = cur[right];
    // Cells right - 1 down to lo, eight at a time: lanes hold x, x - 1, ..., x - 7.
    let mut x = right;
    if x >= lo + LANES {
        let mut lanes = _mm256_set1_epi32(carry as i32);
        while x >= lo + LANES {
            lanes = scan_lanes::<true>(cur, terrain, base, x - LANES, lanes);
            x -= LANES;
        }
        carry = _mm256_cvtsi256_si32(lanes) as u32;
    }
    while x > lo {
        x -= 1;
        carry = cur[x].min(carry + straight[terrain[x] as usize]);
        cur[x] = carry;
    }
    Span {
        lo: improve_left(cur, terrain, straight, lo, carry) as u32,
        hi: right as u32,
    }
}

/// Cells of the AVX2 scans.
#[cfg(target_arch = "x86_64")]
const LANES: usize = 8;

/// One step of [`scan_avx2`] over cells `at..at + 8`, from `carry`, the value of the cell
/// before them in the scan's direction (`at - 1` forwards; `at + 8` when `BACKWARDS`, where
/// the lanes hold the cells in reverse), in every lane. Returns the last cell's new value, in
/// every lane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn scan_lanes<const BACKWARDS: bool>(
    cur: &mut [u32],
    terrain: &[u8],
    base: u32,
    at: usize,
    carry: std::arch::x86_64::__m256i,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    let row: &mut [u32; LANES] = (&mut cur[at..at + LANES]).try_into().expect("8 cells");
    let steps: &[u8; LANES] = terrain[at..at + LANES].try_into().expect("8 cells");
    let inf = _mm256_set1_epi32(INF as i32);
    let zero = _mm256_setzero_si256();
    let reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    // SAFETY: the loads read 8 u32 and 8 bytes from arrays of that size (checked above).
    let (mut v, t) = unsafe {
        (
            _mm256_loadu_si256(row.as_ptr().cast()),
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(steps.as_ptr().cast())),
        )
    };
    let mut w = _mm256_mullo_epi32(t, _mm256_set1_epi32(base as i32));
    w = _mm256_blendv_epi8(
        w,
        inf,
        _mm256_cmpeq_epi32(t, _mm256_set1_epi32(WALL as i32)),
    );
    if BACKWARDS {
        v = _mm256_permutevar8x32_epi32(v, reverse);
        w = _mm256_permutevar8x32_epi32(w, reverse);
    }
    // Each lane becomes the best over the lanes before it (min-plus), and w the summed price.
    let shift1 = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
    let v1 = _mm256_blend_epi32::<0b0000_0001>(_mm256_permutevar8x32_epi32(v, shift1), inf);
    let w1 = _mm256_blend_epi32::<0b0000_0001>(_mm256_permutevar8x32_epi32(w, shift1), zero);
    v = _mm256_min_epu32(v, _mm256_add_epi32(v1, w));
    w = _mm256_min_epu32(_mm256_add_epi32(w, w1), inf);
    let shift2 = _mm256_setr_epi32(0, 0, 0, 1, 2, 3, 4, 5);
    let v2 = _mm256_blend_epi32::<0b0000_0011>(_mm256_permutevar8x32_epi32(v, shift2), inf);
    let w2 = _mm256_blend_epi32::<0b0000_0011>(_mm256_permutevar8x32_epi32(w, shift2), zero);
    v = _mm256_min_epu32(v, _mm256_add_epi32(v2, w));
    w = _mm256_min_epu32(_mm256_add_epi32(w, w2), inf);
    let shift4 = _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 2, 3);
    let v4 = _mm256_blend_epi32::<0b0000_1111>(_mm256_permutevar8x32_epi32(v, shift4), inf);
    let w4 = _mm256_blend_epi32::<0b0000_1111>(_mm256_permutevar8x32_epi32(w, shift4), zero);
    v = _mm256_min_epu32(v, _mm256_add_epi32(v4, w));
    w = _mm256_min_epu32(_mm256_add_epi32(w, w4), inf);
    let mut out = _mm256_min_epu32(v, _mm256_add_epi32(carry, w));
    let last = _mm256_permutevar8x32_epi32(out, _mm256_set1_epi32(7));
    if BACKWARDS {
        out = _mm256_permutevar8x32_epi32(out, reverse);
    }
    // SAFETY: the store writes 8 u32 into an array of that size.
    unsafe { _mm256_storeu_si256(row.as_mut_ptr().cast(), out) };
    last
}

#[cfg(test)]
mod tests {
    use super::*;

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
    };

    #[test]
    fn vectorised_and_plain_row_passes_agree() {
        for seed in 0..600 {
            let n = 3 + seed as usize * 7 % 300;
            let (prev, terrain, prev_terrain) = random_rows(seed, n);
            let mut cand = vec![INF; n];
            candidates(&prev, &terrain, &prev_terrain, PRICES, &mut cand, 1, n - 2);
            // Walls never get a value below INF, whatever their neighbours hold.
            for x in 1..n - 1 {
                if terrain[x] == WALL {
                    assert!(cand[x] >= INF);
                }
            }
            // A row to improve: as the builder keeps it (walls at INF), with some values in.
            let (mut row, _, _) = random_rows(seed + 1000, n);
            for x in 0..n {
                if terrain[x] == WALL || seed % 3 == 0 {
                    row[x] = INF;
                }
            }
            let table: [u32; 256] = std::array::from_fn(|t| price(t as u8, PRICES.straight));
            let (lo, hi) = (1 + seed as usize % (n - 2), n - 2);
            let mut plain = row.clone();
            candidates(&prev, &terrain, &prev_terrain, PRICES, &mut cand, lo, hi);
            let a = settle(&mut plain, &terrain, &table, &cand, lo, hi);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                let mut wide = row.clone();
                // SAFETY: AVX2 is present (checked above).
                let b = unsafe {
                    row_pass_avx2(
                        &mut wide,
                        &prev,
                        &terrain,
                        &prev_terrain,
                        PRICES,
                        &table,
                        lo,
                        hi,
                    )
                };
                assert_eq!(plain, wide, "seed {seed}");
                assert_eq!((a.lo, a.hi), (b.lo, b.hi), "seed {seed}");
            }
        }
    }

    #[test]
    fn vectorised_and_plain_finish_agree() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            for seed in 0..300u64 {
                let n = 1 + seed as usize * 37 % 500;
                let (mut dist, _, _) = random_rows(seed, n.max(3));
                if seed % 10 == 0 {
                    dist[seed as usize % n] = INF - 2; // past the representable range
                }
                let mut wide = dist.clone();
                let plain = finish_plain(&mut dist, CostModel::TenFourteen);
                // SAFETY: AVX2 is present (checked above).
                let vector = unsafe { finish_avx2(&mut wide, CostModel::TenFourteen) };
                assert_eq!(dist, wide, "seed {seed}");
                assert_eq!(plain, vector, "seed {seed}");
            }
        }
    }

    #[test]
    fn vectorised_and_plain_scans_agree() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            for seed in 0..3000u64 {
                let n = 3 + seed as usize * 7 % 120;
                let (mut row, terrain, _) = random_rows(seed, n);
                // Rows with walls held at INF (as the builder keeps them), and in both models.
                for x in 0..n {
                    if terrain[x] == WALL {
                        row[x] = INF;
                    }
                }
                let base = if seed % 2 == 0 { 10 } else { 13_860 };
                let table: [u32; 256] = std::array::from_fn(|t| price(t as u8, base));
                let lo = 1 + (seed as usize * 5) % (n - 2);
                let hi = (lo + (seed as usize * 11) % (n - 1 - lo)).min(n - 2);
                let (mut plain, mut wide) = (row.clone(), row);
                let a = scan(&mut plain, &terrain, &table, lo as u32, hi as u32);
                // SAFETY: AVX2 is present (checked above).
                let b = unsafe { scan_avx2(&mut wide, &terrain, &table, lo as u32, hi as u32) };
                assert_eq!(plain, wide, "seed {seed}, n {n}, span {lo}..={hi}");
                assert_eq!((a.lo, a.hi), (b.lo, b.hi), "seed {seed}");
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
