//! Sectors and portals for huge maps: the map cut into square sectors, the walkable openings
//! along each border between two sectors (portals), and a graph over the portals whose edges
//! are true costs under the map's cost model, terrain included. A route between two cells is
//! one A* over that graph ([`RouteSearch`]), answered in a fraction of the time a field over the
//! whole map takes; connectivity labels refuse an unreachable goal before any search.
//!
//! This is the hierarchy of Emerson's flow-field tiles (Supreme Commander 2) and of HPA* (Botea
//! et al. 2004), with exact edge costs: an edge between two portal cells of one sector costs
//! what the cheapest path between them inside the sector costs, found by Dijkstra confined to
//! the sector, and a step across a border costs what that step costs on the map.
//!
//! Memory: 2 bytes per map cell (each cell's component within its sector, padded to whole
//! sectors), plus per portal node 24 bytes and per edge 12 bytes (a few dozen edges per sector on
//! open ground: under 0.3 byte per cell at side 32). [`SectorGraph::memory_bytes`] adds it up.

mod local;
mod route;
mod tiles;

use glam::UVec2;
use thiserror::Error;

use crate::cost::{CostField, CostModel, WALL};
use crate::grid::{Dir8, Grid, SizeMismatch};
use local::{Rect, SectorFields, label_components};
pub use route::{Route, RouteSearch};
pub use tiles::FlowTiles;

/// The smallest sector side accepted.
pub const MIN_SECTOR_SIDE: u32 = 8;
/// The largest sector side accepted (a sector's components are numbered in 16 bits).
pub const MAX_SECTOR_SIDE: u32 = 256;
/// The sector side used when nothing else is asked for.
pub const DEFAULT_SECTOR_SIDE: u32 = 32;

/// A portal run longer than this gets a node at each end rather than one in its middle.
const ONE_NODE_RUN: u32 = 6;

/// Why a sector graph or a route was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SectorError {
    /// A sector side outside [`MIN_SECTOR_SIDE`]..=[`MAX_SECTOR_SIDE`].
    #[error("sector side {0} is not allowed: use {MIN_SECTOR_SIDE} to {MAX_SECTOR_SIDE} cells")]
    BadSide(u32),
    /// A route end outside the map.
    #[error("{what} ({x}, {y}) is outside the {width}x{height} map")]
    Outside {
        /// `start` or `goal`.
        what: &'static str,
        /// Column.
        x: u32,
        /// Row.
        y: u32,
        /// Map width.
        width: u32,
        /// Map height.
        height: u32,
    },
    /// A route end on a wall.
    #[error("{what} ({x}, {y}) is on a wall")]
    OnWall {
        /// `start` or `goal`.
        what: &'static str,
        /// Column.
        x: u32,
        /// Row.
        y: u32,
    },
    /// Tiles asked to follow a route to another goal.
    #[error("the route ends at ({}, {}) but the tiles lead to ({}, {})", route.0, route.1, tiles.0, tiles.1)]
    OtherGoal {
        /// Where the route ends.
        route: (u32, u32),
        /// The tiles' goal.
        tiles: (u32, u32),
    },
    /// Tiles used with a graph of another sector side than the one they were made with.
    #[error("the graph's sectors have side {graph} but the tiles' have side {tiles}")]
    OtherSide {
        /// The graph's side.
        graph: u32,
        /// The tiles' side.
        tiles: u32,
    },
    /// The cost field is not the size of the one the graph was built from.
    #[error(transparent)]
    SizeMismatch(#[from] SizeMismatch),
}

/// Sectors, their components, portal nodes and the graph between them, for one cost field and
/// cost model. Built by [`SectorGraph::build`]; queried with a [`RouteSearch`].
///
/// Memory: see the [module documentation](self) — about 2.3 bytes per map cell at side 32.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectorGraph {
    grid: Grid,
    model: CostModel,
    side: u32,
    sectors_x: u32,
    sectors_y: u32,
    /// Per cell, padded to whole sectors and stored sector by sector: the cell's component
    /// within its sector, from 1 (0 for a wall).
    labels: Vec<u16>,
    /// Per sector (and one past the last): the global number of its first component.
    component_start: Vec<u32>,
    /// Per global component: its connectivity label (equal labels: reachable from each other).
    region: Vec<u32>,
    /// Per sector: whether all its walkable cells have the same terrain cost (so a cost to a
    /// cell equals the cost from it).
    uniform: Vec<bool>,
    /// Per node: the map index of its cell. Nodes are grouped by sector.
    node_cell: Vec<u32>,
    /// Per node: its global component.
    node_component: Vec<u32>,
    /// Per sector (and one past the last): its first node.
    sector_nodes: Vec<u32>,
    /// Per node (and one past the last): its first edge.
    edge_start: Vec<u32>,
    /// Per edge: the node it leads to.
    edge_to: Vec<u32>,
    /// Per edge: its raw cost in the graph's model.
    edge_cost: Vec<u64>,
}

