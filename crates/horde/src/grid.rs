//! The shape every layer shares: width × height cells in one flat array indexed `y * width + x`,
//! the eight directions, the corner rule, and the mapping between world positions and cells.
//!
//! A [`Grid`] holds no per-cell data (it costs a few bytes in all); the layers built on it
//! ([`CostField`](crate::CostField), [`IntegrationField`](crate::IntegrationField),
//! [`FlowField`](crate::FlowField)) each own one flat `Vec` of `width * height` entries.

use glam::{UVec2, Vec2};
use thiserror::Error;

/// The largest side a grid may have, in cells.
pub const MAX_SIDE: u32 = 1 << 15;
/// The largest number of cells a grid may have (1 Gi cells: a 32768 × 32768 map).
pub const MAX_CELLS: u64 = 1 << 30;

/// Two layers that must cover grids of one size do not: `what` is `got_w` × `got_h` cells,
/// `against` is `want_w` × `want_h`. Every field, repair and crowd call that takes two layers
/// reports this, checked before anything changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("{what} is {got_w}x{got_h} but {against} is {want_w}x{want_h}")]
pub struct SizeMismatch {
    /// The layer passed in.
    pub what: &'static str,
    /// What it must match.
    pub against: &'static str,
    /// Width of `what`.
    pub got_w: u32,
    /// Height of `what`.
    pub got_h: u32,
    /// Width of `against`.
    pub want_w: u32,
    /// Height of `against`.
    pub want_h: u32,
}

impl SizeMismatch {
    /// `Ok` if `got` (the layer `what`, width and height) is `want` (the layer `against`).
    pub(crate) fn check(
        what: &'static str,
        got: (u32, u32),
        against: &'static str,
        want: (u32, u32),
    ) -> Result<(), SizeMismatch> {
        if got == want {
            return Ok(());
        }
        Err(SizeMismatch {
            what,
            against,
            got_w: got.0,
            got_h: got.1,
            want_w: want.0,
            want_h: want.1,
        })
    }

    /// The width and height of a grid, as [`Self::check`] takes them.
    pub(crate) fn of(grid: &Grid) -> (u32, u32) {
        (grid.width(), grid.height())
    }
}

/// Why a grid or a cell was refused.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum GridError {
    /// Zero width or height.
    #[error("grid size {width}x{height} is empty: both sides must be at least 1")]
    Empty { width: u32, height: u32 },
    /// More cells than [`MAX_CELLS`] or a side above [`MAX_SIDE`].
    #[error(
        "grid size {width}x{height} is too large (at most {MAX_SIDE} per side and {MAX_CELLS} cells)"
    )]
    TooLarge { width: u32, height: u32 },
    /// The cell size or origin is not a finite positive number.
    #[error("cell size {0} is not a finite positive number")]
    BadCellSize(f32),
    /// The origin is not finite.
    #[error("origin {0} is not finite")]
    BadOrigin(Vec2),
    /// A cell outside the grid.
    #[error("cell ({x}, {y}) is outside the {width}x{height} grid")]
    OutOfBounds {
        x: u32,
        y: u32,
        width: u32,
        height: u32,
    },
}

/// One of the eight directions a unit can step, numbered clockwise from north.
///
/// North is `y − 1` (rows grow downwards, as in image and Moving AI map files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Dir8 {
    N = 0,
    NE = 1,
    E = 2,
    SE = 3,
    S = 4,
    SW = 5,
    W = 6,
    NW = 7,
}

impl Dir8 {
    /// All eight directions in their numeric order.
    pub const ALL: [Dir8; 8] = [
        Dir8::N,
        Dir8::NE,
        Dir8::E,
        Dir8::SE,
        Dir8::S,
        Dir8::SW,
        Dir8::W,
        Dir8::NW,
    ];
    /// Column offset of each direction, indexed by its number.
    pub const DX: [i32; 8] = [0, 1, 1, 1, 0, -1, -1, -1];
    /// Row offset of each direction, indexed by its number.
    pub const DY: [i32; 8] = [-1, -1, 0, 1, 1, 1, 0, -1];

    /// The direction with this number (`0..8`), or `None`.
    ///
    /// ```
    /// use horde::Dir8;
    /// assert_eq!(Dir8::from_index(2), Some(Dir8::E));
    /// assert_eq!(Dir8::from_index(8), None);
    /// ```
    pub const fn from_index(i: u8) -> Option<Dir8> {
        if i < 8 {
            Some(Dir8::ALL[i as usize])
        } else {
            None
        }
    }

