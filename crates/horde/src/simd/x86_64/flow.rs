//! The flow field's kernels: arrows eight (AVX2) or sixteen (AVX-512) cells at a time, and
//! bilinear samples of eight positions at once for the crowd.

use std::arch::x86_64::*;

use glam::Vec2;

use crate::cost::WALL;
use crate::flow::{
    ARROW_OF_BYTE, ArrowPrices, FLOW_GOAL, FLOW_UNREACHABLE, FLOW_WALL, FieldKind, FlowField,
    RowsAround, at_least, derive_row, derive_spans_with, padded_rows,
};
use crate::simd::{Avx2, Avx512};

impl Avx2 {
    /// The arrows of spans of rows (into `out`, the field's rows from row `first` on), eight
    /// cells at a time; over an exact field (a builder's) by [`derive_row_exact_avx2`], the
    /// same bytes.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn derive_spans(
        self,
        costs: &[u8],
        dist: &[u32],
        pw: usize,
        kind: FieldKind,
        out: &mut [u8],
        first: usize,
        spans: impl Iterator<Item = (usize, usize, usize)> + Clone,
    ) {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { derive_spans_avx2(costs, dist, pw, kind, out, first, spans) }
    }

    /// Whether [`derive_spans`](Self::derive_spans) packs a field of this kind into 8- or
    /// 16-bit lanes (an exact field over plain ground with steps below 256: every Moving AI
    /// map's in the 10-14 model), 32 or 16 cells a register. O(1).
    #[inline]
    pub(crate) fn packs(kind: FieldKind) -> bool {
        kind.exact && kind.plain && narrow_fits(kind)
    }

    /// Whether [`derive_spans`](Self::derive_spans) packs whole rows of a field of this kind,
    /// over a map `w` cells wide, into bytes ([`derive_row_bytes_avx2`]). O(1).
    #[inline]
    pub(crate) fn packs_whole_rows(kind: FieldKind, w: usize) -> bool {
        kind.exact && kind.plain && bytes_fit(kind) && (BYTE_BLOCK..BYTE_ROW - 1).contains(&w)
    }
}

impl Avx512 {
    /// The arrows of spans of rows (into `out`, the field's rows from row `first` on), sixteen
    /// cells at a time; over an exact field (a builder's) with a quarter fewer vector operations
    /// ([`derive_row_exact_avx512`]), the same bytes.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn derive_spans(
        self,
        costs: &[u8],
        dist: &[u32],
        pw: usize,
        kind: FieldKind,
        out: &mut [u8],
        first: usize,
        spans: impl Iterator<Item = (usize, usize, usize)> + Clone,
    ) {
        // SAFETY: an `Avx512` exists only where the CPU has AVX-512 F, BW and VL, the kernel's
        // only requirement.
        unsafe { derive_spans_avx512(costs, dist, pw, kind, out, first, spans) }
    }
}

#[cfg(test)]
impl Avx2 {
    /// [`FlowField::bilinear8`] for the tests.
    pub(crate) fn bilinear8(
        self,
        field: &FlowField,
        pos: &[Vec2; 8],
        xs: &mut [f32; 8],
        ys: &mut [f32; 8],
    ) -> u32 {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { field.bilinear8(pos, xs, ys) }
    }
}

