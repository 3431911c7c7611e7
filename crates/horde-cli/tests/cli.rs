//! The command-line contracts, checked from outside through the built binary: dump formats,
//! `--json` keys, exit codes and error messages.

use std::path::PathBuf;
use std::process::Command;

fn horde(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_horde"))
        .args(args)
        .output()
        .expect("run horde");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `horde ARGS` on one rayon thread, its stdout read as JSON.
fn json_on_one_thread(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_horde"))
        .args(args)
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .expect("run horde");
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("horde-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn movingai(name: &str) -> String {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = std::env::var("HORDE_MOVINGAI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| here.join("../../data/movingai"))
        .join(name);
    assert!(p.exists(), "{} missing", p.display());
    p.display().to_string()
}

const MAP: &str = "type octile\nheight 3\nwidth 5\nmap\n..@..\n.3@..\n...@.\n";

#[test]
fn field_dumps_follow_the_contract() {
    let map = tmp("small.map");
    std::fs::write(&map, MAP).unwrap();
    let (ints, flows) = (tmp("i.txt"), tmp("f.txt"));
    let (code, out, err) = horde(&[
        "field",
        map.to_str().unwrap(),
        "--goal",
        "0,0",
        "--dump-integration",
        ints.to_str().unwrap(),
        "--dump-flow",
        flows.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let ints = std::fs::read_to_string(ints).unwrap();
    let flows = std::fs::read_to_string(flows).unwrap();
    // (3,0), (4,0), (3,1), (4,1), (4,2) lie behind the wall column and the corner at (3,2).
    // (1,1) is mud (cost 3): a straight step then another costs 3×10 + 10 = 40, cheaper than the
    // diagonal's 3×14; N and W tie, and ties go to the lower direction number (N = 0).
    assert_eq!(ints, "0 10 # inf inf\n10 40 # inf inf\n20 24 34 # inf\n");
    assert_eq!(flows, "G 6 # - -\n0 0 # - -\n0 7 6 # -\n");
    let oct = tmp("o.txt");
    let (code, _, _) = horde(&[
        "field",
        map.to_str().unwrap(),
        "--goal",
        "0,0",
        "--goal",
        "4,0",
        "--model",
        "octile",
        "--dump-integration",
        oct.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let oct = std::fs::read_to_string(oct).unwrap();
    let first: Vec<&str> = oct.lines().next().unwrap().split(' ').collect();
    assert_eq!(first, ["0.000000", "1.000000", "#", "1.000000", "0.000000"]);
    assert!(
        oct.lines()
            .nth(1)
            .unwrap()
            .starts_with("1.000000 4.000000 #")
    );
}

#[test]
fn horde_simd_is_checked_and_changes_no_byte() {
    // A maze-like Moving AI map large enough for the vector row passes and arrows.
    let map = movingai("den520d.map");
    let run = |simd: &str, name: &str| {
        let (ints, flows) = (tmp(&format!("{name}.int")), tmp(&format!("{name}.flow")));
        let out = Command::new(env!("CARGO_BIN_EXE_horde"))
            .args(["field", &map, "--goal", "239,11"])
            .args(["--dump-integration", ints.to_str().unwrap()])
            .args(["--dump-flow", flows.to_str().unwrap()])
            .env("HORDE_SIMD", simd)
            .output()
            .expect("run horde");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let dumps = out.status.success().then(|| {
            (
                std::fs::read(&ints).unwrap(),
                std::fs::read(&flows).unwrap(),
            )
        });
        (out.status.code(), err, dumps)
    };
    let (_, _, auto) = run("auto", "simd-auto");
    let auto = auto.expect("a run with HORDE_SIMD=auto");
    for level in ["off", "avx2", "AVX512"] {
        let (code, err, dumps) = run(level, &format!("simd-{level}"));
        assert_eq!(code, Some(0), "HORDE_SIMD={level}: {err}");
        assert!(
            dumps.as_ref() == Some(&auto),
            "HORDE_SIMD={level} changed the dumps"
        );
    }
    let (code, err, _) = run("sse9", "simd-bad");
    assert_eq!(code, Some(2));
    assert!(
        err.contains("HORDE_SIMD=\"sse9\": expected one of off, avx2, avx512, auto"),
        "{err}"
    );
}

#[test]
fn bad_input_is_named_and_exits_non_zero() {
    let map = tmp("bad.map");
    std::fs::write(&map, "type octile\nheight 2\nwidth 2\nmap\n..\n.?\n").unwrap();
    let (code, _, err) = horde(&["field", map.to_str().unwrap(), "--goal", "0,0"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("bad.map:6: unknown terrain character '?' at cell (1, 1)"),
        "{err}"
    );
    let good = tmp("good.map");
    std::fs::write(&good, MAP).unwrap();
    let (code, _, err) = horde(&["field", good.to_str().unwrap(), "--goal", "2,0"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--goal (2, 0) is on a wall (the nearest walkable cell is 1,0)"),
        "{err}"
    );
    let (code, _, err) = horde(&[
        "path",
        good.to_str().unwrap(),
        "--from",
        "0,0",
        "--to",
        "9,9",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("outside the 5x3 map"), "{err}");
    let (code, _, err) = horde(&["field", "/nonexistent/x.map", "--goal", "0,0"]);
    assert_ne!(code, 0);
    assert!(err.contains("/nonexistent/x.map: cannot read"), "{err}");
    let (code, _, err) = horde(&["field", good.to_str().unwrap(), "--goal", "1;1"]);
    assert_ne!(code, 0);
    assert!(err.contains("is not X,Y"), "{err}");
}

#[test]
fn path_reports_cost_and_cells() {
    let map = tmp("p.map");
    std::fs::write(&map, MAP).unwrap();
    let (code, out, _) = horde(&[
        "path",
        map.to_str().unwrap(),
        "--from",
        "0,2",
        "--to",
        "1,0",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("cost       24"), "{out}");
    assert!(out.contains("path       0,2 0,1 1,0"), "{out}");
    let (code, out, _) = horde(&[
        "path",
        map.to_str().unwrap(),
        "--from",
        "0,0",
        "--to",
        "4,0",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("path       none"), "{out}");
}

#[test]
fn scen_json_has_the_agreed_keys_and_passes() {
    let (code, out, err) = horde(&[
        "scen",
        &movingai("arena.map"),
        &movingai("arena.map.scen"),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["queries"], 160);
    assert_eq!(v["mismatches"], 0);
    assert!(v["max_error"].as_f64().unwrap() < 1e-3);
    let (qps, secs) = (
        v["queries_per_second"].as_f64().unwrap(),
        v["seconds"].as_f64().unwrap(),
    );
    assert!((qps * secs - 160.0).abs() < 1e-6 * 160.0, "{v}");
    // Every query settles at least its start; none settles more cells than the map has.
    let settled = v["settled_cells_mean"].as_f64().unwrap();
    assert!((1.0..=49.0 * 49.0).contains(&settled), "{v}");
}

#[test]
fn scen_catches_errors_below_the_last_printed_digit() {
    // A diagonal step costs 1.41421; published as `1` (a √2 ↔ 1 swap) or `2` (a corner cut of
    // 0.586 on two steps) it must not match, though both lack decimals. (A length written with
    // an exponent, `2e1`, is refused as bad input: tests/bad_input.rs.)
    let (map, scen) = (tmp("open3.map"), tmp("open3.scen"));
    std::fs::write(&map, "type octile\nheight 3\nwidth 3\nmap\n...\n...\n...\n").unwrap();
    for (optimal, matches) in [("1.41421", true), ("1", false), ("2", false)] {
        std::fs::write(
            &scen,
            format!("version 1\n0\topen3.map\t3\t3\t0\t0\t1\t1\t{optimal}\n"),
        )
        .unwrap();
        let (code, out, err) = horde(&["scen", map.to_str().unwrap(), scen.to_str().unwrap()]);
        assert_eq!(code, if matches { 0 } else { 1 }, "{optimal}: {out}{err}");
        let want = if matches {
            "mismatches   0"
        } else {
            "mismatches   1"
        };
        assert!(out.contains(want), "{optimal}: {out}");
        assert!(
            out.contains("match        |cost - optimal| <= max(1e-4"),
            "{out}"
        );
    }
}

#[test]
fn scen_fails_on_a_wrong_optimal_length() {
    let scen = tmp("wrong.scen");
    let real = std::fs::read_to_string(movingai("arena.map.scen")).unwrap();
    let mut lines: Vec<String> = real.lines().take(4).map(str::to_owned).collect();
    // Add one to the published length of the last query.
    let mut fields: Vec<String> = lines[3].split('\t').map(str::to_owned).collect();
    let v: f64 = fields[8].parse().unwrap();
    fields[8] = format!("{}", v + 1.0);
    lines[3] = fields.join("\t");
    std::fs::write(&scen, lines.join("\n") + "\n").unwrap();
    let (code, out, _) = horde(&["scen", &movingai("arena.map"), scen.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("mismatches   1"), "{out}");
}

#[test]
fn bench_json_has_the_agreed_keys() {
    let (code, out, err) = horde(&["bench", "--units", "1,5", "--reps", "3", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for key in [
        "map",
        "walkable_cells",
        "field_settled_cells",
        "astar_settled_cells_mean",
        "field_ns",
        "integration_ns",
        "flow_ns",
        "astar_ns_per_query",
        "break_even_units",
        "bfs_ns",
        "pathfinding_dijkstra_all_ns",
        "timeslice_overhead",
        "repair_speedup",
        "moved_goal_speedup",
        "integration_wave_ns",
        "bracket_dijkstra_map_ns",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let num = |key: &str| v[key].as_f64().unwrap_or_else(|| panic!("{key}: {v}"));
    assert_eq!(v["map"], "builtin");
    assert_eq!(v["field_settled_cells"], v["walkable_cells"]);
    // Work, not time: a 4 x 4 building relabels its shadow, not the map; an A* query settles
    // more than its path and fewer cells than the map has.
    let walkable = num("walkable_cells");
    let relabelled = num("repair_relabelled_cells_mean");
    assert!(relabelled >= 1.0 && relabelled < walkable / 2.0, "{v}");
    let settled = num("astar_settled_cells_mean");
    assert!(settled >= 1.0 && settled < walkable, "{v}");
    assert_eq!(
        v["moved_goal_rebuilt"], true,
        "one goal moving changes nearly every value"
    );
    // The ratios are the ratios of the figures printed beside them.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    assert!(
        close(num("repair_speedup"), num("field_ns") / num("repair_ns")),
        "{v}"
    );
    assert!(
        close(
            num("moved_goal_speedup"),
            num("field_ns") / num("moved_goal_ns")
        ),
        "{v}"
    );
    assert!(
        close(
            num("integration_over_bfs"),
            num("integration_ns") / num("bfs_ns")
        ),
        "{v}"
    );
    // The whole field (integration and flow) against the BFS, as issue 31 measures it.
    assert!(
        close(num("field_over_bfs"), num("field_ns") / num("bfs_ns")),
        "{v}"
    );
    // Against `dijkstra_all`, the field as timed in turns with it.
    if cfg!(feature = "peers") {
        assert!(
            close(
                num("dijkstra_all_over_field"),
                num("pathfinding_dijkstra_all_ns") / num("field_beside_dijkstra_all_ns")
            ),
            "{v}"
        );
    } else {
        assert!(v["dijkstra_all_over_field"].is_null(), "{v}");
        assert!(v["field_beside_dijkstra_all_ns"].is_null(), "{v}");
    }
    let units = v["units"].as_array().unwrap();
    assert_eq!(units.len(), 2);
    for (row, n) in units.iter().zip([1, 5]) {
        assert_eq!(row["units"], n);
        let (astar, field) = (
            row["astar_ns"].as_f64().unwrap(),
            row["field_ns"].as_f64().unwrap(),
        );
        assert!(
            close(row["astar_over_field"].as_f64().unwrap(), astar / field),
            "{row}"
        );
    }
    // The peer rows are measured only in a build with the `peers` feature; otherwise null.
    for key in ["pathfinding_dijkstra_all_ns", "bracket_dijkstra_map_ns"] {
        if cfg!(feature = "peers") {
            assert!(v[key].as_f64().is_some_and(|t| t > 0.0), "{key}: {v}");
        } else {
            assert!(v[key].is_null(), "{key}: {v}");
        }
    }
}

#[test]
fn bench_says_which_feature_the_peer_rows_need() {
    let (code, out, err) = horde(&["bench", "--units", "1", "--reps", "1"]);
    assert_eq!(code, 0, "{err}");
    if cfg!(feature = "peers") {
        assert!(out.contains("dijkstra_all / integration ="), "{out}");
        assert!(out.contains("DijkstraMap / integration ="), "{out}");
    } else {
        assert!(
            out.contains("need a build with `--features peers`"),
            "{out}"
        );
        assert!(!out.contains("dijkstra_all / integration"), "{out}");
    }
}

#[test]
fn demo_runs_on_the_built_in_map() {
    let (code, out, err) = horde(&["demo", "--no-pictures"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("built-in map 128x128"), "{out}");
    assert!(out.contains("200 of 200 arrived"), "{out}");
    assert!(out.contains("equals its integration value: yes"), "{out}");
    assert!(out.contains("flow field 16.0 KiB"), "{out}");
}

#[test]
fn dungeon_exports_a_map_a_png_and_tiled_json() {
    let (map, png_path, json) = (tmp("d.map"), tmp("d.png"), tmp("d.json"));
    let (code, out, err) = horde(&[
        "dungeon",
        "--seed",
        "3",
        "--out",
        map.to_str().unwrap(),
        "--png",
        png_path.to_str().unwrap(),
        "--scale",
        "4",
        "--tiled",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("rooms            12 placed of 12 requested"),
        "{out}"
    );
    assert!(out.contains("room crossings   0"), "{out}");
    // The ASCII map printed is the golden one for this seed's library output.
    let ascii: Vec<&str> = out.lines().take(100).collect();
    assert!(ascii.iter().all(|l| l.len() == 100));
    // The .map file is a valid map for every other command.
    let (code, _, err) = horde(&[
        "bench",
        "--map",
        map.to_str().unwrap(),
        "--units",
        "1",
        "--reps",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    // The PNG: 4 px per tile, rock dark, and a room tile green (both away from the legend in
    // the top-left corner).
    let (w, h, buf, _) = decode_png(&png_path);
    assert_eq!((w, h), (400, 400));
    let px = |x: u32, y: u32| {
        let i = ((y * w + x) * 4) as usize;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    assert_eq!(px(399, 399), [38, 40, 48]);
    let (row, col) = ascii
        .iter()
        .enumerate()
        .rev()
        .find_map(|(y, l)| l.rfind('.').map(|x| (y as u32, x as u32)))
        .unwrap();
    assert!(row > 30);
    assert_eq!(px(col * 4 + 2, row * 4 + 2), [86, 178, 92]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(
        json["layers"][0]["data"].as_array().unwrap().len(),
        100 * 100
    );
    assert_eq!(json["layers"][0]["encoding"], "csv");
}

fn decode_png(path: &std::path::Path) -> (u32, u32, Vec<u8>, png::ColorType) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    (info.width, info.height, buf, info.color_type)
}

#[test]
fn field_pictures_show_walls_goals_and_arrows() {
    let out = tmp("ford.png");
    let map = format!("{}/../../docs/maps/ford.map", env!("CARGO_MANIFEST_DIR"));
    let (code, stdout, err) = horde(&[
        "field",
        &map,
        "--goal",
        "15,7",
        "--png",
        out.to_str().unwrap(),
        "--scale",
        "40",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("640x320 px"), "{stdout}");
    let (w, h, buf, ct) = decode_png(&out);
    assert_eq!((w, h, ct), (640, 320, png::ColorType::Rgba));
    let px = |x: u32, y: u32| {
        let i = ((y * w + x) * 4) as usize;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    // A wall cell of the lower block, (7, 5), is drawn in the wall colour at its centre.
    assert_eq!(px(7 * 40 + 20, 5 * 40 + 20), [34, 36, 44]);
    // The goal, (15, 7), is a red disc at its centre.
    assert_eq!(px(15 * 40 + 20, 7 * 40 + 20), [230, 30, 40]);
    // Cell (14, 7) points E at the goal: its arrow's ink is on the horizontal line through the
    // centre, and the arrow head's barbs lie east of the centre, not west.
    let dark = |x: u32, y: u32| px(x, y).iter().map(|&c| c as u32).sum::<u32>() < 150;
    let (cx, cy) = (14 * 40 + 20, 7 * 40 + 20);
    assert!(dark(cx, cy), "shaft through the centre");
    assert!((5..14).any(|d| dark(cx + d, cy - 5)) && (5..14).any(|d| dark(cx + d, cy + 5)));
    assert!(!(5..14).any(|d| dark(cx - d, cy - 5)));
    // Layers can be chosen: terrain alone has no integration colours at the goal's neighbour.
    let (code, _, _) = horde(&[
        "field",
        &map,
        "--goal",
        "15,7",
        "--png",
        out.to_str().unwrap(),
        "--scale",
        "10",
        "--layers",
        "terrain",
    ]);
    assert_eq!(code, 0);
    let (w, _, buf, _) = decode_png(&out);
    let i = ((7 * 10 + 5) * w + 13 * 10 + 5) as usize * 4;
    assert_eq!(&buf[i..i + 3], &[232, 230, 220], "plain ground colour");
}

#[test]
fn the_demo_writes_a_picture_and_an_animation() {
    let dir = tmp("demo-out");
    let (code, out, err) = horde(&["demo", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (w, h, _, _) = decode_png(&dir.join("demo.png"));
    assert_eq!((w, h), (768, 768));
    let frames_said: usize = out
        .split(" frames")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .and_then(|n| n.parse().ok())
        .expect("frame count printed");
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = options
        .read_info(std::fs::File::open(dir.join("demo.gif")).unwrap())
        .unwrap();
    assert_eq!((decoder.width(), decoder.height()), (512, 512));
    let mut frames = 0;
    let mut first = None;
    let mut last = Vec::new();
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        frames += 1;
        if first.is_none() {
            first = Some(frame.buffer.to_vec());
        }
        last = frame.buffer.to_vec();
    }
    assert_eq!(frames, frames_said);
    assert!(frames > 100);
    // The first frame is the full picture; later ones only hold what moved (mostly transparent).
    let first = first.unwrap();
    assert!(first.chunks(4).all(|p| p[3] == 255));
    let transparent = last.chunks(4).filter(|p| p[3] == 0).count();
    assert!(transparent > last.len() / 4 * 9 / 10);
}

fn write_grey_png(path: &std::path::Path, w: u32, h: u32, pixels: &[u8], colour: bool) {
    let file = std::fs::File::create(path).unwrap();
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(if colour {
        png::ColorType::Rgb
    } else {
        png::ColorType::Grayscale
    });
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()
        .unwrap()
        .write_image_data(pixels)
        .unwrap();
}

#[test]
fn greyscale_images_are_maps_and_colour_ones_are_refused() {
    let img = tmp("height.png");
    // Row 0: white, white, black, white; row 1: white, mid grey, black, white; row 2: all white.
    write_grey_png(
        &img,
        4,
        3,
        &[255, 255, 0, 255, 255, 128, 0, 255, 255, 255, 255, 255],
        false,
    );
    let flows = tmp("height.flow.txt");
    let ints = tmp("height.int.txt");
    let (code, _, err) = horde(&[
        "field",
        img.to_str().unwrap(),
        "--goal",
        "0,0",
        "--dump-flow",
        flows.to_str().unwrap(),
        "--dump-integration",
        ints.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let ints = std::fs::read_to_string(ints).unwrap();
    let rows: Vec<Vec<&str>> = ints.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(rows[0][2], "#");
    assert_eq!(rows[1][2], "#");
    // Grey 128 is terrain cost 1 + round(127 × 253 / 255) = 127: leaving it costs 1270 straight.
    assert_eq!(rows[1][1], (127 * 10 + 10).to_string());
    let colour = tmp("colour.png");
    write_grey_png(&colour, 2, 1, &[255, 0, 0, 0, 255, 0], true);
    let (code, _, err) = horde(&["field", colour.to_str().unwrap(), "--goal", "0,0"]);
    assert_ne!(code, 0);
    assert!(err.contains("must be greyscale"), "{err}");
    let (code, _, err) = horde(&[
        "field",
        img.to_str().unwrap(),
        "--goal",
        "0,0",
        "--max-cells",
        "11",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("exceeds --max-cells 11"), "{err}");
}

#[test]
fn sim_reports_the_agreed_keys_and_repeats_bit_for_bit() {
    let map = format!("{}/../../docs/maps/door.map", env!("CARGO_MANIFEST_DIR"));
    let gif_path = tmp("door.gif");
    let args = [
        "sim",
        &map,
        "--goal",
        "50,20",
        "--agents",
        "200",
        "--spawn",
        "2,2,27,37",
        "--steps",
        "3000",
        "--json",
    ];
    let (code, out, err) = horde(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for key in [
        "agents",
        "steps",
        "arrived_fraction",
        "arrive_p50_s",
        "arrive_p95_s",
        "max_overlap",
        "inside_wall_events",
        "ms_per_step",
        "state_hash",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["agents"], 200);
    assert_eq!(v["arrived_fraction"], 1.0, "every agent passes the door");
    assert_eq!(v["inside_wall_events"], 0);
    assert!(v["max_overlap"].as_f64().unwrap() < 0.5);
    // The same run on one thread gives the same final positions, bit for bit.
    assert_eq!(json_on_one_thread(&args)["state_hash"], v["state_hash"]);
    // A GIF of the run: one frame per `--every` steps plus the first.
    let (code, out, err) = horde(&[
        "sim",
        &map,
        "--goal",
        "50,20",
        "--agents",
        "50",
        "--steps",
        "40",
        "--every",
        "4",
        "--gif",
        gif_path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let steps = v["steps"].as_u64().unwrap() as usize;
    let mut decoder = gif::DecodeOptions::new()
        .read_info(std::fs::File::open(&gif_path).unwrap())
        .unwrap();
    let mut frames = 0;
    while decoder.read_next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert_eq!(frames, 1 + steps / 4);
    assert_eq!(v["gif_frames"].as_u64().unwrap() as usize, frames);
}

/// Run `horde field` and return (integration dump, flow dump).
fn field_dumps(tag: &str, args: &[&str]) -> (String, String) {
    let (ints, flows) = (tmp(&format!("{tag}-i.txt")), tmp(&format!("{tag}-f.txt")));
    let mut all: Vec<&str> = vec!["field"];
    all.extend_from_slice(args);
    let (i, f) = (ints.display().to_string(), flows.display().to_string());
    all.extend_from_slice(&["--dump-integration", &i, "--dump-flow", &f]);
    let (code, out, err) = horde(&all);
    assert_eq!(code, 0, "{out}{err}");
    (
        std::fs::read_to_string(ints).unwrap(),
        std::fs::read_to_string(flows).unwrap(),
    )
}

#[test]
fn edited_and_moved_fields_equal_a_fresh_build_of_the_edited_map() {
    use horde::{CostEdit, WALL};
    let edits = [
        "60,60,63,63,255",
        "20,30,40,33,7",
        "61,61,62,62,1",
        "100,10,90,14,255",
        "95,12,95,12,1",
    ];
    let mut map = horde::maps::demo_map();
    for e in edits {
        let n: Vec<u32> = e.split(',').map(|p| p.parse().unwrap()).collect();
        let min = glam::UVec2::new(n[0].min(n[2]), n[1].min(n[3]));
        let max = glam::UVec2::new(n[0].max(n[2]), n[1].max(n[3]));
        let cost = n[4] as u8;
        map.apply_edits(&[CostEdit::Rect { min, max, cost }])
            .unwrap();
    }
    assert_eq!(map.get(glam::UVec2::new(60, 60)), Some(WALL));
    let file = tmp("edited.map");
    std::fs::write(&file, horde::io::write_map(&map).unwrap()).unwrap();
    let file = file.display().to_string();
    let goal = (0..128)
        .map(|x| glam::UVec2::new(x, 70))
        .find(|&c| map.is_walkable(c) && map.is_walkable(c + glam::UVec2::X))
        .unwrap();
    let (gx, gy) = (goal.x.to_string(), goal.y.to_string());
    let g = format!("{gx},{gy}");
    let moved = format!("{},{gy}", goal.x + 1);
    for model in ["10-14", "octile"] {
        let mut args = vec!["builtin", "--goal", &g, "--model", model];
        for e in &edits {
            args.extend_from_slice(&["--edit", e]);
        }
        let repaired = field_dumps("edited", &args);
        let fresh = field_dumps("fresh", &[&file, "--goal", &g, "--model", model]);
        assert_eq!(repaired, fresh, "{model}: edits");
        args.extend_from_slice(&["--move-goal", &moved]);
        let repaired = field_dumps("moved", &args);
        let fresh = field_dumps("fresh-moved", &[&file, "--goal", &moved, "--model", model]);
        assert_eq!(repaired, fresh, "{model}: moved goal");
    }
}

#[test]
fn bad_edits_are_named_and_exit_non_zero() {
    for (edit, says) in [
        ("1,2,3,4", "X0,Y0,X1,Y1,COST"),
        ("1,2,3,4,0", "cost 0"),
        ("1,2,3,4,300", "cost 300"),
        ("1,2,x,4,5", "'x'"),
        ("120,120,130,130,255", "130"),
    ] {
        let (code, out, err) = horde(&["field", "builtin", "--goal", "64,64", "--edit", edit]);
        assert_ne!(code, 0, "{edit}: {out}");
        assert!(err.contains(says), "{edit}: {err}");
    }
    let (code, _, err) = horde(&[
        "field",
        "builtin",
        "--goal",
        "64,64",
        "--move-goal",
        "500,1",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("500"), "{err}");
}

#[test]
fn counts_and_numbers_out_of_range_are_refused_before_any_work() {
    // (arguments, what stderr must say): each names the flag, the value and the allowed range,
    // exits 2 before anything is built or written, in a short message.
    let out = tmp("never-written.map");
    let out_arg = out.to_str().unwrap().to_owned();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "sim",
                "builtin",
                "--goal",
                "64,64",
                "--agents",
                "18446744073709551615",
            ],
            "'--agents <AGENTS>': too large (at most 10000000)",
        ),
        (
            vec!["sim", "builtin", "--goal", "64,64", "--agents", "1000000"],
            "--agents 1000000: the spawn area has 13262 walkable cells, room for at most 53048",
        ),
        (
            vec![
                "sim",
                "builtin",
                "--goal",
                "64,64",
                "--collision-passes",
                "1000000000",
            ],
            "'--collision-passes <COLLISION_PASSES>': too large (at most 16)",
        ),
        (
            vec!["sim", "builtin", "--goal", "64,64", "--speed", "1e20"],
            "'--speed <SPEED>': outside (0, 100]",
        ),
        (
            vec!["sim", "builtin", "--goal", "64,64", "--dt", "1e30"],
            "'--dt <DT>': outside (0, 1]",
        ),
        (
            vec!["sim", "builtin", "--goal", "64,64", "--dt", "NaN"],
            "'--dt <DT>': outside (0, 1]",
        ),
        (
            vec!["sim", "builtin", "--goal", "64,64", "--speed", "20"],
            "a step moves an agent at most 0.45 cell",
        ),
        (
            vec!["sim", "builtin", "--goal", "64,64", "--radius", "1e9"],
            "'--radius <RADIUS>': outside (0, 2]",
        ),
        (
            vec![
                "sim", "builtin", "--goal", "64,64", "--gif", "x.gif", "--scale", "0",
            ],
            "'--scale <SCALE>': too small (at least 1)",
        ),
        (
            vec!["dungeon", "--rooms", "1000000000", "--out", &out_arg],
            "'--rooms <ROOMS>': too large (at most 100000)",
        ),
        (
            vec!["dungeon", "--rooms", "5000", "--out", &out_arg],
            "5000 rooms cannot fit in a 100x100 map with rooms of side 5 or more (at most 256)",
        ),
        (
            vec!["dungeon", "--loops=-1", "--out", &out_arg],
            "'--loops <LOOPS>': outside [0, 1]",
        ),
        (
            vec!["bench", "--units", "10000000"],
            "'--units <UNITS>': too large (at most 100000)",
        ),
        (
            vec!["bench", "--reps", "1000000000"],
            "'--reps <REPS>': too large (at most 10000)",
        ),
        (
            vec!["demo", "--units", "1000000000"],
            "'--units <UNITS>': too large (at most 100000)",
        ),
        (
            vec![
                "--max-cells",
                "18446744073709551615",
                "field",
                "x.png",
                "--goal",
                "1,1",
            ],
            "'--max-cells <MAX_CELLS>': too large (at most 1073741824)",
        ),
        (
            vec![
                "path",
                "builtin",
                "--from",
                "1,1",
                "--to",
                "2,2",
                "--scale",
                "99999999999",
            ],
            "'--scale <SCALE>': too large (at most 64)",
        ),
        (
            vec!["sim", "builtin", "--goal", "64,64", "--agents", "12x"],
            "'--agents <AGENTS>': not a whole number (allowed: 1 to 10000000)",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = horde(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(err.len() < 1024, "{args:?}: {} bytes", err.len());
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
}

#[test]
fn outputs_are_checked_first_and_written_whole_or_not_at_all() {
    // An output whose folder does not exist is refused before any other output is written.
    let map = tmp("atomic-p.map");
    let (code, _, err) = horde(&[
        "dungeon",
        "--out",
        map.to_str().unwrap(),
        "--png",
        "/nonexistent/x.png",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--png /nonexistent/x.png: folder /nonexistent does not exist"),
        "{err}"
    );
    assert!(!map.exists(), "wrote {} before failing", map.display());

    // A write that fails midway (here the file-size limit) leaves the old file as it was and
    // no partial or temporary file beside it.
    let dir = tmp("atomic-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let old = dir.join("old.map");
    std::fs::write(&old, "the previous good file\n").unwrap();
    let script = format!(
        "trap '' XFSZ; ulimit -f 8; exec '{}' dungeon --size 300x300 --rooms 40 --out '{}'",
        env!("CARGO_BIN_EXE_horde"),
        old.display()
    );
    let out = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("cannot write {}", old.display())),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&old).unwrap(),
        "the previous good file\n"
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("old.map")]);
}

#[test]
fn an_interrupted_sim_closes_a_valid_gif() {
    let gif_path = tmp("interrupted.gif");
    let child = Command::new(env!("CARGO_BIN_EXE_horde"))
        .args([
            "sim",
            "builtin:512x512",
            "--goal",
            "256,256",
            // Enough agents that they cannot all arrive before the interrupt (that takes
            // over 20 s here), whatever the machine.
            "--agents",
            "20000",
            "--steps",
            "1000000",
            "--every",
            "5",
            "--gif",
            gif_path.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let it draw some frames, then press Ctrl-C.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted after"), "{err}");
    // Every frame decodes and the file ends with the GIF trailer.
    let bytes = std::fs::read(&gif_path).unwrap();
    assert_eq!(bytes.last(), Some(&0x3b), "no GIF trailer");
    let mut decoder = gif::DecodeOptions::new()
        .read_info(std::io::Cursor::new(bytes))
        .unwrap();
    let mut frames = 0;
    while decoder.read_next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert!(frames >= 2, "{frames} frames");
}

#[test]
fn huge_and_endless_inputs_are_refused_before_they_are_read() {
    // An endless file: refused after its first bytes hold no map header.
    let (code, _, err) = horde(&["field", "/dev/zero", "--goal", "0,0"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("/dev/zero: cannot read: longer than the 4096 bytes its header allows"),
        "{err}"
    );
    assert!(err.len() < 1024);
    // A 60-byte PNG whose header claims 100000 x 100000: refused by the grid's limit before a
    // pixel is decoded, even with --max-cells at its largest.
    let png_path = tmp("huge.png");
    let chunk = |kind: &[u8], data: &[u8]| {
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        c.extend_from_slice(&body);
        c.extend_from_slice(&crc32(&body).to_be_bytes());
        c
    };
    let mut ihdr = 100_000u32.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&100_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend(chunk(b"IHDR", &ihdr));
    bytes.extend(chunk(b"IEND", &[]));
    std::fs::write(&png_path, bytes).unwrap();
    let (code, _, err) = horde(&[
        "--max-cells",
        "1073741824",
        "field",
        png_path.to_str().unwrap(),
        "--goal",
        "1,1",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("grid size 100000x100000 is too large"),
        "{err}"
    );
}

/// CRC-32 (the PNG one), bit by bit: a test needs no table.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

#[test]
fn messages_quote_little_and_escape_control_bytes() {
    let cr = tmp("cr.map");
    std::fs::write(&cr, "type octile\rheight 3\rwidth 3\rmap\r...\r...\r...\r").unwrap();
    let bom = tmp("bom.map");
    std::fs::write(
        &bom,
        "\u{feff}type octile\nheight 3\nwidth 3\nmap\n...\n...\n...\n",
    )
    .unwrap();
    let long = tmp("long-header.map");
    std::fs::write(
        &long,
        format!("type octile\nheight 3\nwidth {}\nmap\n", "9".repeat(3000)),
    )
    .unwrap();
    for (path, want) in [
        (&cr, "has more than two words"),
        (&bom, "found '\\u{feff}type octile'"),
        (&long, "is not a whole number"),
    ] {
        let (code, _, err) = horde(&["field", path.to_str().unwrap(), "--goal", "0,0"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(want), "{err}");
        assert!(err.len() < 200, "{} bytes: {err}", err.len());
        assert!(
            !err.trim_end().chars().any(|c| c.is_control() && c != '\n'),
            "{err:?}"
        );
    }
    let (code, _, err) = horde(&["field", "builtin", "--goal", "99999999999,1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("'99999999999' in '99999999999,1' is too large (at most 4294967295)"),
        "{err}"
    );
}

#[test]
fn long_and_odd_argument_values_come_back_cut_to_a_screenful() {
    // A value of 5,000 characters (or with a control character) in every kind of argument:
    // refused with exit 2, the message under 1 KB and free of control characters, whether
    // clap or the program refuses it, and nothing written.
    let long = "9".repeat(5000);
    let out = tmp("long-args.map");
    let out_arg = out.to_str().unwrap().to_owned();
    let with = |prefix: &str| format!("{prefix}{long}");
    let cases: Vec<Vec<String>> = vec![
        vec![
            "sim".into(),
            "builtin".into(),
            "--goal".into(),
            "1,1".into(),
            "--agents".into(),
            long.clone(),
        ],
        vec!["sim".into(), "builtin".into(), "--goal".into(), with("1,")],
        vec![
            "sim".into(),
            "builtin".into(),
            "--goal".into(),
            "1,1".into(),
            "--spawn".into(),
            with("0,0,1,"),
        ],
        vec![
            "sim".into(),
            "builtin".into(),
            "--goal".into(),
            "1,1".into(),
            "--dt".into(),
            with("0."),
        ],
        vec![
            "field".into(),
            "builtin".into(),
            "--goal".into(),
            "1,1".into(),
            "--edit".into(),
            with("1,2,3,4,"),
        ],
        vec![
            "field".into(),
            with("builtin:1x"),
            "--goal".into(),
            "1,1".into(),
        ],
        vec![
            "dungeon".into(),
            "--room-size".into(),
            with("5.."),
            "--out".into(),
            out_arg.clone(),
        ],
        vec![
            "dungeon".into(),
            "--size".into(),
            with("40x"),
            "--out".into(),
            out_arg.clone(),
        ],
        vec!["bench".into(), "--size".into(), with("x")],
        vec![
            "sim".into(),
            "builtin".into(),
            "--goal".into(),
            "1\u{7},1".into(),
        ],
        vec![
            "field".into(),
            format!("{long}.map"),
            "--goal".into(),
            "1,1".into(),
        ],
        vec![
            "dungeon".into(),
            "--out".into(),
            format!("{}/{long}.map", out.parent().unwrap().display()),
        ],
        vec![
            "dungeon".into(),
            "--out".into(),
            format!("/nonexistent/{long}/d.map"),
        ],
        vec![
            "field".into(),
            "builtin".into(),
            "--goal".into(),
            "1,1".into(),
            "--png".into(),
            format!("/tmp/{long}/x.png"),
        ],
    ];
    for args in cases {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = horde(&argv);
        let shown: Vec<String> = args.iter().map(|a| a.chars().take(30).collect()).collect();
        assert_eq!(code, 2, "{shown:?}: {err}");
        assert!(err.len() < 1024, "{shown:?}: {} bytes", err.len());
        assert!(
            !err.chars().any(|c| c.is_control() && c != '\n'),
            "{shown:?}: {err:?}"
        );
        assert!(!out.exists(), "{shown:?} wrote {out:?}");
    }
}

#[test]
fn route_json_has_the_agreed_keys_and_its_tiles_reach_the_goal() {
    // A den520d scenario with a published optimum of 300.581 (octile).
    let png = tmp("route.png");
    let (code, out, err) = horde(&[
        "route",
        &movingai("den520d.map"),
        "--from",
        "10,140",
        "--to",
        "49,84",
        "--model",
        "octile",
        "--sector",
        "16",
        "--json",
        "--png",
        png.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for key in [
        "cost",
        "optimal_cost",
        "excess",
        "route_us",
        "first_tile_us",
        "sectors_on_route",
    ] {
        assert!(!v[key].is_null(), "{key} missing: {v}");
    }
    let (cost, optimal) = (
        v["cost"].as_f64().unwrap(),
        v["optimal_cost"].as_f64().unwrap(),
    );
    assert!((optimal - 300.581).abs() < 1e-3, "{v}");
    assert!(cost >= optimal - 1e-9 && cost <= optimal * 1.05, "{v}");
    let excess = v["excess"].as_f64().unwrap();
    assert!((excess - (cost / optimal - 1.0)).abs() < 1e-12, "{v}");
    // The route crosses sectors of 16 cells: from x 10 to 49 and y 140 to 84 is at least 4.
    assert!(v["sectors_on_route"].as_u64().unwrap() >= 4, "{v}");
    let (w, h, _, _) = decode_png(&png);
    assert!(w >= 256 && h >= 257, "{w}x{h}");

    // A goal cut off from the start: no route, exit 1, known without a search.
    let map = tmp("split.map");
    std::fs::write(
        &map,
        "type octile\nheight 3\nwidth 20\nmap\n.........@..........\n.........@..........\n.........@..........\n",
    )
    .unwrap();
    let (code, out, _) = horde(&[
        "route",
        map.to_str().unwrap(),
        "--from",
        "0,0",
        "--to",
        "19,2",
        "--sector",
        "8",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("cannot reach"), "{out}");
}

#[test]
fn scen_route_reports_excess_over_the_optimum_and_reaches_every_goal() {
    let (code, out, err) = horde(&[
        "scen",
        &movingai("arena.map"),
        &movingai("arena.map.scen"),
        "--route",
        "--sector",
        "16",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["queries"], 160);
    assert_eq!(v["unreached"], 0);
    let (mean, p95, max) = (
        v["mean_excess"].as_f64().unwrap(),
        v["p95_excess"].as_f64().unwrap(),
        v["max_excess"].as_f64().unwrap(),
    );
    assert!(0.0 <= mean && mean <= p95.max(mean) && p95 <= max, "{v}");
    assert!(mean <= 0.01 && p95 <= 0.03, "{v}");
    assert!(v["queries_per_second"].as_f64().unwrap() > 0.0, "{v}");
}

#[test]
fn scen_route_compare_measures_the_plain_searches_or_says_what_it_needs() {
    let args = [
        "scen",
        &movingai("arena.map"),
        &movingai("arena.map.scen"),
        "--route",
        "--compare",
        "--json",
    ];
    let (code, out, err) = horde(&args);
    if cfg!(feature = "peers") {
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        for key in ["astar_qps", "pathfinding_astar_qps"] {
            assert!(v[key].as_f64().unwrap() > 0.0, "{key}: {v}");
        }
        let ratio = v["queries_per_second"].as_f64().unwrap()
            / v["pathfinding_astar_qps"].as_f64().unwrap();
        assert!((v["speedup_vs_pathfinding"].as_f64().unwrap() - ratio).abs() < 1e-9 * ratio);
    } else {
        assert_eq!(code, 2, "{out}");
        assert!(err.contains("--features peers"), "{err}");
    }
    // Only with --route.
    let (code, _, err) = horde(&[
        "scen",
        &movingai("arena.map"),
        &movingai("arena.map.scen"),
        "--compare",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--route"), "{err}");
}

#[test]
fn bench_huge_json_has_the_agreed_keys() {
    let (code, out, err) = horde(&[
        "bench",
        "--huge",
        "--size",
        "256x256",
        "--queries",
        "5",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for key in [
        "build_ms",
        "route_open_ms",
        "first_tile_ms",
        "route_maze_ms",
        "edit_ms",
        "bytes_per_cell",
        "tile_excess",
    ] {
        let x = v[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing: {v}"));
        assert!(x.is_finite() && x >= 0.0, "{key} = {x}");
    }
    assert_eq!(v["size"], "256x256");
    assert_eq!(v["queries"], 5);
    // The graph of a 256 x 256 map: 64 sectors of 32, at least a portal node between each two.
    assert!(v["nodes"].as_u64().unwrap() >= 2 * 112, "{v}");
    let bytes = v["bytes_per_cell"].as_f64().unwrap();
    assert!((2.0..8.0).contains(&bytes), "{v}");
    assert!(v["tile_excess"].as_f64().unwrap() < 0.1, "{v}");
    // Corner to corner with a landmark at the goal's corner, the search walks little more than
    // the route, and expands fewer nodes than the maze's search.
    let open = v["route_open_expanded"].as_u64().unwrap();
    assert!(open > 0 && open * 8 < v["nodes"].as_u64().unwrap(), "{v}");
    assert!(open < v["route_maze_expanded"].as_u64().unwrap(), "{v}");
    assert!(v["route_open_octile_ms"].as_f64().unwrap() > 0.0, "{v}");
    // Too small for the maze's walls every 16 columns.
    let (code, _, err) = horde(&["bench", "--huge", "--size", "16x16"]);
    assert_eq!(code, 2);
    assert!(err.contains("--size 16x16"), "{err}");
}

#[test]
fn sim_deals_several_radii_out_in_turn() {
    let hash = |radius: &str| {
        let (code, out, err) = horde(&[
            "sim", "builtin", "--goal", "64,64", "--agents", "60", "--steps", "40", "--radius",
            radius, "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        v["state_hash"].as_str().unwrap().to_owned()
    };
    let small = hash("0.3");
    // One radius twice is that radius; two different ones are neither.
    assert_eq!(hash("0.3,0.3"), small);
    let mixed = hash("0.3,0.45");
    assert_ne!(mixed, small);
    assert_ne!(mixed, hash("0.45"));
    assert_ne!(
        mixed,
        hash("0.45,0.3"),
        "the first agent takes the first radius"
    );
    let (code, _, err) = horde(&["sim", "builtin", "--goal", "64,64", "--radius", "0.3,2.5"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("'--radius <RADIUS>': 2.5: outside (0, 2]"),
        "{err}"
    );
}

#[test]
fn sim_runs_several_groups_each_to_its_own_goal() {
    // An open 40 x 16 room: two groups of 30 swap ends.
    let map = tmp("swap.map");
    let mut text = String::from("type octile\nheight 16\nwidth 40\nmap\n");
    for _ in 0..16 {
        text.push_str(&".".repeat(40));
        text.push('\n');
    }
    std::fs::write(&map, text).unwrap();
    let map = map.to_str().unwrap();
    let args = [
        "sim",
        map,
        "--group",
        "37,8:0,2,5,13:30",
        "--group",
        "2,8:34,2,39,13:30",
        "--steps",
        "2000",
        "--json",
    ];
    let (code, out, err) = horde(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["agents"], 60);
    assert_eq!(v["arrived_fraction"], 1.0, "{v}");
    assert_eq!(v["inside_wall_events"], 0);
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    for (g, goal) in groups.iter().zip([[37, 8], [2, 8]]) {
        assert_eq!(g["goal"], serde_json::json!(goal));
        assert_eq!(g["agents"], 30);
        assert_eq!(g["reachable_agents"], 30);
        assert_eq!(g["arrived_fraction"], 1.0);
        let last = g["all_arrived_s"].as_f64().unwrap();
        assert!(
            last >= g["arrive_p95_s"].as_f64().unwrap() && last > 0.0,
            "{g}"
        );
        // Each agent walks at least 28 cells at 4 cells per second.
        assert!(g["arrive_p50_s"].as_f64().unwrap() > 28.0 / 4.0, "{g}");
    }
    assert!(v["max_stuck_s"].as_f64().unwrap() >= 0.0);
    // Deterministic across thread counts, as with one group.
    assert_eq!(json_on_one_thread(&args)["state_hash"], v["state_hash"]);
    // One group given with --group runs as --goal, --spawn and --agents do.
    let (_, as_group, _) = horde(&[
        "sim",
        map,
        "--group",
        "37,8:0,2,5,13:30",
        "--steps",
        "300",
        "--json",
    ]);
    let (_, as_flags, _) = horde(&[
        "sim", map, "--goal", "37,8", "--spawn", "0,2,5,13", "--agents", "30", "--steps", "300",
        "--json",
    ]);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(as_group.trim()).unwrap(),
        serde_json::from_str(as_flags.trim()).unwrap(),
    );
    assert_eq!(a["state_hash"], b["state_hash"]);
    // Refused: --group beside --goal, a goal on a wall, a spawn rectangle off the map.
    let (code, _, err) = horde(&["sim", map, "--goal", "1,1", "--group", "37,8:0,2,5,13:30"]);
    assert_eq!(code, 2);
    assert!(err.contains("--goal") && err.contains("--group"), "{err}");
    let (code, _, err) = horde(&["sim", map, "--group", "37,8:0,2,45,13:30"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--group 37,8:0,2,45,13:30 (group 0): spawn 0,2,45,13: outside the 40x16 map"),
        "{err}"
    );
    let (code, _, err) = horde(&["sim", map]);
    assert_eq!(code, 2);
    assert!(err.contains("--goal"), "{err}");
}
