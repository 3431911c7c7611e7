//! The update for eight agents at once, in AVX2. The first half ([`StepContext::start`], in
//! `start8`): the way each wants to go, its arrival, which of them search for neighbours, who
//! among those has anyone in reach (`NeighbourGrid::probe8`, while clearances are kept; the
//! searches of those who have, and the rare lines of sight to the goal, go one by one) and the
//! clearances kept. The second half ([`StepContext::finish`], in `finish8`): the velocity each
//! steers towards, the acceleration and speed limits, less what heads into the (at most six)
//! neighbours each touches, the slide along the walls and the stuck timer. An agent that needs
//! what they do not do (a flow sample off the fast path, more than six touching neighbours,
//! standing off the map, a wall read past the end of the map) is handed to `start` or `finish`.
//!
//! # Why the agent's maths is written twice
//!
//! The one-agent code (`crowd::steer`: `start`, `walk`, `finish`, `separation`, and
//! `crowd::walls`) and this eight-lane code do the same operations in the same order, none
//! fused, so they give the same bits; `both_compilations_give_the_same_bits` and the crowd
//! tests that step both compilations hold them together. They are not written once over a
//! lane type (as `wide` or `ultraviolet` would allow) because the two shapes differ where the
//! time goes: the one-agent code branches on what is rare (a goal in sight, a wall beside the
//! cell, a neighbour touching) and skips the work, while eight lanes must compute every side
//! of each branch and blend, gather the map's bytes, and hand the rare lanes back to the
//! one-agent code. A lane type with a one-lane fallback would make the baseline compilation pay
//! for the blends on every agent, or make this code branch per lane. So a change to the
//! update is made in both places, in pairs: `start` / `way8` + `start8`, `separation` /
//! `separation8`, `walk` + `finish` / `target_velocity8` + `velocity8`, `WallContext::slide` /
//! `slide8`, the stuck timer / `stuck8`; the tests name the lane and step where the bits part.

use std::arch::x86_64::*;

use glam::Vec2;

use crate::cost::WALL;
use crate::crowd::neighbours::NEAR8;
use crate::crowd::steer::{
    AGENTS_PER_BLOCK, Entries, MOST_NEIGHBOURS, STAGED_NORMALS, Staged, StepContext, Walk,
};
use crate::crowd::*;
use crate::simd::V3;
use crate::simd::x86_64::neighbours::distances8;

impl V3 {
    /// The flow samples of a block of eight agents at once ([`StepContext::sample8`]).
    #[inline(always)]
    pub(crate) fn sample8(
        self,
        ctx: &StepContext,
        first: usize,
        positions: &[Vec2; AGENTS_PER_BLOCK],
        flags: &[AgentFlags; AGENTS_PER_BLOCK],
    ) -> Option<Samples8> {
        // SAFETY: a `V3` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { ctx.sample8(first, positions, flags) }
    }

    /// The first halves of a block's steps, eight at once but for the searches
    /// ([`StepContext::start8`]).
    #[inline(always)]
    pub(crate) fn start8(
        self,
        ctx: &StepContext,
        first: usize,
        eight: &Samples8,
        walks: &mut StagedLanes,
        rows: &mut Rows8,
        clearances: &mut [u32],
    ) {
        // SAFETY: a `V3` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { ctx.start8(self, first, eight, walks, rows, clearances) }
    }

    /// The first halves of the steps of the lanes set in `lanes`, one by one
    /// ([`StepContext::start_lanes`]).
    #[inline(always)]
    pub(crate) fn start_lanes(
        self,
        ctx: &StepContext,
        first: usize,
        lanes: u32,
        walks: &mut StagedLanes,
        rows: &mut Rows8,
        clearances: &mut [u32],
    ) {
        ctx.start_lanes(self, first, lanes, walks, rows, clearances)
    }

    /// The second halves of the staged lanes' steps, eight at once
    /// ([`StepContext::finish8`]).
    #[inline(always)]
    pub(crate) fn finish8(self, ctx: &StepContext, first: usize, walks: &StagedLanes, rows: Rows8) {
        // SAFETY: a `V3` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { ctx.finish8(first, walks, rows) }
    }
}

/// A block's flow samples taken eight at once ([`FlowField::bilinear8`](crate::flow::FlowField::bilinear8)): the directions of
/// the lanes in `done`, all of one group.
pub(crate) struct Samples8 {
    group: u16,
    xs: [f32; AGENTS_PER_BLOCK],
    ys: [f32; AGENTS_PER_BLOCK],
    /// Bit `l` set if lane `l` was sampled (the others need [`StepContext::sample`]).
    done: u32,
}

/// Eight agents' [`Staged`] steps, field by field, and which of them are staged.
#[derive(Clone, Copy, Default)]
pub(crate) struct StagedLanes {
    /// Bit `l` set if lane `l` holds a walk.
    pub(crate) staged: u32,
    desired_x: [f32; AGENTS_PER_BLOCK],
    desired_y: [f32; AGENTS_PER_BLOCK],
    push_x: [f32; AGENTS_PER_BLOCK],
    push_y: [f32; AGENTS_PER_BLOCK],
    unpenetrate_x: [f32; AGENTS_PER_BLOCK],
    unpenetrate_y: [f32; AGENTS_PER_BLOCK],
    dist_goal: [f32; AGENTS_PER_BLOCK],
    pile: [f32; AGENTS_PER_BLOCK],
    /// Bit `l` set if lane `l`'s agent touches an arrived agent of its group.
    touching_arrived: u32,
    /// Bit `l` set if lane `l`'s agent is moving so far.
    moving: u32,
    /// Bit `l` set if lane `l`'s agent has arrived (neither bit: it has no way).
    arrived: u32,
    /// The normals of the neighbours each touches, x and y, and how many.
    normals: [([f32; AGENTS_PER_BLOCK], [f32; AGENTS_PER_BLOCK]); STAGED_NORMALS],
    touching: [u8; AGENTS_PER_BLOCK],
    /// The last block's separation had a lane touching more than [`NARROW_NORMALS`] (kept
    /// from block to block).
    wide: bool,
}

/// Registers of touching normals that `separation8` takes while no lane needs more.
const NARROW_NORMALS: usize = 4;

