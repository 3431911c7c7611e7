//! Rooms: open rectangles of plain ground with few ways in, which a one-shot wave crosses in
//! one step and fills afterwards in closed form.
//!
//! Inside a rectangle whose cells are all plain ground, the cheapest path between two of its
//! cells is the octile one (every cell of the bounding box of the two is open, so the corner
//! rule never bites). A shortest path to a cell `c` of such a room enters the room for the last
//! time at one of its *entries* (the room's cells with a legal step to a cell outside it), so
//! `value(c) = min over entries e of value(e) + octile(e, c)`. The wave therefore settles only
//! the entries (an entry offers its steps out of the room, and every other entry of the room at
//! the octile price), and the room's cells are written afterwards, row by row, as that minimum.
//! Exact, with the same values as a wave through every cell.
//!
//! On the maps the wave serves (a dungeon's rooms joined by corridors, rooms behind doors), most
//! reachable cells are in rooms: the wave settles a tenth of them and the rest is a vector loop.
//!
//! The rooms are worked out when a one-shot wave first runs over a map seen unchanged twice, and
//! kept while it stays so.

use super::ranked::RankedCells;
use super::{TOUCHED_BLOCK, UNREACHABLE, touch};
use crate::cost::{CostModel, PLAIN, WALL};

/// The longest side of a room: keeps a room's crossing under one step on the dearest terrain,
/// so that an entry's value plus a crossing cannot pass the 32-bit range.
const MAX_SIDE: usize = 128;

/// A room's cells other than entries, at the least: smaller rectangles save too little.
const MIN_INTERIOR: usize = 12;

/// The rooms a build keeps (those without a seed) must cover at least one walkable cell in this
/// many for its wave to cross them: below, the open ground between them may suit the row
/// sweeps better.
const MIN_SHARE: usize = 3;

/// Columns of a row of [`Rooms::table`].
const TABLE_WIDTH: usize = 2 * MAX_SIDE - 1;

/// The fill's vector width, in cells (eight 32-bit lanes of AVX2).
const LANES: usize = 8;

/// One room: padded rectangle `x0..=x1` × `y0..=y1`, and its entries
/// `doors[first..end]`.
#[derive(Debug, Clone, Copy)]
struct Room {
    x0: u32,
    y0: u32,
    x1: u32,
    y1: u32,
    first: u32,
    end: u32,
}

/// An entry of a room as its room lists it: padded cell and coordinates.
#[derive(Debug, Clone, Copy)]
struct Door {
    cell: u32,
    x: u32,
    y: u32,
}

/// An entry as the wave finds it by its cell: its room, where the room's list of entries is
/// (`doors[first..first + count]`), and its legal steps that leave the room (bits as in
/// `moves_of_row`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    room: u32,
    first: u32,
    count: u16,
    out: u8,
}

/// The rooms of one map.
///
/// Memory: a bit and a half per padded cell (which cells are entries, and a count per 64 of
/// them), 24 bytes per entry, 24 and a flag per room, a table of crossing prices (128 KiB), and
/// while they are worked out a byte per padded cell.
#[derive(Debug, Default, Clone)]
pub(crate) struct Rooms {
    /// Worked out for the builder's current costs.
    pub(crate) valid: bool,
    /// Walkable cells of the map.
    walkable: usize,
    rooms: Vec<Room>,
    /// Each room's entries, room after room.
    doors: Vec<Door>,
    /// Every entry, in the order of their cells.
    entries: Vec<Entry>,
    /// The entries' cells, so that an entry is found by its cell in O(1) (`entry_at`).
    entry_cells: RankedCells,
    /// Rooms left out of this build: a seed lies in them (the wave goes through their cells);
    /// only when the build does not cross the graph (see `begin`).
    disabled: Vec<bool>,
    disabled_list: Vec<u32>,
    /// Cells of rooms that are not entries (the fill gives them their values).
    interior: usize,
    /// The longest side of any room less one: the most steps a crossing takes.
    longest: u32,
    /// Cells taken while working out (1: in a room or tried).
    taken: Vec<u8>,
    /// Crossing prices by offset, for the fill: row `dy` (under `MAX_SIDE`) holds the price
    /// of `(dx, dy)` at column `dx + MAX_SIDE - 1` for `dx` in `-(MAX_SIDE - 1)..MAX_SIDE`,
    /// so that a row of a room reads one contiguous slice per entry (no multiplies), for the
    /// step prices `table_prices`.
    table: Vec<u32>,
    table_prices: (u32, u32),
    /// The map's chains of corridor cells, worked out and kept with the rooms.
    pub(crate) chains: super::chains::Chains,
    /// This build's seeds inside rooms (see `set_seed_sources`).
    seed_sources: Vec<(u32, (u32, u32, u32))>,
}

