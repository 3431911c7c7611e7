//! `horde sim`: a crowd following one flow field — or several groups, each with its own goal,
//! spawn area and field (`--group`) — with the metrics, and an optional GIF.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use glam::{UVec2, Vec2};
use horde::crowd::{AgentParams, AgentState, Crowd, CrowdConfig, Group, Sampling};
use horde::{CostField, CostModel, FlowField, IntegrationBuilder};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::render::{
    ARROW_RGB, Canvas, GOAL_RGB, GROUND_RGB, GifWriter, Palette, UNIT_RGB, WALL_RGB, indexed_disc,
    terrain_rgb,
};
use horde_cli::args::{GroupSpec, Radii, numbers_in};

use crate::util::{
    MAX_AGENTS, MAX_AGENTS_PER_CELL, MAX_COLLISION_PASSES, MAX_SCALE, MAX_STEPS, check_walkable,
    count_in, load_map, number_in, parse_cell, progress, reveal_after_a_second,
};

#[derive(clap::Args)]
pub struct Args {
    /// A Moving AI .map file, a greyscale PNG, or `builtin`.
    map: String,
    /// Goal cell (or give the groups with --group).
    #[arg(long, value_name = "X,Y", value_parser = parse_cell, required_unless_present = "group")]
    goal: Option<UVec2>,
    /// A group with its own goal, spawn rectangle (corners inclusive) and number of agents:
    /// `GX,GY:X0,Y0,X1,Y1:N`. Repeat for several groups (up to 64), each following its own
    /// field; replaces --goal, --spawn and --agents.
    #[arg(long, value_name = "GX,GY:X0,Y0,X1,Y1:N", value_parser = horde_cli::args::parse_group,
          conflicts_with_all = ["goal", "spawn", "agents"])]
    group: Vec<GroupSpec>,
    /// Number of agents, spawned at random walkable cells (at most 10,000,000, and at most 4 per
    /// walkable cell of the spawn area).
    #[arg(long, default_value_t = 200, value_parser = count_in(1, MAX_AGENTS))]
    agents: usize,
    /// Most steps to run (it stops early once every agent that can arrive has; at most
    /// 1,000,000).
    #[arg(long, default_value_t = 2000, value_parser = count_in(1, MAX_STEPS))]
    steps: usize,
    /// Seconds per step, in (0, 1]; a step moves an agent at most 0.45 cell, so speed × dt must
    /// stay within that.
    #[arg(long, default_value_t = 0.05, value_parser = number_in(0.0, 1.0, true))]
    dt: f32,
    /// Random seed for the spawn positions.
    #[arg(long, default_value_t = 1, value_parser = horde_cli::args::parse_seed)]
    seed: u64,
    /// Spawn only in this rectangle of cells (corners inclusive).
    #[arg(long, value_name = "X0,Y0,X1,Y1")]
    spawn: Option<String>,
    /// Agent radius, in cells, in (0, 2]: one field serves every agent here, and wider bodies
    /// need fields of their own size class (`CostField::inflated`). Several, separated by
    /// commas (at most 16), are dealt out in turn to the agents of each group.
    #[arg(long, default_value = "0.35", value_parser = numbers_in(0.0, 2.0, true))]
    radius: Radii,
    /// Agent top speed, in cells per second, in (0, 100].
    #[arg(long, default_value_t = 4.0, value_parser = number_in(0.0, 100.0, true))]
    speed: f32,
    /// Separation weight (flow weight is 1), in [0, 100].
    #[arg(long, default_value_t = 2.0, value_parser = number_in(0.0, 100.0, false))]
    separation: f32,
    /// Extra position-based collision passes per step, 0 to 16.
    #[arg(long, default_value_t = 2, value_parser = count_in(0, MAX_COLLISION_PASSES))]
    collision_passes: usize,
    /// With several groups: how far ahead, in cells (0 to 64), an agent looks for others
    /// heading against it, to keep to its right of them (0 turns passing off).
    #[arg(long, default_value_t = horde::crowd::CrowdConfig::default().passing_range, value_parser = number_in(0.0, 64.0, false))]
    passing: f32,
    /// Read the nearest arrow instead of blending the four nearest.
    #[arg(long)]
    nearest: bool,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Write an animated GIF of the run.
    #[arg(long, value_name = "FILE.gif")]
    gif: Option<String>,
    /// GIF frames per second, 1 to 100.
    #[arg(long, default_value_t = 20, value_parser = count_in(1, 100))]
    fps: usize,
    /// Draw one GIF frame every K steps (K from 1 to 1,000,000).
    #[arg(long, default_value_t = 1, value_parser = count_in(1, MAX_STEPS))]
    every: usize,
    /// GIF pixels per cell, 1 to 64 (default: about 512 pixels across).
    #[arg(long, value_parser = count_in(1, MAX_SCALE))]
    scale: Option<usize>,
}

