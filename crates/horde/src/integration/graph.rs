//! The crossing graph: the cells a one-shot wave over rooms and chains still settles one by one
//! (the rooms' entries, the chains' ends and the cells in neither), numbered densely, with their
//! steps and crossings as edges, so that the wave runs over a few thousand values that stay in
//! a core's cache instead of over the padded distances.
//!
//! On a 1024 × 1024 dungeon the wave settles some four thousand cells spread over 4 MB of
//! distances: each expansion waited for the loads of its value, its legal steps, the bits that
//! tell entries and chain ends, and its neighbours', one cache miss after another. Over the
//! graph the same expansions read a compact array; the values are written into the distances
//! once, at the end, where the room fill and the chains read them.
//!
//! A seed inside a room (the goal usually is) no longer sends the room's cells through the wave:
//! the octile distance is the cheapest way between two cells of a room of plain ground (no step
//! costs less than a plain one), so the seed offers each entry of its room its value plus the
//! octile distance to it, and the fill takes the seed as one more source of the room.
//!
//! Exact: the same values as the wave over rooms and chains, which is exact (see `rooms` and
//! `chains`); the tests compare them with a wave through every cell.

use super::ranked::RankedCells;
use super::rooms::{Rooms, octile_steps};
use super::{TOUCHED_BLOCK, UNREACHABLE};
use crate::cost::WALL;

/// Buckets of the queue at the least.
const MIN_BUCKETS: usize = 64;

/// The crossing graph of one layout of rooms and chains, and one build's values over it.
///
/// Memory: a bit and a half per padded cell (which cells are nodes); 12 bytes per node (its
/// cell, where its edges start, its value); 24 bytes per edge (its node, its price in straight
/// and diagonal steps, both again priced in the current model, and the queue's store, which
/// holds an entry per edge); 16 bytes per seed's offer (an offer and its entry in the store), 4
/// per bucket (at least 64, a lap past the dearest edge). At most `MAX_BYTES_PER_CELL` bytes
/// per padded cell in all (counted before it is built). While built, a byte per padded cell.
#[derive(Debug, Default, Clone)]
pub(crate) struct Graph {
    /// The chains' layout the graph was built for (0: none; see `chains`).
    layout: u64,
    /// Whether the layout's graph could be built (every step of a node leads to a node).
    usable: bool,
    /// Each node's padded cell, in the order of the cells.
    cells: Vec<u32>,
    nodes: RankedCells,
    /// Node `i`'s edges are `to[first[i]..first[i + 1]]`.
    first: Vec<u32>,
    to: Vec<u32>,
    /// Each edge's price as straight and diagonal steps: `(straight, diagonal)`.
    units: Vec<(u16, u16)>,
    /// Each edge's node and its price in the base prices `prices`; and the dearest price.
    edges: Vec<(u32, u32)>,
    prices: (u32, u32),
    heaviest: u32,
    /// This build's value of each node.
    values: Vec<u32>,
    /// Offers from the seeds, `(value, node)`, taken in order as the queue reaches them.
    offers: Vec<(u32, u32)>,
    /// Dial's buckets as lists: each bucket's last entry, and each entry's node and the entry
    /// queued before it in its bucket (`NIL` ends a list). An expansion queues at most one
    /// entry per edge, so `entries` never grows during a build: the relaxations' loop has no
    /// call to keep its registers across.
    heads: Vec<u32>,
    entries: Vec<(u32, u32)>,
}

/// No entry.
const NIL: u32 = u32::MAX;

/// Bytes a node and an edge take (see [`Graph`]).
const NODE_BYTES: usize = 12;
const EDGE_BYTES: usize = 24;

/// The most the graph may take, in bytes per padded cell: about what the builder's own
/// scratch takes already (6). A dungeon's graph takes a third of a byte, 8room_000's (rooms of
/// 7 × 7 cells and their doors) 5.7; a graph of rooms amid open ground, where every open cell is
/// a node, would take a hundred.
const MAX_BYTES_PER_CELL: usize = 8;

/// Marks of the padded cells while the graph is built.
const ROOM_CELL: u8 = 1;
const CHAIN_INNER: u8 = 2;

impl Graph {
    /// The graph of the rooms and chains `rooms` (worked out over padded `costs` and legal
    /// steps `moves`, width `pw`), built if it is not the one held. False when the layout has
    /// none: the graph would take more than `MAX_BYTES_PER_CELL` (counted first), or a step of
    /// a node leads to a cell that is not one. O(cells) when built, O(1) otherwise.
    pub(crate) fn prepare(&mut self, rooms: &Rooms, costs: &[u8], moves: &[u8], pw: usize) -> bool {
        let layout = rooms.chains.layout;
        if self.layout != layout {
            self.layout = layout;
            self.prices = (0, 0);
            self.usable = self.build(rooms, costs, moves, pw);
        }
        self.usable
    }

