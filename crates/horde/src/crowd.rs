//! Moving crowds: agents that follow flow fields, keep apart by DetourCrowd's separation kernel,
//! slide along walls and never enter them, slow down and stop at their goal.
//!
//! One step reads a snapshot of every position (taken while the neighbour grid is rebuilt) and
//! writes only each agent's own state, so the result is bit-identical whatever the number of
//! threads, and the step parallelises without locks (feature `parallel`).

use glam::{UVec2, Vec2};
use thiserror::Error;

use crate::cost::{CostField, WALL};
use crate::flow::{FLOW_GOAL, FlowField, FlowSample, NoDirection};
use crate::grid::{Dir8, Grid};

/// Run `work` on every slot's mutable entries of the given arrays, zipped left to right:
/// in parallel on rayon's pool with the `parallel` feature, else in slot order. Either way each
/// call touches only its own slot, so the results are the same bits.
macro_rules! each_agent {
    ($work:expr, $first:expr $(, $rest:expr)*) => {{
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            $first
                .par_iter_mut()
                $(.zip($rest.par_iter_mut()))*
                .enumerate()
                .with_min_len(2048)
                .for_each($work);
        }
        #[cfg(not(feature = "parallel"))]
        {
            $first.iter_mut()$(.zip($rest.iter_mut()))*.enumerate().for_each($work);
        }
    }};
}

/// `work(k, (first, rest...))` for every piece `k` of `$size` slots of the arrays, each as
/// mutable slices (in parallel with `parallel`): for loops over slices, such as those compiled
/// twice, for the baseline CPU and for x86-64-v3 (see [`Isa`]), or those that vectorise.
macro_rules! each_piece {
    ($size:expr, $work:expr, $first:expr $(, $rest:expr)*) => {{
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            $first
                .par_chunks_mut($size)
                $(.zip($rest.par_chunks_mut($size)))*
                .enumerate()
                .for_each($work);
        }
        #[cfg(not(feature = "parallel"))]
        {
            $first.chunks_mut($size)$(.zip($rest.chunks_mut($size)))*.enumerate().for_each($work);
        }
    }};
}

/// Why a crowd call was refused. Nothing changes when a call is refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CrowdError {
    /// A position, velocity or parameter that is NaN or infinite, or out of its range.
    #[error("{what} = {value} is not allowed: {reason}")]
    BadValue {
        what: &'static str,
        value: f32,
        reason: &'static str,
    },
    /// A handle to an agent that was removed (or never existed).
    #[error("agent handle {index}:{generation} is stale")]
    StaleHandle {
        /// The handle's id.
        index: u32,
        /// The handle's generation.
        generation: u32,
    },
    /// An agent follows a group that the step was not given.
    #[error("agent {id} follows group {group}, but only {groups} groups were given")]
    NoSuchGroup {
        /// The agent's id ([`AgentHandle::id`]).
        id: u32,
        group: u16,
        groups: usize,
    },
    /// The cost field or a flow field covers another grid than the crowd.
    #[error("{what} is {got_w}x{got_h} but the crowd's grid is {want_w}x{want_h}")]
    GridMismatch {
        what: &'static str,
        got_w: u32,
        got_h: u32,
        want_w: u32,
        want_h: u32,
    },
    /// No walkable cell to place an agent on.
    #[error("no walkable cell near ({x}, {y}) to place the agent on")]
    NoWalkableCell { x: f32, y: f32 },
}

/// How an agent reads its flow field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sampling {
    /// The arrow of the cell it stands on.
    Nearest,
    /// The four nearest arrows blended bilinearly (smoother turns).
    #[default]
    Bilinear,
}

/// Crowd-wide settings. Distances are in world units, times in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct CrowdConfig {
    /// Agents closer than this push each other apart (also the neighbour grid's cell size).
    pub separation_radius: f32,
    /// Weight of the flow direction in the blend.
    pub flow_weight: f32,
    /// Weight of the separation force in the blend.
    pub separation_weight: f32,
    /// At most this many nearest neighbours push an agent (DetourCrowd uses 6).
    pub max_neighbours: usize,
    /// Largest change of velocity per second.
    pub max_acceleration: f32,
    /// An agent this close to its goal has arrived.
    pub arrival_radius: f32,
    /// Within this distance of the goal an agent slows down linearly.
    pub slowdown_radius: f32,
    /// How arrows are read.
    pub sampling: Sampling,
    /// An agent within this distance of its goal walks straight at it when nothing blocks the
    /// line (so units do not zig-zag along 8 directions in the open).
    pub line_of_sight_range: f32,
    /// A moving agent that has not come `stuck_distance` closer to its goal (straight-line) for
    /// this long is flagged stuck.
    pub stuck_time: f32,
    /// See `stuck_time`.
    pub stuck_distance: f32,
    /// How much more an arrived agent gives way to a moving one (multiplies the push it gets).
    pub arrived_yield: f32,
    /// Extra passes per step that push overlapping agents apart by position (DetourCrowd runs
    /// four); each costs a neighbour search for every agent that may touch another (agents
    /// clear of everyone are skipped).
    pub collision_passes: usize,
}

impl Default for CrowdConfig {
    fn default() -> Self {
        CrowdConfig {
            separation_radius: 1.0,
            flow_weight: 1.0,
            separation_weight: 2.0,
            max_neighbours: 6,
            max_acceleration: 30.0,
            arrival_radius: 1.5,
            slowdown_radius: 3.0,
            sampling: Sampling::Bilinear,
            line_of_sight_range: 8.0,
            stuck_time: 3.0,
            stuck_distance: 0.5,
            arrived_yield: 3.0,
            collision_passes: 2,
        }
    }
}

impl CrowdConfig {
    fn validate(&self) -> Result<(), CrowdError> {
        let positive = [
            ("separation_radius", self.separation_radius),
            ("max_acceleration", self.max_acceleration),
            ("stuck_time", self.stuck_time),
        ];
        for (what, value) in positive {
            if !(value.is_finite() && value > 0.0) {
                return Err(CrowdError::BadValue {
                    what,
                    value,
                    reason: "must be a finite number above 0",
                });
            }
        }
        let non_negative = [
            ("flow_weight", self.flow_weight),
            ("separation_weight", self.separation_weight),
            ("arrival_radius", self.arrival_radius),
            ("slowdown_radius", self.slowdown_radius),
            ("line_of_sight_range", self.line_of_sight_range),
            ("stuck_distance", self.stuck_distance),
            ("arrived_yield", self.arrived_yield),
        ];
        for (what, value) in non_negative {
            if !(value.is_finite() && value >= 0.0) {
                return Err(CrowdError::BadValue {
                    what,
                    value,
                    reason: "must be a finite number, 0 or above",
                });
            }
        }
        Ok(())
    }
}

/// What an agent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AgentState {
    /// Following its field.
    Moving = 0,
    /// Reached its goal: within the arrival radius; or, within the pile of agents already arrived
    /// round the goal, pressed against an arrived agent nearer the goal or held up for
    /// `stuck_time` (so a crowd piles up round its flag instead of pushing into it). It stays arrived, giving way to others,
    /// until [`Crowd::set_group`] sends it elsewhere.
    Arrived = 1,
    /// On a cell with no way to the goal (or a wall, or off the map): it stands still.
    NoPath = 2,
}

/// A new agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgentParams {
    /// World position.
    pub position: Vec2,
    /// Body radius (world units), for separation and overlap.
    pub radius: f32,
    /// Top speed (world units per second).
    pub max_speed: f32,
    /// Index of the group (flow field) it follows in [`Crowd::step`]'s `groups`.
    pub group: u16,
}

/// A stable reference to an agent: stays valid until the agent is removed, and never refers to
/// another agent afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentHandle {
    index: u32,
    generation: u32,
}

impl AgentHandle {
    /// The agent's id: unique among living agents (reused after removal, with a new generation).
    /// Until an agent is removed, ids are 0, 1, 2, … in the order the agents were added, so
    /// they can index the caller's own per-agent arrays.
    pub fn id(self) -> u32 {
        self.index
    }
}

/// A goal shared by many agents: its flow field (not copied) and its position.
#[derive(Debug, Clone, Copy)]
pub struct Group<'a> {
    /// The field the group follows.
    pub flow: &'a FlowField,
    /// The goal's world position (arrival and slowing down are measured to it).
    pub goal: Vec2,
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepStats {
    /// Agents moving after the step.
    pub moving: usize,
    /// Agents arrived after the step.
    pub arrived: usize,
    /// Agents with no path after the step.
    pub no_path: usize,
    /// Agents flagged stuck after the step.
    pub stuck: usize,
}

/// A crowd of agents, stored as structure of arrays.
///
/// The arrays are kept sorted by position (re-sorted by the same counting sort that builds the
/// neighbour grid, at the start of a step whenever the grid is rebuilt: at least every fifth
/// step, and as soon as anyone has moved a quarter of a cell from where it was filed), so that
/// a step reads neighbours, arrows and walls from nearby memory. Handles stay valid through the
/// re-sorting: they name an id, which maps to the agent's current slot.
///
/// Searches are skipped where they cannot find anyone: each agent keeps a lower bound on its
/// distance to every other agent (its clearance), measured by its last search and lowered by
/// how far it and anyone else have moved since. An agent whose clearance exceeds the reach of
/// a search is skipped, with exactly the result the search would give, so a spread-out crowd
/// costs far less per agent than a packed one. (In a dense crowd the clearances are not worth
/// their cost, and a step goes without them for a while.)
///
/// The per-agent loops (the update and the collision passes) are compiled twice, for baseline
/// x86-64 and for x86-64-v3 (AVX2, BMI1/2, LZCNT), and each step runs the one the CPU has. Rust
/// never fuses a multiply and an add unasked, so both give the same bits: positions are the
/// same on any x86-64 CPU as on any thread count.
///
/// Memory per agent: at most 63.3 bytes, the neighbour grid included. Agent arrays 40 (position
/// 8, velocity 8, radius 4, top speed 4, group 2, state 1, flags 1, stuck reference distance 4
/// and timer 4, id 4); id table 8 (slot 4, generation 4); neighbour grid 13 (sort order 4,
/// position snapshot 8, state snapshot 1) plus its cell starts, 4 bytes per cell and at most one
/// cell per two agents (2 bytes per agent; cells never get smaller than the separation radius);
/// the lists of agents pushed and marked by the collision passes, 4 bytes each for at most one
/// agent in 64 (0.125 bytes per agent, or 512 bytes for crowds under 4096), and the marks of a
/// collision pass after one that pushed more than that, a bit per agent (0.125 bytes).
/// Sorting borrows the old positions' buffer as scratch, and the clearances live in the sort
/// order's buffer during a step and in six bits of the flags between steps, so neither adds
/// anything. Nothing is allocated per step once the arrays have grown.
#[derive(Debug, Clone)]
pub struct Crowd {
    grid: Grid,
    config: CrowdConfig,
    positions: Vec<Vec2>,
    velocities: Vec<Vec2>,
    radii: Vec<f32>,
    max_speeds: Vec<f32>,
    groups: Vec<u16>,
    states: Vec<AgentState>,
    flags: Vec<u8>,
    /// Distance to the goal when the stuck timer last restarted.
    anchors: Vec<f32>,
    timers: Vec<f32>,
    /// Id of the agent in each slot.
    ids: Vec<u32>,
    /// Slot of each id (`u32::MAX` when the id is free).
    id_slots: Vec<u32>,
    /// Generation of each id, bumped when its agent is removed.
    id_generations: Vec<u32>,
    free_ids: Vec<u32>,
    alive: usize,
    neighbours: NeighbourGrid,
    /// Per group: how far from the goal its pile of arrived agents reaches (from the last step).
    piles: Vec<f32>,
    pile_parts: Vec<(f32, f32)>,
    /// Scratch of the step's parallel reductions, one entry per piece of [`CHUNK`] agents.
    pile_partials: Vec<(f32, f32)>,
    partial_counts: Vec<u32>,
    partial_reach: Vec<(u32, f32)>,
    /// One more than the highest group of a living agent, and the top speed of the fastest;
    /// `None` once an agent is added, removed or sent to another group (a step changes
    /// neither, so steps in a row fold them once).
    highest_and_fastest: Option<(u32, f32)>,
    partial_moves: Vec<(f32, f32, f32)>,
    partial_worst: Vec<f32>,
    partial_stats: Vec<StepStats>,
    /// Slot k is the neighbour grid's entry k (no agent added, removed or moved by hand since
    /// the last sort).
    sorted: bool,
    /// What one level of the clearance in the flags is worth; 0 when the flags' clearances
    /// are not known to hold (an agent was placed since they were measured).
    clearance_unit: f32,
    /// Steps left without clearances (see `keep_clearances`).
    dense_steps: u32,
    /// Steps since the agents were last sorted.
    unsorted_steps: u32,
    /// While `sorted`: the grid's snapshot holds every position as it is.
    snapshot_current: bool,
    /// The agents that the last collision pass pushed, and those the next pass searches (see
    /// `collision_pass`); each at most [`few`] long.
    pushed: Vec<u32>,
    marked: Vec<u32>,
    /// One bit per slot: the agents a collision pass after one that pushed too many to list
    /// searches (see `marked_pass`).
    marks: MarkBits,
    /// Collision passes that searched only the marked agents (for the tests).
    #[cfg(test)]
    sparse_passes: u32,
    /// Collision passes that searched only the agents in `marks` (for the tests).
    #[cfg(test)]
    marked_passes: u32,
    /// Tests turn skipping searches off, to check that it changes nothing.
    #[cfg(test)]
    search_everyone: bool,
    /// Tests run the baseline compilation on a CPU that has x86-64-v3, to compare the bits.
    #[cfg(test)]
    baseline_only: bool,
}

/// One agent's entries in every slot array, for moving agents between slots.
#[derive(Clone, Copy)]
struct AgentRecord {
    position: Vec2,
    velocity: Vec2,
    radius: f32,
    max_speed: f32,
    group: u16,
    state: AgentState,
    flags: u8,
    anchor: f32,
    timer: f32,
    id: u32,
}

const ALIVE: u8 = 1;
/// Neighbour candidates measured together by [`NeighbourGrid::for_each_near`].
const LANES: usize = 8;
const STUCK: u8 = 2;
/// During a step's collision passes (when the clearance bits of the flags are free): pushed by
/// the last pass, and marked for the next one.
const PUSHED: u8 = 4;
const MARKED: u8 = 8;
/// The flags above these two bits carry an agent's clearance from one step to the next, in
/// multiples of the crowd's `clearance_unit`, rounded down.
const CLEARANCE_SHIFT: u32 = 2;
/// The largest clearance the flags hold, in units.
const CLEARANCE_LEVELS: f32 = 63.0;
/// Steps that a dense crowd goes without clearances before they are measured again.
const DENSE_STEPS: u32 = 15;
/// The agents are sorted again once anyone may have moved this far (in cells of the neighbour
/// grid) from where it was filed: further, and searches would have to look too far round.
const RESORT_DRIFT: f32 = 0.25;
/// Steps at most between two sorts.
const MAX_UNSORTED_STEPS: u32 = 4;

/// Uniform grid of the agents' positions, rebuilt every step by a counting sort, with a
/// cell-sorted snapshot of what changes during a step and neighbours read (position, state).
#[derive(Debug, Clone, Default)]
struct NeighbourGrid {
    /// Smallest cell side: the longest distance at which agents interact.
    reach: f32,
    /// The widest radius of a living agent.
    widest: f32,
    /// How far outside its cell any entry of the snapshot may stand, along either axis (the
    /// cell it was filed in when the grid was built; an edge cell reaches beyond the grid's
    /// edge). Measured at each refresh of the snapshot, so a crowd that jostles in place keeps
    /// a small drift however far its members wander to and fro.
    drift: f32,
    /// The same as a distance.
    moved: f32,
    /// The box round the living agents when the grid was built.
    extent: Vec2,
    origin: Vec2,
    cell: f32,
    inv_cell: f32,
    cols: u32,
    rows: u32,
    /// The last column and row, as floats.
    last: Vec2,
    /// More than the rounding error of any distance or clearance on this grid.
    slack: f32,
    /// No clearance is taken to be more than this (so that [`Self::take_moves`] knows how far
    /// a move can lower one).
    cap: f32,
    /// `starts[c]..starts[c + 1]` are the sorted entries of cell `c`.
    starts: Vec<u32>,
    /// Slot of each sorted entry.
    slots: Vec<u32>,
    /// Position of each sorted entry, x and y apart (so that [`Self::for_each_near`] measures
    /// eight at once), padded by [`LANES`] entries out of everyone's reach.
    xs: Vec<f32>,
    ys: Vec<f32>,
    /// Scratch of the parallel reduction that finds the box.
    partial_boxes: Vec<(Vec2, Vec2, f32)>,
    /// State of each sorted entry before the step.
    states: Vec<AgentState>,
}

impl NeighbourGrid {
    /// The cells of two positions, as [`cells_of`].
    fn cells_of(&self, a: Vec2, b: Vec2) -> [u32; 4] {
        cells_of(a, b, self.origin, self.inv_cell, self.last)
    }

