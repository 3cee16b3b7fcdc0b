//! The per-dimension agreement report: its JSON shape, its independence from row order, and its
//! Markdown table.

use prbench_stats::agreement::{
    agreement, alpha, markdown_table, AgreementConfig, AlphaBootstrapConfig, Level, Ratings,
};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// Rows of a ratings CSV (without header): `fit` and `style` on 24 answers by three raters
/// (some answers rated once), `constant` where everyone gives 4, `lonely` rated once per answer.
fn rows() -> Vec<String> {
    let mut rows = Vec::new();
    for u in 0..24 {
        let truth = 1 + (u * 7) % 5;
        for (a, rater) in ["ann", "bob", "cat"].iter().enumerate() {
            if u % 8 == 0 && a > 0 {
                continue; // answers 0, 8, 16: rated by ann only
            }
            let fit = (truth as i64 + [0, 1, -1, 0, 0][(u + 2 * a) % 5]).clamp(1, 5);
            let style = (6 - truth as i64 + [0, 0, 1, 0, -1][(u + a) % 5]).clamp(1, 5);
            rows.push(format!("{rater},a{u:02},fit,{fit},batch-{}", u % 3));
            rows.push(format!("{rater},a{u:02},style,{style},batch-{}", u % 3));
            rows.push(format!("{rater},a{u:02},constant,4,"));
        }
        rows.push(format!("ann,a{u:02},lonely,{truth},"));
    }
    rows
}

fn ratings(rows: &[String]) -> Ratings {
    let text = format!("annotator,unit,dimension,score,batch\n{}\n", rows.join("\n"));
    Ratings::from_csv_reader("ratings.csv", text.as_bytes()).unwrap()
}

fn json(value: &impl serde::Serialize) -> Value {
    serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
}

#[test]
fn json_maps_each_dimension_to_its_figures() {
    let r = ratings(&rows());
    let report = agreement(&r, &AgreementConfig::default());
    let dims = json(&report.dimensions);
    let obj = dims.as_object().expect("one JSON object");
    let names: Vec<&str> = obj.keys().map(String::as_str).collect();
    assert_eq!(names, ["constant", "fit", "lonely", "style"]);

    let fit = &dims["fit"];
    assert_eq!(fit["n_units"], 21);
    assert_eq!(fit["n_single"], 3);
    assert_eq!(fit["n_ratings"], 21 * 3 + 3);
    assert_eq!(fit["n_annotators"], 3);
    assert_eq!(fit["n_values"], 63);
    let data = r.dimensions()["fit"].data();
    for level in Level::ALL {
        let name = level.name();
        let a = fit[format!("alpha_{name}")].as_f64().expect("a number");
        assert_eq!(a, alpha(data, level).unwrap().alpha, "{name}");
        assert!(fit[format!("alpha_{name}_undefined")].is_null());
        let ci = fit[format!("ci_{name}")].as_array().expect("[lo, hi]");
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(lo < a && a < hi, "{name}: {a} not in [{lo}, {hi}]");
        assert!(fit[format!("ci_{name}_undefined")].is_null());
        assert_eq!(fit[format!("ci_{name}_dropped")], 0);
    }

    // All ratings equal: alpha undefined at every level, null plus a reason.
    let constant = &dims["constant"];
    assert_eq!(constant["n_units"], 21);
    for name in ["interval", "ordinal", "nominal"] {
        assert!(constant[format!("alpha_{name}")].is_null());
        let why = constant[format!("alpha_{name}_undefined")].as_str().unwrap();
        assert!(why.contains("are 4"), "{why}");
        assert!(constant[format!("ci_{name}")].is_null());
        assert!(constant[format!("ci_{name}_undefined")].is_string());
    }
    // Every unit rated once.
    let lonely = &dims["lonely"];
    assert_eq!((lonely["n_units"].as_u64(), lonely["n_single"].as_u64()), (Some(0), Some(24)));
    let why = lonely["alpha_ordinal_undefined"].as_str().unwrap();
    assert!(why.contains("no unit has two or more ratings"), "{why}");

    let whole = json(&report);
    assert_eq!(whole["ignored_columns"], serde_json::json!(["batch"]));
    assert_eq!(whole["config"]["bootstrap"]["resamples"], 1000);
    assert_eq!(whole["source"], "ratings.csv");
}

