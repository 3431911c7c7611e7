//! The playground's messages: JSON requests from the page, JSON replies and binary frames back.
//!
//! Requests are JSON objects tagged by `"t"`; unknown tags and unknown or missing fields are
//! refused with a message naming them. Binary requests are map uploads: one byte `M` (a Moving
//! AI `.map` file) or `P` (a greyscale PNG), then the file.
//!
//! Binary frames to the page start with one tag byte; numbers are little-endian:
//! - [`MAP_FRAME`]: `u8 tag, u8 0, u16 0, u32 width, u32 height, u32 x0, u32 y0, u32 w, u32 h,
//!   u8 cost[w × h]` — the rectangle of cells (x0, y0, w, h) whose cost changed since the last
//!   map frame (the whole map in the first, and after a new map), row by row.
//! - [`FIELD_FRAME`]: `u8 tag, u8 group, u16 0, u32 width, u32 height, u32 seq, u32 x0, u32 y0,
//!   u32 w, u32 h, u32 cost[w × h], u8 arrow[w × h]` — the rectangle of cells (x0, y0, w, h)
//!   that changed since the group's last field frame (the whole map in the first; empty when
//!   nothing changed): the raw cost to the goal (4,294,967,295: unreachable) and the flow byte
//!   (0–7 a direction, 8 goal, 9 unreachable, 255 wall), row by row; `seq` is the last edit
//!   applied before the frame was sent.
//! - [`AGENT_FRAME`]: `u8 tag, u8 0, u16 0, u32 count, f32 x[count], f32 y[count],
//!   u8 state[count], u8 group[count], u8 radius[count]` — positions in cells, states as
//!   [`AgentCode`], radii in hundredths of a cell.
//! - [`MAP_PNG_FRAME`]: `u8 tag, u8 0, u16 0`, then a greyscale PNG of the map that
//!   `horde` reads back exactly (`horde::io::png_map_bytes`).

use serde::Deserialize;

/// Tag of a map frame.
pub const MAP_FRAME: u8 = 1;
/// Tag of a field frame.
pub const FIELD_FRAME: u8 = 2;
/// Tag of an agent frame.
pub const AGENT_FRAME: u8 = 3;
/// Tag of a saved map as a greyscale PNG (the answer to [`Request::SavePng`]).
pub const MAP_PNG_FRAME: u8 = 4;

/// A request from the page.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Set the cells within `brush` cells of the segment from (x0, y0) to (x1, y1) to `cost`
    /// (1 ground, 2–254 terrain, 255 wall). Paints with the same `stroke` number undo together.
    Paint {
        stroke: u32,
        x0: f64,
        y0: f64,
        x1: f64,
        y1: f64,
        brush: f64,
        cost: u8,
    },
    /// Take back the last stroke.
    Undo {},
    /// Put group `group`'s goal on the cell at (x, y); with `add`, add the cell to its goal area.
    Goal {
        group: usize,
        x: f64,
        y: f64,
        #[serde(default)]
        add: bool,
    },
    /// Spawn `count` agents of group `group` on walkable cells within `spread` cells of (x, y).
    Spawn {
        group: usize,
        x: f64,
        y: f64,
        spread: f64,
        count: usize,
        radius: f32,
        speed: f32,
    },
    /// Remove every agent.
    Clear {},
    /// Run the crowd.
    Play {},
    /// Stop the crowd.
    Pause {},
    /// One step of the crowd while paused.
    Step {},
    /// The crowd's main parameters and the steps run per frame.
    Params {
        separation_weight: f32,
        separation_radius: f32,
        collision_passes: usize,
        steps_per_frame: u32,
    },
    /// Replace the map with a generated dungeon.
    Generate {
        width: u32,
        height: u32,
        rooms: usize,
        seed: u64,
        loops: f32,
    },
    /// Ask for the map as a `.map` file (answered by a `map_file` reply; refused when terrain
    /// costs above 9, which a `.map` file cannot hold, are on the map).
    Save {},
    /// Ask for the map as a greyscale PNG, which holds terrain 1–253 (answered by a
    /// [`MAP_PNG_FRAME`]; refused, naming the cell, when a cell costs 254).
    SavePng {},
}

