//! Sector graphs and routes against the reference Dijkstra and a plain component labelling:
//! a route exists exactly when the goal is reachable, its cost is that of a real path (each leg
//! re-priced by the oracle), never below the optimum, and exact when one sector covers the map.

mod common;

use common::{STEPS, arb_map, oracle_price, oracle_step, pick_walkable, reference_dijkstra};
use glam::UVec2;
use horde::sectors::{FlowTiles, RouteSearch, SectorGraph};
use horde::{CostField, CostModel, Grid};
use proptest::prelude::*;

fn models() -> impl Strategy<Value = CostModel> {
    prop_oneof![Just(CostModel::TenFourteen), Just(CostModel::Octile)]
}

/// The cost field of the rectangle `x0..x0 + w`, `y0..y0 + h` of `cost`, on its own.
fn crop(cost: &CostField, x0: u32, y0: u32, w: u32, h: u32) -> CostField {
    let costs = (y0..y0 + h)
        .flat_map(|y| (x0..x0 + w).map(move |x| (x, y)))
        .map(|(x, y)| cost.costs()[(y * cost.width() + x) as usize])
        .collect();
    CostField::from_costs(Grid::new(w, h).unwrap(), costs).unwrap()
}

/// The oracle's price of a route: each leg inside one sector is the reference Dijkstra's cost
/// confined to that sector; each leg between two sectors must be one legal step.
fn oracle_route_cost(
    cost: &CostField,
    graph: &SectorGraph,
    waypoints: &[UVec2],
    model: CostModel,
) -> u64 {
    let side = graph.side();
    let mut total = 0;
    for leg in waypoints.windows(2) {
        let (a, b) = (leg[0], leg[1]);
        if graph.sector_of(a) == graph.sector_of(b) {
            let (x0, y0) = (a.x / side * side, a.y / side * side);
            let (w, h) = (side.min(cost.width() - x0), side.min(cost.height() - y0));
            let sector = crop(cost, x0, y0, w, h);
            let dist = reference_dijkstra(&sector, &[UVec2::new(b.x - x0, b.y - y0)], model);
            let d = dist[((a.y - y0) * w + (a.x - x0)) as usize];
            total += d.expect("a leg inside a sector is walkable inside it");
        } else {
            let step = STEPS
                .iter()
                .position(|&(dx, dy)| {
                    a.x as i64 + dx == b.x as i64 && a.y as i64 + dy == b.y as i64
                })
                .expect("a leg between sectors is one step");
            assert!(
                oracle_step(cost, a.x as i64, a.y as i64, step).is_some(),
                "illegal step {a} -> {b}"
            );
            total += oracle_price(
                model,
                step,
                cost.costs()[(a.y * cost.width() + a.x) as usize],
            );
        }
    }
    total
}

/// The cost of a sector's cells to `to` inside that sector (the oracle over a crop of it), by
/// cell of the map; `None` for cells of other sectors or not reached.
fn inside_sector(
    cost: &CostField,
    graph: &SectorGraph,
    to: UVec2,
    model: CostModel,
) -> impl Fn(UVec2) -> Option<u64> {
    let side = graph.side();
    let (x0, y0) = (to.x / side * side, to.y / side * side);
    let (w, h) = (side.min(cost.width() - x0), side.min(cost.height() - y0));
    let dist = reference_dijkstra(
        &crop(cost, x0, y0, w, h),
        &[UVec2::new(to.x - x0, to.y - y0)],
        model,
    );
    move |c: UVec2| {
        let inside = c.x >= x0 && c.y >= y0 && c.x < x0 + w && c.y < y0 + h;
        inside
            .then(|| dist[((c.y - y0) * w + c.x - x0) as usize])
            .flatten()
    }
}

/// The cheapest route from `start` to `goal` through the portal graph, by a plain Dijkstra
/// written here: from the start to its sector's portals and from the goal's sector's portals
/// to the goal by the oracle inside the sector, between portals along the graph's edges.
fn cheapest_through_portals(
    cost: &CostField,
    graph: &SectorGraph,
    start: UVec2,
    goal: UVec2,
    model: CostModel,
) -> u64 {
    use std::cmp::Reverse;
    let n = graph.node_count();
    let (start_v, goal_v) = (n, n + 1);
    let to_goal = inside_sector(cost, graph, goal, model);
    let mut edges: Vec<Vec<(usize, u64)>> = (0..n).map(|v| graph.edges(v).collect()).collect();
    edges.push(Vec::new());
    for v in 0..n {
        let cell = graph.node_cell(v);
        if graph.sector_of(cell) == graph.sector_of(start)
            && let Some(d) = inside_sector(cost, graph, cell, model)(start)
        {
            edges[start_v].push((v, d));
        }
        if let Some(d) = to_goal(cell) {
            edges[v].push((goal_v, d));
        }
    }
    if let Some(d) = to_goal(start) {
        edges[start_v].push((goal_v, d));
    }
    let mut dist = vec![u64::MAX; n + 2];
    let mut heap = std::collections::BinaryHeap::from([Reverse((0u64, start_v))]);
    dist[start_v] = 0;
    while let Some(Reverse((d, v))) = heap.pop() {
        if d > dist[v] || v == goal_v {
            continue;
        }
        for &(to, c) in &edges[v] {
            if d + c < dist[to] {
                dist[to] = d + c;
                heap.push(Reverse((d + c, to)));
            }
        }
    }
    dist[goal_v]
}

