//! The first layer: what each cell costs to walk through, and how a step is priced.

use glam::{UVec2, Vec2};
use thiserror::Error;

use crate::grid::{Dir8, Grid, GridError};

/// Terrain cost of a wall: no unit may enter or leave the cell.
pub const WALL: u8 = 255;
/// Terrain cost of plain ground.
pub const PLAIN: u8 = 1;

/// Why a cost edit was refused. Nothing is changed when an edit is refused.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum CostError {
    /// The cell or rectangle lies (partly) outside the grid.
    #[error(transparent)]
    Grid(#[from] GridError),
    /// Cost 0 would make steps free and the fields meaningless; walkable costs are 1..=254.
    #[error("cost 0 at cell ({x}, {y}) is not allowed: use 1..=254 for terrain or 255 for a wall")]
    ZeroCost { x: u32, y: u32 },
    /// A cost vector whose length is not `width * height`.
    #[error("cost vector has {got} entries but the {width}x{height} grid has {expected} cells")]
    WrongLength {
        width: u32,
        height: u32,
        expected: usize,
        got: usize,
    },
    /// A rectangle whose corners are the wrong way round.
    #[error("rectangle ({x0}, {y0})..=({x1}, {y1}) has its corners the wrong way round")]
    InvertedRect { x0: u32, y0: u32, x1: u32, y1: u32 },
    /// A clearance radius that is not a finite number, 0 or above, or is too large.
    #[error("clearance radius {0} is not allowed: use a finite number from 0 to 64 cells")]
    BadRadius(f32),
    /// A shape that cannot be stamped (NaN coordinates, negative radius, non-convex polygon…).
    #[error("shape {index} cannot be stamped: {reason}")]
    BadShape { index: usize, reason: String },
}

/// How a step between two cells is priced. A step always costs its base cost times the terrain
/// cost of the cell the unit steps *from*.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CostModel {
    /// The classic integer costs: 10 straight, 14 diagonal. Values are reported as those
    /// integers.
    #[default]
    TenFourteen,
    /// 1 straight and √2 diagonal (the Moving AI convention), held in fixed point:
    /// `1 = 13860` units and `√2 = 19601` units (a convergent of √2, so a diagonal is off by
    /// under 2e-9 of its length). Values are reported in cost units (raw / 13860).
    Octile,
}

// The vector kernels (integration sweeps, flow arrows) multiply base costs by terrain with a
// 16-bit multiply-add, so every base must stay below 2^15.
const _: () = assert!(CostModel::TenFourteen.diagonal() < 1 << 15);
const _: () = assert!(CostModel::Octile.diagonal() < 1 << 15);

impl CostModel {
    /// Raw units per unit of cost: 1 for [`CostModel::TenFourteen`], 13860 for octile.
    pub const fn scale(self) -> u32 {
        match self {
            CostModel::TenFourteen => 1,
            CostModel::Octile => 13_860,
        }
    }
    /// Raw base cost of a straight step on plain ground.
    pub const fn straight(self) -> u32 {
        match self {
            CostModel::TenFourteen => 10,
            CostModel::Octile => 13_860,
        }
    }
    /// Raw base cost of a diagonal step on plain ground.
    pub const fn diagonal(self) -> u32 {
        match self {
            CostModel::TenFourteen => 14,
            CostModel::Octile => 19_601,
        }
    }
    /// Raw base costs indexed by direction number.
    pub const fn base_costs(self) -> [u32; 8] {
        let s = self.straight();
        let d = self.diagonal();
        [s, d, s, d, s, d, s, d]
    }
    /// Raw cost of one step in direction `dir` from a cell of terrain cost `terrain`.
    pub const fn step(self, dir: Dir8, terrain: u8) -> u32 {
        let base = if dir.is_diagonal() {
            self.diagonal()
        } else {
            self.straight()
        };
        base * terrain as u32
    }
    /// A raw value in cost units (`raw / scale`).
    pub fn to_cost(self, raw: u32) -> f64 {
        raw as f64 / self.scale() as f64
    }
    /// Lower bound of the raw cost between two cells `dx`, `dy` apart on plain ground
    /// (the octile distance): admissible and consistent for A*.
    pub const fn heuristic(self, dx: u32, dy: u32) -> u32 {
        let (lo, hi) = if dx < dy { (dx, dy) } else { (dy, dx) };
        self.straight() * (hi - lo) + self.diagonal() * lo
    }
    /// The name used on the command line: `10-14` or `octile`.
    pub const fn name(self) -> &'static str {
        match self {
            CostModel::TenFourteen => "10-14",
            CostModel::Octile => "octile",
        }
    }
}

impl std::str::FromStr for CostModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "10-14" | "10/14" | "tenfourteen" => Ok(CostModel::TenFourteen),
            "octile" => Ok(CostModel::Octile),
            _ => Err(format!("unknown cost model '{s}': use 10-14 or octile")),
        }
    }
}

/// A world-space obstacle or terrain patch to stamp into a [`CostField`].
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Axis-aligned box between two corners.
    Box { min: Vec2, max: Vec2 },
    /// Disc.
    Circle { center: Vec2, radius: f32 },
    /// Convex polygon, vertices in either winding order.
    ConvexPolygon(Vec<Vec2>),
}

impl Shape {
    fn validate(&self) -> Result<(), String> {
        match self {
            Shape::Box { min, max } => {
                if !min.is_finite() || !max.is_finite() {
                    return Err("box corner is not finite".into());
                }
                if min.x > max.x || min.y > max.y {
                    return Err(format!("box min {min} is above max {max}"));
                }
            }
            Shape::Circle { center, radius } => {
                if !center.is_finite() || !radius.is_finite() || *radius < 0.0 {
                    return Err(format!(
                        "circle at {center} with radius {radius} is not valid"
                    ));
                }
            }
            Shape::ConvexPolygon(pts) => {
                if pts.len() < 3 {
                    return Err(format!("polygon has {} vertices, needs 3", pts.len()));
                }
                if pts.iter().any(|p| !p.is_finite()) {
                    return Err("polygon vertex is not finite".into());
                }
                let mut sign = 0.0f32;
                for i in 0..pts.len() {
                    let a = pts[i];
                    let b = pts[(i + 1) % pts.len()];
                    let c = pts[(i + 2) % pts.len()];
                    let cross = (b - a).perp_dot(c - b);
                    if cross != 0.0 {
                        if sign != 0.0 && cross.signum() != sign {
                            return Err("polygon is not convex".into());
                        }
                        sign = cross.signum();
                    }
                }
                if sign == 0.0 {
                    return Err("polygon has no area".into());
                }
            }
        }
        Ok(())
    }

