//! The parsers of the CLI's argument values: counts and numbers in ranges, cells, sizes,
//! ranges, rectangles, crowd groups and cost edits. Each refusal names the value (quoted and cut
//! to a screenful by `horde::io::quoted`) and what is allowed; none panics, whatever the text
//! (fuzzed: `fuzz/fuzz_targets/cli_args.rs`).

use glam::UVec2;
use horde::CostEdit;
use horde::io::quoted;

/// A clap parser for a whole number in `lo..=hi` that names the range when it refuses one.
pub fn count_in(lo: u64, hi: u64) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync {
    move |s: &str| {
        let t = s.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("not a whole number (allowed: {lo} to {hi})"));
        }
        // Digits only: a parse can fail only by overflowing u64, which is too large too.
        match t.parse::<u64>() {
            Ok(v) if v < lo => Err(format!("too small (at least {lo})")),
            Ok(v) if v <= hi => usize::try_from(v).map_err(|_| format!("too large (at most {hi})")),
            _ => Err(format!("too large (at most {hi})")),
        }
    }
}

/// A clap parser for a finite number in `lo..=hi` (`lo` itself excluded when `open_lo`), which
/// names the range when it refuses one.
pub fn number_in(
    lo: f32,
    hi: f32,
    open_lo: bool,
) -> impl Fn(&str) -> Result<f32, String> + Clone + Send + Sync {
    move |s: &str| {
        let range = format!("{}{lo}, {hi}]", if open_lo { "(" } else { "[" });
        let v: f32 = s
            .trim()
            .parse()
            .map_err(|_| format!("not a number (allowed: {range})"))?;
        let above_lo = if open_lo { v > lo } else { v >= lo };
        if v.is_finite() && above_lo && v <= hi {
            Ok(v)
        } else {
            Err(format!("outside {range}"))
        }
    }
}

/// Agent radii, cycled over the agents of each group (`--radius 0.25,0.35,0.45`).
#[derive(Debug, Clone, PartialEq)]
pub struct Radii(pub Vec<f32>);

/// Most radii `--radius` takes.
pub const MAX_RADII: usize = 16;

/// A clap parser for one number, or up to [`MAX_RADII`] separated by commas, each in
/// `lo..=hi` (`lo` excluded when `open_lo`), naming the one it refuses.
pub fn numbers_in(
    lo: f32,
    hi: f32,
    open_lo: bool,
) -> impl Fn(&str) -> Result<Radii, String> + Clone + Send + Sync {
    let one = number_in(lo, hi, open_lo);
    move |s: &str| {
        let parts: Vec<&str> = s.split(',').collect();
        if parts.len() == 1 {
            return one(s).map(|v| Radii(vec![v]));
        }
        if parts.len() > MAX_RADII {
            return Err(format!(
                "{} numbers (at most {MAX_RADII}, separated by commas)",
                parts.len()
            ));
        }
        let values = parts
            .iter()
            .map(|p| one(p).map_err(|e| format!("{}: {e}", p.trim())))
            .collect::<Result<Vec<f32>, String>>()?;
        Ok(Radii(values))
    }
}

/// A whole number that fits a `u32`, or why not (naming `part` of `whole`).
fn whole_u32(part: &str, whole: &str) -> Result<u32, String> {
    let v = part.trim();
    v.parse::<u32>().map_err(|_| {
        if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            format!(
                "{} in {} is too large (at most {})",
                quoted(v),
                quoted(whole),
                u32::MAX
            )
        } else {
            format!("{} in {} is not a whole number", quoted(v), quoted(whole))
        }
    })
}

/// `X,Y` → a cell.
pub fn parse_cell(s: &str) -> Result<UVec2, String> {
    let (x, y) = s
        .split_once(',')
        .filter(|(_, y)| !y.contains(','))
        .ok_or_else(|| format!("{} is not X,Y", quoted(s)))?;
    Ok(UVec2::new(whole_u32(x, s)?, whole_u32(y, s)?))
}

/// A clap parser for a seed: any whole number that fits in 64 bits.
pub fn parse_seed(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("not a whole number (allowed: 0 to {})", u64::MAX));
    }
    // Digits only: a parse can fail only by overflowing u64.
    t.parse::<u64>()
        .map_err(|_| format!("too large (at most {})", u64::MAX))
}