/// Check every arrow of every built tile against the rule, with the oracle's steps and prices:
/// inside a tile's rim, the legal step whose price plus the cost to the goal beyond is least,
/// the lowest direction on a tie; on the rim (whose steps may lead into tiles built later,
/// which it did not see) a legal step that costs no more than the cell's cost to the goal.
/// Walls, the goal and cells with no value have no arrow.
fn check_arrows(cost: &CostField, graph: &SectorGraph, tiles: &FlowTiles, model: CostModel) {
    let w = cost.width();
    for i in 0..cost.grid().len() {
        let cell = cost.grid().cell(i);
        if !tiles.has_tile(graph.sector_of(cell).unwrap()) {
            continue;
        }
        let byte = tiles.flow_byte(cell).unwrap();
        let Some(here) = tiles.cost_to_goal(cell) else {
            assert!(byte >= 8, "an arrow at {cell} without a cost");
            continue;
        };
        if cell == tiles.goal() {
            assert_eq!(byte, horde::FLOW_GOAL);
            continue;
        }
        let side = graph.side();
        let rim = [cell.x, cell.y]
            .iter()
            .any(|&c| c % side == 0 || c % side == side - 1)
            || cell.x + 1 == w
            || cell.y + 1 == cost.height();
        if rim {
            let d = byte as usize;
            let j = oracle_step(cost, cell.x as i64, cell.y as i64, d).expect("a legal arrow");
            let beyond = tiles
                .cost_to_goal(UVec2::new(j as u32 % w, j as u32 / w))
                .unwrap();
            assert!(
                beyond + oracle_price(model, d, cost.costs()[i]) <= here,
                "rim {cell}"
            );
            continue;
        }
        let mut best = (u64::MAX, u8::MAX);
        for d in 0..8 {
            let Some(j) = oracle_step(cost, cell.x as i64, cell.y as i64, d) else {
                continue;
            };
            let Some(beyond) = tiles.cost_to_goal(UVec2::new(j as u32 % w, j as u32 / w)) else {
                continue;
            };
            let total = beyond + oracle_price(model, d, cost.costs()[i]);
            if total < best.0 {
                best = (total, d as u8);
            }
        }
        assert_eq!(byte, best.1, "arrow at {cell} (cost {here})");
    }
}