impl FlowField {
    /// [`FlowField::bilinear`] of eight positions at once, in AVX2, for the crowd's step: for every
    /// lane whose bit is set in the returned mask, the direction `(xs[l], ys[l])` with the same
    /// bits as `bilinear` (the same operations in the same order, none fused). The other lanes,
    /// the rare ones, are left for `bilinear`: off the map, on a cell without an arrow, with a
    /// corner off the map or on a goal.
    ///
    /// O(1), without branches; the eight lanes' arithmetic runs side by side.
    #[target_feature(enable = "avx2")]
    pub(in crate::simd) fn bilinear8(
        &self,
        pos: &[Vec2; 8],
        xs: &mut [f32; 8],
        ys: &mut [f32; 8],
    ) -> u32 {
        let cells = self.bytes();
        // Every gather reads 4 bytes from its offset: offsets past this are refused.
        let Some(last_read) = cells.len().checked_sub(4) else {
            return 0;
        };
        let last_read = _mm256_set1_epi32(last_read as i32);
        // SAFETY: reads 16 floats from an array of 8 `Vec2` (two floats each, no padding).
        let (a, b) = unsafe {
            let at = pos.as_ptr().cast::<f32>();
            (_mm256_loadu_ps(at), _mm256_loadu_ps(at.add(8)))
        };
        // x0 x1 x4 x5 | x2 x3 x6 x7, then in order.
        let order = |v: __m256| {
            _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)))
        };
        let px = order(_mm256_shuffle_ps::<0b10_00_10_00>(a, b));
        let py = order(_mm256_shuffle_ps::<0b11_01_11_01>(a, b));
        let g = &self.grid;
        let inv = _mm256_set1_ps(g.inv_cell_size());
        let (ox, oy) = (_mm256_set1_ps(g.origin().x), _mm256_set1_ps(g.origin().y));
        // `world_to_grid`, then `axis_cell` of each axis.
        let (gx, gy) = (
            _mm256_mul_ps(_mm256_sub_ps(px, ox), inv),
            _mm256_mul_ps(_mm256_sub_ps(py, oy), inv),
        );
        let zero = _mm256_setzero_ps();
        let (w, h) = (g.width() as i32, g.height() as i32);
        let (wv, hv) = (_mm256_set1_epi32(w), _mm256_set1_epi32(h));
        let minus_one = _mm256_set1_epi32(-1);
        let (hx, hy) = (_mm256_cvttps_epi32(gx), _mm256_cvttps_epi32(gy));
        // False for NaN, as `g >= 0.0` is; an out-of-range truncation is i32::MIN, refused.
        let on = _mm256_and_si256(
            _mm256_castps_si256(_mm256_and_ps(
                _mm256_cmp_ps::<_CMP_GE_OQ>(gx, zero),
                _mm256_cmp_ps::<_CMP_GE_OQ>(gy, zero),
            )),
            _mm256_and_si256(
                _mm256_and_si256(
                    _mm256_cmpgt_epi32(wv, hx),
                    _mm256_cmpgt_epi32(hx, minus_one),
                ),
                _mm256_and_si256(
                    _mm256_cmpgt_epi32(hv, hy),
                    _mm256_cmpgt_epi32(hy, minus_one),
                ),
            ),
        );
        let here_at = _mm256_add_epi32(_mm256_mullo_epi32(hy, wv), hx);
        // Only lanes on the map gather; the others read offset 0.
        let readable =
            |at: __m256i, ok: __m256i| _mm256_andnot_si256(_mm256_cmpgt_epi32(at, last_read), ok);
        let on = readable(here_at, on);
        let byte = _mm256_set1_epi32(0xff);
        // SAFETY: every offset is 0 or checked above to leave 4 bytes in `cells`.
        let here = unsafe {
            _mm256_i32gather_epi32::<1>(cells.as_ptr().cast(), _mm256_and_si256(here_at, on))
        };
        let here = _mm256_and_si256(here, byte);
        let arrow = _mm256_cmpgt_epi32(_mm256_set1_epi32(8), here);
        // The corners: as `bilinear`, (g + 1) truncated less 1 is the floor of g.
        let half = _mm256_set1_ps(0.5);
        let one = _mm256_set1_ps(1.0);
        let (gx, gy) = (_mm256_sub_ps(gx, half), _mm256_sub_ps(gy, half));
        let ones = _mm256_set1_epi32(1);
        let bx = _mm256_sub_epi32(_mm256_cvttps_epi32(_mm256_add_ps(gx, one)), ones);
        let by = _mm256_sub_epi32(_mm256_cvttps_epi32(_mm256_add_ps(gy, one)), ones);
        let (fx, fy) = (
            _mm256_sub_ps(gx, _mm256_cvtepi32_ps(bx)),
            _mm256_sub_ps(gy, _mm256_cvtepi32_ps(by)),
        );
        let (ux, uy) = (_mm256_sub_ps(one, fx), _mm256_sub_ps(one, fy));
        let weights = [
            _mm256_mul_ps(ux, uy),
            _mm256_mul_ps(fx, uy),
            _mm256_mul_ps(ux, fy),
            _mm256_mul_ps(fx, fy),
        ];
        let inside = _mm256_and_si256(
            _mm256_and_si256(
                _mm256_cmpgt_epi32(bx, minus_one),
                _mm256_cmpgt_epi32(_mm256_sub_epi32(wv, ones), bx),
            ),
            _mm256_and_si256(
                _mm256_cmpgt_epi32(by, minus_one),
                _mm256_cmpgt_epi32(_mm256_sub_epi32(hv, ones), by),
            ),
        );
        let top_at = _mm256_add_epi32(_mm256_mullo_epi32(by, wv), bx);
        let bottom_at = _mm256_add_epi32(top_at, wv);
        let ok = _mm256_and_si256(_mm256_and_si256(on, arrow), inside);
        let ok = readable(bottom_at, ok);
        // SAFETY: as above (and the top row's offset is below the bottom row's).
        let (top, bottom) = unsafe {
            let at = cells.as_ptr().cast();
            (
                _mm256_i32gather_epi32::<1>(at, _mm256_and_si256(top_at, ok)),
                _mm256_i32gather_epi32::<1>(at, _mm256_and_si256(bottom_at, ok)),
            )
        };
        let corner_bytes = [
            _mm256_and_si256(top, byte),
            _mm256_and_si256(_mm256_srli_epi32::<8>(top), byte),
            _mm256_and_si256(bottom, byte),
            _mm256_and_si256(_mm256_srli_epi32::<8>(bottom), byte),
        ];
        let goal = _mm256_set1_epi32(FLOW_GOAL as i32);
        let mut near_goal = _mm256_setzero_si256();
        for b in corner_bytes {
            near_goal = _mm256_or_si256(near_goal, _mm256_cmpeq_epi32(b, goal));
        }
        let ok = _mm256_andnot_si256(near_goal, ok);
        let table = ARROW_OF_BYTE.as_ptr().cast::<f32>();
        // SAFETY: every byte is at most 255, so both floats of `ARROW_OF_BYTE[b]` lie inside
        // the table of 256 `Vec2`.
        let arrow_of = |b: __m256i| unsafe {
            let at = _mm256_add_epi32(b, b);
            (
                _mm256_i32gather_ps::<4>(table, at),
                _mm256_i32gather_ps::<4>(table, _mm256_add_epi32(at, ones)),
            )
        };
        let (mut sx, mut sy) = (zero, zero);
        for (b, wgt) in corner_bytes.into_iter().zip(weights) {
            let (ax, ay) = arrow_of(b);
            sx = _mm256_add_ps(sx, _mm256_mul_ps(ax, wgt));
            sy = _mm256_add_ps(sy, _mm256_mul_ps(ay, wgt));
        }
        let (own_x, own_y) = arrow_of(_mm256_and_si256(here, ok));
        let length2 = _mm256_add_ps(_mm256_mul_ps(sx, sx), _mm256_mul_ps(sy, sy));
        let scale = _mm256_div_ps(one, _mm256_sqrt_ps(length2));
        let (dx, dy) = (_mm256_mul_ps(sx, scale), _mm256_mul_ps(sy, scale));
        let along = _mm256_add_ps(_mm256_mul_ps(dx, own_x), _mm256_mul_ps(dy, own_y));
        let blend = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_GT_OQ>(length2, _mm256_set1_ps(1e-6)),
            _mm256_cmp_ps::<_CMP_GE_OQ>(along, zero),
        );
        // SAFETY: each store writes 8 floats into an array of 8.
        unsafe {
            _mm256_storeu_ps(xs.as_mut_ptr(), _mm256_blendv_ps(own_x, dx, blend));
            _mm256_storeu_ps(ys.as_mut_ptr(), _mm256_blendv_ps(own_y, dy, blend));
        }
        _mm256_movemask_ps(_mm256_castsi256_ps(ok)) as u32
    }
}

/// [`derive_spans_with`] with the AVX2 row kernel for the kind of field.
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
fn derive_spans_avx2(
    costs: &[u8],
    dist: &[u32],
    pw: usize,
    kind: FieldKind,
    out: &mut [u8],
    first: usize,
    spans: impl Iterator<Item = (usize, usize, usize)> + Clone,
) {
    let fetch = |p: *const u8| _mm_prefetch::<_MM_HINT_T0>(p.cast());
    let w = pw - 2;
    // Whole rows (a map not built from a small footprint) go by bytes; the spans of a footprint,
    // parts of rows seldom one below the other over the same columns, by the 16-bit kernel.
    let whole_rows = spans
        .clone()
        .next()
        .is_some_and(|(_, a, b)| a == 1 && b == w);
    if whole_rows && Avx2::packs_whole_rows(kind, w) {
        let field = (costs, dist, pw, kind);
        let mut cache = ByteRows::new(w);
        let bytes = |rows: RowsAround<'_>, prices, row: &mut [u8]| {
            derive_row_bytes_avx2(&mut cache, rows, prices, row)
        };
        let spans = spans.map(move |span| at_least(span, NARROW_BLOCK, w));
        return derive_spans_with(field, out, first, spans, bytes, fetch);
    }
    if kind.exact && kind.plain && narrow_fits(kind) {
        let field = (costs, dist, pw, kind);
        let narrow = |rows: RowsAround<'_>, prices, row: &mut [u8]| {
            derive_row_narrow_avx2(rows, prices, row)
        };
        // Spans without their end walls (a room's row) are often shorter than the kernel's
        // block, which the 32-bit kernel would take: they grow to a block within their row.
        let spans = spans.map(move |span| at_least(span, NARROW_BLOCK, w));
        return derive_spans_with(field, out, first, spans, narrow, fetch);
    }
    derive_spans_of_kind(
        (costs, dist, pw, kind),
        out,
        first,
        spans,
        |rows, prices, row| derive_row_exact_avx2::<false>(rows, prices, row),
        |rows, prices, row| derive_row_exact_avx2::<true>(rows, prices, row),
        |rows, prices, row| derive_row_avx2(rows, prices, row),
        fetch,
    );
}

