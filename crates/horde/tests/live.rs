//! Property tests for living maps: after every random edit (cells and rectangles, walls and
//! terrain, placed and removed) and every goal move, the repaired fields equal a fresh build
//! exactly — integration values against the plain reference Dijkstra, arrows against the flow
//! derived from a fresh field.

mod common;

use common::{arb_map, pick_walkable, reference_dijkstra};
use glam::UVec2;
use horde::{
    CostEdit, CostField, CostModel, FieldCache, FieldRepairer, FieldRequest, FlowField,
    IntegrationBuilder, LiveField, SizeClass, UNREACHABLE, WALL,
};
use proptest::prelude::*;

fn models() -> impl Strategy<Value = CostModel> {
    prop_oneof![Just(CostModel::TenFourteen), Just(CostModel::Octile)]
}

/// A raw edit: corners picked by random numbers, and a cost (walls and plain ground often, so
/// that walls go up and come down again).
fn arb_edit() -> impl Strategy<Value = (u64, u64, u8, bool)> {
    (
        any::<u64>(),
        any::<u64>(),
        prop_oneof![Just(WALL), Just(1u8), 2u8..=254],
        any::<bool>(),
    )
}

fn to_edit(cost: &CostField, (a, b, c, rect): (u64, u64, u8, bool)) -> CostEdit {
    let (w, h) = (cost.width() as u64, cost.height() as u64);
    let p = UVec2::new((a % w) as u32, ((a >> 32) % h) as u32);
    if !rect {
        return CostEdit::Cell { cell: p, cost: c };
    }
    // Rectangles up to 5 × 5, like buildings.
    let q = UVec2::new(
        (p.x as u64 + b % 5).min(w - 1) as u32,
        (p.y as u64 + (b >> 8) % 5).min(h - 1) as u32,
    );
    CostEdit::Rect {
        min: p,
        max: q,
        cost: c,
    }
}

