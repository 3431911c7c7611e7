//! `horde field`: build the fields for one or more goals and dump them as text.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use glam::UVec2;
use horde::{CostModel, FlowField, IntegrationBuilder};

use crate::render::{Canvas, Layer, field_picture};
use crate::util::{check_walkable, load_map, parse_cell, write_file};

#[derive(clap::Args)]
pub struct Args {
    /// A Moving AI .map file (digits 1-9 = terrain cost), a greyscale PNG, or `builtin`.
    map: String,
    /// A goal cell; repeat for several goals (each cell heads for the nearest).
    #[arg(long = "goal", value_name = "X,Y", required = true, value_parser = parse_cell)]
    goals: Vec<UVec2>,
    /// Step costs: `10-14` (10 straight, 14 diagonal) or `octile` (1 and √2).
    #[arg(long, default_value = "10-14")]
    model: CostModel,
    /// Write the integration field: one row per line, `#` wall, `inf` unreachable.
    #[arg(long, value_name = "FILE")]
    dump_integration: Option<String>,
    /// Write the flow field: digits 0-7 (0 = N, clockwise), `G` goal, `#` wall, `-` unreachable.
    #[arg(long, value_name = "FILE")]
    dump_flow: Option<String>,
    /// Draw the fields as a PNG.
    #[arg(long, value_name = "FILE.png")]
    png: Option<String>,
    /// Layers of the picture.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "terrain,integration,flow,goals"
    )]
    layers: Vec<Layer>,
    /// Pixels per cell (default: about 1024 pixels across).
    #[arg(long)]
    scale: Option<u32>,
}

pub fn run(a: &Args) -> Result<ExitCode> {
    let (cost, name) = load_map(&a.map)?;
    for &g in &a.goals {
        check_walkable(&cost, g, "goal")?;
    }
    let mut builder = IntegrationBuilder::new();
    let started = Instant::now();
    let integration = builder.build(&cost, &a.goals, a.model)?;
    let t_int = started.elapsed();
    let mut flow = FlowField::new(*cost.grid());
    let started = Instant::now();
    builder.flow_into(&mut flow)?;
    let t_flow = started.elapsed();
    let reachable = integration
        .values()
        .iter()
        .filter(|&&v| v != horde::UNREACHABLE)
        .count();
    let max = integration
        .values()
        .iter()
        .filter(|&&v| v != horde::UNREACHABLE)
        .max()
        .map_or(0.0, |&v| a.model.to_cost(v));
    outln!("map        {name} ({}x{})", cost.width(), cost.height());
    outln!("goals      {}", a.goals.len());
    outln!("model      {}", a.model.name());
    outln!(
        "reachable  {reachable} of {} walkable cells",
        cost.walkable_count()
    );
    outln!("max cost   {max}");
    outln!(
        "build      integration {:.3} ms, flow {:.3} ms",
        t_int.as_secs_f64() * 1e3,
        t_flow.as_secs_f64() * 1e3
    );
    if let Some(path) = &a.dump_integration {
        write_file(path, &horde::io::integration_text(&cost, &integration))?;
        outln!("wrote      {path}");
    }
    if let Some(path) = &a.dump_flow {
        write_file(path, &horde::io::flow_text(&flow))?;
        outln!("wrote      {path}");
    }
    if let Some(path) = &a.png {
        let scale = a
            .scale
            .unwrap_or_else(|| Canvas::auto_scale(cost.width(), cost.height(), 1024));
        let started = Instant::now();
        let (mut picture, legend) =
            field_picture(&cost, &integration, &flow, &a.goals, &a.layers, scale)?;
        picture.legend(&legend);
        picture.save_png(path)?;
        outln!(
            "wrote      {path} ({}x{} px, {:.0} ms)",
            picture.width(),
            picture.height(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(ExitCode::SUCCESS)
}
