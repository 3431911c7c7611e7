use horde::*;
use std::time::Instant;
fn main() {
    let mut maps: Vec<(String, CostField)> = vec![
        ("builtin".into(), horde::maps::demo_map()),
        (
            "scattered1024".into(),
            horde::maps::scattered_map(1024, 1024, horde::maps::DEMO_SEED).unwrap(),
        ),
    ];
    for n in [
        "arena",
        "den520d",
        "AcrosstheCape",
        "Berlin_0_256",
        "random512-10-0",
        "maze512-1-0",
        "8room_000",
    ] {
        maps.push((
            n.into(),
            horde::io::read_map(format!("../shared/maps/movingai/{n}.map")).unwrap(),
        ));
    }
    for (name, cost) in maps {
        let goal = (0..cost.grid().len())
            .map(|i| cost.grid().cell(i))
            .filter(|&p| cost.is_walkable(p))
            .min_by_key(|p| {
                p.x.abs_diff(cost.width() / 2).pow(2) + p.y.abs_diff(cost.height() / 2).pow(2)
            })
            .unwrap();
        let mut f = IntegrationField::new(*cost.grid(), CostModel::TenFourteen);
        let mut f2 = f.clone();
        let reps = (8_000_000 / cost.grid().len()).max(5);
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        let mut b2 = IntegrationBuilder::new();
        let mut td = f64::MAX;
        let mut ts = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            for _ in 0..reps {
                b.build_into(&cost, &[goal], CostModel::TenFourteen, &mut f)
                    .unwrap();
            }
            td = td.min(t.elapsed().as_nanos() as f64 / reps as f64 / cost.grid().len() as f64);
            let t = Instant::now();
            for _ in 0..reps {
                b2.build_into(&cost, &[goal], CostModel::TenFourteen, &mut f2)
                    .unwrap();
            }
            ts = ts.min(t.elapsed().as_nanos() as f64 / reps as f64 / cost.grid().len() as f64);
        }
        println!(
            "{name:16} wave {td:7.2} ns/cell  default {ts:7.2} ns/cell  ratio {:5.2} same {}",
            td / ts,
            f == f2
        );
    }
}
