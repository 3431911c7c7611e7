//! Procedural dungeons in the manner of TinyKeep's generator: rooms placed at random without
//! overlap, joined by the minimum spanning tree of their Delaunay triangulation (plus a few extra edges for loops), each
//! edge carved as a corridor by horde's own A* with a soft penalty for crossing other rooms.
//!
//! The same seed and config give the same dungeon on every run and platform (PCG random numbers,
//! no thread or OS randomness).

use glam::UVec2;
use petgraph::graph::{NodeIndex, UnGraph};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use thiserror::Error;

use crate::astar::AStar;
use crate::cost::{CostField, CostModel, PLAIN, WALL};
use crate::grid::Grid;

/// What a tile is. One byte per tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Tile {
    /// Solid rock.
    Wall = 0,
    /// Floor inside a room.
    Room = 1,
    /// Floor of a corridor.
    Corridor = 2,
    /// Corridor floor where a corridor's centre line enters a room.
    Door = 3,
}

impl Tile {
    /// True for floor of any kind.
    pub fn is_floor(self) -> bool {
        self != Tile::Wall
    }
    /// The ASCII character: `#` wall, `.` room, `,` corridor, `+` door.
    pub fn ascii(self) -> char {
        match self {
            Tile::Wall => '#',
            Tile::Room => '.',
            Tile::Corridor => ',',
            Tile::Door => '+',
        }
    }
}

/// How to build a dungeon. `Default` is a 100 × 100 m level of 1 m tiles: 12 rooms, step 10,
/// +500 for stepping onto another room's floor.
#[derive(Debug, Clone, PartialEq)]
pub struct DungeonConfig {
    /// Map width in tiles.
    pub width: u32,
    /// Map height in tiles.
    pub height: u32,
    /// Rooms to place (fewer are placed when the map cannot hold them; see [`Dungeon::rooms`]).
    pub rooms: usize,
    /// Smallest room side, in tiles.
    pub room_min: u32,
    /// Largest room side, in tiles (capped at each map side minus 2: a tile of rock is kept
    /// around the map).
    pub room_max: u32,
    /// Tiles of rock kept between any two rooms.
    pub min_gap: u32,
    /// Fraction of the Delaunay edges left out of the spanning tree that are carved as well, to
    /// make loops (TinyKeep adds back about 15 %).
    pub loops: f32,
    /// Corridor width in tiles.
    pub corridor_width: u32,
    /// Cost of one corridor step through rock.
    pub step_cost: u32,
    /// Extra cost of stepping onto the floor of a room that is not one of the corridor's ends.
    pub room_penalty: u32,
    /// Cost of a step along an existing corridor (below `step_cost`, so corridors merge instead
    /// of running side by side); `None` prices it like rock.
    pub corridor_step_cost: Option<u32>,
    /// Room placement attempts per requested room before giving up on it.
    pub attempts_per_room: u32,
}

impl Default for DungeonConfig {
    fn default() -> Self {
        DungeonConfig {
            width: 100,
            height: 100,
            rooms: 12,
            room_min: 5,
            room_max: 14,
            min_gap: 2,
            loops: 0.15,
            corridor_width: 1,
            step_cost: 10,
            room_penalty: 500,
            corridor_step_cost: Some(5),
            attempts_per_room: 60,
        }
    }
}

/// Why a dungeon could not be built.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum DungeonError {
    /// A map side of 0 (or beyond the grid limits).
    #[error("dungeon size {width}x{height} is not allowed: {reason}")]
    Size {
        width: u32,
        height: u32,
        reason: String,
    },
    /// Zero rooms requested.
    #[error("a dungeon needs at least one room")]
    NoRooms,
    /// Room sides that cannot work.
    #[error("room size range {min}..={max} is not valid: {reason}")]
    RoomSize { min: u32, max: u32, reason: String },
    /// Not even one room fits.
    #[error("no room of side {min} fits in a {width}x{height} map (a 1-tile rock border is kept)")]
    NothingFits { width: u32, height: u32, min: u32 },
    /// Costs that make no sense.
    #[error("corridor costs are not valid: {0}")]
    Costs(String),
    /// More rooms requested than rooms of the smallest side (and their one-tile gaps) can fit.
    #[error(
        "{rooms} rooms cannot fit in a {width}x{height} map with rooms of side {min} or more (at most {most})"
    )]
    TooManyRooms {
        rooms: usize,
        most: usize,
        width: u32,
        height: u32,
        min: u32,
    },
}

