//! The plugin in headless apps: the default fixed-timestep schedule, the clock advanced by hand
//! one fixed step per `update`.

use std::time::Duration;

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_horde::horde::{CostEdit, CostField, Grid, SizeClass, WALL};
use bevy_horde::{
    AgentStatus, HordePlugin, HordeSystems, Movement, NavAgent, NavError, NavMap, NavMapEdits,
    NavTarget,
};
use bevy_math::{UVec2, Vec2, Vec3};
use bevy_time::{TimePlugin, TimeUpdateStrategy};
use bevy_transform::components::Transform;

/// One fixed step (Bevy's default, 64 Hz) per `update`.
fn headless(plugin: HordePlugin) -> App {
    let mut app = App::new();
    app.add_plugins(TimePlugin)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_micros(
            15625,
        )))
        .add_plugins(plugin);
    app
}

/// A map entity over `cost`, with the default settings.
fn spawn_map(app: &mut App, cost: CostField) -> Entity {
    app.world_mut().spawn(NavMap::new(cost).unwrap()).id()
}

/// `n` agents on `map`, on a grid of spots in the rectangle `min..max` (cells), heading to
/// `goal`.
fn spawn_block(
    app: &mut App,
    map: Entity,
    n: usize,
    (min, max): (Vec2, Vec2),
    goal: UVec2,
    radius: f32,
    class: SizeClass,
) -> Vec<Entity> {
    let size = max - min;
    let cols = ((n as f32 * size.x / size.y).sqrt().ceil() as usize).max(1);
    let rows = n.div_ceil(cols);
    (0..n)
        .map(|k| {
            let (i, j) = (k % cols, k / cols);
            let p = min
                + size
                    * Vec2::new(
                        (i as f32 + 0.5) / cols as f32,
                        (j as f32 + 0.5) / rows as f32,
                    );
            app.world_mut()
                .spawn((
                    NavAgent::new(map, radius, 4.0).with_size_class(class),
                    NavTarget::Cell(goal),
                    Transform::from_xyz(p.x, p.y, 1.0),
                ))
                .id()
        })
        .collect()
}

fn statuses(app: &mut App, agents: &[Entity]) -> Vec<AgentStatus> {
    agents
        .iter()
        .map(|&e| *app.world().get::<AgentStatus>(e).unwrap())
        .collect()
}

fn position(app: &App, e: Entity) -> Vec2 {
    let t = app.world().get::<Transform>(e).unwrap().translation;
    Vec2::new(t.x, t.y)
}

/// Run until every agent has arrived (or `limit` ticks), checking after each tick that no
/// agent's centre is in a wall cell; returns the ticks taken.
fn run_until_arrived(app: &mut App, map: Entity, agents: &[Entity], limit: usize) -> usize {
    for tick in 1..=limit {
        app.update();
        let nav = app.world().get::<NavMap>(map).unwrap();
        for &e in agents {
            let p = position(app, e);
            let cell = nav.grid().world_to_cell(p);
            assert!(
                cell.is_some_and(|c| nav.cost().is_walkable(c)),
                "agent {e} at {p} is in a wall at tick {tick}"
            );
        }
        if statuses(app, agents)
            .iter()
            .all(|&s| s == AgentStatus::Arrived)
        {
            return tick;
        }
    }
    let s = statuses(app, agents);
    let late = s.iter().filter(|&&s| s != AgentStatus::Arrived).count();
    panic!(
        "{late} of {} agents have not arrived after {limit} ticks",
        agents.len()
    );
}

