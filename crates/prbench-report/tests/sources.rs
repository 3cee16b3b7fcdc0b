//! Reading results for the report and the leaderboard, on the committed fixture
//! (`tools/make_report_fixture.sh`) and on broken copies of it. Expected figures are read from
//! the fixture's summary.json with serde_json, not through the code under test.

use std::path::{Path, PathBuf};

use prbench_report::html::{render, ReportOptions};
use prbench_report::leaderboard::{self, Format};
use prbench_report::sources::load;
use prbench_testkit::copy_dir;
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sample-report")
}

fn opts() -> ReportOptions {
    ReportOptions {
        data: vec![fixture().join("data").display().to_string()],
        ..ReportOptions::default()
    }
}

#[test]
fn a_folder_of_runs_loads_every_run_matrix_and_bon_folder() {
    let s =
        load(&[fixture().join("runs"), fixture().join("bon"), fixture().join("correlation.json")])
            .unwrap();
    let mut ids: Vec<String> =
        s.runs.iter().map(|r| r.dir.file_name().unwrap().to_string_lossy().into_owned()).collect();
    ids.sort();
    assert_eq!(
        ids,
        ["longer", "shorter", "smol-none", "smol-oracle", "smol-planner", "smol-profile-k3"]
    );
    assert_eq!(s.matrices.len(), 1);
    assert_eq!(s.bons.len(), 1);
    assert_eq!(s.correlations.len(), 1);
    // The matrix's runs come in its condition order.
    let order: Vec<&str> = s.runs.iter().map(|r| r.summary.condition.as_str()).take(4).collect();
    assert_eq!(order, ["none", "profile:3", "planner", "oracle"]);
    // A run given again, directly or through its summary.json, is read once.
    let again = load(&[
        fixture().join("runs"),
        fixture().join("runs/longer"),
        fixture().join("runs/longer/summary.json"),
    ])
    .unwrap();
    assert_eq!(again.runs.len(), 6);
}

#[test]
fn leaderboard_csv_and_json_carry_the_summary_figures() {
    let s = load(&[fixture().join("runs")]).unwrap();
    let lb = leaderboard::build(&s.runs);
    let csv = leaderboard::render(&lb, Format::Csv).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture().join("runs/smol-none/summary.json")).unwrap(),
    )
    .unwrap();
    let row: Vec<&str> = lines
        .find(|l| l.split(',').nth(5) == Some("smol-none") && l.split(',').nth(3) == Some("model"))
        .expect("a row for smol-none")
        .split(',')
        .collect();
    for r in summary["rows"].as_array().unwrap() {
        let label = r["label"].as_str().unwrap();
        let col = head.iter().position(|h| *h == label).unwrap();
        assert_eq!(row[col].parse::<f64>().unwrap(), r["strict"].as_f64().unwrap(), "{label}");
        assert_eq!(
            row[col + 1].parse::<f64>().unwrap(),
            r["strict_ci"][0].as_f64().unwrap(),
            "{label} lo"
        );
        assert_eq!(
            row[col + 2].parse::<f64>().unwrap(),
            r["strict_ci"][1].as_f64().unwrap(),
            "{label} hi"
        );
    }
    let json: Value =
        serde_json::from_str(&leaderboard::render(&lb, Format::Json).unwrap()).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), lb.rows.len());
    // Upper bounds last; benchmark rows by headline, best first.
    let upper: Vec<bool> = lb.rows.iter().map(|r| r.upper_bound).collect();
    assert_eq!(upper.iter().rposition(|u| !u).map(|i| i + 1), upper.iter().position(|u| *u));
    let heads: Vec<f64> =
        lb.rows.iter().filter(|r| !r.upper_bound).map(|r| r.headline().unwrap()).collect();
    assert!(heads.windows(2).all(|w| w[0] >= w[1]), "{heads:?}");
    let latex = leaderboard::render(&lb, Format::Latex).unwrap();
    assert!(
        latex.contains("\\begin{tabular}")
            && latex.contains("(upper bound)")
            && !latex.contains(" % ")
    );
}

#[test]
fn a_broken_outcomes_line_is_named_by_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("smol-none");
    copy_dir(&fixture().join("runs/smol-none"), &run);
    let path = run.join("outcomes.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[2] = lines[2].replace("\"result\":\"", "\"result\":\"maybe-");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let err = load(&[run]).unwrap_err().to_string();
    assert!(err.contains("outcomes.jsonl") && err.contains("line 3"), "{err}");
}

