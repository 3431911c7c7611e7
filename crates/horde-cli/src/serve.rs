//! `horde serve`: the playground. One page (HTML, CSS and JavaScript embedded in the binary) and
//! a WebSocket per tab; the server owns each tab's simulation ([`horde_cli::playground`]) and
//! the page only draws frames and sends edits.
//!
//! Tabs are independent: each starts from the map given on the command line and changes only
//! its own copy. Nothing is read from or written to disk after start-up: uploads and saves go
//! through the socket.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use horde::CostField;
use horde_cli::playground::protocol::{RateLimit, error_reply, parse_request, reply};
use horde_cli::playground::{MAX_AGENTS, MAX_SIDE, MAX_UPLOAD_BYTES, Reply, Session};

use crate::util::load_map;

const PAGE: &str = include_str!("playground/page/index.html");
const SCRIPT: &str = include_str!("playground/page/app.js");
const STYLE: &str = include_str!("playground/page/style.css");

/// Time between frames sent to a page (40 per second: smooth, and leaves a page on a small
/// machine time to draw and to answer strokes).
const FRAME: Duration = Duration::from_millis(25);
/// Figures are sent this often.
const STATS_EVERY: Duration = Duration::from_millis(250);
/// Requests per second a tab may send on average, and at once.
const RATE: f64 = 120.0;
const BURST: f64 = 240.0;
/// Tabs served at once (each holds a map, fields and a crowd).
const MAX_TABS: usize = 16;
/// Messages larger than this close the socket (the page checks uploads first and says so).
const HARD_LIMIT: usize = 2 * MAX_UPLOAD_BYTES;

#[derive(clap::Args)]
pub struct Args {
    /// A Moving AI .map file, a greyscale PNG, `builtin` (the default) or `builtin:WxH`; at
    /// most 2048 x 2048.
    map: Option<String>,
    /// Port to listen on, 0 to 65535 (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to listen on. The default serves this machine only; another address lets others
    /// on the network drive the playground.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
}

struct App {
    map: CostField,
    tabs: AtomicUsize,
}

pub fn run(a: &Args) -> Result<ExitCode> {
    let (map, name) = load_map(a.map.as_deref().unwrap_or("builtin"))?;
    Session::new(map.clone()).with_context(|| format!("{name}: cannot be served"))?;
    let app = Arc::new(App {
        map,
        tabs: AtomicUsize::new(0),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the server's runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(a.bind, a.port))
            .await
            .with_context(|| format!("cannot listen on {}:{}", a.bind, a.port))?;
        let addr = listener.local_addr()?;
        if !a.bind.is_loopback() {
            eprintln!(
                "warning: serving on {} — anyone who can reach this address can use the playground",
                a.bind
            );
        }
        outln!("listening on http://{addr}");
        let router = Router::new()
            .route("/", get(|| async { Html(PAGE) }))
            .route("/app.js", get(|| async { text(SCRIPT, "text/javascript") }))
            .route("/style.css", get(|| async { text(STYLE, "text/css") }))
            .route("/ws", get(upgrade))
            .with_state(app);
        axum::serve(listener, router)
            .await
            .context("the server stopped")?;
        Ok(ExitCode::SUCCESS)
    })
}

