//! The four stages of a tick (see the crate's documentation), one system each.

use std::time::Instant;

use bevy_ecs::change_detection::Tick;
use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemChangeTick;
use bevy_math::{Vec2, Vec3};
use bevy_time::Time;
use bevy_transform::components::Transform;
use horde::crowd::{AgentParams, AgentSnapshot, AgentState, Group};
use horde::{CostEdit, FieldKey, FieldRequest, LiveError};

use crate::components::{
    AgentLink, AgentStatus, DesiredVelocity, HordeError, Link, MapPlane, NavAgent, NavError,
    NavMap, NavMapEdits, NavTarget, Slot, Wanted,
};
use crate::{HordeSettings, Movement};

/// Reused buffers of the stages (nothing is allocated per tick once they have grown).
#[derive(Resource, Default)]
pub(crate) struct HordeScratch {
    edits: Vec<(Entity, Vec<CostEdit>)>,
    /// Each map's crowd copied out by agent id, for the write-back.
    copies: Vec<(Entity, MapPlane, Vec<Option<AgentSnapshot>>)>,
    /// When the write-back last ran: a `Transform` changed since was moved by the game.
    written: Tick,
    /// The last crowd step's length (0 if none ran this tick).
    dt: f32,
}

/// With [`Movement::Velocity`], a `Transform` within this fraction of a cell of where the crowd
/// has the agent is taken as the same place: the game's integration of the desired velocity
/// never matches the crowd's to the bit, and teleporting would restart the agent's stuck timer.
const SAME_PLACE: f32 = 0.05;

/// Agents despawned (or stripped of [`NavAgent`]) leave their crowd.
pub(crate) fn forget_removed(
    mut removed: RemovedComponents<NavAgent>,
    mut maps: Query<&mut NavMap>,
) {
    for e in removed.read() {
        for mut map in &mut maps {
            if let Some(h) = map.agents.remove(&e) {
                // The handle is the map's own and alive: removal cannot fail.
                let _ = map.crowd.remove_agent(h);
            }
        }
    }
}

/// Agents the game changed (map, size, speed, size class) leave their old crowd; agents whose
/// map is gone are detached; agents naming no map are reported once. Only agents marked changed
/// are visited (the plugin's own records do not mark them), unless a map went.
pub(crate) fn detach(
    mut errors: MessageWriter<NavError>,
    mut maps: Query<(Entity, &mut NavMap)>,
    mut removed_maps: RemovedComponents<NavMap>,
    mut agents: Query<(Entity, &mut NavAgent, &mut AgentLink)>,
) {
    let any_map_gone = removed_maps.read().count() > 0;
    let live_maps: Vec<Entity> = maps.iter().map(|(e, _)| e).collect();
    for (e, mut agent, mut link) in &mut agents {
        if !any_map_gone && !agent.is_changed() {
            continue;
        }
        // The plugin's own records do not mark the component changed: `Changed<NavAgent>`
        // stays the game's signal.
        let agent = agent.bypass_change_detection();
        let link = link.bypass_change_detection();
        if let Some(l) = link.0 {
            let same = l.map == agent.map
                && agent.joined == Some((agent.radius, agent.speed, agent.size_class));
            if !same {
                if let Ok((_, mut map)) = maps.get_mut(l.map)
                    && map.agents.remove(&e).is_some()
                {
                    let _ = map.crowd.remove_agent(l.handle);
                }
                link.0 = None;
            } else if !live_maps.contains(&l.map) {
                link.0 = None;
            }
        }
        if link.0.is_none() {
            let map_exists = live_maps.contains(&agent.map);
            if !map_exists && !agent.reported {
                agent.reported = true;
                errors.write(NavError {
                    entity: e,
                    error: HordeError::NoMap(agent.map),
                });
            }
        }
    }
}