/// A room: its rectangle (inclusive of `min`, exclusive of `min + size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    /// Top-left tile.
    pub min: UVec2,
    /// Width and height.
    pub size: UVec2,
}

impl Room {
    /// The tile at the room's centre.
    pub fn center(&self) -> UVec2 {
        self.min + self.size / 2
    }
    /// True if the tile lies in the room.
    pub fn contains(&self, p: UVec2) -> bool {
        p.x >= self.min.x
            && p.y >= self.min.y
            && p.x < self.min.x + self.size.x
            && p.y < self.min.y + self.size.y
    }
    fn overlaps_with_gap(&self, other: &Room, gap: u32) -> bool {
        let a0 = self.min.as_ivec2() - gap as i32;
        let a1 = (self.min + self.size).as_ivec2() + gap as i32;
        let b0 = other.min.as_ivec2();
        let b1 = (other.min + other.size).as_ivec2();
        a0.x < b1.x && b0.x < a1.x && a0.y < b1.y && b0.y < a1.y
    }
}

/// One carved corridor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corridor {
    /// Index of the room it starts from.
    pub from: usize,
    /// Index of the room it leads to.
    pub to: usize,
    /// True for a spanning-tree edge, false for an extra loop edge.
    pub in_tree: bool,
    /// The centre line, from the centre of `from` to the centre of `to`.
    pub cells: Vec<UVec2>,
    /// Tiles of rooms other than `from` and `to` on the centre line (0 unless no way around).
    pub room_crossings: usize,
}

/// A generated dungeon.
///
/// Memory: 1 byte per tile, plus the room list and the corridors' centre lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dungeon {
    width: u32,
    height: u32,
    tiles: Vec<Tile>,
    rooms: Vec<Room>,
    rooms_requested: usize,
    corridors: Vec<Corridor>,
}

impl Dungeon {
    /// Width in tiles.
    pub fn width(&self) -> u32 {
        self.width
    }
    /// Height in tiles.
    pub fn height(&self) -> u32 {
        self.height
    }
    /// Tiles indexed `y * width + x`.
    pub fn tiles(&self) -> &[Tile] {
        &self.tiles
    }
    /// The tile at `(x, y)`, or `None` outside.
    pub fn tile(&self, p: UVec2) -> Option<Tile> {
        (p.x < self.width && p.y < self.height)
            .then(|| self.tiles[p.y as usize * self.width as usize + p.x as usize])
    }
    /// The rooms placed (possibly fewer than requested).
    pub fn rooms(&self) -> &[Room] {
        &self.rooms
    }
    /// How many rooms the config asked for.
    pub fn rooms_requested(&self) -> usize {
        self.rooms_requested
    }
    /// The corridors, spanning-tree edges first.
    pub fn corridors(&self) -> &[Corridor] {
        &self.corridors
    }
    /// Room tiles crossed by corridors that do not end in those rooms, over all corridors.
    pub fn room_crossings(&self) -> usize {
        self.corridors.iter().map(|c| c.room_crossings).sum()
    }
    /// Number of corridor and door tiles.
    pub fn corridor_tiles(&self) -> usize {
        self.tiles
            .iter()
            .filter(|t| matches!(t, Tile::Corridor | Tile::Door))
            .count()
    }

    /// The map as text: one row per line, `#` wall, `.` room, `,` corridor, `+` door. O(tiles).
    pub fn to_ascii(&self) -> String {
        let w = self.width as usize;
        let mut s = String::with_capacity(self.tiles.len() + self.height as usize);
        for row in self.tiles.chunks_exact(w) {
            s.extend(row.iter().map(|t| t.ascii()));
            s.push('\n');
        }
        s
    }

    /// A cost field for every other horde layer: floor is plain ground, rock is wall. O(tiles).
    pub fn to_cost_field(&self) -> CostField {
        let grid = Grid::new(self.width, self.height).expect("validated at generation");
        let costs = self
            .tiles
            .iter()
            .map(|t| if t.is_floor() { PLAIN } else { WALL })
            .collect();
        CostField::from_costs(grid, costs).expect("sizes match")
    }

