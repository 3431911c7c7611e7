//! Living maps (the DetourTileCache stage): fields that follow a map and goals that change
//! while the game runs.
//!
//! - [`LiveField`] keeps an integration field and its flow field and repairs both in place after
//!   cost edits ([`LiveField::repair`]) or when its goals move ([`LiveField::move_goals`]). The
//!   result is always identical to a fresh build on the edited map (values and arrows).
//! - [`FieldRepairer`] holds the scratch memory of repairs, reused from call to call.
//! - [`FieldCache`] keeps fields keyed by goal cell and size class under a memory budget, evicts
//!   the least recently used, and repairs every cached field when the map changes.
//!
//! # How a repair works
//! Integration values are shortest-path costs, so a repair is a dynamic single-source
//! shortest-path update in two phases (as in Ramalingam and Reps, and the "increase" /
//! "decrease" phases of D* Lite):
//! 1. **Invalidate.** Cells near a changed cell (their steps changed) are checked in increasing
//!    order of their old value: a cell keeps its value if a neighbour that is still valid reaches
//!    it by a legal step of exactly the difference (or it is a goal). A cell that loses every
//!    support is invalidated, and its neighbours with larger values are checked in turn. Because a
//!    support always has a smaller value, checking in value order never trusts a support that is
//!    invalidated later.
//! 2. **Re-propagate.** Invalidated cells restart from their best valid neighbour, cells whose
//!    steps got cheaper are offered their new best, and a Dijkstra wave spreads every decrease.
//!
//! Only cells whose value actually changes are relabelled; arrows are recomputed for those cells,
//! their neighbours and the edited cells. When the invalidated region passes a fraction of the map
//! (a goal that moves changes nearly every value), the repair switches to a full rebuild, which is
//! then the cheaper exact answer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use glam::{UVec2, Vec2};
use thiserror::Error;

use crate::cost::{CostEdit, CostError, CostField, CostModel, WALL};
use crate::flow::{FLOW_UNREACHABLE, FLOW_WALL, FlowField, flow_byte};
use crate::grid::{Dir8, Grid, GridError, SizeMismatch};
use crate::integration::{
    BuildProgress, IntegrationBuilder, IntegrationError, IntegrationField, UNREACHABLE,
};

/// Why a repair or a cache request failed.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum LiveError {
    /// Building or repairing the field failed (bad goal, overflow).
    #[error(transparent)]
    Integration(#[from] IntegrationError),
    /// An edit was refused; nothing was changed.
    #[error(transparent)]
    Cost(#[from] CostError),
    /// A changed cell outside the map.
    #[error("changed cell: {0}")]
    CellOutside(GridError),
    /// The cost field is not the size of the field being repaired.
    #[error(transparent)]
    SizeMismatch(#[from] SizeMismatch),
    /// A size class this cache does not have.
    #[error("size class {0} does not exist in this cache (add it with add_size_class)")]
    UnknownClass(u8),
    /// A world position outside the map given as a goal.
    #[error("goal position ({x}, {y}) is outside the map")]
    GoalOutsideWorld { x: f32, y: f32 },
}

/// What one repair did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RepairStats {
    /// Cells whose support was checked in the invalidation phase.
    pub checked: usize,
    /// Cells that lost their value and were recomputed.
    pub invalidated: usize,
    /// Cells whose value was written in the re-propagation phase.
    pub relabelled: usize,
    /// Arrows recomputed.
    pub arrows: usize,
    /// The repair fell back to a full rebuild (too much of the map changed).
    pub rebuilt: bool,
}

/// An integration field and its flow field for a set of goal cells, kept exact while the map
/// changes.
///
/// Memory: 5 bytes per cell (4 for the integration values that repairs need, 1 for the arrows
/// units read), plus 12 bytes per goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveField {
    integration: IntegrationField,
    flow: FlowField,
    goals: Vec<UVec2>,
    /// The goals' cell indices, sorted, for membership tests.
    goal_index: Vec<u32>,
}

/// Scratch memory of repairs, reused from call to call (nothing is allocated once it has grown to
/// the largest repair seen).
///
/// Memory: 1 byte per cell of flags, plus lists and a heap proportional to the cells a repair
/// touches, plus an [`IntegrationBuilder`] (5 bytes per padded cell) for full rebuilds.
#[derive(Debug, Clone)]
pub struct FieldRepairer {
    flags: Vec<u8>,
    touched: Vec<u32>,
    heap: BinaryHeap<Reverse<u64>>,
    invalid: Vec<u32>,
    candidates: Vec<u32>,
    relabelled: Vec<u32>,
    arrows: Vec<u32>,
    builder: IntegrationBuilder,
    rebuild_divisor: usize,
}

