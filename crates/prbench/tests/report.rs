//! `eval` writes the HTML reports and says where; `prbench report` and `prbench leaderboard`
//! from the command line (control baselines: no model needed).

mod common;

use common::{prbench, sample, text};

#[test]
fn eval_writes_reports_and_report_and_leaderboard_read_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(&["eval", "--data", &sample(), "--model", "baseline:longer", "--condition", "none,oracle", "--run-id", "lg", "--quiet", "--bootstrap", "200"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let runs = tmp.path().join("runs");
    assert!(runs.join("lg-none/report.html").is_file() && runs.join("lg-oracle/report.html").is_file());
    assert!(runs.join("lg-report.html").is_file(), "the matrix's report beside it");
    assert!(err.contains("HTML report of all 2 runs in runs/lg-report.html"), "{err}");
    // --no-report writes none.
    let out = prbench(&["eval", "--data", &sample(), "--model", "baseline:shorter", "--run-id", "sh", "--quiet", "--bootstrap", "200", "--no-report"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!runs.join("sh/report.html").exists());
    // One report of both models.
    let out = prbench(&["report", "runs", "--out", "both.html"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("report of 3 runs, 1 matrix in both.html"), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(tmp.path().join("both.html")).unwrap();
    assert!(html.contains("data-run=\"sh\"") && html.contains("data-run=\"lg-oracle\""));
    // --out in a folder that does not exist.
    let out = prbench(&["report", "runs", "--out", "nodir/x.html"], tmp.path());
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("folder `nodir` does not exist"), "{}", text(&out.stderr));
    // The leaderboard in each format, with the figures of summary.json.
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(runs.join("sh/summary.json")).unwrap()).unwrap();
    let micro = summary["rows"].as_array().unwrap().iter().find(|r| r["label"] == "micro").unwrap()["strict"].as_f64().unwrap();
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

/// Copies the folder `from` to `to` (files and sub-folders).
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// A control-baseline eval of `data` in `dir` under the run id `id`, plus `extra` flags.
fn eval_baseline(dir: &std::path::Path, data: &str, id: &str, extra: &[&str]) {
    let mut args = vec!["eval", "--data", data, "--model", "baseline:longer", "--run-id", id, "--quiet", "--bootstrap", "100", "--no-report"];
    args.extend_from_slice(extra);
    let out = prbench(&args, dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn leaderboard_lists_a_copied_run_folder_once_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    eval_baseline(tmp.path(), &sample(), "x", &[]);
    copy_dir(&tmp.path().join("runs/x"), &tmp.path().join("runs/y"));
    let out = prbench(&["leaderboard", "runs", "--format", "csv"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("`runs/y` left out: it is a copy of `runs/x`"), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    assert_eq!(csv.lines().filter(|l| l.starts_with("baseline:longer,")).count(), 1, "{csv}");
    let out = prbench(&["report", "runs", "--out", "r.html"], tmp.path());
    assert!(out.status.success() && text(&out.stderr).contains("report of 1 run in r.html"), "{}", text(&out.stderr));
}

#[test]
fn report_out_refuses_to_overwrite_a_runs_summary() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(std::path::Path::new(&sample()), &tmp.path().join("sample"));
    eval_baseline(tmp.path(), "sample", "lg", &["--condition", "none,oracle"]);
    for target in ["runs/lg-none/summary.json", "runs/lg-none/outcomes.jsonl", "runs/lg-matrix.json", "sample/Art_and_Entertainment.jsonl"] {
        let before = std::fs::read(tmp.path().join(target)).unwrap();
        let out = prbench(&["report", "runs", "--out", target], tmp.path());
        assert!(!out.status.success(), "{target} overwritten");
        let err = text(&out.stderr);
        assert!(err.contains(&format!("--out `{target}`: exists and is not a report prbench wrote")), "{err}");
        assert_eq!(std::fs::read(tmp.path().join(target)).unwrap(), before, "{target} changed");
    }
    // Someone's own page is kept too.
    std::fs::write(tmp.path().join("notes.html"), "<html><body>my notes</body></html>").unwrap();
    assert!(!prbench(&["report", "runs", "--out", "notes.html"], tmp.path()).status.success());
    assert_eq!(std::fs::read_to_string(tmp.path().join("notes.html")).unwrap(), "<html><body>my notes</body></html>");
    // A new file, then the report written there again.
    for _ in 0..2 {
        let out = prbench(&["report", "runs", "--out", "r.html"], tmp.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    assert!(std::fs::read_to_string(tmp.path().join("r.html")).unwrap().contains("data-run=\"lg-oracle\""));
}
