//! The comparison both `horde` (the demo) and `horde bench` print: one field against per-unit
//! A*, and the field build against a plain BFS (the floor of any wave) and the peer crates.

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Result, bail};
use glam::UVec2;
use horde::{
    AStar, CostEdit, CostField, CostModel, Dir8, FieldRepairer, FlowField, IntegrationBuilder,
    IntegrationField, LiveField, WALL,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::util::{median_ns, median_pair_ns, progress, reveal_after_a_second};

/// Repetitions of a measurement at the most without `--reps`.
const MAX_DEFAULT_REPS: usize = 201;

/// Nanoseconds the field and a peer (the BFS floor, `dijkstra_all`) are timed in turns for at
/// least, unless `--reps` is given: on a map of a million cells the default repetitions (19,
/// chosen by cells) left the field's median as noisy as the machine, and the two ratios of
/// issue 31 moved by a tenth from run to run.
const PAIR_BUDGET_NS: f64 = 250e6;

/// One run of `f`, in nanoseconds.
fn time_once(f: impl FnOnce()) -> f64 {
    let s = Instant::now();
    f();
    s.elapsed().as_nanos() as f64
}

/// Pairs of runs that fit in `budget_ns` when a pair takes `pair_ns`, at least `least` and at
/// most `MAX_DEFAULT_REPS` (or `least`, if more).
fn pairs_within(budget_ns: f64, pair_ns: f64, least: usize) -> usize {
    let fit = (budget_ns / pair_ns.max(1.0)) as usize;
    fit.clamp(least, MAX_DEFAULT_REPS.max(least))
}

/// The walkable cell nearest the map's centre (see `CostField::nearest_walkable`).
pub fn central_goal(cost: &CostField) -> Option<UVec2> {
    cost.nearest_walkable(UVec2::new(cost.width() / 2, cost.height() / 2))
}

/// `n` random cells (seeded) from which the goal is reachable.
pub fn reachable_starts(field: &IntegrationField, n: usize, seed: u64) -> Vec<UVec2> {
    let reachable: Vec<usize> = field
        .values()
        .iter()
        .enumerate()
        .filter(|&(_, &v)| v != horde::UNREACHABLE && v != 0)
        .map(|(i, _)| i)
        .collect();
    if reachable.is_empty() {
        return Vec::new();
    }
    let mut rng = Pcg64::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            field
                .grid()
                .cell(reachable[rng.random_range(0..reachable.len())])
        })
        .collect()
}

/// Plain breadth-first search from the goal over the same legal moves (corner rule included),
/// every step costing 1: the least work any wave over this map can do. Written with the same
/// care as the wave (padded grid, flat queue) so that the comparison is honest.
pub struct Bfs {
    padded_width: usize,
    open: Vec<bool>,
    dist: Vec<u32>,
    queue: Vec<u32>,
}

impl Bfs {
    pub fn new(cost: &CostField) -> Bfs {
        let pw = cost.width() as usize + 2;
        let mut open = vec![false; pw * (cost.height() as usize + 2)];
        for (y, row) in cost.costs().chunks_exact(cost.width() as usize).enumerate() {
            for (x, &c) in row.iter().enumerate() {
                open[(y + 1) * pw + x + 1] = c != WALL;
            }
        }
        let n = open.len();
        Bfs {
            padded_width: pw,
            open,
            dist: vec![u32::MAX; n],
            queue: Vec::with_capacity(n),
        }
    }

    /// Returns the number of cells reached.
    pub fn run(&mut self, goal: UVec2) -> usize {
        let pw = self.padded_width;
        self.dist.fill(u32::MAX);
        let g = (goal.y as usize + 1) * pw + goal.x as usize + 1;
        self.dist[g] = 0;
        self.queue.clear();
        self.queue.push(g as u32);
        let mut head = 0;
        let open = &self.open;
        while head < self.queue.len() {
            let c = self.queue[head] as usize;
            head += 1;
            let d = self.dist[c] + 1;
            let (n, e, s, w) = (open[c - pw], open[c + 1], open[c + pw], open[c - 1]);
            let moves = [
                (n, c - pw),
                (e, c + 1),
                (s, c + pw),
                (w, c - 1),
                (n && e, c - pw + 1),
                (s && e, c + pw + 1),
                (s && w, c + pw - 1),
                (n && w, c - pw - 1),
            ];
            for (ok, j) in moves {
                if ok && open[j] && self.dist[j] == u32::MAX {
                    self.dist[j] = d;
                    self.queue.push(j as u32);
                }
            }
        }
        head
    }
}

