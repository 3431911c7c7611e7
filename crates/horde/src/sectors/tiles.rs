//! Flow-field tiles: integration and flow for the sectors a route passes through, one sector at a
//! time from the goal back to the start, each seeded with the cost-to-goal of the tiles already
//! built beside it, so costs carry across sector borders instead of restarting at each exit.

use glam::UVec2;

use super::local::{Rect, SectorFields};
use super::{Route, SectorError, SectorGraph, SectorUpdate};
use crate::cost::{CostField, WALL};
use crate::flow::{FLOW_GOAL, FLOW_UNREACHABLE, FLOW_WALL, FlowField};
use crate::grid::{Dir8, SizeMismatch};

/// One sector's tile: cost-to-goal and flow byte for each of its cells.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tile {
    rect: Rect,
    /// Raw cost to the goal by local index (`u64::MAX`: no way to the goal through the tiles).
    cost: Vec<u64>,
    /// Flow byte by local index: a direction 0–7, [`FLOW_GOAL`], [`FLOW_UNREACHABLE`] or
    /// [`FLOW_WALL`], as in a [`FlowField`](crate::FlowField).
    flow: Vec<u8>,
}

/// The tiles built towards one goal cell: a tree of sectors that every route to that goal can
/// join. Following the arrows from any cell with a finite cost reaches the goal, and the cost to
/// the goal drops at every step (arrows never loop, within a tile or across tiles).
///
/// Memory: 9 bytes per cell of each tile built (side² cells per tile) and 4 bytes per sector of
/// the map, plus the scratch of one sector's search.
#[derive(Debug, Clone)]
pub struct FlowTiles {
    goal: UVec2,
    side: u32,
    sectors_x: u32,
    width: u32,
    height: u32,
    goal_sector: u32,
    /// Per sector of the map: the index of its tile in `tiles`, or `u32::MAX`.
    slot: Vec<u32>,
    tiles: Vec<Tile>,
    fields: SectorFields,
    seeds: Vec<(u32, u64)>,
}

impl FlowTiles {
    /// No tiles yet, towards `goal`. O(sectors).
    pub fn new(
        graph: &SectorGraph,
        cost: &CostField,
        goal: UVec2,
    ) -> Result<FlowTiles, SectorError> {
        SizeMismatch::check(
            "cost field",
            SizeMismatch::of(cost.grid()),
            "sector graph",
            SizeMismatch::of(&graph.grid),
        )?;
        graph.check_end(cost, goal, "goal")?;
        let (sx, sy) = graph.sectors();
        Ok(FlowTiles {
            goal,
            side: graph.side,
            sectors_x: sx,
            width: graph.grid.width(),
            height: graph.grid.height(),
            goal_sector: graph.sector_of(goal).expect("checked"),
            slot: vec![u32::MAX; (sx * sy) as usize],
            tiles: Vec::new(),
            fields: SectorFields::default(),
            seeds: Vec::new(),
        })
    }

    /// The goal cell.
    pub fn goal(&self) -> UVec2 {
        self.goal
    }

    /// Build the tiles `route` needs (it must end at this goal), from the goal's end back to
    /// the start's, skipping those already built that lead from the route's entry into their
    /// sector at no more than the route's cost: a route that meets the tree built for earlier
    /// routes costs only its new sectors. Afterwards following the arrows from the route's start
    /// costs no more than the route. Returns the number of tiles built. Cost: one Dijkstra over
    /// each tile's cells.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
    /// let map = horde::maps::demo_map();
    /// let graph = SectorGraph::build(&map, 16, horde::CostModel::TenFourteen).unwrap();
    /// let (start, goal) = (UVec2::new(2, 2), UVec2::new(125, 125));
    /// let route = RouteSearch::new().route(&graph, &map, start, goal).unwrap().unwrap();
    /// let mut tiles = FlowTiles::new(&graph, &map, goal).unwrap();
    /// tiles.extend(&graph, &map, &route).unwrap();
    /// // Follow the arrows from the start: every step lowers the cost to the goal.
    /// let mut at = start;
    /// while at != goal {
    ///     let next = tiles.next_cell(at).expect("the tiles lead to the goal");
    ///     assert!(tiles.cost_to_goal(next) < tiles.cost_to_goal(at));
    ///     at = next;
    /// }
    /// ```
    pub fn extend(
        &mut self,
        graph: &SectorGraph,
        cost: &CostField,
        route: &Route,
    ) -> Result<usize, SectorError> {
        Ok(self.extend_some(graph, cost, route, usize::MAX)?.0)
    }