    /// A Tiled map (JSON, orthogonal, one CSV tile layer; tile ids 1 wall, 2 room, 3 corridor,
    /// 4 door, from an embedded four-tile tileset without an image) that Tiled opens and edits.
    pub fn to_tiled_json(&self) -> String {
        let data: Vec<String> = self
            .tiles
            .iter()
            .map(|t| (*t as u8 as u32 + 1).to_string())
            .collect();
        let w = self.width;
        let h = self.height;
        format!(
            concat!(
                "{{\"type\":\"map\",\"version\":\"1.10\",\"tiledversion\":\"1.10.2\",",
                "\"orientation\":\"orthogonal\",\"renderorder\":\"right-down\",",
                "\"width\":{w},\"height\":{h},\"tilewidth\":16,\"tileheight\":16,",
                "\"infinite\":false,\"nextlayerid\":2,\"nextobjectid\":1,",
                "\"layers\":[{{\"id\":1,\"name\":\"dungeon\",\"type\":\"tilelayer\",",
                "\"x\":0,\"y\":0,\"width\":{w},\"height\":{h},\"opacity\":1,\"visible\":true,",
                "\"encoding\":\"csv\",\"data\":[{data}]}}],",
                "\"tilesets\":[{{\"firstgid\":1,\"name\":\"horde-dungeon\",\"tilewidth\":16,",
                "\"tileheight\":16,\"tilecount\":4,\"columns\":0,\"margin\":0,\"spacing\":0,",
                "\"tiles\":[",
                "{{\"id\":0,\"type\":\"wall\"}},{{\"id\":1,\"type\":\"room\"}},",
                "{{\"id\":2,\"type\":\"corridor\"}},{{\"id\":3,\"type\":\"door\"}}]}}]}}\n"
            ),
            w = w,
            h = h,
            data = data.join(",")
        )
    }
}

/// Build a dungeon. Deterministic in `(config, seed)`. Room placement is bounded by
/// `rooms × attempts_per_room` tries; corridors cost one A* search each (the bulk of the time).
///
/// ```
/// use horde::dungeon::{generate, DungeonConfig};
/// let d = generate(&DungeonConfig::default(), 7).unwrap();
/// assert_eq!(d.rooms().len(), 12);
/// assert!(d.corridors().len() >= 11); // a spanning tree, plus loops
/// assert_eq!(d, generate(&DungeonConfig::default(), 7).unwrap());
/// ```
pub fn generate(config: &DungeonConfig, seed: u64) -> Result<Dungeon, DungeonError> {
    let grid = check_config(config)?;
    let mut rng = Pcg64::seed_from_u64(seed);
    let rooms = place_rooms(config, &mut rng)?;
    // 2. The room graph: Delaunay triangulation, its minimum spanning tree, some extra edges.
    let (tree, extra) = room_graph(&rooms);
    let mut extra = extra;
    extra.shuffle(&mut rng);
    let keep = (extra.len() as f32 * config.loops).round() as usize;
    extra.truncate(keep);

    let (mut tiles, mut dig, prices) = dig_costs(config, grid, &rooms);
    let corridors = dig_corridors(
        config,
        &rooms,
        (&tree, &extra),
        &mut tiles,
        &mut dig,
        prices,
    );
    mark_doors(&corridors, &mut tiles, config.width);
    Ok(Dungeon {
        width: config.width,
        height: config.height,
        tiles,
        rooms,
        rooms_requested: config.rooms,
        corridors,
    })
}

