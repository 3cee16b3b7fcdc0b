// The prbench rating page. Every text from the data goes in through textContent, never as
// HTML. The token is the page's own path (/r/TOKEN); the API is under it.
"use strict";
(function () {
  const DIMS = [
    ["factuality", "Factuality"],
    ["relevance", "Relevance and instruction following"],
    ["helpfulness", "Helpfulness and harmlessness"],
    ["rubric_fit", "Rubric fit"],
  ];
  const api = location.pathname.replace(/\/+$/, "") + "/api";
  const $ = (id) => document.getElementById(id);
  // Fields in keyboard order: answer 1's four, answer 2's four, then "better".
  const fields = [];
  let active = 0;
  let progress = null;
  let view = null;
  let saving = false;
  // Unsaved changes on this item; leaving it asks twice (a second p / n / jump leaves).
  let dirty = false;
  let warned = false;

  function el(tag, props, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function radios(name, values, title, key) {
    const fs = el("fieldset", { class: "field", "data-field": key });
    fs.appendChild(el("legend", {}, title));
    for (const v of values) {
      const label = el("label", {});
      const input = el("input", { type: "radio", name, value: String(v) });
      input.addEventListener("change", () => {
        dirty = true;
        setActive(fields.findIndex((f) => f.key === key));
        fs.classList.remove("missing");
        advance();
      });
      label.appendChild(input);
      label.appendChild(document.createTextNode(String(v)));
      fs.appendChild(label);
    }
    fs.addEventListener("click", () => setActive(fields.findIndex((f) => f.key === key)));
    return fs;
  }

  function buildForm() {
    for (const a of [1, 2]) {
      const box = $("answer-" + a + "-fields");
      for (const [dim, title] of DIMS) {
        const key = "a" + a + "." + dim;
        const fs = radios("a" + a + "-" + dim, [1, 2, 3, 4, 5], title, key);
        box.appendChild(fs);
        fields.push({ key, answer: a, dim, node: fs, max: 5 });
      }
      const ta = el("textarea", { id: "comment-" + a, maxlength: "2000", placeholder: "Comment on answer " + a + " (optional)" });
      ta.addEventListener("keydown", (ev) => { if (ev.key === "Escape") { ta.blur(); ev.preventDefault(); } });
      box.appendChild(ta);
    }
    const fs = radios("better", [1, 2], "Which answer fits this user better?", "better");
    $("better-box").appendChild(fs);
    fields.push({ key: "better", answer: null, dim: null, node: fs, max: 2 });
  }

  function value(f) {
    const c = f.node.querySelector("input:checked");
    return c ? Number(c.value) : null;
  }

  function setValue(f, v) {
    for (const input of f.node.querySelectorAll("input")) input.checked = v !== null && Number(input.value) === v;
  }

  function setActive(i) {
    if (i < 0 || i >= fields.length) return;
    active = i;
    fields.forEach((f, j) => f.node.classList.toggle("active", j === i));
    const r = fields[i].node.getBoundingClientRect();
    if (r.top < 60 || r.bottom > window.innerHeight) fields[i].node.scrollIntoView({ block: "center" });
  }

  // Moves to the next unrated field after the active one (or stays on the last).
  function advance() {
    for (let j = active + 1; j < fields.length; j++) if (value(fields[j]) === null) return setActive(j);
    for (let j = 0; j < fields.length; j++) if (value(fields[j]) === null) return setActive(j);
    setActive(Math.min(active + 1, fields.length - 1));
  }

  function status(text, bad) {
    $("status").textContent = text;
    $("status").classList.toggle("bad", !!bad);
  }

  function fail(text) {
    $("main").hidden = true;
    $("done").hidden = true;
    $("error").hidden = false;
    $("error").textContent = text;
  }

  async function call(method, path, body) {
    const res = await fetch(api + path, {
      method,
      headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
      cache: "no-store",
    });
    let data = null;
    try { data = await res.json(); } catch (_) { data = null; }
    if (res.status === 401) {
      // The same sentence as the server's 401 page (UNAUTHORIZED_MESSAGE).
      fail("This link has no valid token. Open the link that `prbench annotate serve` printed for you; if the server was restarted with --new-tokens, ask for your new link.");
      throw new Error("unauthorized");
    }
    if (!res.ok) throw new Error((data && data.error) || ("HTTP " + res.status));
    return data;
  }

  function showProgress() {
    $("who").textContent = "Rating as " + progress.annotator;
    $("progress-text").textContent = progress.done + " of " + progress.total + " rated";
    $("progress-bar").max = Math.max(1, progress.total);
    $("progress-bar").value = progress.done;
    const jump = $("jump");
    jump.textContent = "";
    progress.rated.forEach((r, i) => {
      const o = el("option", { value: String(i + 1) }, (i + 1) + (r ? " ✓" : ""));
      jump.appendChild(o);
    });
    if (view) jump.value = String(view.position);
  }

  function render(v) {
    view = v;
    dirty = false;
    warned = false;
    $("done").hidden = true;
    $("main").hidden = false;
    $("item-meta").textContent = "· item " + v.position + " of " + v.total + " · " + v.subset;
    $("question").textContent = v.question;
    $("post-count").textContent = String(v.posts.length);
    const list = $("post-list");
    list.textContent = "";
    for (const p of v.posts) {
      const li = el("li", {});
      if (p.category) li.appendChild(el("span", { class: "post-category" }, p.category));
      li.appendChild(el("span", { class: "text" }, p.text));
      list.appendChild(li);
    }
    const aspects = $("aspects");
    aspects.textContent = "";
    for (const a of v.rubric_aspects) {
      const li = el("li", {}, a.aspect);
      if (a.reason) li.appendChild(el("span", { class: "aspect-reason" }, a.reason));
      aspects.appendChild(li);
    }
    $("answer-1-text").textContent = v.answers[0];
    $("answer-2-text").textContent = v.answers[1];
    for (const f of fields) {
      f.node.classList.remove("missing");
      if (!v.saved) setValue(f, null);
      else if (f.key === "better") setValue(f, v.saved.better);
      else setValue(f, v.saved.answers[f.answer - 1][f.dim]);
    }
    for (const a of [1, 2]) $("comment-" + a).value = v.saved ? v.saved.answers[a - 1].comment : "";
    $("prev").disabled = v.position <= 1;
    status(v.saved ? "Saved earlier; change anything and save again." : "", false);
    showProgress();
    const first = fields.findIndex((f) => value(f) === null);
    setActive(first < 0 ? 0 : first);
    window.scrollTo(0, 0);
  }

  // Whether leaving the item may go ahead: with unsaved changes the first try only warns.
  function mayLeave() {
    if (!dirty || warned) return true;
    warned = true;
    status("Unsaved changes on this item: save with Enter, or do that again to leave without saving.", true);
    return false;
  }

  async function open(position) {
    try {
      const v = await call("GET", "/items/" + position);
      if (location.hash !== "#p=" + position) history.replaceState(null, "", "#p=" + position);
      render(v);
    } catch (e) {
      if (e.message !== "unauthorized") status("Could not load item " + position + ": " + e.message, true);
    }
  }

  function showDone() {
    view = null;
    $("main").hidden = true;
    $("done").hidden = false;
    history.replaceState(null, "", "#done");
    showProgress();
  }

  async function save() {
    if (!view || saving) return;
    const missing = fields.filter((f) => value(f) === null);
    for (const f of fields) f.node.classList.toggle("missing", value(f) === null);
    if (missing.length) {
      status("Not saved: rate " + missing.length + " more field" + (missing.length > 1 ? "s" : "") + " first (marked red).", true);
      setActive(fields.indexOf(missing[0]));
      return;
    }
    const answers = [1, 2].map((a) => {
      const r = { comment: $("comment-" + a).value };
      for (const f of fields) if (f.answer === a) r[f.dim] = value(f);
      return r;
    });
    const body = { answers, better: value(fields[fields.length - 1]) };
    saving = true;
    $("save").disabled = true;
    status("Saving…", false);
    try {
      progress = await call("PUT", "/items/" + view.position, body);
      status("Saved.", false);
      if (progress.next === null) showDone(); else await open(progress.next);
    } catch (e) {
      if (e.message !== "unauthorized") status("Not saved: " + e.message + ". Your ratings are still here; try again.", true);
    } finally {
      saving = false;
      $("save").disabled = false;
    }
  }

  function onKey(ev) {
    if (!view || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    if (t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT")) return;
    const k = ev.key;
    if (/^[1-5]$/.test(k)) {
      const f = fields[active];
      const v = Number(k);
      if (v > f.max) { status("This field takes 1 or 2.", true); return; }
      setValue(f, v);
      dirty = true;
      f.node.classList.remove("missing");
      advance();
      ev.preventDefault();
    } else if (k === "ArrowDown" || k === "j") {
      setActive(active + 1); ev.preventDefault();
    } else if (k === "ArrowUp" || k === "k") {
      setActive(active - 1); ev.preventDefault();
    } else if (k === "Enter") {
      ev.preventDefault(); save();
    } else if (k === "p") {
      if (view.position > 1 && mayLeave()) open(view.position - 1);
    } else if (k === "n") {
      if (view.position < view.total && mayLeave()) open(view.position + 1);
    } else if (k === "c") {
      const a = fields[active].answer || 1;
      $("comment-" + a).focus(); ev.preventDefault();
    }
  }

  async function start() {
    buildForm();
    document.addEventListener("keydown", onKey);
    $("save").addEventListener("click", save);
    $("prev").addEventListener("click", () => { if (view && view.position > 1 && mayLeave()) open(view.position - 1); });
    $("jump").addEventListener("change", () => {
      if (view && !mayLeave()) { $("jump").value = String(view.position); return; }
      open(Number($("jump").value));
    });
    for (const a of [1, 2]) $("comment-" + a).addEventListener("input", () => { dirty = true; });
    try {
      progress = await call("GET", "/progress");
    } catch (e) {
      if (e.message !== "unauthorized") fail("Could not reach the rating server: " + e.message);
      return;
    }
    const m = /^#p=(\d+)$/.exec(location.hash);
    const asked = m ? Number(m[1]) : null;
    if (asked && asked >= 1 && asked <= progress.total) await open(asked);
    else if (progress.next === null) showDone();
    else await open(progress.next);
  }

  start();
})();
