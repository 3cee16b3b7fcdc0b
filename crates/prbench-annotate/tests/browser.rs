//! The rating page in a real headless Chromium (Debian's `chromium`): two annotators rate,
//! one with the keyboard alone and one with the mouse; a rater goes back and changes a
//! rating; a bad token or another annotator's link shows nothing of anyone else's; hostile
//! text renders as text. `PRBENCH_SCREENSHOTS=DIR` also writes the screenshots of
//! docs/annotate/.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{examples, hostile_example, new_store, spawn_server, XSS};
use prbench_annotate::dims::Dimension;
use prbench_annotate::server::UNAUTHORIZED_MESSAGE;
use prbench_annotate::Store;
use prbench_browser::{chromium_or_skip, Page};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(15);

fn wait_js(page: &Page, js: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        // An error (the page is reloading) counts as "not yet".
        if page.eval(js).ok() == Some(Value::Bool(true)) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for `{js}`");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Waits until the page shows item `pos`.
fn wait_item(page: &Page, pos: usize, total: usize) {
    wait_js(
        page,
        &format!("!document.getElementById('main').hidden && document.getElementById('item-meta').textContent.includes('item {pos} of {total}')"),
    );
}

/// Picks `pos` in the "Go to item" list, as a rater would.
fn jump(page: &Page, pos: usize) {
    page.eval(&format!("(() => {{ const j = document.getElementById('jump'); j.value = '{pos}'; j.dispatchEvent(new Event('change')); }})()")).unwrap();
}

fn text(page: &Page, id: &str) -> String {
    page.eval(&format!("document.getElementById('{id}').textContent"))
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

fn inner_text(page: &Page) -> String {
    page.eval("document.body.innerText").unwrap().as_str().unwrap().to_string()
}

fn shot(page: &Page, selector: &str, name: &str) {
    if let Ok(dir) = std::env::var("PRBENCH_SCREENSHOTS") {
        std::fs::create_dir_all(&dir).unwrap();
        // The sticky header would be drawn mid-page in a capture taller than the window.
        page.eval(
            "document.querySelector('header').style.position = 'static'; window.scrollTo(0, 0)",
        )
        .unwrap();
        page.screenshot_element(selector, Path::new(&dir).join(name)).unwrap();
        page.eval("document.querySelector('header').style.position = ''").unwrap();
    }
}

/// Scores by position for the keyboard rater: answer 1, answer 2, better.
fn keyboard_scores(pos: usize) -> ([u8; 4], [u8; 4], u8) {
    let a = (pos % 5) as u8 + 1;
    ([a, 5, 4, 3], [2, 3, (6 - a).max(1), 1], 1 + (pos % 2) as u8)
}

fn check_saved(store: &Store, who: &str, pos: usize, want: ([u8; 4], [u8; 4], u8)) {
    let r = store
        .ratings()
        .unwrap()
        .into_iter()
        .find(|r| r.annotator == who && r.position == pos)
        .expect("saved");
    assert_eq!(
        (r.submission.answers[0].scores(), r.submission.answers[1].scores(), r.submission.better),
        want,
        "{who} item {pos}"
    );
}

#[test]
fn two_annotators_rate_one_by_keyboard_one_by_mouse_and_a_rating_can_be_changed() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Four bundled sample items (real text for the screenshot).
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/sample");
    let mut ex = prbench_data::load(sample, &[]).unwrap().examples;
    ex.truncate(4);
    let (store, tokens) = new_store(dir.path(), &ex, &["ann", "bob"], 2);
    let store = Arc::new(store);
    let (addr, _stop) = spawn_server(Arc::clone(&store));
    let url = |i: usize| prbench_annotate::server::page_url(addr, &tokens[i].1);

    // ann: the keyboard alone.
    let page = browser.open(&url(0)).unwrap();
    for pos in 1..=4 {
        wait_item(&page, pos, 4);
        assert_eq!(text(&page, "progress-text"), format!("{} of 4 rated", pos - 1));
        if pos == 1 {
            page.eval("document.getElementById('posts').open = true").unwrap();
            shot(&page, "body", "rating-page.png");
            page.eval("document.getElementById('posts').open = false").unwrap();
        }
        let (a1, a2, better) = keyboard_scores(pos);
        for s in a1.iter().chain(&a2) {
            page.press(&s.to_string()).unwrap();
        }
        page.press(&better.to_string()).unwrap();
        page.press("Enter").unwrap();
        // The page moves on only once the PUT has answered; the last item shows `done`.
        if pos < 4 {
            wait_item(&page, pos + 1, 4);
        } else {
            wait_js(&page, "!document.getElementById('done').hidden");
        }
        check_saved(&store, "ann", pos, (a1, a2, better));
    }
    wait_js(&page, "!document.getElementById('done').hidden");
    assert_eq!(text(&page, "progress-text"), "4 of 4 rated");
    // Back to item 2 from the list, change answer 2's rubric fit with ↑ and a digit, save.
    jump(&page, 2);
    wait_item(&page, 2, 4);
    let (a1, mut a2, better) = keyboard_scores(2);
    let checked = page.eval("[...document.querySelectorAll('input:checked')].map(i => i.name + '=' + i.value).join(' ')").unwrap();
    let want: Vec<String> = Dimension::ALL
        .iter()
        .zip(a1)
        .map(|(d, s)| format!("a1-{}={s}", d.name()))
        .chain(Dimension::ALL.iter().zip(a2).map(|(d, s)| format!("a2-{}={s}", d.name())))
        .chain([format!("better={better}")])
        .collect();
    assert_eq!(checked.as_str().unwrap(), want.join(" "), "the saved rating is shown");
    // All fields are filled, so the cursor starts on the first; 7 × ↓ is answer 2's rubric fit.
    for _ in 0..7 {
        page.press("ArrowDown").unwrap();
    }
    page.press("5").unwrap();
    a2[3] = 5;
    page.press("Enter").unwrap();
    wait_js(&page, "!document.getElementById('done').hidden");
    check_saved(&store, "ann", 2, (a1, a2, better));
    let rev = store
        .ratings()
        .unwrap()
        .into_iter()
        .find(|r| r.annotator == "ann" && r.position == 2)
        .unwrap()
        .revision;
    assert_eq!(rev, 2);
    // "p" goes back one item.
    jump(&page, 3);
    wait_item(&page, 3, 4);
    page.press("p").unwrap();
    wait_item(&page, 2, 4);

    // bob: the mouse alone, with an incomplete first try.
    let page = browser.open(&url(1)).unwrap();
    for pos in 1..=4 {
        wait_item(&page, pos, 4);
        if pos == 1 {
            page.click("#save").unwrap();
            wait_js(&page, "document.getElementById('status').textContent.startsWith('Not saved: rate 9 more fields')");
            assert_eq!(page.eval("document.querySelectorAll('.field.missing').length").unwrap(), 9);
        }
        let a1 = [4, 4, 4, (pos % 5) as u8 + 1];
        let a2 = [3, 3, 3, 2];
        for (ans, scores) in [(1, a1), (2, a2)] {
            for (d, s) in Dimension::ALL.iter().zip(scores) {
                page.click(&format!(
                    "fieldset[data-field='a{ans}.{}'] input[value='{s}']",
                    d.name()
                ))
                .unwrap();
            }
        }
        page.click("fieldset[data-field='better'] input[value='2']").unwrap();
        page.click("#comment-1").unwrap();
        page.type_text("#comment-1", &format!("bob on {pos}")).unwrap();
        page.click("#save").unwrap();
        if pos < 4 {
            wait_item(&page, pos + 1, 4);
        } else {
            wait_js(&page, "!document.getElementById('done').hidden");
        }
        check_saved(&store, "bob", pos, (a1, a2, 2));
    }
    let comments: Vec<String> = store
        .ratings()
        .unwrap()
        .into_iter()
        .filter(|r| r.annotator == "bob")
        .map(|r| r.submission.answers[0].comment.clone())
        .collect();
    assert_eq!(comments, ["bob on 1", "bob on 2", "bob on 3", "bob on 4"]);
    assert!(page.console_errors().is_empty(), "{:?}", page.console_errors());
    for r in page.requests() {
        assert!(r.starts_with(&format!("http://{addr}/")), "a request left the server: {r}");
    }
}

#[test]
fn a_bad_token_sees_nothing_and_another_annotators_link_shows_only_its_own_list() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ex = examples(3);
    let (store, tokens) = new_store(dir.path(), &ex, &["ann", "bob"], 2);
    let store = Arc::new(store);
    let (addr, _stop) = spawn_server(Arc::clone(&store));
    for url in [
        format!("http://{addr}/"),
        format!("http://{addr}/r/{}", "a".repeat(32)),
        format!("http://{addr}/r/"),
    ] {
        let page = browser.open(&url).unwrap();
        let t = inner_text(&page);
        assert!(t.contains(UNAUTHORIZED_MESSAGE), "{url}: {t}");
        for e in &ex {
            assert!(!t.contains(&e.question) && !t.contains(&e.chosen), "{url} shows item text");
        }
    }
    // ann saves a rating with a comment; bob's page never shows it.
    let v = store.item("ann", 1).unwrap().unwrap();
    let a = prbench_annotate::AnswerRating {
        factuality: 5,
        relevance: 5,
        helpfulness: 5,
        rubric_fit: 5,
        comment: "ANN-ONLY".into(),
    };
    store
        .submit("ann", 1, &prbench_annotate::Submission { answers: [a.clone(), a], better: 1 })
        .unwrap();
    let page = browser.open(&prbench_annotate::server::page_url(addr, &tokens[1].1)).unwrap();
    for pos in 1..=3 {
        page.eval(&format!("location.hash = '#p={pos}'; location.reload();")).unwrap();
        wait_item(&page, pos, 3);
        assert_eq!(text(&page, "who"), "Rating as bob");
        let comment = page.eval("document.getElementById('comment-1').value").unwrap();
        assert_eq!(comment, "", "bob sees a comment on item {pos}");
        assert_eq!(
            page.eval("document.querySelectorAll('input:checked').length").unwrap(),
            0,
            "bob sees ann's scores on {}",
            v.item_id
        );
        assert!(!inner_text(&page).contains("ANN-ONLY"));
    }
}

