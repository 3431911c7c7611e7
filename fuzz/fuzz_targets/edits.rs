//! Cost edits and world-space stamps with arbitrary shapes and values: applied or refused with
//! the field unchanged, never a panic; a field never holds a zero cost.
#![no_main]

use arbitrary::Arbitrary;
use horde::glam::{UVec2, Vec2};
use horde::{CostEdit, CostField, Grid, Shape};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
enum Op {
    Cell { x: u32, y: u32, cost: u8 },
    Rect { x0: u32, y0: u32, x1: u32, y1: u32, cost: u8 },
    Box { min: (f32, f32), max: (f32, f32), cost: u8 },
    Circle { center: (f32, f32), radius: f32, cost: u8 },
    Polygon { points: Vec<(f32, f32)>, cost: u8 },
}

#[derive(Debug, Arbitrary)]
struct Input {
    width: u8,
    height: u8,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let Ok(grid) = Grid::new(input.width as u32 % 64 + 1, input.height as u32 % 64 + 1) else {
        return;
    };
    let mut cost = CostField::new(grid);
    let v = |(x, y): (f32, f32)| Vec2::new(x, y);
    for op in input.ops.into_iter().take(16) {
        let before = cost.clone();
        let result = match op {
            Op::Cell { x, y, cost: c } => cost
                .apply_edits(&[CostEdit::Cell { cell: UVec2::new(x, y), cost: c }])
                .map(|_| ()),
            Op::Rect { x0, y0, x1, y1, cost: c } => cost
                .apply_edits(&[CostEdit::Rect {
                    min: UVec2::new(x0, y0),
                    max: UVec2::new(x1, y1),
                    cost: c,
                }])
                .map(|_| ()),
            Op::Box { min, max, cost: c } => {
                cost.stamp(&[Shape::Box { min: v(min), max: v(max) }], c).map(|_| ())
            }
            Op::Circle { center, radius, cost: c } => cost
                .stamp(&[Shape::Circle { center: v(center), radius }], c)
                .map(|_| ()),
            Op::Polygon { points, cost: c } => {
                let points = points.into_iter().take(32).map(v).collect();
                cost.stamp(&[Shape::ConvexPolygon(points)], c).map(|_| ())
            }
        };
        if result.is_err() {
            assert_eq!(cost, before, "a refused edit changed the field");
        }
        assert!(!cost.costs().contains(&0), "a zero cost");
    }
});
