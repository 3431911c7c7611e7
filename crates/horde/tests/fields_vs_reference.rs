//! Property tests: integration fields, flow fields and A* against the plain reference Dijkstra
//! and the `pathfinding` crate, on thousands of random maps, in both cost models.

mod common;

use common::{arb_map, oracle_price, oracle_step, pick_walkable, reference_dijkstra};
use glam::UVec2;
use horde::{
    AStar, BuildProgress, CostField, CostModel, FLOW_GOAL, FLOW_UNREACHABLE, FLOW_WALL, FlowField,
    IntegrationBuilder, IntegrationField, UNREACHABLE, WALL,
};
use proptest::prelude::*;

fn models() -> impl Strategy<Value = CostModel> {
    prop_oneof![Just(CostModel::TenFourteen), Just(CostModel::Octile)]
}

/// Every property of the flow field, checked cell by cell against the integration values with
/// the oracle's own rules (`common::oracle_step`, `common::oracle_price`).
fn check_flow(cost: &CostField, values: &[u32], flow: &FlowField, model: CostModel) {
    let w = cost.width() as i64;
    let terrain = cost.costs();
    for i in 0..terrain.len() {
        let (x, y) = (i as i64 % w, i as i64 / w);
        let b = flow.bytes()[i];
        if terrain[i] == WALL {
            assert_eq!(b, FLOW_WALL, "({x}, {y})");
            continue;
        }
        if values[i] == UNREACHABLE {
            assert_eq!(b, FLOW_UNREACHABLE, "({x}, {y})");
            continue;
        }
        // The lowest-numbered legal step minimising value + step cost...
        let mut best: Option<(u64, u8)> = None;
        for d in 0..8 {
            let Some(j) = oracle_step(cost, x, y, d) else {
                continue;
            };
            if values[j] == UNREACHABLE {
                continue;
            }
            let v = values[j] as u64 + oracle_price(model, d, terrain[i]);
            if best.is_none_or(|(bv, _)| v < bv) {
                best = Some((v, d as u8));
            }
        }
        match best {
            // ...is the arrow, and reaches exactly the cell's own value;
            Some((bv, bd)) if bv <= values[i] as u64 => {
                assert_eq!(b, bd, "arrow of ({x}, {y})");
                assert_eq!(bv, values[i] as u64, "value at ({x}, {y})");
            }
            // or no neighbour reaches the cell more cheaply: a sink (goal, or seed).
            _ => assert_eq!(b, FLOW_GOAL, "sink at ({x}, {y})"),
        }
    }
    // Following the arrows from every reachable cell reaches a sink, costs exactly the value
    // less the sink's own, and never takes more steps than there are cells (no loops).
    for (i, &value) in values.iter().enumerate() {
        if value == UNREACHABLE {
            continue;
        }
        let mut at = i;
        let mut spent = 0u64;
        let mut steps = 0;
        while flow.bytes()[at] < 8 {
            let d = flow.bytes()[at] as usize;
            let (x, y) = (at as i64 % w, at as i64 / w);
            let next = oracle_step(cost, x, y, d);
            assert!(next.is_some(), "arrow at ({x}, {y}) is illegal");
            spent += oracle_price(model, d, terrain[at]);
            at = next.unwrap();
            steps += 1;
            assert!(steps <= terrain.len(), "loop through ({x}, {y})");
        }
        assert_eq!(flow.bytes()[at], FLOW_GOAL);
        assert_eq!(spent + values[at] as u64, value as u64);
    }
}

/// The reference's values as a field's raw values (`UNREACHABLE` where it found no way).
fn reference_values(reference: &[Option<u64>]) -> Vec<u32> {
    reference
        .iter()
        .map(|v| v.map_or(UNREACHABLE, |v| v as u32))
        .collect()
}

