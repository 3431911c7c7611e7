//! The components, messages and errors a game works with.

use std::collections::{BTreeSet, HashMap};

use bevy_ecs::prelude::*;
use bevy_math::{UVec2, Vec2, Vec3};
use bevy_transform::components::Transform;
use horde::crowd::{AgentHandle, Crowd, CrowdConfig, CrowdError};
use horde::{
    CostEdit, CostError, CostField, CostModel, FieldCache, FieldKey, FlowField, Grid, LiveError,
    SizeClass,
};
use thiserror::Error;

/// Which plane of the world a map lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum MapPlane {
    /// x and y (2D games): map x is world x, map y is world y.
    #[default]
    Xy,
    /// x and z (3D games on the ground): map x is world x, map y is world z.
    Xz,
}

impl MapPlane {
    /// The point's position on the map's plane. O(1).
    ///
    /// ```
    /// use bevy_horde::MapPlane;
    /// use bevy_math::{Vec2, Vec3};
    /// let p = Vec3::new(1.0, 2.0, 3.0);
    /// assert_eq!(MapPlane::Xy.to_map(p), Vec2::new(1.0, 2.0));
    /// assert_eq!(MapPlane::Xz.to_map(p), Vec2::new(1.0, 3.0));
    /// // And back, keeping the coordinate off the plane.
    /// assert_eq!(MapPlane::Xz.to_world(Vec2::new(5.0, 6.0), p), Vec3::new(5.0, 2.0, 6.0));
    /// ```
    #[inline]
    pub fn to_map(self, p: Vec3) -> Vec2 {
        match self {
            MapPlane::Xy => Vec2::new(p.x, p.y),
            MapPlane::Xz => Vec2::new(p.x, p.z),
        }
    }
    /// A map position back in the world, with the third coordinate taken from `keep`. O(1).
    #[inline]
    pub fn to_world(self, p: Vec2, keep: Vec3) -> Vec3 {
        match self {
            MapPlane::Xy => Vec3::new(p.x, p.y, keep.z),
            MapPlane::Xz => Vec3::new(p.x, keep.y, p.y),
        }
    }
}

/// What went wrong, for whom: sent as a message (read it with `MessageReader<NavError>`); the
/// plugin never panics on the world's contents.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct NavError {
    /// The agent or map concerned.
    pub entity: Entity,
    /// Why.
    pub error: HordeError,
}

/// Why the plugin could not do something.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum HordeError {
    /// The crowd refused a value (NaN position, radius not above 0, …).
    #[error(transparent)]
    Crowd(#[from] CrowdError),
    /// A field or an edit was refused.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// An edit was refused.
    #[error(transparent)]
    Cost(#[from] CostError),
    /// An agent names a map entity that has no [`NavMap`].
    #[error("agent's map {0} has no NavMap")]
    NoMap(Entity),
    /// A map already has agents: its crowd settings can no longer change.
    #[error("the map's crowd settings can only change before agents join it")]
    MapInUse,
}

/// Cost edits for one map, applied in one batch at the start of the next tick and repaired
/// into every field of the map, so every agent's route follows.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct NavMapEdits {
    /// The map entity.
    pub map: Entity,
    /// The edits, applied in order.
    pub edits: Vec<CostEdit>,
}

/// One field slot of a map: a crowd group, the field it follows and how many agents use it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Slot {
    pub(crate) key: Option<FieldKey>,
    pub(crate) users: u32,
}

/// A walkable map: its cost field (which carries the cell size and the origin), the fields
/// built on it and the crowd moving on it. Several maps may live in one world (one per floor,
/// or one per size class of units); agents on different maps do not see each other.
///
/// Memory: the cost field (1 byte per cell), the fields in use or cached (5 bytes per cell
/// each, under [`NavMap::with_field_budget`]; 256 MiB by default), the builder and repairer's
/// scratch (about 11 bytes per cell once a field has been built), one inflated cost field per
/// size class (1 byte per cell) and the crowd (at most 64 bytes per agent).
#[derive(Component, Debug)]
pub struct NavMap {
    pub(crate) cache: FieldCache,
    pub(crate) crowd: Crowd,
    pub(crate) plane: MapPlane,
    /// Slot `k` is crowd group `k`; slot 0 has no field (agents waiting or without a target).
    pub(crate) slots: Vec<Slot>,
    pub(crate) slot_of: HashMap<FieldKey, u16>,
    /// The field of slot 0: no arrows anywhere, so its agents stand.
    pub(crate) hold: FlowField,
    /// Crowd handles by entity, to remove despawned agents.
    pub(crate) agents: HashMap<Entity, AgentHandle>,
    /// Goals asked for this tick with no field yet, in a fixed order.
    pub(crate) missing: BTreeSet<FieldKey>,
    budget_bytes: usize,
    class_radii: Vec<f32>,
}

