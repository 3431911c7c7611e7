//! Reading and writing maps: the Moving AI `.map` format (with digits `1`–`9` as terrain costs)
//! and its `.scen` query files.
//!
//! `.map`: header lines `type octile`, `height H`, `width W`, `map`, then H rows of W characters.
//! `.`, `G` and `S` are walkable at cost 1; `@`, `O`, `T` and `W` are walls; `1`–`9` are walkable
//! at that cost (horde's extension). Rows may end in `\n` or `\r\n`.
//!
//! The parsers never panic on any input (they are fuzzed) and never allocate more than the
//! header promises after checking it against the grid limits and the input's own length.

use std::path::Path;

use thiserror::Error;

use crate::cost::{CostField, CostModel, PLAIN, WALL};
use crate::flow::{FLOW_GOAL, FLOW_WALL, FlowField};
use crate::grid::{Grid, MAX_CELLS, MAX_SIDE};
use crate::integration::{IntegrationField, UNREACHABLE};

/// What is wrong with a map or scenario file. `line` is 1-based; `file` is the name given to
/// the parser (a path, or something like `<built-in>`).
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum MapError {
    /// The file could not be read.
    #[error("{file}: cannot read: {reason}")]
    Io { file: String, reason: String },
    /// An image that is not a PNG, is damaged, is in colour, or describes more cells than allowed.
    #[error("{file}: {reason}")]
    Image { file: String, reason: String },
    /// A line that is not valid UTF-8 text.
    #[error("{file}:{line}: not text (invalid UTF-8)")]
    NotText { file: String, line: usize },
    /// A header line that is missing, repeated or malformed.
    #[error("{file}:{line}: bad header: {reason}")]
    Header {
        file: String,
        line: usize,
        reason: String,
    },
    /// Dimensions the grid cannot hold or the file cannot contain.
    #[error("{file}:{line}: map size {width}x{height} is not allowed: {reason}")]
    Size {
        file: String,
        line: usize,
        width: u64,
        height: u64,
        reason: String,
    },
    /// The file ends before all rows are read.
    #[error("{file}: truncated: expected {expected} map rows, found {found}")]
    Truncated {
        file: String,
        expected: u32,
        found: u32,
    },
    /// A row of the wrong length.
    #[error("{file}:{line}: row {row} has {got} cells, expected {expected}")]
    RowLength {
        file: String,
        line: usize,
        row: u32,
        got: usize,
        expected: u32,
    },
    /// A character that is not a known terrain.
    #[error("{file}:{line}: unknown terrain character {ch:?} at cell ({x}, {y})")]
    UnknownTerrain {
        file: String,
        line: usize,
        x: u32,
        y: u32,
        ch: char,
    },
    /// Non-blank text after the last row.
    #[error("{file}:{line}: text after the last of {height} map rows")]
    TrailingText {
        file: String,
        line: usize,
        height: u32,
    },
    /// A scenario line with the wrong fields.
    #[error("{file}:{line}: bad scenario line: {reason}")]
    Scenario {
        file: String,
        line: usize,
        reason: String,
    },
    /// A cost that the `.map` format cannot express (only 1–9 and walls can be written).
    #[error("cell ({x}, {y}) has cost {cost}, which a .map file cannot hold (1-9 or 255 only)")]
    Unwritable { x: u32, y: u32, cost: u8 },
    /// A cost that a greyscale PNG map cannot express (1–253 and walls can be written).
    #[error("cell ({x}, {y}) has cost {cost}, which a PNG map cannot hold (1-253 or 255 only)")]
    UnwritablePng { x: u32, y: u32, cost: u8 },
}

fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    bytes
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .enumerate()
        .map(|(i, l)| (i + 1, l))
}

fn text<'a>(file: &str, line: usize, bytes: &'a [u8]) -> Result<&'a str, MapError> {
    std::str::from_utf8(bytes).map_err(|_| MapError::NotText {
        file: file.to_owned(),
        line,
    })
}

/// The most characters of a piece of input that an error message quotes.
pub const QUOTE_CHARS: usize = 60;

