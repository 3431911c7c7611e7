//! Helpers shared by the subcommands: loading maps, parsing cells, timing, progress bars.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use glam::UVec2;
use horde::CostField;
use horde::io::shown_path;
use indicatif::{ProgressBar, ProgressStyle};

/// Largest map, in cells, that a greyscale PNG may describe by default (64 Mi: 8192 × 8192).
pub const MAX_IMAGE_CELLS: u64 = 1 << 26;

// Limits on what the command line may ask for, checked while the flags are parsed, before
// anything is reserved for them: each is far beyond what the commands are for, and far below
// what would exhaust memory or time.

/// Most agents `horde sim` spawns (a crowd costs at most 64 bytes per agent: 640 MB).
pub const MAX_AGENTS: u64 = 10_000_000;
/// Most agents per walkable cell of the spawn area (four bodies of the default radius fill one).
pub const MAX_AGENTS_PER_CELL: usize = 4;
/// Most steps `horde sim` runs.
pub const MAX_STEPS: u64 = 1_000_000;
/// Most collision passes per step (each is a pass over every agent; 2 is the default).
pub const MAX_COLLISION_PASSES: u64 = 16;
/// Most units `horde demo` and `horde bench` send (each unit is one A* query per repetition).
pub const MAX_UNITS: u64 = 100_000;
/// Most entries in `horde bench --units`.
pub const MAX_UNIT_ROWS: usize = 64;
/// Most repetitions per measurement in `horde bench`.
pub const MAX_REPS: u64 = 10_000;
/// Most rooms `horde dungeon` places (the library also refuses more than fit the map).
pub const MAX_ROOMS: u64 = 100_000;
/// Most pixels per cell in pictures.
pub const MAX_SCALE: u64 = 64;

pub use horde_cli::args::{count_in, number_in, parse_cell};

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
        let (w, h) = horde_cli::args::parse_size(size)
            .map_err(|e| anyhow::anyhow!("{} is not builtin:WxH ({e})", horde::io::quoted(arg)))?;
        let map = horde::maps::scattered_map(w, h, horde::maps::DEMO_SEED)?;
        return Ok((map, arg.to_owned()));
    }
    if arg.to_ascii_lowercase().ends_with(".png") {
        let cells = *IMAGE_CELLS.get().unwrap_or(&MAX_IMAGE_CELLS);
        return Ok((horde::io::read_png_map(arg, cells)?, arg.to_owned()));
    }
    let cost = horde::io::read_map(arg)?;
    Ok((cost, arg.to_owned()))
}

/// Fail with a message naming the cell if it is outside the map or a wall, and the walkable
/// cell nearest it (`CostField::nearest_walkable`) where there is one.
pub fn check_walkable(cost: &CostField, cell: UVec2, what: &str) -> Result<()> {
    let nearest = || match cost.nearest_walkable(cell) {
        Some(c) => format!(" (the nearest walkable cell is {},{})", c.x, c.y),
        None => " (the map has no walkable cell)".to_owned(),
    };
    if cost.get(cell).is_none() {
        bail!(
            "{what} ({}, {}) is outside the {}x{} map{}",
            cell.x,
            cell.y,
            cost.width(),
            cost.height(),
            nearest()
        );
    }
    if !cost.is_walkable(cell) {
        bail!("{what} ({}, {}) is on a wall{}", cell.x, cell.y, nearest());
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

/// Median times of `f` and `g` over `reps` runs of each, in turns of a few runs (each turn's
/// first run, which finds the caches full of the other's data, untimed): a ratio of the two is
/// then measured under one drift of this machine's speed, which two phases one after the other
/// are not, and each still with its own data in cache, as a loop of builds has it.
pub fn median_pair_ns(reps: usize, mut f: impl FnMut(), mut g: impl FnMut()) -> (f64, f64) {
    const TURN: usize = 4;
    let turn = |h: &mut dyn FnMut(), times: &mut Vec<f64>, runs: usize| {
        h();
        for _ in 0..runs {
            let s = Instant::now();
            h();
            times.push(s.elapsed().as_nanos() as f64);
        }
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut left = reps.max(1);
    while left > 0 {
        let runs = left.min(TURN);
        turn(&mut f, &mut a, runs);
        turn(&mut g, &mut b, runs);
        left -= runs;
    }
    let median = |mut t: Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    (median(a), median(b))
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

/// The folder a file would be written in (`.` for a bare file name).
/// A path as errors show it (`horde::io::shown_path`).
fn shown(path: &str) -> String {
    shown_path(std::path::Path::new(path))
}

fn folder_of(path: &str) -> &std::path::Path {
    match std::path::Path::new(path).parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    }
}

/// Fail unless `path` can be written: its folder exists and takes a new file (tried with a
/// temporary file, removed at once). Called for every output before the work starts.
pub fn check_output(path: &str, flag: &str) -> Result<()> {
    let folder = folder_of(path);
    if folder.exists() && !folder.is_dir() {
        bail!(
            "{flag} {}: {} is not a folder",
            shown(path),
            shown_path(folder)
        );
    }
    if !folder.is_dir() {
        bail!(
            "{flag} {}: folder {} does not exist",
            shown(path),
            shown_path(folder)
        );
    }
    if std::path::Path::new(path).is_dir() {
        bail!("{flag} {}: is a folder", shown(path));
    }
    // Most file systems refuse a name (the last part of the path) over 255 bytes.
    let name = std::path::Path::new(path)
        .file_name()
        .map_or(0, |n| n.len());
    if name > 255 {
        bail!(
            "{flag} {}: the file name is {name} bytes long (at most 255)",
            shown(path)
        );
    }
    tempfile::NamedTempFile::new_in(folder).with_context(|| {
        format!(
            "{flag} {}: cannot write in {}",
            shown(path),
            shown_path(folder)
        )
    })?;
    Ok(())
}

/// Fail unless `dir` can take output files: it is a folder that takes a new file, or it does
/// not exist yet and its parent folder does (it is then made by [`make_output_dir`]; parents
/// are never created, so a mistyped path is refused rather than built). Called before the work.
pub fn check_output_dir(dir: &str, flag: &str) -> Result<()> {
    let path = std::path::Path::new(dir);
    if path.exists() {
        if !path.is_dir() {
            bail!("{flag} {}: is not a folder", shown(dir));
        }
        tempfile::NamedTempFile::new_in(path)
            .with_context(|| format!("{flag} {}: cannot write in it", shown(dir)))?;
        return Ok(());
    }
    let parent = folder_of(dir);
    if parent.exists() && !parent.is_dir() {
        bail!(
            "{flag} {}: {} is not a folder",
            shown(dir),
            shown_path(parent)
        );
    }
    if !parent.is_dir() {
        bail!(
            "{flag} {}: folder {} does not exist",
            shown(dir),
            shown_path(parent)
        );
    }
    tempfile::NamedTempFile::new_in(parent).with_context(|| {
        format!(
            "{flag} {}: cannot create it in {}",
            shown(dir),
            shown_path(parent)
        )
    })?;
    Ok(())
}

/// Make the output folder checked by [`check_output_dir`] (no parents), if it is not there.
pub fn make_output_dir(dir: &str, flag: &str) -> Result<()> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(e).with_context(|| format!("{flag} {}: cannot create it", shown(dir)))
        }
        _ => Ok(()),
    }
}

