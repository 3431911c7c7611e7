//! `horde bench`: the seed's table (per-unit A* vs one field), and the field build against a plain
//! BFS (the floor of any wave) and the `pathfinding` crate's `dijkstra_all`, all in one run.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use glam::UVec2;
use horde::{
    AStar, CostEdit, CostField, CostModel, Dir8, FieldRepairer, FlowField, IntegrationBuilder,
    IntegrationField, LiveField, WALL,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::util::{load_map, median_ns, progress, reveal_after_a_second};

#[derive(clap::Args)]
pub struct Args {
    /// A Moving AI .map file (default: the built-in 128 x 128 map).
    #[arg(long)]
    map: Option<String>,
    /// Instead of a file, a generated map of this size, e.g. 1024x1024.
    #[arg(long, value_name = "WxH", conflicts_with = "map")]
    size: Option<String>,
    /// Unit counts of the table (each 1 to 100,000; at most 64 of them).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,5,10,15,20,50,200",
        value_parser = crate::util::count_in(1, crate::util::MAX_UNITS)
    )]
    units: Vec<usize>,
    /// Goal cell (default: the walkable cell nearest the centre).
    #[arg(long, value_name = "X,Y", value_parser = crate::util::parse_cell)]
    goal: Option<UVec2>,
    /// Step costs: `10-14` or `octile`.
    #[arg(long, default_value = "10-14")]
    model: CostModel,
    /// Repetitions per measurement, 1 to 10,000 (default: enough for about 20 M cells).
    #[arg(long, value_parser = crate::util::count_in(1, crate::util::MAX_REPS))]
    reps: Option<usize>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

/// The walkable cell nearest the map's centre.
pub fn central_goal(cost: &CostField) -> Option<UVec2> {
    let c = glam::Vec2::new(cost.width() as f32, cost.height() as f32) / 2.0;
    (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|&p| cost.is_walkable(p))
        .min_by(|a, b| {
            let da = a.as_vec2().distance_squared(c);
            let db = b.as_vec2().distance_squared(c);
            da.total_cmp(&db).then((a.y, a.x).cmp(&(b.y, b.x)))
        })
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

/// What the text report prints in place of the peer rows in a default build.
pub const PEERS_NEED_FEATURE: &str = "pathfinding, bracket-lib  (the peer rows need a build with \
`--features peers`: cargo run --release -p horde-cli --features peers -- bench)";

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
    let reps = reps.unwrap_or((20_000_000 / cells).clamp(5, 201));
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
    let field_ns = median_ns(reps, || {
        builder
            .build_into(cost, &[goal], model, &mut field)
            .unwrap();
        builder.flow_into(&mut flow).unwrap();
    });
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
    // The peer crates' rows stay NaN (null in JSON) in a build without the `peers` feature.
    #[cfg_attr(not(feature = "peers"), allow(unused_mut))]
    let (mut bfs_ns, mut dijkstra_all_ns, mut bracket_ns) = (f64::NAN, f64::NAN, f64::NAN);
    if with_peers {
        let mut bfs = Bfs::new(cost);
        bfs_ns = median_ns(reps, || {
            black_box(bfs.run(goal));
        });
        tick(&pb);
        #[cfg(feature = "peers")]
        {
            dijkstra_all_ns = median_ns((reps / 20).max(3), || {
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
        bracket_ns,
        table,
        goal,
        sliced_ns,
        single_thread_ns,
        wave_ns,
        living,
    })
}

fn parse_size(s: &str) -> Result<(u32, u32)> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| anyhow::anyhow!("--size '{s}' is not WxH"))?;
    Ok((w.parse()?, h.parse()?))
}