/// Edits, new agents, transforms moved by the game, and targets.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sync_in(
    settings: Res<HordeSettings>,
    mut scratch: ResMut<HordeScratch>,
    mut edits: MessageReader<NavMapEdits>,
    mut errors: MessageWriter<NavError>,
    mut maps: Query<(Entity, &mut NavMap)>,
    mut agents: Query<(
        Entity,
        &mut NavAgent,
        &mut AgentLink,
        Ref<Transform>,
        Option<&NavTarget>,
    )>,
    targets: Query<&Transform>,
    ticks: SystemChangeTick,
) {
    // Edits: one batch per map, in the order they were sent.
    let scratch = &mut *scratch;
    for (_, list) in &mut scratch.edits {
        list.clear();
    }
    for message in edits.read() {
        match scratch.edits.iter_mut().find(|(m, _)| *m == message.map) {
            Some((_, list)) => list.extend_from_slice(&message.edits),
            None => scratch.edits.push((message.map, message.edits.clone())),
        }
    }
    scratch.edits.retain(|(_, list)| !list.is_empty());
    for (map_entity, list) in &scratch.edits {
        let Ok((_, mut map)) = maps.get_mut(*map_entity) else {
            errors.write(NavError {
                entity: *map_entity,
                error: HordeError::NoMap(*map_entity),
            });
            continue;
        };
        let map = &mut *map;
        if let Err(e) = map.cache.apply_edits(list) {
            errors.write(NavError {
                entity: *map_entity,
                error: e.into(),
            });
            continue;
        }
        // Agents on cells that became walls go to the nearest walkable cell, as the crowd does
        // for any agent placed in a wall.
        let cost = map.cache.map();
        let grid = *cost.grid();
        let handles: Vec<_> = map.crowd.handles().collect();
        for h in handles {
            let p = map.crowd.position(h).expect("a handle the crowd listed");
            if !grid.world_to_cell(p).is_some_and(|c| cost.is_walkable(c)) {
                let _ = map.crowd.set_position(cost, h, p);
            }
        }
    }

    let tolerance = match settings.movement {
        Movement::Transform => 0.0,
        Movement::Velocity => SAME_PLACE,
    };
    let written = scratch.written;
    // Map by map (a world has few), so that each agent finds its map without a lookup.
    for (map_entity, mut map) in &mut maps {
        let map = &mut *map;
        let edited = scratch.edits.iter().any(|(m, _)| *m == map_entity);
        let slack = tolerance * map.grid().cell_size();
        for slot in &mut map.slots {
            slot.users = 0;
        }
        map.missing.clear();
        for (e, mut agent, mut link, transform, target) in &mut agents {
            let link = link.bypass_change_detection();
            let link = match &mut link.0 {
                Some(l) if l.map == map_entity => l,
                Some(_) => continue,
                None => {
                    if agent.map != map_entity {
                        continue;
                    }
                    let agent = agent.bypass_change_detection();
                    let p = map.plane.to_map(transform.translation);
                    let params = AgentParams {
                        position: p,
                        radius: agent.radius,
                        max_speed: agent.speed,
                        group: 0,
                    };
                    match map.crowd.add_agent(map.cache.map(), params) {
                        Ok(handle) => {
                            map.agents.insert(e, handle);
                            agent.reported = false;
                            agent.joined = Some((agent.radius, agent.speed, agent.size_class));
                            link.0.insert(Link {
                                map: map_entity,
                                handle,
                                slot: 0,
                                target: Wanted::Nothing,
                                written: p,
                            })
                        }
                        Err(err) => {
                            if !agent.reported {
                                agent.reported = true;
                                errors.write(NavError {
                                    entity: e,
                                    error: err.into(),
                                });
                            }
                            continue;
                        }
                    }
                }
            };
            // Moved by the game since the write-back (a teleport, or physics with
            // Movement::Velocity); the plugin's own writes are not news.
            if transform
                .last_changed()
                .is_newer_than(written, ticks.this_run())
            {
                let p = map.plane.to_map(transform.translation);
                if p != link.written && (p - link.written).abs().max_element() > slack {
                    if let Err(err) = map.crowd.set_position(map.cache.map(), link.handle, p) {
                        errors.write(NavError {
                            entity: e,
                            error: err.into(),
                        });
                    }
                    // A unit the game teleported heads for its target again, even if it had
                    // arrived: joining its group anew makes it a mover.
                    if settings.movement == Movement::Transform {
                        let _ = map.crowd.set_group(link.handle, link.slot);
                    }
                    link.written = p;
                }
            }
            let cell = match target {
                None => None,
                Some(NavTarget::Cell(c)) => Some(Some(*c)),
                Some(NavTarget::Point(q)) => Some(map.cell_of(*q)),
                Some(NavTarget::Entity(t)) => Some(
                    targets
                        .get(*t)
                        .ok()
                        .and_then(|t| map.cell_of(t.translation)),
                ),
            };
            // The same cell as last tick, on an unchanged map, gets the same answer.
            let unchanged = matches!((cell, link.target),
                (Some(Some(c)), Wanted::Field(key)) if key.goal == c && !edited);
            if !unchanged {
                let class = agent.size_class;
                link.target = match cell {
                    None => Wanted::Nothing,
                    Some(cell) => match (cell, map.class_cost(class)) {
                        (Some(c), Some(cost)) if cost.is_walkable(c) => {
                            Wanted::Field(FieldKey { goal: c, class })
                        }
                        _ => Wanted::Unusable,
                    },
                };
            }
            // Who follows what: a goal with a field is joined at once; goals with no field yet
            // are gathered for the next stage, and their agents keep what they follow.
            match link.target {
                Wanted::Nothing | Wanted::Unusable => switch(map, link, 0),
                Wanted::Field(key) => {
                    if map.slots[link.slot as usize].key != Some(key) {
                        match map.slot_of.get(&key) {
                            Some(&s) => switch(map, link, s),
                            None => {
                                map.missing.insert(key);
                            }
                        }
                    }
                }
            }
            map.slots[link.slot as usize].users += 1;
        }
    }
}

