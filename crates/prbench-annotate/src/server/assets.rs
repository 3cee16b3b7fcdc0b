//! The rating page, compiled in (no CDN, no other host).

/// The page shell: no data; its script fetches the annotator's items.
pub const PAGE_HTML: &str = include_str!("../../assets/rate.html");
/// The page's script.
pub const PAGE_JS: &str = include_str!("../../assets/rate.js");
/// The page's style.
pub const PAGE_CSS: &str = include_str!("../../assets/rate.css");
/// The 401 page of a link without a valid token: the sentence of
/// [`super::UNAUTHORIZED_MESSAGE`], no script, no data.
pub const UNAUTHORIZED_HTML: &str = include_str!("../../assets/unauthorized.html");