    /// The direction's number, `0..8`.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `(dx, dy)` of one step.
    pub const fn offset(self) -> (i32, i32) {
        (Self::DX[self as usize], Self::DY[self as usize])
    }

    /// True for NE, SE, SW and NW.
    pub const fn is_diagonal(self) -> bool {
        (self as u8) & 1 == 1
    }

    /// The direction pointing back.
    ///
    /// ```
    /// use horde::Dir8;
    /// assert_eq!(Dir8::NE.opposite(), Dir8::SW);
    /// ```
    pub const fn opposite(self) -> Dir8 {
        Dir8::ALL[((self as u8 + 4) & 7) as usize]
    }

    /// Unit vector of the direction in grid space (+x east, +y south).
    pub const fn vec2(self) -> Vec2 {
        const H: f32 = std::f32::consts::FRAC_1_SQRT_2;
        const UNIT: [Vec2; 8] = [
            Vec2::new(0.0, -1.0),
            Vec2::new(H, -H),
            Vec2::new(1.0, 0.0),
            Vec2::new(H, H),
            Vec2::new(0.0, 1.0),
            Vec2::new(-H, H),
            Vec2::new(-1.0, 0.0),
            Vec2::new(-H, -H),
        ];
        UNIT[self as usize]
    }

    /// For a diagonal, the two straight directions whose cells it passes between.
    pub const fn corner_sides(self) -> Option<(Dir8, Dir8)> {
        match self {
            Dir8::NE => Some((Dir8::N, Dir8::E)),
            Dir8::SE => Some((Dir8::S, Dir8::E)),
            Dir8::SW => Some((Dir8::S, Dir8::W)),
            Dir8::NW => Some((Dir8::N, Dir8::W)),
            _ => None,
        }
    }
}

/// Width × height cells placed in the world: cell `(x, y)` covers
/// `origin + [x, x + 1) × cell_size` by `origin + [y, y + 1) × cell_size`.
///
/// Memory: a few bytes, nothing per cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    width: u32,
    height: u32,
    origin: Vec2,
    cell_size: f32,
    /// `1 / cell_size`: world → cell mapping multiplies (a division costs far more per unit).
    inv_cell_size: f32,
}

// `Grid` holds f32s, so `Eq` is asserted by hand: `with_world` keeps NaN out of a grid.
impl Eq for Grid {}

impl Grid {
    /// A grid of `width × height` unit cells with its origin at `(0, 0)`.
    ///
    /// ```
    /// let grid = horde::Grid::new(128, 64).unwrap();
    /// assert_eq!(grid.len(), 128 * 64);
    /// assert!(horde::Grid::new(0, 5).is_err());
    /// ```
    pub fn new(width: u32, height: u32) -> Result<Grid, GridError> {
        if width == 0 || height == 0 {
            return Err(GridError::Empty { width, height });
        }
        if width > MAX_SIDE || height > MAX_SIDE || (width as u64) * (height as u64) > MAX_CELLS {
            return Err(GridError::TooLarge { width, height });
        }
        Ok(Grid {
            width,
            height,
            origin: Vec2::ZERO,
            cell_size: 1.0,
            inv_cell_size: 1.0,
        })
    }

    /// The same grid placed at `origin` with square cells of side `cell_size` (world units).
    ///
    /// ```
    /// use glam::Vec2;
    /// let grid = horde::Grid::new(10, 10).unwrap().with_world(Vec2::new(-5.0, -5.0), 0.5).unwrap();
    /// assert_eq!(grid.world_to_cell(Vec2::new(-4.9, -4.9)), Some(glam::UVec2::new(0, 0)));
    /// ```
    pub fn with_world(mut self, origin: Vec2, cell_size: f32) -> Result<Grid, GridError> {
        if !(cell_size.is_finite() && cell_size > 0.0) {
            return Err(GridError::BadCellSize(cell_size));
        }
        if !origin.is_finite() {
            return Err(GridError::BadOrigin(origin));
        }
        self.origin = origin;
        self.cell_size = cell_size;
        self.inv_cell_size = cell_size.recip();
        Ok(self)
    }

    /// Columns.
    pub const fn width(&self) -> u32 {
        self.width
    }
    /// Rows.
    pub const fn height(&self) -> u32 {
        self.height
    }
    /// Number of cells, `width * height`.
    #[allow(clippy::len_without_is_empty)]
    pub const fn len(&self) -> usize {
        self.width as usize * self.height as usize
    }
    /// World position of the corner of cell `(0, 0)`.
    pub const fn origin(&self) -> Vec2 {
        self.origin
    }
    /// Side of a cell in world units.
    pub const fn cell_size(&self) -> f32 {
        self.cell_size
    }
    /// `1 / cell_size`, as the world-to-grid mapping multiplies by it.
    pub(crate) const fn inv_cell_size(&self) -> f32 {
        self.inv_cell_size
    }

