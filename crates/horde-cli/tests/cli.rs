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

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("horde-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn movingai(name: &str) -> String {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = std::env::var("HORDE_MOVINGAI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| here.join("../../../shared/maps/movingai"))
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
    assert!(err.contains("goal (2, 0) is on a wall"), "{err}");
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
    assert!(v["queries_per_second"].as_f64().unwrap() > 0.0);
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
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["map"], "builtin");
    assert_eq!(v["field_settled_cells"], v["walkable_cells"]);
    assert!(v["field_ns"].as_f64().unwrap() > 0.0);
}

#[test]
fn demo_runs_on_the_built_in_map() {
    let (code, out, err) = horde(&[]);
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
    // The PNG: 4 px per tile, rock dark, and a room tile green.
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (400, 400));
    let px = |x: u32, y: u32| {
        let i = ((y * info.width + x) * 3) as usize;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    assert_eq!(px(0, 0), [38, 40, 48]);
    let (row, col) = ascii
        .iter()
        .enumerate()
        .find_map(|(y, l)| l.find('.').map(|x| (y as u32, x as u32)))
        .unwrap();
    assert_eq!(px(col * 4 + 2, row * 4 + 2), [86, 178, 92]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(
        json["layers"][0]["data"].as_array().unwrap().len(),
        100 * 100
    );
    assert_eq!(json["layers"][0]["encoding"], "csv");
}
