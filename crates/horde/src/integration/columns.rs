//! Sweeps along columns: the row sweeps (see `sweep`) over the map turned a quarter, its costs
//! and distances transposed. How many passes the sweeps need depends on how often the shortest
//! paths turn back against the passes' direction, and on many maps one way of sweeping needs
//! far fewer than the other (orz100d about 0.6 of the work along columns, brc202d about twice).
//! A builder that builds field after field over one unchanged map tries both ways and then
//! keeps to the cheaper, counting the turn of the distances back into rows against the columns,
//! and tries the other way again now and then (another goal may suit it better).
//!
//! Only one-shot builds over a whole map built before and unchanged since sweep along columns:
//! the costs are transposed once per map, and a time-sliced build, a window of a map or a map
//! that changes at every build keeps to rows. The field is the same either way: the sweeps'
//! fixed point is the shortest-path field.

use super::IntegrationBuilder;
use super::sweep::{INF, SweepOutcome, finish_plain};
use crate::cost::{CostModel, WALL};

/// Builds along the cheaper way before the other is tried again; twice as many after each try
/// that finds it dearer still, up to `RETRY_AFTER << MAX_BACKOFF`.
const RETRY_AFTER: u32 = 32;
const MAX_BACKOFF: u32 = 3;

/// Work (columns swept, in 1/256 units) that turning a padded cell's distance back into rows
/// counts as, without and with the vector kernel: measured against the sweeps' own work per
/// column on lak303d and orz100d (the figures are in `docs/benchmarks.md`).
const TURN_WORK: [u64; 2] = [128, 64];

/// The work per cell reached recorded for a way whose sweeps passed their budget: more than any
/// that converge, with room to add the turn's.
const HANDED_OVER: u64 = 1 << 40;

/// What a builder learned about sweeping one map (a [`CostField`](crate::CostField) version)
/// each way: the work per cell reached of the last sweeps along rows and along columns that
/// converged (in 1/256 columns swept; 0: none yet) and of the turn back into rows, builds left
/// before the way not taken is tried again, and tries in a row that found it dearer. 48 bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ways {
    map: u64,
    rows: u64,
    columns: u64,
    turn: u64,
    retry: u32,
    backoff: u32,
    /// The build under way tries the way not taken.
    trying: bool,
    /// The last sweeps along rows left a small footprint (see `small_footprint`): the copy into
    /// the field and the arrows then go over its spans only, which sweeps along columns, their
    /// footprint dropped, cannot.
    small: bool,
}

impl Ways {
    /// Whether the next one-shot sweeps over map `map` (0: one that may not go along columns)
    /// go along columns, if the map may be turned (`may_turn`: unchanged since the last build):
    /// rows first, then columns, then the cheaper way of the two, and the other now and then.
    pub(crate) fn choose(&mut self, map: u64, may_turn: bool) -> bool {
        self.trying = false;
        if map == 0 {
            return false;
        }
        if self.map != map {
            *self = Ways {
                map,
                ..Ways::default()
            };
        }
        if !may_turn || self.rows == 0 || self.small {
            return false;
        }
        if self.columns == 0 {
            self.retry = RETRY_AFTER;
            return true;
        }
        let columns = self.columns_cheaper();
        if self.retry == 0 {
            self.trying = true;
            return !columns;
        }
        self.retry -= 1;
        columns
    }

    fn columns_cheaper(&self) -> bool {
        self.columns + self.turn < self.rows
    }

    /// Sweeps along columns (or rows) over map `map` converged after `work` columns swept over
    /// `len` padded cells, reaching `reached` cells, with a small footprint or not; or passed
    /// their budget and handed the map to the wave (`reached` is `None`).
    pub(crate) fn learn(
        &mut self,
        map: u64,
        columns: bool,
        work: u64,
        len: usize,
        reached: Option<usize>,
        small: bool,
    ) {
        if map == 0 || map != self.map || reached == Some(0) {
            return;
        }
        if !columns {
            self.small = small;
        }
        let was = self.columns_cheaper();
        let per_cell = match reached {
            Some(reached) => (work * 256 / reached as u64).max(1),
            None => HANDED_OVER,
        };
        let reached = reached.unwrap_or(len).max(1);
        if columns {
            self.columns = per_cell;
        } else {
            self.rows = per_cell;
        }
        let vector = usize::from(crate::simd::cpu().avx2.is_some());
        self.turn = TURN_WORK[vector] * len as u64 / reached as u64;
        if self.trying {
            self.trying = false;
            self.backoff = if self.columns_cheaper() == was {
                (self.backoff + 1).min(MAX_BACKOFF)
            } else {
                0
            };
            self.retry = RETRY_AFTER << self.backoff;
        }
    }

