//! The four stages of a tick (see the crate's documentation), one system each.

use std::time::Instant;

use bevy_ecs::prelude::*;
use bevy_math::Vec2;
use bevy_time::Time;
use bevy_transform::components::Transform;
use horde::crowd::{AgentParams, AgentState, Group};
use horde::{CostEdit, FieldKey, FieldRequest, LiveError};

use crate::components::{
    AgentStatus, DesiredVelocity, HordeError, Link, NavAgent, NavError, NavMap, NavMapEdits,
    NavTarget, Slot, Wanted,
};
use crate::{HordeSettings, Movement};

/// Reused buffers of the stages (nothing is allocated per tick once they have grown).
#[derive(Resource, Default)]
pub(crate) struct HordeScratch {
    edits: Vec<(Entity, Vec<CostEdit>)>,
    waiting: Vec<Entity>,
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

/// Edits, new and changed agents, moved transforms and targets.
pub(crate) fn sync_in(
    settings: Res<HordeSettings>,
    mut scratch: ResMut<HordeScratch>,
    mut edits: MessageReader<NavMapEdits>,
    mut errors: MessageWriter<NavError>,
    mut maps: Query<(Entity, &mut NavMap)>,
    mut agents: Query<(Entity, &mut NavAgent, &Transform, Option<&NavTarget>)>,
    targets: Query<&Transform>,
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

    // Agents that changed map, size or speed leave their old crowd first.
    for (e, mut agent, _, _) in &mut agents {
        let Some(link) = agent.link else { continue };
        if link.map == agent.map
            && link.radius == agent.radius
            && link.speed == agent.speed
            && link.class == agent.size_class
        {
            continue;
        }
        if let Ok((_, mut map)) = maps.get_mut(link.map)
            && map.agents.remove(&e).is_some()
        {
            let _ = map.crowd.remove_agent(link.handle);
        }
        agent.link = None;
    }

    // Agents whose map is gone are detached; those naming no map are reported once.
    for (e, mut agent, _, _) in &mut agents {
        let map_exists = maps.contains(agent.map);
        if let Some(link) = agent.link
            && !maps.contains(link.map)
        {
            agent.link = None;
        }
        if !map_exists && !agent.reported {
            agent.reported = true;
            errors.write(NavError {
                entity: e,
                error: HordeError::NoMap(agent.map),
            });
        } else if map_exists {
            agent.reported = false;
        }
    }

    let tolerance = match settings.movement {
        Movement::Transform => 0.0,
        Movement::Velocity => SAME_PLACE,
    };
    // Map by map (a world has few), so that each agent finds its map without a lookup.
    for (map_entity, mut map) in &mut maps {
        let map = &mut *map;
        let slack = tolerance * map.grid().cell_size();
        for (e, mut agent, transform, target) in &mut agents {
            if agent.map != map_entity {
                continue;
            }
            let agent = &mut *agent;
            let p = map.plane.to_map(transform.translation);
            let link = match &mut agent.link {
                Some(link) => link,
                None => {
                    let params = AgentParams {
                        position: p,
                        radius: agent.radius,
                        max_speed: agent.speed,
                        group: 0,
                    };
                    match map.crowd.add_agent(map.cache.map(), params) {
                        Ok(handle) => {
                            map.agents.insert(e, handle);
                            agent.link.insert(Link {
                                map: map_entity,
                                handle,
                                radius: agent.radius,
                                speed: agent.speed,
                                class: agent.size_class,
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
            // Moved by the game (a teleport, or physics with Movement::Velocity).
            if p != link.written && (p - link.written).abs().max_element() > slack {
                if let Err(err) = map.crowd.set_position(map.cache.map(), link.handle, p) {
                    errors.write(NavError {
                        entity: e,
                        error: err.into(),
                    });
                }
                link.written = p;
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
            link.target = match cell {
                None => Wanted::Nothing,
                Some(cell) => {
                    let class_cost = map.class_cost(link.class);
                    match (cell, class_cost) {
                        (Some(c), Some(cost)) if cost.is_walkable(c) => Wanted::Field(FieldKey {
                            goal: c,
                            class: link.class,
                        }),
                        _ => Wanted::Unusable,
                    }
                }
            };
        }
    }
}

/// Fields for the goals in use: shared, cached, built within the tick's budget.
pub(crate) fn fields(
    settings: Res<HordeSettings>,
    mut scratch: ResMut<HordeScratch>,
    mut errors: MessageWriter<NavError>,
    mut maps: Query<(Entity, &mut NavMap)>,
    mut agents: Query<&mut NavAgent>,
) {
    let mut budget = settings.cells_per_tick;
    let deadline = settings.time_budget.map(|t| Instant::now() + t);
    for (map_entity, mut map) in &mut maps {
        let map = &mut *map;
        for slot in &mut map.slots {
            slot.users = 0;
        }
        map.missing.clear();
        scratch.waiting.clear();
        // Who follows what; goals with no field yet are gathered.
        for mut agent in &mut agents {
            let Some(link) = agent.link.as_mut().filter(|l| l.map == map_entity) else {
                continue;
            };
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
        for mut agent in &mut agents {
            let Some(link) = agent.link.as_mut().filter(|l| l.map == map_entity) else {
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
    time: Option<Res<Time>>,
    mut errors: MessageWriter<NavError>,
    mut maps: Query<(Entity, &mut NavMap)>,
) {
    // Without a fixed dt nor Bevy's clock (no TimePlugin), the crowd stands still.
    let dt = settings
        .fixed_dt
        .or_else(|| time.map(|t| t.delta_secs()))
        .unwrap_or(0.0);
    if !dt.is_finite() || dt <= 0.0 {
        return;
    }
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
    maps: Query<&NavMap>,
    mut agents: Query<(
        &mut NavAgent,
        &mut Transform,
        &mut AgentStatus,
        &mut DesiredVelocity,
    )>,
) {
    let mut current: Option<(Entity, &NavMap)> = None;
    for (mut agent, mut transform, mut status, mut velocity) in &mut agents {
        let Some(link) = agent.link.as_mut() else {
            status.set_if_neq(AgentStatus::NoPath);
            velocity.set_if_neq(DesiredVelocity::default());
            continue;
        };
        let map = match current {
            Some((e, map)) if e == link.map => map,
            _ => match maps.get(link.map) {
                Ok(map) => {
                    current = Some((link.map, map));
                    map
                }
                Err(_) => continue,
            },
        };
        let (Ok(p), Ok(v), Ok(state), Ok(stuck)) = (
            map.crowd.position(link.handle),
            map.crowd.velocity(link.handle),
            map.crowd.state(link.handle),
            map.crowd.is_stuck(link.handle),
        ) else {
            continue;
        };
        let now = match (link.target, link.slot) {
            (Wanted::Nothing, _) => AgentStatus::Idle,
            (Wanted::Unusable, _) => AgentStatus::NoPath,
            (Wanted::Field(_), 0) => AgentStatus::Waiting,
            (Wanted::Field(_), _) => match state {
                AgentState::Arrived => AgentStatus::Arrived,
                AgentState::NoPath => AgentStatus::NoPath,
                AgentState::Moving if stuck => AgentStatus::Stuck,
                AgentState::Moving => AgentStatus::Moving,
            },
        };
        status.set_if_neq(now);
        let plane = map.plane;
        velocity.set_if_neq(DesiredVelocity(plane.to_world(v, bevy_math::Vec3::ZERO)));
        if settings.movement == Movement::Transform {
            let to = plane.to_world(p, transform.translation);
            if to != transform.translation {
                transform.translation = to;
            }
            link.written = p;
        }
    }
}
