//! `horde serve`'s simulation, apart from the network: a map, up to [`MAX_GROUPS`] groups each
//! with a goal area and a live field, and one crowd, changed by the page's [`Request`]s and read
//! back as frames ([`protocol`]). The server gives every browser tab its own [`Session`].
//!
//! Memory: the map (1 byte per cell), 10 bytes per cell per group with a goal (integration and
//! flow, and the copy of them the page was sent) plus the repairer's scratch (about 9 bytes per cell), the crowd (at most 64 bytes per
//! agent), 12 bytes per agent here, and the undo history (5 bytes per painted cell, at most
//! [`UNDO_DEPTH`] strokes).

pub mod protocol;

use std::collections::HashSet;
use std::time::Instant;

use glam::{UVec2, Vec2};
use horde::crowd::{AgentParams, AgentState, Crowd, CrowdConfig, CrowdError, Group};
use horde::dungeon::{DungeonConfig, DungeonError};
use horde::io::MapError;
use horde::{
    CostEdit, CostError, CostField, CostModel, FieldRepairer, FlowField, LiveError, LiveField,
    UNREACHABLE, WALL,
};
use rand::{Rng, SeedableRng};
use thiserror::Error;

use protocol::{AGENT_FRAME, FIELD_FRAME, MAP_FRAME, MAP_PNG_FRAME, push_f32, push_u32};
pub use protocol::{AgentCode, Request};

/// Groups (goals) a session holds.
pub const MAX_GROUPS: usize = 8;
/// Largest map side a session takes (maps up to 2048 × 2048).
pub const MAX_SIDE: u32 = 2048;
/// Most agents in a session.
pub const MAX_AGENTS: usize = 100_000;
/// Largest brush radius, in cells.
pub const MAX_BRUSH: f64 = 64.0;
/// Largest spawn spread, in cells.
pub const MAX_SPREAD: f64 = 256.0;
/// Most cells in one group's goal area.
pub const MAX_GOAL_CELLS: usize = 1024;
/// Largest map upload, in bytes (a 2048 × 2048 `.map` file is about 4.2 MB).
pub const MAX_UPLOAD_BYTES: usize = 8 << 20;
/// Strokes kept for undo.
pub const UNDO_DEPTH: usize = 64;
/// Seconds of simulated time per crowd step (one step per frame at 40 frames a second: real time).
pub const STEP_SECONDS: f32 = 0.025;

