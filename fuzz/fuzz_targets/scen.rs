//! `.scen` files: queries or a short error naming the file, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    match horde::io::parse_scen(bytes, "fuzz.scen") {
        Ok(queries) => {
            for q in &queries {
                assert!(q.optimal.is_finite() && q.optimal >= 0.0, "{q:?}");
                assert!(q.tolerance() >= horde::io::SCEN_TOLERANCE_FLOOR, "{q:?}");
                assert!(q.tolerance().is_finite(), "{q:?}");
            }
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.starts_with("fuzz.scen"), "{message}");
            assert!(message.len() < 1024, "{} bytes", message.len());
        }
    }
});
