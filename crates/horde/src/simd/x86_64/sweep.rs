//! The integration sweeps' row passes for AVX2 and AVX-512, and the end of a build (whole map
//! or footprint blocks) for AVX2.

use std::arch::x86_64::*;

use crate::cost::{CostModel, WALL};
use crate::integration::sweep::{
    EMPTY, INF, Marked, Prices, RowPassArgs, Scanned, SweepOutcome, SweepScratch, SweptMap,
    finish_lanes, for_marked, last_block, leftwards_tail, mark_cells, mark_columns,
    rightwards_tail, run_of_a_block, sweep_rows,
};
#[cfg(any(feature = "parallel", test))]
use crate::integration::sweep::{Rows, Span};
use crate::integration::{TOUCHED_BLOCK, UNREACHABLE};
use crate::simd::{Avx2, Avx512};

impl Avx2 {
    /// The rest of a pass of the sweeps ([`sweep_rows`]) with [`row_pass_avx2`]'s body inlined.
    #[inline]
    pub(crate) fn sweep_rows(
        self,
        rows: SweptMap,
        sc: &mut SweepScratch,
        pw: usize,
        h: usize,
        stop_at: u64,
    ) -> bool {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { sweep_rows_avx2(rows, sc, pw, h, stop_at) }
    }

    /// The row pass over columns `lo..=hi`, eight cells at a time ([`row_pass_avx2`]): the
    /// parallel bands' (a pass of one thread runs [`sweep_rows`]).
    #[cfg(any(feature = "parallel", test))]
    #[inline]
    pub(crate) fn row_pass(
        self,
        (cur, prev, terrain, prev_terrain): Rows,
        prices: Prices,
        table: &[u32; 256],
        marks: Marked,
        lo: usize,
        hi: usize,
    ) -> Span {
        let pass = if prices.plain {
            row_pass_avx2::<true>
        } else {
            row_pass_avx2::<false>
        };
        // SAFETY: an `Avx2` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe {
            pass(
                cur,
                prev,
                terrain,
                prev_terrain,
                prices,
                table,
                marks,
                lo,
                hi,
            )
        }
    }

    /// The end of a build (`finish_plain`) compiled for AVX2, which has the 32-bit unsigned
    /// maximum that the baseline's SSE2 lacks (so there the loop stays one cell at a time).
    #[inline]
    pub(crate) fn finish(self, dist: &mut [u32], model: CostModel) -> SweepOutcome {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { finish_avx2(dist, model) }
    }

    /// [`finish_blocks_plain`](crate::integration::sweep::finish_blocks_plain): a block of
    /// sixteen cells in two registers, the counts and maxima kept in registers across blocks
    /// (the plain loop keeps its sixteen lanes in memory from block to block).
    #[inline]
    pub(crate) fn finish_blocks(
        self,
        dist: &mut [u32],
        blocks: &[u64],
        model: CostModel,
    ) -> SweepOutcome {
        // SAFETY: as above.
        unsafe { finish_blocks_avx2(dist, blocks, model) }
    }
}

impl Avx512 {
    /// Cells of a block of the row pass: runs shorter than this grow to one block (see
    /// [`run_of_a_block`]).
    pub(crate) const ROW_BLOCK: usize = 16;

    /// The rest of a pass of the sweeps ([`sweep_rows`]) with [`row_pass_avx512`]'s body
    /// inlined.
    #[inline]
    pub(crate) fn sweep_rows(
        self,
        rows: SweptMap,
        sc: &mut SweepScratch,
        pw: usize,
        h: usize,
        stop_at: u64,
    ) -> bool {
        // SAFETY: an `Avx512` exists only where the CPU has AVX-512 F, BW and VL, the kernel's
        // only requirement.
        unsafe { sweep_rows_avx512(rows, sc, pw, h, stop_at) }
    }

    /// The row pass over columns `lo..=hi`, sixteen cells at a time ([`row_pass_avx512`]): the
    /// parallel bands' (a pass of one thread runs [`sweep_rows`]).
    #[cfg(any(feature = "parallel", test))]
    #[inline]
    pub(crate) fn row_pass(
        self,
        (cur, prev, terrain, prev_terrain): Rows,
        prices: Prices,
        table: &[u32; 256],
        marks: Marked,
        lo: usize,
        hi: usize,
    ) -> Span {
        let pass = if prices.plain {
            row_pass_avx512::<true>
        } else {
            row_pass_avx512::<false>
        };
        // SAFETY: an `Avx512` exists only where the CPU has AVX-512 F, BW and VL, the kernel's
        // only requirement.
        unsafe {
            pass(
                cur,
                prev,
                terrain,
                prev_terrain,
                prices,
                table,
                marks,
                lo,
                hi,
            )
        }
    }
}

/// `finish_plain` eight cells at a time. Every cell is stored back, changed or not: left to
/// itself the compiler stores only the unreached cells, with a masked store that AMD's cores run
/// in microcode (on brc202d that made this pass a third of the whole build).
impl Avx512 {
    /// The end of a build (`finish_plain`), sixteen cells at a time ([`finish_avx512`]).
    #[inline]
    pub(crate) fn finish(self, dist: &mut [u32], model: CostModel) -> SweepOutcome {
        // SAFETY: an `Avx512` exists only where the CPU has AVX-512 F, BW and VL, the kernel's
        // only requirement.
        unsafe { finish_avx512(dist, model) }
    }

    /// `cells.fill(v)` in 64-byte stores.
    #[inline]
    pub(crate) fn fill(self, cells: &mut [u32], v: u32) {
        // SAFETY: as above.
        unsafe { fill_avx512(cells, v) }
    }

    /// [`finish_blocks_plain`]: a block of sixteen cells in a register.
    #[inline]
    pub(crate) fn finish_blocks(
        self,
        dist: &mut [u32],
        blocks: &[u64],
        model: CostModel,
    ) -> SweepOutcome {
        // SAFETY: as above.
        unsafe { finish_blocks_avx512(dist, blocks, model) }
    }

