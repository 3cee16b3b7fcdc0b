//! `prbench annotate` end to end with the real binary: links printed at start, a SIGKILL in
//! mid-session with no acknowledged rating lost, resuming in the browser where each annotator
//! stopped, then export, agreement and report on the folder; and bad input.

#[path = "../../prbench-annotate/tests/common/http.rs"]
mod annotate_common;
mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use annotate_common::{http, rating};
use common::{prbench, sample, text};
use serde_json::Value;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `annotate serve` and returns the child with the stdout lines it printed for
/// `n` annotators.
fn start(out: &std::path::Path, port: u16, n: usize) -> (Child, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args([
            "annotate",
            "serve",
            "--data",
            &sample(),
            "--annotators",
            "ann,bob",
            "--port",
            &port.to_string(),
            "--out",
        ])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let got: Vec<String> =
        (0..n).map(|_| lines.next().expect("a line per annotator").unwrap()).collect();
    // Wait for the port to answer.
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let t0 = Instant::now();
    while http(addr, "GET", "/", None).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(30), "the server never answered");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, got)
}

#[test]
fn a_sigkill_loses_no_acknowledged_rating_and_each_annotator_resumes_where_they_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ann");
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let (mut child, lines) = start(&out, port, 2);
    let links: Vec<(String, String)> = lines
        .iter()
        .map(|l| {
            let (name, url) = l.split_once(' ').unwrap();
            assert!(url.starts_with(&format!("http://{addr}/r/")), "{l}");
            (name.to_string(), url.to_string())
        })
        .collect();
    assert_eq!(links.iter().map(|l| l.0.as_str()).collect::<Vec<_>>(), ["ann", "bob"]);
    let token = |i: usize| links[i].1.rsplit('/').next().unwrap().to_string();

    // bob rates two items in the browser with the keyboard, and sees them acknowledged.
    let browser = prbench_browser::chromium_or_skip();
    if let Some(b) = &browser {
        let page = b.open(&links[1].1).unwrap();
        for pos in 1..=2 {
            wait(
                &page,
                &format!(
                    "document.getElementById('item-meta').textContent.includes('item {pos} of 12')"
                ),
            );
            for k in ["4", "4", "4", "5", "3", "3", "3", "1", "1", "Enter"] {
                page.press(k).unwrap();
            }
            wait(
                &page,
                &format!(
                    "document.getElementById('progress-text').textContent === '{pos} of 12 rated'"
                ),
            );
        }
    } else {
        for pos in 1..=2 {
            assert_eq!(
                http(
                    addr,
                    "PUT",
                    &format!("/r/{}/api/items/{pos}", token(1)),
                    Some(rating(4, 3, 1).to_string().as_bytes())
                )
                .unwrap()
                .status,
                200
            );
        }
    }

    // ann submits as fast as the server answers; SIGKILL after five acknowledgements.
    let acked: Arc<Mutex<Vec<usize>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acked, stop, t) = (Arc::clone(&acked), Arc::clone(&stop), token(0));
        std::thread::spawn(move || {
            for pos in 1..=12 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let body = rating((pos % 5) as u8 + 1, 2, 1).to_string();
                match http(addr, "PUT", &format!("/r/{t}/api/items/{pos}"), Some(body.as_bytes())) {
                    Ok(r) if r.status == 200 => acked.lock().unwrap().push(pos),
                    _ => break,
                }
            }
        })
    };
    let t0 = Instant::now();
    while acked.lock().unwrap().len() < 5 {
        assert!(t0.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 5 && acked.len() < 12, "{acked:?}");

    // Restart on the same folder: the old links still work.
    let (mut child, lines) = start(&out, port, 2);
    assert!(
        lines[0].starts_with("ann (the link printed at its first start still works"),
        "{lines:?}"
    );
    let p: Value =
        http(addr, "GET", &format!("/r/{}/api/progress", token(0)), None).unwrap().json();
    let done = p["done"].as_u64().unwrap() as usize;
    // Every acknowledged rating is there; at most one more (committed, answer lost in the kill).
    assert!(
        done == acked.len() || done == acked.len() + 1,
        "{done} saved, {} acknowledged",
        acked.len()
    );
    assert_eq!(p["next"].as_u64(), Some(done as u64 + 1), "ann resumes at the next item");
    if let Some(b) = &browser {
        let page = b.open(&links[1].1).unwrap();
        wait(&page, "document.getElementById('item-meta').textContent.includes('item 3 of 12')");
        assert_eq!(
            page.eval("document.getElementById('progress-text').textContent").unwrap(),
            "2 of 12 rated"
        );
    }

    // Export while serving: every acknowledged rating, with its scores.
    let o = prbench(
        &["annotate", "export", "--out", out.to_str().unwrap(), "--format", "jsonl", "--to", "-"],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows: Vec<Value> =
        text(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), (done + 2) * 8);
    for pos in &acked {
        let item: Value =
            http(addr, "GET", &format!("/r/{}/api/items/{pos}", token(0)), None).unwrap().json();
        let row = rows
            .iter()
            .find(|r| {
                r["annotator"] == "ann"
                    && r["item_id"] == item["item_id"]
                    && r["shown_as"] == 1
                    && r["dimension"] == "factuality"
            })
            .unwrap_or_else(|| {
                panic!("ann's acknowledged rating of item {pos} is not in the export")
            });
        assert_eq!(row["score"].as_u64(), Some((pos % 5) as u64 + 1), "item {pos}");
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Agreement and report from the folder.
    let o = prbench(&["annotate", "export", "--out", out.to_str().unwrap()], tmp.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let csv = out.join("ratings.csv");
    let o = prbench(
        &["annotate", "agreement", "--ratings", csv.to_str().unwrap(), "--json"],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    for d in ["factuality", "relevance", "helpfulness", "rubric_fit"] {
        assert!(
            j[d]["n_units"].is_u64()
                && j[d].get("alpha_interval").is_some()
                && j[d].get("alpha_ordinal").is_some(),
            "{d}: {j}"
        );
    }
    let o = prbench(
        &["annotate", "agreement", "--ratings", csv.to_str().unwrap(), "--json"],
        tmp.path(),
    );
    assert!(
        text(&o.stderr).contains("columns not used: item_id, subset, label"),
        "{}",
        text(&o.stderr)
    );
    let o = prbench(&["annotate", "agreement", "--ratings", csv.to_str().unwrap()], tmp.path());
    assert!(
        text(&o.stdout).contains("| rubric_fit | ") && text(&o.stdout).contains("`item_id`"),
        "{}",
        text(&o.stdout)
    );
    let o = prbench(&["annotate", "report", "--out", out.to_str().unwrap()], tmp.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let md = std::fs::read_to_string(out.join("annotate-report.md")).unwrap();
    assert!(
        md.contains("# Human evaluation")
            && md.contains("| ann | ")
            && md.contains("## Agreement between annotators"),
        "{md}"
    );
}

fn wait(page: &prbench_browser::Page, js: &str) {
    let t0 = Instant::now();
    while page.eval(js).ok() != Some(Value::Bool(true)) {
        assert!(t0.elapsed() < Duration::from_secs(15), "timed out waiting for `{js}`");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    let d = dir.to_str().unwrap();
    let o = prbench(
        &[
            "annotate",
            "serve",
            "--data",
            &sample(),
            "--out",
            d,
            "--annotators",
            "ann,bob",
            "--per-item",
            "3",
        ],
        tmp.path(),
    );
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("--per-item 3 cannot be met with 2 annotator(s)"),
        "{}",
        text(&o.stderr)
    );
    let o = prbench(
        &["annotate", "serve", "--data", &sample(), "--out", d, "--annotators", "ann,a b"],
        tmp.path(),
    );
    assert!(text(&o.stderr).contains("annotator name `a b` is not allowed"), "{}", text(&o.stderr));
    let o = prbench(&["annotate", "export", "--out", d], tmp.path());
    assert!(
        !o.status.success() && text(&o.stderr).contains("no annotation store here"),
        "{}",
        text(&o.stderr)
    );
    let bad = tmp.path().join("bad.csv");
    std::fs::write(&bad, "annotator,unit,dimension,score\nann,u1,fit,4\nbob,u1,fit,high\n")
        .unwrap();
    let o = prbench(&["annotate", "agreement", "--ratings", bad.to_str().unwrap()], tmp.path());
    let e = text(&o.stderr);
    assert!(
        !o.status.success() && e.contains("bad.csv") && e.contains("line 3") && e.contains("score"),
        "{e}"
    );
}

/// An annotation folder `ratings` in `parent` with a store over the sample (one annotator, no
/// ratings yet); returns the folder.
fn sample_store(parent: &std::path::Path) -> std::path::PathBuf {
    let dir = parent.join("ratings");
    let ex = prbench_data::load(&sample(), &[]).unwrap().examples;
    let names: Vec<String> = vec!["ann".into()];
    let spec = prbench_annotate::StoreSpec {
        examples: &ex,
        source: "s",
        dataset_hash: "h",
        annotators: &names,
        per_item: 1,
        seed: 1,
        selection: "all",
    };
    drop(prbench_annotate::Store::open_or_create(&dir, &spec).unwrap());
    dir
}

#[test]
fn outputs_never_overwrite_the_store_and_a_taken_port_fails_before_any_link_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sample_store(tmp.path());
    let store = dir.join("annotate.sqlite");
    let before = std::fs::read(&store).unwrap();
    let d = dir.to_str().unwrap();
    for args in [
        vec!["annotate", "export", "--out", d, "--to", store.to_str().unwrap()],
        vec!["annotate", "report", "--out", d, "--to", store.to_str().unwrap()],
        vec!["report", d, "--out", store.to_str().unwrap()],
    ] {
        let o = prbench(&args, tmp.path());
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(text(&o.stderr).contains("would destroy ratings"), "{args:?}: {}", text(&o.stderr));
    }
    assert_eq!(std::fs::read(&store).unwrap(), before, "the store changed");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let fresh = tmp.path().join("fresh");
    let o = prbench(
        &[
            "annotate",
            "serve",
            "--data",
            &sample(),
            "--out",
            fresh.to_str().unwrap(),
            "--annotators",
            "ann",
            "--port",
            &port,
        ],
        tmp.path(),
    );
    assert!(
        !o.status.success() && text(&o.stderr).contains("listening on 127.0.0.1:"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        !fresh.join("annotate.sqlite").exists(),
        "a folder was made whose links were never printed"
    );
}

#[test]
fn annotate_export_and_report_to_refuse_a_runs_summary_and_the_users_notes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sample_store(tmp.path());
    let d = dir.to_str().unwrap();
    let summary = tmp.path().join("summary.json");
    std::fs::write(&summary, "{\"model\": \"baseline:longer\"}\n").unwrap();
    let notes = tmp.path().join("notes.md");
    std::fs::write(&notes, "my precious notes\n").unwrap();
    for target in [&summary, &notes] {
        let before = std::fs::read(target).unwrap();
        for args in [
            vec![
                "annotate",
                "export",
                "--out",
                d,
                "--format",
                "csv",
                "--to",
                target.to_str().unwrap(),
            ],
            vec!["annotate", "report", "--out", d, "--to", target.to_str().unwrap()],
        ] {
            let o = prbench(&args, tmp.path());
            assert!(!o.status.success(), "{args:?} succeeded");
            assert!(
                text(&o.stderr).contains("so writing would destroy it"),
                "{args:?}: {}",
                text(&o.stderr)
            );
        }
        assert_eq!(std::fs::read(target).unwrap(), before, "{} changed", target.display());
    }
    // The default targets are written, and written again by a rerun.
    for _ in 0..2 {
        for args in [vec!["annotate", "export", "--out", d], vec!["annotate", "report", "--out", d]]
        {
            let o = prbench(&args, tmp.path());
            assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        }
    }
    assert!(dir.join("ratings.csv").is_file() && dir.join("annotate-report.md").is_file());
}

/// Runs `annotate serve` on the sample with `extra` flags and `--out out` in `cwd`, expecting
/// it to fail; returns stderr.
fn refused_serve(cwd: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> String {
    let mut args = vec![
        "annotate",
        "serve",
        "--data",
        "SAMPLE",
        "--port",
        "0",
        "--out",
        out.to_str().unwrap(),
    ];
    let sample = sample();
    args[3] = &sample;
    args.extend_from_slice(extra);
    let o = prbench(&args, cwd);
    assert!(!o.status.success(), "{args:?} started");
    text(&o.stderr)
}

#[test]
fn a_refused_serve_leaves_no_folder_lock_or_store_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("fresh");
    for (flags, says) in [
        (vec!["--annotators", "ann,ann"], "annotator `ann` is named twice"),
        (vec!["--annotators", "ann,bob", "--per-item", "3"], "--per-item 3 cannot be met"),
        (vec!["--annotators", "ann,a b"], "annotator name `a b` is not allowed"),
    ] {
        let e = refused_serve(tmp.path(), &fresh, &flags);
        assert!(e.contains(says), "{flags:?}: {e}");
        assert!(!fresh.exists(), "{flags:?} made `{}`", fresh.display());
        // An existing empty folder stays empty.
        std::fs::create_dir(&fresh).unwrap();
        refused_serve(tmp.path(), &fresh, &flags);
        assert_eq!(
            std::fs::read_dir(&fresh).unwrap().count(),
            0,
            "{flags:?} left a file in an empty folder"
        );
        std::fs::remove_dir(&fresh).unwrap();
    }

    // A folder of someone else's files is not an annotation folder: refused, untouched.
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("notes.txt"), "mine").unwrap();
    let e = refused_serve(tmp.path(), &theirs, &["--annotators", "ann"]);
    assert!(
        e.contains("`notes.txt`")
            && e.contains("no `annotate.sqlite`")
            && e.contains("pass a new or empty folder"),
        "{e}"
    );
    let names: Vec<String> = std::fs::read_dir(&theirs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["notes.txt"]);
    // A file is not a folder.
    let e = refused_serve(tmp.path(), &theirs.join("notes.txt"), &["--annotators", "ann"]);
    assert!(e.contains("this is a file"), "{e}");
    assert_eq!(std::fs::read_to_string(theirs.join("notes.txt")).unwrap(), "mine");
}

#[test]
fn lock_and_store_errors_say_their_cause_once() {
    let tmp = tempfile::tempdir().unwrap();
    // No store in the folder.
    let o = prbench(&["annotate", "export", "--out", "nothing-here"], tmp.path());
    let e = text(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(e.matches("no annotation store here").count(), 1, "{e}");
    assert!(!e.contains("caused by"), "no cause to add: {e}");

    // A second server on a folder being served.
    let dir = tmp.path().join("served");
    let (mut first, _links) = start(&dir, free_port(), 2);
    let e = refused_serve(tmp.path(), &dir, &["--annotators", "ann,bob"]);
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(
        e.matches("another `prbench annotate serve` is serving this folder").count(),
        1,
        "{e}"
    );
    assert!(!e.contains("caused by"), "{e}");

    // A real I/O failure keeps its cause, said once, under a line naming the file.
    let ratings = tmp.path().join("ratings.csv");
    std::fs::create_dir(&ratings).unwrap();
    let o = prbench(&["annotate", "agreement", "--ratings", ratings.to_str().unwrap()], tmp.path());
    let e = text(&o.stderr);
    assert!(!o.status.success());
    let first_line = e.lines().find(|l| l.starts_with("error: ")).unwrap_or_default().to_string();
    let cause = e
        .lines()
        .find_map(|l| l.trim().strip_prefix("caused by: "))
        .unwrap_or_default()
        .to_string();
    assert!(first_line.contains("ratings.csv") && !cause.is_empty(), "{e}");
    assert!(!first_line.contains(&cause), "the cause is printed twice: {e}");
}

#[test]
fn a_public_url_with_a_trailing_slash_gives_links_with_one_slash_and_a_restart_is_not_a_move() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ratings");
    let serve = |public: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_prbench"))
            .args([
                "annotate",
                "serve",
                "--data",
                &sample(),
                "--annotators",
                "ann",
                "--port",
                "0",
                "--public-url",
                public,
                "--out",
            ])
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let line = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .next()
            .expect("a link line")
            .unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        line
    };
    let first = serve("https://rate.example.org/prefix/");
    let token = first
        .strip_prefix("ann https://rate.example.org/prefix/r/")
        .unwrap_or_else(|| panic!("{first}"));
    assert!(token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()), "{first}");
    // The same address without the slash is the same address: the old links still work.
    let again = serve("https://rate.example.org/prefix");
    assert_eq!(
        again,
        "ann (the link printed at its first start still works; --new-tokens issues new ones)"
    );
    // A moved server says where to put the old token, with one slash.
    let moved = serve("https://other.example.org/");
    assert!(moved.starts_with("ann https://other.example.org/r/<the token of the link printed at the first start> (the server moved from https://rate.example.org/prefix;"), "{moved}");
}
