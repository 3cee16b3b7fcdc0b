//! `prbench annotate` end to end with the real binary: links printed at start, a SIGKILL in
//! mid-session with no acknowledged rating lost, resuming in the browser where each annotator
//! stopped, then export, agreement and report on the folder; and bad input.

#[path = "../../prbench-annotate/tests/common/http.rs"]
#[allow(dead_code)]
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
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
    let got: Vec<String> = (0..n)
        .map(|_| lines.next().expect("a line per annotator").unwrap())
        .collect();
    // Wait for the port to answer.
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let t0 = Instant::now();
    while http(addr, "GET", "/", None).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the server never answered"
        );
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
    assert_eq!(
        links.iter().map(|l| l.0.as_str()).collect::<Vec<_>>(),
        ["ann", "bob"]
    );
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
                match http(
                    addr,
                    "PUT",
                    &format!("/r/{t}/api/items/{pos}"),
                    Some(body.as_bytes()),
                ) {
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
    let p: Value = http(addr, "GET", &format!("/r/{}/api/progress", token(0)), None)
        .unwrap()
        .json();
    let done = p["done"].as_u64().unwrap() as usize;
    // Every acknowledged rating is there; at most one more (committed, answer lost in the kill).
    assert!(
        done == acked.len() || done == acked.len() + 1,
        "{done} saved, {} acknowledged",
        acked.len()
    );
    assert_eq!(
        p["next"].as_u64(),
        Some(done as u64 + 1),
        "ann resumes at the next item"
    );
    if let Some(b) = &browser {
        let page = b.open(&links[1].1).unwrap();
        wait(
            &page,
            "document.getElementById('item-meta').textContent.includes('item 3 of 12')",
        );
        assert_eq!(
            page.eval("document.getElementById('progress-text').textContent")
                .unwrap(),
            "2 of 12 rated"
        );
    }

    // Export while serving: every acknowledged rating, with its scores.
    let o = prbench(
        &[
            "annotate",
            "export",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "jsonl",
            "--to",
            "-",
        ],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows: Vec<Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), (done + 2) * 8);
    for pos in &acked {
        let item: Value = http(
            addr,
            "GET",
            &format!("/r/{}/api/items/{pos}", token(0)),
            None,
        )
        .unwrap()
        .json();
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
        assert_eq!(
            row["score"].as_u64(),
            Some((pos % 5) as u64 + 1),
            "item {pos}"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Agreement and report from the folder.
    let o = prbench(
        &["annotate", "export", "--out", out.to_str().unwrap()],
        tmp.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let csv = out.join("ratings.csv");
    let o = prbench(
        &[
            "annotate",
            "agreement",
            "--ratings",
            csv.to_str().unwrap(),
            "--json",
        ],
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
        &[
            "annotate",
            "agreement",
            "--ratings",
            csv.to_str().unwrap(),
            "--json",
        ],
        tmp.path(),
    );
    assert!(
        text(&o.stderr).contains("columns not used: item_id, subset, label"),
        "{}",
        text(&o.stderr)
    );
    let o = prbench(
        &["annotate", "agreement", "--ratings", csv.to_str().unwrap()],
        tmp.path(),
    );
    assert!(
        text(&o.stdout).contains("| rubric_fit | ") && text(&o.stdout).contains("`item_id`"),
        "{}",
        text(&o.stdout)
    );
    let o = prbench(
        &["annotate", "report", "--out", out.to_str().unwrap()],
        tmp.path(),
    );
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
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "timed out waiting for `{js}`"
        );
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
        &[
            "annotate",
            "serve",
            "--data",
            &sample(),
            "--out",
            d,
            "--annotators",
            "ann,a b",
        ],
        tmp.path(),
    );
    assert!(
        text(&o.stderr).contains("annotator name `a b` is not allowed"),
        "{}",
        text(&o.stderr)
    );
    let o = prbench(&["annotate", "export", "--out", d], tmp.path());
    assert!(
        !o.status.success() && text(&o.stderr).contains("no annotation store here"),
        "{}",
        text(&o.stderr)
    );
    let bad = tmp.path().join("bad.csv");
    std::fs::write(
        &bad,
        "annotator,unit,dimension,score\nann,u1,fit,4\nbob,u1,fit,high\n",
    )
    .unwrap();
    let o = prbench(
        &["annotate", "agreement", "--ratings", bad.to_str().unwrap()],
        tmp.path(),
    );
    let e = text(&o.stderr);
    assert!(
        !o.status.success() && e.contains("bad.csv") && e.contains("line 3") && e.contains("score"),
        "{e}"
    );
}

#[test]
fn outputs_never_overwrite_the_store_and_a_taken_port_fails_before_any_link_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ratings");
    let ex = prbench_data::load(&sample(), &[]).unwrap().examples;
    let names: Vec<String> = vec!["ann".into()];
    let spec = prbench_annotate::StoreSpec { examples: &ex, source: "s", dataset_hash: "h", annotators: &names, per_item: 1, seed: 1, selection: "all" };
    drop(prbench_annotate::Store::open_or_create(&dir, &spec).unwrap());
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
    let o = prbench(&["annotate", "serve", "--data", &sample(), "--out", fresh.to_str().unwrap(), "--annotators", "ann", "--port", &port], tmp.path());
    assert!(!o.status.success() && text(&o.stderr).contains("listening on 127.0.0.1:"), "{}", text(&o.stderr));
    assert!(!fresh.join("annotate.sqlite").exists(), "a folder was made whose links were never printed");
}