/// What building one sector yields: its component count and its edges between nodes.
struct SectorPart {
    components: u16,
    edges: Vec<(u32, u32, u64)>,
}

impl SectorGraph {
    /// Build the graph of `cost` with square sectors of `side` cells under `model`.
    ///
    /// Cost: one pass over the map for portals and components, then for every portal node a
    /// Dijkstra confined to its sector that stops once the sector's other nodes are settled —
    /// O(nodes per sector × cells per sector) per sector, in parallel over sectors with the
    /// `parallel` feature.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::SectorGraph;
    /// let map = horde::maps::demo_map();
    /// let graph = SectorGraph::build(&map, 16, horde::CostModel::Octile).unwrap();
    /// assert_eq!(graph.sectors(), (8, 8));
    /// assert!(graph.node_count() > 0);
    /// ```
    pub fn build(
        cost: &CostField,
        side: u32,
        model: CostModel,
    ) -> Result<SectorGraph, SectorError> {
        if !(MIN_SECTOR_SIDE..=MAX_SECTOR_SIDE).contains(&side) {
            return Err(SectorError::BadSide(side));
        }
        let grid = *cost.grid();
        let (w, h) = (grid.width(), grid.height());
        let sectors_x = w.div_ceil(side);
        let sectors_y = h.div_ceil(side);
        let sector_count = (sectors_x * sectors_y) as usize;
        let costs = cost.costs();

        // Portals: maximal runs of open cell pairs along each border, one or two transitions
        // per run.
        let transitions = find_transitions(costs, w, h, side);
        let mut by_sector: Vec<(u32, u32)> = transitions
            .iter()
            .flat_map(|&(a, b)| [a, b])
            .map(|cell| (sector_of_index(cell, w, side, sectors_x), cell))
            .collect();
        by_sector.sort_unstable();
        by_sector.dedup();
        let node_cell: Vec<u32> = by_sector.iter().map(|&(_, c)| c).collect();
        let mut sector_nodes = vec![0u32; sector_count + 1];
        for &(s, _) in &by_sector {
            sector_nodes[s as usize + 1] += 1;
        }
        for s in 0..sector_count {
            sector_nodes[s + 1] += sector_nodes[s];
        }

        // Each sector on its own: components, then the costs between its nodes.
        let per_sector = (side * side) as usize;
        let mut labels = vec![0u16; sector_count * per_sector];
        let build_sector = |(s, labels): (usize, &mut [u16])| -> SectorPart {
            let rect = sector_rect(s as u32, side, sectors_x, w, h);
            let components = label_components(costs, w, rect, labels, &mut Vec::new());
            let nodes = sector_nodes[s] as usize..sector_nodes[s + 1] as usize;
            let local: Vec<u32> = node_cell[nodes.clone()]
                .iter()
                .map(|&c| rect.local(c % w, c / w))
                .collect();
            let mut fields = SectorFields::default();
            let mut edges = Vec::new();
            for (k, &to) in local.iter().enumerate() {
                let alone = local
                    .iter()
                    .all(|&t| t == to || labels[t as usize] != labels[to as usize]);
                if alone {
                    continue;
                }
                // One field to node `k` gives the edges from every other node into it.
                let dist = fields.costs_to(costs, w, model, rect, &[(to, 0)]);
                for (m, &from) in local.iter().enumerate() {
                    let d = dist[from as usize];
                    if m != k && labels[from as usize] == labels[to as usize] && d != u64::MAX {
                        edges.push(((nodes.start + m) as u32, (nodes.start + k) as u32, d));
                    }
                }
            }
            SectorPart { components, edges }
        };
        #[cfg(feature = "parallel")]
        let parts: Vec<SectorPart> = {
            use rayon::prelude::*;
            labels
                .par_chunks_mut(per_sector)
                .enumerate()
                .map(build_sector)
                .collect()
        };
        #[cfg(not(feature = "parallel"))]
        let parts: Vec<SectorPart> = labels
            .chunks_mut(per_sector)
            .enumerate()
            .map(build_sector)
            .collect();

        let mut component_start = vec![0u32; sector_count + 1];
        for (s, part) in parts.iter().enumerate() {
            component_start[s + 1] = component_start[s] + part.components as u32;
        }
        let node_component: Vec<u32> = by_sector
            .iter()
            .map(|&(s, c)| {
                let rect = sector_rect(s, side, sectors_x, w, h);
                let label = labels[s as usize * per_sector + rect.local(c % w, c / w) as usize];
                component_start[s as usize] + label as u32 - 1
            })
            .collect();

        // Edges: inside sectors, then across borders.
        let node_of = |cell: u32| -> u32 {
            let s = sector_of_index(cell, w, side, sectors_x) as usize;
            let range = sector_nodes[s] as usize..sector_nodes[s + 1] as usize;
            let k = node_cell[range.clone()]
                .binary_search(&cell)
                .expect("every transition cell is a node");
            (range.start + k) as u32
        };
        let mut edges: Vec<(u32, u32, u64)> = parts.into_iter().flat_map(|p| p.edges).collect();
        for &(a, b) in &transitions {
            let dir = if b == a + 1 { Dir8::E } else { Dir8::S };
            let (na, nb) = (node_of(a), node_of(b));
            edges.push((na, nb, model.step(dir, costs[a as usize]) as u64));
            edges.push((nb, na, model.step(dir.opposite(), costs[b as usize]) as u64));
        }
        edges.sort_unstable();
        edges.dedup_by_key(|e| (e.0, e.1));
        let node_count = node_cell.len();
        let mut edge_start = vec![0u32; node_count + 1];
        for e in &edges {
            edge_start[e.0 as usize + 1] += 1;
        }
        for n in 0..node_count {
            edge_start[n + 1] += edge_start[n];
        }
        let edge_to = edges.iter().map(|e| e.1).collect();
        let edge_cost = edges.iter().map(|e| e.2).collect();

        // Connectivity labels: components joined by any border crossing share a region.
        let components = component_start[sector_count] as usize;
        let mut parent: Vec<u32> = (0..components as u32).collect();
        for &(a, b) in &transitions {
            let (ca, cb) = (
                node_component[node_of(a) as usize],
                node_component[node_of(b) as usize],
            );
            let (ra, rb) = (find(&mut parent, ca), find(&mut parent, cb));
            if ra != rb {
                parent[ra.max(rb) as usize] = ra.min(rb);
            }
        }
        let region = (0..components as u32)
            .map(|c| find(&mut parent, c))
            .collect();

        let uniform = (0..sector_count as u32)
            .map(|s| {
                let r = sector_rect(s, side, sectors_x, w, h);
                let mut walkable = (r.y0..r.y0 + r.h)
                    .flat_map(|y| {
                        let row = (y * w + r.x0) as usize;
                        costs[row..row + r.w as usize].iter()
                    })
                    .filter(|&&c| c != WALL);
                let first = walkable.next();
                walkable.all(|c| Some(c) == first)
            })
            .collect();
        Ok(SectorGraph {
            grid,
            model,
            side,
            sectors_x,
            sectors_y,
            labels,
            component_start,
            region,
            uniform,
            node_cell,
            node_component,
            sector_nodes,
            edge_start,
            edge_to,
            edge_cost,
        })
    }