pub fn run(a: &Args) -> Result<ExitCode> {
    let (cost, name) = match (&a.map, &a.size) {
        (Some(m), _) => load_map(m)?,
        (None, Some(s)) => {
            let (w, h) = parse_size(s)?;
            (
                horde::maps::scattered_map(w, h, horde::maps::DEMO_SEED)?,
                format!("generated {w}x{h}"),
            )
        }
        (None, None) => load_map("builtin")?,
    };
    let goal = match a.goal {
        Some(g) => {
            crate::util::check_walkable(&cost, g, "goal")?;
            g
        }
        None => {
            central_goal(&cost).ok_or_else(|| anyhow::anyhow!("the map has no walkable cell"))?
        }
    };
    if a.units.len() > crate::util::MAX_UNIT_ROWS {
        bail!(
            "--units lists {} counts; at most {}",
            a.units.len(),
            crate::util::MAX_UNIT_ROWS
        );
    }
    let r = measure(&cost, &name, goal, a.model, &a.units, a.reps, true)?;
    let ns_cell_i = r.integration_ns / r.cells as f64;
    let ns_cell_f = r.flow_ns / r.cells as f64;
    if a.json {
        let table: Vec<_> = r
            .table
            .iter()
            .map(|&(n, t)| {
                serde_json::json!({"units": n, "astar_ns": t, "field_ns": r.field_ns, "astar_over_field": t / r.field_ns})
            })
            .collect();
        let v = serde_json::json!({
            "map": r.map,
            "width": cost.width(),
            "height": cost.height(),
            "model": a.model.name(),
            "goal": [r.goal.x, r.goal.y],
            "cells": r.cells,
            "walkable_cells": r.walkable,
            "field_settled_cells": r.field_settled,
            "astar_settled_cells_mean": r.astar_settled_mean,
            "field_ns": r.field_ns,
            "integration_ns": r.integration_ns,
            "flow_ns": r.flow_ns,
            "integration_ns_per_cell": ns_cell_i,
            "flow_ns_per_cell": ns_cell_f,
            "astar_ns_per_query": r.astar_ns_per_query,
            "break_even_units": r.break_even(),
            "bfs_ns": r.bfs_ns,
            "pathfinding_dijkstra_all_ns": r.dijkstra_all_ns,
            "integration_over_bfs": r.integration_ns / r.bfs_ns,
            "dijkstra_all_over_integration": r.dijkstra_all_ns / r.integration_ns,
            "bracket_dijkstra_map_ns": r.bracket_ns,
            "bracket_over_integration": r.bracket_ns / r.integration_ns,
            "integration_wave_ns": r.wave_ns,
            "wave_over_integration": r.wave_ns / r.integration_ns,
            "timeslice_slice_cells": TIME_SLICE,
            "timeslice_overhead": r.sliced_ns / r.single_thread_ns - 1.0,
            "integration_single_thread_ns": r.single_thread_ns,
            "repair_buildings": r.living.buildings,
            "repair_ns": r.living.repair_ns,
            "repair_relabelled_cells_mean": r.living.repair_relabelled_mean,
            "repair_speedup": r.field_ns / r.living.repair_ns,
            "moved_goal_ns": r.living.moved_goal_ns,
            "moved_goal_speedup": r.field_ns / r.living.moved_goal_ns,
            "moved_goal_rebuilt": r.living.moved_goal_rebuilt,
            "units": table,
        });
        outln!("{v}");
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "map {} ({}x{}), {} walkable cells, goal ({}, {}), model {}",
        r.map,
        cost.width(),
        cost.height(),
        r.walkable,
        r.goal.x,
        r.goal.y,
        a.model.name()
    );
    outln!();
    outln!(
        "{:>6} {:>14} {:>14} {:>10}",
        "units",
        "A* per unit",
        "one field",
        "A*/field"
    );
    for &(n, t) in &r.table {
        outln!(
            "{n:>6} {:>11.1} µs {:>11.1} µs {:>10.2}",
            t / 1e3,
            r.field_ns / 1e3,
            t / r.field_ns
        );
    }
    outln!();
    outln!(
        "break-even          {:.2} units (one field = {:.2} A* queries)",
        r.break_even(),
        r.break_even()
    );
    outln!(
        "field               {:.1} µs = integration {:.1} µs + flow {:.1} µs; {} cells settled",
        r.field_ns / 1e3,
        r.integration_ns / 1e3,
        r.flow_ns / 1e3,
        r.field_settled
    );
    outln!(
        "per cell            integration {ns_cell_i:.2} ns, flow {ns_cell_f:.2} ns, both {:.2} ns",
        ns_cell_i + ns_cell_f
    );
    outln!(
        "wave alone          {:.1} µs (sweeps off: {:.2}x the time of the default build)",
        r.wave_ns / 1e3,
        r.wave_ns / r.integration_ns
    );
    outln!(
        "A*                  {:.1} µs per query, {:.0} cells settled per query",
        r.astar_ns_per_query / 1e3,
        r.astar_settled_mean
    );
    outln!(
        "time-sliced         {:.1} µs in slices of {TIME_SLICE} cells (overhead {:+.1} % against {:.1} µs in one go on one thread)",
        r.sliced_ns / 1e3,
        (r.sliced_ns / r.single_thread_ns - 1.0) * 100.0,
        r.single_thread_ns / 1e3
    );
    outln!(
        "repair              {:.1} µs per 4x4 building stamped or removed ({} spots, {:.0} cells relabelled), {:.1}x faster than a rebuild",
        r.living.repair_ns / 1e3,
        r.living.buildings,
        r.living.repair_relabelled_mean,
        r.field_ns / r.living.repair_ns
    );
    outln!(
        "moved goal          {:.1} µs per one-cell move{} ({:.2}x a rebuild's speed)",
        r.living.moved_goal_ns / 1e3,
        if r.living.moved_goal_rebuilt {
            ", rebuilt"
        } else {
            ""
        },
        r.field_ns / r.living.moved_goal_ns
    );
    outln!(
        "plain BFS floor     {:.1} µs  (integration / BFS = {:.2})",
        r.bfs_ns / 1e3,
        r.integration_ns / r.bfs_ns
    );
    if cfg!(feature = "peers") {
        outln!(
            "pathfinding         dijkstra_all {:.1} µs  (dijkstra_all / integration = {:.1})",
            r.dijkstra_all_ns / 1e3,
            r.dijkstra_all_ns / r.integration_ns
        );
        outln!(
            "bracket-lib         DijkstraMap {:.1} µs  (DijkstraMap / integration = {:.1})",
            r.bracket_ns / 1e3,
            r.bracket_ns / r.integration_ns
        );
    } else {
        outln!("{PEERS_NEED_FEATURE}");
    }
    Ok(ExitCode::SUCCESS)
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
    fn bfs_reaches_what_the_wave_reaches() {
        let (cost, goal, reachable) = scene();
        assert_eq!(Bfs::new(&cost).run(goal), reachable);
    }
}
