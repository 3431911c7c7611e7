//! `horde dungeon`: the dungeon generator (`horde::dungeon`) from the command line, with exports.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};

use crate::render::Canvas;
use horde::dungeon::{Dungeon, DungeonConfig, Tile, generate};

use crate::util::write_file;

#[derive(clap::Args)]
pub struct Args {
    /// Map size in tiles.
    #[arg(long, default_value = "100x100", value_name = "WxH")]
    size: String,
    /// Rooms to place, 1 to 100,000 (and no more than rooms of the smallest side fit).
    #[arg(long, default_value_t = 12, value_parser = crate::util::count_in(1, crate::util::MAX_ROOMS))]
    rooms: usize,
    /// Random seed: the same seed and options give the same dungeon everywhere.
    #[arg(long, default_value_t = 7, value_parser = horde_cli::args::parse_seed)]
    seed: u64,
    /// Fraction of the non-tree Delaunay edges carved as extra corridors (loops), in [0, 1].
    #[arg(long, default_value_t = 0.15, value_parser = crate::util::number_in(0.0, 1.0, false))]
    loops: f32,
    /// Corridor width in tiles, 1 to 16.
    #[arg(long, default_value_t = 1, value_parser = crate::util::count_in(1, 16))]
    corridor_width: usize,
    /// Smallest and largest room side, e.g. 5..14 (1 <= MIN <= MAX <= the map's smaller side - 2).
    #[arg(long, default_value = "5..14", value_name = "MIN..MAX")]
    room_size: String,
    /// Write the dungeon as a Moving AI .map (floor walkable, rock wall).
    #[arg(long, value_name = "FILE.map")]
    out: Option<String>,
    /// Write a PNG: rooms green, corridors yellow, doors orange, rock dark.
    #[arg(long, value_name = "FILE.png")]
    png: Option<String>,
    /// Pixels per tile in the PNG, 1 to 64.
    #[arg(long, default_value_t = 6, value_parser = crate::util::count_in(1, crate::util::MAX_SCALE))]
    scale: usize,
    /// Write a Tiled map (JSON with a CSV tile layer).
    #[arg(long, value_name = "FILE.json")]
    tiled: Option<String>,
}

/// Colour of a tile in pictures.
pub fn tile_rgb(t: Tile) -> [u8; 3] {
    match t {
        Tile::Wall => [38, 40, 48],
        Tile::Room => [86, 178, 92],
        Tile::Corridor => [232, 202, 64],
        Tile::Door => [222, 128, 44],
    }
}

/// Write the dungeon as a PNG, `scale` pixels per tile, with a legend.
pub fn write_png(d: &Dungeon, scale: u32, path: &str) -> Result<()> {
    let mut c = Canvas::new(d.width(), d.height(), scale)?;
    c.fill_cells(|i| Some(tile_rgb(d.tiles()[i])));
    c.legend(&[
        (tile_rgb(Tile::Room), "room".to_owned()),
        (tile_rgb(Tile::Corridor), "corridor".to_owned()),
        (tile_rgb(Tile::Door), "door".to_owned()),
    ]);
    c.save_png(path)
}

pub fn run(a: &Args) -> Result<ExitCode> {
    for (path, flag) in [(&a.out, "--out"), (&a.png, "--png"), (&a.tiled, "--tiled")] {
        if let Some(path) = path {
            crate::util::check_output(path, flag)?;
        }
    }
    let (width, height) =
        horde_cli::args::parse_size(&a.size).map_err(|e| anyhow::anyhow!("--size {e}"))?;
    horde::Grid::new(width, height).map_err(|e| anyhow::anyhow!("--size {width}x{height}: {e}"))?;
    let (room_min, room_max) = horde_cli::args::parse_range(&a.room_size)
        .map_err(|e| anyhow::anyhow!("--room-size {e}"))?;
    if room_min == 0 || room_min > room_max {
        bail!(
            "--room-size {room_min}..{room_max}: the smallest side must be at least 1 and at \
             most the largest"
        );
    }
    // One tile of rock is kept around the map, so a room side is at most the map's side - 2.
    let widest = width.min(height).saturating_sub(2);
    if room_max > widest {
        bail!(
            "--room-size {room_min}..{room_max}: a room side of {room_max} does not fit in a \
             {width}x{height} map (at most {widest}, inside the 1-tile rock border)"
        );
    }
    let config = DungeonConfig {
        width,
        height,
        rooms: a.rooms,
        room_min,
        room_max,
        loops: a.loops,
        corridor_width: a.corridor_width as u32,
        ..DungeonConfig::default()
    };
    let started = Instant::now();
    let d = generate(&config, a.seed)?;
    let took = started.elapsed();
    if d.width() <= 160 && d.height() <= 100 {
        outln!("{}", d.to_ascii().trim_end());
    }
    let tree = d.corridors().iter().filter(|c| c.in_tree).count();
    outln!(
        "rooms            {} placed of {} requested",
        d.rooms().len(),
        d.rooms_requested()
    );
    outln!(
        "corridors        {} ({tree} spanning tree + {} loops)",
        d.corridors().len(),
        d.corridors().len() - tree
    );
    outln!("corridor tiles   {}", d.corridor_tiles());
    outln!("room crossings   {}", d.room_crossings());
    outln!("generation       {:.3} ms", took.as_secs_f64() * 1e3);
    if let Some(p) = &a.out {
        write_file(p, &horde::io::write_map(&d.to_cost_field())?)?;
        outln!("wrote            {p}");
    }
    if let Some(p) = &a.png {
        write_png(&d, a.scale as u32, p)?;
        outln!("wrote            {p}");
    }
    if let Some(p) = &a.tiled {
        write_file(p, &d.to_tiled_json())?;
        outln!("wrote            {p}");
    }
    Ok(ExitCode::SUCCESS)
}