#[test]
fn a_run_with_missing_outcomes_is_refused_not_shown_short() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("longer");
    copy_dir(&fixture().join("runs/longer"), &run);
    let path = run.join("outcomes.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: Vec<&str> = text.lines().take(5).collect();
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    let err = load(&[run]).unwrap_err().to_string();
    assert!(err.contains("5 outcomes but summary.json counts 12"), "{err}");
}

#[test]
fn paths_that_hold_no_result_are_refused_with_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let err = load(&[dir.path().to_path_buf()]).unwrap_err().to_string();
    assert!(err.contains("holds no finished run folder"), "{err}");
    let other = dir.path().join("x.json");
    std::fs::write(&other, "{\"a\": 1}").unwrap();
    let err = load(&[other]).unwrap_err().to_string();
    assert!(err.contains("not a run folder") && err.contains("correlate"), "{err}");
    let err = load(&[dir.path().join("absent")]).unwrap_err().to_string();
    assert!(err.contains("no such file"), "{err}");
    // A matrix whose runs are not beside it.
    let m = dir.path().join("lonely-matrix.json");
    std::fs::copy(fixture().join("runs/smol-matrix.json"), &m).unwrap();
    let err = load(&[m]).unwrap_err().to_string();
    assert!(err.contains("smol-none") && err.contains("beside its run folders"), "{err}");
}

#[test]
fn the_item_browser_needs_the_runs_own_dataset() {
    let s = load(&[fixture().join("runs/longer")]).unwrap();
    // Another dataset (the unmodified sample) has another content hash.
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/sample");
    let err = render(
        &s,
        &ReportOptions { data: vec![sample.display().to_string()], ..ReportOptions::default() },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("content hash") && err.contains("--data"), "{err}");
    let err = render(
        &s,
        &ReportOptions { data: vec!["/nonexistent/prb".into()], ..ReportOptions::default() },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("--data"), "{err}");
    let html = render(&s, &opts()).unwrap();
    assert!(html.contains("id=\"prb-data\""));
}

#[test]
fn the_page_requests_nothing_and_escapes_data() {
    let s =
        load(&[fixture().join("runs"), fixture().join("bon"), fixture().join("correlation.json")])
            .unwrap();
    let html = render(&s, &opts()).unwrap();
    // No reference to any host: no src/href to http(s), no CDN, a CSP that forbids fetches.
    for bad in ["src=\"http", "href=\"http", "src='http", "@import", "url(http"] {
        assert!(!html.contains(bad), "the page references `{bad}`");
    }
    assert!(html.contains("default-src 'none'"));
    // The hostile strings of the fixture appear only escaped.
    assert!(!html.contains("<script>alert(1)</script>"));
    assert!(!html.contains("<img src=x"));
    assert_eq!(html.matches("<script").count(), 2, "only the data and the page script");
}

#[test]
fn runs_on_other_data_are_ranked_apart_never_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other-data-run");
    copy_dir(&fixture().join("runs/shorter"), &other);
    let path = other.join("summary.json");
    let mut summary: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    summary["dataset_hash"] = Value::from("0".repeat(64));
    summary["dataset"] = Value::from("elsewhere");
    std::fs::write(&path, serde_json::to_string(&summary).unwrap()).unwrap();
    let s =
        load(&[fixture().join("runs/smol-none"), other, fixture().join("runs/longer")]).unwrap();
    let lb = leaderboard::build(&s.runs);
    assert_eq!(lb.groups.len(), 2);
    let groups: Vec<usize> = lb.rows.iter().map(|r| r.group).collect();
    assert!(groups.windows(2).all(|w| w[0] <= w[1]), "groups interleave: {groups:?}");
    assert_eq!(
        lb.rows.iter().filter(|r| r.group == 1).map(|r| r.run_id.as_str()).collect::<Vec<_>>(),
        ["other-data-run"; 5],
        "the run and 4 of its summary's baselines (its own baseline:shorter is the run)"
    );
    let md = leaderboard::render(&lb, Format::Markdown).unwrap();
    assert!(
        md.contains("| dataset |")
            && md.contains("elsewhere, 12 items")
            && md.contains("ranked only within each"),
        "{md}"
    );
}

#[test]
fn an_unfinished_run_is_named_with_how_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("intr-oracle");
    copy_dir(&fixture().join("runs/smol-oracle"), &run);
    std::fs::remove_file(run.join("summary.json")).unwrap();
    let err = load(std::slice::from_ref(&run)).unwrap_err().to_string();
    assert!(err.contains("unfinished run") && err.contains("--run-id intr-oracle"), "{err}");
    // In a folder of runs it is left out with the same note, and the others load.
    copy_dir(&fixture().join("runs/longer"), &dir.path().join("longer"));
    let s = load(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(s.runs.len(), 1);
    assert_eq!(s.skipped.len(), 1);
    assert!(
        s.skipped[0].contains("intr-oracle") && s.skipped[0].contains("unfinished"),
        "{:?}",
        s.skipped
    );
}

