//! Routes: one A* over the portal graph from the start cell to the goal cell, joined to the
//! graph by two searches confined to the start's and the goal's sectors.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use glam::UVec2;

use super::landmarks::{LANDMARKS, UNKNOWN};
use super::local::{Direction, LocalSearch, RememberingFields, SectorFields};
use super::{SectorError, SectorGraph};
use crate::cost::CostField;

/// A route found by [`RouteSearch::route`]: the cells where it enters and leaves sectors, and
/// its cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Route {
    /// Raw cost in the graph's model: the cost of a real path through the waypoints, so never
    /// below the optimum (`CostModel::to_cost` gives it in cost units).
    pub cost: u64,
    /// The start, the portal cells passed through, the goal.
    pub waypoints: Vec<UVec2>,
    /// For each waypoint, the raw cost of the rest of the route from it (`cost` at the start,
    /// 0 at the goal).
    pub remaining: Vec<u64>,
    /// The sectors the waypoints lie in, in order, each listed once per visit.
    pub sectors: Vec<u32>,
    /// Graph nodes expanded by the search (a measure of its work).
    pub expanded: usize,
}

/// Landmarks a route search consults at each step: those that bound the start's cost best.
const ACTIVE_LANDMARKS: usize = 3;

/// The unit of [`RouteSearch::set_weight`]'s fixed point.
const WEIGHT_ONE: u64 = 16;

/// Reusable scratch for route queries over one or more [`SectorGraph`]s: after the first query
/// on a graph, nothing allocates. Memory: 44 bytes per graph node, plus about 40 bytes per cell
/// of a sector for the searches inside the end sectors (the goal's kept for the tiles).
#[derive(Debug, Default, Clone)]
pub struct RouteSearch {
    local: LocalSearch,
    fields: SectorFields,
    /// The goal sector's field of the last route, kept for [`FlowTiles::extend_reusing`]
    /// (its tile is that field).
    ///
    /// [`FlowTiles::extend_reusing`]: super::FlowTiles::extend_reusing
    goal_fields: RememberingFields,
    generation: u32,
    /// Per vertex (nodes, then the start and the goal): best cost so far, valid when its stamp
    /// is the current generation.
    g: Vec<u64>,
    g_stamp: Vec<u32>,
    /// Per vertex: set when it is expanded (its cost is final: the heuristic is consistent).
    closed_stamp: Vec<u32>,
    /// Per vertex: its sector, known when it is reached.
    sector: Vec<u32>,
    parent: Vec<u32>,
    /// Per vertex: its heuristic (unweighted), valid with its cost.
    h_of: Vec<u64>,
    /// Per node: its cost to the goal inside the goal's sector, valid when stamped.
    to_goal: Vec<u64>,
    to_goal_stamp: Vec<u32>,
    /// Entries (f, h, vertex): among equal f the one nearest the goal first, which on the
    /// plateaus of equally good routes that open ground has walks one route to the goal
    /// instead of widening over all of them.
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    targets: Vec<u32>,
    start_edges: Vec<(u32, u64)>,
    /// The heuristic's weight in 1/`WEIGHT_ONE`ths (0 until set: plain A*).
    weight: u64,
    /// Set: the heuristic is the octile distance alone, landmarks unused.
    octile_only: bool,
    chain: Vec<u32>,
}

impl RouteSearch {
    /// Empty scratch; it grows to the graph on the first query.
    pub fn new() -> RouteSearch {
        RouteSearch::default()
    }

    /// The goal sector's field of the last route, and what it was asked.
    pub(crate) fn goal_fields(&self) -> &SectorFields {
        &self.goal_fields.0
    }

