//! Combinations grouped as a tree, for the reductions of long runs of
//! items: a fold over a whole run can stick on a subnormal.

use scan_core::ScanOp;

/// `acc ∘ x`, where `None` is the empty prefix (so that a scan never
/// combines with the identity, which for floats is not always exact: 0.0 + -0.0).
pub(crate) fn then<Op: ScanOp>(acc: Option<Op::Item>, x: Op::Item) -> Op::Item {
    match acc {
        Some(a) => Op::combine(a, x),
        None => x,
    }
}

/// Items folded one after another before their total joins the tree.
pub(crate) const BLOCK: usize = 64;

/// A combination of items pushed in scan order, grouped as a tree: blocks
/// of [`BLOCK`] folded one after another, then the blocks' totals joined
/// pairwise as a binary counter joins its bits, the earlier always on the
/// left.
///
/// Why not one fold over the whole piece: a long chain of combines can
/// meet a value that no later step moves. The recurrence's decay product,
/// folded over a million decays in (0.5, 1), underflows to the smallest
/// subnormal f32 and stays there (half of it rounds back up), so every
/// further multiplication is on a subnormal, which this machine's Xeon
/// does some twenty times slower: `scan_mapped` of 2^22 such steps took
/// 70-76 ms on 2 threads against 7 on one (which needs no totals), and
/// 6.8-7.3 ms this way. In a tree, the products of whole blocks and then of
/// equal halves meet, and a tiny product times a tiny one is 0.
pub(crate) struct Tree<T> {
    /// `levels[l]`: the total of the 2^l blocks before the current ones, if
    /// the count of blocks so far has bit l set. (On the heap, as many as a
    /// count has bits: an item may be large, and a piece's thread has a
    /// thread's stack. Growing the levels as needed instead ran 40% slower:
    /// 9.6 ms against 6.8 for 2^22 on 2 threads.)
    levels: Vec<Option<T>>,
    /// The fold of the current block so far.
    block: Option<T>,
    in_block: usize,
}

impl<T: Copy> Tree<T> {
    pub(crate) fn new() -> Self {
        Tree { levels: vec![None; usize::BITS as usize], block: None, in_block: 0 }
    }

    /// Folds `x` into the current block.
    #[inline(always)]
    pub(crate) fn push<Op: ScanOp<Item = T>>(&mut self, x: T) {
        self.block = Some(then::<Op>(self.block, x));
        self.in_block += 1;
        if self.in_block == BLOCK {
            if let Some(total) = self.block.take() {
                self.push_block::<Op>(total);
            }
        }
    }

    /// Adds the total of a whole block (the current one must be empty).
    pub(crate) fn push_block<Op: ScanOp<Item = T>>(&mut self, mut total: T) {
        self.in_block = 0;
        for level in self.levels.iter_mut() {
            match level.take() {
                Some(earlier) => total = Op::combine(earlier, total),
                None => {
                    *level = Some(total);
                    return;
                }
            }
        }
    }

    /// The combination of everything pushed (`None` when nothing was).
    pub(crate) fn total<Op: ScanOp<Item = T>>(self) -> Option<T> {
        // The levels hold earlier blocks the higher they are; the unfinished
        // block comes last.
        let joined = self.levels.iter().rev().flatten().fold(None, |acc, &t| Some(then::<Op>(acc, t)));
        match self.block {
            Some(rest) => Some(then::<Op>(joined, rest)),
            None => joined,
        }
    }
}

/// The totals of `L` runs reduced side by side, each a [`Tree`]: run `l` is
/// positions `l * sub .. (l + 1) * sub` (`item(s)`: the item at position
/// `s`), the last run also taking `L * sub .. len`. Whole blocks of the runs
/// are folded in lockstep, the `L` folds in registers (independent chains:
/// one fold alone is latency-bound); `before_block(j)` runs before the
/// blocks at offset `j` (for prefetches).
#[inline(always)]
pub(crate) fn reduce_side_by_side<Op: ScanOp, const L: usize>(
    item: impl Fn(usize) -> Op::Item,
    sub: usize,
    len: usize,
    mut before_block: impl FnMut(usize),
) -> [Option<Op::Item>; L] {
    let mut trees: [Tree<Op::Item>; L] = std::array::from_fn(|_| Tree::new());
    let whole = sub / BLOCK * BLOCK;
    for j in (0..whole).step_by(BLOCK) {
        before_block(j);
        let mut blocks: [Op::Item; L] = std::array::from_fn(|l| item(l * sub + j));
        for i in j + 1..j + BLOCK {
            for (l, block) in blocks.iter_mut().enumerate() {
                *block = Op::combine(*block, item(l * sub + i));
            }
        }
        for (tree, block) in trees.iter_mut().zip(blocks) {
            tree.push_block::<Op>(block);
        }
    }
    // Each run's last, partial block (the last run's with the rest).
    for (l, tree) in trees.iter_mut().enumerate() {
        let end = if l + 1 == L { len } else { (l + 1) * sub };
        for s in l * sub + whole..end {
            tree.push::<Op>(item(s));
        }
    }
    trees.map(Tree::total::<Op>)
}
