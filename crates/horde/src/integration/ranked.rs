//! A set of padded cells in which each member is found by its rank in O(1): how the wave finds
//! the rooms' entries and the chains' ends by cell.

/// A bit per padded cell, and per word of bits the members before it, so that a member's rank
/// (its index in a list kept in the order of the cells) costs a load and a count. Memory: a bit
/// and a half per padded cell.
#[derive(Debug, Default, Clone)]
pub(crate) struct RankedCells {
    bits: Vec<u64>,
    before: Vec<u32>,
}

impl RankedCells {
    /// The set of `cells` among `len` padded cells. O(len / 64 + cells).
    pub(crate) fn build(&mut self, len: usize, cells: impl IntoIterator<Item = usize>) {
        self.bits.clear();
        self.bits.resize(len.div_ceil(64), 0);
        for c in cells {
            self.bits[c / 64] |= 1 << (c % 64);
        }
        self.before.clear();
        let mut count = 0;
        for &bits in &self.bits {
            self.before.push(count);
            count += bits.count_ones();
        }
    }

    /// The rank of padded cell `c` among the members (its index in their order), if it is one
    /// (never, before the set is built). O(1).
    #[inline(always)]
    pub(crate) fn rank_of(&self, c: usize) -> Option<usize> {
        let bits = *self.bits.get(c / 64)?;
        if bits & 1 << (c % 64) == 0 {
            return None;
        }
        Some((self.before[c / 64] + (bits & ((1 << (c % 64)) - 1)).count_ones()) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_found_by_their_rank_and_others_are_not() {
        let cells = [0usize, 5, 63, 64, 65, 200, 1000];
        let mut set = RankedCells::default();
        assert_eq!(set.rank_of(5), None);
        set.build(1001, cells);
        for c in 0..1001 {
            assert_eq!(
                set.rank_of(c),
                cells.iter().position(|&m| m == c),
                "cell {c}"
            );
        }
        assert_eq!(set.rank_of(5000), None);
    }
}
