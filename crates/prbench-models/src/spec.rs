//! Model specs as typed on the command line (the user guide's `docs/guide/src/models.md`).

use std::path::PathBuf;

use crate::error::ModelError;

/// A parsed `--model` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// `gguf:PATH`: a local causal LM in GGUF, used as a judge.
    Gguf(PathBuf),
    /// `baseline:NAME`: a control baseline (`longer`, `shorter`, `random`, `profile-overlap`, `slot-a`).
    Baseline(String),
    /// `hf:ORG/NAME[@REV]`: a Hugging Face model repo through the hf-hub cache (the text after
    /// `hf:`; a sequence-classification reward model).
    Hf(String),
    /// `dir:PATH`: the same, from a local directory in the Hugging Face layout.
    Dir(PathBuf),
    /// `bt:PATH`: a Bradley-Terry head trained by `prbench train bt` (its output directory).
    Bt(PathBuf),
    /// `pal:PATH`: a PAL-A or PAL-B personalized reward model trained by `prbench train pal`
    /// (its output directory).
    Pal(PathBuf),
    /// `openai:MODEL[@BASE_URL[,BASE_URL…]]`: an OpenAI-compatible chat endpoint used as a
    /// judge; several base URLs are replicas of the same model. Without a URL,
    /// [`OPENAI_DEFAULT_BASE_URL`].
    OpenAi {
        /// Model name sent in each request.
        model: String,
        /// Base URLs (ending in `/v1` or wherever `/chat/completions` hangs), one per replica.
        base_urls: Vec<String>,
    },
    /// `vllm-classify:MODEL@BASE_URL[,BASE_URL…]`: a sequence-classification reward model served
    /// by vLLM (its classify/pooling API).
    VllmClassify {
        /// Model name sent in each request.
        model: String,
        /// Server base URLs (without `/v1`), one per replica.
        base_urls: Vec<String>,
    },
    /// `reward-server:URL[,URL…]`: a reward model behind the HTTP reward protocol
    /// (PROTOCOL.md §7: `POST URL/score`).
    RewardServer(Vec<String>),
    /// `sglang-classify:MODEL@URL…`, `tei:MODEL@URL…` or `openrlhf:MODEL@URL…`: a reward model
    /// behind an engine that takes pre-rendered text; prbench renders each conversation with
    /// MODEL's chat template (the hub repo or, with `--chat-template`, another source).
    Templated {
        /// Which engine serves it.
        engine: TextEngine,
        /// The served model (a Hugging Face repo name, where its chat template comes from).
        model: String,
        /// Server base URLs, one per replica.
        base_urls: Vec<String>,
    },
}

/// Engines that score text with the chat template already applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextEngine {
    /// SGLang's native `/classify` (spec kind `sglang-classify`).
    Sglang,
    /// text-embeddings-inference's `/predict` (spec kind `tei`).
    Tei,
    /// OpenRLHF's `serve_rm.py` `/get_reward` (spec kind `openrlhf`).
    OpenRlhf,
}

impl TextEngine {
    /// The spec kind (text before the first `:`).
    pub fn kind(self) -> &'static str {
        match self {
            TextEngine::Sglang => "sglang-classify",
            TextEngine::Tei => "tei",
            TextEngine::OpenRlhf => "openrlhf",
        }
    }

    fn from_kind(kind: &str) -> Option<Self> {
        [TextEngine::Sglang, TextEngine::Tei, TextEngine::OpenRlhf]
            .into_iter()
            .find(|e| e.kind() == kind)
    }
}

/// Base URL for `openai:MODEL` without `@URL`.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An example server URL of the form a spec kind takes, for messages: each kind's own (an
/// OpenAI-compatible base ends in `/v1`; the reward-model servers take their root, at the port
/// their engine listens on by default).
pub fn example_url(kind: &str) -> &'static str {
    match kind {
        "openai" => "http://127.0.0.1:8080/v1",
        "vllm-classify" => "http://127.0.0.1:8000",
        "sglang-classify" => "http://127.0.0.1:30000",
        "tei" => "http://127.0.0.1:8080",
        "openrlhf" => "http://127.0.0.1:5000",
        _ => "http://127.0.0.1:8000",
    }
}