/// Everything the bench measures, in one run.
pub struct Report {
    pub map: String,
    pub cells: usize,
    pub walkable: usize,
    pub field_settled: usize,
    pub astar_settled_mean: f64,
    pub field_ns: f64,
    pub integration_ns: f64,
    pub flow_ns: f64,
    pub astar_ns_per_query: f64,
    pub bfs_ns: f64,
    pub dijkstra_all_ns: f64,
    /// The field (integration + flow) timed in turns with `dijkstra_all`, which its ratio to
    /// `dijkstra_all` uses: one drift of the machine's speed for both.
    pub field_beside_dijkstra_all_ns: f64,
    pub bracket_ns: f64,
    pub table: Vec<(usize, f64)>,
    pub goal: UVec2,
    /// The same integration field built in slices of `TIME_SLICE` cells, start to finish.
    pub sliced_ns: f64,
    /// The one-shot build on one thread: what a time-sliced build (one thread, a slice per
    /// frame) is compared with, since one-shot builds of large maps sweep bands in parallel.
    pub single_thread_ns: f64,
    /// The same integration field by the Dijkstra wave alone (row sweeps off).
    pub wave_ns: f64,
    /// Living maps: median repair after stamping or removing a 4 x 4 building, and after the goal
    /// moved to an adjacent cell (integration and flow both, exact).
    pub living: Living,
}

/// The living-map rows of the bench.
#[derive(Debug, Clone, Copy, Default)]
pub struct Living {
    pub buildings: usize,
    pub repair_ns: f64,
    pub repair_relabelled_mean: f64,
    pub moved_goal_ns: f64,
    pub moved_goal_rebuilt: bool,
}

