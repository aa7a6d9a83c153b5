//! Which rows of a stream of batches a read hands out (`skip_rows`, `n_rows`).

use arrow_array::RecordBatch;

/// Which rows of a stream of batches are handed out: the first `skip` are dropped, then at most
/// `left` (`None`: all) are given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowWindow {
    pub skip: usize,
    pub left: Option<usize>,
}

impl RowWindow {
    /// Every row.
    pub(crate) const ALL: RowWindow = RowWindow {
        skip: 0,
        left: None,
    };

    /// No row is left to give.
    pub(crate) fn done(&self) -> bool {
        self.left == Some(0)
    }

    /// The part of `b` handed out; `None` when all of its rows were dropped.
    pub(crate) fn cut(&mut self, b: RecordBatch) -> Option<RecordBatch> {
        let from = self.skip.min(b.num_rows());
        self.skip -= from;
        let mut n = b.num_rows() - from;
        if let Some(left) = &mut self.left {
            n = n.min(*left);
            *left -= n;
        }
        match (from, n) {
            (0, n) if n == b.num_rows() => Some(b),
            (_, 0) if from > 0 => None,
            _ => Some(b.slice(from, n)),
        }
    }
}