/// The endpoint a reward-model spec kind posts to under the server's root: these servers are
/// given their root, never the OpenAI API's `/v1`.
fn root_endpoint(kind: &str) -> Option<&'static str> {
    match kind {
        "vllm-classify" => Some("/classify"),
        "sglang-classify" => Some("/classify"),
        "tei" => Some("/predict"),
        "openrlhf" => Some("/get_reward"),
        _ => None,
    }
}

/// Refuses a URL ending in `/v1` for a kind whose endpoint hangs at the server's root
/// ([`root_endpoint`]): `/v1/classify` is not where vLLM serves `/classify`, and the request
/// would only get a 404. The message spells out the spec to type instead.
fn check_roots(spec: &str, kind: &str, model: &str, urls: &[String]) -> Result<(), ModelError> {
    let Some(endpoint) = root_endpoint(kind) else { return Ok(()) };
    // Paths are case-sensitive on most servers, but `/V1` is the same mistake.
    let v1 = |u: &str| u.to_ascii_lowercase().ends_with("/v1");
    let Some(bad) = urls.iter().find(|u| v1(u)) else { return Ok(()) };
    let fixed: Vec<&str> =
        urls.iter().map(|u| if v1(u) { &u[..u.len() - 3] } else { u.as_str() }).collect();
    Err(ModelError::Spec {
        spec: spec.into(),
        reason: format!(
            "the server URL `{bad}` ends in `/v1`, but `{kind}:` takes the server's root, where `{endpoint}` hangs (`/v1` is the OpenAI-compatible API's prefix): use `{kind}:{model}@{}`",
            fixed.join(",")
        ),
    })
}

/// `path` with a leading `~` or `~/` replaced by `$HOME`, as a shell would do for a word that
/// starts with it (it does not inside `gguf:~/…`, so the spec parser does it). Other paths,
/// `~user/…` included, are returned as given.
///
/// # Errors
/// A message saying `$HOME` is not set, when the path starts with `~/` and it is needed.
pub fn expand_home(path: &str) -> Result<PathBuf, String> {
    let rest = match path.strip_prefix('~') {
        Some("") => "",
        Some(rest) if rest.starts_with('/') => rest.trim_start_matches('/'),
        _ => return Ok(PathBuf::from(path)),
    };
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Ok(if rest.is_empty() { PathBuf::from(home) } else { PathBuf::from(home).join(rest) }),
        None => Err(format!("`{path}` starts with `~`, but $HOME is not set, so it cannot be expanded; give the full path")),
    }
}

/// Splits `MODEL@URL,URL` at the last `@` (so model names holding `@` survive when a URL
/// follows); `None` for the URLs when there is no `@`. The URLs are checked by [`check_urls`]:
/// text after the `@` that is not an `http://` or `https://` URL is an error, never part of the
/// model name (a typo must not send requests, with the API key, to the default host).
fn split_model_urls(rest: &str) -> (String, Option<Vec<String>>) {
    match rest.rfind('@') {
        Some(i) => (rest[..i].to_string(), Some(parse_urls(&rest[i + 1..]))),
        None => (rest.to_string(), None),
    }
}

fn parse_urls(list: &str) -> Vec<String> {
    list.split(',')
        .map(|u| u.trim().trim_end_matches('/').to_string())
        .filter(|u| !u.is_empty())
        .collect()
}

