//! `eval` writes the HTML reports and says where; `prbench report` and `prbench leaderboard`
//! from the command line (control baselines: no model needed).

mod common;

use common::{prbench, sample, text};
use prbench_testkit::copy_dir;

#[test]
fn eval_writes_reports_and_report_and_leaderboard_read_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:longer",
            "--condition",
            "none,oracle",
            "--run-id",
            "lg",
            "--quiet",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let runs = tmp.path().join("runs");
    assert!(
        runs.join("lg-none/report.html").is_file() && runs.join("lg-oracle/report.html").is_file()
    );
    assert!(runs.join("lg-report.html").is_file(), "the matrix's report beside it");
    assert!(err.contains("HTML report of all 2 runs in runs/lg-report.html"), "{err}");
    // --no-report writes none.
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:shorter",
            "--run-id",
            "sh",
            "--quiet",
            "--bootstrap",
            "200",
            "--no-report",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!runs.join("sh/report.html").exists());
    // One report of both models.
    let out = prbench(&["report", "runs", "--out", "both.html"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("report of 3 runs, 1 matrix in both.html"),
        "{}",
        text(&out.stderr)
    );
    let html = std::fs::read_to_string(tmp.path().join("both.html")).unwrap();
    assert!(html.contains("data-run=\"sh\"") && html.contains("data-run=\"lg-oracle\""));
    // --out in a folder that does not exist.
    let out = prbench(&["report", "runs", "--out", "nodir/x.html"], tmp.path());
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("folder `nodir` does not exist"), "{}", text(&out.stderr));
    // The leaderboard in each format, with the figures of summary.json.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(runs.join("sh/summary.json")).unwrap())
            .unwrap();
    let micro = summary["rows"].as_array().unwrap().iter().find(|r| r["label"] == "micro").unwrap()
        ["strict"]
        .as_f64()
        .unwrap();
    let out = prbench(&["leaderboard", "runs", "--format", "csv"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == "micro").unwrap();
    let row: Vec<&str> = csv.lines().find(|l| l.contains(",sh,")).unwrap().split(',').collect();
    assert_eq!(row[col].parse::<f64>().unwrap(), micro);
    for format in ["md", "json", "latex"] {
        let out = prbench(&["leaderboard", "runs", "--format", format], tmp.path());
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("baseline:shorter"), "{format}");
    }
}

