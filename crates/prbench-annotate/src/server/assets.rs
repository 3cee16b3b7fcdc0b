//! The rating page, compiled in (no CDN, no other host).

/// The page shell: no data; its script fetches the annotator's items.
pub const PAGE_HTML: &str = include_str!("../../assets/rate.html");
/// The page's script.
pub const PAGE_JS: &str = include_str!("../../assets/rate.js");
/// The page's style.
pub const PAGE_CSS: &str = include_str!("../../assets/rate.css");
