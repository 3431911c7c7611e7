use super::protocol::{read_f32, read_u32};
use super::*;
use horde::{Grid, IntegrationBuilder};

fn open(w: u32, h: u32) -> CostField {
    CostField::new(Grid::new(w, h).unwrap())
}

fn session(w: u32, h: u32) -> Session {
    Session::new(open(w, h)).unwrap()
}

fn req(text: &str) -> Request {
    protocol::parse_request(text).unwrap()
}

fn paint(stroke: u32, a: (f64, f64), b: (f64, f64), brush: f64, cost: u8) -> Request {
    Request::Paint {
        stroke,
        x0: a.0,
        y0: a.1,
        x1: b.0,
        y1: b.1,
        brush,
        cost,
    }
}

/// The session's field for `group` equals a fresh build on the session's map.
fn assert_fresh(s: &Session, group: usize) {
    let f = s.field(group).unwrap();
    let fresh = IntegrationBuilder::new()
        .build(s.map(), f.goals(), CostModel::TenFourteen)
        .unwrap();
    assert_eq!(f.integration(), &fresh);
    let flow = FlowField::from_integration(s.map(), &fresh).unwrap();
    assert_eq!(f.flow().bytes(), flow.bytes());
}

#[test]
fn a_painted_wall_is_repaired_into_every_field_and_undone_exactly() {
    let mut s = session(40, 30);
    s.handle(req(r#"{"t":"goal","group":0,"x":35.5,"y":5.2}"#))
        .unwrap();
    s.handle(req(r#"{"t":"goal","group":3,"x":2,"y":28}"#))
        .unwrap();
    let before = s.map().clone();
    // One stroke in three pieces: a wall down column 20, and through group 0's goal row.
    s.handle(paint(1, (20.5, 0.0), (20.5, 10.0), 0.5, WALL))
        .unwrap();
    s.handle(paint(1, (20.5, 10.0), (20.5, 24.0), 0.5, WALL))
        .unwrap();
    s.handle(paint(1, (30.0, 5.5), (39.9, 5.5), 0.5, WALL))
        .unwrap();
    assert_eq!(s.map().get(UVec2::new(20, 12)), Some(WALL));
    assert_eq!(
        s.map().get(UVec2::new(20, 25)),
        Some(1),
        "the stroke ended at 24"
    );
    // The goal cell stayed open; its neighbours on the row did not.
    assert_eq!(s.map().get(UVec2::new(35, 5)), Some(1));
    assert_eq!(s.map().get(UVec2::new(34, 5)), Some(WALL));
    assert_fresh(&s, 0);
    assert_fresh(&s, 3);
    // A second stroke of terrain, then two undos: the map is as it was.
    s.handle(paint(2, (5.0, 5.0), (5.0, 5.0), 3.0, 7)).unwrap();
    assert_eq!(s.map().get(UVec2::new(5, 5)), Some(7));
    s.handle(Request::Undo {}).unwrap();
    assert_eq!(s.map().get(UVec2::new(5, 5)), Some(1));
    assert_eq!(s.map().get(UVec2::new(20, 12)), Some(WALL));
    s.handle(Request::Undo {}).unwrap();
    assert_eq!(s.map(), &before);
    assert_fresh(&s, 0);
    assert!(matches!(
        s.handle(Request::Undo {}),
        Err(PlayError::NothingToUndo)
    ));
}

#[test]
fn bad_requests_are_refused_and_change_nothing() {
    let mut s = session(20, 20);
    s.handle(paint(1, (10.0, 0.0), (10.0, 19.0), 0.5, WALL))
        .unwrap();
    let map = s.map().clone();
    let seq = s.seq();
    let bad = [
        (
            r#"{"t":"goal","group":8,"x":1,"y":1}"#,
            "group 8 is out of range",
        ),
        (
            r#"{"t":"goal","group":0,"x":20,"y":1}"#,
            "outside the 20x20 map",
        ),
        (r#"{"t":"goal","group":0,"x":-0.5,"y":1}"#, "outside"),
        (
            r#"{"t":"goal","group":0,"x":10.2,"y":3}"#,
            "cell (10, 3) is a wall",
        ),
        (
            r#"{"t":"paint","stroke":2,"x0":1,"y0":1,"x1":2,"y1":2,"brush":65,"cost":1}"#,
            "brush 65",
        ),
        (
            r#"{"t":"paint","stroke":2,"x0":1,"y0":1,"x1":2,"y1":2,"brush":1,"cost":0}"#,
            "cost 0",
        ),
        (
            r#"{"t":"paint","stroke":2,"x0":1e9,"y0":1,"x1":2,"y1":2,"brush":1,"cost":1}"#,
            "stroke point",
        ),
        (
            r#"{"t":"spawn","group":0,"x":5,"y":5,"spread":2,"count":0,"radius":0.3,"speed":3}"#,
            "count 0",
        ),
        (
            r#"{"t":"spawn","group":0,"x":5,"y":5,"spread":2,"count":100001,"radius":0.3,"speed":3}"#,
            "count 100001",
        ),
        (
            r#"{"t":"spawn","group":0,"x":5,"y":5,"spread":2,"count":5,"radius":0,"speed":3}"#,
            "radius 0",
        ),
        (
            r#"{"t":"spawn","group":0,"x":5,"y":5,"spread":2,"count":5,"radius":0.3,"speed":-1}"#,
            "speed -1",
        ),
        (
            r#"{"t":"spawn","group":0,"x":10.5,"y":5.5,"spread":0,"count":5,"radius":0.3,"speed":3}"#,
            "no open cell",
        ),
        (
            r#"{"t":"params","separation_weight":2,"separation_radius":1,"collision_passes":9,"steps_per_frame":1}"#,
            "collision passes 9",
        ),
        (
            r#"{"t":"params","separation_weight":2,"separation_radius":1,"collision_passes":2,"steps_per_frame":0}"#,
            "steps per frame 0",
        ),
        (
            r#"{"t":"generate","width":4096,"height":64,"rooms":5,"seed":1,"loops":0.1}"#,
            "width 4096",
        ),
        (
            r#"{"t":"generate","width":64,"height":64,"rooms":5,"seed":1,"loops":2}"#,
            "loops 2",
        ),
    ];
    for (text, says) in bad {
        let e = s.handle(req(text)).unwrap_err().to_string();
        assert!(e.contains(says), "{text}: {e}");
    }
    assert_eq!(s.map(), &map);
    assert_eq!(s.seq(), seq);
    assert!(s.crowd().is_empty());
    assert!(s.field(0).is_none());
}

#[test]
fn uploads_replace_the_map_or_say_why_not() {
    let mut s = session(8, 8);
    let mut file = b"Mtype octile\nheight 2\nwidth 3\nmap\n.@.\n...\n".to_vec();
    s.upload(&file).unwrap();
    assert_eq!((s.map().width(), s.map().height()), (3, 2));
    assert_eq!(s.map().get(UVec2::new(1, 0)), Some(WALL));
    file[0] = b'X';
    let e = s.upload(&file).unwrap_err().to_string();
    assert!(e.contains("not byte 88"), "{e}");
    assert!(matches!(s.upload(&[]), Err(PlayError::UploadKind(0))));
    let e = s
        .upload(b"Mtype octile\nheight 2\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("the uploaded .map"), "{e}");
    let e = s.upload(b"Pnot a png").unwrap_err().to_string();
    assert!(e.contains("the uploaded PNG"), "{e}");
    let wide = format!(
        "Mtype octile\nheight 1\nwidth 2049\nmap\n{}\n",
        ".".repeat(2049)
    );
    let e = s.upload(wide.as_bytes()).unwrap_err().to_string();
    assert!(e.contains("2049x1: at most 2048x2048"), "{e}");
    let huge = vec![b'M'; MAX_UPLOAD_BYTES + 2];
    let e = s.upload(&huge).unwrap_err().to_string();
    assert!(
        e.contains(&format!("at most {MAX_UPLOAD_BYTES} bytes")),
        "{e}"
    );
    // Still the 3 x 2 map.
    assert_eq!((s.map().width(), s.map().height()), (3, 2));
    // Saved, it reads back the same.
    let Some(Reply::Text(saved)) = s.handle(Request::Save {}).unwrap() else {
        panic!("a text reply")
    };
    let v: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(v["t"], "map_file");
    let text = v["text"].as_str().unwrap();
    assert_eq!(
        &horde::io::parse_map(text.as_bytes(), "saved").unwrap(),
        s.map()
    );
}

#[test]
fn frames_carry_the_map_the_field_and_the_agents() {
    let mut s = session(12, 9);
    s.handle(paint(1, (6.5, 0.0), (6.5, 5.0), 0.5, WALL))
        .unwrap();
    s.handle(req(r#"{"t":"goal","group":2,"x":10,"y":1}"#))
        .unwrap();
    s.handle(req(
        r#"{"t":"spawn","group":2,"x":2,"y":2,"spread":1.5,"count":6,"radius":0.3,"speed":3}"#,
    ))
    .unwrap();
    let (binary, text) = s.frames();
    let tags: Vec<u8> = binary.iter().map(|f| f[0]).collect();
    assert_eq!(
        tags,
        [
            protocol::MAP_FRAME,
            protocol::FIELD_FRAME,
            protocol::AGENT_FRAME
        ]
    );
    let map = &binary[0];
    let head: Vec<_> = (4..28)
        .step_by(4)
        .map(|at| read_u32(map, at).unwrap())
        .collect();
    assert_eq!(head, [12, 9, 0, 0, 12, 9]);
    assert_eq!(&map[28..], s.map().costs());
    let field = &binary[1];
    assert_eq!(field[1], 2, "group");
    assert_eq!(read_u32(field, 12), Some(s.seq()));
    let cells = 12 * 9;
    // The first frame is the whole map.
    let rect: Vec<_> = (16..32)
        .step_by(4)
        .map(|at| read_u32(field, at).unwrap())
        .collect();
    assert_eq!(rect, [0, 0, 12, 9]);
    let values = s.field(2).unwrap().integration().values();
    for (i, &v) in values.iter().enumerate() {
        assert_eq!(read_u32(field, 32 + 4 * i), Some(v));
    }
    assert_eq!(read_u32(field, 32 + 4 * (12 + 10)), Some(0), "the goal");
    assert_eq!(&field[32 + 4 * cells..], s.field(2).unwrap().flow().bytes());
    let agents = &binary[2];
    assert_eq!(read_u32(agents, 4), Some(6));
    for (k, a) in s.crowd().snapshot().enumerate() {
        assert_eq!(read_f32(agents, 8 + 4 * k), Some(a.position.x));
        assert_eq!(read_f32(agents, 8 + 4 * (6 + k)), Some(a.position.y));
        assert_eq!(agents[8 + 48 + k], AgentCode::Moving as u8);
        assert_eq!(agents[8 + 54 + k], 2);
        assert_eq!(agents[8 + 60 + k], 30, "radius in hundredths");
        assert!(
            s.map()
                .is_walkable(s.map().grid().world_to_cell(a.position).unwrap())
        );
    }
    assert_eq!(text.len(), 1);
    let state: serde_json::Value = serde_json::from_str(&text[0]).unwrap();
    assert_eq!(state["groups"][2]["goals"], serde_json::json!([[10, 1]]));
    assert_eq!(state["undo"], 1);
    // Nothing new: nothing sent (paused, so no agent frame either).
    let (binary, text) = s.frames();
    assert!(binary.is_empty() && text.is_empty());
    // A paint marks the map and the field; the next frames send the cells that changed: one
    // rectangle, which holds every cell whose value or arrow differs.
    let old_values = s.field(2).unwrap().integration().values().to_vec();
    let old_flow = s.field(2).unwrap().flow().bytes().to_vec();
    s.handle(paint(2, (3.5, 7.5), (3.5, 7.5), 0.5, 9)).unwrap();
    let (binary, _) = s.frames();
    assert_eq!(
        binary.iter().map(|f| f[0]).collect::<Vec<_>>(),
        [protocol::MAP_FRAME, protocol::FIELD_FRAME]
    );
    let map = &binary[0];
    let head: Vec<_> = (4..28)
        .step_by(4)
        .map(|at| read_u32(map, at).unwrap())
        .collect();
    assert_eq!(head, [12, 9, 3, 7, 1, 1], "the one cell painted");
    assert_eq!(map[28..], [9]);
    let patch = &binary[1];
    let r: Vec<usize> = (16..32)
        .step_by(4)
        .map(|at| read_u32(patch, at).unwrap() as usize)
        .collect();
    let (x0, y0, rw, rh) = (r[0], r[1], r[2], r[3]);
    assert!(rw > 0 && rh > 0 && rw * rh < cells, "{r:?}");
    assert_eq!(patch.len(), 32 + 5 * rw * rh);
    let new_values = s.field(2).unwrap().integration().values();
    let new_flow = s.field(2).unwrap().flow().bytes();
    for y in 0..9 {
        for x in 0..12 {
            let i = y * 12 + x;
            let inside = (x0..x0 + rw).contains(&x) && (y0..y0 + rh).contains(&y);
            if inside {
                let k = (y - y0) * rw + (x - x0);
                assert_eq!(read_u32(patch, 32 + 4 * k), Some(new_values[i]));
                assert_eq!(patch[32 + 4 * rw * rh + k], new_flow[i]);
            } else {
                assert_eq!(
                    (old_values[i], old_flow[i]),
                    (new_values[i], new_flow[i]),
                    "({x}, {y})"
                );
            }
        }
    }
    assert!(new_values != &old_values[..]);
    // Painting the same again changes nothing, and is answered by an empty rectangle.
    s.handle(paint(2, (3.5, 7.5), (3.5, 7.5), 0.5, 9)).unwrap();
    let (binary, _) = s.frames();
    assert_eq!(binary.len(), 1);
    assert_eq!(binary[0].len(), 32);
    assert_eq!(read_u32(&binary[0], 24), Some(0));
    assert_eq!(binary[0][0], protocol::FIELD_FRAME);
}

#[test]
fn a_crowd_walks_round_a_painted_wall_to_its_goal() {
    let mut s = session(48, 32);
    s.handle(paint(1, (24.5, 0.0), (24.5, 25.0), 0.5, WALL))
        .unwrap();
    s.handle(req(r#"{"t":"goal","group":0,"x":44,"y":4}"#))
        .unwrap();
    s.handle(req(
        r#"{"t":"spawn","group":0,"x":6,"y":6,"spread":4,"count":60,"radius":0.35,"speed":6}"#,
    ))
    .unwrap();
    assert_eq!(s.crowd().len(), 60);
    s.handle(req(r#"{"t":"params","separation_weight":2,"separation_radius":1,"collision_passes":2,"steps_per_frame":4}"#))
        .unwrap();
    s.handle(Request::Play {}).unwrap();
    let wall_x = 24.0..25.0;
    let mut frames = 0;
    while frames < 2000 {
        s.tick().unwrap();
        frames += 1;
        for a in s.crowd().snapshot() {
            let c = s.map().grid().world_to_cell(a.position).unwrap();
            assert!(s.map().is_walkable(c), "an agent in a wall at {c}");
            assert!(!(wall_x.contains(&a.position.x) && a.position.y < 25.5));
        }
        if s.crowd()
            .states()
            .iter()
            .all(|&st| st == AgentState::Arrived)
        {
            break;
        }
    }
    assert!(frames < 2000, "all arrive");
    let stats: serde_json::Value = serde_json::from_str(&s.stats_reply()).unwrap();
    assert_eq!(stats["arrived"], 60);
    assert_eq!(stats["steps"], 4 * frames);
    // Moving the goal sends them off again, and their field follows.
    s.handle(req(r#"{"t":"goal","group":0,"x":3,"y":28}"#))
        .unwrap();
    assert_fresh(&s, 0);
    s.tick().unwrap();
    assert!(s.crowd().states().contains(&AgentState::Moving));
}

#[test]
fn agents_on_a_new_wall_are_moved_off_it_and_params_keep_them_in_place() {
    let mut s = session(30, 30);
    s.handle(req(r#"{"t":"goal","group":1,"x":28,"y":28}"#))
        .unwrap();
    s.handle(req(
        r#"{"t":"spawn","group":1,"x":10,"y":10,"spread":3,"count":40,"radius":0.3,"speed":3}"#,
    ))
    .unwrap();
    s.handle(paint(1, (10.0, 10.0), (10.0, 10.0), 2.5, WALL))
        .unwrap();
    let grid = *s.map().grid();
    for a in s.crowd().snapshot() {
        assert!(s.map().is_walkable(grid.world_to_cell(a.position).unwrap()));
    }
    let before: Vec<Vec2> = s.crowd().snapshot().map(|a| a.position).collect();
    s.handle(req(r#"{"t":"params","separation_weight":4,"separation_radius":1.5,"collision_passes":3,"steps_per_frame":2}"#))
        .unwrap();
    assert_eq!(s.crowd().config().separation_weight, 4.0);
    assert_eq!(s.crowd().config().collision_passes, 3);
    let after: Vec<Vec2> = s.crowd().snapshot().map(|a| a.position).collect();
    assert_eq!(before, after);
    let (binary, _) = s.frames();
    let agents = binary
        .iter()
        .find(|f| f[0] == protocol::AGENT_FRAME)
        .unwrap();
    assert!(
        agents[8 + 8 * 40..8 + 8 * 40 + 40]
            .iter()
            .all(|&st| st == 0)
    );
    assert!(
        agents[8 + 9 * 40..8 + 10 * 40].iter().all(|&g| g == 1),
        "group kept"
    );
    s.handle(Request::Clear {}).unwrap();
    assert!(s.crowd().is_empty());
}

#[test]
fn a_generated_dungeon_replaces_map_goals_agents_and_history() {
    let mut s = session(30, 30);
    s.handle(req(r#"{"t":"goal","group":0,"x":5,"y":5}"#))
        .unwrap();
    s.handle(paint(1, (1.0, 1.0), (2.0, 2.0), 1.0, WALL))
        .unwrap();
    s.handle(req(
        r#"{"t":"generate","width":96,"height":64,"rooms":8,"seed":3,"loops":0.2}"#,
    ))
    .unwrap();
    assert_eq!((s.map().width(), s.map().height()), (96, 64));
    let config = DungeonConfig {
        width: 96,
        height: 64,
        rooms: 8,
        loops: 0.2,
        ..DungeonConfig::default()
    };
    let expected = horde::dungeon::generate(&config, 3)
        .unwrap()
        .to_cost_field();
    assert_eq!(s.map(), &expected);
    assert!(s.field(0).is_none());
    assert!(matches!(
        s.handle(Request::Undo {}),
        Err(PlayError::NothingToUndo)
    ));
    let (binary, _) = s.frames();
    // The map, and every group's (now empty) field.
    assert_eq!(
        binary
            .iter()
            .filter(|f| f[0] == protocol::FIELD_FRAME)
            .count(),
        MAX_GROUPS
    );
}

#[test]
fn the_distance_to_a_segment_is_measured_to_its_nearest_point() {
    assert_eq!(distance_to_segment((0.0, 1.0), (0.0, 0.0), (0.0, 0.0)), 1.0);
    assert_eq!(distance_to_segment((1.0, 1.0), (0.0, 0.0), (2.0, 0.0)), 1.0);
    assert_eq!(distance_to_segment((5.0, 0.0), (0.0, 0.0), (2.0, 0.0)), 3.0);
    assert_eq!(
        distance_to_segment((-3.0, 4.0), (0.0, 0.0), (2.0, 0.0)),
        5.0
    );
}