/// `row[k] = min(row[k], v + offsets[k])`: the fill's kernel in plain code (and the reference
/// its vector form is tested against).
#[inline(always)]
pub(crate) fn min_plus(row: &mut [u32], offsets: &[u32], v: u32) {
    for (slot, &o) in row.iter_mut().zip(offsets) {
        *slot = (*slot).min(v + o);
    }
}

/// The octile way between padded cells `(ax, ay)` and `(bx, by)` of a room, as `(straight,
/// diagonal)` steps: the cheapest way between two cells of a rectangle of plain ground.
#[inline(always)]
pub(crate) fn octile_steps((ax, ay): (u32, u32), (bx, by): (u32, u32)) -> (u32, u32) {
    let (dx, dy) = (ax.abs_diff(bx), ay.abs_diff(by));
    let (lo, hi) = (dx.min(dy), dx.max(dy));
    (hi - lo, lo)
}

/// Where in [`Rooms::fill`]'s table the crossing prices from `source` `(x, y, value)` to the
/// cells of padded row `y` from column `x0` on start: the table's row `|y − source y|`, from the
/// column of `dx = x0 − source x`.
#[inline(always)]
pub(crate) fn table_at(source: (u32, u32, u32), x0: usize, y: u32) -> usize {
    let (ex, ey, _) = source;
    y.abs_diff(ey) as usize * TABLE_WIDTH + x0 + MAX_SIDE - 1 - ex as usize
}

