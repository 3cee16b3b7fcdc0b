//! Several benchmarks side by side against one downstream ranking (`correlate --benchmark-set`):
//! each set's statistics equal those of the set run alone through `correlate`, models a set lacks
//! are left out and recorded, the tables read as the paper's, and the HTML report shows a
//! comparison with its text from data kept as text.

use std::path::{Path, PathBuf};

use prbench_report::correlation::{
    compare, correlate, interval_text, render_comparison, BenchmarkSet, ComparisonOptions,
    CorrelationOptions,
};
use prbench_stats::{Interval, PairedDifference, StatInterval};

/// The downstream scores of models m1…m7.
const DOWN: [(&str, f64); 7] = [
    ("m1", 1.41),
    ("m2", 1.22),
    ("m3", 1.35),
    ("m4", 1.18),
    ("m5", 0.95),
    ("m6", 1.02),
    ("m7", 1.30),
];
/// Benchmark A: ranks close to the downstream.
const A: [f64; 7] = [0.72, 0.65, 0.67, 0.63, 0.48, 0.50, 0.71];
/// Benchmark B: unrelated.
const B: [f64; 7] = [0.55, 0.61, 0.52, 0.66, 0.58, 0.63, 0.51];

fn write_csv(path: &Path, rows: &[(&str, f64)]) {
    let mut text = String::from("model,score\n");
    for (m, s) in rows {
        text.push_str(&format!("{m},{s}\n"));
    }
    std::fs::write(path, text).unwrap();
}

fn scores(values: &[f64]) -> Vec<(&'static str, f64)> {
    DOWN.iter().zip(values).map(|((m, _), &s)| (*m, s)).collect()
}

fn set(name: &str, path: PathBuf) -> BenchmarkSet {
    BenchmarkSet { name: name.into(), paths: vec![path] }
}

fn options(dir: &Path, sets: Vec<BenchmarkSet>) -> ComparisonOptions {
    let mut opts = ComparisonOptions::new(sets, vec![dir.join("down.csv")]);
    opts.options.bootstrap = 2_000;
    opts.options.permutations = 1_000;
    opts.options.seed = 5;
    opts
}

fn alone(dir: &Path, bench: PathBuf) -> serde_json::Value {
    let mut opts = CorrelationOptions::new(vec![bench], vec![dir.join("down.csv")]);
    opts.bootstrap = 2_000;
    opts.permutations = 1_000;
    opts.seed = 5;
    serde_json::to_value(correlate(&opts, &mut |_| {}).unwrap()).unwrap()
}

#[test]
fn each_set_equals_its_own_correlate_run() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    write_csv(&p.join("down.csv"), &DOWN);
    write_csv(&p.join("a.csv"), &scores(&A));
    write_csv(&p.join("b.csv"), &scores(&B));
    // C lists B's scores in another model order.
    let mut c = scores(&B);
    c.reverse();
    write_csv(&p.join("c.csv"), &c);
    let got = compare(
        &options(
            p,
            vec![set("A", p.join("a.csv")), set("B", p.join("b.csv")), set("C", p.join("c.csv"))],
        ),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(got.models, ["m1", "m2", "m3", "m4", "m5", "m6", "m7"]);
    // A and B list the models in the comparison's order: everything equals the run alone, the
    // bootstrap included (the shared draw is the draw of one set alone).
    for (i, file) in [(0, "a.csv"), (1, "b.csv")] {
        assert_eq!(
            serde_json::to_value(&got.sets[i].correlation).unwrap(),
            alone(p, p.join(file)),
            "set {i}"
        );
    }
    // C alone lists its models in another order: the same point values (no ties, so RBO does
    // not depend on the order either), up to the rounding of weighted tau's sums taken in
    // another order. Its intervals come from the shared draw, and its permutation p-value is
    // Monte Carlo (7! = 5,040 > 1,000 pairings) over another order, so only the points are
    // compared.
    let c_alone = alone(p, p.join("c.csv"));
    let c_here = serde_json::to_value(&got.sets[2].correlation).unwrap();
    for stat in ["spearman", "kendall_tau_b", "weighted_tau", "ndcg", "rbo"] {
        let (here, there) = (
            c_here["statistics"][stat].as_f64().unwrap(),
            c_alone["statistics"][stat].as_f64().unwrap(),
        );
        assert!((here - there).abs() <= 1e-12, "{stat}: {here} vs {there}");
    }
    assert_eq!(
        c_here["statistics"],
        serde_json::to_value(got.sets[1].correlation.statistics).unwrap()
    );
    // B and C hold the same scores in the comparison's order: their resamples are identical, so
    // B − C is exactly 0 everywhere.
    let bc = &got.pairs[2];
    assert_eq!((bc.a.as_str(), bc.b.as_str()), ("B", "C"));
    for d in [bc.difference.spearman, bc.difference.ndcg, bc.difference.rbo] {
        let ci = d.ci.unwrap();
        assert_eq!((d.point, ci.lo, ci.hi), (0.0, 0.0, 0.0));
    }
    // A − B: point is the difference of the points.
    let ab = &got.pairs[0].difference;
    assert_eq!(
        ab.spearman.point,
        got.sets[0].correlation.statistics.spearman - got.sets[1].correlation.statistics.spearman
    );
    assert_eq!(ab.spearman.defined + ab.spearman.undefined, 2_000);
}