/// Arrival is a place: every agent stands within the pile the crowd measured round the goal
/// (or held up within the slowing-down radius beyond it), or touches an agent nearer the goal
/// (a pile squashed against walls reaches further; arrived agents give way, so the pile's edge
/// loosens to gaps narrower than a body): none stands apart from it.
fn assert_near_goal(app: &App, map: Entity, agents: &[Entity], goal: UVec2, class: SizeClass) {
    let nav = app.world().get::<NavMap>(map).unwrap();
    let centre = nav.grid().cell_center(goal);
    let pile = nav.pile_radius(goal, class).unwrap();
    let edge = pile + nav.crowd().config().slowdown_radius;
    let mut bodies: Vec<(f32, Vec2, f32)> = agents
        .iter()
        .map(|&e| {
            let p = position(app, e);
            let r = app.world().get::<NavAgent>(e).unwrap().radius;
            (p.distance(centre), p, r)
        })
        .collect();
    // Nothing like the whole map: a pile of these bodies at a quarter of full density.
    let area: f32 = bodies.iter().map(|b| 4.0 * b.2 * b.2).sum();
    assert!(pile < 1.5 + area.sqrt() + 2.0, "pile {pile}");
    bodies.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (k, &(d, p, r)) in bodies.iter().enumerate() {
        let gap = bodies[..k]
            .iter()
            .map(|&(_, q, s)| p.distance(q) - r - s)
            .fold(f32::INFINITY, f32::min);
        assert!(
            d <= edge || gap < 2.0 * r,
            "an agent arrived {d} from the goal, {gap} from the pile (radius {pile})"
        );
    }
}

/// A 64 × 40 map with a wall down the middle, open at the top and bottom.
fn walled_map() -> CostField {
    let mut cost = CostField::new(Grid::new(64, 40).unwrap());
    cost.fill_rect(UVec2::new(32, 6), UVec2::new(33, 33), WALL)
        .unwrap();
    cost
}

#[test]
fn a_thousand_agents_on_a_walled_map_all_arrive() {
    let mut app = headless(HordePlugin::default());
    let map = spawn_map(&mut app, walled_map());
    let goal = UVec2::new(56, 20);
    let agents = spawn_block(
        &mut app,
        map,
        1000,
        (Vec2::new(1.0, 1.0), Vec2::new(28.0, 39.0)),
        goal,
        0.35,
        SizeClass(0),
    );
    run_until_arrived(&mut app, map, &agents, 6000);
    assert_near_goal(&app, map, &agents, goal, SizeClass(0));
    let nav = app.world().get::<NavMap>(map).unwrap();
    assert_eq!(nav.crowd().len(), 1000);
    // All of them share one field.
    assert_eq!(nav.goals_in_use().count(), 1);
    // The plugin kept the third coordinate of the transforms.
    assert!(
        agents
            .iter()
            .all(|&e| app.world().get::<Transform>(e).unwrap().translation.z == 1.0)
    );
}

#[test]
fn a_wall_across_the_route_mid_run_reroutes_everyone() {
    let mut app = headless(HordePlugin::default());
    // Open ground: the straight route runs along row 20.
    let cost = CostField::new(Grid::new(64, 40).unwrap());
    let map = spawn_map(&mut app, cost);
    let goal = UVec2::new(58, 20);
    let agents = spawn_block(
        &mut app,
        map,
        300,
        (Vec2::new(1.0, 12.0), Vec2::new(12.0, 28.0)),
        goal,
        0.35,
        SizeClass(0),
    );
    for _ in 0..20 {
        app.update();
    }
    assert!(agents.iter().all(|&e| position(&app, e).x < 20.0));
    assert!(
        statuses(&mut app, &agents)
            .iter()
            .all(|&s| s == AgentStatus::Moving)
    );
    // A wall across the whole route, but for a gap at the bottom.
    let wall = CostEdit::Rect {
        min: UVec2::new(30, 0),
        max: UVec2::new(31, 35),
        cost: WALL,
    };
    app.world_mut().write_message(NavMapEdits {
        map,
        edits: vec![wall],
    });
    let mut through_gap = vec![false; agents.len()];
    for _ in 0..6000 {
        app.update();
        let nav = app.world().get::<NavMap>(map).unwrap();
        assert_eq!(nav.cost().get(UVec2::new(30, 20)), Some(WALL));
        for (k, &e) in agents.iter().enumerate() {
            let p = position(&app, e);
            let c = nav.grid().world_to_cell(p).unwrap();
            assert!(
                nav.cost().is_walkable(c),
                "agent {e} in the new wall at {p}"
            );
            if (30..=31).contains(&c.x) {
                assert!(c.y >= 36, "agent {e} crossed the wall at {p}");
                through_gap[k] = true;
            }
        }
        if statuses(&mut app, &agents)
            .iter()
            .all(|&s| s == AgentStatus::Arrived)
        {
            break;
        }
    }
    assert!(
        through_gap.iter().all(|&t| t),
        "everyone went round through the gap"
    );
    assert_near_goal(&app, map, &agents, goal, SizeClass(0));
}

