//! The wire format of the reward protocol (PROTOCOL.md §7) and the server's JSON errors.
//!
//! Compatible with the client in `prbench_remote::reward_server`: it sends
//! `{"query", "profile", "response_text"}` and reads `{"score"}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One answer to score. Unknown fields are refused: a misspelt `profile` must not quietly
/// score the answer without the user's context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreItem {
    /// The user's question (the RM's user turn).
    pub query: String,
    /// The condition's context text (profile posts, planned aspects) exactly as the reward
    /// model should see it; empty, blank, `null` or missing = no context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The policy's answer (the RM's assistant turn).
    pub response_text: String,
    /// An id for the request logs and seeded baselines (default `req-N`, a server counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl ScoreItem {
    /// The context the reward model sees: `None` for an empty or blank `profile`.
    pub fn context(&self) -> Option<String> {
        self.profile.as_deref().filter(|p| !p.trim().is_empty()).map(str::to_owned)
    }
}

impl ScoreItem {
    /// Reads one item from a JSON value, which must be an object (serde would also read an
    /// array positionally, and `["q", "a"]` must not be scored as something).
    ///
    /// # Errors
    /// 400 `invalid_request` naming `what` and the field at fault.
    pub(crate) fn from_json(value: Value, what: &str) -> Result<ScoreItem, ApiError> {
        if !value.is_object() {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("{what} must be a JSON object {{\"query\", \"profile\", \"response_text\", \"id\"?}}, not {}", json_kind(&value)),
            ));
        }
        serde_json::from_value(value).map_err(|e| ApiError::from_json(&e, what))
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Body of `POST /score/batch`: items are kept as JSON values so that an error can name the
/// item it is in.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BatchBody {
    pub(crate) items: Vec<Value>,
}

/// What went wrong with one request, for the JSON body and the request log. The log records
/// only [`ApiError::kind`], never the message: messages may quote request text.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Short machine-readable class (`malformed_json`, `invalid_request`, `body_too_large`,
    /// `batch_too_large`, `queue_full`, `shutting_down`, `model_error`, `non_finite_score`,
    /// `not_found`, `method_not_allowed`).
    pub kind: &'static str,
    /// What happened and what to do, for the client.
    pub message: String,
}

impl ApiError {
    /// An error with the given status, class and message.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, kind, message: message.into() }
    }

    /// 400 from a JSON parse failure: `malformed_json` for syntax, `invalid_request` for a
    /// missing, unknown or mistyped field (serde's message names the field).
    pub(crate) fn from_json(e: &serde_json::Error, what: &str) -> Self {
        use serde_json::error::Category;
        match e.classify() {
            Category::Syntax | Category::Eof | Category::Io => {
                ApiError::new(StatusCode::BAD_REQUEST, "malformed_json", format!("{what} is not valid JSON: {e}"))
            }
            Category::Data => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("{what}: {e} (expected {{\"query\": string, \"profile\": string, \"response_text\": string, \"id\"?: string}})"),
            ),
        }
    }
}

/// The request's class for the log, carried in the response extensions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorKind(pub(crate) &'static str);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(json!({ "error": self.message }))).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        resp.extensions_mut().insert(ErrorKind(self.kind));
        resp
    }
}
