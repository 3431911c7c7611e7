//! `horde serve` from outside: the page and its files over HTTP, the message protocol over a
//! real WebSocket (malformed, refused and oversized messages, rate limits, independent tabs),
//! and the playground driven in headless Chromium (`tests/browser/playground.mjs`).
//!
//! The browser test needs Node.js, Chromium (`/usr/bin/chromium` or `$CHROMIUM`) and
//! `npm ci` run in `tests/browser`; without them it is skipped with a note, unless
//! `HORDE_REQUIRE_BROWSER` is set (CI sets it), when it fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

/// A `horde serve` on a free port, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(map: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_horde"))
            .args(["serve", map, "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("horde runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening on http://127.0.0.1:")
            .unwrap_or_else(|| panic!("first line: {line:?}"))
            .parse()
            .unwrap();
        Server { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(port: u16, path: &str) -> (u32, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    (status, text)
}

#[test]
fn the_page_and_its_files_are_served() {
    let server = Server::start("builtin");
    let (status, page) = get(server.port, "/");
    assert_eq!(status, 200);
    assert!(page.contains("<canvas id=\"view\">") && page.contains("/app.js"));
    let (status, script) = get(server.port, "/app.js");
    assert_eq!(status, 200);
    assert!(script.contains("content-type: text/javascript") && script.contains("new WebSocket"));
    let (status, style) = get(server.port, "/style.css");
    assert_eq!(status, 200);
    assert!(style.contains("content-type: text/css"));
    assert_eq!(get(server.port, "/../../etc/passwd").0, 404);
    assert_eq!(get(server.port, "/map.map").0, 404);
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(port: u16) -> Socket {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/ws"))
        .await
        .unwrap();
    ws
}

/// The next text message of type `t`, skipping frames and other texts (within 10 s).
async fn next_text(ws: &mut Socket, t: &str) -> serde_json::Value {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(text))) => {
                    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                    if v["t"] == t {
                        return v;
                    }
                }
                Some(Ok(_)) => {}
                other => panic!("waiting for {t}: {other:?}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {t} within 10 s"))
}

/// The next binary frame with tag `tag`.
async fn next_frame(ws: &mut Socket, tag: u8) -> Vec<u8> {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Binary(b))) if b[0] == tag => return b.to_vec(),
                Some(Ok(_)) => {}
                other => panic!("waiting for frame {tag}: {other:?}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no frame {tag} within 10 s"))
}

