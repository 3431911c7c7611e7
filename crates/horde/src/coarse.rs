//! Coarse fields for far-away groups (a hierarchy of resolutions, the usual remedy for fields
//! over huge maps): the same integration and flow
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
#[non_exhaustive]
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
    /// let walk = coarse.walk(&map, start, 10_000, &mut horde::coarse::WindowScratch::new());
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
        let coarse_grid =
            Grid::new(cw, ch)?.with_world(g.origin(), g.cell_size() * factor as f32)?;
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
    /// Walk on the map from `start` as a unit guided by this coarse field would, until it enters
    /// a coarse cell holding a goal (where units switch to steering straight at the goal), has no
    /// way on, enters one coarse cell a fourth time (a loop), or has taken `max_steps` steps.
    ///
    /// Inside each coarse cell the walk follows a small map-resolution field over that cell and
    /// its eight neighbours, whose border cells start from the coarse estimate
    /// ([`estimate`](Self::estimate)): the local refinement hierarchical planners use, so that
    /// obstacles smaller than a coarse cell are walked around instead of trapping the unit.
    /// `scratch` is reused between walks. O(steps + coarse cells crossed × (3 × factor)² log).
    pub fn walk(
        &self,
        map: &CostField,
        start: UVec2,
        max_steps: usize,
        scratch: &mut WindowScratch,
    ) -> CoarseWalk {
        let model = self.integration.model();
        let mut out = CoarseWalk {
            cost: 0,
            steps: 0,
            end: start,
            reached: false,
        };
        if !map.is_walkable(start) {
            return out;
        }
        scratch.visits.clear();
        let mut window_of = None;
        while out.steps < max_steps {
            let here = self.coarse_cell(out.end);
            if self.goal_cells.contains(&here) {
                out.reached = true;
                return out;
            }
            // Keep following one local field through coarse cells that are not nearer the goal
            // (a way round an obstacle), until the walk reaches one of its exits.
            let coarse_value = |c: UVec2| self.integration.get(c).map_or(u64::MAX, |v| v as u64);
            let keep = match window_of {
                Some((_, true, v)) => coarse_value(here) >= v && scratch.value(out.end).is_finite(),
                Some((c, false, _)) => c == here,
                None => false,
            };
            if !keep {
                // Entering a coarse cell for the fourth time is a loop: stop there.
                let visits = scratch.visits.entry(here).or_insert(0);
                *visits += 1;
                if *visits > 3 {
                    return out;
                }
                // Exits into nearer coarse cells, looking further out when none is reachable
                // nearby; as a last resort any exit with a coarse value (the coarse map and the
                // real one disagree here).
                let mut strict = false;
                for reach in 1..=3 {
                    self.refine(map, here, reach, true, scratch);
                    if scratch.value(out.end).is_finite() {
                        strict = true;
                        break;
                    }
                }
                if !strict {
                    self.refine(map, here, 1, false, scratch);
                }
                window_of = Some((here, strict, coarse_value(here)));
            }
            let Some(dir) = scratch.step(map, out.end, model) else {
                return out;
            };
            out.cost += model.step(dir, map.get(out.end).unwrap_or(1)) as u64;
            out.end = self
                .map_grid
                .neighbour(out.end, dir)
                .expect("a legal step stays on the map");
            out.steps += 1;
        }
        out.reached = self.goal_cells.contains(&self.coarse_cell(out.end));
        out
    }

    /// Fill `scratch` with the local field of coarse cell `c`: map cells of the coarse cells
    /// within `reach` of `c`, cells outside `c` starting from their coarse estimate (only in
    /// coarse cells nearer the goal than `c` if `strict`), goal cells from 0.
    fn refine(
        &self,
        map: &CostField,
        c: UVec2,
        reach: u32,
        strict: bool,
        scratch: &mut WindowScratch,
    ) {
        let f = self.factor;
        let (w, h) = (map.width(), map.height());
        let x0 = c.x.saturating_sub(reach) * f;
        let y0 = c.y.saturating_sub(reach) * f;
        let x1 = ((c.x + reach + 1) * f).min(w);
        let y1 = ((c.y + reach + 1) * f).min(h);
        scratch.origin = UVec2::new(x0, y0);
        scratch.size = UVec2::new(x1 - x0, y1 - y0);
        let n = (scratch.size.x * scratch.size.y) as usize;
        scratch.values.clear();
        scratch.values.resize(n, f32::INFINITY);
        scratch.heap.clear();
        let model = self.integration.model();
        let cw = self.cost.width();
        let here_value = self.integration.values()[(c.y * cw + c.x) as usize];
        for y in y0..y1 {
            for x in x0..x1 {
                let cell = UVec2::new(x, y);
                if !map.is_walkable(cell) {
                    continue;
                }
                let cc = self.coarse_cell(cell);
                if cc == c {
                    continue;
                }
                let v = if self.goal_cells.contains(&cc) {
                    // A neighbouring goal cell: the unit switches to direct steering there.
                    0.0
                } else {
                    // Only coarse cells nearer the goal are exits, so every coarse cell crossed
                    // is nearer than the last one and a walk cannot go round in circles.
                    let vc = self.integration.values()[(cc.y * cw + cc.x) as usize];
                    if vc == UNREACHABLE || (strict && vc >= here_value) {
                        continue;
                    }
                    self.estimate(cell.as_vec2() + Vec2::splat(0.5))
                        .unwrap_or((vc * f) as f32)
                };
                let i = scratch.local(cell);
                scratch.values[i] = v;
                scratch.heap.push(std::cmp::Reverse((OrdF32(v), i as u32)));
            }
        }
        while let Some(std::cmp::Reverse((OrdF32(d), i))) = scratch.heap.pop() {
            if d > scratch.values[i as usize] {
                continue;
            }
            let cell = scratch.origin + UVec2::new(i % scratch.size.x, i / scratch.size.x);
            for dir in Dir8::ALL {
                // A unit steps from `from` into `cell`, priced by `from`'s terrain.
                let Some(from) = self.map_grid.neighbour(cell, dir) else {
                    continue;
                };
                if !scratch.contains(from) || !map.can_step(from, dir.opposite()) {
                    continue;
                }
                let nd = d + model.step(dir.opposite(), map.get(from).unwrap_or(1)) as f32;
                let j = scratch.local(from);
                if nd < scratch.values[j] {
                    scratch.values[j] = nd;
                    scratch.heap.push(std::cmp::Reverse((OrdF32(nd), j as u32)));
                }
            }
        }
    }
}