    /// [`fill_blocks`](crate::integration::sweep::fill_blocks): a 64-byte store a block.
    #[inline]
    pub(crate) fn fill_blocks(self, dist: &mut [u32], blocks: &[u64], v: u32) {
        // SAFETY: as above.
        unsafe { fill_blocks_avx512(dist, blocks, v) }
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn finish_blocks_avx512(dist: &mut [u32], blocks: &[u64], model: CostModel) -> SweepOutcome {
    const WIDE: usize = TOUCHED_BLOCK;
    let mut tally = Tally::new();
    let (whole, n) = (dist.len() / WIDE, dist.len());
    for_marked(blocks, |b| {
        if b < whole {
            let block = (&mut dist[b * WIDE..(b + 1) * WIDE]).try_into();
            tally.finish(block.expect("16 cells"));
        }
    });
    tally.end(last_block(dist, blocks, whole, n), model)
}

/// The end pass's lane-wise counts of reached cells and their largest values, sixteen cells at
/// a time.
struct Tally {
    counts: __m512i,
    tops: __m512i,
}

impl Tally {
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    #[inline]
    fn new() -> Tally {
        Tally {
            counts: _mm512_setzero_si512(),
            tops: _mm512_setzero_si512(),
        }
    }

    /// Sixteen cells finished (INF to UNREACHABLE), counted and their largest value kept. Every
    /// cell is stored back: a store under a mask of the unreached cells only was slower on AMD's
    /// cores.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    #[inline]
    fn finish(&mut self, block: &mut [u32; 16]) {
        let inf = _mm512_set1_epi32(INF as i32);
        let none = _mm512_set1_epi32(UNREACHABLE as i32);
        let one = _mm512_set1_epi32(1);
        // SAFETY: the load and the store each cover the 16 u32 of `block`.
        unsafe {
            let v = _mm512_loadu_si512(block.as_ptr().cast());
            let finite = _mm512_cmplt_epu32_mask(v, inf);
            self.counts = _mm512_mask_add_epi32(self.counts, finite, self.counts, one);
            self.tops = _mm512_mask_max_epu32(self.tops, finite, self.tops, v);
            let out = _mm512_mask_mov_epi32(none, finite, v);
            _mm512_storeu_si512(block.as_mut_ptr().cast(), out);
        }
    }

    /// The lanes' totals, then the cells `rest` one at a time ([`finish_lanes`]).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    #[inline]
    fn end(self, rest: &mut [u32], model: CostModel) -> SweepOutcome {
        let (mut lane_counts, mut lane_tops) = ([0u32; 16], [0u32; 16]);
        // SAFETY: each store writes 16 u32 into an array of 16.
        unsafe {
            _mm512_storeu_si512(lane_counts.as_mut_ptr().cast(), self.counts);
            _mm512_storeu_si512(lane_tops.as_mut_ptr().cast(), self.tops);
        }
        finish_lanes(&lane_counts, &lane_tops, rest, model)
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn fill_blocks_avx512(dist: &mut [u32], blocks: &[u64], v: u32) {
    const WIDE: usize = TOUCHED_BLOCK;
    let lanes = _mm512_set1_epi32(v as i32);
    let (whole, n) = (dist.len() / WIDE, dist.len());
    for_marked(blocks, |b| {
        if b < whole {
            let block: &mut [u32; WIDE] = (&mut dist[b * WIDE..(b + 1) * WIDE])
                .try_into()
                .expect("16 cells");
            // SAFETY: the store writes the 16 u32 of `block`.
            unsafe { _mm512_storeu_si512(block.as_mut_ptr().cast(), lanes) };
        } else {
            dist[(b * WIDE).min(n)..].fill(v);
        }
    });
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn fill_avx512(cells: &mut [u32], v: u32) {
    let lanes = _mm512_set1_epi32(v as i32);
    let mut chunks = cells.chunks_exact_mut(16);
    for chunk in &mut chunks {
        // SAFETY: the store writes the 16 u32 of `chunk`.
        unsafe { _mm512_storeu_si512(chunk.as_mut_ptr().cast(), lanes) };
    }
    chunks.into_remainder().fill(v);
}

/// [`finish_avx2`] sixteen cells at a time.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn finish_avx512(dist: &mut [u32], model: CostModel) -> SweepOutcome {
    let mut tally = Tally::new();
    let (blocks, rest) = dist.as_chunks_mut::<16>();
    for block in blocks {
        tally.finish(block);
    }
    tally.end(rest, model)
}

#[target_feature(enable = "avx2")]
fn finish_avx2(dist: &mut [u32], model: CostModel) -> SweepOutcome {
    let mut tally = Tally8::new();
    let (chunks, rest) = dist.as_chunks_mut::<8>();
    for chunk in chunks {
        tally.finish(chunk);
    }
    tally.end(rest, model)
}

#[target_feature(enable = "avx2")]
fn finish_blocks_avx2(dist: &mut [u32], blocks: &[u64], model: CostModel) -> SweepOutcome {
    const WIDE: usize = TOUCHED_BLOCK;
    let mut tally = Tally8::new();
    let (whole, n) = (dist.len() / WIDE, dist.len());
    for_marked(blocks, |b| {
        if b < whole {
            let (halves, _) = dist[b * WIDE..(b + 1) * WIDE].as_chunks_mut::<8>();
            for half in halves {
                tally.finish(half);
            }
        }
    });
    tally.end(last_block(dist, blocks, whole, n), model)
}

/// [`Tally`] eight cells at a time, for AVX2.
pub(super) struct Tally8 {
    counts: __m256i,
    tops: __m256i,
}

impl Tally8 {
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn new() -> Tally8 {
        Tally8 {
            counts: _mm256_setzero_si256(),
            tops: _mm256_setzero_si256(),
        }
    }

    /// Eight cells finished (INF to UNREACHABLE), counted and their largest value kept; every
    /// cell is stored back (a masked store is microcode on AMD's cores).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn finish(&mut self, chunk: &mut [u32; 8]) {
        // SAFETY: the load and the store each cover the 8 u32 of `chunk`.
        unsafe {
            let v = _mm256_loadu_si256(chunk.as_ptr().cast());
            _mm256_storeu_si256(chunk.as_mut_ptr().cast(), self.finish_lanes(v));
        }
    }

    /// [`finish`](Self::finish) of eight cells in a register: counted, their largest value
    /// kept, and returned with INF turned into UNREACHABLE.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn finish_lanes(&mut self, v: __m256i) -> __m256i {
        let below_inf = _mm256_set1_epi32((INF - 1) as i32);
        let ones = _mm256_set1_epi32(-1);
        // All ones where the cell has a value (below INF, unsigned).
        let finite = _mm256_cmpeq_epi32(_mm256_min_epu32(v, below_inf), v);
        self.counts = _mm256_sub_epi32(self.counts, finite);
        self.tops = _mm256_max_epu32(self.tops, _mm256_and_si256(v, finite));
        // INF + 1 is 2^31, UNREACHABLE + 1 is 0 and a value + 1 is below 2^31: the sign of
        // v + 1 spread over the lane turns INF into UNREACHABLE. Written as arithmetic, not
        // as a choice between `v` and all ones, which the compiler turns into a masked store
        // of the changed lanes (`vpmaskmovd`, microcode on AMD's cores: 87 % of this pass).
        _mm256_or_si256(v, _mm256_srai_epi32::<31>(_mm256_sub_epi32(v, ones)))
    }

    /// The lanes' totals, then the cells `rest` one at a time ([`finish_lanes`]).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn end(self, rest: &mut [u32], model: CostModel) -> SweepOutcome {
        self.end_with((0, 0), rest, model)
    }

    /// [`end`](Self::end) with the count and largest value of cells finished one at a time
    /// elsewhere.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn end_with(
        self,
        (count, top): (u32, u32),
        rest: &mut [u32],
        model: CostModel,
    ) -> SweepOutcome {
        let (mut lane_counts, mut lane_tops) = ([0u32; 8], [0u32; 8]);
        // SAFETY: each store writes 8 u32 into an array of 8.
        unsafe {
            _mm256_storeu_si256(lane_counts.as_mut_ptr().cast(), self.counts);
            _mm256_storeu_si256(lane_tops.as_mut_ptr().cast(), self.tops);
        }
        lane_counts[0] += count;
        lane_tops[0] = lane_tops[0].max(top);
        finish_lanes(&lane_counts, &lane_tops, rest, model)
    }
}