impl StagedLanes {
    /// No lane staged. (Staging a lane writes all its fields but the normals past its
    /// `touching`, which nothing reads.)
    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        (self.staged, self.touching_arrived) = (0, 0);
        (self.moving, self.arrived) = (0, 0);
    }

    /// Stage `staged` in lane `l`.
    #[inline(always)]
    pub(crate) fn stage(&mut self, l: usize, staged: &Staged) {
        let walk = &staged.walk;
        self.staged |= 1 << l;
        (self.desired_x[l], self.desired_y[l]) = (walk.desired.x, walk.desired.y);
        (self.push_x[l], self.push_y[l]) = (walk.push.x, walk.push.y);
        self.unpenetrate_x[l] = walk.unpenetrate.x;
        self.unpenetrate_y[l] = walk.unpenetrate.y;
        self.dist_goal[l] = walk.dist_goal;
        self.pile[l] = walk.pile;
        self.touching_arrived |= (walk.touching_arrived as u32) << l;
        match staged.state {
            AgentState::Moving => self.moving |= 1 << l,
            AgentState::Arrived => self.arrived |= 1 << l,
            AgentState::NoPath => {}
        }
        self.touching[l] = staged.touching as u8;
        // (Most agents of a spread-out crowd touch no one.)
        if staged.touching > 0 {
            for (normal, n) in self.normals.iter_mut().zip(&staged.normals) {
                (normal.0[l], normal.1[l]) = (n.x, n.y);
            }
        }
    }

    /// The state so far of the agent in lane `l`.
    fn state(&self, l: usize) -> AgentState {
        if self.moving >> l & 1 != 0 {
            AgentState::Moving
        } else if self.arrived >> l & 1 != 0 {
            AgentState::Arrived
        } else {
            AgentState::NoPath
        }
    }

    /// The step staged in lane `l`.
    fn staged(&self, l: usize) -> Staged {
        let mut normals = [Vec2::ZERO; STAGED_NORMALS];
        for (n, normal) in normals.iter_mut().zip(&self.normals) {
            *n = Vec2::new(normal.0[l], normal.1[l]);
        }
        Staged {
            walk: Walk {
                desired: Vec2::new(self.desired_x[l], self.desired_y[l]),
                push: Vec2::new(self.push_x[l], self.push_y[l]),
                unpenetrate: Vec2::new(self.unpenetrate_x[l], self.unpenetrate_y[l]),
                dist_goal: self.dist_goal[l],
                pile: self.pile[l],
                touching_arrived: self.touching_arrived >> l & 1 != 0,
            },
            state: self.state(l),
            normals,
            touching: self.touching[l] as usize,
        }
    }
}

/// A block's positions, velocities, states, anchors, timers and flags.
pub(crate) type Rows8<'r> = (
    &'r mut [Vec2; AGENTS_PER_BLOCK],
    &'r mut [Vec2; AGENTS_PER_BLOCK],
    &'r mut [AgentState; AGENTS_PER_BLOCK],
    &'r mut [f32; AGENTS_PER_BLOCK],
    &'r mut [f32; AGENTS_PER_BLOCK],
    &'r mut [AgentFlags; AGENTS_PER_BLOCK],
);

/// Lane `l`'s entries among a block's.
#[inline(always)]
pub(crate) fn lane<'r>(rows: &'r mut Rows8<'_>, l: usize) -> Entries<'r> {
    let (positions, velocities, states, anchors, timers, flags) = rows;
    (
        &mut positions[l],
        &mut velocities[l],
        &mut states[l],
        &mut anchors[l],
        &mut timers[l],
        &mut flags[l],
    )
}

/// Eight floats.
#[inline(always)]
fn load(values: &[f32; AGENTS_PER_BLOCK]) -> __m256 {
    // SAFETY: reads 8 floats from an array of 8 (AVX is enabled wherever this is inlined:
    // `finish8` is its only caller).
    unsafe { _mm256_loadu_ps(values.as_ptr()) }
}

/// The x and the y of eight vectors.
#[inline]
#[target_feature(enable = "avx2")]
fn split(v: &[Vec2; AGENTS_PER_BLOCK]) -> (__m256, __m256) {
    // SAFETY: reads 16 floats from an array of 8 `Vec2` (two floats each, no padding).
    let (a, b) = unsafe {
        let at = v.as_ptr().cast::<f32>();
        (_mm256_loadu_ps(at), _mm256_loadu_ps(at.add(8)))
    };
    // x0 x1 x4 x5 | x2 x3 x6 x7, then in order.
    let order =
        |v: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)));
    (
        order(_mm256_shuffle_ps::<0b10_00_10_00>(a, b)),
        order(_mm256_shuffle_ps::<0b11_01_11_01>(a, b)),
    )
}

/// Eight vectors from their x and y, as [`split`] reads them.
#[inline]
#[target_feature(enable = "avx2")]
fn join(x: __m256, y: __m256, out: &mut [Vec2; AGENTS_PER_BLOCK]) {
    let (lo, hi) = (_mm256_unpacklo_ps(x, y), _mm256_unpackhi_ps(x, y));
    // SAFETY: writes 16 floats into an array of 8 `Vec2`.
    unsafe {
        let at = out.as_mut_ptr().cast::<f32>();
        _mm256_storeu_ps(at, _mm256_permute2f128_ps::<0x20>(lo, hi));
        _mm256_storeu_ps(at.add(8), _mm256_permute2f128_ps::<0x31>(lo, hi));
    }
}

/// `v.clamp_length_max(max)` of eight vectors, as glam computes it.
#[inline]
#[target_feature(enable = "avx2")]
fn clamp_length_max(x: __m256, y: __m256, max: __m256) -> (__m256, __m256) {
    let length2 = _mm256_add_ps(_mm256_mul_ps(x, x), _mm256_mul_ps(y, y));
    let over = _mm256_cmp_ps::<_CMP_GT_OQ>(length2, _mm256_mul_ps(max, max));
    let length = _mm256_sqrt_ps(length2);
    (
        _mm256_blendv_ps(x, _mm256_mul_ps(max, _mm256_div_ps(x, length)), over),
        _mm256_blendv_ps(y, _mm256_mul_ps(max, _mm256_div_ps(y, length)), over),
    )
}

/// Bit `l` of `bits` (of the low 8) as bit 0 of byte `l`.
#[inline(always)]
fn spread(bits: u32) -> u64 {
    // Byte l keeps bit l of the copy it gets, which is then 0 or not; adding 0x7f carries
    // into the byte's top bit exactly when it is not.
    let picked = (bits as u8 as u64).wrapping_mul(0x0101_0101_0101_0101) & 0x8040_2010_0804_0201;
    ((picked + 0x7f7f_7f7f_7f7f_7f7f) & 0x8080_8080_8080_8080) >> 7
}

/// All ones in the lanes whose bits are set in `bits`, zeros in the others.
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn lanes_of(bits: u32) -> __m256 {
    let each = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    let set = _mm256_and_si256(_mm256_set1_epi32(bits as i32), each);
    _mm256_castsi256_ps(_mm256_cmpeq_epi32(set, each))
}

/// `v.length()` of eight vectors, as glam computes it.
#[inline]
#[target_feature(enable = "avx2")]
fn length(x: __m256, y: __m256) -> __m256 {
    _mm256_sqrt_ps(_mm256_add_ps(_mm256_mul_ps(x, x), _mm256_mul_ps(y, y)))
}

/// `|v|` of eight floats.
#[inline]
#[target_feature(enable = "avx2")]
fn abs(v: __m256) -> __m256 {
    _mm256_andnot_ps(_mm256_set1_ps(-0.0), v)
}

