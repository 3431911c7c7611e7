//! Searches confined to one sector's rectangle: connected components and exact costs between a
//! cell and the sector's portal cells, under the project's step rule (terrain cost of the cell
//! stepped from, no squeezing past wall corners).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use glam::UVec2;

use crate::cost::{CostModel, WALL};
use crate::flow::FlowField;
use crate::grid::{Dir8, Grid};
use crate::integration::{BuildMemory, IntegrationBuilder, IntegrationField, UNREACHABLE};

/// A sector's rectangle on the map: `x0..x0 + w`, `y0..y0 + h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub x0: u32,
    pub y0: u32,
    pub w: u32,
    pub h: u32,
}

impl Rect {
    /// The map index of local index `i`.
    #[inline]
    pub fn map_index(&self, map_width: u32, i: u32) -> usize {
        let (lx, ly) = (i % self.w, i / self.w);
        ((self.y0 + ly) as usize) * map_width as usize + (self.x0 + lx) as usize
    }

    /// The local index of map cell `(x, y)`, which must lie inside.
    #[inline]
    pub fn local(&self, x: u32, y: u32) -> u32 {
        (y - self.y0) * self.w + (x - self.x0)
    }
}

/// Label the 4-connected walkable cells of `rect`: `labels[i]` is 0 for a wall and the
/// component's number from 1 otherwise. With the corner rule, 8-connectivity is the same as
/// 4-connectivity (a legal diagonal step has both side cells walkable). Returns the number of
/// components. O(cells of the rectangle).
pub(crate) fn label_components(
    costs: &[u8],
    map_width: u32,
    rect: Rect,
    labels: &mut [u16],
    stack: &mut Vec<u32>,
) -> u16 {
    let n = (rect.w * rect.h) as usize;
    labels[..n].fill(0);
    let mut count = 0u16;
    for start in 0..n as u32 {
        if labels[start as usize] != 0 || costs[rect.map_index(map_width, start)] == WALL {
            continue;
        }
        count += 1;
        labels[start as usize] = count;
        stack.clear();
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (lx, ly) = (i % rect.w, i / rect.w);
            let mut visit = |j: u32| {
                if labels[j as usize] == 0 && costs[rect.map_index(map_width, j)] != WALL {
                    labels[j as usize] = count;
                    stack.push(j);
                }
            };
            if lx > 0 {
                visit(i - 1);
            }
            if lx + 1 < rect.w {
                visit(i + 1);
            }
            if ly > 0 {
                visit(i - rect.w);
            }
            if ly + 1 < rect.h {
                visit(i + rect.w);
            }
        }
    }
    count
}

/// Which way a [`LocalSearch`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Costs from the source to every cell.
    From,
    /// Costs from every cell to the source.
    To,
}

/// Dijkstra inside one rectangle, reused between searches (nothing allocates once it has grown
/// to the largest sector). Memory: 8 bytes per cell of the largest sector searched, plus the
/// heap (12 bytes per entry, at most a few per cell).
#[derive(Debug, Default, Clone)]
pub(crate) struct LocalSearch {
    dist: Vec<u64>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    pending: Vec<bool>,
    left: usize,
}

