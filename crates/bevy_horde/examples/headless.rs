//! The plugin without a window, against a bare `horde::crowd::Crowd` on the same scene.
//!
//! ```sh
//! cargo run --release -p bevy_horde --example headless -- --agents 100000 --json
//! ```
//!
//! The scene: a 512 × 512 map with walls (`horde::maps::scattered_map`), a goal near the
//! middle, and four agents on each of the walkable cells nearest it (by path cost), all
//! heading there. It is stepped `--steps` times (0.05 s each) through the plugin in a headless Bevy app,
//! then again through a bare crowd with the same field; both are timed in this one run.
//! `--json` prints one line with the keys `agents`, `steps`, `arrived_fraction`,
//! `plugin_ms_per_step` and `bare_ms_per_step`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_horde::horde::crowd::{AgentParams, AgentState, Crowd, CrowdConfig, Group};
use bevy_horde::horde::{
    CostField, CostModel, FlowField, IntegrationBuilder, UNREACHABLE, maps::scattered_map,
};
use bevy_horde::{AgentStatus, HordePlugin, NavAgent, NavMap, NavTarget};
use bevy_math::{UVec2, Vec2};
use bevy_time::{Fixed, Time, TimePlugin, TimeUpdateStrategy};
use bevy_transform::components::Transform;

const SIDE: u32 = 512;
const DT: f32 = 0.05;
const RADIUS: f32 = 0.25;
const SPEED: f32 = 6.0;

struct Options {
    agents: usize,
    steps: usize,
    json: bool,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        agents: 10_000,
        steps: 600,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = |flag: &str, max: usize| -> Result<usize, String> {
            let v = args
                .next()
                .ok_or_else(|| format!("{flag} needs a number"))?;
            let n: usize = v
                .parse()
                .map_err(|_| format!("{flag} {v:?} is not a whole number"))?;
            if n == 0 || n > max {
                return Err(format!("{flag} {n} is outside 1..={max}"));
            }
            Ok(n)
        };
        match a.as_str() {
            "--agents" => o.agents = number("--agents", 200_000)?,
            "--steps" => o.steps = number("--steps", 100_000)?,
            "--json" => o.json = true,
            "--help" | "-h" => {
                return Err("usage: headless [--agents N] [--steps N] [--json]".into());
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(o)
}

/// The map, the goal, and the `n` walkable cells nearest the goal by path cost.
fn scene(n: usize) -> Result<(CostField, UVec2, Vec<Vec2>), String> {
    let cost = scattered_map(SIDE, SIDE, 1).map_err(|e| e.to_string())?;
    let goal = cost
        .nearest_walkable(UVec2::splat(SIDE / 2))
        .ok_or("the map has no walkable cell")?;
    let field = IntegrationBuilder::new()
        .build(&cost, &[goal], CostModel::TenFourteen)
        .map_err(|e| e.to_string())?;
    let mut cells: Vec<(u32, usize)> = field
        .values()
        .iter()
        .enumerate()
        .filter(|&(_, &v)| v != UNREACHABLE)
        .map(|(i, &v)| (v, i))
        .collect();
    if cells.len() * 4 < n {
        return Err(format!("the map has only {} reachable cells", cells.len()));
    }
    cells.sort_unstable();
    // Four agents per cell, touching: the crowd starts about as dense as the pile it forms
    // round the goal, so that most of it can arrive within the run.
    let grid = *cost.grid();
    let spots = cells[..n.div_ceil(4)]
        .iter()
        .flat_map(|&(_, i)| {
            let c = grid.cell_center(grid.cell(i));
            [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)]
                .map(|(x, y)| c + Vec2::new(x, y) * 0.25)
        })
        .take(n)
        .collect();
    Ok((cost, goal, spots))
}

/// Milliseconds per step through the plugin, and the fraction arrived at the end.
fn through_plugin(cost: &CostField, goal: UVec2, spots: &[Vec2], steps: usize) -> (f64, f64) {
    let mut app = App::new();
    app.add_plugins(TimePlugin)
        .insert_resource(Time::<Fixed>::from_seconds(DT as f64))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f32(
            DT,
        )))
        .add_plugins(HordePlugin::default().with_cells_per_tick(1 << 20));
    let map = app
        .world_mut()
        .spawn(NavMap::new(cost.clone()).expect("a valid map"))
        .id();
    let agents: Vec<Entity> = spots
        .iter()
        .map(|p| {
            app.world_mut()
                .spawn((
                    NavAgent::new(map, RADIUS, SPEED),
                    NavTarget::Cell(goal),
                    Transform::from_xyz(p.x, p.y, 0.0),
                ))
                .id()
        })
        .collect();
    // The clock's first update has no delta: it is not a step.
    app.update();
    let started = Instant::now();
    for _ in 0..steps {
        app.update();
    }
    let ms = started.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let arrived = agents
        .iter()
        .filter(|&&e| app.world().get::<AgentStatus>(e) == Some(&AgentStatus::Arrived))
        .count();
    (ms, arrived as f64 / agents.len() as f64)
}

/// Milliseconds per step of a bare crowd (field build included, as the plugin's first tick
/// includes it), and the fraction arrived.
fn bare(cost: &CostField, goal: UVec2, spots: &[Vec2], steps: usize) -> (f64, f64) {
    let started = Instant::now();
    let mut builder = IntegrationBuilder::new();
    builder
        .build(cost, &[goal], CostModel::TenFourteen)
        .expect("a walkable goal");
    let mut flow = FlowField::new(*cost.grid());
    builder.flow_into(&mut flow).expect("the same grid");
    let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).expect("valid settings");
    for &p in spots {
        let params = AgentParams {
            position: p,
            radius: RADIUS,
            max_speed: SPEED,
            group: 0,
        };
        crowd.add_agent(cost, params).expect("a valid agent");
    }
    let groups = [Group {
        flow: &flow,
        goal: cost.grid().cell_center(goal),
    }];
    for _ in 0..steps {
        crowd.step(DT, cost, &groups).expect("valid groups");
    }
    let ms = started.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let arrived = crowd
        .states()
        .iter()
        .filter(|&&s| s == AgentState::Arrived)
        .count();
    (ms, arrived as f64 / crowd.len() as f64)
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("headless: {e}");
            return ExitCode::from(2);
        }
    };
    let (cost, goal, spots) = match scene(o.agents) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("headless: {e}");
            return ExitCode::from(2);
        }
    };
    let (plugin_ms, arrived) = through_plugin(&cost, goal, &spots, o.steps);
    let (bare_ms, bare_arrived) = bare(&cost, goal, &spots, o.steps);
    if o.json {
        println!(
            "{{\"agents\":{},\"steps\":{},\"arrived_fraction\":{:.4},\"plugin_ms_per_step\":{:.3},\"bare_ms_per_step\":{:.3}}}",
            o.agents, o.steps, arrived, plugin_ms, bare_ms
        );
    } else {
        println!(
            "{} agents, {} steps of {DT} s on a {SIDE} x {SIDE} map",
            o.agents, o.steps
        );
        println!(
            "plugin: {plugin_ms:.3} ms per step, {:.2} % arrived",
            arrived * 100.0
        );
        println!(
            "bare crowd: {bare_ms:.3} ms per step, {:.2} % arrived",
            bare_arrived * 100.0
        );
        println!("plugin / bare: {:.3}", plugin_ms / bare_ms);
    }
    ExitCode::SUCCESS
}