/// The cells [`derive_row_narrow_avx2`] does at a time (rows shorter go to the 32-bit kernel).
const NARROW_BLOCK: usize = 16;

/// The highest value a cell may hold for [`derive_row_narrow_avx2`] to work out its arrow in
/// 16-bit lanes: its neighbours' values, at most a step more on plain ground, then stay below
/// `i16::MAX`, which stands for "no value" there.
const NARROW_LIMIT: u32 = i16::MAX as u32 - 256;

/// Whether [`derive_row_narrow_avx2`] serves a field of this kind: steps of at most 255 (the
/// 10-14 model, not octile's), and "no value" from `i16::MAX` on, so that every value without
/// one packs to a 16-bit lane of `i16::MAX` or more.
fn narrow_fits(kind: FieldKind) -> bool {
    kind.model.diagonal() <= 255 && kind.model.straight() <= 255 && kind.none >= i16::MAX as u32
}

/// [`derive_row_exact_avx2`] over plain ground, sixteen cells a block in 16-bit lanes: the values
/// are packed two vectors into one as they are loaded, and every test after that does sixteen
/// cells, nearly half the operations a cell. A block holding a value above [`NARROW_LIMIT`]
/// goes to the 32-bit kernel, as do rows shorter than a block.
///
/// In 16-bit lanes, values from `i16::MAX` on (where "no value" packs to) stay apart from the
/// real ones by saturating adds: a neighbour's value `v` is where the cell steps when `v` plus
/// the step is the cell's value (no test that the cell's value is at least the step). A diagonal
/// needs both sides open: on an exact field a side is at most a straight step above the
/// diagonal neighbour beside it, so the larger side less a straight step is at most the
/// diagonal's value unless a side has no value, when it is near `i16::MAX` and the offer
/// overshoots every real value. The same bytes as [`derive_row_exact_avx2`] (the tests compare
/// them).
#[target_feature(enable = "avx2")]
fn derive_row_narrow_avx2(rows: RowsAround<'_>, prices: ArrowPrices, row: &mut [u8]) {
    const WIDE: usize = NARROW_BLOCK;
    let w = row.len();
    if w < WIDE {
        return derive_row_exact_avx2::<true>(rows, prices, row);
    }
    let (up, mid, down, terrain) = padded_rows(rows, w);
    let (straight, diagonal, _) = prices;
    let splat = |v: u32| _mm256_set1_epi16(v as i16);
    let (s, g) = (splat(straight), splat(diagonal));
    let no_value = splat(i16::MAX as u32);
    let limit = _mm256_set1_epi32(NARROW_LIMIT as i32);
    let load = |values: &[u32], at: usize| {
        let lanes: &[u32; WIDE] = values[at..at + WIDE].try_into().expect("16 values");
        // SAFETY: reads 8 u32 twice from an array of 16.
        unsafe {
            (
                _mm256_loadu_si256(lanes.as_ptr().cast()),
                _mm256_loadu_si256(lanes.as_ptr().add(8).cast()),
            )
        }
    };
    // Sixteen values in 16-bit lanes, signed saturation: real values up to the limit as they
    // are, larger ones (INF) at `i16::MAX`, UNREACHABLE (-1 as i32) at 0xFFFF. The lanes come in
    // the order of `_mm256_packs_epi32` (cells 0-3, 8-11, 4-7, 12-15), the same for every row,
    // which only the bytes at the end undo.
    let pack = |(lo, hi): (__m256i, __m256i)| _mm256_packs_epi32(lo, hi);
    let wall = _mm_set1_epi8(WALL as i8);
    for x in arrow_blocks(w, WIDE) {
        let bytes: &[u8; WIDE] = terrain[x + 1..x + 1 + WIDE].try_into().expect("16 cells");
        // SAFETY: reads 16 bytes from an array of 16.
        let is_wall = _mm_cmpeq_epi8(unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }, wall);
        let here_wide = load(mid, x + 1);
        // Above the limit, or INF (a signed compare: UNREACHABLE is -1): the 32-bit kernel.
        let large = _mm256_or_si256(
            _mm256_cmpgt_epi32(here_wide.0, limit),
            _mm256_cmpgt_epi32(here_wide.1, limit),
        );
        let cells = &mut row[x..x + WIDE];
        if _mm256_testz_si256(large, large) == 0 {
            let around = (&up[x..], &mid[x..], &down[x..], &terrain[x..]);
            derive_row_exact_avx2::<true>(around, prices, cells);
            continue;
        }
        let here = pack(here_wide);
        // All ones where the cell has no value.
        let unreached = _mm256_cmpeq_epi16(_mm256_max_epu16(here, no_value), here);
        let byte = if _mm256_movemask_epi8(unreached) == -1 {
            _mm256_set1_epi16(FLOW_UNREACHABLE as i16)
        } else {
            let around = Around::of([up, mid, down], x, |row, at| pack(load(row, at)));
            let straight_to = |v| _mm256_cmpeq_epi16(_mm256_adds_epu16(v, s), here);
            let diagonal_to = |v, a, b| {
                let sides = _mm256_subs_epu16(_mm256_max_epu16(a, b), s);
                _mm256_cmpeq_epi16(_mm256_adds_epu16(_mm256_max_epu16(v, sides), g), here)
            };
            let to = around.by_direction(straight_to, diagonal_to);
            // The lowest direction wins; a reached cell with none is a sink.
            let mut byte = splat(FLOW_GOAL as u32);
            for d in (0..8).rev() {
                byte = _mm256_blendv_epi8(byte, splat(d as u32), to[d]);
            }
            _mm256_blendv_epi8(byte, splat(FLOW_UNREACHABLE as u32), unreached)
        };
        // Sixteen lanes to bytes, back in the cells' order, walls set apart.
        let packed = _mm256_packus_epi16(byte, byte);
        let sixteen = _mm_unpacklo_epi32(
            _mm256_castsi256_si128(packed),
            _mm256_extracti128_si256::<1>(packed),
        );
        let sixteen = _mm_blendv_epi8(sixteen, _mm_set1_epi8(FLOW_WALL as i8), is_wall);
        let out: &mut [u8; WIDE] = cells.try_into().expect("16 cells");
        // SAFETY: writes 16 bytes into an array of 16.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), sixteen) };
    }
}