    /// [`FlowTiles::extend`] a budget at a time: build at most `max_tiles` tiles (from the
    /// goal's end) and say whether the route is served all the way from its start. Call again
    /// with the same route until it is; units meanwhile steer towards the route's next waypoint.
    /// Returns the tiles built and whether the route is done. Cost: O(route's sectors) to walk
    /// the route plus one Dijkstra per tile built.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
    /// let map = horde::maps::demo_map();
    /// let graph = SectorGraph::build(&map, 16, horde::CostModel::TenFourteen).unwrap();
    /// let (start, goal) = (UVec2::new(2, 2), UVec2::new(125, 125));
    /// let route = RouteSearch::new().route(&graph, &map, start, goal).unwrap().unwrap();
    /// let mut tiles = FlowTiles::new(&graph, &map, goal).unwrap();
    /// let mut rounds = 1;
    /// while !tiles.extend_some(&graph, &map, &route, 1).unwrap().1 {
    ///     rounds += 1;
    /// }
    /// // One tile a round, the last round included.
    /// assert_eq!(rounds, tiles.tile_count());
    /// assert!(tiles.cost_to_goal(start).unwrap() <= route.cost);
    /// ```
    pub fn extend_some(
        &mut self,
        graph: &SectorGraph,
        cost: &CostField,
        route: &Route,
        max_tiles: usize,
    ) -> Result<(usize, bool), SectorError> {
        SizeMismatch::check(
            "cost field",
            SizeMismatch::of(cost.grid()),
            "sector graph",
            SizeMismatch::of(&graph.grid),
        )?;
        if graph.side != self.side {
            return Err(SectorError::OtherSide {
                graph: graph.side,
                tiles: self.side,
            });
        }
        if route.waypoints.last() != Some(&self.goal) {
            let end = route.waypoints.last().copied().unwrap_or(UVec2::MAX);
            return Err(SectorError::OtherGoal {
                route: (end.x, end.y),
                tiles: (self.goal.x, self.goal.y),
            });
        }
        // The goal may have been walled in since.
        graph.check_end(cost, self.goal, "goal")?;
        let mut built = 0;
        // Walk the route backwards, a sector at a time, with the waypoints inside it.
        let mut end = route.waypoints.len();
        while end > 0 {
            let sector = graph
                .sector_of(route.waypoints[end - 1])
                .expect("on the map");
            let mut begin = end - 1;
            while begin > 0 && graph.sector_of(route.waypoints[begin - 1]) == Some(sector) {
                begin -= 1;
            }
            // A tile already built serves if it leads from where the route enters the sector
            // at no more than the route's own cost from there; otherwise it is (re)built from
            // the tiles now beside it, which makes it so (by induction from the goal's end).
            let entry = route.waypoints[begin];
            let serves = self
                .cost_to_goal(entry)
                .is_some_and(|c| c <= route.remaining[begin]);
            if !serves {
                if built == max_tiles {
                    return Ok((built, false));
                }
                self.build_tile(graph, cost, sector);
                built += 1;
            }
            end = begin;
        }
        Ok((built, true))
    }

