//! The second layer: the cost from every cell to the nearest goal, filled by one Dijkstra wave
//! that starts at the goals.
//!
//! Two exact algorithms fill it, and give identical fields. On most maps, **row sweeps**: passes
//! down and up the rows, each row taking the best of the row before it (vectorised) and then
//! scanning along itself, repeated only where something changed (see the `sweep` submodule):
//! cheaper than the wave on open maps (`docs/benchmarks.md` has the figures). Maps whose
//! shortest paths wind back and forth (mazes, rooms joined by one-cell doors) go to the **wave**
//! once the sweeps' work passes a budget, and so do maps mostly of rock (a dungeon's rooms and
//! corridors), where the sweeps visit far more cells than they reach.
//!
//! A builder that builds field after field over one unchanged map also tries the sweeps along
//! **columns** (the map turned a quarter) and keeps to whichever way did less work, counting the
//! turn back: the passes a map needs depend on how often its shortest paths turn back against
//! them (see the `columns` submodule).
//!
//! The wave touches only what it reaches: it records which blocks of 16 cells it gave a value,
//! and the next wave resets, copies out and derives arrows in those blocks alone when they are
//! at most two thirds of the map.
//!
//! The wave is a bucket queue (Dial's algorithm with buckets as wide as the largest power of
//! two not above the cheapest step). Every entry of one bucket is final when the bucket is
//! reached, because no step from it can land in the same bucket, so a bucket is drained in any
//! order and each cell is expanded exactly once. The work is O(cells + largest value / bucket
//! width), with no heap and no comparisons between queue entries.
//!
//! In a one-shot build the wave also walks along corridors: a cell with at most two legal steps
//! has nothing to offer but the next cell along, so the wave gives corridor cells their values
//! in one walk instead of queueing each (a maze's cells are nine in ten corridor cells). Where
//! a wave finds few corridors, the next one-shot waves of that size skip the walks.
//!
//! In a one-shot build over a map built before and unchanged since, the wave also crosses
//! **rooms**: open rectangles of plain ground with few ways in (a dungeon's rooms, rooms behind
//! doors). It settles only a room's entries, each offering the others at the octile price, and
//! fills the room's other cells afterwards as the least of (entry's value + octile distance),
//! a vector loop (see the `rooms` submodule). Such builds skip the sweeps. They cross the map's
//! **chains** the same way: runs of corridor cells on plain ground, whose inner cells take the
//! lesser of the two ends' values plus the straight steps from that end. The wave settles only
//! the ends, and the inner cells never enter its buffer or footprint: the field's values and
//! arrows there are written run by run at the end (see the `chains` submodule). What is left to
//! settle one by one (the rooms' entries, the chains' ends, the cells in neither) the wave
//! reaches through a compact graph of them, whose few thousand values stay in cache; a seed
//! inside a room offers the room's entries the octile price and joins the room's fill (see the
//! `graph` submodule).
//!
//! The wave reads a cell's legal steps (the corner rule applied) from one byte per cell instead
//! of the eight cells around it. The bytes are worked out when a wave first needs them and kept
//! while the map stays the same: a builder that builds field after field over one map (one per
//! goal) finds its rows unchanged as it copies them in, and works out again only the rows around
//! those that changed.
//!
//! All scratch memory lives in an [`IntegrationBuilder`] that is reused from build to build: after
//! the first build of a map size, building another field allocates nothing.

use std::cell::Cell;

use glam::UVec2;
use thiserror::Error;

use crate::cost::{CostField, CostModel, PLAIN, WALL, max_walkable};
use crate::grid::{Grid, GridError, SizeMismatch};

mod chains;
pub(crate) mod columns;
mod graph;
mod ranked;
pub(crate) mod rooms;
pub(crate) mod sweep;
mod trees;

/// Integration value of a wall or of a walkable cell from which no goal can be reached.
pub const UNREACHABLE: u32 = u32::MAX;

/// Why a field could not be built. Nothing is written to the output on error.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum IntegrationError {
    /// The goal list is empty.
    #[error("no goal given: a field needs at least one goal cell")]
    NoGoals,
    /// A goal outside the map.
    #[error("goal: {0}")]
    GoalOutside(GridError),
    /// A goal on a wall.
    #[error("goal ({x}, {y}) is on a wall")]
    GoalOnWall { x: u32, y: u32 },
    /// Values would exceed the 32-bit range (a huge map of very costly terrain).
    #[error(
        "cost-to-goal exceeds the 32-bit range ({limit} raw units) at cell ({x}, {y}): \
         lower the terrain costs or split the map"
    )]
    Overflow { x: u32, y: u32, limit: u32 },
    /// A flee factor that is not a finite number above 0.
    #[error("flee factor {0} is not a finite number above 0")]
    BadFactor(f32),
    /// [`IntegrationBuilder::finish_into`] or [`IntegrationBuilder::advance`] without a build
    /// under way, or `finish_into` before the wave is done.
    #[error("no finished build: call start, then advance until it reports Done")]
    NotFinished,
    /// The output field was made for a grid of another size.
    #[error(transparent)]
    SizeMismatch(#[from] SizeMismatch),
}

/// Cost-to-goal of every cell, in raw units of its [`CostModel`].
///
/// Memory: 4 bytes per cell (64 KiB for 128 × 128), one flat `Vec<u32>` indexed `y * width + x`;
/// after a build that reached few cells, also 1 bit per 16 cells (its footprint, so that writing
/// the field again touches only what changed) and 4 bytes per corridor the build crossed in one
/// step.
/// Walls and cells that cannot reach a goal hold [`UNREACHABLE`]; goal cells hold 0.
/// Raw values fit 32 bits for any path of raw cost below 2³² − 1 (10-14 model: 306 million
/// straight steps on plain ground; octile: about 309,000 cost units); a build that would go
/// beyond reports [`IntegrationError::Overflow`] instead of wrapping.
#[derive(Debug, Clone)]
pub struct IntegrationField {
    pub(crate) grid: Grid,
    pub(crate) model: CostModel,
    pub(crate) values: Vec<u32>,
    /// When `footprint_valid`, the blocks of padded cells (see [`IntegrationBuilder::touched`])
    /// outside which every value is UNREACHABLE: the footprint of the build that wrote the
    /// field, so that the next build rewrites only the blocks it or this footprint holds.
    footprint: Vec<u64>,
    footprint_valid: bool,
    /// The [`CostField`] version every wall of which holds UNREACHABLE here (0: unknown), so
    /// that a build over that map may leave walls alone.
    walls_of: u64,
    /// The chains (of layout `deep.layout`, see `chains`) whose inner cells the build that
    /// wrote the field gave values, outside its footprint: 4 bytes per chain.
    deep: DeepCells,
}

/// Chains whose inner cells a field holds values or arrows for, outside its footprint, and the
/// layout of chains they belong to (0: none).
#[derive(Debug, Default, Clone)]
pub(crate) struct DeepCells {
    pub(crate) layout: u64,
    pub(crate) chains: Vec<u32>,
}

impl DeepCells {
    /// Whether a builder whose chains are of `layout` (0: none known) knows these cells.
    pub(crate) fn known_to(&self, layout: u64) -> bool {
        self.chains.is_empty() || (layout != 0 && self.layout == layout)
    }
}

impl PartialEq for IntegrationField {
    fn eq(&self, other: &IntegrationField) -> bool {
        self.grid == other.grid && self.model == other.model && self.values == other.values
    }
}

impl Eq for IntegrationField {}

impl IntegrationField {
    /// A field of the grid's size with every cell unreachable (a target for
    /// [`IntegrationBuilder::build_into`]).
    pub fn new(grid: Grid, model: CostModel) -> IntegrationField {
        IntegrationField {
            grid,
            model,
            values: vec![UNREACHABLE; grid.len()],
            footprint: Vec::new(),
            footprint_valid: false,
            walls_of: 0,
            deep: DeepCells::default(),
        }
    }
    /// The values to change in place: whatever changes them makes the footprint unknown.
    pub(crate) fn values_mut(&mut self) -> &mut Vec<u32> {
        self.footprint_valid = false;
        self.walls_of = 0;
        self.deep.chains.clear();
        &mut self.values
    }
    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }
    /// The cost model the values are in.
    pub fn model(&self) -> CostModel {
        self.model
    }
    /// Raw values indexed `y * width + x`.
    pub fn values(&self) -> &[u32] {
        &self.values
    }
    /// Raw cost-to-goal of a cell; `None` outside the map, on walls and on unreachable cells.
    pub fn get(&self, cell: UVec2) -> Option<u32> {
        let i = self.grid.index(cell).ok()?;
        let v = self.values[i];
        (v != UNREACHABLE).then_some(v)
    }
    /// Seeds for a flee field, the roguelike "Dijkstra map" recipe: every reachable cell starts
    /// from `C − factor × value` (C makes the largest 0), so a field built from these seeds with
    /// [`IntegrationBuilder::start_seeded`] leads away from this field's goals, and, with a
    /// factor above 1 (1.2 is usual), prefers a long way to open ground over a dead end nearby.
    /// O(cells).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, CostModel, Dir8, FlowField, Grid, IntegrationBuilder};
    /// let cost = CostField::new(Grid::new(9, 1).unwrap());
    /// let mut b = IntegrationBuilder::new();
    /// let threat = b.build(&cost, &[UVec2::new(2, 0)], CostModel::TenFourteen).unwrap();
    /// let seeds = threat.flee_seeds(1.2).unwrap();
    /// let flee = b.build_seeded(&cost, &seeds, CostModel::TenFourteen).unwrap();
    /// let flow = FlowField::from_integration(&cost, &flee).unwrap();
    /// assert_eq!(flow.dir(UVec2::new(3, 0)), Some(Dir8::E)); // away from the threat
    /// assert!(flow.is_goal(UVec2::new(8, 0))); // the farthest cell is where fleeing ends
    /// // A factor must be a finite number above 0.
    /// for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
    ///     assert!(threat.flee_seeds(bad).is_err(), "{bad}");
    /// }
    /// ```
    pub fn flee_seeds(&self, factor: f32) -> Result<Vec<(UVec2, u32)>, IntegrationError> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(IntegrationError::BadFactor(factor));
        }
        let max = self
            .values
            .iter()
            .filter(|&&v| v != UNREACHABLE)
            .max()
            .copied()
            .unwrap_or(0);
        let top = (max as f64 * factor as f64).round();
        Ok(self
            .values
            .iter()
            .enumerate()
            .filter(|&(_, &v)| v != UNREACHABLE)
            .map(|(i, &v)| {
                let seed = (top - (v as f64 * factor as f64).round()).max(0.0);
                (self.grid.cell(i), seed.min(u32::MAX as f64) as u32)
            })
            .collect())
    }

    /// Cost-to-goal in cost units (10-14: the integer; octile: raw / 13860).
    pub fn cost(&self, cell: UVec2) -> Option<f64> {
        self.get(cell).map(|v| self.model.to_cost(v))
    }
}

fn same_size(out: &IntegrationField, grid: &Grid) -> Result<(), IntegrationError> {
    SizeMismatch::check(
        "output field",
        SizeMismatch::of(&out.grid),
        "the cost field",
        SizeMismatch::of(grid),
    )?;
    Ok(())
}

/// What one wave did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaveStats {
    /// Cells settled: each reachable walkable cell exactly once (expanded from the queue, or
    /// given its value by a walk along a corridor in a one-shot build).
    pub settled: usize,
}

/// Reusable scratch memory for building integration (and then flow) fields.
///
/// Memory: 6 bytes per cell of the padded grid `(width + 2) × (height + 2)`: a copy of the costs
/// with a wall border (so no loop needs bounds tests), each cell's legal steps (a byte, for the
/// wave) and the working distances (4); 5 more once a map is swept along columns (its costs
/// transposed and a second buffer of distances, see `columns`); plus the sweeps' bookkeeping (a bit
/// per 8 cells and pass direction, and per layout for the chunks with a walkable cell: 1/16 byte
/// per cell), the wave's footprint (a bit per 16 cells: 1/128 byte per cell, kept three times: the
/// copies describe the field written last and the spans listed last), a row of candidates, two rows
/// per thread for parallel sweeps, the wave's bucket queue (at least 64 buckets of 32 bytes, 4,096
/// over a maze without loops, each keeping the storage of the most entries it held at once, 4 bytes
/// per entry), the cells on no loop once worked out (a bit per padded cell, see `trees`; working
/// them out takes 1 byte per padded cell and 4 per cell on no loop for a moment; the walks' forks
/// keep 12 bytes per branch waiting), the footprint's spans of the
/// field written last (12 bytes per span), and the map's rooms and corridors once worked out
/// (rooms: a bit and a half per padded cell, 24 bytes per room entry, 128 KiB of crossing prices,
/// see `rooms`; corridors: a bit and a half per padded cell, 9 bytes per corridor cell, 8 more per
/// inner one, 20 per corridor end, see `chains`; the graph the wave crosses them by: a bit and a
/// half per padded cell, 12 bytes per node and 24 per edge, see `graph`).
#[derive(Debug, Default, Clone)]
pub struct IntegrationBuilder {
    pub(crate) padded_width: usize,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) costs: Vec<u8>,
    pub(crate) dist: Vec<u32>,
    pub(crate) model: CostModel,
    buckets: Vec<Bucket>,
    built: bool,
    wave: WaveState,
    grid: Option<Grid>,
    sweep: sweep::SweepScratch,
    no_sweep: bool,
    /// The wave's footprint: a bit per block of `TOUCHED_BLOCK` padded cells that holds a cell
    /// the wave gave a value. While `touched_valid`, `dist` is UNREACHABLE outside the marked
    /// blocks (INF after sweeps, see `inf_outside`), so the next wave resets, copies out and
    /// derives arrows only there: on a map
    /// mostly rock or out of reach (a dungeon, a walled city) those whole-map passes would
    /// cost more than the wave.
    touched: Vec<u64>,
    touched_valid: bool,
    /// After sweeps whose footprint was small, `dist` holds INF (not UNREACHABLE) beyond the
    /// blocks around the footprint (see `sweep::finish_around`): the next sweeps reset those
    /// blocks only, and the next wave the whole map.
    inf_outside: bool,
    /// The highest walkable terrain of the costs `prepare` copied last.
    max_terrain: u8,
    /// One-shot waves left that go without walks along corridors, and the padded map size that
    /// earned it: a wave whose walks gave values to under a tenth of the cells it reached (rooms
    /// and caves, where the test for corridors costs more than the walks save).
    walk_skip: u32,
    walk_skip_size: (usize, usize),
    /// The map (cost version) whose last wave that recorded its footprint reached most of it,
    /// and the waves over it left to go without recording theirs (see `footprint_unwanted`).
    unmarked: (u64, u32),
    /// The legal steps of every padded cell as a bit per direction (see `moves_of_row`; the
    /// corner rule applied; 0 on walls), worked out from `costs` for the wave, which then reads
    /// one byte per cell instead of the eight around it.
    moves: Vec<u8>,
    /// Padded rows `lo..hi` whose costs changed since `moves` was worked out.
    moves_stale: (usize, usize),
    /// The cells on no loop of legal steps (see `trees`), where walks fork instead of queueing
    /// a junction: worked out by the second one-shot wave over a map.
    trees: trees::Trees,
    /// Rows whose costs the last `prepare` found changed.
    rows_changed: usize,
    /// The [`CostField`] version `costs` holds (0: unknown, as after a window of a map).
    cost_version: u64,
    /// The map's rooms (open rectangles with few ways in, see `rooms`), which one-shot waves
    /// cross in one step and fill afterwards.
    rooms: rooms::Rooms,
    /// Which rooms the last fill gave values (see `Rooms::fill`).
    rooms_filled: Vec<bool>,
    /// The chain layout of the crossing graph the last build went over, when the distances
    /// hold that build's values and nothing else (0: not so; see `keep_wave_distances`).
    graph_wrote: u64,
    /// The distances may hold another build's values outside the footprint: the next reset
    /// fills them all.
    dist_stale: bool,
    /// Where the room fill gathers a room's reached entries.
    room_sources: Vec<(u32, u32, u32)>,
    /// The footprint's spans (see `list_spans`) of the last field written, when
    /// `spans_listed`.
    spans: Vec<(u32, u32, u32)>,
    spans_listed: bool,
    /// The padded width, the [`CostField`] version (0: unknown, spans not trimmed) and the
    /// footprint `spans` were listed from.
    spans_of: (usize, u64, Vec<u64>),
    /// The cells `spans` cover.
    spans_cells: usize,
    /// The spans were listed for the last build finished and no build has started since: they
    /// hold every cell it gave a value (they leave out walls only), for the next to reset.
    spans_hold_values: bool,
    /// The build being started will run in one call (`build_into`), and, once started, whether
    /// its wave crosses rooms.
    one_shot: bool,
    rooms_ready: bool,
    /// The rooms, chains and the cells between them as a compact graph (see `graph`), and
    /// whether this build's wave runs over it.
    graph: graph::Graph,
    use_graph: bool,
    /// For sweeps along columns (see `columns`): the padded costs transposed, of cost version
    /// `turned_costs_of`, the distances' other buffer, and whether the sweeps under way run
    /// along columns (the two buffers then swapped with `costs` and `dist`).
    turned_costs: Vec<u8>,
    turned_costs_of: u64,
    other_dist: Vec<u32>,
    columns: bool,
    /// `other_dist` holds INF in every cell (the end pass of sweeps along columns leaves its
    /// source so), and, once swapped in for the next sweeps along columns, `dist` does: they
    /// need not fill it.
    other_dist_inf: bool,
    dist_inf: bool,
    /// Builds that swept along columns.
    #[cfg(test)]
    builds_along_columns: u32,
    /// The last build crossed the map's chains (see `chains`): their inner cells are written
    /// into the outputs from the chains, not from `dist`.
    chains_used: bool,
}

/// What an [`IntegrationBuilder`] has learned from its last builds of one size about which
/// way suits them (how many to send straight to the wave, hand-overs in a row, how many waves
/// go without walks along corridors). A caller that builds several regions of one size in
/// turn (the sectors' tiles) keeps one per region, so a maze-like sector does not send its
/// open neighbours to the wave, nor they it back to the sweeps. 12 bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BuildMemory {
    /// Builds left to send straight to the wave.
    pub(crate) skip: u32,
    handovers: u32,
    walk_skip: u32,
}

/// Padded cells per bit of [`IntegrationBuilder`]'s footprint.
pub(crate) const TOUCHED_BLOCK: usize = 16;

