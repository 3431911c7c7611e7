//! `horde path`: one A* query.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use glam::UVec2;
use horde::{AStar, CostModel};

use crate::render::{Canvas, GOAL_RGB, PATH_RGB, UNIT_RGB};
use crate::util::{check_walkable, load_map, parse_cell};

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
    /// Step costs: `10-14` or `octile`.
    #[arg(long, default_value = "10-14")]
    model: CostModel,
    /// Draw the terrain and the path as a PNG.
    #[arg(long, value_name = "FILE.png")]
    png: Option<String>,
    /// Pixels per cell, 1 to 64 (default: about 1024 pixels across).
    #[arg(long, value_parser = crate::util::count_in(1, crate::util::MAX_SCALE))]
    scale: Option<usize>,
}

pub fn run(a: &Args) -> Result<ExitCode> {
    if let Some(path) = &a.png {
        crate::util::check_output(path, "--png")?;
    }
    let (cost, name) = load_map(&a.map)?;
    check_walkable(&cost, a.from, "--from")?;
    check_walkable(&cost, a.to, "--to")?;
    let mut astar = AStar::new();
    let started = Instant::now();
    let found = astar.find_path(&cost, a.from, a.to, a.model)?;
    let took = started.elapsed();
    outln!("map        {name} ({}x{})", cost.width(), cost.height());
    outln!("model      {}", a.model.name());
    outln!("settled    {} cells", astar.settled());
    outln!("time       {:.3} ms", took.as_secs_f64() * 1e3);
    match found {
        None => {
            outln!(
                "path       none: ({}, {}) cannot reach ({}, {})",
                a.from.x,
                a.from.y,
                a.to.x,
                a.to.y
            );
            Ok(ExitCode::from(1))
        }
        Some(p) => {
            let cost_text = match a.model {
                CostModel::TenFourteen => p.cost.to_string(),
                CostModel::Octile => format!("{:.6}", a.model.to_cost(p.cost)),
            };
            outln!("cost       {cost_text}");
            outln!("steps      {}", p.cells.len() - 1);
            let cells: Vec<String> = p.cells.iter().map(|c| format!("{},{}", c.x, c.y)).collect();
            outln!("path       {}", cells.join(" "));
            if let Some(png) = &a.png {
                let scale = a.scale.map_or_else(
                    || Canvas::auto_scale(cost.width(), cost.height(), 1024),
                    |s| s as u32,
                );
                let mut c = Canvas::new(cost.width(), cost.height(), scale)?;
                c.terrain(&cost);
                c.path(&p.cells);
                c.disc(a.from.as_vec2() + 0.5, 0.45, UNIT_RGB[1], true);
                c.goals(&[a.to]);
                c.legend(&[
                    (PATH_RGB, format!("A* path, cost {cost_text}")),
                    (UNIT_RGB[1], "start".to_owned()),
                    (GOAL_RGB, "goal".to_owned()),
                ]);
                c.save_png(png)?;
                outln!("wrote      {png}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