impl LocalSearch {
    /// Exact costs between `source` (a local index) and the cells of `rect`, stopping once every
    /// local index in `targets` is settled. Afterwards [`LocalSearch::dist`] gives the cost of
    /// each target (`u64::MAX` if it cannot be reached inside the rectangle).
    /// O(c log c) for the c cells settled.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        source: u32,
        direction: Direction,
        targets: &[u32],
    ) {
        self.start(rect, targets);
        self.seed(source, 0);
        self.settle_all(
            costs,
            map_width,
            model,
            rect,
            direction,
            !targets.is_empty(),
        );
    }

    /// Costs from every cell of `rect` to the nearest of `seeds` (local index, starting cost),
    /// for every cell: a Dijkstra from several sources. O(c log c) for the c cells of `rect`.
    pub fn run_seeded(
        &mut self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        seeds: &[(u32, u64)],
    ) {
        self.start(rect, &[]);
        for &(i, d) in seeds {
            self.seed(i, d);
        }
        self.settle_all(costs, map_width, model, rect, Direction::To, false);
    }

    fn start(&mut self, rect: Rect, targets: &[u32]) {
        let n = (rect.w * rect.h) as usize;
        self.dist.clear();
        self.dist.resize(n, u64::MAX);
        self.pending.clear();
        self.pending.resize(n, false);
        self.left = 0;
        for &t in targets {
            if !self.pending[t as usize] {
                self.pending[t as usize] = true;
                self.left += 1;
            }
        }
        self.heap.clear();
    }

    fn seed(&mut self, i: u32, d: u64) {
        if d < self.dist[i as usize] {
            self.dist[i as usize] = d;
            self.heap.push(Reverse((d, i)));
        }
    }

    fn settle_all(
        &mut self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        direction: Direction,
        stop_at_targets: bool,
    ) {
        let base = model.base_costs();
        let walkable = |x: u32, y: u32| {
            costs[(rect.y0 + y) as usize * map_width as usize + (rect.x0 + x) as usize] != WALL
        };
        while let Some(Reverse((d, i))) = self.heap.pop() {
            if d > self.dist[i as usize] {
                continue;
            }
            if self.pending[i as usize] {
                self.pending[i as usize] = false;
                self.left -= 1;
                if stop_at_targets && self.left == 0 {
                    break;
                }
            }
            let (lx, ly) = (i % rect.w, i / rect.w);
            let here = costs[rect.map_index(map_width, i)] as u64;
            for dir in Dir8::ALL {
                let (dx, dy) = dir.offset();
                let (nx, ny) = (lx as i64 + dx as i64, ly as i64 + dy as i64);
                if nx < 0 || ny < 0 || nx >= rect.w as i64 || ny >= rect.h as i64 {
                    continue;
                }
                let (nx, ny) = (nx as u32, ny as u32);
                if !walkable(nx, ny) {
                    continue;
                }
                if dir.is_diagonal() && !(walkable(nx, ly) && walkable(lx, ny)) {
                    continue;
                }
                let j = ny * rect.w + nx;
                // Forward, the step leaves `i`; backward, it leaves the neighbour `j` towards `i`.
                let from = match direction {
                    Direction::From => here,
                    Direction::To => costs[rect.map_index(map_width, j)] as u64,
                };
                let nd = d + base[dir.index()] as u64 * from;
                if nd < self.dist[j as usize] {
                    self.dist[j as usize] = nd;
                    self.heap.push(Reverse((nd, j)));
                }
            }
        }
    }

    /// Every cell's cost from the last search, by local index.
    pub fn dists(&self) -> &[u64] {
        &self.dist
    }
}

/// Costs to the nearest of several seeds over a sector, through the library's
/// [`IntegrationBuilder`] (row sweeps and a bucket queue over a copy of the sector), falling back
/// to a [`LocalSearch`] when the values would not fit its 32 bits. Reused between sectors.
///
/// Memory: about 15 bytes per cell of the largest sector: the builder's padded copy (6), the
/// field (4), the costs (1) and the 64-bit result (8) share the same few kilobytes per sector;
/// and about 40 bytes per sector built (what the builder learned there, in a map).
#[derive(Debug, Default, Clone)]
pub(crate) struct SectorFields {
    builder: IntegrationBuilder,
    field: Option<IntegrationField>,
    fallback: LocalSearch,
    seeds: Vec<(UVec2, u32)>,
    dist: Vec<u64>,
    /// Whether the last values came from the builder (not the 64-bit fallback).
    from_builder: bool,
    /// With [`SectorFields::remembering`]: what the last [`SectorFields::costs_to`] was asked
    /// (rectangle, model, seeds, the rectangle's costs), so another user of the same values
    /// can tell they are still right for it.
    remember: bool,
    asked: Option<Asked>,
    /// Per sector (by its rectangle's corner): what the builder learned from building it, so
    /// each sector's builds go the way that suited it (sweeps or wave) whatever its neighbours
    /// are like. 12 bytes and a map entry per sector built.
    memory: HashMap<(u32, u32), BuildMemory>,
}

/// [`SectorFields::remembering`], as a default.
#[derive(Debug, Clone)]
pub(crate) struct RememberingFields(pub SectorFields);

impl Default for RememberingFields {
    fn default() -> RememberingFields {
        RememberingFields(SectorFields::remembering())
    }
}

/// One request to [`SectorFields::costs_to`], kept to recognise it again.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Asked {
    rect: Rect,
    model: CostModel,
    seeds: Vec<(u32, u64)>,
    costs: Vec<u8>,
}

/// The rows of `rect` in a map `map_width` wide, top to bottom.
fn rect_rows(costs: &[u8], map_width: u32, rect: Rect) -> impl Iterator<Item = &[u8]> {
    (rect.y0..rect.y0 + rect.h).map(move |y| {
        let start = y as usize * map_width as usize + rect.x0 as usize;
        &costs[start..start + rect.w as usize]
    })
}

/// Seeds further apart than this from the cheapest go to the 64-bit fallback.
const SEED_SPREAD_LIMIT: u64 = 1 << 30;

impl SectorFields {
    /// Scratch that keeps what [`SectorFields::costs_to`] was last asked (a copy of the
    /// rectangle's costs too, 1 byte per cell), so [`SectorFields::answers`] can recognise it.
    pub fn remembering() -> SectorFields {
        SectorFields {
            remember: true,
            ..SectorFields::default()
        }
    }

