//! Flow-field tiles: integration and flow for the sectors a route passes through, one sector at a
//! time from the goal back to the start, each seeded with the cost-to-goal of the tiles already
//! built beside it, so costs carry across sector borders instead of restarting at each exit.

use glam::UVec2;

use super::local::{Rect, SectorFields};
use super::{Route, RouteSearch, SectorError, SectorGraph, SectorUpdate};
use crate::cost::{CostField, WALL};
use crate::flow::{FLOW_GOAL, FLOW_UNREACHABLE, FLOW_WALL, FlowField};
use crate::grid::{Dir8, Grid, SizeMismatch};

/// One sector's tile: cost-to-goal and flow byte for each of its cells.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tile {
    rect: Rect,
    /// Raw cost to the goal by local index (`u64::MAX`: no way to the goal through the tiles).
    cost: Vec<u64>,
    /// Flow byte by local index: a direction 0–7, [`FLOW_GOAL`], [`FLOW_UNREACHABLE`] or
    /// [`FLOW_WALL`], as in a [`FlowField`].
    flow: Vec<u8>,
}

/// The tiles built towards one goal cell: a tree of sectors that every route to that goal can
/// join. Following the arrows from any cell with a finite cost reaches the goal, and the cost to
/// the goal drops at every step (arrows never loop, within a tile or across tiles).
///
/// Memory: 9 bytes per cell of each tile built (side² cells per tile; a dropped tile's buffers
/// are kept for the next tiles) and 4 bytes per sector of the map, plus the scratch of one
/// sector's search (about 40 bytes more per sector built: which way its builds went).
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
    /// Scratch: the arrows of the tile being built, from the library's flow kernel.
    inner_flow: Option<FlowField>,
    /// Scratch: per rim cell of the tile being built (in `rim_cells` order), its best step out
    /// (direction, total), or [`NO_EXIT`].
    exits: Vec<(u8, u64)>,
    /// The buffers of dropped tiles, reused by the next tiles built.
    spare_costs: Vec<Vec<u64>>,
    spare_flows: Vec<Vec<u8>>,
}

/// A rim cell with no step out into a built tile.
const NO_EXIT: (u8, u64) = (FLOW_UNREACHABLE, u64::MAX);

impl FlowTiles {
    /// No tiles yet, towards `goal`. O(sectors).
    pub fn new(
        graph: &SectorGraph,
        cost: &CostField,
        goal: UVec2,
    ) -> Result<FlowTiles, SectorError> {
        graph.check_cost(cost)?;
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
            inner_flow: None,
            exits: Vec::new(),
            spare_costs: Vec::new(),
            spare_flows: Vec::new(),
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
        self.extend_from(graph, cost, route, max_tiles, None)
    }

    /// [`FlowTiles::extend`] for the route `search` found last: the goal's tile, built first
    /// and from the goal alone, is the field the search built over the goal's sector, so it is
    /// taken from there (when the search's last route ended at this goal and that sector's
    /// costs are unchanged) and only the other tiles are searched. The tiles are the same as
    /// [`FlowTiles::extend`]'s. Cost: as `extend`, less one sector's search.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
    /// let map = horde::maps::demo_map();
    /// let graph = SectorGraph::build(&map, 16, horde::CostModel::Octile).unwrap();
    /// let (start, goal) = (UVec2::new(2, 2), UVec2::new(125, 125));
    /// let mut search = RouteSearch::new();
    /// let route = search.route(&graph, &map, start, goal).unwrap().unwrap();
    /// let mut reused = FlowTiles::new(&graph, &map, goal).unwrap();
    /// let mut own = FlowTiles::new(&graph, &map, goal).unwrap();
    /// assert_eq!(reused.extend_reusing(&graph, &map, &route, &search).unwrap(), own.extend(&graph, &map, &route).unwrap());
    /// for y in 0..128 {
    ///     for x in 0..128 {
    ///         let c = UVec2::new(x, y);
    ///         assert_eq!((reused.cost_to_goal(c), reused.flow_byte(c)), (own.cost_to_goal(c), own.flow_byte(c)));
    ///     }
    /// }
    /// ```
    pub fn extend_reusing(
        &mut self,
        graph: &SectorGraph,
        cost: &CostField,
        route: &Route,
        search: &RouteSearch,
    ) -> Result<usize, SectorError> {
        Ok(self
            .extend_from(graph, cost, route, usize::MAX, Some(search.goal_fields()))?
            .0)
    }

