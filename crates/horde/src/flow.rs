//! The third layer: one byte per cell saying which way a unit there should step.
//!
//! # Byte layout
//! | value | meaning |
//! |---|---|
//! | `0..=7` | step in [`Dir8`] with that number (0 = N, clockwise) |
//! | [`FLOW_GOAL`] (8) | the cell is a goal (a sink: no neighbour reaches it more cheaply) |
//! | [`FLOW_UNREACHABLE`] (9) | walkable, but no goal can be reached from it |
//! | [`FLOW_WALL`] (255) | a wall |
//!
//! Each cell points at the neighbour that minimises *neighbour's cost-to-goal + cost of the
//! step*, among the steps the corner rule allows; ties go to the lowest direction number. So
//! following the arrows from any reachable cell costs exactly its integration value, every
//! arrow strictly lowers the value (no loops), and no arrow enters a wall or cuts a corner.

use glam::{UVec2, Vec2};
use thiserror::Error;

use crate::cost::{CostField, CostModel, WALL};
use crate::grid::{Dir8, Grid, SizeMismatch, axis_cell};
use crate::integration::{
    DeepCells, IntegrationBuilder, IntegrationField, UNREACHABLE, for_gone_cells,
};

/// Flow byte of a goal cell.
pub const FLOW_GOAL: u8 = 8;
/// Flow byte of a walkable cell that cannot reach any goal.
pub const FLOW_UNREACHABLE: u8 = 9;
/// Flow byte of a wall.
pub const FLOW_WALL: u8 = 255;

/// Why a flow field could not be built.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum FlowError {
    /// The builder has not built an integration field yet (or its last build failed).
    #[error("the integration builder holds no field: build one before deriving a flow field")]
    NoIntegration,
    /// The fields cover grids of different sizes.
    #[error(transparent)]
    SizeMismatch(#[from] SizeMismatch),
}

/// Why a sample has no direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoDirection {
    /// The position is in a wall cell.
    Wall,
    /// The position is in a walkable cell that cannot reach the goal.
    Unreachable,
    /// The position is outside the map (or not a number).
    OutsideMap,
}

/// What a unit at a position should do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FlowSample {
    /// Move along this unit vector (grid axes: +x east, +y south).
    Direction(Vec2),
    /// The position is in a goal cell.
    Goal,
    /// There is no way to go.
    NoDirection(NoDirection),
}

/// The direction to step from every cell.
///
/// Memory: 1 byte per cell (16 KiB for 128 × 128), one flat `Vec<u8>` indexed `y * width + x`
/// (the byte layout is in the [module documentation](self)); after a build that reached few
/// cells, also 1 bit per 16 cells (the footprint below) and 4 bytes per corridor the build
/// crossed in one step.
#[derive(Debug, Clone)]
pub struct FlowField {
    pub(crate) grid: Grid,
    cells: Vec<u8>,
    /// The blocks of padded cells (see [`IntegrationBuilder::touched`]) where the last
    /// builder to write this field wrote arrows, and the [`CostField`]
    /// version whose terrain gave every other cell its byte (0: unknown). The next build over
    /// the same map rewrites only the blocks it or this footprint holds.
    footprint: Vec<u64>,
    footprint_of: u64,
    /// The chains whose inner cells hold arrows outside the footprint (see
    /// [`IntegrationField`]'s): 4 bytes per chain.
    deep: DeepCells,
}

/// Two fields are equal when their grids and bytes are; how they were written does not count.
impl PartialEq for FlowField {
    fn eq(&self, other: &FlowField) -> bool {
        self.grid == other.grid && self.cells == other.cells
    }
}

impl Eq for FlowField {}

impl FlowField {
    /// A field with every cell unreachable (a target for [`IntegrationBuilder::flow_into`]).
    pub fn new(grid: Grid) -> FlowField {
        FlowField {
            grid,
            cells: vec![FLOW_UNREACHABLE; grid.len()],
            footprint: Vec::new(),
            footprint_of: 0,
            deep: DeepCells::default(),
        }
    }

    /// The bytes, to be written by other means than a builder's footprint.
    pub(crate) fn cells_mut(&mut self) -> &mut [u8] {
        self.footprint_of = 0;
        self.deep.chains.clear();
        &mut self.cells
    }

    /// Derive the flow field of an integration field built on `cost`. Allocates two padded
    /// scratch copies; [`IntegrationBuilder::flow_into`] avoids them. O(cells).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, CostModel, Dir8, FlowField, Grid, IntegrationBuilder};
    /// let cost = CostField::new(Grid::new(4, 4).unwrap());
    /// let integration = IntegrationBuilder::new()
    ///     .build(&cost, &[UVec2::new(3, 0)], CostModel::TenFourteen).unwrap();
    /// let flow = FlowField::from_integration(&cost, &integration).unwrap();
    /// assert_eq!(flow.dir(UVec2::new(0, 3)), Some(Dir8::NE));
    /// assert!(flow.is_goal(UVec2::new(3, 0)));
    /// ```
    pub fn from_integration(
        cost: &CostField,
        integration: &IntegrationField,
    ) -> Result<FlowField, FlowError> {
        let (w, h) = (cost.width(), cost.height());
        let want = SizeMismatch::of(integration.grid());
        SizeMismatch::check("flow field", (w, h), "the integration field", want)?;
        let pw = w as usize + 2;
        let plen = pw * (h as usize + 2);
        let mut pc = vec![WALL; plen];
        let mut pd = vec![UNREACHABLE; plen];
        for y in 0..h as usize {
            let src = y * w as usize;
            let dst = (y + 1) * pw + 1;
            pc[dst..dst + w as usize].copy_from_slice(&cost.costs()[src..src + w as usize]);
            pd[dst..dst + w as usize].copy_from_slice(&integration.values()[src..src + w as usize]);
        }
        let mut out = FlowField::new(*cost.grid());
        // A field from anywhere: the general kernel.
        let kind = FieldKind {
            model: integration.model(),
            none: UNREACHABLE,
            exact: false,
            plain: false,
        };
        derive(&pc, &pd, pw, kind, out.cells_mut());
        Ok(out)
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }
    /// Raw bytes indexed `y * width + x` (layout in the module documentation).
    pub fn bytes(&self) -> &[u8] {
        &self.cells
    }
    /// The raw byte of a cell, or `None` outside the map.
    pub fn byte(&self, cell: UVec2) -> Option<u8> {
        self.grid.index(cell).ok().map(|i| self.cells[i])
    }
    /// The arrow of a cell: `None` outside the map and on goal, wall and unreachable cells.
    pub fn dir(&self, cell: UVec2) -> Option<Dir8> {
        self.byte(cell).and_then(Dir8::from_index)
    }
    /// True if the cell is a goal.
    pub fn is_goal(&self, cell: UVec2) -> bool {
        self.byte(cell) == Some(FLOW_GOAL)
    }

    fn classify(&self, cell: Option<UVec2>) -> Result<(UVec2, u8), FlowSample> {
        let Some(cell) = cell else {
            return Err(FlowSample::NoDirection(NoDirection::OutsideMap));
        };
        let b = self.cells[self.grid.index(cell).expect("cell from world_to_cell")];
        match b {
            FLOW_GOAL => Err(FlowSample::Goal),
            FLOW_WALL => Err(FlowSample::NoDirection(NoDirection::Wall)),
            FLOW_UNREACHABLE => Err(FlowSample::NoDirection(NoDirection::Unreachable)),
            _ => Ok((cell, b)),
        }
    }

    /// The arrow of the cell under a world position, as a unit vector. O(1).
    ///
    /// ```
    /// use glam::{UVec2, Vec2};
    /// use horde::{CostField, CostModel, FlowSample, Grid, IntegrationBuilder, NoDirection};
    /// let cost = CostField::new(Grid::new(4, 1).unwrap());
    /// let mut b = IntegrationBuilder::new();
    /// b.build(&cost, &[UVec2::new(3, 0)], CostModel::TenFourteen).unwrap();
    /// let mut flow = horde::FlowField::new(*cost.grid());
    /// b.flow_into(&mut flow).unwrap();
    /// assert_eq!(flow.sample_nearest(Vec2::new(0.5, 0.5)), FlowSample::Direction(Vec2::X));
    /// assert_eq!(flow.sample_nearest(Vec2::new(3.5, 0.5)), FlowSample::Goal);
    /// assert_eq!(flow.sample_nearest(Vec2::new(9.0, 0.5)), FlowSample::NoDirection(NoDirection::OutsideMap));
    /// ```
    pub fn sample_nearest(&self, pos: Vec2) -> FlowSample {
        match self.classify(self.grid.world_to_cell(pos)) {
            Ok((_, b)) => FlowSample::Direction(Dir8::ALL[b as usize].vec2()),
            Err(s) => s,
        }
    }