/// A file written beside its destination and renamed into place by [`AtomicFile::commit`]: a
/// failure or an interruption before that leaves the old file (if any) untouched and no partial
/// file (the temporary one is removed when dropped).
pub struct AtomicFile {
    file: tempfile::NamedTempFile,
    path: String,
}

impl AtomicFile {
    /// Start writing `path`.
    pub fn create(path: &str) -> Result<AtomicFile> {
        let mut builder = tempfile::Builder::new();
        builder.prefix(".horde-");
        // A temporary file is private (0600); the file it becomes gets what any new file gets
        // (0666 less the umask), or keeps the permissions of the file it replaces.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let file = builder
            .tempfile_in(folder_of(path))
            .with_context(|| format!("cannot write {}", shown(path)))?;
        if let Ok(old) = std::fs::metadata(path) {
            file.as_file()
                .set_permissions(old.permissions())
                .with_context(|| format!("cannot write {}", shown(path)))?;
        }
        Ok(AtomicFile {
            file,
            path: path.to_owned(),
        })
    }

    /// The file to write into.
    pub fn writer(&mut self) -> &mut std::fs::File {
        self.file.as_file_mut()
    }

    /// The destination.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Flush to disk and move into place.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        self.file
            .as_file()
            .sync_all()
            .with_context(|| format!("cannot write {}", shown(&path)))?;
        self.file
            .persist(&path)
            .map_err(|e| e.error)
            .with_context(|| format!("cannot write {}", shown(&path)))?;
        Ok(())
    }
}

/// Write a file atomically, naming it in the error.
pub fn write_file(path: &str, text: &str) -> Result<()> {
    use std::io::Write;
    let mut f = AtomicFile::create(path)?;
    f.writer()
        .write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", shown(path)))?;
    f.commit()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn pairs_are_timed_in_turns_each_turns_first_run_untimed() {
        // Ten timed runs of each in turns of four, four and two, each turn after one untimed
        // run; the runs of `f` take at least 2 ms, those of `g` next to nothing.
        let order = std::cell::RefCell::new(Vec::new());
        let (f, g) = median_pair_ns(
            10,
            || {
                order.borrow_mut().push('f');
                std::thread::sleep(std::time::Duration::from_millis(2));
            },
            || order.borrow_mut().push('g'),
        );
        let order: String = order.into_inner().into_iter().collect();
        assert_eq!(order, "fffffgggggfffffgggggfffggg");
        assert!(f >= 2e6 && g < f, "f {f} ns, g {g} ns");
    }

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn written_files_get_the_permissions_of_a_new_file_or_keep_the_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        // What any new file gets here (0666 less the umask), not a temporary file's 0600.
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let new = dir.path().join("new.txt");
        write_file(new.to_str().unwrap(), "a").unwrap();
        assert_eq!(mode(&new), mode(&plain));
        assert_ne!(
            mode(&new),
            0o600,
            "a umask of 0066 would hide this test's point"
        );
        // A file replaced keeps its permissions.
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_file(new.to_str().unwrap(), "b").unwrap();
        assert_eq!(mode(&new), 0o640);
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "b");
    }
}
