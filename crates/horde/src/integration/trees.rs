//! The parts of a map that no loop of legal steps passes through: dead-end branches of
//! corridors, and whole mazes without loops. Such a cell has exactly one way to each cell
//! beyond it, so a wave that reaches a junction of them need not queue it: the walks along the
//! corridors (see `Queue::walk`) fork there and go on down every branch at once. Only on maps
//! where most open cells are on no loop (`mostly`: a maze without loops, or with very few):
//! on mazes with more loops the dead ends are short, and the forks cost more than they save.
//!
//! Worked out by peeling: cells with one legal step (dead ends) are taken away, then the cells
//! left with one, and so on; what is taken is outside the map's 2-core, on no loop.

/// The cells of a map on no loop of legal steps (a bit per padded cell: 1/8 byte a cell), for
/// the costs `valid` says. Working them out takes a byte a cell and four per cell taken, for
/// the time of the work only.
#[derive(Debug, Default, Clone)]
pub(crate) struct Trees {
    bits: Vec<u64>,
    /// `bits` describes the builder's costs (cleared when they change).
    pub(crate) valid: bool,
    /// Open cells, and those on no loop.
    open: usize,
    on_no_loop: usize,
}

/// Quarters of a map's open cells that must be on no loop for its waves to fork their walks:
/// forks made mazes with loops cut through their walls (up to about half their cells on no
/// loop) no faster or slower, and a maze without loops much faster (the figures are in
/// `docs/benchmarks.md`).
const MOSTLY_IN_FOUR: usize = 3;

/// Offsets of the eight legal steps (see `moves_of_row`), for padded width `pw`.
fn offsets(pw: usize) -> [usize; 8] {
    let up = pw.wrapping_neg();
    [
        up,
        1,
        pw,
        1usize.wrapping_neg(),
        up.wrapping_add(1),
        pw + 1,
        pw - 1,
        up.wrapping_sub(1),
    ]
}

impl Trees {
    /// Work out the cells on no loop from the legal steps `moves` of a padded map `pw` cells
    /// wide. O(cells).
    pub(crate) fn work_out(&mut self, moves: &[u8], pw: usize) {
        let n = moves.len();
        self.bits.clear();
        self.bits.resize(n.div_ceil(64), 0);
        let steps = offsets(pw);
        // Legal steps left to each cell still in the map; 0 once taken (or a wall).
        let mut left: Vec<u8> = moves.iter().map(|m| m.count_ones() as u8).collect();
        // Cells with a legal step (a walkable cell without one is reached only as a seed).
        self.open = left.iter().filter(|&&l| l > 0).count();
        self.on_no_loop = 0;
        let mut taken: Vec<u32> = Vec::new();
        for (c, l) in left.iter_mut().enumerate() {
            if *l == 1 {
                *l = 0;
                taken.push(c as u32);
            }
        }
        while let Some(c) = taken.pop() {
            let c = c as usize;
            self.bits[c / 64] |= 1 << (c % 64);
            self.on_no_loop += 1;
            let m = moves[c];
            for (bit, &offset) in steps.iter().enumerate() {
                if m & (1 << bit) == 0 {
                    continue;
                }
                let k = c.wrapping_add(offset);
                if left[k] > 0 {
                    left[k] -= 1;
                    if left[k] == 1 {
                        left[k] = 0;
                        taken.push(k as u32);
                    }
                }
            }
        }
        self.valid = true;
    }

    /// Whether at least `MOSTLY_IN_FOUR` quarters of the open cells are on no loop (a maze without
    /// loops, or with few), where forking walks pay.
    pub(crate) fn mostly(&self) -> bool {
        self.valid && self.on_no_loop * 4 >= self.open * MOSTLY_IN_FOUR
    }

    /// The bits, when valid (empty otherwise).
    pub(crate) fn bits(&self) -> &[u64] {
        if self.valid { &self.bits } else { &[] }
    }
}

/// Whether padded cell `c` is on no loop, by the bits of [`Trees::bits`] (none when empty).
#[inline(always)]
pub(crate) fn on_no_loop(bits: &[u64], c: usize) -> bool {
    bits.get(c / 64).is_some_and(|w| w >> (c % 64) & 1 != 0)
}