/// Blocks of eight cells of an AVX2 row pass rightwards, for each of the even step widths `$n`
/// in turn (widths above two only where `$long`), that many a step while that many cells are
/// left in the run up to `$hi`: each block takes the offers of the row before; one
/// test of all of them for the scan along the row (all scanned in turn when any needs it, each
/// from the last cell of the one before) and one for a change. Part of [`row_pass_avx2_body`],
/// whose state (the last two groups) it carries on.
macro_rules! blocks_avx2 {
    ([$($n:literal),+], $long:ident, $x:ident, $hi:ident, $cur:ident, $prev:ident,
     $terrain:ident, $prev_terrain:ident, $marks:ident, $plain:expr,
     ($wall:ident, $straight:ident, $diagonal:ident, $from_left:ident,
      $last_lane:ident),
     ($carry:ident, $w_carry:ident, $leftwards:ident, $first:ident, $last:ident,
      $scanned:ident, $flags:ident, $lo:ident)) => {$({
        const N: usize = $n;
        const CELLS: usize = N * CELLS_PER_BLOCK;
        // More than two blocks a step only on long runs (see `LONG_RUN`).
        let wanted = N <= 2 || $long;
        while wanted && $x + CELLS <= $hi + 1 {
            let x = $x;
            let above: &[u32; CELLS + 2] = $prev[x - 1..x + CELLS + 1]
                .try_into()
                .expect("the cells and one either side");
            let here: &[u8; CELLS + 2] = $terrain[x - 1..x + CELLS + 1]
                .try_into()
                .expect("the cells and one either side");
            let up: &[u8; CELLS] = $prev_terrain[x..x + CELLS].try_into().expect("the cells");
            let row: &mut [u32; CELLS] = (&mut $cur[x..x + CELLS]).try_into().expect("the cells");
            // SAFETY: every load reads 8 u32 or 16 bytes within the arrays just cut to size, the
            // stores write 8 u32 each into `row`, which holds `CELLS`.
            let changed = unsafe {
                let zero = _mm256_setzero_si256();
                // Each block's values, values after the offers, and prices along the row.
                let (mut v, mut nv, mut w) = ([zero; N], [zero; N], [zero; N]);
                for pair in 0..N / 2 {
                    // The walls of two blocks, a byte each.
                    let at = pair * 2 * CELLS_PER_BLOCK;
                    let tl = _mm_loadu_si128(here.as_ptr().add(at).cast());
                    let tc = _mm_loadu_si128(here.as_ptr().add(at + 1).cast());
                    let tr = _mm_loadu_si128(here.as_ptr().add(at + 2).cast());
                    let tu = _mm_loadu_si128(up.as_ptr().add(at).cast());
                    let up_wall = _mm_cmpeq_epi8(tu, $wall);
                    let no_left = _mm_or_si128(_mm_cmpeq_epi8(tl, $wall), up_wall);
                    let no_right = _mm_or_si128(_mm_cmpeq_epi8(tr, $wall), up_wall);
                    let walls = _mm_cmpeq_epi8(tc, $wall);
                    for k in 0..2 {
                        let half = |m: __m128i| if k == 0 { m } else { _mm_srli_si128::<8>(m) };
                        let lanes = |m: __m128i| _mm256_cvtepi8_epi32(half(m));
                        let b = at + k * CELLS_PER_BLOCK;
                        let pl = _mm256_loadu_si256(above.as_ptr().add(b).cast());
                        let pc = _mm256_loadu_si256(above.as_ptr().add(b + 1).cast());
                        let pr = _mm256_loadu_si256(above.as_ptr().add(b + 2).cast());
                        let is_wall = lanes(walls);
                        let (s, g) = if $plain {
                            ($straight, $diagonal)
                        } else {
                            let t = _mm256_cvtepu8_epi32(half(tc));
                            (
                                _mm256_madd_epi16(t, $straight),
                                _mm256_madd_epi16(t, $diagonal),
                            )
                        };
                        let barred = (lanes(no_left), lanes(no_right), is_wall);
                        let offer = offer_avx2([pl, pc, pr], barred, (s, g));
                        let i = pair * 2 + k;
                        v[i] = _mm256_loadu_si256(row.as_ptr().add(b).cast());
                        nv[i] = _mm256_min_epu32(v[i], offer);
                        w[i] = _mm256_or_si256(s, _mm256_srli_epi32::<1>(is_wall));
                    }
                }
                // Each block's cells with the cell before each (from `before`, the cell before
                // the block) in its lanes.
                let after = |nv: __m256i, before: __m256i| {
                    _mm256_blend_epi32::<0b0000_0001>(
                        _mm256_permutevar8x32_epi32(nv, $from_left),
                        before,
                    )
                };
                // All ones where `nv` gains nothing from `left` at price `w`.
                let keeps = |left: __m256i, w: __m256i, nv: __m256i| {
                    _mm256_cmpeq_epi32(_mm256_min_epu32(_mm256_add_epi32(left, w), nv), nv)
                };
                let last_of = |v: __m256i| _mm256_permutevar8x32_epi32(v, $last_lane);
                let mut kept = _mm256_set1_epi32(-1);
                let mut before = $carry;
                for i in 0..N {
                    kept = _mm256_and_si256(kept, keeps(after(nv[i], before), w[i], nv[i]));
                    before = last_of(nv[i]);
                }
                if _mm256_movemask_ps(_mm256_castsi256_ps(kept)) != 0xFF {
                    let mut before = $carry;
                    for i in 0..N {
                        nv[i] = prefix_scan::<false>(nv[i], w[i], before);
                        before = last_of(nv[i]);
                    }
                    $scanned.add(x, x + CELLS - 1);
                }
                // Each cell against its right neighbour (the cell before the step's first
                // block included), for the pass leftwards; and the cells that changed.
                let (mut before, mut w_before) = ($carry, $w_carry);
                let (mut changed, mut improvable) = (0u32, 0u32);
                for i in 0..N {
                    _mm256_storeu_si256(row.as_mut_ptr().add(i * CELLS_PER_BLOCK).cast(), nv[i]);
                    let left = after(nv[i], before);
                    let stays = keeps(nv[i], after(w[i], w_before), left);
                    let stays = _mm256_movemask_ps(_mm256_castsi256_ps(stays)) as u32;
                    improvable |= (!stays & 0xFF) << (CELLS_PER_BLOCK * i);
                    before = last_of(nv[i]);
                    w_before = last_of(w[i]);
                    let same =
                        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(nv[i], v[i])))
                            as u32;
                    changed |= (!same & 0xFF) << (CELLS_PER_BLOCK * i);
                }
                // Without a branch on whether any cell is flagged: after a BFS or other
                // branchy work the predictor has forgotten the map's pattern, and on city maps
                // the steps with and without flags alternate (single blocks keep the branch,
                // cheaper on caves).
                $leftwards |= improvable;
                $flags.set(x - $lo, improvable);
                $carry = before;
                $w_carry = w_before;
                changed
            };
            if changed != 0 {
                $first = $first.min(x + changed.trailing_zeros() as usize);
                $last = x + 31 - changed.leading_zeros() as usize;
                mark_cells($marks, x + changed.trailing_zeros() as usize, $last);
            }
            $x += CELLS;
        }
    })+};
}