/// Refuses text that is not an `http(s)://` URL (the message's example is of `kind`'s own form,
/// [`example_url`]), a URL with a query or fragment, and a URL given twice.
fn check_urls(spec: &str, kind: &str, urls: &[String]) -> Result<(), ModelError> {
    let what = if kind == "reward-server" {
        "the text after `reward-server:` names the server"
    } else {
        "the text after the last `@` names the server"
    };
    if let Some(bad) =
        urls.iter().find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
    {
        return Err(ModelError::Spec {
            spec: spec.into(),
            reason: format!(
                "`{bad}` is not an http:// or https:// URL ({what}, e.g. `{}`)",
                example_url(kind)
            ),
        });
    }
    // Endpoint paths are appended to the URL, so a query or fragment would end up before them.
    if let Some(bad) = urls.iter().find(|u| u.contains(['?', '#'])) {
        return Err(ModelError::Spec {
            spec: spec.into(),
            reason: format!("`{bad}` has a query or fragment (`?`, `#`); give the server's URL alone ({what}, e.g. `{}`); request options go in --request-extra", example_url(kind)),
        });
    }
    check_distinct(spec, urls)
}

/// Refuses a URL given twice: replicas are distinct servers, and a repeated one would also change
/// the run's cache identity (the URL list is part of it) without changing what is scored. URLs
/// are compared as parsed (trailing `/` dropped), with the scheme and host in any case.
fn check_distinct(spec: &str, urls: &[String]) -> Result<(), ModelError> {
    let key = |u: &str| match u.find("://") {
        Some(i) => {
            let end = u[i + 3..].find('/').map_or(u.len(), |j| i + 3 + j);
            format!("{}{}", u[..end].to_ascii_lowercase(), &u[end..])
        }
        None => u.to_string(),
    };
    for (i, u) in urls.iter().enumerate() {
        if let Some(first) = urls[..i].iter().find(|v| key(v) == key(u)) {
            return Err(ModelError::Spec {
                spec: spec.into(),
                reason: format!(
                    "the server URL `{first}` is given twice (URLs {} and {}); replica URLs must be distinct servers: list each once",
                    urls[..i].iter().position(|v| key(v) == key(u)).unwrap_or(0) + 1,
                    i + 1
                ),
            });
        }
    }
    Ok(())
}

impl ModelSpec {
    /// True for specs whose backend is a pairwise judge (`gguf:`, `openai:` and
    /// `baseline:slot-a`).
    pub fn is_judge(&self) -> bool {
        matches!(self, ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. })
            || *self == ModelSpec::Baseline("slot-a".into())
    }

    /// True for engines reached over HTTP (`openai:`, `vllm-classify:`, `reward-server:`,
    /// `sglang-classify:`, `tei:`, `openrlhf:`).
    pub fn is_remote(&self) -> bool {
        matches!(
            self,
            ModelSpec::OpenAi { .. }
                | ModelSpec::VllmClassify { .. }
                | ModelSpec::RewardServer(_)
                | ModelSpec::Templated { .. }
        )
    }

    /// A short name of the model for default run ids and file names: the file or folder name of
    /// a local model (`.gguf` dropped), the repo name of a hub model, the baseline's name, and
    /// for a served model the last part of its model name (`org/rm` → `rm`), never a piece of
    /// the server URL (whose last segment is often just `v1`). A reward server has no model
    /// name: `reward-server`. Not sanitised for file names.
    pub fn short_name(&self) -> String {
        let last = |s: &str| {
            s.trim_end_matches('/')
                .rsplit('/')
                .next()
                .filter(|t| !t.is_empty())
                .unwrap_or(s)
                .to_string()
        };
        let file = |p: &PathBuf| {
            p.file_name()
                .map_or_else(|| last(&p.to_string_lossy()), |n| n.to_string_lossy().into_owned())
        };
        match self {
            ModelSpec::Gguf(p) => {
                let name = file(p);
                name.strip_suffix(".gguf").map_or(name.clone(), str::to_string)
            }
            ModelSpec::Dir(p) | ModelSpec::Bt(p) | ModelSpec::Pal(p) => file(p),
            ModelSpec::Baseline(name) => name.clone(),
            ModelSpec::Hf(repo) => last(repo),
            ModelSpec::OpenAi { model, .. }
            | ModelSpec::VllmClassify { model, .. }
            | ModelSpec::Templated { model, .. } => last(model),
            ModelSpec::RewardServer(_) => "reward-server".into(),
        }
    }
}

