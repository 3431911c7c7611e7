//! The parts of the `horde` program that are tested and fuzzed on their own: the parsers of its
//! argument values, and the playground's simulation and messages (`horde serve`). The program
//! itself is `src/main.rs`.

pub mod args;
pub mod playground;