/// Follow the tiles' arrows from `start`, pricing each step with the oracle and checking that
/// it is legal and that the cost to the goal drops: the total cost, or `None` if an arrow is
/// missing before the goal.
fn follow(cost: &CostField, tiles: &FlowTiles, start: UVec2, model: CostModel) -> Option<u64> {
    let mut at = start;
    let mut total = 0;
    while at != tiles.goal() {
        let next = tiles.next_cell(at)?;
        let step = STEPS
            .iter()
            .position(|&(dx, dy)| {
                at.x as i64 + dx == next.x as i64 && at.y as i64 + dy == next.y as i64
            })
            .unwrap();
        assert!(
            oracle_step(cost, at.x as i64, at.y as i64, step).is_some(),
            "illegal arrow at {at}"
        );
        assert!(
            tiles.cost_to_goal(next) < tiles.cost_to_goal(at),
            "the cost to the goal does not drop from {at} to {next}"
        );
        total += oracle_price(
            model,
            step,
            cost.costs()[(at.y * cost.width() + at.x) as usize],
        );
        at = next;
    }
    Some(total)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(300)
    ))]

    #[test]
    fn routes_exist_exactly_when_the_goal_is_reachable_and_cost_a_real_path(
        cost in arb_map(70),
        side in prop_oneof![Just(8u32), Just(11), Just(16), Just(256)],
        model in models(),
        picks in prop::collection::vec(any::<u64>(), 6),
    ) {
        let graph = SectorGraph::build(&cost, side, model).unwrap();
        let cells = pick_walkable(&cost, &picks);
        prop_assume!(cells.len() >= 2);
        let mut search = RouteSearch::new();
        let mut octile_only = RouteSearch::new();
        octile_only.set_landmarks(false);
        // One set of tiles sent from goal to goal, taking each goal's tile from the search.
        let mut reused: Option<FlowTiles> = None;
        for pair in cells.chunks(2).filter(|p| p.len() == 2) {
            let (start, goal) = (pair[0], pair[1]);
            let reference = reference_dijkstra(&cost, &[goal], model);
            // Labels: equal exactly for the cells that reach the goal.
            for (i, d) in reference.iter().enumerate() {
                let c = cost.grid().cell(i);
                if cost.is_walkable(c) {
                    prop_assert_eq!(
                        graph.region(c) == graph.region(goal),
                        d.is_some(),
                        "cell {} goal {}", c, goal
                    );
                }
            }
            let optimal = reference[(start.y * cost.width() + start.x) as usize];
            let route = search.route(&graph, &cost, start, goal).unwrap();
            prop_assert_eq!(route.is_some(), optimal.is_some());
            let (Some(route), Some(optimal)) = (route, optimal) else { continue };
            // The landmark bounds are admissible: the same cost as with the octile distance.
            let plain = octile_only.route(&graph, &cost, start, goal).unwrap().unwrap();
            prop_assert_eq!(route.cost, plain.cost);
            prop_assert!(route.expanded <= plain.expanded + 1, "{} > {}", route.expanded, plain.expanded);
            prop_assert!(route.cost >= optimal, "{} < {}", route.cost, optimal);
            prop_assert_eq!(route.waypoints.first(), Some(&start));
            prop_assert_eq!(route.waypoints.last(), Some(&goal));
            prop_assert_eq!(oracle_route_cost(&cost, &graph, &route.waypoints, model), route.cost);
            prop_assert_eq!(route.cost, cheapest_through_portals(&cost, &graph, start, goal, model));
            if side >= cost.width().max(cost.height()) {
                // One sector: the route is the best path itself.
                prop_assert_eq!(route.cost, optimal);
            }
            // The tiles lead from the start to the goal, never cheaper than the optimum and
            // never dearer than the route they were built for.
            let mut tiles = FlowTiles::new(&graph, &cost, goal).unwrap();
            let built = tiles.extend(&graph, &cost, &route).unwrap();
            check_arrows(&cost, &graph, &tiles, model);
            let walked = follow(&cost, &tiles, start, model);
            prop_assert!(walked.is_some(), "the tiles do not reach {} from {}", goal, start);
            let walked = walked.unwrap();
            prop_assert!(walked >= optimal && walked <= route.cost, "{} vs {} / {}", walked, optimal, route.cost);
            // A tile's costs are upper bounds once a tile beside it is rebuilt cheaper: the walk
            // costs at most what the start's tile says, and that at most the route.
            let claimed = tiles.cost_to_goal(start).unwrap();
            prop_assert!(walked <= claimed && claimed <= route.cost, "{} {} {}", walked, claimed, route.cost);
            // Tiles moved to this goal, their buffers and the search's goal field reused: the
            // same tiles.
            let again = match &mut reused {
                Some(t) => {
                    t.set_goal(&graph, &cost, goal).unwrap();
                    t
                }
                None => reused.insert(FlowTiles::new(&graph, &cost, goal).unwrap()),
            };
            prop_assert_eq!(again.extend_reusing(&graph, &cost, &route, &search).unwrap(), built);
            prop_assert!(same_tiles(&cost, again, &tiles), "reused tiles differ, goal {}", goal);
        }
    }
}

/// Whether two sets of tiles give every cell the same cost to the goal and the same arrow.
fn same_tiles(cost: &CostField, a: &FlowTiles, b: &FlowTiles) -> bool {
    a.goal() == b.goal()
        && a.tile_count() == b.tile_count()
        && (0..cost.grid().len()).all(|i| {
            let c = cost.grid().cell(i);
            a.cost_to_goal(c) == b.cost_to_goal(c) && a.flow_byte(c) == b.flow_byte(c)
        })
}

