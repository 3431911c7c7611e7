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

/// The kernels this process runs: the CPU's features, asked once per process, less those the
/// `HORDE_SIMD` environment variable turns off (see [`SimdLevel`]).
#[inline]
pub(crate) fn cpu() -> Cpu {
    static CPU: OnceLock<Cpu> = OnceLock::new();
    *CPU.get_or_init(|| {
        let cap = SimdLevel::from_env()
            .ok()
            .flatten()
            .unwrap_or(SimdLevel::Avx512);
        detect().capped(cap)
    })
}

/// The CPU's features, whatever `HORDE_SIMD` says: the kernels' own tests compare every kernel
/// the CPU has with its plain code, under any setting.
#[cfg(test)]
fn hardware() -> Cpu {
    static CPU: OnceLock<Cpu> = OnceLock::new();
    *CPU.get_or_init(detect)
}

/// The widest vector kernels a process runs, best last: what the CPU has, at most what the
/// `HORDE_SIMD` environment variable allows (read once, when a kernel is first wanted).
///
/// `HORDE_SIMD=off` runs the plain code everywhere (as on a CPU without vector extensions, such
/// as an ARM one; on x86-64 the SSE2 every such CPU has stays in use), `HORDE_SIMD=avx2` stops
/// at the 8-lane kernels, and `auto` (or no variable) takes the best the CPU has. Results are
/// the same bits at every level, so the variable changes speed only: it is there to compare
/// the levels and to test the paths other machines take. A value not among those is ignored
/// (the library cannot report it; the `horde` command names it as an error).
///
/// ```
/// let level = horde::simd_level();
/// assert!(level <= horde::SimdLevel::Avx512);
/// println!("vector kernels: {}", level.name());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// No vector kernels: the plain code.
    Plain,
    /// The AVX2 kernels (8 lanes of 32 bits) and the crowd's x86-64-v3 build.
    Avx2,
    /// The AVX-512 (F, BW, VL) kernels (16 lanes), with the AVX2 ones where none is wider.
    Avx512,
}

/// An unknown value of `HORDE_SIMD`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("HORDE_SIMD={value:?}: expected one of off, avx2, avx512, auto")]
pub struct SimdLevelError {
    /// The value found, cut to its first 32 characters (and `…`) if longer, so that the
    /// message stays a line.
    pub value: String,
}

impl SimdLevelError {
    fn new(value: &str) -> SimdLevelError {
        const SHOWN: usize = 32;
        let mut shown: String = value.chars().take(SHOWN).collect();
        if value.chars().nth(SHOWN).is_some() {
            shown.push('…');
        }
        SimdLevelError { value: shown }
    }
}

impl SimdLevel {
    /// The level's name as `HORDE_SIMD` spells it: `off`, `avx2` or `avx512`. O(1).
    ///
    /// ```
    /// assert_eq!(horde::SimdLevel::Plain.name(), "off");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Plain => "off",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }

    /// The cap a value of `HORDE_SIMD` sets (`off` or `plain`, `avx2`, `avx512`; any case,
    /// spaces around ignored), `None` for `auto` or an empty value. O(1).
    ///
    /// ```
    /// use horde::SimdLevel;
    /// assert_eq!(SimdLevel::parse("AVX2"), Ok(Some(SimdLevel::Avx2)));
    /// assert_eq!(SimdLevel::parse("auto"), Ok(None));
    /// assert!(SimdLevel::parse("sse9").is_err());
    /// ```
    pub fn parse(value: &str) -> Result<Option<SimdLevel>, SimdLevelError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(None),
            "off" | "plain" => Ok(Some(SimdLevel::Plain)),
            "avx2" => Ok(Some(SimdLevel::Avx2)),
            "avx512" => Ok(Some(SimdLevel::Avx512)),
            _ => Err(SimdLevelError::new(value)),
        }
    }

    /// The cap the `HORDE_SIMD` environment variable sets now (`None`: not set, or `auto`):
    /// what a program may check at start to report a mistyped value, which the library itself
    /// ignores. O(length of the value).
    ///
    /// ```
    /// match horde::SimdLevel::from_env() {
    ///     Ok(cap) => println!("HORDE_SIMD caps the kernels at {:?}", cap),
    ///     Err(e) => eprintln!("error: {e}"),
    /// }
    /// ```
    pub fn from_env() -> Result<Option<SimdLevel>, SimdLevelError> {
        match std::env::var("HORDE_SIMD") {
            Ok(v) => SimdLevel::parse(&v),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(v)) => {
                Err(SimdLevelError::new(&v.to_string_lossy()))
            }
        }
    }
}

