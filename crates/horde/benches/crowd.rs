//! Criterion benchmarks of one crowd step at 10k, 100k and 1M agents on a 1024 x 1024 map, and
//! at 10k, 100k and 1M agents at one density (maps of 324², 1024² and 3238²).
//! The `horde sim` command reports the same figure (ms per step) for any map and crowd.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::{UVec2, Vec2};
use horde::crowd::{AgentParams, Crowd, CrowdConfig, Group};
use horde::{CostField, CostModel, FlowField, IntegrationBuilder};

/// Steps timed per copy of the crowd.
const STEPS: u32 = 4;

/// A crowd of `n` agents spread over the walkable cells of `cost` by a fixed stride (more agents
/// than cells share cells), heading for the walkable cell nearest the middle, after five steps.
fn spread_crowd(cost: &CostField, n: usize) -> (Crowd, FlowField, Vec2) {
    let (w, h) = (cost.grid().width(), cost.grid().height());
    let goal = (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|&p| cost.is_walkable(p))
        .min_by_key(|p| p.x.abs_diff(w / 2) + p.y.abs_diff(h / 2))
        .unwrap();
    let mut b = IntegrationBuilder::new();
    b.build(cost, &[goal], CostModel::TenFourteen).unwrap();
    let mut flow = FlowField::new(*cost.grid());
    b.flow_into(&mut flow).unwrap();
    let walkable: Vec<UVec2> = (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|&p| cost.is_walkable(p))
        .collect();
    let goal = cost.grid().cell_center(goal);
    let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    for k in 0..n {
        let cell = walkable[(k * 7919) % walkable.len()];
        let jitter = Vec2::new(
            ((k % 5) as f32 - 2.0) * 0.1,
            ((k / 5 % 5) as f32 - 2.0) * 0.1,
        );
        let params = AgentParams {
            position: cost.grid().cell_center(cell) + jitter,
            radius: 0.35,
            max_speed: 4.0,
            group: 0,
        };
        crowd.add_agent(cost, params).unwrap();
    }
    for _ in 0..5 {
        let groups = [Group { flow: &flow, goal }];
        crowd.step(0.05, cost, &groups).unwrap();
    }
    (crowd, flow, goal)
}

/// Time steps of copies of `crowd`: stepping one crowd over and over would measure a different
/// crowd (piled up round its goal) depending on how many iterations criterion chooses. A copy
/// takes four steps and the time per step is reported, since steps that re-sort the agents cost
/// more than those that keep the neighbour grid.
fn bench_steps(
    group: &mut criterion::BenchmarkGroup<criterion::measurement::WallTime>,
    id: BenchmarkId,
    crowd: &Crowd,
    cost: &CostField,
    groups: &[Group],
) {
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut c = crowd.clone();
                let started = Instant::now();
                for _ in 0..STEPS {
                    c.step(0.05, cost, groups).unwrap();
                }
                total += started.elapsed() / STEPS;
                black_box(&c);
            }
            total
        })
    });
}

fn crowd_step(c: &mut Criterion) {
    let cost = horde::maps::scattered_map(1024, 1024, horde::maps::DEMO_SEED).unwrap();
    let mut group = c.benchmark_group("crowd_step_1024");
    group.sample_size(10);
    for n in [10_000usize, 100_000, 1_000_000] {
        let (crowd, flow, goal) = spread_crowd(&cost, n);
        group.throughput(Throughput::Elements(n as u64));
        let groups = [Group { flow: &flow, goal }];
        bench_steps(
            &mut group,
            BenchmarkId::from_parameter(n),
            &crowd,
            &cost,
            &groups,
        );
    }
    group.finish();
}

/// The same crowds at the density of the 100,000 on 1024 × 1024 (about one agent per ten
/// cells), on maps sized to hold them: the cost per agent as the crowd grows, where the first
/// group's million stand a hundred times as dense as its ten thousand.
fn crowd_step_same_density(c: &mut Criterion) {
    let mut group = c.benchmark_group("crowd_step_same_density");
    group.sample_size(10);
    for (n, side) in [(10_000usize, 324u32), (100_000, 1024), (1_000_000, 3238)] {
        let cost = horde::maps::scattered_map(side, side, horde::maps::DEMO_SEED).unwrap();
        let (crowd, flow, goal) = spread_crowd(&cost, n);
        group.throughput(Throughput::Elements(n as u64));
        let groups = [Group { flow: &flow, goal }];
        let id = BenchmarkId::new(format!("{side}x{side}"), n);
        bench_steps(&mut group, id, &crowd, &cost, &groups);
    }
    group.finish();
}

criterion_group!(benches, crowd_step, crowd_step_same_density);
criterion_main!(benches);