    /// After [`SectorGraph::update`]: drop every tile if any of them lies in a rebuilt sector
    /// (a tile's costs depend on the tiles beside it, so one stale tile can mislead the rest).
    /// Returns whether the tiles were dropped; routes to this goal are then built again with
    /// [`FlowTiles::extend`]. O(sectors rebuilt).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
    /// use horde::{CostModel, WALL};
    /// let mut map = horde::maps::demo_map();
    /// let mut graph = SectorGraph::build(&map, 16, CostModel::TenFourteen).unwrap();
    /// let (start, goal) = (UVec2::new(2, 2), UVec2::new(125, 125));
    /// let route = RouteSearch::new().route(&graph, &map, start, goal).unwrap().unwrap();
    /// let mut tiles = FlowTiles::new(&graph, &map, goal).unwrap();
    /// tiles.extend(&graph, &map, &route).unwrap();
    /// // A wall far from every tile leaves them; one on a tile drops them.
    /// let far = graph.sector_of(UVec2::new(120, 5)).unwrap();
    /// if !tiles.has_tile(far) {
    ///     map.set(UVec2::new(120, 5), WALL).unwrap();
    ///     let update = graph.update(&map, &[(UVec2::new(120, 5), UVec2::new(120, 5))]).unwrap();
    ///     assert!(!tiles.forget_stale(&update));
    /// }
    /// map.set(UVec2::new(3, 3), WALL).unwrap();
    /// let update = graph.update(&map, &[(UVec2::new(3, 3), UVec2::new(3, 3))]).unwrap();
    /// assert!(tiles.forget_stale(&update));
    /// assert_eq!(tiles.tile_count(), 0);
    /// ```
    pub fn forget_stale(&mut self, update: &SectorUpdate) -> bool {
        if !update.sectors.iter().any(|&s| self.has_tile(s)) {
            return false;
        }
        self.tiles.clear();
        self.slot.fill(u32::MAX);
        true
    }