/// `WxH` (or `WXH`) → a width and a height.
pub fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .filter(|(_, h)| !h.contains(['x', 'X']))
        .ok_or_else(|| format!("{} is not WxH", quoted(s)))?;
    Ok((whole_u32(w, s)?, whole_u32(h, s)?))
}

/// `A..B` → two whole numbers.
pub fn parse_range(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("{} is not A..B", quoted(s)))?;
    Ok((whole_u32(a, s)?, whole_u32(b, s)?))
}

/// `X0,Y0,X1,Y1` → a rectangle of cells, corners inclusive, `X0 <= X1` and `Y0 <= Y1`.
pub fn parse_rect(s: &str) -> Result<(UVec2, UVec2), String> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != 4 {
        return Err(format!("{} is not X0,Y0,X1,Y1", quoted(s)));
    }
    let mut n = [0u32; 4];
    for (v, p) in n.iter_mut().zip(&parts) {
        *v = whole_u32(p, s)?;
    }
    if n[0] > n[2] || n[1] > n[3] {
        return Err(format!(
            "{} is not X0,Y0,X1,Y1 with X0 <= X1 and Y0 <= Y1",
            quoted(s)
        ));
    }
    Ok((UVec2::new(n[0], n[1]), UVec2::new(n[2], n[3])))
}

/// One group of `horde sim --group`: its goal cell, the rectangle it spawns in (corners
/// inclusive) and how many agents it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupSpec {
    /// Goal cell.
    pub goal: UVec2,
    /// Spawn rectangle: top-left and bottom-right corners, inclusive.
    pub spawn: (UVec2, UVec2),
    /// Agents in the group, 1 to 10,000,000.
    pub agents: usize,
}

/// `GX,GY:X0,Y0,X1,Y1:N` → a group: goal cell, spawn rectangle, agents.
pub fn parse_group(s: &str) -> Result<GroupSpec, String> {
    let parts: Vec<&str> = s.split(':').collect();
    let [goal, spawn, agents] = parts[..] else {
        return Err(format!(
            "{} is not GX,GY:X0,Y0,X1,Y1:N (goal, spawn rectangle, agents)",
            quoted(s)
        ));
    };
    let goal = parse_cell(goal)?;
    let spawn = parse_rect(spawn)?;
    let agents = count_in(1, 10_000_000)(agents)
        .map_err(|e| format!("agents {} in {}: {e}", quoted(agents), quoted(s)))?;
    Ok(GroupSpec {
        goal,
        spawn,
        agents,
    })
}

/// `X0,Y0,X1,Y1,COST` → a rectangle edit (corners in any order; cost 1-254 terrain, 255
/// wall).
pub fn parse_edit(s: &str) -> Result<CostEdit, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 5 {
        return Err(format!(
            "{} is not X0,Y0,X1,Y1,COST (five numbers separated by commas)",
            quoted(s)
        ));
    }
    let mut n = [0u32; 5];
    for (v, p) in n.iter_mut().zip(&parts) {
        *v = whole_u32(p, s)?;
    }
    let cost = match n[4] {
        c @ 1..=255 => c as u8,
        c => {
            return Err(format!(
                "cost {c} in {} is not 1-254 (terrain) or 255 (wall)",
                quoted(s)
            ));
        }
    };
    Ok(CostEdit::Rect {
        min: UVec2::new(n[0].min(n[2]), n[1].min(n[3])),
        max: UVec2::new(n[0].max(n[2]), n[1].max(n[3])),
        cost,
    })
}

