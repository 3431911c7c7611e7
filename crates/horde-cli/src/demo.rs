//! `horde` / `horde demo`: one field against per-unit A* on the built-in map: one field for 200
//! units against 200 A* queries, then the 200 units follow the arrows to the goal.

use std::process::ExitCode;

use anyhow::{Result, bail};
use glam::UVec2;
use horde::{CostField, CostModel, FlowField, IntegrationBuilder, IntegrationField};

use crate::measure::{Report, central_goal, measure, reachable_starts};
use crate::render::{
    ARROW_RGB, Canvas, GOAL_RGB, GROUND_RGB, GifWriter, Layer, Palette, UNIT_RGB, WALL_RGB,
    field_picture, indexed_disc, terrain_rgb,
};
use crate::util::{bytes, progress, reveal_after_a_second};

/// Sub-frames drawn between two cells of a unit's walk.
const SUBFRAMES: usize = 3;

/// The units' walk as a GIF over the terrain and the arrows, 4 pixels per cell, 20 frames a second.
fn write_gif(
    cost: &horde::CostField,
    flow: &FlowField,
    goal: glam::UVec2,
    history: &[Vec<glam::UVec2>],
    path: &str,
) -> Result<usize> {
    let scale = 4;
    let mut background = Canvas::new(cost.width(), cost.height(), scale)?;
    background.terrain(cost);
    background.flow(flow, background.arrow_block(8));
    background.goals(&[goal]);
    let mut specials = vec![
        WALL_RGB,
        GROUND_RGB,
        ARROW_RGB,
        GOAL_RGB,
        UNIT_RGB[0],
        UNIT_RGB[1],
    ];
    specials.extend([3u8, 6].map(terrain_rgb));
    let palette = Palette::new(&specials);
    let base = palette.quantize(&background.rgba());
    let (w, h) = (background.width(), background.height());
    let mut gif = GifWriter::create(path, w, h, 20, palette)?;
    let moving = gif.palette().index(UNIT_RGB[0]);
    let arrived = gif.palette().index(UNIT_RGB[1]);
    let frames = (history.len() - 1) * SUBFRAMES + 1;
    let pb = progress(frames as u64, "demo.gif");
    let started = std::time::Instant::now();
    let s = scale as f32;
    for f in 0..frames {
        let (t, k) = (f / SUBFRAMES, f % SUBFRAMES);
        let mut pixels = base.clone();
        for (u, &from) in history[t].iter().enumerate() {
            let to = history.get(t + 1).map_or(from, |next| next[u]);
            let p = from
                .as_vec2()
                .lerp(to.as_vec2(), k as f32 / SUBFRAMES as f32)
                + 0.5;
            let colour = if flow.is_goal(from) { arrived } else { moving };
            indexed_disc(&mut pixels, w, p * s, 0.4 * s, colour);
        }
        gif.frame(&pixels)?;
        pb.inc(1);
        reveal_after_a_second(&pb, started);
    }
    pb.finish_and_clear();
    let frames = gif.frames();
    gif.finish()?;
    Ok(frames)
}

#[derive(clap::Args)]
pub struct Args {
    /// Number of units, 1 to 100,000.
    #[arg(long, default_value_t = 200, value_parser = crate::util::count_in(1, crate::util::MAX_UNITS))]
    pub units: usize,
    /// Folder for demo.png (all layers) and demo.gif (the units moving); made if missing (its
    /// parent must exist).
    #[arg(long, default_value = "horde-demo")]
    pub out_dir: String,
    /// Skip the pictures.
    #[arg(long)]
    pub no_pictures: bool,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            units: 200,
            out_dir: "horde-demo".to_owned(),
            no_pictures: false,
        }
    }
}

