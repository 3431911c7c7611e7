//! The crowd's baseline kernels in SSE2, which every x86-64 CPU has (enabled at compile time, so
//! no token is needed): four lanes where the compiler does not find the pattern on its own.
//! Each gives the bits of its plain counterpart in `simd::generic` (tested below).

use std::arch::x86_64::*;

use glam::Vec2;

/// Lanes of a block of neighbour-grid entries.
const ENTRIES_AT_ONCE: usize = 8;

/// The neighbour-grid cells (column, row) of two positions, `[x(a), y(a), x(b), y(b)]`, each
/// clamped to `0..=last` (the last column and row, as floats: the sides are under 2^13, so
/// exact), so truncation is the floor and the clamp needs no integer compare.
#[inline(always)]
pub(crate) fn cells_of(a: Vec2, b: Vec2, origin: Vec2, inv_cell: f32, last: Vec2) -> [u32; 4] {
    // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
    // of these intrinsics; any memory access is explained where it is made.
    unsafe {
        let v = _mm_setr_ps(a.x, a.y, b.x, b.y);
        let o = _mm_setr_ps(origin.x, origin.y, origin.x, origin.y);
        let top = _mm_setr_ps(last.x, last.y, last.x, last.y);
        let g = _mm_mul_ps(_mm_sub_ps(v, o), _mm_set1_ps(inv_cell));
        let g = _mm_min_ps(_mm_max_ps(g, _mm_setzero_ps()), top);
        let mut out = [0u32; 4];
        // Writes 4 u32 into an array of 4.
        _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_cvttps_epi32(g));
        out
    }
}

/// How far (in cells) grid position `g` lies inside the block of cells `[x0, y0, x1, y1]` from
/// its nearest side that is not the grid's edge (infinite if every side is). Which side is
/// nearest is anyone's guess, so it is taken without branches.
#[inline(always)]
pub(crate) fn side_room(g: Vec2, [x0, y0, x1, y1]: [u32; 4], cols: u32, rows: u32) -> f32 {
    // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
    // of these intrinsics; any memory access is explained where it is made.
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

/// The least of some squared distances, gathered [`ENTRIES_AT_ONCE`] at a time by [`near_mask`]: four
/// running minima, folded when read.
#[derive(Clone, Copy)]
pub(crate) struct NearestSquared {
    pub(in crate::simd) lanes: __m128,
}

impl NearestSquared {
    /// None yet (infinite).
    #[inline(always)]
    pub(crate) fn none() -> NearestSquared {
        // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
        // of these intrinsics; any memory access is explained where it is made.
        let lanes = unsafe { _mm_set1_ps(f32::INFINITY) };
        NearestSquared { lanes }
    }

    /// The least so far.
    #[inline(always)]
    pub(crate) fn value(self) -> f32 {
        // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
        // of these intrinsics; any memory access is explained where it is made.
        unsafe {
            let m = self.lanes;
            let m = _mm_min_ps(m, _mm_movehl_ps(m, m));
            _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps::<1>(m, m)))
        }
    }
}

/// Row `l` is infinite in lane `l` only (row [`ENTRIES_AT_ONCE`] nowhere), for [`near_mask`].
pub(in crate::simd) static OWN_LANE: [[f32; ENTRIES_AT_ONCE]; ENTRIES_AT_ONCE + 1] = {
    let mut rows = [[0.0; ENTRIES_AT_ONCE]; ENTRIES_AT_ONCE + 1];
    let mut l = 0;
    while l < ENTRIES_AT_ONCE {
        rows[l][l] = f32::INFINITY;
        l += 1;
    }
    rows
};

/// Bit `l` set where `(xs[l], ys[l])` lies closer to `p` than `sqrt(within2)`, except lane
/// `own` (no lane when `own >= ENTRIES_AT_ONCE`); the squared distances of the other lanes go into
/// `least`. The distance is computed as [`Vec2::length_squared`] computes it, so it has the
/// same bits. (The compiler does not find the compare-to-bitmask pattern on its own: its
/// reduction takes three times the instructions.)
#[inline(always)]
pub(crate) fn near_mask(
    p: Vec2,
    xs: &[f32; ENTRIES_AT_ONCE],
    ys: &[f32; ENTRIES_AT_ONCE],
    within2: f32,
    own: usize,
    least: &mut NearestSquared,
) -> u32 {
    // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
    // of these intrinsics; any memory access is explained where it is made.
    unsafe {
        let (px, py, w2) = (_mm_set1_ps(p.x), _mm_set1_ps(p.y), _mm_set1_ps(within2));
        // Infinity in the own lane, so that it is neither near nor the least.
        let skip = &OWN_LANE[own.min(ENTRIES_AT_ONCE)];
        let half = |l: usize| {
            // Each unaligned load reads 4 floats at offset 0 or 4 of an array of 8.
            let (x, y, s) = (
                _mm_loadu_ps(xs.as_ptr().add(l)),
                _mm_loadu_ps(ys.as_ptr().add(l)),
                _mm_loadu_ps(skip.as_ptr().add(l)),
            );
            let (dx, dy) = (_mm_sub_ps(px, x), _mm_sub_ps(py, y));
            let d2 = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
            let d2 = _mm_add_ps(d2, s);
            (_mm_movemask_ps(_mm_cmplt_ps(d2, w2)) as u32, d2)
        };
        let ((lo, a), (hi, b)) = (half(0), half(4));
        least.lanes = _mm_min_ps(least.lanes, _mm_min_ps(a, b));
        lo | hi << 4
    }
}

