//! Moving crowds: agents that follow flow fields, keep apart by DetourCrowd's separation kernel,
//! slide along walls and never enter them, slow down and stop at their goal.
//!
//! One step reads a snapshot of every position (taken while the neighbour grid is rebuilt) and
//! writes only each agent's own state, so the result is bit-identical whatever the number of
//! threads, and the step parallelises without locks (feature `parallel`).
//!
//! This file holds the public API (agents, handles, settings, queries); each concern of the
//! step sits beside it, split as DetourCrowd splits its own: `step` (the step as a list of
//! stages), `sort` (filing the agents in neighbour-grid order), `neighbours` (the proximity
//! grid: who stands near whom, and how far anyone can have moved), `density` (when the step
//! keeps clearances), `steer` (each agent's update: its flow field's direction, separation from
//! its nearest neighbours, its velocity and its move), `walls` (the hard-wall rule every move
//! obeys), `collide` (the collision passes that push overlapping agents apart after the update)
//! and `pieces` (the parallel loops). The vector kernels of the update and the passes are in
//! `crate::simd`.

use glam::{UVec2, Vec2};
use thiserror::Error;

use crate::cost::{CostField, WALL};
use crate::flow::{FLOW_GOAL, FlowField, FlowSample, NoDirection};
use crate::grid::{Dir8, Grid, SizeMismatch};

#[macro_use]
pub(crate) mod pieces;
pub(crate) mod collide;
pub(crate) mod density;
mod flags;
pub(crate) mod neighbours;
mod sort;
pub(crate) mod steer;
mod step;
pub(crate) mod traffic;
pub(crate) mod walls;

pub(crate) use flags::AgentFlags;

use collide::*;
use density::*;
use neighbours::*;
use pieces::*;
use steer::*;
use traffic::*;
use walls::*;