    /// Call `visit(j, p - position[j], distance²)` for every entry `j != me` closer to `p` than
    /// `within`, in entry order, and return a lower bound on the distance from `p` to every
    /// entry but `me` (its clearance). The cells searched are those that overlap the square of
    /// half side `within + drift` round `p`, since an entry is filed under the cell of where it
    /// stood when the grid was built. Entries are measured [`LANES`] at a time without
    /// branches, so only the few in range reach branchy code; the snapshot is padded for the
    /// last chunk.
    ///
    /// Without `CLEARANCE` it returns 0 and skips the work of measuring the clearance.
    #[inline(always)]
    fn for_each_near<const CLEARANCE: bool>(
        &self,
        p: Vec2,
        me: usize,
        within: f32,
        mut visit: impl FnMut(usize, Vec2, f32),
    ) -> f32 {
        let within2 = within * within;
        // A hundredth of a cell more, for rounding in the positions and the drift.
        let reach = Vec2::splat(within + self.drift + 0.01 * self.cell);
        let [x0, y0, x1, y1] = self.cells_of(p - reach, p + reach);
        let mut nearest2 = Least::none();
        let mut any = 0;
        for y in y0..y1 + 1 {
            let row = (y * self.cols) as usize;
            let mut e = self.starts[row + x0 as usize] as usize;
            let end = self.starts[row + x1 as usize + 1] as usize;
            while e < end {
                let xs: &[f32; LANES] = self.xs[e..e + LANES]
                    .try_into()
                    .expect("the snapshot is padded by LANES entries");
                let ys: &[f32; LANES] = self.ys[e..e + LANES].try_into().expect("padded");
                // Lanes past `end` are entries of other cells or padding: true distances to
                // someone, or infinite, so they may lower the clearance but never wrongly.
                let mask = near_mask(p, xs, ys, within2, me.wrapping_sub(e), &mut nearest2);
                // Without a branch: whether a block is the last of its run is a coin toss.
                let mut mask = mask & ((1 << (end - e).min(LANES)) - 1);
                any |= mask;
                while mask != 0 {
                    let j = e + mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    let diff = p - self.point(j);
                    visit(j, diff, diff.length_squared());
                }
                e += LANES;
            }
        }
        if !CLEARANCE {
            return 0.0;
        }
        let nearest2 = nearest2.value();
        if any != 0 {
            // Someone within `within`, so nearer than anyone outside the searched cells.
            return nearest2.sqrt();
        }
        // Every entry outside the searched cells was filed outside them (none is filed beyond
        // the grid's edges, whatever it did since) and stands at most `drift` outside its cell
        // along either axis.
        let g = (p - self.origin) * self.inv_cell;
        let side = side_room(g, [x0, y0, x1, y1], self.cols, self.rows);
        smaller(nearest2.sqrt(), side * self.cell - self.drift)
    }

    /// Sort the living agents into the cells of a grid over the box round them. The cell side is
    /// at least `reach` (so the 3 × 3 block round an agent, which `max_overlap` reads, holds
    /// every neighbour in reach) and grows on sparse crowds so that the grid has at most about
    /// one cell per two agents: the work per step is O(agents), whatever the map's size, and the
    /// cell starts cost at most 2 bytes per agent.
    fn rebuild(
        &mut self,
        positions: &[Vec2],
        flags: &[u8],
        radii: &[f32],
        states: &[AgentState],
        alive: usize,
    ) {
        // The box round the living agents, and the widest of them (in parallel; min and max
        // are exact in any order).
        let none = (
            Vec2::splat(f32::INFINITY),
            Vec2::splat(f32::NEG_INFINITY),
            0.0f32,
        );
        let (low, high, max_radius) = fold_chunks(
            positions.len(),
            &mut self.partial_boxes,
            none,
            |range| {
                range
                    .filter(|&i| flags[i] & ALIVE != 0)
                    .fold(none, |(lo, hi, r), i| {
                        (lo.min(positions[i]), hi.max(positions[i]), r.max(radii[i]))
                    })
            },
            |a, b| (a.0.min(b.0), a.1.max(b.1), a.2.max(b.2)),
        );
        // The grid covers only that box, so a crowd gathered in one place (a pile round its
        // goal, an army on the march) gets cells sized for its own density. Agents that drift
        // out of the box during the step fall in the edge cells.
        (self.origin, self.extent) = if low.x <= high.x {
            (low, high - low)
        } else {
            (Vec2::ZERO, Vec2::ZERO)
        };
        self.widest = max_radius;
        self.drift = 0.0;
        self.moved = 0.0;
        let reach = self.reach.max(2.0 * max_radius);
        let area = (self.extent.x * self.extent.y).max(1e-6);
        self.cell = reach.max((2.0 * area / alive.max(1) as f32).sqrt());
        self.cols = ((self.extent.x / self.cell).ceil() as u32).clamp(1, 1 << 12);
        self.rows = ((self.extent.y / self.cell).ceil() as u32).clamp(1, 1 << 12);
        // Rounding each side up can leave more cells than that, most of all on a long thin
        // crowd (a column on the march): widen the cells until there is at most one per two
        // agents, which the memory per agent counts on.
        let most = (alive / 2).max(1) as u64;
        while self.cols as u64 * self.rows as u64 > most {
            self.cell *= 1.25;
            self.cols = ((self.extent.x / self.cell).ceil() as u32).clamp(1, 1 << 12);
            self.rows = ((self.extent.y / self.cell).ceil() as u32).clamp(1, 1 << 12);
        }
        self.cell = self
            .cell
            .max(self.extent.x / self.cols as f32)
            .max(self.extent.y / self.rows as f32);
        self.inv_cell = self.cell.recip();
        self.last = Vec2::new((self.cols - 1) as f32, (self.rows - 1) as f32);
        // Distances, cell borders and drifts are all computed from coordinates of at most this
        // size, each to within a few ulps (1.2e-7 of it).
        let size = self.origin.abs().max_element() + self.extent.max_element() + self.cell + 1.0;
        self.slack = 1e-5 * size;
        let cells = (self.cols * self.rows) as usize;
        // Every slot's cell (u32::MAX for removed agents), found in parallel and parked as bits
        // in the snapshot's x column until the snapshot is rewritten below.
        let n_old = positions.len();
        let (origin, inv_cell, cols, last) = (self.origin, self.inv_cell, self.cols, self.last);
        self.xs.resize(n_old, 0.0);
        fill(&mut self.xs, |i| {
            let cell = if flags[i] & ALIVE != 0 {
                cell_index(positions[i], origin, inv_cell, cols, last)
            } else {
                u32::MAX
            };
            f32::from_bits(cell)
        });
        self.starts.clear();
        self.starts.resize(cells + 1, 0);
        for &key in &self.xs {
            let c = key.to_bits();
            if c != u32::MAX {
                self.starts[c as usize + 1] += 1;
            }
        }
        // Prefix sums, with the running total in a register.
        let mut total = 0u32;
        for start in &mut self.starts {
            total += *start;
            *start = total;
        }
        let n = self.starts[cells] as usize;
        self.slots.resize(n, 0);
        // Fill in slot order so that each cell's entries stay sorted by slot: deterministic.
        // `starts[c]` serves as cell c's cursor, and ends at the start of cell c + 1.
        for (i, &key) in self.xs.iter().enumerate() {
            let c = key.to_bits();
            if c != u32::MAX {
                let k = self.starts[c as usize] as usize;
                self.starts[c as usize] += 1;
                self.slots[k] = i as u32;
            }
        }
        self.starts.copy_within(0..cells, 1);
        self.starts[0] = 0;
        // The snapshot, gathered in sorted order.
        let slots = &self.slots;
        self.xs.resize(n, 0.0);
        self.ys.resize(n, 0.0);
        self.states.resize(n, AgentState::Moving);
        fill(&mut self.xs, |k| positions[slots[k] as usize].x);
        fill(&mut self.ys, |k| positions[slots[k] as usize].y);
        fill(&mut self.states, |k| states[slots[k] as usize]);
        self.xs.extend_from_slice(&[f32::INFINITY; LANES]);
        self.ys.extend_from_slice(&[f32::INFINITY; LANES]);
    }

    /// Take new positions into the snapshot without re-sorting, measure the drift that searches
    /// allow for, and take how far each agent moved off its clearance (see
    /// [`Crowd::collision_pass`]). Only while slot `k` is entry `k` (the agents were sorted
    /// with this grid). One pass over the agents, in parallel pieces. Without `CLEARANCE` the
    /// clearances are left alone. (After a step's walk, [`Self::refresh_walked`] does the same
    /// for less.)
    fn refresh_points<const CLEARANCE: bool>(
        &mut self,
        positions: &[Vec2],
        clearances: &mut [u32],
        partials: &mut Vec<(f32, f32, f32)>,
    ) {
        let n = positions.len();
        partials.clear();
        partials.resize(n.div_ceil(CHUNK), (0.0, 0.0, 0.0));
        type Piece<'p> = (
            usize,
            (
                ((&'p mut [f32], &'p mut [f32]), &'p mut [u32]),
                &'p mut (f32, f32, f32),
            ),
        );
        let (starts, cols) = (&self.starts, self.cols as usize);
        let (origin, inv_cell, last) = (self.origin, self.inv_cell, self.last);
        let work = |(c, (((xs, ys), clear), part)): Piece| {
            let (mut along, mut most, mut out) = (0.0f32, 0.0f32, 0.0f32);
            // The cells are walked along with the entries, which are in cell order.
            let first = c * CHUNK;
            let mut cell = filed_cell(starts, first);
            let mut box_ = cell_box(cell, cols, last);
            let points = xs.iter_mut().zip(ys.iter_mut()).zip(clear.iter_mut());
            for (e, (&p, ((x, y), clear))) in (first..).zip(positions[first..].iter().zip(points)) {
                if starts[cell + 1] as usize <= e {
                    while starts[cell + 1] as usize <= e {
                        cell += 1;
                    }
                    box_ = cell_box(cell, cols, last);
                }
                take_move::<CLEARANCE>(p, x, y, clear, &mut along, &mut most);
                out = larger(out, outside(p, box_, origin, inv_cell));
            }
            *part = (along, most, out);
        };
        let (xs, ys) = (&mut self.xs[..n], &mut self.ys[..n]);
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            xs.par_chunks_mut(CHUNK)
                .zip(ys.par_chunks_mut(CHUNK))
                .zip(clearances.par_chunks_mut(CHUNK))
                .zip(partials.par_iter_mut())
                .enumerate()
                .for_each(work);
        }
        #[cfg(not(feature = "parallel"))]
        xs.chunks_mut(CHUNK)
            .zip(ys.chunks_mut(CHUNK))
            .zip(clearances.chunks_mut(CHUNK))
            .zip(partials.iter_mut())
            .enumerate()
            .for_each(work);
        let (along, most, out) = partials.iter().fold((0.0f32, 0.0f32, 0.0f32), |a, b| {
            (a.0.max(b.0), a.1.max(b.1), a.2.max(b.2))
        });
        self.drift = out * self.cell;
        self.add_moves::<CLEARANCE>(along, most, None);
    }

    /// Count moves into `moved`: `calm` if given, else the largest move (without clearances,
    /// the bound that the largest move along an axis gives).
    fn add_moves<const CLEARANCE: bool>(&mut self, along: f32, most: f32, calm: Option<f32>) {
        // Without clearances nobody reads `moved`; it stays a bound all the same.
        self.moved += match calm {
            Some(calm) => calm,
            None if CLEARANCE => most,
            None => along * std::f32::consts::SQRT_2 * (1.0 + 1e-6),
        };
    }

    /// Take new positions into the snapshot, knowing (`since`, if known) that everyone but the
    /// agents in `listed` moved at most that far since the last refresh. With clearances, the
    /// listed agents' moves do not go into `moved`, which every clearance pays for: instead
    /// each agent within [`Self::cap`] of one takes the distance to it as its clearance if that
    /// is less (a few searches, where a few far moves would cost everyone's clearance as much).
    fn take_moves<const CLEARANCE: bool>(
        &mut self,
        positions: &[Vec2],
        since: Option<f32>,
        listed: &[u32],
        clearances: &mut [u32],
        partials: &mut Vec<(f32, f32, f32)>,
    ) {
        match since {
            Some(calm) if CLEARANCE => {
                if calm > 0.0 {
                    self.refresh_walked(positions, calm, listed, clearances);
                } else {
                    self.refresh_some::<true>(positions, clearances, listed, Some(0.0));
                }
                for &o in listed {
                    let o = o as usize;
                    let (moved, within) = (self.moved, self.cap + self.slack);
                    self.for_each_near::<false>(self.point(o), o, within, |i, _, d2| {
                        let near = d2.sqrt() + moved;
                        if near < f32::from_bits(clearances[i]) {
                            clearances[i] = near.to_bits();
                        }
                    });
                }
            }
            // (Only the listed moved.)
            Some(0.0) => self.refresh_some::<CLEARANCE>(positions, clearances, listed, None),
            _ => self.refresh_points::<CLEARANCE>(positions, clearances, partials),
        }
    }

    /// [`Self::refresh_points`] with clearances when everyone but the agents in `listed` moved
    /// at most `calm` (a step's walk): the same snapshot, clearances and `moved`, and a drift
    /// that is the old one plus `calm` (measured only for the listed), so no cell is walked and
    /// the loop over everyone vectorises. The drift is then a bound rather than the measure:
    /// since someone stands at a cell's edge and walks out of it, they are nearly the same.
    fn refresh_walked(
        &mut self,
        positions: &[Vec2],
        calm: f32,
        listed: &[u32],
        clearances: &mut [u32],
    ) {
        let n = positions.len();
        type Piece<'p> = (usize, ((&'p mut [f32], &'p mut [f32]), &'p mut [u32]));
        let work = |(c, ((xs, ys), clear)): Piece| {
            let first = c * CHUNK;
            let points = xs.iter_mut().zip(ys.iter_mut()).zip(clear.iter_mut());
            for (&p, ((x, y), clear)) in positions[first..].iter().zip(points) {
                let own = move_bound(p - Vec2::new(*x, *y));
                *clear = (f32::from_bits(*clear) - own).to_bits();
                (*x, *y) = (p.x, p.y);
            }
        };
        let (xs, ys) = (&mut self.xs[..n], &mut self.ys[..n]);
        each_piece!(CHUNK, work, xs, ys, clearances[..n]);
        // Along either axis no one but the listed went further than `calm`.
        let mut out = 0.0f32;
        for &k in listed {
            let k = k as usize;
            out = larger(out, self.outside_filed_cell(k, positions[k]));
        }
        self.drift = larger(self.drift + calm, out * self.cell);
        self.add_moves::<true>(0.0, 0.0, Some(calm));
        #[cfg(test)]
        for (k, &p) in positions.iter().enumerate() {
            let out = self.outside_filed_cell(k, p) * self.cell;
            assert!(
                out <= self.drift,
                "entry {k} stands {out} out, past {}",
                self.drift
            );
        }
    }

    /// [`Self::refresh_points`] when only the agents in `moved` can have moved: the same
    /// snapshot, `moved` and clearances, and a drift at least the measured one (it is only
    /// raised), in O(moved log cells).
    fn refresh_some<const CLEARANCE: bool>(
        &mut self,
        positions: &[Vec2],
        clearances: &mut [u32],
        moved: &[u32],
        calm: Option<f32>,
    ) {
        let (mut along, mut most, mut out) = (0.0f32, 0.0f32, 0.0f32);
        for &k in moved {
            let k = k as usize;
            out = larger(out, self.outside_filed_cell(k, positions[k]));
            let (x, y) = (&mut self.xs[k], &mut self.ys[k]);
            take_move::<CLEARANCE>(
                positions[k],
                x,
                y,
                &mut clearances[k],
                &mut along,
                &mut most,
            );
        }
        // Everyone else stands where the last measure found them.
        self.drift = larger(self.drift, out * self.cell);
        self.add_moves::<CLEARANCE>(along, most, calm);
    }

    /// How far `p` stands outside the cell that entry `e` was filed in, in cells along either
    /// axis (see `drift`). O(log cells).
    fn outside_filed_cell(&self, e: usize, p: Vec2) -> f32 {
        let cell = cell_box(filed_cell(&self.starts, e), self.cols as usize, self.last);
        outside(p, cell, self.origin, self.inv_cell)
    }

    /// Call `mark` for entry `m`, which moved to `is` since the snapshot was taken, and for
    /// every entry that touched it where it stood or touches it where it stands (rounding
    /// aside): everyone whose push its move can change. `radius` is its radius.
    fn for_each_touched(&self, m: usize, is: Vec2, radius: f32, mut mark: impl FnMut(usize)) {
        let within = radius + self.widest + (is - self.point(m)).length() + self.slack;
        mark(m);
        self.for_each_near::<false>(is, m, within, |j, _, _| mark(j));
    }

    /// Position of a sorted entry.
    fn point(&self, e: usize) -> Vec2 {
        Vec2::new(self.xs[e], self.ys[e])
    }
}

impl Crowd {
    /// An empty crowd on a grid (the map its agents walk on).
    ///
    /// ```
    /// use horde::crowd::{Crowd, CrowdConfig};
    /// let crowd = Crowd::new(horde::Grid::new(64, 64).unwrap(), CrowdConfig::default()).unwrap();
    /// assert_eq!(crowd.len(), 0);
    /// ```
    pub fn new(grid: Grid, config: CrowdConfig) -> Result<Crowd, CrowdError> {
        config.validate()?;
        let extent = Vec2::new(grid.width() as f32, grid.height() as f32) * grid.cell_size();
        Ok(Crowd {
            grid,
            neighbours: NeighbourGrid {
                reach: config.separation_radius,
                extent,
                origin: grid.origin(),
                cell: 1.0,
                inv_cell: 1.0,
                cols: 1,
                rows: 1,
                ..NeighbourGrid::default()
            },
            config,
            positions: Vec::new(),
            velocities: Vec::new(),
            radii: Vec::new(),
            max_speeds: Vec::new(),
            groups: Vec::new(),
            states: Vec::new(),
            flags: Vec::new(),
            anchors: Vec::new(),
            timers: Vec::new(),
            ids: Vec::new(),
            id_slots: Vec::new(),
            id_generations: Vec::new(),
            free_ids: Vec::new(),
            alive: 0,
            piles: Vec::new(),
            pile_parts: Vec::new(),
            pile_partials: Vec::new(),
            partial_counts: Vec::new(),
            partial_reach: Vec::new(),
            highest_and_fastest: None,
            partial_moves: Vec::new(),
            partial_worst: Vec::new(),
            partial_stats: Vec::new(),
            sorted: false,
            clearance_unit: 0.0,
            dense_steps: 0,
            unsorted_steps: 0,
            snapshot_current: false,
            #[cfg(test)]
            search_everyone: false,
            #[cfg(test)]
            baseline_only: false,
            pushed: Vec::new(),
            marked: Vec::new(),
            marks: MarkBits::default(),
            #[cfg(test)]
            sparse_passes: 0,
            #[cfg(test)]
            marked_passes: 0,
        })
    }

