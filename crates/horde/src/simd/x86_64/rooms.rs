//! The rooms' fill kernel (see `integration::rooms`) in AVX2: the plain loop, compiled for AVX2,
//! where the unsigned minimum is one instruction (SSE2 has none).

use crate::integration::rooms::{Fill, Rooms, min_plus};
use crate::simd::Avx2;

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