    /// Whether the last [`SectorFields::costs_to`] of a [`SectorFields::remembering`] scratch
    /// was this very request on these costs: then its values ([`SectorFields::last`]) and
    /// arrows ([`SectorFields::flow_into`]) answer it. O(cells of the rectangle).
    pub fn answers(
        &self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        seeds: &[(u32, u64)],
    ) -> bool {
        self.asked.as_ref().is_some_and(|a| {
            a.rect == rect
                && a.model == model
                && a.seeds == seeds
                && rect_rows(costs, map_width, rect).eq(a.costs.chunks_exact(rect.w as usize))
        })
    }

    /// The values of the last [`SectorFields::costs_to`].
    pub fn last(&self) -> &[u64] {
        &self.dist
    }

    /// The cost from every cell of `rect` to the nearest seed (local index, starting value),
    /// `u64::MAX` where none can be reached inside the rectangle. O(cells of the rectangle).
    pub fn costs_to(
        &mut self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        seeds: &[(u32, u64)],
    ) -> &[u64] {
        let mut dist = std::mem::take(&mut self.dist);
        self.costs_into(costs, map_width, model, rect, seeds, &mut dist);
        self.dist = dist;
        if self.remember {
            let mut asked = self.asked.take().unwrap_or(Asked {
                rect,
                model,
                seeds: Vec::new(),
                costs: Vec::new(),
            });
            asked.rect = rect;
            asked.model = model;
            asked.seeds.clear();
            asked.seeds.extend_from_slice(seeds);
            asked.costs.clear();
            for row in rect_rows(costs, map_width, rect) {
                asked.costs.extend_from_slice(row);
            }
            self.asked = Some(asked);
        }
        &self.dist
    }

    /// [`SectorFields::costs_to`] written into `out` (cleared first), so a tile can keep the
    /// values without a copy.
    pub fn costs_into(
        &mut self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        seeds: &[(u32, u64)],
        out: &mut Vec<u64>,
    ) {
        out.clear();
        self.from_builder = false;
        let Some(base) = seeds.iter().map(|s| s.1).min() else {
            out.resize((rect.w * rect.h) as usize, u64::MAX);
            return;
        };
        self.from_builder = seeds.iter().all(|s| s.1 - base <= SEED_SPREAD_LIMIT)
            && self.build(costs, map_width, model, rect, seeds, base, out);
        if !self.from_builder {
            self.fallback
                .run_seeded(costs, map_width, model, rect, seeds);
            out.clear();
            out.extend_from_slice(self.fallback.dists());
        }
    }

    /// The arrows of the last [`SectorFields::costs_to`]'s values over its rectangle (walls and
    /// everything outside the rectangle as walls; ties to the lowest direction), through the
    /// library's flow kernel; `false` when those values came from the 64-bit fallback.
    pub fn flow_into(&self, out: &mut FlowField) -> bool {
        self.from_builder && self.builder.flow_into(out).is_ok()
    }

