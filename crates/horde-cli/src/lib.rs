//! The parts of the `horde` program that are tested and fuzzed on their own: the parsers of its
//! argument values. The program itself is `src/main.rs`.

pub mod args;
