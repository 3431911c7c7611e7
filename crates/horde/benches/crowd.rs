//! Criterion benchmarks of one crowd step at 10k, 100k and 1M agents on a 1024 x 1024 map, and
//! at 10k, 100k and 1M agents at one density (maps of 324², 1024² and 3238²); at 100k once the
//! crowd walks in lanes (150 steps on); and, in one run each,
//! the 100k and the 1M step against a separation crowd as one would first write it (a hash map
//! of cells) and against the floor of any flow-field crowd (each agent steps along its cell's
//! arrow).
//! The `horde sim` command reports the same figure (ms per step) for any map and crowd.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::{UVec2, Vec2};
use horde::crowd::{AgentParams, Crowd, CrowdConfig, Group};
use horde::{CostField, CostModel, FlowField, FlowSample, IntegrationBuilder};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use rayon::prelude::*;

/// Steps timed per copy of the crowd.
const STEPS: u32 = 4;

/// A crowd of `n` agents at random walkable cells (a seeded shuffle, distinct cells while there
/// are enough, each a little off its centre, as `horde sim` spawns them), heading for the
/// walkable cell nearest the middle, after `warm` steps. Random cells look alike at every crowd
/// size and map size, so the groups compare like with like (a fixed stride through the cells
/// lays a lattice whose spacing depends on the map's width).
fn spread_crowd(cost: &CostField, n: usize, warm: usize) -> (Crowd, FlowField, Vec2) {
    let (w, h) = (cost.grid().width(), cost.grid().height());
    let goal = cost.nearest_walkable(UVec2::new(w / 2, h / 2)).unwrap();
    let mut b = IntegrationBuilder::new();
    b.build(cost, &[goal], CostModel::TenFourteen).unwrap();
    let mut flow = FlowField::new(*cost.grid());
    b.flow_into(&mut flow).unwrap();
    let mut walkable: Vec<UVec2> = (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|&p| cost.is_walkable(p))
        .collect();
    let goal = cost.grid().cell_center(goal);
    let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    let mut rng = Pcg64::seed_from_u64(1);
    for k in 0..n {
        if k % walkable.len() == 0 {
            walkable.shuffle(&mut rng);
        }
        let cell = walkable[k % walkable.len()];
        let jitter = Vec2::new(rng.random_range(-0.15..0.15), rng.random_range(-0.15..0.15));
        let params = AgentParams {
            position: cost.grid().cell_center(cell) + jitter,
            radius: 0.35,
            max_speed: 4.0,
            group: 0,
        };
        crowd.add_agent(cost, params).unwrap();
    }
    for _ in 0..warm {
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
        let (crowd, flow, goal) = spread_crowd(&cost, n, 5);
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
        let (crowd, flow, goal) = spread_crowd(&cost, n, 5);
        group.throughput(Throughput::Elements(n as u64));
        let groups = [Group { flow: &flow, goal }];
        let id = BenchmarkId::new(format!("{side}x{side}"), n);
        bench_steps(&mut group, id, &crowd, &cost, &groups);
    }
    group.finish();
}

/// The 100,000 of `crowd_step_1024` seven and a half seconds later, walking in lanes: most
/// touch the agent ahead, so this is the steady state of a crowd sent to one flag (and most
/// of what `horde sim` averages over), where the first groups time a crowd still spread out.
fn crowd_step_lanes(c: &mut Criterion) {
    let cost = horde::maps::scattered_map(1024, 1024, horde::maps::DEMO_SEED).unwrap();
    let (crowd, flow, goal) = spread_crowd(&cost, 100_000, 150);
    let groups = [Group { flow: &flow, goal }];
    let mut group = c.benchmark_group("crowd_step_lanes_100k");
    group.sample_size(10);
    group.throughput(Throughput::Elements(100_000));
    let id = BenchmarkId::from_parameter("after_150_steps");
    bench_steps(&mut group, id, &crowd, &cost, &groups);
    group.finish();
}

/// The floor of any flow-field crowd: each agent reads the arrow of its cell and steps along
/// it at full speed. No neighbours, no walls, no states; in parallel, as the crowd's step.
fn flow_following_floor(positions: &mut [Vec2], flow: &FlowField, stride: f32) {
    positions.par_iter_mut().with_min_len(2048).for_each(|p| {
        if let FlowSample::Direction(d) = flow.sample_nearest(*p) {
            *p += d * stride;
        }
    });
}

