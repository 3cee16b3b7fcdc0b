//! Parity of prbench_stats::agreement::alpha with the Python `krippendorff` package on the fixture
//! written by tools/make_alpha_fixtures.py (equal to 1e-9 at the nominal, ordinal and interval
//! levels; undefined where the package raises or returns nan).

use prbench_stats::agreement::{alpha, AlphaUndefined, Level, ReliabilityData};
use serde_json::Value;

const TOL: f64 = 1e-9;
const DOMAIN_ERROR: &str = "There has to be more than one value in the domain.";
const PAIRABLE_ERROR: &str =
    "There has to be at least one unit with values assigned by at least two coders.";

fn fixture() -> Value {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/alpha/krippendorff_reference.json");
    let text = std::fs::read_to_string(path).expect("read krippendorff_reference.json");
    serde_json::from_str(&text).expect("parse krippendorff_reference.json")
}

fn matrix(case: &Value) -> Vec<Vec<Option<f64>>> {
    case["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|row| row.as_array().expect("row").iter().map(Value::as_f64).collect())
        .collect()
}

fn level(name: &str) -> Level {
    match name {
        "nominal" => Level::Nominal,
        "ordinal" => Level::Ordinal,
        "interval" => Level::Interval,
        other => panic!("unknown level {other}"),
    }
}

fn cases() -> Vec<Value> {
    fixture()["cases"].as_array().expect("cases").clone()
}

fn label(case: &Value) -> String {
    format!("case {} ({})", case["index"], case["label"].as_str().unwrap())
}

/// Every case at every level: a value within TOL, or undefined in ours exactly where the package
/// raises or returns nan, with the reason the alpha module's docs map it to.
#[test]
fn alpha_matches_the_package() {
    let (mut checked, mut max_delta) = (0, 0.0f64);
    for case in cases() {
        let data = ReliabilityData::from_matrix(&matrix(&case)).expect("valid matrix");
        for (name, want) in case["alpha"].as_object().unwrap() {
            let got = alpha(&data, level(name));
            let at = format!("{} {name}", label(&case));
            match want["result"].as_str().unwrap() {
                "value" => {
                    let w = want["value"].as_f64().unwrap();
                    let g =
                        got.unwrap_or_else(|e| panic!("{at}: undefined ({e}), package {w}")).alpha;
                    assert!(
                        (g - w).abs() <= TOL,
                        "{at}: ours {g}, package {w}, |Δ| = {}",
                        (g - w).abs()
                    );
                    max_delta = max_delta.max((g - w).abs());
                }
                "nan" => assert!(
                    matches!(got, Err(AlphaUndefined::NoVariation { .. })),
                    "{at}: package nan, ours {got:?}"
                ),
                "error" => match want["message"].as_str().unwrap() {
                    PAIRABLE_ERROR => {
                        assert!(
                            matches!(got, Err(AlphaUndefined::NoPairableUnit { .. })),
                            "{at}: ours {got:?}"
                        )
                    }
                    DOMAIN_ERROR => {
                        let ok = if data.n_pairable_units() == 0 {
                            matches!(got, Err(AlphaUndefined::NoPairableUnit { .. }))
                        } else {
                            matches!(got, Err(AlphaUndefined::NoVariation { .. }))
                        };
                        assert!(ok, "{at}: package `{DOMAIN_ERROR}`, ours {got:?}");
                    }
                    other => panic!("{at}: unexpected package error `{other}`"),
                },
                other => panic!("{at}: unknown result {other}"),
            }
            checked += 1;
        }
    }
    assert!(checked >= 150, "{checked} checks");
    println!("{checked} checks, largest |ours − package| = {max_delta:e}");
}

/// The fixture covers the cases checked below, so a regenerated fixture cannot quietly lose them.
#[test]
fn fixture_covers_the_required_cases() {
    let f = fixture();
    for lib in ["krippendorff", "numpy", "python"] {
        assert!(f["versions"][lib].is_string(), "version of {lib} missing");
    }
    let cases = cases();
    let results = |r: &str| {
        cases
            .iter()
            .filter(|c| {
                ["nominal", "ordinal", "interval"].iter().all(|l| c["alpha"][l]["result"] == r)
            })
            .count()
    };
    assert!(results("value") >= 40, "defined cases");
    assert!(results("nan") >= 2, "nan cases");
    assert!(results("error") >= 4, "error cases");
    let data: Vec<ReliabilityData> =
        cases.iter().map(|c| ReliabilityData::from_matrix(&matrix(c)).unwrap()).collect();
    let missing = cases.iter().filter(|c| matrix(c).iter().flatten().any(Option::is_none)).count();
    assert!(missing >= 30, "{missing} cases with missing values");
    let single = data
        .iter()
        .zip(&cases)
        .filter(|(d, c)| d.n_single_units() > 0 && c["alpha"]["ordinal"]["result"] == "value");
    assert!(single.count() >= 4, "defined cases with a single-rated unit");
    let all_equal = data.iter().filter(|d| {
        let mut v = d.units().iter().flat_map(|u| u.ratings().iter().map(|r| r.value));
        let first = v.next();
        d.n_pairable_units() > 0 && v.all(|x| Some(x) == first)
    });
    assert!(all_equal.count() >= 3, "all-equal cases");
    let two_values = data.iter().filter(|d| {
        let mut v: Vec<f64> =
            d.units().iter().flat_map(|u| u.ratings().iter().map(|r| r.value)).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v.len() == 2
    });
    assert!(two_values.count() >= 4, "two-value cases");
    let floats = data.iter().filter(|d| {
        d.units()
            .iter()
            .flat_map(|u| u.ratings())
            .any(|r| r.value.fract() != 0.0 && (r.value * 2.0).fract() != 0.0)
    });
    assert!(floats.count() >= 8, "float-valued cases");
    assert!(cases.iter().any(|c| c["value_domain"].is_array()), "an explicit value_domain");
}

/// Krippendorff (2011, section C) reports alpha 0.743 (nominal), 0.815 (ordinal) and 0.849
/// (interval) for the 4 × 12 example, the fixture's first case.
#[test]
fn paper_example() {
    let case = &cases()[0];
    assert!(case["label"].as_str().unwrap().starts_with("Krippendorff 2011"));
    let data = ReliabilityData::from_matrix(&matrix(case)).unwrap();
    for (l, want) in [(Level::Nominal, 0.743), (Level::Ordinal, 0.815), (Level::Interval, 0.849)] {
        let a = alpha(&data, l).unwrap();
        assert_eq!((a.alpha * 1000.0).round() / 1000.0, want, "{l:?}: {}", a.alpha);
        assert_eq!((a.n_units, a.n_values, a.n_single), (11, 40, 1));
    }
}
