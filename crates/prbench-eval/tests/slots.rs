//! Slot assignment: seeded per (seed, example id), balanced per subset, and independent of
//! batch size, thread count and example order (PROTOCOL.md §4).

mod common;

use common::{sample, Spy};
use prbench_eval::condition::Condition;
use prbench_eval::prompt::Prompts;
use prbench_eval::runner::{evaluate, Backend, EvalOptions, Silent};
use prbench_eval::slots::{assign_slots, Slot};

#[test]
fn matches_an_independent_sha256_computation() {
    // Expected values computed with Python's hashlib: for each subset, sort ids by
    // sha256(struct.pack('<Q', 42) + id.encode()), then alternate A, B, A, B.
    let expected = [
        ("sample-art-02", Slot::A),
        ("sample-art-01", Slot::B),
        ("sample-art-04", Slot::A),
        ("sample-art-03", Slot::B),
        ("sample-life-03", Slot::A),
        ("sample-life-01", Slot::B),
        ("sample-life-04", Slot::A),
        ("sample-life-02", Slot::B),
        ("sample-soc-04", Slot::A),
        ("sample-soc-03", Slot::B),
        ("sample-soc-02", Slot::A),
        ("sample-soc-01", Slot::B),
    ];
    let slots = assign_slots(&sample(), 42);
    for (id, slot) in expected {
        assert_eq!(slots[id], slot, "{id}");
    }
}

#[test]
fn unchanged_by_order_and_balanced_per_subset() {
    let examples = sample();
    let base = assign_slots(&examples, 7);
    let mut reversed = examples.clone();
    reversed.reverse();
    assert_eq!(assign_slots(&reversed, 7), base);
    let mut rotated = examples.clone();
    rotated.rotate_left(5);
    assert_eq!(assign_slots(&rotated, 7), base);
    for subset in
        ["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"]
    {
        let a = examples.iter().filter(|e| e.subset == subset && base[&e.id] == Slot::A).count();
        assert_eq!(a, 2, "{subset}");
    }
    assert_ne!(assign_slots(&examples, 8), base, "another seed gives another draw");
}

#[test]
fn outcomes_unchanged_by_batch_size_and_threads() {
    let examples = sample();
    let prompts = Prompts::new();
    let run = |batch: usize| {
        let spy = Spy::default();
        let opts = EvalOptions { batch_size: batch, ..EvalOptions::new(Condition::None) };
        let out = evaluate(&examples, Backend::Judge(&spy), &opts, &prompts, &Silent).unwrap();
        out.into_iter().map(|o| (o.example_id, o.chosen_slot, o.result)).collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(run(3), one);
    assert_eq!(run(100), one);
    let threaded = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2).map(|_| s.spawn(|| run(5))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    assert!(threaded.iter().all(|r| *r == one));
}