/// Where a wave stands, so that it can stop after any cell and go on later.
#[derive(Debug, Default, Clone)]
struct WaveState {
    /// A build is under way (started, not yet finished).
    active: bool,
    /// The wave has settled every reachable cell.
    done: bool,
    shift: u32,
    mask: usize,
    limit: u32,
    pending: usize,
    settled: usize,
    /// The bucket number being drained.
    k: u32,
    /// Entries of the bucket being drained (taken out of it), and how far the drain got.
    current: Vec<u32>,
    current_len: usize,
    cursor: usize,
    draining: bool,
    /// Every walkable cell costs 1.
    uniform: bool,
    /// The build runs as row sweeps (see `sweep`), not (yet) as the wave.
    sweeping: bool,
    /// The wave has run (is past its first call), and whether it walks corridors (see
    /// [`Queue::walk`]): only a wave run in one call does, so that time slices settle exactly
    /// their budget.
    ran: bool,
    walks: bool,
    /// The wave reads the legal steps from the builder's table (see `take_moves`).
    table: bool,
    /// Cells given their values by walks.
    walked: usize,
    /// This wave crosses rooms in one step and fills them when done (one-shot waves only).
    rooms: bool,
    /// The wave records its footprint (see `footprint_unwanted`).
    mark: bool,
    /// Seeds as (value, padded cell), sorted; each joins the wave when it reaches its bucket.
    seeds: Vec<(u32, u32)>,
    next_seed: usize,
    /// The branches a walk has yet to go down where it forked (see [`Queue::walk`]): (junction,
    /// its value, first cell of the branch). Kept from build to build.
    forks: Vec<(u32, u32, u32)>,
    /// Cells queued into the buckets by expansions and walks (not the seeds).
    #[cfg(test)]
    queued: usize,
    /// Walks fork at junctions on no loop (see `trees`).
    forking: bool,
}

/// How far a time-sliced build has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildProgress {
    /// More cells to settle; call [`IntegrationBuilder::advance`] again.
    Running {
        /// Work done so far: cells settled by the wave, or cells visited by the row sweeps (a
        /// winding map that the sweeps hand to the wave starts this count again).
        settled: usize,
    },
    /// Every reachable cell is settled; call [`IntegrationBuilder::finish_into`].
    Done(WaveStats),
}

impl IntegrationBuilder {
    /// An empty builder; its buffers grow on the first build.
    pub fn new() -> IntegrationBuilder {
        IntegrationBuilder::default()
    }

    /// Build a fresh field: cost-to-nearest-goal from every cell. O(cells).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, CostModel, Grid, IntegrationBuilder};
    /// let cost = CostField::new(Grid::new(5, 5).unwrap());
    /// let mut builder = IntegrationBuilder::new();
    /// let field = builder.build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen).unwrap();
    /// assert_eq!(field.get(UVec2::new(2, 1)), Some(24)); // one diagonal and one straight step
    /// assert_eq!(field.get(UVec2::new(4, 4)), Some(56));
    /// ```
    pub fn build(
        &mut self,
        cost: &CostField,
        goals: &[UVec2],
        model: CostModel,
    ) -> Result<IntegrationField, IntegrationError> {
        let mut out = IntegrationField::new(*cost.grid(), model);
        self.build_into(cost, goals, model, &mut out)?;
        Ok(out)
    }

    /// Build a fresh field from seeds with their own starting values (see
    /// [`start_seeded`](Self::start_seeded)). O(cells).
    pub fn build_seeded(
        &mut self,
        cost: &CostField,
        seeds: &[(UVec2, u32)],
        model: CostModel,
    ) -> Result<IntegrationField, IntegrationError> {
        let mut out = IntegrationField::new(*cost.grid(), model);
        self.one_shot = true;
        let started = self.start_seeded(cost, seeds, model);
        self.one_shot = false;
        started?;
        self.advance(usize::MAX)?;
        self.finish_into(&mut out)?;
        Ok(out)
    }

    /// Build into an existing field of the same size; allocates nothing once the builder has
    /// built a field of this size before. O(cells).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, CostModel, Grid, IntegrationBuilder, IntegrationField};
    /// let cost = CostField::new(Grid::new(64, 64).unwrap());
    /// let mut builder = IntegrationBuilder::new();
    /// let mut field = IntegrationField::new(*cost.grid(), CostModel::Octile);
    /// for x in 0..4 {
    ///     let stats = builder.build_into(&cost, &[UVec2::new(x, 0)], CostModel::Octile, &mut field).unwrap();
    ///     assert_eq!(stats.settled, 64 * 64);
    /// }
    /// ```
    pub fn build_into(
        &mut self,
        cost: &CostField,
        goals: &[UVec2],
        model: CostModel,
        out: &mut IntegrationField,
    ) -> Result<WaveStats, IntegrationError> {
        let grid = *cost.grid();
        same_size(out, &grid)?;
        self.one_shot = true;
        let started = self.start(cost, goals, model);
        self.one_shot = false;
        started?;
        self.advance(usize::MAX)?;
        self.finish_into(out)
    }

    /// What the builder has learned about builds over a `grid` of this size (see
    /// [`BuildMemory`]).
    pub(crate) fn memory(&self, grid: Grid) -> BuildMemory {
        let size = (grid.width() as usize + 2, grid.height() as usize);
        let (skip, handovers) = self.sweep.history(size);
        BuildMemory {
            skip,
            handovers,
            walk_skip: if self.walk_skip_size == size {
                self.walk_skip
            } else {
                0
            },
        }
    }

    /// Build the next grids of this size as if `memory` were what the builder had learned.
    pub(crate) fn set_memory(&mut self, grid: Grid, memory: BuildMemory) {
        let size = (grid.width() as usize + 2, grid.height() as usize);
        self.sweep
            .set_history(size, (memory.skip, memory.handovers));
        self.walk_skip = memory.walk_skip;
        self.walk_skip_size = size;
    }

    /// Turn the row sweeps off (`false`) or back on: with them off every build runs the
    /// Dijkstra wave. The fields are identical either way; this exists to compare the two.
    pub fn set_sweeps(&mut self, on: bool) {
        self.no_sweep = !on;
    }

    /// Begin a time-sliced build: check the goals and seed the wave, without settling any cell.
    /// Then call [`advance`](Self::advance) once per frame with a budget, and
    /// [`finish_into`](Self::finish_into) when it reports [`BuildProgress::Done`]. Fields built
    /// before stay untouched (and readable by units) until then, and the finished field is
    /// identical to a one-shot [`build_into`](Self::build_into). O(cells) for the set-up.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{BuildProgress, CostField, CostModel, Grid, IntegrationBuilder, IntegrationField};
    /// let cost = horde::maps::scattered_map(64, 64, 3).unwrap();
    /// let goal = UVec2::new(10, 10);
    /// let goal = if cost.is_walkable(goal) { goal } else { UVec2::new(11, 11) };
    /// # if !cost.is_walkable(goal) { return; }
    /// let mut builder = IntegrationBuilder::new();
    /// builder.start(&cost, &[goal], CostModel::TenFourteen).unwrap();
    /// let mut frames = 0;
    /// while let BuildProgress::Running { .. } = builder.advance(500).unwrap() {
    ///     frames += 1; // units keep reading the previous flow field meanwhile
    /// }
    /// let mut sliced = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
    /// builder.finish_into(&mut sliced).unwrap();
    /// let once = IntegrationBuilder::new().build(&cost, &[goal], CostModel::TenFourteen).unwrap();
    /// assert_eq!(sliced, once);
    /// assert!(frames > 1);
    /// ```
    pub fn start(
        &mut self,
        cost: &CostField,
        goals: &[UVec2],
        model: CostModel,
    ) -> Result<(), IntegrationError> {
        if goals.is_empty() {
            return Err(IntegrationError::NoGoals);
        }
        let seeds: Vec<(UVec2, u32)> = goals.iter().map(|&g| (g, 0)).collect();
        self.start_seeded(cost, &seeds, model)
    }

    /// Like [`start`](Self::start), but each seed cell starts from its own raw value instead of
    /// 0: the field then holds, for every cell, the least of (seed value + cost to reach that
    /// seed). Flee fields ([`IntegrationField::flee_seeds`]) and goals of unequal worth are built
    /// this way. Seeds with the lowest value for their field are its sinks (flow byte
    /// [`FLOW_GOAL`](crate::FLOW_GOAL)). O(cells + seeds log seeds) for the set-up.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, CostModel, Grid, IntegrationBuilder, IntegrationField};
    /// let cost = CostField::new(Grid::new(5, 1).unwrap());
    /// let mut b = IntegrationBuilder::new();
    /// // A goal worth 0 at x = 0 and one that costs 25 more at x = 4.
    /// b.start_seeded(&cost, &[(UVec2::new(0, 0), 0), (UVec2::new(4, 0), 25)], CostModel::TenFourteen).unwrap();
    /// b.advance(usize::MAX).unwrap();
    /// let mut f = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
    /// b.finish_into(&mut f).unwrap();
    /// assert_eq!(f.values(), &[0, 10, 20, 30, 25]);
    /// ```
    pub fn start_seeded(
        &mut self,
        cost: &CostField,
        seeds: &[(UVec2, u32)],
        model: CostModel,
    ) -> Result<(), IntegrationError> {
        self.start_seeded_window(
            *cost.grid(),
            cost.costs(),
            cost.width() as usize,
            cost.version(),
            seeds,
            model,
        )
    }

    /// [`start_seeded`](Self::start_seeded) over a window of a larger map, read in place: the
    /// window is `grid`'s size, its row `y` is `costs[y * stride..][..width]` (so `costs` begins
    /// at the window's top-left cell), and seeds are in the window's coordinates. The sectors'
    /// tiles build this way without copying each sector out first. `version` is the
    /// [`CostField`] version of the whole map when the window is all of it, else 0.
    pub(crate) fn start_seeded_window(
        &mut self,
        grid: Grid,
        costs: &[u8],
        stride: usize,
        version: u64,
        seeds: &[(UVec2, u32)],
        model: CostModel,
    ) -> Result<(), IntegrationError> {
        if seeds.is_empty() {
            return Err(IntegrationError::NoGoals);
        }
        let limit = UNREACHABLE - 1 - model.diagonal() * WALL as u32;
        for &(g, v) in seeds {
            grid.index(g).map_err(IntegrationError::GoalOutside)?;
            if costs[g.y as usize * stride + g.x as usize] == WALL {
                return Err(IntegrationError::GoalOnWall { x: g.x, y: g.y });
            }
            if v > limit {
                return Err(IntegrationError::Overflow {
                    x: g.x,
                    y: g.y,
                    limit,
                });
            }
        }
        self.built = false;
        self.chains_used = false;
        self.use_graph = false;
        self.rooms.chains.forget_reached();
        self.prepare(costs, stride, version, grid, model);
        self.grid = Some(grid);
        let pw = self.padded_width;
        let mut padded = std::mem::take(&mut self.wave.seeds);
        padded.clear();
        padded.extend(
            seeds
                .iter()
                .map(|&(g, v)| (v, ((g.y as usize + 1) * pw + g.x as usize + 1) as u32)),
        );
        padded.sort_unstable();
        let max_terrain = self.max_terrain;
        // A one-shot build over a map built before and unchanged since, whose rooms cover enough
        // of it, goes straight to the wave, which crosses them. The rooms are worked out (a pass
        // over the map) once the sweeps found the map winding, or when they are off.
        self.rooms_ready = self.one_shot
            && self.rows_changed == 0
            && padded.len() <= MAX_ROOM_SEEDS
            && (self.rooms.valid || self.no_sweep || self.sweep.winding())
            && {
                if !self.rooms.valid {
                    self.update_moves();
                    self.rooms
                        .work_out(&self.costs, &self.moves, self.padded_width, self.height);
                }
                let graph = self
                    .graph
                    .prepare(&self.rooms, &self.costs, &self.moves, pw);
                let ready = self.rooms.begin(&padded, pw, graph);
                self.use_graph = graph && !self.rooms.chains.any_left_out();
                ready
            };
        let graph_wrote = std::mem::take(&mut self.graph_wrote);
        if !self.no_sweep && !self.rooms_ready && self.sweep_begin(&padded, model) {
            // The sweeps write every cell.
            self.touched_valid = false;
            self.spans_hold_values = false;
            self.seed(padded, max_terrain);
            self.wave.sweeping = true;
        } else {
            // A wave over the crossing graph of the layout the last build's went over writes
            // every cell that build gave a value: the distances need no reset.
            let rewrites = self.rooms_ready
                && self.use_graph
                && graph_wrote != 0
                && graph_wrote == self.rooms.chains.layout;
            if !rewrites || !self.keep_wave_distances() {
                self.reset_wave_distances();
            }
            self.seed(padded, max_terrain);
        }
        Ok(())
    }

    /// Do about `max_cells` more cells of work on the build begun by [`start`](Self::start): the
    /// wave settles exactly that many cells; the row sweeps stop at the end of the row that
    /// reaches it. O(max_cells).
    pub fn advance(&mut self, max_cells: usize) -> Result<BuildProgress, IntegrationError> {
        if !self.wave.active {
            return Err(IntegrationError::NotFinished);
        }
        let mut budget = max_cells;
        if !self.wave.done && self.wave.sweeping {
            let before = self.sweep.cursor_work();
            match self.sweep_run(budget, self.model) {
                sweep::SweepOutcome::Done(reachable) => {
                    self.wave.done = true;
                    self.wave.settled = reachable;
                }
                sweep::SweepOutcome::Running => {
                    self.wave.settled = self.sweep.cursor_work() as usize;
                    return Ok(BuildProgress::Running {
                        settled: self.wave.settled,
                    });
                }
                sweep::SweepOutcome::HandOver => {
                    // The wave starts over from the seeds on its own conventions.
                    let spent = (self.sweep.cursor_work() - before) as usize;
                    budget = budget.saturating_sub(spent);
                    self.reset_wave_distances();
                    self.wave.sweeping = false;
                    self.wave.settled = 0;
                }
            }
        }
        if !self.wave.done && budget > 0 {
            if !self.wave.ran {
                self.wave.table = self.take_moves();
                // A wave in one call (a one-shot build, or a sweep handed over within one) walks
                // corridors, unless one lately found few; its budget is then usize::MAX less the
                // sweeps' work.
                self.wave.ran = true;
                let size = (self.padded_width, self.height);
                let skip = self.walk_skip > 0 && self.walk_skip_size == size;
                if skip {
                    self.walk_skip -= 1;
                }
                self.wave.walks = max_cells == usize::MAX && !skip;
                self.wave.rooms = max_cells == usize::MAX && self.take_rooms();
                if self.wave.walks && self.wave.table && !self.wave.rooms && self.rows_changed == 0
                {
                    // The same map as the last build: the next goal, many to come.
                    if !self.trees.valid {
                        self.trees.work_out(&self.moves, self.padded_width);
                    }
                    self.wave.forking = self.trees.mostly();
                    // Nothing is queued yet: the buckets may grow, for the walks' forks.
                    if self.wave.forking && FORK_BUCKETS > self.wave.mask + 1 {
                        if self.buckets.len() < FORK_BUCKETS {
                            self.buckets.resize_with(FORK_BUCKETS, Bucket::default);
                        }
                        self.wave.mask = FORK_BUCKETS - 1;
                    }
                }
                self.wave.mark = self.wave.rooms || !self.footprint_unwanted();
                if !self.wave.mark {
                    // Nothing says which cells the wave writes: a build started again before
                    // this one ends (a sliced build, an edit between two slices) must reset
                    // every cell, not only the last footprint's.
                    self.touched_valid = false;
                }
            }
            let graph = self.wave.rooms && self.use_graph;
            let run = if graph {
                self.run_graph()
            } else {
                self.run(budget)
            };
            let mut outcome = run.and_then(|done| {
                if done && self.wave.rooms {
                    self.fill_rooms()?;
                    if graph {
                        // Every node and every room were written (see `keep_wave_distances`).
                        self.graph_wrote = self.rooms.chains.layout;
                        self.dist_stale = false;
                    }
                }
                Ok(done)
            });
            if self.wave.rooms && outcome.is_err() {
                // Values past the 32-bit range: the wave goes again through every cell, so that
                // the error names the cell a wave without rooms would have named.
                outcome = self.restart_without_rooms().run(budget);
            }
            match outcome {
                Ok(done) => {
                    self.wave.done = done;
                    let walked = self.wave.walked;
                    // A wave over the crossing graph walks no corridors: no verdict on walks.
                    let walking = self.wave.walks && !(graph && self.wave.rooms);
                    if done && walking && walked * WALKED_SHARE < self.wave.settled {
                        self.walk_skip = sweep::RETRY_AFTER;
                        self.walk_skip_size = (self.padded_width, self.height);
                    }
                }
                Err(e) => {
                    self.wave.active = false;
                    return Err(e);
                }
            }
        }
        let settled = self.wave.settled;
        Ok(if self.wave.done {
            BuildProgress::Done(WaveStats { settled })
        } else {
            BuildProgress::Running { settled }
        })
    }

    /// Like [`advance`](Self::advance), with a time budget instead of a cell budget: settles
    /// cells in chunks of 4096 until the wave is done or `budget` has passed (it may overrun by
    /// one chunk). O(cells settled).
    ///
    /// ```
    /// use std::time::Duration;
    /// use glam::UVec2;
    /// use horde::{BuildProgress, CostField, CostModel, Grid, IntegrationBuilder};
    /// let cost = CostField::new(Grid::new(256, 256).unwrap());
    /// let mut builder = IntegrationBuilder::new();
    /// builder.start(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen).unwrap();
    /// // 2 ms per frame, until done: every cell settled, the same field as a one-shot build.
    /// let settled = loop {
    ///     match builder.advance_for(Duration::from_millis(2)).unwrap() {
    ///         BuildProgress::Running { .. } => continue,
    ///         BuildProgress::Done(stats) => break stats.settled,
    ///     }
    /// };
    /// assert_eq!(settled, 256 * 256);
    /// let mut sliced = horde::IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
    /// builder.finish_into(&mut sliced).unwrap();
    /// let whole = IntegrationBuilder::new().build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen).unwrap();
    /// assert_eq!(sliced, whole);
    /// ```
    pub fn advance_for(
        &mut self,
        budget: std::time::Duration,
    ) -> Result<BuildProgress, IntegrationError> {
        let started = std::time::Instant::now();
        loop {
            let progress = self.advance(4096)?;
            if matches!(progress, BuildProgress::Done(_)) || started.elapsed() >= budget {
                return Ok(progress);
            }
        }
    }

