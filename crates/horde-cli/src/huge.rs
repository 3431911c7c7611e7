//! `horde bench --huge`: sectors, portals and tiles on a huge generated map — build, routes on
//! open ground and through a serpentine maze, the first tile, memory, and how far following the
//! tiles is from the optimum.

use std::time::Instant;

use anyhow::Result;
use glam::UVec2;
use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
use horde::{CostField, CostModel, Grid, IntegrationBuilder, WALL};
use rand::{Rng, SeedableRng};

use crate::util::median_ns;

/// What `--huge` measures.
pub struct HugeReport {
    pub width: u32,
    pub height: u32,
    pub sector: u32,
    pub build_ms: f64,
    pub route_open_ms: f64,
    /// The open route with the octile distance alone as heuristic.
    pub route_open_octile_ms: f64,
    /// Graph nodes the open route's search expanded.
    pub route_open_expanded: usize,
    /// Graph nodes the maze route's search expanded.
    pub route_maze_expanded: usize,
    pub route_open_weighted_ms: f64,
    pub route_maze_weighted_ms: f64,
    pub weight: f32,
    pub first_tile_ms: f64,
    pub route_maze_ms: f64,
    pub edit_ms: f64,
    pub bytes_per_cell: f64,
    pub tile_excess: f64,
    pub tile_excess_p95: f64,
    pub queries: usize,
    pub nodes: usize,
    pub edges: usize,
    pub maze_nodes: usize,
}

/// A serpentine maze: a wall every 16 columns, its gap (one cell) alternating top and bottom.
pub fn serpentine(width: u32, height: u32) -> Result<CostField> {
    let grid = Grid::new(width, height)?;
    let mut costs = vec![1u8; grid.len()];
    for (k, x) in (15..width).step_by(16).enumerate() {
        let gap = if k % 2 == 0 { height - 1 } else { 0 };
        for y in 0..height {
            if y != gap {
                costs[(y * width + x) as usize] = WALL;
            }
        }
    }
    Ok(CostField::from_costs(grid, costs)?)
}

/// The walkable cell nearest `target`.
fn near(cost: &CostField, target: UVec2) -> Result<UVec2> {
    cost.nearest_walkable(target)
        .ok_or_else(|| anyhow::anyhow!("the map has no walkable cell"))
}