pub fn run(a: &Args) -> Result<ExitCode> {
    if !a.no_pictures {
        crate::util::check_output_dir(&a.out_dir, "--out-dir")?;
    }
    let cost = horde::maps::demo_map();
    let model = CostModel::TenFourteen;
    let goal = central_goal(&cost).expect("the demo map has walkable cells");
    let cells = cost.grid().len();
    let walkable = cost.walkable_count();
    outln!(
        "horde demo: built-in map {}x{}, {walkable} walkable cells ({:.1} %), goal ({}, {}), {} units",
        cost.width(),
        cost.height(),
        100.0 * walkable as f64 / cells as f64,
        goal.x,
        goal.y,
        a.units
    );
    let n = a.units.max(1);
    let r = measure(&cost, "builtin", goal, model, &[n], Some(31), false)?;
    print_comparison(&r, n, cells)?;

    // The units: each reads only the arrow under its feet.
    let mut builder = IntegrationBuilder::new();
    let field = builder.build(&cost, &[goal], model)?;
    let mut flow = FlowField::new(*cost.grid());
    builder.flow_into(&mut flow)?;
    let starts = reachable_starts(&field, n, 11);
    let walk = walk(&cost, &flow, model, &starts)?;
    let exact = starts
        .iter()
        .zip(&walk.spent)
        .all(|(s, &c)| field.get(*s) == Some(c as u32));
    let mean_steps = walk.arrived_at.iter().sum::<usize>() as f64 / n as f64;
    outln!(
        "units                 {n} of {n} arrived following arrows alone: {mean_steps:.1} steps on average, the last after {}",
        walk.ticks
    );
    outln!(
        "                      every unit's path cost equals its integration value: {}",
        if exact { "yes" } else { "NO" }
    );
    if !exact {
        bail!("a unit's path cost differs from its integration value");
    }
    if !a.no_pictures {
        write_pictures(
            &a.out_dir,
            &cost,
            &field,
            &flow,
            goal,
            &starts,
            &walk.history,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One field against `n` A* queries, and what the layers cost in memory.
fn print_comparison(r: &Report, n: usize, cells: usize) -> Result<()> {
    let astar_total = r.table[0].1;
    outln!();
    outln!("                      cells settled        time");
    outln!(
        "one flow field        {:>13}   {:>9.1} µs  (integration {:.1} + flow {:.1})",
        r.field_settled,
        r.field_ns / 1e3,
        r.integration_ns / 1e3,
        r.flow_ns / 1e3
    );
    outln!(
        "{n} A* queries {:>9}   {:>9.1} µs  ({:.0} cells and {:.1} µs per unit)",
        (r.astar_settled_mean * n as f64).round() as u64,
        astar_total / 1e3,
        r.astar_settled_mean,
        r.astar_ns_per_query / 1e3
    );
    outln!(
        "break-even            {:.1} units: from there on one field is cheaper than A* per unit",
        r.break_even()
    );
    outln!();
    outln!(
        "memory                cost field {} (1 B/cell), integration {} (4 B/cell), flow field {} (1 B/cell)",
        bytes(cells),
        bytes(cells * 4),
        bytes(cells)
    );
    Ok(())
}

/// The units' walk along the arrows, cell by cell.
struct Walk {
    /// Every unit's cell after each tick, the starts first.
    history: Vec<Vec<UVec2>>,
    /// What each unit's path cost.
    spent: Vec<u64>,
    /// The tick each unit arrived at.
    arrived_at: Vec<usize>,
    /// Ticks until the last arrived.
    ticks: usize,
}

/// Walk every unit from its start along the arrows until all stand on the goal; an error if
/// that takes more ticks than the map has cells (the field would have a loop).
fn walk(cost: &CostField, flow: &FlowField, model: CostModel, starts: &[UVec2]) -> Result<Walk> {
    let cells = cost.grid().len();
    let mut units = starts.to_vec();
    let mut walk = Walk {
        history: vec![units.clone()],
        spent: vec![0; units.len()],
        arrived_at: vec![0; units.len()],
        ticks: 0,
    };
    while units.iter().any(|&u| !flow.is_goal(u)) {
        walk.ticks += 1;
        if walk.ticks > cells {
            bail!("units did not arrive within {cells} steps: the flow field has a loop");
        }
        for (k, u) in units.iter_mut().enumerate() {
            if let Some(dir) = flow.dir(*u) {
                walk.spent[k] += model.step(dir, cost.get(*u).expect("on the map")) as u64;
                *u = cost
                    .grid()
                    .neighbour(*u, dir)
                    .expect("arrows stay on the map");
                if flow.is_goal(*u) {
                    walk.arrived_at[k] = walk.ticks;
                }
            }
        }
        walk.history.push(units.clone());
    }
    Ok(walk)
}

/// demo.png (every layer, the units at their starts) and demo.gif (the walk) in `out_dir`.
fn write_pictures(
    out_dir: &str,
    cost: &CostField,
    field: &IntegrationField,
    flow: &FlowField,
    goal: UVec2,
    starts: &[UVec2],
    history: &[Vec<UVec2>],
) -> Result<()> {
    crate::util::make_output_dir(out_dir, "--out-dir")?;
    let png = format!("{out_dir}/demo.png");
    let layers = [
        Layer::Terrain,
        Layer::Integration,
        Layer::Flow,
        Layer::Goals,
    ];
    let (mut picture, mut legend) = field_picture(cost, field, flow, &[goal], &layers, 6)?;
    for s in starts {
        picture.disc(s.as_vec2() + 0.5, 0.35, UNIT_RGB[0], true);
    }
    legend.insert(
        legend.len() - 1,
        (
            UNIT_RGB[0],
            format!("{} units at their starts", starts.len()),
        ),
    );
    picture.legend(&legend);
    picture.save_png(&png)?;
    let gif = format!("{out_dir}/demo.gif");
    let frames = write_gif(cost, flow, goal, history, &gif)?;
    outln!();
    outln!("pictures              {png} (all layers, units at their starts)");
    outln!("                      {gif} ({frames} frames: the units following the arrows)");
    Ok(())
}
