//! The CLI's argument-value parsers (counts, numbers, cells, sizes, ranges, rectangles, groups,
//! cost edits): a value that keeps its promises, or a short message without control characters,
//! never a panic.
#![no_main]

use horde::CostEdit;
use horde_cli::args;
use libfuzzer_sys::fuzz_target;

fn short(result: Result<(), String>) {
    if let Err(message) = result {
        assert!(message.len() < 1024, "{} bytes", message.len());
        assert!(!message.chars().any(char::is_control), "{message:?}");
    }
}

fuzz_target!(|text: &str| {
    short(args::count_in(1, 10_000_000)(text).map(|v| assert!((1..=10_000_000).contains(&v))));
    short(args::number_in(0.0, 1.0, true)(text).map(|v| assert!(v > 0.0 && v <= 1.0)));
    short(args::parse_cell(text).map(|c| {
        assert_eq!(args::parse_cell(&format!("{},{}", c.x, c.y)), Ok(c));
    }));
    short(args::parse_size(text).map(drop));
    short(args::parse_range(text).map(drop));
    short(args::parse_rect(text).map(|(lo, hi)| assert!(lo.x <= hi.x && lo.y <= hi.y)));
    short(args::parse_group(text).map(|g| {
        assert!(g.agents >= 1 && g.spawn.0.x <= g.spawn.1.x && g.spawn.0.y <= g.spawn.1.y);
    }));
    short(args::parse_edit(text).map(|e| match e {
        CostEdit::Rect { min, max, cost } => {
            assert!(min.x <= max.x && min.y <= max.y && cost >= 1);
        }
        other => panic!("{other:?}"),
    }));
    let cut = args::shorten_args_in(&format!("invalid value '{text}'"), &[text.to_owned()]);
    assert!(cut.len() < 1024 || text.len() < 61, "{} bytes", cut.len());
});