#[test]
fn a_control_baseline_run_under_oracle_is_no_upper_bound_on_the_leaderboard() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            "baseline:longer",
            "--condition",
            "oracle",
            "--run-id",
            "lo",
            "--quiet",
            "--bootstrap",
            "100",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = prbench(&["leaderboard", "runs", "--format", "json"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lb: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = lb["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == "lo" && r["model"] == "baseline:longer")
        .expect("the run's row");
    // The rule compares lengths; it never reads the rubric the oracle condition shows a model.
    assert_eq!(row["upper_bound"], false, "{row}");
    let md = text(&prbench(&["leaderboard", "runs"], tmp.path()).stdout);
    assert!(!md.contains("(upper bound)"), "{md}");
}

/// A control-baseline eval of `data` in `dir` under the run id `id`, plus `extra` flags.
fn eval_baseline(dir: &std::path::Path, data: &str, id: &str, extra: &[&str]) {
    let mut args = vec![
        "eval",
        "--data",
        data,
        "--model",
        "baseline:longer",
        "--run-id",
        id,
        "--quiet",
        "--bootstrap",
        "100",
        "--no-report",
    ];
    args.extend_from_slice(extra);
    let out = prbench(&args, dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// `manifest.json` of the run folder `run`.
fn manifest(run: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
}

/// The sha256 `prbench data validate` prints for `data` (with `extra` flags).
fn validated_hash(dir: &std::path::Path, data: &str, extra: &[&str]) -> String {
    let mut args = vec!["data", "validate", "--data", data];
    args.extend_from_slice(extra);
    let out = prbench(&args, dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let at =
        stdout.find("sha256 ").unwrap_or_else(|| panic!("no sha256 in {stdout}")) + "sha256 ".len();
    stdout[at..].chars().take_while(char::is_ascii_hexdigit).collect()
}

/// The report fixture's dataset: the sample with other texts, so another content hash.
fn other_data() -> std::path::PathBuf {
    common::repo().join("crates/prbench-report/tests/fixtures/sample-report/data")
}

#[test]
fn report_out_refuses_to_overwrite_a_runs_summary() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(std::path::Path::new(&sample()), &tmp.path().join("sample"));
    eval_baseline(tmp.path(), "sample", "lg", &["--condition", "none,oracle"]);
    for target in [
        "runs/lg-none/summary.json",
        "runs/lg-none/outcomes.jsonl",
        "runs/lg-matrix.json",
        "sample/Art_and_Entertainment.jsonl",
    ] {
        let before = std::fs::read(tmp.path().join(target)).unwrap();
        let out = prbench(&["report", "runs", "--out", target], tmp.path());
        assert!(!out.status.success(), "{target} overwritten");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("--out `{target}`: exists and is not a report prbench wrote")),
            "{err}"
        );
        assert_eq!(std::fs::read(tmp.path().join(target)).unwrap(), before, "{target} changed");
    }
    // Someone's own page is kept too.
    std::fs::write(tmp.path().join("notes.html"), "<html><body>my notes</body></html>").unwrap();
    assert!(!prbench(&["report", "runs", "--out", "notes.html"], tmp.path()).status.success());
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("notes.html")).unwrap(),
        "<html><body>my notes</body></html>"
    );
    // A new file, then the report written there again.
    for _ in 0..2 {
        let out = prbench(&["report", "runs", "--out", "r.html"], tmp.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    assert!(std::fs::read_to_string(tmp.path().join("r.html"))
        .unwrap()
        .contains("data-run=\"lg-oracle\""));
}

#[test]
fn report_reads_runs_datasets_from_another_folder_with_one_data_per_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    copy_dir(std::path::Path::new(&sample()), &work.join("sample"));
    copy_dir(&other_data(), &work.join("other"));
    eval_baseline(&work, "sample", "a", &[]);
    eval_baseline(&work, "other", "b", &[]);
    // The manifests name the data absolute, as typed relative in `work`.
    let (a, b) = (manifest(&work.join("runs/a")), manifest(&work.join("runs/b")));
    assert_eq!(
        a["dataset"].as_str().unwrap(),
        std::fs::canonicalize(work.join("sample")).unwrap().to_str().unwrap()
    );
    assert_eq!(
        b["dataset"].as_str().unwrap(),
        std::fs::canonicalize(work.join("other")).unwrap().to_str().unwrap()
    );
    // So the report is made from another folder, without --data.
    let out = prbench(&["report", "work/runs", "--out", "r.html"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Both datasets moved: one --data each, in any order, each run taking the one with its hash.
    std::fs::create_dir(tmp.path().join("moved")).unwrap();
    std::fs::rename(work.join("sample"), tmp.path().join("moved/s1")).unwrap();
    std::fs::rename(work.join("other"), tmp.path().join("moved/s2")).unwrap();
    let out = prbench(&["report", "work/runs", "--out", "r.html"], tmp.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("pass --data with its current location"),
        "{}",
        text(&out.stderr)
    );
    for data in [["moved/s2", "moved/s1"], ["moved/s1", "moved/s2"]] {
        let out = prbench(
            &["report", "work/runs", "--out", "r.html", "--data", data[0], "--data", data[1]],
            tmp.path(),
        );
        assert!(out.status.success(), "{data:?}: {}", text(&out.stderr));
        let html = std::fs::read_to_string(tmp.path().join("r.html")).unwrap();
        assert!(html.contains("data-run=\"a\"") && html.contains("data-run=\"b\""));
    }
    // With only the first dataset given, run b is named, with both hashes of the same kind.
    let out =
        prbench(&["report", "work/runs", "--out", "r.html", "--data", "moved/s1"], tmp.path());
    assert!(!out.status.success());
    let err = text(&out.stderr);
    let (ha, hb) = (a["dataset_hash"].as_str().unwrap(), b["dataset_hash"].as_str().unwrap());
    assert_eq!(validated_hash(tmp.path(), "moved/s1", &[]), ha, "run a used every subset of s1");
    assert!(
        err.contains("run `work/runs/b`")
            && err.contains("made on another dataset than the --data given"),
        "{err}"
    );
    assert!(
        err.contains(&format!("is {hb}")) && err.contains(&format!("--data `moved/s1` has {ha}")),
        "{err}"
    );
    // A manifest from before absolute paths: resolved from the current folder, as then, and
    // said so when that fails.
    let mut old = a.clone();
    old["dataset"] = "s1".into();
    std::fs::write(work.join("runs/a/manifest.json"), serde_json::to_string_pretty(&old).unwrap())
        .unwrap();
    let out = prbench(&["report", "work/runs/a", "--out", "r.html"], tmp.path());
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("dataset `s1`") && err.contains("relative to the folder the run was made in"),
        "{err}"
    );
    let out = prbench(&["report", "../work/runs/a", "--out", "r.html"], &tmp.path().join("moved"));
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn report_data_of_another_dataset_shows_hashes_over_the_runs_subsets() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(std::path::Path::new(&sample()), &tmp.path().join("sample"));
    copy_dir(&other_data(), &tmp.path().join("other"));
    eval_baseline(tmp.path(), "sample", "art", &["--subset", "Art"]);
    let run_hash =
        manifest(&tmp.path().join("runs/art"))["dataset_hash"].as_str().unwrap().to_string();
    assert_eq!(
        validated_hash(tmp.path(), "sample", &["--subset", "Art"]),
        run_hash,
        "a subset run's hash is over its subset's files"
    );
    let other_art = validated_hash(tmp.path(), "other", &["--subset", "Art"]);
    // The run's data is still where it was: --data `other` serves no run, and says why.
    let out = prbench(&["report", "runs", "--out", "r.html", "--data", "other"], tmp.path());
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("--data `other`: no run was made on this dataset (over subsets Art_and_Entertainment its content hash is ") && err.contains(&other_art) && err.contains(&run_hash), "{err}");
    // Moved away: the run is named, and both hashes are over the run's subset.
    std::fs::rename(tmp.path().join("sample"), tmp.path().join("sample-moved")).unwrap();
    let out = prbench(&["report", "runs", "--out", "r.html", "--data", "other"], tmp.path());
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("made on another dataset") && !err.contains("changed since"), "{err}");
    assert!(
        err.contains("over subsets Art_and_Entertainment, is ")
            && err.contains(&run_hash)
            && err.contains(&format!("--data `other` has {other_art}")),
        "{err}"
    );
}

#[test]
fn leaderboard_lists_a_copied_run_folder_once_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    eval_baseline(tmp.path(), &sample(), "x", &[]);
    copy_dir(&tmp.path().join("runs/x"), &tmp.path().join("runs/y"));
    let out = prbench(&["leaderboard", "runs", "--format", "csv"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("`runs/y` left out: it is a copy of `runs/x`"),
        "{}",
        text(&out.stderr)
    );
    let csv = text(&out.stdout);
    assert_eq!(csv.lines().filter(|l| l.starts_with("baseline:longer,")).count(), 1, "{csv}");
    let out = prbench(&["report", "runs", "--out", "r.html"], tmp.path());
    assert!(
        out.status.success() && text(&out.stderr).contains("report of 1 run in r.html"),
        "{}",
        text(&out.stderr)
    );
}