#[test]
fn models_a_set_lacks_are_left_out_said_and_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    write_csv(&p.join("down.csv"), &DOWN);
    write_csv(&p.join("a.csv"), &scores(&A));
    // B lacks m7 and has a model the downstream does not score.
    let mut b = scores(&B)[..6].to_vec();
    b.push(("extra", 0.5));
    write_csv(&p.join("b.csv"), &b);
    let mut notes = Vec::new();
    let got = compare(
        &options(p, vec![set("A", p.join("a.csv")), set("B", p.join("b.csv"))]),
        &mut |n| notes.push(n.to_string()),
    )
    .unwrap();
    assert_eq!(got.models.len(), 6);
    assert!(!got.models.contains(&"m7".to_string()));
    assert_eq!(got.sets[1].lacked, ["m7"]);
    assert_eq!(got.sets[1].without_downstream, ["extra"]);
    assert!(got.sets[0].lacked.is_empty() && got.sets[0].without_downstream.is_empty());
    let notes = notes.join("\n");
    assert!(notes.contains("benchmark set `B` has no score for 1 of the downstream's 7 models (m7); they are left out of every set's statistics"), "{notes}");
    assert!(
        notes.contains("benchmark set `B`: `extra` has no downstream score; left out"),
        "{notes}"
    );
    // A's statistics are over the 6 common models: equal to A alone on those 6.
    write_csv(&p.join("a6.csv"), &scores(&A)[..6]);
    write_csv(&p.join("down.csv"), &DOWN[..6]);
    let a6 = alone(p, p.join("a6.csv"));
    assert_eq!(serde_json::to_value(got.sets[0].correlation.statistics).unwrap(), a6["statistics"]);
    let md = render_comparison(&got);
    assert!(
        md.contains("Set `B` has no score for: `m7` (left out of every set's statistics)."),
        "{md}"
    );
    assert!(md.contains("Set `B`: no downstream score for `extra` (left out)."), "{md}");
}

#[test]
fn sets_that_do_not_fit_are_refused_naming_the_set() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    write_csv(&p.join("down.csv"), &DOWN);
    write_csv(&p.join("a.csv"), &scores(&A));
    write_csv(&p.join("few.csv"), &scores(&B)[..2]);
    write_csv(&p.join("flat.csv"), &scores(&[0.5; 7]));
    let err = |sets| {
        let e = compare(&options(p, sets), &mut |_| {}).unwrap_err();
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(&format!(" / {s}"));
            source = s.source();
        }
        text
    };
    let e = err(vec![set("A", p.join("a.csv")), set("few", p.join("few.csv"))]);
    assert!(e.contains("only 2 models (m1, m2) have a score in every benchmark set and in the downstream; rank statistics need at least 3"), "{e}");
    assert!(e.contains("`few`: m3, m4, m5, m6, m7"), "{e}");
    let e = err(vec![set("A", p.join("a.csv")), set("A", p.join("few.csv"))]);
    assert!(e.contains("the name `A` is given twice"), "{e}");
    let e = err(vec![set("A", p.join("a.csv")), set("flat", p.join("flat.csv"))]);
    assert!(e.starts_with("benchmark set `flat` / benchmark input is constant"), "{e}");
    let e = err(vec![set("A", p.join("a.csv")), set("gone", p.join("missing.csv"))]);
    assert!(e.starts_with("benchmark set `gone` / reading `") && e.contains("missing.csv"), "{e}");
    let e = err(vec![]);
    assert!(e.contains("no benchmark set given"), "{e}");
}

#[test]
fn set_names_parse_from_name_equals_paths() {
    let s = BenchmarkSet::parse("Personalized RewardBench=runs/a, runs/b").unwrap();
    assert_eq!(s.name, "Personalized RewardBench");
    assert_eq!(s.paths, [PathBuf::from("runs/a"), PathBuf::from("runs/b")]);
    assert_eq!(BenchmarkSet::parse("Arena=arena.csv").unwrap().paths, [PathBuf::from("arena.csv")]);
    for bad in ["runs/a", "=a.csv", "A=", "A=a.csv,", "A=a.csv,,b.csv"] {
        let e = BenchmarkSet::parse(bad).unwrap_err();
        assert!(e.contains("expected NAME=PATH[,PATH...]"), "{bad}: {e}");
    }
}

