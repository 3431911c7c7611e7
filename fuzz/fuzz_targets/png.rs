//! Greyscale PNG maps: a field of the image's size with no zero cost, or a short error naming the
//! file, never a panic or an allocation beyond the cell limit.
#![no_main]

use libfuzzer_sys::fuzz_target;

/// 256 × 256: small enough that a header claiming more is refused before decoding.
const MAX_CELLS: u64 = 1 << 16;

fuzz_target!(|bytes: &[u8]| {
    match horde::io::parse_png_map(bytes, "fuzz.png", MAX_CELLS) {
        Ok(cost) => {
            assert!(cost.costs().len() as u64 <= MAX_CELLS);
            assert_eq!(cost.costs().len(), cost.grid().len());
            assert!(!cost.costs().contains(&0));
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.starts_with("fuzz.png"), "{message}");
            assert!(message.len() < 1024, "{} bytes", message.len());
        }
    }
});
