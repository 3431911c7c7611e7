//! The crowd with arbitrary parameters: agents are added or refused, steps run or are refused,
//! never a panic; after every step that ran, every position is finite and on a walkable cell.
#![no_main]

use arbitrary::Arbitrary;
use horde::crowd::{AgentParams, Crowd, CrowdConfig, Group};
use horde::glam::{UVec2, Vec2};
use horde::{CostField, CostModel, FlowField, Grid, IntegrationBuilder, WALL};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Agent {
    x: f32,
    y: f32,
    radius: f32,
    speed: f32,
}

#[derive(Debug, Arbitrary)]
struct Input {
    walls: Vec<(u8, u8)>,
    goal: (u8, u8),
    agents: Vec<Agent>,
    separation_radius: f32,
    separation_weight: f32,
    arrival_radius: f32,
    collision_passes: u8,
    dt: Vec<f32>,
}

fuzz_target!(|input: Input| {
    const SIDE: u32 = 12;
    let mut cost = CostField::new(Grid::new(SIDE, SIDE).unwrap());
    for &(x, y) in input.walls.iter().take(40) {
        let _ = cost.set(UVec2::new(x as u32 % SIDE, y as u32 % SIDE), WALL);
    }
    let goal = UVec2::new(input.goal.0 as u32 % SIDE, input.goal.1 as u32 % SIDE);
    if !cost.is_walkable(goal) {
        return;
    }
    let mut builder = IntegrationBuilder::new();
    builder.build(&cost, &[goal], CostModel::TenFourteen).unwrap();
    let mut flow = FlowField::new(*cost.grid());
    builder.flow_into(&mut flow).unwrap();
    let config = CrowdConfig {
        separation_radius: input.separation_radius,
        separation_weight: input.separation_weight,
        arrival_radius: input.arrival_radius,
        collision_passes: input.collision_passes as usize % 8,
        ..CrowdConfig::default()
    };
    let Ok(mut crowd) = Crowd::new(*cost.grid(), config) else {
        return;
    };
    for a in input.agents.iter().take(64) {
        let params = AgentParams {
            position: Vec2::new(a.x, a.y),
            radius: a.radius,
            max_speed: a.speed,
            group: 0,
        };
        let _ = crowd.add_agent(&cost, params);
    }
    let groups = [Group { flow: &flow, goal: cost.grid().cell_center(goal) }];
    for &dt in input.dt.iter().take(20) {
        if crowd.step(dt, &cost, &groups).is_ok() {
            for &p in crowd.positions() {
                assert!(p.is_finite(), "{p}");
                let cell = cost.grid().world_to_cell(p).expect("on the map");
                assert!(cost.is_walkable(cell), "in a wall at {p}");
            }
        }
    }
});