impl Default for FieldRepairer {
    fn default() -> Self {
        FieldRepairer::new()
    }
}

const CHECKED: u8 = 1;
const INVALID: u8 = 2;
const CANDIDATE: u8 = 4;
const ARROW: u8 = 8;
const RELABELLED: u8 = 16;

impl FieldRepairer {
    /// Empty scratch; it grows on first use.
    pub fn new() -> FieldRepairer {
        FieldRepairer {
            flags: Vec::new(),
            touched: Vec::new(),
            heap: BinaryHeap::new(),
            invalid: Vec::new(),
            candidates: Vec::new(),
            relabelled: Vec::new(),
            arrows: Vec::new(),
            builder: IntegrationBuilder::new(),
            rebuild_divisor: 16,
        }
    }

    /// Fall back to a full rebuild once more than `cells / divisor` cells are invalidated
    /// (default 16; 0 never falls back). Either way the result is exact; this only picks the
    /// cheaper road.
    pub fn set_rebuild_divisor(&mut self, divisor: usize) {
        self.rebuild_divisor = divisor;
    }

    /// The builder used for full builds, also usable directly.
    pub fn builder(&mut self) -> &mut IntegrationBuilder {
        &mut self.builder
    }

    #[inline]
    fn mark(&mut self, i: usize, bit: u8) -> bool {
        let f = self.flags[i];
        if f & bit != 0 {
            return false;
        }
        if f == 0 {
            self.touched.push(i as u32);
        }
        self.flags[i] = f | bit;
        true
    }

    fn reset(&mut self, cells: usize) {
        if self.flags.len() != cells {
            self.flags.clear();
            self.flags.resize(cells, 0);
        } else {
            for &i in &self.touched {
                self.flags[i as usize] = 0;
            }
        }
        self.touched.clear();
        self.heap.clear();
        self.invalid.clear();
        self.candidates.clear();
        self.relabelled.clear();
        self.arrows.clear();
    }
}

/// The neighbours joined to a cell by a legal step either way (both walkable, and for a diagonal
/// both side cells walkable), each with the step's base cost.
struct Links {
    cells: [(u32, u32); 8],
    len: usize,
}

#[inline]
fn links(costs: &[u8], w: usize, h: usize, i: usize, base: &[u32; 8]) -> Links {
    let (x, y) = ((i % w) as isize, (i / w) as isize);
    let mut open = [false; 8];
    let mut index = [0usize; 8];
    for d in 0..8 {
        let (nx, ny) = (x + Dir8::DX[d] as isize, y + Dir8::DY[d] as isize);
        if nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h {
            index[d] = ny as usize * w + nx as usize;
            open[d] = costs[index[d]] != WALL;
        }
    }
    let mut out = Links {
        cells: [(0, 0); 8],
        len: 0,
    };
    for d in 0..8 {
        let side_ok = d % 2 == 0 || (open[d - 1] && open[(d + 1) % 8]);
        if open[d] && side_ok {
            out.cells[out.len] = (index[d] as u32, base[d]);
            out.len += 1;
        }
    }
    out
}

#[inline]
fn key(value: u32, cell: u32) -> Reverse<u64> {
    Reverse(((value as u64) << 32) | cell as u64)
}

/// Cells within one step (3 × 3) of `i`, on the map.
fn around(w: usize, h: usize, i: usize) -> impl Iterator<Item = usize> {
    let (x, y) = (i % w, i / w);
    let (x0, x1) = (x.saturating_sub(1), (x + 1).min(w - 1));
    let (y0, y1) = (y.saturating_sub(1), (y + 1).min(h - 1));
    (y0..=y1).flat_map(move |yy| (x0..=x1).map(move |xx| yy * w + xx))
}

impl LiveField {
    /// Build the fields for `goals` (nearest goal wins). O(cells).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostEdit, CostField, CostModel, FieldRepairer, Grid, IntegrationBuilder, LiveField, WALL};
    /// let mut cost = CostField::new(Grid::new(128, 128).unwrap());
    /// let goal = UVec2::new(2, 64);
    /// let mut repairer = FieldRepairer::new();
    /// let mut field = LiveField::build(&cost, &[goal], CostModel::TenFourteen, &mut repairer).unwrap();
    /// // A 4 × 4 building goes up: only the cells in its shadow change.
    /// let building = CostEdit::Rect { min: UVec2::new(60, 20), max: UVec2::new(63, 23), cost: WALL };
    /// let changed = cost.apply_edits(&[building]).unwrap();
    /// let stats = field.repair(&cost, &changed, &mut repairer).unwrap();
    /// assert!(!stats.rebuilt && stats.relabelled < 128 * 128 / 10);
    /// let fresh = IntegrationBuilder::new().build(&cost, &[goal], CostModel::TenFourteen).unwrap();
    /// assert_eq!(field.integration(), &fresh);
    /// ```
    pub fn build(
        cost: &CostField,
        goals: &[UVec2],
        model: CostModel,
        repairer: &mut FieldRepairer,
    ) -> Result<LiveField, LiveError> {
        let grid = *cost.grid();
        let goal_index = goal_indices(cost, goals)?;
        let mut field = LiveField {
            integration: IntegrationField::new(grid, model),
            flow: FlowField::new(grid),
            goals: goals.to_vec(),
            goal_index,
        };
        field.rebuild(cost, repairer)?;
        Ok(field)
    }

