//! Moving a body among walls: the hard-wall rule that the step and the collision passes share.

use super::*;

/// Moving a body among walls.
pub(crate) struct WallContext<'a> {
    pub(crate) grid: Grid,
    pub(crate) costs: &'a [u8],
}

impl WallContext<'_> {
    /// Move by `step` (under half a cell), one axis at a time, never into a wall cell: the body
    /// slides along walls, and a diagonal move is two straight ones, so it cannot squeeze
    /// between two wall corners. Then keep the body `radius` off the walls beside it where
    /// the cell leaves room.
    #[inline(always)]
    pub(crate) fn slide(&self, p: Vec2, step: Vec2, radius: f32) -> Vec2 {
        let g = self.grid;
        let w = g.width() as usize;
        // The cells of where the body stands and of where the step would take it, each axis
        // as `world_to_cell` finds it, all four in one go.
        let to = p + step;
        let ([cx, cy, ncx, ncy], on) = g.axes_of_two(p, to);
        let open = |x: u32, y: u32| self.costs[y as usize * w + x as usize] != WALL;
        let (mut x, mut cx, mut x_on) = (p.x, cx, on & 1 != 0);
        let y_on = on & 2 != 0;
        if on & 4 != 0 && y_on && open(ncx, cy) {
            (x, cx, x_on) = (to.x, ncx, true);
        }
        let (mut y, mut cy, mut y_on) = (p.y, cy, y_on);
        if x_on && on & 8 != 0 && open(cx, ncy) {
            (y, cy, y_on) = (to.y, ncy, true);
        }
        let pos = Vec2::new(x, y);
        if x_on && y_on {
            let r = smaller(radius, 0.45 * g.cell_size());
            self.push_off_walls(pos, UVec2::new(cx, cy), r)
        } else {
            pos
        }
    }

    /// Keep a body of radius `r` at `p`, in cell `c`, off the walls beside it.
    #[inline(always)]
    fn push_off_walls(&self, p: Vec2, c: UVec2, r: f32) -> Vec2 {
        let g = self.grid;
        let lo = g.origin() + c.as_vec2() * g.cell_size();
        let hi = lo + g.cell_size();
        let (w, h) = (g.width() as usize, g.height() as usize);
        let (x, y) = (c.x as usize, c.y as usize);
        let i = y * w + x;
        let mut q = p;
        if x == 0 || self.costs[i - 1] == WALL {
            q.x = larger(q.x, lo.x + r);
        }
        if x + 1 == w || self.costs[i + 1] == WALL {
            q.x = smaller(q.x, hi.x - r);
        }
        if y == 0 || self.costs[i - w] == WALL {
            q.y = larger(q.y, lo.y + r);
        }
        if y + 1 == h || self.costs[i + w] == WALL {
            q.y = smaller(q.y, hi.y - r);
        }
        q
    }
}