/// Bit `l` set where clearance `l` (`f32` bits), less `less`, exceeds radius `l` plus `widest`
/// plus `slack`: the collision pass's skip test, with the same bits, eight at once.
#[inline(always)]
pub(crate) fn far_mask(
    clear: &[u32; 8],
    radii: &[f32; 8],
    less: f32,
    widest: f32,
    slack: f32,
) -> u32 {
    // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
    // of these intrinsics; any memory access is explained where it is made.
    unsafe {
        let half = |l: usize| {
            // Each unaligned load reads 4 values at offset 0 or 4 of an array of 8.
            let (c, r) = (
                _mm_loadu_ps(clear.as_ptr().add(l).cast()),
                _mm_loadu_ps(radii.as_ptr().add(l)),
            );
            let bound = _mm_sub_ps(c, _mm_set1_ps(less));
            let within = _mm_add_ps(r, _mm_set1_ps(widest));
            _mm_movemask_ps(_mm_cmpgt_ps(bound, _mm_add_ps(within, _mm_set1_ps(slack)))) as u32
        };
        half(0) | half(4) << 4
    }
}

/// Four agents' clearance levels (see `simd::generic::levels4`): the clearances (`f32` bits)
/// less `less`, times `inv_unit`, rounded down and clamped to `0..=most` (NaN to 0), as bytes
/// in one word; and how many reach `reach`. (The compiler does not vectorise the conversion to
/// an integer on its own.)
#[inline(always)]
pub(crate) fn levels4(
    clear: &[u32; 4],
    less: f32,
    inv_unit: f32,
    most: f32,
    reach: u8,
) -> (u32, u32) {
    // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
    // of these intrinsics; any memory access is explained where it is made.
    unsafe {
        // The load reads the 4 values of an array of 4.
        let c = _mm_castsi128_ps(_mm_loadu_si128(clear.as_ptr().cast()));
        let bound = _mm_mul_ps(_mm_sub_ps(c, _mm_set1_ps(less)), _mm_set1_ps(inv_unit));
        // `max` takes NaN to 0, then the clamped level converts exactly (truncated: rounded down).
        let clamped = _mm_min_ps(_mm_max_ps(bound, _mm_setzero_ps()), _mm_set1_ps(most));
        let level = _mm_cvttps_epi32(clamped);
        let reached = _mm_cmpgt_epi32(level, _mm_set1_epi32(reach as i32 - 1));
        let bytes = _mm_packus_epi16(_mm_packs_epi32(level, level), level);
        (
            _mm_cvtsi128_si32(bytes) as u32,
            _mm_movemask_ps(_mm_castsi128_ps(reached)).count_ones(),
        )
    }
}

/// Four grid coordinates' cells against four sizes (see `grid::axis_cells`). Out of range,
/// the truncation gives i32::MIN, which the `>= 0` lane test refuses; sides are at most
/// `grid::MAX_SIDE`, so the signed compare with the size is the unsigned one.
#[inline(always)]
pub(crate) fn axis_cells(g: [f32; 4], size: [u32; 4]) -> ([u32; 4], u32) {
    let mut cells = [0u32; 4];
    // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
    // of these intrinsics; the loads and the store touch exactly the four lanes of the arrays.
    let mask = unsafe {
        let v = _mm_loadu_ps(g.as_ptr());
        let c = _mm_cvttps_epi32(v);
        let sizes = _mm_loadu_si128(size.as_ptr().cast::<__m128i>());
        // False for NaN, as `g >= 0.0` is.
        let on = _mm_castps_si128(_mm_cmpge_ps(v, _mm_setzero_ps()));
        let fits = _mm_and_si128(
            _mm_cmplt_epi32(c, sizes),
            _mm_cmpgt_epi32(c, _mm_set1_epi32(-1)),
        );
        _mm_storeu_si128(cells.as_mut_ptr().cast::<__m128i>(), c);
        _mm_movemask_ps(_mm_castsi128_ps(_mm_and_si128(on, fits))) as u32
    };
    (cells, mask)
}

