//! Criterion benchmarks of one crowd step at 10k, 100k and 1M agents on a 1024 x 1024 map.
//! The `horde sim` command reports the same figure (ms per step) for any map and crowd.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::{UVec2, Vec2};
use horde::crowd::{AgentParams, Crowd, CrowdConfig, Group};
use horde::{CostModel, FlowField, IntegrationBuilder};

/// Steps timed per copy of the crowd.
const STEPS: u32 = 4;

fn crowd_step(c: &mut Criterion) {
    let cost = horde::maps::scattered_map(1024, 1024, horde::maps::DEMO_SEED).unwrap();
    let goal = (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|&p| cost.is_walkable(p))
        .min_by_key(|p| p.x.abs_diff(512) + p.y.abs_diff(512))
        .unwrap();
    let mut b = IntegrationBuilder::new();
    b.build(&cost, &[goal], CostModel::TenFourteen).unwrap();
    let mut flow = FlowField::new(*cost.grid());
    b.flow_into(&mut flow).unwrap();
    let walkable: Vec<UVec2> = (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|&p| cost.is_walkable(p))
        .collect();
    let groups = [Group {
        flow: &flow,
        goal: cost.grid().cell_center(goal),
    }];
    let mut group = c.benchmark_group("crowd_step_1024");
    group.sample_size(10);
    for n in [10_000usize, 100_000, 1_000_000] {
        let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
        // Spread over the map by a fixed stride (more agents than cells share cells).
        for k in 0..n {
            let cell = walkable[(k * 7919) % walkable.len()];
            let jitter = Vec2::new(
                ((k % 5) as f32 - 2.0) * 0.1,
                ((k / 5 % 5) as f32 - 2.0) * 0.1,
            );
            crowd
                .add_agent(
                    &cost,
                    AgentParams {
                        position: cost.grid().cell_center(cell) + jitter,
                        radius: 0.35,
                        max_speed: 4.0,
                        group: 0,
                    },
                )
                .unwrap();
        }
        for _ in 0..5 {
            crowd.step(0.05, &cost, &groups).unwrap();
        }
        group.throughput(Throughput::Elements(n as u64));
        // Every iteration steps a copy of the same crowd: stepping one crowd over and over would
        // measure a different crowd (piled up round its goal) depending on how many
        // iterations criterion chooses. A copy takes four steps and the time per step is
        // reported, since steps that re-sort the agents cost more than those that keep the
        // neighbour grid.
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut c = crowd.clone();
                    let started = Instant::now();
                    for _ in 0..STEPS {
                        c.step(0.05, &cost, &groups).unwrap();
                    }
                    total += started.elapsed() / STEPS;
                    black_box(&c);
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, crowd_step);
criterion_main!(benches);