    fn bounds(&self) -> (Vec2, Vec2) {
        match self {
            Shape::Box { min, max } => (*min, *max),
            Shape::Circle { center, radius } => (*center - *radius, *center + *radius),
            Shape::ConvexPolygon(pts) => pts.iter().fold(
                (Vec2::splat(f32::INFINITY), Vec2::splat(f32::NEG_INFINITY)),
                |(lo, hi), p| (lo.min(*p), hi.max(*p)),
            ),
        }
    }

    /// Whether the shape overlaps the open square `lo..hi`.
    fn overlaps(&self, lo: Vec2, hi: Vec2) -> bool {
        match self {
            Shape::Box { min, max } => min.x < hi.x && max.x > lo.x && min.y < hi.y && max.y > lo.y,
            Shape::Circle { center, radius } => {
                let nearest = center.clamp(lo, hi);
                nearest.distance_squared(*center) < radius * radius
            }
            Shape::ConvexPolygon(pts) => {
                let (plo, phi) = self.bounds();
                if !(plo.x < hi.x && phi.x > lo.x && plo.y < hi.y && phi.y > lo.y) {
                    return false;
                }
                // Separating axis theorem: the box axes are covered by the bounds test above,
                // so only the polygon's edge normals remain.
                let corners = [lo, Vec2::new(hi.x, lo.y), hi, Vec2::new(lo.x, hi.y)];
                for i in 0..pts.len() {
                    let a = pts[i];
                    let axis = (pts[(i + 1) % pts.len()] - a).perp();
                    let (mut pmin, mut pmax) = (f32::INFINITY, f32::NEG_INFINITY);
                    for p in pts {
                        let v = axis.dot(*p - a);
                        pmin = pmin.min(v);
                        pmax = pmax.max(v);
                    }
                    let (mut bmin, mut bmax) = (f32::INFINITY, f32::NEG_INFINITY);
                    for c in corners {
                        let v = axis.dot(c - a);
                        bmin = bmin.min(v);
                        bmax = bmax.max(v);
                    }
                    if pmax <= bmin || bmax <= pmin {
                        return false;
                    }
                }
                true
            }
        }
    }
}

/// Offsets of the cells whose square lies closer than `radius` to a cell's centre.
fn inflation_offsets(radius: f32) -> Vec<(i64, i64)> {
    let reach = radius.ceil() as i64;
    let mut offsets = Vec::new();
    for dy in -reach..=reach {
        for dx in -reach..=reach {
            let gx = (dx.abs() as f32 - 0.5).max(0.0);
            let gy = (dy.abs() as f32 - 0.5).max(0.0);
            if (dx, dy) != (0, 0) && gx * gx + gy * gy < radius * radius {
                offsets.push((dx, dy));
            }
        }
    }
    offsets
}

/// One change to a [`CostField`], for [`CostField::apply_edits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostEdit {
    /// Set one cell.
    Cell {
        /// The cell.
        cell: UVec2,
        /// Its new cost (1..=254 terrain, 255 wall).
        cost: u8,
    },
    /// Fill a rectangle, both corners inclusive (a building stamped or removed).
    Rect {
        /// Top-left corner.
        min: UVec2,
        /// Bottom-right corner (inclusive).
        max: UVec2,
        /// The new cost of every cell in it.
        cost: u8,
    },
}

/// Terrain cost of every cell: 1 = plain ground, 2..=254 = that many times slower, 255 = wall.
///
/// Memory: 1 byte per cell (16 KiB for 128 × 128), in one flat `Vec<u8>` indexed `y * width + x`,
/// and 8 bytes of version.
#[derive(Debug, Clone)]
pub struct CostField {
    grid: Grid,
    costs: Vec<u8>,
    /// A number no other field's costs have had (a clone shares it with its original until
    /// either changes): a builder that saw this version last knows the map unchanged without
    /// comparing it byte by byte.
    version: u64,
}

