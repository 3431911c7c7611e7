use horde::*;
fn main() {
    let big = std::env::args().nth(1).is_some();
    let cost = if big {
        horde::maps::scattered_map(1024, 1024, horde::maps::DEMO_SEED).unwrap()
    } else {
        horde::maps::demo_map()
    };
    let goal = (0..cost.grid().len())
        .map(|i| cost.grid().cell(i))
        .filter(|&p| cost.is_walkable(p))
        .min_by_key(|p| {
            p.x.abs_diff(cost.width() / 2).pow(2) + p.y.abs_diff(cost.height() / 2).pow(2)
        })
        .unwrap();
    let mut b = IntegrationBuilder::new();
    let mut f = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
    let n = if big { 60 } else { 5000 };
    let t = std::time::Instant::now();
    for _ in 0..n {
        b.build_into(&cost, &[goal], CostModel::TenFourteen, &mut f)
            .unwrap();
    }
    println!(
        "{:.2} ns/cell",
        t.elapsed().as_nanos() as f64 / n as f64 / cost.grid().len() as f64
    );
}