impl ModelSpec {
    /// Parses a spec.
    ///
    /// # Errors
    /// [`ModelError::Spec`] naming the spec and the forms this version accepts; the forms
    /// every form this version accepts.
    pub fn parse(spec: &str) -> Result<Self, ModelError> {
        let (kind, rest) = spec.split_once(':').ok_or_else(|| ModelError::Spec {
            spec: spec.into(),
            reason: "expected KIND:VALUE, e.g. `gguf:PATH` or `baseline:longer`".into(),
        })?;
        let path =
            || expand_home(rest).map_err(|reason| ModelError::Spec { spec: spec.into(), reason });
        match kind {
            "gguf" if !rest.is_empty() => Ok(Self::Gguf(path()?)),
            "baseline" if !rest.is_empty() => Ok(Self::Baseline(rest.to_string())),
            "hf" if !rest.is_empty() => Ok(Self::Hf(rest.to_string())),
            "dir" if !rest.is_empty() => Ok(Self::Dir(path()?)),
            "bt" if !rest.is_empty() => Ok(Self::Bt(path()?)),
            "pal" if !rest.is_empty() => Ok(Self::Pal(path()?)),
            "openai" if !rest.is_empty() => {
                let (model, base_urls) = split_model_urls(rest);
                if model.is_empty() {
                    return Err(ModelError::Spec { spec: spec.into(), reason: "expected `openai:MODEL[@BASE_URL[,BASE_URL…]]`; the model name is empty".into() });
                }
                let base_urls = match base_urls {
                    None => vec![OPENAI_DEFAULT_BASE_URL.to_string()],
                    Some(urls) if urls.is_empty() => {
                        return Err(ModelError::Spec { spec: spec.into(), reason: format!("nothing follows `@`; give a base URL such as `{}`, or drop the `@` for the default host", example_url(kind)) })
                    }
                    Some(urls) => urls,
                };
                check_urls(spec, kind, &base_urls)?;
                Ok(Self::OpenAi { model, base_urls })
            }
            "vllm-classify" if !rest.is_empty() => {
                let (model, base_urls) = split_model_urls(rest);
                let base_urls = base_urls.unwrap_or_default();
                if model.is_empty() || base_urls.is_empty() {
                    return Err(ModelError::Spec {
                        spec: spec.into(),
                        reason: format!("expected `vllm-classify:MODEL@BASE_URL[,BASE_URL…]` (the server's root), e.g. `vllm-classify:Skywork/Skywork-Reward-V2-Llama-3.1-8B@{}`", example_url(kind)),
                    });
                }
                check_urls(spec, kind, &base_urls)?;
                check_roots(spec, kind, &model, &base_urls)?;
                Ok(Self::VllmClassify { model, base_urls })
            }
            k if TextEngine::from_kind(k).is_some() && !rest.is_empty() => {
                let engine = TextEngine::from_kind(k).expect("checked");
                let (model, base_urls) = split_model_urls(rest);
                let base_urls = base_urls.unwrap_or_default();
                if model.is_empty() || base_urls.is_empty() {
                    return Err(ModelError::Spec {
                        spec: spec.into(),
                        reason: format!("expected `{k}:MODEL@BASE_URL[,BASE_URL…]` (the server's root), MODEL naming the served Hugging Face repo (its chat template renders the conversation), e.g. `{k}:Skywork/Skywork-Reward-V2-Llama-3.1-8B@{}`", example_url(k)),
                    });
                }
                check_urls(spec, k, &base_urls)?;
                check_roots(spec, k, &model, &base_urls)?;
                Ok(Self::Templated { engine, model, base_urls })
            }
            "reward-server" if !rest.is_empty() => {
                let urls = parse_urls(rest);
                check_urls(spec, kind, &urls)?;
                Ok(Self::RewardServer(urls))
            }
            _ => Err(ModelError::Spec {
                spec: spec.into(),
                reason: "known kinds: `gguf:PATH` (judge), `openai:MODEL[@BASE_URL]` (remote judge), `hf:ORG/NAME[@REV]` and `dir:PATH` (sequence-classification reward model), `vllm-classify:MODEL@BASE_URL`, `sglang-classify:MODEL@BASE_URL`, `tei:MODEL@BASE_URL`, `openrlhf:MODEL@BASE_URL` and `reward-server:URL` (remote reward models), `bt:PATH` (Bradley-Terry head from `prbench train bt`), `pal:PATH` (PAL model from `prbench train pal`), `baseline:NAME` (longer, shorter, random, profile-overlap, slot-a)".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_kinds_and_names_unknown_ones() {
        assert_eq!(
            ModelSpec::parse("gguf:/m/x.gguf").unwrap(),
            ModelSpec::Gguf("/m/x.gguf".into())
        );
        assert_eq!(
            ModelSpec::parse("baseline:longer").unwrap(),
            ModelSpec::Baseline("longer".into())
        );
        assert_eq!(
            ModelSpec::parse("hf:org/name@v1").unwrap(),
            ModelSpec::Hf("org/name@v1".into())
        );
        assert_eq!(ModelSpec::parse("dir:/m/rm").unwrap(), ModelSpec::Dir("/m/rm".into()));
        assert_eq!(ModelSpec::parse("bt:runs/bt").unwrap(), ModelSpec::Bt("runs/bt".into()));
        assert_eq!(ModelSpec::parse("pal:runs/pal").unwrap(), ModelSpec::Pal("runs/pal".into()));
        assert!(ModelSpec::parse("pal:").is_err());
        assert_eq!(
            ModelSpec::parse("openai:gpt-4o").unwrap(),
            ModelSpec::OpenAi {
                model: "gpt-4o".into(),
                base_urls: vec![OPENAI_DEFAULT_BASE_URL.into()]
            }
        );
        assert_eq!(
            ModelSpec::parse("openai:me@org/m@http://127.0.0.1:8080/v1/,http://127.0.0.1:8081/v1")
                .unwrap(),
            ModelSpec::OpenAi {
                model: "me@org/m".into(),
                base_urls: vec![
                    "http://127.0.0.1:8080/v1".into(),
                    "http://127.0.0.1:8081/v1".into()
                ]
            }
        );
        assert_eq!(
            ModelSpec::parse("vllm-classify:org/rm@http://h:8000").unwrap(),
            ModelSpec::VllmClassify {
                model: "org/rm".into(),
                base_urls: vec!["http://h:8000".into()]
            }
        );
        assert!(ModelSpec::parse("vllm-classify:org/rm").is_err());
        for (kind, engine) in [
            ("sglang-classify", TextEngine::Sglang),
            ("tei", TextEngine::Tei),
            ("openrlhf", TextEngine::OpenRlhf),
        ] {
            let spec = ModelSpec::parse(&format!("{kind}:org/rm@http://h:1/,http://h:2")).unwrap();
            assert_eq!(
                spec,
                ModelSpec::Templated {
                    engine,
                    model: "org/rm".into(),
                    base_urls: vec!["http://h:1".into(), "http://h:2".into()]
                }
            );
            assert!(spec.is_remote() && !spec.is_judge());
            assert!(ModelSpec::parse(&format!("{kind}:org/rm"))
                .unwrap_err()
                .to_string()
                .contains("MODEL@BASE_URL"));
            assert!(ModelSpec::parse(&format!("{kind}:org/rm@h:1")).is_err());
        }
        assert!(ModelSpec::parse("openai:@http://h/v1").is_err());
        // A URL without its scheme is refused, never read as part of the model name.
        for bad in
            ["openai:m@127.0.0.1:8080/v1", "openai:m@ftp://h", "openai:m@", "openai:m@http://a,b:9"]
        {
            assert!(ModelSpec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ModelSpec::parse("reward-server:http://h:9/").unwrap(),
            ModelSpec::RewardServer(vec!["http://h:9".into()])
        );
        assert!(ModelSpec::parse("reward-server:h:9")
            .unwrap_err()
            .to_string()
            .contains("not an http"));
        assert!(ModelSpec::parse("hf:").is_err());
        // A replica URL given twice (as parsed: trailing `/`, scheme and host case) is refused.
        for spec in [
            "openai:m@http://127.0.0.1:18001/v1,http://127.0.0.1:18001/v1",
            "vllm-classify:m@http://127.0.0.1:18001,http://127.0.0.1:18001",
            "sglang-classify:m@http://127.0.0.1:18001,http://127.0.0.1:18001/",
            "tei:m@http://localhost:18001,http://127.0.0.1:18002,http://LOCALHOST:18001",
            "openrlhf:m@http://127.0.0.1:18001, http://127.0.0.1:18001",
            "reward-server:http://127.0.0.1:18001,http://127.0.0.1:18001",
        ] {
            let err = ModelSpec::parse(spec).unwrap_err().to_string();
            assert!(
                err.contains(":18001")
                    && err.contains("is given twice")
                    && err.contains("list each once"),
                "{spec}: {err}"
            );
        }
        assert!(
            ModelSpec::parse("tei:m@http://127.0.0.1:18001,http://127.0.0.1:18001/other").is_ok()
        );
        assert!(ModelSpec::parse("nonsense").is_err());
        assert!(ModelSpec::parse("gguf:").is_err());
    }

    #[test]
    fn a_served_reward_models_url_ending_in_v1_is_refused_with_the_spec_to_type() {
        for (kind, endpoint) in [
            ("vllm-classify", "/classify"),
            ("sglang-classify", "/classify"),
            ("tei", "/predict"),
            ("openrlhf", "/get_reward"),
        ] {
            let spec = format!("{kind}:org/rm@http://127.0.0.1:8000/v1/,http://127.0.0.1:8001");
            let err = ModelSpec::parse(&spec).unwrap_err().to_string();
            assert!(err.contains("`http://127.0.0.1:8000/v1` ends in `/v1`"), "{err}");
            assert!(
                err.contains(&format!(
                    "`{kind}:` takes the server's root, where `{endpoint}` hangs"
                )),
                "{err}"
            );
            assert!(
                err.contains(&format!(
                    "use `{kind}:org/rm@http://127.0.0.1:8000,http://127.0.0.1:8001`"
                )),
                "{err}"
            );
            // A root with a path of its own is still a root (a server behind a proxy prefix).
            assert!(ModelSpec::parse(&format!("{kind}:org/rm@http://127.0.0.1:8000/rm")).is_ok());
        }
        for spec in ["vllm-classify:m@http://127.0.0.1:8000/V1", "tei:m@http://127.0.0.1:8080/v1/"]
        {
            let err = ModelSpec::parse(spec).unwrap_err().to_string();
            assert!(
                err.contains("ends in `/v1`") && err.contains("@http://127.0.0.1:80"),
                "{spec}: {err}"
            );
        }
        for spec in [
            "vllm-classify:m@http://127.0.0.1:8000/v1?x",
            "openai:m@http://127.0.0.1:8080/v1?key=1",
            "openai:m@http://h/v1#frag",
        ] {
            let err = ModelSpec::parse(spec).unwrap_err().to_string();
            assert!(err.contains("has a query or fragment"), "{spec}: {err}");
        }
        // `/v1` is where an OpenAI-compatible API hangs, and a reward server's URL is the user's.
        assert!(ModelSpec::parse("openai:m@http://127.0.0.1:8080/v1").is_ok());
        assert!(ModelSpec::parse("reward-server:http://127.0.0.1:8000/v1").is_ok());
    }

    #[test]
    fn each_kinds_url_messages_give_an_example_url_of_its_own_form() {
        let bad = |spec: &str| ModelSpec::parse(spec).unwrap_err().to_string();
        assert!(bad("openai:m@127.0.0.1:8080/v1").contains("e.g. `http://127.0.0.1:8080/v1`"));
        assert!(bad("openai:m@").contains("such as `http://127.0.0.1:8080/v1`"));
        for (spec, example) in [
            ("vllm-classify:m@127.0.0.1:8000", "e.g. `http://127.0.0.1:8000`"),
            ("vllm-classify:m", "@http://127.0.0.1:8000`"),
            ("sglang-classify:m@127.0.0.1:30000", "e.g. `http://127.0.0.1:30000`"),
            ("sglang-classify:m", "@http://127.0.0.1:30000`"),
            ("tei:m@127.0.0.1:8080", "e.g. `http://127.0.0.1:8080`"),
            ("openrlhf:m@127.0.0.1:5000", "e.g. `http://127.0.0.1:5000`"),
            ("openrlhf:m", "@http://127.0.0.1:5000`"),
            ("reward-server:127.0.0.1:8000", "e.g. `http://127.0.0.1:8000`"),
        ] {
            let err = bad(spec);
            assert!(err.contains(example), "{spec}: {err}");
            assert!(
                !err.contains("/v1"),
                "{spec}: a root-taking kind's message shows no `/v1` URL: {err}"
            );
        }
    }

    #[test]
    fn a_leading_tilde_in_a_path_spec_is_the_home_folder() {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
        for kind in ["gguf", "dir", "bt", "pal"] {
            let parsed = ModelSpec::parse(&format!("{kind}:~/models/x.gguf"));
            let Some(home) = &home else {
                assert!(parsed.unwrap_err().to_string().contains("$HOME is not set"));
                continue;
            };
            let want = PathBuf::from(home).join("models").join("x.gguf");
            let got = match parsed.unwrap() {
                ModelSpec::Gguf(p) | ModelSpec::Dir(p) | ModelSpec::Bt(p) | ModelSpec::Pal(p) => p,
                other => panic!("{kind}: {other:?}"),
            };
            assert_eq!(got, want, "{kind}");
        }
        if let Some(home) = &home {
            assert_eq!(expand_home("~").unwrap(), PathBuf::from(home));
        }
        // Only a leading `~` alone or before `/` is the home folder.
        for kept in ["~user/m.gguf", "models/~/m.gguf", "/abs/m.gguf", "rel/m.gguf"] {
            assert_eq!(expand_home(kept).unwrap(), PathBuf::from(kept));
        }
    }

    #[test]
    fn the_short_name_is_the_model_name_never_the_urls_last_segment() {
        for (spec, want) in [
            ("openai:smollm2@http://127.0.0.1:8080/v1", "smollm2"),
            (
                "openai:Qwen/Qwen2.5-7B-Instruct@http://h:8000/v1,http://h:8001/v1",
                "Qwen2.5-7B-Instruct",
            ),
            ("openai:gpt-4o", "gpt-4o"),
            ("vllm-classify:Skywork/Skywork-Reward-V2@http://h:8000", "Skywork-Reward-V2"),
            ("tei:org/rm@http://h:8080/prefix", "rm"),
            ("reward-server:http://h:8000/v1", "reward-server"),
            ("gguf:/m/SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct.Q4_1"),
            ("dir:/m/rm/", "rm"),
            ("bt:runs/bt", "bt"),
            ("hf:org/name", "name"),
            ("baseline:longer", "longer"),
        ] {
            assert_eq!(ModelSpec::parse(spec).unwrap().short_name(), want, "{spec}");
        }
    }
}
