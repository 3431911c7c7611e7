//! Searches confined to one sector's rectangle: connected components and exact costs between a
//! cell and the sector's portal cells, under the project's step rule (terrain cost of the cell
//! stepped from, no squeezing past wall corners).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::cost::{CostModel, WALL};
use crate::grid::Dir8;

/// A sector's rectangle on the map: `x0..x0 + w`, `y0..y0 + h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub x0: u32,
    pub y0: u32,
    pub w: u32,
    pub h: u32,
}

impl Rect {
    /// The map index of local index `i`.
    #[inline]
    pub fn map_index(&self, map_width: u32, i: u32) -> usize {
        let (lx, ly) = (i % self.w, i / self.w);
        ((self.y0 + ly) as usize) * map_width as usize + (self.x0 + lx) as usize
    }

    /// The local index of map cell `(x, y)`, which must lie inside.
    #[inline]
    pub fn local(&self, x: u32, y: u32) -> u32 {
        (y - self.y0) * self.w + (x - self.x0)
    }
}

/// Label the 4-connected walkable cells of `rect`: `labels[i]` is 0 for a wall and the
/// component's number from 1 otherwise. With the corner rule, 8-connectivity is the same as
/// 4-connectivity (a legal diagonal step has both side cells walkable). Returns the number of
/// components. O(cells of the rectangle).
pub(crate) fn label_components(
    costs: &[u8],
    map_width: u32,
    rect: Rect,
    labels: &mut [u16],
    stack: &mut Vec<u32>,
) -> u16 {
    let n = (rect.w * rect.h) as usize;
    labels[..n].fill(0);
    let mut count = 0u16;
    for start in 0..n as u32 {
        if labels[start as usize] != 0 || costs[rect.map_index(map_width, start)] == WALL {
            continue;
        }
        count += 1;
        labels[start as usize] = count;
        stack.clear();
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (lx, ly) = (i % rect.w, i / rect.w);
            let mut visit = |j: u32| {
                if labels[j as usize] == 0 && costs[rect.map_index(map_width, j)] != WALL {
                    labels[j as usize] = count;
                    stack.push(j);
                }
            };
            if lx > 0 {
                visit(i - 1);
            }
            if lx + 1 < rect.w {
                visit(i + 1);
            }
            if ly > 0 {
                visit(i - rect.w);
            }
            if ly + 1 < rect.h {
                visit(i + rect.w);
            }
        }
    }
    count
}

/// Which way a [`LocalSearch`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Costs from the source to every cell.
    From,
    /// Costs from every cell to the source.
    To,
}

/// Dijkstra inside one rectangle, reused between searches (nothing allocates once it has grown
/// to the largest sector). Memory: 8 bytes per cell of the largest sector searched, plus the
/// heap (12 bytes per entry, at most a few per cell).
#[derive(Debug, Default, Clone)]
pub(crate) struct LocalSearch {
    dist: Vec<u64>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    pending: Vec<bool>,
    left: usize,
}

