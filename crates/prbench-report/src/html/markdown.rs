//! Markdown written by prbench (a build's `build-report.md`) as HTML for the report, with
//! nothing from the text able to act: raw HTML blocks and inline HTML become escaped text,
//! links and images keep only their text (no `href`/`src` is emitted at all). Tables are on.

use pulldown_cmark::{html, Event, Options, Parser, Tag, TagEnd};

/// `markdown` as an HTML fragment (safe to insert into the page as is; see the module docs).
pub fn to_safe_html(markdown: &str) -> String {
    let parser = Parser::new_ext(markdown, Options::ENABLE_TABLES).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link { .. } | Tag::Image { .. }) | Event::End(TagEnd::Link | TagEnd::Image) => None,
        other => Some(other),
    });
    let mut out = String::new();
    html::push_html(&mut out, parser);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_links_and_images_from_the_text_cannot_act() {
        let md = "# T\n\n<script>alert(1)</script>\n\nx <img src=x onerror=alert(2)> y [click](javascript:alert(3)) ![i](http://h/x.png)\n\n| a | b |\n|---|---|\n| `<b>` | 2 |\n";
        let html = to_safe_html(md);
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(html.contains("x &lt;img src=x onerror=alert(2)&gt; y click i"), "{html}");
        assert!(!html.contains("href") && !html.contains("src=\"") && !html.contains("<script") && !html.contains("<img"), "{html}");
        assert!(html.contains("<table>") && html.contains("<td><code>&lt;b&gt;</code></td>"), "{html}");
    }
}