    /// The integration field (cost to the nearest goal).
    pub fn integration(&self) -> &IntegrationField {
        &self.integration
    }

    /// The flow field units read.
    pub fn flow(&self) -> &FlowField {
        &self.flow
    }

    /// The goal cells. A goal that an edit turned into a wall stays in the list but leads nowhere
    /// until it is walkable again (a fresh build with the remaining goals gives the same field).
    pub fn goals(&self) -> &[UVec2] {
        &self.goals
    }

    /// Bytes held per cell and in total.
    pub fn memory_bytes(&self) -> usize {
        self.integration.values.len() * 5 + self.goals.len() * 12
    }

    /// Repair both fields after the cells in `changed` got new costs in `cost` (the list
    /// [`CostField::apply_edits`] returns; listing extra cells is harmless, leaving out a changed
    /// one is not). Touches only the region whose cost-to-goal changes, plus a ring of one cell.
    /// O(k log k) for k cells relabelled; at worst the cost of a rebuild.
    ///
    /// If the repair finds that values would overflow 32 bits (as a rebuild would), it returns
    /// [`IntegrationError::Overflow`] and leaves every cell unreachable.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostEdit, CostField, CostModel, FieldRepairer, FlowField, Grid, LiveField, WALL};
    /// let mut cost = CostField::new(Grid::new(16, 4).unwrap());
    /// cost.fill_rect(UVec2::new(8, 0), UVec2::new(8, 3), WALL).unwrap(); // a wall across
    /// let mut rep = FieldRepairer::new();
    /// let mut field = LiveField::build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen, &mut rep).unwrap();
    /// assert_eq!(field.integration().get(UVec2::new(15, 0)), None); // sealed off
    /// let changed = cost.apply_edits(&[CostEdit::Cell { cell: UVec2::new(8, 2), cost: 1 }]).unwrap();
    /// field.repair(&cost, &changed, &mut rep).unwrap(); // a door opens
    /// assert!(field.integration().get(UVec2::new(15, 0)).is_some());
    /// assert_eq!(field.flow(), &FlowField::from_integration(&cost, field.integration()).unwrap());
    /// ```
    pub fn repair(
        &mut self,
        cost: &CostField,
        changed: &[UVec2],
        repairer: &mut FieldRepairer,
    ) -> Result<RepairStats, LiveError> {
        self.same_size(cost)?;
        repairer.reset(cost.grid().len());
        let (w, h) = (cost.width() as usize, cost.height() as usize);
        for &c in changed {
            let i = cost.grid().index(c).map_err(LiveError::CellOutside)?;
            for j in around(w, h, i) {
                if repairer.mark(j, CANDIDATE) {
                    repairer.candidates.push(j as u32);
                }
            }
        }
        self.update(cost, repairer, changed.len())
    }

    /// Move the goals (to any cells: usually the cell a chased target stepped into) and update
    /// both fields to equal a fresh build for the new goals. When some goals stay (a goal area
    /// that shifts, one of several flags that moves), cells whose way to a remaining goal
    /// survives keep their values and only the rest are recomputed. When every goal changes, the
    /// cost to the goal changes for nearly every cell (a single goal one cell east changes the
    /// values of all cells not straight behind it), so an exact update cannot be cheaper than a
    /// rebuild, and this rebuilds. For a chased target, round its position to a cell (or to a
    /// coarse cell) so that most frames change nothing. O(cells) at worst.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, CostModel, FieldRepairer, Grid, IntegrationBuilder, LiveField};
    /// let cost = CostField::new(Grid::new(16, 16).unwrap());
    /// let mut rep = FieldRepairer::new();
    /// let mut field = LiveField::build(&cost, &[UVec2::new(3, 3)], CostModel::Octile, &mut rep).unwrap();
    /// field.move_goals(&cost, &[UVec2::new(4, 3)], &mut rep).unwrap();
    /// let fresh = IntegrationBuilder::new().build(&cost, &[UVec2::new(4, 3)], CostModel::Octile).unwrap();
    /// assert_eq!(field.integration(), &fresh);
    /// ```
    pub fn move_goals(
        &mut self,
        cost: &CostField,
        goals: &[UVec2],
        repairer: &mut FieldRepairer,
    ) -> Result<RepairStats, LiveError> {
        self.same_size(cost)?;
        let new_index = goal_indices(cost, goals)?;
        // When no old goal stays, every cell loses the support of its way to the goals: the
        // repair would invalidate the whole reachable map, so rebuild at once.
        let kept = self
            .goal_index
            .iter()
            .any(|i| new_index.binary_search(i).is_ok());
        if !kept {
            self.goals = goals.to_vec();
            self.goal_index = new_index;
            return self.fall_back(cost, repairer, RepairStats::default());
        }
        repairer.reset(cost.grid().len());
        // Goals that left lose their support; goals that arrived offer 0. Both are candidates.
        for &i in self.goal_index.iter().chain(&new_index) {
            if repairer.mark(i as usize, CANDIDATE) {
                repairer.candidates.push(i);
            }
        }
        self.goals = goals.to_vec();
        self.goal_index = new_index;
        self.update(cost, repairer, 0)
    }