    /// Weigh the heuristic by `weight` (1 to 4; 1, the default, is plain A*): a route then
    /// costs at most `weight` times the cheapest through the portal graph, and on big open maps
    /// the search expands far fewer nodes (the tiles built along the route still find the best
    /// way inside their sectors). Refuses a weight outside 1..=4 or not finite.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{RouteSearch, SectorGraph};
    /// let map = horde::maps::scattered_map(256, 256, 3).unwrap();
    /// let graph = SectorGraph::build(&map, 16, horde::CostModel::Octile).unwrap();
    /// let (a, b) = (map.nearest_walkable(UVec2::ZERO).unwrap(), map.nearest_walkable(UVec2::splat(255)).unwrap());
    /// let mut exact = RouteSearch::new();
    /// let mut quick = RouteSearch::new();
    /// quick.set_weight(1.25).unwrap();
    /// let (e, q) = (exact.route(&graph, &map, a, b).unwrap().unwrap(), quick.route(&graph, &map, a, b).unwrap().unwrap());
    /// assert!(q.cost >= e.cost && q.cost as f64 <= 1.25 * e.cost as f64);
    /// assert!(q.expanded <= e.expanded);
    /// assert!(quick.set_weight(0.5).is_err());
    /// ```
    pub fn set_weight(&mut self, weight: f32) -> Result<(), SectorError> {
        if !(weight.is_finite() && (1.0..=4.0).contains(&weight)) {
            return Err(SectorError::BadWeight(weight));
        }
        self.weight = (weight * WEIGHT_ONE as f32).round() as u64;
        Ok(())
    }

    /// Use the graph's landmarks in the heuristic (`true`, the default) or the octile distance
    /// alone. Either way routes cost the same (both bounds are admissible); landmarks make the
    /// search expand far fewer nodes on terrain and in mazes.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{RouteSearch, SectorGraph};
    /// let map = horde::maps::scattered_map(256, 256, 3).unwrap();
    /// let graph = SectorGraph::build(&map, 16, horde::CostModel::Octile).unwrap();
    /// let (a, b) = (map.nearest_walkable(UVec2::ZERO).unwrap(), map.nearest_walkable(UVec2::splat(255)).unwrap());
    /// let mut plain = RouteSearch::new();
    /// plain.set_landmarks(false);
    /// let (alt, octile) = (RouteSearch::new().route(&graph, &map, a, b).unwrap().unwrap(), plain.route(&graph, &map, a, b).unwrap().unwrap());
    /// assert_eq!(alt.cost, octile.cost);
    /// assert!(alt.expanded < octile.expanded);
    /// ```
    pub fn set_landmarks(&mut self, on: bool) {
        self.octile_only = !on;
    }

    /// The cheapest route through the portal graph from `start` to `goal`, or `None` when the
    /// goal cannot be reached (known from the connectivity labels, without a search).
    ///
    /// Cost: two Dijkstra searches confined to the end sectors (they stop once the sector's
    /// portals are settled) and an A* over the graph whose heuristic is the larger of the octile
    /// distance and the graph's landmark bounds — it expands little more than the nodes along
    /// the route.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::sectors::{RouteSearch, SectorGraph};
    /// use horde::CostModel;
    /// let map = horde::maps::demo_map();
    /// let graph = SectorGraph::build(&map, 16, CostModel::TenFourteen).unwrap();
    /// let mut search = RouteSearch::new();
    /// let route = search
    ///     .route(&graph, &map, UVec2::new(2, 2), UVec2::new(125, 125))
    ///     .unwrap()
    ///     .expect("reachable");
    /// // A real path, so never cheaper than the best one.
    /// let best = horde::AStar::new()
    ///     .search(&map, UVec2::new(2, 2), UVec2::new(125, 125), CostModel::TenFourteen)
    ///     .unwrap()
    ///     .unwrap();
    /// assert!(route.cost >= best as u64);
    /// assert_eq!(route.waypoints.first(), Some(&UVec2::new(2, 2)));
    /// ```
    pub fn route(
        &mut self,
        graph: &SectorGraph,
        cost: &CostField,
        start: UVec2,
        goal: UVec2,
    ) -> Result<Option<Route>, SectorError> {
        let mut out = Route::default();
        Ok(self
            .route_into(graph, cost, start, goal, &mut out)?
            .then_some(out))
    }