#[test]
fn agents_and_maps_come_and_go_mid_run() {
    let mut app = headless(HordePlugin::default());
    let map = spawn_map(&mut app, walled_map());
    let goal = UVec2::new(56, 20);
    let agents = spawn_block(
        &mut app,
        map,
        200,
        (Vec2::new(1.0, 1.0), Vec2::new(20.0, 39.0)),
        goal,
        0.35,
        SizeClass(0),
    );
    for _ in 0..30 {
        app.update();
    }
    // Half of them go.
    for &e in agents.iter().step_by(2) {
        app.world_mut().despawn(e);
    }
    app.update();
    let nav = app.world().get::<NavMap>(map).unwrap();
    assert_eq!(nav.crowd().len(), 100);
    let kept: Vec<Entity> = agents.iter().copied().skip(1).step_by(2).collect();
    // Newcomers join later, one of them inside the wall: it is put on the nearest open cell.
    let late = app
        .world_mut()
        .spawn((
            NavAgent::new(map, 0.35, 4.0),
            NavTarget::Point(Vec3::new(56.5, 20.5, 0.0)),
            Transform::from_xyz(32.5, 20.5, 0.0),
        ))
        .id();
    app.update();
    let nav = app.world().get::<NavMap>(map).unwrap();
    assert_eq!(nav.crowd().len(), 101);
    let p = position(&app, late);
    assert!(
        nav.cost().is_walkable(nav.grid().world_to_cell(p).unwrap()),
        "{p}"
    );
    let mut all = kept.clone();
    all.push(late);
    run_until_arrived(&mut app, map, &all, 6000);

    // The map goes: its agents stand with no path, and each is reported once.
    #[derive(Resource, Default)]
    struct Reports(Vec<Entity>);
    app.init_resource::<Reports>().add_systems(
        bevy_app::Last,
        |mut read: MessageReader<NavError>, mut reports: ResMut<Reports>| {
            reports.0.extend(read.read().map(|m| m.entity));
        },
    );
    app.world_mut().despawn(map);
    for _ in 0..3 {
        app.update();
    }
    assert!(
        statuses(&mut app, &all)
            .iter()
            .all(|&s| s == AgentStatus::NoPath)
    );
    let mut reported = app.world().resource::<Reports>().0.clone();
    reported.sort();
    let mut expected = all.clone();
    expected.sort();
    assert_eq!(reported, expected);

    // A new map: the agents move over to it and arrive there.
    let second = spawn_map(&mut app, walled_map());
    for &e in &all {
        app.world_mut().get_mut::<NavAgent>(e).unwrap().map = second;
    }
    run_until_arrived(&mut app, second, &all, 6000);
    assert_eq!(
        app.world().get::<NavMap>(second).unwrap().crowd().len(),
        all.len()
    );
}

