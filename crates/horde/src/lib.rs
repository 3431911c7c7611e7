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

/// The CPU has the parts of AVX-512 (F, BW and VL) that the 16-lane kernels of the integration
/// sweeps and the flow field use.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
}

/// Which vector kernels the tests on this CPU exercise. A kernel the CPU lacks is skipped, unless
/// `HORDE_REQUIRE_SIMD` (comma-separated: `avx2`, `avx512`; CI sets it) says it must be tested:
/// then the test fails instead of passing without testing it.
#[cfg(all(test, target_arch = "x86_64"))]
pub(crate) mod simd_test {
    const NAMES: [&str; 2] = ["avx2", "avx512"];

    fn required() -> Vec<String> {
        std::env::var("HORDE_REQUIRE_SIMD")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .collect()
    }

    fn under_test(name: &str, detected: bool) -> bool {
        assert!(
            detected || !required().iter().any(|r| r == name),
            "HORDE_REQUIRE_SIMD requires the {name} kernels to be tested, but this CPU lacks {name}"
        );
        detected
    }

    /// The AVX2 kernels (and the crowd's x86-64-v3 compilation) can be tested here.
    pub fn avx2() -> bool {
        under_test("avx2", std::arch::is_x86_feature_detected!("avx2"))
    }

    /// The AVX-512 (F, BW, VL) kernels can be tested here.
    pub fn avx512() -> bool {
        under_test("avx512", crate::has_avx512())
    }

    #[test]
    fn every_required_kernel_family_is_known_and_present() {
        for name in required() {
            assert!(
                NAMES.contains(&name.as_str()),
                "HORDE_REQUIRE_SIMD names '{name}': not one of {NAMES:?}"
            );
            let present = if name == "avx2" { avx2() } else { avx512() };
            assert!(present, "{name}");
        }
    }
}

/// The `glam` horde's positions and cells are in (0.33, the version Bevy 0.20 uses): use it
/// through `horde::glam` to get the matching version.
pub use glam;

pub use astar::{AStar, AStarError, Path};
pub use coarse::{CoarseError, CoarseField, CoarseWalk};
pub use cost::{CostEdit, CostError, CostField, CostModel, PLAIN, Shape, WALL};
pub use flow::{
    FLOW_GOAL, FLOW_UNREACHABLE, FLOW_WALL, FlowError, FlowField, FlowSample, NoDirection,
};
pub use grid::{Dir8, Grid, GridError};
pub use integration::{
    BuildProgress, IntegrationBuilder, IntegrationError, IntegrationField, UNREACHABLE, WaveStats,
};
pub use io::MapError;
pub use live::{
    CacheEditReport, CacheStats, FieldCache, FieldKey, FieldRepairer, LiveError, LiveField,
    RepairStats, SizeClass,
};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