/// A piece of input as error messages quote it: in single quotes, at most [`QUOTE_CHARS`]
/// characters (longer input is cut, with `…`), control characters and byte-order marks escaped
/// so that no message carries raw control bytes. O(length quoted).
///
/// ```
/// assert_eq!(horde::io::quoted("hei\rght"), "'hei\\rght'");
/// assert_eq!(horde::io::quoted(&"x".repeat(100)).chars().count(), 60 + 3);
/// ```
pub fn quoted(s: &str) -> String {
    let mut out = String::from("'");
    for (n, c) in s.chars().enumerate() {
        if n == QUOTE_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() || c == '\u{feff}' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// The first bytes of a file, in which a `.map` header (four short lines) must stand.
const HEADER_BYTES: u64 = 4096;

/// The most bytes a scenario file is read for (a query line is under 100 bytes: millions of
/// queries).
pub const MAX_SCEN_BYTES: u64 = 256 << 20;

/// The most bytes a `.map` file with this head can need: the header, then `height` rows of
/// `width` cells and a line break (CR LF at most) each, as its `height` and `width` lines say,
/// within the grid's limits. A head without both is read no further (the parser then names
/// what is missing).
fn map_bytes_needed(head: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(head);
    let size = |key: &str| {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(key))
            .find_map(|v| v.trim().parse::<u64>().ok())
            .filter(|&v| v <= crate::grid::MAX_SIDE as u64)
    };
    match (size("height"), size("width")) {
        (Some(h), Some(w)) => HEADER_BYTES + h * (w + 2),
        _ => HEADER_BYTES,
    }
}

/// How errors name a file: its path, with control characters escaped and, past 80
/// characters, the middle left out (the start and the file's own name kept). O(path).
///
/// ```
/// let long = format!("/data/{}/level.map", "x".repeat(500));
/// let shown = horde::io::shown_path(long.as_ref());
/// assert!(shown.starts_with("/data/xxx") && shown.ends_with("xx/level.map"));
/// assert_eq!(shown.chars().count(), 76);
/// ```
pub fn shown_path(path: &Path) -> String {
    let full = path.display().to_string();
    let escaped: String = full
        .chars()
        .flat_map(|c| {
            let plain = !(c.is_control() || c == '\u{feff}');
            let shown: Vec<char> = if plain {
                vec![c]
            } else {
                c.escape_default().collect()
            };
            shown
        })
        .collect();
    let chars: Vec<char> = escaped.chars().collect();
    if chars.len() <= 80 {
        return escaped;
    }
    let head: String = chars[..30].iter().collect();
    let tail: String = chars[chars.len() - 45..].iter().collect();
    format!("{head}…{tail}")
}

/// Read a file, but never more than `cap(first bytes)` bytes: a file longer than that is
/// refused without reading the rest (a huge or endless file does not fill memory).
fn read(path: &Path, cap: impl Fn(&[u8]) -> u64) -> Result<Vec<u8>, MapError> {
    use std::io::Read;
    let io = |e: std::io::Error| MapError::Io {
        file: shown_path(path),
        reason: e.to_string(),
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    (&mut file)
        .take(HEADER_BYTES)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let most = cap(&bytes).max(HEADER_BYTES);
    file.take(most + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > most {
        return Err(MapError::Io {
            file: shown_path(path),
            reason: format!("longer than the {most} bytes its header allows"),
        });
    }
    Ok(bytes)
}

/// Terrain cost of a map character, or `None` for an unknown one.
pub fn terrain_cost(ch: u8) -> Option<u8> {
    match ch {
        b'.' | b'G' | b'S' => Some(PLAIN),
        b'@' | b'O' | b'T' | b'W' => Some(WALL),
        b'1'..=b'9' => Some(ch - b'0'),
        _ => None,
    }
}

/// Parse a `.map` file's bytes; `file` names it in errors. O(bytes).
///
/// ```
/// let text = b"type octile\nheight 2\nwidth 3\nmap\n.@.\n.3.\n";
/// let cost = horde::io::parse_map(text, "tiny.map").unwrap();
/// assert_eq!(cost.costs(), &[1, 255, 1, 1, 3, 1]);
/// let err = horde::io::parse_map(b"type octile\nheight 2\nwidth 3\nmap\n.@.\n", "cut.map").unwrap_err();
/// assert_eq!(err.to_string(), "cut.map: truncated: expected 2 map rows, found 1");
/// ```
pub fn parse_map(bytes: &[u8], file: &str) -> Result<CostField, MapError> {
    let mut it = lines(bytes);
    let header = read_header(&mut it, bytes, file)?;
    let (grid, size_err) = header.grid(bytes, file)?;
    let costs = read_rows(&mut it, grid, file)?;
    CostField::from_costs(grid, costs).map_err(|e| size_err(e.to_string()))
}

/// What a `.map` header gave: width and height, each with its line, and the line of `map`.
struct MapHeader {
    width: Option<(u64, usize)>,
    height: Option<(u64, usize)>,
    map_line: usize,
}

/// The header lines up to `map`: `type octile`, `height` and `width`, each once.
fn read_header<'a>(
    it: &mut impl Iterator<Item = (usize, &'a [u8])>,
    bytes: &[u8],
    file: &str,
) -> Result<MapHeader, MapError> {
    let header = |line: usize, reason: String| MapError::Header {
        file: file.to_owned(),
        line,
        reason,
    };
    let (mut width, mut height, mut kind) = (None, None, None);
    let mut map_line = 0;
    for (line, raw) in it.by_ref() {
        let l = text(file, line, raw)?.trim();
        if l.is_empty() {
            continue;
        }
        let mut parts = l.split_whitespace();
        let key = parts.next().unwrap_or("");
        let value = parts.next();
        if parts.next().is_some() {
            return Err(header(
                line,
                format!("{} has more than two words", quoted(l)),
            ));
        }
        let number = |v: Option<&str>| -> Result<u64, MapError> {
            let v = v.ok_or_else(|| header(line, format!("{} needs a number", quoted(key))))?;
            v.parse::<u64>()
                .map_err(|_| header(line, format!("{} is not a whole number", quoted(v))))
        };
        let slot = match key {
            "type" => {
                let v = value.ok_or_else(|| header(line, "'type' needs a value".into()))?;
                if kind.replace(v.to_owned()).is_some() {
                    return Err(header(line, "'type' given twice".into()));
                }
                continue;
            }
            "height" => &mut height,
            "width" => &mut width,
            "map" if value.is_none() => {
                map_line = line;
                break;
            }
            _ => {
                return Err(header(
                    line,
                    format!(
                        "expected 'type', 'height', 'width' or 'map', found {}",
                        quoted(l)
                    ),
                ));
            }
        };
        if slot.replace((number(value)?, line)).is_some() {
            return Err(header(line, format!("{} given twice", quoted(key))));
        }
    }
    if map_line == 0 {
        let last = bytes.split(|&b| b == b'\n').count();
        return Err(header(last, "file ends before the 'map' line".into()));
    }
    match kind.as_deref() {
        Some("octile") => {}
        Some(other) => return Err(header(1, format!("type {} is not 'octile'", quoted(other)))),
        None => return Err(header(1, "no 'type' line".into())),
    }
    Ok(MapHeader {
        width,
        height,
        map_line,
    })
}

impl MapHeader {
    /// The grid the header describes, checked against the limits and the file's size before
    /// anything is reserved; and the error maker for size problems (naming the line at fault).
    fn grid<'f>(
        &self,
        bytes: &[u8],
        file: &'f str,
    ) -> Result<(Grid, impl Fn(String) -> MapError + 'f), MapError> {
        let (width, height, map_line) = (self.width, self.height, self.map_line);
        let header = |line: usize, reason: String| MapError::Header {
            file: file.to_owned(),
            line,
            reason,
        };
        let (w, wl) = width.ok_or_else(|| header(map_line, "no 'width' line".into()))?;
        let (h, hl) = height.ok_or_else(|| header(map_line, "no 'height' line".into()))?;
        // Name the line of the dimension at fault (the height's when both are).
        let bad_line = if h == 0 || h > MAX_SIDE as u64 {
            hl
        } else {
            wl
        };
        let size_err = move |reason: String| MapError::Size {
            file: file.to_owned(),
            line: bad_line,
            width: w,
            height: h,
            reason,
        };
        if w == 0 || h == 0 {
            return Err(size_err("both sides must be at least 1".into()));
        }
        if w > MAX_SIDE as u64 || h > MAX_SIDE as u64 || w * h > MAX_CELLS {
            return Err(size_err(format!(
                "at most {MAX_SIDE} per side and {MAX_CELLS} cells"
            )));
        }
        if w * h > bytes.len() as u64 {
            return Err(size_err(format!(
                "{} cells cannot fit in a file of {} bytes",
                w * h,
                bytes.len()
            )));
        }
        let (w, h) = (w as u32, h as u32);
        let grid = Grid::new(w, h).map_err(|e| size_err(e.to_string()))?;
        Ok((grid, size_err))
    }
}

/// The map rows: exactly `grid`'s height rows of its width, then only blank lines.
fn read_rows<'a>(
    it: &mut impl Iterator<Item = (usize, &'a [u8])>,
    grid: Grid,
    file: &str,
) -> Result<Vec<u8>, MapError> {
    let (w, h) = (grid.width(), grid.height());
    let mut costs = Vec::with_capacity(grid.len());
    let mut rows = 0u32;
    for (line, raw) in it.by_ref() {
        if rows == h {
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Err(MapError::TrailingText {
                file: file.to_owned(),
                line,
                height: h,
            });
        }
        if raw.len() != w as usize {
            // An empty row followed only by blank lines is the end of a truncated file.
            if raw.is_empty()
                && it
                    .by_ref()
                    .all(|(_, r)| r.iter().all(u8::is_ascii_whitespace))
            {
                break;
            }
            return Err(MapError::RowLength {
                file: file.to_owned(),
                line,
                row: rows,
                got: String::from_utf8_lossy(raw).chars().count(),
                expected: w,
            });
        }
        for (x, &b) in raw.iter().enumerate() {
            match terrain_cost(b) {
                Some(c) => costs.push(c),
                None => {
                    let ch = match std::str::from_utf8(&raw[x..]) {
                        Ok(s) => s.chars().next().unwrap_or('?'),
                        Err(_) => char::from(b),
                    };
                    return Err(MapError::UnknownTerrain {
                        file: file.to_owned(),
                        line,
                        x: x as u32,
                        y: rows,
                        ch,
                    });
                }
            }
        }
        rows += 1;
    }
    if rows < h {
        return Err(MapError::Truncated {
            file: file.to_owned(),
            expected: h,
            found: rows,
        });
    }
    Ok(costs)
}

/// Read a `.map` file from disk. O(file size).
pub fn read_map(path: impl AsRef<Path>) -> Result<CostField, MapError> {
    let path = path.as_ref();
    parse_map(&read(path, map_bytes_needed)?, &shown_path(path))
}

/// The `.map` text of a cost field: `.` for cost 1, `@` for walls, digits for 2–9.
///
/// ```
/// let cost = horde::io::parse_map(b"type octile\nheight 1\nwidth 3\nmap\n.@7\n", "m").unwrap();
/// let text = horde::io::write_map(&cost).unwrap();
/// assert_eq!(text, "type octile\nheight 1\nwidth 3\nmap\n.@7\n");
/// ```
pub fn write_map(cost: &CostField) -> Result<String, MapError> {
    let (w, h) = (cost.width(), cost.height());
    let mut s = format!("type octile\nheight {h}\nwidth {w}\nmap\n");
    s.reserve(cost.costs().len() + h as usize);
    for (y, row) in cost.costs().chunks_exact(w as usize).enumerate() {
        for (x, &c) in row.iter().enumerate() {
            s.push(match c {
                PLAIN => '.',
                WALL => '@',
                2..=9 => char::from(b'0' + c),
                _ => {
                    return Err(MapError::Unwritable {
                        x: x as u32,
                        y: y as u32,
                        cost: c,
                    });
                }
            });
        }
        s.push('\n');
    }
    Ok(s)
}

/// The integration field as text, one map row per line, values separated by single spaces:
/// the value (an integer in the 10-14 model, a decimal with 6 digits after the point in the octile
/// model), `#` on walls and `inf` on walkable cells that cannot reach a goal. O(cells).
///
/// ```
/// use glam::UVec2;
/// use horde::{CostField, CostModel, Grid, IntegrationBuilder, WALL};
/// let mut cost = CostField::new(Grid::new(3, 1).unwrap());
/// cost.set(UVec2::new(1, 0), WALL).unwrap();
/// let f = IntegrationBuilder::new().build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen).unwrap();
/// assert_eq!(horde::io::integration_text(&cost, &f), "0 # inf\n");
/// ```
pub fn integration_text(cost: &CostField, field: &IntegrationField) -> String {
    let w = cost.width() as usize;
    let model = field.model();
    let mut s = String::with_capacity(cost.costs().len() * 6);
    for (crow, vrow) in cost
        .costs()
        .chunks_exact(w)
        .zip(field.values().chunks_exact(w))
    {
        for (x, (&c, &v)) in crow.iter().zip(vrow).enumerate() {
            if x > 0 {
                s.push(' ');
            }
            if c == WALL {
                s.push('#');
            } else if v == UNREACHABLE {
                s.push_str("inf");
            } else if model == CostModel::TenFourteen {
                s.push_str(&v.to_string());
            } else {
                s.push_str(&format!("{:.6}", model.to_cost(v)));
            }
        }
        s.push('\n');
    }
    s
}

/// The flow field as text, one map row per line, separated by single spaces: the direction digit
/// `0`–`7` (0 = N, clockwise), `G` at a goal, `#` on walls, `-` on walkable cells that cannot
/// reach a goal. O(cells).
pub fn flow_text(field: &FlowField) -> String {
    let w = field.grid().width() as usize;
    let mut s = String::with_capacity(field.bytes().len() * 2);
    for row in field.bytes().chunks_exact(w) {
        for (x, &b) in row.iter().enumerate() {
            if x > 0 {
                s.push(' ');
            }
            s.push(match b {
                0..=7 => char::from(b'0' + b),
                FLOW_GOAL => 'G',
                FLOW_WALL => '#',
                _ => '-',
            });
        }
        s.push('\n');
    }
    s
}

/// One query of a `.scen` file.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// 1-based line in the file.
    pub line: usize,
    /// `floor(optimal / 4)` as the file gives it.
    pub bucket: u32,
    /// The map column.
    pub map: String,
    /// Map width and height the query was made for.
    pub map_size: (u32, u32),
    /// Start cell.
    pub start: (u32, u32),
    /// Goal cell.
    pub goal: (u32, u32),
    /// The published optimal length (octile, no corner cutting).
    pub optimal: f64,
    /// One unit in the last digit the file printed (`0.01` for `1005.74`, `1e-8` for the
    /// newer files' 8 decimals).
    pub last_digit: f64,
}

/// The significant digits the older `.scen` files print their optimal lengths with (trailing
/// zeros dropped: `1` stands for 1.00000, `12.5` for 12.5000).
pub const SCEN_SIGNIFICANT_DIGITS: i32 = 6;

/// The tolerance is never below this: sums of √2 over thousands of steps in `f64`, and the
/// octile field's fixed point, are exact to well within it.
pub const SCEN_TOLERANCE_FLOOR: f64 = 1e-4;

impl Scenario {
    /// How far a computed length may be from [`Scenario::optimal`] and still match: one unit of
    /// the precision the printed number really carries, never below [`SCEN_TOLERANCE_FLOOR`].
    /// That precision is the finer of the last printed digit and the
    /// [`SCEN_SIGNIFICANT_DIGITS`]th significant digit: the older files print six significant
    /// digits and drop trailing zeros (`12.5` is 12.5000: 1e-4, not 0.1), the newer ones eight
    /// decimals (1e-8). So `1005.74` allows 0.01, `1` and `12.5` allow 1e-4, and a corner cut
    /// (0.586) or a √2 ↔ 1 swap (0.414) never passes. O(1).
    ///
    /// ```
    /// let scen = horde::io::parse_scen(b"0\tm.map\t8\t8\t0\t0\t1\t0\t1\n", "m.scen").unwrap();
    /// assert_eq!(scen[0].tolerance(), 1e-4);
    /// ```
    pub fn tolerance(&self) -> f64 {
        let significant = if self.optimal > 0.0 {
            10f64.powi(self.optimal.log10().floor() as i32 - (SCEN_SIGNIFICANT_DIGITS - 1))
        } else {
            0.0
        };
        self.last_digit.min(significant).max(SCEN_TOLERANCE_FLOOR)
    }
}

/// One unit in the last digit of a plain decimal (`0.01` for `1005.74`, `1` for `17`).
fn last_digit_unit(s: &str) -> f64 {
    let decimals = s.find('.').map_or(0, |p| s.len() - p - 1) as i32;
    10f64.powi(-decimals)
}

/// Parse a `.scen` file's bytes. O(bytes).
///
/// ```
/// let text = b"version 1\n0\tm.map\t8\t8\t0\t0\t3\t1\t3.41421356\n";
/// let scen = horde::io::parse_scen(text, "m.map.scen").unwrap();
/// assert_eq!(scen[0].goal, (3, 1));
/// assert_eq!(scen[0].last_digit, 1e-8);
/// ```
pub fn parse_scen(bytes: &[u8], file: &str) -> Result<Vec<Scenario>, MapError> {
    let mut out = Vec::new();
    for (line, raw) in lines(bytes) {
        let l = text(file, line, raw)?;
        if l.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| MapError::Scenario {
            file: file.to_owned(),
            line,
            reason,
        };
        if line == 1 && l.trim_start().starts_with("version") {
            // Versions 1 and 1.0 share the nine columns of the older, unversioned files; a
            // later version might not, so it is refused rather than misread.
            let version = l.trim_start()["version".len()..].trim();
            if !["1", "1.0"].contains(&version) {
                return Err(bad(format!(
                    "version {} is not one this reader knows (1 or 1.0)",
                    quoted(version)
                )));
            }
            continue;
        }
        let f: Vec<&str> = if l.contains('\t') {
            l.split('\t').map(str::trim).collect()
        } else {
            l.split_whitespace().collect()
        };
        if f.len() != 9 {
            return Err(bad(format!("expected 9 fields, found {}", f.len())));
        }
        let int = |i: usize, name: &str| -> Result<u32, MapError> {
            f[i].parse::<u32>()
                .map_err(|_| bad(format!("{name} {} is not a whole number", quoted(f[i]))))
        };
        // Digits with at most one point, as every Moving AI file writes them: the tolerance is
        // read from the digits printed, which an exponent or a sign would make meaningless.
        let plain = !f[8].is_empty()
            && f[8].bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && f[8].bytes().filter(|&b| b == b'.').count() <= 1
            && f[8].bytes().any(|b| b.is_ascii_digit());
        let optimal: f64 = f[8]
            .parse()
            .ok()
            .filter(|v: &f64| plain && v.is_finite())
            .ok_or_else(|| {
                bad(format!(
                    "optimal length {} is not a plain decimal number like 12.5",
                    quoted(f[8])
                ))
            })?;
        let sc = Scenario {
            line,
            bucket: int(0, "bucket")?,
            map: f[1].to_owned(),
            map_size: (int(2, "map width")?, int(3, "map height")?),
            start: (int(4, "start x")?, int(5, "start y")?),
            goal: (int(6, "goal x")?, int(7, "goal y")?),
            optimal,
            last_digit: last_digit_unit(f[8]),
        };
        out.push(sc);
    }
    Ok(out)
}

/// Read a `.scen` file from disk. O(file size).
pub fn read_scen(path: impl AsRef<Path>) -> Result<Vec<Scenario>, MapError> {
    let path = path.as_ref();
    parse_scen(&read(path, |_| MAX_SCEN_BYTES)?, &shown_path(path))
}

/// A greyscale PNG as a cost field: black is wall, white is cost 1, grey is costlier the darker
/// it is (1 + (255 − v) / 255 × 253, rounded). Colour images, images larger than the grid's
/// limits and images of more than `max_cells` pixels are refused from their header, before a
/// pixel is decoded. O(pixels); the decoded image costs 1–2 bytes per pixel while it is read.
///
/// ```
/// // A 2 x 1 greyscale PNG: a black pixel (wall) and a white one (plain ground).
/// let mut bytes = Vec::new();
/// let mut enc = png::Encoder::new(&mut bytes, 2, 1);
/// enc.set_color(png::ColorType::Grayscale);
/// enc.write_header().unwrap().write_image_data(&[0, 255]).unwrap();
/// let cost = horde::io::parse_png_map(&bytes, "tiny.png", 1 << 20).unwrap();
/// assert_eq!(cost.costs(), &[horde::WALL, 1]);
/// ```
#[cfg(feature = "png")]
#[cfg_attr(docsrs, doc(cfg(feature = "png")))]
pub fn parse_png_map(bytes: &[u8], file: &str, max_cells: u64) -> Result<CostField, MapError> {
    let bad = |reason: String| MapError::Image {
        file: file.to_owned(),
        reason,
    };
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::STRIP_16 | png::Transformations::EXPAND);
    let info = decoder
        .read_header_info()
        .map_err(|e| bad(format!("not a PNG: {e}")))?;
    let (w, h) = (info.width, info.height);
    // The grid's own limits and `max_cells`, both before a pixel is decoded.
    let grid = Grid::new(w, h).map_err(|e| bad(e.to_string()))?;
    if w as u64 * h as u64 > max_cells {
        return Err(bad(format!(
            "image of {w}x{h} = {} cells exceeds --max-cells {max_cells}",
            w as u64 * h as u64
        )));
    }
    match info.color_type {
        png::ColorType::Grayscale | png::ColorType::GrayscaleAlpha => {}
        other => {
            return Err(bad(format!(
                "{other:?} image: a map must be greyscale (black wall, white ground, grey terrain)"
            )));
        }
    }
    let mut reader = decoder
        .read_info()
        .map_err(|e| bad(format!("bad PNG: {e}")))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| bad("image too large".into()))?;
    let mut buf = vec![0; size];
    let frame = reader
        .next_frame(&mut buf)
        .map_err(|e| bad(format!("bad PNG data: {e}")))?;
    let channels = frame.color_type.samples();
    let costs: Vec<u8> = buf[..frame.buffer_size()]
        .chunks_exact(channels)
        .map(|px| {
            let v = px[0] as u32;
            if v == 0 {
                WALL
            } else {
                (1 + ((255 - v) * 253 + 127) / 255) as u8
            }
        })
        .collect();
    if costs.len() != grid.len() {
        return Err(bad(format!("{} pixels for a {w}x{h} image", costs.len())));
    }
    CostField::from_costs(grid, costs).map_err(|e| bad(e.to_string()))
}

