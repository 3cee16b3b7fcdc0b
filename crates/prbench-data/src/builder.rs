//! [`ExampleBuilder`]: an [`Example`] written field by field only where it matters, for tests,
//! synthetic data and library users, so a new field of [`Example`] is added here once rather
//! than at every place that makes one.

use crate::schema::{Example, ProfilePost, RubricAspect};

/// Builds an [`Example`]. [`ExampleBuilder::new`] starts from the id alone: every text empty,
/// no profile posts, no rubric aspects, no user id; each method sets one field (or appends one
/// post or aspect) and [`ExampleBuilder::build`] returns the example.
///
/// ```
/// use prbench_data::ExampleBuilder;
///
/// let ex = ExampleBuilder::new("e1")
///     .subset("Art_and_Entertainment")
///     .question("Which film tonight?")
///     .post("p1", "Movies", "I loved Spirited Away.")
///     .aspect("Animation", "Spirited Away", "likes Ghibli")
///     .chosen("Princess Mononoke.")
///     .rejected("A superhero film.")
///     .build();
/// assert_eq!(ex.profile.len(), 1);
/// assert_eq!(ex.narrative, "");
/// assert_eq!(ex.user_id, None);
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ExampleBuilder {
    example: Example,
}

impl ExampleBuilder {
    /// An example with id `id` and every other field empty (`user_id` `None`).
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            example: Example {
                id: id.into(),
                subset: String::new(),
                question: String::new(),
                profile: Vec::new(),
                rubric_aspects: Vec::new(),
                narrative: String::new(),
                category: String::new(),
                chosen: String::new(),
                rejected: String::new(),
                user_id: None,
            },
        }
    }

    /// Sets [`Example::subset`] (the long config name, or the source name of adapted data).
    pub fn subset(mut self, subset: impl Into<String>) -> Self {
        self.example.subset = subset.into();
        self
    }

    /// Sets [`Example::question`].
    pub fn question(mut self, question: impl Into<String>) -> Self {
        self.example.question = question.into();
        self
    }

    /// Replaces [`Example::profile`] with `posts`, in the order given.
    pub fn profile(mut self, posts: impl IntoIterator<Item = ProfilePost>) -> Self {
        self.example.profile = posts.into_iter().collect();
        self
    }

    /// Appends one post to [`Example::profile`].
    pub fn post(
        mut self,
        id: impl Into<String>,
        category: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.example.profile.push(ProfilePost::new(id, category, text));
        self
    }

    /// Replaces [`Example::rubric_aspects`] with `aspects`, in the order given.
    pub fn aspects(mut self, aspects: impl IntoIterator<Item = RubricAspect>) -> Self {
        self.example.rubric_aspects = aspects.into_iter().collect();
        self
    }

    /// Appends one aspect to [`Example::rubric_aspects`].
    pub fn aspect(
        mut self,
        aspect: impl Into<String>,
        evidence: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        self.example.rubric_aspects.push(RubricAspect::new(aspect, evidence, reason));
        self
    }

    /// Sets [`Example::narrative`].
    pub fn narrative(mut self, narrative: impl Into<String>) -> Self {
        self.example.narrative = narrative.into();
        self
    }

    /// Sets [`Example::category`].
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.example.category = category.into();
        self
    }

    /// Sets [`Example::chosen`].
    pub fn chosen(mut self, chosen: impl Into<String>) -> Self {
        self.example.chosen = chosen.into();
        self
    }

    /// Sets [`Example::rejected`].
    pub fn rejected(mut self, rejected: impl Into<String>) -> Self {
        self.example.rejected = rejected.into();
        self
    }

    /// Sets [`Example::user_id`] to `Some(user)`.
    pub fn user_id(mut self, user: impl Into<String>) -> Self {
        self.example.user_id = Some(user.into());
        self
    }

    /// The example.
    #[must_use]
    pub fn build(self) -> Example {
        self.example
    }
}

impl ProfilePost {
    /// A post from its three fields.
    pub fn new(
        id: impl Into<String>,
        category: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self { id: id.into(), category: category.into(), text: text.into() }
    }
}

impl RubricAspect {
    /// An aspect from its three fields.
    pub fn new(
        aspect: impl Into<String>,
        evidence: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self { aspect: aspect.into(), evidence: evidence.into(), reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_sets_its_own_field_and_nothing_else() {
        let ex = ExampleBuilder::new("e")
            .subset("s")
            .question("q")
            .post("p1", "c1", "t1")
            .post("p2", "c2", "t2")
            .aspect("a", "e", "r")
            .narrative("n")
            .category("c")
            .chosen("x")
            .rejected("y")
            .user_id("u")
            .build();
        assert_eq!(
            ex,
            Example {
                id: "e".into(),
                subset: "s".into(),
                question: "q".into(),
                profile: vec![
                    ProfilePost { id: "p1".into(), category: "c1".into(), text: "t1".into() },
                    ProfilePost { id: "p2".into(), category: "c2".into(), text: "t2".into() },
                ],
                rubric_aspects: vec![RubricAspect {
                    aspect: "a".into(),
                    evidence: "e".into(),
                    reason: "r".into(),
                }],
                narrative: "n".into(),
                category: "c".into(),
                chosen: "x".into(),
                rejected: "y".into(),
                user_id: Some("u".into()),
            }
        );
        let replaced = ExampleBuilder::new("e")
            .post("old", "", "")
            .profile([ProfilePost::new("p", "c", "t")])
            .aspect("old", "", "")
            .aspects([])
            .build();
        assert_eq!(replaced.profile, [ProfilePost::new("p", "c", "t")]);
        assert!(replaced.rubric_aspects.is_empty());
    }
}
