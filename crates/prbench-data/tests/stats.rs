//! dataset_stats on a small dataset whose figures are counted by hand below.

use prbench_data::stats::{dataset_stats, Summary};
use prbench_data::{Dataset, Example, ExampleBuilder, ProfilePost, RubricAspect};

fn post(text: &str) -> ProfilePost {
    ProfilePost { id: "p".into(), category: "c".into(), text: text.into() }
}

fn aspect() -> RubricAspect {
    RubricAspect { aspect: "a".into(), evidence: "e".into(), reason: "r".into() }
}

fn ex(
    id: &str,
    subset: &str,
    q: &str,
    posts: &[&str],
    aspects: usize,
    chosen: &str,
    rejected: &str,
) -> Example {
    ExampleBuilder::new(id)
        .subset(subset)
        .question(q)
        .profile(posts.iter().map(|t| post(t)))
        .aspects((0..aspects).map(|_| aspect()))
        .category("c")
        .chosen(chosen)
        .rejected(rejected)
        .build()
}

/// Art: e1 (q 3 words, posts 2+3 = 5 words, 2 aspects, chosen 1, rejected 4)
///      e2 (q 1 word, no posts, 0 aspects, chosen 3, rejected 2)
/// Society: e3 (q 2 words, posts 1+1+4 = 6 words, 3 aspects, chosen 2, rejected 2)
fn dataset() -> Dataset {
    Dataset {
        examples: vec![
            ex(
                "e1",
                "Art_and_Entertainment",
                "what to  watch",
                &["I like", "old silent films"],
                2,
                "Metropolis",
                "any new blockbuster film",
            ),
            ex("e2", "Art_and_Entertainment", "hi", &[], 0, "hello there friend", "go away"),
            ex(
                "e3",
                "Society_and_Culture",
                "vote how?",
                &["civics", "x", "a b\tc\nd"],
                3,
                "register first",
                "stay home",
            ),
        ],
        source: "hand".into(),
        kind: "prb".into(),
        hash: String::new(),
        profile_ranking: None,
    }
}

fn s(mean: f64, min: usize, max: usize) -> Summary {
    Summary { mean, min, max }
}

#[test]
fn words_per_subset_and_overall() {
    let st = dataset_stats(&dataset(), None);
    assert_eq!(st.unit, "words");
    assert_eq!(st.subsets.len(), 2);
    let art = &st.subsets[0];
    assert_eq!(art.subset, "Art_and_Entertainment");
    assert_eq!(art.examples, 2);
    assert_eq!(art.posts_per_profile, s(1.0, 0, 2));
    assert_eq!(art.profile_length, s(2.5, 0, 5));
    assert_eq!(art.question_length, s(2.0, 1, 3));
    assert_eq!(art.chosen_length, s(2.0, 1, 3));
    assert_eq!(art.rejected_length, s(3.0, 2, 4));
    assert_eq!(art.aspects_per_example, s(1.0, 0, 2));
    assert_eq!((art.empty_profiles, art.empty_rubrics), (1, 1));

    let soc = &st.subsets[1];
    assert_eq!(soc.examples, 1);
    assert_eq!(soc.profile_length, s(6.0, 6, 6));
    assert_eq!((soc.empty_profiles, soc.empty_rubrics), (0, 0));

    let all = &st.overall;
    assert_eq!(all.subset, "all");
    assert_eq!(all.examples, 3);
    assert_eq!(all.posts_per_profile, s(5.0 / 3.0, 0, 3));
    assert_eq!(all.profile_length, s(11.0 / 3.0, 0, 6));
    assert_eq!(all.question_length, s(2.0, 1, 3));
    assert_eq!(all.chosen_length, s(2.0, 1, 3));
    assert_eq!(all.rejected_length, s(8.0 / 3.0, 2, 4));
    assert_eq!(all.aspects_per_example, s(5.0 / 3.0, 0, 3));
    assert_eq!((all.empty_profiles, all.empty_rubrics), (1, 1));
}

#[test]
fn token_counter_is_used() {
    // "Tokens" = characters, to tell it apart from words: e1 question "what to  watch" = 14.
    let chars = |t: &str| t.chars().count();
    let st = dataset_stats(&dataset(), Some(&chars));
    assert_eq!(st.unit, "tokens");
    assert_eq!(st.subsets[0].question_length, s(8.0, 2, 14));
    // e3 posts: 6 + 1 + 7 = 14 characters.
    assert_eq!(st.subsets[1].profile_length, s(14.0, 14, 14));
}

#[test]
fn markdown_table() {
    let md = dataset_stats(&dataset(), None).to_markdown();
    assert!(md.contains("lengths in words"), "{md}");
    assert!(md.contains("| subset | examples | posts/profile | profile words |"), "{md}");
    assert!(md.contains("| Art | 2 | 1.0 (0–2) | 2.5 (0–5) | 2.0 (1–3) | 2.0 (1–3) | 3.0 (2–4) | 1.0 (0–2) | 1 | 1 |"), "{md}");
    assert!(md.contains("| Society | 1 |"), "{md}");
    assert!(md.contains("| all | 3 | 1.7 (0–3) |"), "{md}");
    let json = serde_json::to_value(dataset_stats(&dataset(), None)).unwrap();
    assert_eq!(json["overall"]["examples"], 3);
    assert_eq!(json["unit"], "words");
}

#[test]
fn empty_dataset_gives_zeros() {
    let ds = Dataset {
        examples: vec![],
        source: "e".into(),
        kind: "prb".into(),
        hash: String::new(),
        profile_ranking: None,
    };
    let st = dataset_stats(&ds, None);
    assert!(st.subsets.is_empty());
    assert_eq!(st.overall.examples, 0);
    assert_eq!(st.overall.question_length, s(0.0, 0, 0));
}
