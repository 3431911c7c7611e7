//! A* for one unit: the same grid, corner rule and cost models as the fields, with all search
//! memory in a reusable [`AStar`] context so that repeated queries do not allocate.

use std::collections::BinaryHeap;

use glam::UVec2;
use thiserror::Error;

use crate::cost::{CostField, CostModel, WALL};
use crate::grid::{Dir8, GridError};

/// Why a query was refused.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum AStarError {
    /// Start outside the map.
    #[error("start: {0}")]
    StartOutside(GridError),
    /// Goal outside the map.
    #[error("goal: {0}")]
    GoalOutside(GridError),
    /// Start on a wall.
    #[error("start ({x}, {y}) is on a wall")]
    StartOnWall { x: u32, y: u32 },
    /// Goal on a wall.
    #[error("goal ({x}, {y}) is on a wall")]
    GoalOnWall { x: u32, y: u32 },
    /// A path cost beyond the 32-bit range.
    #[error("path cost exceeds the 32-bit range near cell ({x}, {y})")]
    Overflow { x: u32, y: u32 },
}

/// A path found by [`AStar::find_path`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// Cells from start to goal, both included.
    pub cells: Vec<UVec2>,
    /// Raw cost in the model's units (see [`CostModel::to_cost`]).
    pub cost: u32,
}

/// An open-list entry. The key orders the max-heap: smallest f first, then, among equal f, the
/// deepest node (largest g), which on grids with many equal-cost paths settles far fewer cells.
/// One `u64` comparison decides almost every sift step.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct OpenEntry {
    key: u64,
    x: u16,
    y: u16,
}

impl OpenEntry {
    fn new(f: u32, g: u32, x: usize, y: usize) -> OpenEntry {
        OpenEntry {
            key: ((u32::MAX - f) as u64) << 32 | g as u64,
            x: x as u16,
            y: y as u16,
        }
    }
    fn g(&self) -> u32 {
        self.key as u32
    }
}

/// Per-cell search state, stamped with the query that wrote it.
#[derive(Clone, Copy, Default, Debug)]
struct NodeState {
    g: u32,
    generation: u32,
}

/// Reusable A* search memory.
///
/// Memory: 9 bytes per cell (cost so far 4, generation stamp 4, arrival direction 1), allocated
/// on the first query on a map of that size, plus the open list (16 bytes per queued entry).
/// Cells are reset lazily by a generation stamp, so a query costs nothing for cells it never
/// touches.
#[derive(Debug, Default, Clone)]
pub struct AStar {
    nodes: Vec<NodeState>,
    came_from: Vec<u8>,
    generation: u32,
    open: BinaryHeap<OpenEntry>,
    settled: usize,
    width: usize,
    last_goal: Option<(UVec2, UVec2)>,
    four_connected: bool,
}

impl std::fmt::Debug for OpenEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {}) g={}", self.x, self.y, self.g())
    }
}

impl AStar {
    /// An empty context.
    pub fn new() -> AStar {
        AStar::default()
    }

    /// A context that only takes straight steps (N, E, S, W): for corridors that units which
    /// may not cut corners can always walk.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{AStar, CostField, CostModel, Grid};
    /// let cost = CostField::new(Grid::new(5, 5).unwrap());
    /// let mut astar = AStar::new().four_connected(true);
    /// let c = astar.search(&cost, UVec2::new(0, 0), UVec2::new(3, 2), CostModel::TenFourteen).unwrap();
    /// assert_eq!(c, Some(50));
    /// ```
    pub fn four_connected(mut self, yes: bool) -> AStar {
        self.four_connected = yes;
        self
    }

    /// Cells settled (expanded) by the last query.
    pub fn settled(&self) -> usize {
        self.settled
    }