#[test]
fn a_goal_field_is_not_reused_once_its_sector_has_changed() {
    let mut cost = horde::maps::demo_map();
    let model = CostModel::Octile;
    let mut graph = SectorGraph::build(&cost, 16, model).unwrap();
    let (start, goal) = (UVec2::new(2, 2), UVec2::new(125, 125));
    let mut search = RouteSearch::new();
    search.route(&graph, &cost, start, goal).unwrap().unwrap();
    // Dear terrain beside the goal, in its sector: the search's field of that sector is stale.
    let (min, max) = (UVec2::new(113, 113), UVec2::new(119, 127));
    cost.fill_rect(min, max, 9).unwrap();
    graph.update(&cost, &[(min, max)]).unwrap();
    let route = RouteSearch::new()
        .route(&graph, &cost, start, goal)
        .unwrap()
        .unwrap();
    let mut fresh = FlowTiles::new(&graph, &cost, goal).unwrap();
    fresh.extend(&graph, &cost, &route).unwrap();
    let mut stale = FlowTiles::new(&graph, &cost, goal).unwrap();
    stale
        .extend_reusing(&graph, &cost, &route, &search)
        .unwrap();
    assert!(same_tiles(&cost, &stale, &fresh));
    // And the field is reused, with the same tiles, once the search has seen the new costs.
    search.route(&graph, &cost, start, goal).unwrap().unwrap();
    let mut reused = FlowTiles::new(&graph, &cost, goal).unwrap();
    reused
        .extend_reusing(&graph, &cost, &route, &search)
        .unwrap();
    assert!(same_tiles(&cost, &reused, &fresh));
}

/// Labels of a plain 4-connected flood fill (with the corner rule, the same partition as
/// 8-connectivity), written here apart from the library.
fn flood_labels(cost: &CostField) -> Vec<u32> {
    let (w, h) = (cost.width() as usize, cost.height() as usize);
    let mut label = vec![u32::MAX; w * h];
    let mut next = 0;
    let mut stack = Vec::new();
    for start in 0..w * h {
        if label[start] != u32::MAX || cost.costs()[start] == horde::WALL {
            continue;
        }
        label[start] = next;
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (x, y) = (i % w, i / w);
            let mut near = Vec::with_capacity(4);
            if x > 0 {
                near.push(i - 1);
            }
            if x + 1 < w {
                near.push(i + 1);
            }
            if y > 0 {
                near.push(i - w);
            }
            if y + 1 < h {
                near.push(i + w);
            }
            for j in near {
                if label[j] == u32::MAX && cost.costs()[j] != horde::WALL {
                    label[j] = next;
                    stack.push(j);
                }
            }
        }
        next += 1;
    }
    label
}