/// [`parse_png_map`] of a file, read up to the size its header allows. O(pixels).
#[cfg(feature = "png")]
#[cfg_attr(docsrs, doc(cfg(feature = "png")))]
pub fn read_png_map(path: impl AsRef<Path>, max_cells: u64) -> Result<CostField, MapError> {
    let path = path.as_ref();
    // A PNG compresses: at most the raw pixels (two bytes each, with alpha) plus a little per
    // row and chunk, for the largest image allowed.
    let cap = |_: &[u8]| 2 * max_cells.min(MAX_CELLS) + 8 * MAX_SIDE as u64 + (1 << 20);
    parse_png_map(&read(path, cap)?, &shown_path(path), max_cells)
}

/// A cost field as a greyscale PNG that [`parse_png_map`] reads back exactly: walls black, plain
/// ground white, each terrain cost 2–253 the grey level that reads as it (a `.map` file holds only
/// 1–9). Cost 254 has no grey level of its own (the darkest grey reads as 253) and is refused,
/// naming the first cell that holds it. O(cells).
///
/// ```
/// use glam::UVec2;
/// let mut map = horde::CostField::new(horde::Grid::new(3, 2).unwrap());
/// map.set(UVec2::new(1, 0), horde::WALL).unwrap();
/// map.set(UVec2::new(2, 1), 200).unwrap();
/// let png = horde::io::png_map_bytes(&map).unwrap();
/// assert_eq!(horde::io::parse_png_map(&png, "map.png", 1 << 20).unwrap(), map);
/// ```
#[cfg(feature = "png")]
#[cfg_attr(docsrs, doc(cfg(feature = "png")))]
pub fn png_map_bytes(cost: &CostField) -> Result<Vec<u8>, MapError> {
    // The grey level of each cost: the first level that `parse_png_map` reads as it (every
    // cost has one, as a level step moves the cost by less than 1).
    let mut grey = [None; 256];
    grey[WALL as usize] = Some(0u8);
    for v in (1..=255u32).rev() {
        let c = 1 + ((255 - v) * 253 + 127) / 255;
        grey[c as usize] = Some(v as u8);
    }
    let mut pixels = Vec::with_capacity(cost.costs().len());
    for (i, &c) in cost.costs().iter().enumerate() {
        let Some(v) = grey[c as usize] else {
            let at = cost.grid().cell(i);
            return Err(MapError::UnwritablePng {
                x: at.x,
                y: at.y,
                cost: c,
            });
        };
        pixels.push(v);
    }
    let mut bytes = Vec::new();
    let bad = |e: png::EncodingError| MapError::Image {
        file: "the PNG map".to_owned(),
        reason: e.to_string(),
    };
    let mut encoder = png::Encoder::new(&mut bytes, cost.width(), cost.height());
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .map_err(bad)?
        .write_image_data(&pixels)
        .map_err(bad)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // Opens files, which Miri's isolation forbids.
    #[cfg_attr(miri, ignore)]
    fn errors_name_long_and_odd_file_names_in_short() {
        let long = format!("/tmp/{}/name.map", "d".repeat(5000));
        let err = read_map(&long).unwrap_err().to_string();
        assert!(err.len() < 300, "{} bytes", err.len());
        assert!(err.starts_with("/tmp/ddd") && err.contains("…"), "{err}");
        assert!(err.contains("dd/name.map"), "{err}");
        let odd = read_map("/tmp/no\u{7}such.map").unwrap_err().to_string();
        assert!(odd.starts_with("/tmp/no\\u{7}such.map"), "{odd}");
    }

    #[cfg(feature = "png")]
    #[test]
    fn every_cost_but_254_survives_a_png_map() {
        let grid = crate::grid::Grid::new(254, 1).unwrap();
        let costs: Vec<u8> = (1..=253).chain([WALL]).collect();
        let map = CostField::from_costs(grid, costs).unwrap();
        let png = png_map_bytes(&map).unwrap();
        assert_eq!(parse_png_map(&png, "t.png", 1 << 20).unwrap(), map);
        let mut dear = map.clone();
        dear.set(glam::UVec2::new(7, 0), 254).unwrap();
        assert_eq!(
            png_map_bytes(&dear).unwrap_err().to_string(),
            "cell (7, 0) has cost 254, which a PNG map cannot hold (1-253 or 255 only)"
        );
    }

    fn err(text: &str) -> String {
        parse_map(text.as_bytes(), "t.map").unwrap_err().to_string()
    }

    #[test]
    fn reads_crlf_and_every_terrain() {
        let m = parse_map(
            b"type octile\r\nheight 2\r\nwidth 5\r\nmap\r\n.GS@O\r\nTW129\r\n",
            "crlf.map",
        )
        .unwrap();
        assert_eq!(m.costs(), &[1, 1, 1, 255, 255, 255, 255, 1, 2, 9]);
        let back = write_map(&m).unwrap();
        assert_eq!(parse_map(back.as_bytes(), "x").unwrap(), m);
    }

    #[test]
    fn every_kind_of_bad_file_is_named() {
        assert_eq!(
            err("type octile\nheight 2\nwidth 2\nmap\n..\n.x\n"),
            "t.map:6: unknown terrain character 'x' at cell (1, 1)"
        );
        assert_eq!(
            err("type octile\nheight 2\nwidth 3\nmap\n...\n..\n"),
            "t.map:6: row 1 has 2 cells, expected 3"
        );
        assert_eq!(
            err("type octile\nheight 1\nwidth 2\nmap\n..\n..\n"),
            "t.map:6: text after the last of 1 map rows"
        );
        assert!(err("type octile\nheight 0\nwidth 2\nmap\n").contains("map size 2x0"));
        assert!(err("type octile\nheight 99999999\nwidth 99999999\nmap\n").contains("not allowed"));
        assert!(err("type octile\nheight 100\nwidth 100\nmap\n...\n").contains("cannot fit"));
        assert!(err("type octile\nheight x\nwidth 2\nmap\n").starts_with("t.map:2: bad header"));
        assert!(err("type octile\nwidth 2\nmap\n..\n").contains("no 'height'"));
        assert!(err("type hex\nheight 1\nwidth 1\nmap\n.\n").contains("not 'octile'"));
        assert!(err("").contains("before the 'map' line"));
        assert!(err("type octile\nheight 1\nwidth 1\n").contains("before the 'map' line"));
        assert_eq!(
            parse_map(b"type octile\nheight 1\nwidth 2\nmap\n\xff.\n", "b").unwrap_err(),
            MapError::UnknownTerrain {
                file: "b".into(),
                line: 5,
                x: 0,
                y: 0,
                ch: '\u{ff}'
            }
        );
        assert!(matches!(
            parse_map(b"type \xffoctile\n", "b"),
            Err(MapError::NotText { line: 1, .. })
        ));
    }

    #[test]
    fn unwritable_costs_are_refused() {
        let mut m = parse_map(b"type octile\nheight 1\nwidth 2\nmap\n..\n", "m").unwrap();
        m.set(glam::UVec2::new(1, 0), 40).unwrap();
        assert_eq!(
            write_map(&m),
            Err(MapError::Unwritable {
                x: 1,
                y: 0,
                cost: 40
            })
        );
    }

    #[test]
    fn scenario_tolerance_follows_the_printed_digits() {
        let s = parse_scen(
            b"version 1\n0\tmaps/a.map\t49\t49\t1\t2\t3\t4\t1005.74\n\n1 a.map 49 49 1 2 3 4 4\n",
            "a.scen",
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert!((s[0].tolerance() - 0.01).abs() < 1e-12);
        // `4` is 4.00000 in a file of six significant digits: not a tolerance of 1.
        assert_eq!(s[1].tolerance(), 1e-4);
        assert_eq!(s[1].line, 4);
        let e = parse_scen(b"version 1\n0\ta\t1\t1\t0\t0\t0\n", "b.scen").unwrap_err();
        assert_eq!(
            e.to_string(),
            "b.scen:2: bad scenario line: expected 9 fields, found 7"
        );
        assert!(parse_scen(b"0\ta\t1\t1\t0\t-1\t0\t0\t1\n", "c").is_err());
        assert!(parse_scen(b"0\ta\t1\t1\t0\t1\t0\t0\tnan\n", "c").is_err());
    }

    #[test]
    fn scenario_versions_and_lengths_are_read_strictly() {
        let line = "0\ta.map\t9\t9\t0\t0\t1\t1\t1.41421356\n";
        for version in ["version 1\n", "version 1.0\n", ""] {
            let text = format!("{version}{line}");
            assert_eq!(parse_scen(text.as_bytes(), "a.scen").unwrap().len(), 1);
        }
        let err = parse_scen(format!("version 2\n{line}").as_bytes(), "a.scen").unwrap_err();
        assert!(
            err.to_string()
                .contains("a.scen:1: bad scenario line: version '2'"),
            "{err}"
        );
        for length in [
            "2e1", "-1", "+1", "1.4.1", ".", "NaN", "inf", "0x1", "1_0", "",
        ] {
            let text = format!("0\ta.map\t9\t9\t0\t0\t1\t1\t{length}\n");
            let err = parse_scen(text.as_bytes(), "a.scen").unwrap_err();
            assert!(
                err.to_string().contains("not a plain decimal"),
                "{length}: {err}"
            );
        }
        for (length, value, digit) in [("17", 17.0, 1.0), ("0.5", 0.5, 0.1), ("3.", 3.0, 1.0)] {
            let text = format!("0\ta.map\t9\t9\t0\t0\t1\t1\t{length}\n");
            let s = &parse_scen(text.as_bytes(), "a.scen").unwrap()[0];
            assert_eq!((s.optimal, s.last_digit), (value, digit), "{length}");
        }
    }

    #[test]
    fn scenario_tolerance_is_the_precision_the_number_carries() {
        let tol = |printed: &str| {
            let line = format!("0\ta.map\t9\t9\t0\t0\t1\t1\t{printed}\n");
            parse_scen(line.as_bytes(), "a.scen").unwrap()[0].tolerance()
        };
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b;
        // Six significant digits, trailing zeros dropped.
        for (printed, want) in [
            ("1", 1e-4),
            ("12.5", 1e-4),
            ("17.8995", 1e-4),
            ("123.456", 1e-3),
            ("1005.74", 1e-2),
            ("1005.7", 1e-2),
            ("12345.6", 1e-1),
            ("0", 1e-4),
        ] {
            assert!(close(tol(printed), want), "{printed}: {}", tol(printed));
        }
        // Eight decimals (the newer files): the floor.
        assert_eq!(tol("3.41421356"), 1e-4);
        assert_eq!(tol("1005.74011690"), 1e-4);
        // A corner cut or a √2 ↔ 1 swap on a short query is caught.
        assert!(tol("1") < 0.414 && tol("2.41421") < 0.414);
    }
}