/// The field must equal a fresh build for the goals that are walkable now.
fn assert_fresh(cost: &CostField, goals: &[UVec2], model: CostModel, field: &LiveField) {
    let active: Vec<UVec2> = goals
        .iter()
        .copied()
        .filter(|&g| cost.is_walkable(g))
        .collect();
    let want: Vec<u32> = if active.is_empty() {
        vec![UNREACHABLE; cost.grid().len()]
    } else {
        reference_dijkstra(cost, &active, model)
            .iter()
            .map(|v| v.map_or(UNREACHABLE, |v| v as u32))
            .collect()
    };
    assert_eq!(field.integration().values(), &want[..], "values");
    let fresh_flow = FlowField::from_integration(cost, field.integration()).unwrap();
    assert_eq!(field.flow(), &fresh_flow, "arrows");
    if !active.is_empty() {
        let mut b = IntegrationBuilder::new();
        let fresh = b.build(cost, &active, model).unwrap();
        let mut flow = FlowField::new(*cost.grid());
        b.flow_into(&mut flow).unwrap();
        assert_eq!(field.flow(), &flow, "arrows vs the builder's");
        assert_eq!(field.integration(), &fresh);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn repaired_fields_equal_a_fresh_build(
        cost in arb_map(28),
        model in models(),
        picks in proptest::collection::vec(any::<u64>(), 1..4),
        edits in proptest::collection::vec(arb_edit(), 1..10),
        batch in 1usize..4,
        fall_back in any::<bool>(),
    ) {
        let goals = pick_walkable(&cost, &picks);
        prop_assume!(!goals.is_empty());
        let mut cost = cost;
        let mut rep = FieldRepairer::new();
        // Without the fall-back every repair runs the incremental path, whatever its size.
        rep.set_rebuild_divisor(if fall_back { 16 } else { 0 });
        let mut field = LiveField::build(&cost, &goals, model, &mut rep).unwrap();
        for chunk in edits.chunks(batch) {
            let chunk: Vec<CostEdit> = chunk.iter().map(|&e| to_edit(&cost, e)).collect();
            let changed = cost.apply_edits(&chunk).unwrap();
            let stats = field.repair(&cost, &changed, &mut rep).unwrap();
            if !fall_back {
                prop_assert!(!stats.rebuilt);
            }
            assert_fresh(&cost, &goals, model, &field);
        }
    }

    #[test]
    fn moved_goals_equal_a_fresh_build(
        cost in arb_map(28),
        model in models(),
        moves in proptest::collection::vec((any::<u64>(), 0u8..9, any::<bool>()), 1..8),
        fall_back in any::<bool>(),
    ) {
        let start = pick_walkable(&cost, &[moves[0].0]);
        prop_assume!(!start.is_empty());
        let mut rep = FieldRepairer::new();
        rep.set_rebuild_divisor(if fall_back { 16 } else { 0 });
        let mut goals = start;
        let mut field = LiveField::build(&cost, &goals, model, &mut rep).unwrap();
        for &(pick, step, jump) in &moves {
            // A chased target steps to an adjacent cell, or the flag is moved anywhere.
            let next = if jump {
                pick_walkable(&cost, &[pick])[0]
            } else {
                let g = goals[0];
                let dx = step as i64 % 3 - 1;
                let dy = step as i64 / 3 - 1;
                let (x, y) = (g.x as i64 + dx, g.y as i64 + dy);
                if !cost.grid().contains(x, y) || !cost.is_walkable(UVec2::new(x as u32, y as u32)) {
                    continue;
                }
                UVec2::new(x as u32, y as u32)
            };
            goals = if pick % 4 == 0 { vec![next, goals[0]] } else { vec![next] };
            field.move_goals(&cost, &goals, &mut rep).unwrap();
            assert_fresh(&cost, &goals, model, &field);
        }
    }

    #[test]
    fn cached_fields_of_every_size_class_stay_fresh(
        cost in arb_map(24),
        picks in proptest::collection::vec(any::<u64>(), 1..4),
        edits in proptest::collection::vec(arb_edit(), 1..6),
    ) {
        let goals = pick_walkable(&cost, &picks);
        prop_assume!(!goals.is_empty());
        let model = CostModel::TenFourteen;
        let mut cache = FieldCache::new(cost.clone(), model, usize::MAX);
        let big = cache.add_size_class(0.8).unwrap();
        let mut keys = Vec::new();
        for &g in &goals {
            keys.push(cache.request(g, SizeClass(0)).unwrap());
            if cache.class_map(big).unwrap().is_walkable(g) {
                keys.push(cache.request(g, big).unwrap());
            }
        }
        let mut map = cost;
        for &e in &edits {
            let edit = to_edit(&map, e);
            map.apply_edits(&[edit]).unwrap();
            cache.apply_edits(&[edit]).unwrap();
            prop_assert_eq!(cache.map(), &map);
            let inflated = map.inflated(0.8).unwrap();
            prop_assert_eq!(cache.class_map(big).unwrap(), &inflated);
            for &k in &keys {
                let class_map = if k.class == big { &inflated } else { &map };
                assert_fresh(class_map, &[k.goal], model, cache.field(k).unwrap());
            }
        }
    }

    /// Builds spread over frames, with edits landing between slices and goals switching, give
    /// the same fields as builds in one go; a slice that does not finish uses up its budget.
    #[test]
    fn sliced_cache_builds_equal_whole_ones_through_edits(
        cost in arb_map(24),
        picks in proptest::collection::vec(any::<u64>(), 1..4),
        edits in proptest::collection::vec(arb_edit(), 0..4),
        budget in 1usize..200,
    ) {
        let goals = pick_walkable(&cost, &picks);
        prop_assume!(!goals.is_empty());
        let model = CostModel::TenFourteen;
        let mut cache = FieldCache::new(cost.clone(), model, usize::MAX);
        let mut map = cost;
        let mut edits = edits.into_iter();
        for &g in &goals {
            let mut frames = 0;
            let key = loop {
                frames += 1;
                prop_assert!(frames < 10_000, "a sliced build never ends");
                let mut left = budget;
                match cache.request_within(g, SizeClass(0), &mut left) {
                    Ok(FieldRequest::Ready(key)) => break Some(key),
                    Ok(FieldRequest::Building { .. }) => prop_assert_eq!(left, 0),
                    // An edit walled the goal in: refused, as a whole build would be.
                    Err(_) => {
                        prop_assert!(!map.is_walkable(g));
                        break None;
                    }
                }
                // Now and then an edit lands between two slices: the build starts over.
                if frames % 3 == 1
                    && let Some(e) = edits.next()
                {
                    let edit = to_edit(&map, e);
                    map.apply_edits(&[edit]).unwrap();
                    cache.apply_edits(&[edit]).unwrap();
                }
            };
            if let Some(key) = key {
                assert_fresh(&map, &[g], model, cache.field(key).unwrap());
                // Asked again, it is a hit and costs nothing.
                let mut left = budget;
                prop_assert_eq!(
                    cache.request_within(g, SizeClass(0), &mut left).unwrap(),
                    FieldRequest::Ready(key)
                );
                prop_assert_eq!(left, budget);
            }
        }
        let mut left = budget;
        prop_assert!(cache.request_within(goals[0], SizeClass(9), &mut left).is_err());
    }
}

#[test]
fn a_building_in_open_ground_repairs_only_its_shadow() {
    let mut cost = CostField::new(horde::Grid::new(200, 200).unwrap());
    let mut rep = FieldRepairer::new();
    let goal = UVec2::new(10, 100);
    let mut field = LiveField::build(&cost, &[goal], CostModel::TenFourteen, &mut rep).unwrap();
    let building = [CostEdit::Rect {
        min: UVec2::new(100, 98),
        max: UVec2::new(103, 101),
        cost: WALL,
    }];
    let changed = cost.apply_edits(&building).unwrap();
    assert_eq!(changed.len(), 16);
    let stats = field.repair(&cost, &changed, &mut rep).unwrap();
    assert!(!stats.rebuilt);
    // The cells behind the building (away from the goal) change; nothing in front of it does.
    assert!(
        stats.relabelled > 0 && stats.relabelled < 200 * 200 / 20,
        "{stats:?}"
    );
    assert_fresh(&cost, &[goal], CostModel::TenFourteen, &field);
    // Taking it down again restores the open-ground field exactly.
    let removal = [CostEdit::Rect {
        min: UVec2::new(100, 98),
        max: UVec2::new(103, 101),
        cost: 1,
    }];
    let changed = cost.apply_edits(&removal).unwrap();
    field.repair(&cost, &changed, &mut rep).unwrap();
    let open = LiveField::build(&cost, &[goal], CostModel::TenFourteen, &mut rep).unwrap();
    assert_eq!(field, open);
}

#[test]
fn a_walled_in_goal_leads_nowhere_until_it_is_opened() {
    let mut cost = CostField::new(horde::Grid::new(8, 8).unwrap());
    let mut rep = FieldRepairer::new();
    let goal = UVec2::new(4, 4);
    let mut field = LiveField::build(&cost, &[goal], CostModel::Octile, &mut rep).unwrap();
    let on = cost
        .apply_edits(&[CostEdit::Cell {
            cell: goal,
            cost: WALL,
        }])
        .unwrap();
    field.repair(&cost, &on, &mut rep).unwrap();
    assert!(
        field
            .integration()
            .values()
            .iter()
            .all(|&v| v == UNREACHABLE)
    );
    let off = cost
        .apply_edits(&[CostEdit::Cell {
            cell: goal,
            cost: 3,
        }])
        .unwrap();
    field.repair(&cost, &off, &mut rep).unwrap();
    assert_fresh(&cost, &[goal], CostModel::Octile, &field);
}

#[test]
fn terrain_changed_on_a_goal_cell_invalidates_nothing() {
    // The goal keeps 0 and every step is priced by the cell it leaves: no value changes.
    let mut cost = CostField::new(horde::Grid::new(40, 30).unwrap());
    let goal = UVec2::new(20, 15);
    let mut rep = FieldRepairer::new();
    let mut field = LiveField::build(&cost, &[goal], CostModel::Octile, &mut rep).unwrap();
    let changed = cost
        .apply_edits(&[CostEdit::Cell {
            cell: goal,
            cost: 3,
        }])
        .unwrap();
    let stats = field.repair(&cost, &changed, &mut rep).unwrap();
    assert!(!stats.rebuilt);
    assert_eq!(stats.invalidated, 0, "{stats:?}");
    // The goal and the eight cells around it were checked, and each kept its value.
    assert_eq!(stats.checked, 9, "{stats:?}");
    assert_fresh(&cost, &[goal], CostModel::Octile, &field);
}

#[test]
fn moving_goals_repairs_while_one_stays_and_rebuilds_when_none_does() {
    let cost = horde::maps::demo_map();
    let (a, b, c, d) = (
        UVec2::new(64, 64),
        UVec2::new(20, 20),
        UVec2::new(100, 100),
        UVec2::new(30, 90),
    );
    let mut rep = FieldRepairer::new();
    // No fall-back for size: only losing every goal sends the move to a rebuild.
    rep.set_rebuild_divisor(0);
    let mut field = LiveField::build(&cost, &[a, b], CostModel::TenFourteen, &mut rep).unwrap();
    let stats = field.move_goals(&cost, &[a, c], &mut rep).unwrap();
    assert!(!stats.rebuilt, "a stays: {stats:?}");
    assert_fresh(&cost, &[a, c], CostModel::TenFourteen, &field);
    let stats = field.move_goals(&cost, &[d], &mut rep).unwrap();
    assert!(stats.rebuilt, "none stays: {stats:?}");
    assert_fresh(&cost, &[d], CostModel::TenFourteen, &field);
}

#[test]
fn repairs_refuse_a_cost_field_of_another_size() {
    let cost = CostField::new(horde::Grid::new(20, 10).unwrap());
    let other = CostField::new(horde::Grid::new(10, 20).unwrap());
    let goal = UVec2::new(1, 1);
    let mut rep = FieldRepairer::new();
    let mut field = LiveField::build(&cost, &[goal], CostModel::Octile, &mut rep).unwrap();
    let before = field.integration().clone();
    assert!(matches!(
        field.repair(&other, &[goal], &mut rep),
        Err(horde::LiveError::SizeMismatch(_))
    ));
    assert!(matches!(
        field.move_goals(&other, &[UVec2::new(2, 2)], &mut rep),
        Err(horde::LiveError::SizeMismatch(_))
    ));
    assert_eq!(field.integration(), &before, "left as it was");
}

#[test]
fn a_repair_past_the_largest_value_reports_an_overflow() {
    // A corridor of the dearest swamp in the octile model passes 2^32 raw units after about
    // 1,220 cells; a wall at 1,000 keeps the built field in range until it is taken down.
    let mut cost = CostField::new(horde::Grid::new(2000, 1).unwrap());
    cost.fill_rect(UVec2::ZERO, UVec2::new(1999, 0), 254)
        .unwrap();
    cost.set(UVec2::new(1000, 0), WALL).unwrap();
    let goal = UVec2::ZERO;
    let mut rep = FieldRepairer::new();
    let mut field = LiveField::build(&cost, &[goal], CostModel::Octile, &mut rep).unwrap();
    assert!(field.integration().get(UVec2::new(999, 0)).is_some());
    // Cheaper ground on the way lowers values up to about 3.5 × 10^9: in range, repaired.
    let changed = cost
        .apply_edits(&[CostEdit::Cell {
            cell: UVec2::new(500, 0),
            cost: 200,
        }])
        .unwrap();
    field.repair(&cost, &changed, &mut rep).unwrap();
    assert_fresh(&cost, &[goal], CostModel::Octile, &field);
    let changed = cost
        .apply_edits(&[CostEdit::Cell {
            cell: UVec2::new(1000, 0),
            cost: 254,
        }])
        .unwrap();
    // Cell 1,219 is the first past the largest value a field holds.
    let overflow = horde::IntegrationError::Overflow {
        x: 1219,
        y: 0,
        limit: UNREACHABLE - 1,
    };
    let r = field.repair(&cost, &changed, &mut rep);
    assert!(
        matches!(&r, Err(horde::LiveError::Integration(e)) if *e == overflow),
        "{r:?}"
    );
    assert!(
        field
            .integration()
            .values()
            .iter()
            .all(|&v| v == UNREACHABLE),
        "every cell left unreachable"
    );
    // The same when the cell past the limit is the edited one itself, at the corridor's end.
    let mut cost = CostField::new(horde::Grid::new(1220, 1).unwrap());
    cost.fill_rect(UVec2::ZERO, UVec2::new(1219, 0), 254)
        .unwrap();
    cost.set(UVec2::new(1219, 0), WALL).unwrap();
    let mut field = LiveField::build(&cost, &[goal], CostModel::Octile, &mut rep).unwrap();
    let changed = cost
        .apply_edits(&[CostEdit::Cell {
            cell: UVec2::new(1219, 0),
            cost: 254,
        }])
        .unwrap();
    let r = field.repair(&cost, &changed, &mut rep);
    assert!(
        matches!(&r, Err(horde::LiveError::Integration(e)) if *e == overflow),
        "{r:?}"
    );
}

#[test]
fn the_cache_reports_repairs_that_fell_back_to_a_rebuild() {
    let map = CostField::new(horde::Grid::new(100, 100).unwrap());
    let mut cache = FieldCache::new(map, CostModel::TenFourteen, usize::MAX);
    cache.request(UVec2::new(0, 50), SizeClass(0)).unwrap();
    cache.request(UVec2::new(99, 50), SizeClass(0)).unwrap();
    // A wall next to the first goal sends nearly every cell round it; the far goal's field
    // changes only near the wall.
    let report = cache
        .apply_edits(&[CostEdit::Rect {
            min: UVec2::new(2, 1),
            max: UVec2::new(2, 99),
            cost: WALL,
        }])
        .unwrap();
    assert_eq!((report.repaired, report.rebuilt), (2, 1), "{report:?}");
}

#[test]
fn an_edit_that_changes_most_of_the_map_falls_back_to_a_rebuild() {
    // A wall across the map, next to the goal: nearly every cell's way goes round it now.
    let mut cost = CostField::new(horde::Grid::new(100, 100).unwrap());
    let goal = UVec2::new(0, 50);
    let mut rep = FieldRepairer::new();
    let mut field = LiveField::build(&cost, &[goal], CostModel::TenFourteen, &mut rep).unwrap();
    let changed = cost
        .apply_edits(&[CostEdit::Rect {
            min: UVec2::new(2, 1),
            max: UVec2::new(2, 99),
            cost: WALL,
        }])
        .unwrap();
    let stats = field.repair(&cost, &changed, &mut rep).unwrap();
    assert!(stats.rebuilt, "{stats:?}");
    assert_fresh(&cost, &[goal], CostModel::TenFourteen, &field);
}

#[test]
fn field_keys_order_by_class_then_row_then_column() {
    let key = |class: u8, x: u32, y: u32| horde::FieldKey {
        goal: UVec2::new(x, y),
        class: SizeClass(class),
    };
    let sorted = [
        key(0, 5, 0),
        key(0, 0, 1),
        key(0, 3, 1),
        key(1, 0, 0),
        key(2, 9, 9),
    ];
    for (i, a) in sorted.iter().enumerate() {
        for (j, b) in sorted.iter().enumerate() {
            assert_eq!(a.partial_cmp(b), Some(i.cmp(&j)), "{a:?} {b:?}");
            assert_eq!(a < b, i < j);
        }
    }
}

#[test]
fn a_cache_holds_255_size_classes_and_refuses_the_next() {
    let mut cache = FieldCache::new(
        CostField::new(horde::Grid::new(4, 4).unwrap()),
        CostModel::TenFourteen,
        usize::MAX,
    );
    for id in 1..=255u8 {
        assert_eq!(cache.add_size_class(0.0).unwrap(), SizeClass(id));
    }
    assert!(matches!(
        cache.add_size_class(0.0),
        Err(horde::LiveError::UnknownClass(255))
    ));
}

#[test]
fn sliced_requests_count_hits_and_evict_the_least_recently_used() {
    let map = horde::maps::demo_map();
    let one = map.grid().len() * 5 + 12;
    let mut cache = FieldCache::new(map, CostModel::Octile, 3 * one);
    assert_eq!(cache.model(), CostModel::Octile);
    assert!(cache.is_empty());
    assert_eq!(cache.memory_bytes(), 0);
    let goals = [
        UVec2::new(64, 64),
        UVec2::new(20, 20),
        UVec2::new(100, 100),
        UVec2::new(30, 90),
    ];
    let ask = |cache: &mut FieldCache, g: UVec2| {
        let mut budget = usize::MAX;
        match cache.request_within(g, SizeClass(0), &mut budget).unwrap() {
            FieldRequest::Ready(key) => key,
            other => panic!("{other:?}"),
        }
    };
    let keys: Vec<_> = goals[..3].iter().map(|&g| ask(&mut cache, g)).collect();
    assert!(!cache.is_empty());
    assert_eq!(cache.len(), 3);
    assert_eq!(cache.memory_bytes(), 3 * one);
    // The first and the last are used again; the middle one is then the least recent, whichever
    // way ties would break.
    ask(&mut cache, goals[0]);
    ask(&mut cache, goals[2]);
    assert_eq!(cache.stats().hits, 2);
    ask(&mut cache, goals[3]);
    assert_eq!(cache.stats().evictions, 1);
    assert!(
        cache.flow(keys[1]).is_none(),
        "the middle one was least recently used"
    );
    assert!(cache.flow(keys[0]).is_some() && cache.flow(keys[2]).is_some());
    assert_eq!(cache.stats().builds, 4);
    // Dropping one field by hand: only that one, once.
    assert!(cache.evict(keys[0]));
    assert!(!cache.evict(keys[0]), "already gone");
    assert!(cache.flow(keys[0]).is_none() && cache.flow(keys[2]).is_some());
    assert_eq!(cache.len(), 2);
}

#[test]
fn a_live_field_keeps_its_goals_and_counts_its_bytes() {
    let cost = horde::maps::demo_map();
    let goals = [UVec2::new(64, 64), UVec2::new(20, 20), UVec2::new(100, 100)];
    let mut rep = FieldRepairer::new();
    for n in 1..=goals.len() {
        let field = LiveField::build(&cost, &goals[..n], CostModel::Octile, &mut rep).unwrap();
        assert_eq!(field.goals(), &goals[..n]);
        // 4 bytes of value and 1 of arrow per cell, 12 per goal (its cell and its index).
        assert_eq!(field.memory_bytes(), cost.grid().len() * 5 + n * 12);
    }
}

#[test]
fn the_cache_evicts_the_least_recently_used_field() {
    let map = horde::maps::demo_map();
    let one = map.grid().len() * 5 + 12;
    let mut cache = FieldCache::new(map, CostModel::TenFourteen, 2 * one);
    let goals = [UVec2::new(64, 64), UVec2::new(20, 20), UVec2::new(100, 100)];
    for g in goals {
        assert!(cache.map().is_walkable(g));
    }
    let a = cache.request(goals[0], SizeClass(0)).unwrap();
    let b = cache.request(goals[1], SizeClass(0)).unwrap();
    cache.request(goals[0], SizeClass(0)).unwrap(); // a is now the more recent
    let c = cache.request(goals[2], SizeClass(0)).unwrap();
    assert_eq!(cache.len(), 2);
    assert!(cache.flow(a).is_some() && cache.flow(c).is_some());
    assert!(cache.flow(b).is_none(), "b was least recently used");
    assert_eq!(cache.stats().evictions, 1);
    assert_eq!(cache.stats().hits, 1);
    assert!(cache.memory_bytes() <= 2 * one);
    assert!(cache.request(goals[0], SizeClass(9)).is_err());
}

#[test]
fn the_cache_reports_what_an_edit_changed_and_repaired() {
    let map = horde::maps::demo_map();
    let mut cache = FieldCache::new(map, CostModel::TenFourteen, usize::MAX);
    cache.request(UVec2::new(64, 64), SizeClass(0)).unwrap();
    cache.request(UVec2::new(20, 20), SizeClass(0)).unwrap();
    let (min, max) = (UVec2::new(70, 70), UVec2::new(73, 73));
    let open = (70..=73)
        .flat_map(|y| (70..=73).map(move |x| UVec2::new(x, y)))
        .filter(|&c| cache.map().is_walkable(c))
        .count();
    assert!(open > 0);
    let wall = CostEdit::Rect {
        min,
        max,
        cost: WALL,
    };
    let report = cache.apply_edits(&[wall]).unwrap();
    assert_eq!(report.changed_cells, open);
    assert_eq!(report.repaired, 2);
    // The same edit again changes nothing and repairs nothing.
    let report = cache.apply_edits(&[wall]).unwrap();
    assert_eq!(report.changed_cells, 0);
    assert_eq!(report.repaired, 0);
}

#[test]
fn the_repairers_builder_keeps_its_state_between_calls() {
    let cost = horde::maps::demo_map();
    let mut rep = FieldRepairer::new();
    assert!(!rep.builder().has_field());
    rep.builder()
        .build(&cost, &[UVec2::new(64, 64)], CostModel::TenFourteen)
        .unwrap();
    // The getter hands out the repairer's own builder, so the build is still there.
    assert!(rep.builder().has_field());
}
