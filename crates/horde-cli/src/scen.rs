//! `horde scen`: every scenario of a Moving AI .scen file against its optimal length.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use glam::UVec2;
use horde::{AStar, CostModel};

use crate::util::{progress, reveal_after_a_second};

/// How a length is matched, as `horde scen` prints it.
const TOLERANCE_RULE: &str = "|cost - optimal| <= max(1e-4, one unit of the precision printed: \
the last decimal, or the 6th significant digit if that is finer)";

#[derive(clap::Args)]
pub struct Args {
    /// The Moving AI .map file.
    map: String,
    /// Its .scen file.
    scen: String,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &Args) -> Result<ExitCode> {
    let cost = horde::io::read_map(&a.map)?;
    let scen = horde::io::read_scen(&a.scen)?;
    if scen.is_empty() {
        bail!(
            "{}: no scenarios (one query per line is expected after the version line)",
            horde::io::shown_path(std::path::Path::new(&a.scen))
        );
    }
    for s in &scen {
        if s.map_size != (cost.width(), cost.height()) {
            bail!(
                "{}:{}: scenario is for a {}x{} map but {} is {}x{}",
                a.scen,
                s.line,
                s.map_size.0,
                s.map_size.1,
                a.map,
                cost.width(),
                cost.height()
            );
        }
    }
    let model = CostModel::Octile;
    let mut astar = AStar::new();
    let (mut mismatches, mut max_error, mut settled) = (0usize, 0f64, 0usize);
    let mut first_bad = Vec::new();
    let pb = progress(scen.len() as u64, "scenarios");
    let started = Instant::now();
    for (k, s) in scen.iter().enumerate() {
        let from = UVec2::new(s.start.0, s.start.1);
        let to = UVec2::new(s.goal.0, s.goal.1);
        let got = match astar.search(&cost, from, to, model) {
            Ok(Some(raw)) => model.to_cost(raw),
            Ok(None) => f64::INFINITY,
            Err(e) => bail!("{}:{}: {e}", a.scen, s.line),
        };
        settled += astar.settled();
        let err = (got - s.optimal).abs();
        max_error = max_error.max(err);
        // NaN (no path where one is published) is a mismatch too.
        if err.is_nan() || err > s.tolerance() {
            mismatches += 1;
            if first_bad.len() < 10 {
                first_bad.push(format!(
                    "line {}: ({},{}) -> ({},{}) got {got:.8}, optimal {} (tolerance {:.0e})",
                    s.line,
                    s.start.0,
                    s.start.1,
                    s.goal.0,
                    s.goal.1,
                    s.optimal,
                    s.tolerance()
                ));
            }
        }
        if k % 64 == 0 {
            pb.set_position(k as u64);
            reveal_after_a_second(&pb, started);
        }
    }
    pb.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    let qps = scen.len() as f64 / secs.max(1e-9);
    if a.json {
        let v = serde_json::json!({
            "map": a.map,
            "scen": a.scen,
            "queries": scen.len(),
            "mismatches": mismatches,
            "max_error": max_error,
            "queries_per_second": qps,
            "settled_cells_mean": settled as f64 / scen.len().max(1) as f64,
            "seconds": secs,
            "tolerance_rule": TOLERANCE_RULE,
        });
        outln!("{v}");
    } else {
        outln!("map          {}", a.map);
        outln!("queries      {}", scen.len());
        outln!("mismatches   {mismatches}");
        outln!("match        {TOLERANCE_RULE}");
        outln!("max error    {max_error:.3e}");
        outln!("queries/s    {qps:.0}");
        outln!(
            "settled/q    {:.0}",
            settled as f64 / scen.len().max(1) as f64
        );
        for b in &first_bad {
            outln!("  mismatch   {b}");
        }
    }
    Ok(if mismatches == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
