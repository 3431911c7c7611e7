use glam::UVec2;

use super::*;
use crate::io::parse_map;

fn map(rows: &[&str]) -> CostField {
    let text = format!(
        "type octile\nheight {}\nwidth {}\nmap\n{}\n",
        rows.len(),
        rows[0].len(),
        rows.join("\n")
    );
    parse_map(text.as_bytes(), "test.map").unwrap()
}

#[test]
fn sides_outside_the_range_are_refused() {
    let cost = map(&["........"]);
    for side in [0, 7, 257, u32::MAX] {
        assert_eq!(
            SectorGraph::build(&cost, side, CostModel::Octile),
            Err(SectorError::BadSide(side))
        );
    }
    assert!(SectorGraph::build(&cost, 8, CostModel::Octile).is_ok());
}

#[test]
fn a_long_open_border_has_a_crossing_at_each_end_and_a_short_one_in_its_middle() {
    // 16 x 16, two sectors side by side: the whole border open (a run of 16) gives the two end
    // pairs; with a wall leaving a 3-cell door, the door's middle pair.
    let row = ".".repeat(16);
    let open = map(&[row.as_str(); 8]);
    let g = SectorGraph::build(&open, 8, CostModel::TenFourteen).unwrap();
    assert_eq!(g.sectors(), (2, 1));
    let cells: Vec<UVec2> = (0..g.node_count()).map(|n| g.node_cell(n)).collect();
    assert_eq!(
        cells,
        [
            UVec2::new(7, 0),
            UVec2::new(7, 7),
            UVec2::new(8, 0),
            UVec2::new(8, 7)
        ]
    );
    // Each node: the other node of its sector (straight down the border: 7 steps) and its
    // partner across the border (one step).
    let mut from_first: Vec<(usize, u64)> = g.edges(0).collect();
    from_first.sort_unstable();
    assert_eq!(from_first, [(1, 70), (2, 10)]);

    let mut rows = vec![String::from("................"); 8];
    for (y, row) in rows.iter_mut().enumerate() {
        if !(2..5).contains(&y) {
            row.replace_range(8..9, "@");
        }
    }
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let door = map(&rows);
    let g = SectorGraph::build(&door, 8, CostModel::TenFourteen).unwrap();
    let cells: Vec<UVec2> = (0..g.node_count()).map(|n| g.node_cell(n)).collect();
    assert_eq!(cells, [UVec2::new(7, 3), UVec2::new(8, 3)]);
}

#[test]
fn terrain_is_priced_from_the_cell_stepped_from() {
    // One row of two sectors; the start cell is swamp (cost 5).
    let cost = map(&[".....5.........."]);
    let g = SectorGraph::build(&cost, 8, CostModel::TenFourteen).unwrap();
    let mut route = RouteSearch::new();
    let east = route
        .route(&g, &cost, UVec2::new(5, 0), UVec2::new(9, 0))
        .unwrap()
        .unwrap();
    // 5 -> 6 (swamp: 50), then 6 -> 7 -> 8 -> 9 (plain: 10 each).
    assert_eq!(east.cost, 80);
    let west = route
        .route(&g, &cost, UVec2::new(9, 0), UVec2::new(5, 0))
        .unwrap()
        .unwrap();
    // 9 -> 8 -> 7 -> 6 -> 5, every step from plain ground.
    assert_eq!(west.cost, 40);
    assert_eq!(east.sectors, [0, 1]);
    assert_eq!(west.sectors, [1, 0]);
}

#[test]
fn walled_off_parts_get_other_labels_and_no_route() {
    let cost = map(&[
        "........@.......",
        "........@.......",
        "@@@@@@@@@.......",
        "................",
    ]);
    let g = SectorGraph::build(&cost, 8, CostModel::Octile).unwrap();
    let room = g.region(UVec2::new(0, 0)).unwrap();
    assert_ne!(Some(room), g.region(UVec2::new(0, 3)));
    assert_eq!(g.region(UVec2::new(0, 3)), g.region(UVec2::new(15, 0)));
    assert_eq!(g.region(UVec2::new(8, 0)), None);
    let mut search = RouteSearch::new();
    assert_eq!(
        search.route(&g, &cost, UVec2::new(0, 0), UVec2::new(0, 3)),
        Ok(None)
    );
    assert_eq!(
        search.route(&g, &cost, UVec2::new(8, 0), UVec2::new(0, 3)),
        Err(SectorError::OnWall {
            what: "start",
            x: 8,
            y: 0
        })
    );
    assert!(matches!(
        search.route(&g, &cost, UVec2::new(0, 0), UVec2::new(16, 0)),
        Err(SectorError::Outside { what: "goal", .. })
    ));
    let other = map(&["........"]);
    assert!(matches!(
        search.route(&g, &other, UVec2::new(0, 0), UVec2::new(1, 0)),
        Err(SectorError::SizeMismatch(_))
    ));
}

