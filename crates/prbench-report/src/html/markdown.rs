//! Markdown written by prbench (a build's `build-report.md`) as HTML for the report, with
//! nothing from the text able to act: raw HTML blocks and inline HTML become escaped text,
//! links and images keep only their text (no `href`/`src` is emitted at all). Tables are on.

use pulldown_cmark::{html, Event, Options, Parser, Tag, TagEnd};

/// `markdown` as an HTML fragment (safe to insert into the page as is; see the module docs).
pub fn to_safe_html(markdown: &str) -> String {
    let parser =
        Parser::new_ext(markdown, Options::ENABLE_TABLES).filter_map(|event| match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
            Event::Start(Tag::Link { .. } | Tag::Image { .. })
            | Event::End(TagEnd::Link | TagEnd::Image) => None,
            other => Some(other),
        });
    let mut out = String::new();
    html::push_html(&mut out, parser);
    out
}

/// Whether `id` is a fragment prbench writes: 1–200 characters from `a-z 0-9 -`.
fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// As [`to_safe_html`], but keeps same-page links (`#` and a `plain_id`) and the anchors
/// `<a id="…"></a>` (a `plain_id`, alone on a line) that `prbench annotate report` writes,
/// so its table of disagreements links to each item's view. Any other HTML, link or image is
/// treated as in [`to_safe_html`].
pub fn to_safe_html_anchored(markdown: &str) -> String {
    let anchor_open = |t: &str| {
        t.strip_prefix("<a id=\"").and_then(|r| r.strip_suffix("\">")).is_some_and(plain_id)
    };
    let events: Vec<Event> = Parser::new_ext(markdown, Options::ENABLE_TABLES).collect();
    let mut out_events: Vec<Event> = Vec::with_capacity(events.len());
    let mut kept_links: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < events.len() {
        match events[i].clone() {
            Event::Html(raw) | Event::InlineHtml(raw) => {
                let t = raw.trim();
                let whole = t.strip_suffix("</a>").is_some_and(anchor_open);
                // Inside a paragraph the anchor arrives as two inline tags, `<a id="…">` then
                // `</a>`: kept only as that pair, so no tag is ever left open.
                let closed_next =
                    matches!(events.get(i + 1), Some(Event::InlineHtml(n)) if n.trim() == "</a>");
                if whole {
                    out_events.push(Event::InlineHtml(raw));
                } else if anchor_open(t) && closed_next {
                    out_events.push(Event::InlineHtml(raw));
                    out_events.push(events[i + 1].clone());
                    i += 1;
                } else {
                    out_events.push(Event::Text(raw));
                }
            }
            Event::Start(Tag::Link { dest_url, title, link_type, id }) => {
                let keep = dest_url.strip_prefix('#').is_some_and(plain_id);
                kept_links.push(keep);
                if keep {
                    out_events.push(Event::Start(Tag::Link { dest_url, title, link_type, id }));
                }
            }
            Event::End(TagEnd::Link) => {
                if kept_links.pop().unwrap_or(false) {
                    out_events.push(Event::End(TagEnd::Link));
                }
            }
            Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => {}
            other => out_events.push(other),
        }
        i += 1;
    }
    let mut out = String::new();
    html::push_html(&mut out, out_events.into_iter());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_same_page_links_and_plain_anchors_survive_the_anchored_variant() {
        let md = "[q1](#item-q1) [x](javascript:alert(1)) [y](#Bad_Id) [z](http://h/)\n\n<a id=\"item-q1\"></a>\n\n<a id=\"x\" onclick=\"alert(2)\"></a>\n\n<a id=\"a\"></a><script>alert(3)</script>\n\nText\n\n<a id=\"item-q2\"></a>\n\n</a> <a id=\"b\">x\n";
        let html = to_safe_html_anchored(md);
        assert!(html.contains("<a href=\"#item-q1\">q1</a>"), "{html}");
        assert!(
            html.contains("<a id=\"item-q1\"></a>")
                && html.contains("<p><a id=\"item-q2\"></a></p>"),
            "{html}"
        );
        // A stray `</a>` and an anchor left open stay text.
        assert!(html.contains("<p>&lt;/a&gt; &lt;a id=\"b\"&gt;x</p>"), "{html}");
        assert_eq!(html.matches("href").count(), 1, "{html}");
        assert!(
            !html.contains("<script")
                && !html.contains("<a id=\"x\"")
                && html.contains("&lt;script&gt;"),
            "{html}"
        );
    }

    #[test]
    fn html_links_and_images_from_the_text_cannot_act() {
        let md = "# T\n\n<script>alert(1)</script>\n\nx <img src=x onerror=alert(2)> y [click](javascript:alert(3)) ![i](http://h/x.png)\n\n| a | b |\n|---|---|\n| `<b>` | 2 |\n";
        let html = to_safe_html(md);
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(html.contains("x &lt;img src=x onerror=alert(2)&gt; y click i"), "{html}");
        assert!(
            !html.contains("href")
                && !html.contains("src=\"")
                && !html.contains("<script")
                && !html.contains("<img"),
            "{html}"
        );
        assert!(
            html.contains("<table>") && html.contains("<td><code>&lt;b&gt;</code></td>"),
            "{html}"
        );
    }
}