    fn same_size(&self, cost: &CostField) -> Result<(), LiveError> {
        let (g, f) = (cost.grid(), self.integration.grid());
        SizeMismatch::check(
            "cost field",
            SizeMismatch::of(g),
            "the field",
            SizeMismatch::of(f),
        )?;
        Ok(())
    }

    #[inline]
    fn is_goal(&self, i: usize) -> bool {
        self.goal_index.binary_search(&(i as u32)).is_ok()
    }

    /// Both phases, then the arrows. `repairer.candidates` holds the cells whose steps or goal
    /// status changed.
    fn update(
        &mut self,
        cost: &CostField,
        rep: &mut FieldRepairer,
        edited: usize,
    ) -> Result<RepairStats, LiveError> {
        let (w, h) = (cost.width() as usize, cost.height() as usize);
        let costs = cost.costs();
        let model = self.integration.model;
        let base = model.base_costs();
        let limit = UNREACHABLE - 1 - model.diagonal() * WALL as u32;
        let cells = w * h;
        let give_up = match rep.rebuild_divisor {
            0 => usize::MAX,
            d => (cells / d).max(64),
        };
        let mut stats = RepairStats::default();

        // Phase 1: invalidate, in increasing order of the old values.
        for k in 0..rep.candidates.len() {
            let i = rep.candidates[k];
            let v = self.integration.values[i as usize];
            if v != UNREACHABLE {
                rep.heap.push(key(v, i));
            }
        }
        while let Some(Reverse(top)) = rep.heap.pop() {
            let (d, v) = ((top >> 32) as u32, (top & 0xffff_ffff) as usize);
            if !rep.mark(v, CHECKED) {
                continue;
            }
            stats.checked += 1;
            if self.supported(costs, w, h, v, &base, &rep.flags) {
                continue;
            }
            rep.mark(v, INVALID);
            rep.invalid.push(v as u32);
            if rep.invalid.len() > give_up {
                rep.reset(cells);
                return self.fall_back(cost, rep, stats);
            }
            for u in around(w, h, v) {
                let lu = self.integration.values[u];
                if lu != UNREACHABLE && lu > d && rep.flags[u] & CHECKED == 0 {
                    rep.heap.push(key(lu, u as u32));
                }
            }
        }
        stats.invalidated = rep.invalid.len();

        // Phase 2: restart the invalidated cells and the cheaper ones, then spread decreases.
        let values = self.integration.values_mut();
        for &v in &rep.invalid {
            values[v as usize] = UNREACHABLE;
        }
        let seeds = rep.invalid.len();
        let mut overflow = None;
        for k in 0..seeds + rep.candidates.len() {
            let v = if k < seeds {
                rep.invalid[k]
            } else {
                rep.candidates[k - seeds]
            } as usize;
            if costs[v] == WALL {
                continue;
            }
            let t = costs[v] as u32;
            let mut best = if self.goal_index.binary_search(&(v as u32)).is_ok() {
                0
            } else {
                UNREACHABLE
            };
            let l = links(costs, w, h, v, &base);
            for &(c, b) in &l.cells[..l.len] {
                let lc = values[c as usize];
                if lc != UNREACHABLE {
                    best = best.min(lc + b * t);
                }
            }
            if best < values[v] {
                if best > limit {
                    overflow = Some(v);
                    break;
                }
                values[v] = best;
                rep.heap.push(key(best, v as u32));
            }
        }
        while overflow.is_none() {
            let Some(Reverse(top)) = rep.heap.pop() else {
                break;
            };
            let (d, v) = ((top >> 32) as u32, (top & 0xffff_ffff) as usize);
            if values[v] != d {
                continue;
            }
            if rep.mark(v, RELABELLED) {
                rep.relabelled.push(v as u32);
            }
            let l = links(costs, w, h, v, &base);
            for &(u, b) in &l.cells[..l.len] {
                let nd = d + b * costs[u as usize] as u32;
                if nd < values[u as usize] {
                    if nd > limit {
                        overflow = Some(u as usize);
                        break;
                    }
                    values[u as usize] = nd;
                    rep.heap.push(key(nd, u));
                }
            }
        }
        if let Some(v) = overflow {
            self.clear(cost);
            rep.reset(cells);
            let c = cost.grid().cell(v);
            return Err(IntegrationError::Overflow {
                x: c.x,
                y: c.y,
                limit: UNREACHABLE - 1,
            }
            .into());
        }
        stats.relabelled = rep.relabelled.len();

        // Arrows: around every cell whose value changed or that was edited.
        let edited_end = if edited > 0 { rep.candidates.len() } else { 0 };
        let (n_rel, n_inv) = (rep.relabelled.len(), rep.invalid.len());
        for k in 0..n_rel + n_inv + edited_end {
            let c = if k < n_rel {
                rep.relabelled[k]
            } else if k < n_rel + n_inv {
                rep.invalid[k - n_rel]
            } else {
                rep.candidates[k - n_rel - n_inv]
            };
            for j in around(w, h, c as usize) {
                if rep.mark(j, ARROW) {
                    rep.arrows.push(j as u32);
                }
            }
        }
        for &j in &rep.arrows {
            let j = j as usize;
            self.flow.cells_mut()[j] = flow_byte(costs, &self.integration.values, w, h, j, model);
        }
        stats.arrows = rep.arrows.len();
        rep.reset(cells);
        Ok(stats)
    }

