//! `horde route`: one query through sectors and portals — the route over the portal graph, the
//! flow-field tiles along it, and what following them costs against a field over the whole map.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use glam::UVec2;
use horde::sectors::{DEFAULT_SECTOR_SIDE, FlowTiles, MAX_SECTOR_SIDE, MIN_SECTOR_SIDE};
use horde::sectors::{RouteSearch, SectorGraph};
use horde::{CostField, CostModel, Dir8, IntegrationBuilder};

use crate::render::{Canvas, GOAL_RGB, PATH_RGB, UNIT_RGB};
use crate::util::{check_walkable, load_map, median_ns, parse_cell};

/// Colour of sector borders in pictures.
const SECTOR_RGB: [u8; 3] = [90, 120, 200];
/// Colour of portal cells.
const PORTAL_RGB: [u8; 3] = [250, 160, 0];
/// Colour of the route's waypoints.
const WAYPOINT_RGB: [u8; 3] = [200, 50, 200];

#[derive(clap::Args)]
pub struct Args {
    /// A Moving AI .map file, a greyscale PNG, or `builtin` for the built-in map.
    map: String,
    /// Start cell.
    #[arg(long, value_name = "X,Y", value_parser = parse_cell)]
    from: UVec2,
    /// Goal cell.
    #[arg(long, value_name = "X,Y", value_parser = parse_cell)]
    to: UVec2,
    /// Sector side in cells, 8 to 256.
    #[arg(long, default_value_t = DEFAULT_SECTOR_SIDE as usize,
          value_parser = crate::util::count_in(MIN_SECTOR_SIDE as u64, MAX_SECTOR_SIDE as u64))]
    sector: usize,
    /// Step costs: `10-14` or `octile`.
    #[arg(long, default_value = "10-14")]
    model: CostModel,
    /// Weigh the route search's heuristic (1 to 4; 1 is plain A*): routes at most that many
    /// times the cheapest through the portal graph, found with far fewer expansions.
    #[arg(long, default_value_t = 1.0, value_parser = crate::util::number_in(1.0, 4.0, false))]
    weight: f32,
    /// Draw sectors, portals, the route and its tiles' arrows as a PNG.
    #[arg(long, value_name = "FILE.png")]
    png: Option<String>,
    /// Pixels per cell, 1 to 64 (default: about 1024 pixels across).
    #[arg(long, value_parser = crate::util::count_in(1, crate::util::MAX_SCALE))]
    scale: Option<usize>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

/// Repetitions of the timed steps (the median is reported).
const REPS: usize = 9;