/// The figures of baseline `name` in the summary.json of fixture run `run`, read with
/// serde_json: (what it sees, its rows).
fn fixture_baseline(run: &str, name: &str) -> (String, Value) {
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture().join("runs").join(run).join("summary.json")).unwrap(),
    )
    .unwrap();
    let b = summary["baselines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap()
        .clone();
    (b["sees"].as_str().unwrap().to_string(), b["rows"].clone())
}

#[test]
fn a_baseline_rows_condition_is_the_runs_and_what_it_sees_has_its_own_field() {
    // The two runs report slot-a with the same figures, so it is one row, under both conditions.
    let (sees, none_rows) = fixture_baseline("smol-none", "baseline:slot-a");
    assert_eq!(
        fixture_baseline("smol-oracle", "baseline:slot-a"),
        (sees.clone(), none_rows),
        "the fixture's premise"
    );
    assert_eq!(sees, "slot order only");
    let s = load(&[
        fixture().join("runs/smol-none"),
        fixture().join("runs/smol-oracle"),
        fixture().join("runs/longer"),
    ])
    .unwrap();
    let lb = leaderboard::build(&s.runs);
    let slot_a: Vec<_> = lb.rows.iter().filter(|r| r.model == "baseline:slot-a").collect();
    assert_eq!(slot_a.len(), 1);
    assert_eq!(slot_a[0].condition, "none, oracle");
    assert_eq!(slot_a[0].sees.as_deref(), Some("slot order only"));
    // A baseline run as the model: its run's condition, and what its summary says it sees.
    let longer = lb.rows.iter().find(|r| r.run_id == "longer" && !r.from_summary).unwrap();
    assert_eq!(
        (longer.condition.as_str(), longer.sees.as_deref()),
        ("none", Some(fixture_baseline("longer", "baseline:longer").0.as_str()))
    );
    // Models see what their condition shows: no `sees`.
    assert!(lb.rows.iter().filter(|r| r.model.starts_with("gguf:")).all(|r| r.sees.is_none()));
    for r in &lb.rows {
        assert!(
            ["none", "oracle", "none, oracle"].contains(&r.condition.as_str()),
            "a condition column holding `{}`",
            r.condition
        );
    }
    // The same in every format.
    let csv = leaderboard::render(&lb, Format::Csv).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let head = reader.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let row = reader.records().map(|r| r.unwrap()).find(|r| &r[0] == "baseline:slot-a").unwrap();
    assert_eq!(
        (&row[col("condition")], &row[col("sees")], &row[col("kind")]),
        ("none, oracle", "slot order only", "baseline")
    );
    let json: Value =
        serde_json::from_str(&leaderboard::render(&lb, Format::Json).unwrap()).unwrap();
    let j =
        json["rows"].as_array().unwrap().iter().find(|r| r["model"] == "baseline:slot-a").unwrap();
    assert_eq!(
        (j["condition"].as_str(), j["sees"].as_str()),
        (Some("none, oracle"), Some("slot order only"))
    );
    let md = leaderboard::render(&lb, Format::Markdown).unwrap();
    assert!(md.contains("| model | condition | sees | n |"), "{md}");
    assert!(
        md.contains("| baseline:slot-a (control baseline) | none, oracle | slot order only | 12 |"),
        "{md}"
    );
    let html = render(&s, &opts()).unwrap();
    assert!(html.contains("<td data-col=\"condition\" data-v=\"none, oracle\">none, oracle</td><td data-col=\"sees\" data-v=\"slot order only\">slot order only</td>"), "the page's leaderboard");
}

