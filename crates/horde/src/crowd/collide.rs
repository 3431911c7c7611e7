//! The collision passes after the update: overlapping agents pushed apart by position, where
//! only those that may touch someone are searched, and the clearances that the next step
//! carries in its flags.

use super::*;
use crate::simd::{Level, Plain, V3, baseline};

impl Crowd {
    /// Push overlapping agents apart, each by half of every overlap, reading a fresh snapshot.
    ///
    /// `clearances` holds, as `f32` bits, each agent's clearance from its last neighbour search,
    /// less how far it has moved since, plus how far anyone could have moved when it was
    /// measured (the grid's `moved`). Any other agent has moved at most the growth of `moved`
    /// since, or else lowered the entry to its distance when it moved (the few knocked further
    /// than a walking step, see [`NeighbourGrid::take_moves`]). So an agent whose entry, less
    /// `moved`, still exceeds its touching distance cannot touch anyone, and is skipped without
    /// a search (exactly: its push would be zero). In a spread-out crowd that is most agents.
    ///
    /// After a pass that pushed only a few agents (listed in `pushed`), the next one searches
    /// only them and the agents near where they stood and stand (`sparse`): everyone else
    /// touches the same unmoved neighbours as in that pass, where its push was zero, so it
    /// would be zero again. Each pass flags the agents it pushes. True if the pass was sparse
    /// (it goes over everyone when too many are near those pushed).
    ///
    /// `since`: what is known of the moves since the snapshot was refreshed (see
    /// [`NeighbourGrid::take_moves`], with the agents in `pushed`).
    pub(crate) fn collision_pass<const CLEARANCE: bool>(
        &mut self,
        cost: &CostField,
        clearances: &mut [u32],
        since: Option<f32>,
        sparse: bool,
    ) -> bool {
        let ctx = WallContext {
            grid: self.grid,
            costs: cost.costs(),
        };
        #[cfg(test)]
        let may_skip = !self.test.search_everyone;
        #[cfg(not(test))]
        let may_skip = true;
        if sparse && self.mark_near_pushed::<CLEARANCE>(clearances) {
            #[cfg(test)]
            {
                self.test.sparse_passes += 1;
            }
            for &i in &self.marked {
                let i = i as usize;
                self.flags[i].unmark();
                push_apart::<CLEARANCE>(
                    Plain,
                    &self.neighbours,
                    &self.radii,
                    &ctx,
                    may_skip,
                    i,
                    &mut self.positions[i],
                    &mut self.flags[i],
                    &mut clearances[i],
                );
            }
            return true;
        }
        self.neighbours.take_moves::<CLEARANCE>(
            &self.positions,
            since,
            &self.pushed,
            clearances,
            &mut self.scratch.partial_moves,
        );
        let pass = PassContext {
            ng: &self.neighbours,
            radii: &self.radii,
            walls: ctx,
            may_skip,
            marks: None,
            #[cfg(test)]
            eight_pushes: Default::default(),
        };
        let isa = self.isa();
        let work = |(k, ((positions, flags), clearances)): PassPiece| {
            let first = k * SLOTS_PER_PIECE;
            run_pass::<CLEARANCE>(isa, &pass, first, positions, flags, clearances);
        };
        each_piece!(
            SLOTS_PER_PIECE,
            work,
            self.positions,
            self.flags,
            clearances
        );
        #[cfg(test)]
        {
            self.test.eight_pushes += pass.eight_pushes.into_inner();
        }
        false
    }

