use horde::*;
fn best<F: FnMut()>(n: usize, mut f: F) -> f64 {
    let mut v: Vec<f64> = (0..n)
        .map(|_| {
            let t = std::time::Instant::now();
            f();
            t.elapsed().as_nanos() as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    eprintln!("min {:.0} median {:.0}", v[0], v[n / 2]);
    v[0]
}
fn main() {
    let side: u32 = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(128);
    let cost = if side == 128 {
        maps::demo_map()
    } else {
        maps::scattered_map(side, side, 2026).unwrap()
    };
    let goal = glam::UVec2::new(side / 2, side / 2);
    let goal = if cost.is_walkable(goal) {
        goal
    } else {
        (0..cost.grid().len())
            .map(|i| cost.grid().cell(i))
            .find(|&c| cost.is_walkable(c))
            .unwrap()
    };
    let m = CostModel::TenFourteen;
    let mut b = IntegrationBuilder::new();
    let mut f = IntegrationField::new(*cost.grid(), m);
    let mut flow = FlowField::new(*cost.grid());
    b.build_into(&cost, &[goal], m, &mut f).unwrap();
    let n = cost.grid().len() as f64;
    let reps = (50_000_000.0 / n) as usize + 3;
    let tf = best(reps, || b.flow_into(&mut flow).unwrap());
    let ti = best(reps, || {
        b.build_into(&cost, &[goal], m, &mut f).unwrap();
    });
    println!(
        "{side}: integration {:.2} ns/cell, flow {:.2} ns/cell (best of {reps})",
        ti / n,
        tf / n
    );
}