impl Rooms {
    /// Work the rooms out from the padded `costs` and legal steps `moves` (width `pw`, map
    /// rows `1..=h`): greedily, the largest rectangle of untaken plain cells at each untaken
    /// cell in row order, kept if it has few entries for its size. O(cells).
    pub(crate) fn work_out(&mut self, costs: &[u8], moves: &[u8], pw: usize, h: usize) {
        self.rooms.clear();
        self.doors.clear();
        self.entries.clear();
        self.interior = 0;
        self.longest = 0;
        let plen = costs.len();
        self.taken.clear();
        self.taken.resize(plen, 0);
        let mut walkable = 0usize;
        // Cells the rectangles turned down may leave unclaimed (see below).
        let mut spare = plen;
        for y in 1..=h {
            for x in 1..pw - 1 {
                let c = y * pw + x;
                if costs[c] == WALL {
                    continue;
                }
                walkable += 1;
                if self.taken[c] != 0 || costs[c] != PLAIN {
                    continue;
                }
                let (w, rh) = self.largest_at(costs, pw, h, x, y);
                if w < 2 || rh < 2 {
                    // A strip (a corridor, a door) is no room; its other cells may start one
                    // (a door in a room's top row must not take that row from the room).
                    self.taken[c] = 1;
                    continue;
                }
                // A room claims its rectangle. A rectangle turned down claims its first row
                // only, so that the rows below start again: on a dungeon a corridor often runs
                // along a room's side, and the rectangle from the corridor's first cell is a
                // strip of the room, open along its long side, which hid the rest of the room.
                // Those rows are looked at again, so while `spare` lasts (a cell per padded
                // cell, spent by the cells left unclaimed): then a rectangle turned down claims
                // all its cells, and the work stays O(cells) on a map of strips.
                let kept = self.try_room(moves, pw, x, y, w, rh);
                let again = !kept && spare >= w * rh;
                if again {
                    spare -= w * (rh - 1);
                }
                for yy in y..y + if again { 1 } else { rh } {
                    self.taken[yy * pw + x..yy * pw + x + w].fill(1);
                }
            }
        }
        self.taken = Vec::new();
        // The entries in the order of their cells, found by rank in the bits.
        let mut order: Vec<(u32, Entry)> = Vec::with_capacity(self.doors.len());
        for (i, r) in self.rooms.iter().enumerate() {
            for d in &self.doors[r.first as usize..r.end as usize] {
                order.push((
                    d.cell,
                    Entry {
                        room: i as u32,
                        first: r.first,
                        count: (r.end - r.first) as u16,
                        out: moves[d.cell as usize],
                    },
                ));
            }
        }
        order.sort_unstable_by_key(|&(cell, _)| cell);
        self.entry_cells
            .build(plen, order.iter().map(|&(cell, _)| cell as usize));
        self.entries.extend(order.iter().map(|&(_, e)| e));
        // `out` held the entry's legal steps; keep those that leave its room.
        for (e, &(cell, _)) in self.entries.iter_mut().zip(&order) {
            let r = self.rooms[e.room as usize];
            e.out &= steps_leaving(&r, cell as usize, pw);
        }
        self.disabled.clear();
        self.disabled.resize(self.rooms.len(), false);
        self.disabled_list.clear();
        self.walkable = walkable;
        self.chains.work_out(costs, moves, pw, h);
        self.valid = true;
    }

    /// How many untaken plain cells run from (`x`, `y`) to the right, at most `MAX_SIDE`.
    fn run_at(&self, costs: &[u8], pw: usize, x: usize, y: usize) -> usize {
        let free = |c: usize| costs[c] == PLAIN && self.taken[c] == 0;
        let mut width = 0;
        while width < MAX_SIDE && x + width < pw - 1 && free(y * pw + x + width) {
            width += 1;
        }
        width
    }

    /// The rectangle of the most cells with top-left corner (`x`, `y`) over untaken plain
    /// cells, sides at most `MAX_SIDE`: (width, height).
    fn largest_at(&self, costs: &[u8], pw: usize, h: usize, x: usize, y: usize) -> (usize, usize) {
        let free = |c: usize| costs[c] == PLAIN && self.taken[c] == 0;
        let mut width = self.run_at(costs, pw, x, y);
        let mut best = (width, 1, width);
        let mut rows = 1;
        while rows < MAX_SIDE && y + rows <= h {
            let row = (y + rows) * pw + x;
            let mut run = 0;
            while run < width && free(row + run) {
                run += 1;
            }
            if run < 2 {
                break;
            }
            width = run;
            rows += 1;
            if width * rows > best.2 {
                best = (width, rows, width * rows);
            }
        }
        (best.0, best.1)
    }

