//! Row-parallel loops for the custom CPU kernels (std scoped threads, as many as candle uses
//! for its own kernels: `candle_core::utils::get_num_threads`).

/// Calls `f(first_row, chunk)` on consecutive chunks of whole rows of `dst` (rows of `row_len`
/// elements), one chunk per thread; runs inline when the work is small. The split never changes
/// a row's arithmetic, only which thread computes it.
pub fn for_row_chunks<F>(dst: &mut [f32], row_len: usize, f: F)
where
    F: Fn(usize, &mut [f32]) + Sync,
{
    let n_rows = dst.len().checked_div(row_len).unwrap_or(0);
    let threads = candle_core::utils::get_num_threads().clamp(1, n_rows.max(1));
    if threads == 1 || dst.len() < 1 << 14 {
        f(0, dst);
        return;
    }
    let rows_per = n_rows.div_ceil(threads);
    std::thread::scope(|scope| {
        let f = &f;
        for (i, chunk) in dst.chunks_mut(rows_per * row_len).enumerate() {
            scope.spawn(move || f(i * rows_per, chunk));
        }
    });
}