/// The map's grid, or why the config cannot make a dungeon: checked before anything per room
/// is reserved.
fn check_config(config: &DungeonConfig) -> Result<Grid, DungeonError> {
    let (w, h) = (config.width, config.height);
    let grid = Grid::new(w, h).map_err(|e| DungeonError::Size {
        width: w,
        height: h,
        reason: e.to_string(),
    })?;
    if config.rooms == 0 {
        return Err(DungeonError::NoRooms);
    }
    if config.room_min == 0 || config.room_min > config.room_max {
        return Err(DungeonError::RoomSize {
            min: config.room_min,
            max: config.room_max,
            reason: "need 1 <= min <= max".into(),
        });
    }
    if config.step_cost == 0
        || config
            .corridor_step_cost
            .is_some_and(|c| c == 0 || c > config.step_cost)
        || !(config.loops.is_finite() && (0.0..=1.0).contains(&config.loops))
        || config.corridor_width == 0
    {
        return Err(DungeonError::Costs(format!(
            "step {} must be > 0, corridor step {:?} in 1..=step, loops {} in 0..=1, corridor width {} > 0",
            config.step_cost, config.corridor_step_cost, config.loops, config.corridor_width
        )));
    }
    if config.room_min + 2 > w || config.room_min + 2 > h {
        return Err(DungeonError::NothingFits {
            width: w,
            height: h,
            min: config.room_min,
        });
    }
    // Rooms of the smallest side with a tile between them and round the border: checked
    // before anything per room is reserved.
    let fit = |side: u32| ((side - 1) / (config.room_min + 1)) as usize;
    let most = fit(w) * fit(h);
    if config.rooms > most {
        return Err(DungeonError::TooManyRooms {
            rooms: config.rooms,
            most,
            width: w,
            height: h,
            min: config.room_min,
        });
    }
    Ok(grid)
}

/// Step 1: rooms at random spots, without overlap (a gap of `min_gap` between them), within
/// `rooms × attempts_per_room` tries.
fn place_rooms(config: &DungeonConfig, rng: &mut Pcg64) -> Result<Vec<Room>, DungeonError> {
    let (w, h) = (config.width, config.height);
    let mut rooms: Vec<Room> = Vec::with_capacity(config.rooms);
    let max_side_x = config.room_max.min(w - 2);
    let max_side_y = config.room_max.min(h - 2);
    let attempts = config.rooms as u64 * config.attempts_per_room.max(1) as u64;
    for _ in 0..attempts {
        if rooms.len() == config.rooms {
            break;
        }
        let rw = rng.random_range(config.room_min..=max_side_x);
        let rh = rng.random_range(config.room_min..=max_side_y);
        let x = rng.random_range(1..=w - 1 - rw);
        let y = rng.random_range(1..=h - 1 - rh);
        let room = Room {
            min: UVec2::new(x, y),
            size: UVec2::new(rw, rh),
        };
        if rooms
            .iter()
            .all(|r| !room.overlaps_with_gap(r, config.min_gap))
        {
            rooms.push(room);
        }
    }

    if rooms.is_empty() {
        return Err(DungeonError::NothingFits {
            width: w,
            height: h,
            min: config.room_min,
        });
    }
    Ok(rooms)
}

/// Two rooms (indices) a corridor joins.
type RoomPair = (usize, usize);

/// Terrain values of dug rock, of a room's floor and of a corridor's floor.
#[derive(Clone, Copy)]
struct DigPrices {
    rock: u8,
    room: u8,
    corridor: u8,
}

/// Step 3: tiles and the digging costs that steer A*: rock, corridor (cheaper), room (penalty), the
/// outer border (never dug). Costs are in units of half a rock step, so a corridor can be
/// cheaper than rock; the 10-14 model's straight step multiplies them by 10.
fn dig_costs(
    config: &DungeonConfig,
    grid: Grid,
    rooms: &[Room],
) -> (Vec<Tile>, CostField, DigPrices) {
    let (w, h) = (config.width, config.height);
    let unit = config.step_cost as f64 / 2.0;
    let terrain = |c: f64| (c / unit).round().clamp(1.0, 254.0) as u8;
    let rock_t = terrain(config.step_cost as f64);
    let room_t = terrain((config.step_cost + config.room_penalty) as f64);
    let corridor_t = terrain(config.corridor_step_cost.unwrap_or(config.step_cost) as f64);
    let wi = w as usize;
    let mut tiles = vec![Tile::Wall; grid.len()];
    let mut dig = vec![rock_t; grid.len()];
    for (i, t) in dig.iter_mut().enumerate() {
        let (x, y) = (i % wi, i / wi);
        if x == 0 || y == 0 || x == wi - 1 || y == h as usize - 1 {
            *t = WALL;
        }
    }
    for room in rooms {
        for y in room.min.y..room.min.y + room.size.y {
            for x in room.min.x..room.min.x + room.size.x {
                let i = y as usize * wi + x as usize;
                tiles[i] = Tile::Room;
                dig[i] = room_t;
            }
        }
    }
    let dig = CostField::from_costs(grid, dig).expect("no zero costs");
    let prices = DigPrices {
        rock: rock_t,
        room: room_t,
        corridor: corridor_t,
    };
    (tiles, dig, prices)
}

