//! The bad-input suite: a few hundred inputs a careless or hostile user might give the `horde`
//! binary, grouped by class. Every one must be refused the same way: exit code 2 within
//! seconds, a message on stderr under 1 KB that names the problem (the flag, file or value)
//! with no raw control characters, and no output file created, changed or left half-written.
//!
//! Each case is run with the outputs its command can write pointed into a folder holding
//! files with known contents, so a case that writes anything before refusing is caught.
//! The test prints a table of classes, cases and outcomes (`cargo test -- --nocapture`).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One bad input: its class, the arguments, and what stderr must contain (any one of).
struct Case {
    class: &'static str,
    args: Vec<OsString>,
    says: Vec<String>,
    /// Append the command's output flags (pointed at the watched folder).
    with_outputs: bool,
}

fn case(class: &'static str, args: &[&str], says: &[&str]) -> Case {
    Case {
        class,
        args: args.iter().map(OsString::from).collect(),
        says: says.iter().map(|s| s.to_string()).collect(),
        with_outputs: true,
    }
}

/// How a case ended, when it did not end as it should.
enum Failure {
    Accepted,
    Panic,
    Abort(String),
    Hang,
    WrongCode(i32),
    Unnamed(String),
    LongMessage(usize),
    ControlBytes,
    OutputTouched(String),
}

impl Failure {
    fn text(&self) -> String {
        match self {
            Failure::Accepted => "accepted (exit 0)".into(),
            Failure::Panic => "panicked".into(),
            Failure::Abort(how) => format!("aborted: {how}"),
            Failure::Hang => format!("still running after {TIME_LIMIT:?}"),
            Failure::WrongCode(code) => format!("exit code {code}, not 2"),
            Failure::Unnamed(err) => format!("the message does not name the problem: {err}"),
            Failure::LongMessage(n) => format!("a message of {n} bytes"),
            Failure::ControlBytes => "control characters in the message".into(),
            Failure::OutputTouched(what) => format!("output touched: {what}"),
        }
    }

    fn column(&self) -> usize {
        match self {
            Failure::Panic => 1,
            Failure::Abort(_) => 2,
            Failure::Hang => 3,
            Failure::Accepted => 4,
            Failure::OutputTouched(_) => 5,
            _ => 6,
        }
    }
}

const TIME_LIMIT: Duration = Duration::from_secs(30);