    /// A smooth direction: the arrows of the four cell centres around the position, blended
    /// bilinearly. Cells without an arrow add nothing, a goal cell pulls towards its centre, and
    /// the result falls back to the nearest arrow when the blend cancels out or turns more than
    /// a right angle away from it (beside wall corners). Walls, unreachable
    /// cells and the outside give [`FlowSample::NoDirection`] exactly as
    /// [`sample_nearest`](Self::sample_nearest) does. O(1).
    ///
    /// ```
    /// use glam::{UVec2, Vec2};
    /// use horde::{CostField, CostModel, FlowSample, Grid, IntegrationBuilder};
    /// let cost = CostField::new(Grid::new(8, 8).unwrap());
    /// let mut b = IntegrationBuilder::new();
    /// b.build(&cost, &[UVec2::new(7, 7)], CostModel::TenFourteen).unwrap();
    /// let mut flow = horde::FlowField::new(*cost.grid());
    /// b.flow_into(&mut flow).unwrap();
    /// let FlowSample::Direction(d) = flow.sample_bilinear(Vec2::new(2.0, 2.0)) else { panic!() };
    /// assert!((d.length() - 1.0).abs() < 1e-5 && d.x > 0.0 && d.y > 0.0);
    /// ```
    pub fn sample_bilinear(&self, pos: Vec2) -> FlowSample {
        self.bilinear(pos)
    }

    /// [`Self::sample_bilinear`], inlined where a hot loop calls it once per unit (the crowd
    /// step); the public call stays out of line, so that a user's loop that calls it and does
    /// little else stays small.
    #[inline(always)]
    pub(crate) fn bilinear(&self, pos: Vec2) -> FlowSample {
        // The cell under the position, as `world_to_cell` finds it, from the one grid position.
        let at = self.grid.world_to_grid(pos);
        let (w, h) = (self.grid.width(), self.grid.height());
        let (Some(hx), Some(hy)) = (axis_cell(at.x, w), axis_cell(at.y, h)) else {
            return FlowSample::NoDirection(NoDirection::OutsideMap);
        };
        let here = self.cells[hy as usize * w as usize + hx as usize];
        // Arrows are 0-7 and every other byte is special: one test on the common path.
        if here > 7 {
            return match here {
                FLOW_GOAL => FlowSample::Goal,
                FLOW_WALL => FlowSample::NoDirection(NoDirection::Wall),
                _ => FlowSample::NoDirection(NoDirection::Unreachable),
            };
        }
        // The position is on the map, so g >= -0.5 and (g + 1) truncates to floor(g) + 1
        // (truncation is cheaper than floor where the CPU has no rounding instruction).
        let g = at - 0.5;
        let [bx, by] = crate::grid::truncate_both(g + 1.0).map(|c| c - 1);
        let base = Vec2::new(bx as f32, by as f32);
        let f = g - base;
        let weights = [
            (1.0 - f.x) * (1.0 - f.y),
            f.x * (1.0 - f.y),
            (1.0 - f.x) * f.y,
            f.x * f.y,
        ];
        let (w, h) = (w as i64, h as i64);
        let (bx, by) = (bx as i64, by as i64);
        let mut sum = Vec2::ZERO;
        // Most samples lie inside the map and away from the goal: one table lookup per corner
        // (walls and unreachable cells look up zero), no branches.
        // (A negative corner wraps to a huge unsigned one.)
        let inside = (bx as u64) < (w - 1) as u64 && (by as u64) < (h - 1) as u64;
        let corners = if inside {
            let i = (by * w + bx) as usize;
            let row = w as usize;
            // One bounds check for the block rather than one per corner.
            let block = &self.cells[i..i + row + 2];
            let b = [block[0], block[1], block[row], block[row + 1]];
            let goal = (b[0] == FLOW_GOAL) | (b[1] == FLOW_GOAL);
            (!(goal | (b[2] == FLOW_GOAL) | (b[3] == FLOW_GOAL))).then_some(b)
        } else {
            None
        };
        if let Some(b) = corners {
            for (&b, &wgt) in b.iter().zip(&weights) {
                sum += ARROW_OF_BYTE[b as usize] * wgt;
            }
        } else {
            for (k, (ox, oy)) in [(0, 0), (1, 0), (0, 1), (1, 1)].into_iter().enumerate() {
                let (cx, cy) = (bx + ox, by + oy);
                if cx < 0 || cy < 0 || cx >= w || cy >= h {
                    continue;
                }
                let cell = UVec2::new(cx as u32, cy as u32);
                let b = self.cells[(cy * w + cx) as usize];
                let v = match b {
                    0..=7 => UNIT[b as usize],
                    FLOW_GOAL => (self.grid.cell_center(cell) - pos).normalize_or_zero(),
                    _ => Vec2::ZERO,
                };
                sum += v * weights[k];
            }
        }
        // The cell's own arrow is always a legal step; a blend that turns more than a right
        // angle away from it (arrows of the cells beyond a wall corner pulling the other way)
        // would push a unit into the wall, so the arrow wins.
        let own = UNIT[here as usize];
        let length2 = sum.length_squared();
        if length2 > 1e-6 {
            // As `Vec2::normalize` scales (by the reciprocal of the length), so the same bits.
            let d = sum * length2.sqrt().recip();
            if d.dot(own) >= 0.0 {
                return FlowSample::Direction(d);
            }
        }
        FlowSample::Direction(own)
    }
}

/// The unit vector of every flow byte: the arrow for 0-7, zero for the rest.
pub(crate) static ARROW_OF_BYTE: [Vec2; 256] = {
    let mut table = [Vec2::ZERO; 256];
    let mut b = 0;
    while b < 8 {
        table[b] = UNIT[b];
        b += 1;
    }
    table
};

/// The unit vector of each arrow 0-7 ([`Dir8::vec2`]).
const UNIT: [Vec2; 8] = [
    Dir8::N.vec2(),
    Dir8::NE.vec2(),
    Dir8::E.vec2(),
    Dir8::SE.vec2(),
    Dir8::S.vec2(),
    Dir8::SW.vec2(),
    Dir8::W.vec2(),
    Dir8::NW.vec2(),
];

impl IntegrationBuilder {
    /// The kind of field the builder holds: exact, whichever way it was built.
    fn field_kind(&self) -> FieldKind {
        FieldKind {
            model: self.model,
            none: self.no_value(),
            exact: true,
            plain: self.max_terrain() == crate::cost::PLAIN,
        }
    }

    /// Derive the flow field of the builder's last integration field, reading its padded scratch
    /// directly (no allocation, no bounds tests). O(cells).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, CostModel, FlowField, Grid, IntegrationBuilder};
    /// let cost = CostField::new(Grid::new(16, 16).unwrap());
    /// let mut builder = IntegrationBuilder::new();
    /// let integration = builder.build(&cost, &[UVec2::new(5, 5)], CostModel::TenFourteen).unwrap();
    /// let mut flow = FlowField::new(*cost.grid());
    /// builder.flow_into(&mut flow).unwrap();
    /// assert_eq!(flow, FlowField::from_integration(&cost, &integration).unwrap());
    /// ```
    pub fn flow_into(&self, out: &mut FlowField) -> Result<(), FlowError> {
        if !self.has_field() {
            return Err(FlowError::NoIntegration);
        }
        let built = (self.width as u32, self.height as u32);
        SizeMismatch::check(
            "flow field",
            SizeMismatch::of(&out.grid),
            "the integration field",
            built,
        )?;
        let pw = self.padded_width;
        let kind = self.field_kind();
        let whole_rows = whole_rows_pay(kind, self.written_cells(), self.width, self.height);
        let spans = self.written_spans().filter(|_| !whole_rows);
        match spans {
            Some(spans) => {
                let version = self.cost_version();
                let known = version != 0
                    && out.footprint_of == version
                    && out.footprint.len() == self.touched().len()
                    && out.deep.known_to(self.chain_layout());
                if known {
                    // Outside both footprints the bytes are this terrain's already.
                    refill_gone_blocks(
                        &out.footprint,
                        self.touched(),
                        &self.costs,
                        pw,
                        &mut out.cells,
                    );
                } else {
                    fill_from_terrain(&self.costs, pw, &mut out.cells);
                    out.deep.chains.clear();
                }
                derive_over(&self.costs, &self.dist, pw, kind, &mut out.cells, 0, spans);
                out.footprint.clear();
                out.footprint.extend_from_slice(self.touched());
                out.footprint_of = version;
            }
            None => derive(&self.costs, &self.dist, pw, kind, out.cells_mut()),
        }
        // The chains' cells last: the arrows' pass saw no values inside them.
        self.write_chain_cells(&mut out.deep, |chains, dist, straight, stale, none| {
            chains.write_arrows(dist, straight, stale, none, &mut out.cells)
        });
        Ok(())
    }
}