impl NavMap {
    /// A map over `cost` (its grid gives the cell size and the origin: see
    /// [`Grid::with_world`]), with the 10-14 cost model, the default crowd settings and a
    /// 256 MiB field budget. O(cells).
    ///
    /// ```
    /// use bevy_horde::NavMap;
    /// let cost = horde::CostField::new(horde::Grid::new(64, 64).unwrap());
    /// let map = NavMap::new(cost).unwrap();
    /// assert_eq!(map.cost().width(), 64);
    /// ```
    pub fn new(cost: CostField) -> Result<NavMap, HordeError> {
        let grid = *cost.grid();
        let budget_bytes = 256 << 20;
        Ok(NavMap {
            cache: FieldCache::new(cost, CostModel::TenFourteen, budget_bytes),
            crowd: Crowd::new(grid, CrowdConfig::default())?,
            plane: MapPlane::Xy,
            slots: vec![Slot::default()],
            slot_of: HashMap::new(),
            hold: FlowField::new(grid),
            agents: HashMap::new(),
            missing: BTreeSet::new(),
            budget_bytes,
            class_radii: Vec::new(),
        })
    }

    /// The same map in another plane of the world. O(1).
    ///
    /// ```
    /// use bevy_horde::{MapPlane, NavMap};
    /// use bevy_math::{UVec2, Vec3};
    /// let cost = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// let map = NavMap::new(cost).unwrap().with_plane(MapPlane::Xz);
    /// assert_eq!(map.cell_of(Vec3::new(2.5, 9.0, 5.5)), Some(UVec2::new(2, 5)));
    /// assert_eq!(map.cell_center(UVec2::new(2, 5)), Vec3::new(2.5, 0.0, 5.5));
    /// ```
    pub fn with_plane(mut self, plane: MapPlane) -> NavMap {
        self.plane = plane;
        self
    }

    /// The same map with other crowd settings (separation, arrival, collision passes…); refused
    /// once agents have joined it, or for settings the crowd refuses. O(1).
    ///
    /// ```
    /// use bevy_horde::NavMap;
    /// use horde::crowd::CrowdConfig;
    /// let cost = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// let calm = CrowdConfig { separation_weight: 1.0, ..CrowdConfig::default() };
    /// let map = NavMap::new(cost.clone()).unwrap().with_crowd_config(calm).unwrap();
    /// assert_eq!(map.crowd().config().separation_weight, 1.0);
    /// let wrong = CrowdConfig { separation_radius: -1.0, ..CrowdConfig::default() };
    /// assert!(NavMap::new(cost).unwrap().with_crowd_config(wrong).is_err());
    /// ```
    pub fn with_crowd_config(mut self, config: CrowdConfig) -> Result<NavMap, HordeError> {
        if !self.crowd.is_empty() {
            return Err(HordeError::MapInUse);
        }
        self.crowd = Crowd::new(*self.grid(), config)?;
        Ok(self)
    }

    /// The same map with another cost model; cached fields are dropped (and rebuilt as needed).
    /// O(cells) per size class.
    ///
    /// ```
    /// use bevy_horde::NavMap;
    /// use horde::CostModel;
    /// let cost = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// let map = NavMap::new(cost).unwrap().with_cost_model(CostModel::Octile).unwrap();
    /// assert_eq!(map.goals_in_use().count(), 0);
    /// ```
    pub fn with_cost_model(self, model: CostModel) -> Result<NavMap, HordeError> {
        let bytes = self.budget_bytes;
        self.remake_cache(model, bytes)
    }