/// Cut every argument longer than a screenful (or holding control characters) out of a clap
/// error message, as `horde::io::quoted` shows values: clap quotes the raw value whole.
pub fn shorten_args_in(message: &str, args: &[String]) -> String {
    let mut text = message.to_owned();
    for a in args {
        if a.chars().count() > 60 || a.chars().any(char::is_control) {
            let short = quoted(a);
            text = text.replace(a.as_str(), &short[1..short.len() - 1]);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radii_parse_one_or_a_list_and_name_the_bad_one() {
        let parse = numbers_in(0.0, 2.0, true);
        assert_eq!(parse("0.35"), Ok(Radii(vec![0.35])));
        assert_eq!(parse("0.25, 0.35,0.45"), Ok(Radii(vec![0.25, 0.35, 0.45])));
        assert_eq!(parse("3"), Err("outside (0, 2]".to_owned()));
        assert_eq!(parse("0.3,0"), Err("0: outside (0, 2]".to_owned()));
        assert_eq!(
            parse("0.3,,0.4"),
            Err(": not a number (allowed: (0, 2])".to_owned())
        );
        let many = vec!["0.3"; MAX_RADII + 1].join(",");
        assert_eq!(
            parse(&many),
            Err("17 numbers (at most 16, separated by commas)".to_owned())
        );
        assert_eq!(parse(&many[4..]).map(|r| r.0.len()), Ok(MAX_RADII));
    }

    #[test]
    fn groups_parse_and_bad_ones_say_what_is_wrong() {
        assert_eq!(
            parse_group("50,20:2,3,27,37:100"),
            Ok(GroupSpec {
                goal: UVec2::new(50, 20),
                spawn: (UVec2::new(2, 3), UVec2::new(27, 37)),
                agents: 100
            })
        );
        for (bad, says) in [
            ("50,20:2,3,27,37", "is not GX,GY:X0,Y0,X1,Y1:N"),
            ("50,20:2,3,27,37:1:2", "is not GX,GY:X0,Y0,X1,Y1:N"),
            ("50:2,3,27,37:1", "is not X,Y"),
            ("50,20:27,3,2,37:1", "X0 <= X1"),
            ("50,20:2,3,27,37:0", "agents '0'"),
            ("50,20:2,3,27,37:x", "not a whole number"),
            ("50,20:2,3,27,37:10000001", "at most 10000000"),
        ] {
            let e = parse_group(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn long_and_odd_values_are_refused_in_short_messages() {
        let long = "9".repeat(5000);
        let cases: Vec<(String, Result<(), String>)> = vec![
            (
                format!("1,{long}"),
                parse_cell(&format!("1,{long}")).map(drop),
            ),
            (
                format!("{long}x1"),
                parse_size(&format!("{long}x1")).map(drop),
            ),
            (
                format!("1..{long}"),
                parse_range(&format!("1..{long}")).map(drop),
            ),
            (
                format!("0,0,1,{long}"),
                parse_rect(&format!("0,0,1,{long}")).map(drop),
            ),
            (
                format!("0,0,1,1,{long}"),
                parse_edit(&format!("0,0,1,1,{long}")).map(drop),
            ),
            ("a\u{7}b,1".into(), parse_cell("a\u{7}b,1").map(drop)),
            ("3,2,1,0".into(), parse_rect("3,2,1,0").map(drop)),
            ("0,0,1,1,0".into(), parse_edit("0,0,1,1,0").map(drop)),
            ("0,0,1,1,256".into(), parse_edit("0,0,1,1,256").map(drop)),
        ];
        for (input, result) in cases {
            let err = result.expect_err(&input[..input.len().min(40)]);
            assert!(err.len() < 300, "{} bytes: {err}", err.len());
            assert!(!err.chars().any(char::is_control), "{err:?}");
        }
        assert_eq!(
            parse_rect("1,2,3,4"),
            Ok((UVec2::new(1, 2), UVec2::new(3, 4)))
        );
        assert_eq!(parse_range(" 5.. 14"), Ok((5, 14)));
        assert_eq!(parse_size("64X32"), Ok((64, 32)));
    }

    #[test]
    fn cells_sizes_and_seeds_take_exactly_their_parts() {
        assert_eq!(parse_cell("3,4"), Ok(UVec2::new(3, 4)));
        assert_eq!(parse_cell("1,2,3"), Err("'1,2,3' is not X,Y".into()));
        assert_eq!(parse_size("10x10x10"), Err("'10x10x10' is not WxH".into()));
        assert_eq!(parse_seed("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_seed(" 7 "), Ok(7));
        assert_eq!(
            parse_seed("18446744073709551616"),
            Err("too large (at most 18446744073709551615)".into())
        );
        for bad in ["", "-1", "1.5", "x"] {
            assert_eq!(
                parse_seed(bad),
                Err("not a whole number (allowed: 0 to 18446744073709551615)".into()),
                "{bad}"
            );
        }
    }

    #[test]
    fn clap_messages_lose_their_long_values() {
        let long = "7".repeat(3000);
        let message = format!("error: invalid value '{long}' for '--agents <AGENTS>': too large");
        let short = shorten_args_in(&message, &[long.clone(), "sim".into()]);
        assert!(short.len() < 200, "{short}");
        assert!(short.contains("for '--agents <AGENTS>': too large"));
    }
}
