//! Landmarks for the route search's heuristic (ALT: A*, landmarks and the triangle inequality,
//! Goldberg & Harrelson 2005). A landmark is a walkable cell `L` near a corner of the map or the
//! middle of a side; for every node `v` the graph keeps a potential `B(v)`, at build the cost of
//! the cheapest route from `v` to `L`; then `B(v) - B(goal)` never exceeds the cost from `v` to
//! the goal, and the search takes the largest such bound over the landmarks (and the octile
//! distance). With a landmark beyond the goal (or at it) the bound is close to the truth, even
//! on terrain where the octile distance (priced at cost 1 per cell) is far below it, and the
//! search expands little more than the nodes along the route.
//!
//! What the search needs is weaker than exact distances: potentials that are *feasible*, with
//! `B(x) <= w(x, y) + B(y)` on every edge and `B` known at `x` whenever it is known at `y`. Every
//! such bound is admissible and consistent. After an edit, the rebuilt sectors' nodes get new
//! potentials from their neighbours' (a Dijkstra over the rebuilt nodes only), every edge whose
//! cost may have changed is checked, and a landmark that fails a check is set aside until
//! [`SectorGraph::refresh_landmarks`](super::SectorGraph::refresh_landmarks).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::SectorGraph;
use super::local::SectorFields;

/// Landmarks a graph keeps: 4 bytes per node each.
pub(crate) const LANDMARKS: usize = 8;
/// Nodes outside the rebuilt sectors whose potential one landmark's repair may lower before
/// the landmark is set aside instead.
pub(crate) const REPAIR_BUDGET: usize = 4096;
/// A potential not known (the node is not reached from the landmark).
pub(crate) const UNKNOWN: u32 = u32::MAX;

/// Per sector and node, one potential per landmark; which landmarks may be used.
#[derive(Debug, Clone, Default)]
pub(crate) struct Landmarks {
    /// Per sector: for each of its nodes, [`LANDMARKS`] potentials in a row.
    pub potential: Vec<Vec<u32>>,
    /// Each landmark's cell (map index; `u32::MAX`: none).
    pub cells: [u32; LANDMARKS],
    /// Bit `i` set: landmark `i`'s potentials are feasible and may be used.
    pub valid: u8,
}

impl Landmarks {
    /// Choose landmarks around the map's edge (the walkable cells nearest its corners and the
    /// middles of its sides, in the region with the most nodes: beyond most goals, seen from
    /// most starts) and price every node's way to each.
    ///
    /// Cost: per landmark, a field over its sector and a Dijkstra over the portal graph, in
    /// parallel with the `parallel` feature.
    pub fn compute(graph: &SectorGraph, costs: &[u8]) -> Landmarks {
        let n = graph.node_count();
        let mut out = Landmarks {
            potential: graph
                .parts
                .iter()
                .map(|p| vec![UNKNOWN; p.nodes.len() * LANDMARKS])
                .collect(),
            cells: [u32::MAX; LANDMARKS],
            valid: 0,
        };
        if n == 0 {
            return out;
        }
        let mut node_sector = Vec::with_capacity(n);
        for (s, p) in graph.parts.iter().enumerate() {
            node_sector.extend(std::iter::repeat_n(s as u32, p.nodes.len()));
        }
        // The region with the most nodes gets the landmarks; searches elsewhere fall back on the
        // octile distance alone.
        let mut per_region = std::collections::HashMap::new();
        for v in 0..n {
            *per_region
                .entry(graph.region[graph.node_component(v) as usize])
                .or_insert(0u32) += 1;
        }
        let biggest = per_region
            .iter()
            .max_by_key(|&(&r, &count)| (count, Reverse(r)))
            .map(|(&r, _)| r)
            .expect("a node has a region");
        let (w, h) = (graph.grid.width() - 1, graph.grid.height() - 1);
        let around = [
            (0, 0),
            (w / 2, 0),
            (w, 0),
            (w, h / 2),
            (w, h),
            (w / 2, h),
            (0, h),
            (0, h / 2),
        ];
        for (i, &(x, y)) in around.iter().enumerate() {
            out.cells[i] = nearest_in_region(graph, biggest, x, y);
        }
        let cells = out.cells;
        let price = |i: usize| -> Option<Vec<u32>> {
            let cell = cells[i];
            if cell == u32::MAX || cells[..i].contains(&cell) {
                return None; // no cell, or the same as an earlier landmark: no new bound
            }
            let mut dist = vec![u64::MAX; n];
            let mut heap = BinaryHeap::new();
            // Seeds: the landmark's sector's portals, at their cost to it inside the sector.
            let s = graph.shape().sector_of_index(cell);
            let rect = graph.rect(s);
            let w = graph.grid.width();
            let mut fields = SectorFields::default();
            let to_cell = fields.costs_to(
                costs,
                w,
                graph.model,
                rect,
                &[(rect.local(cell % w, cell / w), 0)],
            );
            for v in graph.nodes_of(s) {
                let c = graph.node_index(v);
                let d = to_cell[rect.local(c % w, c / w) as usize];
                if d != u64::MAX {
                    dist[v] = d;
                    heap.push(Reverse((d, v as u32)));
                }
            }
            dijkstra_to(graph, costs, &node_sector, &mut dist, &mut heap);
            dist.iter()
                .map(|&d| match d {
                    u64::MAX => Some(UNKNOWN),
                    d if d < UNKNOWN as u64 => Some(d as u32),
                    _ => None, // too dear for 32 bits: this landmark is left out
                })
                .collect()
        };
        #[cfg(feature = "parallel")]
        let priced: Vec<Option<Vec<u32>>> = {
            use rayon::prelude::*;
            (0..LANDMARKS).into_par_iter().map(price).collect()
        };
        #[cfg(not(feature = "parallel"))]
        let priced: Vec<Option<Vec<u32>>> = (0..LANDMARKS).map(price).collect();
        for (i, dist) in priced.iter().enumerate() {
            let Some(dist) = dist else { continue };
            for (s, p) in graph.parts.iter().enumerate() {
                let base = graph.node_base[s] as usize;
                for k in 0..p.nodes.len() {
                    out.potential[s][k * LANDMARKS + i] = dist[base + k];
                }
            }
            out.valid |= 1 << i;
        }
        out
    }

