//! The integration field by row sweeps: repeated top-down and bottom-up passes over the rows, each
//! row first taking the best of its three neighbours in the row before it (no dependency between
//! cells: the compiler vectorises it) and then two scans along the row, until a whole round
//! changes nothing. Values only ever decrease and are always costs of real paths, so the fixed
//! point is the shortest-path field — the same values the Dijkstra wave finds, and the same flow.
//!
//! On open maps a few rounds reach the fixed point, and rows that did not change since they were
//! last swept (and whose neighbour row did not either) are skipped, so this costs a few
//! streaming passes instead of a priority queue's random accesses. Maps where shortest paths
//! wind back and forth (mazes, rooms with doors) need many rounds: after the first rounds the
//! builder measures how much is still changing and hands such maps to the wave instead.

use super::{IntegrationBuilder, UNREACHABLE, WaveStats};
use crate::cost::{CostField, CostModel, WALL};

/// "No value yet" during the sweeps: any real value + any step stays below 2³².
const INF: u32 = (1 << 31) - 1;
/// The step price of a wall: a wall's candidates all exceed `INF`, so it keeps `INF`.
const WALL_STEP: u32 = 1 << 31;
/// Rounds after which a map still changing a lot goes to the wave.
const PROBE_ROUNDS: usize = 3;
/// Hard cap on rounds.
const MAX_ROUNDS: usize = 24;

/// Per-build scratch of the sweeps (8 bytes per padded cell: the straight and diagonal step
/// prices of each cell, walls marked) and per-row bookkeeping.
#[derive(Debug, Default, Clone)]
pub(crate) struct SweepScratch {
    straight: Vec<u32>,
    diagonal: Vec<u32>,
    /// Time (row-pass counter) each row last changed.
    changed_at: Vec<u64>,
    /// Time each row was last swept, per direction (0 top-down, 1 bottom-up).
    swept_at: [Vec<u64>; 2],
}

/// What one round found.
struct Round {
    changed_cells: u64,
}

impl IntegrationBuilder {
    /// Try the sweeps for `goals` (all on walkable cells of `cost`). On success the padded
    /// `dist` holds the finished field (walls and unreachable cells `UNREACHABLE`) and the
    /// number of reachable cells is returned; `None` means the map was handed back (too winding,
    /// or values too large for the sweep's range) and the wave must build it.
    pub(crate) fn try_sweep(
        &mut self,
        cost: &CostField,
        goals: &[(u32, u32)],
        model: CostModel,
    ) -> Option<WaveStats> {
        self.prepare(cost, model);
        let pw = self.padded_width;
        let h = self.height;
        let (s, g) = (model.straight(), model.diagonal());
        let sc = &mut self.sweep;
        sc.straight.clear();
        sc.straight.extend(self.costs.iter().map(|&t| {
            if t == WALL {
                WALL_STEP
            } else {
                s * t as u32
            }
        }));
        sc.diagonal.clear();
        sc.diagonal.extend(self.costs.iter().map(|&t| {
            if t == WALL {
                WALL_STEP
            } else {
                g * t as u32
            }
        }));
        let rows = h + 2;
        sc.changed_at.clear();
        sc.changed_at.resize(rows, 0);
        for dir in &mut sc.swept_at {
            dir.clear();
            dir.resize(rows, 0);
        }
        let dist = &mut self.dist;
        dist.fill(INF);
        for &(_, c) in goals {
            dist[c as usize] = 0;
            sc.changed_at[c as usize / pw] = 1;
        }
        let mut time = 2u64;
        let mut first = 0u64;
        let mut rounds = 0;
        loop {
            rounds += 1;
            let down = sweep_rows(dist, sc, pw, h, false, &mut time);
            let up = sweep_rows(dist, sc, pw, h, true, &mut time);
            let changed = down.changed_cells + up.changed_cells;
            if std::env::var_os("HORDE_SWEEP_DEBUG").is_some() {
                eprintln!("round {rounds}: changed {changed}");
            }
            if changed == 0 {
                break;
            }
            if rounds == 1 {
                first = changed;
            }
            // A map whose later rounds still rewrite a large share of what the first round
            // found is winding: the wave is cheaper there.
            if (rounds >= PROBE_ROUNDS && changed * 8 > first) || rounds >= MAX_ROUNDS {
                return None;
            }
        }
        // Back to the builder's conventions, checking the range the sweeps can represent.
        let limit = INF - 1 - model.diagonal() * WALL as u32;
        let mut reachable = 0usize;
        for v in dist.iter_mut() {
            if *v >= INF {
                *v = UNREACHABLE;
            } else if *v > limit {
                return None;
            } else {
                reachable += 1;
            }
        }
        Some(WaveStats { settled: reachable })
    }
}