/// The body of [`row_pass_avx2`], written out where it is used: in that function (the parallel
/// bands' and the tests') and in the closure of [`sweep_rows_avx2`], which inherits that
/// function's target features, so that the row pass is compiled into the pass loop. The
/// compiler would not inline the function there, and a call per row pass (nine arguments,
/// some on the stack, and the kernel's set-up) is felt on caves, where a pass sweeps hundreds
/// of short rows (the figures are in `docs/benchmarks.md`).
macro_rules! row_pass_avx2_body {
    ($cur:expr, $prev:expr, $terrain:expr, $prev_terrain:expr, $prices:expr, $table:expr,
     $marks:expr, $lo:expr, $hi:expr, $plain:expr) => {{
        let cur: &mut [u32] = $cur;
        let prev: &[u32] = $prev;
        let terrain: &[u8] = $terrain;
        let prev_terrain: &[u8] = $prev_terrain;
        let prices: Prices = $prices;
        let table: &[u32; 256] = $table;
        let (marks, back): Marked = $marks;
        let lo: usize = $lo;
        let hi: usize = $hi;
        let wall = _mm_set1_epi8(WALL as i8);
        // Bases below 2^15 (asserted beside `CostModel`) in the low half of each lane: one `madd`
        // multiplies them by the terrain (a 16-bit multiply, cheaper than the 32-bit `mullo`).
        let straight = _mm256_set1_epi32(prices.straight as i32);
        let diagonal = _mm256_set1_epi32(prices.diagonal as i32);
        let from_left = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
        let last_lane = _mm256_set1_epi32(7);
        let (mut first, mut last) = (usize::MAX, 0usize);
        let mut scanned = Scanned::NONE;
        let mut x = lo;
        // The value of the cell before the block, in every lane.
        let mut carry = _mm256_set1_epi32(cur[lo - 1] as i32);
        // The step price of the cell before the block, in every lane, and the cells that may
        // improve from their right neighbour (see `row_pass_avx512`).
        let mut w_carry = _mm256_set1_epi32(table[terrain[lo - 1] as usize] as i32);
        let mut leftwards = 0;
        // The cells that may improve from their right neighbour, for the pass leftwards.
        let mut flags = Improvable::new(hi + 1 - lo);
        // Blocks of eight in steps of four on long runs, then of two, while that many cells are
        // left: their offers side by side, one test of all for the scan along the row, one for
        // a change (a block's loop, bounds and branches cost as much as its vector work). The
        // blocks of eight below finish the run.
        let long = hi + 1 - lo >= LONG_RUN;
        blocks_avx2!(
            [4, 2],
            long,
            x,
            hi,
            cur,
            prev,
            terrain,
            prev_terrain,
            marks,
            $plain,
            (wall, straight, diagonal, from_left, last_lane),
            (carry, w_carry, leftwards, first, last, scanned, flags, lo)
        );
        loop {
            if x + CELLS_PER_BLOCK > hi + 1 {
                // Fewer cells left than a block: one more block ending at `hi`, over cells done
                // too (see `row_pass_avx512`).
                if x > hi || hi + 1 < lo + CELLS_PER_BLOCK {
                    break;
                }
                x = hi + 1 - CELLS_PER_BLOCK;
                carry = _mm256_set1_epi32(cur[x - 1] as i32);
                w_carry = _mm256_set1_epi32(table[terrain[x - 1] as usize] as i32);
            }
            let above: &[u32; CELLS_PER_BLOCK + 2] = prev[x - 1..x + CELLS_PER_BLOCK + 1]
                .try_into()
                .expect("10 cells");
            let here: &[u8; CELLS_PER_BLOCK + 2] = terrain[x - 1..x + CELLS_PER_BLOCK + 1]
                .try_into()
                .expect("10 cells");
            let up: &[u8; CELLS_PER_BLOCK] = prev_terrain[x..x + CELLS_PER_BLOCK]
                .try_into()
                .expect("8 cells");
            let row: &mut [u32; CELLS_PER_BLOCK] = (&mut cur[x..x + CELLS_PER_BLOCK])
                .try_into()
                .expect("8 cells");
            // SAFETY: every load reads 8 u32 or 8 bytes within the arrays just cut to size, the
            // store writes 8 u32 into `row`, which holds 8.
            let changed = unsafe {
                let pl = _mm256_loadu_si256(above.as_ptr().cast());
                let pc = _mm256_loadu_si256(above.as_ptr().add(1).cast());
                let pr = _mm256_loadu_si256(above.as_ptr().add(2).cast());
                let tl = _mm_loadl_epi64(here.as_ptr().cast());
                let tc = _mm_loadl_epi64(here.as_ptr().add(1).cast());
                let tr = _mm_loadl_epi64(here.as_ptr().add(2).cast());
                let tu = _mm_loadl_epi64(up.as_ptr().cast());
                let up_wall = _mm_cmpeq_epi8(tu, wall);
                // All ones where a diagonal is barred (the corner rule) or the cell is a wall.
                let no_left = _mm256_cvtepi8_epi32(_mm_or_si128(_mm_cmpeq_epi8(tl, wall), up_wall));
                let no_right =
                    _mm256_cvtepi8_epi32(_mm_or_si128(_mm_cmpeq_epi8(tr, wall), up_wall));
                let is_wall = _mm256_cvtepi8_epi32(_mm_cmpeq_epi8(tc, wall));
                // On plain ground every step costs its base (a wall's price is set apart).
                let (s, g) = if $plain {
                    (straight, diagonal)
                } else {
                    let t = _mm256_cvtepu8_epi32(tc);
                    (
                        _mm256_madd_epi16(t, straight),
                        _mm256_madd_epi16(t, diagonal),
                    )
                };
                let offer = offer_avx2([pl, pc, pr], (no_left, no_right, is_wall), (s, g));
                let v = _mm256_loadu_si256(row.as_ptr().cast());
                let mut nv = _mm256_min_epu32(v, offer);
                // The price of a step along the row from each cell; INF from a wall.
                let w = _mm256_or_si256(s, _mm256_srli_epi32::<1>(is_wall));
                let shifted = _mm256_blend_epi32::<0b0000_0001>(
                    _mm256_permutevar8x32_epi32(nv, from_left),
                    carry,
                );
                let kept =
                    _mm256_cmpeq_epi32(_mm256_min_epu32(_mm256_add_epi32(shifted, w), nv), nv);
                if _mm256_movemask_ps(_mm256_castsi256_ps(kept)) != 0xFF {
                    nv = prefix_scan::<false>(nv, w, carry);
                    scanned.add(x, x + CELLS_PER_BLOCK - 1);
                }
                _mm256_storeu_si256(row.as_mut_ptr().cast(), nv);
                // Cells x - 1..x + 7 against their right neighbours.
                let left = _mm256_blend_epi32::<0b0000_0001>(
                    _mm256_permutevar8x32_epi32(nv, from_left),
                    carry,
                );
                let w_left = _mm256_blend_epi32::<0b0000_0001>(
                    _mm256_permutevar8x32_epi32(w, from_left),
                    w_carry,
                );
                let stays =
                    _mm256_cmpeq_epi32(_mm256_min_epu32(_mm256_add_epi32(nv, w_left), left), left);
                let improvable = !_mm256_movemask_ps(_mm256_castsi256_ps(stays)) as u32 & 0xFF;
                if improvable != 0 {
                    leftwards = 1;
                    flags.set(x - lo, improvable);
                }
                w_carry = _mm256_permutevar8x32_epi32(w, last_lane);
                carry = _mm256_permutevar8x32_epi32(nv, last_lane);
                !_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(nv, v))) as u32 & 0xFF
            };
            if changed != 0 {
                first = first.min(x + changed.trailing_zeros() as usize);
                last = x + 31 - changed.leading_zeros() as usize;
                mark_cells(marks, x + changed.trailing_zeros() as usize, last);
            }
            x += CELLS_PER_BLOCK;
        }
        let c = _mm256_cvtsi256_si32(carry) as u32;
        // Cells one by one after the blocks may need the pass leftwards too, unflagged.
        let leftwards = leftwards != 0 || x <= hi;
        flags.kept &= x > hi;
        let rows = (prev, terrain, prev_terrain);
        let Some((first, right)) = rightwards_tail(
            cur,
            rows,
            prices,
            table,
            &mut *marks,
            &mut scanned,
            x,
            hi,
            c,
            first,
            last,
        ) else {
            return EMPTY;
        };
        // Leftwards from `right` down to `first`: blocks of cells `x - 8..x`, from the cell at `x`,
        // each holding a cell that may improve from its right neighbour or below a cell this
        // pass improved; the blocks between are passed over.
        let to_right = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7);
        let mut x = if leftwards { right } else { first };
        let mut carry = _mm256_set1_epi32(cur[x] as i32);
        // The cell at `x` improved (or the flags were not kept): the block below it is next.
        let mut chained = !flags.kept;
        loop {
            if !chained && x > first {
                // Cell `c` is flag `c + 1 - lo`; the block to visit ends with the highest one.
                match flags.last_in(first + 1 - lo, x + 1 - lo) {
                    Some(k) => x = k + lo,
                    None => x = first,
                }
                carry = _mm256_set1_epi32(cur[x] as i32);
                if x == first {
                    break;
                }
            }
            if x < first + CELLS_PER_BLOCK {
                // As rightwards: the last cells in one block from `first`, over cells done too.
                if x <= first || right < first + CELLS_PER_BLOCK {
                    break;
                }
                x = first + CELLS_PER_BLOCK;
                carry = _mm256_set1_epi32(cur[x] as i32);
            }
            let at = x - CELLS_PER_BLOCK;
            let here: &[u8; CELLS_PER_BLOCK] = terrain[at..x].try_into().expect("8 cells");
            let row: &mut [u32; CELLS_PER_BLOCK] = (&mut cur[at..x]).try_into().expect("8 cells");
            // SAFETY: the loads read 8 u32 and 8 bytes from arrays of that size, the store writes
            // 8 u32 into `row`, which holds 8.
            unsafe {
                let tc = _mm_loadl_epi64(here.as_ptr().cast());
                let is_wall = _mm256_cvtepi8_epi32(_mm_cmpeq_epi8(tc, wall));
                let s = if $plain {
                    straight
                } else {
                    _mm256_madd_epi16(_mm256_cvtepu8_epi32(tc), straight)
                };
                let w = _mm256_or_si256(s, _mm256_srli_epi32::<1>(is_wall));
                let v = _mm256_loadu_si256(row.as_ptr().cast());
                let shifted = _mm256_blend_epi32::<0b1000_0000>(
                    _mm256_permutevar8x32_epi32(v, to_right),
                    carry,
                );
                let kept = _mm256_cmpeq_epi32(_mm256_min_epu32(_mm256_add_epi32(shifted, w), v), v);
                let nv = if _mm256_movemask_ps(_mm256_castsi256_ps(kept)) != 0xFF {
                    let nv = prefix_scan::<true>(v, w, carry);
                    _mm256_storeu_si256(row.as_mut_ptr().cast(), nv);
                    mark_cells(marks, at, x - 1);
                    scanned.add(at, x - 1);
                    let same = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(nv, v)));
                    chained = !flags.kept || same & 1 == 0;
                    nv
                } else {
                    chained = !flags.kept;
                    v
                };
                carry = _mm256_broadcastd_epi32(_mm256_castsi256_si128(nv));
            }
            x = at;
        }
        let c = _mm256_cvtsi256_si32(carry) as u32;
        leftwards_tail(
            cur,
            terrain,
            table,
            (marks, back),
            scanned,
            x,
            first,
            c,
            right,
            |back, cur, lo, hi| {
                if $plain && hi - lo < TESTED_BACK {
                    let rows = (&*cur, prev, terrain, prev_terrain);
                    mark_improving_back(back, rows, (straight, diagonal), lo, hi);
                } else {
                    mark_cells(back, lo, hi);
                }
            },
        )
    }};
}

/// Spans of cells improved by the scans along a row at most this long (columns) mark in `back`
/// only the chunks of the row before that their values improve ([`mark_improving_back`]);
/// longer ones mark every chunk beside them. On caves the test saves a fifth of the visits of
/// the next pass; on maps of long rows (random512-10-0) testing long spans cost more than it
/// saved (the figures are in `docs/benchmarks.md`).
const TESTED_BACK: usize = 16 * CELLS_PER_BLOCK;

