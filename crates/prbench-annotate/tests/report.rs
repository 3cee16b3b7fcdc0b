//! The human-evaluation report against hand-computed means, counts and alpha.

mod common;

use common::{examples, hostile_example, new_store, XSS};
use prbench_annotate::agreement::{agreement, AgreementConfig, Ratings};
use prbench_annotate::report::{build, markdown, ReportConfig};
use prbench_annotate::{AnswerRating, Store, Submission};

fn all(s: u8) -> AnswerRating {
    AnswerRating {
        factuality: s,
        relevance: s,
        helpfulness: s,
        rubric_fit: s,
        comment: String::new(),
    }
}

/// Saves `who`'s rating of `item` given by true label: chosen gets `c` on every dimension,
/// rejected `r`, and the rater picks chosen or not.
fn rate(store: &Store, who: &str, item: &str, c: u8, r: u8, picks_chosen: bool) {
    let total = store.progress(who).unwrap().total;
    let view = (1..=total)
        .map(|p| store.item(who, p).unwrap().unwrap())
        .find(|v| v.item_id == item)
        .unwrap();
    let chosen_is_1 =
        view.answers[0].starts_with("CHOSEN") || view.answers[0].starts_with("chosen");
    let answers = if chosen_is_1 { [all(c), all(r)] } else { [all(r), all(c)] };
    let better = if picks_chosen == chosen_is_1 { 1 } else { 2 };
    store.submit(who, view.position, &Submission { answers, better }).unwrap().unwrap();
}