/// Step 4: corridors, tree edges first (then the extra edges that make loops), each carved along
/// an A* path through the digging costs.
fn dig_corridors(
    config: &DungeonConfig,
    rooms: &[Room],
    (tree, extra): (&[RoomPair], &[RoomPair]),
    tiles: &mut [Tile],
    dig: &mut CostField,
    prices: DigPrices,
) -> Vec<Corridor> {
    let (w, h) = (config.width, config.height);
    let wi = w as usize;
    let DigPrices {
        rock: rock_t,
        room: room_t,
        corridor: corridor_t,
    } = prices;
    // 4. Corridors, tree edges first. A* runs from the target room back to the source: horde
    // prices a step by the cell left, so the reversed search charges exactly the tiles stepped
    // onto (a corridor pays for the tiles it digs).
    let mut astar = AStar::new().four_connected(true);
    let mut corridors = Vec::with_capacity(tree.len() + extra.len());
    let mut line = Vec::new();
    let edges = tree
        .iter()
        .map(|&e| (e, true))
        .chain(extra.iter().map(|&e| (e, false)));
    for ((a, b), in_tree) in edges {
        let (ra, rb) = (rooms[a], rooms[b]);
        let set_rooms = |dig: &mut CostField, t: u8| {
            for r in [ra, rb] {
                dig.fill_rect(r.min, r.min + r.size - 1, t)
                    .expect("rooms lie on the map");
            }
        };
        set_rooms(dig, rock_t);
        let found = astar
            .search(dig, rb.center(), ra.center(), CostModel::TenFourteen)
            .expect("room centres are on the map and not walls");
        set_rooms(dig, room_t);
        if found.is_none() {
            continue; // cannot happen: every tile inside the border can be dug
        }
        astar.path_into(&mut line);
        line.reverse();
        let mut crossings = 0;
        for &p in &line {
            let i = p.y as usize * wi + p.x as usize;
            if tiles[i] == Tile::Room && !ra.contains(p) && !rb.contains(p) {
                crossings += 1;
            }
        }
        for &p in &line {
            carve(tiles, dig, w, h, p, config.corridor_width, corridor_t);
        }
        corridors.push(Corridor {
            from: a,
            to: b,
            in_tree,
            cells: line.clone(),
            room_crossings: crossings,
        });
    }
    corridors
}

/// Step 5: doors where a corridor's centre line passes between rock-dug floor and a room.
fn mark_doors(corridors: &[Corridor], tiles: &mut [Tile], w: u32) {
    let wi = w as usize;
    for c in corridors {
        for pair in c.cells.windows(2) {
            let (i, j) = (
                pair[0].y as usize * wi + pair[0].x as usize,
                pair[1].y as usize * wi + pair[1].x as usize,
            );
            match (tiles[i], tiles[j]) {
                (Tile::Corridor, Tile::Room) => tiles[i] = Tile::Door,
                (Tile::Room, Tile::Corridor) => tiles[j] = Tile::Door,
                _ => {}
            }
        }
    }
}

/// Carve a `width`-wide brush centred on `p` (rock only; rooms stay rooms; the border stays).
fn carve(tiles: &mut [Tile], dig: &mut CostField, w: u32, h: u32, p: UVec2, width: u32, t: u8) {
    let lo = (width - 1) / 2;
    let hi = width / 2;
    let x0 = p.x.saturating_sub(lo).max(1);
    let y0 = p.y.saturating_sub(lo).max(1);
    let x1 = (p.x + hi).min(w - 2);
    let y1 = (p.y + hi).min(h - 2);
    for y in y0..=y1 {
        for x in x0..=x1 {
            let i = y as usize * w as usize + x as usize;
            if tiles[i] == Tile::Wall {
                tiles[i] = Tile::Corridor;
                dig.set(UVec2::new(x, y), t).expect("inside the map");
            }
        }
    }
}

/// An edge of the room graph: two room indices, smaller first.
type RoomEdge = (usize, usize);

