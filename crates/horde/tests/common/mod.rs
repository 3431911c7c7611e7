//! Test helpers: a deliberately plain reference Dijkstra (binary heap, no tricks, the canonical
//! `CostField::can_step` rule) that the fast code is checked against, and random-map strategies.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use glam::UVec2;
use horde::{CostField, CostModel, Dir8, Grid, WALL};
use proptest::prelude::*;

/// Cost-to-nearest-goal of every cell (u64, `None` = unreachable or wall), by plain Dijkstra over
/// the reversed step graph: a unit steps from `j` into `i` at `model.step(dir, cost[j])`.
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
    let g = cost.grid();
    let mut dist: Vec<Option<u64>> = vec![None; g.len()];
    let mut heap = BinaryHeap::new();
    for &(seed, value) in seeds {
        let i = g.index(seed).unwrap();
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
        let cell = g.cell(i);
        for dir in Dir8::ALL {
            // j is the neighbour in `dir`; the unit at j steps back towards i.
            let Some(j_cell) = g.neighbour(cell, dir) else {
                continue;
            };
            let back = dir.opposite();
            if !cost.can_step(j_cell, back) {
                continue;
            }
            let j = g.index(j_cell).unwrap();
            let nd = d + model.step(back, cost.costs()[j]) as u64;
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