/// On plain ground, mark in `back` the chunks of the cells of the row before (`prev`) that an
/// offer from the row's final values (`cur`) improves, among the cells beside columns
/// `lo..=hi` (those the scans along the row improved). Only those cells can improve the row
/// before (see `tell_neighbours`), and most of them do not: the pass the other way then skips
/// the chunks where it would find nothing. The offers are those of [`row_pass_avx2`] with the
/// rows' parts swapped. Eight cells a block, the last block ending at the last cell (over
/// cells tested too); a row too short for a block marks every chunk beside the cells.
#[target_feature(enable = "avx2")]
#[inline]
fn mark_improving_back(
    back: &mut [u64],
    (cur, prev, terrain, prev_terrain): (&[u32], &[u32], &[u8], &[u8]),
    (straight, diagonal): (__m256i, __m256i),
    lo: usize,
    hi: usize,
) {
    let pw = cur.len();
    if pw < CELLS_PER_BLOCK + 2 {
        mark_cells(back, lo, hi);
        return;
    }
    let (first, last) = ((lo - 1).max(1), (hi + 1).min(pw - 2));
    let wall = _mm_set1_epi8(WALL as i8);
    let mut x = first;
    while x <= last {
        if x + CELLS_PER_BLOCK > last + 1 {
            x = (last + 1).saturating_sub(CELLS_PER_BLOCK).max(1);
        }
        let from: &[u32; CELLS_PER_BLOCK + 2] = cur[x - 1..x + CELLS_PER_BLOCK + 1]
            .try_into()
            .expect("10 cells");
        let to: &[u32; CELLS_PER_BLOCK] = prev[x..x + CELLS_PER_BLOCK].try_into().expect("8 cells");
        let there: &[u8; CELLS_PER_BLOCK + 2] = prev_terrain[x - 1..x + CELLS_PER_BLOCK + 1]
            .try_into()
            .expect("10 cells");
        let here: &[u8; CELLS_PER_BLOCK] =
            terrain[x..x + CELLS_PER_BLOCK].try_into().expect("8 cells");
        // SAFETY: every load reads 8 u32 or 8 bytes within the arrays just cut to size.
        let improves = unsafe {
            let cl = _mm256_loadu_si256(from.as_ptr().cast());
            let cc = _mm256_loadu_si256(from.as_ptr().add(1).cast());
            let cr = _mm256_loadu_si256(from.as_ptr().add(2).cast());
            let old = _mm256_loadu_si256(to.as_ptr().cast());
            let tl = _mm_loadl_epi64(there.as_ptr().cast());
            let tc = _mm_loadl_epi64(there.as_ptr().add(1).cast());
            let tr = _mm_loadl_epi64(there.as_ptr().add(2).cast());
            // A diagonal passes between the cell's neighbour in its own row and the cell below
            // (or above) it in this row: both walkable (the corner rule).
            let beside = _mm_cmpeq_epi8(_mm_loadl_epi64(here.as_ptr().cast()), wall);
            let no_left = _mm256_cvtepi8_epi32(_mm_or_si128(_mm_cmpeq_epi8(tl, wall), beside));
            let no_right = _mm256_cvtepi8_epi32(_mm_or_si128(_mm_cmpeq_epi8(tr, wall), beside));
            let is_wall = _mm256_cvtepi8_epi32(_mm_cmpeq_epi8(tc, wall));
            let barred = (no_left, no_right, is_wall);
            let offer = offer_avx2([cl, cc, cr], barred, (straight, diagonal));
            let keeps = _mm256_cmpeq_epi32(_mm256_min_epu32(offer, old), old);
            !_mm256_movemask_ps(_mm256_castsi256_ps(keeps)) as u32 & 0xFF
        };
        if improves != 0 {
            let a = x + improves.trailing_zeros() as usize;
            let b = x + 31 - improves.leading_zeros() as usize;
            mark_columns(back, a, b);
        }
        x += CELLS_PER_BLOCK;
    }
}

/// The best of the offers to eight cells from their three neighbours in the row before, `from`
/// (left, straight, right): the straight step at price `s`, the diagonals at `g` unless
/// `barred` (all ones where the corner rule bars the left or right diagonal, and where the cell
/// is a wall, whose offer is then all ones). Diagonals from cells without a value stay at INF
/// plus a step, so no sum overflows. The row pass's and the back test's offers.
#[target_feature(enable = "avx2")]
#[inline]
fn offer_avx2(
    [left, straight_on, right]: [__m256i; 3],
    (no_left, no_right, is_wall): (__m256i, __m256i, __m256i),
    (s, g): (__m256i, __m256i),
) -> __m256i {
    let diag = _mm256_min_epu32(
        _mm256_min_epu32(
            _mm256_or_si256(left, no_left),
            _mm256_or_si256(right, no_right),
        ),
        _mm256_set1_epi32(INF as i32),
    );
    _mm256_or_si256(
        _mm256_min_epu32(_mm256_add_epi32(straight_on, s), _mm256_add_epi32(diag, g)),
        is_wall,
    )
}

/// Words of [`Improvable`]'s bits: runs of up to about a thousand columns keep them.
const IMPROVABLE_WORDS: usize = 16;

/// The cells of an AVX2 row pass's run (from `lo`) that may improve from their right neighbour
/// once the pass rightwards is done, a bit each (bit `k` for cell `lo - 1 + k`), so that the
/// pass leftwards visits the blocks holding them and the cells their gains reach, not every
/// block from the last change to the first: on Boston_0_256 nine blocks in ten it looked at
/// changed nothing. A run too long for the bits does not keep them (`kept`): every block is
/// visited. 136 bytes on the stack.
struct Improvable {
    bits: [u64; IMPROVABLE_WORDS],
    kept: bool,
}

impl Improvable {
    /// None flagged yet, for a run of `len` columns.
    #[inline(always)]
    fn new(len: usize) -> Improvable {
        Improvable {
            bits: [0; IMPROVABLE_WORDS],
            // Room for a run, the cell before it and a step of four blocks past its end.
            kept: len + 2 + 32 <= IMPROVABLE_WORDS * 64,
        }
    }

    /// Flag the cells of `cells` (up to 32 bits) from bit `at` on.
    #[inline(always)]
    fn set(&mut self, at: usize, cells: u32) {
        if !self.kept {
            return;
        }
        let (word, shift) = (at / 64, at % 64);
        self.bits[word] |= (cells as u64) << shift;
        if shift > 32 {
            self.bits[word + 1] |= (cells as u64) >> (64 - shift);
        }
    }

    /// The highest flagged bit in `from..to`.
    #[inline(always)]
    fn last_in(&self, from: usize, to: usize) -> Option<usize> {
        let to = to.min(IMPROVABLE_WORDS * 64);
        if to <= from {
            return None;
        }
        let mut w = (to - 1) / 64;
        let mut word = self.bits[w] & (u64::MAX >> (63 - (to - 1) % 64));
        loop {
            if word != 0 {
                let k = w * 64 + 63 - word.leading_zeros() as usize;
                return (k >= from).then_some(k);
            }
            if w * 64 <= from {
                return None;
            }
            w -= 1;
            word = self.bits[w];
        }
    }
}

/// `row_pass` (integration sweeps) for AVX2, eight cells a block, rightwards two or four blocks a
/// step ([`blocks_avx2`]): each block takes the offers of the row before and then the scan from
/// its left neighbour in the same step, then a scan
/// leftwards over the columns that changed, unless the blocks found no cell that their values
/// improve from its right neighbour (most passes on caves: the loop and its mispredicted exit
/// are saved). A block whose cells none improve from their neighbour (the check is a shift, an
/// add and a compare) skips the scan proper: a min-plus prefix scan (Hillis-Steele, three steps
/// of lane shifts), the same values, bit for bit, as the plain `settle`. Prices of walls count as `INF` here instead of `WALL_STEP` (either way nothing
/// improves through a wall), and sums of prices stop at `INF`, so no sum overflows.
///
/// The row must be consistent along itself before (no cell improves from a neighbour in the
/// row), as the builder keeps every row: then the cells that change are exactly those of
/// plain `settle`, and so is the span returned. The marks are those of the steps of blocks that
/// changed, finer than the span's; the back marks cover the blocks where the scans along the
/// row ran and the cells beyond them, from the first to the last ([`Scanned`]).
#[cfg(any(feature = "parallel", test))]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
fn row_pass_avx2<const PLAIN: bool>(
    cur: &mut [u32],
    prev: &[u32],
    terrain: &[u8],
    prev_terrain: &[u8],
    prices: Prices,
    table: &[u32; 256],
    marks: Marked,
    lo: usize,
    hi: usize,
) -> Span {
    row_pass_avx2_body!(
        cur,
        prev,
        terrain,
        prev_terrain,
        prices,
        table,
        marks,
        lo,
        hi,
        PLAIN
    )
}

