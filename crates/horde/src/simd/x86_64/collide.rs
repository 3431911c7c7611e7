//! The collision passes' AVX2 kernel, and the x86-64-v3 compilations of the crowd's loops: the
//! update, the collision passes and the clearance levels, each the generic code of its stage
//! compiled with the features a [`V3`] proves.

use std::arch::x86_64::*;

use glam::Vec2;

use crate::crowd::AgentFlags;
use crate::crowd::collide::{MarkBits, PassContext, mark_rows, pass_rows, push_apart};
use crate::crowd::density::clearance_levels;
use crate::crowd::neighbours::{NEAR8, NeighbourGrid};
use crate::crowd::steer::{AGENTS_PER_BLOCK, AgentRows, StepContext, update_rows};
use crate::simd::V3;
use crate::simd::x86_64::neighbours::distances8;
use crate::simd::x86_64::steer8::lanes_of;

impl V3 {
    /// The update of every living agent among `rows`, compiled for x86-64-v3.
    #[inline]
    pub(crate) fn update_rows(self, ctx: &StepContext, rows: AgentRows) {
        // SAFETY: a `V3` exists only where the CPU has every feature the function is compiled
        // for.
        unsafe { update_rows_v3(self, ctx, rows) }
    }

    /// The marks of everyone near a pushed agent, compiled for x86-64-v3.
    #[inline]
    pub(crate) fn mark_rows(
        self,
        ng: &NeighbourGrid,
        first: usize,
        flags: &[AgentFlags],
        positions: &[Vec2],
        radii: &[f32],
        marks: &MarkBits,
    ) {
        // SAFETY: as in `update_rows`.
        unsafe { mark_rows_v3(self, ng, first, flags, positions, radii, marks) }
    }

    /// A collision pass over the slots `first..first + positions.len()`, compiled for
    /// x86-64-v3.
    #[inline]
    pub(crate) fn pass_rows<const CLEARANCE: bool>(
        self,
        ctx: &PassContext,
        first: usize,
        positions: &mut [Vec2],
        flags: &mut [AgentFlags],
        clearances: &mut [u32],
    ) {
        // SAFETY: as in `update_rows`.
        unsafe { pass_rows_v3::<CLEARANCE>(self, ctx, first, positions, flags, clearances) }
    }

    /// The clearance levels, compiled for x86-64-v3.
    #[inline]
    pub(crate) fn clearance_levels(
        self,
        flags: &mut [AgentFlags],
        clear: &[u32],
        less: f32,
        inv_unit: f32,
        reach: u8,
    ) -> u32 {
        // SAFETY: as in `update_rows`.
        unsafe { clearance_levels_v3(flags, clear, less, inv_unit, reach) }
    }

    /// [`push8`]: the pushes of a block's agents at once, from one list of the entries round
    /// them. False, with nothing done, where the listing does not pay.
    #[inline(always)]
    pub(crate) fn push8(
        self,
        ctx: &PassContext,
        block: usize,
        lanes: u32,
        positions: &mut [Vec2],
        flags: &mut [AgentFlags; AGENTS_PER_BLOCK],
        own_radii: &[f32; AGENTS_PER_BLOCK],
    ) -> bool {
        // SAFETY: a `V3` exists only where the CPU has AVX2, the kernel's only requirement.
        unsafe { push8(self, ctx, block, lanes, positions, flags, own_radii) }
    }
}

#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
fn update_rows_v3(v3: V3, ctx: &StepContext, rows: AgentRows) {
    update_rows(v3, ctx, rows)
}

#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
fn mark_rows_v3(
    v3: V3,
    ng: &NeighbourGrid,
    first: usize,
    flags: &[AgentFlags],
    positions: &[Vec2],
    radii: &[f32],
    marks: &MarkBits,
) {
    mark_rows(v3, ng, first, flags, positions, radii, marks)
}

#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
fn pass_rows_v3<const CLEARANCE: bool>(
    v3: V3,
    ctx: &PassContext,
    first: usize,
    positions: &mut [Vec2],
    flags: &mut [AgentFlags],
    clearances: &mut [u32],
) {
    pass_rows::<CLEARANCE>(v3, ctx, first, positions, flags, clearances)
}

#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
fn clearance_levels_v3(
    flags: &mut [AgentFlags],
    clear: &[u32],
    less: f32,
    inv_unit: f32,
    reach: u8,
) -> u32 {
    clearance_levels(flags, clear, less, inv_unit, reach)
}

