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
//! sectors), plus per portal node 24 bytes and 32 more for the route heuristic's landmarks (8
//! potentials of 4 bytes), and per edge 12 bytes (a few dozen edges per sector on open ground:
//! about 1.7 bytes per cell beyond the labels at side 32, 3.7 in all on a 4096 x 4096 map).
//! [`SectorGraph::memory_bytes`] adds it up.

mod cache;
mod landmarks;
mod local;
mod route;
mod tiles;

use glam::UVec2;
use thiserror::Error;

use crate::cost::{CostError, CostField, CostModel, WALL};
use crate::grid::{Dir8, Grid, SizeMismatch};
pub use cache::{TileCache, TileEditReport};
use landmarks::Landmarks;
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
#[derive(Debug, Clone, PartialEq, Error)]
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
    /// An edit or an inflation was refused; nothing was changed.
    #[error(transparent)]
    Cost(#[from] CostError),
    /// A route search weight outside 1..=4.
    #[error("route weight {0} is not allowed: use a finite number from 1 to 4")]
    BadWeight(f32),
    /// A size class the cache does not have.
    #[error("size class {0} does not exist in this cache (add it with add_size_class)")]
    UnknownClass(u8),
    /// The cost field is not the size of the one the graph was built from.
    #[error(transparent)]
    SizeMismatch(#[from] SizeMismatch),
}

/// Sectors, their components, portal nodes and the graph between them, for one cost field and
/// cost model. Built by [`SectorGraph::build`], kept up to date after edits by
/// [`SectorGraph::update`]; queried with a [`RouteSearch`].
///
/// Each sector keeps its own part (its portal nodes, the costs between them, its crossings), so
/// an edit rebuilds only the sectors it touches. Nodes are numbered sector by sector.
///
/// Equality compares the graph (sectors, components, nodes, edges, regions), not the route
/// heuristic's landmark tables, which depend on the edits the graph went through.
///
/// Memory: see the [module documentation](self) — about 3.7 bytes per map cell at side 32 on
/// open ground, landmarks included.
#[derive(Debug, Clone)]
pub struct SectorGraph {
    grid: Grid,
    model: CostModel,
    side: u32,
    sectors_x: u32,
    sectors_y: u32,
    /// Per cell, padded to whole sectors and stored sector by sector: the cell's component
    /// within its sector, from 1 (0 for a wall).
    labels: Vec<u16>,
    /// Per sector: its nodes, the costs between them and its crossings.
    parts: Vec<Part>,
    /// Per sector (and one past the last): the number of its first node.
    node_base: Vec<u32>,
    /// Per sector (and one past the last): the global number of its first component.
    component_base: Vec<u32>,
    /// Per global component: its connectivity label (equal labels: reachable from each other).
    /// A build numbers each region by its smallest component; an update keeps the labels of
    /// the regions it leaves whole and takes new ones from `next_region`.
    region: Vec<u32>,
    /// Regions (distinct labels).
    region_count: u32,
    /// The next unused label.
    next_region: u32,
    /// Per sector: whether all its walkable cells have the same terrain cost (so a cost to a
    /// cell equals the cost from it).
    uniform: Vec<bool>,
    /// Potentials for the route search's heuristic.
    landmarks: Landmarks,
}

impl PartialEq for SectorGraph {
    fn eq(&self, other: &SectorGraph) -> bool {
        self.grid == other.grid
            && self.model == other.model
            && self.side == other.side
            && self.labels == other.labels
            && self.parts == other.parts
            && self.node_base == other.node_base
            && self.component_base == other.component_base
            && same_partition(&self.region, &other.region)
            && self.uniform == other.uniform
    }
}

impl Eq for SectorGraph {}

/// Whether two labellings split their items alike (equal up to renaming the labels).
fn same_partition(a: &[u32], b: &[u32]) -> bool {
    use std::collections::HashMap;
    let (mut ab, mut ba) = (HashMap::new(), HashMap::new());
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| *ab.entry(x).or_insert(y) == y && *ba.entry(y).or_insert(x) == x)
}