/// Stamp and remove 4 x 4 buildings at random open spots (each repair timed on its own), then
/// move the goal to an adjacent cell and back.
pub fn measure_living(
    cost: &CostField,
    goal: UVec2,
    model: CostModel,
    buildings: usize,
) -> Result<Living> {
    let mut map = cost.clone();
    let mut rep = FieldRepairer::new();
    let mut live = LiveField::build(&map, &[goal], model, &mut rep)?;
    let mut rng = Pcg64::seed_from_u64(11);
    let (w, h) = (map.width(), map.height());
    let mut repair_times = Vec::new();
    let mut relabelled = 0usize;
    let mut placed = 0;
    let mut tries = 0;
    while placed < buildings && tries < buildings * 200 && w >= 4 && h >= 4 {
        tries += 1;
        let min = UVec2::new(rng.random_range(0..=w - 4), rng.random_range(0..=h - 4));
        let max = min + UVec2::splat(3);
        let inside = |c: UVec2| c.cmpge(min).all() && c.cmple(max).all();
        let open = (min.y..=max.y)
            .all(|y| (min.x..=max.x).all(|x| map.costs()[(y * w + x) as usize] == 1));
        if !open || inside(goal) || live.integration().get(min).is_none() {
            continue;
        }
        placed += 1;
        for c in [WALL, 1] {
            let changed = map.apply_edits(&[CostEdit::Rect { min, max, cost: c }])?;
            let t = Instant::now();
            let stats = live.repair(&map, &changed, &mut rep)?;
            repair_times.push(t.elapsed().as_nanos() as f64);
            relabelled += stats.relabelled;
        }
    }
    let next = Dir8::ALL
        .iter()
        .filter_map(|&d| map.grid().neighbour(goal, d))
        .find(|&c| map.is_walkable(c));
    let mut moved_times = Vec::new();
    let mut rebuilt = false;
    if let Some(next) = next {
        for _ in 0..4 {
            for g in [next, goal] {
                let t = Instant::now();
                let stats = live.move_goals(&map, &[g], &mut rep)?;
                moved_times.push(t.elapsed().as_nanos() as f64);
                rebuilt |= stats.rebuilt;
            }
        }
    }
    let n = repair_times.len().max(1);
    Ok(Living {
        buildings: placed,
        repair_ns: median(&mut repair_times),
        repair_relabelled_mean: relabelled as f64 / n as f64,
        moved_goal_ns: median(&mut moved_times),
        moved_goal_rebuilt: rebuilt,
    })
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Cells settled per call of a time-sliced build in the bench (a frame's budget).
pub const TIME_SLICE: usize = 1000;

impl Report {
    pub fn break_even(&self) -> f64 {
        self.field_ns / self.astar_ns_per_query
    }
}

pub fn measure(
    cost: &CostField,
    name: &str,
    goal: UVec2,
    model: CostModel,
    units: &[usize],
    reps: Option<usize>,
    with_peers: bool,
) -> Result<Report> {
    let cells = cost.grid().len();
    let given = reps;
    let reps = reps.unwrap_or((20_000_000 / cells).clamp(5, MAX_DEFAULT_REPS));
    let mut builder = IntegrationBuilder::new();
    let mut field = IntegrationField::new(*cost.grid(), model);
    let mut flow = FlowField::new(*cost.grid());
    let stats = builder.build_into(cost, &[goal], model, &mut field)?;
    builder.flow_into(&mut flow)?;
    let starts = reachable_starts(&field, units.iter().copied().max().unwrap_or(1).max(200), 7);
    if starts.is_empty() {
        bail!("no cell can reach the goal ({}, {})", goal.x, goal.y);
    }
    let peer_steps = if cfg!(feature = "peers") { 4 } else { 2 };
    let steps = 4 + units.len() as u64 + if with_peers { peer_steps } else { 0 };
    let pb = progress(steps, "measuring");
    let started = Instant::now();
    let tick = |pb: &indicatif::ProgressBar| {
        pb.inc(1);
        reveal_after_a_second(pb, started);
    };

    let integration_ns = median_ns(reps, || {
        builder
            .build_into(cost, &[goal], model, &mut field)
            .unwrap();
    });
    let mut wave_builder = IntegrationBuilder::new();
    wave_builder.set_sweeps(false);
    let wave_ns = median_ns(reps, || {
        wave_builder
            .build_into(cost, &[goal], model, &mut field)
            .unwrap();
    });
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let single_thread_ns = one_thread.install(|| {
        median_ns(reps, || {
            builder
                .build_into(cost, &[goal], model, &mut field)
                .unwrap();
        })
    });
    let sliced_ns = median_ns(reps, || {
        builder.start(cost, &[goal], model).unwrap();
        while let horde::BuildProgress::Running { .. } = builder.advance(TIME_SLICE).unwrap() {}
        builder.finish_into(&mut field).unwrap();
    });
    tick(&pb);
    let flow_ns = median_ns(reps, || builder.flow_into(&mut flow).unwrap());
    tick(&pb);
    // The peer rows stay NaN (null in JSON) when not asked for, and in a build without the
    // `peers` feature. The BFS floor is timed in turns with the field, so that their ratio
    // sees one drift of the machine's speed.
    #[cfg_attr(not(feature = "peers"), allow(unused_mut))]
    let (mut bfs_ns, mut dijkstra_all_ns, mut bracket_ns) = (f64::NAN, f64::NAN, f64::NAN);
    #[cfg_attr(not(feature = "peers"), allow(unused_mut))]
    let mut field_beside_dijkstra_all_ns = f64::NAN;
    let mut build_field = || {
        builder
            .build_into(cost, &[goal], model, &mut field)
            .unwrap();
        builder.flow_into(&mut flow).unwrap();
    };
    let field_ns = if with_peers {
        let mut bfs = Bfs::new(cost);
        let pairs = given.unwrap_or_else(|| {
            let one = time_once(&mut build_field)
                + time_once(|| {
                    black_box(bfs.run(goal));
                });
            pairs_within(PAIR_BUDGET_NS, one, reps)
        });
        let (field_ns, floor_ns) = median_pair_ns(pairs, &mut build_field, || {
            black_box(bfs.run(goal));
        });
        bfs_ns = floor_ns;
        field_ns
    } else {
        median_ns(reps, &mut build_field)
    };
    tick(&pb);

    let mut astar = AStar::new();
    let q = starts.len().min(200);
    let mut settled = 0usize;
    for &s in &starts[..q] {
        astar.search(cost, s, goal, model)?;
        settled += astar.settled();
    }
    let astar_reps = (reps / 4).max(3);
    let astar_ns_per_query = median_ns(astar_reps, || {
        for &s in &starts[..q] {
            black_box(astar.search(cost, s, goal, model).unwrap());
        }
    }) / q as f64;
    tick(&pb);
    let mut table = Vec::new();
    for &n in units {
        let t = median_ns(astar_reps, || {
            for &s in starts.iter().cycle().take(n) {
                black_box(astar.search(cost, s, goal, model).unwrap());
            }
        });
        table.push((n, t));
        tick(&pb);
    }
    if with_peers {
        tick(&pb);
        #[cfg(feature = "peers")]
        {
            let least = (reps / 4).max(8);
            let pairs = if given.is_some() {
                least
            } else {
                let one = time_once(&mut build_field)
                    + time_once(|| {
                        black_box(crate::peers::pathfinding_dijkstra_all(cost, goal, model));
                    });
                pairs_within(PAIR_BUDGET_NS, one, least)
            };
            (field_beside_dijkstra_all_ns, dijkstra_all_ns) =
                median_pair_ns(pairs, &mut build_field, || {
                    black_box(crate::peers::pathfinding_dijkstra_all(cost, goal, model));
                });
            tick(&pb);
            bracket_ns = median_ns((reps / 20).max(3), || {
                black_box(crate::peers::bracket_dijkstra_map(cost, goal, model));
            });
            tick(&pb);
        }
    }
    let mut living = Living::default();
    if with_peers {
        living = measure_living(cost, goal, model, 16)?;
        tick(&pb);
    }
    pb.finish_and_clear();
    Ok(Report {
        map: name.to_owned(),
        cells,
        walkable: cost.walkable_count(),
        field_settled: stats.settled,
        astar_settled_mean: settled as f64 / q as f64,
        field_ns,
        integration_ns,
        flow_ns,
        astar_ns_per_query,
        bfs_ns,
        dijkstra_all_ns,
        field_beside_dijkstra_all_ns,
        bracket_ns,
        table,
        goal,
        sliced_ns,
        single_thread_ns,
        wave_ns,
        living,
    })
}

/// The tests' scene: a generated 60 x 40 map, its central goal and the cells that reach it.
#[cfg(test)]
pub fn scene() -> (CostField, UVec2, usize) {
    let cost = horde::maps::scattered_map(60, 40, 3).unwrap();
    let goal = central_goal(&cost).unwrap();
    let field = IntegrationBuilder::new()
        .build(&cost, &[goal], CostModel::TenFourteen)
        .unwrap();
    let reachable = field
        .values()
        .iter()
        .filter(|&&v| v != horde::UNREACHABLE)
        .count();
    (cost, goal, reachable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_fill_the_budget_within_their_bounds() {
        // A 1.3 ms pair (a 1024 x 1024 dungeon's field and BFS) in a quarter second.
        assert_eq!(pairs_within(PAIR_BUDGET_NS, 1.3e6, 19), 192);
        // Fast pairs stop at the most, slow ones at the least, which a larger least lifts.
        assert_eq!(pairs_within(PAIR_BUDGET_NS, 1e3, 19), MAX_DEFAULT_REPS);
        assert_eq!(pairs_within(PAIR_BUDGET_NS, 1e9, 8), 8);
        assert_eq!(pairs_within(PAIR_BUDGET_NS, 1e3, 500), 500);
        assert_eq!(pairs_within(PAIR_BUDGET_NS, 0.0, 5), MAX_DEFAULT_REPS);
    }

    #[test]
    fn bfs_reaches_what_the_wave_reaches() {
        let (cost, goal, reachable) = scene();
        assert_eq!(Bfs::new(&cost).run(goal), reachable);
    }
}
