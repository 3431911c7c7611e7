//! Criterion benchmarks of the core: one field (integration + flow) vs A* queries on the built-in
//! map, per-cell cost on a 1024 × 1024 map and on winding maps (a maze, a dungeon), and the
//! `pathfinding` crate's `dijkstra_all` on the same costs. `cargo bench -p horde-nav`; the
//! `horde bench` command prints the same comparisons as ratios measured in one run.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::UVec2;
use horde::{
    AStar, CostEdit, CostField, CostModel, Dir8, FieldRepairer, FlowField, IntegrationBuilder,
    IntegrationField, LiveField, WALL,
};

fn central_walkable(cost: &CostField) -> UVec2 {
    let c = UVec2::new(cost.width() / 2, cost.height() / 2);
    (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|&p| cost.is_walkable(p))
        .min_by_key(|p| p.x.abs_diff(c.x).pow(2) + p.y.abs_diff(c.y).pow(2))
        .unwrap()
}

fn maps() -> Vec<(&'static str, CostField)> {
    vec![
        ("builtin_128", horde::maps::demo_map()),
        (
            "scattered_1024",
            horde::maps::scattered_map(1024, 1024, horde::maps::DEMO_SEED).unwrap(),
        ),
    ]
}

fn fields(c: &mut Criterion) {
    let mut group = c.benchmark_group("field");
    group.sample_size(20);
    for (name, cost) in maps() {
        let goal = central_walkable(&cost);
        group.throughput(Throughput::Elements(cost.grid().len() as u64));
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let mut builder = IntegrationBuilder::new();
            let mut field = IntegrationField::new(*cost.grid(), model);
            let mut flow = FlowField::new(*cost.grid());
            builder
                .build_into(&cost, &[goal], model, &mut field)
                .unwrap();
            group.bench_function(
                BenchmarkId::new(format!("integration/{}", model.name()), name),
                |b| {
                    b.iter(|| {
                        builder
                            .build_into(&cost, black_box(&[goal]), model, &mut field)
                            .unwrap()
                    })
                },
            );
            group.bench_function(
                BenchmarkId::new(format!("flow/{}", model.name()), name),
                |b| b.iter(|| builder.flow_into(&mut flow).unwrap()),
            );
        }
    }
    group.finish();
}

fn astar_vs_field(c: &mut Criterion) {
    let cost = horde::maps::demo_map();
    let goal = central_walkable(&cost);
    let model = CostModel::TenFourteen;
    let field = IntegrationBuilder::new()
        .build(&cost, &[goal], model)
        .unwrap();
    // Every 67th reachable cell: 200 spread-out starts.
    let starts: Vec<UVec2> = (0..cost.grid().len())
        .filter(|&i| field.values()[i] != horde::UNREACHABLE)
        .step_by(67)
        .map(|i| cost.grid().cell(i))
        .take(200)
        .collect();
    let mut group = c.benchmark_group("builtin_128");
    group.sample_size(20);
    let mut astar = AStar::new();
    group.bench_function("astar_200_units", |b| {
        b.iter(|| {
            for &s in &starts {
                black_box(astar.search(&cost, s, goal, model).unwrap());
            }
        })
    });
    let mut builder = IntegrationBuilder::new();
    let mut out = IntegrationField::new(*cost.grid(), model);
    let mut flow = FlowField::new(*cost.grid());
    group.bench_function("one_field", |b| {
        b.iter(|| {
            builder.build_into(&cost, &[goal], model, &mut out).unwrap();
            builder.flow_into(&mut flow).unwrap();
        })
    });
    let g = *cost.grid();
    group.bench_function("pathfinding_dijkstra_all", |b| {
        b.iter(|| {
            let successors = |&c: &UVec2| {
                Dir8::ALL
                    .into_iter()
                    .filter_map(|dir| {
                        let j = g.neighbour(c, dir)?;
                        cost.can_step(j, dir.opposite())
                            .then(|| (j, model.step(dir.opposite(), cost.get(j).unwrap())))
                    })
                    .collect::<Vec<_>>()
            };
            black_box(pathfinding::prelude::dijkstra_all(&goal, successors).len())
        })
    });
    group.finish();
}