/// Why a crowd call was refused. Nothing changes when a call is refused.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
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
    #[error(transparent)]
    SizeMismatch(#[from] SizeMismatch),
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
    /// this long is flagged stuck, unless it waits its turn: touching a moving agent of its
    /// group nearer the goal that was not stuck itself (a queue that moves). So in a jam the
    /// head of each queue is flagged first, and those behind it a step later each.
    pub stuck_time: f32,
    /// See `stuck_time`.
    pub stuck_distance: f32,
    /// How much more an arrived agent gives way to a moving one (multiplies the push it gets).
    pub arrived_yield: f32,
    /// Extra passes per step that push overlapping agents apart by position (DetourCrowd runs
    /// four); each costs a neighbour search for every agent that may touch another (agents
    /// clear of everyone are skipped).
    pub collision_passes: usize,
    /// Counterflow: an agent whose field meets agents heading against it within this distance
    /// ahead (counted per 4 × 4 block of cells; its own group's count only while it is further
    /// than this from its pile) keeps to its right, and steps aside instead of forward when one
    /// of another group stands close in its way, so opposing groups form lanes in corridors and
    /// doors instead of meeting head-on. Only when the step is given two groups or more; 0
    /// turns it off. Default 40 cells: groups about to enter a corridor that long see each
    /// other before they enter, and each takes its lane from the mouth on (at 12, both filled
    /// a 2-cell corridor before they met in its middle). Each agent reads one block per 4
    /// cells, at most 16.
    pub passing_range: f32,
    /// How hard an agent in counterflow turns to its right: the weight of its right beside
    /// the flow's 1 (2 heads it about 63° off its arrow while others come against it).
    pub passing_weight: f32,
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
            passing_range: 40.0,
            passing_weight: 2.0,
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
            ("passing_range", self.passing_range),
            ("passing_weight", self.passing_weight),
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
    /// `stuck_time` (so a crowd piles up round its flag instead of pushing into it). It stays
    /// arrived, giving way to others, until [`Crowd::set_group`] sends it elsewhere.
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

/// One agent as [`Crowd::snapshot`] reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgentSnapshot {
    /// The agent.
    pub handle: AgentHandle,
    /// World position.
    pub position: Vec2,
    /// Velocity (world units per second).
    pub velocity: Vec2,
    /// State after the last step.
    pub state: AgentState,
    /// Flagged stuck (see [`Crowd::is_stuck`]).
    pub stuck: bool,
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
/// x86-64 and for x86-64-v3 (AVX2, BMI1/2, LZCNT), and each step runs the one the CPU has; the
/// v3 update steps eight agents at once, but for the neighbour searches of those who have anyone
/// in reach.
/// Rust never fuses a multiply and an add unasked, and the eight-lane code does the same
/// operations in the same order, so both give the same bits: positions are the same on any
/// x86-64 CPU as on any thread count.
///
/// Memory per agent: at most 63.4 bytes, the neighbour grid included. Agent arrays 40 (position
/// 8, velocity 8, radius 4, top speed 4, group 2, state 1, flags 1, stuck reference distance 4
/// and timer 4, id 4); id table 8 (slot 4, generation 4); neighbour grid 13 (sort order 4,
/// position snapshot 8, state snapshot 1) plus its cell starts, 4 bytes per cell and at most one
/// cell per two agents (2 bytes per agent; cells never get smaller than the separation radius);
/// the lists of agents pushed and marked by the collision passes, 4 bytes each for at most one
/// agent in 64 (0.125 bytes per agent, or 512 bytes for crowds under 4096), and the marks of a
/// collision pass after one that pushed more than that, a bit per agent (0.125 bytes); who
/// was flagged stuck when a step began, a bit per agent (0.125 bytes, only while anyone is).
/// When a step is given two groups or more (and `passing_range` is above 0), the counts of
/// who heads which way add 1 byte per map cell (four counts and groups of 4 bytes per 4 × 4
/// block).
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
    flags: Vec<AgentFlags>,
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
    /// One more than the highest group of a living agent, and the top speed of the fastest;
    /// `None` once an agent is added, removed or sent to another group (a step changes
    /// neither, so steps in a row fold them once).
    highest_and_fastest: Option<(u32, f32)>,
    /// What the step's reductions write before they combine it, kept to be reused.
    scratch: StepScratch,
    /// Who heads which way where, when groups mix (see `traffic`).
    traffic: Traffic,
    /// Slot k is the neighbour grid's entry k (no agent added, removed or moved by hand since
    /// the last sort).
    sorted: bool,
    /// What one level of the clearance in the flags is worth; 0 when the flags' clearances
    /// are not known to hold (an agent was placed since they were measured).
    clearance_unit: f32,
    /// Steps left without clearances (see `keep_clearances`).
    dense_steps: u32,
    /// Agents flagged stuck after the last step (an upper bound: flags are only ever cleared
    /// between steps), so that a step where no one was skips recording who was.
    stuck_last_step: usize,
    /// Steps since the agents were last sorted.
    unsorted_steps: u32,
    /// While `sorted`: the grid's snapshot holds every position as it is.
    snapshot_current: bool,
    /// The agents that the last collision pass pushed, and those the next pass searches (see
    /// `collision_pass`); each at most [`Crowd::most_listed`] long.
    pushed: Vec<u32>,
    marked: Vec<u32>,
    /// One bit per slot: the agents a collision pass after one that pushed too many to list
    /// searches (see `marked_pass`).
    marks: MarkBits,
    /// What the tests turn off and count.
    #[cfg(test)]
    test: TestHooks,
}

/// Scratch of the step's parallel reductions, one entry per piece of [`SLOTS_PER_REDUCTION`] agents (or per
/// piece and group), reused from step to step: a few bytes per 8192 agents.
#[derive(Debug, Clone, Default)]
struct StepScratch {
    /// Per group: the area and the widest radius of its arrived agents.
    pile_parts: Vec<(f32, f32)>,
    pile_partials: Vec<(f32, f32)>,
    partial_counts: Vec<u32>,
    partial_reach: Vec<(u32, f32)>,
    partial_moves: Vec<(f32, f32, f32)>,
    partial_stats: Vec<StepStats>,
    /// Bit k set if slot k was flagged stuck when the step began (empty when no one was);
    /// 0.125 bytes per agent.
    was_stuck: Vec<u64>,
}

/// What the tests switch off to check that it changes no bits, and what they count.
#[cfg(test)]
#[derive(Debug, Clone, Default)]
struct TestHooks {
    /// Collision passes that searched only the marked agents.
    sparse_passes: u32,
    /// Collision passes that searched only the agents in `marks`.
    marked_passes: u32,
    /// Blocks of eight agents that a collision pass pushed at once.
    eight_pushes: u32,
    /// No guess at a fresh crowd's density.
    no_density_guess: bool,
    /// No searches skipped.
    search_everyone: bool,
    /// The baseline compilation, on a CPU that has x86-64-v3, to compare the bits.
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
    flags: AgentFlags,
    anchor: f32,
    timer: f32,
    id: u32,
}