/// The body of [`row_pass_avx512`], written out in that function and in the closure of
/// [`sweep_rows_avx512`] (see [`row_pass_avx2_body`]).
macro_rules! row_pass_avx512_body {
    ($cur:expr, $prev:expr, $terrain:expr, $prev_terrain:expr, $prices:expr, $table:expr,
     $marks:expr, $lo:expr, $hi:expr, $plain:expr) => {{
        let cur: &mut [u32] = $cur;
        let prev: &[u32] = $prev;
        let terrain: &[u8] = $terrain;
        let prev_terrain: &[u8] = $prev_terrain;
        let prices: Prices = $prices;
        let table: &[u32; 256] = $table;
        let (marks, back): Marked = $marks;
        let lo: usize = $lo;
        let hi: usize = $hi;
        const WIDE: usize = Avx512::ROW_BLOCK;
        let wall = _mm_set1_epi8(WALL as i8);
        let inf = _mm512_set1_epi32(INF as i32);
        let straight = _mm512_set1_epi32(prices.straight as i32);
        let diagonal = _mm512_set1_epi32(prices.diagonal as i32);
        let (mut first, mut last) = (usize::MAX, 0usize);
        let mut scanned = Scanned::NONE;
        let mut x = lo;
        // The first cell the single blocks changed.
        let mut single_first = usize::MAX;
        // The block before, final: its last lane is the value of the cell before the block.
        let mut before = _mm512_set1_epi32(cur[lo - 1] as i32);
        // The step prices of the block before (the cell before the block in its last lane), and
        // the cells that may improve from their right neighbour: without any, the pass leftwards
        // has nothing to do.
        let mut w_before = _mm512_set1_epi32(table[terrain[lo - 1] as usize] as i32);
        let mut leftwards = 0u16;
        // Two blocks a step while 32 cells are left: their offers side by side, one test of both
        // for the scan along the row and one for a change (see `blocks_avx2`).
        let long = hi + 1 - lo >= LONG_RUN;
        while long && x + 2 * WIDE <= hi + 1 {
            let above: &[u32; 2 * WIDE + 2] =
                prev[x - 1..x + 2 * WIDE + 1].try_into().expect("34 cells");
            let here: &[u8; 2 * WIDE + 2] = terrain[x - 1..x + 2 * WIDE + 1]
                .try_into()
                .expect("34 cells");
            let up: &[u8; 2 * WIDE] = prev_terrain[x..x + 2 * WIDE].try_into().expect("32 cells");
            let row: &mut [u32; 2 * WIDE] =
                (&mut cur[x..x + 2 * WIDE]).try_into().expect("32 cells");
            // SAFETY: the loads are `offers_avx512`'s, within the blocks cut from these arrays;
            // the stores write 16 u32 each into `row`, which holds 32.
            let changed = unsafe {
                let block = |b: usize| {
                    let above = above[b..b + WIDE + 2].try_into().expect("18 cells");
                    let here = here[b..b + WIDE + 2].try_into().expect("18 cells");
                    let up = up[b..b + WIDE].try_into().expect("16 cells");
                    let row = row[b..b + WIDE].try_into().expect("16 cells");
                    offers_avx512::<{ $plain }>((above, here, up, row), (straight, diagonal))
                };
                let ((v0, nv0, w0), (v1, nv1, w1)) = (block(0), block(WIDE));
                let (v, mut nv, w) = ([v0, v1], [nv0, nv1], [w0, w1]);
                let scan_needed = _mm512_cmplt_epu32_mask(
                    _mm512_add_epi32(_mm512_alignr_epi32::<15>(nv[0], before), w[0]),
                    nv[0],
                ) | _mm512_cmplt_epu32_mask(
                    _mm512_add_epi32(_mm512_alignr_epi32::<15>(nv[1], nv[0]), w[1]),
                    nv[1],
                );
                if scan_needed != 0 {
                    let last_lane = _mm512_set1_epi32(15);
                    let carry = _mm512_permutexvar_epi32(last_lane, before);
                    nv[0] = wide_prefix_scan::<false>(nv[0], w[0], carry);
                    let carry = _mm512_permutexvar_epi32(last_lane, nv[0]);
                    nv[1] = wide_prefix_scan::<false>(nv[1], w[1], carry);
                    scanned.add(x, x + 2 * WIDE - 1);
                }
                _mm512_storeu_si512(row.as_mut_ptr().cast(), nv[0]);
                _mm512_storeu_si512(row.as_mut_ptr().add(WIDE).cast(), nv[1]);
                // Cells x - 1..x + 31 against their right neighbours.
                let improvable = |nv, before, w, w_before| {
                    let left = _mm512_alignr_epi32::<15>(nv, before);
                    let w_left = _mm512_alignr_epi32::<15>(w, w_before);
                    _mm512_cmplt_epu32_mask(_mm512_add_epi32(nv, w_left), left)
                };
                leftwards |= improvable(nv[0], before, w[0], w_before)
                    | improvable(nv[1], nv[0], w[1], w[0]);
                before = nv[1];
                w_before = w[1];
                u32::from(_mm512_cmpneq_epu32_mask(nv[0], v[0]))
                    | u32::from(_mm512_cmpneq_epu32_mask(nv[1], v[1])) << WIDE
            };
            // Long runs mark each step's changes: on open ground the late passes change a few
            // cells at both ends of a row, and one range would send the rows beside over all
            // the columns between.
            if changed != 0 {
                first = first.min(x + changed.trailing_zeros() as usize);
                last = x + 31 - changed.leading_zeros() as usize;
                mark_cells(marks, x + changed.trailing_zeros() as usize, last);
            }
            x += 2 * WIDE;
        }
        loop {
            if x + WIDE > hi + 1 {
                // Fewer cells left than a block: one more block, ending at `hi`, over cells already
                // done too, which it leaves as they are (their offers are in, and the scan from the
                // final cell before the block gives them their own values), rather than the cells
                // one at a time. A map's full rows end so (Boston_0_256: sixteen cells a row).
                if x > hi || hi + 1 < lo + WIDE {
                    break;
                }
                x = hi + 1 - WIDE;
                before = _mm512_set1_epi32(cur[x - 1] as i32);
                w_before = _mm512_set1_epi32(table[terrain[x - 1] as usize] as i32);
            }
            let above: &[u32; WIDE + 2] = prev[x - 1..x + WIDE + 1].try_into().expect("18 cells");
            let here: &[u8; WIDE + 2] = terrain[x - 1..x + WIDE + 1].try_into().expect("18 cells");
            let up: &[u8; WIDE] = prev_terrain[x..x + WIDE].try_into().expect("16 cells");
            let row: &mut [u32; WIDE] = (&mut cur[x..x + WIDE]).try_into().expect("16 cells");
            // SAFETY: the store writes 16 u32 into `row`, which holds 16.
            let changed = unsafe {
                let rows = (above, here, up, &*row);
                let (v, mut nv, w) = offers_avx512::<{ $plain }>(rows, (straight, diagonal));
                // Lane i sees lane i - 1; lane 0 the last lane of the block before.
                let shifted = _mm512_alignr_epi32::<15>(nv, before);
                if _mm512_cmplt_epu32_mask(_mm512_add_epi32(shifted, w), nv) != 0 {
                    let carry = _mm512_permutexvar_epi32(_mm512_set1_epi32(15), before);
                    let offered = nv;
                    nv = wide_prefix_scan::<false>(nv, w, carry);
                    // On plain ground a short run marks back only the chunks of the row before
                    // that the cells the scan improved improve (on caves most chunks beside them
                    // improve nothing, and the pass the other way visited them for nothing);
                    // a long run, whose scans are many, marks every chunk beside them, as
                    // testing each block cost more than it saved (random512-10-0).
                    if $plain && !long {
                        let there = prev_terrain[x - 1..x + WIDE + 1]
                            .try_into()
                            .expect("18 cells");
                        let improved = _mm512_cmplt_epu32_mask(nv, offered);
                        let rows = (above, there, here);
                        mark_back_avx512(back, x, nv, improved, rows, (straight, diagonal));
                    } else {
                        scanned.add(x, x + WIDE - 1);
                    }
                }
                _mm512_storeu_si512(row.as_mut_ptr().cast(), nv);
                // Cells x - 1..x + 15 against their right neighbours.
                let left = _mm512_alignr_epi32::<15>(nv, before);
                let w_left = _mm512_alignr_epi32::<15>(w, w_before);
                leftwards |= _mm512_cmplt_epu32_mask(_mm512_add_epi32(nv, w_left), left);
                before = nv;
                w_before = w;
                _mm512_cmpneq_epu32_mask(nv, v) as u32
            };
            let some = changed != 0;
            single_first = single_first.min(if some {
                x + changed.trailing_zeros() as usize
            } else {
                usize::MAX
            });
            last = if some {
                x + 31 - changed.leading_zeros() as usize
            } else {
                last
            };
            x += WIDE;
        }
        // The cells the single blocks changed marked once, from the first to the last: a test
        // and a mark at each block that changed was a branch the caves' short runs mispredicted.
        if single_first != usize::MAX {
            mark_cells(marks, single_first, last);
            first = first.min(single_first);
        }
        // The last lane of the block before (lane 3 of its fourth quarter).
        let c = _mm_extract_epi32::<3>(_mm512_extracti32x4_epi32::<3>(before)) as u32;
        // Cells one by one after the blocks may need the pass leftwards too.
        let leftwards = leftwards != 0 || x <= hi;
        let rows = (prev, terrain, prev_terrain);
        let Some((first, right)) = rightwards_tail(
            cur,
            rows,
            prices,
            table,
            &mut *marks,
            &mut scanned,
            x,
            hi,
            c,
            first,
            last,
        ) else {
            return EMPTY;
        };
        // Leftwards from `right` down to `first`: blocks of cells `x - 16..x`, from the cell at
        // `x`.
        let mut x = if leftwards { right } else { first };
        let mut after = _mm512_set1_epi32(cur[x] as i32);
        loop {
            if x < first + WIDE {
                // As rightwards: the last cells in one block from `first`, over cells done too.
                if x <= first || right < first + WIDE {
                    break;
                }
                x = first + WIDE;
                after = _mm512_set1_epi32(cur[x] as i32);
            }
            let at = x - WIDE;
            let here: &[u8; WIDE] = terrain[at..x].try_into().expect("16 cells");
            let row: &mut [u32; WIDE] = (&mut cur[at..x]).try_into().expect("16 cells");
            // SAFETY: the loads read 16 u32 and 16 bytes from arrays of that size, the store writes
            // 16 u32 into `row`, which holds 16.
            unsafe {
                let tc = _mm_loadu_si128(here.as_ptr().cast());
                let is_wall = _mm_cmpeq_epi8_mask(tc, wall);
                let s = if $plain {
                    straight
                } else {
                    _mm512_madd_epi16(_mm512_cvtepu8_epi32(tc), straight)
                };
                let w = _mm512_mask_mov_epi32(s, is_wall, inf);
                let v = _mm512_loadu_si512(row.as_ptr().cast());
                // Lane i sees lane i + 1; lane 15 the first lane of the block after.
                let shifted = _mm512_alignr_epi32::<1>(after, v);
                after = if _mm512_cmplt_epu32_mask(_mm512_add_epi32(shifted, w), v) != 0 {
                    let carry = _mm512_permutexvar_epi32(_mm512_setzero_si512(), after);
                    let nv = wide_prefix_scan::<true>(v, w, carry);
                    _mm512_storeu_si512(row.as_mut_ptr().cast(), nv);
                    mark_cells(marks, at, x - 1);
                    if $plain && !long {
                        let rows = (
                            prev[at - 1..x + 1].try_into().expect("18 cells"),
                            prev_terrain[at - 1..x + 1].try_into().expect("18 cells"),
                            terrain[at - 1..x + 1].try_into().expect("18 cells"),
                        );
                        let improved = _mm512_cmplt_epu32_mask(nv, v);
                        mark_back_avx512(back, at, nv, improved, rows, (straight, diagonal));
                    } else {
                        scanned.add(at, x - 1);
                    }
                    nv
                } else {
                    v
                };
            }
            x = at;
        }
        let c = _mm_cvtsi128_si32(_mm512_castsi512_si128(after)) as u32;
        leftwards_tail(
            cur,
            terrain,
            table,
            (marks, back),
            scanned,
            x,
            first,
            c,
            right,
            |back, _, lo, hi| mark_cells(back, lo, hi),
        )
    }};
}