    /// [`FlowTiles::extend_some`], with a field that may answer a tile's search.
    fn extend_from(
        &mut self,
        graph: &SectorGraph,
        cost: &CostField,
        route: &Route,
        max_tiles: usize,
        prior: Option<&SectorFields>,
    ) -> Result<(usize, bool), SectorError> {
        graph.check_cost(cost)?;
        if graph.side != self.side {
            return Err(SectorError::OtherSide {
                graph: graph.side,
                tiles: self.side,
            });
        }
        self.check_goal(route)?;
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
                self.build_tile(graph, cost, sector, prior);
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
        self.drop_tiles();
        true
    }

    /// Start over towards another goal on the same graph's map, keeping this value's buffers
    /// (the dropped tiles' and one sector's search scratch) for the tiles built next, so a loop
    /// over many goals stops allocating once it has built its largest set of tiles. Errors as
    /// [`FlowTiles::new`]. O(sectors).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
    /// let map = horde::maps::demo_map();
    /// let graph = SectorGraph::build(&map, 16, horde::CostModel::Octile).unwrap();
    /// let mut search = RouteSearch::new();
    /// let mut tiles = FlowTiles::new(&graph, &map, UVec2::new(125, 125)).unwrap();
    /// for (start, goal) in [(UVec2::new(2, 2), UVec2::new(125, 125)), (UVec2::new(125, 125), UVec2::new(2, 2))] {
    ///     let route = search.route(&graph, &map, start, goal).unwrap().unwrap();
    ///     tiles.set_goal(&graph, &map, goal).unwrap();
    ///     tiles.extend(&graph, &map, &route).unwrap();
    ///     assert_eq!(tiles.goal(), goal);
    ///     assert!(tiles.cost_to_goal(start).unwrap() <= route.cost);
    /// }
    /// ```
    pub fn set_goal(
        &mut self,
        graph: &SectorGraph,
        cost: &CostField,
        goal: UVec2,
    ) -> Result<(), SectorError> {
        graph.check_cost(cost)?;
        graph.check_end(cost, goal, "goal")?;
        self.drop_tiles();
        let (sx, sy) = graph.sectors();
        self.goal = goal;
        self.side = graph.side;
        self.sectors_x = sx;
        self.width = graph.grid.width();
        self.height = graph.grid.height();
        self.goal_sector = graph.sector_of(goal).expect("checked");
        self.slot.clear();
        self.slot.resize((sx * sy) as usize, u32::MAX);
        Ok(())
    }