    /// Write the finished field into `out` (same size as the cost field). After this, the
    /// builder also serves [`flow_into`](Self::flow_into). O(cells).
    pub fn finish_into(
        &mut self,
        out: &mut IntegrationField,
    ) -> Result<WaveStats, IntegrationError> {
        let (Some(grid), true, true) = (self.grid, self.wave.active, self.wave.done) else {
            return Err(IntegrationError::NotFinished);
        };
        same_size(out, &grid)?;
        let (w, pw) = (self.width, self.padded_width);
        // Both the sweeps and the wave leave walls and unreachable cells UNREACHABLE.
        // The footprint's spans are listed once, for the copy here and for the arrows after.
        self.spans_listed = self.footprint_is_small();
        if !self.wave.sweeping && !self.wave.rooms && self.wave.mark && self.touched_valid {
            // A plain wave that recorded its footprint: if it reached most of the map (a maze),
            // the next waves over it need not record theirs.
            self.unmarked = if self.spans_listed || self.cost_version == 0 {
                (0, 0)
            } else {
                (self.cost_version, UNMARKED_WAVES)
            };
        }
        if self.spans_listed {
            // Builds for other goals over one map reach the same cells, the whole of a
            // connected dungeon: the spans of the last footprint listed are kept while it
            // and the map stay the same. Over a known map they leave out the walls at their
            // ends (a room's row in blocks of sixteen is twice the room).
            let version = self.cost_version;
            if self.spans_of.0 != pw
                || self.spans_of.1 != version
                || self.spans_of.2 != self.touched
            {
                self.spans.clear();
                list_spans(&self.touched, pw, self.height, &mut self.spans);
                if version != 0 {
                    trim_walls(&mut self.spans, &self.costs, pw);
                }
                self.spans_cells = self
                    .spans
                    .iter()
                    .map(|&(_, a, b)| (b + 1 - a) as usize)
                    .sum();
                (self.spans_of.0, self.spans_of.1) = (pw, version);
                self.spans_of.2.clone_from(&self.touched);
            }
            self.spans_hold_values = true;
            // A field written last from a footprint is unreachable outside it: only the blocks
            // that footprint had and this one lacks need clearing (on a dungeon nineteen cells
            // in twenty are rock, written once instead of at every build).
            // Inner cells of chains it held are outside its footprint: trusted only if this
            // builder knows those chains. The walls the spans leave out must be this map's.
            if out.footprint_valid
                && out.footprint.len() == self.touched.len()
                && out.deep.known_to(self.chain_layout())
                && (version == 0 || out.walls_of == version)
            {
                clear_gone_blocks(&out.footprint, &self.touched, pw, w, &mut out.values);
            } else {
                out.values.fill(UNREACHABLE);
                out.deep.chains.clear();
            }
            for &(y, a, b) in &self.spans {
                let (y, a, b) = (y as usize, a as usize, b as usize);
                let dst = (y - 1) * w + a - 1;
                out.values[dst..=dst + b - a].copy_from_slice(&self.dist[y * pw + a..=y * pw + b]);
            }
            out.footprint.clone_from(&self.touched);
            out.footprint_valid = true;
            out.walls_of = version;
        } else {
            for (y, row) in out.values.chunks_exact_mut(w).enumerate() {
                let src = (y + 1) * pw + 1;
                row.copy_from_slice(&self.dist[src..src + w]);
            }
            out.footprint_valid = false;
            out.walls_of = self.cost_version;
            out.deep.chains.clear();
        }
        self.write_chain_cells(&mut out.deep, |chains, dist, straight, stale, none| {
            chains.write_values(dist, straight, stale, none, &mut out.values)
        });
        out.model = self.model;
        out.grid = grid;
        self.wave.active = false;
        self.built = true;
        Ok(WaveStats {
            settled: self.wave.settled,
        })
    }

    /// True once a build has succeeded, so [`FlowField`](crate::FlowField)s can be derived
    /// from the builder's state.
    pub fn has_field(&self) -> bool {
        self.built
    }

    /// Copy the costs (of [`CostField`] version `version`, or 0 when unknown) into the padded
    /// grid (a wall border) and size the distances.
    fn prepare(&mut self, costs: &[u8], stride: usize, version: u64, grid: Grid, model: CostModel) {
        let w = grid.width() as usize;
        let h = grid.height() as usize;
        let pw = w + 2;
        let plen = pw * (h + 2);
        self.model = model;
        if version != 0
            && version == self.cost_version
            && self.costs.len() == plen
            && self.padded_width == pw
            && stride == w
        {
            // The very costs built over last (many goals, one map): nothing to copy or compare,
            // two passes over the whole map that a dungeon's wave, reaching a cell in twenty,
            // otherwise pays at every build.
            self.rows_changed = 0;
            return;
        }
        self.cost_version = if stride == w { version } else { 0 };
        if self.costs.len() != plen || self.padded_width != pw {
            self.touched_valid = false;
            self.costs.clear();
            self.costs.resize(plen, WALL);
            self.moves.clear();
            self.moves.resize(plen, 0);
            self.trees.valid = false;
            self.moves_stale = (1, h + 1);
        }
        self.width = w;
        self.height = h;
        self.padded_width = pw;
        // The highest terrain (the wave's buckets are sized by it), found over groups of padded
        // rows just copied, still in cache: one pass over the costs instead of two, and on
        // narrow maps no byte-at-a-time tail per row (the borders are walls, which count as 0).
        let mut changed = 0;
        let window = stride != w;
        let mut top = PLAIN;
        let mut group = pw;
        for y in 0..h {
            let row = &costs[y * stride..y * stride + w];
            let dst = (y + 1) * pw + 1;
            let mine = &mut self.costs[dst..dst + w];
            // Building again over the same map (many goals, one map) leaves the rows as they
            // were, and with them the legal steps worked out for the last wave. A window of a
            // larger map (the sectors' tiles: each build another window) is copied without
            // looking.
            if window || mine != row {
                mine.copy_from_slice(row);
                changed += 1;
                let (lo, hi) = self.moves_stale;
                self.moves_stale = (lo.min(y + 1), hi.max(y + 2));
            }
            let end = dst + w;
            if end - group >= MAX_TERRAIN_GROUP || y + 1 == h {
                top = top.max(max_walkable(&self.costs[group..end]));
                group = end;
            }
        }
        self.rows_changed = changed;
        if changed > 0 {
            self.rooms.valid = false;
            self.trees.valid = false;
        }
        self.max_terrain = top;
        if self.dist.len() != plen {
            // New cells would be UNREACHABLE among the INF.
            self.inf_outside = false;
        }
        self.dist.resize(plen, UNREACHABLE);
    }

    /// Whether this wave reads the legal steps from `moves` (brought up to date) or works
    /// them out cell by cell: a map unlike the last one in more than a quarter of its rows
    /// (another map, or another window of one: the sectors' tiles) works them out as it goes,
    /// since its wave may reach a small part of it and the next build may be over another map
    /// again; a build over the same map as the last (the next goal) works out the table.
    fn take_moves(&mut self) -> bool {
        if self.rows_changed * 4 > self.height {
            return false;
        }
        self.update_moves();
        true
    }

    /// Whether this one-shot wave crosses rooms: chosen as the build started (see
    /// `start_seeded_window`), with the legal steps' table in use; sizes the buckets for a
    /// room's crossing.
    fn take_rooms(&mut self) -> bool {
        if !self.rooms_ready || !self.wave.table {
            return false;
        }
        // Nothing is queued yet: the buckets may grow to hold a crossing within one lap.
        let chain = self.model.straight() * self.rooms.chains.longest();
        let crossing = self.rooms.longest_crossing(self.model).max(chain);
        let need = ((crossing >> self.wave.shift) as usize + 2).next_power_of_two();
        if need > self.wave.mask + 1 {
            if self.buckets.len() < need {
                self.buckets.resize_with(need, Bucket::default);
            }
            self.wave.mask = need - 1;
        }
        true
    }

    /// The wave begun again from its seeds, as it was set up but without rooms.
    fn restart_without_rooms(&mut self) -> &mut IntegrationBuilder {
        let seeds = std::mem::take(&mut self.wave.seeds);
        let (walks, table) = (self.wave.walks, self.wave.table);
        self.rooms.chains.forget_reached();
        self.chains_used = false;
        self.reset_wave_distances();
        self.seed(seeds, self.max_terrain);
        self.wave.ran = true;
        self.wave.walks = walks;
        self.wave.table = table;
        self
    }

    /// The wave over the crossing graph (see `graph`) from this build's seeds: the nodes'
    /// values written into the distances, the seeds inside rooms handed to the fill. An error
    /// (a value past the range, or a seed the graph cannot take) sends the build to a wave
    /// without rooms, which names the cell a plain wave names. O(nodes + edges).
    fn run_graph(&mut self) -> Result<bool, IntegrationError> {
        let pw = self.padded_width;
        let prices = (self.model.straight(), self.model.diagonal());
        let (straight, diagonal) = prices;
        let graph = &mut self.graph;
        graph.begin(prices);
        let outside = |c: usize| IntegrationError::Overflow {
            x: (c % pw - 1) as u32,
            y: (c / pw - 1) as u32,
            limit: UNREACHABLE - 1,
        };
        for &(v, c) in &self.wave.seeds {
            if let Some(n) = graph.node_at(c as usize) {
                graph.offer(n, v);
                continue;
            }
            // Inside a room: the octile way to each of its entries, and a source of its fill.
            let Some((room, doors)) = self.rooms.room_of(c, pw) else {
                return Err(outside(c as usize));
            };
            let (x, y) = (c % pw as u32, c / pw as u32);
            for (d, dx, dy) in doors {
                let Some(n) = graph.node_at(d as usize) else {
                    return Err(outside(c as usize));
                };
                let (s, g) = rooms::octile_steps((dx, dy), (x, y));
                let price = straight as u64 * s as u64 + diagonal as u64 * g as u64;
                graph.offer(n, (v as u64 + price).min(UNREACHABLE as u64 - 1) as u32);
            }
            self.rooms.add_seed_source(room, (x, y, v));
        }
        match graph.run(self.wave.shift, self.wave.limit) {
            Ok(settled) => {
                graph.write(&mut self.dist, &mut self.touched);
                self.wave.settled = settled;
                Ok(true)
            }
            Err(n) => Err(outside(graph.cell(n))),
        }
    }

    /// Give the rooms' cells their values from their entries once the wave is done.
    fn fill_rooms(&mut self) -> Result<(), IntegrationError> {
        let prices = (self.model.straight(), self.model.diagonal());
        let pw = self.padded_width;
        match self.rooms.fill(
            &mut self.dist,
            &mut self.touched,
            &mut self.rooms_filled,
            pw,
            prices,
            self.wave.limit,
            &mut self.room_sources,
        ) {
            Ok(filled) => {
                self.wave.settled += filled;
                let straight = self.model.straight();
                match self
                    .rooms
                    .chains
                    .settle(&self.dist, straight, self.wave.limit)
                {
                    Ok(inner) => {
                        self.wave.settled += inner;
                        self.chains_used = true;
                        Ok(())
                    }
                    Err(c) => Err(IntegrationError::Overflow {
                        x: (c as usize % pw - 1) as u32,
                        y: (c as usize / pw - 1) as u32,
                        limit: UNREACHABLE - 1,
                    }),
                }
            }
            Err(c) => Err(IntegrationError::Overflow {
                x: (c % pw - 1) as u32,
                y: (c / pw - 1) as u32,
                limit: UNREACHABLE - 1,
            }),
        }
    }

    /// Work out the legal steps of the rows around those whose costs changed.
    fn update_moves(&mut self) {
        let (lo, hi) = self.moves_stale;
        if lo >= hi {
            return;
        }
        self.moves_stale = (usize::MAX, 0);
        let pw = self.padded_width;
        let (first, last) = (lo.saturating_sub(1).max(1), (hi + 1).min(self.height + 1));
        for y in first..last {
            let (up, here, down) = (
                &self.costs[(y - 1) * pw..y * pw],
                &self.costs[y * pw..(y + 1) * pw],
                &self.costs[(y + 1) * pw..(y + 2) * pw],
            );
            moves_of_row(up, here, down, &mut self.moves[y * pw..(y + 1) * pw]);
        }
    }

    /// Whether the footprint (`touched`) holds every cell outside which the distances are
    /// UNREACHABLE: then a reset need touch only its blocks, or none at all.
    fn footprint_known(&self) -> bool {
        let words = self.dist.len().div_ceil(TOUCHED_BLOCK * 64);
        self.touched_valid && self.touched.len() == words && !self.inf_outside
    }

    /// The distances left as the last build over the crossing graph wrote them, for a build over
    /// the same graph, which writes the same cells again (every node, and every room reached,
    /// or the room reset: see `Rooms::fill`): the footprint starts empty as after
    /// [`reset_wave_distances`](Self::reset_wave_distances). False (nothing done) when the
    /// footprint is not known. On a dungeon the reset was a sixteenth of a build.
    fn keep_wave_distances(&mut self) -> bool {
        if !self.footprint_known() {
            return false;
        }
        self.spans_hold_values = false;
        self.touched.fill(0);
        // Until this build has written them again, the distances hold the last build's values
        // outside its footprint: a build that stops short must reset them all.
        self.dist_stale = true;
        true
    }

    /// Distances as the wave starts them: every cell unreachable. Walls keep that value through
    /// the wave (each relaxation tests the cell it offers to), so the finished distances need no
    /// pass to restore them. After a wave, only the blocks it touched are reset.
    fn reset_wave_distances(&mut self) {
        let spans_hold = std::mem::take(&mut self.spans_hold_values);
        let words = self.dist.len().div_ceil(TOUCHED_BLOCK * 64);
        if !std::mem::take(&mut self.dist_stale) && self.footprint_known() {
            if spans_hold {
                // On a dungeon half the cells of the footprint's blocks.
                let pw = self.padded_width;
                for &(y, a, b) in &self.spans {
                    let row = y as usize * pw;
                    self.dist[row + a as usize..=row + b as usize].fill(UNREACHABLE);
                }
            } else {
                sweep::fill_blocks(&mut self.dist, &self.touched, UNREACHABLE);
            }
            self.touched.fill(0);
        } else {
            self.dist.fill(UNREACHABLE);
            self.touched.clear();
            self.touched.resize(words, 0);
        }
        self.inf_outside = false;
        self.touched_valid = true;
    }

    /// The layout of the chains this builder knows (0: none).
    pub(crate) fn chain_layout(&self) -> u64 {
        if self.rooms.valid {
            self.rooms.chains.layout
        } else {
            0
        }
    }

    /// Bring an output's chain cells (`deep`, known to this builder or emptied) up to date:
    /// `write` gets the chains, the distances, the straight step's price, the chains the
    /// output held, to clear those not reached now and fill those reached, and the least
    /// distance that means "no value" (INF beyond the blocks the last sweeps finished).
    pub(crate) fn write_chain_cells(
        &self,
        deep: &mut DeepCells,
        write: impl FnOnce(&chains::Chains, &[u32], u32, &[u32], u32),
    ) {
        let chains = &self.rooms.chains;
        if self.chains_used || !deep.chains.is_empty() {
            // Without chains in the last build, none is marked reached.
            let none = self.no_value();
            write(
                chains,
                &self.dist,
                self.model.straight(),
                &deep.chains,
                none,
            );
            deep.chains.clear();
            deep.chains.extend_from_slice(chains.reached());
        }
        deep.layout = self.chain_layout();
    }

    /// The least distance in `dist` that means "no value": INF when the last sweeps left it
    /// beyond their footprint (see `inf_outside`), UNREACHABLE otherwise.
    pub(crate) fn no_value(&self) -> u32 {
        if self.inf_outside {
            sweep::INF
        } else {
            UNREACHABLE
        }
    }

    /// The highest walkable terrain of the map built over last.
    pub(crate) fn max_terrain(&self) -> u8 {
        self.max_terrain
    }

    /// The [`CostField`] version of the costs built over last (0: unknown).
    pub(crate) fn cost_version(&self) -> u64 {
        self.cost_version
    }

    /// The footprint of the last wave: a bit per block of [`TOUCHED_BLOCK`] padded cells that
    /// holds a cell the wave gave a value.
    pub(crate) fn touched(&self) -> &[u64] {
        &self.touched
    }

    /// The cells [`written_spans`](Self::written_spans) cover (when listed). O(1).
    pub(crate) fn written_cells(&self) -> usize {
        self.spans_cells
    }

    /// The spans of the last field written (see [`list_spans`]), listed as it was written.
    pub(crate) fn written_spans(
        &self,
    ) -> Option<impl Iterator<Item = (usize, usize, usize)> + Clone> {
        self.spans_listed.then(|| {
            self.spans
                .iter()
                .map(|&(y, a, b)| (y as usize, a as usize, b as usize))
        })
    }

    /// The parts of rows the last wave touched, as (padded row, first padded column, last
    /// padded column) within the map, in order; `None` when the last build was swept, or when
    /// the wave touched more than two thirds of the map (a whole-map pass is cheaper then).
    #[cfg(test)]
    pub(crate) fn touched_spans(
        &self,
    ) -> Option<impl Iterator<Item = (usize, usize, usize)> + Clone> {
        let mut spans = Vec::new();
        if !self.footprint_is_small() {
            return None;
        }
        list_spans(&self.touched, self.padded_width, self.height, &mut spans);
        Some(
            spans
                .into_iter()
                .map(|(y, a, b)| (y as usize, a as usize, b as usize)),
        )
    }

    /// Whether the last wave left a footprint (a swept build does not) of at most two thirds of
    /// the map, so that passes over its spans beat passes over the whole map.
    fn footprint_is_small(&self) -> bool {
        self.touched_valid && small_footprint(&self.touched, self.dist.len())
    }

    /// Whether the wave about to run may go without recording its footprint: the last wave
    /// over this map (unchanged) that recorded one reached more than two thirds of it, so that
    /// the copy into the field and the arrows went over the whole map anyway. A maze's wave
    /// then saves a mark per cell reached; every `UNMARKED_WAVES + 1`-th wave records its
    /// footprint again (another goal may reach less).
    fn footprint_unwanted(&mut self) -> bool {
        let (map, left) = &mut self.unmarked;
        if *map == 0 || *map != self.cost_version || *left == 0 {
            return false;
        }
        *left -= 1;
        true
    }

    /// Set up Dial's buckets and queue the seeds.
    fn seed(&mut self, seeds: Vec<(u32, u32)>, max_terrain: u8) {
        let diagonal = self.model.diagonal();
        // Buckets no wider than the cheapest step: nothing expanded from a bucket lands in it.
        let shift = 31 - self.model.straight().leading_zeros();
        let max_step = diagonal * WALL as u32;
        // At least a step of the dearest terrain ahead; and room for walks along corridors
        // (64 buckets: about 50 straight steps on plain ground, after which a walk queues the
        // cell it reached and goes on when the wave gets there).
        let nb = (((diagonal * max_terrain as u32) >> shift) as usize + 2)
            .next_power_of_two()
            .max(MIN_BUCKETS);
        if self.buckets.len() < nb {
            self.buckets.resize_with(nb, Bucket::default);
        }
        // Only the last wave's buckets may hold cells (a wave left unfinished): a builder whose
        // buckets grew for forks does not clear them all at every build.
        for b in self.buckets.iter_mut().take(self.wave.mask + 1) {
            b.len = 0;
        }
        let current = std::mem::take(&mut self.wave.current);
        let mut forks = std::mem::take(&mut self.wave.forks);
        forks.clear();
        let k = seeds.first().map_or(0, |&(v, _)| v >> shift);
        self.wave = WaveState {
            active: true,
            done: false,
            shift,
            mask: nb - 1,
            limit: UNREACHABLE - 1 - max_step,
            pending: 0,
            settled: 0,
            k,
            current,
            current_len: 0,
            cursor: 0,
            draining: false,
            uniform: max_terrain == 1,
            sweeping: false,
            ran: false,
            walks: false,
            table: false,
            walked: 0,
            rooms: false,
            mark: true,
            seeds,
            next_seed: 0,
            forks,
            #[cfg(test)]
            queued: 0,
            forking: false,
        };
    }