#[test]
fn a_copied_run_folder_is_listed_once_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture().join("runs/longer"), &dir.path().join("longer"));
    copy_dir(&fixture().join("runs/longer"), &dir.path().join("longer-copy"));
    let s = load(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(s.runs.len(), 1);
    assert_eq!(s.copies, [(dir.path().join("longer-copy"), dir.path().join("longer"))]);
    assert!(
        s.skipped.len() == 1
            && s.skipped[0].contains("longer-copy")
            && s.skipped[0].contains("copy of"),
        "{:?}",
        s.skipped
    );
    // Given by name, after its original: the same.
    let s = load(&[dir.path().join("longer"), dir.path().join("longer-copy")]).unwrap();
    assert_eq!(s.runs.len(), 1);
    let lb = leaderboard::build(&s.runs);
    assert_eq!(lb.rows.iter().filter(|r| r.model == "baseline:longer").count(), 1);
    // A folder holding only a copy of a run given before is not "nothing to report".
    let only = dir.path().join("only");
    copy_dir(&fixture().join("runs/longer"), &only.join("again"));
    let s = load(&[dir.path().join("longer"), only]).unwrap();
    assert_eq!((s.runs.len(), s.copies.len()), (1, 1));
    // Another run with the same id but other outcomes is kept: its results differ.
    let other = dir.path().join("longer-rerun");
    copy_dir(&fixture().join("runs/longer"), &other);
    let path = other.join("outcomes.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replacen("\"score_chosen\":599.0", "\"score_chosen\":598.0", 1);
    assert_ne!(changed, text);
    std::fs::write(&path, changed).unwrap();
    let s = load(&[dir.path().join("longer"), other]).unwrap();
    assert_eq!(s.runs.len(), 2);
}

#[test]
fn report_data_of_another_dataset_says_so_with_the_same_kind_of_hash_on_both_sides() {
    let s = load(&[fixture().join("runs/longer")]).unwrap();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture().join("runs/longer/manifest.json")).unwrap(),
    )
    .unwrap();
    let run_hash = manifest["dataset_hash"].as_str().unwrap();
    // The run evaluated every subset of its data, which are the sample's three: the sample's
    // whole content hash is the comparable one.
    assert_eq!(manifest["subsets"].as_array().unwrap().len(), 3);
    let sample =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/sample").display().to_string();
    let sample_hash = prbench_data::load(&sample, &[]).unwrap().hash;
    assert_ne!(sample_hash, run_hash);
    let err = render(&s, &ReportOptions { data: vec![sample.clone()], ..ReportOptions::default() })
        .unwrap_err()
        .to_string();
    assert!(err.contains("made on another dataset than the --data given"), "{err}");
    assert!(
        err.contains(&format!("is {run_hash}"))
            && err.contains(&format!("--data `{sample}` has {sample_hash}")),
        "{err}"
    );
    assert!(!err.contains("changed since"), "blames the files: {err}");
    // The run's own data, wherever it is now.
    let data = fixture().join("data").display().to_string();
    assert!(
        render(&s, &ReportOptions { data: vec![data.clone()], ..ReportOptions::default() }).is_ok()
    );
    // Beside it, a --data no run was made on is refused, not silently unused.
    let err = render(
        &s,
        &ReportOptions { data: vec![sample.clone(), data.clone()], ..ReportOptions::default() },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!("--data `{sample}`: no run was made on this dataset"))
            && err.contains(&sample_hash),
        "{err}"
    );
}

#[test]
fn check_out_lets_a_report_replace_only_a_report_prbench_wrote() {
    use prbench_report::html::{check_out, MARK};
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("new.html");
    check_out(&new).unwrap();
    // A report this code wrote, and one written before reports carried the mark (the same
    // page without its line).
    let html = render(&load(&[fixture().join("runs/longer")]).unwrap(), &opts()).unwrap();
    let ours = dir.path().join("ours.html");
    std::fs::write(&ours, &html).unwrap();
    check_out(&ours).unwrap();
    let older = dir.path().join("older.html");
    std::fs::write(&older, html.replacen(&format!("{MARK}\n"), "", 1)).unwrap();
    check_out(&older).unwrap();
    // Anything else is refused: a run's files, a matrix, data, another page, a folder.
    let page = dir.path().join("page.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html>\n<html><head><title>notes</title></head><body>mine</body></html>\n",
    )
    .unwrap();
    let copied = dir.path().join("runs");
    copy_dir(&fixture().join("runs"), &copied);
    for path in [
        copied.join("longer/summary.json"),
        copied.join("longer/outcomes.jsonl"),
        copied.join("smol-matrix.json"),
        fixture().join("data/Art_and_Entertainment.jsonl"),
        page,
    ] {
        let err = check_out(&path).unwrap_err().to_string();
        assert!(
            err.contains("is not a report prbench wrote")
                && err.contains(&path.display().to_string()),
            "{err}"
        );
    }
    let err = check_out(&copied).unwrap_err().to_string();
    assert!(err.contains("is a folder"), "{err}");
    let err = check_out(&dir.path().join("absent/r.html")).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
    // A new file is named as a page: a report never lands in a data folder as a subset file.
    for name in ["Art.jsonl", "extra.json", "report"] {
        let err = check_out(&dir.path().join(name)).unwrap_err().to_string();
        assert!(err.contains("is not named .html"), "{name}: {err}");
    }
    check_out(&dir.path().join("Report.HTM")).unwrap();
}