    /// [`RouteSearch::route`] into a reused [`Route`]: `true` when a route was found (and
    /// written), `false` when the goal cannot be reached. Allocates nothing once `out` and the
    /// scratch have grown.
    pub fn route_into(
        &mut self,
        graph: &SectorGraph,
        cost: &CostField,
        start: UVec2,
        goal: UVec2,
        out: &mut Route,
    ) -> Result<bool, SectorError> {
        graph.check_cost(cost)?;
        graph.check_end(cost, start, "start")?;
        graph.check_end(cost, goal, "goal")?;
        let (Some(start_component), Some(goal_component)) =
            (graph.component(start), graph.component(goal))
        else {
            return Ok(false);
        };
        if graph.region[start_component as usize] != graph.region[goal_component as usize] {
            return Ok(false);
        }
        self.begin(graph.node_count());
        let n = graph.node_count() as u32;
        let (start_v, goal_v) = (n, n + 1);
        let (costs, w, model) = (cost.costs(), graph.grid.width(), graph.model);
        let (start_sector, goal_sector) = (
            graph.sector_of(start).expect("checked"),
            graph.sector_of(goal).expect("checked"),
        );
        let same_component = start_component == goal_component;
        // The goal's side: the cost from every cell of the goal's sector to the goal.
        let rect = graph.rect(goal_sector);
        let to_goal =
            self.goal_fields
                .0
                .costs_to(costs, w, model, rect, &[(rect.local(goal.x, goal.y), 0)]);
        for node in graph.nodes_of(goal_sector) {
            if graph.node_component(node) == goal_component {
                let c = graph.node_index(node);
                self.to_goal[node] = to_goal[rect.local(c % w, c / w) as usize];
                self.to_goal_stamp[node] = self.generation;
            }
        }
        let landmarks = &graph.landmarks;
        let mut goal_potential = [u64::MAX; LANDMARKS];
        if !self.octile_only && landmarks.valid != 0 {
            // Each landmark's potential at the goal: the cheapest way from the goal to it, out
            // through one of the goal's portals, or inside the sector when the landmark is in
            // it. The costs from the goal are bounded by those to it (computed above): a path
            // walked backwards pays for each step the terrain of the cell at its other end, so
            // at most the sector's dearest terrain over its cheapest times the cost forwards
            // (equal where every walkable cell costs the same). A larger potential at the goal
            // only weakens the bound; it stays admissible and consistent.
            let (cheapest, dearest) = terrain_range(costs, w, rect);
            let from_goal = |local: u32| -> u64 {
                match to_goal[local as usize] {
                    u64::MAX => u64::MAX,
                    d if cheapest == dearest => d,
                    d => d.saturating_mul(dearest as u64).div_ceil(cheapest as u64),
                }
            };
            let goal_base = graph.nodes_of(goal_sector).start;
            for node in graph.nodes_of(goal_sector) {
                if graph.node_component(node) != goal_component {
                    continue;
                }
                let c = graph.node_index(node);
                let d = from_goal(rect.local(c % w, c / w));
                if d == u64::MAX {
                    continue;
                }
                let potentials = graph.potentials(goal_sector as usize, node - goal_base);
                for (best, &b) in goal_potential.iter_mut().zip(potentials) {
                    if b != UNKNOWN {
                        *best = (*best).min(d + b as u64);
                    }
                }
            }
            for (best, &cell) in goal_potential.iter_mut().zip(&landmarks.cells) {
                if cell != u32::MAX && graph.sector_of_index(cell) == goal_sector {
                    *best = (*best).min(from_goal(rect.local(cell % w, cell / w)));
                }
            }
        }
        let direct = if same_component {
            to_goal[rect.local(start.x, start.y) as usize]
        } else {
            u64::MAX
        };

        // The start's side: the start to every portal of its component. Where every walkable
        // cell of the sector costs the same, a cost to the start equals the cost from it, and
        // the faster field serves; otherwise a Dijkstra forward from the start.
        let rect = graph.rect(start_sector);
        let start_local = rect.local(start.x, start.y);
        let from_start: &[u64] = if graph.uniform[start_sector as usize] {
            self.fields
                .costs_to(costs, w, model, rect, &[(start_local, 0)])
        } else {
            self.targets.clear();
            for node in graph.nodes_of(start_sector) {
                if graph.node_component(node) == start_component {
                    let c = graph.node_index(node);
                    self.targets.push(rect.local(c % w, c / w));
                }
            }
            self.local.run(
                costs,
                w,
                model,
                rect,
                start_local,
                Direction::From,
                &self.targets,
            );
            self.local.dists()
        };
        self.start_edges.clear();
        for node in graph.nodes_of(start_sector) {
            if graph.node_component(node) == start_component {
                let c = graph.node_index(node);
                let d = from_start[rect.local(c % w, c / w) as usize];
                if d != u64::MAX {
                    self.start_edges.push((node as u32, d));
                }
            }
        }
        // The landmarks that bound the start's cost best (ALT's "active" landmarks): the
        // others would cost a look-up at every step for bounds that seldom win.
        let mut bound = [0u64; LANDMARKS];
        let mut candidates = [0usize; LANDMARKS];
        let mut count = 0;
        for (i, &p) in goal_potential.iter().enumerate() {
            if landmarks.valid & (1 << i) == 0 || p == u64::MAX {
                continue;
            }
            let mut least = u64::MAX;
            for &(node, d) in &self.start_edges {
                let k = node as usize - graph.nodes_of(start_sector).start;
                let b = graph.potentials(start_sector as usize, k)[i];
                if b != UNKNOWN {
                    least = least.min(d + b as u64);
                }
            }
            bound[i] = least.saturating_sub(p);
            candidates[count] = i;
            count += 1;
        }
        candidates[..count].sort_unstable_by_key(|&i| Reverse(bound[i]));
        let active = &candidates[..count.min(ACTIVE_LANDMARKS)];
        // The heuristic: the octile distance to the goal (a lower bound of any path's cost, as
        // every terrain cost is at least 1) and, for each landmark, the node's potential less
        // the goal's (the triangle inequality). Each is consistent, so their maximum is, and a
        // vertex's first expansion is final.
        let (gx, gy) = (goal.x, goal.y);
        let h = |node: u32, sector: u32, cell: u32| {
            let mut best = model.heuristic((cell % w).abs_diff(gx), (cell / w).abs_diff(gy)) as u64;
            if !active.is_empty() {
                let k = node - graph.node_base[sector as usize];
                let potentials = graph.potentials(sector as usize, k as usize);
                for &i in active {
                    let b = potentials[i];
                    if b != UNKNOWN {
                        best = best.max((b as u64).saturating_sub(goal_potential[i]));
                    }
                }
            }
            best
        };
        self.settle(start_v, 0, u32::MAX);
        for k in 0..self.start_edges.len() {
            let (node, d) = self.start_edges[k];
            let cell = graph.node_index(node as usize);
            self.relax(node, start_sector, h(node, start_sector, cell), d, start_v);
        }
        if direct != u64::MAX {
            self.relax(goal_v, goal_sector, 0, direct, start_v);
        }

        // A* over the portal graph.
        let mut expanded = 0;
        let graph_nodes = graph.node_count() as u32;
        while let Some(Reverse((_, _, v))) = self.heap.pop() {
            if v == goal_v {
                break;
            }
            if self.closed_stamp[v as usize] == self.generation {
                continue; // reached again more cheaply after this entry was queued
            }
            self.closed_stamp[v as usize] = self.generation;
            let g = self.g[v as usize];
            expanded += 1;
            if self.to_goal_stamp[v as usize] == self.generation {
                let to_goal = self.to_goal[v as usize];
                if to_goal != u64::MAX {
                    self.relax(goal_v, goal_sector, 0, g + to_goal, v);
                }
            }
            let s = self.sector[v as usize] as usize;
            let k = v as usize - graph.nodes_of(s as u32).start;
            // Reached from inside its sector (from a node there, or from the start): the
            // sector's other nodes were offered no more than through it, as the costs inside
            // a sector are its shortest paths (the triangle inequality), so only its crossings
            // can improve anything.
            let parent = self.parent[v as usize];
            let inside = !(parent == start_v
                || (parent < graph_nodes && self.sector[parent as usize] as usize == s));
            graph.for_each_edge(s, k, inside, |to, sector, cell, c| {
                debug_assert!(to < graph_nodes);
                // The heuristic only for a vertex this edge improves (most do not), and once
                // per vertex.
                if self.improves(to, g + c) {
                    let h = if self.g_stamp[to as usize] == self.generation {
                        self.h_of[to as usize]
                    } else {
                        h(to, sector, cell)
                    };
                    self.relax(to, sector, h, g + c, v);
                }
            });
        }
        if self.g_stamp[goal_v as usize] != self.generation {
            // Same region yet no route: cannot happen, as every portal of a component is joined
            // to every other inside its sector; kept as a refusal rather than a panic.
            return Ok(false);
        }

        // The chain of vertices, goal to start.
        self.chain.clear();
        let mut v = goal_v;
        while v != start_v {
            self.chain.push(v);
            v = self.parent[v as usize];
        }
        self.chain.push(start_v);
        out.cost = self.g[goal_v as usize];
        out.expanded = expanded;
        out.waypoints.clear();
        out.remaining.clear();
        out.sectors.clear();
        for &v in self.chain.iter().rev() {
            let cell = if v == start_v {
                start
            } else if v == goal_v {
                goal
            } else {
                graph.node_cell(v as usize)
            };
            out.waypoints.push(cell);
            out.remaining.push(out.cost - self.g[v as usize]);
            let s = graph.sector_of(cell).expect("on the map");
            if out.sectors.last() != Some(&s) {
                out.sectors.push(s);
            }
        }
        Ok(true)
    }