    /// Run the wave until it is done (true) or `budget` cells have been settled (false).
    fn run(&mut self, budget: usize) -> Result<bool, IntegrationError> {
        // On a map of plain ground only (the common case, and every Moving AI map), a step's
        // price does not depend on the cell: skip the terrain loads and multiplies.
        // Forks only with walks over the legal steps' table, on a map the trees describe.
        let forks = self.wave.forking && self.wave.walks && self.wave.table && self.trees.valid;
        match (self.wave.uniform, self.wave.walks) {
            (true, true) if forks => self.run_impl::<true, true, true, true>(budget),
            (false, true) if forks => self.run_impl::<false, true, true, true>(budget),
            (true, true) if self.wave.table => self.run_impl::<true, true, true, false>(budget),
            (true, false) if self.wave.table => self.run_impl::<true, false, true, false>(budget),
            (false, true) if self.wave.table => self.run_impl::<false, true, true, false>(budget),
            (false, false) if self.wave.table => self.run_impl::<false, false, true, false>(budget),
            (true, true) => self.run_impl::<true, true, false, false>(budget),
            (true, false) => self.run_impl::<true, false, false, false>(budget),
            (false, true) => self.run_impl::<false, true, false, false>(budget),
            (false, false) => self.run_impl::<false, false, false, false>(budget),
        }
    }

    /// The wave. With `WALKS`, corridor cells are given their values by walks along the
    /// corridor instead of through the buckets, and `settled` counts the cells reached (each
    /// once) rather than the cells expanded.
    fn run_impl<const UNIFORM: bool, const WALKS: bool, const TABLE: bool, const FORKS: bool>(
        &mut self,
        budget: usize,
    ) -> Result<bool, IntegrationError> {
        let pw = self.padded_width;
        let (straight, diagonal) = (self.model.straight(), self.model.diagonal());
        let st = &mut self.wave;
        let (shift, mask, limit) = (st.shift, st.mask, st.limit);
        let costs = &self.costs[..];
        let moves = &self.moves[..];
        let ends = corridor_ends(pw);
        let dist = &mut self.dist[..];
        let buckets = &mut self.buckets[..mask + 1];
        let touched = &mut self.touched[..];
        let rooms = st.rooms.then_some(&self.rooms);
        // Walks fork at junctions on no loop only in waves that cross no rooms (whose chains'
        // ends a fork would have to tell apart).
        let mut forks = Forks {
            trees: if FORKS && !st.rooms {
                self.trees.bits()
            } else {
                &[]
            },
            stack: std::mem::take(&mut st.forks),
        };
        let mark = st.mark;
        let mut left = budget;
        loop {
            if !st.draining {
                // Seeds join when the wave reaches their bucket: the circular buckets only ever
                // hold values less than one lap ahead of the bucket being drained.
                while let Some(&(v, c)) = st.seeds.get(st.next_seed) {
                    if v >> shift > st.k {
                        break;
                    }
                    st.next_seed += 1;
                    let old = dist[c as usize];
                    if v < old {
                        dist[c as usize] = v;
                        touch(touched, c as usize);
                        if WALKS {
                            st.settled += (old == UNREACHABLE) as usize;
                        }
                        // A corridor cell's value in this bucket came from a walk, which does
                        // not queue it: with walks, a seed is queued whatever it held.
                        if WALKS || old >> shift != v >> shift {
                            buckets[(v >> shift) as usize & mask].push(c);
                            st.pending += 1;
                        }
                    }
                }
                if st.pending == 0 {
                    match st.seeds.get(st.next_seed) {
                        None => {
                            // The forks' store kept for the next wave.
                            st.forks = std::mem::take(&mut forks.stack);
                            return Ok(true);
                        }
                        Some(&(v, _)) => {
                            st.k = v >> shift;
                            continue;
                        }
                    }
                }
                let slot = st.k as usize & mask;
                let n = buckets[slot].len;
                if n == 0 {
                    st.k += 1;
                    continue;
                }
                // Take the bucket's entries out to drain them; its storage is handed back after.
                std::mem::swap(&mut st.current, &mut buckets[slot].items);
                st.current_len = n;
                st.cursor = 0;
                buckets[slot].len = 0;
                st.pending -= n;
                st.draining = true;
            }
            let k = st.k;
            let walks = Walks {
                pw,
                prices: (straight, diagonal),
                horizon: (k as u64 + mask as u64 + 1).min(u32::MAX as u64) as u32,
                limit,
                walked: Cell::new(0),
                ends,
            };
            while st.cursor < st.current_len {
                if left == 0 {
                    return Ok(false);
                }
                let c = st.current[st.cursor] as usize;
                st.cursor += 1;
                let d = dist[c];
                if d >> shift != k {
                    // Improved into an earlier bucket after this entry was queued.
                    continue;
                }
                if d > limit {
                    return Err(IntegrationError::Overflow {
                        x: (c % pw - 1) as u32,
                        y: (c / pw - 1) as u32,
                        limit: UNREACHABLE - 1,
                    });
                }
                left -= 1;
                if !WALKS {
                    st.settled += 1;
                }
                let mut queue = Queue::<UNIFORM, WALKS, TABLE, FORKS> {
                    costs,
                    moves,
                    dist: &mut *dist,
                    buckets: &mut *buckets,
                    touched: &mut *touched,
                    shift,
                    mask,
                    pushed: 0,
                    reached: 0,
                    walks: &walks,
                    rooms,
                    mark,
                    forks: &mut forks,
                };
                queue.expand(d, c);
                st.pending += queue.pushed;
                #[cfg(test)]
                {
                    st.queued += queue.pushed;
                }
                if WALKS {
                    st.settled += queue.reached;
                }
            }
            st.walked += walks.walked.get();
            let slot = k as usize & mask;
            std::mem::swap(&mut st.current, &mut buckets[slot].items);
            st.draining = false;
            st.k += 1;
        }
    }
}

/// The legal steps of the cells of padded row `here` (between rows `up` and `down`): bit 0 north,
/// 1 east, 2 south, 3 west, 4 north-east, 5 south-east, 6 south-west, 7 north-west. The first
/// and last cells (the wall border) are left alone.
fn moves_of_row(up: &[u8], here: &[u8], down: &[u8], out: &mut [u8]) {
    let open = |v: u8| (v != WALL) as u8;
    for x in 1..here.len() - 1 {
        let (n, e, s, w) = (
            open(up[x]),
            open(here[x + 1]),
            open(down[x]),
            open(here[x - 1]),
        );
        let ne = n & e & open(up[x + 1]);
        let se = s & e & open(down[x + 1]);
        let sw = s & w & open(down[x - 1]);
        let nw = n & w & open(up[x - 1]);
        let m = n | e << 1 | s << 2 | w << 3 | ne << 4 | se << 5 | sw << 6 | nw << 7;
        out[x] = m * open(here[x]);
    }
}

/// The legal steps of open padded cell `c`, as `moves_of_row` gives them.
#[inline(always)]
fn moves_at(costs: &[u8], pw: usize, c: usize) -> u8 {
    let open = |i: usize| (costs[i] != WALL) as u8;
    let (n, e, s, w) = (open(c - pw), open(c + 1), open(c + pw), open(c - 1));
    let ne = n & e & open(c - pw + 1);
    let se = s & e & open(c + pw + 1);
    let sw = s & w & open(c + pw - 1);
    let nw = n & w & open(c - pw - 1);
    n | e << 1 | s << 2 | w << 3 | ne << 4 | se << 5 | sw << 6 | nw << 7
}

/// A one-shot wave whose walks gave values to fewer than one cell in this many of those it
/// reached sends the next one-shot waves of its size without walks (`sweep::RETRY_AFTER` of
/// them): on open rooms joined by doors (8room_000: 3 % corridor cells) the wave with walks was
/// about 8 % slower, on mazes (91 %) about 30 % faster.
const WALKED_SHARE: usize = 10;

/// Padded cells of costs copied between two looks for the highest terrain: small enough to be
/// in cache still, large enough that the vector loop's tail is rare.
const MAX_TERRAIN_GROUP: usize = 8192;

/// Waves over a map that go without recording their footprint (see
/// `IntegrationBuilder::footprint_unwanted`) before one records it again.
const UNMARKED_WAVES: u32 = 16;

/// Buckets of the wave's queue at the least: room for walks along corridors.
const MIN_BUCKETS: usize = 64;

/// Buckets of a wave whose walks fork at junctions on no loop (see `trees`), so that a fork
/// goes on down a dead-end branch, or a whole maze without loops, rather than stopping a lap
/// ahead and queueing the cell it reached (a lap of 4,096 is about 3,300 straight steps on
/// plain ground): fewer buckets queued many more cells on a maze and took longer, and waves
/// that do not fork keep 64, since each bucket's store is cold once a lap (the figures are in
/// `docs/benchmarks.md`). 32 bytes a bucket, and the cells queued.
const FORK_BUCKETS: usize = 4096;

/// Seeds a wave that crosses rooms may have at the most: each is looked for among the rooms.
const MAX_ROOM_SEEDS: usize = 64;

/// Relaxation of an expanded cell's open neighbours into the bucket queue.
struct Queue<'a, 'f, const UNIFORM: bool, const WALKS: bool, const TABLE: bool, const FORKS: bool> {
    costs: &'a [u8],
    moves: &'a [u8],
    dist: &'a mut [u32],
    buckets: &'a mut [Bucket],
    touched: &'a mut [u64],
    shift: u32,
    mask: usize,
    pushed: usize,
    /// Cells given their first value (counted with `WALKS` only).
    reached: usize,
    walks: &'a Walks,
    /// The map's rooms, when this wave crosses them.
    rooms: Option<&'a rooms::Rooms>,
    /// Record the cells given values in the footprint.
    mark: bool,
    /// Where walks fork, and the branches left to walk (one field: the queue is made anew for
    /// each expansion, and a wave without forks pays for every word of it).
    forks: &'a mut Forks<'f>,
}

/// The cells on no loop (see `trees`; empty: none known), where walks fork (`FORKS`), and the
/// branches a walk has yet to go down where it forked (see [`Queue::walk`]): (junction, its
/// value, first cell of the branch), empty between walks.
struct Forks<'t> {
    trees: &'t [u64],
    stack: Vec<(u32, u32, u32)>,
}

/// What walks along corridors need (read only when there is a corridor).
struct Walks {
    pw: usize,
    /// Base prices of a straight and a diagonal step.
    prices: (u32, u32),
    /// The first bucket number a walk may not queue into: one lap of the circular buckets past
    /// the bucket being drained (whose slot is taken out while it drains).
    horizon: u32,
    /// The highest value a cell may be expanded with ([`IntegrationError::Overflow`] beyond).
    limit: u32,
    /// Cells given values by walks (counted out of the hot loop's way).
    walked: Cell<usize>,
    /// For each corridor's legal steps `m`, the sum of the offsets of its two steps (twice the
    /// one step of a dead end), wrapping: the step on from `j` away from `from` is then
    /// `2j + ends[m] − from`, without a branch on which side `from` is.
    ends: [usize; 16],
}

/// [`Walks::ends`] for padded width `pw`.
fn corridor_ends(pw: usize) -> [usize; 16] {
    let offsets = [pw.wrapping_neg(), 1, pw, 1usize.wrapping_neg()];
    let mut ends = [0usize; 16];
    for (m, end) in ends.iter_mut().enumerate() {
        let mut bits = (0..4).filter(|b| m & 1 << b != 0).map(|b| offsets[b]);
        if let Some(first) = bits.next() {
            *end = first.wrapping_add(bits.next().unwrap_or(first));
        }
    }
    ends
}

impl<const UNIFORM: bool, const WALKS: bool, const TABLE: bool, const FORKS: bool>
    Queue<'_, '_, UNIFORM, WALKS, TABLE, FORKS>
{
    /// The legal steps of open cell `c`: from the table, or worked out from the eight cells
    /// around it.
    #[inline(always)]
    fn moves_of(&self, c: usize) -> u8 {
        if TABLE {
            self.moves[c]
        } else {
            moves_at(self.costs, self.walks.pw, c)
        }
    }

    /// Expand cell `c` at its final value `d`: offer each legal step's cell its value.
    #[inline(always)]
    fn expand(&mut self, d: u32, c: usize) {
        // An entry of a room offers its steps out of the room, and crosses to the room's other
        // entries in one step each: the room's other cells are filled once the wave is done.
        if let Some(rooms) = self.rooms
            && let Some(e) = rooms.entry_at(c)
        {
            self.relax_all(d, c, self.moves_of(c) & rooms::Rooms::steps_out(e));
            for (j, price) in rooms.crossings(e, c, self.walks.pw, self.walks.prices) {
                self.relax(d, c, j, price);
            }
            return;
        }
        // An end of a chain offers its steps out of the chain, and the chain's other end.
        if let Some(rooms) = self.rooms
            && let Some(end) = rooms.chains.end_at(c)
        {
            self.relax_all(d, c, self.moves_of(c) & !end.into);
            let across = d as u64 + self.walks.prices.0 as u64 * end.steps as u64;
            self.offer(
                c,
                end.other as usize,
                across.min(UNREACHABLE as u64 - 1) as u32,
            );
            return;
        }
        // With walks, every improved neighbour that is a corridor cell (at most two legal
        // steps, all straight: see `corridor_step`) is walked along at once rather than queued.
        self.relax_all(d, c, self.moves_of(c));
    }

    /// Offer the cells of `c`'s legal steps (`m`, see `moves_of_row`).
    #[inline(always)]
    fn relax_all(&mut self, d: u32, c: usize, m: u8) {
        let pw = self.walks.pw;
        let (straight, diagonal) = self.walks.prices;
        let step = |bit: u8| m & (1 << bit) != 0;
        if step(0) {
            self.relax(d, c, c - pw, straight);
        }
        if step(1) {
            self.relax(d, c, c + 1, straight);
        }
        if step(2) {
            self.relax(d, c, c + pw, straight);
        }
        if step(3) {
            self.relax(d, c, c - 1, straight);
        }
        if step(4) {
            self.relax(d, c, c - pw + 1, diagonal);
        }
        if step(5) {
            self.relax(d, c, c + pw + 1, diagonal);
        }
        if step(6) {
            self.relax(d, c, c + pw - 1, diagonal);
        }
        if step(7) {
            self.relax(d, c, c - pw - 1, diagonal);
        }
    }

    /// Offer open cell `j` the value `d + base × terrain(j)` (the unit steps from `j` into the
    /// cell `c` at `d`, so `j`'s terrain prices the step), and queue it if that moves it to an
    /// earlier bucket; with `WALKS`, a corridor cell is walked along instead.
    #[inline(always)]
    fn relax(&mut self, d: u32, c: usize, j: usize, base: u32) {
        let t = if UNIFORM { 1 } else { self.costs[j] as u32 };
        self.offer(c, j, d + base * t);
    }

    /// Offer open cell `j` the value `nd` from cell `c` (see [`relax`](Self::relax)).
    #[inline(always)]
    fn offer(&mut self, c: usize, j: usize, nd: u32) {
        let old = self.dist[j];
        if nd < old {
            self.dist[j] = nd;
            if self.mark {
                touch(self.touched, j);
            }
            if WALKS {
                self.reached += (old == UNREACHABLE) as usize;
                let prices = self.walks.prices;
                // A chain's end is a corridor cell too, but the wave crosses its chain in one
                // step from the buckets instead.
                let m = self.moves_of(j);
                if let Some(step) = corridor_step(m, &self.walks.ends, prices, j, c)
                    && self.rooms.is_none_or(|r| r.chains.end_at(j).is_none())
                {
                    self.walk(j, nd, step);
                    return;
                }
                // A junction on no loop: every cell beyond it is reached through it alone.
                if FORKS && trees::on_no_loop(self.forks.trees, j) {
                    self.fork(j, nd, m, c);
                    if let Some((from, v, next)) = self.forks.stack.pop() {
                        self.walk(from as usize, v, (next as usize, prices.0));
                    }
                    return;
                }
            }
            // A cell already queued in the same bucket is expanded there at its final value;
            // queueing it again would expand it twice. A corridor cell queued here is walked
            // from when it is expanded. A corridor cell whose value in this bucket came from a
            // walk is not queued, and need not be: the walk reached it from its other
            // neighbour `x`, so its old value is `x`'s plus at least one straight step, and a
            // gain of less than a bucket's width (at most one straight step) cannot improve `x`
            // through it; its only other neighbour is `c`, already final.
            if old >> self.shift != nd >> self.shift {
                self.push(j, nd);
            }
        }
    }

    #[inline(always)]
    fn push(&mut self, j: usize, v: u32) {
        self.buckets[(v >> self.shift) as usize & self.mask].push(j as u32);
        self.pushed += 1;
    }

    /// From corridor cell `cur` at value `v` (a cell with at most two legal steps, just
    /// improved from one of them), on along the corridor through `step` (the other one) while
    /// cells improve, giving each its value at once: a corridor cell's only neighbours are the
    /// two cells along it, so expanding it from the buckets would offer nothing else. The cell
    /// where the corridor ends is queued as usual, unless it is a junction on no loop (see
    /// `trees`): the walk forks there and goes down each of its other branches in turn, which
    /// its expansion would have offered (in a maze without loops, no junction is queued at
    /// all). Exact: each corridor cell ends with the
    /// better of the walks from its two ends (a walk stops where a cell already holds as good a
    /// value, which the walk that gave it carries on), and the end cells join the buckets at
    /// their values, never below the bucket being drained. A walk that would leave the buckets'
    /// lap, or pass the overflow limit, queues the cell it stands on instead, whose expansion
    /// goes on later.
    #[inline(never)]
    fn walk(&mut self, mut cur: usize, mut v: u32, mut step: (usize, u32)) {
        if !FORKS {
            self.walk_one(cur, v, step);
            return;
        }
        loop {
            self.walk_one(cur, v, step);
            // The branches left at the forks, last first.
            let Some((from, value, next)) = self.forks.stack.pop() else {
                return;
            };
            (cur, v, step) = (from as usize, value, (next as usize, self.walks.prices.0));
        }
    }

    /// One walk of [`walk`](Self::walk), to where the corridor ends; a junction on no loop
    /// there leaves its branches in `forks`.
    #[inline(always)]
    fn walk_one(&mut self, mut cur: usize, mut v: u32, mut step: (usize, u32)) {
        loop {
            let (next, base) = step;
            if v > self.walks.limit {
                self.push(cur, v);
                return;
            }
            let t = if UNIFORM { 1 } else { self.costs[next] as u32 };
            let nv = v + base * t;
            let old = self.dist[next];
            if nv >= old {
                return;
            }
            if nv >> self.shift >= self.walks.horizon {
                self.push(cur, v);
                return;
            }
            self.dist[next] = nv;
            if self.mark {
                touch(self.touched, next);
            }
            self.reached += (old == UNREACHABLE) as usize;
            self.walks.walked.set(self.walks.walked.get() + 1);
            let m = self.moves_of(next);
            match corridor_step(m, &self.walks.ends, self.walks.prices, next, cur) {
                Some(s) => (cur, v, step) = (next, nv, s),
                None => {
                    if FORKS && trees::on_no_loop(self.forks.trees, next) {
                        self.fork(next, nv, m, cur);
                    } else if old >> self.shift != nv >> self.shift {
                        self.push(next, nv);
                    }
                    return;
                }
            }
        }
    }

    /// Junction `j` on no loop, just improved to `v` from its neighbour `from`: its other
    /// branches left in `forks` to walk down, as its expansion would offer them. Exact as the
    /// walks are: each cell beyond `j` is reached through `j` alone, and a branch stops where a
    /// cell already holds as good a value. A cell on no loop has straight steps only (a
    /// diagonal step closes a loop of three cells with the straight ones beside it).
    #[inline(always)]
    fn fork(&mut self, j: usize, v: u32, m: u8, from: usize) {
        let pw = self.walks.pw;
        let steps = [j.wrapping_sub(pw), j + 1, j + pw, j.wrapping_sub(1)];
        for (bit, &k) in steps.iter().enumerate() {
            if m & (1 << bit) != 0 && k != from {
                self.forks.stack.push((j as u32, v, k as u32));
            }
        }
    }
}

