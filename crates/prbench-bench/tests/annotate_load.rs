//! The load test's own check: every acknowledged save is found in the store reopened from
//! disk. (Its speed is reported by `prbench bench annotate`, not asserted here.)

use prbench_bench::annotate_load::{load_test, table, LoadOptions};

#[test]
fn every_acknowledged_save_is_in_the_reopened_store() {
    let r =
        load_test(&LoadOptions { annotators: 6, seconds: 1.0, items: 9, reference_seconds: 0.2 })
            .unwrap();
    assert!(r.http.saves > 0, "{r:?}");
    assert_eq!((r.lost, r.checked), (0, r.http.saves), "{r:?}");
    // 9 items × 2 raters over 6 annotators = 3 each; after a second every position is rated.
    assert_eq!(r.export_rows, 9 * 2 * 8);
    assert!(r.reference.as_ref().is_some_and(|x| x.saves > 0));
    let t = table(&r);
    assert!(t.contains("| save latency p99 (ms) |") && t.contains("lost: 0"), "{t}");
    let e = load_test(&LoadOptions { annotators: 0, ..LoadOptions::default() }).unwrap_err();
    assert!(e.to_string().contains("at least 1 annotator"), "{e}");
}