/// Both coordinates truncated towards zero, as `as i32` truncates them when they fit an `i32`.
#[inline(always)]
pub(crate) fn truncate_both(g: Vec2) -> [i32; 2] {
    // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
    // of these intrinsics; no memory is touched.
    let both = unsafe { _mm_cvtsi128_si64(_mm_cvttps_epi32(_mm_setr_ps(g.x, g.y, 0.0, 0.0))) };
    [both as i32, (both >> 32) as i32]
}

/// `g` (0 or above) truncated, or 2^31 (i32::MIN's bits) when it does not fit an `i32`.
#[inline(always)]
pub(crate) fn truncate(g: f32) -> u32 {
    // SAFETY: SSE2 is enabled at compile time (every x86-64 CPU has it), the only requirement
    // of these intrinsics; no memory is touched.
    unsafe { _mm_cvttss_si32(_mm_set_ss(g)) as u32 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::tests::uniform;
    use crate::simd::generic;

    #[test]
    fn near_mask_agrees_with_the_scalar_distance() {
        // A fixed pseudo-random sequence: positions round a point, radii round their distances
        // (ties included, since the bits must match exactly), infinite padding.
        let mut next = uniform(0x2545_f491_4f6c_dd1du64);
        for round in 0..20_000 {
            let p = Vec2::new(next() * 50.0, next() * 50.0);
            let xs: [f32; ENTRIES_AT_ONCE] = std::array::from_fn(|_| p.x + (next() - 0.5) * 4.0);
            let mut ys: [f32; ENTRIES_AT_ONCE] =
                std::array::from_fn(|_| p.y + (next() - 0.5) * 4.0);
            if round % 7 == 0 {
                ys[round % ENTRIES_AT_ONCE] = f32::INFINITY;
            }
            let within2 = if round % 3 == 0 {
                (p - Vec2::new(xs[1], ys[1])).length_squared()
            } else {
                next() * 4.0
            };
            // Every own lane, and none (an index past the lanes, as for chunks before `me`).
            let own = [round % (ENTRIES_AT_ONCE + 1), usize::MAX - round % 3][round % 2];
            let mut least = NearestSquared::none();
            let mask = near_mask(p, &xs, &ys, within2, own, &mut least);
            let mut plain_least = generic::NearestSquared::none();
            let want_mask = generic::near_mask(p, &xs, &ys, within2, own, &mut plain_least);
            let want_least = plain_least.value();
            assert_eq!(mask, want_mask, "round {round}");
            assert_eq!(
                least.value().to_bits(),
                want_least.to_bits(),
                "round {round}"
            );
            if own < ENTRIES_AT_ONCE {
                assert_eq!(mask >> own & 1, 0, "round {round}");
            }
            // The AVX2 one, where this CPU has it.
            if let Some(v3) = crate::simd::under_test::v3() {
                let mut least8 = NearestSquared::none();
                let mask8 = v3.near_mask8(p, &xs, &ys, within2, own, &mut least8);
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
                generic::cells_of(a, b, origin, inv_cell, last),
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
                generic::side_room(g, cells, cols, rows),
            );
            assert_eq!(
                fast.to_bits(),
                scalar.to_bits(),
                "round {round}: {g} in {cells:?} of {cols}x{rows}: {fast} against {scalar}"
            );
        }
    }

    #[test]
    fn far_masks_and_levels_agree_with_the_plain_ones() {
        let mut next = uniform(0x0f0e_0d0c_u64);
        for round in 0..20_000 {
            let clear: [u32; 8] = std::array::from_fn(|l| match (round + l) % 9 {
                0 => f32::NAN.to_bits(),
                1 => f32::INFINITY.to_bits(),
                2 => (-next()).to_bits(),
                _ => (next() * 80.0).to_bits(),
            });
            let radii: [f32; 8] = std::array::from_fn(|_| 0.1 + next());
            let (less, widest, slack) = (next() * 2.0, next(), next() * 0.01);
            assert_eq!(
                far_mask(&clear, &radii, less, widest, slack),
                generic::far_mask(&clear, &radii, less, widest, slack),
                "round {round}"
            );
            let four: [u32; 4] = clear[..4].try_into().unwrap();
            let (inv_unit, reach) = (0.5 + next() * 8.0, (next() * 70.0) as u8);
            assert_eq!(
                levels4(&four, less, inv_unit, 63.0, reach),
                generic::levels4(&four, less, inv_unit, 63.0, reach),
                "round {round}"
            );
        }
    }
}