/// The next [`CostField`] version; 0 is never handed out.
static NEXT_VERSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_version() -> u64 {
    NEXT_VERSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Two fields are equal when their grids and costs are; versions say nothing of content.
impl PartialEq for CostField {
    fn eq(&self, other: &CostField) -> bool {
        self.grid == other.grid && self.costs == other.costs
    }
}

impl Eq for CostField {}

impl CostField {
    /// A field of plain ground.
    ///
    /// ```
    /// let field = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// assert_eq!(field.get(glam::UVec2::new(3, 3)), Some(1));
    /// ```
    pub fn new(grid: Grid) -> CostField {
        CostField {
            costs: vec![PLAIN; grid.len()],
            grid,
            version: next_version(),
        }
    }

    /// A field from a flat vector of costs indexed `y * width + x`. O(cells).
    ///
    /// ```
    /// let grid = horde::Grid::new(2, 1).unwrap();
    /// assert!(horde::CostField::from_costs(grid, vec![1, 255]).is_ok());
    /// assert!(horde::CostField::from_costs(grid, vec![1, 0]).is_err());
    /// ```
    pub fn from_costs(grid: Grid, costs: Vec<u8>) -> Result<CostField, CostError> {
        if costs.len() != grid.len() {
            return Err(CostError::WrongLength {
                width: grid.width(),
                height: grid.height(),
                expected: grid.len(),
                got: costs.len(),
            });
        }
        if let Some(i) = costs.iter().position(|&c| c == 0) {
            let c = grid.cell(i);
            return Err(CostError::ZeroCost { x: c.x, y: c.y });
        }
        Ok(CostField {
            grid,
            costs,
            version: next_version(),
        })
    }

    /// This field's version: another number after every change to its costs (see the field's
    /// documentation), never 0.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// The grid this field covers.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }
    /// Columns.
    pub fn width(&self) -> u32 {
        self.grid.width()
    }
    /// Rows.
    pub fn height(&self) -> u32 {
        self.grid.height()
    }
    /// All costs, indexed `y * width + x`.
    pub fn costs(&self) -> &[u8] {
        &self.costs
    }

    /// The cost of a cell, or `None` outside the grid.
    pub fn get(&self, cell: UVec2) -> Option<u8> {
        self.grid.index(cell).ok().map(|i| self.costs[i])
    }

    /// True if the cell is on the grid and not a wall.
    pub fn is_walkable(&self, cell: UVec2) -> bool {
        self.get(cell).is_some_and(|c| c != WALL)
    }

    /// The walkable cell nearest `target` (a cell, which may lie off the grid): the least
    /// squared Euclidean distance between cell coordinates, ties going to the lower row, then
    /// the lower column. `None` if the map has no walkable cell.
    ///
    /// Searches square rings round `target` outwards and stops once no ring can hold a nearer
    /// cell: O(r²) for a nearest cell `r` cells away, O(cells) at most.
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, Grid, WALL};
    ///
    /// let mut cost = CostField::new(Grid::new(9, 9)?);
    /// cost.fill_rect(UVec2::new(2, 2), UVec2::new(6, 6), WALL)?;
    /// // The middle is walled in a 5 × 5 block: (4, 1) and (1, 4) are both 3 away; row 1 wins.
    /// assert_eq!(cost.nearest_walkable(UVec2::new(4, 4)), Some(UVec2::new(4, 1)));
    /// assert_eq!(cost.nearest_walkable(UVec2::new(0, 0)), Some(UVec2::new(0, 0)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn nearest_walkable(&self, target: UVec2) -> Option<UVec2> {
        let (w, h) = (self.grid.width() as i64, self.grid.height() as i64);
        let (tx, ty) = (target.x as i64, target.y as i64);
        // Up to 2^65 for a target far off the grid: summed in 128 bits.
        let distance2 = |x: i64, y: i64| ((x - tx) as i128).pow(2) + ((y - ty) as i128).pow(2);
        let mut best: Option<(i128, i64, i64)> = None;
        // Rings from the first that touches the grid, until the ring's nearest possible cell
        // is further than the best found, or the ring lies wholly beyond the grid.
        let first = (tx - (w - 1)).max(ty - (h - 1)).max(0);
        let reach = (tx.max(w - 1 - tx)).max(ty.max(h - 1 - ty));
        for d in first..=reach {
            if best.is_some_and(|(b, _, _)| b < (d as i128) * (d as i128)) {
                break;
            }
            let (y0, y1) = ((ty - d).max(0), (ty + d).min(h - 1));
            for y in y0..=y1 {
                // The whole row on the ring's top and bottom edges, the two ends elsewhere.
                let xs: &[i64] = if y == ty - d || y == ty + d {
                    &[]
                } else {
                    &[tx - d, tx + d]
                };
                let mut offer = |x: i64| {
                    if x < 0 || x >= w {
                        return;
                    }
                    if self.costs[(y * w + x) as usize] == WALL {
                        return;
                    }
                    let key = (distance2(x, y), y, x);
                    if best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                };
                if xs.is_empty() {
                    for x in (tx - d).max(0)..=(tx + d).min(w - 1) {
                        offer(x);
                    }
                } else {
                    xs.iter().for_each(|&x| offer(x));
                }
            }
        }
        best.map(|(_, y, x)| UVec2::new(x as u32, y as u32))
    }

    /// Number of cells that are not walls. O(cells).
    pub fn walkable_count(&self) -> usize {
        self.costs.iter().filter(|&&c| c != WALL).count()
    }

    /// Highest walkable cost on the map (1 if there is none). O(cells).
    pub fn max_walkable_cost(&self) -> u8 {
        max_walkable(&self.costs).max(PLAIN)
    }

    /// The corner rule, the one definition every search follows: a unit may step from `cell`
    /// in `dir` when both cells are walkable and, for a diagonal, both cells it passes between
    /// are walkable too. O(1).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, Dir8, Grid};
    /// let mut field = CostField::new(Grid::new(2, 2).unwrap());
    /// assert!(field.can_step(UVec2::new(0, 1), Dir8::NE));
    /// field.set(UVec2::new(0, 0), horde::WALL).unwrap();
    /// assert!(!field.can_step(UVec2::new(0, 1), Dir8::NE)); // would squeeze past a wall corner
    /// ```
    pub fn can_step(&self, cell: UVec2, dir: Dir8) -> bool {
        if !self.is_walkable(cell) {
            return false;
        }
        let Some(to) = self.grid.neighbour(cell, dir) else {
            return false;
        };
        if !self.is_walkable(to) {
            return false;
        }
        match dir.corner_sides() {
            None => true,
            Some((a, b)) => {
                let ca = self
                    .grid
                    .neighbour(cell, a)
                    .expect("side of an on-grid diagonal");
                let cb = self
                    .grid
                    .neighbour(cell, b)
                    .expect("side of an on-grid diagonal");
                self.is_walkable(ca) && self.is_walkable(cb)
            }
        }
    }

    /// Set one cell. O(1).
    pub fn set(&mut self, cell: UVec2, cost: u8) -> Result<(), CostError> {
        let i = self.grid.index(cell)?;
        if cost == 0 {
            return Err(CostError::ZeroCost {
                x: cell.x,
                y: cell.y,
            });
        }
        self.costs[i] = cost;
        self.version = next_version();
        Ok(())
    }

    /// Set many cells in one call; all edits are checked before any is applied. O(edits).
    ///
    /// ```
    /// use glam::UVec2;
    /// let mut field = horde::CostField::new(horde::Grid::new(4, 4).unwrap());
    /// field.set_many(&[(UVec2::new(0, 0), 255), (UVec2::new(1, 0), 7)]).unwrap();
    /// assert!(field.set_many(&[(UVec2::new(2, 0), 3), (UVec2::new(9, 0), 3)]).is_err());
    /// assert_eq!(field.get(UVec2::new(2, 0)), Some(1)); // nothing applied
    /// ```
    pub fn set_many(&mut self, edits: &[(UVec2, u8)]) -> Result<(), CostError> {
        for &(cell, cost) in edits {
            self.grid.index(cell)?;
            if cost == 0 {
                return Err(CostError::ZeroCost {
                    x: cell.x,
                    y: cell.y,
                });
            }
        }
        self.version = next_version();
        for &(cell, cost) in edits {
            let i = self.grid.index(cell)?;
            self.costs[i] = cost;
        }
        Ok(())
    }

    /// Fill the rectangle with corners `min` and `max` (both inclusive). O(area).
    ///
    /// ```
    /// use glam::UVec2;
    /// let mut field = horde::CostField::new(horde::Grid::new(8, 8).unwrap());
    /// field.fill_rect(UVec2::new(2, 2), UVec2::new(3, 4), 255).unwrap();
    /// assert_eq!(field.walkable_count(), 64 - 6);
    /// ```
    pub fn fill_rect(&mut self, min: UVec2, max: UVec2, cost: u8) -> Result<(), CostError> {
        self.check_rect(min, max, cost)?;
        self.version = next_version();
        let w = self.grid.width() as usize;
        for y in min.y..=max.y {
            let row = y as usize * w;
            self.costs[row + min.x as usize..=row + max.x as usize].fill(cost);
        }
        Ok(())
    }

    /// The checks of a rectangle edit (a cell is a rectangle of one): corners the right way
    /// round, both on the map, and a cost other than 0.
    fn check_rect(&self, min: UVec2, max: UVec2, cost: u8) -> Result<(), CostError> {
        if min.x > max.x || min.y > max.y {
            return Err(CostError::InvertedRect {
                x0: min.x,
                y0: min.y,
                x1: max.x,
                y1: max.y,
            });
        }
        self.grid.index(min)?;
        self.grid.index(max)?;
        if cost == 0 {
            return Err(CostError::ZeroCost { x: min.x, y: min.y });
        }
        Ok(())
    }

    /// Apply edits in order and return every cell whose cost actually changed (each once, in
    /// row-major order) — the list that [`LiveField::repair`](crate::LiveField::repair) and
    /// [`FieldCache::apply_edits`](crate::FieldCache::apply_edits) need. All edits are checked
    /// before any is applied. O(edited area + changed cells × log).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostEdit, CostField, Grid, WALL};
    /// let mut field = CostField::new(Grid::new(8, 8).unwrap());
    /// field.set(UVec2::new(2, 2), WALL).unwrap();
    /// let changed = field.apply_edits(&[
    ///     CostEdit::Rect { min: UVec2::new(1, 1), max: UVec2::new(2, 2), cost: WALL },
    ///     CostEdit::Cell { cell: UVec2::new(1, 1), cost: 1 }, // back as it was
    /// ]).unwrap();
    /// assert_eq!(changed, vec![UVec2::new(2, 1), UVec2::new(1, 2)]);
    /// ```
    pub fn apply_edits(&mut self, edits: &[CostEdit]) -> Result<Vec<UVec2>, CostError> {
        for edit in edits {
            match *edit {
                CostEdit::Cell { cell, cost } => self.check_rect(cell, cell, cost)?,
                CostEdit::Rect { min, max, cost } => self.check_rect(min, max, cost)?,
            }
        }
        // Remember the first old cost of every touched cell; a cell counts as changed when its
        // final cost differs from that.
        self.version = next_version();
        let w = self.grid.width() as usize;
        let mut before: Vec<(u32, u8)> = Vec::new();
        for edit in edits {
            let (min, max, cost) = match *edit {
                CostEdit::Cell { cell, cost } => (cell, cell, cost),
                CostEdit::Rect { min, max, cost } => (min, max, cost),
            };
            for y in min.y as usize..=max.y as usize {
                for x in min.x as usize..=max.x as usize {
                    let i = y * w + x;
                    before.push((i as u32, self.costs[i]));
                    self.costs[i] = cost;
                }
            }
        }
        // A stable sort keeps each cell's first (oldest) cost first.
        before.sort_by_key(|&(i, _)| i);
        before.dedup_by_key(|&mut (i, _)| i);
        Ok(before
            .into_iter()
            .filter(|&(i, old)| self.costs[i as usize] != old)
            .map(|(i, _)| self.grid.cell(i as usize))
            .collect())
    }

    /// The field for agents of radius `radius` (in cells): every walkable cell whose centre is
    /// closer than `radius` to a wall cell or to the map's edge becomes a wall, so a field built
    /// on it never routes a big unit through a gap it cannot fit; terrain costs are kept.
    /// Build one per size class and share it among the class. O(cells × radius²).
    ///
    /// ```
    /// use glam::UVec2;
    /// use horde::{CostField, Grid, WALL};
    /// let mut cost = CostField::new(Grid::new(7, 7).unwrap());
    /// cost.set(UVec2::new(3, 3), WALL).unwrap();
    /// let big = cost.inflated(0.9).unwrap();
    /// assert_eq!(big.get(UVec2::new(3, 2)), Some(WALL)); // 0.5 from the wall
    /// assert_eq!(big.get(UVec2::new(3, 1)), Some(1)); // 1.5 from it, and 1.5 from the edge
    /// assert_eq!(big.get(UVec2::new(0, 3)), Some(WALL)); // 0.5 from the edge
    /// ```
    pub fn inflated(&self, radius: f32) -> Result<CostField, CostError> {
        if !(radius.is_finite() && (0.0..=64.0).contains(&radius)) {
            return Err(CostError::BadRadius(radius));
        }
        let offsets = inflation_offsets(radius);
        let mut costs = self.costs.clone();
        let w = self.width() as usize;
        for (i, c) in costs.iter_mut().enumerate() {
            *c = self.inflated_cost(&offsets, i % w, i / w);
        }
        Ok(CostField {
            grid: self.grid,
            costs,
            version: next_version(),
        })
    }

    /// Bring `inflated` (this field inflated by `radius`, before the cells in `changed` changed)
    /// up to date, and return the cells of `inflated` that changed. O(changed bounding box grown
    /// by the radius × radius²).
    pub(crate) fn reinflate(
        &self,
        radius: f32,
        changed: &[UVec2],
        inflated: &mut CostField,
    ) -> Vec<UVec2> {
        let mut out = Vec::new();
        let Some(first) = changed.first() else {
            return out;
        };
        let (mut lo, mut hi) = (*first, *first);
        for &c in changed {
            lo = lo.min(c);
            hi = hi.max(c);
        }
        inflated.version = next_version();
        let offsets = inflation_offsets(radius);
        let reach = radius.ceil() as u32 + 1;
        let (w, h) = (self.width(), self.height());
        for y in lo.y.saturating_sub(reach)..=(hi.y + reach).min(h - 1) {
            for x in lo.x.saturating_sub(reach)..=(hi.x + reach).min(w - 1) {
                let i = (y * w + x) as usize;
                let c = self.inflated_cost(&offsets, x as usize, y as usize);
                if inflated.costs[i] != c {
                    inflated.costs[i] = c;
                    out.push(UVec2::new(x, y));
                }
            }
        }
        out
    }

    /// The inflated cost of one cell: a wall if any cell at one of `offsets` is a wall or off the
    /// map, else its own cost.
    fn inflated_cost(&self, offsets: &[(i64, i64)], x: usize, y: usize) -> u8 {
        let (w, h) = (self.width() as i64, self.height() as i64);
        let own = self.costs[y * w as usize + x];
        let blocked = |dx: i64, dy: i64| {
            let (nx, ny) = (x as i64 + dx, y as i64 + dy);
            nx < 0 || ny < 0 || nx >= w || ny >= h || self.costs[(ny * w + nx) as usize] == WALL
        };
        if own != WALL && offsets.iter().any(|&(dx, dy)| blocked(dx, dy)) {
            WALL
        } else {
            own
        }
    }

    /// Stamp world-space shapes: every cell whose square, shrunk to 90 % about its centre (as a
    /// physics overlap box of half extent 0.45 cells would), overlaps a shape gets `cost`.
    /// All shapes are checked before any cell changes. Returns the number of cells stamped.
    /// O(sum of the shapes' bounding-box areas in cells × polygon vertices).
    ///
    /// ```
    /// use glam::Vec2;
    /// use horde::{CostField, Grid, Shape, WALL};
    /// let mut field = CostField::new(Grid::new(10, 10).unwrap());
    /// let n = field.stamp(&[
    ///     Shape::Box { min: Vec2::new(1.0, 1.0), max: Vec2::new(3.0, 2.0) },
    ///     Shape::Circle { center: Vec2::new(7.5, 7.5), radius: 0.4 },
    /// ], WALL).unwrap();
    /// assert_eq!(n, 3);
    /// ```
    pub fn stamp(&mut self, shapes: &[Shape], cost: u8) -> Result<usize, CostError> {
        if cost == 0 {
            return Err(CostError::ZeroCost { x: 0, y: 0 });
        }
        for (index, shape) in shapes.iter().enumerate() {
            shape
                .validate()
                .map_err(|reason| CostError::BadShape { index, reason })?;
        }
        self.version = next_version();
        let g = self.grid;
        let w = g.width() as usize;
        let mut stamped = 0;
        for shape in shapes {
            let (lo, hi) = shape.bounds();
            let a = g.world_to_grid(lo).floor();
            let b = g.world_to_grid(hi).floor();
            let x0 = a.x.max(0.0) as i64;
            let y0 = a.y.max(0.0) as i64;
            let x1 = (b.x as i64).min(g.width() as i64 - 1);
            let y1 = (b.y as i64).min(g.height() as i64 - 1);
            let shrink = 0.05 * g.cell_size();
            for y in y0..=y1 {
                for x in x0..=x1 {
                    let corner = g.origin() + Vec2::new(x as f32, y as f32) * g.cell_size();
                    let cell_lo = corner + shrink;
                    let cell_hi = corner + g.cell_size() - shrink;
                    if shape.overlaps(cell_lo, cell_hi) {
                        let i = y as usize * w + x as usize;
                        if self.costs[i] != cost {
                            stamped += 1;
                        }
                        self.costs[i] = cost;
                    }
                }
            }
        }
        Ok(stamped)
    }
}

