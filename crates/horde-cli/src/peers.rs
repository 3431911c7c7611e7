//! The peer crates `horde bench` compares with (`pathfinding`, bracket-lib's
//! `bracket-pathfinding`), built only with the `peers` feature so the default binary does not
//! carry them.

use glam::UVec2;
use horde::{CostField, CostModel, Dir8};

/// The `pathfinding` crate's `dijkstra_all` from the goal over the reversed steps, with the same
/// costs and corner rule. Returns the number of cells reached (goal excluded).
pub fn pathfinding_dijkstra_all(cost: &CostField, goal: UVec2, model: CostModel) -> usize {
    let g = *cost.grid();
    let w = g.width() as usize;
    let costs = cost.costs();
    let start = g.index(goal).expect("goal on the map");
    let successors = |&i: &usize| {
        let cell = g.cell(i);
        let mut out = Vec::with_capacity(8);
        for dir in Dir8::ALL {
            let Some(j) = g.neighbour(cell, dir) else {
                continue;
            };
            let back = dir.opposite();
            if cost.can_step(j, back) {
                let jj = j.y as usize * w + j.x as usize;
                out.push((jj, model.step(back, costs[jj])));
            }
        }
        out
    };
    pathfinding::prelude::dijkstra_all(&start, successors).len()
}

/// The `pathfinding` crate's `astar` from `start` to `goal` with the same steps, costs, corner
/// rule and octile heuristic as horde's own searches. Returns the path's raw cost, or `None`.
pub fn pathfinding_astar(
    cost: &CostField,
    start: UVec2,
    goal: UVec2,
    model: CostModel,
) -> Option<u32> {
    let g = *cost.grid();
    let w = g.width() as usize;
    let costs = cost.costs();
    let from = g.index(start).ok()?;
    let to = g.index(goal).ok()?;
    let successors = |&i: &usize| {
        let cell = g.cell(i);
        let mut out = Vec::with_capacity(8);
        for dir in Dir8::ALL {
            if let Some(j) = g.neighbour(cell, dir)
                && cost.can_step(cell, dir)
            {
                out.push((j.y as usize * w + j.x as usize, model.step(dir, costs[i])));
            }
        }
        out
    };
    let heuristic = |&i: &usize| {
        let c = g.cell(i);
        model.heuristic(c.x.abs_diff(goal.x), c.y.abs_diff(goal.y))
    };
    pathfinding::prelude::astar(&from, successors, heuristic, |&i| i == to).map(|(_, c)| c)
}

/// bracket-lib's Dijkstra maps (`bracket-pathfinding`) over the same moves: each cell lists the
/// cells that can step into it, with the step's cost in the model's units. Its map is `f32` and
/// its queue a FIFO that re-queues improved cells.
pub struct BracketMap<'a> {
    cost: &'a CostField,
    model: CostModel,
}

impl bracket_pathfinding::prelude::BaseMap for BracketMap<'_> {
    fn get_available_exits(
        &self,
        idx: usize,
    ) -> bracket_pathfinding::prelude::SmallVec<[(usize, f32); 10]> {
        let g = self.cost.grid();
        let cell = g.cell(idx);
        let mut out = bracket_pathfinding::prelude::SmallVec::new();
        for dir in Dir8::ALL {
            let Some(j) = g.neighbour(cell, dir) else {
                continue;
            };
            let back = dir.opposite();
            if self.cost.can_step(j, back) {
                let t = self.cost.get(j).unwrap_or(1);
                out.push((
                    g.index(j).expect("on the map"),
                    self.model.to_cost(self.model.step(back, t)) as f32,
                ));
            }
        }
        out
    }
}

/// One bracket-lib Dijkstra map from the goal; returns the cells it reached.
pub fn bracket_dijkstra_map(cost: &CostField, goal: UVec2, model: CostModel) -> usize {
    let g = cost.grid();
    let map = BracketMap { cost, model };
    let start = g.index(goal).expect("goal on the map");
    let dm = bracket_pathfinding::prelude::DijkstraMap::new(
        g.width(),
        g.height(),
        &[start],
        &map,
        f32::MAX,
    );
    dm.map.iter().filter(|v| **v < f32::MAX).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_reach_what_the_wave_reaches() {
        let (cost, goal, reachable) = crate::measure::scene();
        assert_eq!(
            pathfinding_dijkstra_all(&cost, goal, CostModel::TenFourteen) + 1,
            reachable
        );
        // bracket-lib's map leaves its start at the initial "unvisited" value unless a way back
        // into it is cheaper than nothing, so it reaches every other reachable cell.
        let bracket = bracket_dijkstra_map(&cost, goal, CostModel::TenFourteen);
        assert!(
            bracket + 1 >= reachable && bracket <= reachable,
            "{bracket} vs {reachable}"
        );
    }
}