/// The cells [`derive_row_bytes_avx2`] does at a time.
const BYTE_BLOCK: usize = 32;

/// The widest map, with a column either side, whose rows [`ByteRows`] hold: wider ones go to
/// the 16-bit kernel.
const BYTE_ROW: usize = 4096;

/// Whether [`derive_row_bytes_avx2`] serves a field of this kind: steps below 16 (the 10-14
/// model), so that values five bits wide tell every step apart (see [`ByteRows`]).
fn bytes_fit(kind: FieldKind) -> bool {
    kind.model.diagonal() < 16 && kind.model.straight() <= kind.model.diagonal()
}

/// The three rows of values around a row of [`derive_row_bytes_avx2`], a byte a cell: the
/// value's five low bits, and the top bit set where the cell has no value. On an exact field
/// over plain ground, two cells a legal step apart differ by at most that step (each holds at
/// most the other's value plus the step), so with steps below 16 the difference of their five
/// low bits, modulo 32, is the step exactly when the difference of their values is; a
/// neighbour without a value (a wall, as every walkable neighbour of a reached cell is
/// reached) never matches. The rows are kept for the next row below: each row's values are
/// turned into bytes once instead of three times. 12 KB on the stack.
struct ByteRows {
    rows: [[u8; BYTE_ROW]; 3],
    /// Which of `rows` holds the row above, the row and the row below.
    order: [usize; 3],
    /// The last row's values (their start) and length, and whether `rows` hold the rows
    /// around it.
    last: (*const u32, usize),
    held: bool,
    /// The map's width: whole rows only go by bytes.
    width: usize,
    /// Where the CPU has AVX-512, the rows are turned into bytes sixteen values an instruction.
    wide: Option<Avx512>,
}

impl ByteRows {
    fn new(width: usize) -> ByteRows {
        ByteRows {
            rows: [[0; BYTE_ROW]; 3],
            order: [0, 1, 2],
            last: (std::ptr::null(), 0),
            held: false,
            width,
            wide: crate::simd::cpu().avx512,
        }
    }

    /// `values` into row `k` ([`encode_bytes`], or its AVX-512 form).
    #[inline(always)]
    fn encode(&mut self, values: &[u32], none: u32, k: usize) {
        match self.wide {
            Some(avx512) => avx512.encode_bytes(values, none, &mut self.rows[k]),
            // SAFETY: the byte kernel, the only caller, runs where the CPU has AVX2.
            None => unsafe { encode_bytes(values, none, &mut self.rows[k]) },
        }
    }
}

impl Avx512 {
    /// [`encode_bytes`] sixteen values at a time, each narrowed to its byte by one instruction.
    #[inline]
    fn encode_bytes(self, values: &[u32], none: u32, out: &mut [u8]) {
        // SAFETY: an `Avx512` exists only where the CPU has AVX-512 F, BW and VL, the kernel's
        // only requirement.
        unsafe { encode_bytes_avx512(values, none, out) }
    }
}

/// [`encode_bytes`] for CPUs with AVX-512: the same bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn encode_bytes_avx512(values: &[u32], none: u32, out: &mut [u8]) {
    const WIDE: usize = 16;
    let n = values.len();
    let none = _mm512_set1_epi32(none as i32);
    let (low, flag) = (_mm512_set1_epi32(31), _mm512_set1_epi32(0x80));
    let mut at = 0;
    loop {
        // The last 16 values end at the row's end, over values done too.
        let from = at.min(n - WIDE);
        let lanes: &[u32; WIDE] = values[from..from + WIDE].try_into().expect("16 values");
        let dst: &mut [u8; WIDE] = (&mut out[from..from + WIDE]).try_into().expect("16 bytes");
        // SAFETY: reads 16 u32 from an array of 16, writes 16 bytes into an array of 16.
        unsafe {
            let v = _mm512_loadu_si512(lanes.as_ptr().cast());
            let no_value = _mm512_cmpge_epu32_mask(v, none);
            let five = _mm512_and_si512(v, low);
            let byte = _mm512_mask_or_epi32(five, no_value, five, flag);
            _mm_storeu_si128(dst.as_mut_ptr().cast(), _mm512_cvtepi32_epi8(byte));
        }
        if from + WIDE >= n {
            break;
        }
        at += WIDE;
    }
}

/// `values` (at least 32) as [`ByteRows`] holds them, into the start of `out`.
#[target_feature(enable = "avx2")]
fn encode_bytes(values: &[u32], none: u32, out: &mut [u8]) {
    const WIDE: usize = BYTE_BLOCK;
    let n = values.len();
    let none = _mm256_set1_epi32(none as i32);
    let (low, flag) = (_mm256_set1_epi32(31), _mm256_set1_epi32(0x80));
    // The bytes of the packs below come in the order of four lanes of each vector per 128-bit
    // half: dwords back in the cells' order.
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let byte_of = |v: __m256i| {
        let no_value = _mm256_cmpeq_epi32(_mm256_max_epu32(v, none), v);
        _mm256_or_si256(_mm256_and_si256(v, low), _mm256_and_si256(no_value, flag))
    };
    let mut at = 0;
    loop {
        // The last 32 values end at the row's end, over values done too.
        let from = at.min(n - WIDE);
        let lanes: &[u32; WIDE] = values[from..from + WIDE].try_into().expect("32 values");
        // SAFETY: reads 8 u32 four times from an array of 32.
        let v = unsafe {
            let p = lanes.as_ptr();
            [0, 8, 16, 24].map(|k| _mm256_loadu_si256(p.add(k).cast()))
        };
        let words = (
            _mm256_packus_epi32(byte_of(v[0]), byte_of(v[1])),
            _mm256_packus_epi32(byte_of(v[2]), byte_of(v[3])),
        );
        let bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words.0, words.1), order);
        let dst: &mut [u8; WIDE] = (&mut out[from..from + WIDE]).try_into().expect("32 bytes");
        // SAFETY: writes 32 bytes into an array of 32.
        unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), bytes) };
        if from + WIDE >= n {
            break;
        }
        at += WIDE;
    }
}