/// The watched folder's files and their contents; none may change.
const KEPT: &[(&str, &str)] = &[
    ("old.map", "the previous map\n"),
    ("old.png", "the previous picture\n"),
    ("old.txt", "the previous dump\n"),
    ("old.json", "the previous export\n"),
    ("old.gif", "the previous animation\n"),
];

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("horde-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The output flags each command takes, pointed at new and existing files in `out`.
fn output_flags(args: &[OsString], out: &Path) -> Vec<OsString> {
    let p = |name: &str| out.join(name).into_os_string();
    let command = args
        .iter()
        .filter_map(|a| a.to_str())
        .find(|a| ["field", "path", "route", "sim", "dungeon", "demo"].contains(a));
    let flags: Vec<(&str, OsString)> = match command {
        Some("field") => vec![
            ("--png", p("new.png")),
            ("--dump-flow", p("old.txt")),
            ("--dump-integration", p("new.txt")),
        ],
        Some("path") | Some("route") => vec![("--png", p("old.png"))],
        Some("sim") => vec![("--gif", p("new.gif"))],
        Some("dungeon") => vec![
            ("--out", p("old.map")),
            ("--png", p("new.png")),
            ("--tiled", p("old.json")),
        ],
        Some("demo") => vec![("--out-dir", p("new-demo"))],
        _ => vec![],
    };
    let mut extra = Vec::new();
    for (flag, path) in flags {
        let given = args.iter().any(|a| {
            a.to_str()
                .is_some_and(|a| a.split('=').next() == Some(flag))
        });
        if !given {
            extra.push(OsString::from(flag));
            extra.push(path);
        }
    }
    extra
}

fn run(case: &Case, out: &Path) -> Result<(), Failure> {
    let mut argv = case.args.clone();
    if case.with_outputs {
        argv.extend(output_flags(&case.args, out));
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_horde"))
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run horde");
    // Read stderr on a thread so a chatty child cannot block on a full pipe.
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut pipe, &mut bytes).ok();
        bytes
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > TIME_LIMIT {
            child.kill().ok();
            child.wait().ok();
            return Err(Failure::Hang);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let err = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    let touched = touched_outputs(out);
    if err.contains("panicked") {
        return Err(Failure::Panic);
    }
    let Some(code) = status.code() else {
        return Err(Failure::Abort(format!("{status}")));
    };
    if code == 101 {
        return Err(Failure::Panic);
    }
    if let Some(what) = touched {
        return Err(Failure::OutputTouched(what));
    }
    if code == 0 {
        return Err(Failure::Accepted);
    }
    if code != 2 {
        return Err(Failure::WrongCode(code));
    }
    if err.len() >= 1024 {
        return Err(Failure::LongMessage(err.len()));
    }
    if err.chars().any(|c| c.is_control() && c != '\n') {
        return Err(Failure::ControlBytes);
    }
    if std::env::var_os("HORDE_SHOW_REFUSALS").is_some() {
        eprintln!("{}", err.lines().next().unwrap_or(""));
    }
    // The problem is stated before clap's usage lines, which name flags too.
    let first = err.split("Usage:").next().unwrap_or("");
    if !case.says.iter().any(|s| first.contains(s.as_str())) {
        return Err(Failure::Unnamed(err.trim_end().to_owned()));
    }
    Ok(())
}

/// What changed in the watched folder (restoring it for the next case), if anything.
fn touched_outputs(out: &Path) -> Option<String> {
    let mut changed = Vec::new();
    for entry in std::fs::read_dir(out).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        match KEPT.iter().find(|(kept, _)| *kept == name) {
            Some((_, text)) => {
                if std::fs::read_to_string(entry.path()).ok().as_deref() != Some(*text) {
                    changed.push(format!("changed {name}"));
                    std::fs::write(entry.path(), text).unwrap();
                }
            }
            None => {
                changed.push(format!("created {name}"));
                let path = entry.path();
                if path.is_dir() {
                    std::fs::remove_dir_all(path).unwrap();
                } else {
                    std::fs::remove_file(path).unwrap();
                }
            }
        }
    }
    for (name, text) in KEPT {
        if !out.join(name).exists() {
            changed.push(format!("removed {name}"));
            std::fs::write(out.join(name), text).unwrap();
        }
    }
    (!changed.is_empty()).then(|| changed.join(", "))
}

/// A PNG chunk with its CRC.
fn chunk(kind: &[u8], data: &[u8]) -> Vec<u8> {
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    let mut c = !0u32;
    for &b in &body {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out.extend_from_slice(&(!c).to_be_bytes());
    out
}

fn png_header(width: u32, height: u32, depth: u8, colour: u8) -> Vec<u8> {
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[depth, colour, 0, 0, 0]);
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend(chunk(b"IHDR", &ihdr));
    bytes
}

fn grey_png(width: u32, height: u32, colour: bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, width, height);
        enc.set_color(if colour {
            png::ColorType::Rgb
        } else {
            png::ColorType::Grayscale
        });
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        let n = (width * height) as usize * if colour { 3 } else { 1 };
        w.write_image_data(&vec![200u8; n]).unwrap();
    }
    bytes
}

const GOOD_MAP: &str = "type octile\nheight 3\nwidth 5\nmap\n..@..\n.3@..\n...@.\n";

/// Integer flags: (command and its required arguments, flag, smallest, largest).
fn integer_flags() -> Vec<(Vec<&'static str>, &'static str, u64, u64)> {
    let sim = vec!["sim", "builtin", "--goal", "64,64"];
    let field = vec!["field", "builtin", "--goal", "64,64"];
    let path = vec!["path", "builtin", "--from", "1,1", "--to", "2,2"];
    let route = vec!["route", "builtin", "--from", "1,1", "--to", "2,2"];
    vec![
        (sim.clone(), "--agents", 1, 10_000_000),
        (sim.clone(), "--steps", 1, 1_000_000),
        (sim.clone(), "--collision-passes", 0, 16),
        (sim.clone(), "--fps", 1, 100),
        (sim.clone(), "--every", 1, 1_000_000),
        (sim.clone(), "--scale", 1, 64),
        (sim, "--seed", 0, u64::MAX),
        (vec!["dungeon"], "--rooms", 1, 100_000),
        (vec!["dungeon"], "--corridor-width", 1, 16),
        (vec!["dungeon"], "--scale", 1, 64),
        (vec!["dungeon"], "--seed", 0, u64::MAX),
        (field, "--scale", 1, 64),
        (path, "--scale", 1, 64),
        (route.clone(), "--sector", 8, 256),
        (route, "--scale", 1, 64),
        (vec!["bench"], "--units", 1, 100_000),
        (vec!["bench"], "--reps", 1, 10_000),
        (vec!["bench", "--huge"], "--sector", 8, 256),
        (vec!["bench", "--huge"], "--queries", 1, 10_000),
        (
            vec!["scen", "a.map", "a.scen", "--route"],
            "--sector",
            8,
            256,
        ),
        (vec!["demo"], "--units", 1, 100_000),
    ]
}

