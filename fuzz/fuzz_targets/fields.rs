//! Fields on arbitrary maps painted from rectangles and one-cell lines (rooms, doors, corridors,
//! terrain), built one after another by reused builders in each way a build can go — the row
//! sweeps with their hand-over, the wave with rooms, chains and the crossing graph, time slices
//! — with cost edits between builds: every field equals a plain Dijkstra written out here, and
//! every flow field the arrows derived afresh from that field.
#![no_main]

use arbitrary::Arbitrary;
use horde::{BuildProgress, CostEdit, CostModel, FlowField, IntegrationBuilder, IntegrationField};
use libfuzzer_sys::fuzz_target;

#[path = "painted.rs"]
mod painted;
use painted::{Paint, PaintedMap, edit, reference, walkable_goals};

#[derive(Debug, Arbitrary)]
struct Build {
    goals: Vec<(u8, u8)>,
    octile: bool,
    /// Cells per slice of the time-sliced builder (at least 1).
    slice: u16,
    /// Strokes applied to the map before this build.
    edits: Vec<Paint>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    map: PaintedMap,
    builds: Vec<Build>,
}

fuzz_target!(|input: Input| {
    let mut cost = input.map.cost();
    let grid = *cost.grid();
    let (w, h) = (grid.width(), grid.height());
    // One builder per way a build goes, each reused from build to build.
    let mut sweeps = IntegrationBuilder::new();
    let mut wave = IntegrationBuilder::new();
    wave.set_sweeps(false);
    let mut sliced = IntegrationBuilder::new();
    for build in input.builds.iter().take(6) {
        let edits: Vec<CostEdit> = build.edits.iter().take(8).map(|p| edit(p, w, h)).collect();
        cost.apply_edits(&edits).expect("strokes inside the map");
        let goals = walkable_goals(&cost, &build.goals);
        if goals.is_empty() {
            continue;
        }
        let model = if build.octile {
            CostModel::Octile
        } else {
            CostModel::TenFourteen
        };
        let want = reference(&cost, &goals, model);
        for (name, builder) in [("sweeps", &mut sweeps), ("wave", &mut wave)] {
            let mut field = IntegrationField::new(grid, model);
            builder
                .build_into(&cost, &goals, model, &mut field)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                field.values() == &want[..],
                "{name}: values differ from the reference"
            );
            let mut flow = FlowField::new(grid);
            builder
                .flow_into(&mut flow)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let fresh = FlowField::from_integration(&cost, &field).expect("arrows of a field");
            assert!(flow == fresh, "{name}: arrows differ from the field's");
        }
        let mut field = IntegrationField::new(grid, model);
        sliced.start(&cost, &goals, model).expect("a sliced start");
        let slice = build.slice as usize % 512 + 1;
        while let BuildProgress::Running { .. } = sliced.advance(slice).expect("a slice") {}
        sliced.finish_into(&mut field).expect("a sliced finish");
        assert!(
            field.values() == &want[..],
            "sliced: values differ from the reference"
        );
    }
});
