//! The same seed and config give the same dungeon on every run and platform: the ASCII output of
//! a few seeds is kept in `tests/golden/`. After an intended change to generation, rewrite them
//! with `HORDE_BLESS=1 cargo test --release --test dungeon_golden` and review the diff.
#![cfg(feature = "dungeon")]

use horde::dungeon::{DungeonConfig, generate};

fn check(name: &str, config: &DungeonConfig, seed: u64) {
    let ascii = generate(config, seed).unwrap().to_ascii();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"));
    if std::env::var_os("HORDE_BLESS").is_some() {
        std::fs::write(&path, &ascii).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (bless with HORDE_BLESS=1)", path.display()));
    assert!(ascii == want, "{name} differs from {}", path.display());
}

#[test]
fn seeded_dungeons_match_their_golden_files() {
    let default = DungeonConfig::default();
    for seed in [1, 7, 42] {
        check(&format!("dungeon_100x100_seed{seed}"), &default, seed);
    }
    let wide = DungeonConfig {
        width: 60,
        height: 40,
        rooms: 8,
        corridor_width: 2,
        loops: 0.5,
        ..DungeonConfig::default()
    };
    check("dungeon_60x40_wide_seed3", &wide, 3);
}