    /// A collision pass after one that pushed too many agents to list: each agent the last
    /// pass pushed (still flagged, see [`Self::list_pushed`]) marks itself and everyone who
    /// touched it where it stood or touches it where it stands, in parallel, one bit per slot;
    /// then the snapshot takes the moves and only the marked agents are searched. Anyone else
    /// touched no one when the last pass began (or it would have been pushed), and no one that
    /// moved since comes near it: its push would be zero, so the bits are those of a pass over
    /// everyone. (Its clearance, if kept, stays the bound the refresh leaves.) In a crowd
    /// walking in lanes the first pass pushes a few agents in ten, and this pass searches a
    /// few in three instead of all.
    pub(crate) fn marked_pass<const CLEARANCE: bool>(
        &mut self,
        cost: &CostField,
        clearances: &mut [u32],
    ) {
        #[cfg(test)]
        {
            self.test.marked_passes += 1;
        }
        let n = self.positions.len();
        self.marks.clear(n);
        let (ng, radii, positions) = (&self.neighbours, &self.radii, &self.positions);
        let (flags, marks) = (&self.flags, &self.marks);
        let isa = self.isa();
        each_chunk_of(flags, SLOTS_PER_REDUCTION, |c, flags| {
            mark_touched(
                isa,
                ng,
                c * SLOTS_PER_REDUCTION,
                flags,
                positions,
                radii,
                marks,
            );
        });
        self.neighbours.take_moves::<CLEARANCE>(
            &self.positions,
            None,
            &[],
            clearances,
            &mut self.scratch.partial_moves,
        );
        let ctx = WallContext {
            grid: self.grid,
            costs: cost.costs(),
        };
        let pass = PassContext {
            ng: &self.neighbours,
            radii: &self.radii,
            walls: ctx,
            may_skip: true,
            marks: Some(&self.marks),
            #[cfg(test)]
            eight_pushes: Default::default(),
        };
        let isa = self.isa();
        let work = |(k, ((positions, flags), clearances)): PassPiece| {
            let first = k * SLOTS_PER_PIECE;
            run_pass::<CLEARANCE>(isa, &pass, first, positions, flags, clearances);
        };
        each_piece!(
            SLOTS_PER_PIECE,
            work,
            self.positions,
            self.flags,
            clearances
        );
    }

    /// Most agents that the pushed list and the marked list hold.
    fn most_listed(&self) -> usize {
        (self.positions.len() / 64).max(64)
    }

    /// Room in the pushed and marked lists for [`Self::most_listed`] agents, and no more.
    pub(crate) fn make_room_for_few(&mut self) {
        let few = self.most_listed();
        for list in [&mut self.pushed, &mut self.marked] {
            if list.capacity() < few {
                list.reserve_exact(few - list.len());
            }
        }
    }

    /// List the agents that the last collision pass flagged as pushed, and clear their flags.
    /// False if they are too many to list: then the list is empty and every one of them stays
    /// flagged (the next pass goes over everyone, or over those `marked_pass` marks). After a
    /// sparse pass only the marked agents can be flagged.
    pub(crate) fn list_pushed(&mut self, sparse: bool) -> bool {
        let few = self.most_listed();
        self.pushed.clear();
        if sparse {
            for &i in &self.marked {
                let flags = &mut self.flags[i as usize];
                if flags.is_pushed() {
                    flags.clear_pushed();
                    self.pushed.push(i);
                }
            }
            return true;
        }
        // Eight flags at a time: in a spread-out crowd the pushed are rare. In a dense one the
        // list fills at once: then every one of them is left flagged, for the next pass.
        let any = u64::from_ne_bytes([AgentFlags::PUSHED_BIT; 8]);
        let mut fits = true;
        'words: for (w, word) in self.flags.chunks_mut(8).enumerate() {
            // (A whole word is read as one number; the last, short one is simply searched.)
            if let Ok(eight) = <&[AgentFlags; 8]>::try_from(&*word)
                && AgentFlags::word(eight) & any == 0
            {
                continue;
            }
            for (k, flags) in word.iter_mut().enumerate() {
                if flags.is_pushed() {
                    if self.pushed.len() == few {
                        fits = false;
                        break 'words;
                    }
                    flags.clear_pushed();
                    self.pushed.push((w * 8 + k) as u32);
                }
            }
        }
        if !fits {
            for &i in &self.pushed {
                self.flags[i as usize].set_pushed();
            }
            self.pushed.clear();
        }
        fits
    }

    /// How many agents are flagged as pushed (all of them, after a pass that pushed too many
    /// to list). O(agents), eight flags at a time.
    pub(crate) fn count_flagged(&self) -> usize {
        let (words, rest) = self.flags.as_chunks::<8>();
        let any = u64::from_ne_bytes([AgentFlags::PUSHED_BIT; 8]);
        let whole: u32 = words
            .iter()
            .map(|w| (AgentFlags::word(w) & any).count_ones())
            .sum();
        whole as usize + rest.iter().filter(|&&f| f.is_pushed()).count()
    }

    /// Before a sparse pass: take the moves of the agents the last pass pushed into the
    /// snapshot, and mark (in `marked`, slot order not kept) each of them and everyone who
    /// touched one where it stood or touches it where it stands. False, with nothing marked,
    /// if they are too many to list.
    fn mark_near_pushed<const CLEARANCE: bool>(&mut self, clearances: &mut [u32]) -> bool {
        let few = self.most_listed();
        self.marked.clear();
        let (ng, radii, positions) = (&self.neighbours, &self.radii, &self.positions);
        let (flags, marked) = (&mut self.flags, &mut self.marked);
        let mut fits = true;
        for &m in &self.pushed {
            let m = m as usize;
            ng.for_each_touched(Plain, m, positions[m], radii[m], |j| {
                if !flags[j].is_marked() {
                    if marked.len() == few {
                        fits = false;
                    } else {
                        flags[j].mark();
                        marked.push(j as u32);
                    }
                }
            });
            if !fits {
                break;
            }
        }
        if !fits {
            for &j in marked.iter() {
                flags[j as usize].unmark();
            }
            marked.clear();
            return false;
        }
        self.neighbours.take_moves::<CLEARANCE>(
            &self.positions,
            Some(0.0),
            &self.pushed,
            clearances,
            &mut self.scratch.partial_moves,
        );
        true
    }
}