    /// A cell keeps its value if it is a goal holding 0, or a valid neighbour reaches it by a
    /// legal step of exactly the difference.
    fn supported(
        &self,
        costs: &[u8],
        w: usize,
        h: usize,
        v: usize,
        base: &[u32; 8],
        flags: &[u8],
    ) -> bool {
        if costs[v] == WALL {
            return false;
        }
        let lv = self.integration.values[v];
        if lv == 0 && self.is_goal(v) {
            return true;
        }
        let t = costs[v] as u32;
        let l = links(costs, w, h, v, base);
        l.cells[..l.len].iter().any(|&(c, b)| {
            let lc = self.integration.values[c as usize];
            flags[c as usize] & INVALID == 0 && lc != UNREACHABLE && lc + b * t == lv
        })
    }

    fn fall_back(
        &mut self,
        cost: &CostField,
        rep: &mut FieldRepairer,
        mut stats: RepairStats,
    ) -> Result<RepairStats, LiveError> {
        self.rebuild(cost, rep)?;
        stats.rebuilt = true;
        stats.relabelled = cost.grid().len();
        stats.arrows = cost.grid().len();
        Ok(stats)
    }

    /// A full build for the goals that are walkable now.
    fn rebuild(&mut self, cost: &CostField, rep: &mut FieldRepairer) -> Result<(), LiveError> {
        let active: Vec<UVec2> = self
            .goals
            .iter()
            .copied()
            .filter(|&g| cost.is_walkable(g))
            .collect();
        if active.is_empty() {
            self.clear(cost);
            return Ok(());
        }
        let model = self.integration.model;
        if let Err(e) = rep
            .builder
            .build_into(cost, &active, model, &mut self.integration)
        {
            self.clear(cost);
            return Err(e.into());
        }
        rep.builder
            .flow_into(&mut self.flow)
            .expect("a builder that just built a field of this size derives its flow");
        Ok(())
    }

    /// Every cell unreachable: the field of a map whose goals are all walled in.
    fn clear(&mut self, cost: &CostField) {
        self.integration.values_mut().fill(UNREACHABLE);
        for (f, &c) in self.flow.cells_mut().iter_mut().zip(cost.costs()) {
            *f = if c == WALL {
                FLOW_WALL
            } else {
                FLOW_UNREACHABLE
            };
        }
    }
}