/// If walkable padded cell `j` has at most two legal steps (a corridor cell, or a dead end),
/// the one that does not lead to `from` (one of them; `from` itself at a dead end), with its
/// base price.
///
/// A legal diagonal needs both straight cells beside it open (the corner rule), so a cell with
/// one has at least three legal steps: a corridor's steps are all straight.
#[inline(always)]
fn corridor_step(
    m: u8,
    ends: &[usize; 16],
    (straight, _): (u32, u32),
    j: usize,
    from: usize,
) -> Option<(usize, u32)> {
    if !is_corridor(m) {
        return None;
    }
    // The two steps lead to `from` and to the next cell: their sum less `from`. Straight on
    // (north and south open, or east and west) is told apart first: along a straight run the
    // branch is foreseen and the next cell does not wait for this cell's byte to load, so a
    // walk runs ahead; the sum would chain each cell's address to the load before.
    let next = if m == 0b0101 || m == 0b1010 {
        (2 * j).wrapping_sub(from)
    } else {
        (2 * j).wrapping_add(ends[m as usize]).wrapping_sub(from)
    };
    Some((next, straight))
}

/// Legal steps `m` (see `moves_of_row`) of a corridor cell: at most two, both straight.
#[inline(always)]
fn is_corridor(m: u8) -> bool {
    // Bit k of the mask: k (under 16) has at most two bits set.
    const AT_MOST_TWO: u16 = {
        let mut mask = 0u16;
        let mut k = 0;
        while k < 16 {
            if (k as u32).count_ones() <= 2 {
                mask |= 1 << k;
            }
            k += 1;
        }
        mask
    };
    m < 16 && AT_MOST_TWO >> m & 1 != 0
}

/// Whether the footprint `touched` (a bit per `TOUCHED_BLOCK` padded cells) covers at most two
/// thirds of the `len` padded cells, so that passes over its spans beat passes over the map: a
/// span costs a little more per cell than a whole row, and the blocks without a value are left
/// alone (lak303d, 39 % of its cells reached in 63 % of its blocks, builds 1.5 % faster than
/// with a bound of a third, den520d and Boston_0_256 4 %).
pub(crate) fn small_footprint(touched: &[u64], len: usize) -> bool {
    let marked: usize = touched.iter().map(|b| b.count_ones() as usize).sum();
    marked * TOUCHED_BLOCK * 3 <= len * 2
}

/// Write UNREACHABLE into the map cells (`values`, width `w`) of the footprint blocks marked in
/// `old` and not in `new` (padded width `pw`).
fn clear_gone_blocks(old: &[u64], new: &[u64], pw: usize, w: usize, values: &mut [u32]) {
    for_gone_cells(old, new, pw, values.len() / w.max(1), |_, i| {
        values[i] = UNREACHABLE
    });
}

/// Call `f(padded cell, map cell)` for every map cell (width `pw - 2`, `height` rows) of the
/// footprint blocks (see [`IntegrationBuilder::touched`]) marked in `old` and not in `new`.
pub(crate) fn for_gone_cells(
    old: &[u64],
    new: &[u64],
    pw: usize,
    height: usize,
    mut f: impl FnMut(usize, usize),
) {
    let w = pw - 2;
    for (k, (&o, &n)) in old.iter().zip(new).enumerate() {
        let mut gone = o & !n;
        while gone != 0 {
            let lo = (k * 64 + gone.trailing_zeros() as usize) * TOUCHED_BLOCK;
            for p in lo..lo + TOUCHED_BLOCK {
                let (y, x) = (p / pw, p % pw);
                if (1..=height).contains(&y) && (1..=w).contains(&x) {
                    f(p, (y - 1) * w + x - 1);
                }
            }
            gone &= gone - 1;
        }
    }
}

/// Mark the footprint block of padded cell `c`.
#[inline(always)]
fn touch(touched: &mut [u64], c: usize) {
    let block = c / TOUCHED_BLOCK;
    touched[block / 64] |= 1 << (block % 64);
}

/// Append the spans of the footprint `touched` (see [`IntegrationBuilder::touched`]):
/// runs of marked blocks, cut at row ends and clipped to the map (padded width `pw`, `height`
/// rows), as (padded row, first padded column, last padded column), in order. A plain loop
/// with a division per run of marked blocks, cheaper than an iterator's state and returns.
fn list_spans(touched: &[u64], pw: usize, height: usize, out: &mut Vec<(u32, u32, u32)>) {
    let n = touched.len();
    let mut k = 0;
    while k < n {
        let mut bits = touched[k];
        while bits != 0 {
            let zeros = bits.trailing_zeros();
            let ones = (bits >> zeros).trailing_ones();
            let first = k * 64 + zeros as usize;
            let mut end = first + ones as usize;
            if zeros + ones < 64 {
                bits &= !(((1u64 << ones) - 1) << zeros);
            } else {
                // The run reaches the word's end: it goes on in the next words' low bits.
                bits = 0;
                while let Some(&next) = touched.get(k + 1) {
                    let more = next.trailing_ones();
                    if more == 0 {
                        break;
                    }
                    k += 1;
                    end += more as usize;
                    if more < 64 {
                        bits = next & !((1u64 << more) - 1);
                        break;
                    }
                }
            }
            let (mut from, to) = (first * TOUCHED_BLOCK, end * TOUCHED_BLOCK);
            let mut y = from / pw;
            while from < to && y <= height {
                let row_start = y * pw;
                let row_end = (row_start + pw).min(to);
                let (a, b) = (
                    (from - row_start).max(1),
                    (row_end - 1 - row_start).min(pw - 2),
                );
                if y >= 1 && a <= b {
                    out.push((y as u32, a as u32, b as u32));
                }
                from = row_end;
                y += 1;
            }
        }
        k += 1;
    }
}

/// Leave out the walls (padded `costs`, width `pw`) at either end of every span, and the spans
/// of walls only: the cells the copy into a field and the arrows skip there hold UNREACHABLE and
/// the wall's byte from the field's earlier builds over the same map.
fn trim_walls(spans: &mut Vec<(u32, u32, u32)>, costs: &[u8], pw: usize) {
    spans.retain_mut(|(y, a, b)| {
        let row = &costs[*y as usize * pw..][..pw];
        while *a <= *b && row[*a as usize] == WALL {
            *a += 1;
        }
        while *a <= *b && row[*b as usize] == WALL {
            *b -= 1;
        }
        *a <= *b
    });
}

/// One bucket of the wave's queue. `items` only grows; `len` entries are live, so that a drained
/// bucket keeps its memory for the next build.
#[derive(Debug, Default, Clone)]
struct Bucket {
    items: Vec<u32>,
    len: usize,
}

impl Bucket {
    #[inline]
    fn push(&mut self, cell: u32) {
        if self.len == self.items.len() {
            let grow = (self.items.len() * 2).max(64);
            self.items.resize(grow, 0);
        }
        self.items[self.len] = cell;
        self.len += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::WALL;
    use crate::grid::Dir8;

    fn open(w: u32, h: u32) -> CostField {
        CostField::new(Grid::new(w, h).unwrap())
    }

    #[test]
    fn flee_seeds_are_the_scaled_values_turned_upside_down() {
        // A row with a wall and a cell cut off behind it: 0, 10, 20, 30, wall, unreachable.
        let mut cost = open(6, 1);
        cost.set(UVec2::new(4, 0), WALL).unwrap();
        let threat = IntegrationBuilder::new()
            .build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen)
            .unwrap();
        assert_eq!(threat.values()[..4], [0, 10, 20, 30]);
        // top = round(30 × 1.5) = 45; seed = top − round(v × 1.5); unreachable cells left out.
        let seeds = threat.flee_seeds(1.5).unwrap();
        let expect: Vec<(UVec2, u32)> = [45, 30, 15, 0]
            .iter()
            .enumerate()
            .map(|(x, &s)| (UVec2::new(x as u32, 0), s))
            .collect();
        assert_eq!(seeds, expect);
        // A factor of 1 mirrors the field; a tiny factor rounds everything to 0.
        let mirror: Vec<u32> = threat
            .flee_seeds(1.0)
            .unwrap()
            .iter()
            .map(|s| s.1)
            .collect();
        assert_eq!(mirror, [30, 20, 10, 0]);
        assert!(threat.flee_seeds(1e-9).unwrap().iter().all(|s| s.1 == 0));
        for bad in [0.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            assert!(
                matches!(threat.flee_seeds(bad), Err(IntegrationError::BadFactor(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn costs_are_read_in_cost_units() {
        let mut cost = open(4, 2);
        cost.set(UVec2::new(2, 0), WALL).unwrap();
        cost.set(UVec2::new(2, 1), WALL).unwrap();
        for (model, straight) in [(CostModel::TenFourteen, 1.0), (CostModel::Octile, 1.0)] {
            let f = IntegrationBuilder::new()
                .build(&cost, &[UVec2::new(0, 0)], model)
                .unwrap();
            assert_eq!(f.cost(UVec2::new(0, 0)), Some(0.0));
            let one = f.cost(UVec2::new(1, 0)).unwrap();
            match model {
                // 10-14 reports its integers; octile its raw units over the scale.
                CostModel::TenFourteen => assert_eq!(one, 10.0),
                CostModel::Octile => assert!((one - straight).abs() < 1e-9, "{one}"),
            }
            let diag = f.cost(UVec2::new(1, 1)).unwrap();
            assert_eq!(diag, model.to_cost(f.get(UVec2::new(1, 1)).unwrap()));
            assert!(diag > one);
            assert_eq!(f.cost(UVec2::new(3, 0)), None, "cut off");
            assert_eq!(f.cost(UVec2::new(2, 0)), None, "a wall");
            assert_eq!(f.cost(UVec2::new(4, 0)), None, "off the map");
        }
    }

    #[test]
    fn a_seed_may_hold_the_largest_safe_value_and_no_more() {
        let cost = open(1, 1);
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let limit = UNREACHABLE - 1 - model.diagonal() * WALL as u32;
            let mut b = IntegrationBuilder::new();
            let f = b
                .build_seeded(&cost, &[(UVec2::ZERO, limit)], model)
                .unwrap();
            assert_eq!(f.values(), &[limit]);
            assert_eq!(
                b.build_seeded(&cost, &[(UVec2::ZERO, limit + 1)], model),
                Err(IntegrationError::Overflow { x: 0, y: 0, limit })
            );
        }
        // One step past the largest safe value is an overflow, reported with its cell, whether
        // the sweeps or the wave would have built the field.
        for sweeps in [true, false] {
            let limit = UNREACHABLE - 1 - CostModel::TenFourteen.diagonal() * WALL as u32;
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(sweeps);
            let r = b.build_seeded(&open(2, 1), &[(UVec2::ZERO, limit)], CostModel::TenFourteen);
            // (The limit reported is the largest value a field holds.)
            let limit = UNREACHABLE - 1;
            assert_eq!(
                r,
                Err(IntegrationError::Overflow { x: 1, y: 0, limit }),
                "sweeps {sweeps}"
            );
        }
        // Seeds above what the row sweeps hold (2^31) are the wave's, and count in full.
        let row = open(3, 1);
        let big = 3_000_000_000;
        let f = IntegrationBuilder::new()
            .build_seeded(&row, &[(UVec2::ZERO, big)], CostModel::TenFourteen)
            .unwrap();
        assert_eq!(f.values(), &[big, big + 10, big + 20]);
    }

    #[test]
    fn a_time_budget_runs_to_the_end_and_stops_there() {
        // More cells than one slice of work (4096), a budget far longer than the build: one
        // call finishes it, and returns as soon as it is done rather than when the hour is up.
        let mut cost = open(100, 100);
        cost.fill_rect(UVec2::new(50, 0), UVec2::new(50, 90), WALL)
            .unwrap();
        let goal = [UVec2::new(10, 10)];
        let mut b = IntegrationBuilder::new();
        b.start(&cost, &goal, CostModel::TenFourteen).unwrap();
        let progress = b.advance_for(std::time::Duration::from_secs(3600)).unwrap();
        assert_eq!(
            progress,
            BuildProgress::Done(WaveStats {
                settled: 100 * 100 - 91
            })
        );
        let mut sliced = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
        b.finish_into(&mut sliced).unwrap();
        let whole = IntegrationBuilder::new()
            .build(&cost, &goal, CostModel::TenFourteen)
            .unwrap();
        assert_eq!(sliced, whole);
    }

    #[test]
    fn the_wave_settles_exactly_its_budget_per_slice() {
        // The wave (sweeps off) settles exactly `max_cells` cells per call, as documented, and
        // the slices add up to the one-shot build.
        let cost = open(30, 20);
        let goal = [UVec2::new(3, 4)];
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        b.start(&cost, &goal, CostModel::Octile).unwrap();
        for slice in 1..=59 {
            assert_eq!(
                b.advance(10).unwrap(),
                BuildProgress::Running {
                    settled: 10 * slice
                },
                "slice {slice}"
            );
        }
        assert_eq!(
            b.advance(10).unwrap(),
            BuildProgress::Done(WaveStats { settled: 600 })
        );
        let mut sliced = IntegrationField::new(*cost.grid(), CostModel::Octile);
        b.finish_into(&mut sliced).unwrap();
        let whole = IntegrationBuilder::new()
            .build(&cost, &goal, CostModel::Octile)
            .unwrap();
        assert_eq!(sliced, whole);
    }

    #[test]
    fn the_wave_settles_each_cell_once_on_rough_terrain() {
        // Terrain 1–9 and some walls: many cells are offered a value, then a better one in the
        // same bucket. Each is queued once there and expanded once: the wave settles exactly
        // the reachable cells, in both models.
        let mut cost = open(40, 30);
        let mut s = 0x1234_5678u32;
        for y in 0..30 {
            for x in 0..40 {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                let c = if s.is_multiple_of(11) {
                    WALL
                } else {
                    (s % 9 + 1) as u8
                };
                cost.set(UVec2::new(x, y), c).unwrap();
            }
        }
        let goal = UVec2::new(20, 15);
        cost.set(goal, 1).unwrap();
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(false);
            let mut f = IntegrationField::new(*cost.grid(), model);
            let stats = b.build_into(&cost, &[goal], model, &mut f).unwrap();
            let reachable = (0..cost.grid().len())
                .filter(|&i| f.get(cost.grid().cell(i)).is_some())
                .count();
            assert!(reachable > 1000, "{reachable}");
            assert_eq!(stats.settled, reachable, "{model:?}");
        }
    }

    #[test]
    fn a_reused_builder_pads_a_map_of_another_shape_afresh() {
        // 4 x 3 and 3 x 4 pad to the same number of cells (30) but not the same rows: the
        // border must be walled again for the second, or the wave walks off the map.
        for sweeps in [true, false] {
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(sweeps);
            for model in [CostModel::TenFourteen, CostModel::Octile] {
                for (w, h) in [(4, 3), (3, 4), (4, 3), (2, 7), (7, 2)] {
                    let cost = open(w, h);
                    let goal = [UVec2::new(w - 1, 0)];
                    let reused = b.build(&cost, &goal, model).unwrap();
                    let fresh = IntegrationBuilder::new()
                        .build(&cost, &goal, model)
                        .unwrap();
                    assert_eq!(reused, fresh, "{w}x{h}, sweeps {sweeps}");
                }
            }
        }
    }

    #[test]
    fn a_seed_on_a_cell_already_queued_in_its_bucket_is_settled_once() {
        // The wave reaches (1, 0) from the goal at 10; the seed worth 9 there joins the same
        // bucket (values 8 to 15) and must not queue the cell a second time: three cells, three
        // settled.
        // In one call (the wave walks corridors) and a cell at a time (it does not).
        let cost = open(3, 1);
        for budget in [usize::MAX, 1] {
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(false);
            b.start_seeded(
                &cost,
                &[(UVec2::new(0, 0), 0), (UVec2::new(1, 0), 9)],
                CostModel::TenFourteen,
            )
            .unwrap();
            let done = loop {
                match b.advance(budget).unwrap() {
                    BuildProgress::Running { .. } => continue,
                    BuildProgress::Done(stats) => break stats,
                }
            };
            assert_eq!(done, WaveStats { settled: 3 }, "budget {budget}");
            let mut f = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
            b.finish_into(&mut f).unwrap();
            assert_eq!(f.values(), &[0, 9, 19]);
        }
    }

    #[test]
    fn open_ground_gives_octile_distances() {
        let cost = open(9, 7);
        let mut b = IntegrationBuilder::new();
        let f = b
            .build(&cost, &[UVec2::new(4, 3)], CostModel::TenFourteen)
            .unwrap();
        for y in 0..7u32 {
            for x in 0..9u32 {
                let dx = x.abs_diff(4);
                let dy = y.abs_diff(3);
                let want = 10 * dx.max(dy) + 4 * dx.min(dy);
                assert_eq!(f.get(UVec2::new(x, y)), Some(want), "({x},{y})");
            }
        }
    }

    #[test]
    fn terrain_of_the_cell_left_prices_the_step() {
        // 3x1 corridor: goal at x=0, swamp (cost 5) in the middle.
        let mut cost = open(3, 1);
        cost.set(UVec2::new(1, 0), 5).unwrap();
        let f = IntegrationBuilder::new()
            .build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen)
            .unwrap();
        assert_eq!(f.values(), &[0, 50, 60]);
    }

    #[test]
    fn walls_and_sealed_rooms_are_unreachable() {
        let mut cost = open(5, 5);
        cost.fill_rect(UVec2::new(0, 2), UVec2::new(4, 2), WALL)
            .unwrap();
        let f = IntegrationBuilder::new()
            .build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen)
            .unwrap();
        assert_eq!(f.get(UVec2::new(0, 2)), None);
        assert_eq!(f.get(UVec2::new(3, 4)), None);
        assert_eq!(f.get(UVec2::new(4, 1)), Some(44));
    }

    #[test]
    fn diagonal_may_not_cut_a_wall_corner() {
        let mut cost = open(2, 2);
        cost.set(UVec2::new(1, 0), WALL).unwrap();
        let f = IntegrationBuilder::new()
            .build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen)
            .unwrap();
        assert_eq!(
            f.get(UVec2::new(1, 1)),
            Some(20),
            "must go round, not cut the corner"
        );
    }

    #[test]
    fn nearest_of_several_goals_wins() {
        let cost = open(11, 1);
        let f = IntegrationBuilder::new()
            .build(
                &cost,
                &[UVec2::new(0, 0), UVec2::new(10, 0), UVec2::new(10, 0)],
                CostModel::TenFourteen,
            )
            .unwrap();
        assert_eq!(f.values(), &[0, 10, 20, 30, 40, 50, 40, 30, 20, 10, 0]);
    }

    #[test]
    fn bad_goals_are_errors() {
        let mut cost = open(3, 3);
        cost.set(UVec2::new(1, 1), WALL).unwrap();
        let mut b = IntegrationBuilder::new();
        let m = CostModel::TenFourteen;
        assert_eq!(b.build(&cost, &[], m), Err(IntegrationError::NoGoals));
        assert!(matches!(
            b.build(&cost, &[UVec2::new(3, 0)], m),
            Err(IntegrationError::GoalOutside(_))
        ));
        assert_eq!(
            b.build(&cost, &[UVec2::new(1, 1)], m),
            Err(IntegrationError::GoalOnWall { x: 1, y: 1 })
        );
        let mut small = IntegrationField::new(Grid::new(2, 2).unwrap(), m);
        assert!(matches!(
            b.build_into(&cost, &[UVec2::new(0, 0)], m, &mut small),
            Err(IntegrationError::SizeMismatch(_))
        ));
    }

    #[test]
    fn overflow_is_reported_not_wrapped() {
        // A 1-wide serpentine is not needed: a long straight corridor of cost-254 swamp in the
        // octile model passes 2^32 raw units after about 1220 cells.
        let mut cost = open(2000, 1);
        cost.fill_rect(UVec2::new(0, 0), UVec2::new(1999, 0), 254)
            .unwrap();
        let r = IntegrationBuilder::new().build(&cost, &[UVec2::new(0, 0)], CostModel::Octile);
        assert!(matches!(r, Err(IntegrationError::Overflow { .. })), "{r:?}");
        // The 10-14 model has room for it.
        let f = IntegrationBuilder::new()
            .build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen)
            .unwrap();
        assert_eq!(f.get(UVec2::new(1999, 0)), Some(1999 * 2540));
    }

