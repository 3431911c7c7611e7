//! The map and scenario parsers never panic: arbitrary bytes, and valid files cut, flipped and
//! spliced at random, give either a field or a typed error naming the file.

use horde::io::{parse_map, parse_scen, write_map};
use proptest::prelude::*;

const GOOD_MAP: &[u8] = b"type octile\nheight 4\nwidth 5\nmap\n..@..\n.1.9T\nGS.W.\n@@@@.\n";
const GOOD_SCEN: &[u8] = b"version 1\n0\tm.map\t5\t4\t0\t0\t4\t3\t5.24264069\n";

fn check_map(bytes: &[u8]) {
    match parse_map(bytes, "fuzz.map") {
        Ok(cost) => {
            // Whatever parses writes back and parses to the same field.
            let text = write_map(&cost).expect("parsed costs are writable");
            assert_eq!(parse_map(text.as_bytes(), "again").unwrap(), cost);
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz.map"), "{e}"),
    }
}

fn check_scen(bytes: &[u8]) {
    match parse_scen(bytes, "fuzz.scen") {
        // Whatever parses holds finite, non-negative lengths with a tolerance of at least the
        // floor, lines in the file's order.
        Ok(queries) => {
            for q in &queries {
                assert!(q.optimal.is_finite() && q.optimal >= 0.0, "{q:?}");
                assert!(q.tolerance() >= horde::io::SCEN_TOLERANCE_FLOOR, "{q:?}");
            }
            assert!(queries.windows(2).all(|w| w[0].line < w[1].line));
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz.scen"), "{e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        check_map(&bytes);
        check_scen(&bytes);
    }

    #[test]
    fn damaged_files_never_panic(
        cut in 0..GOOD_MAP.len(),
        flips in proptest::collection::vec((0..GOOD_MAP.len(), any::<u8>()), 0..4),
        header in prop_oneof![Just(""), Just("height 99999\n"), Just("width 0\n"), Just("map\n")],
    ) {
        let mut bytes = GOOD_MAP[..cut].to_vec();
        for (i, b) in flips {
            if i < bytes.len() {
                bytes[i] = b;
            }
        }
        let mut spliced = header.as_bytes().to_vec();
        spliced.extend_from_slice(&bytes);
        check_map(&bytes);
        check_map(&spliced);
        let mut scen = GOOD_SCEN.to_vec();
        scen.truncate(cut.min(scen.len()));
        check_scen(&scen);
        // A good file cut after a line break parses to the queries of its whole lines.
        if scen.ends_with(b"\n") {
            let lines = scen.iter().filter(|&&b| b == b'\n').count();
            assert_eq!(parse_scen(&scen, "fuzz.scen").unwrap().len(), lines - 1);
        }
    }
}

#[test]
fn huge_headers_do_not_allocate_what_they_promise() {
    // 30000 x 30000 would be 900 MB: refused because the file is far too short to hold it.
    let e = parse_map(
        b"type octile\nheight 30000\nwidth 30000\nmap\n..\n",
        "big.map",
    )
    .unwrap_err();
    assert!(e.to_string().contains("cannot fit"), "{e}");
    let e = parse_map(
        b"type octile\nheight 18446744073709551615\nwidth 1\nmap\n",
        "big.map",
    )
    .unwrap_err();
    assert!(e.to_string().contains("big.map:2"), "{e}");
}