    /// The crowd's settings.
    pub fn config(&self) -> &CrowdConfig {
        &self.config
    }

    /// Agents alive.
    pub fn len(&self) -> usize {
        self.alive
    }

    /// True with no agents.
    pub fn is_empty(&self) -> bool {
        self.alive == 0
    }

    /// Add an agent. An agent placed in a wall (or off the map) is moved to the centre of the
    /// nearest walkable cell (breadth-first over cells); it is refused only if the map has no
    /// walkable cell. NaN or infinite values, and a radius or speed not above 0, are refused.
    /// O(1), or O(cells searched) when it has to be moved.
    ///
    /// ```
    /// use glam::Vec2;
    /// use horde::crowd::{AgentParams, Crowd, CrowdConfig};
    /// use horde::{CostField, Grid, WALL};
    /// let mut cost = CostField::new(Grid::new(8, 8).unwrap());
    /// cost.set(glam::UVec2::new(2, 2), WALL).unwrap();
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let params = AgentParams { position: Vec2::new(2.5, 2.5), radius: 0.4, max_speed: 3.0, group: 0 };
    /// let a = crowd.add_agent(&cost, params).unwrap();
    /// assert!(cost.is_walkable(crowd.grid().world_to_cell(crowd.position(a).unwrap()).unwrap()));
    /// let bad = AgentParams { position: Vec2::new(f32::NAN, 1.0), ..params };
    /// assert!(crowd.add_agent(&cost, bad).is_err());
    /// ```
    pub fn add_agent(
        &mut self,
        cost: &CostField,
        params: AgentParams,
    ) -> Result<AgentHandle, CrowdError> {
        self.check_grid("cost field", cost.grid())?;
        finite_vec("position", params.position)?;
        for (what, value) in [("radius", params.radius), ("max_speed", params.max_speed)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(CrowdError::BadValue {
                    what,
                    value,
                    reason: "must be a finite number above 0",
                });
            }
        }
        let position = self.walkable_position(cost, params.position)?;
        let id = match self.free_ids.pop() {
            Some(id) => id,
            None => {
                self.id_slots.push(u32::MAX);
                self.id_generations.push(0);
                (self.id_slots.len() - 1) as u32
            }
        };
        let slot = self.positions.len();
        self.push_record(AgentRecord {
            position,
            velocity: Vec2::ZERO,
            radius: params.radius,
            max_speed: params.max_speed,
            group: params.group,
            state: AgentState::Moving,
            flags: ALIVE,
            anchor: f32::INFINITY,
            timer: 0.0,
            id,
        });
        self.id_slots[id as usize] = slot as u32;
        self.alive += 1;
        self.sorted = false;
        self.clearance_unit = 0.0;
        self.highest_and_fastest = None;
        Ok(AgentHandle {
            index: id,
            generation: self.id_generations[id as usize],
        })
    }

    /// Remove an agent; its handle becomes stale, and its id may be handed out again with a new
    /// generation. O(1) (its slot is reclaimed at the next step).
    ///
    /// ```
    /// use glam::Vec2;
    /// use horde::crowd::{AgentParams, Crowd, CrowdConfig, CrowdError};
    /// let cost = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let params = AgentParams { position: Vec2::new(2.5, 2.5), radius: 0.4, max_speed: 3.0, group: 0 };
    /// let a = crowd.add_agent(&cost, params).unwrap();
    /// crowd.remove_agent(a).unwrap();
    /// assert!(crowd.is_empty());
    /// assert!(matches!(crowd.position(a), Err(CrowdError::StaleHandle { .. })));
    /// // The id comes back under a new generation: the old handle stays stale.
    /// let b = crowd.add_agent(&cost, params).unwrap();
    /// assert_eq!(b.id(), a.id());
    /// assert!(crowd.remove_agent(a).is_err() && crowd.position(b).is_ok());
    /// ```
    pub fn remove_agent(&mut self, handle: AgentHandle) -> Result<(), CrowdError> {
        let i = self.slot(handle)?;
        self.flags[i] = 0;
        let id = handle.index as usize;
        self.id_slots[id] = u32::MAX;
        self.id_generations[id] = self.id_generations[id].wrapping_add(1);
        self.free_ids.push(handle.index);
        self.alive -= 1;
        self.sorted = false;
        self.highest_and_fastest = None;
        Ok(())
    }

    fn slot(&self, h: AgentHandle) -> Result<usize, CrowdError> {
        let id = h.index as usize;
        match self.id_slots.get(id) {
            Some(&slot) if slot != u32::MAX && self.id_generations[id] == h.generation => {
                Ok(slot as usize)
            }
            _ => Err(CrowdError::StaleHandle {
                index: h.index,
                generation: h.generation,
            }),
        }
    }

    fn push_record(&mut self, r: AgentRecord) {
        self.positions.push(r.position);
        self.velocities.push(r.velocity);
        self.radii.push(r.radius);
        self.max_speeds.push(r.max_speed);
        self.groups.push(r.group);
        self.states.push(r.state);
        self.flags.push(r.flags);
        self.anchors.push(r.anchor);
        self.timers.push(r.timer);
        self.ids.push(r.id);
    }

    /// Sort the living agents by neighbour-grid cell, dropping removed ones, so that afterwards
    /// slot `k` is the grid's entry `k`. The grid's snapshot already holds the positions in the
    /// new order, so the old positions' buffer serves as scratch through which every other
    /// array is gathered (in parallel): sorting costs no memory beyond the grid.
    fn sort_agents(&mut self) {
        self.rebuild_neighbours();
        let live = self.neighbours.slots.len();
        let order = &self.neighbours.slots;
        let mut scratch = std::mem::take(&mut self.positions);
        scratch.resize(scratch.len().max(live), Vec2::ZERO);

        let velocities = &self.velocities;
        gather(order, &mut scratch, |o| velocities[o]);
        std::mem::swap(&mut self.velocities, &mut scratch);
        self.velocities.truncate(live);
        scratch.resize(scratch.len().max(live), Vec2::ZERO);

        // The other fields go two at a time, as the bits of a `Vec2`'s lanes (moving an `f32`
        // keeps its bits exactly).
        let (radii, speeds) = (&self.radii, &self.max_speeds);
        gather(order, &mut scratch, |o| Vec2::new(radii[o], speeds[o]));
        unpack(
            &scratch[..live],
            &mut self.radii,
            &mut self.max_speeds,
            |v| (v.x, v.y),
        );
        let (anchors, timers) = (&self.anchors, &self.timers);
        gather(order, &mut scratch, |o| Vec2::new(anchors[o], timers[o]));
        unpack(&scratch[..live], &mut self.anchors, &mut self.timers, |v| {
            (v.x, v.y)
        });
        let (ids, groups, flags) = (&self.ids, &self.groups, &self.flags);
        gather(order, &mut scratch, |o| {
            let tag = groups[o] as u32 | (flags[o] as u32) << 16;
            Vec2::new(f32::from_bits(ids[o]), f32::from_bits(tag))
        });
        self.ids.resize(live, 0);
        self.groups.resize(live, 0);
        self.flags.resize(live, 0);
        let tags = &scratch[..live];
        let work = |(k, ((id, group), flags)): (usize, ((&mut u32, &mut u16), &mut u8))| {
            let tag = tags[k].y.to_bits();
            (*id, *group, *flags) = (tags[k].x.to_bits(), tag as u16, (tag >> 16) as u8);
        };
        each_agent!(work, self.ids, self.groups, self.flags);
        self.states.clear();
        self.states.extend_from_slice(&self.neighbours.states);
        for (k, &id) in self.ids.iter().enumerate() {
            self.id_slots[id as usize] = k as u32;
        }

        scratch.truncate(live);
        let ng = &self.neighbours;
        fill(&mut scratch, |k| ng.point(k));
        self.positions = scratch;
        self.sorted = true;
        self.snapshot_current = true;
    }

    /// The map grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }
    /// Position of an agent. O(1), as are [`Self::velocity`], [`Self::state`],
    /// [`Self::is_stuck`] and [`Self::radius`]; each refuses a stale handle.
    pub fn position(&self, h: AgentHandle) -> Result<Vec2, CrowdError> {
        Ok(self.positions[self.slot(h)?])
    }
    /// Velocity of an agent. O(1).
    pub fn velocity(&self, h: AgentHandle) -> Result<Vec2, CrowdError> {
        Ok(self.velocities[self.slot(h)?])
    }
    /// State of an agent, as the last step left it. O(1).
    ///
    /// ```
    /// use glam::{UVec2, Vec2};
    /// use horde::crowd::{AgentParams, AgentState, Crowd, CrowdConfig, Group};
    /// use horde::{CostField, CostModel, FlowField, Grid, IntegrationBuilder, WALL};
    /// // A wall cuts the map in two: the agent east of it has no way to the goal.
    /// let mut cost = CostField::new(Grid::new(10, 5).unwrap());
    /// cost.fill_rect(UVec2::new(5, 0), UVec2::new(5, 4), WALL).unwrap();
    /// let mut b = IntegrationBuilder::new();
    /// b.build(&cost, &[UVec2::new(1, 2)], CostModel::TenFourteen).unwrap();
    /// let mut flow = FlowField::new(*cost.grid());
    /// b.flow_into(&mut flow).unwrap();
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let params = AgentParams { position: Vec2::new(8.5, 2.5), radius: 0.4, max_speed: 3.0, group: 0 };
    /// let a = crowd.add_agent(&cost, params).unwrap();
    /// assert_eq!(crowd.state(a).unwrap(), AgentState::Moving);
    /// let groups = [Group { flow: &flow, goal: Vec2::new(1.5, 2.5) }];
    /// crowd.step(0.05, &cost, &groups).unwrap();
    /// assert_eq!(crowd.state(a).unwrap(), AgentState::NoPath);
    /// assert_eq!(crowd.position(a).unwrap(), Vec2::new(8.5, 2.5));
    /// ```
    pub fn state(&self, h: AgentHandle) -> Result<AgentState, CrowdError> {
        Ok(self.states[self.slot(h)?])
    }
    /// True if the agent is flagged stuck (see [`CrowdConfig::stuck_time`]). O(1).
    pub fn is_stuck(&self, h: AgentHandle) -> Result<bool, CrowdError> {
        Ok(self.flags[self.slot(h)?] & STUCK != 0)
    }
    /// Teleport an agent (knock-back, spawning): it reads the arrow where it lands. A position
    /// in a wall cell is moved to the nearest walkable cell, as [`Self::add_agent`] does; NaN or
    /// infinite positions are refused and change nothing. O(1), or O(cells searched) when it
    /// has to be moved.
    ///
    /// ```
    /// use glam::{UVec2, Vec2};
    /// use horde::crowd::{AgentParams, Crowd, CrowdConfig};
    /// use horde::{CostField, Grid, WALL};
    /// let mut cost = CostField::new(Grid::new(8, 8).unwrap());
    /// cost.set(UVec2::new(5, 5), WALL).unwrap();
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let params = AgentParams { position: Vec2::new(1.5, 1.5), radius: 0.4, max_speed: 3.0, group: 0 };
    /// let a = crowd.add_agent(&cost, params).unwrap();
    /// crowd.set_position(&cost, a, Vec2::new(5.5, 5.5)).unwrap();
    /// let landed = crowd.position(a).unwrap();
    /// assert!(cost.is_walkable(crowd.grid().world_to_cell(landed).unwrap()));
    /// assert!(crowd.set_position(&cost, a, Vec2::new(f32::INFINITY, 1.0)).is_err());
    /// assert_eq!(crowd.position(a).unwrap(), landed);
    /// ```
    pub fn set_position(
        &mut self,
        cost: &CostField,
        h: AgentHandle,
        p: Vec2,
    ) -> Result<(), CrowdError> {
        let i = self.slot(h)?;
        finite_vec("position", p)?;
        let p = self.walkable_position(cost, p)?;
        self.positions[i] = p;
        self.sorted = false;
        self.clearance_unit = 0.0;
        self.anchors[i] = f32::INFINITY;
        self.timers[i] = 0.0;
        Ok(())
    }
    /// Send an agent to another group (goal); it starts moving again, and its stuck flag is
    /// cleared. The group is checked against the groups the next [`Self::step`] is given. O(1).
    ///
    /// ```
    /// use glam::Vec2;
    /// use horde::crowd::{AgentParams, Crowd, CrowdConfig, CrowdError, Group};
    /// let cost = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// let flow = horde::FlowField::new(*cost.grid());
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let params = AgentParams { position: Vec2::new(2.5, 2.5), radius: 0.4, max_speed: 3.0, group: 0 };
    /// let a = crowd.add_agent(&cost, params).unwrap();
    /// crowd.set_group(a, 1).unwrap();
    /// let one = [Group { flow: &flow, goal: Vec2::new(6.5, 6.5) }];
    /// assert!(matches!(crowd.step(0.05, &cost, &one), Err(CrowdError::NoSuchGroup { group: 1, .. })));
    /// ```
    pub fn set_group(&mut self, h: AgentHandle, group: u16) -> Result<(), CrowdError> {
        let i = self.slot(h)?;
        self.groups[i] = group;
        self.highest_and_fastest = None;
        self.states[i] = AgentState::Moving;
        self.timers[i] = 0.0;
        self.flags[i] &= !STUCK;
        Ok(())
    }

    /// Set an agent's velocity (a knock-back; it is clamped to the top speed, and the
    /// acceleration limit brings it round, over the next steps). NaN or infinite velocities are
    /// refused and change nothing. O(1).
    ///
    /// ```
    /// use glam::Vec2;
    /// use horde::crowd::{AgentParams, Crowd, CrowdConfig};
    /// let cost = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let params = AgentParams { position: Vec2::new(2.5, 2.5), radius: 0.4, max_speed: 3.0, group: 0 };
    /// let a = crowd.add_agent(&cost, params).unwrap();
    /// crowd.set_velocity(a, Vec2::new(1.0, 0.0)).unwrap();
    /// assert!(crowd.set_velocity(a, Vec2::new(f32::NAN, 0.0)).is_err());
    /// assert_eq!(crowd.velocity(a).unwrap(), Vec2::new(1.0, 0.0));
    /// ```
    pub fn set_velocity(&mut self, h: AgentHandle, v: Vec2) -> Result<(), CrowdError> {
        let i = self.slot(h)?;
        finite_vec("velocity", v)?;
        self.velocities[i] = v;
        Ok(())
    }

    /// Radius of an agent. O(1).
    pub fn radius(&self, h: AgentHandle) -> Result<f32, CrowdError> {
        Ok(self.radii[self.slot(h)?])
    }
    /// Handles of the living agents, in slot order: the order of [`Crowd::positions`],
    /// [`Crowd::radii`] and [`Crowd::states`], which may change at any step (agents are kept
    /// sorted by position). O(slots).
    ///
    /// ```
    /// use glam::Vec2;
    /// use horde::crowd::{AgentParams, Crowd, CrowdConfig};
    /// let cost = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// for x in [1.5, 3.5, 5.5] {
    ///     let params = AgentParams { position: Vec2::new(x, 2.5), radius: 0.4, max_speed: 3.0, group: 0 };
    ///     crowd.add_agent(&cost, params).unwrap();
    /// }
    /// // Draw every agent: a handle and the position in the same slot go together.
    /// for (h, &p) in crowd.handles().zip(crowd.positions()) {
    ///     assert_eq!(crowd.position(h).unwrap(), p);
    /// }
    /// ```
    pub fn handles(&self) -> impl Iterator<Item = AgentHandle> + '_ {
        (0..self.flags.len())
            .filter(|&i| self.flags[i] & ALIVE != 0)
            .map(|i| {
                let id = self.ids[i];
                AgentHandle {
                    index: id,
                    generation: self.id_generations[id as usize],
                }
            })
    }
    /// Positions by slot (slots of removed agents hold stale values until the next step).
    pub fn positions(&self) -> &[Vec2] {
        &self.positions
    }
    /// Radii by slot.
    pub fn radii(&self) -> &[f32] {
        &self.radii
    }
    /// States by slot.
    pub fn states(&self) -> &[AgentState] {
        &self.states
    }
    /// Handles of the agents flagged stuck: moving, but no nearer their goal by
    /// [`CrowdConfig::stuck_distance`] for [`CrowdConfig::stuck_time`] (a blocked corridor, a
    /// field gone stale). The game decides what to do with them (a new goal, a path by A*).
    /// O(slots).
    pub fn stuck_agents(&self) -> impl Iterator<Item = AgentHandle> + '_ {
        self.handles()
            .filter(|&h| self.slot(h).is_ok_and(|i| self.flags[i] & STUCK != 0))
    }

    fn check_grid(&self, what: &'static str, g: &Grid) -> Result<(), CrowdError> {
        if g.width() != self.grid.width() || g.height() != self.grid.height() {
            return Err(CrowdError::GridMismatch {
                what,
                got_w: g.width(),
                got_h: g.height(),
                want_w: self.grid.width(),
                want_h: self.grid.height(),
            });
        }
        Ok(())
    }

    fn walkable_position(&self, cost: &CostField, p: Vec2) -> Result<Vec2, CrowdError> {
        let g = self.grid;
        if let Some(c) = g.world_to_cell(p)
            && cost.is_walkable(c)
        {
            return Ok(p);
        }
        let q = g.world_to_grid(p);
        let start = UVec2::new(
            (q.x.max(0.0) as u32).min(g.width() - 1),
            (q.y.max(0.0) as u32).min(g.height() - 1),
        );
        let mut seen = vec![false; g.len()];
        let mut queue = std::collections::VecDeque::from([start]);
        seen[g.index(start).expect("clamped")] = true;
        while let Some(c) = queue.pop_front() {
            if cost.is_walkable(c) {
                return Ok(g.cell_center(c));
            }
            for d in [Dir8::N, Dir8::E, Dir8::S, Dir8::W] {
                if let Some(n) = g.neighbour(c, d) {
                    let i = g.index(n).expect("neighbour on grid");
                    if !seen[i] {
                        seen[i] = true;
                        queue.push_back(n);
                    }
                }
            }
        }
        Err(CrowdError::NoWalkableCell { x: p.x, y: p.y })
    }

    /// Advance every agent by `dt` seconds. `groups[k]` is the field and goal of the agents with
    /// `group == k`. O(agents × neighbours): the neighbour grid has at most one cell per two
    /// agents.
    ///
    /// ```
    /// use glam::{UVec2, Vec2};
    /// use horde::crowd::{AgentParams, AgentState, Crowd, CrowdConfig, Group};
    /// use horde::{CostField, CostModel, FlowField, Grid, IntegrationBuilder};
    /// let cost = CostField::new(Grid::new(32, 32).unwrap());
    /// let goal = UVec2::new(30, 30);
    /// let mut b = IntegrationBuilder::new();
    /// b.build(&cost, &[goal], CostModel::TenFourteen).unwrap();
    /// let mut flow = FlowField::new(*cost.grid());
    /// b.flow_into(&mut flow).unwrap();
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let a = crowd.add_agent(&cost, AgentParams {
    ///     position: Vec2::new(2.5, 2.5), radius: 0.4, max_speed: 4.0, group: 0,
    /// }).unwrap();
    /// let groups = [Group { flow: &flow, goal: cost.grid().cell_center(goal) }];
    /// for _ in 0..400 {
    ///     crowd.step(0.05, &cost, &groups).unwrap();
    /// }
    /// assert_eq!(crowd.state(a).unwrap(), AgentState::Arrived);
    /// ```
    pub fn step(
        &mut self,
        dt: f32,
        cost: &CostField,
        groups: &[Group],
    ) -> Result<StepStats, CrowdError> {
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(CrowdError::BadValue {
                what: "dt",
                value: dt,
                reason: "must be a finite number, 0 or above",
            });
        }
        self.check_grid("cost field", cost.grid())?;
        for g in groups {
            self.check_grid("flow field", g.flow.grid())?;
            finite_vec("group goal", g.goal)?;
        }
        let (highest, fastest) = match self.highest_and_fastest {
            Some(reach) => reach,
            None => {
                let (flags, group_of) = (&self.flags, &self.groups);
                let max_speeds = &self.max_speeds;
                let reach = fold_chunks(
                    self.flags.len(),
                    &mut self.partial_reach,
                    (0, 0.0f32),
                    |range| {
                        range
                            .filter(|&i| flags[i] & ALIVE != 0)
                            .fold((0, 0.0f32), |(g, v), i| {
                                (g.max(group_of[i] as u32 + 1), larger(v, max_speeds[i]))
                            })
                    },
                    |a, b| (a.0.max(b.0), a.1.max(b.1)),
                );
                self.highest_and_fastest = Some(reach);
                reach
            }
        };
        if highest as usize > groups.len() {
            let i = (0..self.flags.len())
                .find(|&i| self.flags[i] & ALIVE != 0 && self.groups[i] as usize >= groups.len())
                .expect("an agent of a missing group");
            return Err(CrowdError::NoSuchGroup {
                id: self.ids[i],
                group: self.groups[i],
                groups: groups.len(),
            });
        }
        if self.sorted {
            // Bring the snapshot up to the positions the step starts from, so that the drift
            // (and the choice below) measures where everyone stands, whichever way the last step
            // went.
            self.refresh_snapshot();
        }
        let ng = &self.neighbours;
        if !self.sorted
            || ng.drift > RESORT_DRIFT * ng.cell
            || self.unsorted_steps >= MAX_UNSORTED_STEPS
        {
            self.sort_agents();
            self.unsorted_steps = 0;
        } else {
            // Everyone is still filed near enough to where it stands: keep the grid (the drift
            // covers the difference) and take the states the step starts from.
            self.unsorted_steps += 1;
            self.neighbours.states.copy_from_slice(&self.states);
        }
        let track = self.dense_steps == 0;
        self.make_room_for_few();
        // Everyone is about to move.
        self.snapshot_current = false;
        // A little more than a walking step (a few agents go a little further, nudged off a
        // neighbour or a wall): see `since` below.
        let calm = fastest * dt * 1.02;
        let ng = &mut self.neighbours;
        ng.cap = 4.0 * larger(self.config.separation_radius, 2.0 * ng.widest);
        if !track {
            self.dense_steps -= 1;
            self.clearance_unit = 0.0;
        }
        // The sort order is not needed again this step: its buffer holds each agent's clearance
        // (see `collision_pass`), so that costs no memory.
        let mut clearances = std::mem::take(&mut self.neighbours.slots);
        let ctx = StepContext {
            dt,
            config: &self.config,
            grid: self.grid,
            costs: cost.costs(),
            groups,
            neighbours: &self.neighbours,
            radii: &self.radii,
            max_speeds: &self.max_speeds,
            group_of: &self.groups,
            piles: &self.piles,
            clearance_unit: self.clearance_unit,
            track_clearances: track,
            calm,
        };
        // Each agent writes only its own entries; everything it reads of others is the snapshot
        // in the neighbour grid. So the step runs in place, in any order, on any thread count.
        let isa = self.isa();
        let work = |(k, ((((((pos, vel), state), anchor), timer), flags), clear)): AgentPiece| {
            let rows = AgentRows {
                first: k * PIECE,
                positions: pos,
                velocities: vel,
                states: state,
                anchors: anchor,
                timers: timer,
                flags,
                clearances: clear,
            };
            isa.update(&ctx, rows);
        };
        each_piece!(
            PIECE,
            work,
            self.positions,
            self.velocities,
            self.states,
            self.anchors,
            self.timers,
            self.flags,
            clearances
        );
        // What is known of the moves since the snapshot was last refreshed: everyone but the
        // agents in `pushed` moved at most this far (see `NeighbourGrid::take_moves`). The
        // step flagged those that moved further than walking pace (knocked by an overlap).
        let mut since = (track && self.list_pushed(false)).then_some(calm);
        #[cfg(test)]
        if let Some(calm) = since {
            // The promise that the collision passes' bookkeeping rests on.
            for k in 0..self.positions.len() {
                let own = move_bound(self.positions[k] - self.neighbours.point(k));
                let listed = self.pushed.contains(&(k as u32));
                assert!(own <= calm || listed, "agent {k} went {own}, past {calm}");
            }
        }
        for pass in 0..self.config.collision_passes {
            let sparse = pass > 0 && since == Some(0.0);
            // After a pass that pushed too many to list: those it pushed are flagged (see
            // `list_pushed`).
            let flagged = pass > 0 && since.is_none();
            #[cfg(test)]
            let (sparse, flagged) = (
                sparse && !self.search_everyone,
                flagged && !self.search_everyone,
            );
            if flagged {
                if track {
                    self.marked_pass::<true>(cost, &mut clearances);
                } else {
                    self.marked_pass::<false>(cost, &mut clearances);
                }
                since = self.list_pushed(false).then_some(0.0);
                continue;
            }
            let sparse = if track {
                self.collision_pass::<true>(cost, &mut clearances, since, sparse)
            } else {
                self.collision_pass::<false>(cost, &mut clearances, since, sparse)
            };
            since = self.list_pushed(sparse).then_some(0.0);
        }
        if track {
            self.keep_clearances(&mut clearances, since);
        }
        self.neighbours.slots = clearances;
        // The pile round each goal: arrived agents packed at about 80 % density fill a disc of
        // radius sqrt(sum of their areas / 0.8), plus the arrival radius and a body of slack.
        // (Area and widest radius per group, gathered in the reused `pile_parts`.)
        // Summed piece by piece in parallel, then the pieces in order: deterministic. The same
        // pass counts the states.
        let n = self.positions.len();
        let g = groups.len().max(1);
        let (flags, states, radii, group_of) =
            (&self.flags, &self.states, &self.radii, &self.groups);
        let pieces = n.div_ceil(CHUNK);
        self.pile_partials.clear();
        self.pile_partials.resize(pieces * g, (0.0, 0.0));
        self.partial_stats.clear();
        self.partial_stats.resize(pieces, StepStats::default());
        type Piece<'p> = (usize, (&'p mut [(f32, f32)], &'p mut StepStats));
        let work = |(c, (parts, stats)): Piece| {
            for i in c * CHUNK..((c + 1) * CHUNK).min(n) {
                if flags[i] & ALIVE == 0 {
                    continue;
                }
                match states[i] {
                    AgentState::Moving => stats.moving += 1,
                    AgentState::Arrived => {
                        stats.arrived += 1;
                        let (area, widest) = &mut parts[group_of[i] as usize];
                        *area += std::f32::consts::PI * radii[i] * radii[i];
                        *widest = widest.max(radii[i]);
                    }
                    AgentState::NoPath => stats.no_path += 1,
                }
                stats.stuck += (flags[i] & STUCK != 0) as usize;
            }
        };
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            self.pile_partials
                .par_chunks_mut(g)
                .zip(self.partial_stats.par_iter_mut())
                .enumerate()
                .for_each(work);
        }
        #[cfg(not(feature = "parallel"))]
        self.pile_partials
            .chunks_mut(g)
            .zip(self.partial_stats.iter_mut())
            .enumerate()
            .for_each(work);
        self.pile_parts.clear();
        self.pile_parts.resize(groups.len(), (0.0, 0.0));
        for parts in self.pile_partials.chunks(g) {
            for (total, part) in self.pile_parts.iter_mut().zip(parts) {
                total.0 += part.0;
                total.1 = total.1.max(part.1);
            }
        }
        self.piles.clear();
        self.piles.extend(self.pile_parts.iter().map(|&(a, r)| {
            self.config.arrival_radius + (a / (0.8 * std::f32::consts::PI)).sqrt() + 2.0 * r
        }));
        let stats = self
            .partial_stats
            .iter()
            .fold(StepStats::default(), |a, b| StepStats {
                moving: a.moving + b.moving,
                arrived: a.arrived + b.arrived,
                no_path: a.no_path + b.no_path,
                stuck: a.stuck + b.stuck,
            });
        Ok(stats)
    }

    /// The compilation of the per-agent loops that this CPU runs.
    fn isa(&self) -> Isa {
        #[cfg(test)]
        if self.baseline_only {
            return Isa::Baseline;
        }
        Isa::detect()
    }

    /// Take the current positions into the neighbour grid's snapshot, keeping the grid. Only
    /// while slot k is entry k (`sorted`). The clearances that the last step left in the sort
    /// order's buffer are not read again, so they are left as they are.
    fn refresh_snapshot(&mut self) {
        if self.snapshot_current {
            // Nothing moved since: the refresh would change no bits.
            #[cfg(test)]
            for (k, &p) in self.positions.iter().enumerate() {
                assert!(p == self.neighbours.point(k), "agent {k} moved since");
            }
            return;
        }
        self.snapshot_current = true;
        let mut scratch = std::mem::take(&mut self.neighbours.slots);
        scratch.resize(self.positions.len(), 0);
        self.neighbours.refresh_points::<false>(
            &self.positions,
            &mut scratch,
            &mut self.partial_moves,
        );
        self.neighbours.slots = scratch;
    }

    fn rebuild_neighbours(&mut self) {
        self.neighbours.rebuild(
            &self.positions,
            &self.flags,
            &self.radii,
            &self.states,
            self.alive,
        );
    }

    /// Carry each agent's clearance (see `collision_pass`) into the next step, as a lower bound
    /// at its final position kept in its flags: the next step's separation search then skips
    /// agents that cannot have anyone in reach (exactly: it would find no one).
    /// `since`: what is known of the moves since the snapshot was refreshed (see
    /// [`NeighbourGrid::take_moves`], with the agents in `pushed`).
    fn keep_clearances(&mut self, clearances: &mut [u32], since: Option<f32>) {
        // Bring the bounds up to the final positions.
        self.neighbours.take_moves::<true>(
            &self.positions,
            since,
            &self.pushed,
            clearances,
            &mut self.partial_moves,
        );
        let ng = &self.neighbours;
        // Levels fine enough for the reaches that matter (a few separation radii).
        let unit = self.config.separation_radius.max(2.0 * ng.widest) / 16.0;
        let (less, inv_unit) = (ng.moved + ng.slack, unit.recip());
        // In a dense crowd nearly everyone has someone in reach, and measuring clearances costs
        // more than the searches it saves: then do without for a while. Those clear of the
        // reach are counted in the same pass, piece by piece.
        let reach_level = ((self.config.separation_radius + ng.slack) * inv_unit) as u8 + 1;
        let n = self.flags.len();
        self.partial_counts.clear();
        self.partial_counts.resize(n.div_ceil(CHUNK), 0);
        let isa = self.isa();
        let work = |(c, (flags, count)): (usize, (&mut [u8], &mut u32))| {
            let clear = &clearances[c * CHUNK..c * CHUNK + flags.len()];
            *count = isa.levels(flags, clear, less, inv_unit, reach_level);
        };
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            self.flags
                .par_chunks_mut(CHUNK)
                .zip(self.partial_counts.par_iter_mut())
                .enumerate()
                .for_each(work);
        }
        #[cfg(not(feature = "parallel"))]
        self.flags
            .chunks_mut(CHUNK)
            .zip(self.partial_counts.iter_mut())
            .enumerate()
            .for_each(work);
        self.clearance_unit = unit;
        #[cfg(test)]
        if self.search_everyone {
            self.clearance_unit = 0.0;
        }
        let clear: u32 = self.partial_counts.iter().sum();
        if (clear as usize) < self.alive / 8 {
            self.dense_steps = DENSE_STEPS;
        }
        // (`take_moves` took the step's last moves.)
        self.snapshot_current = true;
    }

    /// Push overlapping agents apart, each by half of every overlap, reading a fresh snapshot.
    ///
    /// `clearances` holds, as `f32` bits, each agent's clearance from its last neighbour search,
    /// less how far it has moved since, plus how far anyone could have moved when it was
    /// measured (the grid's `moved`). Any other agent has moved at most the growth of `moved`
    /// since, or else lowered the entry to its distance when it moved (the few knocked further
    /// than a walking step, see [`NeighbourGrid::take_moves`]). So an agent whose entry, less
    /// `moved`, still exceeds its touching distance cannot touch anyone, and is skipped without
    /// a search (exactly: its push would be zero). In a spread-out crowd that is most agents.
    ///
    /// After a pass that pushed only a few agents (listed in `pushed`), the next one searches
    /// only them and the agents near where they stood and stand (`sparse`): everyone else
    /// touches the same unmoved neighbours as in that pass, where its push was zero, so it
    /// would be zero again. Each pass flags the agents it pushes. True if the pass was sparse
    /// (it goes over everyone when too many are near those pushed).
    ///
    /// `since`: what is known of the moves since the snapshot was refreshed (see
    /// [`NeighbourGrid::take_moves`], with the agents in `pushed`).
    fn collision_pass<const CLEARANCE: bool>(
        &mut self,
        cost: &CostField,
        clearances: &mut [u32],
        since: Option<f32>,
        sparse: bool,
    ) -> bool {
        let ctx = WallContext {
            grid: self.grid,
            costs: cost.costs(),
        };
        #[cfg(test)]
        let may_skip = !self.search_everyone;
        #[cfg(not(test))]
        let may_skip = true;
        if sparse && self.mark_near_pushed::<CLEARANCE>(clearances) {
            #[cfg(test)]
            {
                self.sparse_passes += 1;
            }
            for &i in &self.marked {
                let i = i as usize;
                self.flags[i] &= !MARKED;
                push_apart::<CLEARANCE>(
                    &self.neighbours,
                    &self.radii,
                    &ctx,
                    may_skip,
                    i,
                    &mut self.positions[i],
                    &mut self.flags[i],
                    &mut clearances[i],
                );
            }
            return true;
        }
        self.neighbours.take_moves::<CLEARANCE>(
            &self.positions,
            since,
            &self.pushed,
            clearances,
            &mut self.partial_moves,
        );
        let pass = PassContext {
            ng: &self.neighbours,
            radii: &self.radii,
            walls: ctx,
            may_skip,
            marks: None,
        };
        let isa = self.isa();
        let work = |(k, ((positions, flags), clearances)): PassPiece| {
            let first = k * PIECE;
            isa.pass::<CLEARANCE>(&pass, first, positions, flags, clearances);
        };
        each_piece!(PIECE, work, self.positions, self.flags, clearances);
        false
    }

    /// A collision pass after one that pushed too many agents to list: each agent the last
    /// pass pushed (still flagged, see [`Self::list_pushed`]) marks itself and everyone who
    /// touched it where it stood or touches it where it stands, in parallel, one bit per slot;
    /// then the snapshot takes the moves and only the marked agents are searched. Anyone else
    /// touched no one when the last pass began (or it would have been pushed), and no one that
    /// moved since comes near it: its push would be zero, so the bits are those of a pass over
    /// everyone. (Its clearance, if kept, stays the bound the refresh leaves.) In a crowd
    /// walking in lanes the first pass pushes a few agents in ten, and this pass searches a
    /// few in three instead of all.
    fn marked_pass<const CLEARANCE: bool>(&mut self, cost: &CostField, clearances: &mut [u32]) {
        #[cfg(test)]
        {
            self.marked_passes += 1;
        }
        let n = self.positions.len();
        self.marks.clear(n);
        let (ng, radii, positions) = (&self.neighbours, &self.radii, &self.positions);
        let (flags, marks) = (&self.flags, &self.marks);
        each_index(n, |m| {
            if flags[m] & PUSHED != 0 {
                ng.for_each_touched(m, positions[m], radii[m], |j| marks.set(j));
            }
        });
        self.neighbours.take_moves::<CLEARANCE>(
            &self.positions,
            None,
            &[],
            clearances,
            &mut self.partial_moves,
        );
        let ctx = WallContext {
            grid: self.grid,
            costs: cost.costs(),
        };
        let pass = PassContext {
            ng: &self.neighbours,
            radii: &self.radii,
            walls: ctx,
            may_skip: true,
            marks: Some(&self.marks),
        };
        let isa = self.isa();
        let work = |(k, ((positions, flags), clearances)): PassPiece| {
            let first = k * PIECE;
            isa.pass::<CLEARANCE>(&pass, first, positions, flags, clearances);
        };
        each_piece!(PIECE, work, self.positions, self.flags, clearances);
    }

    /// Most agents that the pushed list and the marked list hold.
    fn few(&self) -> usize {
        (self.positions.len() / 64).max(64)
    }

    /// Room in the pushed and marked lists for [`Self::few`] agents, and no more.
    fn make_room_for_few(&mut self) {
        let few = self.few();
        for list in [&mut self.pushed, &mut self.marked] {
            if list.capacity() < few {
                list.reserve_exact(few - list.len());
            }
        }
    }

    /// List the agents that the last collision pass flagged as pushed, and clear their flags.
    /// False if they are too many to list: then the list is empty and every one of them stays
    /// flagged (the next pass goes over everyone, or over those `marked_pass` marks). After a
    /// sparse pass only the marked agents can be flagged.
    fn list_pushed(&mut self, sparse: bool) -> bool {
        let few = self.few();
        self.pushed.clear();
        if sparse {
            for &i in &self.marked {
                let flags = &mut self.flags[i as usize];
                if *flags & PUSHED != 0 {
                    *flags &= !PUSHED;
                    self.pushed.push(i);
                }
            }
            return true;
        }
        // Eight flags at a time: in a spread-out crowd the pushed are rare. In a dense one the
        // list fills at once: then every one of them is left flagged, for the next pass.
        let any = u64::from_ne_bytes([PUSHED; 8]);
        let mut fits = true;
        'words: for (w, word) in self.flags.chunks_mut(8).enumerate() {
            // (A whole word is read as one number; the last, short one is simply searched.)
            if let Ok(bytes) = <[u8; 8]>::try_from(&*word)
                && u64::from_ne_bytes(bytes) & any == 0
            {
                continue;
            }
            for (k, flags) in word.iter_mut().enumerate() {
                if *flags & PUSHED != 0 {
                    if self.pushed.len() == few {
                        fits = false;
                        break 'words;
                    }
                    *flags &= !PUSHED;
                    self.pushed.push((w * 8 + k) as u32);
                }
            }
        }
        if !fits {
            for &i in &self.pushed {
                self.flags[i as usize] |= PUSHED;
            }
            self.pushed.clear();
        }
        fits
    }

    /// Before a sparse pass: take the moves of the agents the last pass pushed into the
    /// snapshot, and mark (in `marked`, slot order not kept) each of them and everyone who
    /// touched one where it stood or touches it where it stands. False, with nothing marked,
    /// if they are too many to list.
    fn mark_near_pushed<const CLEARANCE: bool>(&mut self, clearances: &mut [u32]) -> bool {
        let few = self.few();
        self.marked.clear();
        let (ng, radii, positions) = (&self.neighbours, &self.radii, &self.positions);
        let (flags, marked) = (&mut self.flags, &mut self.marked);
        let mut fits = true;
        for &m in &self.pushed {
            let m = m as usize;
            ng.for_each_touched(m, positions[m], radii[m], |j| {
                if flags[j] & MARKED == 0 {
                    if marked.len() == few {
                        fits = false;
                    } else {
                        flags[j] |= MARKED;
                        marked.push(j as u32);
                    }
                }
            });
            if !fits {
                break;
            }
        }
        if !fits {
            for &j in marked.iter() {
                flags[j as usize] &= !MARKED;
            }
            marked.clear();
            return false;
        }
        self.neighbours.take_moves::<CLEARANCE>(
            &self.positions,
            Some(0.0),
            &self.pushed,
            clearances,
            &mut self.partial_moves,
        );
        true
    }

    /// The worst overlap between two agents right now, as a fraction of the sum of their radii
    /// (0 = none touch more than they should, 1 = two centres coincide). O(agents × neighbours),
    /// in parallel; right after a step it reuses the step's neighbour grid (no re-sort).
    ///
    /// ```
    /// use glam::Vec2;
    /// use horde::crowd::{AgentParams, Crowd, CrowdConfig};
    /// let cost = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// for x in [2.5, 3.0] {
    ///     let params = AgentParams { position: Vec2::new(x, 2.5), radius: 0.5, max_speed: 1.0, group: 0 };
    ///     crowd.add_agent(&cost, params).unwrap();
    /// }
    /// assert!((crowd.max_overlap() - 0.5).abs() < 1e-6);
    /// ```
    pub fn max_overlap(&mut self) -> f32 {
        if self.sorted {
            self.refresh_snapshot();
        } else {
            self.sort_agents();
        }
        let (ng, radii, flags) = (&self.neighbours, &self.radii, &self.flags);
        fold_chunks(
            self.positions.len(),
            &mut self.partial_worst,
            0.0f32,
            |range| {
                let mut worst = 0.0f32;
                for k in range.filter(|&k| flags[k] & ALIVE != 0) {
                    let r = radii[k];
                    ng.for_each_near::<false>(ng.point(k), k, r + ng.widest, |j, _, d2| {
                        let sum = r + radii[j];
                        if j > k && flags[j] & ALIVE != 0 && d2 < sum * sum {
                            worst = worst.max((sum - d2.sqrt()) / sum);
                        }
                    });
                }
                worst
            },
            f32::max,
        )
    }
}