/// The highest walkable cost among `costs` (walls count as 0), with lane-wise maxima over 32-byte
/// chunks, which the compiler turns into vector code (a plain fold stays one byte at a time):
/// every field build asks for this.
pub(crate) fn max_walkable(costs: &[u8]) -> u8 {
    let walkable = |c: u8| if c == WALL { 0 } else { c };
    let mut lanes = [0u8; 32];
    let chunks = costs.chunks_exact(32);
    let rest = chunks
        .remainder()
        .iter()
        .fold(0, |m: u8, &c| m.max(walkable(c)));
    for chunk in chunks {
        for (lane, &c) in lanes.iter_mut().zip(chunk) {
            *lane = (*lane).max(walkable(c));
        }
    }
    lanes.into_iter().fold(rest, u8::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_gives_a_field_a_new_version_and_equality_ignores_it() {
        let grid = Grid::new(6, 6).unwrap();
        let mut field = CostField::new(grid);
        let copy = field.clone();
        assert_eq!(copy.version(), field.version());
        assert_ne!(CostField::new(grid).version(), field.version());
        let mut inflated = field.inflated(1.0).unwrap();
        let mut seen = vec![field.version(), inflated.version()];
        let cell = UVec2::new(2, 2);
        let changes: [&dyn Fn(&mut CostField); 5] = [
            &|f| f.set(cell, 3).unwrap(),
            &|f| f.set_many(&[(cell, 4)]).unwrap(),
            &|f| f.fill_rect(cell, cell, 5).unwrap(),
            &|f| {
                f.apply_edits(&[CostEdit::Cell { cell, cost: 6 }]).unwrap();
            },
            &|f| {
                let shape = Shape::Circle {
                    center: Vec2::new(2.5, 2.5),
                    radius: 0.4,
                };
                f.stamp(&[shape], WALL).unwrap();
            },
        ];
        for (k, change) in changes.iter().enumerate() {
            change(&mut field);
            assert!(!seen.contains(&field.version()), "change {k}");
            seen.push(field.version());
        }
        field.reinflate(1.0, &[cell], &mut inflated);
        assert!(!seen.contains(&inflated.version()));
        // Same costs, other versions: equal.
        let mut again = CostField::new(grid);
        again.set(cell, WALL).unwrap();
        assert_eq!(again, field);
        assert_ne!(again.version(), field.version());
    }

    #[test]
    fn cost_models_are_named_as_the_command_line_spells_them() {
        for (model, name) in [
            (CostModel::TenFourteen, "10-14"),
            (CostModel::Octile, "octile"),
        ] {
            assert_eq!(model.name(), name);
            assert_eq!(name.parse::<CostModel>(), Ok(model));
        }
    }

    #[test]
    fn a_box_and_a_disc_stamp_exactly_the_cells_they_cover() {
        let stamped = |shape: Shape| {
            let mut cost = CostField::new(Grid::new(12, 12).unwrap());
            let n = cost.stamp(&[shape], 7).unwrap();
            let cells: Vec<(u32, u32)> = (0..144u32)
                .map(|i| (i % 12, i / 12))
                .filter(|&(x, y)| cost.get(UVec2::new(x, y)) == Some(7))
                .collect();
            assert_eq!(n, cells.len());
            cells
        };
        // A box whose edges lie on cell borders covers the cells inside, not those beside.
        let boxed = stamped(Shape::Box {
            min: Vec2::new(1.0, 1.0),
            max: Vec2::new(3.0, 2.0),
        });
        assert_eq!(boxed, [(1, 1), (2, 1)]);
        // A disc of radius 0.9 reaches its cell's eight neighbours and nothing further.
        let disc = stamped(Shape::Circle {
            center: Vec2::new(3.5, 8.5),
            radius: 0.9,
        });
        let block: Vec<(u32, u32)> = (7..=9).flat_map(|y| (2..=4).map(move |x| (x, y))).collect();
        assert_eq!(disc, block);
    }

    #[test]
    fn each_way_a_shape_can_be_wrong_is_refused_and_nothing_else() {
        let v = Vec2::new;
        let bad = [
            Shape::Box {
                min: v(2.0, 0.0),
                max: v(1.0, 5.0),
            },
            Shape::Box {
                min: v(0.0, 2.0),
                max: v(5.0, 1.0),
            },
            Shape::Box {
                min: v(f32::NAN, 0.0),
                max: v(1.0, 1.0),
            },
            Shape::Box {
                min: v(0.0, 0.0),
                max: v(1.0, f32::INFINITY),
            },
            Shape::Circle {
                center: v(f32::NAN, 1.0),
                radius: 1.0,
            },
            Shape::Circle {
                center: v(1.0, 1.0),
                radius: f32::INFINITY,
            },
            Shape::Circle {
                center: v(1.0, 1.0),
                radius: -0.5,
            },
            Shape::ConvexPolygon(vec![v(0.0, 0.0), v(1.0, 0.0)]),
            Shape::ConvexPolygon(vec![v(0.0, 0.0), v(1.0, 0.0), v(f32::NAN, 1.0)]),
            // Collinear: no area.
            Shape::ConvexPolygon(vec![v(0.0, 0.0), v(1.0, 1.0), v(2.0, 2.0)]),
            // A dart: not convex.
            Shape::ConvexPolygon(vec![v(0.0, 0.0), v(4.0, 2.0), v(0.0, 4.0), v(1.0, 2.0)]),
        ];
        for shape in &bad {
            assert!(shape.validate().is_err(), "{shape:?} was accepted");
        }
        let good = [
            // Degenerate but well-formed: a box of one point, a disc of radius 0.
            Shape::Box {
                min: v(1.0, 1.0),
                max: v(1.0, 1.0),
            },
            Shape::Box {
                min: v(0.0, 0.0),
                max: v(3.0, 1.0),
            },
            Shape::Circle {
                center: v(1.0, 1.0),
                radius: 0.0,
            },
            Shape::ConvexPolygon(vec![v(0.0, 0.0), v(4.0, 0.0), v(4.0, 4.0), v(0.0, 4.0)]),
            Shape::ConvexPolygon(vec![v(0.0, 4.0), v(4.0, 4.0), v(4.0, 0.0), v(0.0, 0.0)]),
        ];
        for shape in &good {
            assert_eq!(shape.validate(), Ok(()), "{shape:?}");
        }
    }

    #[test]
    fn max_walkable_cost_skips_walls_on_any_length() {
        for len in [1usize, 31, 32, 33, 100, 1000] {
            let mut cost = CostField::new(Grid::new(len as u32, 1).unwrap());
            assert_eq!(cost.max_walkable_cost(), PLAIN, "plain ground, {len} cells");
            for x in 0..len as u32 {
                cost.set(UVec2::new(x, 0), WALL).unwrap();
            }
            assert_eq!(cost.max_walkable_cost(), PLAIN, "walls only, {len} cells");
            // The highest terrain in the last cell (the chunks' remainder when len % 32 != 0)
            // and in the first.
            for (at, terrain) in [(len as u32 - 1, 200u8), (0, 254)] {
                cost.set(UVec2::new(at, 0), terrain).unwrap();
                let plain = cost.costs().iter().copied().filter(|&c| c != WALL).max();
                assert_eq!(cost.max_walkable_cost(), plain.unwrap(), "{len} cells");
            }
        }
    }

    fn field(w: u32, h: u32) -> CostField {
        CostField::new(Grid::new(w, h).unwrap())
    }

    #[test]
    fn a_tie_in_a_later_ring_still_goes_to_the_lower_row() {
        // (8, 9) is 5 away from (5, 5) in the ring at 4, (5, 0) just as far in the ring at 5:
        // the search must look at that ring too, and row 0 wins the tie.
        let mut cost = field(20, 20);
        cost.fill_rect(UVec2::ZERO, UVec2::new(19, 19), WALL)
            .unwrap();
        for c in [UVec2::new(8, 9), UVec2::new(5, 0)] {
            cost.set(c, PLAIN).unwrap();
        }
        assert_eq!(
            cost.nearest_walkable(UVec2::new(5, 5)),
            Some(UVec2::new(5, 0))
        );
    }

    #[test]
    fn nearest_walkable_is_the_nearest_of_all_cells_ties_to_the_lower_row() {
        let mut s = 0x5eed_u64;
        let mut next = move |n: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % n
        };
        for round in 0..600 {
            let (w, h) = (1 + next(24) as u32, 1 + next(24) as u32);
            let mut cost = field(w, h);
            // From nothing walled to everything walled.
            let walls = next(101);
            for y in 0..h {
                for x in 0..w {
                    if next(100) < walls {
                        cost.set(UVec2::new(x, y), WALL).unwrap();
                    }
                }
            }
            // Targets on the grid and off it, near and far.
            // Targets on the grid (its corners and last row and column too) and off it, near
            // and far.
            let target = match round % 5 {
                0 => UVec2::new(next(w as u64) as u32, next(h as u64) as u32),
                1 => UVec2::new(next(3 * w as u64) as u32, next(3 * h as u64) as u32),
                2 => UVec2::new(u32::MAX - next(5) as u32, next(h as u64) as u32),
                3 => UVec2::new(w - 1, next(h as u64) as u32),
                _ => UVec2::new(next(2) as u32 * (w - 1), h - 1),
            };
            let brute = (0..cost.grid().len())
                .map(|i| cost.grid().cell(i))
                .filter(|&c| cost.is_walkable(c))
                .min_by_key(|c| {
                    let (dx, dy) = (c.x as i64 - target.x as i64, c.y as i64 - target.y as i64);
                    ((dx as i128).pow(2) + (dy as i128).pow(2), c.y, c.x)
                });
            assert_eq!(
                cost.nearest_walkable(target),
                brute,
                "round {round}: {w}x{h}, target {target}"
            );
        }
    }

    #[test]
    fn corner_rule_blocks_squeezing_past_a_wall() {
        let mut f = field(3, 3);
        f.set(UVec2::new(1, 0), WALL).unwrap();
        assert!(!f.can_step(UVec2::new(0, 0), Dir8::E));
        // Diagonals between two open cells that pass the wall's corner.
        assert!(
            !f.can_step(UVec2::new(0, 0), Dir8::SE),
            "past (1, 0) on the way to (1, 1)"
        );
        assert!(!f.can_step(UVec2::new(1, 1), Dir8::NW), "and back");
        assert!(!f.can_step(UVec2::new(2, 0), Dir8::SW));
        assert!(!f.can_step(UVec2::new(1, 1), Dir8::NE));
        // Diagonals whose two side cells are open.
        assert!(f.can_step(UVec2::new(0, 1), Dir8::SE));
        assert!(f.can_step(UVec2::new(1, 1), Dir8::SW));
        assert!(f.can_step(UVec2::new(2, 2), Dir8::NW));
        // Diagonals onto the wall itself.
        assert!(!f.can_step(UVec2::new(0, 1), Dir8::NE));
        assert!(!f.can_step(UVec2::new(2, 1), Dir8::NW));
        assert!(!f.can_step(UVec2::new(0, 0), Dir8::N));
        assert!(
            !f.can_step(UVec2::new(1, 0), Dir8::S),
            "walls cannot be left"
        );
    }

    #[test]
    fn inflation_walls_the_cells_nearer_than_the_radius() {
        // One wall in the middle of an 11 x 11 map, grown by 1.5: a cell is walled when its
        // square comes nearer than 1.5 to the wall's centre (the gap to its nearest point).
        let mut cost = field(11, 11);
        cost.set(UVec2::new(5, 5), WALL).unwrap();
        let big = cost.inflated(1.5).unwrap();
        let walled =
            |dx: i32, dy: i32| big.get(UVec2::new((5 + dx) as u32, (5 + dy) as u32)) == Some(WALL);
        assert!(
            walled(1, 0) && walled(1, 1) && walled(0, -1),
            "gaps 0.5 and 0.71"
        );
        assert!(
            walled(2, 0) == (1.5f32 < 1.5),
            "gap 1.5 is not nearer than 1.5"
        );
        assert!(!walled(2, 1) && !walled(2, 2) && !walled(0, 3));
        // The map's edge counts as a wall too: its outer ring of 40 cells is 0.5 from it.
        assert_eq!(
            big.walkable_count(),
            121 - 40 - 9,
            "the ring, the wall and its neighbours"
        );
        // Grown by 0.9, the second ring is 1.5 from every edge: open on all four sides.
        let small = cost.inflated(0.9).unwrap();
        for (x, y) in [(1, 5), (9, 5), (5, 1), (5, 9), (1, 1), (9, 9)] {
            assert_eq!(small.get(UVec2::new(x, y)), Some(1), "({x}, {y})");
        }
        assert_eq!(small.get(UVec2::new(0, 5)), Some(WALL));
    }

    #[test]
    fn inflation_agrees_with_the_distance_to_every_wall_and_edge() {
        // The reference: a cell is walled when its centre lies nearer than the radius to a wall
        // cell's square or to the map's border (the squares off the map), by plain geometry.
        let mut cost = field(13, 11);
        for (x, y) in [(6, 5), (2, 2), (10, 8), (11, 8), (4, 9)] {
            cost.set(UVec2::new(x, y), WALL).unwrap();
        }
        let walls: Vec<(f64, f64)> = (0..13 * 11)
            .map(|i| (i % 13, i / 13))
            .filter(|&(x, y)| cost.get(UVec2::new(x, y)) == Some(WALL))
            .map(|(x, y)| (x as f64, y as f64))
            .collect();
        for radius in [0.3f32, 0.6, 0.9, 1.2, 1.6, 2.3] {
            let big = cost.inflated(radius).unwrap();
            for y in 0..11u32 {
                for x in 0..13u32 {
                    let (cx, cy) = (x as f64 + 0.5, y as f64 + 0.5);
                    let to_edge = cx.min(cy).min(13.0 - cx).min(11.0 - cy);
                    let to_wall = walls
                        .iter()
                        .map(|&(wx, wy)| {
                            let dx = cx - cx.clamp(wx, wx + 1.0);
                            let dy = cy - cy.clamp(wy, wy + 1.0);
                            (dx * dx + dy * dy).sqrt()
                        })
                        .fold(f64::INFINITY, f64::min);
                    let walled = to_edge.min(to_wall) < radius as f64;
                    assert_eq!(
                        big.get(UVec2::new(x, y)) == Some(WALL),
                        walled,
                        "radius {radius}, cell ({x}, {y})"
                    );
                }
            }
        }
    }

    #[test]
    fn a_polygon_does_not_stamp_the_cells_its_corners_only_touch() {
        // A diamond whose four corners touch the middle of four cells' edges: the edges' normals
        // do not separate those cells from it, only the axes do (the bounds test).
        let diamond = Shape::ConvexPolygon(vec![
            Vec2::new(1.0, 2.5),
            Vec2::new(2.5, 1.0),
            Vec2::new(4.0, 2.5),
            Vec2::new(2.5, 4.0),
        ]);
        let mut cost = field(6, 6);
        let n = cost.stamp(&[diamond], 9).unwrap();
        let stamped = |x, y| cost.get(UVec2::new(x, y)) == Some(9);
        for (x, y) in [(0, 2), (4, 2), (2, 0), (2, 4)] {
            assert!(!stamped(x, y), "({x}, {y}) only touches a corner");
        }
        // The cells holding the corners and those between: a plus of five, and the four
        // diagonal ones the edges cross.
        for (x, y) in [
            (1, 2),
            (3, 2),
            (2, 1),
            (2, 3),
            (2, 2),
            (1, 1),
            (3, 1),
            (1, 3),
            (3, 3),
        ] {
            assert!(stamped(x, y), "({x}, {y})");
        }
        assert_eq!(n, 9);
    }

    #[test]
    fn inflation_refuses_a_radius_outside_0_to_64() {
        let cost = field(4, 4);
        for bad in [-0.5, 64.5, f32::INFINITY, f32::NAN] {
            match cost.inflated(bad) {
                Err(CostError::BadRadius(r)) => assert!(r.to_bits() == bad.to_bits()),
                other => panic!("radius {bad}: {other:?}"),
            }
        }
        for good in [0.0, 64.0] {
            assert!(cost.inflated(good).is_ok(), "radius {good}");
        }
    }

    #[test]
    fn set_many_applies_every_edit_or_none() {
        let mut cost = field(4, 4);
        let (a, b) = (UVec2::new(0, 0), UVec2::new(3, 2));
        cost.set_many(&[(a, WALL), (b, 7)]).unwrap();
        assert_eq!((cost.get(a), cost.get(b)), (Some(WALL), Some(7)));
        // A zero cost or a cell off the grid anywhere in the list: refused, naming it, and
        // the edits before it are not applied either.
        let c = UVec2::new(1, 1);
        assert_eq!(
            cost.set_many(&[(c, 5), (UVec2::new(2, 3), 0)]),
            Err(CostError::ZeroCost { x: 2, y: 3 })
        );
        assert!(cost.set_many(&[(c, 5), (UVec2::new(4, 0), 5)]).is_err());
        assert_eq!(cost.get(c), Some(1));
    }

    #[test]
    fn raw_values_convert_to_cost_units() {
        assert_eq!(CostModel::TenFourteen.to_cost(14), 14.0);
        assert_eq!(CostModel::Octile.to_cost(3 * 13_860), 3.0);
        let diagonal = CostModel::Octile.to_cost(CostModel::Octile.diagonal());
        assert!(
            (diagonal - std::f64::consts::SQRT_2).abs() < 2e-9,
            "{diagonal}"
        );
        assert_eq!(CostModel::Octile.to_cost(0), 0.0);
    }

    #[test]
    fn every_step_of_every_one_wall_map_follows_the_corner_rule() {
        // The rule written out: both cells on the map and open, and a diagonal's two side cells
        // open too; checked for every step on a 3 x 3 map with a wall in each place in turn.
        let offsets = [
            (0, -1),
            (1, -1),
            (1, 0),
            (1, 1),
            (0, 1),
            (-1, 1),
            (-1, 0),
            (-1, -1),
        ];
        for wall in 0..9u32 {
            let mut f = field(3, 3);
            f.set(UVec2::new(wall % 3, wall / 3), WALL).unwrap();
            let open = |x: i32, y: i32| {
                (0..3).contains(&x) && (0..3).contains(&y) && (y * 3 + x) as u32 != wall
            };
            let mut blocked_corners = 0;
            for from in 0..9i32 {
                let (x, y) = (from % 3, from / 3);
                for (d, &(dx, dy)) in offsets.iter().enumerate() {
                    let ends = open(x, y) && open(x + dx, y + dy);
                    let sides = dx == 0 || dy == 0 || open(x + dx, y) && open(x, y + dy);
                    let dir = Dir8::from_index(d as u8).unwrap();
                    let got = f.can_step(UVec2::new(x as u32, y as u32), dir);
                    assert_eq!(got, ends && sides, "wall {wall}, ({x}, {y}) {dir:?}");
                    blocked_corners += (ends && !sides) as u32;
                }
            }
            // Diagonals between open cells that the wall's corners cut, both ways: one pair
            // beside a corner wall, two beside an edge wall, four round the centre.
            let want = match wall {
                0 | 2 | 6 | 8 => 2,
                4 => 8,
                _ => 4,
            };
            assert_eq!(blocked_corners, want, "wall {wall}");
        }
    }

    #[test]
    fn rejected_edits_change_nothing() {
        let mut f = field(4, 4);
        let before = f.clone();
        assert!(matches!(
            f.fill_rect(UVec2::new(2, 2), UVec2::new(1, 3), 5),
            Err(CostError::InvertedRect { .. })
        ));
        assert!(f.fill_rect(UVec2::new(2, 2), UVec2::new(4, 3), 5).is_err());
        assert!(matches!(
            f.set(UVec2::new(1, 1), 0),
            Err(CostError::ZeroCost { .. })
        ));
        let bad = [
            Shape::Box {
                min: Vec2::ZERO,
                max: Vec2::ONE,
            },
            Shape::ConvexPolygon(vec![
                Vec2::ZERO,
                Vec2::X,
                Vec2::ONE,
                Vec2::Y * 0.2 + Vec2::X * 0.5,
            ]),
        ];
        assert!(matches!(
            f.stamp(&bad, WALL),
            Err(CostError::BadShape { index: 1, .. })
        ));
        assert_eq!(f, before);
    }

    #[test]
    fn shapes_cover_the_cells_they_overlap() {
        let mut f = field(10, 10);
        // A triangle with corners at cell corners covers the cells under its area.
        let tri = Shape::ConvexPolygon(vec![
            Vec2::new(0.0, 0.0),
            Vec2::new(4.0, 0.0),
            Vec2::new(0.0, 4.0),
        ]);
        let n = f.stamp(&[tri], 9).unwrap();
        // Cells (x, y) with x + y <= 3 overlap the triangle's interior: 10 cells; (3,1) etc. only touch.
        assert_eq!(n, 10);
        assert_eq!(f.get(UVec2::new(3, 0)), Some(9));
        assert_eq!(f.get(UVec2::new(2, 2)), Some(1));
        // A circle of radius 1.2 at a cell corner covers the four cells around it.
        let mut g = field(10, 10);
        let c = Shape::Circle {
            center: Vec2::new(5.0, 5.0),
            radius: 1.2,
        };
        assert_eq!(g.stamp(&[c], WALL).unwrap(), 12);
        // Shapes partly off the map only stamp on it.
        let mut h = field(4, 4);
        let b = Shape::Box {
            min: Vec2::new(-10.0, -10.0),
            max: Vec2::new(1.5, 100.0),
        };
        assert_eq!(h.stamp(&[b], WALL).unwrap(), 8);
        // Off the right and bottom edges too: nothing spills into the next row's first cells.
        let mut e = field(4, 4);
        let past = Shape::Box {
            min: Vec2::new(2.5, 1.5),
            max: Vec2::new(9.0, 2.5),
        };
        assert_eq!(e.stamp(&[past], WALL).unwrap(), 4);
        let walls: Vec<usize> = (0..16).filter(|&i| e.costs()[i] == WALL).collect();
        assert_eq!(walls, [6, 7, 10, 11]);
    }

    #[test]
    fn a_sliver_under_the_shrink_stamps_nothing_in_world_units() {
        // Cells 2 units wide from (10, 20): cell (x, y) spans 10 + 2x ..= 12 + 2x.
        let grid = Grid::new(6, 4)
            .unwrap()
            .with_world(Vec2::new(10.0, 20.0), 2.0)
            .unwrap();
        let stamped = |min: Vec2, max: Vec2| {
            let mut f = CostField::new(grid);
            let n = f.stamp(&[Shape::Box { min, max }], 5).unwrap();
            let cells: Vec<usize> = (0..24).filter(|&i| f.costs()[i] == 5).collect();
            assert_eq!(n, cells.len());
            cells
        };
        // Overlapping the last 2 % of cells (1, 1) and (1, 2) (less than the 5 % shrink) and
        // all of cells (2, 1) and (2, 2).
        let v = Vec2::new;
        assert_eq!(stamped(v(13.96, 22.5), v(15.0, 25.0)), [8, 14]);
        // 10 % into cell (1, 1) from its right side: that one counts.
        assert_eq!(stamped(v(13.8, 22.5), v(15.0, 23.0)), [7, 8]);
    }

    #[test]
    fn models_price_steps_from_the_cell_left() {
        assert_eq!(CostModel::TenFourteen.step(Dir8::N, 3), 30);
        assert_eq!(CostModel::TenFourteen.step(Dir8::NE, 3), 42);
        let m = CostModel::Octile;
        let d = m.diagonal() as f64 / m.scale() as f64;
        assert!((d - std::f64::consts::SQRT_2).abs() < 3e-9);
        assert_eq!(m.heuristic(3, 1), 2 * 13_860 + 19_601);
        assert_eq!("octile".parse::<CostModel>(), Ok(CostModel::Octile));
        assert!("9-9".parse::<CostModel>().is_err());
    }
}
