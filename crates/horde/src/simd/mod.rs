//! Every vector kernel of the library, and the one place that asks the CPU what it has.
//!
//! The plain code of each kernel stays beside its caller (the generic fallback, and the
//! reference each kernel is tested against); the kernels for one architecture live in one
//! folder (`x86_64/`), and nothing outside this module writes `unsafe` or detects CPU features.
//!
//! A kernel is reachable only through a token: [`Avx2`], [`V3`] and [`Avx512`] have private
//! fields, and [`cpu`] is the only thing that makes them, after it has found the features each
//! stands for. The CPU is asked once per process (then the answer is a cached load). A token's
//! methods are safe: holding the token is the proof that the kernel's `#[target_feature]`
//! requirement holds, so no safe function runs intrinsics on the word of a comment. Code that is
//! written once for both paths is generic over [`Level`] ([`Plain`] or [`V3`]): the plain
//! instantiation has no vector code at all, the other is compiled inside a `V3` entry point for
//! x86-64-v3 (see [`V3`]'s methods).
//!
//! Every kernel gives the same bits as its plain code (each has a test against it), so which
//! one runs never changes a result.

#![allow(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub(crate) mod generic;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_64;

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
pub(crate) use generic as baseline;
/// The crowd's baseline kernels, which need no token: SSE2 on x86-64 (every such CPU has it),
/// the plain code elsewhere.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) use x86_64::sse2 as baseline;

use std::sync::OnceLock;

/// Proof that the CPU has AVX2: the 8-lane row passes, flow arrows and range checks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx2 {
    _detected: (),
}

/// Proof that the CPU has the x86-64-v3 features the crowd's step is compiled for: AVX2, BMI1,
/// BMI2, LZCNT and POPCNT (three-operand instructions and bit tricks, and most of the update
/// eight agents at once).
#[derive(Debug, Clone, Copy)]
pub(crate) struct V3 {
    _detected: (),
}

/// Proof that the CPU has the parts of AVX-512 (F, BW and VL) that the 16-lane row passes and
/// flow arrows use.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx512 {
    _detected: (),
}

/// What the CPU has, as tokens.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cpu {
    pub(crate) avx2: Option<Avx2>,
    pub(crate) v3: Option<V3>,
    pub(crate) avx512: Option<Avx512>,
}

/// The CPU's features, asked once per process.
#[inline]
pub(crate) fn cpu() -> Cpu {
    static CPU: OnceLock<Cpu> = OnceLock::new();
    *CPU.get_or_init(detect)
}

/// The one place that asks the CPU. Under Miri, which cannot run intrinsics, nothing is found
/// and the plain code runs.
fn detect() -> Cpu {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use std::arch::is_x86_feature_detected as has;
        let avx2 = has!("avx2");
        let v3 = avx2 && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("popcnt");
        let avx512 = has!("avx512f") && has!("avx512bw") && has!("avx512vl");
        Cpu {
            avx2: avx2.then_some(Avx2 { _detected: () }),
            v3: v3.then_some(V3 { _detected: () }),
            avx512: avx512.then_some(Avx512 { _detected: () }),
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    Cpu::default()
}

/// A compile-time choice between the plain code and the x86-64-v3 kernels, for code written
/// once over both: [`Plain`] (no kernel can be reached) or a [`V3`] token.
pub(crate) trait Level: Copy {
    /// The token, if this level has one.
    fn v3(self) -> Option<V3>;
}

/// The plain code only.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plain;

impl Level for Plain {
    #[inline(always)]
    fn v3(self) -> Option<V3> {
        None
    }
}

impl Level for V3 {
    #[inline(always)]
    fn v3(self) -> Option<V3> {
        Some(self)
    }
}

/// Which vector kernels the tests on this CPU exercise. A kernel the CPU lacks is skipped, unless
/// `HORDE_REQUIRE_SIMD` (comma-separated: `avx2`, `avx512`; CI sets it) says it must be tested:
/// then the test fails instead of passing without testing it.
#[cfg(test)]
pub(crate) mod under_test {
    use super::{Avx2, Avx512, V3, cpu};

    const NAMES: [&str; 2] = ["avx2", "avx512"];

    fn required() -> Vec<String> {
        std::env::var("HORDE_REQUIRE_SIMD")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .collect()
    }

    fn check<T>(name: &str, token: Option<T>) -> Option<T> {
        assert!(
            token.is_some() || !required().iter().any(|r| r == name),
            "HORDE_REQUIRE_SIMD requires the {name} kernels to be tested, but this CPU lacks {name}"
        );
        token
    }

    /// The AVX2 kernels, if they can be tested here.
    pub fn avx2() -> Option<Avx2> {
        check("avx2", cpu().avx2)
    }

    /// The crowd's x86-64-v3 compilation, if it can be tested here (with the AVX2 kernels).
    pub fn v3() -> Option<V3> {
        check("avx2", cpu().v3)
    }

    /// The AVX-512 (F, BW, VL) kernels, if they can be tested here.
    pub fn avx512() -> Option<Avx512> {
        check("avx512", cpu().avx512)
    }

    #[test]
    fn every_required_kernel_family_is_known_and_present() {
        for name in required() {
            assert!(
                NAMES.contains(&name.as_str()),
                "HORDE_REQUIRE_SIMD names '{name}': not one of {NAMES:?}"
            );
            let present = if name == "avx2" {
                avx2().is_some() && v3().is_some()
            } else {
                avx512().is_some()
            };
            assert!(present, "{name}");
        }
    }

    #[test]
    fn the_cpu_is_asked_once_and_answers_the_same() {
        let (a, b) = (cpu(), cpu());
        assert_eq!(a.avx2.is_some(), b.avx2.is_some());
        assert_eq!(a.v3.is_some(), b.v3.is_some());
        // x86-64-v3 includes AVX2.
        assert!(a.v3.is_none() || a.avx2.is_some());
    }
}
