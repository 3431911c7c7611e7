//! Sector graphs and routes against the reference Dijkstra and a plain component labelling:
//! a route exists exactly when the goal is reachable, its cost is that of a real path (each leg
//! re-priced by the oracle), never below the optimum, and exact when one sector covers the map.

mod common;

use common::{STEPS, arb_map, oracle_price, oracle_step, pick_walkable, reference_dijkstra};
use glam::UVec2;
use horde::sectors::{RouteSearch, SectorGraph};
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
            prop_assert!(route.cost >= optimal, "{} < {}", route.cost, optimal);
            prop_assert_eq!(route.waypoints.first(), Some(&start));
            prop_assert_eq!(route.waypoints.last(), Some(&goal));
            prop_assert_eq!(oracle_route_cost(&cost, &graph, &route.waypoints, model), route.cost);
            if side >= cost.width().max(cost.height()) {
                // One sector: the route is the best path itself.
                prop_assert_eq!(route.cost, optimal);
            }
        }
    }
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
        let (mut sum, mut worst, mut n) = (0.0, 0.0f64, 0);
        for s in scen.iter().step_by(10) {
            let (from, to) = (
                UVec2::new(s.start.0, s.start.1),
                UVec2::new(s.goal.0, s.goal.1),
            );
            let route = search
                .route(&graph, &cost, from, to)
                .unwrap()
                .expect("reachable");
            let got = route.cost as f64 / CostModel::Octile.scale() as f64;
            assert!(
                got >= s.optimal - s.tolerance(),
                "{}: {got} < {}",
                path.display(),
                s.optimal
            );
            if s.optimal > 0.0 {
                let excess = got / s.optimal - 1.0;
                sum += excess;
                worst = worst.max(excess);
                n += 1;
            }
        }
        println!(
            "{}: {} nodes, {} edges, {:.2} B/cell; route excess mean {:.2} %, worst {:.2} % over {n}",
            path.file_name().unwrap().to_string_lossy(),
            graph.node_count(),
            graph.edge_count(),
            graph.memory_bytes() as f64 / cost.grid().len() as f64,
            100.0 * sum / n.max(1) as f64,
            100.0 * worst
        );
    }
}