async fn say(ws: &mut Socket, text: &str) {
    ws.send(Message::Text(text.into())).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_answers_bad_messages_with_errors_and_goes_on() {
    let server = Server::start("builtin");
    let mut ws = connect(server.port).await;
    let hello = next_text(&mut ws, "hello").await;
    assert!(hello["tabs"].as_str().unwrap().starts_with("independent"));
    let limit = hello["max_upload_bytes"].as_u64().unwrap() as usize;
    let map = next_frame(&mut ws, 1).await;
    assert_eq!(u32::from_le_bytes(map[4..8].try_into().unwrap()), 128);
    assert_eq!(map.len(), 28 + 128 * 128);

    let cases = [
        ("not json", "bad message: expected"),
        (r#"{"t":"fly"}"#, "unknown variant `fly`"),
        (
            r#"{"t":"goal","group":9,"x":1,"y":1}"#,
            "group 9 is out of range: allowed 0 to 7",
        ),
        (
            r#"{"t":"goal","group":0,"x":500,"y":1}"#,
            "outside the 128x128 map",
        ),
        (r#"{"t":"undo"}"#, "nothing to undo"),
    ];
    for (text, says) in cases {
        say(&mut ws, text).await;
        let e = next_text(&mut ws, "error").await;
        assert!(e["message"].as_str().unwrap().contains(says), "{text}: {e}");
    }
    ws.send(Message::Binary(b"Xfoo".to_vec().into()))
        .await
        .unwrap();
    let e = next_text(&mut ws, "error").await;
    assert!(
        e["message"].as_str().unwrap().contains("not byte 88"),
        "{e}"
    );
    // Over the map limit: refused with a message, the socket stays.
    let mut big = vec![b'.'; limit + 10];
    big[0] = b'M';
    ws.send(Message::Binary(big.into())).await.unwrap();
    let e = next_text(&mut ws, "error").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(&format!("at most {limit} bytes")),
        "{e}"
    );
    // A good request still works: a goal, answered by its field.
    say(&mut ws, r#"{"t":"goal","group":2,"x":64.5,"y":64.5}"#).await;
    let field = next_frame(&mut ws, 2).await;
    assert_eq!(field[1], 2);
    // Far over the socket's own limit: an error, then the socket closes; the server goes on.
    let huge = vec![b'M'; 2 * limit + 1];
    let _ = ws.send(Message::Binary(huge.into())).await;
    let e = next_text(&mut ws, "error").await;
    assert!(
        e["message"].as_str().unwrap().contains("connection closed"),
        "{e}"
    );
    let mut again = connect(server.port).await;
    next_text(&mut again, "hello").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_requests_is_cut_to_the_rate_limit() {
    let server = Server::start("builtin");
    let mut ws = connect(server.port).await;
    next_text(&mut ws, "hello").await;
    for _ in 0..400 {
        say(&mut ws, r#"{"t":"pause"}"#).await;
    }
    let e = next_text(&mut ws, "error").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("too many requests"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabs_are_independent() {
    let server = Server::start("builtin:64x48");
    let mut a = connect(server.port).await;
    let mut b = connect(server.port).await;
    next_frame(&mut a, 1).await;
    next_frame(&mut b, 1).await;
    say(
        &mut a,
        r#"{"t":"paint","stroke":1,"x0":0,"y0":0,"x1":63,"y1":47,"brush":2,"cost":255}"#,
    )
    .await;
    let painted = next_frame(&mut a, 1).await;
    say(&mut a, r#"{"t":"save"}"#).await;
    say(&mut b, r#"{"t":"save"}"#).await;
    let (sa, sb) = (
        next_text(&mut a, "map_file").await,
        next_text(&mut b, "map_file").await,
    );
    assert_ne!(sa["text"], sb["text"], "b's map is its own");
    // The frame holds the painted rectangle: the whole diagonal, corner to corner.
    let rect: Vec<u32> = (12..28)
        .step_by(4)
        .map(|at| u32::from_le_bytes(painted[at..at + 4].try_into().unwrap()))
        .collect();
    assert_eq!(rect, [0, 0, 64, 48]);
    let text = sa["text"].as_str().unwrap();
    let saved: Vec<u8> = text.lines().skip(4).flat_map(|l| l.bytes()).collect();
    for (i, &c) in painted[28..].iter().enumerate() {
        assert_eq!(
            c == 255,
            saved[i] == b'@' || saved[i] == b'T' || saved[i] == b'O',
            "cell {i}"
        );
    }
}

#[test]
fn a_busy_port_or_a_bad_address_is_refused_clearly() {
    let server = Server::start("builtin");
    let out = Command::new(env!("CARGO_BIN_EXE_horde"))
        .args(["serve", "--port", &server.port.to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{}", server.port)),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_horde"))
        .args(["serve", "--bind", "somewhere"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bind"));
    let out = Command::new(env!("CARGO_BIN_EXE_horde"))
        .args(["serve", "builtin:3000x10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3000x10: at most 2048x2048"), "{err}");
}

fn browser_ready(dir: &Path) -> Result<PathBuf, String> {
    let chromium = PathBuf::from(std::env::var("CHROMIUM").unwrap_or("/usr/bin/chromium".into()));
    if !chromium.exists() {
        return Err(format!("no Chromium at {}", chromium.display()));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Err("no node".into());
    }
    if !dir.join("node_modules/playwright-core").exists() {
        return Err(format!("run `npm ci` in {}", dir.display()));
    }
    Ok(chromium)
}

fn pixel(img: &[u8], width: usize, x: f64, y: f64) -> [u8; 3] {
    let i = 4 * (y.round() as usize * width + x.round() as usize);
    [img[i], img[i + 1], img[i + 2]]
}

fn near(a: [u8; 3], b: [u8; 3], tolerance: i32) -> bool {
    (0..3).all(|k| (a[k] as i32 - b[k] as i32).abs() <= tolerance)
}

#[test]
fn the_browser_paints_a_wall_places_a_goal_and_watches_500_arrive() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    let chromium = match browser_ready(&dir) {
        Ok(c) => c,
        Err(why) if std::env::var_os("HORDE_REQUIRE_BROWSER").is_none() => {
            eprintln!("skipped: {why} (set HORDE_REQUIRE_BROWSER to make this a failure)");
            return;
        }
        Err(why) => panic!("HORDE_REQUIRE_BROWSER is set but {why}"),
    };
    let out = tempfile::tempdir().unwrap();
    let map = out.path().join("open.map");
    let mut text = String::from("type octile\nheight 64\nwidth 96\nmap\n");
    for _ in 0..64 {
        text.push_str(&".".repeat(96));
        text.push('\n');
    }
    std::fs::write(&map, text).unwrap();
    let wall_server = Server::start(map.to_str().unwrap());
    let big_server = Server::start("builtin:512x512");
    let run = Command::new("node")
        .arg(dir.join("playground.mjs"))
        .env("HORDE_WALL_URL", wall_server.url())
        .env("HORDE_BIG_URL", big_server.url())
        .env("CHROMIUM", &chromium)
        .env("OUT_DIR", out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    eprintln!("{r}");
    assert!(r.get("pageErrors").is_none(), "{r}");
    assert_eq!(r["errors"], serde_json::json!([]));
    assert_eq!(r["goal"], serde_json::json!([85, 10]));
    let watch = &r["watch"];
    assert_eq!(watch["maxAgents"], 500);
    assert!(watch["frames"].as_u64().unwrap() > 50, "{watch}");
    assert_eq!(watch["inWall"], 0, "agents seen inside a wall cell");
    assert_eq!(
        watch["jumps"], 0,
        "agents reached the far side other than by the gap"
    );
    assert_eq!(r["stats"]["arrived"], 500);

    // The screenshot: the wall where it was painted, arrived agents by the goal and none left
    // of the wall.
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(r["screenshot"].as_str().unwrap()).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut img = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut img).unwrap();
    let img = match info.color_type {
        png::ColorType::Rgba => img,
        png::ColorType::Rgb => img
            .chunks(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        other => panic!("screenshot colour type {other:?}"),
    };
    let width = info.width as usize;
    const WALL_RGB: [u8; 3] = [34, 36, 44];
    const ARRIVED_RGB: [u8; 3] = [40, 200, 90];
    let px = &r["pixels"];
    for p in px["wall"].as_array().unwrap() {
        let c = pixel(
            &img,
            width,
            p["x"].as_f64().unwrap(),
            p["y"].as_f64().unwrap(),
        );
        assert!(near(c, WALL_RGB, 10), "wall pixel {c:?} at {p}");
    }
    let scale = px["scale"].as_f64().unwrap();
    let (gx, gy) = (
        px["goal"]["x"].as_f64().unwrap(),
        px["goal"]["y"].as_f64().unwrap(),
    );
    let wall_x = px["wall"][0]["x"].as_f64().unwrap();
    let (mut by_goal, mut left_of_wall) = (0, 0);
    for y in 0..info.height as usize {
        for x in 0..width {
            if !near(pixel(&img, width, x as f64, y as f64), ARRIVED_RGB, 6) {
                continue;
            }
            if ((x as f64 - gx).powi(2) + (y as f64 - gy).powi(2)).sqrt() < 16.0 * scale {
                by_goal += 1;
            }
            if (x as f64) < wall_x - scale {
                left_of_wall += 1;
            }
        }
    }
    assert!(
        by_goal as f64 > 100.0 * scale * scale,
        "arrived pixels by the goal: {by_goal}"
    );
    assert_eq!(left_of_wall, 0);

    // 10,000 agents on 512 x 512: frames per second received, and strokes' repairs.
    assert_eq!(r["bigAgents"], 10_000);
    assert_eq!(r["bigErrors"], serde_json::json!([]));
    let latency = &r["repairLatency"];
    // Every piece of a stroke the page sent was answered by a field frame, and none is left
    // waiting.
    let sent = latency["sent"].as_u64().unwrap();
    assert!(sent >= 24, "{latency}");
    assert_eq!(latency["count"].as_u64().unwrap(), sent, "{latency}");
    assert_eq!(latency["pending"], 0, "{latency}");

    // Speed. Frames received per second and each stroke piece's time from the page sending it
    // to the page holding its repaired field are wall-clock figures, so on a shared machine
    // (CI runs this suite's other tests and Chromium beside a 10,000-agent server on two
    // cores) they are checked only against collapse: a server that stops streaming or a repair
    // that waits for something. The playground's targets (>= 30 frames a second, nine strokes
    // in ten within 50 ms) are measured on an otherwise idle machine with
    // HORDE_STRICT_TIMING=1, which makes them this test's bounds; figures in docs/benchmarks.md.
    let strict = std::env::var_os("HORDE_STRICT_TIMING").is_some();
    let (min_fps, max_p90_ms) = if strict { (30.0, 50.0) } else { (15.0, 250.0) };
    let fps = r["agentFps"].as_f64().unwrap();
    assert!(fps >= min_fps, "{fps} agent frames per second");
    let p90 = latency["p90"].as_f64().unwrap();
    assert!(
        p90 <= max_p90_ms,
        "90th percentile stroke-to-field time {p90} ms (bound {max_p90_ms} ms)"
    );
}