    /// The work per cell reached along rows and along columns learned so far (0: none).
    #[cfg(test)]
    pub(crate) fn known(&self) -> (u64, u64) {
        (self.rows, self.columns)
    }
}

/// `src` (`rows` rows of `width` cells) into `dst` (`width` rows of `rows` cells), eight rows at
/// a time so that each cell written continues the last one written to its row.
pub(crate) fn transpose_plain<T: Copy>(src: &[T], width: usize, rows: usize, dst: &mut [T]) {
    const BAND: usize = 8;
    let dst = &mut dst[..width * rows];
    for y0 in (0..rows).step_by(BAND) {
        let band = BAND.min(rows - y0);
        let from = &src[y0 * width..(y0 + band) * width];
        for (x, column) in dst.chunks_exact_mut(rows).enumerate() {
            for (k, cell) in column[y0..y0 + band].iter_mut().enumerate() {
                *cell = from[k * width + x];
            }
        }
    }
}

/// The sweeps' end pass (see `sweep::finish`) over distances along columns, `src` (`rows` rows
/// of `width` cells), written turned back into rows in `dst` ([`transpose_plain`]), with the
/// vector kernel the CPU has: one pass over the map for the two. `src` is left INF in every
/// cell, ready for the next sweeps along columns.
pub(crate) fn transpose_finish(
    src: &mut [u32],
    width: usize,
    rows: usize,
    dst: &mut [u32],
    model: CostModel,
) -> SweepOutcome {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = crate::simd::cpu().avx2 {
        return avx2.transpose_finish(src, width, rows, dst, model);
    }
    transpose_plain(src, width, rows, dst);
    src.fill(INF);
    finish_plain(&mut dst[..width * rows], model)
}

impl IntegrationBuilder {
    /// Turn the map a quarter for sweeps along columns: the padded costs transposed (kept while
    /// the map stays the same) and the distances' other buffer swapped in, with the padded
    /// width and the height exchanged. Seeds (value, padded cell) are turned with it.
    pub(crate) fn turn_to_columns(&mut self, seeds: &mut [(u32, u32)]) {
        let (pw, rows) = (self.padded_width, self.height + 2);
        let len = pw * rows;
        if self.turned_costs.len() != len || self.turned_costs_of != self.cost_version {
            self.turned_costs.clear();
            self.turned_costs.resize(len, WALL);
            transpose_plain(&self.costs, pw, rows, &mut self.turned_costs);
            self.turned_costs_of = self.cost_version;
        }
        self.dist_inf = std::mem::take(&mut self.other_dist_inf) && self.other_dist.len() == len;
        self.other_dist.resize(len, INF);
        for (_, c) in seeds.iter_mut() {
            let (y, x) = (*c as usize / pw, *c as usize % pw);
            *c = (x * rows + y) as u32;
        }
        std::mem::swap(&mut self.costs, &mut self.turned_costs);
        std::mem::swap(&mut self.dist, &mut self.other_dist);
        (self.padded_width, self.width, self.height) = (rows, rows - 2, pw - 2);
        self.columns = true;
        #[cfg(test)]
        {
            self.builds_along_columns += 1;
        }
    }

    /// Back to rows after sweeps along columns, whose end pass turned the distances back into
    /// the other buffer ([`transpose_finish`]; every cell: the footprint, kept along columns, is
    /// dropped).
    pub(crate) fn turn_back_to_rows(&mut self) {
        let (turned_width, turned_rows) = (self.padded_width, self.height + 2);
        std::mem::swap(&mut self.costs, &mut self.turned_costs);
        std::mem::swap(&mut self.dist, &mut self.other_dist);
        (self.padded_width, self.width, self.height) =
            (turned_rows, turned_rows - 2, turned_width - 2);
        self.columns = false;
        self.touched_valid = false;
        self.inf_outside = false;
    }
}

