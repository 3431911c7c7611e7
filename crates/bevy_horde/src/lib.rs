//! # bevy_horde
//!
//! [horde]'s flow fields and crowds in a Bevy app: put a [`NavMap`] on an entity, give
//! units a [`NavAgent`] and a [`NavTarget`], and every tick the plugin builds (or shares) one
//! field per goal cell, steps the crowd, and moves the units' `Transform`s.
//!
//! ```
//! use bevy_app::{App, FixedUpdate};
//! use bevy_ecs::prelude::*;
//! use bevy_horde::{AgentStatus, HordePlugin, NavAgent, NavMap, NavTarget};
//! use bevy_math::{UVec2, Vec3};
//! use bevy_transform::components::Transform;
//! use bevy_horde::horde::{CostField, Grid, WALL};
//!
//! let mut app = App::new();
//! // Step once per `app.update()` (a game leaves the default: the fixed-timestep schedule).
//! app.add_plugins(HordePlugin::default().in_schedule(bevy_app::Update).with_fixed_dt(0.05));
//!
//! // A 32 × 32 map with a wall across it and a gap at the right.
//! let mut cost = CostField::new(Grid::new(32, 32)?);
//! cost.fill_rect(UVec2::new(0, 16), UVec2::new(27, 16), WALL)?;
//! let map = app.world_mut().spawn(NavMap::new(cost)?).id();
//!
//! let unit = app
//!     .world_mut()
//!     .spawn((
//!         NavAgent::new(map, 0.35, 4.0),
//!         NavTarget::Cell(UVec2::new(2, 30)),
//!         Transform::from_xyz(2.5, 2.5, 0.0),
//!     ))
//!     .id();
//! for _ in 0..400 {
//!     app.update();
//! }
//! assert_eq!(app.world().get::<AgentStatus>(unit), Some(&AgentStatus::Arrived));
//! let at = app.world().get::<Transform>(unit).unwrap().translation;
//! assert!(at.distance(Vec3::new(2.5, 30.5, 0.0)) <= 1.5); // the arrival radius
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## How a tick runs
//!
//! [`HordeSystems`] is one chain, in the schedule [`HordePlugin::schedule`] names:
//!
//! 1. [`HordeSystems::SyncIn`]: new, changed and removed agents and maps; cost edits
//!    ([`NavMapEdits`] messages, one batch per map per tick, repaired into every field); moved
//!    `Transform`s; targets rounded to cells.
//! 2. [`HordeSystems::Fields`]: one field per goal cell and size class, shared by everyone
//!    heading there, built within a per-tick budget of cells — units keep their previous field
//!    (or wait) until theirs is ready.
//! 3. [`HordeSystems::Crowd`]: one [`horde::crowd::Crowd`] step per map.
//! 4. [`HordeSystems::SyncOut`]: [`AgentStatus`], [`DesiredVelocity`] and (with
//!    [`Movement::Transform`]) the `Transform`.
//!
//! ## Determinism
//!
//! The plugin's work depends only on the world's contents and the tick's `dt`: the field budget
//! counts cells, not time (unless [`HordePlugin::with_time_budget`] says otherwise), the crowd
//! step gives the same bits on any thread count, and agents are visited in the world's own
//! order. The same inputs give bit-identical transforms on one thread or many.
//!
//! ## Cost
//!
//! Per agent: its place in the crowd (at most 64 bytes, see [`horde::crowd::Crowd`]), the
//! [`NavAgent`] component (40 bytes), the plugin's record (48 bytes) and the outputs
//! [`AgentStatus`] and [`DesiredVelocity`] (13 bytes); each tick reads and writes them in three
//! passes. Per map: the cost field (1 byte per cell) and the cached fields (5 bytes per cell
//! each, under [`NavMap::with_field_budget`]).

mod components;
#[cfg(feature = "debug")]
mod debug;
mod systems;

use std::time::Duration;

use bevy_app::{App, FixedUpdate, Plugin};
use bevy_ecs::prelude::*;
use bevy_ecs::schedule::{InternedScheduleLabel, ScheduleLabel};

pub use components::{
    AgentStatus, DesiredVelocity, HordeError, MapPlane, NavAgent, NavError, NavMap, NavMapEdits,
    NavTarget,
};
#[cfg(feature = "debug")]
pub use debug::{HordeDebugPlugin, HordeDebugSettings, HordeDebugStats, HordeGizmos};
pub use horde;

/// The plugin's stages, chained in this order in [`HordePlugin::schedule`]; order your own
/// systems around them (e.g. apply forces after `SyncOut`, set targets before `SyncIn`).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HordeSystems {
    /// Agents, maps, edits, transforms and targets read into the navigation state.
    SyncIn,
    /// Fields built or shared for the goals in use, within the per-tick budget.
    Fields,
    /// One crowd step per map.
    Crowd,
    /// Statuses, desired velocities and transforms written back.
    SyncOut,
}