/// Whether the arrows of a field whose footprint's spans cover `covered` cells of a map `w` x `h` cost
/// less over whole rows: where the AVX2 kernel packs whole rows into bytes (see
/// [`Avx2::packs_whole_rows`](crate::simd::Avx2::packs_whole_rows)), 32 cells a register and the
/// blocks without a value cheaper still, and the spans cover at least a third of the map. The
/// spans' kernel costs more per cell (a call and its set-up per span, spans seldom one below
/// the other): lak303d's spans cover 52 % of it and den520d's 47 %, and their fields came 3–6 %
/// faster over whole rows; brc202d's cover 20 %, and its field came 1–4 % slower. O(1).
fn whole_rows_pay(kind: FieldKind, covered: usize, w: usize, h: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::cpu().avx2.is_some() && crate::simd::Avx2::packs_whole_rows(kind, w) {
        return covered * 3 >= w * h;
    }
    let _ = (kind, covered, w, h);
    false
}

/// The byte of a cell the wave did not reach: a wall's or an unreachable cell's.
#[inline(always)]
fn unreached_byte(terrain: u8) -> u8 {
    if terrain == WALL {
        FLOW_WALL
    } else {
        FLOW_UNREACHABLE
    }
}

/// Every cell's byte as if the wave reached none (padded costs, padded width `pw`): the flow
/// field outside a wave's footprint (see [`IntegrationBuilder::touched`]).
fn fill_from_terrain(costs: &[u8], pw: usize, out: &mut [u8]) {
    let w = pw - 2;
    for (y, row) in out.chunks_exact_mut(w).enumerate() {
        let terrain = &costs[(y + 1) * pw + 1..][..w];
        for (byte, &t) in row.iter_mut().zip(terrain) {
            *byte = unreached_byte(t);
        }
    }
}

/// The terrain's bytes (as [`fill_from_terrain`] gives them) into the map cells of the
/// footprint blocks marked in `old` and not in `new`.
fn refill_gone_blocks(old: &[u64], new: &[u64], costs: &[u8], pw: usize, out: &mut [u8]) {
    let height = out.len() / (pw - 2);
    for_gone_cells(old, new, pw, height, |p, i| {
        out[i] = unreached_byte(costs[p])
    });
}

/// What the arrows' kernels need to know of a field: its cost model, the least distance that
/// means no value, whether it is exact (a builder's, see `derive_row_exact_avx512`: every
/// reached cell holds the least of its neighbours' values plus the step to each, or a seed's
/// own value below that), which a faster kernel needs, and whether every walkable cell of its
/// map is of terrain `PLAIN` (a step then costs its base price: the exact kernels leave the
/// terrain out).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldKind {
    pub(crate) model: CostModel,
    pub(crate) none: u32,
    pub(crate) exact: bool,
    pub(crate) plain: bool,
}

/// The arrows of spans of rows (padded row, first and last padded column) into `out`, which
/// holds the field's rows from row `first` (0-based) on: the one place that picks a kernel for
/// this CPU (AVX-512, AVX2, or the plain one) and, with either vector set, for the kind of field.
/// A field the AVX2 kernels pack into 8- or 16-bit lanes goes to them even where AVX-512 runs:
/// 32 or 16 cells a register against AVX-512's 16 in 32-bit lanes (on a Zen 4 core, whose
/// 512-bit operations take two 256-bit halves, the whole field came 3–11 % faster on most
/// Moving AI maps; the figures are in `docs/benchmarks.md`).
fn derive_over(
    costs: &[u8],
    dist: &[u32],
    pw: usize,
    kind: FieldKind,
    out: &mut [u8],
    first: usize,
    spans: impl Iterator<Item = (usize, usize, usize)> + Clone,
) {
    #[cfg(target_arch = "x86_64")]
    {
        let cpu = crate::simd::cpu();
        let packed = cpu.avx2.is_some() && crate::simd::Avx2::packs(kind);
        if let (Some(avx512), false) = (cpu.avx512, packed) {
            return avx512.derive_spans(costs, dist, pw, kind, out, first, spans);
        }
        if let Some(avx2) = cpu.avx2 {
            return avx2.derive_spans(costs, dist, pw, kind, out, first, spans);
        }
    }
    // The plain kernel serves exact fields as well.
    let field = (costs, dist, pw, kind);
    derive_spans_with(field, out, first, spans, derive_row, |_| {});
}

/// Span `(y, a, b)` (padded row, first and last padded column) grown to at least `cells`
/// columns within its row of `w` map cells, if the row has that many: the kernels write every
/// cell's own byte (a cell without a value gets its terrain's), so a span grown writes more
/// right bytes, never a wrong one.
pub(crate) fn at_least(
    (y, a, b): (usize, usize, usize),
    cells: usize,
    w: usize,
) -> (usize, usize, usize) {
    if b + 1 - a >= cells || w < cells {
        return (y, a, b);
    }
    let last = (a + cells - 1).min(w);
    (y, last + 1 - cells, last)
}

/// How many spans ahead [`derive_spans_with`] asks for the rows of: about the time the cache
/// takes to answer (a span of a dungeon's room is some 25 cells, two blocks of the vector
/// kernels; one, three, six and twelve tried, six best).
const FETCH_AHEAD: usize = 6;

/// Values of maps this large (padded cells) outgrow a core's own cache (2 MB of them): on
/// smaller ones the rows are mostly at hand and asking costs more than it saves (brc202d,
/// 530 × 481, 1.5 % slower with it).
const FETCH_CELLS: usize = 1 << 19;

/// Spans at least this many cells long have their rows' ends asked for too (a row of values
/// holds 16 cells per cache line).
const FETCH_LINE: usize = 12;

/// Spans (padded row, first and last padded column) of the flow field over padded `costs` and
/// `dist` (width `pw`, a field of `kind`) into `out` (the field's rows from row `first` on),
/// each by `derive_row` (the plain or a vector kernel).
///
/// `fetch` may ask the CPU to bring the cache line at an address in (a hint, never a read):
/// the spans of a wave's footprint, parts of rows, lie a row or more apart, each row of values
/// a 4 KB page of its own on a map 1024 wide, where the CPU's own prefetchers stop; so the rows
/// around the span [`FETCH_AHEAD`] spans on are asked for while this one is worked out. Whole
/// rows run on from one to the next and need no help.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn derive_spans_with(
    (costs, dist, pw, kind): (&[u8], &[u32], usize, FieldKind),
    out: &mut [u8],
    first: usize,
    spans: impl Iterator<Item = (usize, usize, usize)> + Clone,
    mut derive_row: impl FnMut(RowsAround<'_>, ArrowPrices, &mut [u8]),
    fetch: impl Fn(*const u8),
) {
    let w = pw - 2;
    let FieldKind { model, none, .. } = kind;
    let (straight, diagonal) = (model.straight(), model.diagonal());
    let mut ahead = spans.clone().skip(FETCH_AHEAD);
    let far = dist.len() >= FETCH_CELLS;
    let mut fetched = (0, 0);
    for (y, a, b) in spans {
        if let Some((y, a, b)) = ahead.next()
            && far
            && b + 1 - a < w
        {
            // A span in the row after the last one asked for, and starting at its start
            // (a room's next row), has its rows above asked for already.
            let rows = if fetched == (y - 1, a) {
                y + 1..y + 2
            } else {
                y - 1..y + 2
            };
            fetched = (y, a);
            for row in rows {
                fetch(dist.as_ptr().wrapping_add(row * pw + a - 1).cast());
                if b - a >= FETCH_LINE {
                    fetch(dist.as_ptr().wrapping_add(row * pw + b + 1).cast());
                }
            }
            fetch(costs.as_ptr().wrapping_add(y * pw + a - 1));
            fetch(out.as_ptr().wrapping_add((y - 1 - first) * w + a - 1));
        }
        // The kernel reads one column either side of the cells it writes.
        let up = &dist[(y - 1) * pw + a - 1..];
        let mid = &dist[y * pw + a - 1..];
        let down = &dist[(y + 1) * pw + a - 1..];
        let terrain = &costs[y * pw + a - 1..];
        let at = (y - 1 - first) * w;
        let rows = (up, mid, down, terrain);
        derive_row(
            rows,
            (straight, diagonal, none),
            &mut out[at + a - 1..at + b],
        );
    }
}

/// The flow kernel over padded costs and distances (a wall border one cell wide, walls and
/// unreachable cells at [`UNREACHABLE`], or at `none` or above), one row at a time.
fn derive(costs: &[u8], dist: &[u32], pw: usize, kind: FieldKind, out: &mut [u8]) {
    // Rows are independent: on large maps, bands of rows go to rayon's threads (the bytes are
    // the same whatever the split). Handing work to the pool costs a wake-up and a sleep, more
    // than a second thread saves on maps under the sweeps' own size for bands, and all of it
    // is waste with one thread: then the rows stay on the calling thread.
    #[cfg(feature = "parallel")]
    {
        const BAND_ROWS: usize = 64;
        let w = pw - 2;
        if out.len() >= 1 << 18 && rayon::current_num_threads() > 1 {
            use rayon::prelude::*;
            out.par_chunks_mut(w * BAND_ROWS)
                .enumerate()
                .for_each(|(k, band)| derive_band(costs, dist, pw, kind, band, k * BAND_ROWS));
            return;
        }
    }
    derive_band(costs, dist, pw, kind, out, 0);
}