/// How far an agent moved by `d`, rounded up by a few ulps so that the clearance bounds hold
/// for the distances computed later. The step flags agents by the same number that the
/// snapshot's refresh takes off their clearances.
#[inline(always)]
fn move_bound(d: Vec2) -> f32 {
    d.length() * (1.0 + 1e-6)
}

/// Take one agent's move to `p` into its snapshot entry `(x, y)`: the largest move along an
/// axis and (with `CLEARANCE`) the largest move so far, and the move off its clearance.
#[inline(always)]
fn take_move<const CLEARANCE: bool>(
    p: Vec2,
    x: &mut f32,
    y: &mut f32,
    clear: &mut u32,
    along: &mut f32,
    most: &mut f32,
) {
    let d = p - Vec2::new(*x, *y);
    *along = larger(larger(*along, d.x.abs()), d.y.abs());
    if CLEARANCE {
        let own = move_bound(d);
        *most = larger(*most, own);
        *clear = (f32::from_bits(*clear) - own).to_bits();
    }
    (*x, *y) = (p.x, p.y);
}

/// The cell whose entries `starts[c]..starts[c + 1]` hold entry `e`.
fn filed_cell(starts: &[u32], e: usize) -> usize {
    starts.partition_point(|&s| s as usize <= e) - 1
}