/// Float flags: (command, flag, bad values beyond the domain's edges).
fn float_flags() -> Vec<(Vec<&'static str>, &'static str, Vec<&'static str>)> {
    let sim = vec!["sim", "builtin", "--goal", "64,64"];
    vec![
        (sim.clone(), "--dt", vec!["0", "-0.05", "1.5"]),
        (sim.clone(), "--radius", vec!["0", "-1", "2.5", "1e9"]),
        (sim.clone(), "--speed", vec!["0", "-4", "1e20"]),
        (sim.clone(), "--separation", vec!["-1", "101", "1e300"]),
        (sim, "--passing", vec!["-0.5", "64.5", "1e30", "nan"]),
        (vec!["dungeon"], "--loops", vec!["-1", "1.01", "2"]),
        (
            vec!["route", "builtin", "--from", "1,1", "--to", "2,2"],
            "--weight",
            vec!["0.5", "0", "4.5", "-1"],
        ),
    ]
}

fn cases(dir: &Path) -> Vec<Case> {
    let mut all = Vec::new();
    let file = |name: &str, bytes: &[u8]| -> String {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let good = file("good.map", GOOD_MAP.as_bytes());

    // Integers: below the range, above it, beyond u64, and not whole numbers.
    for (command, flag, lo, hi) in integer_flags() {
        let mut values: Vec<(&'static str, String)> = vec![
            ("integer too large", "18446744073709551616".into()),
            ("integer too large", "99999999999999999999999999".into()),
            ("not a number", "x".into()),
            ("not a number", String::new()),
            ("not a number", "1.5".into()),
            ("not a number", "1e3".into()),
            ("not a number", "0x10".into()),
            ("integer below range", "-1".into()),
        ];
        if hi < u64::MAX {
            values.push(("integer too large", (hi + 1).to_string()));
            values.push(("integer too large", (hi * 1000).to_string()));
        }
        if lo > 0 {
            values.push(("integer below range", (lo - 1).to_string()));
        }
        for (class, v) in values {
            let mut args = command.clone();
            let arg = format!("{flag}={v}");
            args.push(&arg);
            all.push(case(class, &args, &[flag]));
        }
    }
    for (class, v) in [
        ("integer too large", "1073741825"),
        ("integer too large", "18446744073709551616"),
        ("integer below range", "0"),
        ("not a number", "lots"),
    ] {
        let arg = format!("--max-cells={v}");
        all.push(case(
            class,
            &[&arg, "field", "builtin", "--goal", "64,64"],
            &["--max-cells"],
        ));
    }

    // Floats: outside the domain, not finite, not numbers.
    for (command, flag, edges) in float_flags() {
        let values = edges
            .into_iter()
            .map(|v| ("float outside domain", v))
            .chain([
                ("float not finite", "NaN"),
                ("float not finite", "inf"),
                ("float not finite", "-inf"),
                ("float not finite", "1e400"),
                ("not a number", "x"),
                ("not a number", ""),
                ("not a number", "1,5"),
            ]);
        for (class, v) in values {
            let mut args = command.clone();
            let arg = format!("{flag}={v}");
            args.push(&arg);
            all.push(case(class, &args, &[flag]));
        }
    }

    // Cells: malformed, outside the map, on a wall.
    let cell_commands: Vec<(Vec<&str>, &str)> = vec![
        (vec!["sim", "builtin"], "--goal"),
        (vec!["field", "builtin"], "--goal"),
        (vec!["field", "builtin", "--goal", "64,64"], "--move-goal"),
        (vec!["path", "builtin", "--to", "2,2"], "--from"),
        (vec!["path", "builtin", "--from", "1,1"], "--to"),
        (vec!["route", "builtin", "--to", "2,2"], "--from"),
        (vec!["route", "builtin", "--from", "1,1"], "--to"),
        (vec!["bench"], "--goal"),
    ];
    for (command, flag) in &cell_commands {
        for v in [
            "1;1",
            "1",
            "1,2,3",
            "-1,0",
            "0,-1",
            "a,1",
            "",
            ",",
            "1,",
            "4294967296,0",
            "128,0",
            "0,128",
            "99999,99999",
        ] {
            let mut args = command.clone();
            let arg = format!("{flag}={v}");
            args.push(&arg);
            let class = if v.contains("128") || v.contains("9999") {
                "cell outside the map"
            } else {
                "cell malformed"
            };
            all.push(case(class, &args, &[flag]));
        }
    }
    for (args, says) in [
        (
            vec!["field", good.as_str(), "--goal", "2,0"],
            "--goal (2, 0) is on a wall",
        ),
        (
            vec!["sim", good.as_str(), "--goal", "2,1"],
            "--goal (2, 1) is on a wall",
        ),
        (
            vec!["path", good.as_str(), "--from", "2,0", "--to", "0,0"],
            "--from (2, 0) is on a wall",
        ),
        (
            vec!["path", good.as_str(), "--from", "0,0", "--to", "3,2"],
            "--to (3, 2) is on a wall",
        ),
        (
            vec![
                "field",
                good.as_str(),
                "--goal",
                "0,0",
                "--move-goal",
                "2,1",
            ],
            "--move-goal (2, 1) is on a wall",
        ),
    ] {
        all.push(case("cell on a wall", &args, &[says]));
    }

    // Rectangles, sizes, ranges, models, layers.
    for v in [
        "0,0,1",
        "0,0,1,1,1",
        "0,0,200,200",
        "-1,0,5,5",
        "a,0,1,1",
        "",
        "0,0,128,5",
    ] {
        let arg = format!("--spawn={v}");
        all.push(case(
            "rectangle malformed or outside",
            &["sim", "builtin", "--goal", "64,64", &arg],
            &["--spawn"],
        ));
    }
    all.push(case(
        "rectangle malformed or outside",
        &["sim", good.as_str(), "--goal", "0,0", "--spawn", "2,0,2,1"],
        &["--spawn"],
    ));
    for (command, flag) in [(vec!["dungeon"], "--size"), (vec!["bench"], "--size")] {
        for v in [
            "0x10",
            "10x0",
            "x",
            "10x",
            "x10",
            "10",
            "-5x5",
            "40000x40000",
            "4294967296x1",
            "",
            "10x10x10",
        ] {
            let mut args = command.clone();
            let arg = format!("{flag}={v}");
            args.push(&arg);
            all.push(case("size malformed or too large", &args, &[flag]));
        }
    }
    for v in ["5..", "..5", "9..5", "0..5", "5..1000", "a..b", "5-9", ""] {
        let arg = format!("--room-size={v}");
        all.push(case(
            "range malformed",
            &["dungeon", &arg],
            &["--room-size"],
        ));
    }
    for (args, flag) in [
        (
            vec!["field", "builtin", "--goal", "1,1", "--model", "manhattan"],
            "--model",
        ),
        (
            vec![
                "path", "builtin", "--from", "1,1", "--to", "2,2", "--model", "",
            ],
            "--model",
        ),
        (vec!["bench", "--model", "10-15"], "--model"),
        (
            vec![
                "field",
                "builtin",
                "--goal",
                "1,1",
                "--layers",
                "terrain,heat",
            ],
            "--layers",
        ),
        (
            vec!["field", "builtin", "--goal", "1,1", "--layers", ""],
            "--layers",
        ),
    ] {
        all.push(case("unknown name", &args, &[flag]));
    }

    // Edits.
    for v in [
        "1,2,3,4",
        "1,2,3,4,5,6",
        "1,2,3,4,0",
        "1,2,3,4,256",
        "1,2,3,4,-5",
        "1,2,3,4,1e3",
        "1,2,x,4,5",
        "-1,0,1,1,5",
        "120,120,130,130,255",
        "",
    ] {
        let arg = format!("--edit={v}");
        all.push(case(
            "edit malformed or outside",
            &["field", "builtin", "--goal", "64,64", &arg],
            &["--edit"],
        ));
    }

    // Map files.
    let long_header = format!("type octile\nheight 3\nwidth {}\nmap\n", "9".repeat(3000));
    let maps: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.map", vec![], "empty.map"),
        ("only-type.map", b"type octile\n".to_vec(), "only-type.map"),
        (
            "no-map-line.map",
            b"type octile\nheight 1\nwidth 1\n.\n".to_vec(),
            "no-map-line.map",
        ),
        (
            "zero-height.map",
            b"type octile\nheight 0\nwidth 3\nmap\n".to_vec(),
            "zero-height.map",
        ),
        (
            "negative.map",
            b"type octile\nheight -1\nwidth 3\nmap\n...\n".to_vec(),
            "negative.map",
        ),
        (
            "too-wide.map",
            b"type octile\nheight 1\nwidth 99999999999\nmap\n.\n".to_vec(),
            "too-wide.map",
        ),
        (
            "too-big.map",
            b"type octile\nheight 40000\nwidth 40000\nmap\n.\n".to_vec(),
            "too-big.map",
        ),
        (
            "short-row.map",
            b"type octile\nheight 2\nwidth 3\nmap\n...\n..\n".to_vec(),
            "short-row.map:6",
        ),
        (
            "long-row.map",
            b"type octile\nheight 2\nwidth 3\nmap\n....\n...\n".to_vec(),
            "long-row.map:5",
        ),
        (
            "few-rows.map",
            b"type octile\nheight 3\nwidth 3\nmap\n...\n...\n".to_vec(),
            "few-rows.map",
        ),
        (
            "many-rows.map",
            b"type octile\nheight 1\nwidth 3\nmap\n...\n...\n".to_vec(),
            "many-rows.map",
        ),
        (
            "unknown-char.map",
            b"type octile\nheight 1\nwidth 3\nmap\n.?.\n".to_vec(),
            "unknown-char.map:5",
        ),
        (
            "tab.map",
            b"type octile\nheight 1\nwidth 3\nmap\n.\t.\n".to_vec(),
            "tab.map:5",
        ),
        (
            "nul.map",
            b"type octile\nheight 1\nwidth 3\nmap\n.\0.\n".to_vec(),
            "nul.map:5",
        ),
        (
            "latin1.map",
            b"type octile\nheight 1\nwidth 3\nmap\n.\xff.\n".to_vec(),
            "latin1.map:5",
        ),
        (
            "cr.map",
            b"type octile\rheight 1\rwidth 3\rmap\r...\r".to_vec(),
            "cr.map",
        ),
        (
            "bom.map",
            b"\xef\xbb\xbftype octile\nheight 1\nwidth 3\nmap\n...\n".to_vec(),
            "bom.map",
        ),
        (
            "type.map",
            b"type hex\nheight 1\nwidth 3\nmap\n...\n".to_vec(),
            "type.map",
        ),
        (
            "twice.map",
            b"type octile\nheight 1\nheight 1\nwidth 3\nmap\n...\n".to_vec(),
            "twice.map",
        ),
        (
            "depth.map",
            b"type octile\ndepth 1\nwidth 3\nmap\n...\n".to_vec(),
            "depth.map",
        ),
        (
            "long-header.map",
            long_header.into_bytes(),
            "long-header.map",
        ),
        (
            "garbage.map",
            (0..2000u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
            "garbage.map",
        ),
        ("nul-flood.map", vec![0u8; 1 << 20], "nul-flood.map"),
    ];
    for (name, bytes, says) in maps {
        let p = file(name, &bytes);
        all.push(case(
            "map file malformed",
            &["field", &p, "--goal", "0,0"],
            &[says],
        ));
        all.push(case(
            "map file malformed",
            &["path", &p, "--from", "0,0", "--to", "1,0"],
            &[says],
        ));
    }
    let walls = file(
        "all-walls.map",
        b"type octile\nheight 2\nwidth 2\nmap\n@@\n@@\n",
    );
    all.push(case(
        "map file malformed",
        &["sim", &walls, "--goal", "0,0"],
        &["all-walls.map", "no walkable"],
    ));
    let dir_path = dir.join("a-folder.map");
    std::fs::create_dir_all(&dir_path).unwrap();
    let dir_arg = dir_path.display().to_string();
    for p in [
        dir_arg.as_str(),
        "/nonexistent/x.map",
        "/dev/zero",
        "/dev/null",
    ] {
        all.push(case(
            "map file unreadable or endless",
            &["field", p, "--goal", "0,0"],
            &[p],
        ));
    }

    // PNG maps.
    let mut truncated = grey_png(8, 8, false);
    truncated.truncate(truncated.len() - 20);
    let mut huge = png_header(100_000, 100_000, 8, 0);
    huge.extend(chunk(b"IEND", &[]));
    let mut zero = png_header(0, 5, 8, 0);
    zero.extend(chunk(b"IEND", &[]));
    let pngs: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        ("colour.png", grey_png(8, 8, true), vec![]),
        ("truncated.png", truncated, vec![]),
        ("huge.png", huge, vec![]),
        ("zero.png", zero, vec![]),
        ("text.png", b"not a picture at all".to_vec(), vec![]),
        ("big.png", grey_png(64, 64, false), vec!["--max-cells=1000"]),
    ];
    for (name, bytes, global) in pngs {
        let p = file(name, &bytes);
        let mut args: Vec<&str> = global.clone();
        args.extend(["field", &p, "--goal", "1,1"]);
        all.push(case("png map malformed or too large", &args, &[name]));
        let mut args: Vec<&str> = global;
        args.extend(["sim", &p, "--goal", "1,1"]);
        all.push(case("png map malformed or too large", &args, &[name]));
    }

    // Scenario files, against the 5 x 3 map.
    let scens: Vec<(&str, &str, &str)> = vec![
        ("version9.scen", "version 9\n", "version9.scen"),
        (
            "fields.scen",
            "version 1\n0\tgood.map\t5\t3\t0\t0\t1\n",
            "fields.scen:2",
        ),
        (
            "exponent.scen",
            "version 1\n0\tgood.map\t5\t3\t0\t0\t1\t0\t2e1\n",
            "exponent.scen:2",
        ),
        (
            "negative.scen",
            "version 1\n0\tgood.map\t5\t3\t0\t0\t1\t0\t-1\n",
            "negative.scen:2",
        ),
        (
            "nan.scen",
            "version 1\n0\tgood.map\t5\t3\t0\t0\t1\t0\tNaN\n",
            "nan.scen:2",
        ),
        (
            "inf.scen",
            "version 1\n0\tgood.map\t5\t3\t0\t0\t1\t0\tinf\n",
            "inf.scen:2",
        ),
        (
            "outside.scen",
            "version 1\n0\tgood.map\t5\t3\t0\t0\t9\t9\t12\n",
            "outside.scen",
        ),
        (
            "wall.scen",
            "version 1\n0\tgood.map\t5\t3\t2\t0\t0\t0\t2\n",
            "wall.scen",
        ),
        (
            "size.scen",
            "version 1\n0\tgood.map\t10\t10\t0\t0\t1\t0\t1\n",
            "size.scen",
        ),
        (
            "bucket.scen",
            "version 1\nx\tgood.map\t5\t3\t0\t0\t1\t0\t1\n",
            "bucket.scen:2",
        ),
        ("empty.scen", "", "empty.scen"),
        ("only-version.scen", "version 1\n", "only-version.scen"),
    ];
    for (name, text, says) in scens {
        let p = file(name, text.as_bytes());
        all.push(case(
            "scenario file malformed",
            &["scen", &good, &p],
            &[says],
        ));
    }
    all.push(case(
        "scenario file malformed",
        &["scen", &good, "/dev/zero"],
        &["/dev/zero"],
    ));

    // Output paths: a missing folder, a folder in place of a file, a file in place of a folder.
    let under_file = dir.join("good.map").join("x");
    let under_file = under_file.display().to_string();
    let outputs: Vec<(Vec<&str>, &str)> = vec![
        (vec!["field", &good, "--goal", "0,0"], "--png"),
        (vec!["field", &good, "--goal", "0,0"], "--dump-flow"),
        (vec!["field", &good, "--goal", "0,0"], "--dump-integration"),
        (vec!["path", &good, "--from", "0,0", "--to", "1,0"], "--png"),
        (vec!["sim", &good, "--goal", "0,0", "--steps", "2"], "--gif"),
        (vec!["dungeon"], "--out"),
        (vec!["dungeon"], "--png"),
        (vec!["dungeon"], "--tiled"),
        (vec!["demo", "--units", "1"], "--out-dir"),
    ];
    for (command, flag) in outputs {
        for target in [
            "/nonexistent/folder/x.out".to_string(),
            dir_arg.clone(),
            format!("{under_file}.out"),
        ] {
            if flag == "--out-dir" && target == dir_arg {
                continue; // an existing folder is what --out-dir wants
            }
            let mut args = command.clone();
            let arg = format!("{flag}={target}");
            args.push(&arg);
            all.push(case("output path unusable", &args, &[flag]));
        }
    }

    // Command-line syntax.
    let syntax: Vec<(Vec<&str>, &str)> = vec![
        (vec!["frobnicate"], "frobnicate"),
        (
            vec!["field", "builtin", "--goal", "1,1", "--goals", "1,1"],
            "--goals",
        ),
        (vec!["field", "builtin", "--goal"], "--goal"),
        (vec!["field", "builtin"], "--goal"),
        (vec!["field", "--goal", "1,1"], "<MAP>"),
        (vec!["path", "builtin", "--from", "1,1"], "--to"),
        (vec!["scen", &good], "<SCEN>"),
        (
            vec![
                "sim", "builtin", "--goal", "64,64", "--agents", "5", "--agents", "6",
            ],
            "--agents",
        ),
        (vec!["sim", "builtin", "extra", "--goal", "64,64"], "extra"),
        (vec!["bench", "--map", &good, "--size", "10x10"], "--size"),
        (vec!["dungeon", "--json"], "--json"),
        (vec!["--max-cells"], "--max-cells"),
    ];
    for (args, says) in syntax {
        all.push(case("command-line syntax", &args, &[says]));
    }
    for bytes in [
        b"\xff\xfe.map".to_vec(),
        b"--goal=\xff,1".to_vec(),
        b"1\x07,1".to_vec(),
    ] {
        let mut args: Vec<OsString> = ["sim", "builtin", "--goal", "64,64"]
            .iter()
            .map(OsString::from)
            .collect();
        if bytes.starts_with(b"--") {
            args.truncate(2);
        }
        args.push(OsString::from_vec(bytes));
        all.push(Case {
            class: "command-line syntax",
            args,
            says: vec!["error".into()],
            with_outputs: true,
        });
    }
    all
}