/// Who moves the units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Movement {
    /// The plugin writes each agent's `Transform` (its position on the map's plane; the third
    /// coordinate is kept).
    #[default]
    Transform,
    /// The plugin only writes [`DesiredVelocity`]: the velocity that takes each unit, in one
    /// tick, to where the crowd put it (walls and pushes included). The game moves the units
    /// (physics, animation), and the crowd takes their `Transform`s as they are at the next
    /// tick, when they stray more than a twentieth of a cell from its own positions.
    Velocity,
}

/// The plugin's settings, as a resource (change them at run time).
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct HordeSettings {
    /// Who moves the units.
    pub movement: Movement,
    /// Cells of field-building work per tick, shared by every map and goal. The default, 262,144
    /// (a 512 × 512 map's field), takes about 1–2 ms.
    pub cells_per_tick: usize,
    /// If set, field builds also stop when this much time has passed in a tick. Builds then
    /// depend on the machine's speed, so lockstep games leave it unset.
    pub time_budget: Option<Duration>,
    /// If set, the crowd steps by this many seconds each tick instead of the schedule's `Time`
    /// delta (for tests, replays and `Update` schedules with a fixed step).
    pub fixed_dt: Option<f32>,
}

impl Default for HordeSettings {
    fn default() -> Self {
        HordeSettings {
            movement: Movement::Transform,
            cells_per_tick: 1 << 18,
            time_budget: None,
            fixed_dt: None,
        }
    }
}

/// Navigation for every [`NavMap`] and [`NavAgent`] in the world.
///
/// By default it runs in `FixedUpdate` (a fixed timestep, so the crowd steps the same way
/// whatever the frame rate) and moves the agents' `Transform`s.
#[derive(Debug, Clone)]
pub struct HordePlugin {
    /// The schedule the stages run in.
    pub schedule: InternedScheduleLabel,
    /// The settings resource inserted at start.
    pub settings: HordeSettings,
}

impl Default for HordePlugin {
    fn default() -> Self {
        HordePlugin {
            schedule: FixedUpdate.intern(),
            settings: HordeSettings::default(),
        }
    }
}

/// The builder methods are O(1); they only set the plugin's fields.
///
/// ```
/// use std::time::Duration;
/// use bevy_horde::{HordePlugin, Movement};
/// let plugin = HordePlugin::default()
///     .in_schedule(bevy_app::Update)
///     .with_fixed_dt(1.0 / 30.0)
///     .with_movement(Movement::Velocity)
///     .with_cells_per_tick(1 << 16)
///     .with_time_budget(Duration::from_millis(2));
/// assert_eq!(plugin.settings.cells_per_tick, 1 << 16);
/// assert_eq!(plugin.settings.movement, Movement::Velocity);
/// ```
impl HordePlugin {
    /// Run in another schedule (e.g. `Update`, with [`Self::with_fixed_dt`]).
    pub fn in_schedule(mut self, schedule: impl ScheduleLabel) -> Self {
        self.schedule = schedule.intern();
        self
    }
    /// Who moves the units.
    pub fn with_movement(mut self, movement: Movement) -> Self {
        self.settings.movement = movement;
        self
    }
    /// Cells of field-building work per tick.
    pub fn with_cells_per_tick(mut self, cells: usize) -> Self {
        self.settings.cells_per_tick = cells;
        self
    }
    /// Also stop field builds after this much time per tick (not deterministic).
    pub fn with_time_budget(mut self, budget: Duration) -> Self {
        self.settings.time_budget = Some(budget);
        self
    }
    /// Step the crowd by `dt` seconds per tick whatever the clock says.
    pub fn with_fixed_dt(mut self, dt: f32) -> Self {
        self.settings.fixed_dt = Some(dt);
        self
    }
}

impl Plugin for HordePlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(self.settings)
            .init_resource::<systems::HordeScratch>()
            .add_message::<NavMapEdits>()
            .add_message::<NavError>()
            .configure_sets(
                self.schedule,
                (
                    HordeSystems::SyncIn,
                    HordeSystems::Fields,
                    HordeSystems::Crowd,
                    HordeSystems::SyncOut,
                )
                    .chain(),
            )
            .add_systems(
                self.schedule,
                (
                    (systems::forget_removed, systems::detach, systems::sync_in)
                        .chain()
                        .in_set(HordeSystems::SyncIn),
                    systems::fields.in_set(HordeSystems::Fields),
                    systems::step_crowds.in_set(HordeSystems::Crowd),
                    systems::sync_out.in_set(HordeSystems::SyncOut),
                ),
            );
    }
}

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