    /// Keep rectangle `w` × `rh` at (`x`, `y`) as a room if it has few entries for its size
    /// (and say whether it did).
    fn try_room(
        &mut self,
        moves: &[u8],
        pw: usize,
        x: usize,
        y: usize,
        w: usize,
        rh: usize,
    ) -> bool {
        let first = self.doors.len();
        let r = Room {
            x0: x as u32,
            y0: y as u32,
            x1: (x + w - 1) as u32,
            y1: (y + rh - 1) as u32,
            first: first as u32,
            end: first as u32,
        };
        let doors = &mut self.doors;
        let mut border = |cx: usize, cy: usize| {
            let c = cy * pw + cx;
            if moves[c] & steps_leaving(&r, c, pw) != 0 {
                doors.push(Door {
                    cell: c as u32,
                    x: cx as u32,
                    y: cy as u32,
                });
            }
        };
        let (x1, y1) = (r.x1 as usize, r.y1 as usize);
        for cy in y..=y1 {
            if cy == y || cy == y1 {
                (x..=x1).for_each(|cx| border(cx, cy));
            } else {
                border(x, cy);
                border(x1, cy);
            }
        }
        let n = doors.len() - first;
        let area = w * rh;
        // Each entry offers every other: n² offers in all, against eight for each of the room's
        // cells the wave would expand one by one.
        if area - n < MIN_INTERIOR || n * n > 2 * area || n > u16::MAX as usize {
            doors.truncate(first);
            return false;
        }
        self.interior += area - n;
        self.longest = self.longest.max((w.max(rh) - 1) as u32);
        self.rooms.push(Room {
            end: doors.len() as u32,
            ..r
        });
        true
    }

    /// The most a crossing of a room costs under `model` (raw units).
    pub(crate) fn longest_crossing(&self, model: CostModel) -> u32 {
        model.diagonal() * self.longest
    }

    /// Leave out of this build every room that holds one of the padded `seeds` (the wave goes
    /// through their cells as through any others), and say whether the rooms kept are worth
    /// crossing (see `MIN_SHARE`). O(seeds × (log rooms + rooms whose rows could hold it)).
    ///
    /// With `keep` (a wave over the crossing graph, see `graph`), rooms that hold seeds are kept
    /// unless a chain was left out: the fill takes their seeds as sources.
    pub(crate) fn begin(&mut self, seeds: &[(u32, u32)], pw: usize, keep: bool) -> bool {
        // Chains are crossed only by waves that cross rooms: on a maze, whose corridors are
        // short, the look-ups at their ends and the arrows cell by cell cost the wave more than
        // its walks (1.3-1.8 times as long, measured).
        self.chains.begin(seeds);
        for &r in &self.disabled_list {
            self.disabled[r as usize] = false;
        }
        self.disabled_list.clear();
        self.seed_sources.clear();
        let mut kept = self.interior;
        if !keep || self.chains.any_left_out() {
            for &(_, c) in seeds {
                if let Some(i) = self.room_index(c, pw)
                    && !self.disabled[i]
                {
                    self.disabled[i] = true;
                    self.disabled_list.push(i as u32);
                    kept -= self.rooms[i].interior();
                }
            }
        }
        kept > 0 && kept * MIN_SHARE >= self.walkable
    }