    /// Numbers that only need to vary (xorshift), from `seed`.
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed | 1;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    /// Square rooms of `size` × `size` cells in a `rooms` × `rooms` grid, walls one cell thick
    /// between them: neighbouring rooms joined by a one-cell door where `maze(rooms, seed)`
    /// opens the wall between its cells, and by a second door one time in `loops` (a tree
    /// of rooms with some loops, as `8room_000` has).
    fn rooms_and_doors(rooms: u32, size: u32, loops: u64, seed: u64) -> CostField {
        let tree = maze(rooms, seed);
        let side = rooms * (size + 1) + 1;
        let mut cost = CostField::new(Grid::new(side, side).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::splat(side - 1), WALL)
            .unwrap();
        let mut next = xorshift(seed);
        for ry in 0..rooms {
            for rx in 0..rooms {
                let (x0, y0) = (rx * (size + 1) + 1, ry * (size + 1) + 1);
                let last = UVec2::new(x0 + size - 1, y0 + size - 1);
                cost.fill_rect(UVec2::new(x0, y0), last, 1).unwrap();
                let east = tree.get(UVec2::new(2 * rx + 2, 2 * ry + 1)) == Some(1);
                let south = tree.get(UVec2::new(2 * rx + 1, 2 * ry + 2)) == Some(1);
                let (a, b) = ((next() % size as u64) as u32, (next() % size as u64) as u32);
                if rx + 1 < rooms && (east || next().is_multiple_of(loops)) {
                    cost.set(UVec2::new(x0 + size, y0 + a), 1).unwrap();
                }
                if ry + 1 < rooms && (south || next().is_multiple_of(loops)) {
                    cost.set(UVec2::new(x0 + b, y0 + size), 1).unwrap();
                }
            }
        }
        cost
    }

