//! `horde`: the command-line face of the horde library. Each subcommand lives in its own module
//! and only wires the library to files, flags and output.

/// `println!` that returns an error instead of panicking when stdout is closed (`horde | head`).
macro_rules! outln {
    () => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock())?
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

mod bench;
mod demo;
mod dungeon;
mod field;
mod huge;
mod measure;
mod path;
#[cfg(feature = "peers")]
mod peers;
mod render;
mod route;
mod scen;
mod serve;
mod sim;
mod util;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Flow fields, integration fields and A* for crowds on grid maps.
///
/// With no command, runs the demo on the built-in 128 × 128 map.
#[derive(Parser)]
#[command(name = "horde", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Largest map a greyscale PNG may describe, in cells (pixels): 1 to 1,073,741,824, the
    /// grid's own limit.
    #[arg(long, global = true, default_value_t = util::MAX_IMAGE_CELLS as usize,
          value_parser = util::count_in(1, horde::grid::MAX_CELLS))]
    max_cells: usize,
}

#[derive(Subcommand)]
enum Command {
    /// The comparison on the built-in map: one field for 200 units vs 200 A* queries.
    Demo(demo::Args),
    /// Build the integration and flow fields of a map for one or more goals; dump them.
    Field(field::Args),
    /// One A* path: its cells, cost and the cells it settled.
    Path(path::Args),
    /// One route through sectors and portals, and the flow-field tiles along it (huge maps).
    Route(route::Args),
    /// Check every scenario of a Moving AI .scen file against its published optimal length.
    Scen(scen::Args),
    /// Measure fields against A* and a plain BFS; against the `pathfinding` crate and bracket-lib
    /// in a build with `--features peers` (release build).
    Bench(bench::Args),
    /// Generate a dungeon: rooms, Delaunay + spanning tree, A* corridors; export it.
    Dungeon(dungeon::Args),
    /// Run a crowd following one flow field; report arrivals, overlap, speed; optionally a GIF.
    Sim(sim::Args),
    /// A playground in the browser: paint a map, drop goals, watch fields and a crowd live.
    Serve(serve::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // clap quotes a refused value whole: cut long ones to a screenful.
            let args: Vec<String> = std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let text = horde_cli::args::shorten_args_in(&e.render().to_string(), &args);
            eprint!("{text}");
            return ExitCode::from(2);
        }
    };
    util::set_max_image_cells(cli.max_cells as u64);
    // The library ignores a value it does not know (it has no one to tell); here it is a
    // mistake to name before any work, not a silent run at full width.
    if let Err(e) = horde::SimdLevel::from_env() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        None => demo::run(&demo::Args::default()),
        Some(Command::Demo(a)) => demo::run(&a),
        Some(Command::Field(a)) => field::run(&a),
        Some(Command::Path(a)) => path::run(&a),
        Some(Command::Route(a)) => route::run(&a),
        Some(Command::Scen(a)) => scen::run(&a),
        Some(Command::Bench(a)) => bench::run(&a),
        Some(Command::Dungeon(a)) => dungeon::run(&a),
        Some(Command::Sim(a)) => sim::run(&a),
        Some(Command::Serve(a)) => serve::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let closed = e
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe);
            if closed {
                // The reader went away (`horde | head`): nothing more to say, not a failure.
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
