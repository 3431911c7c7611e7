//! Moving crowds: agents that follow flow fields, keep apart by DetourCrowd's separation kernel,
//! slide along walls and never enter them, slow down and stop at their goal.
//!
//! One step reads a snapshot of every position (taken while the neighbour grid is rebuilt) and
//! writes only each agent's own state, so the result is bit-identical whatever the number of
//! threads, and the step parallelises without locks (feature `parallel`).
//!
//! The stages of a step sit beside this file, split as DetourCrowd splits its own:
//! `neighbours` (the proximity grid: who stands near whom, and how far anyone can have moved),
//! `steer` (each agent's update: its flow field's direction, separation from its nearest
//! neighbours, its velocity and its move), `walls` (the hard-wall rule every move obeys) and
//! `collide` (the collision passes that push overlapping agents apart after the update).

use glam::{UVec2, Vec2};
use thiserror::Error;

use crate::cost::{CostField, WALL};
use crate::flow::{FLOW_GOAL, FlowField, FlowSample, NoDirection};
use crate::grid::{Dir8, Grid};

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

mod collide;
mod neighbours;
mod steer;
#[cfg(target_arch = "x86_64")]
mod steer8;
mod walls;

use collide::*;
use neighbours::*;
use steer::*;
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
    /// `collision_pass`); each at most [`Crowd::few`] long.
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
    /// Blocks of eight agents that a collision pass pushed at once (for the tests).
    #[cfg(test)]
    eight_pushes: u32,
    /// Tests turn the guess at a fresh crowd's density off, to check that it changes nothing.
    #[cfg(test)]
    no_density_guess: bool,
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
/// Steps that a dense crowd goes without clearances before they are measured again (four times
/// as many where hardly anyone was clear).
const DENSE_STEPS: u32 = 15;
/// The agents are sorted again once anyone may have moved this far (in cells of the neighbour
/// grid) from where it was filed: further, and searches would have to look too far round.
const RESORT_DRIFT: f32 = 0.25;
/// Steps at most between two sorts.
const MAX_UNSORTED_STEPS: u32 = 4;