    /// A maze of one-cell corridors (a depth-first backtracker over a lattice of rooms), so
    /// ways wind up and down all over: the sweeps hand such maps to the wave.
    fn maze(rooms: u32, seed: u64) -> CostField {
        let side = 2 * rooms + 1;
        let mut cost = CostField::new(Grid::new(side, side).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::splat(side - 1), WALL)
            .unwrap();
        let mut next = xorshift(seed);
        let mut seen = vec![false; (rooms * rooms) as usize];
        let mut stack = vec![(0u32, 0u32)];
        seen[0] = true;
        cost.set(UVec2::new(1, 1), 1).unwrap();
        while let Some(&(x, y)) = stack.last() {
            let options: Vec<(u32, u32)> = [(0i32, -1i32), (1, 0), (0, 1), (-1, 0)]
                .iter()
                .map(|&(dx, dy)| (x as i32 + dx, y as i32 + dy))
                .filter(|&(nx, ny)| nx >= 0 && ny >= 0 && nx < rooms as i32 && ny < rooms as i32)
                .map(|(nx, ny)| (nx as u32, ny as u32))
                .filter(|&(nx, ny)| !seen[(ny * rooms + nx) as usize])
                .collect();
            if options.is_empty() {
                stack.pop();
                continue;
            }
            let (nx, ny) = options[(next() % options.len() as u64) as usize];
            seen[(ny * rooms + nx) as usize] = true;
            cost.set(UVec2::new(2 * nx + 1, 2 * ny + 1), 1).unwrap();
            cost.set(UVec2::new(x + nx + 1, y + ny + 1), 1).unwrap();
            stack.push((nx, ny));
        }
        cost
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn waves_over_a_maze_they_fill_go_without_their_footprint_and_give_the_same_field() {
        let cost = maze(24, 5);
        let m = CostModel::TenFourteen;
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        let mut field = IntegrationField::new(*cost.grid(), m);
        let mut flow = crate::FlowField::new(*cost.grid());
        let mut recorded = Vec::new();
        for k in 0..2 * UNMARKED_WAVES as usize {
            let goal = UVec2::new(1 + 2 * (k as u32 * 7 % 24), 1 + 2 * (k as u32 * 11 % 24));
            b.build_into(&cost, &[goal], m, &mut field).unwrap();
            b.flow_into(&mut flow).unwrap();
            recorded.push(b.wave.mark);
            assert_eq!(field, first_build(&cost, &[goal], m), "build {k}");
            assert_eq!(
                flow,
                crate::FlowField::from_integration(&cost, &field).unwrap()
            );
        }
        // The first wave records its footprint, the whole maze; the next sixteen go without,
        // then one records it again.
        let expected: Vec<bool> = (0..recorded.len())
            .map(|k| k % (UNMARKED_WAVES as usize + 1) == 0)
            .collect();
        assert_eq!(recorded, expected);
        // A map whose waves reach a small part keeps recording (and using) the footprint.
        let mut walled = maze(24, 5);
        walled
            .fill_rect(UVec2::new(0, 8), UVec2::new(48, 8), WALL)
            .unwrap();
        for k in 0..4 {
            let goal = UVec2::new(1 + 2 * k, 1);
            b.build_into(&walled, &[goal], m, &mut field).unwrap();
            assert!(b.wave.mark && b.footprint_is_small(), "build {k}");
            assert_eq!(field, first_build(&walled, &[goal], m));
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn walks_fork_at_junctions_on_no_loop_from_the_second_wave_over_a_map() {
        let m = CostModel::TenFourteen;
        // A maze without loops, then the same with loops cut through its walls and rough
        // ground in places.
        let tree = maze(30, 9);
        let mut looped = maze(30, 9);
        let mut next = xorshift(17);
        for _ in 0..40 {
            let cell = UVec2::new(1 + (next() % 59) as u32, 1 + (next() % 59) as u32);
            looped.set(cell, 1).unwrap();
        }
        for _ in 0..300 {
            let cell = UVec2::new(1 + (next() % 59) as u32, 1 + (next() % 59) as u32);
            if looped.get(cell) != Some(WALL) {
                looped.set(cell, 1 + (next() % 6) as u8).unwrap();
            }
        }
        for (name, cost) in [("tree", &tree), ("looped", &looped)] {
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(false);
            let mut field = IntegrationField::new(*cost.grid(), m);
            let mut flow = crate::FlowField::new(*cost.grid());
            let mut queued = Vec::new();
            for k in 0..4u32 {
                let goals = [
                    UVec2::new(1 + 2 * (k * 7 % 30), 1 + 2 * (k * 11 % 30)),
                    UVec2::new(1 + 2 * (k * 13 % 30), 59),
                ];
                let goals = &goals[..1 + (k as usize % 2)];
                b.build_into(cost, goals, m, &mut field).unwrap();
                b.flow_into(&mut flow).unwrap();
                assert_eq!(field, first_build(cost, goals, m), "{name}, build {k}");
                assert_eq!(
                    flow,
                    crate::FlowField::from_integration(cost, &field).unwrap(),
                    "{name}, build {k}"
                );
                queued.push(b.wave.queued);
            }
            // The first wave queues the junctions its walks reach; the next ones over a maze
            // without loops fork there and queue nothing at all. The maze with loops has too
            // few cells on no loop for forks to pay: its waves queue as the first did.
            assert!(b.trees.valid, "{name}");
            assert!(queued[0] > 50, "{name}: {queued:?}");
            if name == "tree" {
                assert!(b.wave.forking);
                assert!(queued[1..].iter().all(|&q| q == 0), "{name}: {queued:?}");
            } else {
                assert!(!b.wave.forking && !b.trees.mostly());
                assert!(queued[1..].iter().all(|&q| q > 50), "{queued:?}");
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_wave_without_its_footprint_left_half_done_leaves_nothing_behind() {
        // A sliced wave that records no footprint, dropped halfway (a new goal, an edit between
        // two slices): the next build must not find the cells it wrote among those it takes
        // for unreached (it did, and kept their values).
        let cost = maze(24, 5);
        let m = CostModel::TenFourteen;
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        let mut field = IntegrationField::new(*cost.grid(), m);
        b.build_into(&cost, &[UVec2::new(1, 1)], m, &mut field)
            .unwrap();
        for k in 0..4 {
            b.start(&cost, &[UVec2::new(47, 47)], m).unwrap();
            assert!(matches!(b.advance(200), Ok(BuildProgress::Running { .. })));
            assert!(!b.wave.mark, "slice {k} records no footprint");
            let goal = [UVec2::new(1 + 2 * k, 23)];
            b.build_into(&cost, &goal, m, &mut field).unwrap();
            assert_eq!(field, first_build(&cost, &goal, m), "build {k}");
        }
    }

    #[test]
    // Thousands of cells per build, several builds: hours under Miri (the scalar paths it
    // checks run in the smaller tests).
    #[cfg_attr(miri, ignore)]
    fn winding_maps_go_to_the_wave_and_give_the_same_field() {
        let cost = maze(256, 7);
        let goal = [UVec2::new(1, 1)];
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let mut wave = IntegrationBuilder::new();
            wave.set_sweeps(false);
            let want = wave.build(&cost, &goal, model).unwrap();
            let mut b = IntegrationBuilder::new();
            // The first build sweeps until the budget, then hands over; the next ones go
            // straight to the wave; all equal the wave's field.
            for _ in 0..3 {
                assert_eq!(b.build(&cost, &goal, model).unwrap(), want);
                assert!(b.sweep.handed_over_lately());
            }
            // Time-sliced, the hand-over happens between calls.
            let mut sliced = IntegrationBuilder::new();
            sliced.start(&cost, &goal, model).unwrap();
            while let BuildProgress::Running { .. } = sliced.advance(97).unwrap() {}
            let mut got = IntegrationField::new(*cost.grid(), model);
            sliced.finish_into(&mut got).unwrap();
            assert_eq!(got, want);
        }
        // An open map of the same size is swept.
        let open = open(81, 81);
        let mut b = IntegrationBuilder::new();
        let mut wave = IntegrationBuilder::new();
        wave.set_sweeps(false);
        let m = CostModel::TenFourteen;
        assert_eq!(
            b.build(&open, &goal, m).unwrap(),
            wave.build(&open, &goal, m).unwrap()
        );
        assert!(!b.sweep.handed_over_lately());
    }

    /// The field of a builder that has never built before (so crosses no rooms).
    fn first_build(cost: &CostField, goals: &[UVec2], model: CostModel) -> IntegrationField {
        let mut fresh = IntegrationBuilder::new();
        fresh.set_sweeps(false);
        fresh.build(cost, goals, model).unwrap()
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn waves_cross_rooms_and_fill_them_with_the_values_of_a_wave_through_every_cell() {
        let (n, side) = (12, 7);
        let cost = rooms_and_doors(n, side, 4, 3);
        let pitch = side + 1;
        let door = (0..cost.width())
            .map(|x| UVec2::new(x, 1 + side / 2))
            .find(|&p| p.x % pitch == 0 && p.x > 0 && cost.is_walkable(p))
            .expect("a door in the middle row of the first rooms");
        let goal_sets: [&[UVec2]; 5] = [
            &[UVec2::new(3, 3)], // inside a room
            &[door],             // on a door between two rooms
            &[UVec2::new(1, 1)], // a room's corner
            &[UVec2::new(3, 3), UVec2::new(60, 70), door],
            &[UVec2::new(n * pitch - 1, n * pitch - 1)],
        ];
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            // (With the sweeps off, rooms are looked for without waiting for the sweeps to find
            // the map winding.)
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(false);
            let mut flow = crate::FlowField::new(*cost.grid());
            for (k, goals) in goal_sets.iter().enumerate() {
                let want = first_build(&cost, goals, model);
                let got = b.build(&cost, goals, model).unwrap();
                assert_eq!(got, want, "goals {goals:?}");
                // From the second build over the unchanged map on, the wave crosses rooms; a
                // room holding a goal is filled from it and from its entries, as the others are
                // from their entries.
                assert_eq!(b.wave.rooms, k > 0, "goals {goals:?}");
                let reachable = want.values().iter().filter(|&&v| v != UNREACHABLE).count();
                assert_eq!(b.wave.settled, reachable);
                b.flow_into(&mut flow).unwrap();
                assert_eq!(
                    flow,
                    crate::FlowField::from_integration(&cost, &want).unwrap()
                );
            }
        }
        // Every room is found whole, its entries the cells beside its doors.
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        for _ in 0..2 {
            b.build(&cost, &[UVec2::new(3, 3)], CostModel::TenFourteen)
                .unwrap();
        }
        let (rooms, entries, interior) = b.rooms.counts();
        let room_cells = (n * n * side * side) as usize;
        let doors = cost.walkable_count() - room_cells;
        assert_eq!(rooms, (n * n) as usize);
        assert_eq!(entries + interior, room_cells);
        assert!(
            (doors..=2 * doors).contains(&entries),
            "{entries} entries, {doors} doors"
        );
        // A change to the map takes the rooms away until it is built again unchanged.
        let mut changed = cost.clone();
        changed.set(UVec2::new(4, 4), WALL).unwrap();
        let goal = [UVec2::new(60, 60)];
        let want = first_build(&changed, &goal, CostModel::TenFourteen);
        assert_eq!(
            b.build(&changed, &goal, CostModel::TenFourteen).unwrap(),
            want
        );
        assert!(!b.wave.rooms);
        assert_eq!(
            b.build(&changed, &goal, CostModel::TenFourteen).unwrap(),
            want
        );
        assert!(b.wave.rooms);
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn waves_over_the_graph_keep_the_last_values_and_clear_what_they_no_longer_reach() {
        // Two halves of rooms with a wall between them: a build from the other half keeps the
        // distances of the last (no reset), so the rooms and nodes that half reached must be
        // cleared by the build itself.
        let (n, side) = (6, 7);
        let mut cost = rooms_and_doors(n, side, 4, 7);
        let wall_row = 3 * (side + 1);
        cost.fill_rect(
            UVec2::new(0, wall_row),
            UVec2::new(cost.width() - 1, wall_row),
            WALL,
        )
        .unwrap();
        let (top, bottom) = (UVec2::new(3, 3), UVec2::new(3, wall_row + 3));
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(false);
            let mut flow = crate::FlowField::new(*cost.grid());
            for (k, goal) in [top, top, bottom, top, bottom, bottom]
                .into_iter()
                .enumerate()
            {
                let kept = b.graph_wrote != 0;
                let want = first_build(&cost, &[goal], model);
                assert_eq!(b.build(&cost, &[goal], model).unwrap(), want, "build {k}");
                b.flow_into(&mut flow).unwrap();
                assert_eq!(
                    flow,
                    crate::FlowField::from_integration(&cost, &want).unwrap(),
                    "build {k}"
                );
                // From the second build on the wave goes over the graph, and from the third on
                // it keeps the distances of the one before.
                assert_eq!((b.use_graph, kept), (k > 0, k > 1), "build {k}");
                assert!(!b.dist_stale);
            }
            // The distances hold nothing of the half the last builds did not reach: a wave
            // that resets only the last footprint, as a time-sliced build's does, finds them
            // unreachable.
            let elsewhere = UVec2::new(10, 10);
            b.start(&cost, &[elsewhere], model).unwrap();
            while let BuildProgress::Running { .. } = b.advance(100).unwrap() {}
            let mut sliced = IntegrationField::new(*cost.grid(), model);
            b.finish_into(&mut sliced).unwrap();
            assert_eq!(sliced, first_build(&cost, &[elsewhere], model));
            // A build that fails after keeping them resets them all for the next.
            let limit = UNREACHABLE - 1 - model.diagonal() * WALL as u32;
            let seeds = [(UVec2::new(9, 9), limit - 40)];
            b.build(&cost, &[top], model).unwrap();
            assert!(b.graph_wrote != 0);
            assert!(matches!(
                b.build_seeded(&cost, &seeds, model),
                Err(IntegrationError::Overflow { .. })
            ));
            for goal in [bottom, top] {
                let want = first_build(&cost, &[goal], model);
                assert_eq!(b.build(&cost, &[goal], model).unwrap(), want);
            }
        }
    }

    #[test]
    fn rooms_amid_open_ground_are_crossed_without_the_graph() {
        // A room of plain ground (100 × 100) beside as much rough ground, which holds no room:
        // the rough cells would all be nodes of the graph, past its budget, so the wave crosses
        // the room over the distances, as before the graph.
        let mut cost = open(200, 100);
        cost.fill_rect(UVec2::new(100, 0), UVec2::new(199, 99), 2)
            .unwrap();
        let goal = [UVec2::new(150, 50)];
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let want = first_build(&cost, &goal, model);
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(false);
            for _ in 0..2 {
                assert_eq!(b.build(&cost, &goal, model).unwrap(), want);
            }
            assert!(b.wave.rooms && !b.use_graph);
            assert!(b.graph.node_at(101 * 202 + 151).is_none());
        }
    }

    #[test]
    fn a_room_with_a_corridor_along_its_top_is_found_whole() {
        // Rock, a room of 12 × 12 cells (x 5..=16, y 6..=17), and a corridor down from the top
        // edge that turns along the room's top row (y 5, x 5..=10), as the dungeon generator's
        // corridors do: the rectangle from the corridor's first cell is a strip of the room
        // open on its long side, and must not keep the room from being found whole.
        let mut cost = open(30, 30);
        for y in 0..30 {
            for x in 0..30 {
                let room = (5..=16).contains(&x) && (6..=17).contains(&y);
                let along = y == 5 && (5..=10).contains(&x);
                let down = x == 10 && y < 5;
                if !(room || along || down) {
                    cost.set(UVec2::new(x, y), WALL).unwrap();
                }
            }
        }
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        for goal in [UVec2::new(10, 0), UVec2::new(10, 0), UVec2::new(10, 2)] {
            let want = first_build(&cost, &[goal], CostModel::TenFourteen);
            assert_eq!(
                b.build(&cost, &[goal], CostModel::TenFourteen).unwrap(),
                want
            );
        }
        assert!(b.wave.rooms);
        let (rooms, entries, interior) = b.rooms.counts();
        assert_eq!((rooms, entries + interior), (1, 12 * 12));
        // Its entries: the six cells under the corridor.
        assert_eq!(entries, 6);
    }

    #[test]
    fn every_fill_kernel_gives_the_rooms_the_values_of_the_plain_fill() {
        // Rooms seven cells wide (one masked vector a row, or less than AVX2's eight lanes),
        // eight wide (AVX2's eight lanes) and 20 wide (a whole vector and a masked one; for
        // AVX2, two groups of eight and one over cells done).
        for (side, goal) in [
            (7, UVec2::new(3, 3)),
            (8, UVec2::new(4, 3)),
            (20, UVec2::new(5, 30)),
        ] {
            let cost = rooms_and_doors(5, side, 3, 7);
            for model in [CostModel::TenFourteen, CostModel::Octile] {
                let mut b = IntegrationBuilder::new();
                b.set_sweeps(false);
                for _ in 0..2 {
                    b.build(&cost, &[goal], model).unwrap();
                }
                assert!(b.wave.rooms, "side {side}");
                // The values of a plain wave through every cell, padded as the builder keeps them.
                let reference = first_build(&cost, &[goal], model);
                let pw = b.padded_width;
                let want = |c: usize| reference.values()[(c / pw - 1) * (pw - 2) + c % pw - 1];
                // Every cell but the entries garbled (3 is no sum of steps in either model).
                let mut garbled = b.dist.clone();
                for (c, v) in garbled.iter_mut().enumerate() {
                    if b.rooms.entry_at(c).is_none() {
                        *v = 3;
                    }
                }
                let prices = (model.straight(), model.diagonal());
                let limit = b.wave.limit;
                let mut plain = None;
                for (name, kernel) in rooms::Rooms::fill_kernels() {
                    let mut dist = garbled.clone();
                    let mut touched = vec![0u64; b.touched.len()];
                    let mut sources = Vec::new();
                    let mut holds = Vec::new();
                    let fill = b.rooms.prepare_fill(
                        &mut dist,
                        &mut touched,
                        &mut holds,
                        pw,
                        prices,
                        limit,
                        &mut sources,
                    );
                    let filled = kernel(&b.rooms, fill).unwrap();
                    let written: Vec<usize> =
                        (0..dist.len()).filter(|&c| dist[c] != garbled[c]).collect();
                    assert_eq!(written.len(), filled, "{name}, side {side}");
                    assert!(filled > 0);
                    for &c in &written {
                        assert_eq!(dist[c], want(c), "{name}, side {side}, cell {c}");
                        assert!(
                            touched[c / TOUCHED_BLOCK / 64] & 1 << (c / TOUCHED_BLOCK % 64) != 0
                        );
                    }
                    match &plain {
                        None => plain = Some(dist),
                        Some(p) => assert_eq!(&dist, p, "{name}, side {side}"),
                    }
                }
            }
        }
    }

    #[test]
    fn open_ground_and_time_slices_do_not_cross_rooms() {
        // An open map is swept without looking for rooms. With the sweeps off, it is one big
        // rectangle, which a build over the map unchanged fills from the goal in closed form.
        let cost = open(100, 100);
        let want = first_build(&cost, &[UVec2::new(50, 50)], CostModel::TenFourteen);
        for sweeps in [true, false] {
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(sweeps);
            for _ in 0..3 {
                let got = b
                    .build(&cost, &[UVec2::new(50, 50)], CostModel::TenFourteen)
                    .unwrap();
                assert_eq!(got, want);
                let crossed = !sweeps && b.rows_changed == 0;
                assert_eq!((b.wave.rooms, b.rooms_ready), (crossed, crossed));
                assert_eq!(b.rooms.valid, !sweeps && b.rows_changed == 0);
            }
        }
        // Time-sliced builds settle exactly their budgets: no rooms filled at once.
        let rooms = rooms_and_doors(6, 7, 4, 1);
        let mut b = IntegrationBuilder::new();
        let goal = [UVec2::new(3, 3)];
        for _ in 0..3 {
            b.start(&rooms, &goal, CostModel::TenFourteen).unwrap();
            while let BuildProgress::Running { .. } = b.advance(100).unwrap() {
                assert!(!b.wave.rooms);
            }
            let mut got = IntegrationField::new(*rooms.grid(), CostModel::TenFourteen);
            b.finish_into(&mut got).unwrap();
            assert_eq!(got, first_build(&rooms, &goal, CostModel::TenFourteen));
        }
    }

    #[test]
    fn a_wave_crossing_rooms_past_the_range_names_the_cell_a_plain_wave_names() {
        let cost = rooms_and_doors(4, 7, 4, 5);
        let door = (0..cost.width())
            .flat_map(|x| (0..cost.height()).map(move |y| UVec2::new(x, y)))
            .find(|&p| p.x % 8 == 0 && p.x > 0 && cost.is_walkable(p))
            .expect("a door in a wall between two rooms");
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let limit = UNREACHABLE - 1 - model.diagonal() * WALL as u32;
            let straight = model.straight();
            // A seed in a room just under the limit: the wave passes it within a step or two
            // (the room is left out). A seed on a door: the entries beside it stay under the
            // limit, their crossings pass it, so the wave that crosses rooms fails at another
            // entry than a plain wave, and must start again to name the plain wave's cell.
            for (seed, below) in [
                (UVec2::new(1, 1), 5),
                (UVec2::new(9, 9), 40),
                (door, straight + straight / 2),
            ] {
                let seeds = [(seed, limit - below)];
                let mut fresh = IntegrationBuilder::new();
                fresh.set_sweeps(false);
                let want = fresh.build_seeded(&cost, &seeds, model);
                assert!(matches!(want, Err(IntegrationError::Overflow { .. })));
                let mut b = IntegrationBuilder::new();
                b.set_sweeps(false);
                b.build(&cost, &[UVec2::new(20, 20)], model).unwrap();
                assert_eq!(b.build_seeded(&cost, &seeds, model), want);
                // And the builder goes on building.
                assert_eq!(
                    b.build(&cost, &[UVec2::new(3, 3)], model).unwrap(),
                    first_build(&cost, &[UVec2::new(3, 3)], model)
                );
                assert!(b.wave.rooms);
            }
        }
    }

    #[test]
    fn a_field_written_again_is_cleared_where_the_last_one_reached_and_this_one_does_not() {
        // Two maps of one size: the second walls off most of what the first reaches. A field
        // written last from a footprint, by this builder or another, is cleared block by block;
        // one changed in between (a repair) is filled whole.
        // The rooms in a corner of a map mostly of rock, so that the wave's footprint is small.
        let rooms = rooms_and_doors(6, 7, 4, 2);
        let mut a = open(160, 160);
        a.fill_rect(UVec2::ZERO, UVec2::splat(159), WALL).unwrap();
        for (i, &t) in rooms.costs().iter().enumerate() {
            let p = rooms.grid().cell(i);
            a.set(p, t).unwrap();
        }
        let mut b_map = a.clone();
        b_map
            .fill_rect(UVec2::new(0, 10), UVec2::new(48, 12), WALL)
            .unwrap();
        let goal = [UVec2::new(3, 3)];
        let m = CostModel::TenFourteen;
        let mut builder = IntegrationBuilder::new();
        let mut field = IntegrationField::new(*a.grid(), m);
        for cost in [&a, &a, &b_map, &a, &b_map, &b_map] {
            builder.build_into(cost, &goal, m, &mut field).unwrap();
            assert_eq!(field, first_build(cost, &goal, m));
            assert!(field.footprint_valid);
            assert_eq!(field.footprint, builder.touched);
        }
        // The sweeps found this map of rock winding: the last build, over the map unchanged,
        // crossed its rooms.
        assert!(builder.sweep.winding() && builder.wave.rooms);
        let mut other = IntegrationBuilder::new();
        other.set_sweeps(false);
        other.build_into(&a, &goal, m, &mut field).unwrap();
        assert_eq!(field.footprint, other.touched);
        builder.build_into(&b_map, &goal, m, &mut field).unwrap();
        assert_eq!(field, first_build(&b_map, &goal, m));
        field.values_mut()[5] = 7;
        assert!(!field.footprint_valid);
        builder.build_into(&b_map, &goal, m, &mut field).unwrap();
        assert_eq!(field, first_build(&b_map, &goal, m));
    }

    #[test]
    fn spans_skip_walls_only_where_the_field_was_written_over_the_same_map() {
        // A room in a map of rock: the wave's spans are the room's rows, without the walls
        // that share their blocks. A wall put at the end of a row keeps the footprint's
        // blocks, so the spans over the changed map skip a cell the field holds a value in:
        // the field, written over the map before, is filled whole first.
        let mut a = CostField::new(Grid::new(160, 160).unwrap());
        a.fill_rect(UVec2::ZERO, UVec2::splat(159), WALL).unwrap();
        a.fill_rect(UVec2::new(20, 20), UVec2::new(29, 29), 1)
            .unwrap();
        let mut b_map = a.clone();
        b_map.set(UVec2::new(29, 25), WALL).unwrap();
        let goal = [UVec2::new(22, 22)];
        let m = CostModel::TenFourteen;
        let mut builder = IntegrationBuilder::new();
        let mut field = IntegrationField::new(*a.grid(), m);
        for cost in [&a, &a, &b_map, &b_map, &a] {
            builder.build_into(cost, &goal, m, &mut field).unwrap();
            assert!(builder.spans_listed);
            assert_eq!(field, first_build(cost, &goal, m));
            assert_eq!(field.walls_of, cost.version());
        }
        let spans: Vec<_> = builder.spans.iter().filter(|s| s.0 == 26).collect();
        assert_eq!(spans, [&(26, 21, 30)], "row 25's span is the room's");
        assert_eq!(builder.touched, {
            let mut other = IntegrationBuilder::new();
            other.build_into(&b_map, &goal, m, &mut field).unwrap();
            other.touched
        });
    }

    #[test]
    fn seeds_near_the_sweeps_ceiling_give_the_waves_field() {
        // Seeds just under, at and just over the sweeps' "no value yet" marker, beside swamp
        // (terrain 254, the dearest step): the sweeps take a seed only while its neighbours'
        // values stay under the marker; the rest go to the wave. Either way the field is the
        // wave's own.
        use sweep::INF;
        let mut row = open(4, 2);
        row.fill_rect(UVec2::new(1, 0), UVec2::new(3, 1), 254)
            .unwrap();
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            for seed in [INF - 3600, INF - 200, INF - 5, INF, INF + 100] {
                let seeds = [(UVec2::ZERO, seed)];
                let mut wave = IntegrationBuilder::new();
                wave.set_sweeps(false);
                let want = wave.build_seeded(&row, &seeds, model).unwrap();
                let got = IntegrationBuilder::new().build_seeded(&row, &seeds, model);
                assert_eq!(got.unwrap(), want, "{model:?}, seed {seed}");
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn maps_mostly_rock_go_to_the_wave_after_one_sweep_with_the_same_field() {
        use sweep::RETRY_AFTER;
        let m = CostModel::TenFourteen;
        // A 10 × 10 room in 200 × 200 of rock: the sweeps visit every row of every pass for
        // 100 cells reached. Rough ground: a room of plain ground holding the goal would be
        // filled from it in closed form, with neither sweeps nor wave.
        let mut cost = CostField::new(Grid::new(200, 200).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::splat(199), WALL)
            .unwrap();
        cost.fill_rect(UVec2::splat(90), UVec2::splat(99), 2)
            .unwrap();
        let goal = [UVec2::new(95, 94)];
        let mut b = IntegrationBuilder::new();
        // The footprint of either build: the room's ten rows, each a span of whole blocks
        // around it.
        let footprint = |b: &IntegrationBuilder| {
            let spans: Vec<(usize, usize, usize)> =
                b.touched_spans().expect("a footprint").collect();
            let rows: Vec<usize> = spans.iter().map(|s| s.0).collect();
            assert_eq!(rows, (91..=100).collect::<Vec<_>>());
            for &(y, a, last) in &spans {
                let row = y * 202;
                assert_eq!((row + a) % TOUCHED_BLOCK, 0, "row {y} starts a block");
                assert_eq!((row + last + 1) % TOUCHED_BLOCK, 0, "row {y} ends a block");
                assert!(
                    a <= 91 && last >= 100 && last - a < 3 * TOUCHED_BLOCK,
                    "{y}: {a}..={last}"
                );
            }
        };
        let swept = b.build(&cost, &goal, m).unwrap();
        assert_eq!(
            b.sweep.skips_left(),
            RETRY_AFTER,
            "the next builds go to the wave"
        );
        footprint(&b);
        let waved = b.build(&cost, &goal, m).unwrap();
        assert_eq!(b.sweep.skips_left(), RETRY_AFTER - 1);
        assert_eq!(waved, swept);
        footprint(&b);
        // A goal sealed alone in the rock is in the footprint too, swept or waved.
        let mut pocket = CostField::new(Grid::new(200, 200).unwrap());
        pocket
            .fill_rect(UVec2::ZERO, UVec2::splat(199), WALL)
            .unwrap();
        pocket.set(UVec2::new(64, 50), 1).unwrap();
        for sweeps in [true, false] {
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(sweeps);
            let mut field = IntegrationField::new(*pocket.grid(), m);
            b.build_into(&pocket, &[UVec2::new(64, 50)], m, &mut field)
                .unwrap();
            assert!(b.touched_spans().is_some());
            let finite: Vec<usize> = (0..field.values().len())
                .filter(|&i| field.values()[i] != UNREACHABLE)
                .collect();
            assert_eq!(finite, [50 * 200 + 64], "sweeps {sweeps}");
            let mut flow = crate::FlowField::new(*pocket.grid());
            b.flow_into(&mut flow).unwrap();
            assert_eq!(
                flow.bytes()[50 * 200 + 64],
                crate::FLOW_GOAL,
                "sweeps {sweeps}"
            );
        }
        // Open ground of the same size stays with the sweeps.
        let mut open_builder = IntegrationBuilder::new();
        open_builder.build(&open(200, 200), &goal, m).unwrap();
        assert_eq!(open_builder.sweep.skips_left(), 0);
    }

    /// The same rule when the sweeps run in bands on several threads (maps of at least 256 rows
    /// and 2^18 cells): a room in rock goes to the wave after one sweep, open ground stays.
    #[test]
    #[cfg(feature = "parallel")]
    #[cfg_attr(miri, ignore)]
    fn maps_mostly_rock_go_to_the_wave_on_several_threads_too() {
        use sweep::RETRY_AFTER;
        let m = CostModel::Octile;
        let mut cost = CostField::new(Grid::new(600, 600).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::splat(599), WALL)
            .unwrap();
        // Rough ground, as above.
        cost.fill_rect(UVec2::splat(290), UVec2::splat(299), 2)
            .unwrap();
        let goal = [UVec2::new(295, 294)];
        let mut wave = IntegrationBuilder::new();
        wave.set_sweeps(false);
        let want = wave.build(&cost, &goal, m).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            let mut b = IntegrationBuilder::new();
            let swept = b.build(&cost, &goal, m).unwrap();
            assert_eq!(swept, want);
            assert_eq!(
                b.sweep.skips_left(),
                RETRY_AFTER,
                "the next builds go to the wave"
            );
            assert_eq!(b.build(&cost, &goal, m).unwrap(), want);
            assert_eq!(b.sweep.skips_left(), RETRY_AFTER - 1);
            let mut open_builder = IntegrationBuilder::new();
            open_builder.build(&open(600, 600), &goal, m).unwrap();
            assert_eq!(
                open_builder.sweep.skips_left(),
                0,
                "open ground stays swept"
            );
        });
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn after_a_hand_over_only_that_size_skips_the_sweeps_and_only_for_a_while() {
        use sweep::RETRY_AFTER;
        let cost = maze(64, 3);
        let goal = [UVec2::new(1, 1)];
        let m = CostModel::TenFourteen;
        let mut b = IntegrationBuilder::new();
        b.build(&cost, &goal, m).unwrap();
        assert_eq!(b.sweep.skips_left(), RETRY_AFTER, "the maze is handed over");
        // A map of another size is swept as ever, and the count for the maze's size stays.
        b.build(&open(40, 30), &goal, m).unwrap();
        assert_eq!(b.sweep.skips_left(), RETRY_AFTER);
        // The next builds of the maze's size go straight to the wave, counting down ...
        for k in 1..=RETRY_AFTER {
            b.build(&cost, &goal, m).unwrap();
            assert_eq!(b.sweep.skips_left(), RETRY_AFTER - k);
        }
        // ... and then the sweeps are tried again, hand over again and wait twice as long, and
        // so on up to RETRY_AFTER << MAX_BACKOFF.
        for wait in [2, 4, 8, 16, 16].map(|k| k * RETRY_AFTER) {
            b.build(&cost, &goal, m).unwrap();
            assert_eq!(b.sweep.skips_left(), wait);
            for _ in 0..wait {
                b.build(&cost, &goal, m).unwrap();
            }
            assert_eq!(b.sweep.skips_left(), 0);
        }
        assert_eq!(RETRY_AFTER << sweep::MAX_BACKOFF, 16 * RETRY_AFTER);
        // Open ground of the maze's size, swept as it should be, brings the wait back to the
        // least.
        let (w, h) = (cost.width(), cost.height());
        b.build(&open(w, h), &goal, m).unwrap();
        assert_eq!(b.sweep.skips_left(), 0, "open ground is swept");
        b.build(&cost, &goal, m).unwrap();
        assert_eq!(b.sweep.skips_left(), RETRY_AFTER);
    }

    #[test]
    fn waves_that_find_few_corridors_skip_the_walks_for_a_while_with_the_same_field() {
        use sweep::RETRY_AFTER;
        let m = CostModel::TenFourteen;
        let goal = [UVec2::new(1, 1)];
        // Open ground with a few one-cell doors: hardly a corridor cell.
        let mut rooms = open(41, 41);
        for k in [10, 20, 30] {
            rooms
                .fill_rect(UVec2::new(k, 0), UVec2::new(k, 40), WALL)
                .unwrap();
            rooms.set(UVec2::new(k, 5 + k), PLAIN).unwrap();
        }
        let maze = maze(20, 5);
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        // The maze (mostly corridor cells) keeps walking.
        let walked_maze = b.build(&maze, &goal, m).unwrap();
        assert!(
            b.wave.walks && b.wave.walked * 2 > b.wave.settled,
            "{:?}",
            b.wave.walked
        );
        assert_eq!(b.walk_skip, 0);
        // The rooms walk once, then skip the walks for RETRY_AFTER waves of their size.
        let walked_rooms = b.build(&rooms, &goal, m).unwrap();
        assert!(b.wave.walks);
        assert!(b.wave.walked * WALKED_SHARE < b.wave.settled);
        assert_eq!(b.walk_skip, RETRY_AFTER);
        for k in 1..=RETRY_AFTER {
            assert_eq!(b.build(&rooms, &goal, m).unwrap(), walked_rooms);
            assert!(!b.wave.walks, "wave {k}");
            assert_eq!(b.walk_skip, RETRY_AFTER - k);
        }
        // Then the walks are tried again (the maze above has the same size: it would keep them).
        assert_eq!(b.build(&rooms, &goal, m).unwrap(), walked_rooms);
        assert!(b.wave.walks);
        let mut sliced = IntegrationBuilder::new();
        sliced.set_sweeps(false);
        sliced.start(&maze, &goal, m).unwrap();
        while let BuildProgress::Running { .. } = sliced.advance(97).unwrap() {}
        let mut out = IntegrationField::new(*maze.grid(), m);
        sliced.finish_into(&mut out).unwrap();
        assert!(!sliced.wave.walks);
        assert_eq!(out, walked_maze);
        // A build the sweeps finish runs no wave: it neither walks nor judges the walks.
        let mut swept = IntegrationBuilder::new();
        swept.build(&open(41, 41), &goal, m).unwrap();
        assert!(!swept.sweep.handed_over_lately(), "swept");
        assert!(!swept.wave.ran && !swept.wave.walks);
        assert_eq!(swept.walk_skip, 0);
    }

    #[test]
    fn sweeps_of_maps_wider_than_one_word_of_marks_equal_the_wave() {
        // 1100 columns need three 64-bit words of marks per row (8 columns a mark); sliced, so
        // the one-thread sweeps build it, with terrain and walls so that rows change again.
        let mut cost = open(1100, 6);
        for x in (7..1090).step_by(13) {
            cost.fill_rect(UVec2::new(x, 1), UVec2::new(x, 4), WALL)
                .unwrap();
            cost.set(UVec2::new(x + 1, 2), 9).unwrap();
        }
        let goal = [UVec2::new(1000, 3)];
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let mut wave = IntegrationBuilder::new();
            wave.set_sweeps(false);
            let want = wave.build(&cost, &goal, model).unwrap();
            let mut b = IntegrationBuilder::new();
            b.start(&cost, &goal, model).unwrap();
            while let BuildProgress::Running { .. } = b.advance(5000).unwrap() {}
            let mut got = IntegrationField::new(*cost.grid(), model);
            b.finish_into(&mut got).unwrap();
            assert_eq!(got, want, "{model:?}");
            assert!(!b.sweep.handed_over_lately(), "swept, not handed over");
        }
    }

    #[test]
    fn a_sliced_sweep_reports_the_columns_it_swept() {
        // An open map the sweeps build: each slice reports more work done than the last.
        let cost = open(300, 200);
        let mut b = IntegrationBuilder::new();
        b.start(&cost, &[UVec2::new(150, 100)], CostModel::Octile)
            .unwrap();
        let mut last = 0;
        let mut slices = 0;
        loop {
            match b.advance(1000).unwrap() {
                BuildProgress::Running { settled } => {
                    assert!(settled > last, "{settled} after {last}");
                    assert!(settled <= last + 1000 + 300, "{settled} after {last}");
                    last = settled;
                    slices += 1;
                }
                BuildProgress::Done(stats) => {
                    assert_eq!(stats.settled, 300 * 200);
                    break;
                }
            }
        }
        // 60,000 cells in slices of about 1,000 columns (the scans along a row beyond the
        // columns a pass looks at are not counted: 50 slices).
        assert!(slices >= 40, "{slices} slices");
    }

    #[test]
    // Thousands of cells per build, several builds: hours under Miri (the scalar paths it
    // checks run in the smaller tests).
    #[cfg_attr(miri, ignore)]
    fn large_maps_swept_in_parallel_bands_equal_the_wave() {
        // Large enough for the parallel rounds (with the `parallel` feature), with terrain,
        // several goals and both models.
        for seed in 1..4u64 {
            let mut cost = crate::maps::scattered_map(700, 420, seed).unwrap();
            cost.fill_rect(UVec2::new(100, 50), UVec2::new(400, 60), 6)
                .unwrap();
            let open: Vec<UVec2> = (0..cost.grid().len())
                .map(|i| cost.grid().cell(i))
                .filter(|&c| cost.is_walkable(c))
                .collect();
            let mut goals: Vec<UVec2> = (0..seed as usize)
                .map(|k| open[(k * 7919 + seed as usize * 104_729) % open.len()])
                .collect();
            // Goals in the top and the bottom band too: bands on either side of the seeds
            // sweep away from them first.
            if seed == 2 {
                goals[0] = open[3];
            }
            if seed == 3 {
                goals.push(open[open.len() - 5]);
            }
            for model in [CostModel::TenFourteen, CostModel::Octile] {
                let mut wave = IntegrationBuilder::new();
                wave.set_sweeps(false);
                let want = wave.build(&cost, &goals, model).unwrap();
                let got = IntegrationBuilder::new()
                    .build(&cost, &goals, model)
                    .unwrap();
                assert_eq!(got, want, "seed {seed} {model:?}");
                // Two to five bands, whatever this machine's thread count.
                #[cfg(feature = "parallel")]
                for threads in [2, 3, 5] {
                    let got = build_on_threads(threads, &cost, &goals, model);
                    assert_eq!(got, want, "seed {seed} {model:?} {threads} threads");
                }
            }
        }
    }

    /// Bands on a map wider than one word of needs per row (64 chunks of 8 columns): each
    /// band's rows of needs must be its own; and on one whose padded rows fill two words exactly
    /// (1022 + 2 columns), where a run of needs ends at a word's last bit. Walls every 40
    /// columns with gaps alternating top and bottom make the sweeps pass needs across the bands'
    /// edges for many rounds.
    #[test]
    #[cfg(feature = "parallel")]
    #[cfg_attr(miri, ignore)]
    fn wide_maps_swept_in_parallel_bands_equal_the_wave() {
        for w in [1250, 1022] {
            wide_map_in_bands(w);
        }
    }

    #[cfg(feature = "parallel")]
    fn wide_map_in_bands(w: u32) {
        let h = 300;
        let mut cost = crate::maps::scattered_map(w, h, 5).unwrap();
        for (k, x) in (20..w - 20).step_by(40).enumerate() {
            let (y0, y1) = if k % 2 == 0 { (0, h - 6) } else { (5, h - 1) };
            cost.fill_rect(UVec2::new(x, y0), UVec2::new(x, y1), WALL)
                .unwrap();
        }
        let goals = [UVec2::new(2, 150), UVec2::new(w - 3, 40)];
        for goal in goals {
            cost.set(goal, 1).unwrap();
        }
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let mut wave = IntegrationBuilder::new();
            wave.set_sweeps(false);
            let want = wave.build(&cost, &goals, model).unwrap();
            for threads in [2, 3] {
                let got = build_on_threads(threads, &cost, &goals, model);
                assert_eq!(got, want, "width {w} {model:?} {threads} threads");
            }
        }
    }

    /// A fresh builder's field, built on a pool of `threads` threads.
    #[cfg(feature = "parallel")]
    fn build_on_threads(
        threads: usize,
        cost: &CostField,
        goals: &[UVec2],
        model: CostModel,
    ) -> IntegrationField {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| IntegrationBuilder::new().build(cost, goals, model).unwrap())
    }

    /// One thread's sweeps stop at their budget: a maze is handed over by `sweep_run` itself
    /// at the end of the first round past it, not swept to the end (and only then judged by
    /// the work it took). The budget is cut to a column a cell, far below a maze's sweeps on
    /// any kernel: the usual budget is not, as a maze's work depends on the kernel (the plain
    /// one marks the cells that changed, the vector ones whole blocks: the plain kernel settles
    /// maze(64, 3) in 8.0 columns a cell, within the budget of 10, the vector ones pass it).
    #[test]
    #[cfg_attr(miri, ignore)]
    fn sweeps_hand_a_maze_over_at_the_budget() {
        let cost = maze(64, 3);
        let goal = [UVec2::new(1, 1)];
        let cells = cost.grid().len() as u64;
        for m in [CostModel::TenFourteen, CostModel::Octile] {
            let mut whole = IntegrationBuilder::new();
            whole.start(&cost, &goal, m).unwrap();
            whole.sweep.set_budget(u64::MAX);
            let outcome = whole.sweep_run(usize::MAX, m);
            assert!(matches!(outcome, sweep::SweepOutcome::Done(_)), "{m:?}");
            let mut b = IntegrationBuilder::new();
            b.start(&cost, &goal, m).unwrap();
            b.sweep.set_budget(cells);
            assert_eq!(b.sweep_run(usize::MAX, m), sweep::SweepOutcome::HandOver);
            assert!(b.sweep.handed_over_lately());
            let (cut, all) = (b.sweep.cursor_work(), whole.sweep.cursor_work());
            assert!(
                cut > cells && cut < all / 2,
                "{m:?}: {cut} of {all} columns"
            );
        }
    }

    /// Rooms joined by one-cell doors, the goal in a far corner: the sweeps need more passes
    /// than on open ground yet finish well before a maze would, and there they beat a wave
    /// through every cell, so a first build (or a time-sliced one) is swept to the end (the
    /// work and times per map are in `docs/benchmarks.md`). One-shot builds over the map once
    /// built go to the wave, which crosses the rooms (see the test above).
    #[test]
    #[cfg_attr(miri, ignore)]
    fn rooms_joined_by_doors_are_swept_to_the_end() {
        let cost = rooms_and_doors(48, 7, 2, 1);
        let side = cost.grid().width();
        let goal = [UVec2::new(side - 2, side - 2)];
        let mut b = IntegrationBuilder::new();
        b.start(&cost, &goal, CostModel::TenFourteen).unwrap();
        let outcome = b.sweep_run(usize::MAX, CostModel::TenFourteen);
        assert!(
            matches!(outcome, sweep::SweepOutcome::Done(_)),
            "{outcome:?}"
        );
        let per_cell = b.sweep.cursor_work() as f64 / b.dist.len() as f64;
        // Several times open ground's work (one or two columns a cell).
        assert!(per_cell > 4.0, "a map that winds: {per_cell}");
        assert!(!b.sweep.handed_over_lately());
        // And the field is the wave's.
        let mut wave = IntegrationBuilder::new();
        wave.set_sweeps(false);
        let expected = wave.build(&cost, &goal, CostModel::TenFourteen).unwrap();
        let got = IntegrationBuilder::new()
            .build(&cost, &goal, CostModel::TenFourteen)
            .unwrap();
        assert_eq!(got.values(), expected.values());
    }

    /// Banded sweeps stop at the same budget as one thread's: a large maze is handed over, not
    /// swept to the end.
    #[test]
    #[cfg(feature = "parallel")]
    #[cfg_attr(miri, ignore)]
    fn banded_sweeps_hand_a_maze_over_at_the_budget() {
        let cost = maze(300, 11);
        let goal = [UVec2::new(1, 1)];
        let m = CostModel::TenFourteen;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            let mut b = IntegrationBuilder::new();
            b.start(&cost, &goal, m).unwrap();
            assert_eq!(b.sweep_run(usize::MAX, m), sweep::SweepOutcome::HandOver);
            assert!(b.sweep.handed_over_lately());
        });
    }

    #[test]
    fn a_builder_swept_in_one_model_then_the_other_equals_fresh_ones() {
        // Open ground with terrain, which the sweeps build: their table of step prices must follow
        // the model from build to build.
        let mut cost = open(40, 30);
        cost.fill_rect(UVec2::new(10, 5), UVec2::new(30, 20), 7)
            .unwrap();
        let goal = [UVec2::new(3, 3)];
        let mut reused = IntegrationBuilder::new();
        for model in [
            CostModel::Octile,
            CostModel::TenFourteen,
            CostModel::Octile,
            CostModel::TenFourteen,
        ] {
            let got = reused.build(&cost, &goal, model).unwrap();
            assert!(!reused.sweep.handed_over_lately(), "swept");
            let mut wave = IntegrationBuilder::new();
            wave.set_sweeps(false);
            assert_eq!(got, wave.build(&cost, &goal, model).unwrap(), "{model:?}");
        }
    }

    /// A maze with every cell also open in a `1 + seed % 4` in 7 scatter, so that it has
    /// corridors, junctions, dead ends and open patches with diagonals.
    fn holed_maze(rooms: u32, seed: u64) -> CostField {
        let mut cost = maze(rooms, seed);
        let side = 2 * rooms + 1;
        let mut next = xorshift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for y in 0..side {
            for x in 0..side {
                let s = next();
                if s % 7 <= seed % 4 {
                    cost.set(UVec2::new(x, y), 1 + (s >> 8) as u8 % 3).unwrap();
                }
            }
        }
        cost
    }

    #[test]
    fn each_cells_legal_steps_follow_the_corner_rule() {
        // Bit order of `moves_of_row`.
        let dirs = [
            Dir8::N,
            Dir8::E,
            Dir8::S,
            Dir8::W,
            Dir8::NE,
            Dir8::SE,
            Dir8::SW,
            Dir8::NW,
        ];
        for seed in 0..4 {
            let cost = holed_maze(9, seed);
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(false);
            // The second build over the same map reads (and so works out) the table.
            for _ in 0..2 {
                b.build(&cost, &[UVec2::new(1, 1)], CostModel::TenFourteen)
                    .unwrap();
            }
            let pw = cost.width() as usize + 2;
            for y in 0..cost.height() {
                for x in 0..cost.width() {
                    let c = (y as usize + 1) * pw + x as usize + 1;
                    let m = b.moves[c];
                    if m != 0 {
                        assert_eq!(moves_at(&b.costs, pw, c), m);
                    }
                    for (bit, &dir) in dirs.iter().enumerate() {
                        let cell = UVec2::new(x, y);
                        assert_eq!(
                            m >> bit & 1 == 1,
                            cost.can_step(cell, dir),
                            "{cell} {dir:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_wave_after_edits_works_out_the_changed_steps_again() {
        let mut cost = holed_maze(12, 1);
        let side = cost.width();
        let goal = [UVec2::new(1, 1)];
        let mut reused = IntegrationBuilder::new();
        reused.set_sweeps(false);
        let mut sliced = IntegrationBuilder::new();
        sliced.set_sweeps(false);
        let mut out = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
        // Walls opened and closed on the first row, the last, in the middle and in a corner;
        // then another map of the same size.
        let edits = [
            (UVec2::new(4, 0), 1),
            (UVec2::new(7, side - 1), 1),
            (UVec2::new(2, 1), WALL),
            (UVec2::new(11, 12), WALL),
            (UVec2::new(side - 1, side - 1), 1),
            (UVec2::new(5, 5), 4),
        ];
        for (k, &(cell, c)) in edits.iter().enumerate() {
            if k == edits.len() - 1 {
                cost = holed_maze(12, 2);
            }
            cost.set(cell, c).unwrap();
            for model in [CostModel::TenFourteen, CostModel::Octile] {
                let fresh = IntegrationBuilder::new()
                    .build(&cost, &goal, model)
                    .unwrap();
                reused.build_into(&cost, &goal, model, &mut out).unwrap();
                assert_eq!(out, fresh, "one-shot, edit {k}");
                sliced.start(&cost, &goal, model).unwrap();
                while let BuildProgress::Running { .. } = sliced.advance(37).unwrap() {}
                sliced.finish_into(&mut out).unwrap();
                assert_eq!(out, fresh, "sliced, edit {k}");
            }
        }
    }

    #[test]
    fn a_reused_builder_gives_the_same_field_as_a_fresh_one() {
        let mut cost = open(30, 20);
        cost.fill_rect(UVec2::new(5, 0), UVec2::new(6, 15), WALL)
            .unwrap();
        cost.fill_rect(UVec2::new(10, 5), UVec2::new(20, 19), 7)
            .unwrap();
        let mut reused = IntegrationBuilder::new();
        let mut out = IntegrationField::new(*cost.grid(), CostModel::Octile);
        for goal in [UVec2::new(0, 0), UVec2::new(29, 19), UVec2::new(12, 8)] {
            for model in [CostModel::TenFourteen, CostModel::Octile] {
                reused.build_into(&cost, &[goal], model, &mut out).unwrap();
                let fresh = IntegrationBuilder::new()
                    .build(&cost, &[goal], model)
                    .unwrap();
                assert_eq!(out, fresh);
            }
        }
        // Another map of the same size, then one edited cell: the builder notices both.
        let mut other = open(30, 20);
        for edit in [
            None,
            Some((UVec2::new(3, 3), WALL)),
            Some((UVec2::new(4, 4), 9)),
        ] {
            if let Some((cell, c)) = edit {
                other.set(cell, c).unwrap();
            }
            for model in [CostModel::TenFourteen, CostModel::Octile] {
                let goal = [UVec2::new(0, 0)];
                reused.build_into(&other, &goal, model, &mut out).unwrap();
                assert_eq!(
                    out,
                    IntegrationBuilder::new()
                        .build(&other, &goal, model)
                        .unwrap()
                );
            }
        }
    }
}