/// Rows `first..` of the flow field into `out` (whole rows): a span per row.
fn derive_band(
    costs: &[u8],
    dist: &[u32],
    pw: usize,
    kind: FieldKind,
    out: &mut [u8],
    first: usize,
) {
    let w = pw - 2;
    let rows = (first + 1..=first + out.len() / w).map(|y| (y, 1, w));
    derive_over(costs, dist, pw, kind, out, first, rows);
}

/// Whole rows `first..` by the plain kernel, without spans: the tests' reference.
#[cfg(test)]
fn derive_rows(
    costs: &[u8],
    dist: &[u32],
    pw: usize,
    model: CostModel,
    none: u32,
    out: &mut [u8],
    first: usize,
) {
    let w = pw - 2;
    let (straight, diagonal) = (model.straight(), model.diagonal());
    for (k, row) in out.chunks_exact_mut(w).enumerate() {
        let y = first + k;
        let up = &dist[y * pw..(y + 1) * pw];
        let mid = &dist[(y + 1) * pw..(y + 2) * pw];
        let down = &dist[(y + 2) * pw..(y + 3) * pw];
        let terrain = &costs[(y + 1) * pw..(y + 2) * pw];
        derive_row((up, mid, down, terrain), (straight, diagonal, none), row);
    }
}

/// What a row of arrows reads: the values of the row above it, of the row and of the row below
/// it, and the row's terrain, each from the column before the row's first cell.
pub(crate) type RowsAround<'a> = (&'a [u32], &'a [u32], &'a [u32], &'a [u8]);

/// The prices of a straight and a diagonal step, and the least distance that means no value.
pub(crate) type ArrowPrices = (u32, u32, u32);

