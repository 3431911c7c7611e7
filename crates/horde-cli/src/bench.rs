//! `horde bench`: per-unit A* against one field, and the field build against a plain
//! BFS (the floor of any wave) and the `pathfinding` crate's `dijkstra_all`, all in one run.

use std::process::ExitCode;

use anyhow::{Result, bail};
use glam::UVec2;
use horde::{CostField, CostModel};

use crate::measure::{Report, TIME_SLICE, central_goal, measure};
use crate::util::load_map;

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
    /// Repetitions per measurement, 1 to 10,000 (default: enough for about 20 M cells, and
    /// for the field timed against the BFS floor and against `dijkstra_all` a quarter second
    /// each).
    #[arg(long, value_parser = crate::util::count_in(1, crate::util::MAX_REPS))]
    reps: Option<usize>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Measure sectors, portals and tiles on a huge generated map instead (`--size`, default
    /// 4096x4096): graph build, routes on open ground and in a serpentine maze, the first tile,
    /// memory, and the excess of following the tiles over the optimum.
    #[arg(long, conflicts_with_all = ["map", "units", "goal", "reps"])]
    huge: bool,
    /// Sector side for `--huge`, 8 to 256.
    #[arg(long, default_value_t = horde::sectors::DEFAULT_SECTOR_SIDE as usize,
          value_parser = crate::util::count_in(
              horde::sectors::MIN_SECTOR_SIDE as u64, horde::sectors::MAX_SECTOR_SIDE as u64))]
    sector: usize,
    /// Weigh the route search's heuristic (1 to 4; 1 is plain A*): routes at most that many
    /// times the cheapest through the portal graph, found with far fewer expansions.
    #[arg(long, default_value_t = 1.0, value_parser = crate::util::number_in(1.0, 4.0, false))]
    weight: f32,
    /// Random queries for `--huge`'s excess, 1 to 10,000.
    #[arg(long, default_value_t = 100, value_parser = crate::util::count_in(1, 10_000))]
    queries: usize,
}

/// What the text report prints in place of the peer rows in a default build.
pub const PEERS_NEED_FEATURE: &str = "pathfinding, bracket-lib  (the peer rows need a build with \
`--features peers`: cargo run --release -p horde-cli --features peers -- bench)";

pub fn run(a: &Args) -> Result<ExitCode> {
    if a.huge {
        return run_huge(a);
    }
    let (cost, name) = match (&a.map, &a.size) {
        (Some(m), _) => load_map(m)?,
        (None, Some(s)) => {
            let (w, h) =
                horde_cli::args::parse_size(s).map_err(|e| anyhow::anyhow!("--size {e}"))?;
            horde::Grid::new(w, h).map_err(|e| anyhow::anyhow!("--size {w}x{h}: {e}"))?;
            (
                horde::maps::scattered_map(w, h, horde::maps::DEMO_SEED)?,
                format!("generated {w}x{h}"),
            )
        }
        (None, None) => load_map("builtin")?,
    };
    let goal = match a.goal {
        Some(g) => {
            crate::util::check_walkable(&cost, g, "--goal")?;
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
    if a.json {
        print_json(a, &cost, &r)?;
    } else {
        print_table(a, &cost, &r)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The report as one JSON object (the keys are a contract: scripts read them).
fn print_json(a: &Args, cost: &CostField, r: &Report) -> Result<()> {
    let ns_cell_i = r.integration_ns / r.cells as f64;
    let ns_cell_f = r.flow_ns / r.cells as f64;
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
        "field_over_bfs": r.field_ns / r.bfs_ns,
        "dijkstra_all_over_field": r.dijkstra_all_ns / r.field_beside_dijkstra_all_ns,
        "field_beside_dijkstra_all_ns": r.field_beside_dijkstra_all_ns,
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
    Ok(())
}

/// The report as a table.
fn print_table(a: &Args, cost: &CostField, r: &Report) -> Result<()> {
    let ns_cell_i = r.integration_ns / r.cells as f64;
    let ns_cell_f = r.flow_ns / r.cells as f64;
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
    outln!(
        "vector kernels {} (HORDE_SIMD: off, avx2, avx512, auto)",
        horde::simd_level().name()
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
    Ok(())
}

/// `--huge`: the sector graph's figures on a huge generated map.
fn run_huge(a: &Args) -> Result<ExitCode> {
    let (w, h) = match &a.size {
        Some(s) => {
            let (w, h) =
                horde_cli::args::parse_size(s).map_err(|e| anyhow::anyhow!("--size {e}"))?;
            horde::Grid::new(w, h).map_err(|e| anyhow::anyhow!("--size {w}x{h}: {e}"))?;
            (w, h)
        }
        None => (4096, 4096),
    };
    if w < 32 || h < 32 {
        bail!("--size {w}x{h}: --huge needs at least 32x32 (the maze has a wall every 16 columns)");
    }
    let r = crate::huge::measure_huge(w, h, a.sector as u32, a.queries, a.weight)?;
    if a.json {
        let v = serde_json::json!({
            "size": format!("{}x{}", r.width, r.height),
            "sector": r.sector,
            "build_ms": r.build_ms,
            "route_open_ms": r.route_open_ms,
            "route_open_expanded": r.route_open_expanded,
            "route_open_octile_ms": r.route_open_octile_ms,
            "route_maze_expanded": r.route_maze_expanded,
            "route_open_weighted_ms": r.route_open_weighted_ms,
            "route_maze_weighted_ms": r.route_maze_weighted_ms,
            "weight": a.weight,
            "first_tile_ms": r.first_tile_ms,
            "route_maze_ms": r.route_maze_ms,
            "edit_ms": r.edit_ms,
            "bytes_per_cell": r.bytes_per_cell,
            "tile_excess": r.tile_excess,
            "tile_excess_p95": r.tile_excess_p95,
            "queries": r.queries,
            "nodes": r.nodes,
            "edges": r.edges,
            "maze_nodes": r.maze_nodes,
        });
        outln!("{v}");
    } else {
        outln!(
            "map            generated {}x{} (open ground with terrain), sectors of {}",
            r.width,
            r.height,
            r.sector
        );
        outln!(
            "graph          built in {:.1} ms: {} portal nodes, {} edges, {:.2} bytes/cell",
            r.build_ms,
            r.nodes,
            r.edges,
            r.bytes_per_cell
        );
        outln!(
            "route, open    {:.3} ms corner to corner, {} nodes expanded ({:.3} ms with the octile distance alone; {:.3} ms with the heuristic weighted by {})",
            r.route_open_ms,
            r.route_open_expanded,
            r.route_open_octile_ms,
            r.route_open_weighted_ms,
            r.weight
        );
        outln!("first tile     {:.3} ms", r.first_tile_ms);
        outln!(
            "route, maze    {:.3} ms corner to corner (serpentine, {} of {} portal nodes expanded; {:.3} ms weighted)",
            r.route_maze_ms,
            r.route_maze_expanded,
            r.maze_nodes,
            r.route_maze_weighted_ms
        );
        outln!(
            "edit           {:.3} ms: an 8x8 wall block, graph updated, the cached route answered again",
            r.edit_ms
        );
        outln!(
            "tile excess    mean {:.3} %, 95th percentile {:.3} % over {} random queries (routes weighted by {})",
            100.0 * r.tile_excess,
            100.0 * r.tile_excess_p95,
            r.queries,
            a.weight
        );
    }
    Ok(ExitCode::SUCCESS)
}
