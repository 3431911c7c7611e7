//! The rooms' fill kernel (see `integration::rooms`): a row's cells eight at a time in a register
//! (AVX2, which has the unsigned minimum SSE2 lacks), or up to sixteen under a mask (AVX-512).

use std::arch::x86_64::*;

use crate::integration::rooms::{Fill, Rooms, table_at};
use crate::simd::{Avx2, Avx512};

impl Avx2 {
    /// [`Rooms::fill`] a row's eight cells at a time ([`fill_rooms_avx2`]): the same values.
    #[inline]
    pub(crate) fn fill_rooms(self, rooms: &Rooms, fill: Fill<'_>) -> Result<usize, usize> {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { fill_rooms_avx2(rooms, fill) }
    }
}

/// The fill with each row's cells eight at a time in a register: a row of eight or more ends
/// with a group of eight ending at its last cell (over cells already done, which come out the
/// same), and a shorter row is stored lane by lane from the register. Working a row out in a
/// buffer and copying it into place (a `memcpy` call per row) cost more than the sums: the rooms
/// of `8room_000` are seven cells wide.
#[target_feature(enable = "avx2")]
fn fill_rooms_avx2(rooms: &Rooms, fill: Fill<'_>) -> Result<usize, usize> {
    const LANES: usize = 8;
    rooms.fill_rows(fill, |row, table, sources, y, x0| {
        // The least over the sources of value + crossing price, for the eight cells from `k`
        // (the table has eight spare prices past its end, for a short row's lanes).
        let group = |k: usize| {
            let mut best = _mm256_set1_epi32(-1);
            for &source in sources {
                let at = table_at(source, x0, y) + k;
                let prices: &[u32; LANES] = table[at..at + LANES].try_into().expect("8 prices");
                // SAFETY: reads the 8 u32 of `prices`.
                let prices = unsafe { _mm256_loadu_si256(prices.as_ptr().cast()) };
                let offer = _mm256_add_epi32(prices, _mm256_set1_epi32(source.2 as i32));
                best = _mm256_min_epu32(best, offer);
            }
            best
        };
        let len = row.len();
        if len < LANES {
            let mut lanes = [0u32; LANES];
            // SAFETY: writes 8 u32 into an array of 8.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), group(0)) };
            for (cell, &v) in row.iter_mut().zip(&lanes) {
                *cell = v;
            }
            return;
        }
        let mut k = 0;
        while k < len {
            let at = k.min(len - LANES);
            let out: &mut [u32; LANES] = (&mut row[at..at + LANES]).try_into().expect("8 cells");
            // SAFETY: writes the 8 u32 of `out`.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), group(at)) };
            k += LANES;
        }
    })
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