#[test]
#[cfg_attr(miri, ignore)] // reads the Moving AI maps
fn moving_ai_maps_are_labelled_like_a_flood_fill_and_routed_near_the_optimum() {
    let dir = common::movingai_dir();
    let mut maps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "map"))
        .collect();
    maps.sort();
    assert!(maps.len() >= 10, "{} maps in {}", maps.len(), dir.display());
    for path in maps {
        let cost = horde::io::read_map(&path).unwrap();
        let graph = SectorGraph::build(&cost, 32, CostModel::Octile).unwrap();
        // One label per flood-fill component, and back.
        let flood = flood_labels(&cost);
        let mut to_region = std::collections::HashMap::new();
        let mut to_flood = std::collections::HashMap::new();
        for (i, &f) in flood.iter().enumerate() {
            let r = graph.region(cost.grid().cell(i));
            assert_eq!(r.is_some(), f != u32::MAX);
            if let Some(r) = r {
                assert_eq!(*to_region.entry(f).or_insert(r), r, "{}", path.display());
                assert_eq!(*to_flood.entry(r).or_insert(f), f, "{}", path.display());
            }
        }
        // Every tenth scenario: a route, never below the published optimum.
        let scen = horde::io::read_scen(path.with_extension("map.scen")).unwrap();
        let mut search = RouteSearch::new();
        let (mut route_excess, mut tile_excess) = (Vec::new(), Vec::new());
        let scale = CostModel::Octile.scale() as f64;
        for s in scen.iter().step_by(10) {
            let (from, to) = (
                UVec2::new(s.start.0, s.start.1),
                UVec2::new(s.goal.0, s.goal.1),
            );
            let route = search
                .route(&graph, &cost, from, to)
                .unwrap()
                .expect("reachable");
            let got = route.cost as f64 / scale;
            assert!(
                got >= s.optimal - s.tolerance(),
                "{}: {got} < {}",
                path.display(),
                s.optimal
            );
            let mut tiles = FlowTiles::new(&graph, &cost, to).unwrap();
            tiles.extend(&graph, &cost, &route).unwrap();
            let walked = follow(&cost, &tiles, from, CostModel::Octile).unwrap_or_else(|| {
                panic!(
                    "{}: the tiles do not reach {to} from {from}",
                    path.display()
                )
            }) as f64
                / scale;
            assert!(walked >= s.optimal - s.tolerance() && walked <= got + 1e-9);
            if s.optimal > 0.0 {
                route_excess.push(got / s.optimal - 1.0);
                tile_excess.push(walked / s.optimal - 1.0);
            }
        }
        let stats = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
            let p95 = v.get(v.len() * 95 / 100).copied().unwrap_or(0.0);
            (
                100.0 * mean,
                100.0 * p95,
                100.0 * v.last().copied().unwrap_or(0.0),
            )
        };
        let (rm, rp, rw) = stats(&mut route_excess);
        let (tm, tp, tw) = stats(&mut tile_excess);
        println!(
            "{}: {} nodes, {} edges, {:.2} B/cell; excess % (mean p95 worst): route {rm:.2} {rp:.2} {rw:.2}, tiles {tm:.2} {tp:.2} {tw:.2} over {}",
            path.file_name().unwrap().to_string_lossy(),
            graph.node_count(),
            graph.edge_count(),
            graph.memory_bytes() as f64 / cost.grid().len() as f64,
            tile_excess.len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(200)
    ))]

    #[test]
    fn an_updated_graph_equals_a_fresh_build_and_routes_the_same(
        cost in arb_map(60),
        side in prop_oneof![Just(8u32), Just(11), Just(16)],
        model in models(),
        edits in prop::collection::vec(
            (any::<u64>(), 0u32..6, 0u32..6, prop_oneof![Just(horde::WALL), Just(1u8), 2u8..=9]),
            1..6,
        ),
        picks in prop::collection::vec(any::<u64>(), 2),
    ) {
        let mut cost = cost;
        let mut graph = SectorGraph::build(&cost, side, model).unwrap();
        for (at, dw, dh, c) in edits {
            let (w, h) = (cost.width(), cost.height());
            let min = UVec2::new((at % w as u64) as u32, ((at >> 32) % h as u64) as u32);
            let max = UVec2::new((min.x + dw).min(w - 1), (min.y + dh).min(h - 1));
            cost.fill_rect(min, max, c).unwrap();
            let regions_before = graph.region_count();
            let update = graph.update(&cost, &[(min, max)]).unwrap();
            prop_assert!(!update.sectors.is_empty());
            let fresh = SectorGraph::build(&cost, side, model).unwrap();
            prop_assert_eq!(&graph, &fresh);
            prop_assert_eq!(graph.region_count(), fresh.region_count());
            prop_assert_eq!(update.regions_changed, regions_before != fresh.region_count());
        }
        // And routes through it still exist exactly when the goal is reachable.
        let cells = pick_walkable(&cost, &picks);
        prop_assume!(cells.len() == 2);
        let reference = reference_dijkstra(&cost, &[cells[1]], model);
        let optimal = reference[(cells[0].y * cost.width() + cells[0].x) as usize];
        let route = RouteSearch::new().route(&graph, &cost, cells[0], cells[1]).unwrap();
        prop_assert_eq!(route.is_some(), optimal.is_some());
        // Landmarks carried through the edits (those still in use) bound admissibly: the same
        // cost as a fresh build's and as the octile distance alone.
        let fresh = SectorGraph::build(&cost, side, model).unwrap();
        let mut octile_only = RouteSearch::new();
        octile_only.set_landmarks(false);
        let plain = octile_only.route(&fresh, &cost, cells[0], cells[1]).unwrap();
        let again = RouteSearch::new().route(&fresh, &cost, cells[0], cells[1]).unwrap();
        prop_assert_eq!(route.as_ref().map(|r| r.cost), plain.as_ref().map(|r| r.cost));
        prop_assert_eq!(again.map(|r| r.cost), plain.map(|r| r.cost));
    }
}

