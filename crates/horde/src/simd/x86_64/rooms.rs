//! The rooms' fill kernel (see `integration::rooms`) in AVX2: the plain loop, compiled for AVX2,
//! where the unsigned minimum is one instruction (SSE2 has none); and in AVX-512, a row of up to
//! sixteen cells in one register, loaded and stored under a mask.

use std::arch::x86_64::*;

use crate::integration::rooms::{Fill, Rooms, min_plus, table_at};
use crate::simd::{Avx2, Avx512};

impl Avx2 {
    /// [`Rooms::fill`] with its kernel eight lanes at a time: the same values.
    #[inline]
    pub(crate) fn fill_rooms(self, rooms: &Rooms, fill: Fill<'_>) -> Result<usize, usize> {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { fill_rooms_avx2(rooms, fill) }
    }

    /// `min_plus` eight lanes at a time (for the tests).
    #[cfg(test)]
    fn min_plus(self, row: &mut [u32], offsets: &[u32], v: u32) {
        // SAFETY: as above.
        unsafe { min_plus_avx2(row, offsets, v) }
    }
}

/// The whole fill compiled for AVX2, so that the kernel is inlined into its loops (a call per
/// row of a small room cost more than the row).
#[target_feature(enable = "avx2")]
fn fill_rooms_avx2(rooms: &Rooms, fill: Fill<'_>) -> Result<usize, usize> {
    rooms.fill_with(fill, min_plus)
}

impl Avx512 {
    /// [`Rooms::fill`] a row's sixteen cells at a time ([`fill_rooms_avx512`]): the same values.
    #[inline]
    pub(crate) fn fill_rooms(self, rooms: &Rooms, fill: Fill<'_>) -> Result<usize, usize> {
        // SAFETY: an `Avx512` exists only where the CPU has AVX-512 F, BW and VL, the kernel's
        // only requirement.
        unsafe { fill_rooms_avx512(rooms, fill) }
    }
}

/// The fill with each row's cells sixteen at a time, the last (or only) group under a mask: a
/// room's row is mostly shorter than a vector (the rooms of `8room_000` are seven cells wide),
/// and the AVX2 form spent more on working such a row out in a buffer and copying it into place
/// than on the sums.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn fill_rooms_avx512(rooms: &Rooms, fill: Fill<'_>) -> Result<usize, usize> {
    rooms.fill_rows(fill, |row, table, sources, y, x0| {
        let len = row.len();
        let mut k = 0;
        while k < len {
            let n = (len - k).min(16);
            let mask = (u32::MAX >> (32 - n)) as __mmask16;
            let out = &mut row[k..k + n];
            let mut best = _mm512_set1_epi32(-1);
            for &source in sources {
                let at = table_at(source, x0, y) + k;
                let prices = &table[at..at + n];
                // SAFETY: the masked load reads the first `n` u32 of `prices`, which holds `n`
                // (the other lanes are neither read nor faulted on).
                let prices = unsafe { _mm512_maskz_loadu_epi32(mask, prices.as_ptr().cast()) };
                let offer = _mm512_add_epi32(prices, _mm512_set1_epi32(source.2 as i32));
                best = _mm512_min_epu32(best, offer);
            }
            // SAFETY: the masked store writes the first `n` u32 of `out`, which holds `n`.
            unsafe { _mm512_mask_storeu_epi32(out.as_mut_ptr().cast(), mask, best) };
            k += n;
        }
    })
}

#[cfg(test)]
#[target_feature(enable = "avx2")]
fn min_plus_avx2(row: &mut [u32], offsets: &[u32], v: u32) {
    min_plus(row, offsets, v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::under_test;

    #[test]
    fn the_kernel_gives_the_plain_values() {
        let Some(avx2) = under_test::avx2() else {
            return;
        };
        for len in [0usize, 1, 7, 8, 9, 31, 128] {
            let offsets: Vec<u32> = (0..len as u32).map(|k| (k * 37) % 101).collect();
            let start: Vec<u32> = (0..len as u32)
                .map(|k| if k % 3 == 0 { u32::MAX } else { k * 13 })
                .collect();
            for v in [0, 5, 60, u32::MAX - 200] {
                let (mut plain, mut vector) = (start.clone(), start.clone());
                min_plus(&mut plain, &offsets, v);
                avx2.min_plus(&mut vector, &offsets, v);
                assert_eq!(plain, vector, "len {len} v {v}");
            }
        }
    }
}