/// Fields for the goals in use: shared, cached, built within the tick's budget.
pub(crate) fn fields(
    settings: Res<HordeSettings>,
    mut errors: MessageWriter<NavError>,
    mut maps: Query<(Entity, &mut NavMap)>,
    mut agents: Query<&mut AgentLink>,
) {
    let mut budget = settings.cells_per_tick;
    let deadline = settings.time_budget.map(|t| Instant::now() + t);
    for (map_entity, mut map) in &mut maps {
        let map = &mut *map;
        // Fields in use stay cached (a field evicted by a build is rebuilt); slots nobody
        // follows any more are freed.
        for s in 1..map.slots.len() {
            let Some(key) = map.slots[s].key else {
                continue;
            };
            if map.slots[s].users == 0 {
                map.slot_of.remove(&key);
                map.slots[s] = Slot::default();
                continue;
            }
            if let Err(e) = request(map, key, &mut budget, deadline) {
                errors.write(NavError {
                    entity: map_entity,
                    error: e.into(),
                });
            }
        }
        // New goals, in a fixed order, while the budget lasts.
        let missing = std::mem::take(&mut map.missing);
        for &key in &missing {
            if budget == 0 || deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            match request(map, key, &mut budget, deadline) {
                Ok(FieldRequest::Ready(_)) => {
                    let s = match map.slots.iter().skip(1).position(|s| s.key.is_none()) {
                        Some(free) => free + 1,
                        // Crowd groups are numbered in 16 bits: beyond 65,535 goals in use at
                        // once, the rest wait for a slot to free up.
                        None if map.slots.len() > u16::MAX as usize => break,
                        None => {
                            map.slots.push(Slot::default());
                            map.slots.len() - 1
                        }
                    };
                    map.slots[s].key = Some(key);
                    map.slot_of.insert(key, s as u16);
                }
                Ok(FieldRequest::Building { .. }) => break,
                Err(e) => {
                    errors.write(NavError {
                        entity: map_entity,
                        error: e.into(),
                    });
                }
            }
        }
        map.missing = missing;
        if map.missing.is_empty() {
            continue;
        }
        // Agents whose field was built this tick start following it.
        for mut link in &mut agents {
            let Some(link) =
                (link.bypass_change_detection().0.as_mut()).filter(|l| l.map == map_entity)
            else {
                continue;
            };
            if let Wanted::Field(key) = link.target
                && map.missing.contains(&key)
                && let Some(&s) = map.slot_of.get(&key)
            {
                map.slots[link.slot as usize].users -= 1;
                switch(map, link, s);
                map.slots[s as usize].users += 1;
            }
        }
    }
}

/// Send the agent to slot `s` (a crowd group), if it is not there already.
fn switch(map: &mut NavMap, link: &mut Link, s: u16) {
    if link.slot != s {
        link.slot = s;
        // The handle is the map's own and alive: this cannot fail.
        let _ = map.crowd.set_group(link.handle, s);
    }
}

/// Ask the map's cache for a field within the budget (and before the deadline, if any).
fn request(
    map: &mut NavMap,
    key: FieldKey,
    budget: &mut usize,
    deadline: Option<Instant>,
) -> Result<FieldRequest, LiveError> {
    let Some(deadline) = deadline else {
        return map.cache.request_within(key.goal, key.class, budget);
    };
    loop {
        let mut chunk = (*budget).min(1 << 14);
        let before = chunk;
        let answer = map.cache.request_within(key.goal, key.class, &mut chunk)?;
        *budget -= before - chunk;
        if matches!(answer, FieldRequest::Ready(_)) || *budget == 0 || Instant::now() >= deadline {
            return Ok(answer);
        }
    }
}

