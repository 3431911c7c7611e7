//! The neighbour grid's AVX2 kernels: the distances of eight entries (or eight agents) at once,
//! and the searches of eight agents in one pass over the entries round them.

use std::arch::x86_64::*;

use glam::Vec2;

use crate::crowd::ENTRIES_AT_ONCE;
use crate::crowd::neighbours::{FOUND, NEAR8, NeighbourGrid};
use crate::simd::V3;
use crate::simd::x86_64::sse2::{NearestSquared, OWN_LANE};

impl V3 {
    /// [`near_mask8`]: the neighbour search's distance test over eight entries in one register.
    #[inline(always)]
    pub(crate) fn near_mask8(
        self,
        p: Vec2,
        xs: &[f32; ENTRIES_AT_ONCE],
        ys: &[f32; ENTRIES_AT_ONCE],
        within2: f32,
        own: usize,
        least: &mut NearestSquared,
    ) -> u32 {
        // SAFETY: a `V3` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { near_mask8(p, xs, ys, within2, own, least) }
    }

    /// [`append_lanes`]: write `e + l` for each lane `l` set in `mask` to `found[count..]`
    /// (eight entries are written; the caller counts the set ones).
    ///
    /// # Panics
    /// If `found` has no room for eight more after `count`.
    #[inline(always)]
    pub(crate) fn append_lanes(self, found: &mut [u32; FOUND], count: usize, e: usize, mask: u32) {
        assert!(count + ENTRIES_AT_ONCE <= FOUND);
        // SAFETY: a `V3` exists only where the CPU has AVX2; the room was checked above.
        unsafe { append_lanes(found, count, e, mask & 255) }
    }
}

impl NeighbourGrid {
    /// The searched cells of eight agents within `within` of `(px, py)`, as
    /// [`Self::for_each_near`] finds them (grid coordinates, clamped: x0, y0, x1, y1), and the
    /// cells round those of the agents in `lanes` (first and last column and row); `None` if
    /// these hold too many entries for one pass over them to pay (more than 12 an agent, and
    /// 16).
    #[target_feature(enable = "avx2")]
    #[allow(clippy::type_complexity)]
    fn union8(
        &self,
        lanes: u32,
        (px, py): (__m256, __m256),
        within: __m256,
    ) -> Option<([__m256; 4], [u32; 4])> {
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
    #[target_feature(enable = "avx2")]
    pub(crate) fn probe8(
        &self,
        first: usize,
        lanes: u32,
        (px, py): (__m256, __m256),
        within: __m256,
    ) -> Option<(u32, __m256)> {
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
    #[target_feature(enable = "avx2")]
    pub(crate) fn near8(
        &self,
        first: usize,
        lanes: u32,
        (px, py): (__m256, __m256),
        within: __m256,
        list: &mut [u32; NEAR8],
    ) -> Option<usize> {
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
}

/// [`near_mask`](crate::simd::baseline::near_mask) in one AVX2 register: the same operations, so the same bits.
#[target_feature(enable = "avx2")]
#[inline]
pub(in crate::simd) fn near_mask8(
    p: Vec2,
    xs: &[f32; ENTRIES_AT_ONCE],
    ys: &[f32; ENTRIES_AT_ONCE],
    within2: f32,
    own: usize,
    least: &mut NearestSquared,
) -> u32 {
    // SAFETY: each unaligned load reads the 8 floats of an array of 8 (the positions, a row of
    // `OWN_LANE`). `near_mask_agrees_with_the_scalar_distance` covers this.
    let (x, y, skip) = unsafe {
        (
            _mm256_loadu_ps(xs.as_ptr()),
            _mm256_loadu_ps(ys.as_ptr()),
            _mm256_loadu_ps(OWN_LANE[own.min(ENTRIES_AT_ONCE)].as_ptr()),
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

/// Distance² from eight agents at `(px, py)` to the entry at `(x, y)`, as `near_mask`
/// measures it: infinite in lane `own` if that is under [`ENTRIES_AT_ONCE`] (the entry is that agent).
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn distances8(px: __m256, py: __m256, x: f32, y: f32, own: usize) -> __m256 {
    let dx = _mm256_sub_ps(px, _mm256_set1_ps(x));
    let dy = _mm256_sub_ps(py, _mm256_set1_ps(y));
    let d2 = _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy));
    // SAFETY: reads 8 floats from a row of `OWN_LANE`.
    _mm256_add_ps(d2, unsafe {
        _mm256_loadu_ps(OWN_LANE[own.min(ENTRIES_AT_ONCE)].as_ptr())
    })
}

/// Lane numbers of the bits set in each 8-bit mask, in order (the rest 0).
static SET_LANES: [[u8; ENTRIES_AT_ONCE]; 256] = {
    let mut table = [[0u8; ENTRIES_AT_ONCE]; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut l, mut k) = (0, 0);
        while l < ENTRIES_AT_ONCE {
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
/// `count + ENTRIES_AT_ONCE <= found.len()`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn append_lanes(found: &mut [u32; FOUND], count: usize, e: usize, mask: u32) {
    debug_assert!(count + ENTRIES_AT_ONCE <= FOUND && mask < 256);
    // SAFETY: the row of `SET_LANES` holds 8 bytes; the caller leaves room for 8 entries.
    unsafe {
        let lanes = _mm_loadl_epi64(SET_LANES[mask as usize & 255].as_ptr().cast());
        let entries = _mm256_add_epi32(_mm256_cvtepu8_epi32(lanes), _mm256_set1_epi32(e as i32));
        _mm256_storeu_si256(found.as_mut_ptr().add(count).cast(), entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_lanes_gathers_the_set_lanes_in_order() {
        let Some(v3) = crate::simd::under_test::v3() else {
            return;
        };
        // Every mask, at both ends of the room and with entry numbers past 2^31.
        for mask in 0..256u32 {
            for (count, e) in [
                (0, 0),
                (3, 1234),
                (FOUND - ENTRIES_AT_ONCE, u32::MAX as usize - 7),
            ] {
                let mut found = [7u32; FOUND];
                v3.append_lanes(&mut found, count, e, mask);
                let set: Vec<u32> = (0..ENTRIES_AT_ONCE as u32)
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
}
