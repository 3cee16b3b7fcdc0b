//! The synthetic benchmark of `prbench bench harness` loads through the real loader with the
//! real schema, row counts as asked, and profile text near the target.

use prbench_data::synthetic::{write_synthetic, SyntheticSpec, REAL_CONFIGS};

#[test]
fn synthetic_benchmark_loads_and_has_the_requested_shape() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SyntheticSpec::scaled(7, 0.01);
    assert_eq!(spec.rows, [8, 10, 11]);
    let s = write_synthetic(dir.path(), &spec).unwrap();
    assert_eq!(s.rows, 29);
    assert_eq!(s.files.len(), 3);
    let data = prbench_data::load(dir.path().to_str().unwrap(), &[]).unwrap();
    assert_eq!(data.examples.len(), 29);
    for ((config, _), &n) in REAL_CONFIGS.iter().zip(&spec.rows) {
        assert_eq!(data.examples.iter().filter(|e| e.subset == *config).count(), n, "{config}");
    }
    let profile: usize = data.examples.iter().flat_map(|e| &e.profile).map(|p| p.text.len()).sum();
    assert_eq!(profile, s.profile_bytes, "the loader sees every profile byte written");
    let target = spec.profile_bytes as f64;
    assert!(
        (profile as f64 - target).abs() < 0.25 * target,
        "profile text {profile} vs target {target}"
    );
    assert!(data.examples.iter().all(|e| !e.rubric_aspects.is_empty() && !e.profile.is_empty()));
    // Answers are under 100 words, as PRB's are (PROTOCOL.md §1), counted here by whitespace.
    for e in &data.examples {
        for (side, a) in [("chosen", &e.chosen), ("rejected", &e.rejected)] {
            let n = a.split_whitespace().count();
            assert!((40..100).contains(&n), "{} {side}: {n} words", e.id);
        }
    }

    // A row depends on (seed, id) and the mean profile size only: the same id in a spec with
    // other row counts but the same mean (30,000 bytes) is the same row.
    let a = tempfile::tempdir().unwrap();
    let data = {
        write_synthetic(
            a.path(),
            &SyntheticSpec { rows: [8, 10, 12], profile_bytes: 900_000, seed: 7 },
        )
        .unwrap();
        prbench_data::load(a.path().to_str().unwrap(), &[]).unwrap()
    };
    let dir2 = tempfile::tempdir().unwrap();
    write_synthetic(
        dir2.path(),
        &SyntheticSpec { rows: [2, 2, 2], profile_bytes: 180_000, seed: 7 },
    )
    .unwrap();
    let small = prbench_data::load(dir2.path().to_str().unwrap(), &[]).unwrap();
    let first = &small.examples[0];
    let same = data.examples.iter().find(|e| e.id == first.id).unwrap();
    assert_eq!(same.chosen, first.chosen);
    assert_eq!(same.profile.len(), first.profile.len());
}