/// Whether the cell at offset `at` of `costs` is a wall, in the lanes of `read` (false in the
/// others). Each lane reads 4 bytes: a lane whose offset would read past the end reads nothing
/// and leaves `ok` (its agent then goes to `finish`); the lanes of `read` must have offsets of
/// 0 or above.
#[inline]
#[target_feature(enable = "avx2")]
fn wall_lanes(
    costs: &[u8],
    at: __m256i,
    read: __m256i,
    last_read: __m256i,
    ok: &mut __m256i,
) -> __m256i {
    let past = _mm256_and_si256(_mm256_cmpgt_epi32(at, last_read), read);
    *ok = _mm256_andnot_si256(past, *ok);
    let read = _mm256_andnot_si256(past, read);
    // SAFETY: every offset is 0 (lanes not read) or in `0..=costs.len() - 4` (the lanes read:
    // 0 or above by the caller's promise, at most `last_read` by the test above), so the 4
    // bytes each lane reads lie in `costs`.
    let bytes =
        unsafe { _mm256_i32gather_epi32::<1>(costs.as_ptr().cast(), _mm256_and_si256(at, read)) };
    let wall = _mm256_cmpeq_epi32(
        _mm256_and_si256(bytes, _mm256_set1_epi32(0xff)),
        _mm256_set1_epi32(WALL as i32),
    );
    _mm256_and_si256(wall, read)
}