    /// A new query over a graph of `nodes` nodes: grow the arrays, move to a new generation.
    fn begin(&mut self, nodes: usize) {
        let vertices = nodes + 2;
        if self.g.len() < vertices {
            self.g.resize(vertices, 0);
            self.g_stamp.resize(vertices, 0);
            self.closed_stamp.resize(vertices, 0);
            self.sector.resize(vertices, 0);
            self.parent.resize(vertices, 0);
            self.h_of.resize(vertices, 0);
            self.to_goal.resize(vertices, 0);
            self.to_goal_stamp.resize(vertices, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // After 2^32 queries the stamps could collide: start them over.
            self.g_stamp.fill(0);
            self.closed_stamp.fill(0);
            self.to_goal_stamp.fill(0);
            self.generation = 1;
        }
        self.heap.clear();
    }

    fn settle(&mut self, v: u32, g: u64, parent: u32) {
        self.g[v as usize] = g;
        self.g_stamp[v as usize] = self.generation;
        self.parent[v as usize] = parent;
    }

    /// Whether cost `g` would improve vertex `v` (reached no more cheaply and not expanded).
    #[inline]
    fn improves(&self, v: u32, g: u64) -> bool {
        let reached = self.g_stamp[v as usize] == self.generation;
        !(reached && self.g[v as usize] <= g) && self.closed_stamp[v as usize] != self.generation
    }

    /// Offer vertex `v` (in `sector`, `h` from the goal) the cost `g` through `parent`.
    #[inline]
    fn relax(&mut self, v: u32, sector: u32, h: u64, g: u64, parent: u32) {
        if self.g_stamp[v as usize] == self.generation && self.g[v as usize] <= g {
            return;
        }
        // An expanded vertex keeps its cost, so the costs along the parents stay true (with a
        // weight above 1 a cheaper way can turn up later; the bound holds without it).
        if self.closed_stamp[v as usize] == self.generation {
            return;
        }
        self.settle(v, g, parent);
        self.sector[v as usize] = sector;
        self.h_of[v as usize] = h;
        let h = if self.weight > WEIGHT_ONE {
            h * self.weight / WEIGHT_ONE
        } else {
            h
        };
        self.heap.push(Reverse((g + h, h, v)));
    }
}

/// The cheapest and the dearest walkable terrain in `rect` (`(1, 1)` if it has none).
fn terrain_range(costs: &[u8], w: u32, rect: super::local::Rect) -> (u8, u8) {
    let mut range = (u8::MAX, 0u8);
    for y in rect.y0..rect.y0 + rect.h {
        let row = (y * w + rect.x0) as usize;
        for &c in &costs[row..row + rect.w as usize] {
            if c != crate::cost::WALL {
                range = (range.0.min(c), range.1.max(c));
            }
        }
    }
    if range.1 == 0 { (1, 1) } else { range }
}