/// A collision pass after one that flagged more than one agent in this many goes over everyone
/// instead of marking those near the flagged (see `Crowd::marked_pass`): measured on a million
/// agents on 1024 × 1024, marking is 8 % slower with half of them flagged and 8 % faster with
/// one in fourteen.
const MARK_BELOW_EVERY_NTH: usize = 4;

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
            #[cfg(test)]
            eight_pushes: 0,
            #[cfg(test)]
            no_density_guess: false,
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
        type Tags<'t> = (usize, ((&'t mut [u32], &'t mut [u16]), &'t mut [u8]));
        let work = |(c, ((ids, groups), flags)): Tags| {
            let entries = ids.iter_mut().zip(groups).zip(flags);
            for (((id, group), flags), tag) in entries.zip(&tags[c * CHUNK..]) {
                let bits = tag.y.to_bits();
                (*id, *group, *flags) = (tag.x.to_bits(), bits as u16, (bits >> 16) as u8);
            }
        };
        each_piece!(CHUNK, work, self.ids, self.groups, self.flags);
        self.states.clear();
        self.states.extend_from_slice(&self.neighbours.states);
        // Each id's new slot is the new slot of its old one. Where each old slot went is parked
        // as bits in the scratch, each thread taking a run of old slots (reading the whole
        // order, which mostly keeps them in place); then each id reads its own, its removed
        // ones keeping none. (Writing each slot at its id instead costs a third more: the ids
        // lie in no order the sort keeps, and random writes cost more than random reads.)
        let width = scratch.len().div_ceil(sort_parts()).max(1);
        each_chunk(&mut scratch, width, |c, run| {
            let lo = c * width;
            for (k, &old) in order.iter().enumerate() {
                let at = (old as usize).wrapping_sub(lo);
                if at < run.len() {
                    run[at].x = f32::from_bits(k as u32);
                }
            }
        });
        let went = &scratch;
        each_chunk(&mut self.id_slots, CHUNK, |_, piece| {
            for slot in piece {
                if *slot != u32::MAX {
                    *slot = went[*slot as usize].x.to_bits();
                }
            }
        });

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
        let due = !self.sorted || self.unsorted_steps >= MAX_UNSORTED_STEPS;
        if !due {
            // Bring the snapshot up to the positions the step starts from, so that the drift
            // (and the choice below) measures where everyone stands, whichever way the last step
            // went. (A sort takes them all afresh.)
            self.refresh_snapshot();
        }
        let fresh = !self.sorted;
        let ng = &self.neighbours;
        if due || ng.drift > RESORT_DRIFT * ng.cell {
            self.sort_agents();
            self.unsorted_steps = 0;
            // Agents just added or put somewhere have no clearances to skip searches with, and
            // measuring them (see `keep_clearances`) costs a dense crowd more than half a step
            // again: guess from the grid instead. (Either way this step's moves come out the
            // same; only its work differs, and with it the bounds that decide when the next
            // sort comes.)
            #[cfg(test)]
            let fresh = fresh && !self.no_density_guess;
            if fresh && self.dense_steps == 0 {
                self.dense_steps = self.guess_dense_steps();
            }
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
            // A crowd still pressed together by the grid's count would measure next step only
            // to find hardly anyone clear (a step and a half of work for nothing): it waits
            // another while.
            #[cfg(test)]
            let guess = !self.no_density_guess;
            #[cfg(not(test))]
            let guess = true;
            if guess && self.dense_steps == 0 && self.guess_dense_steps() == 4 * DENSE_STEPS {
                self.dense_steps = 4 * DENSE_STEPS;
            }
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
            // Marking those near the flagged pays while they are few; when many are flagged
            // (a crowd pressed together) nearly everyone is marked, and the marking is a second
            // search of each: then the pass goes over everyone (the same bits either way).
            let flagged = flagged && self.count_flagged() * MARK_BELOW_EVERY_NTH < self.alive;
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

    /// How many steps to go without clearances, guessed from the grid's occupied cells (see
    /// [`NeighbourGrid::clear_share`]) with the rule `keep_clearances` applies to the measured
    /// share of agents clear of the separation reach: none for one in 8 or more, four times
    /// as many under one in 64. O(cells).
    fn guess_dense_steps(&self) -> u32 {
        let ng = &self.neighbours;
        let reach = self.config.separation_radius.max(2.0 * ng.widest);
        let clear = ng.clear_share(self.alive, reach);
        if clear * 64.0 < 1.0 {
            4 * DENSE_STEPS
        } else if clear * 8.0 < 1.0 {
            DENSE_STEPS
        } else {
            0
        }
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

/// `work(c, piece)` for each piece of `width` of `items` (in parallel with `parallel`).
fn each_chunk_of<T: Sync>(items: &[T], width: usize, work: impl Fn(usize, &[T]) + Sync) {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        items
            .par_chunks(width)
            .enumerate()
            .for_each(|(c, o)| work(c, o));
    }
    #[cfg(not(feature = "parallel"))]
    for (c, o) in items.chunks(width).enumerate() {
        work(c, o);
    }
}

/// `out[k] = value(k)` for every `k` (in parallel with `parallel`). Piece by piece, each a
/// plain loop: rayon's per-item iterators cost twice as much per entry here.
fn fill<T: Send>(out: &mut [T], value: impl Fn(usize) -> T + Sync) {
    each_chunk(out, CHUNK, |c, piece| {
        for (k, o) in (c * CHUNK..).zip(piece) {
            *o = value(k);
        }
    });
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
    let work = |(c, (a, b)): (usize, (&mut [A], &mut [B]))| {
        for ((a, b), &v) in a.iter_mut().zip(b).zip(&packed[c * CHUNK..]) {
            (*a, *b) = split(v);
        }
    };
    each_piece!(CHUNK, work, a, b);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CostModel, IntegrationBuilder};

    pub(super) fn field(cost: &CostField, goal: UVec2) -> FlowField {
        let mut b = IntegrationBuilder::new();
        b.build(cost, &[goal], CostModel::TenFourteen).unwrap();
        let mut f = FlowField::new(*cost.grid());
        b.flow_into(&mut f).unwrap();
        f
    }

    /// An open `side` × `side` map, the field toward `goal` and the goal's centre.
    pub(super) fn open_map(side: u32, goal: UVec2) -> (CostField, FlowField, Vec2) {
        let cost = CostField::new(Grid::new(side, side).unwrap());
        let f = field(&cost, goal);
        let centre = cost.grid().cell_center(goal);
        (cost, f, centre)
    }

    /// A fixed pseudo-random sequence in `0..1` (xorshift), for tests that need many cases.
    pub(super) fn uniform(seed: u64) -> impl FnMut() -> f32 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    /// A scattered map of `side`², its walkable cells, a goal among them and its flow field.
    pub(super) fn scattered_scene(
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
    pub(super) fn scattered_grid(
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
    pub(super) fn nearest_distance(points: &[Vec2], k: usize) -> f32 {
        (0..points.len())
            .filter(|&j| j != k)
            .map(|j| points[k].distance(points[j]))
            .fold(f32::INFINITY, f32::min)
    }

    pub(super) fn params(p: Vec2) -> AgentParams {
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
            b.no_density_guess = true;
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
        measuring.no_density_guess = true;
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