#[test]
fn two_maps_and_two_size_classes() {
    let mut app = headless(HordePlugin::default());
    // A wall with a one-cell door near the top and a three-cell gate near the bottom.
    let mut cost = CostField::new(Grid::new(48, 40).unwrap());
    cost.fill_rect(UVec2::new(24, 0), UVec2::new(24, 39), WALL)
        .unwrap();
    cost.set(UVec2::new(24, 8), 1).unwrap();
    cost.fill_rect(UVec2::new(24, 32), UVec2::new(24, 34), 1)
        .unwrap();
    let mut sized = NavMap::new(cost.clone()).unwrap();
    let big = sized.add_size_class(0.9).unwrap();
    let small_map = spawn_map(&mut app, cost);
    let sized_map = app.world_mut().spawn(sized).id();
    let goal = UVec2::new(40, 8);
    let small = spawn_block(
        &mut app,
        small_map,
        60,
        (Vec2::new(4.0, 4.0), Vec2::new(14.0, 12.0)),
        goal,
        0.3,
        SizeClass(0),
    );
    let large = spawn_block(
        &mut app,
        sized_map,
        30,
        (Vec2::new(4.0, 4.0), Vec2::new(16.0, 14.0)),
        goal,
        0.9,
        big,
    );
    let mut small_used_door = false;
    for _ in 0..8000 {
        app.update();
        for &e in &large {
            let c = position(&app, e);
            // The door is too narrow for the large ones: they go round by the gate.
            assert!(
                !(c.x > 23.0 && c.x < 26.0 && c.y < 12.0),
                "a large agent squeezed through the door at {c}"
            );
        }
        for &e in &small {
            let c = position(&app, e);
            small_used_door |= c.x > 24.0 && c.x < 25.0 && c.y < 10.0;
        }
        let done = |app: &mut App, list: &[Entity]| {
            statuses(app, list)
                .iter()
                .all(|&s| s == AgentStatus::Arrived)
        };
        if done(&mut app, &small) && done(&mut app, &large) {
            break;
        }
    }
    assert!(small_used_door, "the small ones take the short way");
    assert_near_goal(&app, small_map, &small, goal, SizeClass(0));
    assert_near_goal(&app, sized_map, &large, goal, big);
    // Each map has its own crowd.
    assert_eq!(
        app.world().get::<NavMap>(small_map).unwrap().crowd().len(),
        60
    );
    assert_eq!(
        app.world().get::<NavMap>(sized_map).unwrap().crowd().len(),
        30
    );
}

/// The positions, as bits, after `ticks` ticks of a crowd big enough to be cut into pieces
/// (10,000 agents: ten pieces of the step, two of its reductions), and how many moved.
fn scene_bits(threads: usize, ticks: usize) -> (Vec<[u32; 3]>, usize) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut app = headless(HordePlugin::default());
        let cost = bevy_horde::horde::maps::demo_map();
        let goals =
            [UVec2::new(100, 110), UVec2::new(110, 10)].map(|g| cost.nearest_walkable(g).unwrap());
        let map = spawn_map(&mut app, cost);
        let mut agents = spawn_block(
            &mut app,
            map,
            6000,
            (Vec2::new(1.0, 1.0), Vec2::new(120.0, 60.0)),
            goals[0],
            0.35,
            SizeClass(0),
        );
        agents.extend(spawn_block(
            &mut app,
            map,
            4000,
            (Vec2::new(1.0, 70.0), Vec2::new(60.0, 127.0)),
            goals[1],
            0.3,
            SizeClass(0),
        ));
        let bits = |app: &App| -> Vec<[u32; 3]> {
            agents
                .iter()
                .map(|&e| {
                    let t = app.world().get::<Transform>(e).unwrap().translation;
                    t.to_array().map(f32::to_bits)
                })
                .collect()
        };
        let start = bits(&app);
        for _ in 0..ticks {
            app.update();
        }
        let end = bits(&app);
        let moved = start.iter().zip(&end).filter(|(a, b)| a != b).count();
        (end, moved)
    })
}

#[test]
fn the_same_scene_gives_the_same_bits_on_one_two_and_three_threads() {
    let (one, moved) = scene_bits(1, 60);
    assert!(moved > 9000, "{moved} of 10,000 moved");
    assert_eq!(scene_bits(2, 60).0, one);
    assert_eq!(scene_bits(3, 60).0, one);
}

