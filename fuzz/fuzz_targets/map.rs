//! `.map` files: a field or a short error naming the file, never a panic; whatever parses
//! writes back and parses to the same field.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    match horde::io::parse_map(bytes, "fuzz.map") {
        Ok(cost) => {
            let text = horde::io::write_map(&cost).expect("parsed costs are writable");
            let again = horde::io::parse_map(text.as_bytes(), "again").expect("written maps parse");
            assert_eq!(again, cost);
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.starts_with("fuzz.map"), "{message}");
            assert!(message.len() < 1024, "{} bytes", message.len());
        }
    }
});