fn text(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

async fn upgrade(ws: WebSocketUpgrade, State(app): State<Arc<App>>) -> Response {
    ws.max_message_size(HARD_LIMIT)
        .max_frame_size(HARD_LIMIT)
        .on_upgrade(move |socket| tab(socket, app))
}

/// Counts a tab while it lives.
struct TabSlot(Arc<App>);

impl Drop for TabSlot {
    fn drop(&mut self) {
        self.0.tabs.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn tab(mut socket: WebSocket, app: Arc<App>) {
    if app.tabs.fetch_add(1, Ordering::SeqCst) >= MAX_TABS {
        app.tabs.fetch_sub(1, Ordering::SeqCst);
        let text = error_reply(&format!(
            "the server already serves {MAX_TABS} tabs: close one and reload"
        ));
        let _ = socket.send(Message::Text(text.into())).await;
        return;
    }
    let _slot = TabSlot(app.clone());
    let mut session = match Session::new(app.map.clone()) {
        Ok(s) => s,
        Err(e) => {
            let _ = socket
                .send(Message::Text(error_reply(&e.to_string()).into()))
                .await;
            return;
        }
    };
    let hello = reply(
        "hello",
        serde_json::json!({
            "tabs": "independent: each tab has its own copy of the map, goals and crowd",
            "max_side": MAX_SIDE,
            "max_upload_bytes": MAX_UPLOAD_BYTES,
            "max_agents": MAX_AGENTS,
        }),
    );
    if socket.send(Message::Text(hello.into())).await.is_err() {
        return;
    }
    let _ = serve_tab(&mut socket, &mut session).await;
}

/// The tab's loop: requests as they come, frames at a steady rate. Returns when the page goes.
async fn serve_tab(socket: &mut WebSocket, session: &mut Session) -> Result<(), axum::Error> {
    let started = Instant::now();
    let mut frames = tokio::time::interval(FRAME);
    frames.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut limit = RateLimit::new(RATE, BURST);
    let mut last_stats = Instant::now();
    let mut warned_rate = f64::NEG_INFINITY;
    loop {
        tokio::select! {
            // Requests first: a stroke waiting behind a frame is what a user feels.
            biased;
            incoming = socket.recv() => {
                let message = match incoming {
                    None | Some(Ok(Message::Close(_))) => return Ok(()),
                    Some(Ok(m)) => m,
                    Some(Err(e)) => {
                        // Too large or malformed at the protocol level: say so, then stop.
                        let text = error_reply(&format!("connection closed: {e}"));
                        let _ = socket.send(Message::Text(text.into())).await;
                        return Ok(());
                    }
                };
                let now = started.elapsed().as_secs_f64();
                let is_request = matches!(message, Message::Text(_) | Message::Binary(_));
                if is_request && !limit.take(now) {
                    if now - warned_rate > 1.0 {
                        warned_rate = now;
                        let text = error_reply(&format!(
                            "too many requests: at most {RATE} a second; some were dropped"
                        ));
                        socket.send(Message::Text(text.into())).await?;
                    }
                    continue;
                }
                let outcome = match message {
                    Message::Text(t) => match parse_request(&t) {
                        Ok(request) => session.handle(request).map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    },
                    Message::Binary(b) => session.upload(&b).map(|()| None).map_err(|e| e.to_string()),
                    _ => Ok(None),
                };
                match outcome {
                    Ok(Some(Reply::Text(text))) => socket.send(Message::Text(text.into())).await?,
                    Ok(Some(Reply::Binary(frame))) => socket.send(Message::Binary(frame.into())).await?,
                    Ok(None) => {}
                    Err(e) => socket.send(Message::Text(error_reply(&e).into())).await?,
                }
                send_frames(socket, session).await?;
            }
            _ = frames.tick() => {
                if let Err(e) = session.tick() {
                    session.handle(horde_cli::playground::Request::Pause {}).ok();
                    socket.send(Message::Text(error_reply(&e.to_string()).into())).await?;
                }
                send_frames(socket, session).await?;
                if last_stats.elapsed() >= STATS_EVERY {
                    last_stats = Instant::now();
                    socket.send(Message::Text(session.stats_reply().into())).await?;
                }
            }
        }
    }
}

async fn send_frames(socket: &mut WebSocket, session: &mut Session) -> Result<(), axum::Error> {
    let (binary, text) = session.frames();
    for t in text {
        socket.send(Message::Text(t.into())).await?;
    }
    for b in binary {
        socket.send(Message::Binary(b.into())).await?;
    }
    Ok(())
}