#[test]
fn every_bad_input_is_refused_cleanly() {
    let dir = scratch();
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    for (name, text) in KEPT {
        std::fs::write(out.join(name), text).unwrap();
    }
    let all = cases(&dir);
    // class -> [cases, refused, panic, abort, hang, accepted, output touched, other]
    let mut table: Vec<(&str, [usize; 8])> = Vec::new();
    let mut failures = Vec::new();
    for c in &all {
        let row = match table.iter().position(|(class, _)| *class == c.class) {
            Some(i) => i,
            None => {
                table.push((c.class, [0; 8]));
                table.len() - 1
            }
        };
        table[row].1[0] += 1;
        match run(c, &out) {
            Ok(()) => table[row].1[1] += 1,
            Err(f) => {
                table[row].1[f.column() + 1] += 1;
                let shown: Vec<String> = c
                    .args
                    .iter()
                    .map(|a| a.to_string_lossy().chars().take(60).collect())
                    .collect();
                failures.push(format!("{}: {shown:?}: {}", c.class, f.text()));
            }
        }
    }
    println!(
        "| class | cases | refused cleanly | panic | abort | hang | accepted | output touched | other |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut total = [0usize; 8];
    for (class, counts) in &table {
        let cells: Vec<String> = counts.iter().map(|n| n.to_string()).collect();
        println!("| {class} | {} |", cells.join(" | "));
        for (t, n) in total.iter_mut().zip(counts) {
            *t += n;
        }
    }
    let cells: Vec<String> = total.iter().map(|n| n.to_string()).collect();
    println!("| all | {} |", cells.join(" | "));
    assert!(all.len() >= 300, "only {} cases", all.len());
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}