impl StepContext<'_> {
    /// The flow samples of the slots `first..first + 8` eight at once, if the crowd samples
    /// bilinearly and they are all alive and of one group.
    #[target_feature(enable = "avx2")]
    fn sample8(
        &self,
        first: usize,
        positions: &[Vec2; AGENTS_PER_BLOCK],
        flags: &[AgentFlags; AGENTS_PER_BLOCK],
    ) -> Option<Samples8> {
        let alive = u64::from_ne_bytes([AgentFlags::ALIVE_BIT; 8]);
        if !matches!(self.config.sampling, Sampling::Bilinear)
            || AgentFlags::word(flags) & alive != alive
        {
            return None;
        }
        let group = self.group_of[first];
        if self.group_of[first..first + AGENTS_PER_BLOCK]
            .iter()
            .any(|&g| g != group)
        {
            return None;
        }
        let (mut xs, mut ys) = ([0.0; AGENTS_PER_BLOCK], [0.0; AGENTS_PER_BLOCK]);
        // (AVX2, `bilinear8`'s only requirement, is enabled here.)
        let mut done = self.groups[group as usize]
            .flow
            .bilinear8(positions, &mut xs, &mut ys);
        if self.passing {
            // Those who keep right of oncoming agents go one by one (`start`).
            for (l, &p) in positions.iter().enumerate() {
                if self.in_traffic(first + l, p) {
                    done &= !(1 << l);
                }
            }
        }
        Some(Samples8 {
            group,
            xs,
            ys,
            done,
        })
    }

    /// [`Self::separation`] of the agents in lanes `search` of a dense step (no clearances
    /// kept), eight at once: the entries any of them would visit are listed in entry order
    /// ([`NeighbourGrid::near8`](crate::crowd::neighbours::NeighbourGrid::near8)), then each listed entry's share of all eight sums is taken in
    /// one AVX2 register with `separation`'s operations in its order (a lane the entry is not
    /// near adds +0, which changes no sum: a sum from +0 is never -0). While no more than k
    /// are in reach, those are the k nearest and come in the order `separation` keeps them, so
    /// every lane gets its bits. Writes the push, unpenetration, touching count and normals of
    /// the lanes it takes to `walks`, and their bits to `flags` (blocked by an arrived agent,
    /// touching one); returns the lanes left to `separation`: those with more than k in reach,
    /// one standing on them (split by slots) or more touching than it has registers for (see
    /// below), and all of them where the entries round them are too many.
    ///
    /// Each listed entry's touching normals go into as many registers as a lane may have
    /// touching neighbours: [`NARROW_NORMALS`] while the blocks before had no lane touching
    /// more (a crowd walking or spread out), [`STAGED_NORMALS`] after one that did (a crowd
    /// pressed together), since
    /// each register costs every entry of every block a few operations, and a lane left
    /// over a whole search of its own.
    #[target_feature(enable = "avx2")]
    #[allow(clippy::too_many_arguments)]
    fn separation8(
        &self,
        first: usize,
        search: u32,
        moving: u32,
        at: (__m256, __m256, __m256, __m256, __m256),
        goal: Vec2,
        group: u16,
        walks: &mut StagedLanes,
        flags: (&mut u32, &mut u32),
    ) -> u32 {
        if walks.wide {
            self.separation8_in::<STAGED_NORMALS>(
                first, search, moving, at, goal, group, walks, flags,
            )
        } else {
            self.separation8_in::<NARROW_NORMALS>(
                first, search, moving, at, goal, group, walks, flags,
            )
        }
    }

    /// [`Self::separation8`] with `N` registers of normals (at most [`STAGED_NORMALS`]).
    #[target_feature(enable = "avx2")]
    #[allow(clippy::too_many_arguments)]
    fn separation8_in<const N: usize>(
        &self,
        first: usize,
        search: u32,
        moving: u32,
        (px, py, radius, reach, dist_goal): (__m256, __m256, __m256, __m256, __m256),
        goal: Vec2,
        group: u16,
        walks: &mut StagedLanes,
        (blocked, touching_arrived): (&mut u32, &mut u32),
    ) -> u32 {
        let cfg = self.config;
        let ng = self.neighbours;
        let splat = _mm256_set1_ps;
        let bits = |m: __m256| _mm256_movemask_ps(m) as u32;
        let mut list = [0u32; NEAR8];
        let Some(listed) = ng.near8(first, search, (px, py), reach, &mut list) else {
            return search;
        };
        let searching = lanes_of(search);
        let own_moving = lanes_of(moving);
        let own_arrived = _mm256_andnot_ps(own_moving, searching);
        let reach2 = _mm256_mul_ps(reach, reach);
        let slight = _mm256_mul_ps(splat(-0.05), radius);
        let (yield_to, yield_from) = (splat(cfg.arrived_yield), splat(cfg.arrived_yield.max(1.0)));
        let zero = _mm256_setzero_ps();
        let (mut sum_x, mut sum_y, mut apart_x, mut apart_y) = (zero, zero, zero, zero);
        let (mut count, mut touching) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        let mut normals = [(zero, zero); N];
        let (mut blocks, mut beside, mut coincident) = (0u32, 0u32, 0u32);
        for &e in &list[..listed] {
            let e = e as usize;
            let (x, y) = (ng.xs[e], ng.ys[e]);
            let d2 = distances8(px, py, x, y, e.wrapping_sub(first));
            let near = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OS>(d2, reach2), searching);
            count = _mm256_sub_epi32(count, _mm256_castps_si256(near));
            let (dx, dy) = (_mm256_sub_ps(px, splat(x)), _mm256_sub_ps(py, splat(y)));
            let d = _mm256_sqrt_ps(d2);
            let other = ng.states[e];
            let their = splat(self.radii[e]);
            if other == AgentState::Arrived && self.group_of[e] == group {
                let touch = _mm256_mul_ps(_mm256_add_ps(radius, their), splat(1.5));
                let close = _mm256_and_ps(near, _mm256_cmp_ps::<_CMP_LT_OQ>(d, touch));
                let (qx, qy) = (_mm256_sub_ps(px, dx), _mm256_sub_ps(py, dy));
                let (gx, gy) = (
                    _mm256_sub_ps(qx, splat(goal.x)),
                    _mm256_sub_ps(qy, splat(goal.y)),
                );
                let to_goal =
                    _mm256_sqrt_ps(_mm256_add_ps(_mm256_mul_ps(gx, gx), _mm256_mul_ps(gy, gy)));
                blocks |= bits(_mm256_and_ps(
                    close,
                    _mm256_cmp_ps::<_CMP_LT_OQ>(to_goal, dist_goal),
                ));
                beside |= bits(close);
            }
            let w = _mm256_sub_ps(splat(1.0), _mm256_div_ps(d2, reach2));
            coincident |= bits(_mm256_and_ps(
                near,
                _mm256_cmp_ps::<_CMP_LE_OQ>(d, splat(1e-5)),
            ));
            let (dir_x, dir_y) = (_mm256_div_ps(dx, d), _mm256_div_ps(dy, d));
            let overlap = _mm256_sub_ps(_mm256_add_ps(radius, their), d);
            let into = _mm256_and_ps(near, _mm256_cmp_ps::<_CMP_GT_OQ>(overlap, zero));
            let half = _mm256_mul_ps(overlap, splat(0.5));
            apart_x = _mm256_add_ps(apart_x, _mm256_and_ps(_mm256_mul_ps(dir_x, half), into));
            apart_y = _mm256_add_ps(apart_y, _mm256_and_ps(_mm256_mul_ps(dir_y, half), into));
            let touches = _mm256_and_ps(near, _mm256_cmp_ps::<_CMP_GT_OQ>(overlap, slight));
            for (m, normal) in normals.iter_mut().enumerate() {
                let slot = _mm256_cmpeq_epi32(touching, _mm256_set1_epi32(m as i32));
                let here = _mm256_and_ps(touches, _mm256_castsi256_ps(slot));
                *normal = (
                    _mm256_blendv_ps(normal.0, dir_x, here),
                    _mm256_blendv_ps(normal.1, dir_y, here),
                );
            }
            touching = _mm256_sub_epi32(touching, _mm256_castps_si256(touches));
            let weight = match other {
                AgentState::Moving => _mm256_blendv_ps(w, _mm256_mul_ps(w, yield_to), own_arrived),
                AgentState::Arrived => {
                    _mm256_blendv_ps(w, _mm256_div_ps(w, yield_from), own_moving)
                }
                AgentState::NoPath => w,
            };
            sum_x = _mm256_add_ps(sum_x, _mm256_and_ps(_mm256_mul_ps(dir_x, weight), near));
            sum_y = _mm256_add_ps(sum_y, _mm256_and_ps(_mm256_mul_ps(dir_y, weight), near));
        }
        let k = cfg.max_neighbours.min(MOST_NEIGHBOURS) as i32;
        let ints = |v: __m256i| _mm256_movemask_ps(_mm256_castsi256_ps(v)) as u32;
        let crowded = ints(_mm256_cmpgt_epi32(count, _mm256_set1_epi32(k)));
        let busy = ints(_mm256_cmpgt_epi32(touching, _mm256_set1_epi32(N as i32)));
        let narrow = _mm256_set1_epi32(NARROW_NORMALS as i32);
        walks.wide = ints(_mm256_cmpgt_epi32(touching, narrow)) & search != 0;
        let left = (crowded | busy | coincident) & search;
        let took = search & !left;
        let taken = lanes_of(took);
        let some = _mm256_castsi256_ps(_mm256_cmpgt_epi32(count, _mm256_setzero_si256()));
        let per = _mm256_cvtepi32_ps(count);
        let push = |sum: __m256| _mm256_and_ps(_mm256_and_ps(_mm256_div_ps(sum, per), some), taken);
        let store = |out: &mut [f32; AGENTS_PER_BLOCK], v: __m256| {
            // SAFETY: writes 8 floats into an array of 8.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
        };
        store(&mut walks.push_x, push(sum_x));
        store(&mut walks.push_y, push(sum_y));
        store(&mut walks.unpenetrate_x, _mm256_and_ps(apart_x, taken));
        store(&mut walks.unpenetrate_y, _mm256_and_ps(apart_y, taken));
        let mut counts = [0i32; AGENTS_PER_BLOCK];
        // SAFETY: writes 8 integers into an array of 8.
        unsafe { _mm256_storeu_si256(counts.as_mut_ptr().cast(), touching) };
        let with_normals = _mm256_and_ps(
            taken,
            _mm256_castsi256_ps(_mm256_cmpgt_epi32(touching, _mm256_setzero_si256())),
        );
        for (out, normal) in walks.normals.iter_mut().zip(&normals) {
            let x = _mm256_blendv_ps(load(&out.0), normal.0, with_normals);
            let y = _mm256_blendv_ps(load(&out.1), normal.1, with_normals);
            store(&mut out.0, x);
            store(&mut out.1, y);
        }
        let mut rest = took;
        while rest != 0 {
            let l = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            walks.touching[l] = counts[l] as u8;
        }
        *blocked |= blocks & took;
        *touching_arrived |= beside & took;
        left
    }

    /// [`Self::start`] of the living agents of a block whose samples are `eight`, the slots
    /// `first..first + 8`, whose entries are `rows`: the lanes `eight` sampled eight at once,
    /// but for their neighbour searches and lines of sight to the goal, which go one by one;
    /// the others by `start`. The same operations in the same order as `start`, so the same
    /// bits. Steps that `finish8` can finish are staged in `walks` (cleared before); the others
    /// (touching more than [`STAGED_NORMALS`] neighbours) are finished here.
    #[target_feature(enable = "avx2")]
    fn start8(
        &self,
        v3: V3,
        first: usize,
        eight: &Samples8,
        walks: &mut StagedLanes,
        rows: &mut Rows8,
        clearances: &mut [u32],
    ) {
        let cfg = self.config;
        let ng = self.neighbours;
        let grp = &self.groups[eight.group as usize];
        let done = eight.done;
        let splat = _mm256_set1_ps;
        let bits = |m: __m256| _mm256_movemask_ps(m) as u32;
        let (px, py) = split(rows.0);
        let (dist_goal, (way_x, way_y), mut arrived, mut moving) =
            self.way8(eight, grp, rows, (px, py));
        // (Zero, +0, for agents not moving, as `Vec2::ZERO` is.)
        let desired = |moving: u32| {
            let keep = lanes_of(moving);
            (_mm256_and_ps(way_x, keep), _mm256_and_ps(way_y, keep))
        };

        // Separation: only the lanes whose clearance may not exceed their reach search.
        // SAFETY: reads 8 bytes from an array of 8.
        let flags = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(rows.5.as_ptr().cast()) });
        let levels = _mm256_srli_epi32::<{ AgentFlags::CLEARANCE_SHIFT as i32 }>(flags);
        let known = _mm256_mul_ps(_mm256_cvtepi32_ps(levels), splat(self.clearance_unit));
        let radius = load(
            self.radii[first..first + AGENTS_PER_BLOCK]
                .try_into()
                .expect("8"),
        );
        let reach = _mm256_max_ps(
            splat(cfg.separation_radius),
            _mm256_mul_ps(splat(2.0), radius),
        );
        let far = bits(_mm256_cmp_ps::<_CMP_GT_OQ>(
            known,
            _mm256_add_ps(reach, splat(ng.slack)),
        ));
        let search = if cfg.max_neighbours.min(MOST_NEIGHBOURS) == 0 {
            0
        } else {
            done & !far
        };
        let pile = self.pile_radius(eight.group);
        let zero = [0.0; AGENTS_PER_BLOCK];
        (walks.push_x, walks.push_y) = (zero, zero);
        (walks.unpenetrate_x, walks.unpenetrate_y) = (zero, zero);
        walks.touching = [0; AGENTS_PER_BLOCK];
        let mut clearance = [0.0; AGENTS_PER_BLOCK];
        // SAFETY: each store writes 8 floats into an array of 8.
        unsafe { _mm256_storeu_ps(clearance.as_mut_ptr(), known) };
        let (mut blocked, mut touching_arrived, mut finished) = (0u32, 0u32, 0u32);
        if search != 0 {
            let mut dist = [0.0; AGENTS_PER_BLOCK];
            let (mut desired_x, mut desired_y) = ([0.0; AGENTS_PER_BLOCK], [0.0; AGENTS_PER_BLOCK]);
            let (x, y) = desired(moving);
            // SAFETY: as above.
            unsafe {
                _mm256_storeu_ps(dist.as_mut_ptr(), dist_goal);
                _mm256_storeu_ps(desired_x.as_mut_ptr(), x);
                _mm256_storeu_ps(desired_y.as_mut_ptr(), y);
            }
            let mut rest = search;
            if self.track_clearances {
                // Most agents of a spread-out crowd find no one: all eight at once first, then
                // only those who find someone search one by one.
                if let Some((visited, probed)) = ng.probe8(first, search, (px, py), reach) {
                    let alone = lanes_of(search & !visited);
                    let kept = _mm256_blendv_ps(load(&clearance), probed, alone);
                    // SAFETY: writes 8 floats into an array of 8.
                    unsafe { _mm256_storeu_ps(clearance.as_mut_ptr(), kept) };
                    rest = search & visited;
                }
            } else {
                // A dense crowd: all eight at once, but for the few that need more.
                let at = (px, py, radius, reach, dist_goal);
                let flags = (&mut blocked, &mut touching_arrived);
                rest = self.separation8(
                    first,
                    search,
                    moving,
                    at,
                    grp.goal,
                    eight.group,
                    walks,
                    flags,
                );
                let took = lanes_of(search & !rest);
                let none = _mm256_blendv_ps(load(&clearance), _mm256_setzero_ps(), took);
                // (A search without clearances returns 0.) SAFETY: writes 8 floats into an
                // array of 8.
                unsafe { _mm256_storeu_ps(clearance.as_mut_ptr(), none) };
            }
            let searched = (rest, moving, pile, &dist, (&desired_x, &desired_y));
            let contacts = (&mut blocked, &mut touching_arrived);
            let at = (first, grp);
            finished = self.search_lanes(v3, at, searched, walks, rows, &mut clearance, contacts);
        }
        // Measured on the snapshot the step starts from.
        let kept = _mm256_add_ps(
            _mm256_min_ps(load(&clearance), splat(ng.cap)),
            splat(ng.moved),
        );
        // (In every lane: those not sampled here are written again below.)
        let clearances: &mut [u32; AGENTS_PER_BLOCK] = clearances.try_into().expect("a block");
        // SAFETY: writes 8 floats' bits into an array of 8.
        unsafe { _mm256_storeu_si256(clearances.as_mut_ptr().cast(), _mm256_castps_si256(kept)) };
        // A moving agent pressed against an arrived one nearer the goal arrives too.
        let piled = moving & blocked & bits(_mm256_cmp_ps::<_CMP_LE_OQ>(dist_goal, splat(pile)));
        (moving, arrived) = (moving & !piled, arrived | piled);

        let staged = done & !finished;
        let (x, y) = desired(moving);
        // SAFETY: each store writes 8 floats into an array of 8.
        unsafe {
            _mm256_storeu_ps(walks.desired_x.as_mut_ptr(), x);
            _mm256_storeu_ps(walks.desired_y.as_mut_ptr(), y);
            _mm256_storeu_ps(walks.dist_goal.as_mut_ptr(), dist_goal);
            _mm256_storeu_ps(walks.pile.as_mut_ptr(), splat(pile));
        }
        walks.staged |= staged;
        walks.moving |= moving & staged;
        walks.arrived |= arrived & staged;
        walks.touching_arrived |= touching_arrived & staged;

        // The lanes not sampled here, one by one.
        self.start_lanes(
            v3,
            first,
            !done & ((1 << AGENTS_PER_BLOCK) - 1),
            walks,
            rows,
            clearances,
        );
    }

    /// Where each lane of a sampled block heads: its distance to the goal, its way (its flow
    /// sample, or straight at the goal where the line to it is clear), and the lanes arrived
    /// (near the goal, or arrived before: arrival sticks) and moving.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn way8(
        &self,
        eight: &Samples8,
        grp: &Group,
        rows: &Rows8,
        (px, py): (__m256, __m256),
    ) -> (__m256, (__m256, __m256), u32, u32) {
        let cfg = self.config;
        let done = eight.done;
        let splat = _mm256_set1_ps;
        let bits = |m: __m256| _mm256_movemask_ps(m) as u32;
        let to_goal_x = _mm256_sub_ps(splat(grp.goal.x), px);
        let to_goal_y = _mm256_sub_ps(splat(grp.goal.y), py);
        let dist_goal = length(to_goal_x, to_goal_y);
        // Arrival sticks.
        let mut was_arrived = 0u32;
        for (l, state) in rows.2.iter().enumerate() {
            was_arrived |= ((*state == AgentState::Arrived) as u32) << l;
        }
        let near_goal = bits(_mm256_cmp_ps::<_CMP_LE_OQ>(
            dist_goal,
            splat(cfg.arrival_radius),
        ));
        let arrived = done & (near_goal | was_arrived);
        let moving = done & !arrived;
        // Straight at the goal where the line to it is clear.
        let in_sight = moving
            & bits(_mm256_cmp_ps::<_CMP_LE_OQ>(
                dist_goal,
                splat(cfg.line_of_sight_range),
            ))
            & bits(_mm256_cmp_ps::<_CMP_GT_OQ>(dist_goal, splat(1e-6)));
        let mut straight = 0u32;
        if in_sight != 0 && self.goal_cell(grp) {
            let mut rest = in_sight;
            while rest != 0 {
                let l = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                if self.clear_line(rows.0[l], grp.goal) {
                    straight |= 1 << l;
                }
            }
        }
        let way = |sampled: &[f32; AGENTS_PER_BLOCK], to_goal: __m256| {
            let straight_on = _mm256_div_ps(to_goal, dist_goal);
            _mm256_blendv_ps(load(sampled), straight_on, lanes_of(straight))
        };
        let (way_x, way_y) = (way(&eight.xs, to_goal_x), way(&eight.ys, to_goal_y));
        (dist_goal, (way_x, way_y), arrived, moving)
    }

    /// [`Self::separation`] of the lanes in `rest` one by one (those that find someone in
    /// reach): their pushes and normals staged in `walks`, their clearances in `clearance`,
    /// and those touching more than [`STAGED_NORMALS`] neighbours finished here, as `start`
    /// finishes them. Returns the lanes finished.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    #[inline(always)]
    fn search_lanes(
        &self,
        v3: V3,
        (first, grp): (usize, &Group),
        (mut rest, moving, pile, dist, (desired_x, desired_y)): (
            u32,
            u32,
            f32,
            &[f32; AGENTS_PER_BLOCK],
            (&[f32; AGENTS_PER_BLOCK], &[f32; AGENTS_PER_BLOCK]),
        ),
        walks: &mut StagedLanes,
        rows: &mut Rows8,
        clearance: &mut [f32; AGENTS_PER_BLOCK],
        (blocked, touching_arrived): (&mut u32, &mut u32),
    ) -> u32 {
        let mut finished = 0;
        while rest != 0 {
            let l = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let i = first + l;
            let p = rows.0[l];
            let state = if moving >> l & 1 != 0 {
                AgentState::Moving
            } else {
                AgentState::Arrived
            };
            let (radius, known) = (self.radii[i], clearance[l]);
            let contact =
                self.separation::<true>(v3, i, p, radius, state, grp.goal, dist[l], known);
            clearance[l] = contact.clearance;
            (walks.push_x[l], walks.push_y[l]) = (contact.push.x, contact.push.y);
            walks.unpenetrate_x[l] = contact.unpenetrate.x;
            walks.unpenetrate_y[l] = contact.unpenetrate.y;
            *blocked |= (contact.blocked_by_arrived as u32) << l;
            *touching_arrived |= (contact.touching_arrived as u32) << l;
            if contact.touching > STAGED_NORMALS {
                // Finished now, as `start` finishes it.
                let desired = Vec2::new(desired_x[l], desired_y[l]);
                let (state, walk) = self.walk(state, desired, &contact, dist[l], pile);
                let normals = &contact.normals[..contact.touching];
                self.finish(i, &walk, state, normals, lane(rows, l));
                finished |= 1 << l;
            } else {
                walks.touching[l] = contact.touching as u8;
                // (Most agents of a spread-out crowd touch no one.)
                if contact.touching > 0 {
                    for (normal, n) in walks.normals.iter_mut().zip(&contact.normals) {
                        (normal.0[l], normal.1[l]) = (n.x, n.y);
                    }
                }
            }
        }
        finished
    }

    /// [`Self::start`] of the lanes set in `lanes` of the block of slots `first..first + 8`,
    /// whose entries are `rows`, one by one: those it leaves staged are staged in `walks`.
    #[inline(always)]
    fn start_lanes(
        &self,
        v3: V3,
        first: usize,
        lanes: u32,
        walks: &mut StagedLanes,
        rows: &mut Rows8,
        clearances: &mut [u32],
    ) {
        let mut rest = lanes;
        while rest != 0 {
            let l = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let sample = self.sample(first + l, rows.0[l]);
            if let Some(staged) =
                self.start::<true>(v3, first + l, lane(rows, l), &mut clearances[l], sample)
            {
                walks.stage(l, &staged);
            }
        }
    }

    /// [`Self::finish`] of the agents staged in `walks`, the slots `first..first + 8`, whose
    /// entries are `rows`.
    #[target_feature(enable = "avx2")]
    fn finish8(&self, first: usize, walks: &StagedLanes, rows: Rows8) {
        let (positions, velocities, states, anchors, timers, flags) = rows;
        let splat = _mm256_set1_ps;
        let (px, py) = split(positions);
        let (vx, vy) = split(velocities);
        let lanes = |values: &[f32]| {
            load(
                values[first..first + AGENTS_PER_BLOCK]
                    .try_into()
                    .expect("8"),
            )
        };
        let (max_speed, radius) = (lanes(self.max_speeds), lanes(self.radii));
        let target = self.target_velocity8(walks, max_speed);
        let ((vx_new, vy_new), (sx, sy)) = self.velocity8(walks, (vx, vy), target, max_speed);
        let Some(((qx, qy), ok)) = self.slide8((px, py), (sx, sy), radius) else {
            let rows = (positions, velocities, states, anchors, timers, flags);
            self.finish_rest(first, walks, 0, rows);
            return;
        };
        let zero = _mm256_setzero_ps();
        // A blocked axis stops the velocity along it.
        let (mx, my) = (_mm256_sub_ps(qx, px), _mm256_sub_ps(qy, py));
        let half = splat(0.5);
        let stop_x = _mm256_cmp_ps::<_CMP_LT_OQ>(abs(mx), _mm256_mul_ps(half, abs(sx)));
        let stop_y = _mm256_cmp_ps::<_CMP_LT_OQ>(abs(my), _mm256_mul_ps(half, abs(sy)));
        let vx_new = _mm256_blendv_ps(vx_new, zero, stop_x);
        let vy_new = _mm256_blendv_ps(vy_new, zero, stop_y);

        let (anchor, timer, arrive, mut stuck) = self.stuck8(walks, (anchors, timers));
        // Those waiting their turn behind their own group are not stuck (`queued`).
        let mut rest = stuck;
        while rest != 0 {
            let l = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if self.queued(first + l, positions[l], walks.dist_goal[l]) {
                stuck &= !(1 << l);
            }
        }
        // `move_bound`.
        const GROWTH: f32 = 1.0 + 1e-6;
        let moved = _mm256_mul_ps(
            _mm256_sqrt_ps(_mm256_add_ps(_mm256_mul_ps(mx, mx), _mm256_mul_ps(my, my))),
            splat(GROWTH),
        );
        let pushed = if self.track_clearances {
            _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(moved, splat(self.walk_bound))) as u32
        } else {
            0
        };

        // Write the finished lanes; the rest keep their entries.
        let done = walks.staged & _mm256_movemask_ps(_mm256_castsi256_ps(ok)) as u32;
        let done_lanes = lanes_of(done);
        join(
            _mm256_blendv_ps(px, qx, done_lanes),
            _mm256_blendv_ps(py, qy, done_lanes),
            positions,
        );
        join(
            _mm256_blendv_ps(vx, vx_new, done_lanes),
            _mm256_blendv_ps(vy, vy_new, done_lanes),
            velocities,
        );
        // SAFETY: each store writes 8 floats into an array of 8.
        unsafe {
            _mm256_storeu_ps(
                anchors.as_mut_ptr(),
                _mm256_blendv_ps(load(anchors), anchor, done_lanes),
            );
            _mm256_storeu_ps(
                timers.as_mut_ptr(),
                _mm256_blendv_ps(load(timers), timer, done_lanes),
            );
        }
        // The flags eight at once, as bytes of one word.
        let word = AgentFlags::word(flags);
        let set = (spread(stuck) * AgentFlags::STUCK_BIT as u64)
            | (spread(pushed) * AgentFlags::PUSHED_BIT as u64);
        let finished = spread(done) * 0xff;
        let kept = (word & u64::from_ne_bytes([AgentFlags::ALIVE_BIT; AGENTS_PER_BLOCK])) | set;
        AgentFlags::set_word(flags, (word & !finished) | (kept & finished));
        // Arrived if it arrives now or had, moving if it was and does not arrive, else no way.
        let (arrived, moving) = (arrive | walks.arrived, walks.moving & !arrive);
        const BY_CODE: [AgentState; 4] = [
            AgentState::NoPath,
            AgentState::Moving,
            AgentState::Arrived,
            AgentState::Arrived,
        ];
        for (l, state) in states.iter_mut().enumerate() {
            let code = (moving >> l & 1) | (arrived >> l & 1) << 1;
            if done >> l & 1 != 0 {
                *state = BY_CODE[code as usize];
            }
        }
        self.finish_rest(
            first,
            walks,
            done,
            (positions, velocities, states, anchors, timers, flags),
        );
    }

    /// The velocity each staged lane steers towards: the blend of its way and its push, at its
    /// speed (arrived agents only give way, at most at walking pace), none for agents without
    /// a way.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn target_velocity8(&self, walks: &StagedLanes, max_speed: __m256) -> (__m256, __m256) {
        let cfg = self.config;
        let splat = _mm256_set1_ps;
        let dist_goal = load(&walks.dist_goal);
        let (desired_x, desired_y) = (load(&walks.desired_x), load(&walks.desired_y));
        let (push_x, push_y) = (load(&walks.push_x), load(&walks.push_y));
        let (flow_weight, separation_weight) =
            (splat(cfg.flow_weight), splat(cfg.separation_weight));
        let blend_x = _mm256_add_ps(
            _mm256_mul_ps(desired_x, flow_weight),
            _mm256_mul_ps(push_x, separation_weight),
        );
        let blend_y = _mm256_add_ps(
            _mm256_mul_ps(desired_y, flow_weight),
            _mm256_mul_ps(push_y, separation_weight),
        );
        let push_length = length(push_x, push_y);
        let yielding = _mm256_mul_ps(
            _mm256_min_ps(_mm256_mul_ps(push_length, separation_weight), splat(1.0)),
            max_speed,
        );
        let walking = if cfg.slowdown_radius > 0.0 {
            let near = _mm256_div_ps(dist_goal, splat(cfg.slowdown_radius));
            // `clamp(0.25, 1.0)`, in its order.
            let low = splat(0.25);
            let near = _mm256_blendv_ps(near, low, _mm256_cmp_ps::<_CMP_LT_OQ>(near, low));
            let high = splat(1.0);
            let near = _mm256_blendv_ps(near, high, _mm256_cmp_ps::<_CMP_GT_OQ>(near, high));
            _mm256_mul_ps(max_speed, near)
        } else {
            max_speed
        };
        let speed = _mm256_blendv_ps(walking, yielding, lanes_of(walks.arrived));
        // `normalize_or_zero`: times the reciprocal of the length where that is finite and above
        // zero, else zero.
        let reciprocal = _mm256_div_ps(splat(1.0), length(blend_x, blend_y));
        let unit = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_LT_OQ>(abs(reciprocal), splat(f32::INFINITY)),
            _mm256_cmp_ps::<_CMP_GT_OQ>(reciprocal, _mm256_setzero_ps()),
        );
        // (Zero is +0 where the target is zero, as `Vec2::ZERO` is.)
        let scaled = _mm256_and_ps(unit, lanes_of(walks.moving | walks.arrived));
        let target_x = _mm256_and_ps(
            scaled,
            _mm256_mul_ps(_mm256_mul_ps(blend_x, reciprocal), speed),
        );
        let target_y = _mm256_and_ps(
            scaled,
            _mm256_mul_ps(_mm256_mul_ps(blend_y, reciprocal), speed),
        );
        (target_x, target_y)
    }

    /// The new velocity (the acceleration and speed limits, less what heads into the
    /// neighbours each touches) and the step it takes (at most 0.45 cell).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn velocity8(
        &self,
        walks: &StagedLanes,
        (vx, vy): (__m256, __m256),
        (target_x, target_y): (__m256, __m256),
        max_speed: __m256,
    ) -> ((__m256, __m256), (__m256, __m256)) {
        let cfg = self.config;
        let splat = _mm256_set1_ps;
        let dt = splat(self.dt);
        let acceleration = splat(cfg.max_acceleration * self.dt);
        let (dvx, dvy) = clamp_length_max(
            _mm256_sub_ps(target_x, vx),
            _mm256_sub_ps(target_y, vy),
            acceleration,
        );
        let (mut vx_new, mut vy_new) =
            clamp_length_max(_mm256_add_ps(vx, dvx), _mm256_add_ps(vy, dvy), max_speed);
        // Nobody walks into someone they already touch, one normal after another.
        // SAFETY: reads 8 bytes from an array of 8.
        let touching =
            _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(walks.touching.as_ptr().cast()) });
        for (k, (nx, ny)) in walks.normals.iter().enumerate() {
            let has = _mm256_cmpgt_epi32(touching, _mm256_set1_epi32(k as i32));
            if _mm256_testz_si256(has, has) != 0 {
                break;
            }
            let (nx, ny) = (load(nx), load(ny));
            let into = _mm256_add_ps(_mm256_mul_ps(vx_new, nx), _mm256_mul_ps(vy_new, ny));
            let apply = _mm256_and_ps(
                _mm256_castsi256_ps(has),
                _mm256_cmp_ps::<_CMP_LT_OQ>(into, _mm256_setzero_ps()),
            );
            vx_new = _mm256_blendv_ps(
                vx_new,
                _mm256_sub_ps(vx_new, _mm256_mul_ps(nx, into)),
                apply,
            );
            vy_new = _mm256_blendv_ps(
                vy_new,
                _mm256_sub_ps(vy_new, _mm256_mul_ps(ny, into)),
                apply,
            );
        }
        let cell = self.grid.cell_size();
        let (sx, sy) = clamp_length_max(
            _mm256_add_ps(_mm256_mul_ps(vx_new, dt), load(&walks.unpenetrate_x)),
            _mm256_add_ps(_mm256_mul_ps(vy_new, dt), load(&walks.unpenetrate_y)),
            splat(0.45 * cell),
        );
        ((vx_new, vy_new), (sx, sy))
    }

    /// The slide along the walls (`WallContext::slide`) of a step `(sx, sy)` from `(px, py)`
    /// for bodies of `radius`: where each lands, and the lanes that stood on the map and read
    /// no wall past the end of the costs (the others go to `finish`). `None` if the map is too
    /// small for the gathers (every lane goes to `finish`).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn slide8(
        &self,
        (px, py): (__m256, __m256),
        (sx, sy): (__m256, __m256),
        radius: __m256,
    ) -> Option<((__m256, __m256), __m256i)> {
        let costs = self.costs;
        let g = self.grid;
        let cell = g.cell_size();
        let splat = _mm256_set1_ps;
        let (tx, ty) = (_mm256_add_ps(px, sx), _mm256_add_ps(py, sy));
        let (origin, inv) = (g.origin(), splat(g.inv_cell_size()));
        let (ox, oy) = (splat(origin.x), splat(origin.y));
        let (w, h) = (g.width() as i32, g.height() as i32);
        let (wv, hv) = (_mm256_set1_epi32(w), _mm256_set1_epi32(h));
        let (zero, minus_one, ones) = (
            _mm256_setzero_ps(),
            _mm256_set1_epi32(-1),
            _mm256_set1_epi32(1),
        );
        // `axis_cells`: the cell along an axis, and whether it lies on the map.
        let axis = |at: __m256, o: __m256, size: __m256i| {
            let gv = _mm256_mul_ps(_mm256_sub_ps(at, o), inv);
            let c = _mm256_cvttps_epi32(gv);
            let on = _mm256_and_si256(
                _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(gv, zero)),
                _mm256_and_si256(
                    _mm256_cmpgt_epi32(size, c),
                    _mm256_cmpgt_epi32(c, minus_one),
                ),
            );
            (c, on)
        };
        let (cx, on_x) = axis(px, ox, wv);
        let (cy, on_y) = axis(py, oy, hv);
        let (ncx, to_on_x) = axis(tx, ox, wv);
        let (ncy, to_on_y) = axis(ty, oy, hv);
        let mut ok = _mm256_and_si256(on_x, on_y);
        // Each gather reads 4 bytes: an offset past this is refused (its lane goes to
        // `finish`), and a lane that needs no read reads offset 0.
        let last_read = costs.len().checked_sub(4)?;
        let last_read = _mm256_set1_epi32(last_read as i32);
        let is_wall = |at: __m256i, read: __m256i, ok: &mut __m256i| {
            wall_lanes(costs, at, _mm256_and_si256(read, *ok), last_read, ok)
        };
        let index = |x: __m256i, y: __m256i| _mm256_add_epi32(_mm256_mullo_epi32(y, wv), x);
        // Along x, if the target's column is on the map and open in the agent's row.
        let tried = _mm256_and_si256(to_on_x, ok);
        let blocked = is_wall(index(ncx, cy), tried, &mut ok);
        let go = _mm256_castsi256_ps(_mm256_andnot_si256(blocked, tried));
        let x = _mm256_blendv_ps(px, tx, go);
        let cx = _mm256_castps_si256(_mm256_blendv_ps(
            _mm256_castsi256_ps(cx),
            _mm256_castsi256_ps(ncx),
            go,
        ));
        // Then along y, from the column it reached.
        let tried = _mm256_and_si256(to_on_y, ok);
        let blocked = is_wall(index(cx, ncy), tried, &mut ok);
        let go = _mm256_castsi256_ps(_mm256_andnot_si256(blocked, tried));
        let y = _mm256_blendv_ps(py, ty, go);
        let cy = _mm256_castps_si256(_mm256_blendv_ps(
            _mm256_castsi256_ps(cy),
            _mm256_castsi256_ps(ncy),
            go,
        ));
        // `push_off_walls`: a side is a wall at the map's edge or where its neighbour is one.
        let r = _mm256_min_ps(radius, splat(0.45 * cell));
        let size = splat(cell);
        let lo_x = _mm256_add_ps(ox, _mm256_mul_ps(_mm256_cvtepi32_ps(cx), size));
        let lo_y = _mm256_add_ps(oy, _mm256_mul_ps(_mm256_cvtepi32_ps(cy), size));
        let (hi_x, hi_y) = (_mm256_add_ps(lo_x, size), _mm256_add_ps(lo_y, size));
        let i = index(cx, cy);
        let all = _mm256_set1_epi32(-1);
        let edge = |c: __m256i, at: i32| _mm256_cmpeq_epi32(c, _mm256_set1_epi32(at));
        // A side is closed at the map's edge, or where the cell beyond it is a wall.
        let mut closed = |is_edge: __m256i, beyond: __m256i| {
            let wall = is_wall(beyond, _mm256_andnot_si256(is_edge, all), &mut ok);
            _mm256_castsi256_ps(_mm256_or_si256(is_edge, wall))
        };
        let west = closed(edge(cx, 0), _mm256_sub_epi32(i, ones));
        let east = closed(edge(cx, w - 1), _mm256_add_epi32(i, ones));
        let north = closed(edge(cy, 0), _mm256_sub_epi32(i, wv));
        let south = closed(edge(cy, h - 1), _mm256_add_epi32(i, wv));
        let qx = _mm256_blendv_ps(x, _mm256_max_ps(x, _mm256_add_ps(lo_x, r)), west);
        let qx = _mm256_blendv_ps(qx, _mm256_min_ps(qx, _mm256_sub_ps(hi_x, r)), east);
        let qy = _mm256_blendv_ps(y, _mm256_max_ps(y, _mm256_add_ps(lo_y, r)), north);
        let qy = _mm256_blendv_ps(qy, _mm256_min_ps(qy, _mm256_sub_ps(hi_y, r)), south);
        Some(((qx, qy), ok))
    }

    /// The stuck timers: each restarts for agents not moving and for those that made progress;
    /// one that runs out arrives if it stands near the pile or touches an arrived agent of its
    /// group, else it is stuck. Returns the anchors and timers, and the lanes that arrive and
    /// those stuck.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn stuck8(
        &self,
        walks: &StagedLanes,
        (anchors, timers): (&[f32; AGENTS_PER_BLOCK], &[f32; AGENTS_PER_BLOCK]),
    ) -> (__m256, __m256, u32, u32) {
        let cfg = self.config;
        let splat = _mm256_set1_ps;
        let (dist_goal, pile) = (load(&walks.dist_goal), load(&walks.pile));
        let (dt, zero) = (splat(self.dt), _mm256_setzero_ps());
        let (anchor, timer) = (load(anchors), load(timers));
        let timer = _mm256_add_ps(timer, dt);
        let still = lanes_of(!walks.moving);
        let reset = _mm256_or_ps(
            still,
            _mm256_cmp_ps::<_CMP_GE_OQ>(
                _mm256_sub_ps(anchor, dist_goal),
                splat(cfg.stuck_distance),
            ),
        );
        let anchor = _mm256_blendv_ps(anchor, dist_goal, reset);
        let expired = _mm256_andnot_ps(
            reset,
            _mm256_cmp_ps::<_CMP_GE_OQ>(timer, splat(cfg.stuck_time)),
        );
        let near =
            _mm256_cmp_ps::<_CMP_LE_OQ>(dist_goal, _mm256_add_ps(pile, splat(cfg.slowdown_radius)));
        let expired_bits = _mm256_movemask_ps(expired) as u32;
        let near_bits = _mm256_movemask_ps(near) as u32;
        let arrive = expired_bits & (near_bits | walks.touching_arrived);
        let stuck = expired_bits & !arrive;
        let timer = _mm256_blendv_ps(timer, zero, _mm256_or_ps(reset, lanes_of(arrive)));
        (anchor, timer, arrive, stuck)
    }

    /// [`Self::finish`] of the staged lanes not in `done`.
    #[inline(always)]
    fn finish_rest(&self, first: usize, walks: &StagedLanes, done: u32, rows: Rows8) {
        let mut rows = rows;
        let mut rest = walks.staged & !done;
        while rest != 0 {
            let l = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let entries = lane(&mut rows, l);
            let staged = walks.staged(l);
            let normals = &staged.normals[..staged.touching];
            self.finish(first + l, &staged.walk, staged.state, normals, entries);
        }
    }
}
