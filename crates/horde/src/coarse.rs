//! Coarse fields for far-away groups (seed 000's third remedy): the same integration and flow
//! fields over a grid whose cells each cover `factor × factor` map cells, so a build costs about
//! `1 / factor²` of a full one, and units read them with interpolation.
//!
//! A coarse cell is walkable when at least half of its map cells are (or it holds a goal); its
//! terrain cost is the mean cost of its walkable map cells, rounded up. A coarse field can
//! therefore close a gap narrower than a coarse cell or open one through a thin wall: it is a
//! guide for units far from the goal, which switch to a full field or to direct steering near it.
//! [`CoarseField::step_from`] is how a unit on the map follows it: the legal map step that
//! minimises step cost plus the interpolated coarse cost-to-goal.

use glam::{UVec2, Vec2};
use thiserror::Error;

use crate::cost::{CostError, CostField, CostModel, WALL};
use crate::flow::FlowField;
use crate::grid::{Dir8, Grid, GridError};
use crate::integration::{IntegrationBuilder, IntegrationError, IntegrationField, UNREACHABLE};

/// Why a coarse field could not be built.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CoarseError {
    /// A factor below 2 or above 64.
    #[error("coarse factor {0} is not allowed: use 2 to 64 map cells per coarse cell side")]
    BadFactor(u32),
    /// A goal outside the map or on a wall.
    #[error(transparent)]
    Integration(#[from] IntegrationError),
    /// The coarse grid could not be made.
    #[error(transparent)]
    Grid(#[from] GridError),
    /// The coarse cost field could not be made.
    #[error(transparent)]
    Cost(#[from] CostError),
}

/// Integration and flow fields over a coarse grid.
///
/// Memory per coarse cell: 1 byte of cost, 4 of integration, 1 of flow — 6 bytes per coarse cell,
/// that is 1.5 bytes per map cell at factor 2 and 0.375 at factor 4.
#[derive(Debug, Clone, PartialEq)]
pub struct CoarseField {
    factor: u32,
    map_grid: Grid,
    goal_cells: Vec<UVec2>,
    cost: CostField,
    integration: IntegrationField,
    flow: FlowField,
}

impl CoarseField {
    /// Build the coarse fields of `cost` for goal cells of the map (nearest goal wins).
    /// O(cells of the map) for the coarse costs plus O(coarse cells) for the wave.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CoarseField, CostModel, IntegrationBuilder};
    /// let map = horde::maps::demo_map();
    /// let goal = UVec2::new(64, 64);
    /// let coarse = CoarseField::build(&map, 4, &[goal], CostModel::TenFourteen, &mut IntegrationBuilder::new()).unwrap();
    /// assert_eq!(coarse.flow().grid().width(), 32);
    /// // Follow it on the map from a far corner: every step is legal and it gets close.
    /// let start = (0..128).map(|i| UVec2::new(i, i)).find(|&c| map.is_walkable(c)).unwrap();
    /// let walk = coarse.walk(&map, start, 10_000);
    /// assert!(walk.reached);
    /// assert_eq!(coarse.coarse_cell(walk.end), coarse.coarse_cell(goal));
    /// ```
    pub fn build(
        cost: &CostField,
        factor: u32,
        goals: &[UVec2],
        model: CostModel,
        builder: &mut IntegrationBuilder,
    ) -> Result<CoarseField, CoarseError> {
        if !(2..=64).contains(&factor) {
            return Err(CoarseError::BadFactor(factor));
        }
        if goals.is_empty() {
            return Err(IntegrationError::NoGoals.into());
        }
        let g = *cost.grid();
        for &goal in goals {
            g.index(goal).map_err(IntegrationError::GoalOutside)?;
            if !cost.is_walkable(goal) {
                return Err(IntegrationError::GoalOnWall {
                    x: goal.x,
                    y: goal.y,
                }
                .into());
            }
        }
        let (cw, ch) = (g.width().div_ceil(factor), g.height().div_ceil(factor));
        let coarse_grid = Grid::new(cw, ch)?.with_world(g.origin(), g.cell_size() * factor as f32)?;
        let mut costs = vec![WALL; (cw * ch) as usize];
        let (w, h) = (g.width(), g.height());
        for cy in 0..ch {
            for cx in 0..cw {
                let (mut walk, mut total, mut sum) = (0u32, 0u32, 0u32);
                for y in cy * factor..((cy + 1) * factor).min(h) {
                    for x in cx * factor..((cx + 1) * factor).min(w) {
                        let c = cost.costs()[(y * w + x) as usize];
                        total += 1;
                        if c != WALL {
                            walk += 1;
                            sum += c as u32;
                        }
                    }
                }
                if walk * 2 >= total && walk > 0 {
                    costs[(cy * cw + cx) as usize] = sum.div_ceil(walk).min(254) as u8;
                }
            }
        }
        let coarse_goals: Vec<UVec2> = goals.iter().map(|&p| p / factor).collect();
        for &cg in &coarse_goals {
            let i = (cg.y * cw + cg.x) as usize;
            if costs[i] == WALL {
                // A goal in a mostly-walled coarse cell keeps its cell open.
                costs[i] = 1;
            }
        }
        let coarse_cost = CostField::from_costs(coarse_grid, costs)?;
        let mut integration = IntegrationField::new(coarse_grid, model);
        builder.build_into(&coarse_cost, &coarse_goals, model, &mut integration)?;
        let mut flow = FlowField::new(coarse_grid);
        builder
            .flow_into(&mut flow)
            .expect("the builder just built a field of this size");
        Ok(CoarseField {
            factor,
            map_grid: g,
            goal_cells: coarse_goals,
            cost: coarse_cost,
            integration,
            flow,
        })
    }

    /// Map cells per coarse cell side.
    pub fn factor(&self) -> u32 {
        self.factor
    }

    /// The coarse cost field.
    pub fn cost(&self) -> &CostField {
        &self.cost
    }

    /// The coarse integration field (raw values of coarse steps).
    pub fn integration(&self) -> &IntegrationField {
        &self.integration
    }

    /// The coarse flow field; its grid maps world positions with a cell size `factor` times the
    /// map's, so [`FlowField::sample_bilinear`] works on world positions directly.
    pub fn flow(&self) -> &FlowField {
        &self.flow
    }

    /// The coarse cell holding a map cell.
    pub fn coarse_cell(&self, cell: UVec2) -> UVec2 {
        cell / self.factor
    }

    /// Estimated raw cost-to-goal at a point in map-cell coordinates (the map cell (x, y) spans
    /// x..x+1): the coarse values bilinearly interpolated between coarse cell centres and scaled
    /// to map steps; corners without a value are left out of the blend. `None` if no corner has
    /// a value.
    pub fn estimate(&self, point: Vec2) -> Option<f32> {
        let f = self.factor as f32;
        let p = point / f - Vec2::splat(0.5);
        let base = p.floor();
        let t = p - base;
        let (cw, ch) = (self.cost.width() as i64, self.cost.height() as i64);
        let mut sum = 0.0f32;
        let mut weight = 0.0f32;
        for (dx, dy, wgt) in [
            (0, 0, (1.0 - t.x) * (1.0 - t.y)),
            (1, 0, t.x * (1.0 - t.y)),
            (0, 1, (1.0 - t.x) * t.y),
            (1, 1, t.x * t.y),
        ] {
            let (x, y) = (base.x as i64 + dx, base.y as i64 + dy);
            if x < 0 || y < 0 || x >= cw || y >= ch || wgt <= 0.0 {
                continue;
            }
            let v = self.integration.values()[(y * cw + x) as usize];
            if v != UNREACHABLE {
                sum += v as f32 * wgt;
                weight += wgt;
            }
        }
        (weight > 0.0).then(|| sum / weight * f)
    }

    /// The step a unit on map cell `cell` takes: among the legal map steps (corner rule), the
    /// one minimising step cost plus the estimated cost-to-goal at the next cell's centre (ties
    /// to the lowest direction). `None` on a wall, off the map, or where no neighbour has an
    /// estimate. O(1).
    pub fn step_from(&self, map: &CostField, cell: UVec2) -> Option<Dir8> {
        let t = map.get(cell)?;
        if t == WALL {
            return None;
        }
        let model = self.integration.model();
        let mut best: Option<(f32, Dir8)> = None;
        for dir in Dir8::ALL {
            if !map.can_step(cell, dir) {
                continue;
            }
            let next = self.map_grid.neighbour(cell, dir)?;
            let Some(est) = self.estimate(next.as_vec2() + Vec2::splat(0.5)) else {
                continue;
            };
            let v = est + model.step(dir, t) as f32;
            if best.is_none_or(|(b, _)| v < b) {
                best = Some((v, dir));
            }
        }
        best.map(|(_, d)| d)
    }
}

/// Where following a coarse field on the map led: see [`CoarseField::walk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoarseWalk {
    /// Raw cost of the map steps taken.
    pub cost: u64,
    /// Map steps taken.
    pub steps: usize,
    /// Where the walk ended.
    pub end: UVec2,
    /// It ended in a goal's coarse cell (where units switch to steering straight at the goal).
    pub reached: bool,
}

impl CoarseField {
    /// Follow [`step_from`](Self::step_from) on the map from `start` until the walk enters a
    /// coarse cell holding a goal, has no step, or has taken `max_steps` steps (a walk caught in
    /// a loop ends there). O(steps).
    pub fn walk(&self, map: &CostField, start: UVec2, max_steps: usize) -> CoarseWalk {
        let model = self.integration.model();
        let mut out = CoarseWalk {
            cost: 0,
            steps: 0,
            end: start,
            reached: false,
        };
        while out.steps <= max_steps {
            if self.goal_cells.contains(&self.coarse_cell(out.end)) {
                out.reached = true;
                break;
            }
            if out.steps == max_steps {
                break;
            }
            let Some(dir) = self.step_from(map, out.end) else {
                break;
            };
            out.cost += model.step(dir, map.costs()[self.map_grid.index(out.end).unwrap_or(0)]) as u64;
            out.end = self
                .map_grid
                .neighbour(out.end, dir)
                .expect("a legal step stays on the map");
            out.steps += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_costs_follow_the_majority_and_the_mean() {
        let mut cost = CostField::new(Grid::new(4, 2).unwrap());
        cost.set(UVec2::new(0, 0), WALL).unwrap();
        cost.set(UVec2::new(1, 0), WALL).unwrap();
        cost.set(UVec2::new(0, 1), WALL).unwrap();
        cost.set(UVec2::new(2, 0), 4).unwrap();
        let c = CoarseField::build(
            &cost,
            2,
            &[UVec2::new(3, 1)],
            CostModel::TenFourteen,
            &mut IntegrationBuilder::new(),
        )
        .unwrap();
        // Left block: 3 of 4 walls; right block: costs 4, 1, 1, 1 -> mean 1.75, rounded up.
        assert_eq!(c.cost().costs(), &[WALL, 2]);
        assert_eq!(c.integration().values(), &[UNREACHABLE, 0]);
    }

    #[test]
    fn bad_factors_and_goals_are_errors() {
        let cost = CostField::new(Grid::new(8, 8).unwrap());
        let mut b = IntegrationBuilder::new();
        let m = CostModel::Octile;
        assert_eq!(
            CoarseField::build(&cost, 1, &[UVec2::ZERO], m, &mut b),
            Err(CoarseError::BadFactor(1))
        );
        assert!(CoarseField::build(&cost, 2, &[UVec2::new(8, 0)], m, &mut b).is_err());
        assert!(CoarseField::build(&cost, 2, &[], m, &mut b).is_err());
    }

    #[test]
    fn on_open_ground_the_estimate_is_close_to_the_fine_value() {
        let cost = CostField::new(Grid::new(64, 64).unwrap());
        let goal = UVec2::new(10, 50);
        let mut b = IntegrationBuilder::new();
        let fine = b.build(&cost, &[goal], CostModel::TenFourteen).unwrap();
        let coarse = CoarseField::build(&cost, 4, &[goal], CostModel::TenFourteen, &mut b).unwrap();
        for cell in [UVec2::new(60, 3), UVec2::new(40, 40), UVec2::new(12, 10)] {
            let est = coarse.estimate(cell.as_vec2() + Vec2::splat(0.5)).unwrap();
            let exact = fine.get(cell).unwrap() as f32;
            assert!((est - exact).abs() < 0.15 * exact + 60.0, "{cell}: {est} vs {exact}");
        }
    }
}
