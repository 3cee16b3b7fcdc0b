//! The rating server (axum): the compiled-in page and its JSON API, one annotator per token.
//!
//! | endpoint | answer |
//! |---|---|
//! | `GET /r/{token}` | the rating page (no item text in it: the page asks the API) |
//! | `GET /r/{token}/api/progress` | [`Progress`](crate::store::Progress) |
//! | `GET /r/{token}/api/items/{position}` | [`ItemView`](crate::store::ItemView): no label |
//! | `PUT /r/{token}/api/items/{position}` | body [`Submission`]; answers the new progress once committed |
//! | `GET /assets/rate.js`, `/assets/rate.css` | the page's script and style (no data) |
//!
//! The annotator is the token's owner, so one annotator can neither read nor write another's
//! list. A path under `/r/` with an unknown token (a wrong link, or one voided by
//! `--new-tokens`) gets 401 and no item text: a page a browser shows as the sentence
//! [`UNAUTHORIZED_MESSAGE`] (the page's script says the same when the API answers 401), or,
//! under `/r/{token}/api/`, that sentence as `{"error": "…"}`; `/` gets the 401 page too.
//! `/r/{token}/` redirects to `/r/{token}`, so the page's relative links to its script and
//! style work under a path prefix (`--public-url https://host/prefix`). Other errors are
//! `{"error": "…"}`: 400 for a body over
//! [`MAX_BODY_BYTES`], malformed JSON, an unknown or missing field or an out-of-range score or
//! comment; 404 for a position not on the list. Every answer carries a Content-Security-Policy
//! that allows only this server's own script and style, `Referrer-Policy: no-referrer` and
//! `Cache-Control: no-store`.

mod assets;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{to_bytes, Body};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{middleware, Json, Router};
use serde_json::json;

use crate::error::AnnotateError;
use crate::store::Store;
use crate::submission::Submission;

/// The largest request body accepted, in bytes (a full submission with two
/// [`MAX_COMMENT_CHARS`](crate::submission::MAX_COMMENT_CHARS) comments of 4-byte characters
/// fits in 17 KB).
pub const MAX_BODY_BYTES: usize = 32 * 1024;

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// What a link without a valid token shows: the 401 page, the API's 401 `error`, and the
/// rating page's script when the API answers 401 (`assets/rate.js` holds the same sentence).
pub const UNAUTHORIZED_MESSAGE: &str = "This link has no valid token. Open the link that `prbench annotate serve` printed for you; if the server was restarted with --new-tokens, ask for your new link.";

/// The API's 401: JSON, for the page's script and other clients.
fn unauthorized() -> Response {
    error(StatusCode::UNAUTHORIZED, UNAUTHORIZED_MESSAGE)
}

/// The 401 a browser gets for a page: the same sentence as HTML, not raw JSON.
fn unauthorized_page() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        assets::UNAUTHORIZED_HTML,
    )
        .into_response()
}

/// A 500 naming the store's failure and each of its causes.
fn internal(e: impl std::error::Error) -> Response {
    let mut text = format!("the store failed: {e}");
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    error(StatusCode::INTERNAL_SERVER_ERROR, text)
}

type AppState = Arc<Store>;

/// The annotator of `token`, or the 401 answer (the `Err` is the handler's whole answer).
#[allow(clippy::result_large_err)]
fn who(store: &Store, token: &str) -> Result<String, Response> {
    store.annotator_for_token(token).map(str::to_string).ok_or_else(unauthorized)
}

#[allow(clippy::result_large_err)]
fn position(raw: &str) -> Result<usize, Response> {
    // Canonical decimal only: `01`, `+1` or `%31` name no position.
    Some(raw)
        .filter(|r| {
            !r.is_empty()
                && r.len() <= 9
                && r.bytes().all(|b| b.is_ascii_digit())
                && !r.starts_with('0')
        })
        .and_then(|r| r.parse::<usize>().ok())
        .ok_or_else(|| {
            error(StatusCode::BAD_REQUEST, format!("position `{raw}` is not a whole number from 1"))
        })
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(f).await.map_err(internal)
}

async fn page(State(store): State<AppState>, Path(token): Path<String>) -> Response {
    match store.annotator_for_token(&token) {
        Some(_) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], assets::PAGE_HTML)
            .into_response(),
        None => unauthorized_page(),
    }
}

/// `/r/{token}/` → `/r/{token}`, by a relative `Location` so a path prefix in front of this
/// server is kept; the page's links to its script and style are relative to `/r/{token}`.
async fn page_slash(State(store): State<AppState>, Path(token): Path<String>) -> Response {
    if store.annotator_for_token(&token).is_none() {
        return unauthorized_page();
    }
    match HeaderValue::from_str(&format!("../{token}")) {
        Ok(to) => (StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, to)]).into_response(),
        Err(_) => unauthorized_page(),
    }
}

async fn progress(State(store): State<AppState>, Path(token): Path<String>) -> Response {
    let annotator = match who(&store, &token) {
        Ok(a) => a,
        Err(r) => return r,
    };
    match blocking(move || store.progress(&annotator)).await {
        Ok(Ok(p)) => Json(p).into_response(),
        Ok(Err(e)) => internal(e),
        Err(r) => r,
    }
}

async fn item(
    State(store): State<AppState>,
    Path((token, pos)): Path<(String, String)>,
) -> Response {
    let annotator = match who(&store, &token) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let pos = match position(&pos) {
        Ok(p) => p,
        Err(r) => return r,
    };
    match blocking(move || store.item(&annotator, pos)).await {
        Ok(Ok(Some(view))) => Json(view).into_response(),
        Ok(Ok(None)) => error(StatusCode::NOT_FOUND, format!("your list has no item {pos}")),
        Ok(Err(e)) => internal(e),
        Err(r) => r,
    }
}