/// Neighbour candidates measured together by [`NeighbourGrid::for_each_near`].
pub(crate) const ENTRIES_AT_ONCE: usize = 8;
/// The agents are sorted again once anyone may have moved this far (in cells of the neighbour
/// grid) from where it was filed: further, and searches would have to look too far round.
pub(crate) const RESORT_DRIFT: f32 = 0.25;
/// Steps at most between two sorts.
pub(crate) const MAX_UNSORTED_STEPS: u32 = 4;

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
            highest_and_fastest: None,
            scratch: StepScratch::default(),
            traffic: Traffic::default(),
            sorted: false,
            clearance_unit: 0.0,
            dense_steps: 0,
            stuck_last_step: 0,
            unsorted_steps: 0,
            snapshot_current: false,
            pushed: Vec::new(),
            marked: Vec::new(),
            marks: MarkBits::default(),
            #[cfg(test)]
            test: TestHooks::default(),
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
            flags: AgentFlags::ALIVE,
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
        self.flags[i].remove();
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
        Ok(self.flags[self.slot(h)?].is_stuck())
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
        self.flags[i].clear_stuck();
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

    /// How far from its goal group `group`'s pile of arrived agents reaches, as the last step
    /// measured it: the arrival radius, plus the radius of a disc holding the group's arrived
    /// agents at 80 % density, plus twice the widest arrived body. Beyond the arrival radius a
    /// moving agent counts as arrived only inside this distance (see [`AgentState::Arrived`]).
    /// `None` for a group the last step was not given. O(1).
    ///
    /// ```
    /// use glam::{UVec2, Vec2};
    /// use horde::crowd::{AgentParams, Crowd, CrowdConfig, Group};
    /// use horde::{CostField, CostModel, FlowField, Grid, IntegrationBuilder};
    /// let cost = CostField::new(Grid::new(8, 8).unwrap());
    /// let mut builder = IntegrationBuilder::new();
    /// builder.build(&cost, &[UVec2::new(4, 4)], CostModel::TenFourteen).unwrap();
    /// let mut flow = FlowField::new(*cost.grid());
    /// builder.flow_into(&mut flow).unwrap();
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let params = AgentParams { position: Vec2::new(4.5, 4.5), radius: 0.5, max_speed: 1.0, group: 0 };
    /// crowd.add_agent(&cost, params).unwrap();
    /// assert_eq!(crowd.pile_radius(0), None);
    /// let groups = [Group { flow: &flow, goal: Vec2::new(4.5, 4.5) }];
    /// crowd.step(0.05, &cost, &groups).unwrap();
    /// // One arrived body of radius 0.5: 1.5 + sqrt(0.25 / 0.8) + 1.0.
    /// let pile = crowd.pile_radius(0).unwrap();
    /// assert!((pile - (2.5 + (0.25f32 / 0.8).sqrt())).abs() < 1e-5);
    /// ```
    pub fn pile_radius(&self, group: u16) -> Option<f32> {
        self.piles.get(group as usize).copied()
    }

    /// Radius of an agent. O(1).
    pub fn radius(&self, h: AgentHandle) -> Result<f32, CrowdError> {
        Ok(self.radii[self.slot(h)?])
    }
    /// Handles of the living agents, in slot order: the order of [`Crowd::positions`],
    /// [`Crowd::radii`] and [`Crowd::states`], which may change at any step (agents are kept
    /// sorted by position). Between a removal and the next step, those arrays still hold the
    /// removed agent's slot, which this skips: read them together with
    /// [`Crowd::snapshot`] then. O(slots).
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
        self.living_slots().map(|i| self.handle_of_slot(i))
    }
    /// The slots of living agents, in order.
    fn living_slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.flags.len()).filter(|&i| self.flags[i].is_alive())
    }
    /// The handle of the agent in slot `i`.
    fn handle_of_slot(&self, i: usize) -> AgentHandle {
        let id = self.ids[i];
        AgentHandle {
            index: id,
            generation: self.id_generations[id as usize],
        }
    }
    /// Every living agent in slot order, with its position, velocity, state and stuck flag:
    /// one pass over memory, for copying a whole crowd out (an engine's transforms) at far less
    /// than four lookups per handle. O(slots).
    ///
    /// ```
    /// use glam::Vec2;
    /// use horde::crowd::{AgentParams, Crowd, CrowdConfig};
    /// let cost = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    /// let params = AgentParams { position: Vec2::new(2.5, 2.5), radius: 0.4, max_speed: 3.0, group: 0 };
    /// let a = crowd.add_agent(&cost, params).unwrap();
    /// let b = crowd.add_agent(&cost, AgentParams { position: Vec2::new(5.5, 5.5), ..params }).unwrap();
    /// crowd.remove_agent(a).unwrap();
    /// let all: Vec<_> = crowd.snapshot().collect();
    /// assert_eq!(all.len(), 1);
    /// assert_eq!((all[0].handle, all[0].position), (b, Vec2::new(5.5, 5.5)));
    /// ```
    pub fn snapshot(&self) -> impl Iterator<Item = AgentSnapshot> + '_ {
        self.living_slots().map(|i| AgentSnapshot {
            handle: self.handle_of_slot(i),
            position: self.positions[i],
            velocity: self.velocities[i],
            state: self.states[i],
            stuck: self.flags[i].is_stuck(),
        })
    }
    /// The number of ids handed out so far (living agents' ids are below it): the length of a
    /// table indexed by [`AgentHandle::id`].
    pub fn id_capacity(&self) -> usize {
        self.id_slots.len()
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
    /// [`CrowdConfig::stuck_distance`] for [`CrowdConfig::stuck_time`] and not queued behind
    /// their own group's moving agents (a blocked corridor, a field gone stale). The game
    /// decides what to do with them (a new goal, a path by A*).
    /// O(slots).
    pub fn stuck_agents(&self) -> impl Iterator<Item = AgentHandle> + '_ {
        self.handles()
            .filter(|&h| self.slot(h).is_ok_and(|i| self.flags[i].is_stuck()))
    }

    fn check_grid(&self, what: &'static str, g: &Grid) -> Result<(), CrowdError> {
        SizeMismatch::check(
            what,
            SizeMismatch::of(g),
            "the crowd's grid",
            SizeMismatch::of(&self.grid),
        )?;
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

    /// The x86-64-v3 token if this CPU runs that compilation of the per-agent loops (`None`:
    /// the baseline one).
    fn isa(&self) -> Option<crate::simd::V3> {
        // The unit tests compare the two compilations wherever the CPU has both, whatever
        // `HORDE_SIMD` lets the library run.
        #[cfg(test)]
        return (!self.test.baseline_only)
            .then(crate::simd::under_test::v3)
            .flatten();
        #[cfg(not(test))]
        crate::simd::cpu().v3
    }

    /// The worst overlap between two agents right now, as a fraction of the sum of their radii
    /// (0 = none touch more than they should, 1 = two centres coincide). O(agents × neighbours),
    /// in parallel. It reads the neighbour grid of the last step, searching round each agent as
    /// far further as anyone has moved since; after agents were added, removed or placed by
    /// hand, it files them in a grid of its own first (about 13 bytes per agent, freed on
    /// return). It changes nothing, so a step after it gives the same bits as without it.
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
    pub fn max_overlap(&self) -> f32 {
        if self.sorted {
            // Slot k is entry k. Everyone stands at most `moved` from its snapshot point, so
            // a search round where an agent stands now reaches everyone touching it if it
            // looks `moved` further (the grid adds how far its points stand off their cells).
            let ng = &self.neighbours;
            let positions = &self.positions;
            let moved = if self.snapshot_current {
                0.0
            } else {
                max_over_pieces(positions.len(), |range| {
                    range.fold(0.0f32, |m, k| m.max((positions[k] - ng.point(k)).length()))
                })
            };
            return self.worst_overlap(ng, positions.len(), |e| e, moved);
        }
        let mut own = NeighbourGrid::default();
        own.rebuild(
            &self.positions,
            &self.flags,
            &self.radii,
            &self.states,
            self.alive,
        );
        let slots = &own.slots;
        self.worst_overlap(&own, slots.len(), |e| slots[e] as usize, 0.0)
    }

    /// [`Self::max_overlap`] over the first `entries` entries of `ng`, entry `e` being the
    /// agent of slot `slot_of(e)`, each searched round where it stands, `moved` further than
    /// touching (as far as anyone moved since `ng`'s points were taken).
    fn worst_overlap(
        &self,
        ng: &NeighbourGrid,
        entries: usize,
        slot_of: impl Fn(usize) -> usize + Sync,
        moved: f32,
    ) -> f32 {
        let (positions, radii, flags) = (&self.positions, &self.radii, &self.flags);
        max_over_pieces(entries, |range| {
            let mut worst = 0.0f32;
            for e in range {
                let k = slot_of(e);
                if !flags[k].is_alive() {
                    continue;
                }
                let r = radii[k];
                let within = r + ng.widest + moved;
                ng.for_each_near::<false>(positions[k], e, within, |j, _, _| {
                    let kj = slot_of(j);
                    if j <= e || !flags[kj].is_alive() {
                        return;
                    }
                    let sum = r + radii[kj];
                    let d2 = (positions[k] - positions[kj]).length_squared();
                    if d2 < sum * sum {
                        worst = worst.max((sum - d2.sqrt()) / sum);
                    }
                });
            }
            worst
        })
    }
}

