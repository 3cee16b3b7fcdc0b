//! The rating server's HTTP API over loopback: tokens, isolation between annotators, labels
//! never sent, body checks, and what a save commits.

mod common;

use std::sync::Arc;

use common::{examples, hostile_example, http, new_store, rating, spawn_server, XSS};
use prbench_annotate::assign::assign;
use prbench_annotate::server::UNAUTHORIZED_MESSAGE;

#[test]
fn no_token_or_a_wrong_token_gets_401_and_no_item_text() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _tokens) = new_store(dir.path(), &examples(4), &["ann", "bob"], 2);
    let (addr, _stop) = spawn_server(Arc::new(store));
    let bogus = "0".repeat(32);
    for path in [
        "/".to_string(),
        "/r/".to_string(),
        format!("/r/{bogus}"),
        format!("/r/{bogus}/api/progress"),
        format!("/r/{bogus}/api/items/1"),
        format!("/r/{bogus}/anything"),
    ] {
        let r = http(addr, "GET", &path, None).unwrap();
        assert_eq!(r.status, 401, "{path}: {}", r.body);
        for needle in ["QUESTION", "CHOSEN", "REJECTED", "POST", "ASPECT"] {
            assert!(!r.body.contains(needle), "{path} leaked {needle}: {}", r.body);
        }
        // The API answers JSON; a page a browser opens answers the same sentence as HTML.
        if path.contains("/api/") {
            assert_eq!(r.json()["error"], UNAUTHORIZED_MESSAGE, "{path}");
        } else {
            assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"), "{path}");
            assert!(
                r.body.contains(UNAUTHORIZED_MESSAGE) && !r.body.contains("{\"error\""),
                "{path}: {}",
                r.body
            );
        }
    }
    let r = http(
        addr,
        "PUT",
        &format!("/r/{bogus}/api/items/1"),
        Some(rating(5, 1, 1).to_string().as_bytes()),
    )
    .unwrap();
    assert_eq!(r.status, 401);
}

#[test]
fn each_token_sees_only_its_own_list_and_never_a_label() {
    let dir = tempfile::tempdir().unwrap();
    let ex = examples(6);
    let (store, tokens) = new_store(dir.path(), &ex, &["ann", "bob", "cat"], 2);
    let (addr, _stop) = spawn_server(Arc::new(store));
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    for (name, token) in &tokens {
        let p = http(addr, "GET", &format!("/r/{token}/api/progress"), None).unwrap().json();
        assert_eq!(p["annotator"], name.as_str());
        let total = p["total"].as_u64().unwrap() as usize;
        assert_eq!(total, 4, "6 items × 2 raters over 3 annotators");
        for pos in 1..=total {
            let r = http(addr, "GET", &format!("/r/{token}/api/items/{pos}"), None).unwrap();
            assert_eq!(r.status, 200);
            let v = r.json();
            let id = v["item_id"].as_str().unwrap();
            *seen.entry(id.to_string()).or_default() += 1;
            let e = ex.iter().find(|e| e.id == id).unwrap();
            // The answers in this annotator's order, from the assignment of the same settings.
            let ids: Vec<&str> = ex.iter().map(|e| e.id.as_str()).collect();
            let names: Vec<String> = tokens.iter().map(|t| t.0.clone()).collect();
            let who = names.iter().position(|n| n == name).unwrap();
            let plan = assign(&ids, &names, 2, 7).unwrap();
            let slot = &plan[who][pos - 1];
            assert_eq!(ids[slot.item], id, "position {pos} is the assignment's");
            let want = if slot.chosen_shown_as == 1 {
                [&e.chosen, &e.rejected]
            } else {
                [&e.rejected, &e.chosen]
            };
            assert_eq!(v["answers"], serde_json::json!(want));
            assert_eq!(v["question"], e.question.as_str());
            assert_eq!(v["posts"][1]["text"], e.profile[1].text.as_str());
            assert_eq!(v["rubric_aspects"][0]["aspect"], e.rubric_aspects[0].aspect.as_str());
            // No label, no narrative, no evidence anywhere in the item.
            for bad in [
                "chosen",
                "rejected",
                "label",
                "narrative",
                "evidence",
                "NARRATIVE",
                "EVIDENCE",
                "shown_as",
            ] {
                let keys_and_values = r.body.replace(&e.chosen, "").replace(&e.rejected, "");
                assert!(!keys_and_values.contains(bad), "item view holds `{bad}`: {}", r.body);
            }
        }
        let r = http(addr, "GET", &format!("/r/{token}/api/items/{}", total + 1), None).unwrap();
        assert_eq!(r.status, 404);
        let r = http(
            addr,
            "PUT",
            &format!("/r/{token}/api/items/{}", total + 1),
            Some(rating(3, 3, 1).to_string().as_bytes()),
        )
        .unwrap();
        assert_eq!(r.status, 404, "nobody writes past their own list");
    }
    assert_eq!(seen.len(), 6);
    assert!(seen.values().all(|n| *n == 2), "{seen:?}");
}