#[test]
fn costs_beyond_32_bits_inside_a_sector_are_kept_exact() {
    // Four sectors of 256. The first is a serpentine of cost-254 swamp (walls on every odd row,
    // the gap at alternate ends) closed on its east and south sides except at rows 0 and 254 of
    // the east side: the way between those two portal cells runs through every row, over 2^32
    // raw octile units.
    let (w, h) = (512u32, 512u32);
    let mut costs = vec![1u8; (w * h) as usize];
    for y in 0..256u32 {
        for x in 0..256u32 {
            let c = &mut costs[(y * w + x) as usize];
            *c = 254;
            let serpentine_wall = y % 2 == 1 && x != if (y / 2) % 2 == 0 { 254 } else { 0 };
            let closed_side = (x == 255 && y != 0 && y != 254) || y == 255;
            if serpentine_wall || closed_side {
                *c = horde::WALL;
            }
        }
    }
    let cost = CostField::from_costs(Grid::new(w, h).unwrap(), costs).unwrap();
    let model = CostModel::Octile;
    let graph = SectorGraph::build(&cost, 256, model).unwrap();
    let node = |cell: UVec2| {
        (0..graph.node_count())
            .find(|&n| graph.node_cell(n) == cell)
            .unwrap()
    };
    let (top, bottom) = (node(UVec2::new(255, 0)), node(UVec2::new(255, 254)));
    let down = graph
        .edges(top)
        .find(|&(to, _)| to == bottom)
        .expect("joined inside the sector")
        .1;
    assert!(down > u32::MAX as u64, "{down}");
    // The oracle: the reference Dijkstra over the sector alone.
    let sector = crop(&cost, 0, 0, 256, 256);
    let want = reference_dijkstra(&sector, &[UVec2::new(255, 254)], model)[255].unwrap();
    assert_eq!(down, want);
    // A route that must take that edge: from the top portal's neighbour to the bottom one's,
    // with sector 1 walled between them.
    let mut cost = cost;
    cost.fill_rect(UVec2::new(256, 100), UVec2::new(511, 100), horde::WALL)
        .unwrap();
    let graph = SectorGraph::build(&cost, 256, model).unwrap();
    let (start, goal) = (UVec2::new(256, 0), UVec2::new(256, 254));
    let route = RouteSearch::new()
        .route(&graph, &cost, start, goal)
        .unwrap()
        .unwrap();
    assert!(route.cost > u32::MAX as u64, "{}", route.cost);
    assert_eq!(
        oracle_route_cost(&cost, &graph, &route.waypoints, model),
        route.cost
    );
}

/// 96 x 96 for sectors of 16, with walls: a long wall with a door at its south end, and
/// scattered blocks (one of them, 81-84 x 13-16, beside the crowd tests' goal).
fn wall_with_a_door_map() -> CostField {
    let mut cost = CostField::new(Grid::new(96, 96).unwrap());
    cost.fill_rect(UVec2::new(48, 0), UVec2::new(49, 80), horde::WALL)
        .unwrap();
    for k in 0..12u32 {
        let at = UVec2::new((k * 37) % 90 + 2, (k * 53) % 90 + 2);
        if at.x.abs_diff(48) > 4 {
            cost.fill_rect(at, at + UVec2::splat(3), horde::WALL)
                .unwrap();
        }
    }
    cost
}

#[test]
fn a_crowd_group_follows_the_tiles_to_the_goal() {
    let cost = wall_with_a_door_map();
    let model = CostModel::TenFourteen;
    let graph = SectorGraph::build(&cost, 16, model).unwrap();
    let (start, goal) = (UVec2::new(8, 8), UVec2::new(88, 10));
    let route = RouteSearch::new()
        .route(&graph, &cost, start, goal)
        .unwrap()
        .unwrap();
    let mut tiles = FlowTiles::new(&graph, &cost, goal).unwrap();
    tiles.extend(&graph, &cost, &route).unwrap();
    let mut flow = horde::FlowField::new(*cost.grid());
    tiles.write_flow(&cost, &mut flow).unwrap();

    use horde::crowd::{AgentParams, AgentState, Crowd, CrowdConfig, Group};
    let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    // Forty agents on the start's own tile, on walkable cells near the start.
    let mut added = 0;
    for y in 4..14u32 {
        for x in 4..14u32 {
            let cell = UVec2::new(x, y);
            if added < 40 && cost.is_walkable(cell) && tiles.cost_to_goal(cell).is_some() {
                crowd
                    .add_agent(
                        &cost,
                        AgentParams {
                            position: cell.as_vec2() + 0.5,
                            radius: 0.35,
                            max_speed: 4.0,
                            group: 0,
                        },
                    )
                    .unwrap();
                added += 1;
            }
        }
    }
    assert_eq!(added, 40);
    let groups = [Group {
        flow: &flow,
        goal: cost.grid().cell_center(goal),
    }];
    for _ in 0..2400 {
        crowd.step(0.05, &cost, &groups).unwrap();
    }
    let arrived = crowd
        .states()
        .iter()
        .filter(|&&s| s == AgentState::Arrived)
        .count();
    let lost: Vec<String> = crowd
        .positions()
        .iter()
        .zip(crowd.states())
        .filter(|&(_, &s)| s != AgentState::Arrived)
        .map(|(p, s)| {
            let c = p.floor().as_uvec2();
            format!("{p} {s:?} tile {:?}", tiles.flow_byte(c))
        })
        .collect();
    assert_eq!(arrived, 40, "{arrived} of 40 arrived: {lost:?}");
    // Arrived as a place: every agent stands near the goal, by the pile the crowd measures.
    let pile = crowd.pile_radius(0).unwrap();
    for p in crowd.positions() {
        let d = p.distance(cost.grid().cell_center(goal));
        assert!(
            d <= pile + 1.0,
            "an agent {d:.2} from the goal (pile {pile:.2})"
        );
    }
}