#[test]
fn a_wrong_or_voided_link_shows_the_pages_own_message_not_raw_json() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ex = examples(2);
    let (mut store, old) = new_store(dir.path(), &ex, &["ann"], 1);
    // --new-tokens on a restart: the first link is void, the new one works.
    let new = store.reissue_tokens().unwrap();
    assert_ne!(old[0].1, new[0].1);
    let (addr, _stop) = spawn_server(Arc::new(store));
    let wrong = format!("{}{}", &new[0].1[..31], if new[0].1.ends_with('0') { '1' } else { '0' });
    for (what, token) in [("a wrong token", wrong.as_str()), ("a voided token", old[0].1.as_str())]
    {
        for url in [
            prbench_annotate::server::page_url(addr, token),
            format!("{}/", prbench_annotate::server::page_url(addr, token)),
        ] {
            let page = browser.open(&url).unwrap();
            let t = inner_text(&page);
            assert!(t.contains(UNAUTHORIZED_MESSAGE), "{what}, {url}: {t}");
            assert!(
                !t.contains("{\"error\"") && !t.contains('{'),
                "{what}, {url} shows raw JSON: {t}"
            );
            for e in &ex {
                assert!(
                    !t.contains(&e.question) && !t.contains(&e.chosen),
                    "{what} shows item text"
                );
            }
        }
    }
    // The new link works, also with a trailing slash (redirected to the page's own address,
    // from which its script and style load).
    let page =
        browser.open(&format!("{}/", prbench_annotate::server::page_url(addr, &new[0].1))).unwrap();
    wait_item(&page, 1, 2);
    assert_eq!(text(&page, "who"), "Rating as ann");
    assert!(page.console_errors().is_empty(), "{:?}", page.console_errors());
}

#[test]
fn hostile_text_renders_as_text() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (store, tokens) = new_store(dir.path(), &[hostile_example()], &["ann"], 1);
    let (addr, _stop) = spawn_server(Arc::new(store));
    let page = browser.open(&prbench_annotate::server::page_url(addr, &tokens[0].1)).unwrap();
    wait_item(&page, 1, 1);
    page.eval("document.getElementById('posts').open = true").unwrap();
    let t = inner_text(&page);
    for field in ["Q ", "post ", "cat ", "aspect ", "reason ", "chosen ", "rejected "] {
        assert!(t.contains(&format!("{field}{XSS}")), "`{field}` is not shown as text: {t}");
    }
    assert_eq!(page.eval("document.scripts.length").unwrap(), 1, "only rate.js");
    assert_eq!(page.eval("document.images.length").unwrap(), 0);
    assert_eq!(page.eval("document.querySelectorAll('svg').length").unwrap(), 0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(page.dialogs().is_empty(), "a dialog opened: {:?}", page.dialogs());
    shot(&page, "body", "rating-page-hostile.png");
}