/// FNV-1a over the bits of every position: equal hashes mean bit-identical runs.
pub fn state_hash(positions: impl Iterator<Item = Vec2>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in positions {
        for b in
            p.x.to_bits()
                .to_le_bytes()
                .into_iter()
                .chain(p.y.to_bits().to_le_bytes())
        {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn percentile(sorted: &[f32], q: f32) -> f32 {
    if sorted.is_empty() {
        return f32::NAN;
    }
    let k = ((sorted.len() - 1) as f32 * q).round() as usize;
    sorted[k]
}

/// Set by Ctrl-C (SIGINT) during a run that writes a GIF.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
}

pub fn run(a: &Args) -> Result<ExitCode> {
    if let Some(path) = &a.gif {
        crate::util::check_output(path, "--gif")?;
        // An interrupted run still closes its GIF: the loop stops at the next step.
        ctrlc::set_handler(|| INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed))
            .map_err(|e| anyhow::anyhow!("cannot catch Ctrl-C: {e}"))?;
    }
    let (cost, name) = load_map(&a.map)?;
    let specs = groups(a)?;
    for spec in &specs {
        check_walkable(&cost, spec.goal, &spec.goal_flag)?;
    }
    if a.speed * a.dt > 0.45 {
        bail!(
            "--speed {} × --dt {} moves {} cells a step; a step moves an agent at most 0.45 cell \
             (lower --speed or --dt)",
            a.speed,
            a.dt,
            a.speed * a.dt
        );
    }
    let mut builder = IntegrationBuilder::new();
    let mut fields = Vec::with_capacity(specs.len());
    for spec in &specs {
        let integration = builder.build(&cost, &[spec.goal], CostModel::TenFourteen)?;
        let mut flow = FlowField::new(*cost.grid());
        builder.flow_into(&mut flow)?;
        fields.push((integration, flow));
    }
    let config = CrowdConfig {
        separation_weight: a.separation,
        collision_passes: a.collision_passes,
        sampling: if a.nearest {
            Sampling::Nearest
        } else {
            Sampling::Bilinear
        },
        passing_range: a.passing * cost.grid().cell_size(),
        ..CrowdConfig::default()
    };
    let mut crowd = Crowd::new(*cost.grid(), config)?;
    let total: usize = specs.iter().map(|s| s.agents).sum();
    let mut handles = Vec::with_capacity(total);
    let mut group_of = Vec::with_capacity(total);
    let mut reachable = vec![0; specs.len()];
    let mut rng = Pcg64::seed_from_u64(a.seed);
    for (k, spec) in specs.iter().enumerate() {
        let cells = spawn_cells(&cost, spec, &name)?;
        for (n, cell) in pick_cells(&cells, spec.agents, &mut rng)
            .into_iter()
            .enumerate()
        {
            let cell = cost.grid().cell(cell);
            let jitter = Vec2::new(rng.random_range(-0.15..0.15), rng.random_range(-0.15..0.15));
            let size = cost.grid().cell_size();
            let params = AgentParams {
                position: cost.grid().cell_center(cell) + jitter * size,
                radius: a.radius.0[n % a.radius.0.len()] * size,
                max_speed: a.speed * size,
                group: k as u16,
            };
            handles.push(crowd.add_agent(&cost, params)?);
            group_of.push(k as u16);
            reachable[k] += fields[k].0.get(cell).is_some() as usize;
        }
    }
    let groups: Vec<Group> = specs
        .iter()
        .zip(&fields)
        .map(|(spec, (_, flow))| Group {
            flow,
            goal: cost.grid().cell_center(spec.goal),
        })
        .collect();
    let several = !a.group.is_empty();
    let mut gif = match &a.gif {
        Some(path) => {
            let goals: Vec<UVec2> = specs.iter().map(|s| s.goal).collect();
            // One field's arrows, or none when groups follow fields of their own.
            let arrows = (!several).then_some(&fields[0].1);
            Some(SimGif::create(path, a, &cost, arrows, &goals, several)?)
        }
        None => None,
    };
    let run = run_steps(
        a, &cost, &groups, &mut crowd, &handles, &group_of, &reachable, &mut gif,
    )?;
    let frames = gif.as_ref().map_or(0, |g| g.writer.frames());
    if let Some(gif) = gif {
        gif.writer.finish()?;
    }
    report(
        a, &name, &cost, &crowd, &handles, &specs, &group_of, &reachable, &run, frames,
    )?;
    // 130: the shell's code for a run stopped by Ctrl-C.
    Ok(if interrupted() {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// One group of a run, from --group or from --goal, --spawn and --agents, with the words its
/// refusals use.
struct Spec {
    goal: UVec2,
    spawn: Option<(UVec2, UVec2)>,
    agents: usize,
    goal_flag: String,
    spawn_flag: String,
    agents_flag: String,
}

/// Most groups a run takes.
const MAX_GROUPS: usize = 64;

fn groups(a: &Args) -> Result<Vec<Spec>> {
    if a.group.is_empty() {
        let spawn = match &a.spawn {
            None => None,
            Some(text) => Some(
                horde_cli::args::parse_rect(text).map_err(|e| anyhow::anyhow!("--spawn {e}"))?,
            ),
        };
        return Ok(vec![Spec {
            goal: a.goal.expect("clap asks for --goal without --group"),
            spawn,
            agents: a.agents,
            goal_flag: "--goal".into(),
            spawn_flag: "--spawn".into(),
            agents_flag: format!("--agents {}", a.agents),
        }]);
    }
    if a.group.len() > MAX_GROUPS {
        bail!("--group: {} groups; at most {MAX_GROUPS}", a.group.len());
    }
    let total: usize = a.group.iter().map(|g| g.agents).sum();
    if total > MAX_AGENTS as usize {
        bail!("--group: {total} agents in all; at most {MAX_AGENTS}");
    }
    Ok(a.group
        .iter()
        .enumerate()
        .map(|(k, g)| {
            let label = format!("--group {} (group {k})", spec_text(g));
            Spec {
                goal: g.goal,
                spawn: Some(g.spawn),
                agents: g.agents,
                goal_flag: format!("{label}: goal"),
                spawn_flag: format!("{label}: spawn"),
                agents_flag: format!("{label}: {} agents", g.agents),
            }
        })
        .collect())
}

fn spec_text(g: &GroupSpec) -> String {
    format!(
        "{},{}:{},{},{},{}:{}",
        g.goal.x, g.goal.y, g.spawn.0.x, g.spawn.0.y, g.spawn.1.x, g.spawn.1.y, g.agents
    )
}

/// The walkable cells (indices) of a group's spawn area.
fn spawn_cells(cost: &CostField, spec: &Spec, name: &str) -> Result<Vec<usize>> {
    let area = match spec.spawn {
        None => (0, 0, u32::MAX, u32::MAX),
        Some((lo, hi)) => {
            if cost.get(hi).is_none() {
                bail!(
                    "{} {},{},{},{}: outside the {}x{} map (corners from 0,0 to {},{})",
                    spec.spawn_flag,
                    lo.x,
                    lo.y,
                    hi.x,
                    hi.y,
                    cost.width(),
                    cost.height(),
                    cost.width() - 1,
                    cost.height() - 1
                );
            }
            (lo.x, lo.y, hi.x, hi.y)
        }
    };
    let walkable: Vec<usize> = (0..cost.grid().len())
        .filter(|&i| {
            let c = cost.grid().cell(i);
            cost.costs()[i] != horde::WALL
                && (area.0..=area.2).contains(&c.x)
                && (area.1..=area.3).contains(&c.y)
        })
        .collect();
    if walkable.is_empty() {
        match spec.spawn {
            Some(_) => bail!(
                "{} {},{},{},{}: no walkable cell of {name} in the spawn area",
                spec.spawn_flag,
                area.0,
                area.1,
                area.2,
                area.3
            ),
            None => bail!("{name} has no walkable cell to spawn on"),
        }
    }
    if spec.agents > MAX_AGENTS_PER_CELL * walkable.len() {
        bail!(
            "{}: the spawn area has {} walkable cells, room for at most {} agents \
             ({MAX_AGENTS_PER_CELL} per cell)",
            spec.agents_flag,
            walkable.len(),
            MAX_AGENTS_PER_CELL * walkable.len()
        );
    }
    Ok(walkable)
}

/// `n` of the cells, in a seeded shuffle: distinct cells while there are enough, so that agents
/// do not start on top of each other.
fn pick_cells(walkable: &[usize], n: usize, rng: &mut Pcg64) -> Vec<usize> {
    let mut cells = walkable.to_vec();
    let mut picked = Vec::with_capacity(n);
    for k in 0..n {
        if k % cells.len() == 0 {
            cells.shuffle(rng);
        }
        picked.push(cells[k % cells.len()]);
    }
    picked
}

/// The GIF of a run: the writer, the background (map, arrows and goal) in palette indices, its
/// width in pixels and the pixels per cell.
struct SimGif {
    writer: GifWriter,
    base: Vec<u8>,
    width: u32,
    scale: u32,
    several: bool,
}

/// Colours of moving agents by group when several groups run (one colour when one does).
const GROUP_RGB: [[u8; 3]; 6] = [
    [255, 255, 255],
    [60, 140, 255],
    [240, 90, 210],
    [0, 200, 220],
    [245, 220, 40],
    [150, 100, 255],
];

impl SimGif {
    fn create(
        path: &str,
        a: &Args,
        cost: &CostField,
        arrows: Option<&FlowField>,
        goals: &[UVec2],
        several: bool,
    ) -> Result<SimGif> {
        let scale = a.scale.map_or_else(
            || Canvas::auto_scale(cost.width(), cost.height(), 512),
            |s| s as u32,
        );
        let mut background = Canvas::new(cost.width(), cost.height(), scale)?;
        background.terrain(cost);
        if let Some(flow) = arrows {
            background.flow(flow, background.arrow_block(10));
        }
        background.goals(goals);
        let mut specials = vec![WALL_RGB, GROUND_RGB, ARROW_RGB, GOAL_RGB];
        specials.extend(UNIT_RGB);
        specials.extend([3u8, 6].map(terrain_rgb));
        if several {
            specials.extend(&GROUP_RGB[1..]);
        }
        let palette = Palette::new(&specials);
        let base = palette.quantize(&background.rgba());
        let (width, height) = (background.width(), background.height());
        let writer = GifWriter::create(path, width, height, a.fps as u32, palette)?;
        Ok(SimGif {
            writer,
            base,
            width,
            scale,
            several,
        })
    }

    /// One frame: every agent as a disc coloured by its state (moving ones by their group's
    /// colour when several groups run).
    fn draw(&mut self, crowd: &Crowd, group_of: &[u16]) -> Result<()> {
        let mut pixels = self.base.clone();
        let colours = UNIT_RGB.map(|c| self.writer.palette().index(c));
        let groups = GROUP_RGB.map(|c| self.writer.palette().index(c));
        let s = self.scale as f32 / crowd.grid().cell_size();
        for h in crowd.handles() {
            let p = crowd.position(h)? - crowd.grid().origin();
            let state = crowd.state(h)?;
            let colour = if crowd.is_stuck(h)? {
                colours[3]
            } else if self.several && state == AgentState::Moving {
                groups[group_of[h.id() as usize] as usize % GROUP_RGB.len()]
            } else {
                colours[state as usize]
            };
            let r = crowd.radius(h)? * s;
            indexed_disc(&mut pixels, self.width, p * s, r.max(1.0), colour);
        }
        self.writer.frame(&pixels)
    }
}

/// What the steps of a run measured.
struct RunFigures {
    steps: usize,
    /// Seconds after the start at which each agent (by id) arrived, NaN for none.
    arrive_time: Vec<f32>,
    step_seconds: f64,
    max_overlap: f32,
    inside_wall_events: usize,
    /// Longest time any agent stayed flagged stuck, seconds (measured with several groups).
    max_stuck_s: f32,
}

/// Step until every agent that can arrive has, `--steps` ran out or Ctrl-C, measuring.
#[allow(clippy::too_many_arguments)]
fn run_steps(
    a: &Args,
    cost: &CostField,
    groups: &[Group],
    crowd: &mut Crowd,
    handles: &[horde::crowd::AgentHandle],
    group_of: &[u16],
    reachable: &[usize],
    gif: &mut Option<SimGif>,
) -> Result<RunFigures> {
    let reachable: usize = reachable.iter().sum();
    let several = !a.group.is_empty();
    // When each agent's current stuck spell began (by id), NaN when not stuck.
    let mut stuck_since = vec![f32::NAN; if several { handles.len() } else { 0 }];
    let pb = progress(a.steps as u64, "simulating");
    let started = Instant::now();
    let mut run = RunFigures {
        steps: 0,
        arrive_time: vec![f32::NAN; handles.len()],
        step_seconds: 0.0,
        max_overlap: 0.0,
        inside_wall_events: 0,
        max_stuck_s: 0.0,
    };
    // Where each agent stood after the step before (by id), for the corner rule.
    let mut last_position: Vec<Vec2> = handles
        .iter()
        .map(|&h| crowd.position(h))
        .collect::<Result<_, _>>()?;
    if let Some(gif) = gif.as_mut() {
        gif.draw(crowd, group_of)?;
    }
    while run.steps < a.steps {
        if interrupted() {
            // Ctrl-C: stop here, close the GIF (a valid file, with its trailer) and report
            // the steps run so far.
            eprintln!("interrupted after {} steps", run.steps);
            break;
        }
        let t = Instant::now();
        let stats = crowd.step(a.dt, cost, groups)?;
        run.step_seconds += t.elapsed().as_secs_f64();
        run.steps += 1;
        // In the crowd's own (slot) order, reading its arrays front to back: looking every
        // agent up by handle would scatter reads over them and slow the next step down.
        let (positions, states, radii) = (crowd.positions(), crowd.states(), crowd.radii());
        for (slot, h) in crowd.handles().enumerate() {
            let p = positions[slot];
            // No agent is ever removed here, so ids are the spawn order.
            let k = h.id() as usize;
            if breaks_wall_rules(cost, last_position[k], p, radii[slot]) {
                run.inside_wall_events += 1;
            }
            last_position[k] = p;
            if run.arrive_time[k].is_nan() && states[slot] == AgentState::Arrived {
                run.arrive_time[k] = run.steps as f32 * a.dt;
            }
        }
        if several {
            let now = run.steps as f32 * a.dt;
            for snap in crowd.snapshot() {
                let since = &mut stuck_since[snap.handle.id() as usize];
                if !snap.stuck {
                    *since = f32::NAN;
                    continue;
                }
                if since.is_nan() {
                    *since = now - a.dt;
                }
                run.max_stuck_s = run.max_stuck_s.max(now - *since);
            }
        }
        run.max_overlap = run.max_overlap.max(crowd.max_overlap());
        if run.steps.is_multiple_of(a.every)
            && let Some(gif) = gif.as_mut()
        {
            gif.draw(crowd, group_of)?;
        }
        if run.steps.is_multiple_of(16) {
            pb.set_position(run.steps as u64);
            reveal_after_a_second(&pb, started);
        }
        if stats.arrived >= reachable {
            break;
        }
    }
    pb.finish_and_clear();
    Ok(run)
}

/// The run's figures, as one JSON object (`--json`) or a table.
#[allow(clippy::too_many_arguments)]
fn report(
    a: &Args,
    name: &str,
    cost: &CostField,
    crowd: &Crowd,
    handles: &[horde::crowd::AgentHandle],
    specs: &[Spec],
    group_of: &[u16],
    reachable_by_group: &[usize],
    run: &RunFigures,
    frames: usize,
) -> Result<()> {
    let reachable: usize = reachable_by_group.iter().sum();
    let several = !a.group.is_empty();
    // Per group: its arrival times, sorted.
    let per_group: Vec<Vec<f32>> = (0..specs.len())
        .map(|k| {
            let mut t: Vec<f32> = run
                .arrive_time
                .iter()
                .zip(group_of)
                .filter(|&(t, &g)| g as usize == k && !t.is_nan())
                .map(|(&t, _)| t)
                .collect();
            t.sort_by(f32::total_cmp);
            t
        })
        .collect();
    let mut times: Vec<f32> = run
        .arrive_time
        .iter()
        .copied()
        .filter(|t| !t.is_nan())
        .collect();
    times.sort_by(f32::total_cmp);
    let steps = run.steps;
    let arrived_fraction = times.len() as f64 / handles.len().max(1) as f64;
    let ms_per_step = run.step_seconds * 1e3 / steps.max(1) as f64;
    let hash = state_hash(
        handles
            .iter()
            .map(|h| crowd.position(*h).unwrap_or(Vec2::NAN)),
    );
    let stuck = crowd.stuck_agents().count();
    let (max_overlap, inside_wall_events) = (run.max_overlap, run.inside_wall_events);
    if a.json {
        let v = serde_json::json!({
            "map": name,
            "agents": handles.len(),
            "reachable_agents": reachable,
            "steps": steps,
            "dt": a.dt,
            "arrived_fraction": arrived_fraction,
            "arrive_p50_s": percentile(&times, 0.5),
            "arrive_p95_s": percentile(&times, 0.95),
            "max_overlap": max_overlap,
            "inside_wall_events": inside_wall_events,
            "ms_per_step": ms_per_step,
            "stuck_agents": stuck,
            "state_hash": format!("{hash:016x}"),
            "gif_frames": frames,
        });
        let mut v = v;
        if several {
            let groups: Vec<serde_json::Value> = specs
                .iter()
                .zip(&per_group)
                .zip(reachable_by_group)
                .map(|((spec, times), &reachable)| {
                    let all = times.len() == spec.agents;
                    serde_json::json!({
                        "goal": [spec.goal.x, spec.goal.y],
                        "agents": spec.agents,
                        "reachable_agents": reachable,
                        "arrived_fraction": times.len() as f64 / spec.agents as f64,
                        "arrive_p50_s": percentile(times, 0.5),
                        "arrive_p95_s": percentile(times, 0.95),
                        "all_arrived_s": if all { times.last().copied() } else { None },
                    })
                })
                .collect();
            v["groups"] = serde_json::Value::from(groups);
            v["max_stuck_s"] = serde_json::Value::from(run.max_stuck_s);
        }
        outln!("{v}");
        return Ok(());
    }
    match specs {
        [one] if !several => outln!(
            "map                {name} ({}x{}), goal ({}, {})",
            cost.width(),
            cost.height(),
            one.goal.x,
            one.goal.y
        ),
        _ => {
            outln!(
                "map                {name} ({}x{}), {} groups",
                cost.width(),
                cost.height(),
                specs.len()
            );
            for (k, (spec, times)) in specs.iter().zip(&per_group).enumerate() {
                outln!(
                    "group {k:<12} goal ({}, {}), {} agents, {:.1} % arrived, last at {}",
                    spec.goal.x,
                    spec.goal.y,
                    spec.agents,
                    times.len() as f64 * 100.0 / spec.agents as f64,
                    if times.len() == spec.agents {
                        format!("{:.2} s", times.last().copied().unwrap_or(0.0))
                    } else {
                        "-".to_owned()
                    }
                );
            }
        }
    }
    outln!(
        "agents             {} ({reachable} can reach the goal)",
        handles.len()
    );
    outln!("steps              {steps} of {:.3} s", a.dt);
    outln!("arrived            {:.1} %", arrived_fraction * 100.0);
    outln!(
        "time to arrive     median {:.2} s, 95th percentile {:.2} s",
        percentile(&times, 0.5),
        percentile(&times, 0.95)
    );
    outln!("worst overlap      {:.3} of the two radii", max_overlap);
    outln!("inside a wall      {inside_wall_events}");
    outln!("stuck now          {stuck}");
    if several {
        outln!("longest stuck      {:.2} s", run.max_stuck_s);
    }
    outln!("ms per step        {ms_per_step:.3}");
    outln!("state hash         {hash:016x}");
    if let Some(p) = &a.gif {
        outln!("wrote              {p} ({frames} frames)");
    }
    Ok(())
}

/// Whether a body of radius `r` that moved from `from` to `to` in one step broke the crowd's wall
/// rules: its centre in a wall cell or off the map, its body nearer than `min(r, 0.45 cell)` to a
/// wall (or map edge) beside its cell, or its move passing diagonally between two wall corners.
fn breaks_wall_rules(cost: &CostField, from: Vec2, to: Vec2, r: f32) -> bool {
    let g = cost.grid();
    let (Some(a), Some(b)) = (g.world_to_cell(from), g.world_to_cell(to)) else {
        return true;
    };
    let open = |x: i64, y: i64| {
        x >= 0
            && y >= 0
            && cost
                .get(glam::UVec2::new(x as u32, y as u32))
                .is_some_and(|c| c != horde::WALL)
    };
    let (bx, by) = (b.x as i64, b.y as i64);
    if !open(bx, by) {
        return true;
    }
    let (dx, dy) = (bx - a.x as i64, by - a.y as i64);
    if dx != 0 && dy != 0 && !open(bx, a.y as i64) && !open(a.x as i64, by) {
        return true;
    }
    let keep = r.min(0.45 * g.cell_size()) - 1e-4 * g.cell_size();
    let f = (to - g.origin()) / g.cell_size() - b.as_vec2();
    let gaps = [
        (-1, 0, f.x),
        (1, 0, 1.0 - f.x),
        (0, -1, f.y),
        (0, 1, 1.0 - f.y),
    ];
    gaps.iter()
        .any(|&(ox, oy, gap)| !open(bx + ox, by + oy) && gap * g.cell_size() < keep)
}