#[test]
fn units_without_a_tile_head_for_the_next_portal_and_arrive_as_tiles_come() {
    // The tiles are built one a tick, and only after 2 s.
    let cost = wall_with_a_door_map();
    let model = CostModel::TenFourteen;
    let graph = SectorGraph::build(&cost, 16, model).unwrap();
    let (start, goal) = (UVec2::new(8, 8), UVec2::new(88, 10));
    let route = RouteSearch::new()
        .route(&graph, &cost, start, goal)
        .unwrap()
        .unwrap();
    let mut tiles = FlowTiles::new(&graph, &cost, goal).unwrap();
    tiles.extend_some(&graph, &cost, &route, 1).unwrap();
    let mut flow = horde::FlowField::new(*cost.grid());
    tiles.write_route_flow(&cost, &route, &mut flow).unwrap();
    // The next portal from the start's sector: the first waypoint outside it.
    let start_sector = graph.sector_of(start).unwrap();
    let portal = *route
        .waypoints
        .iter()
        .find(|&&c| graph.sector_of(c) != Some(start_sector))
        .unwrap();
    assert!(tiles.flow_byte(start).is_none());

    use horde::crowd::{AgentParams, AgentState, Crowd, CrowdConfig, Group};
    let mut crowd = Crowd::new(*cost.grid(), CrowdConfig::default()).unwrap();
    for y in 4..14u32 {
        for x in 4..14u32 {
            let cell = UVec2::new(x, y);
            if crowd.len() < 40 && cost.is_walkable(cell) {
                let params = AgentParams {
                    position: cell.as_vec2() + 0.5,
                    radius: 0.35,
                    max_speed: 4.0,
                    group: 0,
                };
                crowd.add_agent(&cost, params).unwrap();
            }
        }
    }
    let to_portal = |crowd: &Crowd| {
        let target = portal.as_vec2() + 0.5;
        crowd
            .positions()
            .iter()
            .map(|p| p.distance(target))
            .sum::<f32>()
            / crowd.len() as f32
    };
    let before = to_portal(&crowd);
    let mut complete = false;
    for tick in 0..2400 {
        if tick >= 40 && !complete {
            complete = tiles.extend_some(&graph, &cost, &route, 1).unwrap().1;
            tiles.write_route_flow(&cost, &route, &mut flow).unwrap();
        }
        let groups = [Group {
            flow: &flow,
            goal: cost.grid().cell_center(goal),
        }];
        crowd.step(0.05, &cost, &groups).unwrap();
        if tick == 39 {
            // Two seconds on the steering arrows alone: the crowd has closed on the portal.
            let after = to_portal(&crowd);
            assert!(after < before - 3.0, "{before:.1} -> {after:.1}");
        }
    }
    assert!(complete);
    let arrived = crowd
        .states()
        .iter()
        .filter(|&&s| s == AgentState::Arrived)
        .count();
    assert_eq!(arrived, 40);
    let pile = crowd.pile_radius(0).unwrap();
    // Arrived as a place: near the goal, by the pile the crowd measures (the wall block at
    // 81-84 x 13-16 beside the goal bends the pile, so a cell of slack more than above).
    for p in crowd.positions() {
        let d = p.distance(cost.grid().cell_center(goal));
        assert!(
            d <= pile + 2.0,
            "{p} is {d:.2} from the goal, pile {pile:.2}"
        );
    }
}