/// On plain ground, mark in `back` the chunks of the cells of the row before that an offer from
/// the `improved` lanes of a block of sixteen final values `nv` (cells `x..x + 16`, those the
/// scans along the row improved) improves: [`mark_improving_back`] for the block, from `above`
/// (the row before, cells `x - 1..x + 17`), `there` (its terrain) and `here` (the row's
/// terrain), done in the scan's branch instead of in a pass over the cells after the row.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
fn mark_back_avx512(
    back: &mut [u64],
    x: usize,
    nv: __m512i,
    improved: __mmask16,
    (above, there, here): (&[u32; 18], &[u8; 18], &[u8; 18]),
    (straight, diagonal): (__m512i, __m512i),
) {
    let wall = _mm_set1_epi8(WALL as i8);
    // SAFETY: every load reads 16 u32 or 16 bytes within the arrays passed.
    let columns = unsafe {
        let load = |at: usize| _mm512_loadu_si512(above.as_ptr().add(at).cast());
        let walls = |bytes: &[u8; 18], at: usize| {
            _mm_cmpeq_epi8_mask(_mm_loadu_si128(bytes.as_ptr().add(at).cast()), wall)
        };
        let (there_left, there_on, there_right) =
            (walls(there, 0), walls(there, 1), walls(there, 2));
        let (here_left, here_right) = (walls(here, 0), walls(here, 2));
        let straight_on = _mm512_add_epi32(nv, straight);
        let diagonal_on = _mm512_add_epi32(nv, diagonal);
        // The cell straight across, and the diagonals past the cell beside in either row (the
        // corner rule); never a wall.
        let on = _mm512_mask_cmplt_epu32_mask(improved & !there_on, straight_on, load(1));
        let left = improved & !(here_left | there_on | there_left);
        let left = _mm512_mask_cmplt_epu32_mask(left, diagonal_on, load(0));
        let right = improved & !(here_right | there_on | there_right);
        let right = _mm512_mask_cmplt_epu32_mask(right, diagonal_on, load(2));
        // Bit j: column x - 1 + j.
        u32::from(left) | u32::from(on) << 1 | u32::from(right) << 2
    };
    if columns != 0 {
        let a = x - 1 + columns.trailing_zeros() as usize;
        let b = x + 30 - columns.leading_zeros() as usize;
        mark_columns(back, a, b);
    }
}

/// The offers of the row before to a block of sixteen cells of a row: `above`, the row before
/// from the cell left of the block to the cell right of it; `here`, the row's terrain likewise;
/// `up`, the row before's terrain over the block; `row`, the block's values. Returns the values
/// as they were, the values after the offers, and the price of a step along the row from each
/// cell (INF from a wall). With `PLAIN` (plain ground) every step costs its base price.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
fn offers_avx512<const PLAIN: bool>(
    (above, here, up, row): (&[u32; 18], &[u8; 18], &[u8; 16], &[u32; 16]),
    (straight, diagonal): (__m512i, __m512i),
) -> (__m512i, __m512i, __m512i) {
    let wall = _mm_set1_epi8(WALL as i8);
    let inf = _mm512_set1_epi32(INF as i32);
    // SAFETY: every load reads 16 u32 or 16 bytes within the arrays passed.
    unsafe {
        let pc = _mm512_loadu_si512(above.as_ptr().add(1).cast());
        // The cells above left and right by lane shifts: one vector load of the row just
        // written instead of three, two of them across the stores of two of its blocks.
        let pl = _mm512_alignr_epi32::<15>(pc, _mm512_set1_epi32(above[0] as i32));
        let pr = _mm512_alignr_epi32::<1>(_mm512_set1_epi32(above[17] as i32), pc);
        let tl = _mm_loadu_si128(here.as_ptr().cast());
        let tc = _mm_loadu_si128(here.as_ptr().add(1).cast());
        let tr = _mm_loadu_si128(here.as_ptr().add(2).cast());
        let tu = _mm_loadu_si128(up.as_ptr().cast());
        let up_wall = _mm_cmpeq_epi8_mask(tu, wall);
        // Set where a diagonal is barred (the corner rule) or the cell is a wall.
        let no_left = _mm_cmpeq_epi8_mask(tl, wall) | up_wall;
        let no_right = _mm_cmpeq_epi8_mask(tr, wall) | up_wall;
        let is_wall = _mm_cmpeq_epi8_mask(tc, wall);
        // On plain ground every step costs its base (a wall's price is set apart).
        let (s, g) = if PLAIN {
            (straight, diagonal)
        } else {
            let t = _mm512_cvtepu8_epi32(tc);
            (
                _mm512_madd_epi16(t, straight),
                _mm512_madd_epi16(t, diagonal),
            )
        };
        let diag = _mm512_min_epu32(
            _mm512_mask_mov_epi32(pl, no_left, inf),
            _mm512_mask_mov_epi32(pr, no_right, inf),
        );
        let offer = _mm512_mask_mov_epi32(
            _mm512_min_epu32(_mm512_add_epi32(pc, s), _mm512_add_epi32(diag, g)),
            is_wall,
            _mm512_set1_epi32(-1),
        );
        let v = _mm512_loadu_si512(row.as_ptr().cast());
        (
            v,
            _mm512_min_epu32(v, offer),
            _mm512_mask_mov_epi32(s, is_wall, inf),
        )
    }
}

/// [`row_pass_avx2`] sixteen cells at a time, for CPUs with AVX-512 (F, BW and VL): the same
/// steps, with mask registers for the corner rule and the walls, and lane rotations across
/// two registers for the shifts. The same values and span; the marks of the single blocks
/// (the short runs, and the ends of long ones) cover the cells they changed from the first to
/// the last, marked once after them, and on plain ground a short run marks back only the
/// chunks of the row before that its scans' cells improve ([`mark_back_avx512`]), where the
/// AVX2 pass tests them after the row ([`mark_improving_back`]).
#[cfg(any(feature = "parallel", test))]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[allow(clippy::too_many_arguments)]
fn row_pass_avx512<const PLAIN: bool>(
    cur: &mut [u32],
    prev: &[u32],
    terrain: &[u8],
    prev_terrain: &[u8],
    prices: Prices,
    table: &[u32; 256],
    marks: Marked,
    lo: usize,
    hi: usize,
) -> Span {
    row_pass_avx512_body!(
        cur,
        prev,
        terrain,
        prev_terrain,
        prices,
        table,
        marks,
        lo,
        hi,
        PLAIN
    )
}

/// [`sweep_rows`] compiled with a kernel's target features, its rows passed by that kernel's
/// body (a macro) inside the loop's closure, which inherits the target features.
/// Runs shorter than `$block` cells go by one block of that many (see [`run_of_a_block`]).
macro_rules! sweep_rows_with {
    ($(#[$doc:meta])* $name:ident, $features:literal, $body:ident, $block:expr) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        fn $name(rows: SweptMap, sc: &mut SweepScratch, pw: usize, h: usize, stop_at: u64) -> bool {
            // Two copies of the pass loop: the one for maps of plain ground only leaves the
            // terrain out of the prices.
            if sc.prices().plain {
                let pass = |((cur, prev, t, pt), prices, table, _, marks, lo, hi): RowPassArgs| {
                    let (lo, hi) = run_of_a_block(lo, hi, cur.len(), $block);
                    $body!(cur, prev, t, pt, prices, table, marks, lo, hi, true)
                };
                sweep_rows(rows, sc, pw, h, stop_at, pass)
            } else {
                let pass = |((cur, prev, t, pt), prices, table, _, marks, lo, hi): RowPassArgs| {
                    let (lo, hi) = run_of_a_block(lo, hi, cur.len(), $block);
                    $body!(cur, prev, t, pt, prices, table, marks, lo, hi, false)
                };
                sweep_rows(rows, sc, pw, h, stop_at, pass)
            }
        }
    };
}

