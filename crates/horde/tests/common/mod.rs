//! Test helpers: a deliberately plain reference Dijkstra (binary heap, no tricks) that the fast
//! code is checked against, the movement rules it uses written out on their own, and random-map
//! strategies.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use glam::UVec2;
use horde::{CostField, CostModel, Grid, WALL};
use proptest::prelude::*;

// The oracle's own statement of the movement rules. It reads the map's bytes and sizes only, and
// none of the library's helpers (`CostModel::step`, `CostField::can_step`, `Dir8`,
// `Grid::neighbour`), so a bug in those cannot pass on both sides.

/// The eight steps as (dx, dy), numbered as flow bytes are: 0 = north (y − 1), then clockwise.
pub const STEPS: [(i64, i64); 8] = [
    (0, -1),
    (1, -1),
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
];

/// The raw price of step `d` out of a cell of terrain `terrain`: 10 / 14 per unit of terrain, or
/// in the octile model 1 = 13860 and √2 = 19601 raw units (the documented fixed point).
pub fn oracle_price(model: CostModel, d: usize, terrain: u8) -> u64 {
    let (straight, diagonal) = match model {
        CostModel::TenFourteen => (10, 14),
        CostModel::Octile => (13_860, 19_601),
    };
    let (dx, dy) = STEPS[d];
    (if dx != 0 && dy != 0 {
        diagonal
    } else {
        straight
    }) * terrain as u64
}

/// The index of the cell that step `d` from (x, y) reaches, if the step is legal: both cells on
/// the map and not walls, and for a diagonal both cells it passes between not walls either.
pub fn oracle_step(cost: &CostField, x: i64, y: i64, d: usize) -> Option<usize> {
    let (w, h) = (cost.width() as i64, cost.height() as i64);
    let open = |x: i64, y: i64| {
        (0..w).contains(&x) && (0..h).contains(&y) && cost.costs()[(y * w + x) as usize] != WALL
    };
    let (dx, dy) = STEPS[d];
    let (nx, ny) = (x + dx, y + dy);
    let legal = open(x, y) && open(nx, ny) && (dx == 0 || dy == 0 || open(nx, y) && open(x, ny));
    legal.then_some((ny * w + nx) as usize)
}

/// Cost-to-nearest-goal of every cell (u64, `None` = unreachable or wall), by plain Dijkstra over
/// the reversed step graph: a unit steps from `j` into `i` at the price of `j`'s terrain.
pub fn reference_dijkstra(cost: &CostField, goals: &[UVec2], model: CostModel) -> Vec<Option<u64>> {
    let seeds: Vec<(UVec2, u32)> = goals.iter().map(|&g| (g, 0)).collect();
    reference_seeded(cost, &seeds, model)
}

/// The same from seeds that start at their own values.
pub fn reference_seeded(
    cost: &CostField,
    seeds: &[(UVec2, u32)],
    model: CostModel,
) -> Vec<Option<u64>> {
    let w = cost.width() as i64;
    let mut dist: Vec<Option<u64>> = vec![None; cost.costs().len()];
    let mut heap = BinaryHeap::new();
    for &(seed, value) in seeds {
        let i = seed.y as usize * w as usize + seed.x as usize;
        let v = value as u64;
        if dist[i].is_none_or(|old| v < old) {
            dist[i] = Some(v);
            heap.push(Reverse((v, i)));
        }
    }
    while let Some(Reverse((d, i))) = heap.pop() {
        if dist[i] != Some(d) {
            continue;
        }
        let (x, y) = (i as i64 % w, i as i64 / w);
        for (step, &(dx, dy)) in STEPS.iter().enumerate() {
            // j is the cell one step back; a unit there takes `step` into i.
            let (jx, jy) = (x - dx, y - dy);
            if oracle_step(cost, jx, jy, step) != Some(i) {
                continue;
            }
            let j = (jy * w + jx) as usize;
            let nd = d + oracle_price(model, step, cost.costs()[j]);
            if dist[j].is_none_or(|old| nd < old) {
                dist[j] = Some(nd);
                heap.push(Reverse((nd, j)));
            }
        }
    }
    dist
}

/// A random map with walls, plain ground and (sometimes very costly) terrain.
pub fn arb_map(max_side: u32) -> impl Strategy<Value = CostField> {
    (
        1..=max_side,
        1..=max_side,
        0u8..60,
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(w, h, wall_pct, heavy, seed)| {
            let mut s = seed | 1;
            let mut next = move || {
                // xorshift: the map only needs to vary, not to be statistically good.
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            };
            let costs = (0..w * h)
                .map(|_| {
                    let r = next();
                    if (r % 100) < wall_pct as u64 {
                        WALL
                    } else if (r >> 8) % 4 == 0 {
                        if heavy {
                            1 + ((r >> 16) % 254) as u8
                        } else {
                            1 + ((r >> 16) % 5) as u8
                        }
                    } else {
                        1
                    }
                })
                .collect();
            CostField::from_costs(Grid::new(w, h).unwrap(), costs).unwrap()
        })
}

/// Walkable cells picked by the given random numbers (at least one, if any cell is walkable).
pub fn pick_walkable(cost: &CostField, picks: &[u64]) -> Vec<UVec2> {
    let open: Vec<UVec2> = (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|&c| cost.is_walkable(c))
        .collect();
    if open.is_empty() {
        return Vec::new();
    }
    picks
        .iter()
        .map(|&p| open[(p % open.len() as u64) as usize])
        .collect()
}

/// The Moving AI benchmark folder: `data/movingai/` at the top of the repository, or the folder
/// `HORDE_MOVINGAI_DIR` names.
pub fn movingai_dir() -> std::path::PathBuf {
    let dir = match std::env::var_os("HORDE_MOVINGAI_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/movingai"),
    };
    assert!(
        dir.join("arena.map").exists(),
        "Moving AI maps not found at {} (the repository keeps them in data/movingai/; \
         HORDE_MOVINGAI_DIR may name another folder)",
        dir.display()
    );
    dir
}

/// The benchmark maps with scenario files.
pub const MOVINGAI_MAPS: [&str; 11] = [
    "arena",
    "brc202d",
    "den520d",
    "lak303d",
    "orz100d",
    "AcrosstheCape",
    "Berlin_0_256",
    "Boston_0_256",
    "maze512-1-0",
    "random512-10-0",
    "8room_000",
];