    /// The same map keeping at most `bytes` of cached fields (the fields in use are kept even
    /// over budget while they are in use, though a build may evict one, which is then rebuilt).
    /// O(cells) per size class.
    ///
    /// ```
    /// use bevy_horde::NavMap;
    /// let cost = horde::CostField::new(horde::Grid::new(64, 64).unwrap());
    /// // Room for about three 64 × 64 fields (5 bytes per cell each).
    /// let map = NavMap::new(cost).unwrap().with_field_budget(3 * 5 * 64 * 64).unwrap();
    /// assert_eq!(map.cost().width(), 64);
    /// ```
    pub fn with_field_budget(self, bytes: usize) -> Result<NavMap, HordeError> {
        let model = self.cache.model();
        self.remake_cache(model, bytes)
    }

    fn remake_cache(mut self, model: CostModel, bytes: usize) -> Result<NavMap, HordeError> {
        let map = self.cache.map().clone();
        self.cache = FieldCache::new(map, model, bytes);
        for &r in &self.class_radii {
            self.cache.add_size_class(r)?;
        }
        self.budget_bytes = bytes;
        self.slots = vec![Slot::default()];
        self.slot_of.clear();
        Ok(self)
    }

    /// Add a size class: agents of [`NavAgent::size_class`] `k` follow fields built on the map
    /// with walls grown by `radius` (so they keep out of gaps too narrow for them). O(cells).
    ///
    /// ```
    /// use bevy_horde::NavMap;
    /// let cost = horde::CostField::new(horde::Grid::new(16, 16).unwrap());
    /// let mut map = NavMap::new(cost).unwrap();
    /// assert_eq!(map.add_size_class(0.9).unwrap(), horde::SizeClass(1));
    /// ```
    pub fn add_size_class(&mut self, radius: f32) -> Result<SizeClass, HordeError> {
        let class = self.cache.add_size_class(radius)?;
        self.class_radii.push(radius);
        Ok(class)
    }

    /// The cost field as it is now (edits included). O(1).
    pub fn cost(&self) -> &CostField {
        self.cache.map()
    }

    /// The grid: size, cell size and origin. O(1).
    pub fn grid(&self) -> &Grid {
        self.cache.map().grid()
    }

    /// The plane the map lies in. O(1).
    pub fn plane(&self) -> MapPlane {
        self.plane
    }

    /// The crowd moving on the map (read-only: the plugin owns it). O(1).
    pub fn crowd(&self) -> &Crowd {
        &self.crowd
    }

    /// The flow field toward `goal` for `class`, if it is built and cached. O(fields cached).
    pub fn flow(&self, goal: UVec2, class: SizeClass) -> Option<&FlowField> {
        self.cache.flow(FieldKey { goal, class })
    }

    /// The goal cells and size classes followed by at least one agent, after the last tick.
    /// O(goals in use).
    pub fn goals_in_use(&self) -> impl Iterator<Item = FieldKey> + '_ {
        self.slots
            .iter()
            .filter(|s| s.users > 0)
            .filter_map(|s| s.key)
    }

    /// How far from `goal` the pile of agents arrived there reaches, as the last crowd step
    /// measured it (see [`Crowd::pile_radius`]); `None` if nobody follows that field. O(1).
    pub fn pile_radius(&self, goal: UVec2, class: SizeClass) -> Option<f32> {
        let slot = *self.slot_of.get(&FieldKey { goal, class })?;
        self.crowd.pile_radius(slot)
    }

    /// The cell under a world point, if it is on the map. O(1).
    pub fn cell_of(&self, p: Vec3) -> Option<UVec2> {
        self.grid().world_to_cell(self.plane.to_map(p))
    }

    /// The world position of a cell's centre, at height (or depth) 0. O(1).
    pub fn cell_center(&self, cell: UVec2) -> Vec3 {
        self.plane
            .to_world(self.grid().cell_center(cell), Vec3::ZERO)
    }

    /// The cost field of a size class.
    pub(crate) fn class_cost(&self, class: SizeClass) -> Option<&CostField> {
        self.cache.class_map(class).ok()
    }
}

/// Where an agent is going.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub enum NavTarget {
    /// A map cell.
    Cell(UVec2),
    /// A world point (rounded to its cell).
    Point(Vec3),
    /// Another entity, followed by its `Transform` (rounded to its cell, so a target moving
    /// within a cell does not cost a new field).
    Entity(Entity),
}