    fn build(&mut self, rooms: &Rooms, costs: &[u8], moves: &[u8], pw: usize) -> bool {
        let plen = costs.len();
        let mut marks = vec![0u8; plen];
        for (x0, y0, x1, y1) in rooms.rects() {
            for y in y0..=y1 {
                let row = y as usize * pw;
                marks[row + x0 as usize..=row + x1 as usize].fill(ROOM_CELL);
            }
        }
        for c in rooms.chains.all_inner_cells() {
            marks[c as usize] = CHAIN_INNER;
        }
        let is_node = |c: usize, t: u8, m: u8| match m {
            0 => t != WALL,
            ROOM_CELL => rooms.entry_steps(c).is_some(),
            _ => false,
        };
        // A node's edges: its legal steps out of its room or chain, and its crossings.
        let degree = |c: usize| match (rooms.entry_steps(c), rooms.chains.end_raw(c)) {
            (Some((out, doors)), _) => (moves[c] & out).count_ones() as usize + doors.count() - 1,
            (None, Some(end)) => (moves[c] & !end.into).count_ones() as usize + 1,
            (None, None) => moves[c].count_ones() as usize,
        };
        // Counted before anything is reserved: a graph larger than the wave's own scratch
        // (where rooms and chains leave much open ground between them) is not built, and such
        // maps keep the wave over the distances.
        let (mut nodes, mut edges) = (0usize, 0usize);
        for (c, (&t, &m)) in costs.iter().zip(&marks).enumerate() {
            if is_node(c, t, m) {
                nodes += 1;
                edges += degree(c);
            }
        }
        if nodes * NODE_BYTES + edges * EDGE_BYTES > plen * MAX_BYTES_PER_CELL {
            self.clear();
            return false;
        }
        self.cells.clear();
        for (c, (&t, &m)) in costs.iter().zip(&marks).enumerate() {
            if is_node(c, t, m) {
                self.cells.push(c as u32);
            }
        }
        drop(marks);
        self.nodes
            .build(plen, self.cells.iter().map(|&c| c as usize));
        self.first.clear();
        self.to.clear();
        self.units.clear();
        let offsets = [
            pw.wrapping_neg(),
            1,
            pw,
            1usize.wrapping_neg(),
            1usize.wrapping_sub(pw),
            pw + 1,
            pw - 1,
            (pw + 1).wrapping_neg(),
        ];
        for &c in &self.cells {
            self.first.push(self.to.len() as u32);
            let c = c as usize;
            let mut steps = moves[c];
            if let Some((out, doors)) = rooms.entry_steps(c) {
                steps &= out;
                let (cx, cy) = ((c % pw) as u32, (c / pw) as u32);
                for (d, x, y) in doors {
                    if d as usize == c {
                        continue;
                    }
                    let Some(n) = self.nodes.rank_of(d as usize) else {
                        return false;
                    };
                    let (straight, diagonal) = octile_steps((x, y), (cx, cy));
                    self.to.push(n as u32);
                    self.units.push((straight as u16, diagonal as u16));
                }
            } else if let Some(end) = rooms.chains.end_raw(c) {
                steps &= !end.into;
                let Some(n) = self.nodes.rank_of(end.other as usize) else {
                    return false;
                };
                self.to.push(n as u32);
                self.units.push((end.steps as u16, 0));
            }
            for (bit, &off) in offsets.iter().enumerate() {
                if steps & (1 << bit) == 0 {
                    continue;
                }
                let j = c.wrapping_add(off);
                let Some(n) = self.nodes.rank_of(j) else {
                    return false;
                };
                let t = costs[j] as u16;
                self.to.push(n as u32);
                self.units.push(if bit < 4 { (t, 0) } else { (0, t) });
            }
        }
        self.first.push(self.to.len() as u32);
        true
    }

    /// Hold no graph (its memory given back).
    fn clear(&mut self) {
        *self = Graph {
            layout: self.layout,
            ..Graph::default()
        };
    }

    /// The node at padded cell `c`, if it is one.
    pub(crate) fn node_at(&self, c: usize) -> Option<usize> {
        self.nodes.rank_of(c)
    }

    /// Price the edges in base prices `(straight, diagonal)`, if not so priced already.
    fn price(&mut self, prices: (u32, u32)) {
        if self.prices == prices && self.edges.len() == self.units.len() {
            return;
        }
        let (s, g) = prices;
        self.edges.clear();
        self.edges.extend(
            self.to
                .iter()
                .zip(&self.units)
                .map(|(&j, &(a, b))| (j, a as u32 * s + b as u32 * g)),
        );
        self.heaviest = self.edges.iter().map(|e| e.1).max().unwrap_or(0);
        self.prices = prices;
    }

    /// Begin a build: every node without a value.
    pub(crate) fn begin(&mut self, prices: (u32, u32)) {
        self.price(prices);
        self.values.clear();
        self.values.resize(self.cells.len(), UNREACHABLE);
        self.offers.clear();
    }

    /// Offer node `n` value `v` from a seed.
    pub(crate) fn offer(&mut self, n: usize, v: u32) {
        self.offers.push((v, n as u32));
    }