/// The larger of two numbers that are not NaN: one instruction, where `f32::max` needs several
/// to handle NaN.
#[inline(always)]
fn larger(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// The smaller of two numbers that are not NaN (see [`larger`]).
#[inline(always)]
pub(crate) fn smaller(a: f32, b: f32) -> f32 {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{CostModel, IntegrationBuilder};

    pub(crate) fn field(cost: &CostField, goal: UVec2) -> FlowField {
        let mut b = IntegrationBuilder::new();
        b.build(cost, &[goal], CostModel::TenFourteen).unwrap();
        let mut f = FlowField::new(*cost.grid());
        b.flow_into(&mut f).unwrap();
        f
    }

    /// An open `side` × `side` map, the field toward `goal` and the goal's centre.
    pub(crate) fn open_map(side: u32, goal: UVec2) -> (CostField, FlowField, Vec2) {
        let cost = CostField::new(Grid::new(side, side).unwrap());
        let f = field(&cost, goal);
        let centre = cost.grid().cell_center(goal);
        (cost, f, centre)
    }

    /// A fixed pseudo-random sequence in `0..1` (xorshift), for tests that need many cases.
    pub(crate) fn uniform(seed: u64) -> impl FnMut() -> f32 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    /// A scattered map of `side`², its walkable cells, a goal among them and its flow field.
    pub(crate) fn scattered_scene(
        side: u32,
        seed: u64,
    ) -> (CostField, Vec<UVec2>, UVec2, FlowField) {
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
    pub(crate) fn scattered_grid(
        next: &mut impl FnMut() -> f32,
        n: usize,
        side: f32,
        spread: f32,
    ) -> (NeighbourGrid, Vec<Vec2>) {
        let corner = Vec2::new(next() - 0.5, next() - 0.5) * spread;
        let positions: Vec<Vec2> = (0..n)
            .map(|_| corner + Vec2::new(next(), next()) * side)
            .collect();
        let (flags, radii) = (vec![AgentFlags::ALIVE; n], vec![0.3; n]);
        let mut ng = NeighbourGrid {
            reach: 1.0,
            ..NeighbourGrid::default()
        };
        ng.rebuild(&positions, &flags, &radii, &vec![AgentState::Moving; n], n);
        let sorted = (0..n).map(|k| ng.point(k)).collect();
        (ng, sorted)
    }

    /// The distance from point `k` to the nearest other point, by brute force.
    pub(crate) fn nearest_distance(points: &[Vec2], k: usize) -> f32 {
        (0..points.len())
            .filter(|&j| j != k)
            .map(|j| points[k].distance(points[j]))
            .fold(f32::INFINITY, f32::min)
    }

    pub(crate) fn params(p: Vec2) -> AgentParams {
        AgentParams {
            position: p,
            radius: 0.35,
            max_speed: 4.0,
            group: 0,
        }
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
        // Freshly added (its own grid for the measure), then after steps (the step's grid),
        // with a twin that is never measured: measuring changes no bits.
        let mut twin = crowd.clone();
        let bits = |c: &Crowd| -> Vec<u32> {
            c.positions()
                .iter()
                .flat_map(|p| [p.x.to_bits(), p.y.to_bits()])
                .collect()
        };
        for steps in [0, 1, 5, 30] {
            for _ in 0..steps {
                crowd.step(0.05, &cost, &groups).unwrap();
                twin.step(0.05, &cost, &groups).unwrap();
            }
            let want = every_pair(&crowd);
            let got = crowd.max_overlap();
            assert!(
                (got - want).abs() < 1e-5,
                "after {steps} steps: {got} vs {want}"
            );
            assert!(want > 0.0, "the crowd overlaps somewhere");
            assert_eq!(bits(&crowd), bits(&twin), "after {steps} steps");
        }
        // An agent put by hand onto another: its own grid again.
        let handles: Vec<AgentHandle> = crowd.handles().collect();
        let onto = crowd.position(handles[1]).unwrap() + Vec2::new(0.01, 0.0);
        crowd.set_position(&cost, handles[0], onto).unwrap();
        let (want, got) = (every_pair(&crowd), crowd.max_overlap());
        assert!((got - want).abs() < 1e-5, "placed: {got} vs {want}");
        assert!(want > 0.9, "{want}");
    }

    #[test]
    fn a_fresh_crowd_guesses_its_density_and_its_step_gives_the_same_bits_either_way() {
        let (cost, f, goal) = open_map(24, UVec2::new(20, 20));
        let groups = [Group { flow: &f, goal }];
        // Packed closer than the separation reach, and spread three cells apart.
        for (spacing, side, dense) in [(0.6f32, 30, true), (3.0, 7, false)] {
            let mut a = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
            for k in 0..side * side {
                let at = Vec2::new((k % side) as f32, (k / side) as f32) * spacing;
                a.add_agent(&cost, params(at + Vec2::splat(1.5))).unwrap();
            }
            let mut b = a.clone();
            b.test.no_density_guess = true;
            a.step(0.05, &cost, &groups).unwrap();
            b.step(0.05, &cost, &groups).unwrap();
            // A step that measures clearances leaves their unit; a dense one does not. The
            // packed crowd is guessed far from clearing up: the long wait.
            assert_eq!(a.clearance_unit == 0.0, dense, "spacing {spacing}");
            assert_eq!(a.dense_steps, if dense { 4 * DENSE_STEPS - 1 } else { 0 });
            assert!(b.clearance_unit > 0.0);
            // Measured: no one clear in the packed crowd, so it is measured again only after
            // four times the usual wait.
            assert_eq!(b.dense_steps, if dense { 4 * DENSE_STEPS } else { 0 });
            let bits = |c: &Crowd| -> Vec<u32> {
                let both = c.positions().iter().chain(&c.velocities);
                both.flat_map(|p| [p.x.to_bits(), p.y.to_bits()]).collect()
            };
            assert!(bits(&a) == bits(&b), "spacing {spacing}");
        }
    }

    #[test]
    fn a_crowd_still_pressed_together_waits_again_without_measuring() {
        let (cost, f, goal) = open_map(40, UVec2::new(20, 20));
        let groups = [Group { flow: &f, goal }];
        // Packed closer than the separation reach round the goal, where it stays packed.
        let side = 40;
        let mut guessing = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
        for k in 0..side * side {
            let at = Vec2::new((k % side) as f32, (k / side) as f32) * 0.5;
            guessing
                .add_agent(&cost, params(at + Vec2::splat(10.0)))
                .unwrap();
        }
        let mut measuring = guessing.clone();
        measuring.test.no_density_guess = true;
        let mut measures = 0;
        for _ in 0..3 * 4 * DENSE_STEPS {
            measures += (measuring.dense_steps == 0) as u32;
            guessing.step(0.05, &cost, &groups).unwrap();
            measuring.step(0.05, &cost, &groups).unwrap();
            // A measured step leaves the clearances' unit.
            assert!(guessing.clearance_unit == 0.0, "a measured step");
        }
        // Without the guess the crowd is measured at its first step and after each wait, and
        // is found just as pressed each time.
        assert_eq!(measures, 3);
        assert!(measuring.dense_steps > 0);
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
        for (range, weight) in [
            (-1.0, 2.0),
            (f32::INFINITY, 2.0),
            (12.0, f32::NAN),
            (12.0, -0.5),
        ] {
            let bad = CrowdConfig {
                passing_range: range,
                passing_weight: weight,
                ..CrowdConfig::default()
            };
            let err = Crowd::new(*cost.grid(), bad).unwrap_err();
            let what = if range == 12.0 {
                "passing_weight"
            } else {
                "passing_range"
            };
            assert!(
                matches!(err, CrowdError::BadValue { what: w, .. } if w == what),
                "{err}"
            );
        }
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