#[cfg(feature = "debug")]
#[test]
fn the_debug_plugin_draws_each_layer_and_switches_off() {
    use bevy_gizmos::config::GizmoConfigStore;
    use bevy_horde::{HordeDebugPlugin, HordeDebugSettings, HordeDebugStats, HordeGizmos};

    let mut app = headless(HordePlugin::default());
    app.add_plugins((
        bevy_app::TaskPoolPlugin::default(),
        bevy_asset::AssetPlugin::default(),
        bevy_gizmos::GizmoPlugin,
        HordeDebugPlugin,
    ));
    // A 20 × 10 map: one wall cell, one cell of mud, 8 agents heading to one goal.
    let mut cost = CostField::new(Grid::new(20, 10).unwrap());
    cost.set(UVec2::new(10, 5), WALL).unwrap();
    cost.set(UVec2::new(12, 5), 40).unwrap();
    let map = spawn_map(&mut app, cost);
    spawn_block(
        &mut app,
        map,
        8,
        (Vec2::new(1.0, 1.0), Vec2::new(5.0, 9.0)),
        UVec2::new(18, 5),
        0.35,
        SizeClass(0),
    );
    let lines = |app: &mut App, set: fn(&mut HordeDebugSettings)| {
        let mut s = HordeDebugSettings {
            costs: false,
            flow: false,
            agents: false,
            targets: false,
            ..HordeDebugSettings::default()
        };
        set(&mut s);
        app.insert_resource(s);
        app.update();
        app.world().resource::<HordeDebugStats>().lines
    };
    lines(&mut app, |_| {});
    assert_eq!(lines(&mut app, |_| {}), 0);
    // The wall is a cross (2 lines), the mud a square (a loop of 4, its first side drawn twice
    // by the gizmos for the corner's joint).
    assert_eq!(lines(&mut app, |s| s.costs = true), 7);
    // One cross on the goal.
    assert_eq!(lines(&mut app, |s| s.targets = true), 2);
    // An arrow (a shaft and a head of four strokes) on every cell but the wall and the goal.
    assert_eq!(lines(&mut app, |s| s.flow = true), 5 * (200 - 2));
    // A 12-sided circle per agent.
    assert_eq!(lines(&mut app, |s| s.agents = true), 8 * 12);
    // The gizmo group switched off draws nothing.
    app.world_mut()
        .resource_mut::<GizmoConfigStore>()
        .config_mut::<HordeGizmos>()
        .0
        .enabled = false;
    assert_eq!(lines(&mut app, |s| *s = HordeDebugSettings::default()), 0);
}

#[test]
fn a_small_field_budget_spreads_builds_over_ticks_while_units_wait() {
    // 500 cells of work per tick: a 64 × 40 field takes several ticks.
    let mut app = headless(HordePlugin::default().with_cells_per_tick(500));
    let map = spawn_map(&mut app, walled_map());
    let goal = UVec2::new(56, 20);
    let agents = spawn_block(
        &mut app,
        map,
        50,
        (Vec2::new(2.0, 2.0), Vec2::new(12.0, 12.0)),
        goal,
        0.35,
        SizeClass(0),
    );
    let start: Vec<Vec2> = agents.iter().map(|&e| position(&app, e)).collect();
    let mut waited = 0;
    loop {
        app.update();
        let s = statuses(&mut app, &agents);
        // Idle until the plugin's first tick (the clock's first frame runs no fixed step).
        if s.iter().all(|&s| s == AgentStatus::Idle) {
            continue;
        }
        if s.iter().all(|&s| s == AgentStatus::Waiting) {
            waited += 1;
            // Nobody moves while the field is being built.
            for (k, &e) in agents.iter().enumerate() {
                assert_eq!(position(&app, e), start[k]);
            }
        } else {
            assert!(s.iter().all(|&s| s == AgentStatus::Moving), "{s:?}");
            break;
        }
        assert!(waited < 100, "the field never came");
    }
    // 64 × 40 cells of work at 500 a tick.
    assert!(waited >= 64 * 40 / 500, "{waited} ticks waited");
    run_until_arrived(&mut app, map, &agents, 6000);
    assert_near_goal(&app, map, &agents, goal, SizeClass(0));
}

