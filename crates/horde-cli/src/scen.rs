//! `horde scen`: every scenario of a Moving AI .scen file against its optimal length.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use glam::UVec2;
use horde::io::Scenario;
use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
use horde::{AStar, CostField, CostModel};

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
    /// Answer every query through sectors and portals: the route, the flow-field tiles along
    /// it, and following their arrows to the goal; report how far above the optimum that is.
    #[arg(long)]
    route: bool,
    /// Weigh the route search's heuristic (1 to 4; 1 is plain A*): routes at most that many
    /// times the cheapest through the portal graph, found with far fewer expansions.
    #[arg(long, default_value_t = 1.0, value_parser = crate::util::number_in(1.0, 4.0, false))]
    weight: f32,
    /// With `--route`: answer the same queries, in the same run, with horde's own A* and with
    /// the `pathfinding` crate's `astar` (a build with `--features peers`), and report the
    /// queries per second of each and the speed-ups. The three take turns, 64 queries at a
    /// time, so a change in the machine's speed weighs on all three alike.
    #[arg(long, requires = "route")]
    compare: bool,
    /// Sector side for `--route`, 8 to 256.
    #[arg(long, default_value_t = horde::sectors::DEFAULT_SECTOR_SIDE as usize,
          value_parser = crate::util::count_in(
              horde::sectors::MIN_SECTOR_SIDE as u64, horde::sectors::MAX_SECTOR_SIDE as u64))]
    sector: usize,
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
    if a.route {
        return run_routes(a, &cost, &scen);
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

/// `--route`: every query through the sector graph and its tiles.
fn run_routes(a: &Args, cost: &CostField, scen: &[Scenario]) -> Result<ExitCode> {
    let model = CostModel::Octile;
    let started = Instant::now();
    let graph = SectorGraph::build(cost, a.sector as u32, model)?;
    let build_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut search = RouteSearch::new();
    search.set_weight(a.weight)?;
    let (mut excess, mut unreached, mut below) = (Vec::new(), 0usize, 0usize);
    let mut first_bad = Vec::new();
    let mut tiles_built = 0usize;
    // One set of tiles, sent to each query's goal in turn, so its buffers are reused.
    let mut tiles: Option<FlowTiles> = None;
    let pb = progress(scen.len() as u64, "scenarios");
    // With `--compare` the three ways take turns, a chunk of queries each, so the machine's
    // drifting speed weighs on them alike; the time of each is summed over its turns.
    let chunk = if a.compare {
        COMPARE_CHUNK
    } else {
        scen.len().max(1)
    };
    let mut peers = a.compare.then(PeerClock::default);
    if let Some(clock) = &mut peers {
        // Refused at once by a build without the peers.
        compare_searches(a, cost, &[], clock)?;
    }
    let mut secs = 0.0;
    let begun = Instant::now();
    for (c, part) in scen.chunks(chunk).enumerate() {
        let started = Instant::now();
        for (k, s) in part.iter().enumerate() {
            let k = c * chunk + k;
            let from = UVec2::new(s.start.0, s.start.1);
            let to = UVec2::new(s.goal.0, s.goal.1);
            let walked = match search.route(&graph, cost, from, to) {
                Ok(Some(route)) => {
                    let tiles = match &mut tiles {
                        Some(t) => {
                            t.set_goal(&graph, cost, to)?;
                            t
                        }
                        None => tiles.insert(FlowTiles::new(&graph, cost, to)?),
                    };
                    tiles_built += tiles.extend_reusing(&graph, cost, &route, &search)?;
                    crate::route::follow(cost, tiles, from, model)
                        .ok()
                        .map(|w| crate::route::units(model, w.cost))
                }
                Ok(None) => None,
                Err(e) => bail!("{}:{}: {e}", a.scen, s.line),
            };
            match walked {
                None => {
                    unreached += 1;
                    if first_bad.len() < 10 {
                        first_bad.push(format!(
                            "line {}: ({},{}) -> ({},{}) not reached (optimal {})",
                            s.line, s.start.0, s.start.1, s.goal.0, s.goal.1, s.optimal
                        ));
                    }
                }
                Some(got) => {
                    if got < s.optimal - s.tolerance() {
                        below += 1;
                        if first_bad.len() < 10 {
                            first_bad.push(format!(
                                "line {}: ({},{}) -> ({},{}) cost {got:.8} below the optimum {}",
                                s.line, s.start.0, s.start.1, s.goal.0, s.goal.1, s.optimal
                            ));
                        }
                    }
                    if s.optimal > 0.0 {
                        excess.push((got / s.optimal - 1.0).max(0.0));
                    }
                }
            }
            if k % 64 == 0 {
                pb.set_position(k as u64);
                reveal_after_a_second(&pb, begun);
            }
        }
        secs += started.elapsed().as_secs_f64();
        if let Some(clock) = &mut peers {
            compare_searches(a, cost, part, clock)?;
        }
    }
    pb.finish_and_clear();
    let qps = scen.len() as f64 / secs.max(1e-9);
    let peers = peers.map(|clock| clock.rates(scen.len()));
    excess.sort_by(f64::total_cmp);
    let mean = excess.iter().sum::<f64>() / excess.len().max(1) as f64;
    let p95 = excess
        .get((excess.len() * 95 / 100).min(excess.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);
    let max = excess.last().copied().unwrap_or(0.0);
    let mismatches = unreached + below;
    if a.json {
        let v = serde_json::json!({
            "map": a.map,
            "scen": a.scen,
            "queries": scen.len(),
            "mismatches": mismatches,
            "unreached": unreached,
            "below_optimum": below,
            "mean_excess": mean,
            "p95_excess": p95,
            "max_excess": max,
            "queries_per_second": qps,
            "seconds": secs,
            "sector": a.sector,
            "weight": a.weight,
            "build_ms": build_ms,
            "tiles_per_query": tiles_built as f64 / scen.len() as f64,
        });
        let mut v = v;
        if let Some(p) = &peers {
            v["astar_qps"] = serde_json::json!(p.astar_qps);
            v["pathfinding_astar_qps"] = serde_json::json!(p.pathfinding_qps);
            v["speedup_vs_astar"] = serde_json::json!(qps / p.astar_qps);
            v["speedup_vs_pathfinding"] = serde_json::json!(qps / p.pathfinding_qps);
        }
        outln!("{v}");
    } else {
        outln!("map          {}", a.map);
        outln!(
            "queries      {} through sectors of side {}",
            scen.len(),
            a.sector
        );
        outln!("graph        built in {build_ms:.1} ms");
        outln!("unreached    {unreached}");
        outln!("below opt.   {below}");
        outln!(
            "excess       mean {:.3} %, 95th percentile {:.3} %, worst {:.3} %",
            100.0 * mean,
            100.0 * p95,
            100.0 * max
        );
        outln!("queries/s    {qps:.0} (route, tiles and following the arrows)");
        outln!("tiles/q      {:.1}", tiles_built as f64 / scen.len() as f64);
        if let Some(p) = &peers {
            outln!(
                "vs A*        {:.0} queries/s with horde's A*: {:.1}x",
                p.astar_qps,
                qps / p.astar_qps
            );
            outln!(
                "vs peer      {:.0} queries/s with pathfinding::astar: {:.1}x",
                p.pathfinding_qps,
                qps / p.pathfinding_qps
            );
        }
        for b in &first_bad {
            outln!("  bad        {b}");
        }
    }
    Ok(if mismatches == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Queries per second of the plain searches `--compare` measures beside the routes.
struct Peers {
    astar_qps: f64,
    pathfinding_qps: f64,
}

/// Queries `--compare` answers one way before the next way takes its turn.
const COMPARE_CHUNK: usize = 64;

/// Seconds each plain search has spent so far, over its turns.
#[derive(Default)]
struct PeerClock {
    #[cfg_attr(not(feature = "peers"), allow(dead_code))]
    astar: AStar,
    astar_secs: f64,
    pathfinding_secs: f64,
}

impl PeerClock {
    fn rates(&self, queries: usize) -> Peers {
        Peers {
            astar_qps: queries as f64 / self.astar_secs.max(1e-9),
            pathfinding_qps: queries as f64 / self.pathfinding_secs.max(1e-9),
        }
    }
}

/// `--compare`: the same queries through horde's A* and `pathfinding::astar`, each checked
/// against the published optimum.
#[cfg(feature = "peers")]
fn compare_searches(
    a: &Args,
    cost: &CostField,
    scen: &[Scenario],
    clock: &mut PeerClock,
) -> Result<()> {
    let model = CostModel::Octile;
    let check = |s: &Scenario, raw: Option<u32>, who: &str| -> Result<()> {
        let got = raw.map_or(f64::INFINITY, |r| model.to_cost(r));
        if (got - s.optimal).abs() > s.tolerance() {
            bail!(
                "{}:{}: {who} found {got} where the optimum is {}",
                a.scen,
                s.line,
                s.optimal
            );
        }
        Ok(())
    };
    let cells = |s: &Scenario| {
        (
            UVec2::new(s.start.0, s.start.1),
            UVec2::new(s.goal.0, s.goal.1),
        )
    };
    let started = Instant::now();
    for s in scen {
        let (from, to) = cells(s);
        let raw = clock.astar.search(cost, from, to, model)?;
        check(s, raw, "horde's A*")?;
    }
    clock.astar_secs += started.elapsed().as_secs_f64();
    let started = Instant::now();
    for s in scen {
        let (from, to) = cells(s);
        check(
            s,
            crate::peers::pathfinding_astar(cost, from, to, model),
            "pathfinding::astar",
        )?;
    }
    clock.pathfinding_secs += started.elapsed().as_secs_f64();
    Ok(())
}

#[cfg(not(feature = "peers"))]
fn compare_searches(_: &Args, _: &CostField, _: &[Scenario], _: &mut PeerClock) -> Result<()> {
    bail!(
        "--compare needs the pathfinding crate: build with --features peers \
(cargo run --release -p horde-cli --features peers -- scen ... --route --compare)"
    )
}