/// [`push_apart`] without clearances for the agents of slots `block + l` for the lanes `l`
/// set in `lanes`, at once: the entries within reach of any of them are listed in one pass
/// ([`NeighbourGrid::near8`]), then each listed entry's push on all eight is taken in one AVX2
/// register, with the operations of `push_apart` in its order (entry order), so the same
/// bits. A lane with someone on its very spot is left to `push_apart` (split by slots). False,
/// with nothing done, where the listing does not pay.
#[target_feature(enable = "avx2")]
fn push8(
    v3: V3,
    ctx: &PassContext,
    block: usize,
    lanes: u32,
    positions: &mut [Vec2],
    flags: &mut [AgentFlags; AGENTS_PER_BLOCK],
    own_radii: &[f32; AGENTS_PER_BLOCK],
) -> bool {
    let ng = ctx.ng;
    let splat = _mm256_set1_ps;
    let bits = |m: __m256| _mm256_movemask_ps(m) as u32;
    let (xs, ys): ([f32; AGENTS_PER_BLOCK], [f32; AGENTS_PER_BLOCK]) = (
        std::array::from_fn(|l| positions[l].x),
        std::array::from_fn(|l| positions[l].y),
    );
    // SAFETY: each load reads the 8 floats of an array of 8.
    let (px, py, radius) = unsafe {
        (
            _mm256_loadu_ps(xs.as_ptr()),
            _mm256_loadu_ps(ys.as_ptr()),
            _mm256_loadu_ps(own_radii.as_ptr()),
        )
    };
    let within = _mm256_add_ps(radius, splat(ng.widest));
    let mut list = [0u32; NEAR8];
    let Some(listed) = ng.near8(block, lanes, (px, py), within, &mut list) else {
        return false;
    };
    let searching = lanes_of(lanes);
    let zero = _mm256_setzero_ps();
    let (mut shift_x, mut shift_y) = (zero, zero);
    let mut coincident = 0u32;
    for &e in &list[..listed] {
        let e = e as usize;
        let (x, y) = (ng.xs[e], ng.ys[e]);
        let d2 = distances8(px, py, x, y, e.wrapping_sub(block));
        let touch = _mm256_add_ps(radius, splat(ctx.radii[e]));
        let hit = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_LT_OQ>(d2, _mm256_mul_ps(touch, touch)),
            searching,
        );
        let d = _mm256_sqrt_ps(d2);
        coincident |= bits(_mm256_and_ps(
            hit,
            _mm256_cmp_ps::<_CMP_LE_OQ>(d, splat(1e-5)),
        ));
        let (dx, dy) = (_mm256_sub_ps(px, splat(x)), _mm256_sub_ps(py, splat(y)));
        let half = _mm256_mul_ps(_mm256_sub_ps(touch, d), splat(0.5));
        // (Adding +0 in the other lanes keeps their sums: a sum that starts at +0 is never -0.)
        let push_x = _mm256_mul_ps(_mm256_div_ps(dx, d), half);
        let push_y = _mm256_mul_ps(_mm256_div_ps(dy, d), half);
        shift_x = _mm256_add_ps(shift_x, _mm256_and_ps(push_x, hit));
        shift_y = _mm256_add_ps(shift_y, _mm256_and_ps(push_y, hit));
    }
    let (mut sx, mut sy) = ([0.0f32; AGENTS_PER_BLOCK], [0.0f32; AGENTS_PER_BLOCK]);
    // SAFETY: each store writes 8 floats into an array of 8.
    unsafe {
        _mm256_storeu_ps(sx.as_mut_ptr(), shift_x);
        _mm256_storeu_ps(sy.as_mut_ptr(), shift_y);
    }
    #[cfg(test)]
    ctx.eight_pushes
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut rest = lanes;
    while rest != 0 {
        let l = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        if coincident & (1 << l) != 0 {
            let (pos, flag) = (&mut positions[l], &mut flags[l]);
            let mut unused = 0;
            push_apart::<false>(
                v3,
                ng,
                ctx.radii,
                &ctx.walls,
                false,
                block + l,
                pos,
                flag,
                &mut unused,
            );
        } else {
            let shift = Vec2::new(sx[l], sy[l]);
            if shift != Vec2::ZERO {
                let cell = ctx.walls.grid.cell_size();
                let p = positions[l];
                positions[l] =
                    ctx.walls
                        .slide(p, shift.clamp_length_max(0.45 * cell), own_radii[l]);
                flags[l].set_pushed();
            }
        }
    }
    true
}