#[test]
fn bad_bodies_get_400_and_save_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, tokens) = new_store(dir.path(), &examples(2), &["ann"], 1);
    let store = Arc::new(store);
    let (addr, _stop) = spawn_server(Arc::clone(&store));
    let t = &tokens[0].1;
    let url = format!("/r/{t}/api/items/1");
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    let mut unknown = rating(4, 2, 1);
    unknown["label"] = "chosen".into();
    cases.push(("unknown top-level field".into(), unknown.to_string().into_bytes()));
    let mut unknown_inner = rating(4, 2, 1);
    unknown_inner["answers"][0]["extra"] = 1.into();
    cases.push(("unknown answer field".into(), unknown_inner.to_string().into_bytes()));
    for (field, value) in
        [("factuality", 6), ("rubric_fit", 0), ("relevance", -1), ("helpfulness", 300)]
    {
        let mut r = rating(4, 2, 1);
        r["answers"][1][field] = value.into();
        cases.push((format!("{field} = {value}"), r.to_string().into_bytes()));
    }
    let mut better = rating(4, 2, 1);
    better["better"] = 3.into();
    cases.push(("better = 3".into(), better.to_string().into_bytes()));
    let mut missing = rating(4, 2, 1);
    missing["answers"][0].as_object_mut().unwrap().remove("helpfulness");
    cases.push(("missing score".into(), missing.to_string().into_bytes()));
    let mut one = rating(4, 2, 1);
    one["answers"].as_array_mut().unwrap().pop();
    cases.push(("one answer".into(), one.to_string().into_bytes()));
    let mut long = rating(4, 2, 1);
    long["answers"][0]["comment"] = "x".repeat(2_001).into();
    cases.push(("comment of 2,001 characters".into(), long.to_string().into_bytes()));
    cases.push(("not JSON".into(), b"{".to_vec()));
    let mut huge = rating(4, 2, 1);
    huge["answers"][0]["comment"] = "y".repeat(40_000).into();
    cases.push(("body over the limit".into(), huge.to_string().into_bytes()));
    for (what, body) in &cases {
        let r = http(addr, "PUT", &url, Some(body)).unwrap();
        assert_eq!(r.status, 400, "{what}: {}", r.body);
        assert!(r.json()["error"].is_string(), "{what}");
    }
    assert!(store.ratings().unwrap().is_empty(), "a refused body saved something");
    let r = http(
        addr,
        "PUT",
        &format!("/r/{t}/api/items/x"),
        Some(rating(4, 2, 1).to_string().as_bytes()),
    )
    .unwrap();
    assert_eq!(r.status, 400);
}

