//! Parquet loading from the fixture written by tools/make_parquet_fixture.py (HF layout, two
//! configs: Art with Utf8/List columns, Society with LargeUtf8/LargeList columns). Expected
//! values are copied from that script.

mod common;

use common::{expected_hash, fixture, names};
use prbench_data::error::DataError;
use prbench_data::{load, ProfilePost, RubricAspect};

const ART_FILE: &str = "Art_and_Entertainment/test-00000-of-00001.parquet";
const SOC_FILE: &str = "Society_and_Culture/test-00000-of-00001.parquet";

#[test]
fn loads_hf_layout_with_nested_lists_and_both_offset_widths() {
    let dir = fixture("prb_hf");
    let spec = dir.to_str().unwrap();
    let ds = load(spec, &[]).unwrap();
    assert_eq!(ds.kind, "prb");
    assert_eq!(ds.source, spec);
    let ids: Vec<&str> = ds.examples.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["art-001", "art-002", "soc-001", "soc-002", "soc-003"]);
    let subsets: Vec<&str> = ds.examples.iter().map(|e| e.subset.as_str()).collect();
    assert_eq!(
        subsets,
        [
            "Art_and_Entertainment",
            "Art_and_Entertainment",
            "Society_and_Culture",
            "Society_and_Culture",
            "Society_and_Culture"
        ]
    );

    let a = &ds.examples[0];
    assert_eq!(a.question, "Which film should I watch tonight?");
    assert_eq!(a.profile.len(), 3);
    assert_eq!(
        a.profile[1],
        ProfilePost {
            id: "p2".into(),
            category: "Music".into(),
            text: "Joe Hisaishi scores make me cry.".into()
        }
    );
    assert_eq!(
        a.rubric_aspects[1],
        RubricAspect {
            aspect: "Strong soundtrack".into(),
            evidence: "Hisaishi scores".into(),
            reason: "music matters to the user".into()
        }
    );
    assert_eq!(a.narrative, "A Ghibli fan who cares about film music.");
    assert_eq!(a.category, "Movies");
    assert_eq!(a.chosen, "Try Princess Mononoke: Ghibli animation with a Hisaishi score.");
    assert_eq!(a.rejected, "Watch the latest live-action superhero blockbuster.");
    // Non-ASCII text survives.
    assert_eq!(
        ds.examples[1].question,
        "Recommend a novel for a long flight — something gripping."
    );
    assert_eq!(
        ds.examples[1].profile[0].text,
        "Mysteries with unreliable narrators are my favourite (ça va)."
    );

    // LargeUtf8 / LargeList config.
    let s = &ds.examples[2];
    assert_eq!(s.profile.len(), 2);
    assert_eq!(
        s.profile[0],
        ProfilePost {
            id: "a".into(),
            category: "Community".into(),
            text: "I hate confrontation.".into()
        }
    );
    assert_eq!(s.rubric_aspects.len(), 3);
    assert_eq!(
        s.rubric_aspects[2],
        RubricAspect {
            aspect: "Concrete script".into(),
            evidence: "asks how".into(),
            reason: "wants wording".into()
        }
    );
    // Empty profile, empty rubric and empty narrative are allowed.
    let e = &ds.examples[4];
    assert!(e.profile.is_empty() && e.rubric_aspects.is_empty() && e.narrative.is_empty());

    assert_eq!(
        ds.hash,
        expected_hash(&[(ART_FILE, &dir.join(ART_FILE)), (SOC_FILE, &dir.join(SOC_FILE))])
    );
}

#[test]
fn subset_selection_reads_only_selected_files() {
    let dir = fixture("prb_hf");
    let ds = load(dir.to_str().unwrap(), &names(&["SOCIETY"])).unwrap();
    assert_eq!(ds.examples.len(), 3);
    assert!(ds.examples.iter().all(|e| e.subset == "Society_and_Culture"));
    assert_eq!(ds.hash, expected_hash(&[(SOC_FILE, &dir.join(SOC_FILE))]));

    let err = load(dir.to_str().unwrap(), &names(&["Lifestyle"])).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::SubsetNotFound { .. }), "{msg}");
    assert!(msg.contains("Art_and_Entertainment, Society_and_Culture"), "{msg}");
}

#[test]
fn single_parquet_file_uses_its_stem_as_subset() {
    let path = fixture("prb_hf").join(ART_FILE);
    let ds = load(path.to_str().unwrap(), &[]).unwrap();
    assert_eq!(ds.examples.len(), 2);
    assert_eq!(ds.examples[0].subset, "test-00000-of-00001");
    assert_eq!(ds.hash, expected_hash(&[("test-00000-of-00001.parquet", &path)]));
}

#[test]
fn missing_column_is_named() {
    let path = fixture("bad_parquet/missing_rejected.parquet");
    let err = load(path.to_str().unwrap(), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::MissingColumn { .. }), "{msg}");
    assert!(
        msg.contains("missing_rejected.parquet")
            && msg.contains("`rejected`")
            && msg.contains("all rows"),
        "{msg}"
    );
}

#[test]
fn null_value_names_row_and_field() {
    let path = fixture("bad_parquet/null_chosen.parquet");
    let err = load(path.to_str().unwrap(), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::MissingField { row: 2, .. }), "{msg}");
    assert!(
        msg.contains("null_chosen.parquet") && msg.contains("row 2") && msg.contains("`chosen`"),
        "{msg}"
    );
}

#[test]
fn wrong_column_type_is_named() {
    let path = fixture("bad_parquet/profile_as_string.parquet");
    let err = load(path.to_str().unwrap(), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::ColumnType { .. }), "{msg}");
    assert!(
        msg.contains("profile_as_string.parquet")
            && msg.contains("`profile`")
            && msg.contains("Utf8"),
        "{msg}"
    );
}

#[test]
fn a_file_that_is_not_parquet_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("fake.parquet");
    std::fs::write(&path, b"not parquet at all").unwrap();
    let err = load(path.to_str().unwrap(), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::Parquet { .. }), "{msg}");
    assert!(msg.contains("fake.parquet"), "{msg}");
}

#[test]
fn another_split_beside_the_test_split_is_an_error_not_mixed_in() {
    let tmp = tempfile::tempdir().unwrap();
    let art = tmp.path().join("Art_and_Entertainment");
    std::fs::create_dir(&art).unwrap();
    let src = fixture("prb_hf").join("Art_and_Entertainment/test-00000-of-00001.parquet");
    std::fs::copy(&src, art.join("test-00000-of-00001.parquet")).unwrap();
    std::fs::copy(&src, art.join("train-00000-of-00001.parquet")).unwrap();
    let err = load(tmp.path().to_str().unwrap(), &[]).unwrap_err().to_string();
    assert!(
        err.contains("Art_and_Entertainment/train-00000-of-00001.parquet")
            && err.contains("only a `test` split"),
        "{err}"
    );
}