/// Build the fields for `goals` and check them against the reference, cell by cell.
fn check_fields(cost: &CostField, goals: &[UVec2], model: CostModel) {
    let mut builder = IntegrationBuilder::new();
    let field = builder.build(cost, goals, model).unwrap();
    let want = reference_values(&reference_dijkstra(cost, goals, model));
    assert_eq!(field.values(), &want[..]);
    let mut flow = FlowField::new(*cost.grid());
    builder.flow_into(&mut flow).unwrap();
    check_flow(cost, field.values(), &flow, model);
    // The standalone derivation passes the same independent checks (both share the library's
    // `derive`, so comparing them with each other alone would prove nothing).
    let standalone = FlowField::from_integration(cost, &field).unwrap();
    check_flow(cost, field.values(), &standalone, model);
    assert_eq!(standalone, flow);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn integration_and_flow_equal_the_reference(
        cost in arb_map(40),
        model in models(),
        picks in proptest::collection::vec(any::<u64>(), 1..5),
    ) {
        let goals = pick_walkable(&cost, &picks);
        prop_assume!(!goals.is_empty());
        check_fields(&cost, &goals, model);
    }

    #[test]
    fn plain_ground_maps_equal_the_reference(
        cost in arb_map(40),
        model in models(),
        picks in proptest::collection::vec(any::<u64>(), 1..5),
    ) {
        // Terrain stripped: the wave takes its uniform-cost path, and the sweeps tell the row a
        // pass came from only about the cells the scans along a row improved.
        let plain: Vec<u8> = cost.costs().iter().map(|&c| if c == WALL { WALL } else { 1 }).collect();
        let cost = CostField::from_costs(*cost.grid(), plain).unwrap();
        let goals = pick_walkable(&cost, &picks);
        prop_assume!(!goals.is_empty());
        check_fields(&cost, &goals, model);
    }

    #[test]
    fn astar_costs_equal_the_reference(
        cost in arb_map(40),
        model in models(),
        picks in proptest::collection::vec(any::<u64>(), 2..12),
    ) {
        let cells = pick_walkable(&cost, &picks);
        prop_assume!(cells.len() >= 2);
        let goal = cells[0];
        let reference = reference_dijkstra(&cost, &[goal], model);
        let mut astar = AStar::new();
        let mut path = Vec::new();
        for &start in &cells[1..] {
            let i = cost.grid().index(start).unwrap();
            let got = astar.search(&cost, start, goal, model).unwrap();
            prop_assert_eq!(got.map(|c| c as u64), reference[i]);
            if let Some(c) = got {
                prop_assert!(astar.path_into(&mut path));
                prop_assert_eq!(path[0], start);
                prop_assert_eq!(*path.last().unwrap(), goal);
                let mut sum = 0u64;
                for w in path.windows(2) {
                    let (x, y) = (w[0].x as i64, w[0].y as i64);
                    let to = cost.grid().index(w[1]).unwrap();
                    let d = (0..8).find(|&d| oracle_step(&cost, x, y, d) == Some(to));
                    prop_assert!(d.is_some(), "illegal step {} -> {}", w[0], w[1]);
                    sum += oracle_price(model, d.unwrap(), cost.get(w[0]).unwrap());
                }
                prop_assert_eq!(sum, c as u64);
            }
        }
    }

    #[test]
    fn integration_equals_pathfinding_dijkstra_all(
        cost in arb_map(30),
        model in models(),
        pick in any::<u64>(),
    ) {
        let goals = pick_walkable(&cost, &[pick]);
        prop_assume!(!goals.is_empty());
        let g = *cost.grid();
        let field = IntegrationBuilder::new().build(&cost, &goals, model).unwrap();
        let goal = goals[0];
        // The cells that can step into `c`, with the oracle's rules and prices.
        let successors = |&c: &UVec2| {
            common::STEPS
                .iter()
                .enumerate()
                .filter_map(|(d, &(dx, dy))| {
                    let (jx, jy) = (c.x as i64 - dx, c.y as i64 - dy);
                    (oracle_step(&cost, jx, jy, d) == g.index(c).ok()).then(|| {
                        let j = UVec2::new(jx as u32, jy as u32);
                        (j, oracle_price(model, d, cost.get(j).unwrap()))
                    })
                })
                .collect::<Vec<_>>()
        };
        let theirs = pathfinding::prelude::dijkstra_all(&goal, successors);
        for i in 0..g.len() {
            let c = g.cell(i);
            let want = if c == goal { Some(0) } else { theirs.get(&c).map(|&(_, v)| v) };
            prop_assert_eq!(field.get(c).map(|v| v as u64), want, "cell {}", c);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn time_sliced_builds_equal_one_shot_builds(
        cost in arb_map(40),
        model in models(),
        picks in proptest::collection::vec(any::<u64>(), 1..4),
        budget in 1usize..200,
        sweeps in any::<bool>(),
    ) {
        let goals = pick_walkable(&cost, &picks);
        prop_assume!(!goals.is_empty());
        let mut once = IntegrationBuilder::new();
        // The one-shot build sweeps or runs the wave as it sees fit; the sliced one is made to
        // do one or the other, and both must give the same field.
        let want = once.build(&cost, &goals, model).unwrap();
        let mut want_flow = FlowField::new(*cost.grid());
        once.flow_into(&mut want_flow).unwrap();

        let mut sliced = IntegrationBuilder::new();
        sliced.set_sweeps(sweeps);
        sliced.start(&cost, &goals, model).unwrap();
        let mut calls = 0;
        // A row's work: its columns, and 16 for each run of them swept (runs of chunks of 8
        // columns, an unmarked chunk between two runs).
        let padded = cost.width() as usize + 2;
        let row = padded + 16 * (padded / 16 + 1);
        let stats = loop {
            calls += 1;
            match sliced.advance(budget).unwrap() {
                // The wave settles exactly the budget; a sweep stops at the end of the first
                // row that reaches it (and a winding map starts over as the wave).
                BuildProgress::Running { settled } if sweeps => {
                    prop_assert!(settled <= calls * (budget + row));
                }
                BuildProgress::Running { settled } => prop_assert_eq!(settled, calls * budget),
                BuildProgress::Done(stats) => break stats,
            }
        };
        let mut got = IntegrationField::new(*cost.grid(), model);
        prop_assert_eq!(sliced.finish_into(&mut got).unwrap(), stats);
        prop_assert_eq!(&got, &want);
        // Each reachable cell settled once: a cell queued twice in one bucket and expanded
        // twice would count twice.
        let reachable = got.values().iter().filter(|&&v| v != horde::UNREACHABLE).count();
        prop_assert_eq!(stats.settled, reachable);
        let mut got_flow = FlowField::new(*cost.grid());
        sliced.flow_into(&mut got_flow).unwrap();
        prop_assert_eq!(got_flow, want_flow);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn seeded_and_flee_fields_equal_the_reference(
        cost in arb_map(30),
        model in models(),
        picks in proptest::collection::vec((any::<u64>(), 0u32..5000), 1..6),
        budget in 1usize..100,
    ) {
        let cells = pick_walkable(&cost, &picks.iter().map(|p| p.0).collect::<Vec<_>>());
        prop_assume!(!cells.is_empty());
        let seeds: Vec<(UVec2, u32)> = cells.iter().zip(&picks).map(|(&c, p)| (c, p.1 * model.scale() / 10)).collect();
        let mut b = IntegrationBuilder::new();
        // Seeded, and time-sliced on the way.
        b.start_seeded(&cost, &seeds, model).unwrap();
        while let BuildProgress::Running { .. } = b.advance(budget).unwrap() {}
        let mut got = IntegrationField::new(*cost.grid(), model);
        b.finish_into(&mut got).unwrap();
        let want = reference_values(&common::reference_seeded(&cost, &seeds, model));
        prop_assert_eq!(got.values(), &want[..]);
        let mut flow = FlowField::new(*cost.grid());
        b.flow_into(&mut flow).unwrap();
        check_flow(&cost, got.values(), &flow, model);
        // A flee field from it is a seeded field too, checked the same way.
        let flee_seeds = got.flee_seeds(1.2).unwrap();
        let flee = b.build_seeded(&cost, &flee_seeds, model).unwrap();
        let want = reference_values(&common::reference_seeded(&cost, &flee_seeds, model));
        prop_assert_eq!(flee.values(), &want[..]);
        let mut flee_flow = FlowField::new(*cost.grid());
        b.flow_into(&mut flee_flow).unwrap();
        check_flow(&cost, flee.values(), &flee_flow, model);
    }
}

/// A maze of one-cell corridors: a depth-first backtracker over a lattice of `rooms_x` ×
/// `rooms_y` rooms, with `loops` extra openings (so corridors are reached from both ends),
/// optionally diagonal steps around one-cell pillars, and terrain `1..=max_terrain` on some
/// cells. Most walkable cells have exactly two legal steps: the wave walks along them.
fn corridor_map(rooms_x: u32, rooms_y: u32, loops: u32, max_terrain: u8, seed: u64) -> CostField {
    let (w, h) = (2 * rooms_x + 1, 2 * rooms_y + 1);
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut costs = vec![WALL; (w * h) as usize];
    let at = |x: u32, y: u32| (y * w + x) as usize;
    let mut seen = vec![false; (rooms_x * rooms_y) as usize];
    let mut stack = vec![(0u32, 0u32)];
    seen[0] = true;
    costs[at(1, 1)] = 1;
    while let Some(&(rx, ry)) = stack.last() {
        let mut ways: Vec<(u32, u32)> = Vec::new();
        if rx > 0 {
            ways.push((rx - 1, ry));
        }
        if ry > 0 {
            ways.push((rx, ry - 1));
        }
        if rx + 1 < rooms_x {
            ways.push((rx + 1, ry));
        }
        if ry + 1 < rooms_y {
            ways.push((rx, ry + 1));
        }
        ways.retain(|&(x, y)| !seen[(y * rooms_x + x) as usize]);
        if ways.is_empty() {
            stack.pop();
            continue;
        }
        let (nx, ny) = ways[(next() % ways.len() as u64) as usize];
        seen[(ny * rooms_x + nx) as usize] = true;
        costs[at(rx + nx + 1, ry + ny + 1)] = 1;
        costs[at(2 * nx + 1, 2 * ny + 1)] = 1;
        stack.push((nx, ny));
    }
    // Extra openings in the lattice's walls: loops, and (where an opening is a corner of four
    // rooms' walls) diagonal steps.
    for _ in 0..loops {
        let (x, y) = (
            1 + (next() % (w as u64 - 2)) as u32,
            1 + (next() % (h as u64 - 2)) as u32,
        );
        costs[at(x, y)] = 1;
    }
    for t in costs.iter_mut() {
        if *t != WALL && max_terrain > 1 && next() % 3 == 0 {
            *t = 1 + (next() % max_terrain as u64) as u8;
        }
    }
    CostField::from_costs(horde::Grid::new(w, h).unwrap(), costs).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Mazes of one-cell corridors, where a one-shot wave walks along corridor cells instead of
    /// queueing them: corridors longer than the buckets' lap, terrain up to the dearest, seeds
    /// of unequal values inside corridors. Equal to the reference; every reachable cell counted
    /// once; equal to a time-sliced build (which does not walk). The builds after the first
    /// (the same map again) fork their walks at junctions on no loop: equal to the reference
    /// too.
    #[test]
    fn corridor_mazes_equal_the_reference(
        rooms in (1u32..40, 1u32..40),
        loops in 0u32..40,
        max_terrain in prop_oneof![Just(1u8), 2u8..10, Just(254u8)],
        seed in any::<u64>(),
        picks in proptest::collection::vec((any::<u64>(), 0u32..3000), 1..4),
        model in models(),
        budget in 1usize..500,
    ) {
        let cost = corridor_map(rooms.0, rooms.1, loops, max_terrain, seed);
        let cells = pick_walkable(&cost, &picks.iter().map(|p| p.0).collect::<Vec<_>>());
        let seeds: Vec<(UVec2, u32)> =
            cells.iter().zip(&picks).map(|(&c, p)| (c, p.1 * model.scale() / 10)).collect();
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        let field = b.build_seeded(&cost, &seeds, model).unwrap();
        let want = reference_values(&common::reference_seeded(&cost, &seeds, model));
        prop_assert_eq!(field.values(), &want[..]);
        let mut flow = FlowField::new(*cost.grid());
        b.flow_into(&mut flow).unwrap();
        check_flow(&cost, field.values(), &flow, model);
        // Settled: each reachable cell once, walked or expanded.
        let goals: Vec<UVec2> = cells.clone();
        let mut once = IntegrationField::new(*cost.grid(), model);
        let stats = b.build_into(&cost, &goals, model, &mut once).unwrap();
        let reachable = once.values().iter().filter(|&&v| v != UNREACHABLE).count();
        prop_assert_eq!(stats.settled, reachable);
        // Built again over the same map, the walks fork at the junctions on no loop.
        let by_goals = reference_values(&reference_dijkstra(&cost, &goals, model));
        prop_assert_eq!(once.values(), &by_goals[..]);
        b.flow_into(&mut flow).unwrap();
        check_flow(&cost, once.values(), &flow, model);
        let again = b.build_seeded(&cost, &seeds, model).unwrap();
        prop_assert_eq!(again.values(), &want[..]);
        b.flow_into(&mut flow).unwrap();
        check_flow(&cost, again.values(), &flow, model);
        b.start(&cost, &goals, model).unwrap();
        while let BuildProgress::Running { .. } = b.advance(budget).unwrap() {}
        let mut sliced = IntegrationField::new(*cost.grid(), model);
        b.finish_into(&mut sliced).unwrap();
        prop_assert_eq!(sliced.values(), once.values());
    }
}

/// `inner` set into a frame of rock `fw` × `fh` at (`ox`, `oy`): a map mostly out of reach.
fn in_rock(inner: &CostField, fw: u32, fh: u32, ox: u32, oy: u32) -> CostField {
    let mut costs = vec![WALL; (fw * fh) as usize];
    let iw = inner.width();
    for (i, &t) in inner.costs().iter().enumerate() {
        let (x, y) = (i as u32 % iw, i as u32 / iw);
        costs[((oy + y) * fw + ox + x) as usize] = t;
    }
    CostField::from_costs(horde::Grid::new(fw, fh).unwrap(), costs).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// One builder, one field and one flow field reused for build after build on maps mostly
    /// of rock, where the wave resets, copies out and derives arrows only in the blocks it
    /// touched: sweeps and waves in any order, builds abandoned half way, two map shapes with
    /// the same number of cells, either model from build to build. Every finished build equals
    /// the reference.
    #[test]
    fn reused_builders_on_maps_mostly_out_of_reach_equal_the_reference(
        inners in proptest::collection::vec(arb_map(36), 2),
        offsets in proptest::collection::vec((0u32..20, 0u32..60), 2),
        builds in proptest::collection::vec(
            (
                0usize..2,
                any::<u64>(),
                any::<bool>(),
                proptest::option::of(1usize..300),
                models(),
            ),
            1..7,
        ),
    ) {
        // 100 × 60 and 60 × 100: as many padded cells, rows of another width.
        let maps: Vec<CostField> = inners
            .iter()
            .zip(&offsets)
            .enumerate()
            .map(|(k, (inner, &(a, b)))| {
                let (fw, fh, ox, oy) = if k == 0 { (100, 60, b, a) } else { (60, 100, a, b) };
                in_rock(inner, fw, fh, ox, oy)
            })
            .collect();
        let mut builder = IntegrationBuilder::new();
        // A field per map and model, each reused from build to build.
        let both = [CostModel::TenFourteen, CostModel::Octile];
        let mut fields: Vec<Vec<IntegrationField>> = maps
            .iter()
            .map(|m| both.iter().map(|&model| IntegrationField::new(*m.grid(), model)).collect())
            .collect();
        let mut flows: Vec<FlowField> = maps.iter().map(|m| FlowField::new(*m.grid())).collect();
        for (k, pick, sweeps, abandon, model) in builds {
            let field = &mut fields[k][(model == CostModel::Octile) as usize];
            let cost = &maps[k];
            let goals = pick_walkable(cost, &[pick, pick / 7]);
            if goals.is_empty() {
                continue;
            }
            builder.set_sweeps(sweeps);
            if let Some(budget) = abandon {
                // A build left unfinished: the next one starts over its marks.
                builder.start(cost, &goals[1..], model).unwrap();
                builder.advance(budget).unwrap();
            }
            builder.build_into(cost, &goals, model, field).unwrap();
            let want = reference_values(&reference_dijkstra(cost, &goals, model));
            prop_assert_eq!(field.values(), &want[..]);
            builder.flow_into(&mut flows[k]).unwrap();
            check_flow(cost, field.values(), &flows[k], model);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// One builder building field after field over one random map, one-shot: the sweeps go
    /// along rows, then along columns (the map turned a quarter), then whichever did less work,
    /// the other again now and then; an edit between builds starts the learning over. Every
    /// build and its arrows equal the reference.
    #[test]
    fn one_shot_builds_over_one_map_either_way_equal_the_reference(
        cost in arb_map(48),
        builds in proptest::collection::vec(
            (any::<u64>(), models(), proptest::option::of(any::<u64>())),
            3..9,
        ),
    ) {
        let mut cost = cost;
        let mut builder = IntegrationBuilder::new();
        let mut field = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
        let mut flow = FlowField::new(*cost.grid());
        for (pick, model, edit) in builds {
            if let Some(e) = edit.filter(|e| e % 4 == 0) {
                let (x, y) = ((e >> 8) as u32 % cost.width(), (e >> 24) as u32 % cost.height());
                let terrain = if e >> 40 & 1 == 0 { WALL } else { 1 + (e >> 41) as u8 % 9 };
                cost.set(UVec2::new(x, y), terrain).unwrap();
            }
            let goals = pick_walkable(&cost, &[pick]);
            if goals.is_empty() {
                continue;
            }
            builder.build_into(&cost, &goals, model, &mut field).unwrap();
            let want = reference_values(&reference_dijkstra(&cost, &goals, model));
            prop_assert_eq!(field.values(), &want[..]);
            builder.flow_into(&mut flow).unwrap();
            check_flow(&cost, field.values(), &flow, model);
        }
    }
}

#[test]
fn time_sliced_calls_out_of_order_are_errors() {
    let cost = horde::maps::scattered_map(20, 20, 5).unwrap();
    let goal = pick_walkable(&cost, &[3])[0];
    let mut b = IntegrationBuilder::new();
    let mut out = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
    assert_eq!(b.advance(10), Err(horde::IntegrationError::NotFinished));
    b.start(&cost, &[goal], CostModel::TenFourteen).unwrap();
    assert!(matches!(
        b.advance(1),
        Ok(BuildProgress::Running { settled: 1 })
    ));
    assert_eq!(
        b.finish_into(&mut out),
        Err(horde::IntegrationError::NotFinished)
    );
    let mut flow = FlowField::new(*cost.grid());
    assert!(b.flow_into(&mut flow).is_err(), "no half-built flow fields");
    assert!(matches!(b.advance(usize::MAX), Ok(BuildProgress::Done(_))));
    b.finish_into(&mut out).unwrap();
    assert_eq!(
        b.finish_into(&mut out),
        Err(horde::IntegrationError::NotFinished)
    );
}

#[test]
fn fields_on_a_large_map_equal_the_reference() {
    let cost = horde::maps::scattered_map(300, 200, 99).unwrap();
    let goals = [UVec2::new(150, 100), UVec2::new(3, 190)];
    let goals: Vec<UVec2> = goals.into_iter().filter(|&g| cost.is_walkable(g)).collect();
    assert!(!goals.is_empty());
    for model in [CostModel::TenFourteen, CostModel::Octile] {
        check_fields(&cost, &goals, model);
    }
}

/// One builder reused over `cost` for `builds` (goals picked from the seeds, time-sliced or
/// one-shot, a model), the sweeps on or off: every build equals the reference, settles each
/// reachable cell once, and its arrows pass the flow checker.
fn reused_builder_equals_the_reference(
    cost: &CostField,
    sweeps: bool,
    builds: Vec<(Vec<u64>, bool, CostModel)>,
) -> Result<(), TestCaseError> {
    let mut builder = IntegrationBuilder::new();
    builder.set_sweeps(sweeps);
    let mut field = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
    let mut flow = FlowField::new(*cost.grid());
    for (picks, sliced, model) in builds {
        let goals = pick_walkable(cost, &picks);
        if goals.is_empty() {
            continue;
        }
        let stats = if sliced {
            builder.start(cost, &goals, model).unwrap();
            while let BuildProgress::Running { .. } = builder.advance(50).unwrap() {}
            builder.finish_into(&mut field).unwrap()
        } else {
            builder.build_into(cost, &goals, model, &mut field).unwrap()
        };
        let want = reference_values(&reference_dijkstra(cost, &goals, model));
        prop_assert_eq!(field.values(), &want[..]);
        let reachable = want.iter().filter(|&&v| v != UNREACHABLE).count();
        prop_assert_eq!(stats.settled, reachable);
        builder.flow_into(&mut flow).unwrap();
        check_flow(cost, field.values(), &flow, model);
    }
    Ok(())
}

/// Rooms of random sizes in a lattice, walls between them, joined by doors one to three cells
/// wide (sometimes a whole side open), in rock with corridors leading in; some rooms with a
/// pillar or costly ground inside: the maps a wave crosses room by room.
fn rooms_map(seed: u64, lattice: u32) -> CostField {
    let mut state = seed | 1;
    let mut next = move |n: u32| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as u32
    };
    let sides: Vec<(u32, u32)> = (0..lattice * lattice)
        .map(|_| (2 + next(9), 2 + next(9)))
        .collect();
    let pitch = 12;
    let side = lattice * pitch + 3;
    let mut costs = vec![WALL; (side * side) as usize];
    let w = side as usize;
    let mut set = |x: u32, y: u32, t: u8| costs[y as usize * w + x as usize] = t;
    for ry in 0..lattice {
        for rx in 0..lattice {
            let (rw, rh) = sides[(ry * lattice + rx) as usize];
            let (x0, y0) = (rx * pitch + 2, ry * pitch + 2);
            for y in y0..y0 + rh {
                for x in x0..x0 + rw {
                    set(x, y, 1);
                }
            }
            match next(6) {
                0 => set(x0 + next(rw), y0 + next(rh), WALL),
                1 => set(x0 + next(rw), y0 + next(rh), 1 + next(5) as u8),
                _ => {}
            }
            // A corridor east and one south to the next room (or to the map's edge), a door
            // one to three cells wide where it meets the room, or the whole side open.
            let (cy, cx) = (y0 + next(rh), x0 + next(rw));
            let wide = next(3);
            for x in x0 + rw..(rx + 1) * pitch + 2 {
                set(x, cy, 1);
                if x == x0 + rw {
                    for k in 0..wide.min(rh - 1) {
                        set(x, y0 + k, 1);
                    }
                }
            }
            if next(4) != 0 {
                for y in y0 + rh..(ry + 1) * pitch + 2 {
                    set(cx, y, 1);
                }
            }
            if next(8) == 0 {
                for x in x0..x0 + rw {
                    set(x, y0 - 1, 1);
                }
            }
        }
    }
    CostField::from_costs(horde::Grid::new(side, side).unwrap(), costs).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// One builder reused over a map of rooms: from the second build on, one-shot waves cross
    /// its rooms in one step and fill them afterwards. Goals in rooms, on their edges, in
    /// corridors, several at once; time-sliced builds between; either model. Every build
    /// equals the reference, and settles each reachable cell once.
    #[test]
    fn waves_that_cross_rooms_equal_the_reference(
        seed in any::<u64>(),
        lattice in 2u32..5,
        sweeps in any::<bool>(),
        builds in proptest::collection::vec(
            (proptest::collection::vec(any::<u64>(), 1..4), any::<bool>(), models()),
            2..6,
        ),
    ) {
        // With the sweeps off, rooms are crossed from the second build on; with them on, once
        // the sweeps find the map winding.
        reused_builder_equals_the_reference(&rooms_map(seed, lattice), sweeps, builds)?;
    }
}

/// Two generated dungeons side by side, a wall between: rooms joined by corridors one cell
/// wide (the chains a wave crosses in one step), in two parts that do not reach each other.
#[cfg(feature = "dungeon")]
fn two_dungeons(seed: u64, side: u32, rooms: usize) -> CostField {
    let config = horde::dungeon::DungeonConfig {
        width: side,
        height: side,
        rooms,
        ..horde::dungeon::DungeonConfig::default()
    };
    let parts = [seed, seed.wrapping_add(1)].map(|s| {
        horde::dungeon::generate(&config, s)
            .unwrap()
            .to_cost_field()
    });
    let w = 2 * side + 1;
    let mut costs = vec![WALL; (w * side) as usize];
    for (k, part) in parts.iter().enumerate() {
        for (y, row) in part.costs().chunks_exact(side as usize).enumerate() {
            let at = y * w as usize + k * (side as usize + 1);
            costs[at..at + side as usize].copy_from_slice(row);
        }
    }
    CostField::from_costs(horde::Grid::new(w, side).unwrap(), costs).unwrap()
}

#[cfg(feature = "dungeon")]
proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// One builder reused over two dungeons side by side: from the second build on (with the
    /// sweeps off; once they find the map winding, with them on), one-shot waves cross rooms
    /// and corridors in one step each and write the corridors' inner cells at the end. Goals
    /// anywhere (in a corridor, the wave goes through that corridor's cells), in one part or
    /// both, time-sliced builds between: every build equals the reference, with its arrows.
    #[test]
    fn waves_that_cross_corridors_equal_the_reference(
        seed in any::<u64>(),
        sweeps in any::<bool>(),
        builds in proptest::collection::vec(
            (proptest::collection::vec(any::<u64>(), 1..3), any::<bool>(), models()),
            2..7,
        ),
    ) {
        reused_builder_equals_the_reference(&two_dungeons(seed, 50, 7), sweeps, builds)?;
    }
}

#[cfg(feature = "dungeon")]
proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// One builder reused for seeded builds over a map of rooms or two dungeons: from the second
    /// build on, one-shot waves run over the graph of rooms' entries, corridors' ends and the
    /// cells between, seeds inside rooms handing their rooms to the fill as sources. Several
    /// seeds anywhere, with values far apart (more than a lap of the wave's buckets): every
    /// build equals the reference, and its arrows pass the flow checker.
    #[test]
    fn seeded_waves_over_rooms_and_corridors_equal_the_reference(
        seed in any::<u64>(),
        dungeon in any::<bool>(),
        builds in proptest::collection::vec(
            (proptest::collection::vec((any::<u64>(), 0u32..5000), 1..6), models()),
            2..5,
        ),
    ) {
        let cost = if dungeon { two_dungeons(seed, 50, 7) } else { rooms_map(seed, 3) };
        let mut builder = IntegrationBuilder::new();
        builder.set_sweeps(false);
        let mut flow = FlowField::new(*cost.grid());
        for (picks, model) in builds {
            let cells = pick_walkable(&cost, &picks.iter().map(|p| p.0).collect::<Vec<_>>());
            let seeds: Vec<(UVec2, u32)> = cells
                .iter()
                .zip(&picks)
                .map(|(&c, p)| (c, p.1 * model.scale() / 10))
                .collect();
            let got = builder.build_seeded(&cost, &seeds, model).unwrap();
            let want = reference_values(&common::reference_seeded(&cost, &seeds, model));
            prop_assert_eq!(got.values(), &want[..]);
            builder.flow_into(&mut flow).unwrap();
            check_flow(&cost, got.values(), &flow, model);
        }
    }
}