#[cfg(test)]
mod tests {
    use super::{Trees, on_no_loop};
    use crate::integration::moves_of_row;
    use crate::{CostField, Grid, WALL};
    use glam::UVec2;

    /// The legal steps of `cost`, padded.
    fn moves(cost: &CostField) -> (Vec<u8>, usize) {
        let (w, h) = (cost.width() as usize, cost.height() as usize);
        let pw = w + 2;
        let mut padded = vec![WALL; pw * (h + 2)];
        for y in 0..h {
            padded[(y + 1) * pw + 1..(y + 1) * pw + 1 + w]
                .copy_from_slice(&cost.costs()[y * w..(y + 1) * w]);
        }
        let mut moves = vec![0u8; padded.len()];
        for y in 1..=h {
            let (up, rest) = padded[(y - 1) * pw..].split_at(pw);
            let (here, down) = rest.split_at(pw);
            moves_of_row(up, here, &down[..pw], &mut moves[y * pw..(y + 1) * pw]);
        }
        (moves, pw)
    }

    /// The map from rows of `#` (wall) and `.` (ground).
    fn map(rows: &[&str]) -> CostField {
        let mut cost = CostField::new(Grid::new(rows[0].len() as u32, rows.len() as u32).unwrap());
        for (y, row) in rows.iter().enumerate() {
            for (x, ch) in row.chars().enumerate() {
                if ch == '#' {
                    cost.set(UVec2::new(x as u32, y as u32), WALL).unwrap();
                }
            }
        }
        cost
    }

    /// The cells on no loop, as rows of `t` (on no loop), `.` (ground on a loop), `#`.
    fn drawn(cost: &CostField) -> Vec<String> {
        let (moves, pw) = moves(cost);
        let mut trees = Trees::default();
        trees.work_out(&moves, pw);
        (0..cost.height())
            .map(|y| {
                (0..cost.width())
                    .map(|x| {
                        let c = (y as usize + 1) * pw + x as usize + 1;
                        match (cost.get(UVec2::new(x, y)), on_no_loop(trees.bits(), c)) {
                            (Some(WALL), _) => '#',
                            (_, true) => 't',
                            _ => '.',
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_loop_keeps_its_cells_and_the_branches_off_it_are_taken() {
        let cost = map(&[
            "#########",
            "#.....#.#",
            "#.###.#.#",
            "#.....#.#",
            "###.###.#",
            "#.....#.#",
            "###.###.#",
            "#########",
        ]);
        assert_eq!(
            drawn(&cost),
            [
                "#########",
                "#.....#t#",
                "#.###.#t#",
                "#.....#t#",
                "###t###t#",
                "#ttttt#t#",
                "###t###t#",
                "#########",
            ]
        );
    }

    #[test]
    fn open_ground_is_all_loops_through_its_diagonals() {
        // A two-cell-wide corridor is loops of diagonal steps; its one-cell tail is not.
        let cost = map(&["#######", "#....##", "#.....#", "#######"]);
        assert_eq!(drawn(&cost), ["#######", "#....##", "#....t#", "#######"]);
    }

    #[test]
    fn mostly_counts_the_open_cells_on_no_loop() {
        // 4 of 12 open cells on no loop (a ring of eight, a tail of two, a lone corridor of
        // two): under three quarters; with the ring cut open, all of them.
        let ring = map(&[
            "#######", "#...#.#", "#.#.#.#", "#...###", "#.#####", "#.#####",
        ]);
        let tail = map(&[
            "#######", "#...#.#", "#.###.#", "#.#####", "#.#####", "#.#####",
        ]);
        for (cost, mostly) in [(&ring, false), (&tail, true)] {
            let (moves, pw) = moves(cost);
            let mut trees = Trees::default();
            assert!(!trees.mostly());
            trees.work_out(&moves, pw);
            assert_eq!(trees.mostly(), mostly, "{:?}", drawn(cost));
        }
    }

    #[test]
    fn no_bits_until_worked_out() {
        let trees = Trees::default();
        assert!(trees.bits().is_empty());
        assert!(!on_no_loop(trees.bits(), 0));
    }
}