/// Cell `cell`'s sides in grid units (x from, x to, y from, y to), open beyond the grid's edges,
/// where the edge cells take in whoever strays past them.
#[inline(always)]
fn cell_box(cell: usize, cols: usize, last: Vec2) -> [f32; 4] {
    let (x, y) = ((cell % cols) as f32, (cell / cols) as f32);
    let inf = f32::INFINITY;
    [
        if x > 0.0 { x } else { -inf },
        if x < last.x { x + 1.0 } else { inf },
        if y > 0.0 { y } else { -inf },
        if y < last.y { y + 1.0 } else { inf },
    ]
}

/// How far, in cells along either axis, `p` stands outside a cell's box (0 inside), computed
/// from the same grid position that files it.
#[inline(always)]
fn outside(p: Vec2, [x0, x1, y0, y1]: [f32; 4], origin: Vec2, inv_cell: f32) -> f32 {
    let g = (p - origin) * inv_cell;
    larger(
        larger(larger(x0 - g.x, g.x - x1), larger(y0 - g.y, g.y - y1)),
        0.0,
    )
}

/// One agent's share of a collision pass (see [`Crowd::collision_pass`]): the push away from
/// every agent it overlaps in the snapshot, its clearance, and the flag if it was pushed.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn push_apart<const CLEARANCE: bool>(
    ng: &NeighbourGrid,
    radii: &[f32],
    walls: &WallContext,
    may_skip: bool,
    i: usize,
    pos: &mut Vec2,
    flags: &mut u8,
    clear: &mut u32,
) {
    let p = *pos;
    let r = radii[i];
    let within = r + ng.widest;
    if CLEARANCE && may_skip && f32::from_bits(*clear) - ng.moved > within + ng.slack {
        return;
    }
    let mut shift = Vec2::ZERO;
    // Slot j is the grid's entry j (the step sorted the agents).
    let clearance = ng.for_each_near::<CLEARANCE>(p, i, within, |j, diff, d2| {
        let touch = r + radii[j];
        if d2 < touch * touch {
            let d = d2.sqrt();
            let overlap = touch - d;
            shift += coincident_safe_dir(diff, d, i as u32, j as u32) * (overlap * 0.5);
        }
    });
    if CLEARANCE {
        *clear = (smaller(clearance, ng.cap) + ng.moved).to_bits();
    }
    if shift != Vec2::ZERO {
        *pos = walls.slide(p, shift.clamp_length_max(0.45 * walls.grid.cell_size()), r);
        *flags |= PUSHED;
    }
}

/// The neighbour-grid cells (column, row) of two positions, `[x(a), y(a), x(b), y(b)]`, each
/// clamped to the grid.
#[inline(always)]
fn cells_of(a: Vec2, b: Vec2, origin: Vec2, inv_cell: f32, last: Vec2) -> [u32; 4] {
    // Clamped to `0..=last` (the last column and row, as floats: the sides are under 2^13, so
    // exact), so truncation is the floor and the clamp needs no integer compare.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is enabled at compile time (the cfg above); no memory is touched but
        // the local array the result is stored to. `cells_of_agrees_with_the_scalar_cells`
        // covers this against `cells_of_scalar`.
        unsafe {
            let v = _mm_setr_ps(a.x, a.y, b.x, b.y);
            let o = _mm_setr_ps(origin.x, origin.y, origin.x, origin.y);
            let top = _mm_setr_ps(last.x, last.y, last.x, last.y);
            let g = _mm_mul_ps(_mm_sub_ps(v, o), _mm_set1_ps(inv_cell));
            let g = _mm_min_ps(_mm_max_ps(g, _mm_setzero_ps()), top);
            let mut out = [0u32; 4];
            _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_cvttps_epi32(g));
            out
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    cells_of_scalar(a, b, origin, inv_cell, last)
}

/// [`cells_of`] one axis at a time.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn cells_of_scalar(a: Vec2, b: Vec2, origin: Vec2, inv_cell: f32, last: Vec2) -> [u32; 4] {
    let cell = |p: Vec2| {
        // Clamped at 0 first, so truncation is the floor (and needs no libm call).
        let g = ((p - origin) * inv_cell).max(Vec2::ZERO);
        (
            (g.x as u32).min(last.x as u32),
            (g.y as u32).min(last.y as u32),
        )
    };
    let ((ax, ay), (bx, by)) = (cell(a), cell(b));
    [ax, ay, bx, by]
}

/// How far (in cells) grid position `g` lies inside the block of cells `[x0, y0, x1, y1]`
/// from its nearest side that is not the grid's edge (infinite if every side is), for the
/// clearance bound of [`NeighbourGrid::for_each_near`]. Which side is nearest is anyone's
/// guess, so it is taken without branches.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn side_room(g: Vec2, [x0, y0, x1, y1]: [u32; 4], cols: u32, rows: u32) -> f32 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is enabled at compile time (the cfg above); no memory is touched.
    // `side_room_agrees_with_the_scalar_room` covers this against `side_room_scalar`.
    unsafe {
        let sides = _mm_setr_epi32(x0 as i32, y0 as i32, (x1 + 1) as i32, (y1 + 1) as i32);
        let edges = _mm_setr_epi32(0, 0, cols as i32, rows as i32);
        let open = _mm_castsi128_ps(_mm_cmpeq_epi32(sides, edges));
        let (at, s) = (_mm_setr_ps(g.x, g.y, g.x, g.y), _mm_cvtepi32_ps(sides));
        // From the low sides up to `g`, from `g` up to the high sides.
        let room = _mm_shuffle_ps::<0b11_10_01_00>(_mm_sub_ps(at, s), _mm_sub_ps(s, at));
        let inf = _mm_set1_ps(f32::INFINITY);
        let room = _mm_or_ps(_mm_andnot_ps(open, room), _mm_and_ps(open, inf));
        let m = _mm_min_ps(room, _mm_movehl_ps(room, room));
        _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps::<1>(m, m)))
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn side_room(g: Vec2, cells: [u32; 4], cols: u32, rows: u32) -> f32 {
    side_room_scalar(g, cells, cols, rows)
}

/// [`side_room`] one side at a time.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn side_room_scalar(g: Vec2, [x0, y0, x1, y1]: [u32; 4], cols: u32, rows: u32) -> f32 {
    let mut side = f32::INFINITY;
    if x0 > 0 {
        side = smaller(side, g.x - x0 as i32 as f32);
    }
    if x1 + 1 < cols {
        side = smaller(side, (x1 + 1) as i32 as f32 - g.x);
    }
    if y0 > 0 {
        side = smaller(side, g.y - y0 as i32 as f32);
    }
    if y1 + 1 < rows {
        side = smaller(side, (y1 + 1) as i32 as f32 - g.y);
    }
    side
}

/// The neighbour-grid cell index of a position.
#[inline(always)]
fn cell_index(p: Vec2, origin: Vec2, inv_cell: f32, cols: u32, last: Vec2) -> u32 {
    let [x, y, ..] = cells_of(p, p, origin, inv_cell, last);
    y * cols + x
}

/// The least of some squared distances, gathered [`LANES`] at a time by [`near_mask`].
#[derive(Clone, Copy)]
struct Least {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    lanes: std::arch::x86_64::__m128,
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    value: f32,
}

impl Least {
    #[inline(always)]
    fn none() -> Least {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            // SAFETY: SSE2 is enabled at compile time (the cfg) and no memory is touched.
            let lanes = unsafe { std::arch::x86_64::_mm_set1_ps(f32::INFINITY) };
            Least { lanes }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        Least {
            value: f32::INFINITY,
        }
    }

    #[inline(always)]
    fn value(self) -> f32 {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        // SAFETY: SSE2 is enabled at compile time (the cfg) and no memory is touched.
        unsafe {
            use std::arch::x86_64::*;
            let m = self.lanes;
            let m = _mm_min_ps(m, _mm_movehl_ps(m, m));
            _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps::<1>(m, m)))
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        self.value
    }
}

/// Bit `l` set where `(xs[l], ys[l])` lies closer to `p` than `sqrt(within2)`, except lane
/// `own` (no lane when `own >= LANES`); the squared distances of the other lanes go into
/// `least`. The distance is computed as [`Vec2::length_squared`] computes it, so it has the
/// same bits.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn near_mask(
    p: Vec2,
    xs: &[f32; LANES],
    ys: &[f32; LANES],
    within2: f32,
    own: usize,
    least: &mut Least,
) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is enabled at compile time (the cfg above; every x86-64 CPU has it); each
    // unaligned load reads 4 floats at offset 0 or 4 of an array of 8, or of a row of
    // `OWN_LANE`. The compiler does not find the compare-to-bitmask pattern on its own (its
    // reduction costs 3x the instructions); `near_mask_agrees_with_the_scalar_distance`
    // covers this against `near_mask_scalar`.
    unsafe {
        let (px, py, w2) = (_mm_set1_ps(p.x), _mm_set1_ps(p.y), _mm_set1_ps(within2));
        // Infinity in the own lane, so that it is neither near nor the least.
        let skip = OWN_LANE[own.min(LANES)].as_ptr();
        let half = |l: usize| {
            let x = _mm_loadu_ps(xs.as_ptr().add(l));
            let y = _mm_loadu_ps(ys.as_ptr().add(l));
            let (dx, dy) = (_mm_sub_ps(px, x), _mm_sub_ps(py, y));
            let d2 = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
            let d2 = _mm_add_ps(d2, _mm_loadu_ps(skip.add(l)));
            (_mm_movemask_ps(_mm_cmplt_ps(d2, w2)) as u32, d2)
        };
        let ((lo, a), (hi, b)) = (half(0), half(4));
        least.lanes = _mm_min_ps(least.lanes, _mm_min_ps(a, b));
        lo | hi << 4
    }
}

/// Row `l` is infinite in lane `l` only (row [`LANES`] nowhere), for [`near_mask`].
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
static OWN_LANE: [[f32; LANES]; LANES + 1] = {
    let mut rows = [[0.0; LANES]; LANES + 1];
    let mut l = 0;
    while l < LANES {
        rows[l][l] = f32::INFINITY;
        l += 1;
    }
    rows
};

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn near_mask(
    p: Vec2,
    xs: &[f32; LANES],
    ys: &[f32; LANES],
    within2: f32,
    own: usize,
    least: &mut Least,
) -> u32 {
    let (mask, low) = near_mask_scalar(p, xs, ys, within2, own);
    least.value = least.value.min(low);
    mask
}

/// [`near_mask`] one lane at a time.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn near_mask_scalar(
    p: Vec2,
    xs: &[f32; LANES],
    ys: &[f32; LANES],
    within2: f32,
    own: usize,
) -> (u32, f32) {
    let (mut mask, mut least) = (0u32, f32::INFINITY);
    for l in (0..LANES).filter(|&l| l != own) {
        let d2 = (p - Vec2::new(xs[l], ys[l])).length_squared();
        mask |= ((d2 < within2) as u32) << l;
        least = least.min(d2);
    }
    (mask, least)
}