/// The minimum spanning tree of the rooms' Delaunay triangulation, and the triangulation's other
/// edges. Collinear or too few centres fall back to the complete graph, whose tree is the chain.
fn room_graph(rooms: &[Room]) -> (Vec<RoomEdge>, Vec<RoomEdge>) {
    let n = rooms.len();
    if n < 2 {
        return (Vec::new(), Vec::new());
    }
    let points: Vec<delaunator::Point> = rooms
        .iter()
        .map(|r| {
            let c = r.center();
            delaunator::Point {
                x: c.x as f64,
                y: c.y as f64,
            }
        })
        .collect();
    let tri = delaunator::triangulate(&points);
    let mut edges: Vec<(usize, usize)> = Vec::new();
    if tri.triangles.is_empty() {
        for a in 0..n {
            for b in a + 1..n {
                edges.push((a, b));
            }
        }
    } else {
        for t in tri.triangles.chunks_exact(3) {
            for (a, b) in [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])] {
                edges.push((a.min(b), a.max(b)));
            }
        }
        edges.sort_unstable();
        edges.dedup();
    }
    let mut graph = UnGraph::<(), u64>::with_capacity(n, edges.len());
    for _ in 0..n {
        graph.add_node(());
    }
    for &(a, b) in &edges {
        let d = rooms[a].center().as_ivec2() - rooms[b].center().as_ivec2();
        // Squared length orders edges as length does, and stays an exact integer.
        let len2 = (d.x as i64 * d.x as i64 + d.y as i64 * d.y as i64) as u64;
        graph.add_edge(NodeIndex::new(a), NodeIndex::new(b), len2);
    }
    let mut tree = Vec::with_capacity(n - 1);
    for el in petgraph::algo::min_spanning_tree(&graph) {
        if let petgraph::data::Element::Edge { source, target, .. } = el {
            tree.push((source.min(target), source.max(target)));
        }
    }
    tree.sort_unstable();
    let extra = edges
        .into_iter()
        .filter(|e| tree.binary_search(e).is_err())
        .collect();
    (tree, extra)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IntegrationBuilder;

    fn connected(d: &Dungeon) -> bool {
        // Every room reachable from room 0 over floor tiles (4-connected, like the corridors).
        let cost = d.to_cost_field();
        let field = IntegrationBuilder::new()
            .build(&cost, &[d.rooms()[0].center()], CostModel::TenFourteen)
            .unwrap();
        d.rooms().iter().all(|r| field.get(r.center()).is_some())
    }

    #[test]
    fn every_room_is_reachable_and_corridors_go_around_rooms() {
        for seed in 0..40 {
            let d = generate(&DungeonConfig::default(), seed).unwrap();
            assert!(connected(&d), "seed {seed}");
            assert_eq!(
                d.corridors().iter().filter(|c| c.in_tree).count(),
                d.rooms().len() - 1
            );
            assert_eq!(d.room_crossings(), 0, "seed {seed}");
            for c in d.corridors() {
                assert_eq!(c.cells.first(), Some(&d.rooms()[c.from].center()));
                assert_eq!(c.cells.last(), Some(&d.rooms()[c.to].center()));
                for w in c.cells.windows(2) {
                    let step = w[0].as_ivec2() - w[1].as_ivec2();
                    assert_eq!(step.x.abs() + step.y.abs(), 1, "4-connected");
                    assert!(d.tile(w[1]).unwrap().is_floor());
                }
            }
        }
    }

    #[test]
    fn a_crossing_is_counted_when_there_is_no_way_around() {
        // A 3-tile-high strip: every room spans the full height. With all extra edges carved,
        // the corridor from the leftmost room to the rightmost must cross the middle one.
        let config = DungeonConfig {
            width: 40,
            height: 5,
            rooms: 3,
            room_min: 3,
            room_max: 3,
            min_gap: 2,
            loops: 1.0,
            ..DungeonConfig::default()
        };
        let mut crossed = 0;
        for seed in 0..30 {
            let d = generate(&config, seed).unwrap();
            assert!(connected(&d));
            crossed += d.room_crossings();
        }
        assert!(crossed > 0);
    }

    #[test]
    fn degenerate_configs_give_clear_errors_or_small_dungeons() {
        let one = DungeonConfig {
            rooms: 1,
            ..DungeonConfig::default()
        };
        let d = generate(&one, 3).unwrap();
        assert_eq!(d.rooms().len(), 1);
        assert!(d.corridors().is_empty());
        let two = DungeonConfig {
            rooms: 2,
            ..DungeonConfig::default()
        };
        let d = generate(&two, 3).unwrap();
        assert_eq!(d.corridors().len(), 1);
        assert!(connected(&d));
        let too_big = DungeonConfig {
            room_min: 200,
            room_max: 300,
            ..DungeonConfig::default()
        };
        assert!(matches!(
            generate(&too_big, 1),
            Err(DungeonError::NothingFits { .. })
        ));
        let zero = DungeonConfig {
            width: 0,
            ..DungeonConfig::default()
        };
        assert!(matches!(generate(&zero, 1), Err(DungeonError::Size { .. })));
        // A billion rooms are refused before anything is reserved for them: sixteen rooms of
        // side 5 with their gaps fit across 100 tiles, so 256 in all.
        let crowded = DungeonConfig {
            rooms: 1_000_000_000,
            room_min: 5,
            ..DungeonConfig::default()
        };
        assert_eq!(
            generate(&crowded, 1),
            Err(DungeonError::TooManyRooms {
                rooms: 1_000_000_000,
                most: 256,
                width: 100,
                height: 100,
                min: 5
            })
        );
        assert_eq!(
            generate(
                &DungeonConfig {
                    rooms: 0,
                    ..DungeonConfig::default()
                },
                1
            ),
            Err(DungeonError::NoRooms)
        );
        let inverted = DungeonConfig {
            room_min: 9,
            room_max: 4,
            ..DungeonConfig::default()
        };
        assert!(matches!(
            generate(&inverted, 1),
            Err(DungeonError::RoomSize { .. })
        ));
        // As many rooms as could fit at the smallest side (16 in 30 x 30): random placement
        // places fewer, reports it, and stays connected.
        let packed = DungeonConfig {
            width: 30,
            height: 30,
            rooms: 16,
            ..DungeonConfig::default()
        };
        let d = generate(&packed, 5).unwrap();
        assert!(d.rooms().len() < 16 && d.rooms_requested() == 16);
        assert!(connected(&d));
        // Far more than that: refused.
        let crowded = DungeonConfig {
            rooms: 500,
            ..packed
        };
        assert!(matches!(
            generate(&crowded, 5),
            Err(DungeonError::TooManyRooms {
                rooms: 500,
                most: 16,
                ..
            })
        ));
    }

    #[test]
    fn collinear_rooms_still_join() {
        let config = DungeonConfig {
            width: 80,
            height: 7,
            rooms: 6,
            room_min: 5,
            room_max: 5,
            min_gap: 1,
            ..DungeonConfig::default()
        };
        for seed in 0..10 {
            let d = generate(&config, seed).unwrap();
            assert!(
                d.rooms().iter().all(|r| r.center().y == 3),
                "all centres on one row"
            );
            assert!(connected(&d));
            assert_eq!(
                d.corridors().iter().filter(|c| c.in_tree).count(),
                d.rooms().len() - 1
            );
        }
    }

    #[test]
    fn wide_corridors_and_exports() {
        let config = DungeonConfig {
            corridor_width: 3,
            ..DungeonConfig::default()
        };
        let d = generate(&config, 11).unwrap();
        assert!(connected(&d));
        let ascii = d.to_ascii();
        assert_eq!(ascii.lines().count(), 100);
        assert!(ascii.lines().all(|l| l.len() == 100));
        assert!(ascii.contains('+') && ascii.contains(',') && ascii.contains('.'));
        // The border is never dug.
        assert!(ascii.lines().next().unwrap().chars().all(|c| c == '#'));
        let map = crate::io::write_map(&d.to_cost_field()).unwrap();
        assert_eq!(
            crate::io::parse_map(map.as_bytes(), "d").unwrap(),
            d.to_cost_field()
        );
        let json = d.to_tiled_json();
        assert!(json.contains("\"encoding\":\"csv\"") && json.contains("\"width\":100"));
        let data_len = json
            .split("\"data\":[")
            .nth(1)
            .unwrap()
            .split(']')
            .next()
            .unwrap()
            .split(',')
            .count();
        assert_eq!(data_len, 100 * 100);
    }
}