/// [`derive_row_exact_avx2`] over plain ground with steps below 16, thirty-two cells a block in
/// bytes (see [`ByteRows`], which `cache` holds): a cell steps to the lowest direction whose
/// neighbour's byte is the cell's less the step (modulo 32), a diagonal only where neither side
/// lacks a value. About half the operations a cell of the 16-bit kernel, which takes the rows
/// that are not whole rows below the last (the first row, the spans of a footprint). The same
/// bytes as [`derive_row_exact_avx2`] (the tests compare them).
#[target_feature(enable = "avx2")]
fn derive_row_bytes_avx2(
    cache: &mut ByteRows,
    rows: RowsAround<'_>,
    prices: ArrowPrices,
    row: &mut [u8],
) {
    const WIDE: usize = BYTE_BLOCK;
    let len = row.len();
    let (up, mid, down, terrain) = padded_rows(rows, len);
    let next = cache.last == (up.as_ptr(), len);
    cache.last = (mid.as_ptr(), len);
    if !next || len != cache.width {
        // Not a whole row below the last one (the first row, or a span of a footprint): by
        // the 16-bit kernel; the rows are worked out when the next row goes on from this one.
        cache.held = false;
        return derive_row_narrow_avx2(rows, prices, row);
    }
    let (straight, diagonal, none) = prices;
    if cache.held {
        // The row below the last one: the last row's rows of here and below are this one's
        // above and here.
        let [above, here, below] = cache.order;
        cache.order = [here, below, above];
        cache.encode(down, none, above);
    } else {
        for (values, k) in [up, mid, down].into_iter().zip(cache.order) {
            cache.encode(values, none, k);
        }
        cache.held = true;
    }
    let [u, m, d] = cache.order.map(|k| &cache.rows[k][..len + 2]);
    let load = |bytes: &[u8], at: usize| {
        let lanes: &[u8; WIDE] = bytes[at..at + WIDE].try_into().expect("32 bytes");
        // SAFETY: reads 32 bytes from an array of 32.
        unsafe { _mm256_loadu_si256(lanes.as_ptr().cast()) }
    };
    let splat = |v: u32| _mm256_set1_epi8(v as u8 as i8);
    let (s, g) = (splat(straight), splat(diagonal));
    let (wall, zero) = (splat(WALL as u32), _mm256_setzero_si256());
    // The difference to a neighbour's byte, from the cell's five bits plus 32: 1 to 63 (the
    // difference of the values' five bits, plus 32) unless the neighbour has no value, when it
    // is 129 or more; these bits keep the difference's five bits and the mark of no value.
    let (above_32, difference_bits) = (splat(32), splat(0x9F));
    for x in arrow_blocks(len, WIDE) {
        let here = load(m, x + 1);
        let is_wall = _mm256_cmpeq_epi8(load(terrain, x + 1), wall);
        if _mm256_movemask_epi8(here) == -1 {
            // No cell of the block has a value (rock between caves): its bytes come from the
            // terrain alone.
            let byte = _mm256_blendv_epi8(
                splat(FLOW_UNREACHABLE as u32),
                splat(FLOW_WALL as u32),
                is_wall,
            );
            let out: &mut [u8; WIDE] = (&mut row[x..x + WIDE]).try_into().expect("32 cells");
            // SAFETY: writes 32 bytes into an array of 32.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), byte) };
            continue;
        }
        let lifted = _mm256_add_epi8(here, above_32);
        let less = |v| _mm256_and_si256(_mm256_sub_epi8(lifted, v), difference_bits);
        let around = Around::of([u, m, d], x, load);
        let straight_to = |v| _mm256_cmpeq_epi8(less(v), s);
        // Barred where either side has no value (the top bit of either).
        let diagonal_to = |v, a, b| {
            _mm256_blendv_epi8(_mm256_cmpeq_epi8(less(v), g), zero, _mm256_or_si256(a, b))
        };
        let to = around.by_direction(straight_to, diagonal_to);
        // The lowest direction wins; a reached cell with none is a sink.
        let mut byte = splat(FLOW_GOAL as u32);
        for dir in (0..8).rev() {
            byte = _mm256_blendv_epi8(byte, splat(dir as u32), to[dir]);
        }
        // A cell without a value (its top bit) is unreachable, or a wall by its terrain.
        let byte = _mm256_blendv_epi8(byte, splat(FLOW_UNREACHABLE as u32), here);
        let byte = _mm256_blendv_epi8(byte, splat(FLOW_WALL as u32), is_wall);
        let out: &mut [u8; WIDE] = (&mut row[x..x + WIDE]).try_into().expect("32 cells");
        // SAFETY: writes 32 bytes into an array of 32.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), byte) };
    }
}