#[cfg(test)]
mod tests {
    use glam::UVec2;

    use super::{RETRY_AFTER, Ways, transpose_plain};
    use crate::{
        BuildProgress, CostField, CostModel, FlowField, Grid, IntegrationBuilder, IntegrationField,
        WALL,
    };

    #[test]
    fn the_plain_transpose_turns_rows_into_columns() {
        // 2 rows of 3 into 3 rows of 2.
        let mut out = [0u8; 6];
        transpose_plain(&[1, 2, 3, 4, 5, 6], 3, 2, &mut out);
        assert_eq!(out, [1, 4, 2, 5, 3, 6]);
        // Eleven rows: a band of eight and one of three.
        let src: Vec<u32> = (0..5 * 11).collect();
        let mut out = vec![0; 5 * 11];
        transpose_plain(&src, 5, 11, &mut out);
        for (y, row) in src.chunks(5).enumerate() {
            for (x, &v) in row.iter().enumerate() {
                assert_eq!(out[x * 11 + y], v);
            }
        }
    }

    #[test]
    fn ways_try_rows_then_columns_then_keep_the_cheaper_and_try_the_other_less_often() {
        let mut ways = Ways::default();
        assert!(
            !ways.choose(0, true),
            "a map that may not turn keeps to rows"
        );
        assert!(!ways.choose(7, true), "rows first");
        ways.learn(7, false, 4000, 1000, Some(1000), false);
        assert!(ways.choose(7, true), "then columns");
        ways.learn(7, true, 1000, 1000, Some(1000), false);
        for _ in 0..RETRY_AFTER {
            assert!(ways.choose(7, true), "columns, cheaper by far");
        }
        assert!(!ways.choose(7, true), "rows tried again");
        ways.learn(7, false, 4000, 1000, Some(1000), false);
        for _ in 0..2 * RETRY_AFTER {
            assert!(
                ways.choose(7, true),
                "rows dearer again: tried half as often"
            );
        }
        assert!(!ways.choose(7, true));
        // Rows cheaper this time: kept to, columns tried again after the shortest wait.
        ways.learn(7, false, 500, 1000, Some(1000), false);
        for _ in 0..RETRY_AFTER {
            assert!(!ways.choose(7, true));
        }
        assert!(ways.choose(7, true));
        // Another map starts over; one whose sweeps along rows leave a small footprint keeps
        // to rows.
        assert!(!ways.choose(8, true));
        assert_eq!(ways.known(), (0, 0));
        ways.learn(8, false, 4000, 1000, Some(1000), true);
        for _ in 0..4 * RETRY_AFTER {
            assert!(!ways.choose(8, true));
        }
        // A map changed since the last build keeps to rows, and learns.
        assert!(!ways.choose(9, false));
        ways.learn(9, false, 4000, 1000, Some(1000), false);
        assert!(!ways.choose(9, false));
        assert!(ways.choose(9, true));
    }

    /// Walls across the map every `pitch` columns, each open for three cells at the bottom or
    /// at the top in turn: the shortest paths run down one lane and up the next, and sweeps
    /// along rows need a pass per lane where sweeps along columns need one.
    /// The ground costs 2, so that the lanes are not rooms (open rectangles of plain ground),
    /// which the wave would cross instead.
    fn lanes(width: u32, height: u32, pitch: u32) -> CostField {
        let mut cost = CostField::new(Grid::new(width, height).unwrap());
        cost.fill_rect(UVec2::ZERO, UVec2::new(width - 1, height - 1), 2)
            .unwrap();
        for (k, x) in (pitch..width).step_by(pitch as usize).enumerate() {
            let gap = if k % 2 == 0 { height - 3..height } else { 0..3 };
            for y in (0..height).filter(|y| !gap.contains(y)) {
                cost.set(UVec2::new(x, y), WALL).unwrap();
            }
        }
        cost
    }

    fn wave_only(
        cost: &CostField,
        goals: &[UVec2],
        model: CostModel,
    ) -> (IntegrationField, FlowField) {
        let mut b = IntegrationBuilder::new();
        b.set_sweeps(false);
        let field = b.build(cost, goals, model).unwrap();
        let mut flow = FlowField::new(*cost.grid());
        b.flow_into(&mut flow).unwrap();
        (field, flow)
    }

