//! Shared set-up of the annotate tests: small datasets and a plain HTTP/1.1 client.
#![allow(dead_code)]

mod http;

use std::net::SocketAddr;

#[allow(unused_imports)]
pub use http::*;

use prbench_data::{Example, ExampleBuilder};

/// The probes every text field of [`hostile_example`] carries.
pub const XSS: &str = "<script>alert(1)</script> <img src=x onerror=alert(2)> </svg>";

/// `n` examples in two subsets, ids `q0…`, chosen `CHOSEN i`, rejected `REJECTED i`.
pub fn examples(n: usize) -> Vec<Example> {
    (0..n)
        .map(|i| {
            ExampleBuilder::new(format!("q{i}"))
                .subset(if i % 2 == 0 {
                    "Art_and_Entertainment"
                } else {
                    "Lifestyle_and_Personal_Development"
                })
                .question(format!("QUESTION {i}: how do I start?"))
                .post(format!("p{i}a"), "Hobbies", format!("POST {i} A"))
                .post(format!("p{i}b"), "", format!("POST {i} B"))
                .aspect(format!("ASPECT {i}"), format!("EVIDENCE {i}"), format!("REASON {i}"))
                .narrative(format!("NARRATIVE {i}"))
                .category("Hobbies")
                .chosen(format!("CHOSEN {i}"))
                .rejected(format!("REJECTED {i}"))
                .build()
        })
        .collect()
}

/// An example whose every text holds [`XSS`].
pub fn hostile_example() -> Example {
    let mut e = examples(1).remove(0);
    e.id = "xss".into();
    e.question = format!("Q {XSS}");
    e.profile[0].text = format!("post {XSS}");
    e.profile[0].category = format!("cat {XSS}");
    e.rubric_aspects[0].aspect = format!("aspect {XSS}");
    e.rubric_aspects[0].reason = format!("reason {XSS}");
    e.chosen = format!("chosen {XSS}");
    e.rejected = format!("rejected {XSS}");
    e
}

/// A rating server over `store` on a loopback port, on its own runtime thread; it stops when
/// the returned sender is dropped.
pub fn spawn_server(
    store: std::sync::Arc<prbench_annotate::Store>,
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            prbench_annotate::server::serve(listener, store, async move {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
    });
    (addr_rx.recv().unwrap(), tx)
}

/// A new store in `dir` over `examples`, annotators `names`, `k` per item, seed 7; the tokens.
pub fn new_store(
    dir: &std::path::Path,
    examples: &[Example],
    names: &[&str],
    k: usize,
) -> (prbench_annotate::Store, Vec<(String, String)>) {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let spec = prbench_annotate::StoreSpec {
        examples,
        source: "test",
        dataset_hash: "hash-1",
        annotators: &names,
        per_item: k,
        seed: 7,
        selection: "all items",
    };
    match prbench_annotate::Store::open_or_create(dir, &spec).unwrap() {
        (s, prbench_annotate::Opened::Created(t)) => (s, t),
        (_, prbench_annotate::Opened::Resumed) => panic!("expected a new store"),
    }
}