/// A separation crowd as one would first write it, for comparison: the agents filed in a hash
/// map of cells of the separation radius, then for each agent (in parallel) the neighbours of
/// the 3 x 3 cells round it sorted by distance, the six nearest pushing with DetourCrowd's
/// kernel, blended with the arrow of its cell, and a move refused if it lands in a wall. It
/// does less than the crowd's step (no acceleration limit, collision passes, sliding, states
/// or arrival), so it flatters itself.
struct NaiveCrowd {
    positions: Vec<Vec2>,
    next: Vec<Vec2>,
    cells: HashMap<(i32, i32), Vec<u32>>,
}

impl NaiveCrowd {
    fn step(&mut self, flow: &FlowField, cost: &CostField, dt: f32) {
        const RADIUS: f32 = 1.0;
        const SPEED: f32 = 4.0;
        let key = |p: Vec2| ((p.x / RADIUS).floor() as i32, (p.y / RADIUS).floor() as i32);
        self.cells.values_mut().for_each(Vec::clear);
        for (i, &p) in self.positions.iter().enumerate() {
            self.cells.entry(key(p)).or_default().push(i as u32);
        }
        let (positions, cells) = (&self.positions, &self.cells);
        self.next
            .par_iter_mut()
            .enumerate()
            .with_min_len(2048)
            .for_each(|(i, out)| {
                let p = positions[i];
                let (cx, cy) = key(p);
                let mut near: Vec<(f32, u32)> = Vec::new();
                for y in cy - 1..=cy + 1 {
                    for x in cx - 1..=cx + 1 {
                        for &j in cells.get(&(x, y)).map_or(&[][..], Vec::as_slice) {
                            let d2 = p.distance_squared(positions[j as usize]);
                            if j as usize != i && d2 < RADIUS * RADIUS {
                                near.push((d2, j));
                            }
                        }
                    }
                }
                near.sort_by(|a, b| a.partial_cmp(b).unwrap());
                near.truncate(6);
                let mut push = Vec2::ZERO;
                for &(d2, j) in &near {
                    let away = (p - positions[j as usize]).normalize_or_zero();
                    push += away * (1.0 - d2 / (RADIUS * RADIUS));
                }
                if !near.is_empty() {
                    push /= near.len() as f32;
                }
                let desired = match flow.sample_nearest(p) {
                    FlowSample::Direction(d) => d,
                    _ => Vec2::ZERO,
                };
                let to = p + (desired + push * 2.0).normalize_or_zero() * SPEED * dt;
                let open = cost
                    .grid()
                    .world_to_cell(to)
                    .is_some_and(|c| cost.is_walkable(c));
                *out = if open { to } else { p };
            });
        std::mem::swap(&mut self.positions, &mut self.next);
    }
}

/// The 100k step of `crowd_step_1024` against the naive crowd and the floor, in one run, from
/// the same positions: the ratios hold on a noisy machine where the times do not.
fn crowd_step_vs_peers(c: &mut Criterion) {
    vs_peers(c, "crowd_step_vs_peers_100k", 100_000);
}

/// The same at a million on 1024², a hundred times as dense: how much of the cost per agent
/// that density adds to every separation crowd, the naive one's included.
fn crowd_step_vs_peers_1m(c: &mut Criterion) {
    vs_peers(c, "crowd_step_vs_peers_1m", 1_000_000);
}

fn vs_peers(c: &mut Criterion, name: &str, n: usize) {
    let cost = horde::maps::scattered_map(1024, 1024, horde::maps::DEMO_SEED).unwrap();
    let (crowd, flow, goal) = spread_crowd(&cost, n, 5);
    let groups = [Group { flow: &flow, goal }];
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.throughput(Throughput::Elements(n as u64));
    bench_steps(
        &mut group,
        BenchmarkId::from_parameter("horde"),
        &crowd,
        &cost,
        &groups,
    );
    let positions = crowd.positions().to_vec();
    let mut naive = NaiveCrowd {
        next: positions.clone(),
        positions: positions.clone(),
        cells: HashMap::new(),
    };
    group.bench_function("naive_hash_map_crowd", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                naive.positions.copy_from_slice(&positions);
                let started = Instant::now();
                for _ in 0..STEPS {
                    naive.step(&flow, &cost, 0.05);
                }
                total += started.elapsed() / STEPS;
                black_box(&naive.positions);
            }
            total
        })
    });
    let mut floor = positions.clone();
    group.bench_function("flow_following_floor", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                floor.copy_from_slice(&positions);
                let started = Instant::now();
                for _ in 0..STEPS {
                    flow_following_floor(&mut floor, &flow, 4.0 * 0.05);
                }
                total += started.elapsed() / STEPS;
                black_box(&floor);
            }
            total
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    crowd_step,
    crowd_step_same_density,
    crowd_step_lanes,
    crowd_step_vs_peers,
    crowd_step_vs_peers_1m
);
criterion_main!(benches);