impl LocalSearch {
    /// Exact costs between `source` (a local index) and the cells of `rect`, stopping once every
    /// local index in `targets` is settled. Afterwards [`LocalSearch::dist`] gives the cost of
    /// each target (`u64::MAX` if it cannot be reached inside the rectangle).
    /// O(c log c) for the c cells settled.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        source: u32,
        direction: Direction,
        targets: &[u32],
    ) {
        self.start(rect, targets);
        self.seed(source, 0);
        self.settle_all(
            costs,
            map_width,
            model,
            rect,
            direction,
            !targets.is_empty(),
        );
    }

    /// Costs from every cell of `rect` to the nearest of `seeds` (local index, starting cost),
    /// for every cell: a Dijkstra from several sources. O(c log c) for the c cells of `rect`.
    pub fn run_seeded(
        &mut self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        seeds: &[(u32, u64)],
    ) {
        self.start(rect, &[]);
        for &(i, d) in seeds {
            self.seed(i, d);
        }
        self.settle_all(costs, map_width, model, rect, Direction::To, false);
    }

    fn start(&mut self, rect: Rect, targets: &[u32]) {
        let n = (rect.w * rect.h) as usize;
        self.dist.clear();
        self.dist.resize(n, u64::MAX);
        self.pending.clear();
        self.pending.resize(n, false);
        self.left = 0;
        for &t in targets {
            if !self.pending[t as usize] {
                self.pending[t as usize] = true;
                self.left += 1;
            }
        }
        self.heap.clear();
    }

    fn seed(&mut self, i: u32, d: u64) {
        if d < self.dist[i as usize] {
            self.dist[i as usize] = d;
            self.heap.push(Reverse((d, i)));
        }
    }

    fn settle_all(
        &mut self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        direction: Direction,
        stop_at_targets: bool,
    ) {
        let base = model.base_costs();
        let walkable = |x: u32, y: u32| {
            costs[(rect.y0 + y) as usize * map_width as usize + (rect.x0 + x) as usize] != WALL
        };
        while let Some(Reverse((d, i))) = self.heap.pop() {
            if d > self.dist[i as usize] {
                continue;
            }
            if self.pending[i as usize] {
                self.pending[i as usize] = false;
                self.left -= 1;
                if stop_at_targets && self.left == 0 {
                    break;
                }
            }
            let (lx, ly) = (i % rect.w, i / rect.w);
            let here = costs[rect.map_index(map_width, i)] as u64;
            for dir in Dir8::ALL {
                let (dx, dy) = dir.offset();
                let (nx, ny) = (lx as i64 + dx as i64, ly as i64 + dy as i64);
                if nx < 0 || ny < 0 || nx >= rect.w as i64 || ny >= rect.h as i64 {
                    continue;
                }
                let (nx, ny) = (nx as u32, ny as u32);
                if !walkable(nx, ny) {
                    continue;
                }
                if dir.is_diagonal() && !(walkable(nx, ly) && walkable(lx, ny)) {
                    continue;
                }
                let j = ny * rect.w + nx;
                // Forward, the step leaves `i`; backward, it leaves the neighbour `j` towards `i`.
                let from = match direction {
                    Direction::From => here,
                    Direction::To => costs[rect.map_index(map_width, j)] as u64,
                };
                let nd = d + base[dir.index()] as u64 * from;
                if nd < self.dist[j as usize] {
                    self.dist[j as usize] = nd;
                    self.heap.push(Reverse((nd, j)));
                }
            }
        }
    }

    /// The cost found for local index `i` by the last search (`u64::MAX` when not reached;
    /// exact for the targets and every cell settled before the search stopped).
    #[inline]
    pub fn dist(&self, i: u32) -> u64 {
        self.dist[i as usize]
    }

    /// Every cell's cost from the last search, by local index.
    pub fn dists(&self) -> &[u64] {
        &self.dist
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(rows: &[&str]) -> (Vec<u8>, u32, u32) {
        let w = rows[0].len() as u32;
        let costs = rows
            .iter()
            .flat_map(|r| r.bytes())
            .map(|b| match b {
                b'#' => WALL,
                b'.' => 1,
                d => d - b'0',
            })
            .collect();
        (costs, w, rows.len() as u32)
    }

    #[test]
    fn components_are_split_by_walls_and_ignore_corner_touches() {
        let (costs, w, h) = map(&["..#..", "..#..", "##.##", "..#.."]);
        let rect = Rect { x0: 0, y0: 0, w, h };
        let mut labels = vec![0; (w * h) as usize];
        let n = label_components(&costs, w, rect, &mut labels, &mut Vec::new());
        // Four corner rooms and the centre cell, touching only at corners: five components.
        assert_eq!(n, 5);
        assert_eq!(labels[0], labels[6]);
        assert_ne!(labels[0], labels[12]);
        assert_eq!(labels[2], 0);
        // A rectangle inside the map sees only its own cells.
        let right = Rect {
            x0: 3,
            y0: 0,
            w: 2,
            h: 4,
        };
        let n = label_components(&costs, w, right, &mut labels, &mut Vec::new());
        assert_eq!(n, 2);
    }

    #[test]
    fn costs_follow_the_cell_stepped_from_both_ways() {
        // A corridor: plain, swamp 5, plain. Forward from the left end, the swamp cell's step
        // costs 5 × 10; backward to the left end, the plain cells' steps are paid.
        let (costs, w, h) = map(&["151"]);
        let rect = Rect { x0: 0, y0: 0, w, h };
        let mut s = LocalSearch::default();
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            rect,
            0,
            Direction::From,
            &[2],
        );
        assert_eq!((s.dist(1), s.dist(2)), (10, 60));
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            rect,
            0,
            Direction::To,
            &[2],
        );
        assert_eq!((s.dist(1), s.dist(2)), (50, 60));
    }

    #[test]
    fn no_squeezing_past_a_wall_corner_and_no_leaving_the_rectangle() {
        let (costs, w, h) = map(&[".#", "..", "#."]);
        let rect = Rect { x0: 0, y0: 0, w, h };
        let mut s = LocalSearch::default();
        // (0,1) to (1,2) diagonally would squeeze past the wall at (0,2): two straight steps.
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            rect,
            2,
            Direction::From,
            &[5],
        );
        assert_eq!(s.dist(5), 20);
        // Confined to the top row, (1,1) cannot be reached from (0,0).
        let top = Rect {
            x0: 0,
            y0: 0,
            w: 2,
            h: 1,
        };
        let (costs, w, _) = map(&["..", ".."]);
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            top,
            0,
            Direction::From,
            &[1],
        );
        assert_eq!(s.dist(1), 10);
        let one = Rect {
            x0: 1,
            y0: 1,
            w: 1,
            h: 1,
        };
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            one,
            0,
            Direction::From,
            &[0],
        );
        assert_eq!(s.dist(0), 0);
    }
}