    /// True if `(x, y)` lies on the grid.
    pub const fn contains(&self, x: i64, y: i64) -> bool {
        x >= 0 && y >= 0 && x < self.width as i64 && y < self.height as i64
    }

    /// Flat index `y * width + x` of a cell, or an error if it is outside the grid.
    pub fn index(&self, cell: UVec2) -> Result<usize, GridError> {
        if cell.x < self.width && cell.y < self.height {
            Ok(cell.y as usize * self.width as usize + cell.x as usize)
        } else {
            Err(GridError::OutOfBounds {
                x: cell.x,
                y: cell.y,
                width: self.width,
                height: self.height,
            })
        }
    }

    /// The cell of a flat index (which must be below [`Grid::len`]).
    pub fn cell(&self, index: usize) -> UVec2 {
        let w = self.width as usize;
        UVec2::new((index % w) as u32, (index / w) as u32)
    }

    /// The neighbour of `cell` in direction `dir`, if it is on the grid.
    pub fn neighbour(&self, cell: UVec2, dir: Dir8) -> Option<UVec2> {
        let (dx, dy) = dir.offset();
        let x = cell.x as i64 + dx as i64;
        let y = cell.y as i64 + dy as i64;
        self.contains(x, y).then(|| UVec2::new(x as u32, y as u32))
    }

    /// The cell containing a world position, or `None` outside the grid (or for NaN).
    ///
    /// ```
    /// use glam::{UVec2, Vec2};
    /// let grid = horde::Grid::new(4, 4).unwrap();
    /// assert_eq!(grid.world_to_cell(Vec2::new(3.5, 0.2)), Some(UVec2::new(3, 0)));
    /// assert_eq!(grid.world_to_cell(Vec2::new(4.0, 0.0)), None);
    /// assert_eq!(grid.world_to_cell(Vec2::new(-0.1, 0.0)), None);
    /// ```
    pub fn world_to_cell(&self, pos: Vec2) -> Option<UVec2> {
        let p = (pos - self.origin) * self.inv_cell_size;
        Some(UVec2::new(
            axis_cell(p.x, self.width)?,
            axis_cell(p.y, self.height)?,
        ))
    }

    /// The columns and rows of two world positions, `[x(a), y(a), x(b), y(b)]`, each exactly as
    /// [`Self::world_to_cell`] finds it, and bit `k` set where lane `k` is on the map.
    #[inline(always)]
    pub(crate) fn axes_of_two(&self, a: Vec2, b: Vec2) -> ([u32; 4], u32) {
        let (o, inv) = (self.origin, self.inv_cell_size);
        let (w, h) = (self.width, self.height);
        axis_cells(
            [
                (a.x - o.x) * inv,
                (a.y - o.y) * inv,
                (b.x - o.x) * inv,
                (b.y - o.y) * inv,
            ],
            [w, h, w, h],
        )
    }

    /// Position in grid units (cell `(x, y)` spans `[x, x + 1) × [y, y + 1)`), unclamped.
    pub fn world_to_grid(&self, pos: Vec2) -> Vec2 {
        (pos - self.origin) * self.inv_cell_size
    }

    /// World position of a cell's centre.
    pub fn cell_center(&self, cell: UVec2) -> Vec2 {
        self.origin + (cell.as_vec2() + 0.5) * self.cell_size
    }
}

/// The cell along one axis of a grid coordinate `g` (cells `[c, c + 1)`), or `None` outside
/// `0..size` (NaN included). The truncation is the floor since `g >= 0`; it saturates on huge
/// values, which then fail the size test, so no float compare against `size` is needed (a
/// `u32` to `f32` conversion costs several instructions without AVX-512).
#[inline(always)]
pub(crate) fn axis_cell(g: f32, size: u32) -> Option<u32> {
    if g >= 0.0 {
        let c = truncate(g);
        (c < size).then_some(c)
    } else {
        None
    }
}

/// [`axis_cell`] of four grid coordinates at once, against four sizes: the truncated
/// coordinates, and bit `k` set where lane `k` is on its axis (its cell is then `cells[k]`).
/// Two positions' cells for the price of one, for the crowd's wall test.
#[inline(always)]
pub(crate) fn axis_cells(g: [f32; 4], size: [u32; 4]) -> ([u32; 4], u32) {
    crate::simd::baseline::axis_cells(g, size)
}