    /// Try the builder over the rectangle, read in place in the map: false if the values
    /// overflow its 32 bits. On success `out` holds the values.
    #[allow(clippy::too_many_arguments)]
    fn build(
        &mut self,
        costs: &[u8],
        map_width: u32,
        model: CostModel,
        rect: Rect,
        seeds: &[(u32, u64)],
        base: u64,
        out: &mut Vec<u64>,
    ) -> bool {
        let grid = Grid::new(rect.w, rect.h).expect("a sector is a valid grid");
        let origin = rect.y0 as usize * map_width as usize + rect.x0 as usize;
        self.seeds.clear();
        self.seeds.extend(
            seeds
                .iter()
                .map(|&(i, v)| (UVec2::new(i % rect.w, i / rect.w), (v - base) as u32)),
        );
        let field = match &mut self.field {
            Some(f) if *f.grid() == grid && f.model() == model => f,
            slot => slot.insert(IntegrationField::new(grid, model)),
        };
        let learned = self.memory.entry((rect.x0, rect.y0)).or_default();
        self.builder.set_memory(grid, *learned);
        let built = self
            .builder
            .start_seeded_window(
                grid,
                &costs[origin..],
                map_width as usize,
                0,
                &self.seeds,
                model,
            )
            .and_then(|()| self.builder.advance(usize::MAX))
            .and_then(|_| self.builder.finish_into(field));
        *learned = self.builder.memory(grid);
        if built.is_err() {
            return false;
        }
        out.extend(field.values().iter().map(|&v| {
            if v == UNREACHABLE {
                u64::MAX
            } else {
                base + v as u64
            }
        }));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(rows: &[&str]) -> (Vec<u8>, u32, u32) {
        let w = rows[0].len() as u32;
        let costs = rows
            .iter()
            .flat_map(|r| r.bytes())
            .map(|b| match b {
                b'#' => WALL,
                b'.' => 1,
                d => d - b'0',
            })
            .collect();
        (costs, w, rows.len() as u32)
    }

    #[test]
    fn each_sector_keeps_its_own_choice_of_sweeps_or_wave() {
        // Two 32 x 32 sectors side by side: a serpentine of one-cell corridors (the sweeps
        // need a round per bend and hand it to the wave) and open ground (swept at once).
        let (w, h, side) = (64u32, 32u32, 32u32);
        let mut costs = vec![1u8; (w * h) as usize];
        for x in (1..side).step_by(2) {
            let gap = if x % 4 == 1 { h - 1 } else { 0 };
            for y in (0..h).filter(|&y| y != gap) {
                costs[(y * w + x) as usize] = WALL;
            }
        }
        let maze = Rect {
            x0: 0,
            y0: 0,
            w: side,
            h,
        };
        let open = Rect {
            x0: side,
            y0: 0,
            w: side,
            h,
        };
        let mut fields = SectorFields::default();
        let mut reference = LocalSearch::default();
        for round in 0..3 {
            for (rect, seed) in [(maze, 0), (open, 5 * side + 7)] {
                for model in [CostModel::TenFourteen, CostModel::Octile] {
                    let got = fields
                        .costs_to(&costs, w, model, rect, &[(seed, 0)])
                        .to_vec();
                    reference.run_seeded(&costs, w, model, rect, &[(seed, 0)]);
                    assert_eq!(got, reference.dists(), "round {round}");
                }
            }
            let grid = Grid::new(side, h).unwrap();
            let learned = |r: Rect| fields.memory[&(r.x0, r.y0)];
            // The maze was handed to the wave and waits before the sweeps are tried again;
            // the open sector, built right after it, still goes to the sweeps.
            assert!(learned(maze).skip > 0, "round {round}");
            assert_eq!(learned(open).skip, 0, "round {round}");
            assert_eq!(fields.builder.memory(grid), learned(open));
        }
    }

    #[test]
    fn components_are_split_by_walls_and_ignore_corner_touches() {
        let (costs, w, h) = map(&["..#..", "..#..", "##.##", "..#.."]);
        let rect = Rect { x0: 0, y0: 0, w, h };
        let mut labels = vec![0; (w * h) as usize];
        let n = label_components(&costs, w, rect, &mut labels, &mut Vec::new());
        // Four corner rooms and the centre cell, touching only at corners: five components.
        assert_eq!(n, 5);
        assert_eq!(labels[0], labels[6]);
        assert_ne!(labels[0], labels[12]);
        assert_eq!(labels[2], 0);
        // A rectangle inside the map sees only its own cells.
        let right = Rect {
            x0: 3,
            y0: 0,
            w: 2,
            h: 4,
        };
        let n = label_components(&costs, w, right, &mut labels, &mut Vec::new());
        assert_eq!(n, 2);
    }

    #[test]
    fn costs_follow_the_cell_stepped_from_both_ways() {
        // A corridor: plain, swamp 5, plain. Forward from the left end, the swamp cell's step
        // costs 5 × 10; backward to the left end, the plain cells' steps are paid.
        let (costs, w, h) = map(&["151"]);
        let rect = Rect { x0: 0, y0: 0, w, h };
        let mut s = LocalSearch::default();
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            rect,
            0,
            Direction::From,
            &[2],
        );
        assert_eq!((s.dists()[1], s.dists()[2]), (10, 60));
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            rect,
            0,
            Direction::To,
            &[2],
        );
        assert_eq!((s.dists()[1], s.dists()[2]), (50, 60));
    }

    #[test]
    fn no_squeezing_past_a_wall_corner_and_no_leaving_the_rectangle() {
        let (costs, w, h) = map(&[".#", "..", "#."]);
        let rect = Rect { x0: 0, y0: 0, w, h };
        let mut s = LocalSearch::default();
        // (0,1) to (1,2) diagonally would squeeze past the wall at (0,2): two straight steps.
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            rect,
            2,
            Direction::From,
            &[5],
        );
        assert_eq!(s.dists()[5], 20);
        // Confined to the top row, (1,1) cannot be reached from (0,0).
        let top = Rect {
            x0: 0,
            y0: 0,
            w: 2,
            h: 1,
        };
        let (costs, w, _) = map(&["..", ".."]);
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            top,
            0,
            Direction::From,
            &[1],
        );
        assert_eq!(s.dists()[1], 10);
        let one = Rect {
            x0: 1,
            y0: 1,
            w: 1,
            h: 1,
        };
        s.run(
            &costs,
            w,
            CostModel::TenFourteen,
            one,
            0,
            Direction::From,
            &[0],
        );
        assert_eq!(s.dists()[0], 0);
    }
}