/// The rows around a row of `w` cells, cut to its padded width (so that indexing in the kernels
/// needs no further bounds checks).
#[inline(always)]
pub(crate) fn padded_rows((up, mid, down, terrain): RowsAround<'_>, w: usize) -> RowsAround<'_> {
    (
        &up[..w + 2],
        &mid[..w + 2],
        &down[..w + 2],
        &terrain[..w + 2],
    )
}

/// One row of arrows, without branches on the data. The corner rule needs no terrain lookups
/// here: a walkable straight neighbour of a reachable cell is itself reachable, so for the cells
/// that get an arrow, "neighbour has no value" means "wall". A distance from `none` on is no
/// value: UNREACHABLE, or the sweeps' INF, which they leave beyond their footprint.
#[inline(always)]
pub(crate) fn derive_row(rows: RowsAround<'_>, prices: ArrowPrices, row: &mut [u8]) {
    let (straight, diagonal, none) = prices;
    let w = row.len();
    let (up, mid, down, terrain) = padded_rows(rows, w);
    for (x, slot) in row.iter_mut().enumerate() {
        let c = x + 1;
        let t = terrain[c] as u32;
        let (s, g) = (straight * t, diagonal * t);
        let (dn, de, ds, dw) = (up[c], mid[c + 1], down[c], mid[c - 1]);
        // Lane-wide operations only, so that the compiler vectorises the row: a saturating add
        // as a min and an add, the cheapest step as a min over the eight, and its direction as
        // the lowest one that costs that much (ties to the lowest direction).
        let (room_s, room_g) = (UNREACHABLE - s, UNREACHABLE - g);
        let plus_s = |v: u32| v.min(room_s) + s;
        let diag = |v: u32, a: u32, b: u32| {
            // A diagonal past a wall side (no value) is no way.
            if a.max(b) >= none {
                UNREACHABLE
            } else {
                v.min(room_g) + g
            }
        };
        let offers = [
            plus_s(dn),
            diag(up[c + 1], dn, de),
            plus_s(de),
            diag(down[c + 1], ds, de),
            plus_s(ds),
            diag(down[c - 1], ds, dw),
            plus_s(dw),
            diag(up[c - 1], dn, dw),
        ];
        let best = offers.iter().copied().fold(UNREACHABLE, u32::min);
        let mut dir = 0u32;
        for d in (0..8).rev() {
            dir = if offers[d] == best { d as u32 } else { dir };
        }
        let here = mid[c];
        // A cell no neighbour reaches more cheaply than its own value is a sink: a goal (value 0)
        // or a seed of a seeded field.
        let byte = if t == WALL as u32 {
            FLOW_WALL as u32
        } else if here >= none {
            FLOW_UNREACHABLE as u32
        } else if best > here {
            FLOW_GOAL as u32
        } else {
            dir
        };
        *slot = byte as u8;
    }
}

/// The arrow of one cell, from unpadded costs and values (cells outside the map count as walls);
/// the same rule and tie-breaking as [`derive_row`], for repairing a few cells in place.
pub(crate) fn flow_byte(
    costs: &[u8],
    values: &[u32],
    width: usize,
    height: usize,
    i: usize,
    model: CostModel,
) -> u8 {
    let t = costs[i] as u32;
    if t == WALL as u32 {
        return FLOW_WALL;
    }
    let here = values[i];
    if here == UNREACHABLE {
        return FLOW_UNREACHABLE;
    }
    let (x, y) = (i % width, i / width);
    let value = |dx: isize, dy: isize| {
        let (nx, ny) = (x as isize + dx, y as isize + dy);
        if nx < 0 || ny < 0 || nx >= width as isize || ny >= height as isize {
            UNREACHABLE
        } else {
            values[ny as usize * width + nx as usize]
        }
    };
    let (s, g) = (model.straight() * t, model.diagonal() * t);
    let (dn, de, ds, dw) = (value(0, -1), value(1, 0), value(0, 1), value(-1, 0));
    let diag = |v: u32, a: u32, b: u32| {
        if a == UNREACHABLE || b == UNREACHABLE {
            UNREACHABLE
        } else {
            v.saturating_add(g)
        }
    };
    let cand = [
        dn.saturating_add(s),
        diag(value(1, -1), dn, de),
        de.saturating_add(s),
        diag(value(1, 1), ds, de),
        ds.saturating_add(s),
        diag(value(-1, 1), ds, dw),
        dw.saturating_add(s),
        diag(value(-1, -1), dn, dw),
    ];
    let mut best = cand[0];
    let mut dir = 0u8;
    for (d, &v) in cand.iter().enumerate().skip(1) {
        if v < best {
            best = v;
            dir = d as u8;
        }
    }
    if best > here { FLOW_GOAL } else { dir }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integration::sweep::INF;

    /// The arrows of the builder's last field by the general plain kernel, the reference.
    fn plain_arrows(b: &IntegrationBuilder) -> Vec<u8> {
        let mut plain = vec![0u8; b.width * b.height];
        let (pw, none) = (b.padded_width, b.no_value());
        derive_rows(&b.costs, &b.dist, pw, b.model, none, &mut plain, 0);
        plain
    }

    /// A xorshift generator from a seed (not 0): the tests' random maps and values.
    /// The walkable cells of `cost`, in row order.
    fn walkable_cells(cost: &CostField) -> Vec<UVec2> {
        (0..cost.grid().len())
            .map(|i| cost.grid().cell(i))
            .filter(|&c| cost.is_walkable(c))
            .collect()
    }

    fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    fn fields(cost: &CostField, goal: UVec2) -> (IntegrationField, FlowField) {
        let mut b = IntegrationBuilder::new();
        let i = b.build(cost, &[goal], CostModel::TenFourteen).unwrap();
        let mut f = FlowField::new(*cost.grid());
        b.flow_into(&mut f).unwrap();
        (i, f)
    }

    #[test]
    fn each_special_cell_reads_as_what_it_is_both_ways() {
        use crate::{CostField, CostModel, Grid, IntegrationBuilder, WALL};
        // Goal at x = 0, a wall at x = 2 sealing off x = 3.
        let mut cost = CostField::new(Grid::new(4, 1).unwrap());
        cost.set(UVec2::new(2, 0), WALL).unwrap();
        let mut b = IntegrationBuilder::new();
        b.build(&cost, &[UVec2::new(0, 0)], CostModel::TenFourteen)
            .unwrap();
        let mut flow = FlowField::new(*cost.grid());
        b.flow_into(&mut flow).unwrap();
        let goal = FlowSample::Goal;
        let wall = FlowSample::NoDirection(NoDirection::Wall);
        let cut_off = FlowSample::NoDirection(NoDirection::Unreachable);
        for (x, want) in [(0, goal), (2, wall), (3, cut_off)] {
            let p = Vec2::new(x as f32 + 0.5, 0.5);
            assert_eq!(flow.sample_nearest(p), want, "cell {x}");
            assert_eq!(flow.sample_bilinear(p), want, "cell {x}");
        }
        assert!(flow.is_goal(UVec2::new(0, 0)));
        assert!(!flow.is_goal(UVec2::new(1, 0)));
        assert!(!flow.is_goal(UVec2::new(2, 0)));
        assert!(!flow.is_goal(UVec2::new(9, 0)));
    }

    #[test]
    fn terrain_of_the_cell_left_prices_each_arrow() {
        let mut cost = CostField::new(Grid::new(4, 1).unwrap());
        cost.set(UVec2::new(2, 0), 9).unwrap();
        let (i, f) = fields(&cost, UVec2::new(0, 0));
        assert_eq!(i.values(), &[0, 10, 100, 110]);
        assert_eq!(f.bytes(), &[FLOW_GOAL, 6, 6, 6]);
    }

    #[test]
    fn value_plus_step_beats_lowest_value() {
        // From (1,0) with the goal at (0,1): W reaches value 10 for a step of 10 (20), S reaches
        // value 10 for 10 (20), SW reaches 0 for 14: the diagonal wins on value + step.
        let cost = CostField::new(Grid::new(3, 2).unwrap());
        let (_, f) = fields(&cost, UVec2::new(0, 1));
        assert_eq!(f.dir(UVec2::new(1, 0)), Some(Dir8::SW));
    }

    #[test]
    fn walls_unreachable_and_goal_are_marked() {
        let mut cost = CostField::new(Grid::new(5, 3).unwrap());
        cost.fill_rect(UVec2::new(2, 0), UVec2::new(2, 2), WALL)
            .unwrap();
        let (_, f) = fields(&cost, UVec2::new(0, 0));
        assert_eq!(f.byte(UVec2::new(2, 1)), Some(FLOW_WALL));
        assert_eq!(f.byte(UVec2::new(4, 1)), Some(FLOW_UNREACHABLE));
        assert_eq!(f.byte(UVec2::new(0, 0)), Some(FLOW_GOAL));
        assert_eq!(f.byte(UVec2::new(9, 9)), None);
        assert_eq!(
            f.sample_bilinear(Vec2::new(4.5, 1.5)),
            FlowSample::NoDirection(NoDirection::Unreachable)
        );
        assert_eq!(
            f.sample_bilinear(Vec2::new(2.5, 1.5)),
            FlowSample::NoDirection(NoDirection::Wall)
        );
        assert_eq!(
            f.sample_bilinear(Vec2::new(f32::NAN, 1.5)),
            FlowSample::NoDirection(NoDirection::OutsideMap)
        );
    }

    #[test]
    fn no_arrow_cuts_a_corner() {
        let mut cost = CostField::new(Grid::new(3, 3).unwrap());
        cost.set(UVec2::new(1, 0), WALL).unwrap();
        let (_, f) = fields(&cost, UVec2::new(2, 0));
        // From (0,0) the way is S, then E/SE.., never NE past the wall corner at (1,0).
        let d = f.dir(UVec2::new(0, 1)).unwrap();
        assert_ne!(d, Dir8::NE);
        assert_eq!(f.dir(UVec2::new(0, 0)), Some(Dir8::S));
    }

    #[test]
    fn bilinear_samples_equal_the_blend_written_out() {
        // A goal inside the map (so corners next to it take the slow path that points at its
        // centre), a wall, and samples up to every edge (corners off the map), all compared
        // with the rule written out: bilinear weights over the four cell centres around the
        // position; an arrow's unit vector, a goal's direction to its centre, zero for the rest;
        // the cell's own arrow where the blend vanishes or turns more than a right angle away.
        let (w, h) = (9i64, 7i64);
        let mut cost = CostField::new(Grid::new(w as u32, h as u32).unwrap());
        cost.fill_rect(UVec2::new(2, 1), UVec2::new(2, 4), WALL)
            .unwrap();
        // One goal, then a block of four (corners with two, three or four goals).
        let goals = [
            vec![UVec2::new(5, 3)],
            vec![
                UVec2::new(5, 3),
                UVec2::new(6, 3),
                UVec2::new(5, 4),
                UVec2::new(6, 4),
            ],
        ];
        let mut checked = 0;
        for goals in goals {
            let mut b = IntegrationBuilder::new();
            b.build(&cost, &goals, CostModel::TenFourteen).unwrap();
            let mut f = FlowField::new(*cost.grid());
            b.flow_into(&mut f).unwrap();
            let unit = |b: u8| {
                if b < 8 {
                    Dir8::ALL[b as usize].vec2()
                } else {
                    Vec2::ZERO
                }
            };
            for iy in 0..70 {
                for ix in 0..90 {
                    let pos = Vec2::new(ix as f32 * 0.1 + 0.003, iy as f32 * 0.1 + 0.007);
                    let (cx, cy) = (pos.x.floor() as i64, pos.y.floor() as i64);
                    let here = f.bytes()[(cy * w + cx) as usize];
                    if here > 7 {
                        continue;
                    }
                    let g = pos - 0.5;
                    let base = g.floor();
                    let t = g - base;
                    let mut sum = Vec2::ZERO;
                    let corners = [
                        (0, 0, (1.0 - t.x) * (1.0 - t.y)),
                        (1, 0, t.x * (1.0 - t.y)),
                        (0, 1, (1.0 - t.x) * t.y),
                        (1, 1, t.x * t.y),
                    ];
                    for (ox, oy, weight) in corners {
                        let (x, y) = (base.x as i64 + ox, base.y as i64 + oy);
                        if x < 0 || y < 0 || x >= w || y >= h {
                            continue;
                        }
                        let b = f.bytes()[(y * w + x) as usize];
                        let v = if b == FLOW_GOAL {
                            (Vec2::new(x as f32 + 0.5, y as f32 + 0.5) - pos).normalize_or_zero()
                        } else {
                            unit(b)
                        };
                        sum += v * weight;
                    }
                    let own = unit(here);
                    let want = match sum.try_normalize() {
                        Some(d) if sum.length_squared() > 1e-6 && d.dot(own) >= 0.0 => d,
                        _ => own,
                    };
                    let FlowSample::Direction(d) = f.sample_bilinear(pos) else {
                        panic!("{pos}: expected a direction");
                    };
                    assert!((d - want).length() < 1e-4, "{pos}: {d}, written out {want}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    #[test]
    fn bilinear_blends_neighbouring_arrows() {
        // Goal in a corner; the four cells around (3, 3) point SE or E (ties on open ground go
        // to the lower direction number), so the blend lies strictly between E and SE.
        let cost = CostField::new(Grid::new(10, 10).unwrap());
        let (_, f) = fields(&cost, UVec2::new(9, 9));
        let around =
            [(2, 2), (3, 2), (2, 3), (3, 3)].map(|(x, y)| f.dir(UVec2::new(x, y)).unwrap());
        assert!(around.contains(&Dir8::E) && around.contains(&Dir8::SE));
        let FlowSample::Direction(d) = f.sample_bilinear(Vec2::new(3.0, 3.0)) else {
            panic!("expected a direction")
        };
        assert!((d.length() - 1.0).abs() < 1e-5);
        assert!(d.x > d.y && d.y > 0.1, "{d}");
        let mut cost = CostField::new(Grid::new(10, 3).unwrap());
        cost.fill_rect(UVec2::new(0, 2), UVec2::new(9, 2), WALL)
            .unwrap();
        let (_, f) = fields(&cost, UVec2::new(9, 0));
        let FlowSample::Direction(d) = f.sample_bilinear(Vec2::new(2.0, 1.0)) else {
            panic!()
        };
        assert!(d.x > 0.9 && d.y < 0.0, "{d}");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn eight_samples_at_once_have_the_bits_of_one_at_a_time() {
        let Some(avx2) = crate::simd::under_test::avx2() else {
            return;
        };
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        // Maps with walls, terrain, unreachable pockets and one or two goals, in unit cells
        // and in a world frame; the smallest has fewer than the 4 bytes a lane gathers.
        for (w, h, origin, cell) in [
            (37, 23, Vec2::ZERO, 1.0),
            (64, 48, Vec2::new(-3.25, 7.5), 0.75),
            (3, 5, Vec2::ZERO, 1.0),
            (1, 2, Vec2::ZERO, 1.0),
        ] {
            let grid = Grid::new(w, h).unwrap().with_world(origin, cell).unwrap();
            let mut cost = CostField::new(grid);
            for y in 0..h {
                for x in 0..w {
                    let r = next();
                    let c = match r % 10 {
                        0 | 1 => WALL,
                        2 => 1 + (r >> 20) as u8 % 9,
                        _ => 1,
                    };
                    cost.set(UVec2::new(x, y), c).unwrap();
                }
            }
            let goals = [UVec2::new(w / 2, h / 2), UVec2::new(0, h - 1)];
            for &g in &goals {
                cost.set(g, 1).unwrap();
            }
            let mut b = IntegrationBuilder::new();
            b.build(
                &cost,
                &goals[..1 + (w > 10) as usize],
                CostModel::TenFourteen,
            )
            .unwrap();
            let mut f = FlowField::new(grid);
            b.flow_into(&mut f).unwrap();
            let (lo, size) = (origin, Vec2::new(w as f32, h as f32) * cell);
            let (mut vectorised, mut lanes) = (0, 0);
            for round in 0..4000 {
                let mut block = [Vec2::ZERO; 8];
                for p in &mut block {
                    let r = next();
                    let u = Vec2::new((r & 0xffff) as f32, (r >> 16 & 0xffff) as f32) / 65535.0;
                    *p = match r >> 60 {
                        // Off the map, on its edges, on cell borders, not a number.
                        0 => lo + (u * 1.4 - 0.2) * size,
                        1 => lo + Vec2::new(u.x * size.x, 0.0),
                        2 => lo + (u * size / cell).floor() * cell,
                        3 if round % 50 == 0 => Vec2::new(f32::NAN, u.y),
                        4 if round % 50 == 0 => Vec2::new(f32::INFINITY, -1e30),
                        _ => lo + u * size,
                    };
                }
                let (mut xs, mut ys) = ([0.0; 8], [0.0; 8]);
                let done = avx2.bilinear8(&f, &block, &mut xs, &mut ys);
                for (l, &p) in block.iter().enumerate() {
                    lanes += 1;
                    if done >> l & 1 == 0 {
                        continue;
                    }
                    vectorised += 1;
                    let FlowSample::Direction(d) = f.bilinear(p) else {
                        panic!("lane {l} at {p} was vectorised, but has no direction");
                    };
                    assert_eq!(
                        (xs[l].to_bits(), ys[l].to_bits()),
                        (d.x.to_bits(), d.y.to_bits()),
                        "{p} on the {w}x{h} map"
                    );
                }
            }
            // Most positions on the larger maps take the vector path (so it is tested).
            if w > 10 {
                assert!(vectorised * 2 > lanes, "{vectorised} of {lanes}");
            } else if w == 1 {
                assert_eq!(vectorised, 0);
            }
        }
    }

    #[test]
    fn the_plain_kernel_on_a_built_field_gives_the_builders_arrows() {
        // On a real field each reachable cell's best offer equals its own value (random values,
        // as in the test below, almost never tie), so this checks the plain kernel's sink test
        // and tie-breaking where it matters, on any CPU: the builder's arrows come from the
        // vector kernel this CPU has, or from the plain one, which the reference checks pin.
        let cost = crate::maps::scattered_map(45, 33, 5).unwrap();
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let goal = (0..cost.grid().len())
                .map(|i| cost.grid().cell(i))
                .find(|&c| cost.is_walkable(c))
                .unwrap();
            let mut b = IntegrationBuilder::new();
            b.build(&cost, &[goal], model).unwrap();
            let mut flow = FlowField::new(*cost.grid());
            b.flow_into(&mut flow).unwrap();
            let plain = plain_arrows(&b);
            assert_eq!(flow.bytes(), &plain[..], "{model:?}");
            let goals = plain.iter().filter(|&&d| d == FLOW_GOAL).count();
            assert_eq!(goals, 1, "{model:?}");
        }
    }

    #[test]
    fn the_builders_kernel_for_exact_fields_gives_the_general_kernels_arrows() {
        // Built fields (exact) over random terrain up to the dearest (or plain ground only,
        // one map in four), walls, several goals and seeds with their own values (a flee
        // field's), the sweeps on and off: the builder's arrows (the kernel for exact fields
        // where the CPU has it) equal the general plain kernel's over the same distances.
        for seed in 0..40u64 {
            let (w, h) = (20 + seed as u32 * 7 % 70, 10 + seed as u32 * 11 % 50);
            let mut cost = crate::maps::scattered_map(w, h, seed).unwrap();
            let mut next = xorshift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            for i in 0..cost.grid().len() {
                let c = cost.grid().cell(i);
                if cost.is_walkable(c) && seed % 4 == 3 {
                    cost.set(c, crate::cost::PLAIN).unwrap();
                } else if cost.is_walkable(c) && next().is_multiple_of(4) {
                    let t = if seed % 3 == 0 {
                        1 + next() % 254
                    } else {
                        1 + next() % 6
                    };
                    cost.set(c, t as u8).unwrap();
                }
            }
            let open = walkable_cells(&cost);
            if open.is_empty() {
                continue;
            }
            let pick = |k: u64| open[(k % open.len() as u64) as usize];
            let model = if seed % 2 == 0 {
                CostModel::TenFourteen
            } else {
                CostModel::Octile
            };
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(seed % 4 != 1);
            if seed % 5 == 2 {
                let seeds: Vec<(UVec2, u32)> = (0..3)
                    .map(|k| (pick(next() + k), (next() % 200) as u32))
                    .collect();
                b.build_seeded(&cost, &seeds, model).unwrap();
            } else {
                let goals: Vec<UVec2> = (0..1 + seed % 3).map(|_| pick(next())).collect();
                b.build(&cost, &goals, model).unwrap();
            }
            let mut flow = FlowField::new(*cost.grid());
            b.flow_into(&mut flow).unwrap();
            let plain = plain_arrows(&b);
            assert_eq!(flow.bytes(), &plain[..], "seed {seed}");
            // Each vector kernel for exact fields the CPU has, whichever the dispatch picks.
            #[cfg(target_arch = "x86_64")]
            {
                let (pw, kind) = (b.padded_width, b.field_kind());
                if seed % 4 == 3 {
                    assert!(kind.plain, "seed {seed}");
                }
                let rows = || (1..=b.height).map(|y| (y, 1, b.width));
                if let Some(avx2) = crate::simd::under_test::avx2() {
                    let mut eight = vec![0u8; plain.len()];
                    avx2.derive_spans(&b.costs, &b.dist, pw, kind, &mut eight, 0, rows());
                    assert_eq!(eight, plain, "AVX2, seed {seed}");
                }
                if let Some(avx512) = crate::simd::under_test::avx512() {
                    let mut sixteen = vec![0u8; plain.len()];
                    avx512.derive_spans(&b.costs, &b.dist, pw, kind, &mut sixteen, 0, rows());
                    assert_eq!(sixteen, plain, "AVX-512, seed {seed}");
                }
            }
        }
    }

    #[test]
    fn rows_in_any_order_give_the_byte_kernels_the_plain_kernels_arrows() {
        // The AVX2 kernel over whole rows keeps each row's values as bytes for the row below:
        // rows in order, backwards, skipping, again, and mixed with parts of rows, over built
        // fields of plain ground with values far past a byte (seeds up to 200,000) and many
        // small ones (ties by the walls), give the plain kernel's bytes.
        #[cfg(target_arch = "x86_64")]
        let Some(avx2) = crate::simd::under_test::avx2() else {
            return;
        };
        #[cfg(not(target_arch = "x86_64"))]
        return;
        #[cfg(target_arch = "x86_64")]
        for seed in 0..12u64 {
            let (w, h) = (30 + seed as u32 * 23 % 90, 6 + seed as u32 * 5 % 30);
            let mut cost = crate::maps::scattered_map(w, h, seed + 7).unwrap();
            for i in 0..cost.grid().len() {
                let c = cost.grid().cell(i);
                if cost.is_walkable(c) {
                    cost.set(c, crate::cost::PLAIN).unwrap();
                }
            }
            let open = walkable_cells(&cost);
            if open.is_empty() {
                continue;
            }
            let mut next = xorshift(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
            let (n, base, spread) = if seed % 2 == 0 {
                (3, 150_000, 50_000)
            } else {
                (30, 0, 40)
            };
            let seeds: Vec<(UVec2, u32)> = (0..n)
                .map(|_| {
                    let c = open[(next() % open.len() as u64) as usize];
                    (c, base + (next() % spread) as u32)
                })
                .collect();
            let mut b = IntegrationBuilder::new();
            b.build_seeded(&cost, &seeds, CostModel::TenFourteen)
                .unwrap();
            let kind = b.field_kind();
            assert!(kind.plain && kind.exact, "seed {seed}");
            let plain = plain_arrows(&b);
            let (w, h, pw) = (w as usize, h as usize, b.padded_width);
            let whole = |y: usize| (y, 1, w);
            let orders: [Vec<(usize, usize, usize)>; 4] = [
                (1..=h).map(whole).collect(),
                (1..=h).rev().map(whole).collect(),
                (1..=h)
                    .step_by(2)
                    .chain((2..=h).step_by(2))
                    .chain([1, 2, 3])
                    .map(whole)
                    .collect(),
                (1..=h)
                    .flat_map(|y| {
                        let part = (y, 2 + y % 5, w - y % 3);
                        if y % 3 == 0 {
                            vec![part, whole(y)]
                        } else {
                            vec![whole(y)]
                        }
                    })
                    .collect(),
            ];
            for (k, order) in orders.iter().enumerate() {
                let mut got = vec![0u8; w * h];
                avx2.derive_spans(
                    &b.costs,
                    &b.dist,
                    pw,
                    kind,
                    &mut got,
                    0,
                    order.iter().copied(),
                );
                assert_eq!(got, plain, "seed {seed}, order {k}");
            }
        }
    }

    #[test]
    fn a_footprint_covering_much_of_the_map_goes_by_whole_rows_with_the_same_bytes() {
        // A map walled across its middle, the goal above: the footprint is the upper half
        // (small), its spans half the map's cells. Then a goal below, and one above again: the
        // bytes outside each footprint come back to the terrain's.
        let (w, h) = (70u32, 40u32);
        let mut cost = CostField::new(Grid::new(w, h).unwrap());
        for x in 0..w {
            cost.set(UVec2::new(x, h / 2), WALL).unwrap();
        }
        cost.set(UVec2::new(9, 7), WALL).unwrap();
        let mut b = IntegrationBuilder::new();
        let mut flow = FlowField::new(*cost.grid());
        for goal in [(5, 5), (5, 5), (60, 30), (33, 2)] {
            let field = b
                .build(&cost, &[UVec2::new(goal.0, goal.1)], CostModel::TenFourteen)
                .unwrap();
            assert!(b.written_spans().is_some(), "{goal:?}");
            let covered = b.written_cells();
            let cells = (w * h) as usize;
            assert!(covered * 3 >= cells && covered * 3 < cells * 2, "{covered}");
            #[cfg(target_arch = "x86_64")]
            if crate::simd::cpu().avx2.is_some() {
                let kind = b.field_kind();
                assert!(whole_rows_pay(kind, covered, w as usize, h as usize));
            }
            b.flow_into(&mut flow).unwrap();
            assert_eq!(flow.bytes(), &plain_arrows(&b)[..], "{goal:?}");
            assert_eq!(flow, FlowField::from_integration(&cost, &field).unwrap());
        }
    }

    #[test]
    fn the_narrow_kernel_for_plain_ground_gives_the_general_kernels_arrows() {
        // Built fields over plain ground (10-14 model) with walls: one goal, several, many seeds
        // with small values of their own, or seeds with values up to past the 16-bit kernel's
        // limit (blocks of both kernels in one row), the sweeps on and off, and an island in rock (a small footprint, INF
        // beyond it): the builder's arrows and the AVX2 kernel's equal the general plain
        // kernel's.
        for seed in 0..25u64 {
            let (w, h) = (17 + seed as u32 * 13 % 80, 9 + seed as u32 * 7 % 40);
            let mut cost = crate::maps::scattered_map(w, h, seed).unwrap();
            if seed == 24 {
                // By hand: a seed of value 14 diagonally past a wall corner from one of 0 (a
                // sink: the diagonal is barred), and two seeds of 0 side by side (sinks too,
                // their values below a step).
                cost = CostField::new(Grid::new(24, 4).unwrap());
                cost.set(UVec2::new(3, 2), WALL).unwrap();
                let seeds = [(3, 1, 0), (4, 2, 14), (20, 1, 0), (21, 1, 0)];
                let seeds = seeds.map(|(x, y, v)| (UVec2::new(x, y), v));
                let mut b = IntegrationBuilder::new();
                b.build_seeded(&cost, &seeds, CostModel::TenFourteen)
                    .unwrap();
                let mut flow = FlowField::new(*cost.grid());
                b.flow_into(&mut flow).unwrap();
                for (c, _) in seeds {
                    assert_eq!(flow.byte(c), Some(FLOW_GOAL), "{c}");
                }
                assert_eq!(flow.bytes(), &plain_arrows(&b)[..]);
                continue;
            }
            let mut next = xorshift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            for i in 0..cost.grid().len() {
                let c = cost.grid().cell(i);
                let rock = seed % 6 == 5 && (c.x < w / 3 || c.y < h / 3 || c.y > h - h / 4);
                // One map in six walled across its middle, the goals above: ground below it
                // that no value reaches, whole blocks of it.
                let walled = seed % 6 == 4 && c.y == h / 2;
                let cell = if rock || walled {
                    WALL
                } else {
                    crate::cost::PLAIN
                };
                if cost.is_walkable(c) || rock || walled {
                    cost.set(c, cell).unwrap();
                }
            }
            let mut open = walkable_cells(&cost);
            if seed % 6 == 4 {
                open.retain(|c| c.y < h / 2);
            }
            if open.is_empty() {
                continue;
            }
            let pick = |k: u64| open[(k % open.len() as u64) as usize];
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(seed % 4 != 1);
            // Built twice: the second build over a map may take other ways (see the sweeps).
            for _ in 0..2 {
                if seed % 3 != 0 {
                    // Values up to past the limit, or many small ones (ties next to walls,
                    // where the corner rule decides).
                    let (n, base, spread) = if seed % 3 == 2 {
                        (4, 31_000, 3_000)
                    } else {
                        (40, 0, 60)
                    };
                    let seeds: Vec<(UVec2, u32)> = (0..n)
                        .map(|k| (pick(next() + k), base + (next() % spread) as u32))
                        .collect();
                    b.build_seeded(&cost, &seeds, CostModel::TenFourteen)
                        .unwrap();
                } else {
                    let goals: Vec<UVec2> = (0..1 + seed % 3).map(|_| pick(next())).collect();
                    b.build(&cost, &goals, CostModel::TenFourteen).unwrap();
                }
            }
            let kind = b.field_kind();
            assert!(kind.plain && kind.exact, "seed {seed}");
            let mut flow = FlowField::new(*cost.grid());
            b.flow_into(&mut flow).unwrap();
            let plain = plain_arrows(&b);
            assert_eq!(flow.bytes(), &plain[..], "seed {seed}");
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = crate::simd::under_test::avx2() {
                let rows = || (1..=b.height).map(|y| (y, 1, b.width));
                let mut narrow = vec![0u8; plain.len()];
                let pw = b.padded_width;
                avx2.derive_spans(&b.costs, &b.dist, pw, kind, &mut narrow, 0, rows());
                assert_eq!(narrow, plain, "AVX2, seed {seed}");
            }
        }
    }

    #[test]
    fn vectorised_and_plain_kernels_agree() {
        // Random terrain, walls and values (including unreachable cells), padded as the builder
        // pads them; the dispatching kernel (AVX2 where the CPU has it, bands of rows on two
        // threads for the large map) against the plain one.
        // (The large map, for the bands on threads, is left out under Miri: hours there.)
        let sizes: &[(usize, usize)] = if cfg!(miri) {
            &[(37, 23), (8, 5), (15, 9), (16, 4)]
        } else {
            &[
                (37, 23),
                (600, 460),
                (8, 5),
                (15, 9),
                (16, 4),
                (47, 31),
                (90, 20),
            ]
        };
        #[cfg(feature = "parallel")]
        let two_threads = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for &(w, h) in sizes {
            let pw = w + 2;
            // On the widest small map, bands of columns the wave never reached (whole blocks of
            // the vector kernels without a value).
            let reached = |x: usize| w != 90 || (x / 20) % 2 == 1;
            let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
            // No value as UNREACHABLE (the wave's), or also as the sweeps' INF (beyond their
            // footprint, UNREACHABLE within it).
            for (model, none) in [
                (CostModel::TenFourteen, UNREACHABLE),
                (CostModel::Octile, UNREACHABLE),
                (CostModel::TenFourteen, INF),
            ] {
                let mut costs = vec![WALL; pw * (h + 2)];
                let mut dist = vec![none; pw * (h + 2)];
                for y in 1..=h {
                    for x in 1..=w {
                        let r = next();
                        if r.is_multiple_of(3) {
                            dist[y * pw + x] = UNREACHABLE;
                        }
                        if !r.is_multiple_of(6) {
                            costs[y * pw + x] = if r.is_multiple_of(5) {
                                1 + (r >> 40) as u8 % 254
                            } else {
                                1 + (r >> 8) as u8 % 9
                            };
                            if !r.is_multiple_of(13) && reached(x) {
                                dist[y * pw + x] = (r >> 20) as u32 % 5000;
                            }
                            // Values next to the top of the range, where steps saturate.
                            if r.is_multiple_of(17) && reached(x) {
                                dist[y * pw + x] = none - 1 - (r >> 30) as u32 % 3000;
                            }
                        }
                    }
                }
                let mut fast = vec![0u8; w * h];
                let mut plain = vec![0u8; w * h];
                // Random values, not a built field's: the general kernels.
                let kind = FieldKind {
                    model,
                    none,
                    exact: false,
                    plain: false,
                };
                #[cfg(feature = "parallel")]
                two_threads.install(|| derive(&costs, &dist, pw, kind, &mut fast));
                #[cfg(not(feature = "parallel"))]
                derive(&costs, &dist, pw, kind, &mut fast);
                derive_rows(&costs, &dist, pw, model, none, &mut plain, 0);
                assert_eq!(fast, plain);
                let rows = || (1..=h).map(|y| (y, 1, w));
                // Each vector kernel the CPU has, whichever the dispatch picks.
                #[cfg(target_arch = "x86_64")]
                {
                    if let Some(avx2) = crate::simd::under_test::avx2() {
                        let mut eight = vec![0u8; w * h];
                        avx2.derive_spans(&costs, &dist, pw, kind, &mut eight, 0, rows());
                        assert_eq!(eight, plain);
                    }
                    if let Some(avx512) = crate::simd::under_test::avx512() {
                        let mut sixteen = vec![0u8; w * h];
                        let out = &mut sixteen;
                        avx512.derive_spans(&costs, &dist, pw, kind, out, 0, rows());
                        assert_eq!(sixteen, plain);
                    }
                }
            }
        }
    }

    /// `plain` with the cells of `spans` (padded row, first and last padded column, on a map `w`
    /// wide) spoiled, for a kernel to write again.
    fn scrambled_over(
        plain: &[u8],
        w: usize,
        spans: impl Iterator<Item = (usize, usize, usize)>,
    ) -> Vec<u8> {
        let mut out = plain.to_vec();
        for (y, a, last) in spans {
            out[(y - 1) * w + a - 1..(y - 1) * w + last].fill(0xAA);
        }
        out
    }

    #[test]
    fn short_spans_grow_to_a_block_and_keep_the_plain_kernels_bytes() {
        assert_eq!(at_least((3, 5, 9), 16, 100), (3, 5, 20));
        assert_eq!(at_least((3, 90, 95), 16, 100), (3, 85, 100));
        assert_eq!(at_least((3, 5, 30), 16, 100), (3, 5, 30));
        assert_eq!(at_least((3, 2, 4), 16, 10), (3, 2, 4));
        // Rock with an island of plain ground and a wall here and there, built by the wave:
        // the footprint's spans cut in pieces of five cells, which the kernels for plain
        // ground grow to their blocks. Every cell they write gets the plain kernel's byte.
        let (w, h) = (100u32, 60u32);
        let mut cost = CostField::new(Grid::new(w, h).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::new(w - 1, h - 1), WALL)
            .unwrap();
        cost.fill_rect(UVec2::new(20, 10), UVec2::new(70, 50), 1)
            .unwrap();
        for k in 0..200u32 {
            cost.set(UVec2::new(20 + k * 7 % 51, 10 + k * 13 % 41), WALL)
                .unwrap();
        }
        let goal = UVec2::new(45, 31);
        cost.set(goal, 1).unwrap();
        let model = CostModel::TenFourteen;
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        b.build(&cost, &[goal], model).unwrap();
        let pieces = || {
            b.touched_spans()
                .expect("a footprint of at most two thirds of the map")
                .flat_map(|(y, a, last)| {
                    (a..=last)
                        .step_by(5)
                        .map(move |x| (y, x, (x + 4).min(last)))
                })
        };
        let (pw, n) = (b.padded_width, (w * h) as usize);
        let mut plain = vec![0u8; n];
        derive_rows(&b.costs, &b.dist, pw, model, b.no_value(), &mut plain, 0);
        let scrambled = || scrambled_over(&plain, w as usize, pieces());
        let mut dispatched = scrambled();
        let kind = b.field_kind();
        derive_over(&b.costs, &b.dist, pw, kind, &mut dispatched, 0, pieces());
        assert_eq!(dispatched, plain);
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = crate::simd::under_test::avx2() {
            let mut eight = scrambled();
            avx2.derive_spans(&b.costs, &b.dist, pw, kind, &mut eight, 0, pieces());
            assert_eq!(eight, plain);
        }
    }

    #[test]
    fn kernels_over_a_waves_footprint_equal_the_whole_map_kernel() {
        // Rock with an island of random terrain, built by the wave: the arrows derived over the
        // footprint alone (every kernel the CPU has) equal the plain kernel over the whole map.
        let (w, h) = (120u32, 90u32);
        let mut cost = CostField::new(Grid::new(w, h).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::new(w - 1, h - 1), WALL)
            .unwrap();
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for y in 30..55 {
            for x in 41..77 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let t = if s.is_multiple_of(7) {
                    WALL
                } else {
                    1 + (s >> 20) as u8 % 6
                };
                cost.set(UVec2::new(x, y), t).unwrap();
            }
        }
        cost.set(UVec2::new(60, 40), 1).unwrap();
        for model in [CostModel::TenFourteen, CostModel::Octile] {
            let mut b = IntegrationBuilder::new();
            b.set_sweeps(false);
            b.build(&cost, &[UVec2::new(60, 40)], model).unwrap();
            let spans = || {
                b.touched_spans()
                    .expect("a footprint of at most two thirds of the map")
            };
            let (pw, n) = (b.padded_width, (w * h) as usize);
            let mut plain = vec![0u8; n];
            let none = b.no_value();
            derive_rows(&b.costs, &b.dist, pw, model, none, &mut plain, 0);
            let mut dispatched = vec![0xAAu8; n];
            fill_from_terrain(&b.costs, pw, &mut dispatched);
            derive_over(
                &b.costs,
                &b.dist,
                pw,
                b.field_kind(),
                &mut dispatched,
                0,
                spans(),
            );
            assert_eq!(dispatched, plain);
            // Each kernel writes the footprint's cells (and any others it writes, their own
            // bytes).
            let scrambled = || scrambled_over(&plain, w as usize, spans());
            let mut one = scrambled();
            let field = (&b.costs[..], &b.dist[..], pw, b.field_kind());
            derive_spans_with(field, &mut one, 0, spans(), derive_row, |_| {});
            assert_eq!(one, plain);
            #[cfg(target_arch = "x86_64")]
            {
                if let Some(avx2) = crate::simd::under_test::avx2() {
                    let mut eight = scrambled();
                    let out = &mut eight;
                    avx2.derive_spans(&b.costs, &b.dist, pw, b.field_kind(), out, 0, spans());
                    assert_eq!(eight, plain);
                }
                if let Some(avx512) = crate::simd::under_test::avx512() {
                    let mut sixteen = scrambled();
                    let out = &mut sixteen;
                    avx512.derive_spans(&b.costs, &b.dist, pw, b.field_kind(), out, 0, spans());
                    assert_eq!(sixteen, plain);
                }
            }
        }
    }

    #[test]
    fn a_flow_field_written_again_rewrites_only_what_either_footprint_holds() {
        use crate::{CostField, CostModel, Grid, IntegrationBuilder, WALL};
        // A map of rock with two parts that do not meet: a winding corridor at the top left
        // and a room at the bottom right, so that each wave's footprint is small and the two
        // parts' footprints share no block.
        let mut cost = CostField::new(Grid::new(160, 160).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::splat(159), WALL)
            .unwrap();
        for (k, y) in (2..=38).step_by(4).enumerate() {
            cost.fill_rect(UVec2::new(2, y), UVec2::new(60, y), 1)
                .unwrap();
            let x = if k % 2 == 0 { 60 } else { 2 };
            if y < 38 {
                cost.fill_rect(UVec2::new(x, y), UVec2::new(x, y + 4), 1)
                    .unwrap();
            }
        }
        cost.fill_rect(UVec2::new(100, 100), UVec2::new(140, 140), 3)
            .unwrap();
        let (a, b, c) = (UVec2::new(2, 2), UVec2::new(120, 120), UVec2::new(60, 38));
        let m = CostModel::TenFourteen;
        let mut builder = IntegrationBuilder::new();
        let mut field = IntegrationField::new(*cost.grid(), m);
        let mut flow = FlowField::new(*cost.grid());
        let check = |builder: &IntegrationBuilder,
                     cost: &CostField,
                     field: &IntegrationField,
                     flow: &FlowField,
                     step: &str| {
            assert_eq!(
                *flow,
                FlowField::from_integration(cost, field).unwrap(),
                "{step}"
            );
            // The footprint was used: the next build over this map may rely on it.
            assert_eq!(flow.footprint_of, cost.version(), "{step}");
            assert_eq!(flow.footprint, builder.touched(), "{step}");
        };
        for (k, goal) in [a, a, b, a, c, b, b].into_iter().enumerate() {
            builder.build_into(&cost, &[goal], m, &mut field).unwrap();
            builder.flow_into(&mut flow).unwrap();
            check(&builder, &cost, &field, &flow, &format!("goal {k}"));
        }
        // Bytes written by other means, then a map changed in between: written whole again.
        flow.cells_mut()[161 * 3] = 0;
        assert_eq!(flow.footprint_of, 0);
        builder.build_into(&cost, &[a], m, &mut field).unwrap();
        builder.flow_into(&mut flow).unwrap();
        check(&builder, &cost, &field, &flow, "after a write");
        cost.set(UVec2::new(3, 2), WALL).unwrap();
        builder.build_into(&cost, &[b], m, &mut field).unwrap();
        builder.flow_into(&mut flow).unwrap();
        check(&builder, &cost, &field, &flow, "after an edit");
        // Another builder over the same map takes the footprint this field carries.
        let mut other = IntegrationBuilder::new();
        other.build_into(&cost, &[a], m, &mut field).unwrap();
        other.flow_into(&mut flow).unwrap();
        check(&other, &cost, &field, &flow, "another builder");
    }

    #[test]
    fn needs_a_built_integration_field() {
        let b = IntegrationBuilder::new();
        let mut f = FlowField::new(Grid::new(2, 2).unwrap());
        assert_eq!(b.flow_into(&mut f), Err(FlowError::NoIntegration));
    }
}