/// What an agent is doing, as the last tick left it.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AgentStatus {
    /// No [`NavTarget`] (or not yet seen by the plugin): it stands, giving way to others.
    #[default]
    Idle,
    /// Its target's field is being built; it stands (or follows its previous field) meanwhile.
    Waiting,
    /// Following its field.
    Moving,
    /// At its goal, or in the pile of agents already there.
    Arrived,
    /// No way to the target (walled off, or the target is a wall or off the map), or the map
    /// is missing: it stands.
    NoPath,
    /// Moving, but it has not come closer to its goal for a while (see
    /// [`CrowdConfig::stuck_time`]).
    Stuck,
}

/// The velocity the crowd gives the agent this tick (world units per second, in the map's
/// plane): the agent's motion with [`crate::Movement::Transform`]; with
/// [`crate::Movement::Velocity`], the velocity to apply for one tick to reach where the crowd put
/// it.
#[derive(Component, Debug, Clone, Copy, PartialEq, Default)]
pub struct DesiredVelocity(pub Vec3);

/// The plugin's record of an agent in its map's crowd: the fields every tick reads, kept apart
/// from [`NavAgent`] so that the per-tick passes touch 48 bytes per agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Link {
    pub(crate) map: Entity,
    pub(crate) handle: AgentHandle,
    /// Crowd group (field slot) followed now.
    pub(crate) slot: u16,
    pub(crate) target: Wanted,
    /// Position on the map the agent's `Transform` had (or was given) at the last sync.
    pub(crate) written: Vec2,
}

/// The plugin's own component on each agent (required by [`NavAgent`]); nothing to set.
#[derive(Component, Debug, Clone, Copy, PartialEq, Default)]
#[doc(hidden)]
pub struct AgentLink(pub(crate) Option<Link>);

/// What an agent's target asks for this tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// No target.
    Nothing,
    /// The field toward this goal.
    Field(FieldKey),
    /// A target that is a wall or off the map.
    Unusable,
}

/// A unit that navigates on a [`NavMap`]: a disc of `radius` moving at up to `speed` (world
/// units, per second). Give it a [`NavTarget`] to send it somewhere.
///
/// Memory: 40 bytes (the component), plus [`AgentStatus`] (1 byte), [`DesiredVelocity`]
/// (12 bytes) and the plugin's record (48 bytes), plus the agent's place in its map's crowd (at
/// most 64 bytes).
#[derive(Component, Debug, Clone, Copy, PartialEq)]
#[require(Transform, AgentStatus, DesiredVelocity, AgentLink)]
pub struct NavAgent {
    /// The map entity it moves on.
    pub map: Entity,
    /// Body radius (world units).
    pub radius: f32,
    /// Top speed (world units per second).
    pub speed: f32,
    /// Which fields it follows: 0 for the map as it is, or a class from
    /// [`NavMap::add_size_class`].
    pub size_class: SizeClass,
    /// Radius, speed and size class the crowd was given, to notice when the game changes them.
    pub(crate) joined: Option<(f32, f32, SizeClass)>,
    pub(crate) reported: bool,
}

impl NavAgent {
    /// An agent on `map` of this radius and top speed, in size class 0. O(1); it joins the
    /// map's crowd at the next tick (a radius or speed not above 0, or a NaN position, is
    /// reported as a [`NavError`] then).
    ///
    /// ```
    /// use bevy_ecs::world::World;
    /// use bevy_horde::{AgentStatus, NavAgent};
    /// use horde::SizeClass;
    /// let mut world = World::new();
    /// let map = world.spawn_empty().id();
    /// let unit = world.spawn(NavAgent::new(map, 0.4, 3.0).with_size_class(SizeClass(1))).id();
    /// // The components it requires come with it.
    /// assert_eq!(world.get::<AgentStatus>(unit), Some(&AgentStatus::Idle));
    /// assert!(world.get::<bevy_transform::components::Transform>(unit).is_some());
    /// ```
    pub fn new(map: Entity, radius: f32, speed: f32) -> NavAgent {
        NavAgent {
            map,
            radius,
            speed,
            size_class: SizeClass(0),
            joined: None,
            reported: false,
        }
    }

    /// The same agent in another size class. O(1).
    pub fn with_size_class(mut self, class: SizeClass) -> NavAgent {
        self.size_class = class;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_agent_records_cost_what_their_docs_say() {
        assert_eq!(std::mem::size_of::<NavAgent>(), 40);
        assert_eq!(std::mem::size_of::<AgentLink>(), 48);
        assert_eq!(std::mem::size_of::<AgentStatus>(), 1);
        assert_eq!(std::mem::size_of::<DesiredVelocity>(), 12);
    }
}
