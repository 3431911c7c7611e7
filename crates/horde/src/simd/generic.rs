//! The plain code of the crowd's baseline kernels: what runs where the architecture has no
//! kernel, and the reference every kernel is tested against. The same operations in the same
//! order as the kernels, so the same bits.

// On x86-64 the SSE2 kernels run instead; these are the tests' references.
#![cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]

use glam::Vec2;

/// Lanes of a block of neighbour-grid entries.
const ENTRIES_AT_ONCE: usize = 8;

/// The smaller of two numbers that are not NaN.
#[inline(always)]
fn smaller(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// The neighbour-grid cells (column, row) of two positions, `[x(a), y(a), x(b), y(b)]`, each
/// clamped to `0..=last`, one axis at a time.
#[inline(always)]
pub(crate) fn cells_of(a: Vec2, b: Vec2, origin: Vec2, inv_cell: f32, last: Vec2) -> [u32; 4] {
    let cell = |p: Vec2| {
        // Clamped at 0 first, so truncation is the floor (and needs no libm call).
        let g = ((p - origin) * inv_cell).max(Vec2::ZERO);
        (
            (g.x as u32).min(last.x as u32),
            (g.y as u32).min(last.y as u32),
        )
    };
    let ((ax, ay), (bx, by)) = (cell(a), cell(b));
    [ax, ay, bx, by]
}

/// How far (in cells) grid position `g` lies inside the block of cells `[x0, y0, x1, y1]` from
/// its nearest side that is not the grid's edge (infinite if every side is), one side at a
/// time.
#[inline(always)]
pub(crate) fn side_room(g: Vec2, [x0, y0, x1, y1]: [u32; 4], cols: u32, rows: u32) -> f32 {
    let mut side = f32::INFINITY;
    if x0 > 0 {
        side = smaller(side, g.x - x0 as i32 as f32);
    }
    if x1 + 1 < cols {
        side = smaller(side, (x1 + 1) as i32 as f32 - g.x);
    }
    if y0 > 0 {
        side = smaller(side, g.y - y0 as i32 as f32);
    }
    if y1 + 1 < rows {
        side = smaller(side, (y1 + 1) as i32 as f32 - g.y);
    }
    side
}

/// The least of some squared distances, gathered by [`near_mask`].
#[derive(Clone, Copy)]
pub(crate) struct NearestSquared {
    value: f32,
}

impl NearestSquared {
    /// None yet (infinite).
    #[inline(always)]
    pub(crate) fn none() -> NearestSquared {
        NearestSquared {
            value: f32::INFINITY,
        }
    }

    /// The least so far.
    #[inline(always)]
    pub(crate) fn value(self) -> f32 {
        self.value
    }
}

/// Bit `l` set where `(xs[l], ys[l])` lies closer to `p` than `sqrt(within2)`, except lane
/// `own` (no lane when `own >= ENTRIES_AT_ONCE`); the squared distances of the other lanes go into
/// `least`. One lane at a time, as [`Vec2::length_squared`] computes it.
#[inline(always)]
pub(crate) fn near_mask(
    p: Vec2,
    xs: &[f32; ENTRIES_AT_ONCE],
    ys: &[f32; ENTRIES_AT_ONCE],
    within2: f32,
    own: usize,
    least: &mut NearestSquared,
) -> u32 {
    let mut mask = 0u32;
    for l in (0..ENTRIES_AT_ONCE).filter(|&l| l != own) {
        let d2 = (p - Vec2::new(xs[l], ys[l])).length_squared();
        mask |= ((d2 < within2) as u32) << l;
        least.value = least.value.min(d2);
    }
    mask
}

/// Bit `l` set where clearance `l` (`f32` bits), less `less`, exceeds radius `l` plus `widest`
/// plus `slack`: the collision pass's skip test, one lane at a time.
#[inline(always)]
pub(crate) fn far_mask(
    clear: &[u32; 8],
    radii: &[f32; 8],
    less: f32,
    widest: f32,
    slack: f32,
) -> u32 {
    let mut far = 0;
    for (l, (&c, &r)) in clear.iter().zip(radii).enumerate() {
        far |= ((f32::from_bits(c) - less > r + widest + slack) as u32) << l;
    }
    far
}

/// One agent's clearance level: its clearance (`f32` bits) less `less`, times `inv_unit`,
/// rounded down and clamped to `0..=most` (NaN to 0).
#[inline(always)]
pub(crate) fn level(clear: u32, less: f32, inv_unit: f32, most: f32) -> u8 {
    let bound = (f32::from_bits(clear) - less) * inv_unit;
    // Rounded down (and NaN to 0): still a lower bound. (`clamp` would keep NaN.)
    #[allow(clippy::manual_clamp)]
    let level = bound.max(0.0).min(most) as i32 as u8;
    level
}

/// Four agents' [`level`]s as bytes in one word, and how many reach `reach`.
#[inline(always)]
pub(crate) fn levels4(
    clear: &[u32; 4],
    less: f32,
    inv_unit: f32,
    most: f32,
    reach: u8,
) -> (u32, u32) {
    let levels = clear.map(|c| level(c, less, inv_unit, most));
    let reached = levels.iter().filter(|&&l| l >= reach).count() as u32;
    (u32::from_ne_bytes(levels), reached)
}

/// Four grid coordinates' cells against four sizes (see `grid::axis_cells`), one at a time.
#[inline(always)]
pub(crate) fn axis_cells(g: [f32; 4], size: [u32; 4]) -> ([u32; 4], u32) {
    let mut cells = [0u32; 4];
    let mut mask = 0;
    for k in 0..4 {
        if let Some(c) = crate::grid::axis_cell(g[k], size[k]) {
            cells[k] = c;
            mask |= 1 << k;
        }
    }
    (cells, mask)
}

/// Both coordinates truncated towards zero.
#[inline(always)]
pub(crate) fn truncate_both(g: Vec2) -> [i32; 2] {
    [g.x as i32, g.y as i32]
}

/// `g` (0 or above) truncated (saturating).
#[inline(always)]
pub(crate) fn truncate(g: f32) -> u32 {
    g as u32
}
