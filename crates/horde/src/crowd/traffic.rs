//! Who heads which way where: a coarse grid of blocks that counts, per block, the moving
//! agents whose field heads east, west, south and north there. An agent reads the blocks
//! ahead of it to learn whether others come against it (see `StepContext::pass_side`), which
//! costs a few reads instead of a wide neighbour search. Built only when groups mix.

use super::*;

/// Cells per block side.
pub(crate) const TRAFFIC_BLOCK: u32 = 4;

/// Per block: moving agents heading +x, -x, +y and -y (a diagonal counts on both its axes).
/// 8 bytes per block of 16 cells (0.5 bytes per cell).
#[derive(Debug, Clone, Default)]
pub(crate) struct Traffic {
    cols: u32,
    rows: u32,
    counts: Vec<[u16; 4]>,
}

impl Traffic {
    /// Count the living, moving agents at `positions` whose groups' fields (`groups`) have an
    /// arrow on their cell.
    pub(crate) fn count(
        &mut self,
        grid: Grid,
        positions: &[Vec2],
        flags: &[AgentFlags],
        states: &[AgentState],
        group_of: &[u16],
        groups: &[Group],
    ) {
        self.cols = grid.width().div_ceil(TRAFFIC_BLOCK);
        self.rows = grid.height().div_ceil(TRAFFIC_BLOCK);
        self.counts.clear();
        self.counts
            .resize(self.cols as usize * self.rows as usize, [0; 4]);
        for i in 0..positions.len() {
            if !flags[i].is_alive() || states[i] != AgentState::Moving {
                continue;
            }
            let Some(cell) = grid.world_to_cell(positions[i]) else {
                continue;
            };
            let Some(b) = groups[group_of[i] as usize].flow.byte(cell) else {
                continue;
            };
            if b as usize >= Dir8::ALL.len() {
                continue;
            }
            let (dx, dy) = Dir8::ALL[b as usize].offset();
            let k = (cell.y / TRAFFIC_BLOCK * self.cols + cell.x / TRAFFIC_BLOCK) as usize;
            let c = &mut self.counts[k];
            if dx > 0 {
                c[0] = c[0].saturating_add(1);
            } else if dx < 0 {
                c[1] = c[1].saturating_add(1);
            }
            if dy > 0 {
                c[2] = c[2].saturating_add(1);
            } else if dy < 0 {
                c[3] = c[3].saturating_add(1);
            }
        }
    }

    /// Agents heading against the step `(dx, dy)` in the block of cell `(x, y)` (0 off the
    /// map).
    pub(crate) fn oncoming(&self, x: i64, y: i64, dx: i32, dy: i32) -> u32 {
        if x < 0 || y < 0 {
            return 0;
        }
        let (bx, by) = (
            x as u64 / TRAFFIC_BLOCK as u64,
            y as u64 / TRAFFIC_BLOCK as u64,
        );
        if bx >= self.cols as u64 || by >= self.rows as u64 {
            return 0;
        }
        let c = self.counts[(by * self.cols as u64 + bx) as usize];
        let along_x = match dx {
            1 => c[1],
            -1 => c[0],
            _ => 0,
        };
        let along_y = match dy {
            1 => c[3],
            -1 => c[2],
            _ => 0,
        };
        along_x as u32 + along_y as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::tests::field;

    #[test]
    fn counts_who_heads_which_way_by_block() {
        // A 12 × 4 strip: group 0 heads east, group 1 west. Agents in the first block (x 0–3)
        // and the third (x 8–11); one arrived agent and one removed slot that do not count.
        let cost = CostField::new(Grid::new(12, 4).unwrap());
        let (east, west) = (
            field(&cost, UVec2::new(11, 1)),
            field(&cost, UVec2::new(0, 1)),
        );
        let groups = [
            Group {
                flow: &east,
                goal: Vec2::new(11.5, 1.5),
            },
            Group {
                flow: &west,
                goal: Vec2::new(0.5, 1.5),
            },
        ];
        let positions = [
            Vec2::new(1.5, 1.5),
            Vec2::new(2.5, 1.5),
            Vec2::new(9.5, 1.5),
            Vec2::new(3.5, 1.5),
            Vec2::new(9.5, 2.5),
            Vec2::new(10.5, 1.5),
        ];
        let group_of = [0, 0, 1, 1, 1, 0];
        let mut flags = [AgentFlags::ALIVE; 6];
        flags[5].remove();
        let mut states = [AgentState::Moving; 6];
        states[4] = AgentState::Arrived;
        let mut t = Traffic::default();
        t.count(
            *cost.grid(),
            &positions,
            &flags,
            &states,
            &group_of,
            &groups,
        );
        // Heading east (+x): the west-goers count in the first block (one), none in the
        // second, and in the third one (the arrived one and the dead slot do not count).
        assert_eq!(t.oncoming(0, 1, 1, 0), 1);
        assert_eq!(t.oncoming(5, 1, 1, 0), 0);
        assert_eq!(t.oncoming(11, 3, 1, 0), 1);
        // Heading west: the two east-goers of the first block; none in the third.
        assert_eq!(t.oncoming(3, 0, -1, 0), 2);
        assert_eq!(t.oncoming(8, 2, -1, 0), 0);
        // Heading north or south: no one heads along y here; off the map counts nothing.
        assert_eq!(t.oncoming(1, 1, 0, 1), 0);
        assert_eq!(t.oncoming(-1, 1, 1, 0), 0);
        assert_eq!(t.oncoming(12, 1, -1, 0), 0);
        assert_eq!(t.oncoming(1, 4, -1, 0), 0);
    }
}
