//! Living fields on arbitrary painted maps (see `painted.rs`): a field built once, then cost
//! edits repaired and goals moved in turn, with the repair's fall-back to a rebuild set low or
//! high. After every step the field equals a plain Dijkstra over the map as it stands (a goal
//! an edit walled leads nowhere), and its arrows those derived afresh from it.
#![no_main]

use arbitrary::Arbitrary;
use horde::glam::UVec2;
use horde::{CostModel, FieldRepairer, FlowField, LiveField, WALL};
use libfuzzer_sys::fuzz_target;

#[path = "painted.rs"]
mod painted;
use painted::{Paint, PaintedMap, edit, reference, walkable_goals};

#[derive(Debug, Arbitrary)]
enum Step {
    /// Strokes painted at once, then repaired.
    Edit(Vec<Paint>),
    /// The goals moved to these cells (those on walls left out).
    Move(Vec<(u8, u8)>),
}

#[derive(Debug, Arbitrary)]
struct Input {
    map: PaintedMap,
    goals: Vec<(u8, u8)>,
    octile: bool,
    /// The repair's rebuild divisor (see `FieldRepairer::set_rebuild_divisor`), 1 to 16.
    divisor: u8,
    steps: Vec<Step>,
}

fuzz_target!(|input: Input| {
    let mut cost = input.map.cost();
    let (w, h) = (cost.width(), cost.height());
    let goals = walkable_goals(&cost, &input.goals);
    if goals.is_empty() {
        return;
    }
    let model = if input.octile {
        CostModel::Octile
    } else {
        CostModel::TenFourteen
    };
    let mut repairer = FieldRepairer::new();
    repairer.set_rebuild_divisor(input.divisor as usize % 16 + 1);
    let mut field = LiveField::build(&cost, &goals, model, &mut repairer).expect("a build");
    for (k, step) in input.steps.iter().take(8).enumerate() {
        match step {
            Step::Edit(strokes) => {
                let edits: Vec<_> = strokes.iter().take(8).map(|p| edit(p, w, h)).collect();
                let changed = cost.apply_edits(&edits).expect("strokes inside the map");
                field
                    .repair(&cost, &changed, &mut repairer)
                    .expect("a repair");
            }
            Step::Move(cells) => {
                let goals = walkable_goals(&cost, cells);
                if goals.is_empty() {
                    continue;
                }
                field
                    .move_goals(&cost, &goals, &mut repairer)
                    .expect("a move");
            }
        }
        // Goals an edit walled lead nowhere.
        let live: Vec<UVec2> = field
            .goals()
            .iter()
            .copied()
            .filter(|g| cost.costs()[(g.y * w + g.x) as usize] != WALL)
            .collect();
        let want = reference(&cost, &live, model);
        assert!(
            field.integration().values() == &want[..],
            "step {k}: values differ from the reference"
        );
        let fresh = FlowField::from_integration(&cost, field.integration()).expect("arrows");
        assert!(
            field.flow() == &fresh,
            "step {k}: arrows differ from the field's"
        );
    }
});