/// The widest vector kernels this process runs (see [`SimdLevel`]). O(1) after the first call,
/// which asks the CPU and reads `HORDE_SIMD`.
///
/// ```
/// // Whatever the level, a field has the same bytes: the level only says how fast it came.
/// let level = horde::simd_level();
/// assert_eq!(horde::SimdLevel::parse(level.name()), Ok(Some(level)));
/// ```
pub fn simd_level() -> SimdLevel {
    cpu().level()
}

impl Cpu {
    /// The widest kernels these features run.
    fn level(self) -> SimdLevel {
        if self.avx512.is_some() {
            SimdLevel::Avx512
        } else if self.avx2.is_some() {
            SimdLevel::Avx2
        } else {
            SimdLevel::Plain
        }
    }

    /// These features less those above `cap`.
    fn capped(self, cap: SimdLevel) -> Cpu {
        Cpu {
            avx2: self.avx2.filter(|_| cap >= SimdLevel::Avx2),
            v3: self.v3.filter(|_| cap >= SimdLevel::Avx2),
            avx512: self.avx512.filter(|_| cap >= SimdLevel::Avx512),
        }
    }
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
    use super::{Avx2, Avx512, V3, hardware as cpu};

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

#[cfg(test)]
mod level_tests {
    use super::{SimdLevel, hardware, simd_level};

    #[test]
    fn a_cap_keeps_the_kernels_up_to_it_and_drops_the_rest() {
        let all = hardware();
        let has = |c: super::Cpu| (c.avx2.is_some(), c.v3.is_some(), c.avx512.is_some());
        assert_eq!(has(all.capped(SimdLevel::Plain)), (false, false, false));
        let (avx2, v3, _) = has(all);
        assert_eq!(has(all.capped(SimdLevel::Avx2)), (avx2, v3, false));
        assert_eq!(has(all.capped(SimdLevel::Avx512)), has(all));
        for cap in [SimdLevel::Plain, SimdLevel::Avx2, SimdLevel::Avx512] {
            assert_eq!(all.capped(cap).level(), all.level().min(cap));
        }
    }

    #[test]
    fn the_kernels_in_use_are_the_cpus_up_to_horde_simd() {
        // CI runs the suite again with HORDE_SIMD=off and =avx2: this is where those runs
        // check that the library took the setting.
        let cap = SimdLevel::from_env().expect("a known HORDE_SIMD");
        let cap = cap.unwrap_or(SimdLevel::Avx512);
        assert_eq!(simd_level(), hardware().level().min(cap));
    }

    #[test]
    fn every_level_is_parsed_back_from_its_name() {
        for level in [SimdLevel::Plain, SimdLevel::Avx2, SimdLevel::Avx512] {
            assert_eq!(SimdLevel::parse(level.name()), Ok(Some(level)));
            let loud = format!(" {} ", level.name().to_ascii_uppercase());
            assert_eq!(SimdLevel::parse(&loud), Ok(Some(level)));
        }
        assert_eq!(SimdLevel::parse("plain"), Ok(Some(SimdLevel::Plain)));
        assert_eq!(SimdLevel::parse(""), Ok(None));
        let e = SimdLevel::parse("neon").unwrap_err();
        assert_eq!(
            e.to_string(),
            "HORDE_SIMD=\"neon\": expected one of off, avx2, avx512, auto"
        );
        let long = "x".repeat(10_000);
        let e = SimdLevel::parse(&long).unwrap_err();
        assert_eq!(e.value, format!("{}…", "x".repeat(32)));
        assert!(e.to_string().len() < 100, "{e}");
    }
}