    /// Every room's padded rectangle `(x0, y0, x1, y1)`.
    pub(crate) fn rects(&self) -> impl Iterator<Item = (u32, u32, u32, u32)> + '_ {
        self.rooms.iter().map(|r| (r.x0, r.y0, r.x1, r.y1))
    }

    /// The entry at padded cell `c`, whichever rooms this build left out: its legal steps out
    /// of its room, and its room's entries as `(cell, x, y)` (itself among them).
    pub(crate) fn entry_steps(
        &self,
        c: usize,
    ) -> Option<(u8, impl Iterator<Item = (u32, u32, u32)> + '_)> {
        let e = &self.entries[self.entry_cells.rank_of(c)?];
        let doors = &self.doors[e.first as usize..e.first as usize + e.count as usize];
        Some((e.out, doors.iter().map(|d| (d.cell, d.x, d.y))))
    }

    /// The room whose rectangle holds padded cell `c`, and its entries as `(cell, x, y)`.
    /// O(log rooms + rooms in a band of `MAX_SIDE` rows).
    pub(crate) fn room_of(
        &self,
        c: u32,
        pw: usize,
    ) -> Option<(usize, impl Iterator<Item = (u32, u32, u32)> + '_)> {
        let i = self.room_index(c, pw)?;
        let r = &self.rooms[i];
        let doors = &self.doors[r.first as usize..r.end as usize];
        Some((i, doors.iter().map(|d| (d.cell, d.x, d.y))))
    }

    /// The room whose rectangle holds padded cell `c` (rooms do not overlap).
    fn room_index(&self, c: u32, pw: usize) -> Option<usize> {
        let (x, y) = (c % pw as u32, c / pw as u32);
        // Rooms come in the order of their top rows; one holding row `y` starts at most
        // `MAX_SIDE - 1` rows above it.
        let from = self
            .rooms
            .partition_point(|r| r.y0 + (MAX_SIDE as u32 - 1) < y);
        let to = self.rooms.partition_point(|r| r.y0 <= y);
        (from..to).find(|&i| {
            let r = &self.rooms[i];
            (r.x0..=r.x1).contains(&x) && (r.y0..=r.y1).contains(&y)
        })
    }

    /// A seed inside room `room` at padded `(x, y)` with `value`: the fill takes it as a source
    /// beside the room's entries (the seeds are kept in the order of their rooms; `begin`
    /// forgets them). O(seeds).
    pub(crate) fn add_seed_source(&mut self, room: usize, source: (u32, u32, u32)) {
        let at = self
            .seed_sources
            .partition_point(|&(r, _)| r as usize <= room);
        self.seed_sources.insert(at, (room as u32, source));
    }

    /// The entry at padded cell `c`, if `c` is one of a room in this build. O(1).
    #[inline(always)]
    pub(crate) fn entry_at(&self, c: usize) -> Option<&Entry> {
        let e = &self.entries[self.entry_cells.rank_of(c)?];
        (self.disabled_list.is_empty() || !self.disabled[e.room as usize]).then_some(e)
    }

    /// The entries of `e`'s room other than `c` (`e`'s cell), each with the price of crossing
    /// to it from `c`.
    #[inline(always)]
    pub(crate) fn crossings(
        &self,
        e: &Entry,
        c: usize,
        pw: usize,
        (straight, diagonal): (u32, u32),
    ) -> impl Iterator<Item = (usize, u32)> + '_ {
        let (cx, cy) = ((c % pw) as u32, (c / pw) as u32);
        let first = e.first as usize;
        self.doors[first..first + e.count as usize]
            .iter()
            .filter(move |d| d.cell as usize != c)
            .map(move |d| {
                let (s, g) = octile_steps((d.x, d.y), (cx, cy));
                (d.cell as usize, straight * s + diagonal * g)
            })
    }

    /// The legal steps of entry `e` that leave its room.
    #[inline(always)]
    pub(crate) fn steps_out(e: &Entry) -> u8 {
        e.out
    }

    /// Give every cell of the rooms in this build its value from the room's entries, mark the
    /// footprint, and return the cells so given (entries excluded), or the first cell whose
    /// value would pass `limit`. A room that `filled` says the last fill gave values and that
    /// no entry reaches now is reset to UNREACHABLE; `filled` then says which rooms this fill
    /// gave values (a byte per room). O(cells of the rooms × entries each).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fill(
        &mut self,
        dist: &mut [u32],
        touched: &mut [u64],
        filled: &mut Vec<bool>,
        pw: usize,
        prices: (u32, u32),
        limit: u32,
        sources: &mut Vec<(u32, u32, u32)>,
    ) -> Result<usize, usize> {
        let fill = self.prepare_fill(dist, touched, filled, pw, prices, limit, sources);
        #[cfg(target_arch = "x86_64")]
        {
            let cpu = crate::simd::cpu();
            if let Some(avx512) = cpu.avx512 {
                return avx512.fill_rooms(self, fill);
            }
            if let Some(avx2) = cpu.avx2 {
                return avx2.fill_rooms(self, fill);
            }
        }
        self.fill_with(fill, min_plus)
    }

    /// The table of crossing prices for `prices`, and what a fill writes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn prepare_fill<'a>(
        &mut self,
        dist: &'a mut [u32],
        touched: &'a mut [u64],
        filled: &'a mut Vec<bool>,
        pw: usize,
        prices: (u32, u32),
        limit: u32,
        sources: &'a mut Vec<(u32, u32, u32)>,
    ) -> Fill<'a> {
        if self.table_prices != prices || self.table.len() != MAX_SIDE * TABLE_WIDTH + LANES {
            let (straight, diagonal) = prices;
            self.table.clear();
            for dy in 0..MAX_SIDE as u32 {
                self.table.extend((0..TABLE_WIDTH as u32).map(|j| {
                    let dx = j.abs_diff(MAX_SIDE as u32 - 1);
                    let (lo, hi) = (dx.min(dy), dx.max(dy));
                    diagonal * lo + straight * (hi - lo)
                }));
            }
            // The last row's last lanes read past it (into lanes that are dropped).
            self.table.extend([0; LANES]);
            self.table_prices = prices;
        }
        filled.resize(self.rooms.len(), false);
        Fill {
            dist,
            touched,
            filled,
            pw,
            diagonal: prices.1,
            limit,
            sources,
        }
    }

    /// [`fill`](Self::fill) with `min_plus` (the plain code or a vector kernel) over whole
    /// vectors of `LANES` cells: a row is worked out in a buffer and then copied into place (a
    /// room seven wide would otherwise go through the loop's scalar tail).
    #[inline(always)]
    pub(crate) fn fill_with(
        &self,
        fill: Fill<'_>,
        min_plus: impl Fn(&mut [u32], &[u32], u32),
    ) -> Result<usize, usize> {
        let mut acc = [UNREACHABLE; MAX_SIDE.next_multiple_of(LANES)];
        self.fill_rows(fill, |row, table, sources, y, x0| {
            let len = row.len();
            let lanes = len.next_multiple_of(LANES);
            let acc = &mut acc[..lanes];
            acc.fill(UNREACHABLE);
            for &source in sources {
                let at = table_at(source, x0, y);
                for (a, o) in acc
                    .chunks_exact_mut(LANES)
                    .zip(table[at..at + lanes].chunks_exact(LANES))
                {
                    min_plus(a, o, source.2);
                }
            }
            row.copy_from_slice(&acc[..len]);
        })
    }

    /// [`fill`](Self::fill) with `fill_row(row, table, sources, y, x0)`, which sets each cell
    /// of `row` (padded row `y`, columns `x0..x0 + row.len()`) to the least over the sources
    /// `(x, y, value)` of the value plus the crossing price (the table, from
    /// [`table_at`]).
    #[inline(always)]
    pub(crate) fn fill_rows(
        &self,
        fill: Fill<'_>,
        mut fill_row: impl FnMut(&mut [u32], &[u32], &[(u32, u32, u32)], u32, usize),
    ) -> Result<usize, usize> {
        let Fill {
            dist,
            touched,
            filled: holds,
            pw,
            diagonal,
            limit,
            sources,
        } = fill;
        let mut filled = 0;
        let mut seeds = self.seed_sources.iter().peekable();
        for (i, r) in self.rooms.iter().enumerate() {
            if self.disabled[i] {
                // The wave gave its cells their values, as any other cell's.
                holds[i] = false;
                continue;
            }
            sources.clear();
            let mut top = 0;
            for d in &self.doors[r.first as usize..r.end as usize] {
                let v = dist[d.cell as usize];
                if v != UNREACHABLE {
                    sources.push((d.x, d.y, v));
                    top = top.max(v);
                }
            }
            while let Some(&(_, source)) = seeds.next_if(|&&(room, _)| room as usize <= i) {
                sources.push(source);
                top = top.max(source.2);
            }
            let (x0, x1) = (r.x0 as usize, r.x1 as usize);
            if sources.is_empty() {
                // Not reached: a room the last fill gave values is reset, as the distances were
                // not (see `IntegrationBuilder::keep_wave_distances`).
                if std::mem::take(&mut holds[i]) {
                    for y in r.y0 as usize..=r.y1 as usize {
                        dist[y * pw + x0..=y * pw + x1].fill(UNREACHABLE);
                    }
                }
                continue;
            }
            holds[i] = true;
            // Entries hold at most `limit` (the wave checks as it expands them); a crossing adds
            // at most `diagonal × longest`, so the sums stay in range and need checking only
            // near the top.
            let check = top as u64 + (diagonal * self.longest) as u64 > limit as u64;
            let len = x1 - x0 + 1;
            for y in r.y0..=r.y1 {
                let start = y as usize * pw + x0;
                let row = &mut dist[start..start + len];
                fill_row(row, &self.table, sources, y, x0);
                if check && let Some(k) = row.iter().position(|&v| v > limit) {
                    return Err(start + k);
                }
                let mut block = start / TOUCHED_BLOCK;
                while block * TOUCHED_BLOCK <= start + (x1 - x0) {
                    touch(touched, block * TOUCHED_BLOCK);
                    block += 1;
                }
            }
            filled += r.interior();
        }
        Ok(filled)
    }

    /// The plain fill and each vector fill this CPU runs, by name (for the tests).
    #[cfg(test)]
    #[allow(clippy::type_complexity)]
    pub(crate) fn fill_kernels() -> Vec<(
        &'static str,
        Box<dyn for<'a> Fn(&Rooms, Fill<'a>) -> Result<usize, usize>>,
    )> {
        let mut kernels: Vec<(&'static str, Box<dyn for<'a> Fn(&Rooms, Fill<'a>) -> _>)> =
            vec![("plain", Box::new(|r: &Rooms, f| r.fill_with(f, min_plus)))];
        #[cfg(target_arch = "x86_64")]
        {
            use crate::simd::under_test;
            if let Some(avx2) = under_test::avx2() {
                kernels.push(("avx2", Box::new(move |r: &Rooms, f| avx2.fill_rooms(r, f))));
            }
            if let Some(avx512) = under_test::avx512() {
                kernels.push((
                    "avx512",
                    Box::new(move |r: &Rooms, f| avx512.fill_rooms(r, f)),
                ));
            }
        }
        kernels
    }

    /// Rooms, entries and cells of rooms that are not entries (for the tests).
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize, usize) {
        (self.rooms.len(), self.entries.len(), self.interior)
    }
}