#[test]
fn a_save_is_committed_before_the_answer_and_a_change_is_a_new_revision() {
    let dir = tempfile::tempdir().unwrap();
    let (store, tokens) = new_store(dir.path(), &examples(3), &["ann"], 1);
    let store = Arc::new(store);
    let (addr, _stop) = spawn_server(Arc::clone(&store));
    let t = &tokens[0].1;
    let r = http(
        addr,
        "PUT",
        &format!("/r/{t}/api/items/2"),
        Some(rating(5, 2, 1).to_string().as_bytes()),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let p = r.json();
    assert_eq!((p["done"].as_u64(), p["next"].as_u64()), (Some(1), Some(1)));
    assert_eq!(p["rated"], serde_json::json!([false, true, false]));
    // Another connection to the same file sees it at once.
    let other = prbench_annotate::Store::open(dir.path()).unwrap();
    let saved = other.ratings().unwrap();
    assert_eq!(saved.len(), 1);
    assert_eq!(
        (saved[0].position, saved[0].revision, saved[0].submission.answers[0].comment.as_str()),
        (2, 1, "first")
    );
    let r = http(
        addr,
        "PUT",
        &format!("/r/{t}/api/items/2"),
        Some(rating(1, 4, 2).to_string().as_bytes()),
    )
    .unwrap();
    assert_eq!(r.status, 200);
    let saved = other.ratings().unwrap();
    assert_eq!(
        (saved[0].revision, saved[0].submission.better, saved[0].submission.answers[0].factuality),
        (2, 2, 1)
    );
    // The item view now carries the saved rating.
    let v = http(addr, "GET", &format!("/r/{t}/api/items/2"), None).unwrap().json();
    assert_eq!(v["saved"]["better"], 2);
}

#[test]
fn every_answer_carries_the_security_headers_and_the_page_holds_no_data() {
    let dir = tempfile::tempdir().unwrap();
    let ex = vec![hostile_example()];
    let (store, tokens) = new_store(dir.path(), &ex, &["ann"], 1);
    let (addr, _stop) = spawn_server(Arc::new(store));
    let page = http(addr, "GET", &format!("/r/{}", tokens[0].1), None).unwrap();
    assert_eq!(page.status, 200);
    assert!(
        !page.body.contains("alert(")
            && !page.body.contains("onerror")
            && !page.body.contains("ASPECT"),
        "the page shell carries no data"
    );
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"), "{csp}");
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    for asset in ["/assets/rate.js", "/assets/rate.css"] {
        let r = http(addr, "GET", asset, None).unwrap();
        assert_eq!(r.status, 200);
        assert!(r.header("content-security-policy").is_some());
        assert!(
            !r.body.contains("http://") && !r.body.contains("https://"),
            "{asset} names a host"
        );
    }
    // The API returns data texts verbatim, as JSON strings (the page renders them as text).
    let v = http(addr, "GET", &format!("/r/{}/api/items/1", tokens[0].1), None).unwrap().json();
    assert_eq!(v["question"], format!("Q {XSS}"));
}

#[test]
fn the_page_links_its_script_and_style_relatively_so_a_path_prefix_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let (store, tokens) = new_store(dir.path(), &examples(2), &["ann"], 1);
    let (addr, _stop) = spawn_server(Arc::new(store));
    let token = &tokens[0].1;
    let page = http(addr, "GET", &format!("/r/{token}"), None).unwrap();
    assert_eq!(page.status, 200);
    // Behind `https://host/prefix/` the page is `/prefix/r/TOKEN`, and `../assets/…` is
    // `/prefix/assets/…`; an absolute `/assets/…` would leave the prefix.
    for asset in ["rate.js", "rate.css"] {
        assert!(page.body.contains(&format!("\"../assets/{asset}\"")), "{}", page.body);
        assert!(!page.body.contains(&format!("\"/assets/{asset}\"")), "{}", page.body);
        assert_eq!(http(addr, "GET", &format!("/assets/{asset}"), None).unwrap().status, 200);
    }
    // With a trailing slash `../assets` would miss: the slash form redirects, relatively.
    let slash = http(addr, "GET", &format!("/r/{token}/"), None).unwrap();
    assert_eq!(slash.status, 308);
    assert_eq!(slash.header("location"), Some(format!("../{token}").as_str()));
}