/// Both coordinates truncated towards zero, as `as i32` truncates them when they fit an `i32`
/// (the caller's promise: here they are grid positions on the map).
#[inline(always)]
pub(crate) fn truncate_both(g: Vec2) -> [i32; 2] {
    crate::simd::baseline::truncate_both(g)
}

/// `g` (0 or above) truncated, or at least 2^31 when it does not fit an `i32`: one
/// instruction where Rust's saturating `as` needs several, and the same answer for every
/// side up to [`MAX_SIDE`].
#[inline(always)]
fn truncate(g: f32) -> u32 {
    crate::simd::baseline::truncate(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_number_from_0_to_7_and_nothing_else_is_one() {
        // The numbers are the flow bytes' meaning: each direction's own, in ALL's order.
        for (i, dir) in Dir8::ALL.iter().enumerate() {
            assert_eq!(dir.index(), i);
            assert_eq!(Dir8::from_index(i as u8), Some(*dir));
        }
        for i in 8..=u8::MAX {
            assert_eq!(Dir8::from_index(i), None, "{i}");
        }
    }

    #[test]
    fn every_layer_pair_reports_a_size_mismatch_the_same_way() {
        use crate::{CostField, CostModel, FlowError, FlowField, IntegrationBuilder};
        let small = CostField::new(Grid::new(2, 3).unwrap());
        let large = CostField::new(Grid::new(4, 5).unwrap());
        let mut b = IntegrationBuilder::new();
        let field = b
            .build(&large, &[UVec2::ZERO], CostModel::TenFourteen)
            .unwrap();
        let err = FlowField::from_integration(&small, &field).unwrap_err();
        assert_eq!(
            err.to_string(),
            "flow field is 2x3 but the integration field is 4x5"
        );
        let mut out = FlowField::new(*small.grid());
        let FlowError::SizeMismatch(m) = b.flow_into(&mut out).unwrap_err() else {
            panic!("a size mismatch");
        };
        assert_eq!((m.got_w, m.got_h, m.want_w, m.want_h), (2, 3, 4, 5));
        assert_eq!(SizeMismatch::check("a", (1, 2), "b", (1, 2)), Ok(()));
    }

    #[test]
    fn axis_cells_agree_with_axis_cell() {
        let values = [
            0.0,
            -0.0,
            0.5,
            1.0,
            6.999,
            7.0,
            -1e-7,
            -0.5,
            -3.0,
            31.5,
            32767.9,
            32768.0,
            3e9,
            -3e9,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let sizes = [1u32, 7, 32, MAX_SIDE];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut pick = |n: usize| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state % n as u64) as usize
            };
            let g = [0; 4].map(|_| values[pick(values.len())] + [0.0, 0.25][pick(2)]);
            let size = [0; 4].map(|_| sizes[pick(sizes.len())]);
            let (cells, mask) = axis_cells(g, size);
            for k in 0..4 {
                let expected = axis_cell(g[k], size[k]);
                let got = (mask >> k & 1 != 0).then_some(cells[k]);
                assert_eq!(got, expected, "lane {k} of {g:?} in {size:?}");
            }
        }
    }

    #[test]
    fn truncation_matches_the_saturating_cast() {
        let cases = [
            0.0,
            0.4,
            1.0,
            2.999,
            7.5,
            32767.9,
            32768.0,
            1e9,
            2.2e9,
            1e30,
            f32::MAX,
        ];
        for g in cases.into_iter().chain((0..5000).map(|k| k as f32 * 13.37)) {
            let want = if g < 2_147_483_648.0 {
                g as u32
            } else {
                1 << 31
            };
            assert_eq!(truncate(g), want, "{g}");
            for size in [1, 7, MAX_SIDE] {
                assert_eq!(axis_cell(g, size), ((g as u32) < size).then_some(g as u32));
            }
        }
        for g in (0..4000).map(|k| k as f32 * 7.31 - 9000.0) {
            let v = Vec2::new(g, -0.5 * g);
            assert_eq!(truncate_both(v), [v.x as i32, v.y as i32], "{v}");
        }
        assert_eq!(axis_cell(-0.1, 4), None);
        assert_eq!(axis_cell(f32::NAN, 4), None);
    }

    #[test]
    fn directions_are_numbered_clockwise_from_north() {
        assert_eq!(Dir8::N.offset(), (0, -1));
        assert_eq!(Dir8::E.offset(), (1, 0));
        assert_eq!(Dir8::S.offset(), (0, 1));
        assert_eq!(Dir8::W.offset(), (-1, 0));
        assert_eq!(Dir8::SE.offset(), (1, 1));
        for d in Dir8::ALL {
            assert_eq!(d.opposite().opposite(), d);
            let (dx, dy) = d.offset();
            let (ox, oy) = d.opposite().offset();
            assert_eq!((dx + ox, dy + oy), (0, 0));
            assert_eq!(d.is_diagonal(), dx != 0 && dy != 0);
            let v = Vec2::new(dx as f32, dy as f32).normalize();
            assert!((d.vec2() - v).length() < 1e-6);
            if let Some((a, b)) = d.corner_sides() {
                assert_eq!(
                    (a.offset().0 + b.offset().0, a.offset().1 + b.offset().1),
                    (dx, dy)
                );
            }
        }
    }

    #[test]
    fn sizes_are_checked() {
        assert!(matches!(Grid::new(0, 1), Err(GridError::Empty { .. })));
        assert!(matches!(
            Grid::new(MAX_SIDE + 1, 1),
            Err(GridError::TooLarge { .. })
        ));
        assert!(Grid::new(8192, 8192).is_ok());
        assert!(
            Grid::new(1, 1)
                .unwrap()
                .with_world(Vec2::ZERO, 0.0)
                .is_err()
        );
        assert!(Grid::new(1, 1).unwrap().with_world(Vec2::NAN, 1.0).is_err());
    }

    #[test]
    fn the_last_row_and_column_are_in_and_one_more_is_out() {
        let g = Grid::new(7, 5).unwrap();
        for (x, y, inside) in [
            (6, 4, true),
            (0, 0, true),
            (7, 0, false),
            (0, 5, false),
            (7, 5, false),
            (-1, 0, false),
            (0, -1, false),
        ] {
            assert_eq!(g.contains(x, y), inside, "({x}, {y})");
            if x >= 0 && y >= 0 {
                let cell = UVec2::new(x as u32, y as u32);
                assert_eq!(g.index(cell).is_ok(), inside, "({x}, {y})");
            }
        }
        assert_eq!(g.index(UVec2::new(6, 4)), Ok(34));
    }

    #[test]
    fn two_positions_fall_in_the_cells_world_to_cell_finds() {
        let g = Grid::new(9, 6)
            .unwrap()
            .with_world(Vec2::new(-4.0, 2.5), 0.5)
            .unwrap();
        let mut next = {
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 24) as f32
            }
        };
        for _ in 0..2000 {
            // Positions over the map and a margin round it.
            let a = Vec2::new(-5.0 + 7.0 * next(), 1.5 + 5.0 * next());
            let b = Vec2::new(-5.0 + 7.0 * next(), 1.5 + 5.0 * next());
            let (axes, on) = g.axes_of_two(a, b);
            for (k, p) in [a, b].into_iter().enumerate() {
                let want = g.world_to_cell(p);
                let both = on >> (2 * k) & 3 == 3;
                assert_eq!(
                    both.then(|| UVec2::new(axes[2 * k], axes[2 * k + 1])),
                    want,
                    "{p}"
                );
            }
        }
    }

    #[test]
    fn world_and_cells_round_trip() {
        let g = Grid::new(7, 5)
            .unwrap()
            .with_world(Vec2::new(10.0, -3.0), 2.0)
            .unwrap();
        assert_eq!(g.cell_size(), 2.0);
        assert_eq!(g.origin(), Vec2::new(10.0, -3.0));
        for y in 0..5 {
            for x in 0..7 {
                let c = UVec2::new(x, y);
                assert_eq!(g.world_to_cell(g.cell_center(c)), Some(c));
                let i = g.index(c).unwrap();
                assert_eq!(i, (y * 7 + x) as usize);
                assert_eq!(g.cell(i), c);
            }
        }
        assert_eq!(g.world_to_cell(Vec2::new(9.9, 0.0)), None);
        assert_eq!(g.world_to_cell(Vec2::new(f32::NAN, 0.0)), None);
        assert!(g.index(UVec2::new(7, 0)).is_err());
        assert_eq!(g.neighbour(UVec2::new(0, 0), Dir8::W), None);
        assert_eq!(
            g.neighbour(UVec2::new(0, 0), Dir8::SE),
            Some(UVec2::new(1, 1))
        );
    }
}
