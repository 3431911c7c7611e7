//! What the field targets share: maps painted from strokes, and a plain Dijkstra to check the
//! fields against.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use arbitrary::Arbitrary;
use horde::glam::UVec2;
use horde::{CostEdit, CostField, CostModel, Grid, UNREACHABLE, WALL};

/// A stroke of one cost: a rectangle, or a line one cell wide (a corridor, or a wall).
#[derive(Debug, Arbitrary)]
pub enum Paint {
    Rect {
        x: u8,
        y: u8,
        w: u8,
        h: u8,
        cost: u8,
    },
    Row {
        x: u8,
        y: u8,
        len: u8,
        cost: u8,
    },
    Column {
        x: u8,
        y: u8,
        len: u8,
        cost: u8,
    },
}

/// The cells of a stroke, clipped to a `w` × `h` map, as a rectangle edit.
pub fn edit(p: &Paint, w: u32, h: u32) -> CostEdit {
    let (x, y, dx, dy, cost) = match *p {
        Paint::Rect { x, y, w, h, cost } => (x, y, w % 32, h % 32, cost),
        Paint::Row { x, y, len, cost } => (x, y, len, 0, cost),
        Paint::Column { x, y, len, cost } => (x, y, 0, len, cost),
    };
    let (x0, y0) = (x as u32 % w, y as u32 % h);
    let (x1, y1) = ((x0 + dx as u32).min(w - 1), (y0 + dy as u32).min(h - 1));
    // Mostly plain ground or walls, which rooms and chains need; sometimes rough terrain.
    let cost = match cost % 8 {
        0..=3 => 1,
        4 | 5 => WALL,
        _ => cost.max(1),
    };
    CostEdit::Rect {
        min: UVec2::new(x0, y0),
        max: UVec2::new(x1, y1),
        cost,
    }
}

/// Cost to the nearest goal by plain Dijkstra over the reversed steps: a unit steps from `j` into
/// `i` at `j`'s terrain times 10 or 14 (13,860 or 19,601 raw units in the octile model), never
/// between two wall corners. `UNREACHABLE` for walls and cells that cannot reach a goal.
pub fn reference(cost: &CostField, goals: &[UVec2], model: CostModel) -> Vec<u32> {
    let (w, h) = (cost.width() as i64, cost.height() as i64);
    let costs = cost.costs();
    let open = |x: i64, y: i64| {
        (0..w).contains(&x) && (0..h).contains(&y) && costs[(y * w + x) as usize] != WALL
    };
    let (straight, diagonal) = match model {
        CostModel::TenFourteen => (10u64, 14u64),
        CostModel::Octile => (13_860, 19_601),
    };
    let mut dist = vec![u64::MAX; costs.len()];
    let mut heap = BinaryHeap::new();
    for g in goals {
        let i = (g.y as i64 * w + g.x as i64) as usize;
        dist[i] = 0;
        heap.push(Reverse((0u64, i)));
    }
    while let Some(Reverse((d, i))) = heap.pop() {
        if d > dist[i] {
            continue;
        }
        let (x, y) = (i as i64 % w, i as i64 / w);
        for dy in -1..=1i64 {
            for dx in -1..=1i64 {
                let (nx, ny) = (x + dx, y + dy);
                if (dx, dy) == (0, 0)
                    || !open(nx, ny)
                    || (dx != 0 && dy != 0 && !(open(nx, y) && open(x, ny)))
                {
                    continue;
                }
                let j = (ny * w + nx) as usize;
                let base = if dx != 0 && dy != 0 {
                    diagonal
                } else {
                    straight
                };
                let nd = d + base * costs[j] as u64;
                if nd < dist[j] {
                    dist[j] = nd;
                    heap.push(Reverse((nd, j)));
                }
            }
        }
    }
    dist.iter()
        .map(|&d| if d == u64::MAX { UNREACHABLE } else { d as u32 })
        .collect()
}

/// A map as the fuzzer's bytes give it: `width` × `height` cells (each 1 to 96 from the byte),
/// of rock (strokes carve rooms and corridors) or of open ground, with up to 64 strokes painted
/// on it.
#[derive(Debug, Arbitrary)]
pub struct PaintedMap {
    pub width: u8,
    pub height: u8,
    pub rock: bool,
    pub paint: Vec<Paint>,
}

impl PaintedMap {
    /// The map's costs.
    pub fn cost(&self) -> CostField {
        let (w, h) = (self.width as u32 % 96 + 1, self.height as u32 % 96 + 1);
        let mut cost = CostField::new(Grid::new(w, h).expect("a small grid"));
        if self.rock {
            cost.apply_edits(&[CostEdit::Rect {
                min: UVec2::ZERO,
                max: UVec2::new(w - 1, h - 1),
                cost: WALL,
            }])
            .expect("the whole map");
        }
        let strokes: Vec<CostEdit> = self.paint.iter().take(64).map(|p| edit(p, w, h)).collect();
        cost.apply_edits(&strokes).expect("strokes inside the map");
        cost
    }
}

/// Up to four of `cells` (taken modulo the map's size) that are not walls, once each, in the
/// order of their cells.
pub fn walkable_goals(cost: &CostField, cells: &[(u8, u8)]) -> Vec<UVec2> {
    let (w, h) = (cost.width(), cost.height());
    let mut goals: Vec<UVec2> = cells
        .iter()
        .take(4)
        .map(|&(x, y)| UVec2::new(x as u32 % w, y as u32 % h))
        .filter(|g| cost.costs()[(g.y * w + g.x) as usize] != WALL)
        .collect();
    goals.sort_by_key(|g| (g.y, g.x));
    goals.dedup();
    goals
}