#[test]
fn table_cells_read_as_the_paper_prints_them() {
    let s = StatInterval {
        point: 0.918,
        ci: Some(Interval { lo: 0.7149, hi: 1.0 }),
        defined: 10,
        undefined: 0,
    };
    assert_eq!(interval_text(&s), "0.918 [0.71, 1.00]");
    let s = StatInterval { point: -0.0736, ci: None, defined: 0, undefined: 10 };
    assert_eq!(interval_text(&s), "-0.074 [–]");
    let d = PairedDifference {
        point: 0.26,
        ci: Some(Interval { lo: -0.051, hi: 0.41 }),
        defined: 9,
        undefined: 1,
    };
    assert_eq!(prbench_report::correlation::difference_text(&d), "+0.260 [-0.05, 0.41]");
}

#[test]
fn the_markdown_has_the_paper_table_and_the_paired_differences() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    write_csv(&p.join("down.csv"), &DOWN);
    write_csv(&p.join("a.csv"), &scores(&A));
    write_csv(&p.join("b.csv"), &scores(&B));
    let mut opts = options(p, vec![set("PRB", p.join("a.csv")), set("Arena|P", p.join("b.csv"))]);
    opts.downstream_name = Some("BoN".into());
    let got = compare(&opts, &mut |_| {}).unwrap();
    let md = render_comparison(&got);
    let a = &got.sets[0].correlation.bootstrap.stats;
    let row = format!(
        "| PRB | BoN | {} | {} | {} | {} | {} |",
        interval_text(&a.ndcg),
        interval_text(&a.weighted_tau),
        interval_text(&a.spearman),
        interval_text(&a.kendall_tau_b),
        interval_text(&a.rbo)
    );
    assert!(
        md.contains("| benchmark | downstream | NDCG | weighted tau | rho | tau-b | RBO |"),
        "{md}"
    );
    assert!(md.contains(&row), "{row}\n{md}");
    // A `|` in a name cannot break the table.
    assert!(md.contains("| Arena\\|P | BoN |"), "{md}");
    assert!(md.contains("| PRB − Arena\\|P | "), "{md}");
    assert!(md.contains("on the 7 models that every set and the downstream score"), "{md}");
    assert!(md.contains("with 7 models they are wide (fewer than 10 models: very wide)"), "{md}");
    assert!(md.contains("| `m1` | 0.7200 | 0.5500 | 1.4100 |"), "{md}");
    // The JSON has every figure and is what `prbench report` reads.
    let json = serde_json::to_value(&got).unwrap();
    assert_eq!(json["kind"], "benchmark comparison");
    assert_eq!(
        json["pairs"][0]["difference"]["spearman"]["defined"].as_u64().unwrap()
            + json["pairs"][0]["difference"]["spearman"]["undefined"].as_u64().unwrap(),
        2_000
    );
    assert_eq!(json["sets"][1]["name"], "Arena|P");
}

/// The HTML report of a comparison whose set names, model labels and downstream name hold
/// markup: the section's tables and plots are there, and the markup is text (checked in the
/// rendered HTML here; `report_browser.rs` checks the DOM in Chromium).
#[test]
fn the_html_report_shows_a_comparison_with_text_from_data_as_text() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let hostile = "<script>alert(1)</script>";
    let mut down = DOWN.to_vec();
    down[0].0 = "<img src=x onerror=alert(2)>";
    write_csv(&p.join("down.csv"), &down);
    let mut a = scores(&A);
    a[0].0 = down[0].0;
    write_csv(&p.join("a.csv"), &a);
    let mut b = scores(&B);
    b[0].0 = down[0].0;
    write_csv(&p.join("b.csv"), &b);
    let mut opts = options(p, vec![set(hostile, p.join("a.csv")), set("Arena", p.join("b.csv"))]);
    opts.downstream_name = Some("</svg><b>BoN</b>".into());
    let got = compare(&opts, &mut |_| {}).unwrap();
    let path = p.join("cmp.json");
    std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap()).unwrap();
    let sources = prbench_report::sources::load(std::slice::from_ref(&path)).unwrap();
    assert_eq!((sources.comparisons.len(), sources.correlations.len()), (1, 0));
    assert_eq!(sources.comparisons[0].comparison.sets[0].name, hostile);
    let html =
        prbench_report::html::render(&sources, &prbench_report::html::ReportOptions::default())
            .unwrap();
    let section = &html[html.find("<section id=\"sec-correlation\">").unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(
        !section.contains("<script>") && !section.contains("<img") && !section.contains("<b>BoN"),
        "markup from data reached the page"
    );
    assert!(section.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(section.matches("<svg").count(), 2, "the statistics plot and the differences plot");
    let row = format!("<td>{}</td>", interval_text(&got.sets[1].correlation.bootstrap.stats.ndcg));
    assert!(section.contains(&row), "{row}");
    assert!(section.contains("comparison-differences"));
    assert!(html.contains("<a href=\"#sec-correlation\">Correlation</a>"));
}