    /// Dial's buckets over the nodes from the seeds' offers, each bucket `1 << shift` wide (no
    /// wider than the cheapest step). Returns the nodes settled, or the first node expanded
    /// with a value past `limit`. O(nodes + edges + buckets passed).
    pub(crate) fn run(&mut self, shift: u32, limit: u32) -> Result<usize, usize> {
        // One lap of the circular buckets holds the dearest edge.
        let nb = (((self.heaviest >> shift) as usize) + 2)
            .next_power_of_two()
            .max(MIN_BUCKETS);
        self.heads.clear();
        self.heads.resize(nb, NIL);
        // Every entry is written before it is read: the store only grows, and is not cleared
        // (a store the size of the edges, written whole at every build, was 6 % of this run).
        let need = self.offers.len() + self.edges.len();
        if self.entries.len() < need {
            self.entries.resize(need, (0, NIL));
        }
        self.offers.sort_unstable();
        let Some(&(v0, _)) = self.offers.first() else {
            return Ok(0);
        };
        // The edges were evicted by the rest of the last build (megabytes of distances and
        // arrows): read in order, a line at a time, they stream in at the memory's full speed,
        // where the wave would wait for each node's edges in turn.
        let mut sum = 0u32;
        for line in self.edges.chunks(8) {
            sum = sum.wrapping_add(line[0].0);
        }
        for line in self.first.chunks(16) {
            sum = sum.wrapping_add(line[0]);
        }
        std::hint::black_box(sum);
        let mut queue = Queue {
            heads: &mut self.heads,
            entries: &mut self.entries,
            used: 0,
            pending: 0,
            shift,
            mask: nb - 1,
        };
        let values = &mut self.values[..];
        let (first, edges) = (&self.first[..], &self.edges[..]);
        let offers = &self.offers[..];
        let mut k = v0 >> shift;
        let (mut next, mut settled) = (0, 0usize);
        loop {
            while let Some(&(v, n)) = offers.get(next) {
                if v >> shift > k {
                    break;
                }
                next += 1;
                let old = values[n as usize];
                if v < old {
                    values[n as usize] = v;
                    if (old ^ v) >> shift != 0 {
                        queue.push(n, v);
                    }
                }
            }
            let slot = k as usize & queue.mask;
            let mut e = std::mem::replace(&mut queue.heads[slot], NIL);
            if e == NIL {
                if queue.pending == 0 {
                    // Nothing queued: on to the next offer, or done.
                    match offers.get(next) {
                        None => return Ok(settled),
                        Some(&(v, _)) => k = v >> shift,
                    }
                } else {
                    k += 1;
                }
                continue;
            }
            // Expansions never queue into the bucket being drained (every edge costs at least
            // a bucket's width).
            while e != NIL {
                let (n, before) = queue.entries[e as usize];
                e = before;
                queue.pending -= 1;
                let n = n as usize;
                let d = values[n];
                if d >> shift != k {
                    // Moved to an earlier bucket after this entry was queued.
                    continue;
                }
                if d > limit {
                    return Err(n);
                }
                settled += 1;
                let (lo, hi) = (first[n] as usize, first[n + 1] as usize);
                for &(j, w) in &edges[lo..hi] {
                    let nd = d.saturating_add(w).min(UNREACHABLE - 1);
                    let old = values[j as usize];
                    if nd < old {
                        values[j as usize] = nd;
                        if (old ^ nd) >> shift != 0 {
                            queue.push(j, nd);
                        }
                    }
                }
            }
            k += 1;
        }
    }

    /// The padded cell of node `n`.
    pub(crate) fn cell(&self, n: usize) -> usize {
        self.cells[n] as usize
    }

    /// Write the nodes' values into the padded distances `dist` and mark their blocks in the
    /// footprint `touched`.
    pub(crate) fn write(&self, dist: &mut [u32], touched: &mut [u64]) {
        for (&c, &v) in self.cells.iter().zip(&self.values) {
            // Every node, reached or not: the distances may hold the last build's values.
            dist[c as usize] = v;
            if v != UNREACHABLE {
                let block = c as usize / TOUCHED_BLOCK;
                touched[block / 64] |= 1 << (block % 64);
            }
        }
    }
}

/// Dial's circular buckets as lists over a store sized before the wave (see `Graph::entries`).
struct Queue<'a> {
    heads: &'a mut [u32],
    entries: &'a mut [(u32, u32)],
    used: usize,
    /// Entries queued and not yet taken out.
    pending: usize,
    shift: u32,
    mask: usize,
}

impl Queue<'_> {
    /// Queue node `n` at value `v`.
    #[inline(always)]
    fn push(&mut self, n: u32, v: u32) {
        let b = (v >> self.shift) as usize & self.mask;
        self.entries[self.used] = (n, self.heads[b]);
        self.heads[b] = self.used as u32;
        self.used += 1;
        self.pending += 1;
    }
}