sweep_rows_with!(
    /// [`sweep_rows`] compiled for AVX2, its rows passed by [`row_pass_avx2`]'s body.
    sweep_rows_avx2,
    "avx2",
    row_pass_avx2_body,
    // Runs shorter than its blocks of eight are rare (a row's first chunk): kept as they are,
    // grown they measured no faster.
    0
);
sweep_rows_with!(
    /// [`sweep_rows`] compiled for AVX-512, its rows passed by [`row_pass_avx512`]'s body.
    sweep_rows_avx512,
    "avx512f,avx512bw,avx512vl",
    row_pass_avx512_body,
    Avx512::ROW_BLOCK
);

/// [`prefix_scan`] over sixteen cells: four steps of lane shifts.
#[target_feature(enable = "avx512f")]
#[inline]
fn wide_prefix_scan<const LEFTWARDS: bool>(
    mut v: __m512i,
    mut w: __m512i,
    carry: __m512i,
) -> __m512i {
    let inf = _mm512_set1_epi32(INF as i32);
    let zero = _mm512_setzero_si512();
    macro_rules! step {
        ($k:literal) => {
            // Lanes shifted by $k towards the scan's direction; INF (values) and 0 (prices)
            // shifted in.
            let (vs, ws) = if LEFTWARDS {
                (
                    _mm512_alignr_epi32::<$k>(inf, v),
                    _mm512_alignr_epi32::<$k>(zero, w),
                )
            } else {
                (
                    _mm512_alignr_epi32::<{ 16 - $k }>(v, inf),
                    _mm512_alignr_epi32::<{ 16 - $k }>(w, zero),
                )
            };
            v = _mm512_min_epu32(v, _mm512_add_epi32(vs, w));
            w = _mm512_min_epu32(_mm512_add_epi32(w, ws), inf);
        };
    }
    step!(1);
    step!(2);
    step!(4);
    step!(8);
    _mm512_min_epu32(v, _mm512_add_epi32(carry, w))
}

/// Cells of the AVX2 row pass.
const CELLS_PER_BLOCK: usize = 8;

/// Runs at least this long (columns) go four blocks a step in the AVX2 row pass, shorter ones two:
/// four were 5-12 % faster on maps of long rows (Boston_0_256, random512-10-0), and a loop
/// more per row pass about 1 % slower on caves of short ones (lak303d). The AVX-512 pass goes two
/// blocks of sixteen a step on them, single blocks on shorter ones.
const LONG_RUN: usize = 16 * CELLS_PER_BLOCK;

/// The scan along a row over eight cells `v` with step prices `w` (at most `INF`), from
/// `carry`, the value of the cell before them in the scan's direction, in every lane: each cell
/// becomes the best of itself and of the cells before it plus the prices between. Rightwards
/// the cell before is left of lane 0; leftwards (`LEFTWARDS`) it is right of lane 7.
#[target_feature(enable = "avx2")]
#[inline]
fn prefix_scan<const LEFTWARDS: bool>(mut v: __m256i, mut w: __m256i, carry: __m256i) -> __m256i {
    let inf = _mm256_set1_epi32(INF as i32);
    let zero = _mm256_setzero_si256();
    // Lane shifts by 1, 2 and 4 towards the scan's direction; the lanes shifted in are blended
    // with INF (values) and 0 (prices).
    macro_rules! step {
        ($right:expr, $left:expr, $mask_right:literal, $mask_left:literal) => {
            let (vs, ws) = if LEFTWARDS {
                let idx = $left;
                (
                    _mm256_blend_epi32::<$mask_left>(_mm256_permutevar8x32_epi32(v, idx), inf),
                    _mm256_blend_epi32::<$mask_left>(_mm256_permutevar8x32_epi32(w, idx), zero),
                )
            } else {
                let idx = $right;
                (
                    _mm256_blend_epi32::<$mask_right>(_mm256_permutevar8x32_epi32(v, idx), inf),
                    _mm256_blend_epi32::<$mask_right>(_mm256_permutevar8x32_epi32(w, idx), zero),
                )
            };
            v = _mm256_min_epu32(v, _mm256_add_epi32(vs, w));
            w = _mm256_min_epu32(_mm256_add_epi32(w, ws), inf);
        };
    }
    step!(
        _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6),
        _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7),
        0b0000_0001,
        0b1000_0000
    );
    step!(
        _mm256_setr_epi32(0, 0, 0, 1, 2, 3, 4, 5),
        _mm256_setr_epi32(2, 3, 4, 5, 6, 7, 7, 7),
        0b0000_0011,
        0b1100_0000
    );
    step!(
        _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 2, 3),
        _mm256_setr_epi32(4, 5, 6, 7, 7, 7, 7, 7),
        0b0000_1111,
        0b1111_0000
    );
    _mm256_min_epu32(v, _mm256_add_epi32(carry, w))
}

#[cfg(test)]
impl Avx2 {
    /// The prefix scans rightwards and leftwards over eight cells, from and to arrays.
    pub(crate) fn prefix_scans(
        self,
        cells: [u32; 8],
        prices: [u32; 8],
        carry: u32,
    ) -> [[u32; 8]; 2] {
        #[target_feature(enable = "avx2")]
        fn scans(cells: [u32; 8], prices: [u32; 8], carry: u32) -> [[u32; 8]; 2] {
            let mut out = [[0u32; 8]; 2];
            // SAFETY: the loads and stores move 8 u32 from and to arrays of 8.
            unsafe {
                let v = _mm256_loadu_si256(cells.as_ptr().cast());
                let w = _mm256_loadu_si256(prices.as_ptr().cast());
                let c = _mm256_set1_epi32(carry as i32);
                _mm256_storeu_si256(out[0].as_mut_ptr().cast(), prefix_scan::<false>(v, w, c));
                _mm256_storeu_si256(out[1].as_mut_ptr().cast(), prefix_scan::<true>(v, w, c));
            }
            out
        }
        // SAFETY: an `Avx2` exists only where the CPU has AVX2.
        unsafe { scans(cells, prices, carry) }
    }
}

#[cfg(test)]
impl Avx2 {
    /// [`mark_improving_back`] on plain ground with steps `straight` and `diagonal`: rows
    /// `(cur, prev, terrain, prev_terrain)` and the scanned columns `lo..=hi`.
    pub(crate) fn improving_back(
        self,
        back: &mut [u64],
        rows: (&[u32], &[u32], &[u8], &[u8]),
        (straight, diagonal): (u32, u32),
        lo: usize,
        hi: usize,
    ) {
        #[target_feature(enable = "avx2")]
        fn mark(
            back: &mut [u64],
            rows: (&[u32], &[u32], &[u8], &[u8]),
            (straight, diagonal): (u32, u32),
            lo: usize,
            hi: usize,
        ) {
            let steps = (
                _mm256_set1_epi32(straight as i32),
                _mm256_set1_epi32(diagonal as i32),
            );
            mark_improving_back(back, rows, steps, lo, hi);
        }
        // SAFETY: an `Avx2` exists only where the CPU has AVX2.
        unsafe { mark(back, rows, (straight, diagonal), lo, hi) }
    }
}

#[cfg(test)]
impl Avx512 {
    /// The prefix scans rightwards and leftwards over sixteen cells, from and to arrays.
    pub(crate) fn prefix_scans(
        self,
        cells: [u32; 16],
        prices: [u32; 16],
        carry: u32,
    ) -> [[u32; 16]; 2] {
        #[target_feature(enable = "avx512f")]
        fn scans(cells: [u32; 16], prices: [u32; 16], carry: u32) -> [[u32; 16]; 2] {
            let mut out = [[0u32; 16]; 2];
            // SAFETY: the loads and stores move 16 u32 from and to arrays of 16.
            unsafe {
                let v = _mm512_loadu_si512(cells.as_ptr().cast());
                let w = _mm512_loadu_si512(prices.as_ptr().cast());
                let c = _mm512_set1_epi32(carry as i32);
                _mm512_storeu_si512(
                    out[0].as_mut_ptr().cast(),
                    wide_prefix_scan::<false>(v, w, c),
                );
                _mm512_storeu_si512(
                    out[1].as_mut_ptr().cast(),
                    wide_prefix_scan::<true>(v, w, c),
                );
            }
            out
        }
        // SAFETY: an `Avx512` exists only where the CPU has AVX-512 F.
        unsafe { scans(cells, prices, carry) }
    }
}