/// A row kernel's signature (see [`derive_row`]).
trait RowKernel: Fn(RowsAround<'_>, ArrowPrices, &mut [u8]) {}
impl<F: Fn(RowsAround<'_>, ArrowPrices, &mut [u8])> RowKernel for F {}

/// [`derive_spans_with`] with `exact_row` over an exact field (see [`FieldKind`]),
/// `exact_plain_row` over an exact one of plain ground only, and `general_row` over any other:
/// the vector sets' one choice by kind.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn derive_spans_of_kind(
    field: (&[u8], &[u32], usize, FieldKind),
    out: &mut [u8],
    first: usize,
    spans: impl Iterator<Item = (usize, usize, usize)> + Clone,
    exact_row: impl RowKernel,
    exact_plain_row: impl RowKernel,
    general_row: impl RowKernel,
    fetch: impl Fn(*const u8),
) {
    if field.3.exact && field.3.plain {
        derive_spans_with(field, out, first, spans, exact_plain_row, fetch);
    } else if field.3.exact {
        derive_spans_with(field, out, first, spans, exact_row, fetch);
    } else {
        derive_spans_with(field, out, first, spans, general_row, fetch);
    }
}

/// The values of a block's eight neighbours, a vector each (eight lanes with AVX2, sixteen with
/// AVX-512).
struct Around<V> {
    n: V,
    ne: V,
    e: V,
    se: V,
    s: V,
    sw: V,
    w: V,
    nw: V,
}

impl<V> Around<V> {
    /// The neighbours of the block of cells from column `x + 1` of the middle of `rows` (the
    /// row above, the row and the row below), `load(row, column)` reading a vector of a row
    /// from a column on: the one place that lays the neighbours out.
    #[inline(always)]
    fn of<R: Copy>([up, mid, down]: [R; 3], x: usize, load: impl Fn(R, usize) -> V) -> Around<V> {
        Around {
            n: load(up, x + 1),
            ne: load(up, x + 2),
            e: load(mid, x + 2),
            se: load(down, x + 2),
            s: load(down, x + 1),
            sw: load(down, x),
            w: load(mid, x),
            nw: load(up, x),
        }
    }
}

impl<V: Copy> Around<V> {
    /// `straight(v)` for each straight neighbour and `diagonal(v, a, b)` for each diagonal one
    /// with the two straight neighbours beside it (which the corner rule needs open), in the
    /// order of the flow's directions (N, NE, E, SE, S, SW, W, NW): the one place every vector
    /// arrow kernel takes the neighbours' layout from.
    #[inline(always)]
    fn by_direction<R>(
        &self,
        straight: impl Fn(V) -> R,
        diagonal: impl Fn(V, V, V) -> R,
    ) -> [R; 8] {
        [
            straight(self.n),
            diagonal(self.ne, self.n, self.e),
            straight(self.e),
            diagonal(self.se, self.s, self.e),
            straight(self.s),
            diagonal(self.sw, self.s, self.w),
            straight(self.w),
            diagonal(self.nw, self.n, self.w),
        ]
    }
}

/// The rows of arrows of the AVX2 kernels, eight cells at a time ([`arrow_blocks`]): `arrows`
/// gives a block's bytes (in the low byte of each 32-bit lane) from its terrain, its walls (all
/// ones in a lane), its values and its neighbours'; a block without a value takes its bytes from
/// the terrain alone.
#[target_feature(enable = "avx2")]
#[inline]
fn arrows_avx2(
    rows: RowsAround<'_>,
    prices: ArrowPrices,
    row: &mut [u8],
    arrows: impl Fn(__m256i, __m256i, __m256i, &Around<__m256i>) -> __m256i,
) {
    const WIDE: usize = 8;
    let w = row.len();
    let (up, mid, down, terrain) = padded_rows(rows, w);
    let (_, _, none) = prices;
    let load = |values: &[u32], at: usize| {
        let lanes: &[u32; WIDE] = values[at..at + WIDE].try_into().expect("8 values");
        // SAFETY: reads 8 u32 from an array of 8.
        unsafe { _mm256_loadu_si256(lanes.as_ptr().cast()) }
    };
    let splat = |v: u32| _mm256_set1_epi32(v as i32);
    let none_v = splat(none);
    for x in arrow_blocks(w, WIDE) {
        let bytes: &[u8; WIDE] = terrain[x + 1..x + 1 + WIDE].try_into().expect("8 cells");
        // SAFETY: reads 8 bytes from an array of 8.
        let t = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(bytes.as_ptr().cast()) });
        let is_wall = _mm256_cmpeq_epi32(t, splat(WALL as u32));
        let here = load(mid, x + 1);
        // All ones where the cell has no value (from `none` on, unsigned).
        let unreached = _mm256_cmpeq_epi32(_mm256_max_epu32(here, none_v), here);
        let byte = if _mm256_movemask_ps(_mm256_castsi256_ps(unreached)) == 0xFF {
            _mm256_blendv_epi8(
                splat(FLOW_UNREACHABLE as u32),
                splat(FLOW_WALL as u32),
                is_wall,
            )
        } else {
            let around = Around::of([up, mid, down], x, load);
            arrows(t, is_wall, here, &around)
        };
        // Eight u32 lanes (each below 256) to eight bytes.
        let words = _mm256_packus_epi32(byte, byte);
        let packed = _mm256_packus_epi16(words, words);
        let eight = _mm_unpacklo_epi32(
            _mm256_castsi256_si128(packed),
            _mm256_extracti128_si256::<1>(packed),
        );
        let out: &mut [u8; WIDE] = (&mut row[x..x + WIDE]).try_into().expect("8 cells");
        // SAFETY: writes 8 bytes into an array of 8.
        unsafe { _mm_storel_epi64(out.as_mut_ptr().cast(), eight) };
    }
    short_row(WIDE, rows, prices, row);
}

/// [`derive_row_exact_avx512`] eight cells at a time in AVX2, for CPUs without AVX-512: over an
/// exact field the arrow is the lowest direction whose neighbour holds this cell's value less
/// the step, and a cell with none is a sink, so no offer is summed and no minimum taken. The
/// same bytes as [`derive_row_avx2`] on such a field (the tests compare them).
///
/// With `PLAIN` (every walkable cell of the map of terrain `PLAIN`), a step costs its base price:
/// the terrain is not multiplied in (a wall's lane is set apart at the end whatever it held).
#[target_feature(enable = "avx2")]
fn derive_row_exact_avx2<const PLAIN: bool>(
    rows: RowsAround<'_>,
    prices: ArrowPrices,
    row: &mut [u8],
) {
    let (straight, diagonal, none) = prices;
    let splat = |v: u32| _mm256_set1_epi32(v as i32);
    let (straight_v, diagonal_v, none_v) = (splat(straight), splat(diagonal), splat(none));
    // Unsigned `a >= b`, all ones or zero in each lane.
    let at_least = |a, b| _mm256_cmpeq_epi32(_mm256_max_epu32(a, b), a);
    arrows_avx2(rows, prices, row, |t, is_wall, here, a| {
        // Bases below 2^15 (asserted beside `CostModel`): a 16-bit `madd` multiplies them by
        // the terrain.
        let (s, g) = if PLAIN {
            (straight_v, diagonal_v)
        } else {
            (
                _mm256_madd_epi16(t, straight_v),
                _mm256_madd_epi16(t, diagonal_v),
            )
        };
        let unreached = at_least(here, none_v);
        // The values a neighbour holds if the step to it is the cheapest; none where this
        // cell's value is below the step (no neighbour's can be).
        let (here_s, here_g) = (_mm256_sub_epi32(here, s), _mm256_sub_epi32(here, g));
        // (A lane without a value may match too: its byte is set apart at the end.)
        let fits_s = at_least(here, s);
        let fits_g = at_least(here, g);
        let straight_to = |v| _mm256_and_si256(fits_s, _mm256_cmpeq_epi32(v, here_s));
        // A diagonal past a side without a value (a wall) is no way.
        let diagonal_to = |v, a, b| {
            let blocked = at_least(_mm256_max_epu32(a, b), none_v);
            let to = _mm256_and_si256(fits_g, _mm256_cmpeq_epi32(v, here_g));
            _mm256_andnot_si256(blocked, to)
        };
        let to = a.by_direction(straight_to, diagonal_to);
        // The lowest direction wins; a reached cell with none is a sink.
        let mut byte = splat(FLOW_GOAL as u32);
        for d in (0..8).rev() {
            byte = _mm256_blendv_epi8(byte, splat(d as u32), to[d]);
        }
        byte = _mm256_blendv_epi8(byte, splat(FLOW_UNREACHABLE as u32), unreached);
        _mm256_blendv_epi8(byte, splat(FLOW_WALL as u32), is_wall)
    });
}