    /// Cost of the cheapest path from `from` to `to` in raw units of `model`, or `Ok(None)` when
    /// there is none. Settles each cell at most once; O(n log n) in the cells settled.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{AStar, CostField, CostModel, Grid};
    /// let cost = CostField::new(Grid::new(10, 10).unwrap());
    /// let mut astar = AStar::new();
    /// let c = astar.search(&cost, UVec2::new(0, 0), UVec2::new(9, 3), CostModel::TenFourteen).unwrap();
    /// assert_eq!(c, Some(3 * 14 + 6 * 10));
    /// assert!(astar.settled() <= 10);
    /// ```
    pub fn search(
        &mut self,
        cost: &CostField,
        from: UVec2,
        to: UVec2,
        model: CostModel,
    ) -> Result<Option<u32>, AStarError> {
        let grid = cost.grid();
        let si = grid.index(from).map_err(AStarError::StartOutside)?;
        let gi = grid.index(to).map_err(AStarError::GoalOutside)?;
        let costs = cost.costs();
        if costs[si] == WALL {
            return Err(AStarError::StartOnWall {
                x: from.x,
                y: from.y,
            });
        }
        if costs[gi] == WALL {
            return Err(AStarError::GoalOnWall { x: to.x, y: to.y });
        }
        let n = grid.len();
        let w = grid.width() as usize;
        let h = grid.height() as usize;
        if self.nodes.len() != n || self.width != w {
            self.nodes = vec![NodeState::default(); n];
            self.came_from = vec![0; n];
            self.generation = 0;
            self.width = w;
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.nodes.fill(NodeState::default());
            self.generation = 1;
        }
        let generation = self.generation;
        self.open.clear();
        self.settled = 0;
        self.last_goal = None;

        let base = model.base_costs();
        let (tx, ty) = (to.x, to.y);
        let four = self.four_connected;
        let heuristic = |x: u32, y: u32| {
            let (dx, dy) = (x.abs_diff(tx), y.abs_diff(ty));
            if four {
                model.straight() * (dx + dy)
            } else {
                model.heuristic(dx, dy)
            }
        };
        self.nodes[si] = NodeState { g: 0, generation };
        self.came_from[si] = u8::MAX;
        self.open.push(OpenEntry::new(
            heuristic(from.x, from.y),
            0,
            from.x as usize,
            from.y as usize,
        ));
        while let Some(e) = self.open.pop() {
            let (x, y) = (e.x as usize, e.y as usize);
            let c = y * w + x;
            let eg = e.g();
            if eg != self.nodes[c].g {
                continue; // superseded by a cheaper entry
            }
            self.settled += 1;
            if c == gi {
                self.last_goal = Some((from, to));
                return Ok(Some(eg));
            }
            let t = costs[c] as u32;
            let walk = |ok: bool, j: usize| ok && costs[j] != WALL;
            let n_ok = walk(y > 0, c.wrapping_sub(w));
            let s_ok = walk(y + 1 < h, c + w);
            let w_ok = walk(x > 0, c.wrapping_sub(1));
            let e_ok = walk(x + 1 < w, c + 1);
            let diagonals = !four;
            let allowed = [
                n_ok,
                diagonals && n_ok && e_ok,
                e_ok,
                diagonals && s_ok && e_ok,
                s_ok,
                diagonals && s_ok && w_ok,
                w_ok,
                diagonals && n_ok && w_ok,
            ];
            for dir in 0..8 {
                if !allowed[dir] {
                    continue;
                }
                let nx = (x as i32 + Dir8::DX[dir]) as usize;
                let ny = (y as i32 + Dir8::DY[dir]) as usize;
                let j = ny * w + nx;
                if dir & 1 == 1 && costs[j] == WALL {
                    continue;
                }
                let ng = eg as u64 + (base[dir] * t) as u64;
                if ng >= u32::MAX as u64 {
                    return Err(AStarError::Overflow {
                        x: nx as u32,
                        y: ny as u32,
                    });
                }
                let ng = ng as u32;
                let node = &mut self.nodes[j];
                if node.generation == generation && node.g <= ng {
                    continue;
                }
                *node = NodeState { g: ng, generation };
                self.came_from[j] = dir as u8;
                let hf = heuristic(nx as u32, ny as u32);
                self.open
                    .push(OpenEntry::new(ng.saturating_add(hf), ng, nx, ny));
            }
        }
        Ok(None)
    }

    /// Write the cells of the last successful [`search`](Self::search) into `out` (cleared
    /// first), start to goal. Returns false if the last search found no path. O(path length).
    pub fn path_into(&self, out: &mut Vec<UVec2>) -> bool {
        out.clear();
        let Some((from, to)) = self.last_goal else {
            return false;
        };
        let mut cur = to;
        out.push(cur);
        while cur != from {
            let i = cur.y as usize * self.width + cur.x as usize;
            let back = Dir8::ALL[self.came_from[i] as usize].opposite();
            let (dx, dy) = back.offset();
            cur = UVec2::new((cur.x as i32 + dx) as u32, (cur.y as i32 + dy) as u32);
            out.push(cur);
        }
        out.reverse();
        true
    }

