//! The crowd's parallel helpers: loops over pieces of the agent arrays, on rayon's threads with
//! `parallel`, whose results are the same bits whatever the number of threads (each piece
//! writes only its own entries, and reductions combine the pieces' results in order).

use glam::Vec2;

/// `work(k, (first, rest...))` for every piece `k` of `$size` slots of the arrays, each as
/// mutable slices (in parallel with `parallel`): for loops over slices, such as those compiled
/// twice, for the baseline CPU and for x86-64-v3 (see [`crate::crowd::steer::update`]), or those that
/// vectorise.
macro_rules! each_piece {
    ($size:expr, $work:expr, $first:expr $(, $rest:expr)*) => {{
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            $first
                .par_chunks_mut($size)
                $(.zip($rest.par_chunks_mut($size)))*
                .enumerate()
                .for_each($work);
        }
        #[cfg(not(feature = "parallel"))]
        {
            $first.chunks_mut($size)$(.zip($rest.chunks_mut($size)))*.enumerate().for_each($work);
        }
    }};
}

/// Agents per piece of a [`fold_chunks`] or [`each_chunk`] reduction.
pub(crate) const SLOTS_PER_REDUCTION: usize = 8192;

/// Fold `0..n` in pieces of [`SLOTS_PER_REDUCTION`] (in parallel with `parallel`), then combine the pieces'
/// results in order: the same bits whatever the number of threads, even for float sums.
pub(crate) fn fold_chunks<T: Copy + Send + Sync>(
    n: usize,
    partials: &mut Vec<T>,
    identity: T,
    part: impl Fn(std::ops::Range<usize>) -> T + Sync,
    combine: impl Fn(T, T) -> T,
) -> T {
    partials.clear();
    partials.resize(n.div_ceil(SLOTS_PER_REDUCTION), identity);
    each_chunk(partials, 1, |c, out| {
        out[0] = part(c * SLOTS_PER_REDUCTION..((c + 1) * SLOTS_PER_REDUCTION).min(n))
    });
    partials.iter().copied().fold(identity, combine)
}

/// Call `work(c, &mut out[c * width..(c + 1) * width])` for every piece `c` (in parallel with
/// `parallel`).
pub(crate) fn each_chunk<T: Send>(
    out: &mut [T],
    width: usize,
    work: impl Fn(usize, &mut [T]) + Sync,
) {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(width)
            .enumerate()
            .for_each(|(c, o)| work(c, o));
    }
    #[cfg(not(feature = "parallel"))]
    for (c, o) in out.chunks_mut(width).enumerate() {
        work(c, o);
    }
}

/// `work(c, piece)` for each piece of `width` of `items` (in parallel with `parallel`).
pub(crate) fn each_chunk_of<T: Sync>(items: &[T], width: usize, work: impl Fn(usize, &[T]) + Sync) {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        items
            .par_chunks(width)
            .enumerate()
            .for_each(|(c, o)| work(c, o));
    }
    #[cfg(not(feature = "parallel"))]
    for (c, o) in items.chunks(width).enumerate() {
        work(c, o);
    }
}

/// `out[k] = value(k)` for every `k` (in parallel with `parallel`). Piece by piece, each a
/// plain loop: rayon's per-item iterators cost twice as much per entry here.
pub(crate) fn fill<T: Send>(out: &mut [T], value: impl Fn(usize) -> T + Sync) {
    each_chunk(out, SLOTS_PER_REDUCTION, |c, piece| {
        for (k, o) in (c * SLOTS_PER_REDUCTION..).zip(piece) {
            *o = value(k);
        }
    });
}

/// `out[k] = value(order[k])` for every sorted entry `k` (in parallel with `parallel`).
pub(crate) fn gather(order: &[u32], out: &mut [Vec2], value: impl Fn(usize) -> Vec2 + Sync) {
    fill(&mut out[..order.len()], |k| value(order[k] as usize));
}

/// Split gathered pairs back into their two arrays, which end up `packed.len()` long.
pub(crate) fn unpack<A, B>(
    packed: &[Vec2],
    a: &mut Vec<A>,
    b: &mut Vec<B>,
    split: impl Fn(Vec2) -> (A, B) + Sync,
) where
    A: Copy + Default + Send,
    B: Copy + Default + Send,
{
    a.resize(packed.len(), A::default());
    b.resize(packed.len(), B::default());
    let work = |(c, (a, b)): (usize, (&mut [A], &mut [B]))| {
        for ((a, b), &v) in a.iter_mut().zip(b).zip(&packed[c * SLOTS_PER_REDUCTION..]) {
            (*a, *b) = split(v);
        }
    };
    each_piece!(SLOTS_PER_REDUCTION, work, a, b);
}

/// The largest of `part(range)` over the pieces of `0..n` of [`SLOTS_PER_REDUCTION`] (in
/// parallel with `parallel`), or 0: exact in any order, and nothing allocated.
pub(crate) fn max_over_pieces(
    n: usize,
    part: impl Fn(std::ops::Range<usize>) -> f32 + Sync + Send,
) -> f32 {
    let pieces = n.div_ceil(SLOTS_PER_REDUCTION);
    let piece = |c: usize| part(c * SLOTS_PER_REDUCTION..((c + 1) * SLOTS_PER_REDUCTION).min(n));
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        (0..pieces)
            .into_par_iter()
            .map(piece)
            .reduce(|| 0.0, f32::max)
    }
    #[cfg(not(feature = "parallel"))]
    (0..pieces).map(piece).fold(0.0, f32::max)
}