    /// Copy every tile's flow bytes into `flow`, a field over the whole map, so a
    /// [`Crowd`](crate::crowd::Crowd) group can follow the tiles like any flow field; around the
    /// tiles, up to a sector's side away, walkable cells get arrows back into them (the shortest
    /// way in steps), so agents pushed off the tiles by their neighbours find their way back.
    /// Cells further out are left as they are ([`FLOW_UNREACHABLE`] in a new field). Returns the
    /// cells written. O(cells of the tiles and of the band around them); the map-wide field
    /// costs 1 byte per cell.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
    /// use horde::{FlowField, FLOW_GOAL};
    /// let map = horde::maps::demo_map();
    /// let graph = SectorGraph::build(&map, 16, horde::CostModel::TenFourteen).unwrap();
    /// let (start, goal) = (UVec2::new(2, 2), UVec2::new(125, 125));
    /// let route = RouteSearch::new().route(&graph, &map, start, goal).unwrap().unwrap();
    /// let mut tiles = FlowTiles::new(&graph, &map, goal).unwrap();
    /// tiles.extend(&graph, &map, &route).unwrap();
    /// let mut flow = FlowField::new(*map.grid());
    /// assert!(tiles.write_flow(&map, &mut flow).unwrap() > tiles.tile_count() * 16 * 16);
    /// assert_eq!(flow.byte(goal), Some(FLOW_GOAL));
    /// assert_eq!(flow.byte(start), tiles.flow_byte(start));
    /// ```
    pub fn write_flow(&self, cost: &CostField, flow: &mut FlowField) -> Result<usize, SectorError> {
        SizeMismatch::check(
            "flow field",
            SizeMismatch::of(flow.grid()),
            "tiles' map",
            (self.width, self.height),
        )?;
        SizeMismatch::check(
            "cost field",
            SizeMismatch::of(cost.grid()),
            "tiles' map",
            (self.width, self.height),
        )?;
        let (w, h) = (self.width, self.height);
        let costs = cost.costs();
        let mut written = 0;
        let mut frontier = Vec::new();
        for tile in &self.tiles {
            let r = tile.rect;
            for (ly, row) in tile.flow.chunks_exact(r.w as usize).enumerate() {
                let at = (r.y0 as usize + ly) * w as usize + r.x0 as usize;
                flow.cells[at..at + r.w as usize].copy_from_slice(row);
                written += row.len();
            }
            // The tile's edge cells that lead to the goal start the band.
            for i in 0..r.w * r.h {
                let (lx, ly) = (i % r.w, i / r.w);
                let edge = lx == 0 || ly == 0 || lx + 1 == r.w || ly + 1 == r.h;
                if edge && tile.cost[i as usize] != u64::MAX {
                    frontier.push((r.y0 + ly) * w + r.x0 + lx);
                }
            }
        }
        // The band: a breadth-first search outwards over cells outside every tile, each
        // pointing at the cell it was reached from.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..self.side {
            let mut next = Vec::new();
            for &c in &frontier {
                let (x, y) = (c % w, c / w);
                for dir in Dir8::ALL {
                    let (dx, dy) = dir.offset();
                    let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
                    if nx >= w || ny >= h {
                        continue;
                    }
                    let n = ny * w + nx;
                    // The unit steps from `n` back towards `c`.
                    let back = dir.opposite();
                    if self.tile_of(UVec2::new(nx, ny)).is_some()
                        || !step_is_legal(costs, w, h, nx, ny, back)
                        || !seen.insert(n)
                    {
                        continue;
                    }
                    flow.cells[n as usize] = back.index() as u8;
                    written += 1;
                    next.push(n);
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        Ok(written)
    }

    /// The raw cost to the goal from `cell` through the tiles, if its tile is built and leads
    /// there. O(1).
    pub fn cost_to_goal(&self, cell: UVec2) -> Option<u64> {
        let (tile, i) = self.tile_of(cell)?;
        Some(tile.cost[i]).filter(|&c| c != u64::MAX)
    }

    /// The flow byte at `cell` (a direction 0–7 as in [`Dir8`], [`FLOW_GOAL`],
    /// [`FLOW_UNREACHABLE`] or [`FLOW_WALL`]), if its tile is built. O(1).
    pub fn flow_byte(&self, cell: UVec2) -> Option<u8> {
        let (tile, i) = self.tile_of(cell)?;
        Some(tile.flow[i])
    }

    /// The cell the arrow at `cell` leads to, if its tile is built and leads to the goal (`None`
    /// at the goal itself). O(1).
    pub fn next_cell(&self, cell: UVec2) -> Option<UVec2> {
        let dir = Dir8::from_index(self.flow_byte(cell)?)?;
        let (dx, dy) = dir.offset();
        Some(UVec2::new(
            cell.x.wrapping_add_signed(dx),
            cell.y.wrapping_add_signed(dy),
        ))
    }

    /// Tiles built so far.
    pub fn tile_count(&self) -> usize {
        self.tiles.len()
    }

    /// Whether `sector`'s tile is built.
    pub fn has_tile(&self, sector: u32) -> bool {
        self.slot
            .get(sector as usize)
            .is_some_and(|&s| s != u32::MAX)
    }

    /// Bytes held by the tiles and the sector table.
    pub fn memory_bytes(&self) -> usize {
        self.slot.len() * 4
            + self
                .tiles
                .iter()
                .map(|t| t.cost.len() * 8 + t.flow.len())
                .sum::<usize>()
    }

    fn tile_of(&self, cell: UVec2) -> Option<(&Tile, usize)> {
        if cell.x >= self.width || cell.y >= self.height {
            return None;
        }
        let sector = (cell.y / self.side) * self.sectors_x + cell.x / self.side;
        let tile = self.tiles.get(self.slot[sector as usize] as usize)?;
        Some((tile, tile.rect.local(cell.x, cell.y) as usize))
    }

    /// (Re)build `sector`'s tile: Dijkstra inside it from the goal (if it is there) and from every
    /// cell of a built neighbouring tile that a legal step reaches, at that cell's cost plus the
    /// step's.
    fn build_tile(&mut self, graph: &SectorGraph, cost: &CostField, sector: u32) {
        let rect = graph.rect(sector);
        let (costs, w, h, model) = (
            cost.costs(),
            graph.grid.width(),
            graph.grid.height(),
            graph.model,
        );
        self.seeds.clear();
        if sector == self.goal_sector {
            self.seeds.push((rect.local(self.goal.x, self.goal.y), 0));
        }
        let outside = |x: u32, y: u32| {
            x < rect.x0 || y < rect.y0 || x >= rect.x0 + rect.w || y >= rect.y0 + rect.h
        };
        for i in 0..rect.w * rect.h {
            let (lx, ly) = (i % rect.w, i / rect.w);
            if lx != 0 && ly != 0 && lx + 1 != rect.w && ly + 1 != rect.h {
                continue;
            }
            let (x, y) = (rect.x0 + lx, rect.y0 + ly);
            if let Some((_, value)) = self.best_exit(graph, costs, w, h, x, y, &outside) {
                self.seeds.push((i, value));
            }
        }
        let dist = self
            .fields
            .costs_to(costs, w, model, rect, &self.seeds)
            .to_vec();
        let base = model.base_costs();
        let mut flow = vec![FLOW_UNREACHABLE; dist.len()];
        for (i, f) in flow.iter_mut().enumerate() {
            let (x, y) = (rect.x0 + i as u32 % rect.w, rect.y0 + i as u32 / rect.w);
            let here = costs[(y * w + x) as usize];
            if here == WALL {
                *f = FLOW_WALL;
                continue;
            }
            if dist[i] == u64::MAX {
                continue;
            }
            if sector == self.goal_sector && UVec2::new(x, y) == self.goal {
                *f = FLOW_GOAL;
                continue;
            }
            // The arrow: the legal step whose cost plus the cost-to-goal beyond is least (the
            // first in direction order on a tie), inside the tile or into a built neighbour.
            let mut best = (u64::MAX, FLOW_UNREACHABLE);
            for dir in Dir8::ALL {
                if !step_is_legal(costs, w, h, x, y, dir) {
                    continue;
                }
                let (dx, dy) = dir.offset();
                let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
                let beyond = if outside(nx, ny) {
                    self.cost_to_goal(UVec2::new(nx, ny)).unwrap_or(u64::MAX)
                } else {
                    dist[rect.local(nx, ny) as usize]
                };
                if beyond == u64::MAX {
                    continue;
                }
                let total = beyond + base[dir.index()] as u64 * here as u64;
                if total < best.0 {
                    best = (total, dir.index() as u8);
                }
            }
            *f = best.1;
        }
        let tile = Tile {
            rect,
            cost: dist,
            flow,
        };
        match self.slot[sector as usize] {
            u32::MAX => {
                self.slot[sector as usize] = self.tiles.len() as u32;
                self.tiles.push(tile);
            }
            s => self.tiles[s as usize] = tile,
        }
    }

    /// The cheapest legal step from map cell (x, y) into a built tile outside `outside`'s
    /// rectangle, and its cost plus the cost-to-goal there.
    #[allow(clippy::too_many_arguments)]
    fn best_exit(
        &self,
        graph: &SectorGraph,
        costs: &[u8],
        w: u32,
        h: u32,
        x: u32,
        y: u32,
        outside: &impl Fn(u32, u32) -> bool,
    ) -> Option<(Dir8, u64)> {
        let here = costs[(y * w + x) as usize];
        if here == WALL {
            return None;
        }
        let mut best: Option<(Dir8, u64)> = None;
        for dir in Dir8::ALL {
            if !step_is_legal(costs, w, h, x, y, dir) {
                continue;
            }
            let (dx, dy) = dir.offset();
            let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
            if !outside(nx, ny) {
                continue;
            }
            let Some(beyond) = self.cost_to_goal(UVec2::new(nx, ny)) else {
                continue;
            };
            let total = beyond + graph.model.step(dir, here) as u64;
            if best.is_none_or(|(_, b)| total < b) {
                best = Some((dir, total));
            }
        }
        best
    }
}

/// Whether a unit may step from map cell (x, y) in `dir`: both cells on the map and walkable,
/// and for a diagonal both cells it passes between walkable too.
fn step_is_legal(costs: &[u8], w: u32, h: u32, x: u32, y: u32, dir: Dir8) -> bool {
    let (dx, dy) = dir.offset();
    let (nx, ny) = (x as i64 + dx as i64, y as i64 + dy as i64);
    let open = |x: i64, y: i64| {
        x >= 0
            && y >= 0
            && x < w as i64
            && y < h as i64
            && costs[(y * w as i64 + x) as usize] != WALL
    };
    open(x as i64, y as i64)
        && open(nx, ny)
        && (!dir.is_diagonal() || (open(nx, y as i64) && open(x as i64, ny)))
}