#[test]
fn with_velocity_movement_the_game_moves_the_units() {
    let mut app = headless(HordePlugin::default().with_movement(Movement::Velocity));
    // The game's own mover, after the plugin's stages.
    app.add_systems(
        bevy_app::FixedUpdate,
        (|time: Res<bevy_time::Time>,
          mut q: Query<(&mut Transform, &bevy_horde::DesiredVelocity)>| {
            for (mut t, v) in &mut q {
                t.translation += v.0 * time.delta_secs();
            }
        })
        .after(HordeSystems::SyncOut),
    );
    let map = spawn_map(&mut app, walled_map());
    let goal = UVec2::new(56, 20);
    let agents = spawn_block(
        &mut app,
        map,
        100,
        (Vec2::new(2.0, 2.0), Vec2::new(20.0, 38.0)),
        goal,
        0.35,
        SizeClass(0),
    );
    run_until_arrived(&mut app, map, &agents, 6000);
    assert_near_goal(&app, map, &agents, goal, SizeClass(0));
    // The crowd follows the transforms the game wrote, within its tolerance.
    let nav = app.world().get::<NavMap>(map).unwrap();
    let mut crowd_positions: Vec<Vec2> = nav.crowd().snapshot().map(|a| a.position).collect();
    let mut game_positions: Vec<Vec2> = agents.iter().map(|&e| position(&app, e)).collect();
    let key = |p: &Vec2| (p.x.to_bits(), p.y.to_bits());
    crowd_positions.sort_by_key(key);
    game_positions.sort_by_key(key);
    let worst = crowd_positions
        .iter()
        .map(|p| {
            game_positions
                .iter()
                .map(|q| p.distance(*q))
                .fold(f32::INFINITY, f32::min)
        })
        .fold(0.0, f32::max);
    assert!(worst < 0.1, "the crowd and the game drifted {worst} apart");
}

#[test]
fn units_chase_an_entity_and_follow_a_teleport() {
    let mut app = headless(HordePlugin::default());
    let map = spawn_map(&mut app, CostField::new(Grid::new(48, 48).unwrap()));
    let flag = app
        .world_mut()
        .spawn(Transform::from_xyz(40.5, 40.5, 0.0))
        .id();
    let chasers: Vec<Entity> = (0..5)
        .map(|k| {
            app.world_mut()
                .spawn((
                    NavAgent::new(map, 0.3, 5.0),
                    NavTarget::Entity(flag),
                    Transform::from_xyz(4.5 + k as f32, 4.5, 0.0),
                ))
                .id()
        })
        .collect();
    run_until_arrived(&mut app, map, &chasers, 3000);
    assert_near_goal(&app, map, &chasers, UVec2::new(40, 40), SizeClass(0));
    // The flag moves within its cell: still one field, still arrived.
    app.world_mut()
        .get_mut::<Transform>(flag)
        .unwrap()
        .translation
        .x = 40.9;
    app.update();
    assert_eq!(
        app.world()
            .get::<NavMap>(map)
            .unwrap()
            .goals_in_use()
            .count(),
        1
    );
    assert!(
        statuses(&mut app, &chasers)
            .iter()
            .all(|&s| s == AgentStatus::Arrived)
    );
    // It moves across the map: they follow.
    app.world_mut()
        .get_mut::<Transform>(flag)
        .unwrap()
        .translation = Vec3::new(6.5, 40.5, 0.0);
    app.update();
    assert!(
        statuses(&mut app, &chasers)
            .iter()
            .all(|&s| s == AgentStatus::Moving)
    );
    run_until_arrived(&mut app, map, &chasers, 3000);
    assert_near_goal(&app, map, &chasers, UVec2::new(6, 40), SizeClass(0));
    // The game teleports one: the crowd takes the new place, and it walks back.
    app.world_mut()
        .get_mut::<Transform>(chasers[0])
        .unwrap()
        .translation = Vec3::new(40.5, 4.5, 0.0);
    app.update();
    let p = position(&app, chasers[0]);
    assert!(p.distance(Vec2::new(40.5, 4.5)) < 0.5, "{p}");
    run_until_arrived(&mut app, map, &chasers, 3000);
    assert!(position(&app, chasers[0]).distance(Vec2::new(6.5, 40.5)) < 5.0);
}

