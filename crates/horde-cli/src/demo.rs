//! `horde` / `horde demo`: the seed's comparison on the built-in map. One field for 200 units
//! against 200 A* queries, then the 200 units follow the arrows to the goal.

use std::process::ExitCode;

use anyhow::{Result, bail};
use horde::{CostModel, FlowField, IntegrationBuilder};

use crate::bench::{central_goal, measure, reachable_starts};
use crate::util::bytes;

#[derive(clap::Args)]
pub struct Args {
    /// Number of units.
    #[arg(long, default_value_t = 200)]
    pub units: usize,
}

impl Default for Args {
    fn default() -> Self {
        Args { units: 200 }
    }
}

pub fn run(a: &Args) -> Result<ExitCode> {
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

    // The units: each reads only the arrow under its feet.
    let mut builder = IntegrationBuilder::new();
    let field = builder.build(&cost, &[goal], model)?;
    let mut flow = FlowField::new(*cost.grid());
    builder.flow_into(&mut flow)?;
    let mut units = reachable_starts(&field, n, 11);
    let mut spent = vec![0u64; n];
    let mut ticks = 0;
    let mut arrived_at = vec![0usize; n];
    while units.iter().any(|&u| !flow.is_goal(u)) {
        ticks += 1;
        if ticks > cells {
            bail!("units did not arrive within {cells} steps: the flow field has a loop");
        }
        for (k, u) in units.iter_mut().enumerate() {
            if let Some(dir) = flow.dir(*u) {
                spent[k] += model.step(dir, cost.get(*u).expect("on the map")) as u64;
                *u = cost
                    .grid()
                    .neighbour(*u, dir)
                    .expect("arrows stay on the map");
                if flow.is_goal(*u) {
                    arrived_at[k] = ticks;
                }
            }
        }
    }
    let starts = reachable_starts(&field, n, 11);
    let exact = starts
        .iter()
        .zip(&spent)
        .all(|(s, &c)| field.get(*s) == Some(c as u32));
    let mean_steps = arrived_at.iter().sum::<usize>() as f64 / n as f64;
    outln!(
        "units                 {n} of {n} arrived following arrows alone: {mean_steps:.1} steps on average, the last after {ticks}"
    );
    outln!(
        "                      every unit's path cost equals its integration value: {}",
        if exact { "yes" } else { "NO" }
    );
    if !exact {
        bail!("a unit's path cost differs from its integration value");
    }
    Ok(ExitCode::SUCCESS)
}
