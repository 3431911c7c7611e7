//! # horde
//!
//! Navigation for crowds on grid maps: one cost field per map, one integration field and one
//! 1-byte-per-cell flow field per goal, read by every unit heading there; A* for lone units.
//!
//! The modules follow the pipeline: [`grid`] → [`cost`] → [`integration`] → [`flow`] →
//! [`crowd`], with
//! [`astar`] for single paths, `dungeon` for procedural levels (feature `dungeon`), [`io`] for map
//! files and [`maps`] for built-in maps.
//!
//! ```
//! use glam::{UVec2, Vec2};
//! use horde::{CostField, CostModel, FlowField, FlowSample, Grid, IntegrationBuilder, WALL};
//!
//! // A 32 × 32 map with a wall across the middle and a gap on the right.
//! let mut cost = CostField::new(Grid::new(32, 32)?);
//! cost.fill_rect(UVec2::new(0, 16), UVec2::new(27, 16), WALL)?;
//!
//! // One wave from the goal, then one byte of direction per cell.
//! let mut builder = IntegrationBuilder::new();
//! let integration = builder.build(&cost, &[UVec2::new(2, 30)], CostModel::TenFourteen)?;
//! let mut flow = FlowField::new(*cost.grid());
//! builder.flow_into(&mut flow)?;
//!
//! // Any number of units now just read the arrow under their feet.
//! let mut pos = Vec2::new(2.5, 2.5);
//! for _ in 0..200 {
//!     match flow.sample_nearest(pos) {
//!         FlowSample::Direction(d) => pos += d * 0.5,
//!         FlowSample::Goal => break,
//!         FlowSample::NoDirection(why) => panic!("stuck: {why:?}"),
//!     }
//! }
//! assert_eq!(flow.sample_nearest(pos), FlowSample::Goal);
//! assert!(integration.get(UVec2::new(2, 2)).unwrap() > 280); // it had to go round the wall
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Features
//!
//! - `parallel` (default): large builds, repairs and crowd steps run on rayon's thread pool; the
//!   results are bit-identical to a one-thread run.
//! - `dungeon` (default): the seeded dungeon generator (`dungeon` module; `delaunator`,
//!   `petgraph`).

#![cfg_attr(docsrs, feature(doc_cfg))]
// Every `unsafe` of the library is a vector kernel in `simd`, which allows it there alone.
#![deny(unsafe_code)]

pub mod astar;
pub mod coarse;
pub mod cost;
pub mod crowd;
#[cfg(feature = "dungeon")]
#[cfg_attr(docsrs, doc(cfg(feature = "dungeon")))]
pub mod dungeon;
pub mod flow;
pub mod grid;
pub mod integration;
pub mod io;
pub mod live;
pub mod maps;
pub mod sectors;
mod simd;

/// The `glam` horde's positions and cells are in (0.33, the version Bevy 0.20 uses): use it
/// through `horde::glam` to get the matching version.
pub use glam;

pub use astar::{AStar, AStarError, Path};
pub use coarse::{CoarseError, CoarseField, CoarseWalk};
pub use cost::{CostEdit, CostError, CostField, CostModel, PLAIN, Shape, WALL};
pub use flow::{
    FLOW_GOAL, FLOW_UNREACHABLE, FLOW_WALL, FlowError, FlowField, FlowSample, NoDirection,
};
pub use grid::{Dir8, Grid, GridError, SizeMismatch};
pub use integration::{
    BuildProgress, IntegrationBuilder, IntegrationError, IntegrationField, UNREACHABLE, WaveStats,
};
pub use io::MapError;
pub use live::{
    CacheEditReport, CacheStats, FieldCache, FieldKey, FieldRepairer, FieldRequest, LiveError,
    LiveField, RepairStats, SizeClass,
};
pub use simd::{SimdLevel, SimdLevelError, simd_level};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
