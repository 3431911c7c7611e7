//! The x86-64 kernels: AVX2 and AVX-512 for the fields, SSE2 (the baseline) and x86-64-v3 for
//! the crowd. Each `#[target_feature]` function here is private to its file and reached through a
//! safe method of the token that proves its features.

pub(crate) mod collide;
pub(crate) mod flow;
pub(crate) mod neighbours;
pub(crate) mod rooms;
pub(crate) mod sse2;
pub(crate) mod steer8;
pub(crate) mod sweep;
pub(crate) mod transpose;