/// Sorted, de-duplicated cell indices of the goals; errors for no goal, a goal off the map or on
/// a wall.
fn goal_indices(cost: &CostField, goals: &[UVec2]) -> Result<Vec<u32>, IntegrationError> {
    if goals.is_empty() {
        return Err(IntegrationError::NoGoals);
    }
    let mut out = Vec::with_capacity(goals.len());
    for &g in goals {
        let i = cost
            .grid()
            .index(g)
            .map_err(IntegrationError::GoalOutside)?;
        if !cost.is_walkable(g) {
            return Err(IntegrationError::GoalOnWall { x: g.x, y: g.y });
        }
        out.push(i as u32);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// A size class of a [`FieldCache`]: 0 is the map as it is; others are added with
/// [`FieldCache::add_size_class`] and use the map with walls inflated by their radius.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SizeClass(pub u8);

/// Which field: the goal cell (goals are rounded to cells) and the size class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldKey {
    /// The goal cell.
    pub goal: UVec2,
    /// The size class.
    pub class: SizeClass,
}

/// Keys order by size class, then goal row, then goal column (as cells are stored), so that
/// callers can keep them in sorted sets and visit them in a fixed order.
impl Ord for FieldKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.class, self.goal.y, self.goal.x).cmp(&(other.class, other.goal.y, other.goal.x))
    }
}

impl PartialOrd for FieldKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What [`FieldCache::apply_edits`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheEditReport {
    /// Cells of the map whose cost changed.
    pub changed_cells: usize,
    /// Cached fields repaired in place.
    pub repaired: usize,
    /// Of those, repairs that fell back to a rebuild.
    pub rebuilt: usize,
}

#[derive(Debug, Clone)]
struct CacheEntry {
    key: FieldKey,
    field: LiveField,
    last_used: u64,
}

#[derive(Debug, Clone)]
struct ClassMap {
    radius: f32,
    cost: CostField,
}

/// Fields shared by every group heading to the same goal cell, per size class, under a memory
/// budget with least-recently-used eviction. The cache owns the map: edits go through
/// [`apply_edits`](Self::apply_edits), which repairs every cached field (and the inflated maps of
/// the size classes) so that a cached field always equals a fresh build.
///
/// Memory: the map (1 byte per cell), one inflated map per extra size class (1 byte per cell
/// each), each cached field 5 bytes per cell (the flow field units read, and the integration field
/// kept so that edits repair rather than rebuild), and the repairer's scratch (about 6 bytes per
/// cell). The budget counts the cached fields.
///
/// ```
/// use glam::UVec2;
/// use horde::{CostEdit, CostModel, FieldCache, SizeClass, WALL};
/// let map = horde::maps::demo_map();
/// let mut cache = FieldCache::new(map, CostModel::TenFourteen, 1 << 20);
/// let flag = UVec2::new(64, 64);
/// let key = cache.request(flag, SizeClass(0)).unwrap(); // built
/// let again = cache.request(flag, SizeClass(0)).unwrap(); // shared, not rebuilt
/// assert_eq!(key, again);
/// assert_eq!(cache.stats().builds, 1);
/// // A building goes up: the cached field is repaired, not dropped.
/// let report = cache.apply_edits(&[CostEdit::Rect { min: UVec2::new(70, 70), max: UVec2::new(73, 73), cost: WALL }]).unwrap();
/// assert_eq!(report.repaired, 1);
/// assert!(cache.flow(key).is_some());
/// ```
#[derive(Debug, Clone)]
pub struct FieldCache {
    model: CostModel,
    map: CostField,
    classes: Vec<ClassMap>,
    entries: Vec<CacheEntry>,
    budget_bytes: usize,
    clock: u64,
    stats: CacheStats,
    repairer: FieldRepairer,
    /// The field [`FieldCache::request_within`] is building in the repairer's builder, if any.
    pending: Option<FieldKey>,
    /// Work the pending build had done when its last slice ended.
    pending_settled: usize,
}

/// What [`FieldCache::request_within`] answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRequest {
    /// The field is cached: read it with [`FieldCache::flow`].
    Ready(FieldKey),
    /// The build has begun but the budget ran out; ask again (next frame) to go on.
    Building {
        /// Work done so far, as [`BuildProgress::Running`] counts it.
        settled: usize,
    },
}

/// Counters of a [`FieldCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Requests served from the cache.
    pub hits: u64,
    /// Fields built on request.
    pub builds: u64,
    /// Fields evicted to stay within the budget.
    pub evictions: u64,
}

impl FieldCache {
    /// A cache over `map` whose cached fields may use up to `budget_bytes` (the field just
    /// requested is always kept, even when it alone exceeds the budget).
    pub fn new(map: CostField, model: CostModel, budget_bytes: usize) -> FieldCache {
        FieldCache {
            model,
            map,
            classes: Vec::new(),
            entries: Vec::new(),
            budget_bytes,
            clock: 0,
            stats: CacheStats::default(),
            repairer: FieldRepairer::new(),
            pending: None,
            pending_settled: 0,
        }
    }