/// One agent's share of a collision pass (see [`Crowd::collision_pass`]): the push away from
/// every agent it overlaps in the snapshot, its clearance, and the flag if it was pushed.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn push_apart<const CLEARANCE: bool>(
    level: impl Level,
    ng: &NeighbourGrid,
    radii: &[f32],
    walls: &WallContext,
    may_skip: bool,
    i: usize,
    pos: &mut Vec2,
    flags: &mut AgentFlags,
    clear: &mut u32,
) {
    let p = *pos;
    let r = radii[i];
    let within = r + ng.widest;
    if CLEARANCE && may_skip && f32::from_bits(*clear) - ng.moved > within + ng.slack {
        return;
    }
    let mut shift = Vec2::ZERO;
    // Its clearance: the nearest within `within`, or `within` if no one is (everyone not
    // visited stands further). A coarser bound than the search could measure, but measuring
    // everyone in the cells searched costs more than the later searches it would save.
    let mut nearest2 = within * within;
    // Slot j is the grid's entry j (the step sorted the agents).
    ng.for_each_near_in::<false>(level, p, i, within, |j, diff, d2| {
        nearest2 = smaller(nearest2, d2);
        let touch = r + radii[j];
        if d2 < touch * touch {
            let d = d2.sqrt();
            let overlap = touch - d;
            shift += coincident_safe_dir(diff, d, i as u32, j as u32) * (overlap * 0.5);
        }
    });
    if CLEARANCE {
        let clearance = nearest2.sqrt();
        *clear = (smaller(clearance, ng.cap) + ng.moved).to_bits();
    }
    if shift != Vec2::ZERO {
        *pos = walls.slide(p, shift.clamp_length_max(0.45 * walls.grid.cell_size()), r);
        flags.set_pushed();
    }
}

/// One bit per slot, set from any thread (see [`Crowd::marked_pass`]): 1/8 byte per agent.
#[derive(Debug, Default)]
pub(crate) struct MarkBits(Vec<std::sync::atomic::AtomicU64>);

impl Clone for MarkBits {
    /// Marks live within one collision pass, which a clone cannot interrupt: a clone starts
    /// without any.
    fn clone(&self) -> MarkBits {
        MarkBits::default()
    }
}

impl MarkBits {
    /// No marks, for `n` slots (allocating only when the crowd grew).
    fn clear(&mut self, n: usize) {
        for word in &mut self.0 {
            *word.get_mut() = 0;
        }
        let words = n.div_ceil(64);
        if self.0.len() < words {
            self.0
                .resize_with(words, || std::sync::atomic::AtomicU64::new(0));
        }
    }

    fn set(&self, i: usize) {
        // Only bits are ever set, so the order of the threads' writes does not matter.
        self.0[i / 64].fetch_or(1 << (i % 64), std::sync::atomic::Ordering::Relaxed);
    }