    /// The map's grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The cost model edge costs are in.
    pub fn model(&self) -> CostModel {
        self.model
    }

    /// The sector side, in cells.
    pub fn side(&self) -> u32 {
        self.side
    }

    /// Sectors across and down.
    pub fn sectors(&self) -> (u32, u32) {
        (self.sectors_x, self.sectors_y)
    }

    /// Portal nodes (cells on a sector border where a crossing starts or ends).
    pub fn node_count(&self) -> usize {
        self.node_cell.len()
    }

    /// Directed edges between portal nodes.
    pub fn edge_count(&self) -> usize {
        self.edge_to.len()
    }

    /// The cell of portal node `node`.
    pub fn node_cell(&self, node: usize) -> UVec2 {
        self.grid.cell(self.node_cell[node] as usize)
    }

    /// The edges leaving portal node `node`: the node each leads to and its raw cost.
    pub fn edges(&self, node: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        let range = self.edge_start[node] as usize..self.edge_start[node + 1] as usize;
        self.edge_to[range.clone()]
            .iter()
            .zip(&self.edge_cost[range])
            .map(|(&to, &cost)| (to as usize, cost))
    }

    /// The sector holding `cell` (numbered row by row), if it is on the map.
    pub fn sector_of(&self, cell: UVec2) -> Option<u32> {
        self.grid.index(cell).ok()?;
        Some((cell.y / self.side) * self.sectors_x + cell.x / self.side)
    }

    /// The connectivity label of `cell`: two walkable cells are reachable from each other
    /// exactly when their labels are equal. `None` for a wall or a cell off the map. O(1).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::SectorGraph;
    /// let map = horde::io::parse_map(b"type octile\nheight 1\nwidth 20\nmap\n.........@..........\n", "m").unwrap();
    /// let graph = SectorGraph::build(&map, 8, horde::CostModel::Octile).unwrap();
    /// assert_ne!(graph.region(UVec2::new(0, 0)), graph.region(UVec2::new(19, 0)));
    /// assert_eq!(graph.region(UVec2::new(0, 0)), graph.region(UVec2::new(8, 0)));
    /// assert_eq!(graph.region(UVec2::new(9, 0)), None);
    /// ```
    pub fn region(&self, cell: UVec2) -> Option<u32> {
        self.component(cell).map(|c| self.region[c as usize])
    }

