//! The transposition of a matrix of 32-bit cells, eight by eight in AVX2 registers, for the
//! sweeps along columns (see `integration::columns`).

use std::arch::x86_64::*;

use crate::cost::CostModel;
use crate::integration::UNREACHABLE;
use crate::integration::sweep::{INF, SweepOutcome};
use crate::simd::Avx2;
use crate::simd::x86_64::sweep::Tally8;

impl Avx2 {
    /// [`transpose_finish`](crate::integration::columns::transpose_finish) with blocks of 8 × 8
    /// cells in registers ([`transpose_with`]), each column finished in its register before it
    /// is stored: the same cells and outcome.
    #[inline]
    pub(crate) fn transpose_finish(
        self,
        src: &mut [u32],
        width: usize,
        rows: usize,
        dst: &mut [u32],
        model: CostModel,
    ) -> SweepOutcome {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { transpose_finish_avx2(src, width, rows, dst, model) }
    }
}

/// The transposition and the sweeps' end pass in one: every cell finished (INF to
/// UNREACHABLE, counted, the largest value kept) on its way to `dst`, and INF left behind.
#[target_feature(enable = "avx2")]
fn transpose_finish_avx2(
    src: &mut [u32],
    width: usize,
    rows: usize,
    dst: &mut [u32],
    model: CostModel,
) -> SweepOutcome {
    let mut tally = Tally8::new();
    let (mut count, mut top) = (0u32, 0u32);
    transpose_with(
        src,
        width,
        rows,
        dst,
        |column| tally.finish_lanes(column),
        |v| {
            let finite = v < INF;
            count += finite as u32;
            top = top.max(if finite { v } else { 0 });
            if finite { v } else { UNREACHABLE }
        },
    );
    tally.end_with((count, top), &mut [], model)
}

/// Cells of a block's side.
const SIDE: usize = 8;