async fn submit(
    State(store): State<AppState>,
    Path((token, pos)): Path<(String, String)>,
    body: Body,
) -> Response {
    let annotator = match who(&store, &token) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let pos = match position(&pos) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let bytes = match to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the body is over {MAX_BODY_BYTES} bytes"),
            )
        }
    };
    let sub: Submission = match serde_json::from_slice(&bytes) {
        Ok(s) => s,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("the body is not a rating: {e}")),
    };
    if let Err(m) = sub.check() {
        return error(StatusCode::BAD_REQUEST, m);
    }
    match blocking(move || store.submit(&annotator, pos, &sub)).await {
        Ok(Ok(Some(p))) => Json(p).into_response(),
        Ok(Ok(None)) => error(StatusCode::NOT_FOUND, format!("your list has no item {pos}")),
        Ok(Err(e)) => internal(e),
        Err(r) => r,
    }
}

async fn root() -> Response {
    unauthorized_page()
}

async fn fallback(State(store): State<AppState>, uri: axum::http::Uri) -> Response {
    let mut parts = uri.path().trim_start_matches('/').split('/');
    if parts.next() == Some("r") && store.annotator_for_token(parts.next().unwrap_or("")).is_none()
    {
        // The API answers JSON; anything else is a page a browser shows.
        return if parts.next() == Some("api") { unauthorized() } else { unauthorized_page() };
    }
    error(StatusCode::NOT_FOUND, format!("no such page: {}", uri.path()))
}

async fn headers(req: axum::extract::Request, next: middleware::Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The rating server's routes over `store` (module docs).
pub fn router(store: Arc<Store>) -> Router {
    Router::new()
        .route("/", get(root))
        .route(
            "/assets/rate.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    assets::PAGE_JS,
                )
            }),
        )
        .route(
            "/assets/rate.css",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
                    assets::PAGE_CSS,
                )
            }),
        )
        .route("/r/{token}", get(page))
        .route("/r/{token}/", get(page_slash))
        .route("/r/{token}/api/progress", get(progress))
        .route("/r/{token}/api/items/{position}", get(item).put(submit))
        .fallback(fallback)
        .method_not_allowed_fallback(|| async {
            error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed here: pages and items are read with GET, ratings saved with PUT",
            )
        })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(headers))
        .with_state(store)
}

/// An annotator's page URL on a server at `addr`.
pub fn page_url(addr: SocketAddr, token: &str) -> String {
    format!("http://{addr}/r/{token}")
}

/// An annotator's page URL under `base` (e.g. `https://rate.example.org`, a public address in
/// front of this server); a trailing `/` of `base` is dropped.
pub fn page_url_at(base: &str, token: &str) -> String {
    format!("{}/r/{token}", base.trim_end_matches('/'))
}

/// The public address `--public-url` gives, checked and without trailing `/`s (so
/// `https://host/prefix/` and `https://host/prefix` print the same links and count as the
/// same address on a restart): links are this followed by `/r/TOKEN`.
///
/// # Errors
/// [`AnnotateError::PublicUrl`] for anything but an `http://` or `https://` address with a
/// host, no whitespace, and no `?` query or `#` fragment (a link must end in its token).
pub fn public_base(url: &str) -> Result<String, AnnotateError> {
    let refuse =
        |why: &str| AnnotateError::PublicUrl { url: url.to_string(), reason: why.to_string() };
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| refuse("is not an http:// or https:// address"))?;
    if url.contains(char::is_whitespace) {
        return Err(refuse("holds whitespace"));
    }
    if url.contains(['?', '#']) {
        return Err(refuse("holds a `?` query or `#` fragment, after which `/r/TOKEN` would not be part of the path"));
    }
    if rest.trim_start_matches('/').is_empty() || rest.starts_with('/') {
        return Err(refuse("has no host"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// Serves [`router`] on `listener` until `shutdown` completes.
///
/// # Errors
/// The listener's I/O errors.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Arc<Store>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(store)).with_graceful_shutdown(shutdown).await
}

/// Serves on `listener` (bound by the caller, so a taken port fails before anything else is
/// done) on a multi-threaded tokio runtime of its own until `shutdown` completes. For
/// front-ends without a runtime, such as the `prbench` command.
///
/// # Errors
/// Building the runtime, or serving.
pub fn run_blocking<F>(
    listener: std::net::TcpListener,
    store: Arc<Store>,
    shutdown: impl FnOnce() -> F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        serve(listener, store, shutdown()).await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_401_page_and_the_rating_script_say_the_same_sentence() {
        assert!(assets::UNAUTHORIZED_HTML.contains(UNAUTHORIZED_MESSAGE));
        assert!(assets::PAGE_JS.contains(&format!("fail(\"{UNAUTHORIZED_MESSAGE}\")")));
        assert!(!assets::UNAUTHORIZED_HTML.contains("<script"), "the 401 page needs no script");
    }

    #[test]
    fn public_base_drops_trailing_slashes_and_refuses_what_cannot_end_in_a_token() {
        assert_eq!(public_base("https://host/prefix/").unwrap(), "https://host/prefix");
        assert_eq!(public_base("https://host/prefix//").unwrap(), "https://host/prefix");
        assert_eq!(public_base("http://host:8080").unwrap(), "http://host:8080");
        assert_eq!(
            page_url_at(&public_base("https://host/prefix/").unwrap(), "t0"),
            "https://host/prefix/r/t0"
        );
        for bad in [
            "host/prefix",
            "ftp://host",
            "https://",
            "https:///path",
            "https://host/a b",
            "https://host/?x=1",
            "https://host/#top",
        ] {
            let e = public_base(bad).unwrap_err().to_string();
            assert!(e.contains("--public-url"), "{bad}: {e}");
        }
    }
}