#[test]
fn bad_edits_and_bad_agents_are_reported_not_panicked_on() {
    #[derive(Resource, Default)]
    struct Reports(Vec<NavError>);
    let mut app = headless(HordePlugin::default());
    app.init_resource::<Reports>().add_systems(
        bevy_app::Last,
        |mut read: MessageReader<NavError>, mut reports: ResMut<Reports>| {
            reports.0.extend(read.read().cloned());
        },
    );
    let map = spawn_map(&mut app, CostField::new(Grid::new(16, 16).unwrap()));
    // A rectangle reaching off the map: refused whole, the map unchanged.
    app.world_mut().write_message(NavMapEdits {
        map,
        edits: vec![
            CostEdit::Cell {
                cell: UVec2::new(3, 3),
                cost: WALL,
            },
            CostEdit::Rect {
                min: UVec2::new(10, 10),
                max: UVec2::new(20, 12),
                cost: WALL,
            },
        ],
    });
    // A unit at NaN, one with no body, one on a map that does not exist.
    let nan = app
        .world_mut()
        .spawn((
            NavAgent::new(map, 0.3, 3.0),
            NavTarget::Cell(UVec2::new(8, 8)),
            Transform::from_xyz(f32::NAN, 1.0, 0.0),
        ))
        .id();
    let thin = app
        .world_mut()
        .spawn((
            NavAgent::new(map, 0.0, 3.0),
            Transform::from_xyz(2.5, 2.5, 0.0),
        ))
        .id();
    let nowhere = app.world_mut().spawn_empty().id();
    let lost = app
        .world_mut()
        .spawn((
            NavAgent::new(nowhere, 0.3, 3.0),
            Transform::from_xyz(2.5, 2.5, 0.0),
        ))
        .id();
    // A good unit beside them still arrives.
    let good = app
        .world_mut()
        .spawn((
            NavAgent::new(map, 0.3, 3.0),
            NavTarget::Cell(UVec2::new(12, 3)),
            Transform::from_xyz(2.5, 8.5, 0.0),
        ))
        .id();
    run_until_arrived(&mut app, map, &[good], 3000);
    let nav = app.world().get::<NavMap>(map).unwrap();
    assert_eq!(
        nav.cost().get(UVec2::new(3, 3)),
        Some(1),
        "a refused batch changes nothing"
    );
    assert_eq!(nav.crowd().len(), 1);
    let reports = &app.world().resource::<Reports>().0;
    let about = |e: Entity| reports.iter().filter(|r| r.entity == e).count();
    // Each is reported once, however many ticks pass.
    assert_eq!(about(map), 1, "{reports:?}");
    assert_eq!(
        (about(nan), about(thin), about(lost)),
        (1, 1, 1),
        "{reports:?}"
    );
    assert_eq!(reports.len(), 4);
    let text = reports
        .iter()
        .map(|r| r.error.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains("position"), "{text}");
    assert!(text.contains("radius"), "{text}");
    assert!(text.contains("has no NavMap"), "{text}");
    for e in [nan, thin, lost] {
        assert_eq!(
            app.world().get::<AgentStatus>(e),
            Some(&AgentStatus::NoPath)
        );
    }
}