pub fn run(a: &Args) -> Result<ExitCode> {
    if let Some(path) = &a.png {
        crate::util::check_output(path, "--png")?;
    }
    let (cost, name) = load_map(&a.map)?;
    check_walkable(&cost, a.from, "--from")?;
    check_walkable(&cost, a.to, "--to")?;
    let side = a.sector as u32;

    let started = Instant::now();
    let graph = SectorGraph::build(&cost, side, a.model)?;
    let build_ms = started.elapsed().as_secs_f64() * 1e3;

    let mut search = RouteSearch::new();
    search.set_weight(a.weight)?;
    let route = search.route(&graph, &cost, a.from, a.to)?;
    let route_us = median_ns(REPS, || {
        std::hint::black_box(search.route(&graph, &cost, a.from, a.to).ok());
    }) / 1e3;

    // The whole map's field, for the optimum.
    let started = Instant::now();
    let field = IntegrationBuilder::new().build(&cost, &[a.to], a.model)?;
    let field_ms = started.elapsed().as_secs_f64() * 1e3;
    let optimal = field.get(a.from).map(|raw| a.model.to_cost(raw));

    let Some(route) = route else {
        if a.json {
            let v = serde_json::json!({
                "map": name, "from": [a.from.x, a.from.y], "to": [a.to.x, a.to.y],
                "cost": null, "optimal_cost": optimal, "excess": null,
                "route_us": route_us, "first_tile_us": null, "sectors_on_route": 0,
            });
            outln!("{v}");
        } else {
            outln!(
                "route      none: ({}, {}) cannot reach ({}, {}) (known from the labels)",
                a.from.x,
                a.from.y,
                a.to.x,
                a.to.y
            );
        }
        return Ok(ExitCode::from(1));
    };

    // Tiles: the first one alone (timed), then the rest.
    let first_tile_us = median_ns(REPS, || {
        let mut t = FlowTiles::new(&graph, &cost, a.to).expect("checked");
        std::hint::black_box(t.extend_some(&graph, &cost, &route, 1).ok());
    }) / 1e3;
    let mut tiles = FlowTiles::new(&graph, &cost, a.to)?;
    let started = Instant::now();
    let built = tiles.extend(&graph, &cost, &route)?;
    let tiles_ms = started.elapsed().as_secs_f64() * 1e3;
    let walk = follow(&cost, &tiles, a.from, a.model)?;
    let walked = units(a.model, walk.cost);
    let excess = match optimal {
        Some(o) if o > 0.0 => walked / o - 1.0,
        _ => 0.0,
    };
    let route_cost = units(a.model, route.cost);
    let bytes_per_cell = graph.memory_bytes() as f64 / cost.grid().len() as f64;

    if a.json {
        let v = serde_json::json!({
            "map": name,
            "from": [a.from.x, a.from.y],
            "to": [a.to.x, a.to.y],
            "model": a.model.name(),
            "sector": side,
            "weight": a.weight,
            "cost": walked,
            "optimal_cost": optimal,
            "excess": excess,
            "route_cost": route_cost,
            "route_us": route_us,
            "first_tile_us": first_tile_us,
            "tiles_ms": tiles_ms,
            "tiles": built,
            "sectors_on_route": route.sectors.len(),
            "build_ms": build_ms,
            "field_ms": field_ms,
            "nodes": graph.node_count(),
            "edges": graph.edge_count(),
            "bytes_per_cell": bytes_per_cell,
        });
        outln!("{v}");
    } else {
        let (sx, sy) = graph.sectors();
        outln!("map          {name} ({}x{})", cost.width(), cost.height());
        outln!("model        {}", a.model.name());
        outln!(
            "sectors      {sx}x{sy} of side {side}: {} portal nodes, {} edges, {:.2} bytes/cell, built in {build_ms:.1} ms",
            graph.node_count(),
            graph.edge_count(),
            bytes_per_cell
        );
        outln!(
            "route        {:.3} over {} sectors, {} waypoints, in {route_us:.1} µs ({} nodes expanded)",
            route_cost,
            route.sectors.len(),
            route.waypoints.len(),
            route.expanded
        );
        outln!(
            "tiles        {built} built in {tiles_ms:.2} ms (the first in {first_tile_us:.1} µs)"
        );
        outln!(
            "cost         {walked:.3} following the tiles ({} steps)",
            walk.cells.len() - 1
        );
        match optimal {
            Some(o) => outln!(
                "optimal      {o:.3} from a field over the whole map ({field_ms:.1} ms): excess {:.3} %",
                100.0 * excess
            ),
            None => outln!("optimal      none"),
        }
    }
    if let Some(png) = &a.png {
        draw(a, &cost, &graph, &tiles, &route.waypoints, &walk.cells, png)?;
        if !a.json {
            outln!("wrote        {png}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A raw cost in cost units (routes and tiles add up in 64 bits).
pub(crate) fn units(model: CostModel, raw: u64) -> f64 {
    raw as f64 / model.scale() as f64
}

/// Cells and raw cost of following the tiles' arrows from `start` to the goal.
pub(crate) struct Walk {
    pub cells: Vec<UVec2>,
    pub cost: u64,
}

pub(crate) fn follow(
    cost: &CostField,
    tiles: &FlowTiles,
    start: UVec2,
    model: CostModel,
) -> Result<Walk> {
    let mut walk = Walk {
        cells: vec![start],
        cost: 0,
    };
    let mut at = start;
    while at != tiles.goal() {
        let dir = tiles
            .flow_byte(at)
            .and_then(Dir8::from_index)
            .ok_or_else(|| anyhow::anyhow!("the tiles have no arrow at ({}, {})", at.x, at.y))?;
        let terrain = cost.get(at).expect("on the map");
        walk.cost += model.step(dir, terrain) as u64;
        at = tiles.next_cell(at).expect("an arrow leads somewhere");
        walk.cells.push(at);
        if walk.cells.len() > cost.grid().len() {
            anyhow::bail!("the tiles' arrows loop");
        }
    }
    Ok(walk)
}

fn draw(
    a: &Args,
    cost: &CostField,
    graph: &SectorGraph,
    tiles: &FlowTiles,
    waypoints: &[UVec2],
    walked: &[UVec2],
    png: &str,
) -> Result<()> {
    let scale = a.scale.map_or_else(
        || Canvas::auto_scale(cost.width(), cost.height(), 1024),
        |s| s as u32,
    );
    let mut c = Canvas::new(cost.width(), cost.height(), scale)?;
    c.terrain(cost);
    c.sector_lines(graph.side(), SECTOR_RGB);
    let block = c.arrow_block(9);
    c.arrows(
        |cell| tiles.flow_byte(cell).and_then(Dir8::from_index),
        block,
    );
    let r = (2.0 / scale as f32).max(0.3);
    for n in 0..graph.node_count() {
        c.disc(graph.node_cell(n).as_vec2() + 0.5, r, PORTAL_RGB, false);
    }
    c.path(walked);
    for w in waypoints {
        c.disc(w.as_vec2() + 0.5, r * 1.6, WAYPOINT_RGB, true);
    }
    c.disc(a.from.as_vec2() + 0.5, 0.45, UNIT_RGB[1], true);
    c.goals(&[a.to]);
    c.legend(&[
        (SECTOR_RGB, format!("sectors of {} cells", graph.side())),
        (PORTAL_RGB, "portal cells".to_owned()),
        (WAYPOINT_RGB, "route waypoints".to_owned()),
        (PATH_RGB, "following the tiles' arrows".to_owned()),
        (UNIT_RGB[1], "start".to_owned()),
        (GOAL_RGB, "goal".to_owned()),
    ]);
    c.save_png(png)
}