/// [`derive_row`] eight cells at a time, written out in AVX2: the compiler vectorises the plain
/// loop 32 cells wide (for the byte output) and spills registers, at about twice the time.
/// The same bytes: the same offers, ties to the lowest direction, the same order of tests.
#[target_feature(enable = "avx2")]
fn derive_row_avx2(rows: RowsAround<'_>, prices: ArrowPrices, row: &mut [u8]) {
    let (straight, diagonal, none) = prices;
    let all = _mm256_set1_epi32(-1); // UNREACHABLE in every lane
    let splat = |v: u32| _mm256_set1_epi32(v as i32);
    let (straight_v, diagonal_v) = (splat(straight), splat(diagonal));
    let none_v = splat(none);
    arrows_avx2(rows, prices, row, |t, is_wall, here, a| {
        // Bases below 2^15 (asserted beside `CostModel`): a 16-bit `madd` multiplies them by
        // the terrain, cheaper than the 32-bit `mullo`.
        let (s, g) = (
            _mm256_madd_epi16(t, straight_v),
            _mm256_madd_epi16(t, diagonal_v),
        );
        let (room_s, room_g) = (_mm256_sub_epi32(all, s), _mm256_sub_epi32(all, g));
        let plus_s = |v| _mm256_add_epi32(_mm256_min_epu32(v, room_s), s);
        // A side without a value (from `none` on) turns the diagonal's offer into all ones.
        let diag = |v, a, b| {
            let side = _mm256_max_epu32(a, b);
            let blocked = _mm256_cmpeq_epi32(_mm256_max_epu32(side, none_v), side);
            _mm256_or_si256(_mm256_add_epi32(_mm256_min_epu32(v, room_g), g), blocked)
        };
        let offers = a.by_direction(plus_s, diag);
        let best = offers[1..]
            .iter()
            .fold(offers[0], |m, &o| _mm256_min_epu32(m, o));
        let mut byte = splat(7);
        for d in (0..7).rev() {
            let here_best = _mm256_cmpeq_epi32(offers[d], best);
            byte = _mm256_blendv_epi8(byte, splat(d as u32), here_best);
        }
        // best > here (unsigned): max(best, here) is not here.
        let sink = _mm256_xor_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(best, here), here), all);
        byte = _mm256_blendv_epi8(byte, splat(FLOW_GOAL as u32), sink);
        byte = _mm256_blendv_epi8(
            byte,
            splat(FLOW_UNREACHABLE as u32),
            _mm256_cmpeq_epi32(_mm256_max_epu32(here, none_v), here),
        );
        _mm256_blendv_epi8(byte, splat(FLOW_WALL as u32), is_wall)
    });
}

/// [`derive_spans_with`] with the AVX-512 row kernel for the kind of field.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[allow(clippy::too_many_arguments)]
fn derive_spans_avx512(
    costs: &[u8],
    dist: &[u32],
    pw: usize,
    kind: FieldKind,
    out: &mut [u8],
    first: usize,
    spans: impl Iterator<Item = (usize, usize, usize)> + Clone,
) {
    derive_spans_of_kind(
        (costs, dist, pw, kind),
        out,
        first,
        spans,
        |rows, prices, row| derive_row_exact_avx512::<false>(rows, prices, row),
        |rows, prices, row| derive_row_exact_avx512::<true>(rows, prices, row),
        |rows, prices, row| derive_row_avx512(rows, prices, row),
        |p| _mm_prefetch::<_MM_HINT_T0>(p.cast()),
    );
}

/// Where the vector arrow kernels' blocks of `wide` cells start in a row of `w`: every `wide`
/// cells, the last block ending at the row's end, over cells done already (an arrow depends only
/// on the cells around it, so they come out the same); none in a row shorter than a block
/// (see [`short_row`]).
fn arrow_blocks(w: usize, wide: usize) -> impl Iterator<Item = usize> {
    let blocks = if w < wide { 0 } else { w.div_ceil(wide) };
    (0..blocks).map(move |k| (k * wide).min(w - wide))
}

/// A row shorter than the vector kernels' blocks (`wide` cells), by the plain kernel.
#[inline(always)]
fn short_row(wide: usize, rows: RowsAround<'_>, prices: ArrowPrices, row: &mut [u8]) {
    if row.len() < wide {
        derive_row(rows, prices, row);
    }
}

/// The rows of arrows of the AVX-512 kernels, sixteen cells at a time ([`arrow_blocks`]):
/// `arrows` gives a block's bytes from its terrain, its values and its neighbours'; a block
/// without a value takes its bytes from the terrain alone (the water of a lake map, rock between
/// rooms).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
fn arrows_avx512(
    rows: RowsAround<'_>,
    prices: ArrowPrices,
    row: &mut [u8],
    arrows: impl Fn(__m128i, __m512i, &Around<__m512i>) -> __m128i,
) {
    const WIDE: usize = 16;
    let w = row.len();
    let (up, mid, down, terrain) = padded_rows(rows, w);
    let (_, _, none) = prices;
    let load = |values: &[u32], at: usize| {
        let lanes: &[u32; WIDE] = values[at..at + WIDE].try_into().expect("16 values");
        // SAFETY: reads 16 u32 from an array of 16.
        unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) }
    };
    let none_v = _mm512_set1_epi32(none as i32);
    let wall = _mm_set1_epi8(WALL as i8);
    for x in arrow_blocks(w, WIDE) {
        let bytes: &[u8; WIDE] = terrain[x + 1..x + 1 + WIDE].try_into().expect("16 cells");
        // SAFETY: reads 16 bytes from an array of 16.
        let tc = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
        let here = load(mid, x + 1);
        let byte = if _mm512_cmpge_epu32_mask(here, none_v) == u16::MAX {
            _mm_mask_blend_epi8(
                _mm_cmpeq_epi8_mask(tc, wall),
                _mm_set1_epi8(FLOW_UNREACHABLE as i8),
                _mm_set1_epi8(FLOW_WALL as i8),
            )
        } else {
            let around = Around::of([up, mid, down], x, load);
            arrows(tc, here, &around)
        };
        let out: &mut [u8; WIDE] = (&mut row[x..x + WIDE]).try_into().expect("16 cells");
        // SAFETY: writes 16 bytes into an array of 16.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), byte) };
    }
    short_row(WIDE, rows, prices, row);
}