/// Living maps on 1024 x 1024: a full rebuild (integration + flow) against repairing both after
/// a 4 x 4 building goes up and comes down again, and against moving the goal by one cell.
fn living(c: &mut Criterion) {
    let mut group = c.benchmark_group("living_1024");
    group.sample_size(10);
    let mut cost = horde::maps::scattered_map(1024, 1024, horde::maps::DEMO_SEED).unwrap();
    let goal = central_walkable(&cost);
    let model = CostModel::TenFourteen;
    let mut rep = FieldRepairer::new();
    let mut live = LiveField::build(&cost, &[goal], model, &mut rep).unwrap();
    group.bench_function("rebuild", |b| {
        b.iter(|| LiveField::build(&cost, black_box(&[goal]), model, &mut rep).unwrap())
    });
    // An open 4 x 4 spot between the goal and the far corner.
    let spot = (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|p| p.x > goal.x + 100 && p.y > goal.y + 100 && p.x < 1020 && p.y < 1020)
        .find(|&p| (0..4).all(|dy| (0..4).all(|dx| cost.get(p + UVec2::new(dx, dy)) == Some(1))))
        .unwrap();
    let rect = |c| CostEdit::Rect {
        min: spot,
        max: spot + UVec2::splat(3),
        cost: c,
    };
    group.bench_function("repair_building_up_and_down", |b| {
        b.iter(|| {
            for c in [WALL, 1] {
                let changed = cost.apply_edits(&[rect(c)]).unwrap();
                live.repair(&cost, &changed, &mut rep).unwrap();
            }
        })
    });
    let next = goal + UVec2::X;
    group.bench_function("moved_goal_there_and_back", |b| {
        b.iter(|| {
            for g in [next, goal] {
                live.move_goals(&cost, &[g], &mut rep).unwrap();
            }
        })
    });
    group.finish();
}

/// The maps where the row sweeps hand over to the wave: the Moving AI maze (corridors one cell
/// wide) and a 1024 × 1024 dungeon of `horde dungeon --rooms 400` (rooms joined by one-cell
/// corridors, 5 % of the map floor). Throughput counts the cells reached. `horde bench --map`
/// sets the same build beside a plain BFS and `pathfinding::dijkstra_all` in one run.
fn winding(c: &mut Criterion) {
    let maze = horde::io::read_map(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../data/movingai/maze512-1-0.map"),
    )
    .unwrap();
    #[allow(unused_mut)]
    let mut maps = vec![("maze512-1-0", maze)];
    // (The generator is behind the default `dungeon` feature.)
    #[cfg(feature = "dungeon")]
    {
        let config = horde::dungeon::DungeonConfig {
            width: 1024,
            height: 1024,
            rooms: 400,
            ..horde::dungeon::DungeonConfig::default()
        };
        let dungeon = horde::dungeon::generate(&config, 1).unwrap();
        maps.push(("dungeon_1024_400", dungeon.to_cost_field()));
    }
    let mut group = c.benchmark_group("winding");
    group.sample_size(20);
    for (name, cost) in maps {
        let goal = central_walkable(&cost);
        let model = CostModel::TenFourteen;
        let mut builder = IntegrationBuilder::new();
        let mut field = IntegrationField::new(*cost.grid(), model);
        let mut flow = FlowField::new(*cost.grid());
        let reached = builder
            .build_into(&cost, &[goal], model, &mut field)
            .unwrap()
            .settled;
        group.throughput(Throughput::Elements(reached as u64));
        group.bench_function(BenchmarkId::new("field", name), |b| {
            b.iter(|| {
                builder
                    .build_into(&cost, black_box(&[goal]), model, &mut field)
                    .unwrap();
                builder.flow_into(&mut flow).unwrap();
            })
        });
    }
    group.finish();
}

criterion_group!(benches, fields, astar_vs_field, living, winding);
criterion_main!(benches);