    /// Drop every tile, keeping its buffers for the next tiles built.
    fn drop_tiles(&mut self) {
        for tile in self.tiles.drain(..) {
            self.spare_costs.push(tile.cost);
            self.spare_flows.push(tile.flow);
        }
        self.slot.fill(u32::MAX);
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
        self.check_map(cost, flow)?;
        let (w, h) = (self.width, self.height);
        let costs = cost.costs();
        let mut written = 0;
        let mut frontier = Vec::new();
        for tile in &self.tiles {
            let r = tile.rect;
            for (ly, row) in tile.flow.chunks_exact(r.w as usize).enumerate() {
                let at = (r.y0 as usize + ly) * w as usize + r.x0 as usize;
                flow.cells_mut()[at..at + r.w as usize].copy_from_slice(row);
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
                    flow.cells_mut()[n as usize] = back.index() as u8;
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

    /// [`FlowTiles::write_flow`] for a route whose tiles may not all be built yet (see
    /// [`FlowTiles::extend_some`]): over every sector of `route` without a tile, each walkable
    /// cell first gets the legal step that points most nearly at the route's next portal (the
    /// cell where the route enters the following sector), so units there head on at once; then
    /// the tiles and the band around them are written over that, as `write_flow` does. Call it
    /// again as more tiles are built. Returns the number of cells written (a cell written twice
    /// counts twice). O(cells of the route's
    /// sectors and of the band).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
    /// use horde::FlowField;
    /// let map = horde::maps::demo_map();
    /// let graph = SectorGraph::build(&map, 16, horde::CostModel::TenFourteen).unwrap();
    /// let (start, goal) = (UVec2::new(2, 2), UVec2::new(125, 125));
    /// let route = RouteSearch::new().route(&graph, &map, start, goal).unwrap().unwrap();
    /// let mut tiles = FlowTiles::new(&graph, &map, goal).unwrap();
    /// tiles.extend_some(&graph, &map, &route, 1).unwrap(); // only the goal's tile so far
    /// let mut flow = FlowField::new(*map.grid());
    /// tiles.write_route_flow(&map, &route, &mut flow).unwrap();
    /// // The start's sector has no tile, yet its cells have a way to go.
    /// assert!(tiles.flow_byte(start).is_none());
    /// assert!(flow.dir(start).is_some());
    /// ```
    pub fn write_route_flow(
        &self,
        cost: &CostField,
        route: &Route,
        flow: &mut FlowField,
    ) -> Result<usize, SectorError> {
        self.check_map(cost, flow)?;
        self.check_goal(route)?;
        let (w, h) = (self.width, self.height);
        let costs = cost.costs();
        let sector_of = |c: UVec2| (c.y / self.side) * self.sectors_x + c.x / self.side;
        let mut written = 0;
        let mut k = 0;
        while k < route.waypoints.len() {
            // The run of waypoints in one sector, and the first one after it.
            let sector = sector_of(route.waypoints[k]);
            let mut end = k;
            while end < route.waypoints.len() && sector_of(route.waypoints[end]) == sector {
                end += 1;
            }
            let target = route.waypoints[end.min(route.waypoints.len() - 1)].as_vec2();
            k = end;
            if self.slot[sector as usize] != u32::MAX {
                continue;
            }
            let (sx, sy) = (sector % self.sectors_x, sector / self.sectors_x);
            let (x0, y0) = (sx * self.side, sy * self.side);
            for y in y0..(y0 + self.side).min(h) {
                for x in x0..(x0 + self.side).min(w) {
                    let toward = (target - UVec2::new(x, y).as_vec2()).normalize_or_zero();
                    let mut best = (f32::NEG_INFINITY, FLOW_UNREACHABLE);
                    if costs[(y * w + x) as usize] == WALL {
                        best.1 = FLOW_WALL;
                    } else {
                        for dir in Dir8::ALL {
                            if step_is_legal(costs, w, h, x, y, dir) {
                                let aim = dir.vec2().normalize().dot(toward);
                                if aim > best.0 {
                                    best = (aim, dir.index() as u8);
                                }
                            }
                        }
                    }
                    flow.cells_mut()[(y * w + x) as usize] = best.1;
                    written += 1;
                }
            }
        }
        Ok(written + self.write_flow(cost, flow)?)
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

    /// Bytes held by the tiles, the buffers kept from dropped tiles and the sector table.
    pub fn memory_bytes(&self) -> usize {
        self.slot.len() * 4
            + self
                .tiles
                .iter()
                .map(|t| t.cost.len() * 8 + t.flow.len())
                .sum::<usize>()
            + self
                .spare_costs
                .iter()
                .map(|c| c.capacity() * 8)
                .sum::<usize>()
            + self.spare_flows.iter().map(Vec::capacity).sum::<usize>()
    }

    /// Refuse a cost or flow field of another size than the tiles' map.
    fn check_map(&self, cost: &CostField, flow: &FlowField) -> Result<(), SectorError> {
        for (what, grid) in [("flow field", flow.grid()), ("cost field", cost.grid())] {
            SizeMismatch::check(
                what,
                SizeMismatch::of(grid),
                "tiles' map",
                (self.width, self.height),
            )?;
        }
        Ok(())
    }

    /// Refuse a route that does not end at the tiles' goal.
    fn check_goal(&self, route: &Route) -> Result<(), SectorError> {
        if route.waypoints.last() == Some(&self.goal) {
            return Ok(());
        }
        let end = route.waypoints.last().copied().unwrap_or(UVec2::MAX);
        Err(SectorError::OtherGoal {
            route: (end.x, end.y),
            tiles: (self.goal.x, self.goal.y),
        })
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
    fn build_tile(
        &mut self,
        graph: &SectorGraph,
        cost: &CostField,
        sector: u32,
        prior: Option<&SectorFields>,
    ) {
        let rect = graph.rect(sector);
        let (costs, w, model) = (cost.costs(), graph.grid.width(), graph.model);
        self.seeds.clear();
        if sector == self.goal_sector {
            self.seeds.push((rect.local(self.goal.x, self.goal.y), 0));
        }
        let outside = |x: u32, y: u32| {
            x < rect.x0 || y < rect.y0 || x >= rect.x0 + rect.w || y >= rect.y0 + rect.h
        };
        // Each rim cell's best step out into a built tile (in `rim_cells` order): a seed, and
        // the outside half of its arrow below.
        let mut exits = std::mem::take(&mut self.exits);
        exits.clear();
        let mut seeds = std::mem::take(&mut self.seeds);
        let around = self.around(rect);
        // A rim cell off a corner can step out only across its side: with no tile there, it
        // has no exit.
        let (up, down, left, right) = (
            around[1].is_some(),
            around[7].is_some(),
            around[3].is_some(),
            around[5].is_some(),
        );
        for (lx, ly) in rim_cells(rect) {
            let (first_x, last_x) = (lx == 0, lx + 1 == rect.w);
            let (first_y, last_y) = (ly == 0, ly + 1 == rect.h);
            let corner = (first_x || last_x) && (first_y || last_y);
            if !(corner
                || (first_y && up)
                || (last_y && down)
                || (first_x && left)
                || (last_x && right))
            {
                exits.push(NO_EXIT);
                continue;
            }
            match Self::best_exit(model, costs, w, rect, &around, lx, ly) {
                Some((dir, value)) => {
                    seeds.push((ly * rect.w + lx, value));
                    exits.push((dir.index() as u8, value));
                }
                None => exits.push(NO_EXIT),
            }
        }
        self.seeds = seeds;
        let mut dist = self.spare_costs.pop().unwrap_or_default();
        let grid = Grid::new(rect.w, rect.h).expect("a sector is a valid grid");
        let mut inner = match self.inner_flow.take() {
            Some(f) if *f.grid() == grid => f,
            _ => FlowField::new(grid),
        };
        // The same request already answered (the route search's field of the goal's sector,
        // before any tile beside it): its values and arrows; otherwise this tile's own search.
        let have_inner = match prior.filter(|p| p.answers(costs, w, model, rect, &self.seeds)) {
            Some(p) => {
                dist.clear();
                dist.extend_from_slice(p.last());
                p.flow_into(&mut inner)
            }
            None => {
                self.fields
                    .costs_into(costs, w, model, rect, &self.seeds, &mut dist);
                self.fields.flow_into(&mut inner)
            }
        };
        let base = model.base_costs();
        // The arrow of one cell: the legal step whose cost plus the cost-to-goal beyond is
        // least (the first in direction order on a tie), inside the tile or into a built
        // neighbour.
        let arrow = |lx: u32, ly: u32, (out_dir, out_total): (u8, u64)| -> u8 {
            let (x, y) = (rect.x0 + lx, rect.y0 + ly);
            let here = costs[(y * w + x) as usize];
            if here == WALL {
                return FLOW_WALL;
            }
            if dist[(ly * rect.w + lx) as usize] == u64::MAX {
                return FLOW_UNREACHABLE;
            }
            if sector == self.goal_sector && UVec2::new(x, y) == self.goal {
                return FLOW_GOAL;
            }
            // The best step out (found with the seeds), then those inside; on a tie the lower
            // direction.
            let mut best = (out_total, out_dir);
            for dir in Dir8::ALL {
                let (dx, dy) = dir.offset();
                let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
                if outside(nx, ny) {
                    continue;
                }
                // Inside the tile: the target and the cells a diagonal passes between are on
                // the map.
                let open = |x: u32, y: u32| costs[(y * w + x) as usize] != WALL;
                if !open(nx, ny) || (dir.is_diagonal() && !(open(nx, y) && open(x, ny))) {
                    continue;
                }
                let beyond = dist[rect.local(nx, ny) as usize];
                if beyond == u64::MAX {
                    continue;
                }
                let total = beyond + base[dir.index()] as u64 * here as u64;
                let d = dir.index() as u8;
                if total < best.0 || (total == best.0 && d < best.1) {
                    best = (total, d);
                }
            }
            best.1
        };
        // Inside the rim every neighbour is in the tile, and the library's flow kernel over
        // the same values gives the same arrows (same rule, same ties); the rim, whose steps
        // may lead into the tiles beside, is done cell by cell.
        let flow: Vec<u8> = if have_inner {
            // On the rim the kernel saw only the steps inside (its best, or a sink where none
            // beats the cell's value, which then came from a step out): the better of that and
            // the best step out, the lower direction on a tie.
            let mut flow = self.spare_flows.pop().unwrap_or_default();
            flow.clear();
            flow.extend_from_slice(inner.bytes());
            for ((lx, ly), &exit) in rim_cells(rect).zip(&exits) {
                let i = (ly * rect.w + lx) as usize;
                if exit == NO_EXIT && inner.bytes()[i] < 8 {
                    continue; // no step out: the kernel's arrow stands
                }
                let (out_dir, out_total) = exit;
                let (x, y) = (rect.x0 + lx, rect.y0 + ly);
                flow[i] = match inner.bytes()[i] {
                    d if d < 8 => {
                        let (dx, dy) = Dir8::ALL[d as usize].offset();
                        let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
                        let here = costs[(y * w + x) as usize] as u64;
                        let inside =
                            dist[rect.local(nx, ny) as usize] + base[d as usize] as u64 * here;
                        if inside < out_total || (inside == out_total && d < out_dir) {
                            d
                        } else {
                            out_dir
                        }
                    }
                    // A sink of the kernel: no step inside reaches the goal for the cell's
                    // value or less. Its value is its step out's total (unless it is the
                    // goal), so that step is its arrow.
                    FLOW_GOAL
                        if exit != NO_EXIT
                            && dist[i] == out_total
                            && (sector != self.goal_sector || UVec2::new(x, y) != self.goal) =>
                    {
                        out_dir
                    }
                    FLOW_GOAL => arrow(lx, ly, exit), // the goal, or a value from outside
                    other => other,
                };
            }
            flow
        } else {
            let mut flow: Vec<u8> = (0..rect.h)
                .flat_map(|ly| (0..rect.w).map(move |lx| (lx, ly)))
                .map(|(lx, ly)| arrow(lx, ly, NO_EXIT))
                .collect();
            for ((lx, ly), &exit) in rim_cells(rect).zip(&exits) {
                flow[(ly * rect.w + lx) as usize] = arrow(lx, ly, exit);
            }
            flow
        };
        self.inner_flow = Some(inner);
        self.exits = exits;
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
            s => {
                let old = std::mem::replace(&mut self.tiles[s as usize], tile);
                self.spare(old);
            }
        }
    }

    /// The tiles of the 3 x 3 sectors around `rect`'s (its own in the middle), by
    /// `(row + 1) * 3 + column + 1` for the row and column offsets -1, 0 and 1.
    fn around(&self, rect: Rect) -> [Option<&Tile>; 9] {
        let (sx, sy) = ((rect.x0 / self.side) as i64, (rect.y0 / self.side) as i64);
        let sectors_y = self.height.div_ceil(self.side) as i64;
        std::array::from_fn(|k| {
            let (tx, ty) = (sx + k as i64 % 3 - 1, sy + k as i64 / 3 - 1);
            if tx < 0 || ty < 0 || tx >= self.sectors_x as i64 || ty >= sectors_y {
                return None;
            }
            let sector = ty as usize * self.sectors_x as usize + tx as usize;
            self.tiles.get(self.slot[sector] as usize)
        })
    }

    /// The cheapest legal step from local cell (lx, ly) of `rect`'s rim into a built tile
    /// beside it (`around`, from [`FlowTiles::around`]), and its cost plus the cost-to-goal
    /// there. Only the steps that leave the rectangle are tried, in direction order (the first
    /// wins a tie).
    fn best_exit(
        model: crate::cost::CostModel,
        costs: &[u8],
        w: u32,
        rect: Rect,
        around: &[Option<&Tile>; 9],
        lx: u32,
        ly: u32,
    ) -> Option<(Dir8, u64)> {
        let (x, y) = (rect.x0 + lx, rect.y0 + ly);
        let here = costs[(y * w + x) as usize];
        if here == WALL {
            return None;
        }
        // Bit d: direction d leaves the rectangle (N, NE, NW up; SE, S, SW down; SW, W, NW
        // left; NE, E, SE right).
        let mut dirs = 0u8;
        if ly == 0 {
            dirs |= 0b1000_0011;
        }
        if ly + 1 == rect.h {
            dirs |= 0b0011_1000;
        }
        if lx == 0 {
            dirs |= 0b1110_0000;
        }
        if lx + 1 == rect.w {
            dirs |= 0b0000_1110;
        }
        let open = |x: u32, y: u32| costs[(y * w + x) as usize] != WALL;
        let mut best: Option<(Dir8, u64)> = None;
        while dirs != 0 {
            let d = dirs.trailing_zeros() as usize;
            dirs &= dirs - 1;
            let (tx, ty) = (lx as i32 + Dir8::DX[d], ly as i32 + Dir8::DY[d]);
            let column = (tx >= 0) as usize + (tx >= rect.w as i32) as usize;
            let row = (ty >= 0) as usize + (ty >= rect.h as i32) as usize;
            // A missing neighbour is off the map or not built; a built one holds the target,
            // so it and the two cells a diagonal passes between are on the map.
            let Some(tile) = around[row * 3 + column] else {
                continue;
            };
            let (nx, ny) = (
                x.wrapping_add_signed(Dir8::DX[d]),
                y.wrapping_add_signed(Dir8::DY[d]),
            );
            let dir = Dir8::ALL[d];
            if !open(nx, ny) || (dir.is_diagonal() && !(open(nx, y) && open(x, ny))) {
                continue;
            }
            let beyond = tile.cost[tile.rect.local(nx, ny) as usize];
            if beyond == u64::MAX {
                continue;
            }
            let total = beyond + model.step(dir, here) as u64;
            if best.is_none_or(|(_, b)| total < b) {
                best = Some((dir, total));
            }
        }
        best
    }

    /// Keep a replaced tile's buffers for the next tiles built.
    fn spare(&mut self, tile: Tile) {
        self.spare_costs.push(tile.cost);
        self.spare_flows.push(tile.flow);
    }
}

/// The cells on a rectangle's rim, as local (x, y): the first and last rows whole, the first
/// and last cells of the rows between.
fn rim_cells(rect: Rect) -> impl Iterator<Item = (u32, u32)> {
    (0..rect.h).flat_map(move |ly| {
        let step = if ly == 0 || ly + 1 == rect.h {
            1
        } else {
            (rect.w - 1).max(1)
        };
        (0..rect.w).step_by(step as usize).map(move |lx| (lx, ly))
    })
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