/// One sector's share of the graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Part {
    /// Map indices of its portal cells, ascending.
    nodes: Vec<u32>,
    /// Each node's component within the sector (from 1).
    node_label: Vec<u16>,
    /// Costs between its nodes, row by row: `cost[a * k + b]` from node `a` to node `b` inside
    /// the sector (`u32::MAX`: not joined inside it). Empty when a cost needs 64 bits.
    cost: Vec<u32>,
    /// The same in 64 bits, used instead only when a cost does not fit in 32 (huge sectors of
    /// costly terrain); `u64::MAX`: not joined.
    wide: Vec<u64>,
    /// Per node (and one past the last): its first crossing.
    cross_start: Vec<u32>,
    /// Crossings: the portal cell across a border and the step's raw cost (a single step
    /// always fits in 32 bits).
    cross: Vec<(u32, u32)>,
    /// Components in the sector.
    components: u16,
}

/// What [`SectorGraph::update`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SectorUpdate {
    /// The sectors rebuilt, ascending: tiles in them (and routes through them) are stale.
    pub sectors: Vec<u32>,
    /// Whether the number of connectivity regions changed (a region split, or two joined).
    pub regions_changed: bool,
    /// Landmarks the route heuristic set aside because the edit made their potentials unsound
    /// (a cost lowered, or regions joined); [`SectorGraph::refresh_landmarks`] restores them.
    pub landmarks_set_aside: u32,
}

/// The map's geometry, as the per-sector work needs it.
#[derive(Clone, Copy)]
struct Shape {
    w: u32,
    h: u32,
    side: u32,
    sectors_x: u32,
    model: CostModel,
}

impl Shape {
    fn rect(&self, sector: u32) -> Rect {
        sector_rect(sector, self.side, self.sectors_x, self.w, self.h)
    }

    fn sector_of_index(&self, cell: u32) -> u32 {
        sector_of_index(cell, self.w, self.side, self.sectors_x)
    }

    /// The crossings kept on `sector`'s four borders, as (cell inside, cell across, direction
    /// of the step out). Each border's crossings are found by one function of the border, so
    /// the sectors on either side agree on them.
    fn crossings(&self, costs: &[u8], sector: u32, out: &mut Vec<(u32, u32, Dir8)>) {
        out.clear();
        let r = self.rect(sector);
        let mut pairs = Vec::new();
        if r.x0 > 0 {
            vertical_border(costs, self.w, r.x0 - 1, r.y0, r.h, &mut pairs);
            out.extend(pairs.iter().map(|&(a, b)| (b, a, Dir8::W)));
        }
        if r.x0 + r.w < self.w {
            vertical_border(costs, self.w, r.x0 + r.w - 1, r.y0, r.h, &mut pairs);
            out.extend(pairs.iter().map(|&(a, b)| (a, b, Dir8::E)));
        }
        if r.y0 > 0 {
            horizontal_border(costs, self.w, r.y0 - 1, r.x0, r.w, &mut pairs);
            out.extend(pairs.iter().map(|&(a, b)| (b, a, Dir8::N)));
        }
        if r.y0 + r.h < self.h {
            horizontal_border(costs, self.w, r.y0 + r.h - 1, r.x0, r.w, &mut pairs);
            out.extend(pairs.iter().map(|&(a, b)| (a, b, Dir8::S)));
        }
    }

    /// Build `sector`'s part and write its component labels into `labels` (its chunk).
    fn build_part(
        &self,
        costs: &[u8],
        sector: u32,
        labels: &mut [u16],
        fields: &mut SectorFields,
    ) -> Part {
        let rect = self.rect(sector);
        let components = label_components(costs, self.w, rect, labels, &mut Vec::new());
        let mut crossings = Vec::new();
        self.crossings(costs, sector, &mut crossings);
        let mut nodes: Vec<u32> = crossings.iter().map(|c| c.0).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let local: Vec<u32> = nodes
            .iter()
            .map(|&c| rect.local(c % self.w, c / self.w))
            .collect();
        let node_label: Vec<u16> = local.iter().map(|&l| labels[l as usize]).collect();
        let k = nodes.len();
        let mut cost = vec![u64::MAX; k * k];
        for (b, &to) in local.iter().enumerate() {
            cost[b * k + b] = 0;
            if !(0..k).any(|a| a != b && node_label[a] == node_label[b]) {
                continue;
            }
            // One field to node `b` gives the costs from every other node into it.
            let dist = fields.costs_to(costs, self.w, self.model, rect, &[(to, 0)]);
            for (a, &from) in local.iter().enumerate() {
                if a != b && node_label[a] == node_label[b] {
                    cost[a * k + b] = dist[from as usize];
                }
            }
        }
        let (cost, wide) = if cost.iter().all(|&c| c == u64::MAX || c < u32::MAX as u64) {
            let narrow = cost
                .iter()
                .map(|&c| if c == u64::MAX { u32::MAX } else { c as u32 })
                .collect();
            (narrow, Vec::new())
        } else {
            (Vec::new(), cost)
        };
        crossings.sort_unstable_by_key(|c| (c.0, c.1));
        let mut cross_start = vec![0u32; k + 1];
        let mut cross = Vec::with_capacity(crossings.len());
        for &(inside, across, dir) in &crossings {
            let n = nodes
                .binary_search(&inside)
                .expect("a crossing's cell is a node");
            cross_start[n + 1] += 1;
            cross.push((across, self.model.step(dir, costs[inside as usize])));
        }
        for n in 0..k {
            cross_start[n + 1] += cross_start[n];
        }
        Part {
            nodes,
            node_label,
            cost,
            wide,
            cross_start,
            cross,
            components,
        }
    }
}

