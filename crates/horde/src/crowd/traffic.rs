//! Who heads which way where: a coarse grid of blocks that counts, per block, the moving
//! agents whose field heads east, west, south and north there. An agent reads the blocks
//! ahead of it to learn whether others come against it (see `StepContext::pass_side`), which
//! costs a few reads instead of a wide neighbour search. Built only when groups mix.

use super::*;

/// Cells per block side.
pub(crate) const TRAFFIC_BLOCK: u32 = 4;

/// Per block: moving agents heading +x, -x, +y and -y (a diagonal counts on both its axes),
/// and which group they are of. 16 bytes per block of 16 cells (1 byte per cell).
#[derive(Debug, Clone, Default)]
pub(crate) struct Traffic {
    cols: u32,
    rows: u32,
    headings: Vec<[Heading; 4]>,
}

/// The agents of a block heading one way: how many (up to `MIXED - 1`), with `MIXED` set once
/// they are of more than one group, and the group of the first.
#[derive(Debug, Clone, Copy, Default)]
struct Heading {
    count: u16,
    group: u16,
}

/// The bit of `Heading::count` set once two groups head the same way in a block.
const MIXED: u16 = 1 << 15;

impl Heading {
    fn add(&mut self, group: u16) {
        if self.count & !MIXED == 0 {
            self.group = group;
        } else if self.group != group {
            self.count |= MIXED;
        }
        if self.count & !MIXED < MIXED - 1 {
            self.count += 1;
        }
    }

    /// (How many, whether any is of another group than `own`.)
    fn seen_by(self, own: u16) -> (u32, bool) {
        let n = self.count & !MIXED;
        (
            n as u32,
            n > 0 && (self.count & MIXED != 0 || self.group != own),
        )
    }
}

/// Agents heading against one in a block: how many, and whether any is of another group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Oncoming {
    pub(crate) count: u32,
    pub(crate) other_group: bool,
}

impl Traffic {
    /// Count the living, moving agents at `positions` whose groups' fields (`groups`) have an
    /// arrow on their cell. O(agents), one thread, in slot order.
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
        self.headings.clear();
        self.headings.resize(
            self.cols as usize * self.rows as usize,
            [Heading::default(); 4],
        );
        for i in 0..positions.len() {
            if !flags[i].is_alive() || states[i] != AgentState::Moving {
                continue;
            }
            let Some(cell) = grid.world_to_cell(positions[i]) else {
                continue;
            };
            let group = group_of[i];
            let Some(b) = groups[group as usize].flow.byte(cell) else {
                continue;
            };
            if b as usize >= Dir8::ALL.len() {
                continue;
            }
            let (dx, dy) = Dir8::ALL[b as usize].offset();
            let k = (cell.y / TRAFFIC_BLOCK * self.cols + cell.x / TRAFFIC_BLOCK) as usize;
            let h = &mut self.headings[k];
            match dx {
                1 => h[0].add(group),
                -1 => h[1].add(group),
                _ => {}
            }
            match dy {
                1 => h[2].add(group),
                -1 => h[3].add(group),
                _ => {}
            }
        }
    }

    /// The agents heading against the step `(dx, dy)` in the block of cell `(x, y)`, as seen
    /// by an agent of group `own` (none off the map).
    pub(crate) fn oncoming(&self, x: i64, y: i64, (dx, dy): (i32, i32), own: u16) -> Oncoming {
        if x < 0 || y < 0 {
            return Oncoming::default();
        }
        let (bx, by) = (
            x as u64 / TRAFFIC_BLOCK as u64,
            y as u64 / TRAFFIC_BLOCK as u64,
        );
        if bx >= self.cols as u64 || by >= self.rows as u64 {
            return Oncoming::default();
        }
        let h = self.headings[(by * self.cols as u64 + bx) as usize];
        let along_x = match dx {
            1 => h[1].seen_by(own),
            -1 => h[0].seen_by(own),
            _ => (0, false),
        };
        let along_y = match dy {
            1 => h[3].seen_by(own),
            -1 => h[2].seen_by(own),
            _ => (0, false),
        };
        Oncoming {
            count: along_x.0 + along_y.0,
            other_group: along_x.1 || along_y.1,
        }
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
        let seen = |count, other_group| Oncoming { count, other_group };
        // Heading east (+x), of group 0: the west-goers (group 1) count in the first block
        // (one), none in the second, and in the third one (the arrived one and the dead slot do
        // not count).
        assert_eq!(t.oncoming(0, 1, (1, 0), 0), seen(1, true));
        assert_eq!(t.oncoming(5, 1, (1, 0), 0), seen(0, false));
        assert_eq!(t.oncoming(11, 3, (1, 0), 0), seen(1, true));
        // Heading west, of group 1: the two east-goers of the first block; none in the third.
        assert_eq!(t.oncoming(3, 0, (-1, 0), 1), seen(2, true));
        assert_eq!(t.oncoming(8, 2, (-1, 0), 1), seen(0, false));
        // Heading north or south: no one heads along y here; off the map counts nothing.
        assert_eq!(t.oncoming(1, 1, (0, 1), 0), seen(0, false));
        assert_eq!(t.oncoming(-1, 1, (1, 0), 0), seen(0, false));
        assert_eq!(t.oncoming(12, 1, (-1, 0), 1), seen(0, false));
        assert_eq!(t.oncoming(1, 4, (-1, 0), 1), seen(0, false));
        // Agents of one's own group heading against one count, as of one's own group.
        assert_eq!(t.oncoming(0, 1, (1, 0), 1), seen(1, false));
        assert_eq!(t.oncoming(3, 0, (-1, 0), 0), seen(2, false));
        // A third group heading west in the first block: the west-goers are now of two
        // groups, so another group than either's is among them.
        let mut positions = positions.to_vec();
        let mut flags = flags.to_vec();
        let mut states = states.to_vec();
        let mut group_of = group_of.to_vec();
        positions.push(Vec2::new(2.5, 2.5));
        flags.push(AgentFlags::ALIVE);
        states.push(AgentState::Moving);
        group_of.push(2);
        let groups = [groups[0], groups[1], groups[1]];
        t.count(
            *cost.grid(),
            &positions,
            &flags,
            &states,
            &group_of,
            &groups,
        );
        assert_eq!(t.oncoming(0, 1, (1, 0), 1), seen(2, true));
        assert_eq!(t.oncoming(0, 1, (1, 0), 2), seen(2, true));
        assert_eq!(t.oncoming(0, 1, (1, 0), 0), seen(2, true));
    }
}