    /// New potentials for the nodes of the rebuilt `sectors` (ascending), from the nodes around
    /// them, and lower ones for the nodes around wherever an edge into a rebuilt node would
    /// otherwise break feasibility (a cost lowered, a shorter way opened, regions joined), as
    /// far as that spreads. A landmark whose change spreads to more than
    /// [`REPAIR_BUDGET`] nodes outside, or whose own sector was rebuilt, is set aside. Returns
    /// the number of landmarks set aside by this call.
    ///
    /// Cost: per landmark, a Dijkstra over the rebuilt sectors' nodes and the nodes the change
    /// reaches (at most [`REPAIR_BUDGET`]).
    pub fn repair(&mut self, graph: &SectorGraph, costs: &[u8], sectors: &[u32]) -> u32 {
        let mut rebuilt = vec![false; graph.parts.len()];
        for &s in sectors {
            rebuilt[s as usize] = true;
            self.potential[s as usize] =
                vec![UNKNOWN; graph.parts[s as usize].nodes.len() * LANDMARKS];
        }
        let before = self.valid.count_ones();
        // A landmark whose own sector changed is set aside: its cell may be a wall now, and
        // its sector's portals were priced from it by a field over the old sector.
        for (i, &cell) in self.cells.iter().enumerate() {
            if cell != u32::MAX && rebuilt[graph.sector_of_index(cell) as usize] {
                self.valid &= !(1 << i);
            }
        }
        let mut heap: BinaryHeap<Reverse<(u64, u32, u32)>> = BinaryHeap::new();
        for i in 0..LANDMARKS {
            if self.valid & (1 << i) == 0 {
                continue;
            }
            // Seeds: each rebuilt node that steps across to a node outside whose potential is
            // known. A potential is lowered when a lower value is found (and the node queued):
            // an entry whose value is no longer the node's is stale.
            heap.clear();
            let mut fits = true;
            for &s in sectors {
                let part = &graph.parts[s as usize];
                for k in 0..part.nodes.len() {
                    let range = part.cross_start[k] as usize..part.cross_start[k + 1] as usize;
                    for &(across, c) in &part.cross[range] {
                        let (t, m) = graph.node_at(across);
                        let b = self.potential[t][m * LANDMARKS + i];
                        if rebuilt[t] || b == UNKNOWN {
                            continue;
                        }
                        let d = b as u64 + c as u64;
                        let slot = &mut self.potential[s as usize][k * LANDMARKS + i];
                        if d >= UNKNOWN as u64 {
                            fits = false;
                        } else if d < *slot as u64 {
                            *slot = d as u32;
                            heap.push(Reverse((d, s, k as u32)));
                        }
                    }
                }
            }
            // A Dijkstra backwards: each rebuilt node takes the least potential that keeps the
            // edges out of it feasible, and any node with an edge into a lowered one whose
            // potential now exceeds that edge's cost plus it is lowered in turn.
            let mut spread = 0;
            while let Some(Reverse((d, s, k))) = heap.pop() {
                if !fits {
                    break;
                }
                if self.potential[s as usize][k as usize * LANDMARKS + i] as u64 != d {
                    continue;
                }
                if !rebuilt[s as usize] {
                    spread += 1;
                    if spread > REPAIR_BUDGET {
                        fits = false;
                        break;
                    }
                }
                let potential = &mut self.potential;
                graph.for_each_edge_into(costs, s as usize, k as usize, |from, t, c| {
                    let m = (from - graph.node_base[t as usize]) as usize;
                    let slot = &mut potential[t as usize][m * LANDMARKS + i];
                    let nd = d + c;
                    if nd >= UNKNOWN as u64 {
                        fits = false;
                    } else if nd < *slot as u64 {
                        *slot = nd as u32;
                        heap.push(Reverse((nd, t, m as u32)));
                    }
                });
            }
            if !fits {
                self.valid &= !(1 << i);
            }
        }
        before - self.valid.count_ones()
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.potential
            .iter()
            .map(|p| std::mem::size_of::<Vec<u32>>() + p.len() * 4)
            .sum()
    }
}