/// Rows in another order give the same report, CIs included, bit for bit.
#[test]
fn shuffled_rows_give_the_same_report() {
    let rows = rows();
    let cfg = AgreementConfig::default();
    let want = serde_json::to_string(&agreement(&ratings(&rows), &cfg)).unwrap();
    for seed in [1, 2, 3] {
        let mut shuffled = rows.clone();
        shuffled.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        assert_ne!(shuffled, rows);
        let got = serde_json::to_string(&agreement(&ratings(&shuffled), &cfg)).unwrap();
        assert_eq!(got, want, "shuffle {seed}");
    }
}

#[test]
fn the_seed_and_resamples_are_used() {
    let r = ratings(&rows());
    let a = agreement(&r, &AgreementConfig::default());
    let bootstrap = AlphaBootstrapConfig::new(200, 7, 0.9).unwrap();
    let b = agreement(&r, &AgreementConfig { bootstrap });
    let (fa, fb) = (&a.dimensions["fit"], &b.dimensions["fit"]);
    assert_eq!(fa.ordinal.alpha, fb.ordinal.alpha);
    assert_ne!(fa.ordinal.bootstrap.interval, fb.ordinal.bootstrap.interval);
    assert_eq!(fb.ordinal.bootstrap.kept + fb.ordinal.bootstrap.dropped, 200);
    assert_eq!(fa.interval.bootstrap.kept, 1000);
}

#[test]
fn markdown_table_rows_and_notes() {
    let r = ratings(&rows());
    let report = agreement(&r, &AgreementConfig::default());
    let md = markdown_table(&report);
    let lines: Vec<&str> = md.lines().collect();
    assert!(
        lines[0].contains("`ratings.csv`") && lines[0].contains("1000 resamples, seed 42"),
        "{md}"
    );
    assert!(md.contains("| dimension | units (≥2 ratings) | single-rated | ratings | annotators | α interval [95% CI] | α ordinal [95% CI] | α nominal [95% CI] |"), "{md}");
    let fit = report.dimensions["fit"].interval.alpha.as_ref().unwrap().alpha;
    let ci = report.dimensions["fit"].interval.bootstrap.interval.clone().unwrap();
    let row = format!("| fit | 21 | 3 | 66 | 3 | {fit:.3} [{:.3}, {:.3}] |", ci.lo, ci.hi);
    assert!(md.contains(&row), "{row}\n{md}");
    assert!(
        md.contains("| constant | 21 | 3 | 66 | 3 | undefined | undefined | undefined |"),
        "{md}"
    );
    assert!(
        md.contains("- `lonely`, every level: alpha undefined: no unit has two or more ratings"),
        "{md}"
    );
    assert!(md.contains("- `constant`, every level: alpha undefined: all 63 ratings"), "{md}");
    assert_eq!(md.lines().filter(|l| l.starts_with("- ")).count(), 2, "{md}");
    assert!(md.trim_end().ends_with("Ignored columns: `batch`."), "{md}");
    // Four dimensions, four table rows.
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("| ") && !l.starts_with("| dimension")).count(),
        4
    );
}

/// Two pairable units {1, 1} and {2, 2}: about half the resamples draw one unit twice and are
/// dropped, which the table notes (the same count at every level: one value is one value at any
/// level). A `|` in a dimension name is escaped in the table.
#[test]
fn markdown_notes_dropped_resamples() {
    let text = "annotator,unit,dimension,score\na,u1,x|y,1\nb,u1,x|y,1\na,u2,x|y,2\nb,u2,x|y,2\n";
    let r = Ratings::from_csv_reader("two.csv", text.as_bytes()).unwrap();
    let report = agreement(&r, &AgreementConfig::default());
    let d = &report.dimensions["x|y"];
    let dropped = d.nominal.bootstrap.dropped;
    assert!((400..600).contains(&dropped), "{dropped}");
    assert_eq!((d.ordinal.bootstrap.dropped, d.interval.bootstrap.dropped), (dropped, dropped));
    let md = markdown_table(&report);
    assert!(md.contains("| x\\|y | 2 | 0 | 4 | 2 | 1.000 [1.000, 1.000] |"), "{md}");
    let note = format!("- `x|y`, every level: {dropped} of 1000 resamples dropped");
    assert!(md.contains(&note), "{note}\n{md}");
    assert_eq!(json(&report.dimensions)["x|y"]["ci_ordinal_dropped"], dropped);
}