/// `src` (`rows` rows of `width` cells) into `dst` (`width` rows of `rows` cells), `src` left
/// INF: blocks of 8 × 8 cells loaded as eight rows, turned by three rounds of unpacks and lane
/// swaps, each column passed through `column` and stored; the cells beyond the last whole block
/// of each side one by one, through `cell`.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose_with(
    src: &mut [u32],
    width: usize,
    rows: usize,
    dst: &mut [u32],
    mut column: impl FnMut(__m256i) -> __m256i,
    mut cell: impl FnMut(u32) -> u32,
) {
    assert!(src.len() >= width * rows && dst.len() >= width * rows);
    let inf = _mm256_set1_epi32(INF as i32);
    let (full_rows, full_cols) = (rows - rows % SIDE, width - width % SIDE);
    for y in (0..full_rows).step_by(SIDE) {
        for x in (0..full_cols).step_by(SIDE) {
            let mut load = |k: usize| {
                let at = (y + k) * width + x;
                let cells: &mut [u32; SIDE] =
                    (&mut src[at..at + SIDE]).try_into().expect("8 cells");
                // SAFETY: reads and writes the 8 u32 of `cells`.
                unsafe {
                    let row = _mm256_loadu_si256(cells.as_ptr().cast());
                    _mm256_storeu_si256(cells.as_mut_ptr().cast(), inf);
                    row
                }
            };
            let r = [
                load(0),
                load(1),
                load(2),
                load(3),
                load(4),
                load(5),
                load(6),
                load(7),
            ];
            // Pairs of rows interleaved, then pairs of pairs: each 128-bit half then holds four
            // rows of one column (the low halves columns 0..4, the high ones 4..8).
            let t = [
                _mm256_unpacklo_epi32(r[0], r[1]),
                _mm256_unpackhi_epi32(r[0], r[1]),
                _mm256_unpacklo_epi32(r[2], r[3]),
                _mm256_unpackhi_epi32(r[2], r[3]),
                _mm256_unpacklo_epi32(r[4], r[5]),
                _mm256_unpackhi_epi32(r[4], r[5]),
                _mm256_unpacklo_epi32(r[6], r[7]),
                _mm256_unpackhi_epi32(r[6], r[7]),
            ];
            let u = [
                _mm256_unpacklo_epi64(t[0], t[2]),
                _mm256_unpackhi_epi64(t[0], t[2]),
                _mm256_unpacklo_epi64(t[1], t[3]),
                _mm256_unpackhi_epi64(t[1], t[3]),
                _mm256_unpacklo_epi64(t[4], t[6]),
                _mm256_unpackhi_epi64(t[4], t[6]),
                _mm256_unpacklo_epi64(t[5], t[7]),
                _mm256_unpackhi_epi64(t[5], t[7]),
            ];
            let columns = [
                _mm256_permute2x128_si256::<0x20>(u[0], u[4]),
                _mm256_permute2x128_si256::<0x20>(u[1], u[5]),
                _mm256_permute2x128_si256::<0x20>(u[2], u[6]),
                _mm256_permute2x128_si256::<0x20>(u[3], u[7]),
                _mm256_permute2x128_si256::<0x31>(u[0], u[4]),
                _mm256_permute2x128_si256::<0x31>(u[1], u[5]),
                _mm256_permute2x128_si256::<0x31>(u[2], u[6]),
                _mm256_permute2x128_si256::<0x31>(u[3], u[7]),
            ];
            for (k, cells) in columns.into_iter().enumerate() {
                let at = (x + k) * rows + y;
                let out: &mut [u32; SIDE] = (&mut dst[at..at + SIDE]).try_into().expect("8 cells");
                let cells = column(cells);
                // SAFETY: writes the 8 u32 of `out`.
                unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), cells) };
            }
        }
        for x in full_cols..width {
            for k in 0..SIDE {
                dst[x * rows + y + k] = cell(std::mem::replace(&mut src[(y + k) * width + x], INF));
            }
        }
    }
    for y in full_rows..rows {
        for x in 0..width {
            dst[x * rows + y] = cell(std::mem::replace(&mut src[y * width + x], INF));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cost::CostModel;
    use crate::integration::UNREACHABLE;
    use crate::integration::columns::transpose_plain;
    use crate::integration::sweep::{INF, finish_plain};

    #[test]
    fn the_kernel_turns_and_finishes_every_shape_as_the_plain_code_does() {
        let Some(avx2) = crate::simd::under_test::avx2() else {
            return;
        };
        for (width, rows) in [
            (1, 1),
            (8, 8),
            (9, 8),
            (8, 9),
            (17, 23),
            (196, 196),
            (3, 40),
        ] {
            // Values, INF (no value yet) and UNREACHABLE, and a value near the top of the
            // range in the last map (handed over).
            let mut src: Vec<u32> = (0..width * rows)
                .map(|i| match (i as u32).wrapping_mul(2_654_435_761) >> 29 {
                    0 => INF,
                    1 => UNREACHABLE,
                    r => i as u32 * 7 + r,
                })
                .collect();
            if width == 3 {
                src[width * rows / 2] = INF - 2;
            }
            let mut plain = vec![0; width * rows];
            let mut kernel = vec![1; width * rows];
            transpose_plain(&src, width, rows, &mut plain);
            let want = finish_plain(&mut plain, CostModel::TenFourteen);
            let mut left = src.clone();
            let got =
                avx2.transpose_finish(&mut left, width, rows, &mut kernel, CostModel::TenFourteen);
            assert_eq!(got, want, "{width} × {rows}");
            assert_eq!(kernel, plain, "{width} × {rows}");
            assert!(left.iter().all(|&v| v == INF), "{width} × {rows}");
            assert!(!plain.contains(&INF));
            if width > 1 && rows > 1 && src[width] != INF {
                assert_eq!(plain[1], src[width], "{width} × {rows}");
            }
        }
    }
}