#[test]
fn means_label_agreement_disagreements_and_alpha_match_a_hand_calculation() {
    let dir = tempfile::tempdir().unwrap();
    let ex = examples(3); // q0, q2: Art; q1: Lifestyle
    let (store, _) = new_store(dir.path(), &ex, &["ann", "bob"], 2);
    rate(&store, "ann", "q0", 5, 2, true);
    rate(&store, "ann", "q1", 4, 3, true);
    rate(&store, "ann", "q2", 3, 4, false);
    rate(&store, "bob", "q0", 5, 1, true);
    rate(&store, "bob", "q1", 2, 4, false);
    rate(&store, "bob", "q2", 4, 4, false);
    let r = build(&store, &ReportConfig { resamples: 500, seed: 3 }).unwrap();

    let subsets: Vec<&str> = r.human_eval.iter().map(|h| h.subset.as_str()).collect();
    assert_eq!(subsets, ["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "all"]);
    let expect = [(4.25, 2.75, 4), (3.0, 3.5, 2), (23.0 / 6.0, 3.0, 6)];
    for (row, (c, rj, n)) in r.human_eval.iter().zip(expect) {
        for (_, mc, mr) in &row.dims {
            let (mc, mr) = (mc.unwrap(), mr.unwrap());
            assert!(
                (mc.mean - c).abs() < 1e-12 && (mr.mean - rj).abs() < 1e-12,
                "{}: {mc:?} {mr:?}",
                row.subset
            );
            assert_eq!((mc.n, mr.n), (n, n));
            assert!(mc.lo <= mc.mean && mc.mean <= mc.hi && mr.lo <= mr.mean && mr.mean <= mr.hi);
        }
    }
    // One item, two ratings that differ: the bootstrap over items cannot move the mean.
    let life = &r.human_eval[1].dims[0];
    assert_eq!((life.1.unwrap().lo, life.1.unwrap().hi), (3.0, 3.0));

    let label: Vec<(f64, usize, usize, usize, usize)> = r
        .label
        .iter()
        .map(|l| {
            (
                l.prefers_chosen.unwrap().mean,
                l.items,
                l.majority_chosen,
                l.majority_rejected,
                l.split,
            )
        })
        .collect();
    assert_eq!(label, [(0.5, 2, 1, 1, 0), (0.5, 1, 0, 0, 1), (0.5, 3, 1, 1, 1)]);

    let dis: Vec<(&str, usize, usize, f64, f64)> = r
        .disagreements
        .iter()
        .map(|d| {
            (d.item_id.as_str(), d.votes_chosen, d.votes_rejected, d.fit_chosen, d.fit_rejected)
        })
        .collect();
    assert_eq!(dis, [("q1", 1, 1, 3.0, 3.5), ("q2", 0, 2, 3.5, 4.0)]);

    // "Fits better", nominal, units q0 [1,1], q1 [1,0], q2 [0,0]: n1 = n0 = 3, n = 6,
    // o01 + o10 = 2, so alpha = 1 − (n − 1)·2 / (2·n0·n1) = 1 − 10/18 = 4/9.
    let a = r.preference.alpha.as_ref().unwrap();
    assert!((a.alpha - 4.0 / 9.0).abs() < 1e-12, "{}", a.alpha);
    assert_eq!(r.preference_units, 3);

    // The agreement table equals agreement() on a CSV written here by hand.
    let mut csv = String::from("annotator,unit,dimension,score\n");
    for (who, item, c, rj) in [
        ("ann", "q0", 5, 2),
        ("ann", "q1", 4, 3),
        ("ann", "q2", 3, 4),
        ("bob", "q0", 5, 1),
        ("bob", "q1", 2, 4),
        ("bob", "q2", 4, 4),
    ] {
        for d in ["factuality", "relevance", "helpfulness", "rubric_fit"] {
            csv.push_str(&format!("{who},{item}/chosen,{d},{c}\n{who},{item}/rejected,{d},{rj}\n"));
        }
    }
    let hand = agreement(
        &Ratings::from_csv_reader("hand.csv", csv.as_bytes()).unwrap(),
        &r.agreement.as_ref().unwrap().config,
    );
    let j = |x: &prbench_annotate::agreement::AgreementReport| {
        serde_json::to_value(&x.dimensions).unwrap()
    };
    assert_eq!(j(r.agreement.as_ref().unwrap()), j(&hand));
    let _ = AgreementConfig::default();

    let md = markdown(&r);
    assert!(md.contains("| Art\\_and\\_Entertainment | 2 | chosen | 4.25 ["), "{md}");
    assert!(
        {
            use sha2::Digest;
            let a = format!("item-q1-{}", hex::encode(&sha2::Sha256::digest(b"q1")[..4]));
            md.contains(&format!("[q1](#{a})")) && md.contains(&format!("<a id=\"{a}\"></a>"))
        },
        "{md}"
    );
    assert!(md.contains("nominal alpha 0.444"), "{md}");
}

#[test]
fn hostile_text_in_the_report_is_escaped_or_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = new_store(dir.path(), &[hostile_example()], &["ann"], 1);
    let v = store.item("ann", 1).unwrap().unwrap();
    let chosen_is_1 = v.answers[0].starts_with("chosen");
    let mut answers = [all(4), all(4)];
    answers[0].comment = XSS.into();
    store
        .submit("ann", 1, &Submission { answers, better: if chosen_is_1 { 2 } else { 1 } })
        .unwrap();
    let md = markdown(&build(&store, &ReportConfig::default()).unwrap());
    // Outside fenced blocks, no raw tag survives.
    let mut in_fence = false;
    for line in md.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence && !line.starts_with("<a id=") {
            assert!(
                !line.contains('<') || line.contains("&lt;"),
                "raw `<` outside a fence: {line}"
            );
            assert!(!line.contains("<script") && !line.contains("<img"), "{line}");
        }
    }
    assert!(md.contains("&lt;script&gt;"), "{md}");
}

#[test]
fn a_folder_without_ratings_still_reports_and_exports_a_header() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = new_store(dir.path(), &examples(2), &["ann"], 1);
    let r = build(&store, &ReportConfig::default()).unwrap();
    assert!(r.agreement.is_none() && r.disagreements.is_empty());
    let md = markdown(&r);
    assert!(md.contains("No ratings yet.") && md.contains("| ann | 0 | 2 |"), "{md}");
    let mut csv = Vec::new();
    prbench_annotate::export::write(
        &[],
        prbench_annotate::export::Format::Csv,
        &mut csv,
        std::path::Path::new("x.csv"),
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(csv).unwrap(),
        format!("{}\n", prbench_annotate::export::COLUMNS.join(","))
    );
}