    /// The cells of `cells` that are walkable on `cost`.
    fn walkable(cost: &CostField, cells: impl Iterator<Item = UVec2>) -> Vec<UVec2> {
        cells.filter(|&g| cost.is_walkable(g)).collect()
    }

    /// Builds over `cost` from `goals` in turn with one builder, each checked against a wave.
    fn builds_equal_the_wave(b: &mut IntegrationBuilder, cost: &CostField, goals: &[UVec2]) {
        let model = CostModel::TenFourteen;
        let mut field = IntegrationField::new(*cost.grid(), model);
        let mut flow = FlowField::new(*cost.grid());
        for &goal in goals {
            b.build_into(cost, &[goal], model, &mut field).unwrap();
            b.flow_into(&mut flow).unwrap();
            let (want, want_flow) = wave_only(cost, &[goal], model);
            assert_eq!(field, want, "goal {goal}");
            assert_eq!(flow, want_flow, "goal {goal}");
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn lanes_across_the_rows_are_swept_along_columns_into_the_waves_field() {
        let cost = lanes(96, 40, 6);
        let goals = walkable(&cost, (0..12).map(|k| UVec2::new(1 + 7 * k, (k * 13) % 40)));
        let mut b = IntegrationBuilder::new();
        builds_equal_the_wave(&mut b, &cost, &goals);
        let (rows, columns) = b.sweep.ways().known();
        assert!(
            columns > 0 && columns * 2 < rows,
            "rows {rows}, columns {columns}"
        );
        let along_columns = b.builds_along_columns;
        assert!(
            along_columns as usize >= goals.len() - 2,
            "{along_columns} of {}",
            goals.len()
        );

        // A time-sliced build keeps to rows, and so does a build over a map just edited; the
        // next build over it, unchanged since, turns its new costs.
        let model = CostModel::TenFourteen;
        b.start(&cost, &goals[..1], model).unwrap();
        while let BuildProgress::Running { .. } = b.advance(200).unwrap() {}
        let mut field = IntegrationField::new(*cost.grid(), model);
        b.finish_into(&mut field).unwrap();
        assert_eq!(field, wave_only(&cost, &goals[..1], model).0);
        assert_eq!(b.builds_along_columns, along_columns);
        let mut edited = cost.clone();
        edited.set(UVec2::new(12, 20), 1).unwrap();
        edited.set(UVec2::new(30, 38), WALL).unwrap();
        builds_equal_the_wave(&mut b, &edited, &goals[..1]);
        assert_eq!(b.builds_along_columns, along_columns);
        builds_equal_the_wave(&mut b, &edited, &goals[1..4]);
        assert!(b.builds_along_columns > along_columns);
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn lanes_along_the_rows_keep_to_rows() {
        // The same lanes turned: sweeps along rows suit them.
        let turned = lanes(40, 96, 6);
        let mut cost = CostField::new(Grid::new(96, 40).unwrap());
        for y in 0..40 {
            for x in 0..96 {
                let c = turned.get(UVec2::new(y, x)).unwrap();
                cost.set(UVec2::new(x, y), c).unwrap();
            }
        }
        let goals = walkable(
            &cost,
            (0..8).map(|k| UVec2::new(2 + 11 * k, 1 + (k * 7) % 38)),
        );
        let mut b = IntegrationBuilder::new();
        builds_equal_the_wave(&mut b, &cost, &goals);
        let (rows, columns) = b.sweep.ways().known();
        assert!(
            rows > 0 && rows * 2 < columns,
            "rows {rows}, columns {columns}"
        );
        assert_eq!(b.builds_along_columns, 1, "tried once");
    }

    #[cfg(feature = "parallel")]
    #[test]
    #[cfg_attr(miri, ignore)]
    fn large_lanes_swept_along_columns_in_bands_give_the_waves_field() {
        // Large enough for the sweeps' bands on two threads.
        let cost = lanes(520, 300, 40);
        let goals = [
            UVec2::new(5, 150),
            UVec2::new(260, 10),
            UVec2::new(515, 290),
        ];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            let mut b = IntegrationBuilder::new();
            builds_equal_the_wave(&mut b, &cost, &goals);
            assert!(b.builds_along_columns >= 1);
        });
    }
}