/// One pass over all rows (top-down, or bottom-up), skipping rows with nothing new.
fn sweep_rows(
    dist: &mut [u32],
    sc: &mut SweepScratch,
    pw: usize,
    h: usize,
    upward: bool,
    time: &mut u64,
) -> Round {
    let dir = upward as usize;
    let mut changed_cells = 0;
    for k in 0..h {
        let y = if upward { h - k } else { k + 1 };
        let pred = if upward { y + 1 } else { y - 1 };
        let last = sc.swept_at[dir][y];
        if sc.changed_at[y] <= last && sc.changed_at[pred] <= last {
            continue;
        }
        *time += 1;
        sc.swept_at[dir][y] = *time;
        let (cur, prev) = rows_mut(dist, y, pred, pw);
        let r = y * pw..(y + 1) * pw;
        let p = pred * pw..(pred + 1) * pw;
        let n = row_pass(
            cur,
            prev,
            &sc.straight[r.clone()],
            &sc.straight[p],
            &sc.diagonal[r],
        );
        if n > 0 {
            sc.changed_at[y] = *time;
            changed_cells += n;
        }
    }
    Round { changed_cells }
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

/// One row: the three neighbours in the row before, then both scans along the row. Returns the
/// number of cells that improved.
#[inline]
fn row_pass(cur: &mut [u32], prev: &[u32], st: &[u32], pst: &[u32], dg: &[u32]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), the only requirement of a
            // `#[target_feature(enable = "avx2")]` function; the function itself is safe code.
            return unsafe { row_pass_avx2(cur, prev, st, pst, dg) };
        }
    }
    row_pass_generic(cur, prev, st, pst, dg)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn row_pass_avx2(cur: &mut [u32], prev: &[u32], st: &[u32], pst: &[u32], dg: &[u32]) -> u64 {
    row_pass_generic(cur, prev, st, pst, dg)
}

#[inline(always)]
fn row_pass_generic(cur: &mut [u32], prev: &[u32], st: &[u32], pst: &[u32], dg: &[u32]) -> u64 {
    let pw = cur.len();
    let (prev, st, pst, dg) = (&prev[..pw], &st[..pw], &pst[..pw], &dg[..pw]);
    let mut improved = 0u32;
    // From the row before: no dependency between the cells of this row. A diagonal needs both
    // cells it passes between to be walkable (the corner rule); a wall's step price marks it.
    for x in 1..pw - 1 {
        let n_ok = pst[x] != WALL_STEP;
        let w_ok = st[x - 1] != WALL_STEP;
        let e_ok = st[x + 1] != WALL_STEP;
        let a = prev[x] + st[x];
        let b = if n_ok & w_ok { prev[x - 1] + dg[x] } else { INF };
        let c = if n_ok & e_ok { prev[x + 1] + dg[x] } else { INF };
        let old = cur[x];
        let new = old.min(a.min(b).min(c));
        improved += (new != old) as u32;
        cur[x] = new;
    }
    // Along the row, both ways. The borders hold INF.
    let mut carry = cur[0];
    for x in 1..pw - 1 {
        let old = cur[x];
        let new = old.min(carry + st[x]);
        improved += (new != old) as u32;
        cur[x] = new;
        carry = new;
    }
    let mut carry = cur[pw - 1];
    for x in (1..pw - 1).rev() {
        let old = cur[x];
        let new = old.min(carry + st[x]);
        improved += (new != old) as u32;
        cur[x] = new;
        carry = new;
    }
    improved as u64
}
