//! Debug drawing with gizmos: costs, flow arrows, goals and agents.

use std::f32::consts::FRAC_PI_2;

use bevy_app::{App, Plugin, PostUpdate};
use bevy_color::Color;
use bevy_ecs::prelude::*;
use bevy_gizmos::prelude::*;
use bevy_math::{Isometry3d, Quat, UVec2, Vec2, Vec3};
use bevy_reflect::Reflect;
use bevy_transform::components::Transform;
use horde::WALL;

use crate::components::{AgentStatus, MapPlane, NavAgent, NavMap};

/// The gizmo config group of horde's drawings: turn them all off with
/// `GizmoConfigStore::config_mut::<HordeGizmos>().0.enabled = false`, or thicken their lines.
#[derive(Default, Reflect, GizmoConfigGroup)]
pub struct HordeGizmos;

/// Which layers [`HordeDebugPlugin`] draws (a resource: switch them at run time).
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct HordeDebugSettings {
    /// Walls (a cross per cell) and terrain costs above 1 (a square, browner the dearer).
    pub costs: bool,
    /// The arrows of every field in use.
    pub flow: bool,
    /// Each agent's body, coloured by [`AgentStatus`].
    pub agents: bool,
    /// A cross on each goal in use.
    pub targets: bool,
    /// At most this many cells drawn per layer and map: larger maps are drawn every k-th cell.
    pub max_cells: usize,
    /// How far above the map's plane (world units, along its normal) the drawings sit.
    pub lift: f32,
}

impl Default for HordeDebugSettings {
    fn default() -> Self {
        HordeDebugSettings {
            costs: true,
            flow: true,
            agents: true,
            targets: true,
            max_cells: 1 << 14,
            lift: 0.05,
        }
    }
}

/// What the last frame drew, counted from the gizmo buffer (for tests and overlays).
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HordeDebugStats {
    /// Line segments drawn.
    pub lines: usize,
}

/// Draws what [`crate::HordePlugin`] does with gizmos, every frame in `PostUpdate`. Needs
/// Bevy's gizmo plugin (part of `DefaultPlugins`).
#[derive(Debug, Clone, Copy, Default)]
pub struct HordeDebugPlugin;

impl Plugin for HordeDebugPlugin {
    fn build(&self, app: &mut App) {
        app.init_gizmo_group::<HordeGizmos>()
            .init_resource::<HordeDebugSettings>()
            .init_resource::<HordeDebugStats>()
            .add_systems(PostUpdate, draw);
    }
}

fn status_colour(status: AgentStatus) -> Color {
    match status {
        AgentStatus::Idle => Color::srgb(0.6, 0.6, 0.6),
        AgentStatus::Waiting => Color::srgb(0.9, 0.9, 0.2),
        AgentStatus::Moving => Color::srgb(0.2, 0.6, 1.0),
        AgentStatus::Arrived => Color::srgb(0.2, 0.9, 0.3),
        AgentStatus::NoPath => Color::srgb(1.0, 0.2, 0.2),
        AgentStatus::Stuck => Color::srgb(1.0, 0.5, 0.0),
    }
}

/// The plane's points lifted off it, and the rotation that lays a circle in it.
struct Lay {
    plane: MapPlane,
    lift: f32,
}

impl Lay {
    fn at(&self, p: Vec2) -> Vec3 {
        match self.plane {
            MapPlane::Xy => Vec3::new(p.x, p.y, self.lift),
            MapPlane::Xz => Vec3::new(p.x, self.lift, p.y),
        }
    }
    fn circle(&self, p: Vec2) -> Isometry3d {
        let rotation = match self.plane {
            MapPlane::Xy => Quat::IDENTITY,
            MapPlane::Xz => Quat::from_rotation_x(FRAC_PI_2),
        };
        Isometry3d::new(self.at(p), rotation)
    }
}

/// Two diagonal strokes of half-length `half` (times √2) across `centre`.
fn cross(gizmos: &mut Gizmos<HordeGizmos>, lay: &Lay, centre: Vec2, half: f32, colour: Color) {
    for (from, to) in [(-1.0, -1.0), (-1.0, 1.0)].map(|(x, y)| {
        let d = Vec2::new(x, y) * half;
        (centre + d, centre - d)
    }) {
        gizmos.line(lay.at(from), lay.at(to), colour);
    }
}

fn draw(
    settings: Res<HordeDebugSettings>,
    mut stats: ResMut<HordeDebugStats>,
    mut gizmos: Gizmos<HordeGizmos>,
    maps: Query<(Entity, &NavMap)>,
    agents: Query<(&NavAgent, &Transform, &AgentStatus)>,
) {
    for (map_entity, map) in &maps {
        let lay = Lay {
            plane: map.plane(),
            lift: settings.lift,
        };
        let grid = *map.grid();
        let (w, h) = (grid.width(), grid.height());
        // Every k-th cell each way, so that at most max_cells cells are drawn.
        let cells = (w as usize) * (h as usize);
        let stride = (cells as f64 / settings.max_cells.max(1) as f64)
            .sqrt()
            .ceil()
            .max(1.0) as u32;
        let size = grid.cell_size();
        let each = || {
            (0..h).step_by(stride as usize).flat_map(move |y| {
                (0..w)
                    .step_by(stride as usize)
                    .map(move |x| UVec2::new(x, y))
            })
        };
        if settings.costs {
            let cost = map.cost();
            for c in each() {
                let t = cost.get(c).unwrap_or(WALL);
                let centre = grid.cell_center(c);
                let half = 0.4 * size * stride as f32;
                if t == WALL {
                    cross(
                        &mut gizmos,
                        &lay,
                        centre,
                        half,
                        Color::srgb(0.35, 0.35, 0.4),
                    );
                } else if t > 1 {
                    let k = t as f32 / 254.0;
                    let colour = Color::srgb(0.5 + 0.4 * k, 0.45 - 0.2 * k, 0.2);
                    let corners = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
                        .map(|(x, y)| lay.at(centre + Vec2::new(x, y) * half));
                    gizmos.lineloop(corners, colour);
                }
            }
        }
        let goals: Vec<_> = map.goals_in_use().collect();
        if settings.flow {
            for key in &goals {
                let Some(flow) = map.flow(key.goal, key.class) else {
                    continue;
                };
                let colour = Color::srgb(0.3, 0.8, 0.9);
                for c in each() {
                    let Some(dir) = flow.dir(c) else { continue };
                    let centre = grid.cell_center(c);
                    let reach = dir.vec2() * 0.4 * size * stride as f32;
                    gizmos.arrow(lay.at(centre - reach), lay.at(centre + reach), colour);
                }
            }
        }
        if settings.targets {
            for key in &goals {
                let centre = grid.cell_center(key.goal);
                cross(
                    &mut gizmos,
                    &lay,
                    centre,
                    0.5 * size,
                    Color::srgb(1.0, 0.3, 0.8),
                );
            }
        }
        if settings.agents {
            for (agent, transform, status) in &agents {
                if agent.map != map_entity {
                    continue;
                }
                let p = lay.plane.to_map(transform.translation);
                gizmos
                    .circle(lay.circle(p), agent.radius, status_colour(*status))
                    .resolution(12);
            }
        }
    }
    let view = gizmos.buffer();
    let strip_segments = view
        .strip_positions
        .windows(2)
        .filter(|pair| pair.iter().all(|p| p.is_finite()))
        .count();
    stats.lines = view.list_positions.len() / 2 + strip_segments;
}