    /// Bytes held by the graph (not counting the cost field it was built from).
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        self.labels.len() * size_of::<u16>()
            + (self.component_start.len()
                + self.region.len()
                + self.node_cell.len()
                + self.node_component.len()
                + self.sector_nodes.len()
                + self.edge_start.len()
                + self.edge_to.len())
                * size_of::<u32>()
            + self.edge_cost.len() * size_of::<u64>()
            + self.uniform.len()
    }

    /// The global component of a walkable cell.
    fn component(&self, cell: UVec2) -> Option<u32> {
        let s = self.sector_of(cell)?;
        let rect = self.rect(s);
        let label = self.labels
            [s as usize * (self.side * self.side) as usize + rect.local(cell.x, cell.y) as usize];
        (label != 0).then(|| self.component_start[s as usize] + label as u32 - 1)
    }

    fn rect(&self, sector: u32) -> Rect {
        sector_rect(
            sector,
            self.side,
            self.sectors_x,
            self.grid.width(),
            self.grid.height(),
        )
    }

    /// The nodes of `sector`.
    fn nodes_of(&self, sector: u32) -> std::ops::Range<usize> {
        self.sector_nodes[sector as usize] as usize..self.sector_nodes[sector as usize + 1] as usize
    }

    /// Check a route end: on the map and walkable.
    fn check_end(
        &self,
        cost: &CostField,
        cell: UVec2,
        what: &'static str,
    ) -> Result<(), SectorError> {
        match cost.get(cell) {
            None => Err(SectorError::Outside {
                what,
                x: cell.x,
                y: cell.y,
                width: self.grid.width(),
                height: self.grid.height(),
            }),
            Some(WALL) => Err(SectorError::OnWall {
                what,
                x: cell.x,
                y: cell.y,
            }),
            Some(_) => Ok(()),
        }
    }
}

/// Union-find root with path halving.
fn find(parent: &mut [u32], mut c: u32) -> u32 {
    while parent[c as usize] != c {
        parent[c as usize] = parent[parent[c as usize] as usize];
        c = parent[c as usize];
    }
    c
}

fn sector_of_index(cell: u32, w: u32, side: u32, sectors_x: u32) -> u32 {
    let (x, y) = (cell % w, cell / w);
    (y / side) * sectors_x + x / side
}

fn sector_rect(sector: u32, side: u32, sectors_x: u32, w: u32, h: u32) -> Rect {
    let (sx, sy) = (sector % sectors_x, sector / sectors_x);
    let (x0, y0) = (sx * side, sy * side);
    Rect {
        x0,
        y0,
        w: side.min(w - x0),
        h: side.min(h - y0),
    }
}

/// The crossings kept along every sector border, as pairs of map indices `(a, b)` with `b` the
/// east or south neighbour of `a`: for each maximal run of cells open on both sides, its middle
/// pair when the run is short, its two end pairs otherwise.
fn find_transitions(costs: &[u8], w: u32, h: u32, side: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let open = |a: u32, b: u32| costs[a as usize] != WALL && costs[b as usize] != WALL;
    let keep = |run: &[(u32, u32)], out: &mut Vec<(u32, u32)>| {
        let n = run.len() as u32;
        if n == 0 {
        } else if n <= ONE_NODE_RUN {
            out.push(run[run.len() / 2]);
        } else {
            out.push(run[0]);
            out.push(run[run.len() - 1]);
        }
    };
    let mut run = Vec::new();
    // Vertical borders: cell x = k·side − 1 and its east neighbour; runs end at sector rows.
    for x in (side..w).step_by(side as usize) {
        for y in 0..h {
            if y % side == 0 {
                keep(&run, &mut out);
                run.clear();
            }
            let a = y * w + x - 1;
            if open(a, a + 1) {
                run.push((a, a + 1));
            } else {
                keep(&run, &mut out);
                run.clear();
            }
        }
        keep(&run, &mut out);
        run.clear();
    }
    // Horizontal borders: row y = k·side − 1 and the row below; runs end at sector columns.
    for y in (side..h).step_by(side as usize) {
        for x in 0..w {
            if x % side == 0 {
                keep(&run, &mut out);
                run.clear();
            }
            let a = (y - 1) * w + x;
            if open(a, a + w) {
                run.push((a, a + w));
            } else {
                keep(&run, &mut out);
                run.clear();
            }
        }
        keep(&run, &mut out);
        run.clear();
    }
    out
}

#[cfg(test)]
mod tests;