impl SectorGraph {
    /// Build the graph of `cost` with square sectors of `side` cells under `model`.
    ///
    /// Cost: for each sector, its component labels, its border crossings, and one field over
    /// the sector per portal node; in parallel over sectors with the `parallel` feature.
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
        let mut graph = SectorGraph {
            grid,
            model,
            side,
            sectors_x,
            sectors_y,
            labels: vec![0u16; sector_count * (side * side) as usize],
            parts: vec![Part::default(); sector_count],
            node_base: vec![0; sector_count + 1],
            component_base: vec![0; sector_count + 1],
            region: Vec::new(),
            region_count: 0,
            next_region: 0,
            uniform: vec![false; sector_count],
            landmarks: Landmarks::default(),
        };
        let all: Vec<u32> = (0..sector_count as u32).collect();
        graph.rebuild(cost, &all);
        graph.relabel_regions();
        graph.landmarks = Landmarks::compute(&graph, cost.costs());
        Ok(graph)
    }

    /// Bring the graph up to date after the cells in the rectangles `changed` (corners
    /// inclusive) changed in `cost`: only the sectors within one cell of a change are rebuilt,
    /// then the node numbering and the connectivity labels are brought up to date. The result
    /// equals a fresh [`SectorGraph::build`] of the edited map.
    ///
    /// Cost: the rebuilt sectors' work (as in a build), plus O(sectors + components) to
    /// renumber; the connectivity labels are mended from the rebuilt sectors' crossings alone,
    /// unless the edit may have split a region (two places that met through the rebuilt
    /// sectors no longer do), when they are relabelled over all crossings.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::SectorGraph;
    /// use horde::{CostModel, WALL};
    /// let mut map = horde::maps::demo_map();
    /// let mut graph = SectorGraph::build(&map, 16, CostModel::Octile).unwrap();
    /// map.fill_rect(UVec2::new(40, 40), UVec2::new(47, 47), WALL).unwrap();
    /// let update = graph.update(&map, &[(UVec2::new(40, 40), UVec2::new(47, 47))]).unwrap();
    /// assert_eq!(update.sectors.len(), 4);
    /// assert_eq!(graph, SectorGraph::build(&map, 16, CostModel::Octile).unwrap());
    /// ```
    pub fn update(
        &mut self,
        cost: &CostField,
        changed: &[(UVec2, UVec2)],
    ) -> Result<SectorUpdate, SectorError> {
        self.check_cost(cost)?;
        let (w, h) = (self.grid.width(), self.grid.height());
        let mut sectors = Vec::new();
        for &(a, b) in changed {
            let (lo, hi) = (a.min(b), a.max(b));
            // One cell more on every side: a border cell's change moves the crossings of the
            // sector across it too.
            let x0 = lo.x.saturating_sub(1).min(w - 1) / self.side;
            let y0 = lo.y.saturating_sub(1).min(h - 1) / self.side;
            let x1 = hi.x.saturating_add(1).min(w - 1) / self.side;
            let y1 = hi.y.saturating_add(1).min(h - 1) / self.side;
            for sy in y0..=y1 {
                for sx in x0..=x1 {
                    sectors.push(sy * self.sectors_x + sx);
                }
            }
        }
        sectors.sort_unstable();
        sectors.dedup();
        let old_base = self.component_base.clone();
        let old_parts = self.rebuild(cost, &sectors);
        let regions_changed = self.mend_regions(&sectors, &old_parts, &old_base);
        let mut landmarks = std::mem::take(&mut self.landmarks);
        let landmarks_set_aside = landmarks.repair(self, cost.costs(), &sectors);
        self.landmarks = landmarks;
        Ok(SectorUpdate {
            sectors,
            regions_changed,
            landmarks_set_aside,
        })
    }

    /// Choose the route heuristic's landmarks afresh and price every node's way to them,
    /// bringing back any that edits set aside (see [`SectorUpdate::landmarks_set_aside`]).
    /// `cost` must be the field the graph is up to date with.
    ///
    /// Cost: one Dijkstra over the portal graph per landmark (8), plus one; about a third of a
    /// build's time on open ground.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::SectorGraph;
    /// let mut map = horde::maps::scattered_map(128, 128, 5).unwrap();
    /// let mut graph = SectorGraph::build(&map, 16, horde::CostModel::Octile).unwrap();
    /// assert_eq!(graph.landmarks_in_use(), 8);
    /// map.fill_rect(UVec2::ZERO, UVec2::new(127, 127), 1).unwrap(); // every cost lowered
    /// let update = graph.update(&map, &[(UVec2::ZERO, UVec2::new(127, 127))]).unwrap();
    /// assert_eq!(graph.landmarks_in_use(), 8 - update.landmarks_set_aside);
    /// graph.refresh_landmarks(&map).unwrap();
    /// assert_eq!(graph.landmarks_in_use(), 8);
    /// ```
    pub fn refresh_landmarks(&mut self, cost: &CostField) -> Result<(), SectorError> {
        self.check_cost(cost)?;
        self.landmarks = Landmarks::compute(self, cost.costs());
        Ok(())
    }

    /// The landmarks the route heuristic uses now (8 after a build).
    pub fn landmarks_in_use(&self) -> u32 {
        self.landmarks.valid.count_ones()
    }

    /// Rebuild the parts of `sectors` (ascending) and the numbering; returns their old parts.
    fn rebuild(&mut self, cost: &CostField, sectors: &[u32]) -> Vec<Part> {
        let costs = cost.costs();
        let shape = self.shape();
        let per_sector = (self.side * self.side) as usize;
        // Each listed sector's label chunk, paired with its number.
        let mut chunks: Vec<(u32, &mut [u16])> = Vec::with_capacity(sectors.len());
        let mut rest: &mut [u16] = &mut self.labels;
        let mut at = 0u32;
        for &s in sectors {
            let skip = (s - at) as usize * per_sector;
            let (_, tail) = rest.split_at_mut(skip);
            let (chunk, tail) = tail.split_at_mut(per_sector);
            chunks.push((s, chunk));
            rest = tail;
            at = s + 1;
        }
        // One field builder per thread, reused from sector to sector (its scratch grows once).
        let work = |fields: &mut SectorFields, (s, chunk): (u32, &mut [u16])| {
            (s, shape.build_part(costs, s, chunk, fields))
        };
        #[cfg(feature = "parallel")]
        let built: Vec<(u32, Part)> = {
            use rayon::prelude::*;
            chunks
                .into_par_iter()
                .map_init(SectorFields::default, work)
                .collect()
        };
        #[cfg(not(feature = "parallel"))]
        let built: Vec<(u32, Part)> = {
            let mut fields = SectorFields::default();
            chunks.into_iter().map(|c| work(&mut fields, c)).collect()
        };
        let mut old = Vec::with_capacity(built.len());
        for (s, part) in built {
            self.uniform[s as usize] = is_uniform(costs, shape.w, shape.rect(s));
            old.push(std::mem::replace(&mut self.parts[s as usize], part));
        }
        for s in 0..self.parts.len() {
            self.node_base[s + 1] = self.node_base[s] + self.parts[s].nodes.len() as u32;
            self.component_base[s + 1] = self.component_base[s] + self.parts[s].components as u32;
        }
        old
    }

    /// Bring the connectivity labels up to date after `sectors` (ascending) were rebuilt from
    /// `old_parts` (component numbering `old_base`). Returns whether the number of regions
    /// changed.
    ///
    /// The components outside the rebuilt sectors keep their labels. A union-find joins the
    /// rebuilt sectors' components and the components beside them across the new crossings.
    /// Where the components beside them that shared a label before are still joined, no region
    /// split; labels that meet in one set merge; sets that meet no label get new ones.
    /// Otherwise a region may have split, and all labels are made afresh.
    fn mend_regions(&mut self, sectors: &[u32], old_parts: &[Part], old_base: &[u32]) -> bool {
        use std::collections::HashMap;
        let before = self.region_count;
        let mut rebuilt = vec![false; self.parts.len()];
        for &s in sectors {
            rebuilt[s as usize] = true;
        }
        // The labels the old sectors held.
        let mut vanished: Vec<u32> = Vec::new();
        for (&s, old) in sectors.iter().zip(old_parts) {
            let from = old_base[s as usize] as usize;
            vanished.extend_from_slice(&self.region[from..from + old.components as usize]);
        }
        // Labels in the new numbering; the rebuilt sectors' components are labelled below.
        let mut region = std::mem::take(&mut self.region);
        if sectors.len() <= 16 {
            // In place, the last sector first so the earlier ranges stay where they were.
            for (&s, old) in sectors.iter().zip(old_parts).rev() {
                let from = old_base[s as usize] as usize;
                let fresh =
                    std::iter::repeat_n(u32::MAX, self.parts[s as usize].components as usize);
                region.splice(from..from + old.components as usize, fresh);
            }
        } else {
            let total = *self.component_base.last().expect("one past the last") as usize;
            let old = std::mem::replace(&mut region, vec![u32::MAX; total]);
            for s in (0..self.parts.len()).filter(|&s| !rebuilt[s]) {
                let (from, to) = (old_base[s] as usize, self.component_base[s] as usize);
                let n = self.parts[s].components as usize;
                region[to..to + n].copy_from_slice(&old[from..from + n]);
            }
        }
        // Union-find over the rebuilt components and those beside them.
        let mut element: HashMap<u32, u32> = HashMap::new();
        let mut parent: Vec<u32> = Vec::new();
        let mut id = |c: u32, parent: &mut Vec<u32>| {
            *element.entry(c).or_insert_with(|| {
                parent.push(parent.len() as u32);
                parent.len() as u32 - 1
            })
        };
        for &s in sectors {
            for c in self.component_base[s as usize]..self.component_base[s as usize + 1] {
                id(c, &mut parent);
            }
            let part = &self.parts[s as usize];
            for k in 0..part.nodes.len() {
                let here = self.component_base[s as usize] + part.node_label[k] as u32 - 1;
                let range = part.cross_start[k] as usize..part.cross_start[k + 1] as usize;
                for &(across, _) in &part.cross[range] {
                    let there = self
                        .component_of_index(across)
                        .expect("a crossing leads to a walkable cell");
                    let (a, b) = (id(here, &mut parent), id(there, &mut parent));
                    let (a, b) = (find(&mut parent, a), find(&mut parent, b));
                    if a != b {
                        parent[a.max(b) as usize] = a.min(b);
                    }
                }
            }
        }
        // The components beside the old sectors: each label among them must still be one set.
        let mut label_set: HashMap<u32, u32> = HashMap::new();
        for old in old_parts {
            for &(across, _) in &old.cross {
                if rebuilt[self.sector_of_index(across) as usize] {
                    continue;
                }
                let c = self
                    .component_of_index(across)
                    .expect("a cell beside is unchanged");
                let e = id(c, &mut parent);
                let set = find(&mut parent, e);
                if *label_set.entry(region[c as usize]).or_insert(set) != set {
                    // Two places of one region met only through the old sectors, perhaps.
                    self.relabel_regions();
                    return self.region_count != before;
                }
            }
        }
        // Labels that meet in one set merge (into the smallest); every set takes its label.
        let mut set_label: HashMap<u32, u32> = HashMap::new();
        let mut merged: HashMap<u32, u32> = HashMap::new();
        let mut elements: Vec<(u32, u32)> = element.iter().map(|(&c, &e)| (c, e)).collect();
        elements.sort_unstable();
        let mut label_parent: HashMap<u32, u32> = HashMap::new();
        let label_root = |mut l: u32, lp: &mut HashMap<u32, u32>| {
            while let Some(&p) = lp.get(&l) {
                l = p;
            }
            l
        };
        for &(c, e) in &elements {
            let label = region[c as usize];
            if label == u32::MAX {
                continue; // a rebuilt component
            }
            let set = find(&mut parent, e);
            let here = label_root(label, &mut label_parent);
            match set_label.get(&set) {
                None => {
                    set_label.insert(set, here);
                }
                Some(&there) => {
                    let there = label_root(there, &mut label_parent);
                    if there != here {
                        let (keep, gone) = (here.min(there), here.max(there));
                        label_parent.insert(gone, keep);
                        set_label.insert(set, keep);
                    }
                }
            }
        }
        for gone in label_parent.keys().copied().collect::<Vec<_>>() {
            let keep = label_root(gone, &mut label_parent);
            merged.insert(gone, keep);
        }
        let mut fresh = 0;
        for &(c, e) in &elements {
            if region[c as usize] != u32::MAX {
                continue;
            }
            let set = find(&mut parent, e);
            let label = match set_label.get(&set) {
                Some(&l) => label_root(l, &mut label_parent),
                None => {
                    fresh += 1;
                    self.next_region += 1;
                    set_label.insert(set, self.next_region - 1);
                    self.next_region - 1
                }
            };
            region[c as usize] = label;
        }
        if !merged.is_empty() {
            for label in region.iter_mut() {
                if let Some(&keep) = merged.get(label) {
                    *label = keep;
                }
            }
        }
        // Regions gone: labels the old sectors held that no component beside them holds.
        vanished.sort_unstable();
        vanished.dedup();
        let beside: std::collections::HashSet<u32> = label_set.keys().copied().collect();
        let gone = vanished.iter().filter(|l| !beside.contains(l)).count() as u32;
        self.region = region;
        self.region_count = before + fresh - gone - merged.len() as u32;
        self.region_count != before
    }

    /// Connectivity labels: components joined by a crossing share a region, numbered by their
    /// smallest component.
    fn relabel_regions(&mut self) {
        let components = *self.component_base.last().expect("one past the last") as usize;
        let mut parent: Vec<u32> = (0..components as u32).collect();
        for (s, part) in self.parts.iter().enumerate() {
            for n in 0..part.nodes.len() {
                let here = self.component_base[s] + part.node_label[n] as u32 - 1;
                let range = part.cross_start[n] as usize..part.cross_start[n + 1] as usize;
                for &(across, _) in &part.cross[range] {
                    let there = self
                        .component_of_index(across)
                        .expect("a crossing leads to a walkable cell");
                    let (a, b) = (find(&mut parent, here), find(&mut parent, there));
                    if a != b {
                        parent[a.max(b) as usize] = a.min(b);
                    }
                }
            }
        }
        self.region = (0..components as u32)
            .map(|c| find(&mut parent, c))
            .collect();
        self.region_count = self
            .region
            .iter()
            .enumerate()
            .filter(|&(c, &r)| c as u32 == r)
            .count() as u32;
        self.next_region = components as u32;
    }

    fn shape(&self) -> Shape {
        Shape {
            w: self.grid.width(),
            h: self.grid.height(),
            side: self.side,
            sectors_x: self.sectors_x,
            model: self.model,
        }
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
        *self.node_base.last().expect("one past the last") as usize
    }

    /// Directed edges between portal nodes: inside sectors and across borders.
    pub fn edge_count(&self) -> usize {
        self.parts
            .iter()
            .map(|p| {
                let joined = p.cost.iter().filter(|&&c| c != u32::MAX).count()
                    + p.wide.iter().filter(|&&c| c != u64::MAX).count();
                joined - p.nodes.len() + p.cross.len()
            })
            .sum()
    }

    /// The sector and the index within it of node `node`.
    fn locate(&self, node: usize) -> (usize, usize) {
        let s = self.node_base.partition_point(|&b| b as usize <= node) - 1;
        (s, node - self.node_base[s] as usize)
    }

    /// The map index of node `node`'s cell.
    fn node_index(&self, node: usize) -> u32 {
        let (s, k) = self.locate(node);
        self.parts[s].nodes[k]
    }

    /// The cell of portal node `node`.
    pub fn node_cell(&self, node: usize) -> UVec2 {
        self.grid.cell(self.node_index(node) as usize)
    }

    /// The global component of node `node`.
    fn node_component(&self, node: usize) -> u32 {
        let (s, k) = self.locate(node);
        self.component_base[s] + self.parts[s].node_label[k] as u32 - 1
    }

    /// The edges leaving portal node `node`: the node each leads to and its raw cost.
    pub fn edges(&self, node: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        let (s, k) = self.locate(node);
        let mut out = Vec::new();
        self.for_each_edge(s, k, true, |to, _, _, c| out.push((to as usize, c)));
        out.into_iter()
    }

    /// Call `f(node, sector, cell, cost)` for each edge leaving the `k`th node of sector `s`
    /// (those inside the sector only if `inside`): the search's inner loop, which knows each
    /// node's sector and so needs no lookup for it.
    #[inline]
    fn for_each_edge(
        &self,
        s: usize,
        k: usize,
        inside: bool,
        mut f: impl FnMut(u32, u32, u32, u64),
    ) {
        let part = &self.parts[s];
        let n = part.nodes.len();
        let base = self.node_base[s];
        if inside && part.wide.is_empty() {
            for (m, &c) in part.cost[k * n..(k + 1) * n].iter().enumerate() {
                if m != k && c != u32::MAX {
                    f(base + m as u32, s as u32, part.nodes[m], c as u64);
                }
            }
        } else if inside {
            for (m, &c) in part.wide[k * n..(k + 1) * n].iter().enumerate() {
                if m != k && c != u64::MAX {
                    f(base + m as u32, s as u32, part.nodes[m], c);
                }
            }
        }
        let range = part.cross_start[k] as usize..part.cross_start[k + 1] as usize;
        for &(cell, c) in &part.cross[range] {
            let (t, m) = self.node_at(cell);
            f(self.node_base[t] + m as u32, t as u32, cell, c as u64);
        }
    }

    /// Call `f(node, sector, cost)` for each edge into the `k`th node of sector `s`: from the
    /// other nodes of its component inside the sector, and across its crossings (each crossing
    /// is a pair of steps, one each way; the step in costs the terrain of the cell across).
    fn for_each_edge_into(
        &self,
        costs: &[u8],
        s: usize,
        k: usize,
        mut f: impl FnMut(u32, u32, u64),
    ) {
        let part = &self.parts[s];
        let n = part.nodes.len();
        let base = self.node_base[s];
        for m in (0..n).filter(|&m| m != k) {
            let c = if part.wide.is_empty() {
                match part.cost[m * n + k] {
                    u32::MAX => continue,
                    c => c as u64,
                }
            } else {
                match part.wide[m * n + k] {
                    u64::MAX => continue,
                    c => c,
                }
            };
            f(base + m as u32, s as u32, c);
        }
        let range = part.cross_start[k] as usize..part.cross_start[k + 1] as usize;
        for &(cell, _) in &part.cross[range] {
            let (t, m) = self.node_at(cell);
            let step = self.model.step(Dir8::N, costs[cell as usize]) as u64;
            f(self.node_base[t] + m as u32, t as u32, step);
        }
    }

    /// Refuse a cost field of another size than the one the graph was built from.
    fn check_cost(&self, cost: &CostField) -> Result<(), SectorError> {
        SizeMismatch::check(
            "cost field",
            SizeMismatch::of(cost.grid()),
            "sector graph",
            SizeMismatch::of(&self.grid),
        )?;
        Ok(())
    }

    /// The sector holding the cell at map index `cell`.
    #[inline]
    fn sector_of_index(&self, cell: u32) -> u32 {
        self.shape().sector_of_index(cell)
    }

    /// The sector of the node at map index `cell` and its place among the sector's nodes.
    #[inline]
    fn node_at(&self, cell: u32) -> (usize, usize) {
        let t = self.shape().sector_of_index(cell) as usize;
        let m = self.parts[t]
            .nodes
            .binary_search(&cell)
            .expect("a crossing leads to a node");
        (t, m)
    }

    /// The landmark potentials of the `k`th node of sector `s`.
    #[inline]
    fn potentials(&self, s: usize, k: usize) -> &[u32] {
        &self.landmarks.potential[s][k * landmarks::LANDMARKS..(k + 1) * landmarks::LANDMARKS]
    }

    /// The number of connectivity regions (sets of walkable cells reachable from each other).
    /// O(1).
    ///
    /// ```
    /// let map = horde::io::parse_map(b"type octile\nheight 1\nwidth 20\nmap\n.........@..........\n", "m").unwrap();
    /// let graph = horde::sectors::SectorGraph::build(&map, 8, horde::CostModel::Octile).unwrap();
    /// assert_eq!(graph.region_count(), 2);
    /// ```
    pub fn region_count(&self) -> u32 {
        self.region_count
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
        let parts: usize = self
            .parts
            .iter()
            .map(|p| {
                size_of::<Part>()
                    + p.nodes.len() * 4
                    + p.node_label.len() * 2
                    + p.cost.len() * 4
                    + p.wide.len() * 8
                    + p.cross_start.len() * 4
                    + p.cross.len() * 8
            })
            .sum();
        self.labels.len() * size_of::<u16>()
            + parts
            + (self.node_base.len() + self.component_base.len() + self.region.len()) * 4
            + self.uniform.len()
            + self.landmarks.memory_bytes()
    }

    /// The global component of a walkable cell.
    fn component(&self, cell: UVec2) -> Option<u32> {
        let s = self.sector_of(cell)?;
        let rect = self.rect(s);
        let label = self.labels
            [s as usize * (self.side * self.side) as usize + rect.local(cell.x, cell.y) as usize];
        (label != 0).then(|| self.component_base[s as usize] + label as u32 - 1)
    }

    /// The global component of the cell at map index `cell`.
    fn component_of_index(&self, cell: u32) -> Option<u32> {
        self.component(self.grid.cell(cell as usize))
    }

    fn rect(&self, sector: u32) -> Rect {
        self.shape().rect(sector)
    }

    /// The nodes of `sector`.
    fn nodes_of(&self, sector: u32) -> std::ops::Range<usize> {
        self.node_base[sector as usize] as usize..self.node_base[sector as usize + 1] as usize
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

/// Whether every walkable cell of `rect` has the same terrain cost.
fn is_uniform(costs: &[u8], w: u32, rect: Rect) -> bool {
    let mut walkable = (rect.y0..rect.y0 + rect.h)
        .flat_map(|y| {
            let row = (y * w + rect.x0) as usize;
            costs[row..row + rect.w as usize].iter()
        })
        .filter(|&&c| c != WALL);
    let first = walkable.next();
    walkable.all(|c| Some(c) == first)
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

/// The crossings kept along one run of open cell pairs: its middle pair when it is short, its
/// two end pairs otherwise.
fn keep_run(run: &[(u32, u32)], out: &mut Vec<(u32, u32)>) {
    match run.len() as u32 {
        0 => {}
        n if n <= ONE_NODE_RUN => out.push(run[run.len() / 2]),
        _ => {
            out.push(run[0]);
            out.push(run[run.len() - 1]);
        }
    }
}

/// The crossings kept on the vertical border between column `x` and column `x + 1`, over rows
/// `y0..y0 + rows`: pairs of map indices (west cell, east cell).
fn vertical_border(costs: &[u8], w: u32, x: u32, y0: u32, rows: u32, out: &mut Vec<(u32, u32)>) {
    out.clear();
    let mut run = Vec::new();
    for y in y0..y0 + rows {
        let a = y * w + x;
        if costs[a as usize] != WALL && costs[a as usize + 1] != WALL {
            run.push((a, a + 1));
        } else {
            keep_run(&run, out);
            run.clear();
        }
    }
    keep_run(&run, out);
}

/// The crossings kept on the horizontal border between row `y` and row `y + 1`, over columns
/// `x0..x0 + cols`: pairs of map indices (north cell, south cell).
fn horizontal_border(costs: &[u8], w: u32, y: u32, x0: u32, cols: u32, out: &mut Vec<(u32, u32)>) {
    out.clear();
    let mut run = Vec::new();
    for x in x0..x0 + cols {
        let a = y * w + x;
        if costs[a as usize] != WALL && costs[(a + w) as usize] != WALL {
            run.push((a, a + w));
        } else {
            keep_run(&run, out);
            run.clear();
        }
    }
    keep_run(&run, out);
}

#[cfg(test)]
mod tests;