/// What an agent is doing, as one byte of an agent frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum AgentCode {
    /// Following its field.
    Moving = 0,
    /// At its goal.
    Arrived = 1,
    /// No way to its goal.
    NoPath = 2,
    /// Moving but flagged stuck.
    Stuck = 3,
}

/// Parse a text request, or say in one line what is wrong with it.
pub fn parse_request(text: &str) -> Result<Request, String> {
    serde_json::from_str(text).map_err(|e| {
        let mut m = format!("bad message: {e}");
        if m.len() > 200 {
            let mut cut = 200;
            while !m.is_char_boundary(cut) {
                cut -= 1;
            }
            m.truncate(cut);
            m.push('…');
        }
        m
    })
}

/// A JSON reply of type `t` with the given fields.
pub fn reply(t: &str, mut fields: serde_json::Value) -> String {
    if let Some(map) = fields.as_object_mut() {
        map.insert("t".to_owned(), serde_json::Value::from(t));
    }
    fields.to_string()
}

/// An `error` reply.
pub fn error_reply(message: &str) -> String {
    reply("error", serde_json::json!({ "message": message }))
}

pub(crate) fn push_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn push_f32(out: &mut Vec<u8>, v: f32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Read a little-endian `u32` at `at` of a frame (for tests and tools).
pub fn read_u32(frame: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(frame.get(at..at + 4)?.try_into().ok()?))
}

/// Read a little-endian `f32` at `at` of a frame.
pub fn read_f32(frame: &[u8], at: usize) -> Option<f32> {
    Some(f32::from_le_bytes(frame.get(at..at + 4)?.try_into().ok()?))
}

/// A token bucket: at most `rate` requests per second on average, `burst` at once.
#[derive(Debug, Clone)]
pub struct RateLimit {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: f64,
}

impl RateLimit {
    /// A full bucket.
    pub fn new(rate: f64, burst: f64) -> RateLimit {
        RateLimit {
            rate,
            burst,
            tokens: burst,
            last: 0.0,
        }
    }

    /// Take one token at time `now` (seconds, increasing): `false` when the bucket is empty.
    pub fn take(&mut self, now: f64) -> bool {
        self.tokens = (self.tokens + (now - self.last).max(0.0) * self.rate).min(self.burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_bad_ones_say_what_is_wrong() {
        let r = parse_request(r#"{"t":"goal","group":1,"x":3,"y":4.5,"add":true}"#).unwrap();
        assert_eq!(
            r,
            Request::Goal {
                group: 1,
                x: 3.0,
                y: 4.5,
                add: true
            }
        );
        assert_eq!(parse_request(r#"{"t":"undo"}"#).unwrap(), Request::Undo {});
        let e = parse_request(r#"{"t":"fly"}"#).unwrap_err();
        assert!(e.contains("unknown variant `fly`"), "{e}");
        let e = parse_request(r#"{"t":"goal","group":1,"x":3}"#).unwrap_err();
        assert!(e.contains("missing field `y`"), "{e}");
        let e = parse_request(r#"{"t":"undo","extra":1}"#).unwrap_err();
        assert!(e.contains("unknown field `extra`"), "{e}");
        let e = parse_request(
            r#"{"t":"paint","stroke":1,"x0":0,"y0":0,"x1":0,"y1":0,"brush":1,"cost":256}"#,
        )
        .unwrap_err();
        assert!(e.contains("256"), "{e}");
        let e = parse_request("not json").unwrap_err();
        assert!(e.starts_with("bad message: "), "{e}");
        // A long message is cut to a line.
        let long = format!(r#"{{"t":"{}"}}"#, "x".repeat(5000));
        assert!(parse_request(&long).unwrap_err().len() < 210);
    }

    #[test]
    fn the_rate_limit_allows_a_burst_then_the_rate() {
        let mut r = RateLimit::new(10.0, 5.0);
        assert_eq!((0..8).filter(|_| r.take(0.0)).count(), 5);
        assert!(!r.take(0.05)); // half a token back
        assert!(r.take(0.1));
        // A second later the bucket is full again, not fuller.
        assert_eq!((0..8).filter(|_| r.take(1.5)).count(), 5);
    }

    #[test]
    fn replies_carry_their_type() {
        let v: serde_json::Value = serde_json::from_str(&error_reply("no")).unwrap();
        assert_eq!(v["t"], "error");
        assert_eq!(v["message"], "no");
    }
}