    /// Add a size class for agents of radius `radius` cells (see [`CostField::inflated`]).
    /// O(cells × radius²).
    pub fn add_size_class(&mut self, radius: f32) -> Result<SizeClass, LiveError> {
        let cost = self.map.inflated(radius)?;
        let id = self.classes.len() + 1;
        if id > u8::MAX as usize {
            return Err(LiveError::UnknownClass(u8::MAX));
        }
        self.classes.push(ClassMap { radius, cost });
        Ok(SizeClass(id as u8))
    }

    /// The map.
    pub fn map(&self) -> &CostField {
        &self.map
    }

    /// The cost field a size class's fields are built on.
    pub fn class_map(&self, class: SizeClass) -> Result<&CostField, LiveError> {
        class_cost(&self.map, &self.classes, class)
    }

    /// The cost model of every field.
    pub fn model(&self) -> CostModel {
        self.model
    }

    /// Counters.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Fields cached now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No field is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes used by the cached fields.
    pub fn memory_bytes(&self) -> usize {
        self.entries.iter().map(|e| e.field.memory_bytes()).sum()
    }

    /// Make sure the field for `goal` and `class` is cached (building it on a miss, then evicting
    /// the least recently used others while over budget) and mark it used. O(1) on a hit (plus
    /// the number of cached fields), O(cells) on a miss.
    pub fn request(&mut self, goal: UVec2, class: SizeClass) -> Result<FieldKey, LiveError> {
        let key = FieldKey { goal, class };
        if self.use_cached(key) {
            return Ok(key);
        }
        let cost = class_cost(&self.map, &self.classes, class)?;
        // The repairer's builder is about to be reused: a sliced build in it starts over later.
        self.pending = None;
        let field = LiveField::build(cost, &[goal], self.model, &mut self.repairer)?;
        self.insert_built(key, field);
        Ok(key)
    }

    /// Like [`request`](Self::request), but a miss is built in slices: at most about `budget`
    /// cells of work are done now (the amount done is taken off `budget`), and the build goes on
    /// where it stopped at the next call for the same key. Meant for a frame loop that spreads
    /// builds over frames, with one budget shared by all the goals it asks for: the answer and
    /// the work done depend only on the inputs, never on the clock, so lockstep games stay in
    /// step. One build is in progress at a time: asking for another key, a synchronous
    /// [`request`](Self::request) or [`apply_edits`](Self::apply_edits) starts it over.
    /// O(1) on a hit; O(budget) per call on a miss, O(cells) in all.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostModel, FieldCache, FieldRequest, SizeClass};
    /// let mut cache = FieldCache::new(horde::maps::demo_map(), CostModel::TenFourteen, 1 << 20);
    /// let goal = UVec2::new(64, 64);
    /// let mut frames = 0;
    /// let key = loop {
    ///     frames += 1;
    ///     let mut budget = 2000; // cells of work per frame
    ///     match cache.request_within(goal, SizeClass(0), &mut budget).unwrap() {
    ///         FieldRequest::Ready(key) => break key,
    ///         FieldRequest::Building { .. } => assert_eq!(budget, 0),
    ///     }
    /// };
    /// assert!(frames > 1);
    /// // The same field as a build in one go.
    /// let mut whole = FieldCache::new(horde::maps::demo_map(), CostModel::TenFourteen, 1 << 20);
    /// let k = whole.request(goal, SizeClass(0)).unwrap();
    /// assert_eq!(cache.flow(key), whole.flow(k));
    /// ```
    pub fn request_within(
        &mut self,
        goal: UVec2,
        class: SizeClass,
        budget: &mut usize,
    ) -> Result<FieldRequest, LiveError> {
        let key = FieldKey { goal, class };
        if self.use_cached(key) {
            return Ok(FieldRequest::Ready(key));
        }
        let cost = class_cost(&self.map, &self.classes, class)?;
        let builder = &mut self.repairer.builder;
        if self.pending != Some(key) {
            self.pending = None;
            builder.start(cost, &[goal], self.model)?;
            self.pending = Some(key);
            self.pending_settled = 0;
        }
        let progress = match builder.advance(*budget) {
            Ok(p) => p,
            Err(e) => {
                self.pending = None;
                return Err(e.into());
            }
        };
        let settled = match progress {
            BuildProgress::Running { settled } => {
                *budget = 0;
                self.pending_settled = settled;
                return Ok(FieldRequest::Building { settled });
            }
            BuildProgress::Done(stats) => stats.settled,
        };
        *budget = budget.saturating_sub(settled.saturating_sub(self.pending_settled));
        self.pending = None;
        let grid = *cost.grid();
        let mut field = LiveField {
            integration: IntegrationField::new(grid, self.model),
            flow: FlowField::new(grid),
            goals: vec![goal],
            goal_index: goal_indices(cost, &[goal])?,
        };
        builder.finish_into(&mut field.integration)?;
        builder
            .flow_into(&mut field.flow)
            .expect("a builder that just built a field of this size derives its flow");
        self.insert_built(key, field);
        Ok(FieldRequest::Ready(key))
    }