#[test]
fn the_tile_cache_shares_evicts_and_follows_edits() {
    use horde::sectors::TileCache;
    use horde::{CostEdit, SizeClass, WALL};
    let map = horde::maps::scattered_map(128, 128, 5).unwrap();
    let model = CostModel::TenFourteen;
    let pick = |x, y| map.nearest_walkable(UVec2::new(x, y)).unwrap();
    let (start, goal, other_goal) = (pick(2, 2), pick(120, 120), pick(120, 5));
    // Room for about one goal's tiles.
    let mut cache = TileCache::new(map.clone(), model, 16, 40_000).unwrap();
    let key = cache.route(start, goal, SizeClass(0)).unwrap().unwrap();
    let again = cache.route(start, goal, SizeClass(0)).unwrap().unwrap();
    assert_eq!(key, again);
    assert_eq!((cache.stats().builds, cache.stats().hits), (1, 1));
    let other = cache
        .route(start, other_goal, SizeClass(0))
        .unwrap()
        .unwrap();
    assert_eq!(cache.stats().evictions, 1);
    assert!(cache.tiles(key).is_none() && cache.tiles(other).is_some());

    // A wall across the way: the tiles are dropped and the report names them; asked again,
    // they lead round it.
    let key = cache.route(start, goal, SizeClass(0)).unwrap().unwrap();
    let wall = CostEdit::Rect {
        min: UVec2::new(0, 60),
        max: UVec2::new(100, 61),
        cost: WALL,
    };
    let report = cache.apply_edits(&[wall]).unwrap();
    assert!(report.dropped.contains(&key), "{report:?}");
    assert!(report.sectors_rebuilt > 0 && report.changed_cells > 0);
    let key = cache.route(start, goal, SizeClass(0)).unwrap().unwrap();
    let edited = cache.map().clone();
    let walked = follow(&edited, cache.tiles(key).unwrap(), start, model).unwrap();
    let optimal = reference_dijkstra(&edited, &[goal], model)
        [(start.y * edited.width() + start.x) as usize]
        .unwrap();
    assert!(walked >= optimal, "{walked} < {optimal}");
    assert_eq!(
        cache.graph(SizeClass(0)).unwrap(),
        &SectorGraph::build(&edited, 16, model).unwrap()
    );

    // A size class: its tiles keep to its inflated map.
    let big = cache.add_size_class(1.0).unwrap();
    let inflated = cache.class_map(big).unwrap().clone();
    let on = |x, y| inflated.nearest_walkable(UVec2::new(x, y)).unwrap();
    let (s, g) = (on(4, 4), on(110, 110));
    if let Some(k) = cache.route(s, g, big).unwrap() {
        assert!(follow(&inflated, cache.tiles(k).unwrap(), s, model).is_some());
    }
    // A goal walled in: its tiles go, and asking for it again is refused.
    let key = cache.route(start, goal, SizeClass(0)).unwrap().unwrap();
    let report = cache
        .apply_edits(&[CostEdit::Cell {
            cell: goal,
            cost: WALL,
        }])
        .unwrap();
    assert!(report.dropped.contains(&key), "{report:?}");
    assert!(cache.tiles(key).is_none());
    assert!(cache.route(start, goal, SizeClass(0)).is_err());
    assert!(cache.route(start, goal, SizeClass(9)).is_err());
}

#[test]
fn landmarks_mended_through_many_edits_keep_routes_exact() {
    // 200 edits on a 192 x 192 map of scattered walls and terrain: walls added, costs raised
    // and lowered, away from the border sectors where the landmarks are. After each, routes
    // through the mended landmarks cost what routes with the octile distance alone cost (both
    // exact over the graph), and every landmark stays in use.
    let mut cost = horde::maps::scattered_map(192, 192, 11).unwrap();
    let mut graph = SectorGraph::build(&cost, 16, CostModel::Octile).unwrap();
    let (mut alt, mut octile_only) = (RouteSearch::new(), RouteSearch::new());
    octile_only.set_landmarks(false);
    let (mut expanded_alt, mut expanded_octile) = (0, 0);
    for k in 0..200u32 {
        let at = UVec2::new(17 + (k * 7919) % 150, 17 + (k * 104_729) % 150);
        let block = (at, at + UVec2::new(k % 8, (k / 8) % 8));
        let value = [horde::WALL, 1, 4][k as usize % 3];
        cost.fill_rect(block.0, block.1, value).unwrap();
        graph.update(&cost, &[block]).unwrap();
        let picks: Vec<u64> = (0..8)
            .map(|i| (k as u64 + 1) * 0x9E37_79B9 * (i + 1))
            .collect();
        for pair in pick_walkable(&cost, &picks).chunks(2) {
            let a = alt.route(&graph, &cost, pair[0], pair[1]).unwrap();
            let o = octile_only.route(&graph, &cost, pair[0], pair[1]).unwrap();
            assert_eq!(
                a.as_ref().map(|r| r.cost),
                o.as_ref().map(|r| r.cost),
                "edit {k}"
            );
            expanded_alt += a.map_or(0, |r| r.expanded);
            expanded_octile += o.map_or(0, |r| r.expanded);
        }
    }
    assert_eq!(graph.landmarks_in_use(), 8);
    assert!(
        expanded_alt < expanded_octile,
        "{expanded_alt} vs {expanded_octile}"
    );
    graph.refresh_landmarks(&cost).unwrap();
    assert_eq!(graph.landmarks_in_use(), 8);
}