/// Costs from every node to the landmark, from the seeds already in `dist` and `heap`
/// (`u64::MAX`: it cannot get there).
fn dijkstra_to(
    graph: &SectorGraph,
    costs: &[u8],
    node_sector: &[u32],
    dist: &mut [u64],
    heap: &mut BinaryHeap<Reverse<(u64, u32)>>,
) {
    while let Some(Reverse((d, v))) = heap.pop() {
        if d > dist[v as usize] {
            continue;
        }
        let s = node_sector[v as usize] as usize;
        let k = v as usize - graph.node_base[s] as usize;
        graph.for_each_edge_into(costs, s, k, |from, _, c| {
            let nd = d + c;
            if nd < dist[from as usize] {
                dist[from as usize] = nd;
                heap.push(Reverse((nd, from)));
            }
        });
    }
}

/// The walkable cell of region `region` nearest `(x, y)` (by straight-line distance, the first
/// on ties): found in the nearest sector that has a component of the region. `u32::MAX` when
/// there is none.
fn nearest_in_region(graph: &SectorGraph, region: u32, x: u32, y: u32) -> u32 {
    let far = |r: super::Rect| {
        let dx = (r.x0 as i64 - x as i64)
            .max(x as i64 - (r.x0 + r.w - 1) as i64)
            .max(0);
        let dy = (r.y0 as i64 - y as i64)
            .max(y as i64 - (r.y0 + r.h - 1) as i64)
            .max(0);
        dx * dx + dy * dy
    };
    let has_region = |s: usize| {
        (graph.component_base[s]..graph.component_base[s + 1])
            .any(|c| graph.region[c as usize] == region)
    };
    let Some(s) = (0..graph.parts.len())
        .filter(|&s| has_region(s))
        .min_by_key(|&s| far(graph.rect(s as u32)))
    else {
        return u32::MAX;
    };
    let rect = graph.rect(s as u32);
    let w = graph.grid.width();
    let mut best = (i64::MAX, u32::MAX);
    for cy in rect.y0..rect.y0 + rect.h {
        for cx in rect.x0..rect.x0 + rect.w {
            let in_region = graph
                .component(glam::UVec2::new(cx, cy))
                .is_some_and(|c| graph.region[c as usize] == region);
            let d = (cx as i64 - x as i64).pow(2) + (cy as i64 - y as i64).pow(2);
            if in_region && d < best.0 {
                best = (d, cy * w + cx);
            }
        }
    }
    best.1
}