    /// A request's clock tick; on a hit, mark the cached field used and count the hit.
    fn use_cached(&mut self, key: FieldKey) -> bool {
        self.clock += 1;
        match self.entries.iter_mut().find(|e| e.key == key) {
            Some(e) => {
                e.last_used = self.clock;
                self.stats.hits += 1;
                true
            }
            None => false,
        }
    }

    /// Keep a field just built under `key`, then evict the least recently used others while
    /// over budget.
    fn insert_built(&mut self, key: FieldKey, field: LiveField) {
        self.stats.builds += 1;
        self.entries.push(CacheEntry {
            key,
            field,
            last_used: self.clock,
        });
        self.stats.evictions += evict_least_recent(
            &mut self.entries,
            self.budget_bytes,
            |e| e.key == key,
            |e| e.last_used,
            |e| e.field.memory_bytes(),
        );
    }

    /// Like [`request`](Self::request) for a goal given as a world position, rounded to its
    /// cell.
    pub fn request_at(&mut self, goal: Vec2, class: SizeClass) -> Result<FieldKey, LiveError> {
        let cell = self
            .map
            .grid()
            .world_to_cell(goal)
            .ok_or(LiveError::GoalOutsideWorld {
                x: goal.x,
                y: goal.y,
            })?;
        self.request(cell, class)
    }

    /// The cached flow field for `key`, if it is cached.
    pub fn flow(&self, key: FieldKey) -> Option<&FlowField> {
        self.field(key).map(LiveField::flow)
    }

    /// The cached live field for `key`, if it is cached.
    pub fn field(&self, key: FieldKey) -> Option<&LiveField> {
        self.entries.iter().find(|e| e.key == key).map(|e| &e.field)
    }

    /// Drop one field.
    pub fn evict(&mut self, key: FieldKey) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.key != key);
        before != self.entries.len()
    }

    /// Edit the map, update the inflated map of every size class, and repair every cached field
    /// in place. All edits are checked before any is applied. O(edited area × classes +
    /// repairs).
    pub fn apply_edits(&mut self, edits: &[CostEdit]) -> Result<CacheEditReport, LiveError> {
        let changed = self.map.apply_edits(edits)?;
        let mut report = CacheEditReport {
            changed_cells: changed.len(),
            ..CacheEditReport::default()
        };
        if changed.is_empty() {
            return Ok(report);
        }
        // A sliced build read the old costs; it starts over at its next request.
        self.pending = None;
        let mut class_changes = vec![changed.clone()];
        for class in &mut self.classes {
            class_changes.push(self.map.reinflate(class.radius, &changed, &mut class.cost));
        }
        for e in &mut self.entries {
            let k = e.key.class.0 as usize;
            let (cost, cells) = match k {
                0 => (&self.map, &class_changes[0]),
                _ => (&self.classes[k - 1].cost, &class_changes[k]),
            };
            if cells.is_empty() {
                continue;
            }
            let stats = e.field.repair(cost, cells, &mut self.repairer)?;
            report.repaired += 1;
            report.rebuilt += stats.rebuilt as usize;
        }
        Ok(report)
    }
}

/// The grid of a field; kept here so the cache's doc links resolve.
impl LiveField {
    /// The grid.
    pub fn grid(&self) -> &Grid {
        self.integration.grid()
    }
}

/// The cost field of a size class: the map itself for class 0, else its inflated copy.
fn class_cost<'a>(
    map: &'a CostField,
    classes: &'a [ClassMap],
    class: SizeClass,
) -> Result<&'a CostField, LiveError> {
    match class.0 {
        0 => Ok(map),
        k => classes
            .get(k as usize - 1)
            .map(|c| &c.cost)
            .ok_or(LiveError::UnknownClass(k)),
    }
}

/// Evict the least recently used entries, never one that `kept` marks, while their bytes add
/// up to more than `budget` and more than one is left; returns how many went. The caches of
/// fields and of tiles share it. O(entries) per eviction.
pub(crate) fn evict_least_recent<E>(
    entries: &mut Vec<E>,
    budget: usize,
    kept: impl Fn(&E) -> bool,
    last_used: impl Fn(&E) -> u64,
    bytes: impl Fn(&E) -> usize,
) -> u64 {
    let mut evicted = 0;
    while entries.len() > 1 && entries.iter().map(&bytes).sum::<usize>() > budget {
        let Some(oldest) = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !kept(e))
            .min_by_key(|(_, e)| last_used(e))
            .map(|(i, _)| i)
        else {
            break;
        };
        entries.swap_remove(oldest);
        evicted += 1;
    }
    evicted
}