/// Agents per piece of a [`fold_chunks`] or [`each_chunk`] reduction.
const CHUNK: usize = 8192;

/// Fold `0..n` in pieces of [`CHUNK`] (in parallel with `parallel`), then combine the pieces'
/// results in order: the same bits whatever the number of threads, even for float sums.
fn fold_chunks<T: Copy + Send + Sync>(
    n: usize,
    partials: &mut Vec<T>,
    identity: T,
    part: impl Fn(std::ops::Range<usize>) -> T + Sync,
    combine: impl Fn(T, T) -> T,
) -> T {
    partials.clear();
    partials.resize(n.div_ceil(CHUNK), identity);
    each_chunk(partials, 1, |c, out| {
        out[0] = part(c * CHUNK..((c + 1) * CHUNK).min(n))
    });
    partials.iter().copied().fold(identity, combine)
}

/// Call `work(c, &mut out[c * width..(c + 1) * width])` for every piece `c` (in parallel with
/// `parallel`).
fn each_chunk<T: Send>(out: &mut [T], width: usize, work: impl Fn(usize, &mut [T]) + Sync) {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(width)
            .enumerate()
            .for_each(|(c, o)| work(c, o));
    }
    #[cfg(not(feature = "parallel"))]
    for (c, o) in out.chunks_mut(width).enumerate() {
        work(c, o);
    }
}

/// `work(k)` for every `k` in `0..n` (in parallel with `parallel`).
fn each_index(n: usize, work: impl Fn(usize) + Sync + Send) {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        (0..n).into_par_iter().with_min_len(2048).for_each(work);
    }
    #[cfg(not(feature = "parallel"))]
    (0..n).for_each(work);
}

/// One bit per slot, set from any thread (see [`Crowd::marked_pass`]): 1/8 byte per agent.
#[derive(Debug, Default)]
struct MarkBits(Vec<std::sync::atomic::AtomicU64>);

impl Clone for MarkBits {
    /// Marks live within one collision pass, which a clone cannot interrupt: a clone starts
    /// without any.
    fn clone(&self) -> MarkBits {
        MarkBits::default()
    }
}

impl MarkBits {
    /// No marks, for `n` slots (allocating only when the crowd grew).
    fn clear(&mut self, n: usize) {
        for word in &mut self.0 {
            *word.get_mut() = 0;
        }
        let words = n.div_ceil(64);
        if self.0.len() < words {
            self.0
                .resize_with(words, || std::sync::atomic::AtomicU64::new(0));
        }
    }

    fn set(&self, i: usize) {
        // Only bits are ever set, so the order of the threads' writes does not matter.
        self.0[i / 64].fetch_or(1 << (i % 64), std::sync::atomic::Ordering::Relaxed);
    }

    fn get(&self, i: usize) -> bool {
        self.0[i / 64].load(std::sync::atomic::Ordering::Relaxed) >> (i % 64) & 1 != 0
    }
}

/// `out[k] = value(k)` for every `k` (in parallel with `parallel`).
fn fill<T: Send>(out: &mut [T], value: impl Fn(usize) -> T + Sync) {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        out.par_iter_mut()
            .enumerate()
            .with_min_len(4096)
            .for_each(|(k, o)| *o = value(k));
    }
    #[cfg(not(feature = "parallel"))]
    for (k, o) in out.iter_mut().enumerate() {
        *o = value(k);
    }
}

/// `out[k] = value(order[k])` for every sorted entry `k` (in parallel with `parallel`).
fn gather(order: &[u32], out: &mut [Vec2], value: impl Fn(usize) -> Vec2 + Sync) {
    fill(&mut out[..order.len()], |k| value(order[k] as usize));
}

/// Split gathered pairs back into their two arrays, which end up `packed.len()` long.
fn unpack<A, B>(
    packed: &[Vec2],
    a: &mut Vec<A>,
    b: &mut Vec<B>,
    split: impl Fn(Vec2) -> (A, B) + Sync,
) where
    A: Copy + Default + Send,
    B: Copy + Default + Send,
{
    a.resize(packed.len(), A::default());
    b.resize(packed.len(), B::default());
    let work = |(k, (a, b)): (usize, (&mut A, &mut B))| (*a, *b) = split(packed[k]);
    each_agent!(work, a, b);
}

/// The larger of two numbers that are not NaN: one instruction, where `f32::max` needs several
/// to handle NaN.
#[inline(always)]
fn larger(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// The smaller of two numbers that are not NaN (see [`larger`]).
#[inline(always)]
fn smaller(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

fn finite_vec(what: &'static str, v: Vec2) -> Result<(), CrowdError> {
    for value in [v.x, v.y] {
        if !value.is_finite() {
            return Err(CrowdError::BadValue {
                what,
                value,
                reason: "must be finite",
            });
        }
    }
    Ok(())
}

/// Moving a body among walls.
struct WallContext<'a> {
    grid: Grid,
    costs: &'a [u8],
}

impl WallContext<'_> {
    /// Move by `step` (under half a cell), one axis at a time, never into a wall cell: the body
    /// slides along walls, and a diagonal move is two straight ones, so it cannot squeeze
    /// between two wall corners. Then keep the body `radius` off the walls beside it where
    /// the cell leaves room.
    #[inline(always)]
    fn slide(&self, p: Vec2, step: Vec2, radius: f32) -> Vec2 {
        let g = self.grid;
        let w = g.width() as usize;
        // The cells of where the body stands and of where the step would take it, each axis
        // as `world_to_cell` finds it, all four in one go.
        let to = p + step;
        let ([cx, cy, ncx, ncy], on) = g.axes_of_two(p, to);
        let open = |x: u32, y: u32| self.costs[y as usize * w + x as usize] != WALL;
        let (mut x, mut cx, mut x_on) = (p.x, cx, on & 1 != 0);
        let y_on = on & 2 != 0;
        if on & 4 != 0 && y_on && open(ncx, cy) {
            (x, cx, x_on) = (to.x, ncx, true);
        }
        let (mut y, mut cy, mut y_on) = (p.y, cy, y_on);
        if x_on && on & 8 != 0 && open(cx, ncy) {
            (y, cy, y_on) = (to.y, ncy, true);
        }
        let pos = Vec2::new(x, y);
        if x_on && y_on {
            let r = smaller(radius, 0.45 * g.cell_size());
            self.push_off_walls(pos, UVec2::new(cx, cy), r)
        } else {
            pos
        }
    }

    /// Keep a body of radius `r` at `p`, in cell `c`, off the walls beside it.
    #[inline(always)]
    fn push_off_walls(&self, p: Vec2, c: UVec2, r: f32) -> Vec2 {
        let g = self.grid;
        let lo = g.origin() + c.as_vec2() * g.cell_size();
        let hi = lo + g.cell_size();
        let (w, h) = (g.width() as usize, g.height() as usize);
        let (x, y) = (c.x as usize, c.y as usize);
        let i = y * w + x;
        let mut q = p;
        if x == 0 || self.costs[i - 1] == WALL {
            q.x = larger(q.x, lo.x + r);
        }
        if x + 1 == w || self.costs[i + 1] == WALL {
            q.x = smaller(q.x, hi.x - r);
        }
        if y == 0 || self.costs[i - w] == WALL {
            q.y = larger(q.y, lo.y + r);
        }
        if y + 1 == h || self.costs[i + w] == WALL {
            q.y = smaller(q.y, hi.y - r);
        }
        q
    }
}

/// The unit vector from neighbour `j` to agent `i`; coincident agents split deterministically,
/// along a direction made from the pair's slots, never by a random draw.
fn coincident_safe_dir(diff: Vec2, d: f32, i: u32, j: u32) -> Vec2 {
    if d > 1e-5 {
        return diff / d;
    }
    let (lo, hi) = (i.min(j), i.max(j));
    let a = lo.wrapping_mul(2_654_435_761) ^ hi.wrapping_mul(40_503);
    let angle = (a % 3600) as f32 * (std::f32::consts::TAU / 3600.0);
    let v = Vec2::new(angle.cos(), angle.sin());
    if i < j { v } else { -v }
}

/// What an agent learns from its nearest neighbours.
struct Contacts {
    /// DetourCrowd's separation push.
    push: Vec2,
    /// Touching an arrived agent of its group that is nearer the goal.
    blocked_by_arrived: bool,
    /// Touching an arrived agent of its group.
    touching_arrived: bool,
    /// Half of every overlap, as a displacement away from the neighbours.
    unpenetrate: Vec2,
    /// Unit vectors from touching neighbours to the agent.
    normals: [Vec2; 16],
    /// How many of `normals` are set.
    touching: usize,
    /// A lower bound on the distance to every other agent ([`NeighbourGrid::for_each_near`]).
    clearance: f32,
}

/// A piece of every slot array that the update writes, as [`each_piece`] hands them out.
type AgentPiece<'r> = (
    usize,
    (
        (
            (
                (
                    ((&'r mut [Vec2], &'r mut [Vec2]), &'r mut [AgentState]),
                    &'r mut [f32],
                ),
                &'r mut [f32],
            ),
            &'r mut [u8],
        ),
        &'r mut [u32],
    ),
);

/// The entries of the slots `first..first + positions.len()` that the update writes.
struct AgentRows<'r> {
    first: usize,
    positions: &'r mut [Vec2],
    velocities: &'r mut [Vec2],
    states: &'r mut [AgentState],
    anchors: &'r mut [f32],
    timers: &'r mut [f32],
    flags: &'r mut [u8],
    clearances: &'r mut [u32],
}

/// Slots per piece of the loops that [`Isa`] dispatches: small enough to balance two threads
/// on 10,000 agents, large enough that the dispatch is free.
const PIECE: usize = 1024;

/// Which compilation of the per-agent loops runs: the baseline x86-64 (SSE2) one, or one for
/// x86-64-v3 (AVX2, BMI1/2, LZCNT: three-operand instructions and bit tricks, about a tenth
/// fewer instructions per agent-step on the spread-out 100,000 crowd). Rust never fuses a
/// multiply and an add on its own, so both give the same bits (tested).
#[derive(Clone, Copy)]
enum Isa {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    V3,
}

impl Isa {
    /// What this CPU runs (detected once by the standard library, then a cached load).
    fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("popcnt") {
                return Isa::V3;
            }
        }
        Isa::Baseline
    }

    /// The update of every living agent among `rows`.
    fn update(self, ctx: &StepContext, rows: AgentRows) {
        match self {
            Isa::Baseline => update_rows(ctx, rows),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `detect` chose V3 only where the CPU has every feature that
            // `update_rows_v3` is compiled for, its only requirement; the function itself is
            // safe code. `both_compilations_give_the_same_bits` runs it.
            Isa::V3 => unsafe { update_rows_v3(ctx, rows) },
        }
    }
}

/// A piece of the slots that a collision pass writes, as [`each_piece`] hands them out.
type PassPiece<'r> = (usize, ((&'r mut [Vec2], &'r mut [u8]), &'r mut [u32]));

/// What a collision pass reads.
struct PassContext<'a> {
    ng: &'a NeighbourGrid,
    radii: &'a [f32],
    walls: WallContext<'a>,
    may_skip: bool,
    /// Only the agents marked here are searched (all if `None`).
    marks: Option<&'a MarkBits>,
}

impl Isa {
    /// A collision pass over the slots `first..first + positions.len()`.
    fn pass<const CLEARANCE: bool>(
        self,
        ctx: &PassContext,
        first: usize,
        positions: &mut [Vec2],
        flags: &mut [u8],
        clearances: &mut [u32],
    ) {
        match self {
            Isa::Baseline => pass_rows::<CLEARANCE>(ctx, first, positions, flags, clearances),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as in `Isa::update`.
            Isa::V3 => unsafe {
                pass_rows_v3::<CLEARANCE>(ctx, first, positions, flags, clearances)
            },
        }
    }
}

#[inline(always)]
fn pass_rows<const CLEARANCE: bool>(
    ctx: &PassContext,
    first: usize,
    positions: &mut [Vec2],
    flags: &mut [u8],
    clearances: &mut [u32],
) {
    let entries = positions
        .iter_mut()
        .zip(flags.iter_mut())
        .zip(clearances.iter_mut());
    for (i, ((pos, flags), clear)) in (first..).zip(entries) {
        // (Left set if the last pass pushed too many to list.)
        *flags &= !PUSHED;
        if *flags & ALIVE != 0 && ctx.marks.is_none_or(|marks| marks.get(i)) {
            let (ng, radii, may_skip) = (ctx.ng, ctx.radii, ctx.may_skip);
            push_apart::<CLEARANCE>(ng, radii, &ctx.walls, may_skip, i, pos, flags, clear);
        }
    }
}

/// [`pass_rows`] compiled for x86-64-v3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
fn pass_rows_v3<const CLEARANCE: bool>(
    ctx: &PassContext,
    first: usize,
    positions: &mut [Vec2],
    flags: &mut [u8],
    clearances: &mut [u32],
) {
    pass_rows::<CLEARANCE>(ctx, first, positions, flags, clearances)
}

impl Isa {
    /// [`clearance_levels`], in this compilation.
    fn levels(self, flags: &mut [u8], clear: &[u32], less: f32, inv_unit: f32, reach: u8) -> u32 {
        match self {
            Isa::Baseline => clearance_levels(flags, clear, less, inv_unit, reach),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as in `Isa::update`.
            Isa::V3 => unsafe { clearance_levels_v3(flags, clear, less, inv_unit, reach) },
        }
    }
}

/// Each agent's clearance (`f32` bits), less `less`, in levels of `1 / inv_unit` rounded down,
/// into the flags' clearance bits; returns how many reach `reach` levels. Written so that the
/// loop vectorises: NaN (from infinities) goes to 0 through `max`, and the clamped level
/// converts exactly.
#[inline(always)]
fn clearance_levels(flags: &mut [u8], clear: &[u32], less: f32, inv_unit: f32, reach: u8) -> u32 {
    let mut count = 0u32;
    for (flags, &clearance) in flags.iter_mut().zip(clear) {
        let bound = (f32::from_bits(clearance) - less) * inv_unit;
        // Rounded down (and NaN to 0): still a lower bound. (`clamp` would keep NaN, and its
        // conversion would then need the saturating path that does not vectorise.)
        #[allow(clippy::manual_clamp)]
        let level = bound.max(0.0).min(CLEARANCE_LEVELS) as i32 as u8;
        *flags = *flags & ((1 << CLEARANCE_SHIFT) - 1) | level << CLEARANCE_SHIFT;
        count += (level >= reach) as u32;
    }
    count
}

/// [`clearance_levels`] compiled for x86-64-v3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
fn clearance_levels_v3(
    flags: &mut [u8],
    clear: &[u32],
    less: f32,
    inv_unit: f32,
    reach: u8,
) -> u32 {
    clearance_levels(flags, clear, less, inv_unit, reach)
}

#[inline(always)]
fn update_rows(ctx: &StepContext, rows: AgentRows) {
    let entries = rows
        .positions
        .iter_mut()
        .zip(rows.velocities.iter_mut())
        .zip(rows.states.iter_mut())
        .zip(rows.anchors.iter_mut())
        .zip(rows.timers.iter_mut())
        .zip(rows.flags.iter_mut())
        .zip(rows.clearances.iter_mut());
    for (i, ((((((pos, vel), state), anchor), timer), flags), clear)) in (rows.first..).zip(entries)
    {
        if *flags & ALIVE != 0 {
            ctx.agent(i, pos, vel, state, anchor, timer, flags, clear);
        }
    }
}

/// [`update_rows`] compiled for x86-64-v3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
fn update_rows_v3(ctx: &StepContext, rows: AgentRows) {
    update_rows(ctx, rows)
}

struct StepContext<'a> {
    dt: f32,
    config: &'a CrowdConfig,
    grid: Grid,
    costs: &'a [u8],
    groups: &'a [Group<'a>],
    neighbours: &'a NeighbourGrid,
    radii: &'a [f32],
    max_speeds: &'a [f32],
    group_of: &'a [u16],
    piles: &'a [f32],
    clearance_unit: f32,
    track_clearances: bool,
    /// Agents that move further than this are flagged `PUSHED` (when clearances are tracked).
    calm: f32,
}

