//! Criterion benchmarks of the dungeon generator at the two sizes.

use criterion::{Criterion, criterion_group, criterion_main};
use horde::dungeon::{DungeonConfig, generate};

fn dungeons(c: &mut Criterion) {
    let mut group = c.benchmark_group("dungeon");
    group.sample_size(20);
    let small = DungeonConfig::default();
    group.bench_function("100x100_12_rooms", |b| {
        b.iter(|| generate(&small, 7).unwrap())
    });
    let large = DungeonConfig {
        width: 1000,
        height: 1000,
        rooms: 500,
        ..DungeonConfig::default()
    };
    group.bench_function("1000x1000_500_rooms", |b| {
        b.iter(|| generate(&large, 7).unwrap())
    });
    group.finish();
}

criterion_group!(benches, dungeons);
criterion_main!(benches);
