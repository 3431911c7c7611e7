//! `horde field`: build the fields for one or more goals and dump them as text.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use glam::UVec2;
use horde::{CostEdit, CostField, CostModel, FieldRepairer, IntegrationBuilder, LiveField};

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
    /// Pixels per cell, 1 to 64 (default: about 1024 pixels across).
    #[arg(long, value_parser = crate::util::count_in(1, crate::util::MAX_SCALE))]
    scale: Option<usize>,
    /// After the first build, set a rectangle (both corners inclusive) to COST (1-254 terrain,
    /// 255 wall) and repair the fields in place; repeat for several edits, applied in order.
    #[arg(long = "edit", value_name = "X0,Y0,X1,Y1,COST", value_parser = parse_edit)]
    edits: Vec<CostEdit>,
    /// After the edits, move the goal(s) to these cells (repeat for several) and update the
    /// fields.
    #[arg(long = "move-goal", value_name = "X,Y", value_parser = parse_cell)]
    move_goals: Vec<UVec2>,
}

pub use horde_cli::args::parse_edit;

pub fn run(a: &Args) -> Result<ExitCode> {
    let outputs = [
        (&a.dump_integration, "--dump-integration"),
        (&a.dump_flow, "--dump-flow"),
        (&a.png, "--png"),
    ];
    for (path, flag) in outputs {
        if let Some(path) = path {
            crate::util::check_output(path, flag)?;
        }
    }
    let (mut cost, name) = load_map(&a.map)?;
    for &g in &a.goals {
        check_walkable(&cost, g, "--goal")?;
    }
    let mut repairer = FieldRepairer::new();
    let started = Instant::now();
    let mut live = LiveField::build(&cost, &a.goals, a.model, &mut repairer)?;
    let t_build = started.elapsed();
    let mut lines = apply_edits(a, &mut cost, &mut live, &mut repairer)?;
    let mut goals = a.goals.clone();
    if !a.move_goals.is_empty() {
        lines.push(move_goals(a, &cost, &mut live, &mut repairer)?);
        goals = a.move_goals.clone();
    }
    for g in &goals {
        if !cost.is_walkable(*g) {
            lines.push(format!(
                "warning    goal ({}, {}) is now a wall: it leads nowhere until opened again",
                g.x, g.y
            ));
        }
    }
    let (t_int, t_flow) = one_shot_times(&cost, &goals, a.model)?;
    let integration = live.integration();
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
    outln!("goals      {}", goals.len());
    outln!("model      {}", a.model.name());
    outln!(
        "reachable  {reachable} of {} walkable cells",
        cost.walkable_count()
    );
    outln!("max cost   {max}");
    outln!(
        "build      integration {:.3} ms, flow {:.3} ms",
        t_int.unwrap_or(t_build).as_secs_f64() * 1e3,
        t_flow.as_secs_f64() * 1e3
    );
    for line in &lines {
        outln!("{line}");
    }
    write_outputs(a, &cost, &live, &goals)?;
    Ok(ExitCode::SUCCESS)
}

/// Apply each `--edit` to the map and repair the fields after it: a report line per edit.
fn apply_edits(
    a: &Args,
    cost: &mut CostField,
    live: &mut LiveField,
    repairer: &mut FieldRepairer,
) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for (k, edit) in a.edits.iter().enumerate() {
        let CostEdit::Rect { min, max, cost: c } = *edit else {
            unreachable!("the parser makes rectangles")
        };
        let changed = cost
            .apply_edits(&[*edit])
            .map_err(|e| anyhow::anyhow!("--edit #{} ({}): {e}", k + 1, describe(edit)))?;
        let started = Instant::now();
        let stats = live.repair(cost, &changed, repairer)?;
        lines.push(format!(
            "edit       ({}, {})..=({}, {}) cost {c}: {} cells changed, {} relabelled, {} arrows, {:.3} ms{}",
            min.x,
            min.y,
            max.x,
            max.y,
            changed.len(),
            stats.relabelled,
            stats.arrows,
            started.elapsed().as_secs_f64() * 1e3,
            if stats.rebuilt { " (rebuilt)" } else { "" }
        ));
    }
    Ok(lines)
}

/// Move the goals to `--move-goal`'s cells and repair the fields: the report line.
fn move_goals(
    a: &Args,
    cost: &CostField,
    live: &mut LiveField,
    repairer: &mut FieldRepairer,
) -> Result<String> {
    for &g in &a.move_goals {
        check_walkable(cost, g, "--move-goal")?;
    }
    let started = Instant::now();
    let stats = live.move_goals(cost, &a.move_goals, repairer)?;
    Ok(format!(
        "move goal  to {}: {} relabelled, {:.3} ms{}",
        a.move_goals
            .iter()
            .map(|g| format!("({}, {})", g.x, g.y))
            .collect::<Vec<_>>()
            .join(" "),
        stats.relabelled,
        started.elapsed().as_secs_f64() * 1e3,
        if stats.rebuilt { " (rebuilt)" } else { "" }
    ))
}

/// One-shot timings of the two layers for the walkable goals, for the report: the integration
/// (`None` when no goal is walkable) and the flow.
fn one_shot_times(
    cost: &CostField,
    goals: &[UVec2],
    model: CostModel,
) -> Result<(Option<Duration>, Duration)> {
    let active: Vec<UVec2> = goals
        .iter()
        .copied()
        .filter(|&g| cost.is_walkable(g))
        .collect();
    if active.is_empty() {
        return Ok((None, Duration::ZERO));
    }
    let mut builder = IntegrationBuilder::new();
    let started = Instant::now();
    builder.build(cost, &active, model)?;
    let t_int = started.elapsed();
    let mut flow = horde::FlowField::new(*cost.grid());
    let started = Instant::now();
    builder.flow_into(&mut flow)?;
    Ok((Some(t_int), started.elapsed()))
}

/// The dumps and the picture the flags ask for.
fn write_outputs(a: &Args, cost: &CostField, live: &LiveField, goals: &[UVec2]) -> Result<()> {
    let (integration, flow) = (live.integration(), live.flow());
    if let Some(path) = &a.dump_integration {
        write_file(path, &horde::io::integration_text(cost, integration))?;
        outln!("wrote      {path}");
    }
    if let Some(path) = &a.dump_flow {
        write_file(path, &horde::io::flow_text(flow))?;
        outln!("wrote      {path}");
    }
    if let Some(path) = &a.png {
        let scale = a.scale.map_or_else(
            || Canvas::auto_scale(cost.width(), cost.height(), 1024),
            |s| s as u32,
        );
        let started = Instant::now();
        let (mut picture, legend) =
            field_picture(cost, integration, flow, goals, &a.layers, scale)?;
        picture.legend(&legend);
        picture.save_png(path)?;
        outln!(
            "wrote      {path} ({}x{} px, {:.0} ms)",
            picture.width(),
            picture.height(),
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(())
}

fn describe(edit: &CostEdit) -> String {
    match *edit {
        CostEdit::Rect { min, max, cost } => {
            format!("{},{},{},{},{cost}", min.x, min.y, max.x, max.y)
        }
        CostEdit::Cell { cell, cost } => format!("{},{},{cost}", cell.x, cell.y),
    }
}