/// [`derive_row_avx512`] over an exact field: one whose every reached cell holds the least of
/// its neighbours' values plus the step to each (a step's price times this cell's terrain), or
/// less (a seed's own value), as a builder's do. The cheapest step then costs exactly this
/// cell's value, so the arrow is the lowest direction whose neighbour holds this cell's value
/// less the step, and a cell with none is a sink: no sum over the eight offers and no minimum
/// of them. The same bytes as the general kernel on such a field (the tests compare them).
///
/// With `PLAIN`, as [`derive_row_exact_avx2`]: the terrain is not multiplied in.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn derive_row_exact_avx512<const PLAIN: bool>(
    rows: RowsAround<'_>,
    prices: ArrowPrices,
    row: &mut [u8],
) {
    let (straight, diagonal, none) = prices;
    let splat = |v: u32| _mm512_set1_epi32(v as i32);
    let (straight_v, diagonal_v, none_v) = (splat(straight), splat(diagonal), splat(none));
    let wall = _mm_set1_epi8(WALL as i8);
    arrows_avx512(rows, prices, row, |tc, here, a| {
        let (s, g) = if PLAIN {
            (straight_v, diagonal_v)
        } else {
            let t = _mm512_cvtepu8_epi32(tc);
            (
                _mm512_madd_epi16(t, straight_v),
                _mm512_madd_epi16(t, diagonal_v),
            )
        };
        let reached = _mm512_cmplt_epu32_mask(here, none_v);
        // The values a neighbour holds if the step to it is the cheapest; none where this
        // cell's value is below the step (no neighbour's can be).
        let (here_s, here_g) = (_mm512_sub_epi32(here, s), _mm512_sub_epi32(here, g));
        let (fits_s, fits_g) = (
            reached & _mm512_cmpge_epu32_mask(here, s),
            reached & _mm512_cmpge_epu32_mask(here, g),
        );
        let straight_to = |v| _mm512_mask_cmpeq_epu32_mask(fits_s, v, here_s);
        // A diagonal past a side without a value (a wall) is no way.
        let diagonal_to = |v, a, b| {
            let open = !_mm512_cmpge_epu32_mask(_mm512_max_epu32(a, b), none_v);
            _mm512_mask_cmpeq_epu32_mask(fits_g & open, v, here_g)
        };
        let to = a.by_direction(straight_to, diagonal_to);
        // The lowest direction wins; a reached cell with none is a sink.
        let mut byte = splat(FLOW_GOAL as u32);
        for d in (0..8).rev() {
            byte = _mm512_mask_mov_epi32(byte, to[d], splat(d as u32));
        }
        byte = _mm512_mask_mov_epi32(splat(FLOW_UNREACHABLE as u32), reached, byte);
        byte = _mm512_mask_mov_epi32(byte, _mm_cmpeq_epi8_mask(tc, wall), splat(FLOW_WALL as u32));
        _mm512_cvtepi32_epi8(byte)
    });
}

/// [`derive_row_avx2`] sixteen cells at a time, with mask registers for the tests: the same
/// bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn derive_row_avx512(rows: RowsAround<'_>, prices: ArrowPrices, row: &mut [u8]) {
    let (straight, diagonal, none) = prices;
    let all = _mm512_set1_epi32(-1); // UNREACHABLE in every lane
    let splat = |v: u32| _mm512_set1_epi32(v as i32);
    let (straight_v, diagonal_v, none_v) = (splat(straight), splat(diagonal), splat(none));
    let wall = _mm_set1_epi8(WALL as i8);
    arrows_avx512(rows, prices, row, |tc, here, a| {
        let t = _mm512_cvtepu8_epi32(tc);
        let (s, g) = (
            _mm512_madd_epi16(t, straight_v),
            _mm512_madd_epi16(t, diagonal_v),
        );
        let (room_s, room_g) = (_mm512_sub_epi32(all, s), _mm512_sub_epi32(all, g));
        let plus_s = |v| _mm512_add_epi32(_mm512_min_epu32(v, room_s), s);
        // A side without a value (from `none` on) makes the diagonal's offer all ones.
        let diag = |v, a, b| {
            let blocked = _mm512_cmpge_epu32_mask(_mm512_max_epu32(a, b), none_v);
            _mm512_mask_mov_epi32(
                _mm512_add_epi32(_mm512_min_epu32(v, room_g), g),
                blocked,
                all,
            )
        };
        let offers = a.by_direction(plus_s, diag);
        let best = offers[1..]
            .iter()
            .fold(offers[0], |m, &o| _mm512_min_epu32(m, o));
        let mut byte = splat(7);
        for d in (0..7).rev() {
            let here_best = _mm512_cmpeq_epi32_mask(offers[d], best);
            byte = _mm512_mask_mov_epi32(byte, here_best, splat(d as u32));
        }
        byte = _mm512_mask_mov_epi32(
            byte,
            _mm512_cmpgt_epu32_mask(best, here),
            splat(FLOW_GOAL as u32),
        );
        byte = _mm512_mask_mov_epi32(
            byte,
            _mm512_cmpge_epu32_mask(here, none_v),
            splat(FLOW_UNREACHABLE as u32),
        );
        byte = _mm512_mask_mov_epi32(byte, _mm_cmpeq_epi8_mask(tc, wall), splat(FLOW_WALL as u32));
        _mm512_cvtepi32_epi8(byte)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_and_avx2_encodings_give_the_same_bytes() {
        let (Some(_), Some(avx512)) = (
            crate::simd::under_test::avx2(),
            crate::simd::under_test::avx512(),
        ) else {
            return;
        };
        let inf = crate::integration::sweep::INF;
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        for len in [32usize, 33, 47, 48, 63, 64, 100, 194, 514] {
            for none in [inf, crate::integration::UNREACHABLE] {
                // Values of every size, and those at and around "no value".
                let values: Vec<u32> = (0..len)
                    .map(|_| {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        match s % 6 {
                            0 => none,
                            1 => inf,
                            2 => none - 1,
                            3 => (s >> 8) as u32 % 64,
                            _ => (s >> 8) as u32,
                        }
                    })
                    .collect();
                let (mut want, mut got) = (vec![7u8; len + 3], vec![7u8; len + 3]);
                // SAFETY: the AVX2 kernels exist only where the CPU has AVX2.
                unsafe { encode_bytes(&values, none, &mut want) };
                avx512.encode_bytes(&values, none, &mut got);
                assert_eq!(got, want, "{len} values, none {none}");
            }
        }
    }
}