    /// The cheapest path, or `Ok(None)`. Allocates the returned path only.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{AStar, CostField, CostModel, Grid, WALL};
    /// let mut cost = CostField::new(Grid::new(5, 5).unwrap());
    /// cost.fill_rect(UVec2::new(2, 0), UVec2::new(2, 3), WALL).unwrap();
    /// let path = AStar::new()
    ///     .find_path(&cost, UVec2::new(0, 0), UVec2::new(4, 0), CostModel::TenFourteen)
    ///     .unwrap()
    ///     .expect("a way round the wall");
    /// assert_eq!(path.cells.first(), Some(&UVec2::new(0, 0)));
    /// assert!(path.cells.contains(&UVec2::new(2, 4)));
    /// ```
    pub fn find_path(
        &mut self,
        cost: &CostField,
        from: UVec2,
        to: UVec2,
        model: CostModel,
    ) -> Result<Option<Path>, AStarError> {
        match self.search(cost, from, to, model)? {
            None => Ok(None),
            Some(c) => {
                let mut cells = Vec::new();
                self.path_into(&mut cells);
                Ok(Some(Path { cells, cost: c }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Grid;

    #[test]
    fn settled_counts_the_cells_a_query_expanded() {
        // A one-row corridor: every cell from start to goal is expanded once, nothing else.
        let cost = CostField::new(Grid::new(10, 1).unwrap());
        let mut astar = AStar::new();
        let c = astar.search(
            &cost,
            UVec2::new(0, 0),
            UVec2::new(9, 0),
            CostModel::TenFourteen,
        );
        assert_eq!(c, Ok(Some(90)));
        assert!((9..=10).contains(&astar.settled()), "{}", astar.settled());
        // Behind a wall the search must look round it: more cells than the straight line.
        let mut walled = CostField::new(Grid::new(9, 9).unwrap());
        walled
            .fill_rect(UVec2::new(4, 0), UVec2::new(4, 7), WALL)
            .unwrap();
        astar
            .search(
                &walled,
                UVec2::new(0, 0),
                UVec2::new(8, 0),
                CostModel::TenFourteen,
            )
            .unwrap();
        assert!(astar.settled() > 20, "{}", astar.settled());
        assert!(astar.settled() <= walled.walkable_count());
    }

    #[test]
    fn path_steps_are_legal_and_sum_to_the_cost() {
        let mut cost = CostField::new(Grid::new(12, 9).unwrap());
        cost.fill_rect(UVec2::new(4, 0), UVec2::new(5, 6), WALL)
            .unwrap();
        cost.fill_rect(UVec2::new(7, 2), UVec2::new(11, 3), 6)
            .unwrap();
        let mut a = AStar::new();
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let p = a
                .find_path(&cost, UVec2::new(0, 0), UVec2::new(11, 0), model)
                .unwrap()
                .unwrap();
            let mut sum = 0;
            for pair in p.cells.windows(2) {
                let dir = Dir8::ALL
                    .into_iter()
                    .find(|d| cost.grid().neighbour(pair[0], *d) == Some(pair[1]))
                    .expect("adjacent cells");
                assert!(cost.can_step(pair[0], dir));
                sum += model.step(dir, cost.get(pair[0]).unwrap());
            }
            assert_eq!(sum, p.cost);
        }
    }

    #[test]
    fn no_path_and_bad_queries() {
        let mut cost = CostField::new(Grid::new(5, 5).unwrap());
        cost.fill_rect(UVec2::new(2, 0), UVec2::new(2, 4), WALL)
            .unwrap();
        let mut a = AStar::new();
        let m = CostModel::TenFourteen;
        assert_eq!(
            a.search(&cost, UVec2::new(0, 0), UVec2::new(4, 4), m),
            Ok(None)
        );
        assert!(!a.path_into(&mut Vec::new()));
        assert!(matches!(
            a.search(&cost, UVec2::new(5, 0), UVec2::new(0, 0), m),
            Err(AStarError::StartOutside(_))
        ));
        assert!(matches!(
            a.search(&cost, UVec2::new(0, 0), UVec2::new(0, 9), m),
            Err(AStarError::GoalOutside(_))
        ));
        assert_eq!(
            a.search(&cost, UVec2::new(2, 2), UVec2::new(0, 0), m),
            Err(AStarError::StartOnWall { x: 2, y: 2 })
        );
        assert_eq!(
            a.search(&cost, UVec2::new(0, 0), UVec2::new(2, 1), m),
            Err(AStarError::GoalOnWall { x: 2, y: 1 })
        );
        assert_eq!(
            a.search(&cost, UVec2::new(1, 1), UVec2::new(1, 1), m),
            Ok(Some(0))
        );
    }

    #[test]
    fn a_reused_context_answers_like_a_fresh_one() {
        let mut cost = CostField::new(Grid::new(20, 20).unwrap());
        cost.fill_rect(UVec2::new(3, 3), UVec2::new(16, 4), WALL)
            .unwrap();
        let mut reused = AStar::new();
        for (s, t) in [((0, 0), (19, 19)), ((10, 0), (10, 10)), ((19, 0), (0, 5))] {
            let s = UVec2::new(s.0, s.1);
            let t = UVec2::new(t.0, t.1);
            let m = CostModel::Octile;
            assert_eq!(
                reused.find_path(&cost, s, t, m).unwrap(),
                AStar::new().find_path(&cost, s, t, m).unwrap()
            );
        }
    }

    #[test]
    fn a_context_reused_on_maps_of_other_sizes_answers_like_a_fresh_one() {
        // A bigger map after a smaller one (the same width, then the same cell count with another
        // width): the context's tables must follow the map, not keep the last one's shape.
        let mut reused = AStar::new();
        for (w, h) in [(8, 4), (8, 8), (4, 16), (16, 4), (30, 30)] {
            let mut cost = CostField::new(Grid::new(w, h).unwrap());
            cost.fill_rect(UVec2::new(1, 1), UVec2::new(w - 2, 1), WALL)
                .unwrap();
            let (s, t) = (UVec2::new(0, 0), UVec2::new(w - 1, h - 1));
            let m = CostModel::TenFourteen;
            assert_eq!(
                reused.find_path(&cost, s, t, m).unwrap(),
                AStar::new().find_path(&cost, s, t, m).unwrap(),
                "{w}x{h}"
            );
        }
    }

    #[test]
    fn four_connected_searches_cost_what_a_plain_four_way_dijkstra_says() {
        // Walls in a fixed scatter; costs from every 7th open cell to a few goals, against a
        // Dijkstra written here over the four straight steps (terrain of the cell stepped from).
        let (w, h) = (24u32, 18u32);
        let mut cost = CostField::new(Grid::new(w, h).unwrap());
        for k in 0..60u32 {
            let c = UVec2::new((k * 7 + k / 5) % w, (k * 11 + 3) % h);
            cost.set(c, if k % 4 == 0 { 5 } else { WALL }).unwrap();
        }
        let dijkstra = |goal: UVec2| {
            let mut dist = vec![u32::MAX; (w * h) as usize];
            let mut heap = std::collections::BinaryHeap::new();
            dist[(goal.y * w + goal.x) as usize] = 0;
            heap.push(std::cmp::Reverse((0u32, goal.x, goal.y)));
            while let Some(std::cmp::Reverse((d, x, y))) = heap.pop() {
                if d > dist[(y * w + x) as usize] {
                    continue;
                }
                // A unit steps from (nx, ny) into (x, y), paying (nx, ny)'s terrain.
                for (dx, dy) in [(0i32, -1i32), (1, 0), (0, 1), (-1, 0)] {
                    let (nx, ny) = (x as i32 + dx, y as i32 + dy);
                    if nx < 0 || ny < 0 || nx >= w as i32 || ny >= h as i32 {
                        continue;
                    }
                    let t = cost.get(UVec2::new(nx as u32, ny as u32)).unwrap();
                    let nd = d + 10 * t as u32;
                    let i = (ny as u32 * w + nx as u32) as usize;
                    if t != WALL && nd < dist[i] {
                        dist[i] = nd;
                        heap.push(std::cmp::Reverse((nd, nx as u32, ny as u32)));
                    }
                }
            }
            dist
        };
        let mut search = AStar::new().four_connected(true);
        let mut compared = 0;
        for goal in [UVec2::new(0, 0), UVec2::new(23, 17), UVec2::new(12, 9)] {
            if !cost.is_walkable(goal) {
                continue;
            }
            let want = dijkstra(goal);
            for i in (0..w * h).step_by(7) {
                let start = UVec2::new(i % w, i / w);
                if !cost.is_walkable(start) {
                    continue;
                }
                let got = search
                    .search(&cost, start, goal, CostModel::TenFourteen)
                    .unwrap();
                let expected = Some(want[i as usize]).filter(|&d| d != u32::MAX);
                assert_eq!(got, expected, "{start} -> {goal}");
                compared += 1;
            }
        }
        assert!(compared > 100, "{compared}");
    }

    #[test]
    fn the_four_connected_heuristic_is_the_manhattan_distance_and_guides_the_search() {
        // On open ground the Manhattan distance is exact, so a straight query expands only the
        // cells of its row; a weaker bound would spread over the map.
        let cost = CostField::new(Grid::new(64, 64).unwrap());
        let mut search = AStar::new().four_connected(true);
        let (s, t) = (UVec2::new(0, 20), UVec2::new(63, 20));
        let raw = search.search(&cost, s, t, CostModel::TenFourteen).unwrap();
        assert_eq!(raw, Some(630));
        assert!(search.settled() <= 64, "{} cells settled", search.settled());
    }
}