impl Room {
    /// Cells that are not entries.
    fn interior(&self) -> usize {
        ((self.x1 - self.x0 + 1) * (self.y1 - self.y0 + 1) - (self.end - self.first)) as usize
    }
}

/// What [`Rooms::fill`] writes, and with what.
pub(crate) struct Fill<'a> {
    dist: &'a mut [u32],
    touched: &'a mut [u64],
    /// Which rooms hold values of the last fill (a room not reached now is reset).
    filled: &'a mut [bool],
    pw: usize,
    diagonal: u32,
    limit: u32,
    sources: &'a mut Vec<(u32, u32, u32)>,
}

/// The steps (bits as in `moves_of_row`) from padded cell `c` that leave room `r`.
fn steps_leaving(r: &Room, c: usize, pw: usize) -> u8 {
    const STEPS: [(i64, i64); 8] = [
        (0, -1),
        (1, 0),
        (0, 1),
        (-1, 0),
        (1, -1),
        (1, 1),
        (-1, 1),
        (-1, -1),
    ];
    let (x, y) = ((c % pw) as i64, (c / pw) as i64);
    let mut out = 0;
    for (bit, (dx, dy)) in STEPS.iter().enumerate() {
        let (nx, ny) = (x + dx, y + dy);
        let inside =
            (r.x0 as i64..=r.x1 as i64).contains(&nx) && (r.y0 as i64..=r.y1 as i64).contains(&ny);
        if !inside {
            out |= 1 << bit;
        }
    }
    out
}