/// Scratch memory of [`CoarseField::walk`]: one local field of `(3 × factor)²` cells (4 bytes
/// each), its queue, and a count of visits per coarse cell (loop detection).
#[derive(Debug, Clone, Default)]
pub struct WindowScratch {
    origin: UVec2,
    size: UVec2,
    values: Vec<f32>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(OrdF32, u32)>>,
    visits: std::collections::HashMap<UVec2, u32>,
}

impl WindowScratch {
    /// Empty scratch.
    pub fn new() -> WindowScratch {
        WindowScratch::default()
    }

    fn contains(&self, cell: UVec2) -> bool {
        cell.cmpge(self.origin).all() && (cell - self.origin).cmplt(self.size).all()
    }

    fn value(&self, cell: UVec2) -> f32 {
        if self.contains(cell) {
            self.values[self.local(cell)]
        } else {
            f32::INFINITY
        }
    }

    fn local(&self, cell: UVec2) -> usize {
        let p = cell - self.origin;
        (p.y * self.size.x + p.x) as usize
    }

    /// The legal step minimising step cost plus the local value of the next cell.
    fn step(&self, map: &CostField, cell: UVec2, model: CostModel) -> Option<Dir8> {
        let t = map.get(cell)?;
        let mut best: Option<(f32, Dir8)> = None;
        for dir in Dir8::ALL {
            if !map.can_step(cell, dir) {
                continue;
            }
            let next = map.grid().neighbour(cell, dir)?;
            if !self.contains(next) {
                continue;
            }
            let v = self.values[self.local(next)];
            if !v.is_finite() {
                continue;
            }
            let v = v + model.step(dir, t) as f32;
            if best.is_none_or(|(b, _)| v < b) {
                best = Some((v, dir));
            }
        }
        best.map(|(_, d)| d)
    }
}

/// An `f32` ordered by `total_cmp`, for the local queue.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF32(f32);

impl Eq for OrdF32 {}

impl PartialOrd for OrdF32 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdF32 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
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
            assert!(
                (est - exact).abs() < 0.15 * exact + 60.0,
                "{cell}: {est} vs {exact}"
            );
        }
    }
}