    /// The marks of slots `64 * w..64 * w + 64`, bit `k` for slot `64 * w + k`.
    fn word(&self, w: usize) -> u64 {
        self.0[w].load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A piece of the slots that a collision pass writes, as [`each_piece`] hands them out.
type PassPiece<'r> = (
    usize,
    ((&'r mut [Vec2], &'r mut [AgentFlags]), &'r mut [u32]),
);

/// What a collision pass reads.
pub(crate) struct PassContext<'a> {
    pub(crate) ng: &'a NeighbourGrid,
    pub(crate) radii: &'a [f32],
    pub(crate) walls: WallContext<'a>,
    pub(crate) may_skip: bool,
    /// Only the agents marked here are searched (all if `None`).
    pub(crate) marks: Option<&'a MarkBits>,
    /// Blocks pushed by [`push8`].
    #[cfg(test)]
    pub(crate) eight_pushes: std::sync::atomic::AtomicU32,
}

/// [`mark_rows`] in the compilation this CPU runs (x86-64-v3 with a `V3`).
fn mark_touched(
    v3: Option<V3>,
    ng: &NeighbourGrid,
    first: usize,
    flags: &[AgentFlags],
    positions: &[Vec2],
    radii: &[f32],
    marks: &MarkBits,
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(v3) = v3 {
        return v3.mark_rows(ng, first, flags, positions, radii, marks);
    }
    mark_rows(Plain, ng, first, flags, positions, radii, marks)
}

/// A collision pass over the slots `first..first + positions.len()`, in the compilation this
/// CPU runs.
fn run_pass<const CLEARANCE: bool>(
    v3: Option<V3>,
    ctx: &PassContext,
    first: usize,
    positions: &mut [Vec2],
    flags: &mut [AgentFlags],
    clearances: &mut [u32],
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(v3) = v3 {
        return v3.pass_rows::<CLEARANCE>(ctx, first, positions, flags, clearances);
    }
    pass_rows::<CLEARANCE>(Plain, ctx, first, positions, flags, clearances)
}

#[inline(always)]
pub(crate) fn pass_rows<const CLEARANCE: bool>(
    level: impl Level,
    ctx: &PassContext,
    first: usize,
    positions: &mut [Vec2],
    flags: &mut [AgentFlags],
    clearances: &mut [u32],
) {
    let (ng, radii, may_skip) = (ctx.ng, ctx.radii, ctx.may_skip);
    // Without clearances (a dense crowd) only the v3 compilation takes eight at a time.
    let lists = !CLEARANCE && level.v3().is_some();
    if !((CLEARANCE || lists) && may_skip) || ctx.marks.is_some() {
        pass_one_by_one::<CLEARANCE>(level, ctx, first, positions, flags, clearances);
        return;
    }
    // Eight at a time: first which of them search, then those; the last few one at a time.
    let n = positions.len();
    let whole = n - n % AGENTS_PER_BLOCK;
    let (less, widest, slack) = (ng.moved, ng.widest, ng.slack);
    let own_radii = &radii[first..first + n];
    let blocks = positions[..whole]
        .chunks_exact_mut(AGENTS_PER_BLOCK)
        .zip(flags[..whole].chunks_exact_mut(AGENTS_PER_BLOCK))
        .zip(clearances[..whole].chunks_exact_mut(AGENTS_PER_BLOCK))
        .zip(own_radii.chunks_exact(AGENTS_PER_BLOCK));
    for (b, (((positions, flags), clearances), radii)) in blocks.enumerate() {
        let (flags, clear, radii): (
            &mut [AgentFlags; AGENTS_PER_BLOCK],
            &[u32; AGENTS_PER_BLOCK],
            &[f32; AGENTS_PER_BLOCK],
        ) = (
            flags.try_into().expect("8"),
            (&*clearances).try_into().expect("8"),
            radii.try_into().expect("8"),
        );
        // (Left set if the last pass pushed too many to list.)
        let pushed = u64::from_ne_bytes([AgentFlags::PUSHED_BIT; AGENTS_PER_BLOCK]);
        let word = AgentFlags::word(flags) & !pushed;
        AgentFlags::set_word(flags, word);
        let alive = flag_lanes(word, AgentFlags::ALIVE_BIT);
        let block = first + b * AGENTS_PER_BLOCK;
        let mut search = if CLEARANCE {
            // Most of a spread-out crowd cannot touch anyone.
            alive & !baseline::far_mask(clear, radii, less, widest, slack)
        } else {
            // One pass over the entries round all eight lists whom each touches (most of a
            // crowd walking in lanes touch no one after the walk; most of one pressed
            // together touch several), and their pushes are taken from that list.
            #[cfg(target_arch = "x86_64")]
            if let Some(v3) = level.v3()
                && v3.push8(ctx, block, alive, positions, flags, radii)
            {
                continue;
            }
            // The cells round them hold too many to list.
            alive
        };
        while search != 0 {
            let l = search.trailing_zeros() as usize;
            search &= search - 1;
            let (pos, flags, clear) = (&mut positions[l], &mut flags[l], &mut clearances[l]);
            let i = block + l;
            push_apart::<CLEARANCE>(
                level, ng, ctx.radii, &ctx.walls, false, i, pos, flags, clear,
            );
        }
    }
    let rest = (&mut positions[whole..], &mut flags[whole..]);
    pass_one_by_one::<CLEARANCE>(
        level,
        ctx,
        first + whole,
        rest.0,
        rest.1,
        &mut clearances[whole..],
    );
}

/// Bit `l` of the flag `flag` (a single bit) of byte `l` of `word` (eight agents' flags).
#[inline(always)]
fn flag_lanes(word: u64, flag: u8) -> u32 {
    let bits = (word & u64::from_ne_bytes([flag; AGENTS_PER_BLOCK])) >> flag.trailing_zeros();
    (bits.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
}

/// [`pass_rows`] one agent at a time.
#[inline(always)]
fn pass_one_by_one<const CLEARANCE: bool>(
    level: impl Level,
    ctx: &PassContext,
    first: usize,
    positions: &mut [Vec2],
    flags: &mut [AgentFlags],
    clearances: &mut [u32],
) {
    let (ng, radii, may_skip) = (ctx.ng, ctx.radii, ctx.may_skip);
    if let Some(marks) = ctx.marks {
        // The marked, word by word: whether one agent is marked is a coin toss in a dense
        // crowd. (Pieces start at a multiple of 64.)
        debug_assert_eq!(first % 64, 0);
        for flags in flags.iter_mut() {
            flags.clear_pushed();
        }
        for (w, word) in (first / 64..(first + positions.len()).div_ceil(64)).enumerate() {
            let mut bits = marks.word(word);
            while bits != 0 {
                let k = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if flags[k].is_alive() {
                    let (pos, flags, clear) =
                        (&mut positions[k], &mut flags[k], &mut clearances[k]);
                    push_apart::<CLEARANCE>(
                        level,
                        ng,
                        radii,
                        &ctx.walls,
                        may_skip,
                        first + k,
                        pos,
                        flags,
                        clear,
                    );
                }
            }
        }
        return;
    }
    let entries = positions
        .iter_mut()
        .zip(flags.iter_mut())
        .zip(clearances.iter_mut());
    for (i, ((pos, flags), clear)) in (first..).zip(entries) {
        // (Left set if the last pass pushed too many to list.)
        flags.clear_pushed();
        if flags.is_alive() {
            push_apart::<CLEARANCE>(level, ng, radii, &ctx.walls, may_skip, i, pos, flags, clear);
        }
    }
}

/// For each agent of the slots `first..first + flags.len()` flagged pushed: mark it and
/// everyone it touched where it stood or touches where it stands (see
/// [`Crowd::marked_pass`]). The flags are read eight at a time: most words have none.
#[inline(always)]
pub(crate) fn mark_rows(
    level: impl Level,
    ng: &NeighbourGrid,
    first: usize,
    flags: &[AgentFlags],
    positions: &[Vec2],
    radii: &[f32],
    marks: &MarkBits,
) {
    for (w, word) in flags.chunks(AGENTS_PER_BLOCK).enumerate() {
        let mut eight = [AgentFlags::default(); AGENTS_PER_BLOCK];
        eight[..word.len()].copy_from_slice(word);
        let mut pushed = flag_lanes(AgentFlags::word(&eight), AgentFlags::PUSHED_BIT);
        while pushed != 0 {
            let m = first + w * AGENTS_PER_BLOCK + pushed.trailing_zeros() as usize;
            pushed &= pushed - 1;
            ng.for_each_touched(level, m, positions[m], radii[m], |j| marks.set(j));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::tests::*;

    #[test]
    fn levels_four_at_a_time_match_one_at_a_time() {
        // Clearances round the level borders (exact multiples included), below `less`, huge,
        // infinite and NaN, over slices whose lengths are and are not multiples of four; every
        // flag bit set or not below the levels.
        let mut next = uniform(0x001e_7e15);
        for round in 0..400 {
            let n = round % 37;
            let (less, inv_unit) = (next() * 2.0, 1.0 / (0.05 + next()));
            let clear: Vec<u32> = (0..n)
                .map(|k| {
                    let v = match k % 7 {
                        0 => less + (k as f32 + (k % 3) as f32 * 0.5) / inv_unit,
                        1 => less - next(),
                        2 => f32::INFINITY,
                        3 => f32::NAN,
                        4 => 1e30,
                        _ => less + next() * 80.0 / inv_unit,
                    };
                    v.to_bits()
                })
                .collect();
            let flags: Vec<u8> = (0..n).map(|k| (k * 37 + round) as u8).collect();
            let reach = (round % 70) as u8;
            let mut got: Vec<AgentFlags> =
                flags.iter().map(|&b| AgentFlags::from_bits(b)).collect();
            let count = clearance_levels(&mut got, &clear, less, inv_unit, reach);
            let got: Vec<u8> = got.iter().map(|f| f.bits()).collect();
            let (mut want, mut want_count) = (flags.clone(), 0);
            for (f, &c) in want.iter_mut().zip(&clear) {
                let bound = (f32::from_bits(c) - less) * inv_unit;
                let level = if bound.is_nan() {
                    0.0
                } else {
                    bound.clamp(0.0, 63.0)
                } as u8;
                // Alive and stuck kept, the level above them, written out by hand.
                *f = *f & 3 | level << 2;
                want_count += (level >= reach) as u32;
            }
            assert_eq!(got, want, "round {round}");
            assert_eq!(count, want_count, "round {round}");
        }
    }

    #[test]
    fn skipping_agents_clear_of_everyone_changes_no_bits() {
        // Clusters and loners, radii of three sizes, slow and fast agents, short and long steps:
        // the collision passes must give the same bits with and without skipping.
        let (cost, walkable, target, f) = scattered_scene(64, 11);
        let goal = cost.grid().cell_center(target);
        // (Both ways of stepping: measuring clearances, and the dense crowd's way without; and
        // all three kinds of collision pass: over everyone, over the few near those pushed, and
        // over the many near those pushed in a dense crowd.)
        let (mut measured, mut dense, mut sparse, mut marked) = (0, 0, 0, 0);
        for (round, dt) in [0.05f32, 0.2, 0.02, 0.05].into_iter().enumerate() {
            // More collision passes than the default, so that the later ones start from
            // overlaps that the earlier ones left.
            let config = CrowdConfig {
                collision_passes: 4,
                ..CrowdConfig::default()
            };
            let mut a = Crowd::new(*cost.grid(), config).unwrap();
            let mut next = uniform(0x51f1_5eed_u64 + round as u64);
            // The third round packs everyone into a quarter of the map; the fourth has few
            // agents, so that collision passes push few.
            let spread = if round == 2 { 4 } else { 1 };
            let agents = if round == 3 { 400 } else { 1500 };
            for k in 0..agents {
                let cell = walkable[(next() * walkable.len() as f32) as usize / spread];
                let (spread, r) = match k % 3 {
                    0 => (0.9, 0.35),
                    1 => (0.2, 0.2),
                    _ => (0.5, 0.6),
                };
                let offset = (Vec2::new(next(), next()) - 0.5) * spread;
                let params = AgentParams {
                    position: cost.grid().cell_center(cell) + offset,
                    radius: r,
                    max_speed: 1.0 + next() * 6.0,
                    group: 0,
                };
                a.add_agent(&cost, params).unwrap();
            }
            let mut b = a.clone();
            b.test.search_everyone = true;
            let groups = [Group { flow: &f, goal }];
            for step in 0..120 {
                match a.dense_steps {
                    0 => measured += 1,
                    _ => dense += 1,
                }
                a.step(dt, &cost, &groups).unwrap();
                b.step(dt, &cost, &groups).unwrap();
                let bits = |c: &Crowd| -> Vec<u32> {
                    let both = c.positions().iter().chain(&c.velocities);
                    both.flat_map(|p| [p.x.to_bits(), p.y.to_bits()]).collect()
                };
                assert!(bits(&a) == bits(&b), "dt {dt}, step {step}");
            }
            assert_eq!((b.test.sparse_passes, b.test.marked_passes), (0, 0));
            sparse += a.test.sparse_passes;
            marked += a.test.marked_passes;
        }
        assert!(
            measured > 20 && dense > 20 && sparse > 20 && marked > 20,
            "{measured} steps measured, {dense} dense, {sparse} sparse passes, {marked} marked"
        );
    }
}