/// One crowd step per map.
pub(crate) fn step_crowds(
    settings: Res<HordeSettings>,
    mut scratch: ResMut<HordeScratch>,
    time: Option<Res<Time>>,
    mut errors: MessageWriter<NavError>,
    mut maps: Query<(Entity, &mut NavMap)>,
) {
    // Without a fixed dt nor Bevy's clock (no TimePlugin), the crowd stands still.
    let dt = settings
        .fixed_dt
        .or_else(|| time.map(|t| t.delta_secs()))
        .unwrap_or(0.0);
    scratch.dt = 0.0;
    if !dt.is_finite() || dt <= 0.0 {
        return;
    }
    scratch.dt = dt;
    for (map_entity, mut map) in &mut maps {
        let map = &mut *map;
        if map.crowd.is_empty() {
            continue;
        }
        let grid = *map.grid();
        let groups: Vec<Group> = map
            .slots
            .iter()
            .map(
                |s| match s.key.and_then(|k| Some((k, map.cache.flow(k)?))) {
                    Some((k, flow)) => Group {
                        flow,
                        goal: grid.cell_center(k.goal),
                    },
                    None => Group {
                        flow: &map.hold,
                        goal: Vec2::ZERO,
                    },
                },
            )
            .collect();
        if let Err(e) = map.crowd.step(dt, map.cache.map(), &groups) {
            errors.write(NavError {
                entity: map_entity,
                error: e.into(),
            });
        }
    }
}

/// Statuses, desired velocities and transforms.
pub(crate) fn sync_out(
    settings: Res<HordeSettings>,
    mut scratch: ResMut<HordeScratch>,
    maps: Query<(Entity, &NavMap)>,
    mut agents: Query<(
        &mut AgentLink,
        &mut Transform,
        &mut AgentStatus,
        &mut DesiredVelocity,
    )>,
    ticks: SystemChangeTick,
) {
    scratch.written = ticks.this_run();
    // Each crowd copied out by agent id in one pass over its memory: agents are visited in the
    // world's order, which is the order they joined, hence the order of their ids.
    let scratch = &mut *scratch;
    let copies = &mut scratch.copies;
    copies.resize_with(maps.iter().len(), || {
        (Entity::PLACEHOLDER, MapPlane::default(), Vec::new())
    });
    for ((e, map), (entity, plane, copy)) in maps.iter().zip(copies.iter_mut()) {
        *entity = e;
        *plane = map.plane;
        // Entries of ids no longer in use keep an old handle, which no agent's link matches.
        copy.resize(map.crowd.id_capacity(), None);
        for a in map.crowd.snapshot() {
            copy[a.handle.id() as usize] = Some(a);
        }
    }
    let copies = &*copies;
    let (movement, dt) = (settings.movement, scratch.dt);
    // One by one: each write is a few bytes, and a parallel pass on two cores was slower.
    let mut current = 0;
    for item in &mut agents {
        write_back(copies, movement, dt, &mut current, item);
    }
}

/// One agent's status, desired velocity and transform from its crowd's copy; `current` is the
/// copy the last agent used (agents come map by map).
fn write_back(
    copies: &[(Entity, MapPlane, Vec<Option<AgentSnapshot>>)],
    movement: Movement,
    dt: f32,
    current: &mut usize,
    (mut link, mut transform, mut status, mut velocity): (
        Mut<AgentLink>,
        Mut<Transform>,
        Mut<AgentStatus>,
        Mut<DesiredVelocity>,
    ),
) {
    let link = link.bypass_change_detection();
    let found = link.0.and_then(|l| {
        if copies.get(*current).is_none_or(|(e, _, _)| *e != l.map) {
            *current = copies.iter().position(|(e, _, _)| *e == l.map)?;
        }
        let (_, _, copy) = &copies[*current];
        copy.get(l.handle.id() as usize)
            .copied()
            .flatten()
            .filter(|a| a.handle == l.handle)
    });
    let (Some(link), Some(a)) = (link.0.as_mut(), found) else {
        status.set_if_neq(AgentStatus::NoPath);
        velocity.set_if_neq(DesiredVelocity::default());
        return;
    };
    let now = match (link.target, link.slot) {
        (Wanted::Nothing, _) => AgentStatus::Idle,
        (Wanted::Unusable, _) => AgentStatus::NoPath,
        (Wanted::Field(_), 0) => AgentStatus::Waiting,
        (Wanted::Field(_), _) => match a.state {
            AgentState::Arrived => AgentStatus::Arrived,
            AgentState::NoPath => AgentStatus::NoPath,
            AgentState::Moving if a.stuck => AgentStatus::Stuck,
            AgentState::Moving => AgentStatus::Moving,
        },
    };
    status.set_if_neq(now);
    let plane = copies[*current].1;
    // With Movement::Velocity, the velocity that takes the unit from where the game has it to
    // where the crowd put it (walls and pushes included), so that the two stay together.
    let v = match movement {
        Movement::Velocity if dt > 0.0 => (a.position - plane.to_map(transform.translation)) / dt,
        _ => a.velocity,
    };
    velocity.set_if_neq(DesiredVelocity(plane.to_world(v, Vec3::ZERO)));
    if movement == Movement::Transform {
        let to = plane.to_world(a.position, transform.translation);
        if to != transform.translation {
            transform.translation = to;
        }
        link.written = a.position;
    }
}