pub fn measure_huge(
    width: u32,
    height: u32,
    sector: u32,
    queries: usize,
    weight: f32,
) -> Result<HugeReport> {
    let model = CostModel::Octile;
    let open = horde::maps::scattered_map(width, height, horde::maps::DEMO_SEED)?;
    let mut build_ms = f64::INFINITY;
    let mut graph = None;
    for _ in 0..2 {
        let started = Instant::now();
        let g = SectorGraph::build(&open, sector, model)?;
        build_ms = build_ms.min(started.elapsed().as_secs_f64() * 1e3);
        graph = Some(g);
    }
    let graph = graph.expect("built");
    let (a, b) = (
        near(&open, UVec2::ZERO)?,
        near(&open, UVec2::new(width - 1, height - 1))?,
    );
    let mut search = RouteSearch::new();
    let route = search
        .route(&graph, &open, a, b)?
        .ok_or_else(|| anyhow::anyhow!("the generated map is one region"))?;
    let route_open_expanded = route.expanded;
    let route_open_ms = median_ns(9, || {
        std::hint::black_box(search.route(&graph, &open, a, b).ok());
    }) / 1e6;
    // The same with the octile distance alone as heuristic (no landmarks).
    let mut octile_only = RouteSearch::new();
    octile_only.set_landmarks(false);
    let route_open_octile_ms = median_ns(5, || {
        std::hint::black_box(octile_only.route(&graph, &open, a, b).ok());
    }) / 1e6;
    // The same with the heuristic weighted (the tiles' excess below uses it too).
    let mut weighted = RouteSearch::new();
    weighted.set_weight(if weight > 1.0 { weight } else { 1.25 })?;
    let route_open_weighted_ms = median_ns(9, || {
        std::hint::black_box(weighted.route(&graph, &open, a, b).ok());
    }) / 1e6;
    let first_tile_ms = median_ns(9, || {
        let mut tiles = FlowTiles::new(&graph, &open, b).expect("checked");
        std::hint::black_box(tiles.extend_some(&graph, &open, &route, 1).ok());
    }) / 1e6;

    // An 8 x 8 block walled on the route's way (the centre of the map): the graph updated, the
    // cached route's tiles dropped and the route answered again. Between the timed runs the
    // block is opened again (untimed), so each run starts from the same graph.
    let tiles = {
        let mut t = FlowTiles::new(&graph, &open, b)?;
        t.extend(&graph, &open, &route)?;
        t
    };
    let centre = UVec2::new(width / 2 - 4, height / 2 - 4);
    let block = (centre, centre + UVec2::splat(7));
    let mut edited = open.clone();
    edited.fill_rect(block.0, block.1, WALL)?;
    let mut edit_ms = f64::INFINITY;
    let mut g = graph.clone();
    for _ in 0..5 {
        let mut t = tiles.clone();
        let started = Instant::now();
        let update = g.update(&edited, &[block])?;
        if t.forget_stale(&update) || route.sectors.iter().any(|s| update.sectors.contains(s)) {
            std::hint::black_box(search.route(&g, &edited, a, b)?);
        }
        edit_ms = edit_ms.min(started.elapsed().as_secs_f64() * 1e3);
        g.update(&open, &[block])?;
    }
    drop(g);

    let maze = serpentine(width, height)?;
    let maze_graph = SectorGraph::build(&maze, sector, model)?;
    let (ma, mb) = (
        near(&maze, UVec2::ZERO)?,
        near(&maze, UVec2::new(width - 1, height - 1))?,
    );
    let route_maze_expanded = search
        .route(&maze_graph, &maze, ma, mb)?
        .map_or(0, |r| r.expanded);
    let route_maze_ms = median_ns(3, || {
        std::hint::black_box(search.route(&maze_graph, &maze, ma, mb).ok());
    }) / 1e6;
    let route_maze_weighted_ms = median_ns(3, || {
        std::hint::black_box(weighted.route(&maze_graph, &maze, ma, mb).ok());
    }) / 1e6;
    search.set_weight(weight)?;

    // Following the tiles against a field over the whole map, on random queries.
    let mut rng = rand_pcg::Pcg64::seed_from_u64(17);
    let mut builder = IntegrationBuilder::new();
    let mut excess = Vec::with_capacity(queries);
    while excess.len() < queries {
        let pick = |rng: &mut rand_pcg::Pcg64| {
            UVec2::new(rng.random_range(0..width), rng.random_range(0..height))
        };
        let (from, to) = (pick(&mut rng), pick(&mut rng));
        if !open.is_walkable(from) || !open.is_walkable(to) || from == to {
            continue;
        }
        let Some(route) = search.route(&graph, &open, from, to)? else {
            continue;
        };
        let mut tiles = FlowTiles::new(&graph, &open, to)?;
        tiles.extend(&graph, &open, &route)?;
        let walked = crate::route::follow(&open, &tiles, from, model)?.cost as f64;
        let field = builder.build(&open, &[to], model)?;
        let optimal = field.get(from).expect("reachable") as f64;
        excess.push(walked / optimal - 1.0);
    }
    excess.sort_by(f64::total_cmp);
    let tile_excess = excess.iter().sum::<f64>() / excess.len().max(1) as f64;
    let tile_excess_p95 = excess.get(excess.len() * 95 / 100).copied().unwrap_or(0.0);
    Ok(HugeReport {
        width,
        height,
        sector,
        build_ms,
        route_open_ms,
        route_open_expanded,
        route_open_octile_ms,
        route_maze_expanded,
        route_open_weighted_ms,
        route_maze_weighted_ms,
        weight: if weight > 1.0 { weight } else { 1.25 },
        first_tile_ms,
        route_maze_ms,
        edit_ms,
        bytes_per_cell: graph.memory_bytes() as f64 / open.grid().len() as f64,
        tile_excess,
        tile_excess_p95,
        queries,
        nodes: graph.node_count(),
        edges: graph.edge_count(),
        maze_nodes: maze_graph.node_count(),
    })
}