#[test]
fn a_route_leaves_a_sector_and_comes_back_when_that_is_the_way() {
    // The start and the goal are in one sector but walled apart inside it: the route goes
    // round through the sector below.
    let cost = map(&[
        "...@....", "...@....", "...@....", "...@....", "...@....", "...@....", "...@....",
        "...@....", "........",
    ]);
    let g = SectorGraph::build(&cost, 8, CostModel::TenFourteen).unwrap();
    let route = RouteSearch::new()
        .route(&g, &cost, UVec2::new(0, 0), UVec2::new(7, 0))
        .unwrap()
        .unwrap();
    assert_eq!(route.sectors, [0, 1, 0]);
    let best = crate::AStar::new()
        .search(
            &cost,
            UVec2::new(0, 0),
            UVec2::new(7, 0),
            CostModel::TenFourteen,
        )
        .unwrap()
        .unwrap();
    assert!(route.cost >= best as u64);
}

#[test]
fn edits_split_and_join_regions_and_say_so() {
    // 32 x 16 open ground: sectors of 8, four across and two down.
    let mut cost = map(&["................................"; 16]);
    let mut g = SectorGraph::build(&cost, 8, CostModel::Octile).unwrap();
    assert_eq!(g.region_count(), 1);
    // A wall in one sector: no region changes, and the labels are mended without a relabel.
    let block = (UVec2::new(2, 2), UVec2::new(4, 4));
    cost.fill_rect(block.0, block.1, WALL).unwrap();
    let update = g.update(&cost, &[block]).unwrap();
    assert!(!update.regions_changed);
    assert_eq!(g.region_count(), 1);
    // A wall across the map: two regions.
    let cut = (UVec2::new(12, 0), UVec2::new(12, 15));
    cost.fill_rect(cut.0, cut.1, WALL).unwrap();
    let update = g.update(&cost, &[cut]).unwrap();
    assert!(update.regions_changed);
    assert_eq!(g.region_count(), 2);
    assert_ne!(g.region(UVec2::new(0, 0)), g.region(UVec2::new(31, 0)));
    // A room walled in on the right: three; then opened to the left: two again.
    let room = [
        (UVec2::new(20, 4), UVec2::new(28, 4)),
        (UVec2::new(20, 12), UVec2::new(28, 12)),
        (UVec2::new(20, 4), UVec2::new(20, 12)),
        (UVec2::new(28, 4), UVec2::new(28, 12)),
    ];
    for r in room {
        cost.fill_rect(r.0, r.1, WALL).unwrap();
    }
    let update = g.update(&cost, &room).unwrap();
    assert!(update.regions_changed);
    assert_eq!(g.region_count(), 3);
    let door = (UVec2::new(12, 8), UVec2::new(12, 8));
    cost.fill_rect(door.0, door.1, 1).unwrap();
    let update = g.update(&cost, &[door]).unwrap();
    assert!(update.regions_changed);
    assert_eq!(g.region_count(), 2);
    assert_eq!(g.region(UVec2::new(0, 0)), g.region(UVec2::new(31, 0)));
    assert_ne!(g.region(UVec2::new(0, 0)), g.region(UVec2::new(24, 8)));
    assert_eq!(g, SectorGraph::build(&cost, 8, CostModel::Octile).unwrap());
}

#[test]
fn tiny_and_degenerate_maps_build_route_and_take_edits() {
    // One cell, one row, one column, one open cell among walls, and a map with no open cell.
    let cases: [&[&str]; 5] = [
        &["."],
        &["..........................."],
        &["."; 30],
        &["@@@@@@@@@@", "@@@@.@@@@@", "@@@@@@@@@@"],
        &["@@@@", "@@@@"],
    ];
    for rows in cases {
        let mut cost = map(rows);
        for side in [8, 256] {
            let mut g = SectorGraph::build(&cost, side, CostModel::Octile).unwrap();
            let open: Vec<UVec2> = (0..cost.grid().len())
                .map(|i| cost.grid().cell(i))
                .filter(|&c| cost.is_walkable(c))
                .collect();
            let mut search = RouteSearch::new();
            if let (Some(&a), Some(&b)) = (open.first(), open.last()) {
                let route = search.route(&g, &cost, a, b).unwrap().expect("one region");
                assert_eq!(route.waypoints.first(), Some(&a));
                let mut tiles = FlowTiles::new(&g, &cost, b).unwrap();
                tiles.extend(&g, &cost, &route).unwrap();
                assert!(tiles.cost_to_goal(a).is_some());
            }
            assert_eq!(g.region_count() as usize, usize::from(!open.is_empty()));
            // Wall the first cell and open it again: the graph follows both ways.
            let first = (UVec2::ZERO, UVec2::ZERO);
            let before = cost.get(UVec2::ZERO).unwrap();
            cost.fill_rect(first.0, first.1, WALL).unwrap();
            g.update(&cost, &[first]).unwrap();
            assert_eq!(
                g,
                SectorGraph::build(&cost, side, CostModel::Octile).unwrap()
            );
            cost.fill_rect(first.0, first.1, before).unwrap();
            g.update(&cost, &[first]).unwrap();
            assert_eq!(
                g,
                SectorGraph::build(&cost, side, CostModel::Octile).unwrap()
            );
        }
    }
}
