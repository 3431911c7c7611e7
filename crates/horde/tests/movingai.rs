//! External truth: the Moving AI benchmark's published optimal lengths (octile, no corner
//! cutting) against A* and against the integration field built from each scenario's goal.
//! The default tier samples every map; `--ignored` runs every scenario of every map.

mod common;

use common::{MOVINGAI_MAPS, movingai_dir};
use glam::UVec2;
use horde::io::{read_map, read_scen};
use horde::{AStar, CostModel, IntegrationBuilder, IntegrationField};

/// Check every `stride`-th scenario of a map with A*; returns (checked, worst error).
fn astar_on(name: &str, stride: usize) -> (usize, f64) {
    let dir = movingai_dir();
    let cost = read_map(dir.join(format!("{name}.map"))).unwrap();
    let scen = read_scen(dir.join(format!("{name}.map.scen"))).unwrap();
    assert!(!scen.is_empty());
    let model = CostModel::Octile;
    let mut astar = AStar::new();
    let mut worst: f64 = 0.0;
    let mut checked = 0;
    for s in scen.iter().step_by(stride) {
        assert_eq!(s.map_size, (cost.width(), cost.height()), "line {}", s.line);
        let from = UVec2::new(s.start.0, s.start.1);
        let to = UVec2::new(s.goal.0, s.goal.1);
        let raw = astar
            .search(&cost, from, to, model)
            .unwrap()
            .expect("a path");
        let err = (model.to_cost(raw) - s.optimal).abs();
        assert!(
            err <= s.tolerance(),
            "{name} line {}: A* cost {} vs optimal {} (tolerance {})",
            s.line,
            model.to_cost(raw),
            s.optimal,
            s.tolerance()
        );
        worst = worst.max(err);
        checked += 1;
    }
    (checked, worst)
}

#[test]
fn astar_matches_a_large_sample_of_every_map() {
    let mut total = 0;
    for name in MOVINGAI_MAPS {
        // About 300 queries per map, longest buckets included (the stride walks the whole file).
        let n = read_scen(movingai_dir().join(format!("{name}.map.scen")))
            .unwrap()
            .len();
        let (checked, worst) = astar_on(name, (n / 300).max(1));
        eprintln!("{name}: {checked} queries, max error {worst:.2e}");
        total += checked;
    }
    assert!(total >= 3000);
}

#[test]
fn integration_fields_give_the_optimal_length_at_the_start() {
    let dir = movingai_dir();
    let model = CostModel::Octile;
    let mut builder = IntegrationBuilder::new();
    for name in MOVINGAI_MAPS {
        let cost = read_map(dir.join(format!("{name}.map"))).unwrap();
        let scen = read_scen(dir.join(format!("{name}.map.scen"))).unwrap();
        let mut field = IntegrationField::new(*cost.grid(), model);
        // Large maps get fewer fields, each checked against every scenario sharing its goal.
        let per_map = if cost.grid().len() > 200_000 {
            100
        } else {
            250
        };
        let stride = (scen.len() / per_map).max(1);
        let mut checked = 0;
        for s in scen.iter().step_by(stride) {
            let goal = UVec2::new(s.goal.0, s.goal.1);
            builder
                .build_into(&cost, &[goal], model, &mut field)
                .unwrap();
            let got = field
                .cost(UVec2::new(s.start.0, s.start.1))
                .expect("reachable");
            assert!(
                (got - s.optimal).abs() <= s.tolerance(),
                "{name} line {}: field gives {got}, optimal {}",
                s.line,
                s.optimal
            );
            checked += 1;
        }
        eprintln!("{name}: {checked} fields");
    }
}

#[test]
#[ignore = "every scenario of every map: run with --ignored (about three minutes in release)"]
fn astar_matches_every_scenario() {
    for name in MOVINGAI_MAPS {
        let (checked, worst) = astar_on(name, 1);
        eprintln!("{name}: {checked} queries, max error {worst:.2e}");
    }
}