impl StepContext<'_> {
    /// True if the straight segment from `a` to `b` crosses no wall cell, squeezes past no wall
    /// corner, and crosses no terrain costlier than the cell it starts on, walking the cells it
    /// passes through. (The field may go round costly terrain; a line through it would pull the
    /// agent off the field's way at one spot and let it back at the next, and it would swing
    /// between the two.)
    fn clear_line(&self, a: Vec2, b: Vec2) -> bool {
        let g = self.grid;
        let (pa, pb) = (g.world_to_grid(a), g.world_to_grid(b));
        let cost = |x: f32, y: f32| {
            if x < 0.0 || y < 0.0 || x >= g.width() as f32 || y >= g.height() as f32 {
                WALL
            } else {
                self.costs[y as usize * g.width() as usize + x as usize]
            }
        };
        let mut prev = pa.floor();
        let start = cost(prev.x, prev.y);
        if start == WALL {
            return false;
        }
        let d = pb - pa;
        let steps = (d.x.abs().max(d.y.abs()) * 2.0).ceil().max(1.0) as u32;
        for s in 1..=steps {
            let q = (pa + d * (s as f32 / steps as f32)).floor();
            if q != prev {
                let wall = |x: f32, y: f32| cost(x, y) == WALL;
                if cost(q.x, q.y) > start
                    || (q.x != prev.x && q.y != prev.y && (wall(q.x, prev.y) || wall(prev.x, q.y)))
                {
                    return false;
                }
                prev = q;
            }
        }
        true
    }

    /// One agent's step, written into its own entries.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn agent(
        &self,
        i: usize,
        position: &mut Vec2,
        velocity: &mut Vec2,
        agent_state: &mut AgentState,
        anchor: &mut f32,
        timer: &mut f32,
        flags: &mut u8,
        clearance: &mut u32,
    ) {
        let cfg = self.config;
        let (p, v) = (*position, *velocity);
        let max_speed = self.max_speeds[i];
        let grp = &self.groups[self.group_of[i] as usize];
        let to_goal = grp.goal - p;
        let dist_goal = to_goal.length();
        let radius = self.radii[i];

        // Where the field says to go.
        let sample = match cfg.sampling {
            Sampling::Nearest => grp.flow.sample_nearest(p),
            Sampling::Bilinear => grp.flow.bilinear(p),
        };
        let mut state = AgentState::Moving;
        let mut desired = match sample {
            FlowSample::Direction(d) => d,
            FlowSample::Goal => to_goal.normalize_or_zero(),
            // Pushed onto a cell its field walls off although the map does not (a size class's
            // inflated field): head back to the nearest cell of the field that has a way.
            FlowSample::NoDirection(NoDirection::Wall) => match self.way_back(grp.flow, p) {
                Some(d) => d,
                None => {
                    state = AgentState::NoPath;
                    Vec2::ZERO
                }
            },
            FlowSample::NoDirection(_) => {
                state = AgentState::NoPath;
                Vec2::ZERO
            }
        };
        // Arrival sticks: an arrived agent that is jostled stays arrived (it only gives way).
        if state == AgentState::Moving
            && (dist_goal <= cfg.arrival_radius || *agent_state == AgentState::Arrived)
        {
            state = AgentState::Arrived;
        }
        if state == AgentState::Moving
            && dist_goal <= cfg.line_of_sight_range
            && dist_goal > 1e-6
            && self.goal_cell(grp, p)
            && self.clear_line(p, grp.goal)
        {
            desired = to_goal / dist_goal;
        }
        if state != AgentState::Moving {
            desired = Vec2::ZERO;
        }

        // Separation from the k nearest neighbours (DetourCrowd's kernel).
        // The clearance kept from the last step, still a lower bound: no one moved since.
        let known = (*flags >> CLEARANCE_SHIFT) as f32 * self.clearance_unit;
        let contact = self.separation(i, p, radius, state, grp.goal, dist_goal, known);
        // Measured on the snapshot the step starts from.
        let ng = self.neighbours;
        *clearance = (smaller(contact.clearance, ng.cap) + ng.moved).to_bits();
        let (sep, blocked_by_arrived, unpenetrate) = (
            contact.push,
            contact.blocked_by_arrived,
            contact.unpenetrate,
        );
        // A moving agent pressed against an arrived one that is nearer the goal is as close as
        // it will get: it arrives too, so a crowd piles up round its flag instead of pushing.
        let pile = self
            .piles
            .get(self.group_of[i] as usize)
            .copied()
            .unwrap_or(cfg.arrival_radius);
        if state == AgentState::Moving && blocked_by_arrived && dist_goal <= pile {
            state = AgentState::Arrived;
            desired = Vec2::ZERO;
        }

        let mut target = if state == AgentState::NoPath {
            Vec2::ZERO
        } else {
            let blend = desired * cfg.flow_weight + sep * cfg.separation_weight;
            let speed = if state == AgentState::Arrived {
                // Arrived agents only give way, at most at walking pace.
                (sep.length() * cfg.separation_weight).min(1.0) * max_speed
            } else if cfg.slowdown_radius > 0.0 {
                max_speed * (dist_goal / cfg.slowdown_radius).clamp(0.25, 1.0)
            } else {
                max_speed
            };
            blend.normalize_or_zero() * speed
        };
        if !target.is_finite() {
            target = Vec2::ZERO;
        }
        let dv = (target - v).clamp_length_max(cfg.max_acceleration * self.dt);
        let mut vel = (v + dv).clamp_length_max(max_speed);
        // Nobody walks into someone they already touch: the part of the velocity heading into a
        // touching neighbour is removed, so a queue at a door presses no deeper than contact.
        for n in &contact.normals[..contact.touching] {
            let into = vel.dot(*n);
            if into < 0.0 {
                vel -= *n * into;
            }
        }

        // Move, one axis at a time, never into a wall cell: the agent slides along walls and a
        // diagonal move is two straight ones, so it cannot squeeze between two wall corners.
        let cell = self.grid.cell_size();
        // The velocity's step plus half of every overlap with a neighbour (the neighbour moves the
        // other half in its own update), as DetourCrowd's collision resolution does.
        let step = (vel * self.dt + unpenetrate).clamp_length_max(0.45 * cell);
        let walls = WallContext {
            grid: self.grid,
            costs: self.costs,
        };
        let pos = walls.slide(p, step, radius);
        // A blocked axis stops the velocity along it, so it does not build up against a wall.
        let moved = pos - p;
        if moved.x.abs() < 0.5 * step.x.abs() {
            vel.x = 0.0;
        }
        if moved.y.abs() < 0.5 * step.y.abs() {
            vel.y = 0.0;
        }

        // Stuck: no straight-line progress towards the goal for `stuck_time`.
        // (The clearance bits are read above, and written again at the end of the step if
        // they are kept: clear, they serve the collision passes.)
        *flags &= ALIVE;
        *timer += self.dt;
        if state != AgentState::Moving || *anchor - dist_goal >= cfg.stuck_distance {
            *anchor = dist_goal;
            *timer = 0.0;
        } else if *timer >= cfg.stuck_time {
            if dist_goal <= pile + cfg.slowdown_radius || contact.touching_arrived {
                // Held up near the goal, or against agents of its group that got there first
                // (in a winding corridor or a crowded dead end the queue reaches beyond the
                // pile, and what blocks it need not lie straight ahead): as close as it will
                // get.
                state = AgentState::Arrived;
                *timer = 0.0;
            } else {
                *flags |= STUCK;
            }
        }
        if self.track_clearances && move_bound(pos - p) > self.calm {
            *flags |= PUSHED;
        }
        *position = pos;
        *velocity = vel;
        *agent_state = state;
    }

    /// For an agent on a walkable map cell that its flow field marks as wall: the direction to
    /// the centre of the first neighbouring cell (in direction order) where the field has a way.
    fn way_back(&self, flow: &FlowField, p: Vec2) -> Option<Vec2> {
        let cell = self.grid.world_to_cell(p)?;
        let w = self.grid.width() as usize;
        if self.costs[cell.y as usize * w + cell.x as usize] == WALL {
            return None;
        }
        Dir8::ALL.into_iter().find_map(|d| {
            let n = self.grid.neighbour(cell, d)?;
            let b = flow.byte(n)?;
            (b <= FLOW_GOAL).then(|| (self.grid.cell_center(n) - p).normalize_or_zero())
        })
    }

    /// True if the agent's flow field has a goal cell at the group's goal position (so a straight
    /// line at the goal point heads for that goal).
    fn goal_cell(&self, grp: &Group, _p: Vec2) -> bool {
        self.grid
            .world_to_cell(grp.goal)
            .is_some_and(|c| grp.flow.byte(c) == Some(FLOW_GOAL))
    }

    /// The separation push and the contacts with the nearest neighbours.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn separation(
        &self,
        i: usize,
        p: Vec2,
        radius: f32,
        state: AgentState,
        goal: Vec2,
        dist_goal: f32,
        known: f32,
    ) -> Contacts {
        let cfg = self.config;
        let ng = self.neighbours;
        let k = cfg.max_neighbours.min(16);
        let mut contacts = Contacts {
            push: Vec2::ZERO,
            blocked_by_arrived: false,
            touching_arrived: false,
            unpenetrate: Vec2::ZERO,
            normals: [Vec2::ZERO; 16],
            touching: 0,
            clearance: known,
        };
        let reach = larger(cfg.separation_radius, 2.0 * radius);
        if k == 0 || known > reach + ng.slack {
            // No one to push (or no one in reach: the search would find nobody).
            return contacts;
        }
        let reach2 = reach * reach;
        // The k nearest, kept sorted by (distance², slot) so that ties break the same way on
        // every run.
        let mut best: [(f32, u32); 16] = [(f32::INFINITY, u32::MAX); 16];
        let mut count = 0usize;
        // Slot j is the grid's entry j (the step sorted the agents).
        let visit = |e: usize, _, d2: f32| {
            let j = e as u32;
            let entry = (d2, j);
            if count < k {
                best[count] = entry;
                count += 1;
            } else if (d2, j) < (best[k - 1].0, best[k - 1].1) {
                best[k - 1] = entry;
            } else {
                return;
            }
            // Insertion step: move the new entry to its place.
            let mut m = count - 1;
            while m > 0 && (best[m].0, best[m].1) < (best[m - 1].0, best[m - 1].1) {
                best.swap(m, m - 1);
                m -= 1;
            }
        };
        contacts.clearance = if self.track_clearances {
            ng.for_each_near::<true>(p, i, reach, visit)
        } else {
            ng.for_each_near::<false>(p, i, reach, visit)
        };
        let mut sum = Vec2::ZERO;
        let mut unpenetrate = Vec2::ZERO;
        let mut blocked = false;
        let mut touching_arrived = false;
        for &(d2, j) in &best[..count] {
            let e = j as usize;
            let diff = p - ng.point(e);
            let d = d2.sqrt();
            let other = ng.states[e];
            let touch = (radius + self.radii[j as usize]) * 1.5;
            if other == AgentState::Arrived
                && d < touch
                && (p - diff).distance(goal) < dist_goal
                && self.group_of[j as usize] == self.group_of[i]
            {
                blocked = true;
            }
            if other == AgentState::Arrived
                && d < touch
                && self.group_of[j as usize] == self.group_of[i]
            {
                touching_arrived = true;
            }
            let w = 1.0 - d2 / reach2;
            let dir = coincident_safe_dir(diff, d, i as u32, j);
            let overlap = radius + self.radii[j as usize] - d;
            if overlap > 0.0 {
                unpenetrate += dir * (overlap * 0.5);
            }
            if overlap > -0.05 * radius {
                contacts.normals[contacts.touching] = dir;
                contacts.touching += 1;
            }
            let mut weight = w;
            if state == AgentState::Arrived && other == AgentState::Moving {
                weight *= cfg.arrived_yield;
            } else if state == AgentState::Moving && other == AgentState::Arrived {
                weight /= cfg.arrived_yield.max(1.0);
            }
            sum += dir * weight;
        }
        contacts.push = if count > 0 {
            sum / count as f32
        } else {
            Vec2::ZERO
        };
        contacts.blocked_by_arrived = blocked;
        contacts.touching_arrived = touching_arrived;
        contacts.unpenetrate = unpenetrate;
        contacts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CostModel, IntegrationBuilder};

    fn field(cost: &CostField, goal: UVec2) -> FlowField {
        let mut b = IntegrationBuilder::new();
        b.build(cost, &[goal], CostModel::TenFourteen).unwrap();
        let mut f = FlowField::new(*cost.grid());
        b.flow_into(&mut f).unwrap();
        f
    }

    /// A fixed pseudo-random sequence in `0..1` (xorshift), for tests that need many cases.
    fn uniform(seed: u64) -> impl FnMut() -> f32 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    /// A scattered map of `side`², its walkable cells, a goal among them and its flow field.
    fn scattered_scene(side: u32, seed: u64) -> (CostField, Vec<UVec2>, UVec2, FlowField) {
        let cost = crate::maps::scattered_map(side, side, seed).unwrap();
        let walkable: Vec<UVec2> = (0..cost.grid().len())
            .map(|i| cost.grid().cell(i))
            .filter(|&c| cost.is_walkable(c))
            .collect();
        let target = walkable[walkable.len() / 2];
        let flow = field(&cost, target);
        (cost, walkable, target, flow)
    }

    /// `n` random points in a square of side `side` somewhere within `spread` of the origin,
    /// filed in a neighbour grid (reach 1, radius 0.3), and the points in the grid's order.
    fn scattered_grid(
        next: &mut impl FnMut() -> f32,
        n: usize,
        side: f32,
        spread: f32,
    ) -> (NeighbourGrid, Vec<Vec2>) {
        let corner = Vec2::new(next() - 0.5, next() - 0.5) * spread;
        let positions: Vec<Vec2> = (0..n)
            .map(|_| corner + Vec2::new(next(), next()) * side)
            .collect();
        let (flags, radii) = (vec![ALIVE; n], vec![0.3; n]);
        let mut ng = NeighbourGrid {
            reach: 1.0,
            ..NeighbourGrid::default()
        };
        ng.rebuild(&positions, &flags, &radii, &vec![AgentState::Moving; n], n);
        let sorted = (0..n).map(|k| ng.point(k)).collect();
        (ng, sorted)
    }

    /// The distance from point `k` to the nearest other point, by brute force.
    fn nearest_distance(points: &[Vec2], k: usize) -> f32 {
        (0..points.len())
            .filter(|&j| j != k)
            .map(|j| points[k].distance(points[j]))
            .fold(f32::INFINITY, f32::min)
    }

    fn params(p: Vec2) -> AgentParams {
        AgentParams {
            position: p,
            radius: 0.35,
            max_speed: 4.0,
            group: 0,
        }
    }

    #[test]
    fn near_mask_agrees_with_the_scalar_distance() {
        // A fixed pseudo-random sequence: positions round a point, radii round their distances
        // (ties included, since the bits must match exactly), infinite padding.
        let mut next = uniform(0x2545_f491_4f6c_dd1du64);
        for round in 0..20_000 {
            let p = Vec2::new(next() * 50.0, next() * 50.0);
            let xs: [f32; LANES] = std::array::from_fn(|_| p.x + (next() - 0.5) * 4.0);
            let mut ys: [f32; LANES] = std::array::from_fn(|_| p.y + (next() - 0.5) * 4.0);
            if round % 7 == 0 {
                ys[round % LANES] = f32::INFINITY;
            }
            let within2 = if round % 3 == 0 {
                (p - Vec2::new(xs[1], ys[1])).length_squared()
            } else {
                next() * 4.0
            };
            // Every own lane, and none (an index past the lanes, as for chunks before `me`).
            let own = [round % (LANES + 1), usize::MAX - round % 3][round % 2];
            let mut least = Least::none();
            let mask = near_mask(p, &xs, &ys, within2, own, &mut least);
            let (want_mask, want_least) = near_mask_scalar(p, &xs, &ys, within2, own);
            assert_eq!(mask, want_mask, "round {round}");
            assert_eq!(
                least.value().to_bits(),
                want_least.to_bits(),
                "round {round}"
            );
            if own < LANES {
                assert_eq!(mask >> own & 1, 0, "round {round}");
            }
        }
    }

    #[test]
    fn skipping_agents_clear_of_everyone_changes_no_bits() {
        // Clusters and loners, radii of three sizes, slow and fast agents, short and long steps:
        // the collision passes must give the same bits with and without skipping.
        let (cost, walkable, target, f) = scattered_scene(64, 11);
        let goal = cost.grid().cell_center(target);
        // (Both ways of stepping: measuring clearances, and the dense crowd's way without; and
        // all three kinds of collision pass: over everyone, over the few near those pushed, and
        // over the many near those pushed in a dense crowd.)
        let (mut measured, mut dense, mut sparse, mut marked) = (0, 0, 0, 0);
        for (round, dt) in [0.05f32, 0.2, 0.02, 0.05].into_iter().enumerate() {
            // More collision passes than the default, so that the later ones start from
            // overlaps that the earlier ones left.
            let config = CrowdConfig {
                collision_passes: 4,
                ..CrowdConfig::default()
            };
            let mut a = Crowd::new(*cost.grid(), config).unwrap();
            let mut next = uniform(0x51f1_5eed_u64 + round as u64);
            // The third round packs everyone into a quarter of the map; the fourth has few
            // agents, so that collision passes push few.
            let spread = if round == 2 { 4 } else { 1 };
            let agents = if round == 3 { 400 } else { 1500 };
            for k in 0..agents {
                let cell = walkable[(next() * walkable.len() as f32) as usize / spread];
                let (spread, r) = match k % 3 {
                    0 => (0.9, 0.35),
                    1 => (0.2, 0.2),
                    _ => (0.5, 0.6),
                };
                let offset = (Vec2::new(next(), next()) - 0.5) * spread;
                let params = AgentParams {
                    position: cost.grid().cell_center(cell) + offset,
                    radius: r,
                    max_speed: 1.0 + next() * 6.0,
                    group: 0,
                };
                a.add_agent(&cost, params).unwrap();
            }
            let mut b = a.clone();
            b.search_everyone = true;
            let groups = [Group { flow: &f, goal }];
            for step in 0..120 {
                match a.dense_steps {
                    0 => measured += 1,
                    _ => dense += 1,
                }
                a.step(dt, &cost, &groups).unwrap();
                b.step(dt, &cost, &groups).unwrap();
                let bits = |c: &Crowd| -> Vec<u32> {
                    let both = c.positions().iter().chain(&c.velocities);
                    both.flat_map(|p| [p.x.to_bits(), p.y.to_bits()]).collect()
                };
                assert!(bits(&a) == bits(&b), "dt {dt}, step {step}");
            }
            assert_eq!((b.sparse_passes, b.marked_passes), (0, 0));
            sparse += a.sparse_passes;
            marked += a.marked_passes;
        }
        assert!(
            measured > 20 && dense > 20 && sparse > 20 && marked > 20,
            "{measured} steps measured, {dense} dense, {sparse} sparse passes, {marked} marked"
        );
    }

    #[test]
    fn both_compilations_give_the_same_bits() {
        // The x86-64-v3 compilation of the per-agent loops (where this CPU has it) against the
        // baseline one, on crowds that spread, pack, arrive and slide along walls, with both
        // ways of reading arrows and two groups.
        let (cost, walkable, target, f) = scattered_scene(48, 23);
        let goal = cost.grid().cell_center(target);
        let other_cell = walkable[walkable.len() / 3];
        let other = cost.grid().cell_center(other_cell);
        let f2 = field(&cost, other_cell);
        let groups = [
            Group { flow: &f, goal },
            Group {
                flow: &f2,
                goal: other,
            },
        ];
        for (round, sampling) in [Sampling::Bilinear, Sampling::Nearest, Sampling::Bilinear]
            .into_iter()
            .enumerate()
        {
            let config = CrowdConfig {
                sampling,
                ..CrowdConfig::default()
            };
            let mut a = Crowd::new(*cost.grid(), config).unwrap();
            let mut next = uniform(0xb175_0000 + round as u64);
            let spread = if round == 2 { 6 } else { 1 };
            for k in 0..1200 {
                let cell = walkable[(next() * walkable.len() as f32) as usize / spread];
                let offset = (Vec2::new(next(), next()) - 0.5) * 0.8;
                let params = AgentParams {
                    position: cost.grid().cell_center(cell) + offset,
                    radius: [0.35, 0.2, 0.5][k % 3],
                    max_speed: 1.0 + next() * 5.0,
                    group: (k % 2) as u16,
                };
                a.add_agent(&cost, params).unwrap();
            }
            let mut b = a.clone();
            b.baseline_only = true;
            let bits = |c: &Crowd| -> Vec<u32> {
                let both = c.positions().iter().chain(&c.velocities);
                both.flat_map(|p| [p.x.to_bits(), p.y.to_bits()]).collect()
            };
            for step in 0..200 {
                let (sa, sb) = (
                    a.step(0.05, &cost, &groups).unwrap(),
                    b.step(0.05, &cost, &groups).unwrap(),
                );
                assert_eq!(sa, sb, "round {round}, step {step}");
                assert!(bits(&a) == bits(&b), "round {round}, step {step}");
                assert_eq!(a.states(), b.states());
            }
            assert!(a.states().contains(&AgentState::Arrived), "round {round}");
        }
    }

    #[test]
    fn clearance_never_exceeds_the_distance_to_the_nearest_agent() {
        let mut next = uniform(0x0dd_ba11_u64);
        let mut useful = 0;
        for round in 0..40 {
            let n = 50 + round * 20;
            let side = 5.0 + next() * 60.0;
            let (mut ng, mut sorted) = scattered_grid(&mut next, n, side, 200.0);
            // Then everyone moves a little, twice.
            let (mut partials, mut clearances) = (Vec::new(), vec![0; n]);
            for _ in 0..=round % 3 {
                let most = next() * 1.5;
                for p in &mut sorted {
                    *p += (Vec2::new(next(), next()) - 0.5) * most;
                }
                ng.refresh_points::<true>(&sorted, &mut clearances, &mut partials);
            }
            for k in 0..n {
                let within = 0.2 + next() * 1.5;
                let clearance = ng.for_each_near::<true>(sorted[k], k, within, |_, _, _| {});
                let nearest = nearest_distance(&sorted, k);
                assert!(
                    clearance <= nearest + 1e-4,
                    "round {round}, entry {k}: clearance {clearance} but someone at {nearest}"
                );
                useful += (clearance > within) as usize;
            }
        }
        assert!(
            useful > 1000,
            "clearances beyond the search radius: {useful}"
        );
    }

    #[test]
    fn clearances_stay_bounds_when_few_agents_move_far() {
        // Everyone walks at most `calm`, a few listed agents go further (or only they move):
        // the listed moves stay out of `moved` and lower the clearances near them instead.
        let mut next = uniform(0x7ea_5eed_u64);
        let mut useful = 0;
        for round in 0..30 {
            let n = 60 + round * 25;
            let side = 8.0 + next() * 40.0;
            let (mut ng, mut sorted) = scattered_grid(&mut next, n, side, 100.0);
            ng.cap = 3.0;
            let mut clearances: Vec<u32> = (0..n)
                .map(|k| smaller(nearest_distance(&sorted, k), ng.cap).to_bits())
                .collect();
            let mut partials = Vec::new();
            for calm in [0.2, 0.0, 0.3, 0.0] {
                let listed: Vec<u32> = (0..n as u32).filter(|_| next() < 0.05).collect();
                for (k, p) in sorted.iter_mut().enumerate() {
                    let far = listed.contains(&(k as u32));
                    let length = if far { next() * 1.5 } else { next() * calm };
                    let angle = next() * std::f32::consts::TAU;
                    *p += Vec2::new(angle.cos(), angle.sin()) * length;
                }
                ng.take_moves::<true>(&sorted, Some(calm), &listed, &mut clearances, &mut partials);
                for (k, clearance) in clearances.iter().enumerate() {
                    let bound = f32::from_bits(*clearance) - ng.moved;
                    let nearest = nearest_distance(&sorted, k);
                    assert!(
                        bound <= nearest + 1e-4,
                        "round {round}, entry {k}: clearance {bound} but someone at {nearest}"
                    );
                    useful += (bound > 0.5) as usize;
                }
            }
        }
        assert!(useful > 10_000, "clearances over half a cell: {useful}");
    }

    #[test]
    fn max_overlap_matches_every_pair_before_and_after_a_step() {
        let (cost, walkable, target, f) = scattered_scene(40, 3);
        let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
        for k in 0..600 {
            let cell = walkable[(k * 37) % walkable.len()];
            let offset = Vec2::new((k % 7) as f32 * 0.1 - 0.3, (k % 5) as f32 * 0.1 - 0.2);
            let r = [0.35, 0.2, 0.5][k % 3];
            let params = AgentParams {
                position: cost.grid().cell_center(cell) + offset,
                radius: r,
                max_speed: 4.0,
                group: 0,
            };
            crowd.add_agent(&cost, params).unwrap();
        }
        let every_pair = |c: &Crowd| {
            let (p, r) = (c.positions(), c.radii());
            let mut worst = 0.0f32;
            for i in 0..p.len() {
                for j in i + 1..p.len() {
                    let sum = r[i] + r[j];
                    let d = p[i].distance(p[j]);
                    if d < sum {
                        worst = worst.max((sum - d) / sum);
                    }
                }
            }
            worst
        };
        let groups = [Group {
            flow: &f,
            goal: cost.grid().cell_center(target),
        }];
        // Freshly added (re-sorted for the measure), then after steps (the step's own grid).
        for steps in [0, 1, 5, 30] {
            for _ in 0..steps {
                crowd.step(0.05, &cost, &groups).unwrap();
            }
            let want = every_pair(&crowd);
            let got = crowd.max_overlap();
            assert!(
                (got - want).abs() < 1e-5,
                "after {steps} steps: {got} vs {want}"
            );
            assert!(want > 0.0, "the crowd overlaps somewhere");
        }
    }

    #[test]
    fn searches_find_everyone_in_reach_after_moves_without_a_resort() {
        // Points wander off the cells they were filed in, some far, and are taken into the
        // snapshot by full and by listed refreshes; every search must still find exactly the
        // points in reach, and its clearance must stay a lower bound.
        let mut next = uniform(0x2545_f491_4f6c_dd1du64);
        for round in 0..6 {
            let n = [300, 1200][round % 2];
            let (mut ng, mut points) = scattered_grid(&mut next, n, 25.0, 200.0);
            let (mut clearances, mut partials) = (vec![0u32; n], Vec::new());
            for refresh in 0..8 {
                let listed: Vec<u32> = if refresh % 3 == 2 {
                    (0..n as u32).filter(|_| next() < 0.05).collect()
                } else {
                    (0..n as u32).collect()
                };
                for &k in &listed {
                    let far = if next() < 0.05 { 3.0 } else { 0.6 };
                    points[k as usize] += (Vec2::new(next(), next()) - 0.5) * 2.0 * far;
                }
                if listed.len() == n {
                    ng.refresh_points::<false>(&points, &mut clearances, &mut partials);
                } else {
                    ng.refresh_some::<false>(&points, &mut clearances, &listed, None);
                }
                for (e, &p) in points.iter().enumerate() {
                    let off = ng.outside_filed_cell(e, p);
                    assert!(off * ng.cell <= ng.drift, "entry {e} is {off} cells out");
                }
                for k in (0..n).step_by(7) {
                    for within in [0.5f32, 1.0, 2.5] {
                        let mut found = Vec::new();
                        let clearance =
                            ng.for_each_near::<true>(points[k], k, within, |j, _, _| found.push(j));
                        found.sort_unstable();
                        let want: Vec<usize> = (0..n)
                            .filter(|&j| {
                                j != k && (points[k] - points[j]).length_squared() < within * within
                            })
                            .collect();
                        assert_eq!(found, want, "round {round}, refresh {refresh}, point {k}");
                        let nearest = nearest_distance(&points, k);
                        assert!(clearance <= nearest + 1e-4, "{clearance} > {nearest}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_walk_refresh_takes_the_moves_as_the_measuring_refresh_does() {
        // After a walk (everyone but a listed few moved at most `calm`), `refresh_walked` must
        // leave the snapshot and the clearances bit for bit as `refresh_points` leaves them, add
        // `calm` to `moved`, and keep a drift no smaller than the measured one (it asserts that
        // bound against every entry itself).
        let mut next = uniform(0x7a1c_0ffe_u64);
        for round in 0..6 {
            let n = [300, 1200][round % 2];
            let (mut walked, mut points) = scattered_grid(&mut next, n, 25.0, 200.0);
            let mut measured = walked.clone();
            let mut walked_clear: Vec<u32> = (0..n).map(|_| (next() * 4.0).to_bits()).collect();
            let mut measured_clear = walked_clear.clone();
            let mut partials = Vec::new();
            let calm = 0.2;
            for refresh in 0..5 {
                let mut listed = Vec::new();
                for (k, p) in points.iter_mut().enumerate() {
                    if next() < 0.03 {
                        *p += (Vec2::new(next(), next()) - 0.5) * 4.0;
                        listed.push(k as u32);
                    } else {
                        let d = (Vec2::new(next(), next()) - 0.5).normalize_or_zero();
                        *p += d * (0.99 * calm * next());
                    }
                }
                let before = walked.moved;
                walked.refresh_walked(&points, calm, &listed, &mut walked_clear);
                measured.refresh_points::<true>(&points, &mut measured_clear, &mut partials);
                assert_eq!(walked.xs, measured.xs, "round {round}, refresh {refresh}");
                assert_eq!(walked.ys, measured.ys, "round {round}, refresh {refresh}");
                assert_eq!(
                    walked_clear, measured_clear,
                    "round {round}, refresh {refresh}"
                );
                assert_eq!(walked.moved, before + calm);
                assert!(
                    walked.drift >= measured.drift,
                    "round {round}, refresh {refresh}"
                );
            }
        }
    }

    #[test]
    fn cells_of_agrees_with_the_scalar_cells() {
        let mut next = uniform(0x9e37_79b9_7f4a_7c15u64);
        for round in 0..20_000 {
            let (cols, rows) = (1 + (next() * 4095.0) as u32, 1 + (next() * 300.0) as u32);
            let origin = Vec2::new(next() * 100.0 - 50.0, next() * 100.0 - 50.0);
            let inv_cell = 0.05 + next() * 3.0;
            let last = Vec2::new((cols - 1) as f32, (rows - 1) as f32);
            // Inside the grid, beyond both ends, on cell borders and far away.
            let span = Vec2::new(cols as f32, rows as f32) / inv_cell;
            let mut point = || match round % 4 {
                0 => origin + Vec2::new(next(), next()) * span,
                1 => origin + (Vec2::new(next(), next()) * 3.0 - 1.0) * span,
                2 => origin + Vec2::new((next() * 9.0).floor(), (next() * 9.0).floor()) / inv_cell,
                _ => Vec2::new(next() - 0.5, next() - 0.5) * 1e12,
            };
            let (a, b) = (point(), point());
            assert_eq!(
                cells_of(a, b, origin, inv_cell, last),
                cells_of_scalar(a, b, origin, inv_cell, last),
                "round {round}: {a} {b} in {cols}x{rows} from {origin} by {inv_cell}"
            );
        }
    }

    #[test]
    fn side_room_agrees_with_the_scalar_room() {
        let mut next = uniform(0x51de_4007_e0f1_u64);
        for round in 0..20_000 {
            let (cols, rows) = (1 + (next() * 300.0) as u32, 1 + (next() * 300.0) as u32);
            let (x0, y0) = ((next() * cols as f32) as u32, (next() * rows as f32) as u32);
            let x1 = (x0 + (next() * 3.0) as u32).min(cols - 1);
            let y1 = (y0 + (next() * 3.0) as u32).min(rows - 1);
            // Inside the block, on its sides and off them.
            let g = match round % 3 {
                0 => Vec2::new(x0 as f32, y0 as f32) + Vec2::new(next(), next()) * 4.0,
                1 => Vec2::new(x0 as f32, (y1 + 1) as f32),
                _ => Vec2::new(next() * cols as f32, next() * rows as f32),
            };
            let cells = [x0, y0, x1, y1];
            let (fast, scalar) = (
                side_room(g, cells, cols, rows),
                side_room_scalar(g, cells, cols, rows),
            );
            assert_eq!(
                fast.to_bits(),
                scalar.to_bits(),
                "round {round}: {g} in {cells:?} of {cols}x{rows}: {fast} against {scalar}"
            );
        }
    }

    #[test]
    fn the_neighbour_grid_has_at_most_one_cell_per_two_agents() {
        // Columns on the march (one row of agents along a long map), spread crowds, tiny ones.
        let cost = CostField::new(Grid::new(1000, 40).unwrap());
        for (n, column) in [
            (10, true),
            (1000, true),
            (3, false),
            (1000, false),
            (5000, false),
        ] {
            let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
            for k in 0..n {
                let p = if column {
                    Vec2::new(k as f32 * 999.0 / n as f32 + 0.5, 20.5)
                } else {
                    Vec2::new((k * 37 % 1000) as f32 + 0.5, (k * 11 % 40) as f32 + 0.5)
                };
                crowd.add_agent(&cost, params(p)).unwrap();
            }
            crowd.rebuild_neighbours();
            let ng = &crowd.neighbours;
            let cells = ng.cols as usize * ng.rows as usize;
            assert!(cells <= (n / 2).max(1), "{n} agents, {cells} cells");
            // Cells are never narrower than the reach of a push.
            assert!(ng.cell >= ng.reach.max(2.0 * ng.widest));
            assert_eq!(ng.slots.len(), n);
        }
    }

    #[test]
    fn handles_go_stale_on_removal_and_slots_are_reused() {
        let cost = CostField::new(Grid::new(8, 8).unwrap());
        let mut c = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
        let a = c.add_agent(&cost, params(Vec2::splat(1.5))).unwrap();
        let b = c.add_agent(&cost, params(Vec2::splat(2.5))).unwrap();
        assert_eq!((a.id(), b.id()), (0, 1), "ids are the order of adding");
        c.remove_agent(a).unwrap();
        assert!(matches!(c.position(a), Err(CrowdError::StaleHandle { .. })));
        assert!(c.remove_agent(a).is_err());
        let d = c.add_agent(&cost, params(Vec2::splat(3.5))).unwrap();
        assert_eq!(d.id(), a.id(), "the id is reused, with a new generation");
        assert_ne!(d, a);
        assert_eq!(c.position(b).unwrap(), Vec2::splat(2.5));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn bad_values_are_refused() {
        let cost = CostField::new(Grid::new(8, 8).unwrap());
        let bad = CrowdConfig {
            separation_radius: f32::NAN,
            ..CrowdConfig::default()
        };
        assert!(Crowd::new(*cost.grid(), bad).is_err());
        let mut c = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
        let a = c.add_agent(&cost, params(Vec2::splat(1.5))).unwrap();
        assert!(c.set_velocity(a, Vec2::new(f32::INFINITY, 0.0)).is_err());
        assert!(
            c.add_agent(
                &cost,
                AgentParams {
                    radius: -1.0,
                    ..params(Vec2::ONE)
                }
            )
            .is_err()
        );
        let f = field(&cost, UVec2::new(7, 7));
        let groups = [Group {
            flow: &f,
            goal: Vec2::splat(7.5),
        }];
        assert!(c.step(f32::NAN, &cost, &groups).is_err());
        assert!(matches!(
            c.step(0.1, &cost, &[]),
            Err(CrowdError::NoSuchGroup { .. })
        ));
        assert_eq!(
            c.position(a).unwrap(),
            Vec2::splat(1.5),
            "refused steps change nothing"
        );
    }

    #[test]
    fn agents_on_unreachable_cells_report_no_path_and_stand_still() {
        let mut cost = CostField::new(Grid::new(10, 5).unwrap());
        cost.fill_rect(UVec2::new(5, 0), UVec2::new(5, 4), WALL)
            .unwrap();
        let f = field(&cost, UVec2::new(1, 2));
        let mut c = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
        let a = c.add_agent(&cost, params(Vec2::new(8.5, 2.5))).unwrap();
        let groups = [Group {
            flow: &f,
            goal: Vec2::new(1.5, 2.5),
        }];
        for _ in 0..20 {
            c.step(0.1, &cost, &groups).unwrap();
        }
        assert_eq!(c.state(a).unwrap(), AgentState::NoPath);
        assert_eq!(c.position(a).unwrap(), Vec2::new(8.5, 2.5));
    }

    #[test]
    fn a_blocked_agent_is_flagged_stuck() {
        // The field says "go east", then a wall goes up across the corridor: the agent cannot
        // get nearer its goal, which is too far away to count as arrived.
        let mut cost = CostField::new(Grid::new(30, 3).unwrap());
        let f = field(&cost, UVec2::new(29, 1));
        cost.fill_rect(UVec2::new(5, 0), UVec2::new(5, 2), WALL)
            .unwrap();
        let mut c = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
        let a = c.add_agent(&cost, params(Vec2::new(2.5, 1.5))).unwrap();
        let groups = [Group {
            flow: &f,
            goal: Vec2::new(29.5, 1.5),
        }];
        for _ in 0..100 {
            c.step(0.05, &cost, &groups).unwrap();
        }
        assert!(c.is_stuck(a).unwrap());
        assert_eq!(c.stuck_agents().count(), 1);
        assert!(c.position(a).unwrap().x < 5.0, "never inside the new wall");
    }
}