/// Why a request was refused. The session is unchanged after any of these.
#[derive(Debug, Error)]
pub enum PlayError {
    /// A number outside its allowed range.
    #[error("{what} {value} is out of range: allowed {allowed}")]
    Range {
        what: &'static str,
        value: String,
        allowed: &'static str,
    },
    /// A point off the map.
    #[error("({x}, {y}) is outside the {width}x{height} map")]
    Outside {
        x: f64,
        y: f64,
        width: u32,
        height: u32,
    },
    /// A goal on a wall.
    #[error("cell ({x}, {y}) is a wall: a goal must be on open ground")]
    GoalOnWall { x: u32, y: u32 },
    /// A spawn where no cell is open.
    #[error("no open cell within {spread} cells of ({x}, {y}) to spawn on")]
    NowhereToSpawn { x: f64, y: f64, spread: f64 },
    /// Undo with an empty history.
    #[error("nothing to undo")]
    NothingToUndo,
    /// A map upload larger than [`MAX_UPLOAD_BYTES`].
    #[error("the upload is {bytes} bytes: at most {max} bytes (a {side}x{side} map)")]
    UploadTooBig { bytes: usize, max: usize, side: u32 },
    /// A map upload of an unknown kind.
    #[error("an upload starts with M (a .map file) or P (a PNG), not byte {0}")]
    UploadKind(u8),
    /// A map larger than [`MAX_SIDE`] on a side.
    #[error("{what}: the map is {width}x{height}: at most {max}x{max} here")]
    MapTooBig {
        what: String,
        width: u32,
        height: u32,
        max: u32,
    },
    /// A map that could not be read.
    #[error(transparent)]
    Map(#[from] MapError),
    /// A dungeon that could not be generated.
    #[error(transparent)]
    Dungeon(#[from] DungeonError),
    /// A field that could not be built or repaired.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// A refused crowd change.
    #[error(transparent)]
    Crowd(#[from] CrowdError),
    /// A refused map edit.
    #[error(transparent)]
    Cost(#[from] CostError),
}

/// An answer for the page at once.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A JSON reply.
    Text(String),
    /// A binary frame.
    Binary(Vec<u8>),
}

/// Timings and counts shown in the page's corner.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    /// Last whole-field build (a new goal), milliseconds.
    pub build_ms: f64,
    /// Last repair of every field after an edit, milliseconds.
    pub repair_ms: f64,
    /// Last crowd step, milliseconds.
    pub step_ms: f64,
    /// Crowd steps run.
    pub steps: u64,
}

#[derive(Debug, Clone, Copy)]
struct AgentRecord {
    group: u8,
    radius: f32,
    speed: f32,
}

#[derive(Debug, Clone, Default)]
struct Slot {
    goals: Vec<UVec2>,
    field: Option<LiveField>,
    /// The field as the page last got it (5 bytes per cell).
    sent: Option<Sent>,
}

#[derive(Debug, Clone, Default)]
struct Sent {
    values: Vec<u32>,
    flow: Vec<u8>,
}

#[derive(Debug, Clone, Default)]
struct Stroke {
    id: u32,
    /// Cell index and its cost before the stroke.
    before: Vec<(u32, u8)>,
    seen: HashSet<u32>,
}

/// One playground: map, groups, crowd, undo history. See the module's documentation.
#[derive(Debug)]
pub struct Session {
    cost: CostField,
    model: CostModel,
    repairer: FieldRepairer,
    slots: Vec<Slot>,
    blank: FlowField,
    config: CrowdConfig,
    crowd: Crowd,
    agents: Vec<AgentRecord>,
    undo: Vec<Stroke>,
    playing: bool,
    steps_per_frame: u32,
    rng: rand_pcg::Pcg64,
    seq: u32,
    figures: Figures,
    /// Cells of the map the page has not seen: (x0, y0, x1, y1), exclusive ends; empty when
    /// x0 >= x1.
    dirty_map: (u32, u32, u32, u32),
    dirty_fields: u32,
    dirty_state: bool,
    agents_changed: bool,
}

fn range<T: std::fmt::Display>(what: &'static str, value: T, allowed: &'static str) -> PlayError {
    PlayError::Range {
        what,
        value: value.to_string(),
        allowed,
    }
}

fn check_map(cost: &CostField, what: &str) -> Result<(), PlayError> {
    if cost.width() > MAX_SIDE || cost.height() > MAX_SIDE {
        return Err(PlayError::MapTooBig {
            what: what.to_owned(),
            width: cost.width(),
            height: cost.height(),
            max: MAX_SIDE,
        });
    }
    Ok(())
}

impl Session {
    /// A session on `map` (at most [`MAX_SIDE`] on a side), with no goals and no agents.
    pub fn new(map: CostField) -> Result<Session, PlayError> {
        check_map(&map, "the map")?;
        let config = CrowdConfig::default();
        let crowd = Crowd::new(*map.grid(), config.clone())?;
        Ok(Session {
            blank: FlowField::new(*map.grid()),
            cost: map,
            model: CostModel::TenFourteen,
            repairer: FieldRepairer::new(),
            slots: vec![Slot::default(); MAX_GROUPS],
            config,
            crowd,
            agents: Vec::new(),
            undo: Vec::new(),
            playing: false,
            steps_per_frame: 1,
            rng: rand_pcg::Pcg64::seed_from_u64(7),
            seq: 0,
            figures: Figures::default(),
            dirty_map: (0, 0, u32::MAX, u32::MAX),
            dirty_fields: 0,
            dirty_state: true,
            agents_changed: true,
        })
    }

    /// The map as it is now.
    pub fn map(&self) -> &CostField {
        &self.cost
    }

    /// The crowd.
    pub fn crowd(&self) -> &Crowd {
        &self.crowd
    }

    /// Group `group`'s live field, once it has a goal.
    pub fn field(&self, group: usize) -> Option<&LiveField> {
        self.slots.get(group)?.field.as_ref()
    }

    /// Whether the crowd runs.
    pub fn playing(&self) -> bool {
        self.playing
    }

    /// Edits applied so far (strokes' pieces, undos, goal moves, new maps).
    pub fn seq(&self) -> u32 {
        self.seq
    }

    /// The latest timings.
    pub fn figures(&self) -> Figures {
        self.figures
    }

    /// Carry out one request. `Ok(Some(reply))` is for the page at once (a saved map);
    /// everything else reaches the page through [`Session::frames`].
    pub fn handle(&mut self, request: Request) -> Result<Option<Reply>, PlayError> {
        match request {
            Request::Paint {
                stroke,
                x0,
                y0,
                x1,
                y1,
                brush,
                cost,
            } => self.paint(stroke, (x0, y0), (x1, y1), brush, cost)?,
            Request::Undo {} => self.undo()?,
            Request::Goal { group, x, y, add } => self.goal(group, x, y, add)?,
            Request::Spawn {
                group,
                x,
                y,
                spread,
                count,
                radius,
                speed,
            } => self.spawn(group, (x, y), spread, count, radius, speed)?,
            Request::Clear {} => {
                self.crowd = Crowd::new(*self.cost.grid(), self.config.clone())?;
                self.agents.clear();
                self.agents_changed = true;
                self.dirty_state = true;
            }
            Request::Play {} => {
                self.playing = true;
                self.dirty_state = true;
            }
            Request::Pause {} => {
                self.playing = false;
                self.dirty_state = true;
            }
            Request::Step {} => {
                self.playing = false;
                self.step_crowd()?;
                self.dirty_state = true;
            }
            Request::Params {
                separation_weight,
                separation_radius,
                collision_passes,
                steps_per_frame,
            } => self.params(
                separation_weight,
                separation_radius,
                collision_passes,
                steps_per_frame,
            )?,
            Request::Generate {
                width,
                height,
                rooms,
                seed,
                loops,
            } => self.generate(width, height, rooms, seed, loops)?,
            Request::Save {} => {
                let text = horde::io::write_map(&self.cost)?;
                return Ok(Some(Reply::Text(protocol::reply(
                    "map_file",
                    serde_json::json!({ "name": "playground.map", "text": text }),
                ))));
            }
            Request::SavePng {} => {
                let mut frame = vec![MAP_PNG_FRAME, 0, 0, 0];
                frame.extend(horde::io::png_map_bytes(&self.cost)?);
                return Ok(Some(Reply::Binary(frame)));
            }
        }
        Ok(None)
    }

    /// Replace the map with an uploaded file: `M` and a `.map` file, or `P` and a PNG.
    pub fn upload(&mut self, bytes: &[u8]) -> Result<(), PlayError> {
        if bytes.len() > MAX_UPLOAD_BYTES + 1 {
            return Err(PlayError::UploadTooBig {
                bytes: bytes.len() - 1,
                max: MAX_UPLOAD_BYTES,
                side: MAX_SIDE,
            });
        }
        let map = match bytes.first() {
            Some(b'M') => horde::io::parse_map(&bytes[1..], "the uploaded .map")?,
            Some(b'P') => horde::io::parse_png_map(
                &bytes[1..],
                "the uploaded PNG",
                MAX_SIDE as u64 * MAX_SIDE as u64,
            )?,
            Some(&b) => return Err(PlayError::UploadKind(b)),
            None => return Err(PlayError::UploadKind(0)),
        };
        check_map(&map, "the uploaded map")?;
        self.replace_map(map)
    }

    /// Advance the crowd by one frame's steps if it runs.
    pub fn tick(&mut self) -> Result<(), PlayError> {
        if self.playing && !self.agents.is_empty() {
            for _ in 0..self.steps_per_frame {
                self.step_crowd()?;
            }
        }
        Ok(())
    }

    /// What the page has not seen yet: map and field frames when they changed (the server
    /// asks once per frame, so a fast stroke sends one of each per frame, not per piece), the
    /// agents when they moved, the state when it changed. Text replies are `Err`-free JSON.
    pub fn frames(&mut self) -> (Vec<Vec<u8>>, Vec<String>) {
        let mut binary = Vec::new();
        let mut text = Vec::new();
        if self.dirty_map.0 < self.dirty_map.2 {
            binary.push(self.map_frame());
            self.dirty_map = (u32::MAX, u32::MAX, 0, 0);
        }
        if self.dirty_fields != 0 {
            for g in 0..MAX_GROUPS {
                if self.dirty_fields & (1 << g) != 0 {
                    binary.push(self.field_frame(g));
                }
            }
            self.dirty_fields = 0;
        }
        if self.agents_changed {
            binary.push(self.agent_frame());
            self.agents_changed = false;
        }
        if self.dirty_state {
            text.push(self.state_reply());
            self.dirty_state = false;
        }
        (binary, text)
    }

    /// The figures as a `stats` reply.
    pub fn stats_reply(&self) -> String {
        let (mut arrived, mut no_path, mut stuck) = (0, 0, 0);
        for a in self.crowd.snapshot() {
            match a.state {
                AgentState::Arrived => arrived += 1,
                AgentState::NoPath => no_path += 1,
                AgentState::Moving if a.stuck => stuck += 1,
                AgentState::Moving => {}
            }
        }
        protocol::reply(
            "stats",
            serde_json::json!({
                "agents": self.crowd.len(),
                "arrived": arrived,
                "no_path": no_path,
                "stuck": stuck,
                "build_ms": self.figures.build_ms,
                "repair_ms": self.figures.repair_ms,
                "step_ms": self.figures.step_ms,
                "steps": self.figures.steps,
                "seq": self.seq,
            }),
        )
    }

    /// The map frame (see [`protocol`]): the rectangle of cells changed since the last one
    /// (the whole map the first time and after a new map).
    pub fn map_frame(&self) -> Vec<u8> {
        let (w, h) = (self.cost.width(), self.cost.height());
        let d = self.dirty_map;
        let (x0, y0, x1, y1) = if d.0 < d.2 {
            (d.0, d.1, d.2.min(w), d.3.min(h))
        } else {
            (0, 0, 0, 0)
        };
        let mut out = Vec::with_capacity(28 + ((x1 - x0) * (y1 - y0)) as usize);
        out.extend_from_slice(&[MAP_FRAME, 0, 0, 0]);
        for v in [w, h, x0, y0, x1 - x0, y1 - y0] {
            push_u32(&mut out, v);
        }
        for y in y0..y1 {
            out.extend_from_slice(&self.cost.costs()[(y * w + x0) as usize..(y * w + x1) as usize]);
        }
        out
    }

    /// Group `group`'s field frame (see [`protocol`]): the cells that differ from what the page
    /// was last sent, as one rectangle (the whole map the first time), so that a stroke's
    /// repair sends its shadow, not the map. An unreachable field when it has no goal.
    pub fn field_frame(&mut self, group: usize) -> Vec<u8> {
        let (w, h) = (self.cost.width() as usize, self.cost.height() as usize);
        let cells = w * h;
        let unreachable;
        let slot = &mut self.slots[group];
        let (values, flow) = match slot.field.as_ref() {
            Some(f) => (f.integration().values(), f.flow().bytes()),
            None => {
                unreachable = vec![UNREACHABLE; cells];
                (&unreachable[..], self.blank.bytes())
            }
        };
        let sent = &mut slot.sent;
        let (x0, y0, x1, y1) = match sent {
            Some(old) if old.values.len() == cells => {
                let mut rect = (w, h, 0, 0);
                for y in 0..h {
                    let row = y * w..(y + 1) * w;
                    let differs = |x: usize| {
                        values[y * w + x] != old.values[y * w + x]
                            || flow[y * w + x] != old.flow[y * w + x]
                    };
                    if values[row.clone()] == old.values[row.clone()]
                        && flow[row.clone()] == old.flow[row]
                    {
                        continue;
                    }
                    let first = (0..w).find(|&x| differs(x)).expect("a row that differs");
                    let last = (0..w)
                        .rev()
                        .find(|&x| differs(x))
                        .expect("a row that differs");
                    rect = (
                        rect.0.min(first),
                        rect.1.min(y),
                        rect.2.max(last + 1),
                        y + 1,
                    );
                }
                if rect.0 >= rect.2 { (0, 0, 0, 0) } else { rect }
            }
            _ => {
                *sent = Some(Sent {
                    values: vec![0; cells],
                    flow: vec![0; cells],
                });
                (0, 0, w, h)
            }
        };
        let sent = sent.as_mut().expect("set above");
        let (rw, rh) = (x1 - x0, y1 - y0);
        let mut out = Vec::with_capacity(32 + 5 * rw * rh);
        out.extend_from_slice(&[FIELD_FRAME, group as u8, 0, 0]);
        for v in [w, h, self.seq as usize, x0, y0, rw, rh] {
            push_u32(&mut out, v as u32);
        }
        for y in y0..y1 {
            let row = y * w + x0..y * w + x1;
            for &v in &values[row.clone()] {
                push_u32(&mut out, v);
            }
            sent.values[row.clone()].copy_from_slice(&values[row]);
        }
        for y in y0..y1 {
            let row = y * w + x0..y * w + x1;
            out.extend_from_slice(&flow[row.clone()]);
            sent.flow[row.clone()].copy_from_slice(&flow[row]);
        }
        out
    }

    /// The agent frame (see [`protocol`]).
    pub fn agent_frame(&self) -> Vec<u8> {
        let n = self.crowd.len();
        let mut xs = Vec::with_capacity(n);
        let mut ys = Vec::with_capacity(n);
        let mut states = Vec::with_capacity(n);
        let mut groups = Vec::with_capacity(n);
        let mut radii = Vec::with_capacity(n);
        for a in self.crowd.snapshot() {
            xs.push(a.position.x);
            ys.push(a.position.y);
            states.push(match a.state {
                AgentState::Arrived => AgentCode::Arrived,
                AgentState::NoPath => AgentCode::NoPath,
                AgentState::Moving if a.stuck => AgentCode::Stuck,
                AgentState::Moving => AgentCode::Moving,
            } as u8);
            let record = self.agents.get(a.handle.id() as usize);
            groups.push(record.map_or(0, |r| r.group));
            radii.push(record.map_or(0, |r| (r.radius * 100.0).round() as u8));
        }
        let mut out = Vec::with_capacity(8 + 11 * n);
        out.extend_from_slice(&[AGENT_FRAME, 0, 0, 0]);
        push_u32(&mut out, n as u32);
        for v in xs.into_iter().chain(ys) {
            push_f32(&mut out, v);
        }
        out.extend_from_slice(&states);
        out.extend_from_slice(&groups);
        out.extend_from_slice(&radii);
        out
    }

    fn state_reply(&self) -> String {
        let groups: Vec<serde_json::Value> = self
            .slots
            .iter()
            .map(|s| {
                serde_json::json!({
                    "goals": s.goals.iter().map(|g| [g.x, g.y]).collect::<Vec<_>>(),
                })
            })
            .collect();
        protocol::reply(
            "state",
            serde_json::json!({
                "width": self.cost.width(),
                "height": self.cost.height(),
                "playing": self.playing,
                "groups": groups,
                "undo": self.undo.len(),
                "params": {
                    "separation_weight": self.config.separation_weight,
                    "separation_radius": self.config.separation_radius,
                    "collision_passes": self.config.collision_passes,
                    "steps_per_frame": self.steps_per_frame,
                },
            }),
        )
    }

    fn cell_at(&self, x: f64, y: f64) -> Result<UVec2, PlayError> {
        let (w, h) = (self.cost.width(), self.cost.height());
        if !(x.is_finite() && y.is_finite() && x >= 0.0 && y >= 0.0 && x < w as f64 && y < h as f64)
        {
            return Err(PlayError::Outside {
                x,
                y,
                width: w,
                height: h,
            });
        }
        Ok(UVec2::new(x as u32, y as u32))
    }

    fn is_goal(&self, cell: UVec2) -> bool {
        self.slots.iter().any(|s| s.goals.contains(&cell))
    }

    fn paint(
        &mut self,
        stroke: u32,
        a: (f64, f64),
        b: (f64, f64),
        brush: f64,
        cost: u8,
    ) -> Result<(), PlayError> {
        if cost == 0 {
            return Err(range(
                "cost",
                cost,
                "1 (ground), 2-254 (terrain) or 255 (wall)",
            ));
        }
        if !(brush.is_finite() && (0.5..=MAX_BRUSH).contains(&brush)) {
            return Err(range("brush", brush, "0.5 to 64 cells"));
        }
        let limit = 2.0 * MAX_SIDE as f64;
        for v in [a.0, a.1, b.0, b.1] {
            if !(v.is_finite() && v.abs() <= limit) {
                return Err(range("stroke point", v, "-4096 to 4096 cells"));
            }
        }
        let (w, h) = (self.cost.width() as i64, self.cost.height() as i64);
        let x_lo = ((a.0.min(b.0) - brush).floor() as i64).max(0);
        let x_hi = ((a.0.max(b.0) + brush).ceil() as i64).min(w - 1);
        let y_lo = ((a.1.min(b.1) - brush).floor() as i64).max(0);
        let y_hi = ((a.1.max(b.1) + brush).ceil() as i64).min(h - 1);
        // The cells whose centre is within the brush of the segment, and those the segment
        // passes through (sampled every quarter cell), so that the thinnest brush still draws
        // an unbroken line.
        let mut cells = Vec::new();
        for y in y_lo..=y_hi {
            for x in x_lo..=x_hi {
                let centre = (x as f64 + 0.5, y as f64 + 0.5);
                if distance_to_segment(centre, a, b) <= brush {
                    cells.push(UVec2::new(x as u32, y as u32));
                }
            }
        }
        let samples = ((b.0 - a.0).hypot(b.1 - a.1) * 4.0).ceil() as usize;
        for k in 0..=samples {
            let t = if samples == 0 {
                0.0
            } else {
                k as f64 / samples as f64
            };
            let (x, y) = (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1));
            if x >= 0.0 && y >= 0.0 && x < w as f64 && y < h as f64 {
                cells.push(UVec2::new(x as u32, y as u32));
            }
        }
        cells.sort_unstable_by_key(|c| (c.y, c.x));
        cells.dedup();
        let mut edits = Vec::new();
        for cell in cells {
            // Goal cells stay open: a goal on a wall would lead nowhere.
            if cost == WALL && self.is_goal(cell) {
                continue;
            }
            if self.cost.get(cell) != Some(cost) {
                edits.push(CostEdit::Cell { cell, cost });
            }
        }
        // A new stroke starts a new undo entry; the pieces of one stroke share it.
        if self.undo.last().is_none_or(|s| s.id != stroke) {
            self.undo.push(Stroke {
                id: stroke,
                ..Stroke::default()
            });
            if self.undo.len() > UNDO_DEPTH {
                self.undo.remove(0);
            }
            self.dirty_state = true;
        }
        let w = self.cost.width();
        let entry = self.undo.last_mut().expect("pushed above");
        for e in &edits {
            if let CostEdit::Cell { cell, .. } = *e {
                let i = cell.y * w + cell.x;
                if entry.seen.insert(i) {
                    entry.before.push((i, self.cost.costs()[i as usize]));
                }
            }
        }
        self.apply(&edits)?;
        // Every paint is answered by a field frame, if only an empty one, so that the page
        // knows when its stroke has been taken into account.
        for (g, slot) in self.slots.iter().enumerate() {
            if slot.field.is_some() {
                self.dirty_fields |= 1 << g;
            }
        }
        Ok(())
    }

    fn undo(&mut self) -> Result<(), PlayError> {
        let stroke = self.undo.pop().ok_or(PlayError::NothingToUndo)?;
        let w = self.cost.width();
        let edits: Vec<CostEdit> = stroke
            .before
            .iter()
            .map(|&(i, cost)| CostEdit::Cell {
                cell: UVec2::new(i % w, i / w),
                cost,
            })
            .collect();
        self.dirty_state = true;
        self.apply(&edits)
    }

    /// Apply edits, repair every field, move agents off new walls.
    fn apply(&mut self, edits: &[CostEdit]) -> Result<(), PlayError> {
        if edits.is_empty() {
            return Ok(());
        }
        let changed = self.cost.apply_edits(edits)?;
        self.seq = self.seq.wrapping_add(1);
        if changed.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        for (g, slot) in self.slots.iter_mut().enumerate() {
            if let Some(field) = &mut slot.field {
                field.repair(&self.cost, &changed, &mut self.repairer)?;
                self.dirty_fields |= 1 << g;
            }
        }
        self.figures.repair_ms = started.elapsed().as_secs_f64() * 1e3;
        let walled: HashSet<UVec2> = changed
            .iter()
            .copied()
            .filter(|&c| !self.cost.is_walkable(c))
            .collect();
        if !walled.is_empty() {
            let grid = *self.cost.grid();
            let inside: Vec<_> = self
                .crowd
                .snapshot()
                .filter(|a| {
                    grid.world_to_cell(a.position)
                        .is_some_and(|c| walled.contains(&c))
                })
                .map(|a| (a.handle, a.position))
                .collect();
            for (h, p) in inside {
                self.crowd.set_position(&self.cost, h, p)?;
            }
            self.agents_changed = true;
        }
        for c in &changed {
            let d = &mut self.dirty_map;
            *d = (
                d.0.min(c.x),
                d.1.min(c.y),
                d.2.max(c.x + 1),
                d.3.max(c.y + 1),
            );
        }
        Ok(())
    }

    fn goal(&mut self, group: usize, x: f64, y: f64, add: bool) -> Result<(), PlayError> {
        if group >= MAX_GROUPS {
            return Err(range("group", group, "0 to 7"));
        }
        let cell = self.cell_at(x, y)?;
        if !self.cost.is_walkable(cell) {
            return Err(PlayError::GoalOnWall {
                x: cell.x,
                y: cell.y,
            });
        }
        let mut goals = if add {
            self.slots[group].goals.clone()
        } else {
            Vec::new()
        };
        if goals.contains(&cell) {
            return Ok(());
        }
        if goals.len() >= MAX_GOAL_CELLS {
            return Err(range("goal area", goals.len() + 1, "at most 1024 cells"));
        }
        goals.push(cell);
        let started = Instant::now();
        let slot = &mut self.slots[group];
        match &mut slot.field {
            Some(field) => {
                field.move_goals(&self.cost, &goals, &mut self.repairer)?;
            }
            None => {
                slot.field = Some(LiveField::build(
                    &self.cost,
                    &goals,
                    self.model,
                    &mut self.repairer,
                )?);
            }
        }
        self.figures.build_ms = started.elapsed().as_secs_f64() * 1e3;
        slot.goals = goals;
        self.seq = self.seq.wrapping_add(1);
        // Agents of the group that had arrived set off for the new goal.
        let members: Vec<_> = self
            .crowd
            .handles()
            .filter(|h| {
                self.agents
                    .get(h.id() as usize)
                    .is_some_and(|r| r.group as usize == group)
            })
            .collect();
        for h in members {
            self.crowd.set_group(h, group as u16)?;
        }
        self.dirty_fields |= 1 << group;
        self.dirty_state = true;
        Ok(())
    }

    fn spawn(
        &mut self,
        group: usize,
        (x, y): (f64, f64),
        spread: f64,
        count: usize,
        radius: f32,
        speed: f32,
    ) -> Result<(), PlayError> {
        if group >= MAX_GROUPS {
            return Err(range("group", group, "0 to 7"));
        }
        if !(spread.is_finite() && (0.0..=MAX_SPREAD).contains(&spread)) {
            return Err(range("spread", spread, "0 to 256 cells"));
        }
        if !(radius.is_finite() && (0.1..=2.0).contains(&radius)) {
            return Err(range("radius", radius, "0.1 to 2 cells"));
        }
        if !(speed.is_finite() && (0.1..=50.0).contains(&speed)) {
            return Err(range("speed", speed, "0.1 to 50 cells per second"));
        }
        if count == 0 || self.crowd.len() + count > MAX_AGENTS {
            return Err(range("count", count, "1 up to 100,000 agents in all"));
        }
        self.cell_at(x, y)?;
        let mut placed = 0;
        let mut attempts = 0;
        while placed < count && attempts < count * 30 + 100 {
            attempts += 1;
            let (dx, dy) = loop {
                let d = (
                    self.rng.random_range(-1.0..=1.0f64),
                    self.rng.random_range(-1.0..=1.0f64),
                );
                if d.0 * d.0 + d.1 * d.1 <= 1.0 {
                    break d;
                }
            };
            let p = Vec2::new((x + dx * spread) as f32, (y + dy * spread) as f32);
            let Some(cell) = self.cost.grid().world_to_cell(p) else {
                continue;
            };
            if !self.cost.is_walkable(cell) {
                continue;
            }
            let h = self.crowd.add_agent(
                &self.cost,
                AgentParams {
                    position: p,
                    radius,
                    max_speed: speed,
                    group: group as u16,
                },
            )?;
            let id = h.id() as usize;
            if self.agents.len() <= id {
                self.agents.resize(
                    id + 1,
                    AgentRecord {
                        group: 0,
                        radius,
                        speed,
                    },
                );
            }
            self.agents[id] = AgentRecord {
                group: group as u8,
                radius,
                speed,
            };
            placed += 1;
        }
        if placed == 0 {
            return Err(PlayError::NowhereToSpawn { x, y, spread });
        }
        self.agents_changed = true;
        Ok(())
    }

    fn params(
        &mut self,
        separation_weight: f32,
        separation_radius: f32,
        collision_passes: usize,
        steps_per_frame: u32,
    ) -> Result<(), PlayError> {
        if !(separation_weight.is_finite() && (0.0..=10.0).contains(&separation_weight)) {
            return Err(range("separation weight", separation_weight, "0 to 10"));
        }
        if !(separation_radius.is_finite() && (0.2..=4.0).contains(&separation_radius)) {
            return Err(range(
                "separation radius",
                separation_radius,
                "0.2 to 4 cells",
            ));
        }
        if collision_passes > 8 {
            return Err(range("collision passes", collision_passes, "0 to 8"));
        }
        if !(1..=16).contains(&steps_per_frame) {
            return Err(range("steps per frame", steps_per_frame, "1 to 16"));
        }
        self.steps_per_frame = steps_per_frame;
        let config = CrowdConfig {
            separation_weight,
            separation_radius,
            collision_passes,
            ..self.config.clone()
        };
        if config != self.config {
            // The crowd takes its settings when made: make it again with everyone where they
            // stand, moving as they moved.
            let mut crowd = Crowd::new(*self.cost.grid(), config.clone())?;
            let mut agents = Vec::with_capacity(self.agents.len());
            for a in self.crowd.snapshot() {
                let Some(&r) = self.agents.get(a.handle.id() as usize) else {
                    continue;
                };
                let h = crowd.add_agent(
                    &self.cost,
                    AgentParams {
                        position: a.position,
                        radius: r.radius,
                        max_speed: r.speed,
                        group: r.group as u16,
                    },
                )?;
                crowd.set_velocity(h, a.velocity)?;
                debug_assert_eq!(h.id() as usize, agents.len());
                agents.push(r);
            }
            self.crowd = crowd;
            self.agents = agents;
            self.config = config;
            self.agents_changed = true;
        }
        self.dirty_state = true;
        Ok(())
    }

    fn generate(
        &mut self,
        width: u32,
        height: u32,
        rooms: usize,
        seed: u64,
        loops: f32,
    ) -> Result<(), PlayError> {
        if !(16..=MAX_SIDE).contains(&width) {
            return Err(range("width", width, "16 to 2048"));
        }
        if !(16..=MAX_SIDE).contains(&height) {
            return Err(range("height", height, "16 to 2048"));
        }
        if !(1..=2000).contains(&rooms) {
            return Err(range("rooms", rooms, "1 to 2000"));
        }
        if !(loops.is_finite() && (0.0..=1.0).contains(&loops)) {
            return Err(range("loops", loops, "0 to 1"));
        }
        let config = DungeonConfig {
            width,
            height,
            rooms,
            loops,
            ..DungeonConfig::default()
        };
        let map = horde::dungeon::generate(&config, seed)?.to_cost_field();
        self.replace_map(map)
    }

    fn replace_map(&mut self, map: CostField) -> Result<(), PlayError> {
        let crowd = Crowd::new(*map.grid(), self.config.clone())?;
        self.blank = FlowField::new(*map.grid());
        self.cost = map;
        self.crowd = crowd;
        self.agents.clear();
        self.slots = vec![Slot::default(); MAX_GROUPS];
        self.undo.clear();
        self.playing = false;
        self.seq = self.seq.wrapping_add(1);
        self.dirty_map = (0, 0, u32::MAX, u32::MAX);
        self.dirty_fields = (1 << MAX_GROUPS) - 1;
        self.dirty_state = true;
        self.agents_changed = true;
        Ok(())
    }

    fn step_crowd(&mut self) -> Result<(), PlayError> {
        let groups: Vec<Group> = self
            .slots
            .iter()
            .map(|s| match (&s.field, s.goals.first()) {
                (Some(f), Some(&g)) => Group {
                    flow: f.flow(),
                    goal: self.cost.grid().cell_center(g),
                },
                _ => Group {
                    flow: &self.blank,
                    goal: Vec2::ZERO,
                },
            })
            .collect();
        let started = Instant::now();
        self.crowd.step(STEP_SECONDS, &self.cost, &groups)?;
        self.figures.step_ms = started.elapsed().as_secs_f64() * 1e3;
        self.figures.steps += 1;
        self.agents_changed = true;
        Ok(())
    }
}

fn distance_to_segment(p: (f64, f64), a: (f64, f64), b: (f64, f64)) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 == 0.0 {
        0.0
    } else {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0)
    };
    let (cx, cy) = (a.0 + t * dx - p.0, a.1 + t * dy - p.1);
    (cx * cx + cy * cy).sqrt()
}

#[cfg(test)]
mod tests;
