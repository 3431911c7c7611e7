//! Built-in maps, generated deterministically from a seed, for demos, tests and benchmarks: no
//! file needed.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::cost::{CostField, PLAIN, WALL};
use crate::grid::{Grid, GridError};

/// Side of the default demo map.
pub const DEMO_SIDE: u32 = 128;
/// Seed of the default demo map.
pub const DEMO_SEED: u64 = 2026;

/// The default map: 128 × 128, about 81 % walkable, every walkable cell connected, with a few
/// patches of mud (cost 3) and swamp (cost 6). Same on every run and platform.
///
/// ```
/// let map = horde::maps::demo_map();
/// let walkable = map.walkable_count() as f64 / map.grid().len() as f64;
/// assert!((0.78..0.84).contains(&walkable), "{walkable}");
/// ```
pub fn demo_map() -> CostField {
    scattered_map(DEMO_SIDE, DEMO_SIDE, DEMO_SEED).expect("128 x 128 is a valid grid")
}

/// A map like [`demo_map`] of any size: random rectangular walls covering about 17 % of the
/// cells, then every pocket cut off from the largest open region walled up (so all walkable
/// cells are connected), then terrain patches. O(cells).
///
/// ```
/// let a = horde::maps::scattered_map(64, 32, 7).unwrap();
/// assert_eq!(a, horde::maps::scattered_map(64, 32, 7).unwrap());
/// assert_ne!(a, horde::maps::scattered_map(64, 32, 8).unwrap());
/// ```
pub fn scattered_map(width: u32, height: u32, seed: u64) -> Result<CostField, GridError> {
    let grid = Grid::new(width, height)?;
    let mut rng = Pcg64::seed_from_u64(seed);
    let (w, h) = (width as usize, height as usize);
    let n = grid.len();
    let mut costs = vec![PLAIN; n];
    let target = n * 19 / 100;
    let mut walls = 0;
    let mut guard = 0;
    while walls < target && guard < n * 4 {
        guard += 1;
        let rw = rng.random_range(1..=6usize).min(w);
        let rh = rng.random_range(1..=6usize).min(h);
        let x0 = rng.random_range(0..=w - rw);
        let y0 = rng.random_range(0..=h - rh);
        for y in y0..y0 + rh {
            for c in &mut costs[y * w + x0..y * w + x0 + rw] {
                if *c != WALL {
                    *c = WALL;
                    walls += 1;
                }
            }
        }
    }
    keep_largest_region(&mut costs, w, h);
    let patches = (n / 900).max(1);
    for p in 0..patches {
        let terrain = if p % 3 == 2 { 6 } else { 3 };
        let rw = rng.random_range(3..=10usize).min(w);
        let rh = rng.random_range(3..=10usize).min(h);
        let x0 = rng.random_range(0..=w - rw);
        let y0 = rng.random_range(0..=h - rh);
        for y in y0..y0 + rh {
            for c in &mut costs[y * w + x0..y * w + x0 + rw] {
                if *c != WALL {
                    *c = terrain;
                }
            }
        }
    }
    Ok(CostField::from_costs(grid, costs).expect("no zero costs"))
}

/// Wall up every walkable cell outside the largest 8-connected (corner rule) region.
fn keep_largest_region(costs: &mut [u8], w: usize, h: usize) {
    let n = costs.len();
    let mut label = vec![u32::MAX; n];
    let mut sizes = Vec::new();
    let mut queue = VecDeque::new();
    for start in 0..n {
        if costs[start] == WALL || label[start] != u32::MAX {
            continue;
        }
        let id = sizes.len() as u32;
        let mut size = 0usize;
        label[start] = id;
        queue.push_back(start);
        while let Some(c) = queue.pop_front() {
            size += 1;
            let (x, y) = ((c % w) as i64, (c / w) as i64);
            let open = |x: i64, y: i64| {
                x >= 0
                    && y >= 0
                    && x < w as i64
                    && y < h as i64
                    && costs[y as usize * w + x as usize] != WALL
            };
            for (dx, dy) in [
                (0, -1),
                (1, -1),
                (1, 0),
                (1, 1),
                (0, 1),
                (-1, 1),
                (-1, 0),
                (-1, -1),
            ] {
                let (nx, ny) = (x + dx, y + dy);
                if !open(nx, ny) || (dx != 0 && dy != 0 && !(open(x + dx, y) && open(x, y + dy))) {
                    continue;
                }
                let j = ny as usize * w + nx as usize;
                if label[j] == u32::MAX {
                    label[j] = id;
                    queue.push_back(j);
                }
            }
        }
        sizes.push(size);
    }
    let Some(best) = (0..sizes.len()).max_by_key(|&i| (sizes[i], usize::MAX - i)) else {
        return;
    };
    for (c, l) in costs.iter_mut().zip(&label) {
        if *c != WALL && *l != best as u32 {
            *c = WALL;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CostModel, IntegrationBuilder};

    #[test]
    fn demo_map_is_connected_and_like_the_seed() {
        let map = demo_map();
        assert_eq!((map.width(), map.height()), (128, 128));
        let walkable = map.walkable_count();
        let frac = walkable as f64 / (128.0 * 128.0);
        assert!((0.78..0.84).contains(&frac), "{frac}");
        let goal = (0..map.grid().len())
            .map(|i| map.grid().cell(i))
            .find(|&c| map.is_walkable(c))
            .unwrap();
        let mut b = IntegrationBuilder::new();
        let stats = b
            .build_into(
                &map,
                &[goal],
                CostModel::TenFourteen,
                &mut crate::IntegrationField::new(*map.grid(), CostModel::TenFourteen),
            )
            .unwrap();
        assert_eq!(
            stats.settled, walkable,
            "every walkable cell reaches the goal"
        );
        assert!(map.costs().contains(&3) && map.costs().contains(&6));
    }

    #[test]
    fn tiny_maps_are_whole_and_connected() {
        for (w, h) in [(1, 1), (1, 9), (6, 1), (2, 2)] {
            let map = scattered_map(w, h, 1).unwrap();
            assert_eq!((map.width(), map.height()), (w, h));
            let open: Vec<_> = (0..map.grid().len())
                .map(|i| map.grid().cell(i))
                .filter(|&c| map.is_walkable(c))
                .collect();
            assert!(!open.is_empty(), "{w}x{h} has no open cell");
            let field = IntegrationBuilder::new()
                .build(&map, &open[..1], CostModel::TenFourteen)
                .unwrap();
            assert!(open.iter().all(|&c| field.get(c).is_some()), "{w}x{h}");
        }
    }
}
