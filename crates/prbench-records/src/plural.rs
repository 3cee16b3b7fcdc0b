//! Counts in messages and reports: "1 example", "2 examples", never "1 examples".

/// `n` followed by the noun that agrees with it: `count(1, "example", "examples")` is
/// `"1 example"`, `count(0, …)` and `count(2, …)` take the plural.
pub fn count<N: Copy + PartialEq + From<u8> + std::fmt::Display>(
    n: N,
    one: &str,
    many: &str,
) -> String {
    format!("{n} {}", noun(n, one, many))
}

/// The noun that agrees with `n` (for phrases such as "the first 1 example" or "3 of 12
/// examples", where the number and the noun are apart).
pub fn noun<'a, N: PartialEq + From<u8>>(n: N, one: &'a str, many: &'a str) -> &'a str {
    if n == N::from(1) {
        one
    } else {
        many
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_takes_the_singular_and_every_other_count_the_plural() {
        assert_eq!(count(0, "example", "examples"), "0 examples");
        assert_eq!(count(1, "example", "examples"), "1 example");
        assert_eq!(count(2, "entry", "entries"), "2 entries");
        assert_eq!(noun(1, "post", "posts"), "post");
    }

    #[test]
    fn profile_line_says_top_1_post() {
        let p = crate::ProfileReport {
            k: 1,
            retriever: "bm25".into(),
            mean_posts_shown: 1.0,
            posts_dropped: 1,
            examples_with_drops: 1,
            empty_profile: 0,
        };
        assert_eq!(
            p.line(),
            "top 1 post ranked by bm25; 1.00 shown per example on average; 1 lowest-ranked post dropped to fit the model's context (1 example)"
        );
        let p = crate::ProfileReport { k: 10, posts_dropped: 0, examples_with_drops: 0, ..p };
        assert!(
            p.line().starts_with("top 10 posts ranked")
                && p.line().ends_with(
                    "0 lowest-ranked posts dropped to fit the model's context (0 examples)"
                )
        );
    }
}
