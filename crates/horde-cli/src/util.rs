//! Helpers shared by the subcommands: loading maps, parsing cells, timing, progress bars.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use glam::UVec2;
use horde::CostField;
use indicatif::{ProgressBar, ProgressStyle};

/// Largest map, in cells, that a greyscale PNG may describe by default (64 Mi: 8192 × 8192).
pub const MAX_IMAGE_CELLS: u64 = 1 << 26;

/// The `--max-cells` the user gave, set once at start-up.
static IMAGE_CELLS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// Record `--max-cells`.
pub fn set_max_image_cells(cells: u64) {
    let _ = IMAGE_CELLS.set(cells);
}

/// The MAP argument: a Moving AI `.map` file, a greyscale `.png` (black wall, white ground, grey
/// costlier terrain), `builtin` for the built-in demo map, or `builtin:WxH` for a generated map
/// like it of any size.
pub fn load_map(arg: &str) -> Result<(CostField, String)> {
    if arg == "builtin" {
        return Ok((horde::maps::demo_map(), "builtin".to_owned()));
    }
    if let Some(size) = arg.strip_prefix("builtin:") {
        let (w, h) = size
            .split_once('x')
            .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
            .with_context(|| format!("'{arg}' is not builtin:WxH"))?;
        let map = horde::maps::scattered_map(w, h, horde::maps::DEMO_SEED)?;
        return Ok((map, arg.to_owned()));
    }
    if arg.to_ascii_lowercase().ends_with(".png") {
        let cells = *IMAGE_CELLS.get().unwrap_or(&MAX_IMAGE_CELLS);
        return Ok((crate::render::read_heightmap(arg, cells)?, arg.to_owned()));
    }
    let cost = horde::io::read_map(arg)?;
    Ok((cost, arg.to_owned()))
}

/// `X,Y` → a cell.
pub fn parse_cell(s: &str) -> Result<UVec2, String> {
    let (x, y) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}' is not X,Y"))?;
    let x = x
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("'{x}' in '{s}' is not a whole number"))?;
    let y = y
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("'{y}' in '{s}' is not a whole number"))?;
    Ok(UVec2::new(x, y))
}

/// Fail with a message naming the cell if it is outside the map or a wall.
pub fn check_walkable(cost: &CostField, cell: UVec2, what: &str) -> Result<()> {
    if cost.get(cell).is_none() {
        bail!(
            "{what} ({}, {}) is outside the {}x{} map",
            cell.x,
            cell.y,
            cost.width(),
            cost.height()
        );
    }
    if !cost.is_walkable(cell) {
        bail!("{what} ({}, {}) is on a wall", cell.x, cell.y);
    }
    Ok(())
}

/// Median of the durations of `reps` runs of `f`, in nanoseconds.
pub fn median_ns(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_nanos() as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// A progress bar on stderr that appears only if the work takes longer than a second.
pub fn progress(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} {elapsed}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(what.to_owned());
    pb.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    pb
}

/// Show a hidden bar once a second has passed.
pub fn reveal_after_a_second(pb: &ProgressBar, started: Instant) {
    if pb.is_hidden() && started.elapsed() > Duration::from_secs(1) {
        pb.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    }
}

/// Human-readable bytes.
pub fn bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1 << 20) as f64)
    } else {
        format!("{:.1} KiB", n as f64 / 1024.0)
    }
}

/// Write a file, naming it in the error.
pub fn write_file(path: &str, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {path}"))
}
