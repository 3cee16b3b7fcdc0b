// prbench report: sortable tables, the item browser and the run-vs-run view.
// Every text from data enters the page through textContent (el() below), never as HTML.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("prb-data").textContent);
  var PAGE = 200;
  var METRIC_KEY = { "primary": "res", "both-orders": "bo", "debiased": "db" };
  var METRIC_NAME = { "primary": "single order / scores", "both-orders": "both orders", "debiased": "position-debiased" };

  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (k === "text") e.textContent = attrs[k];
        else if (k === "cls") e.className = attrs[k];
        else e.setAttribute(k, attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function runLabel(r) { return r.short + " · " + r.condition + (r.oracle ? " (upper bound)" : "") + (r.baseline ? " [baseline]" : ""); }
  function pct(x) { return x === null || x === undefined ? "—" : (100 * x).toFixed(1) + "%"; }
  function fmt(x, d) { return x === null || x === undefined ? "—" : Number(x).toFixed(d); }
  function badge(res) { return el("span", { cls: "res res-" + res, text: res }); }

  // ---- sortable tables --------------------------------------------------------------
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var ths = table.querySelectorAll("thead th");
    Array.prototype.forEach.call(ths, function (th, col) {
      function sort() {
        var asc = !th.classList.contains("sorted-asc");
        Array.prototype.forEach.call(ths, function (t) { t.classList.remove("sorted-asc", "sorted-desc"); });
        th.classList.add(asc ? "sorted-asc" : "sorted-desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
          var nx = x === "" ? NaN : Number(x), ny = y === "" ? NaN : Number(y);
          var c;
          if (!isNaN(nx) && !isNaN(ny)) c = nx - ny;
          else if (isNaN(nx) && isNaN(ny)) c = String(x).localeCompare(String(y));
          else c = isNaN(nx) ? 1 : -1; // empty values last
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (ev) { if (ev.key === "Enter") sort(); });
    });
  });

  // ---- item browser -------------------------------------------------------------------
  var runs = data.runs, items = data.items, outcomes = data.outcomes;
  var byRunId = {};
  runs.forEach(function (r, i) { byRunId[r.id] = i; });
  var browser = document.getElementById("browser");
  browser.hidden = false;
  var fSubset = document.getElementById("f-subset"), fCond = document.getElementById("f-condition"),
      fModel = document.getElementById("f-model"), fResult = document.getElementById("f-result"),
      fMetric = document.getElementById("f-metric"), fSearch = document.getElementById("f-search");
  var list = document.getElementById("item-list"), detail = document.getElementById("item-detail"),
      count = document.getElementById("f-count"), more = document.getElementById("f-more");

  function uniq(xs) { var s = {}, out = []; xs.forEach(function (x) { if (!s[x]) { s[x] = 1; out.push(x); } }); return out; }
  uniq(items.map(function (it) { return it.subset; })).forEach(function (s) { fSubset.appendChild(el("option", { value: s, text: s })); });
  uniq(runs.map(function (r) { return r.condition; })).forEach(function (c) { fCond.appendChild(el("option", { value: c, text: c })); });
  uniq(runs.map(function (r) { return r.model; })).forEach(function (m) {
    var r = runs.filter(function (x) { return x.model === m; })[0];
    fModel.appendChild(el("option", { value: m, text: r.short + (r.baseline ? " [baseline]" : "") }));
  });

  var hay = [];
  function haystack(i) {
    if (hay[i] === undefined) {
      var it = items[i], parts = [it.id, it.q, it.chosen, it.rejected];
      for (var p in it.posts) parts.push(it.posts[p][1]);
      hay[i] = parts.join("\n").toLowerCase();
    }
    return hay[i];
  }

  var matches = [], shown = 0;
  function resultOf(o, metric) { return o[METRIC_KEY[metric]]; }
  function filter() {
    var sub = fSubset.value, cond = fCond.value, model = fModel.value, res = fResult.value, metric = fMetric.value;
    var q = fSearch.value.trim().toLowerCase();
    matches = [];
    for (var k = 0; k < outcomes.length; k++) {
      var o = outcomes[k], r = runs[o.r], it = items[o.i];
      if (sub && it.subset !== sub) continue;
      if (cond && r.condition !== cond) continue;
      if (model && r.model !== model) continue;
      if (res && resultOf(o, metric) !== res) continue;
      if (q && haystack(o.i).indexOf(q) < 0) continue;
      matches.push(k);
    }
    count.textContent = matches.length + " of " + outcomes.length + " outcomes" + (res ? " (result of " + METRIC_NAME[metric] + ")" : "");
    clear(list);
    shown = 0;
    page();
  }
  function link(o) {
    var r = runs[o.r];
    return "#item=" + encodeURIComponent(items[o.i].id) + "&condition=" + encodeURIComponent(r.condition) + "&run=" + encodeURIComponent(r.id);
  }
  function page() {
    var end = Math.min(matches.length, shown + PAGE);
    var metric = fMetric.value;
    for (; shown < end; shown++) {
      var k = matches[shown], o = outcomes[k], r = runs[o.r], it = items[o.i];
      var res = resultOf(o, metric);
      var li = el("li", { "data-outcome": String(k), "data-item": it.id, "data-run": r.id, "data-result": res === undefined ? "" : res },
        res === undefined ? null : badge(res), el("span", { cls: "rid", text: it.id }),
        el("span", { cls: "sub", text: runLabel(r) + " · " + it.subset }));
      li.addEventListener("click", (function (o) { return function () { location.hash = link(o); }; })(o));
      list.appendChild(li);
    }
    more.hidden = shown >= matches.length;
  }
  more.addEventListener("click", page);
  [fSubset, fCond, fModel, fResult, fMetric].forEach(function (f) { f.addEventListener("change", filter); });
  var timer = null;
  fSearch.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(filter, 150); });

  function section(title) { var s = el("div", { cls: "block" }); s.appendChild(el("h4", { text: title })); return s; }
  function verdictText(v, label) {
    if (!v) return null;
    var parts = [label + ": " + v.choice];
    if (v.p_a !== null && v.p_a !== undefined) parts.push("p_A = " + fmt(v.p_a, 4));
    if (v.margin !== null && v.margin !== undefined) parts.push("margin = " + fmt(v.margin, 3) + " nats");
    return el("div", { cls: "verdict" }, parts.join("   ") + "\nraw: " + v.raw);
  }

  function open(k) {
    var o = outcomes[k], r = runs[o.r], it = items[o.i];
    Array.prototype.forEach.call(list.querySelectorAll("li.active"), function (x) { x.classList.remove("active"); });
    var li = list.querySelector('li[data-outcome="' + k + '"]');
    if (li) { li.classList.add("active"); li.scrollIntoView({ block: "nearest" }); }
    clear(detail);
    detail.setAttribute("data-item", it.id);
    detail.setAttribute("data-run", r.id);
    var h = el("h3", null, el("span", { text: it.id }), el("a", { cls: "deeplink", href: link(o), text: "link" }));
    detail.appendChild(h);
    var head = el("p", { cls: "meta" }, runLabel(r) + " · run " + r.id + " · " + it.subset + (it.user ? " · user " + it.user : "") + " · ");
    head.appendChild(badge(o.res));
    if (o.bo) head.appendChild(el("span", { text: " both orders: " }, badge(o.bo)));
    if (o.db) head.appendChild(el("span", { text: " debiased: " }, badge(o.db)));
    detail.appendChild(head);
    // The same item in the other runs (a link without &run= opens the first of them).
    var others = [];
    outcomes.forEach(function (x, j) { if (x.i === o.i && j !== k) others.push(x); });
    if (others.length) {
      var p = el("p", { cls: "meta", id: "d-others" }, "Also in " + others.length + " other run" + (others.length > 1 ? "s" : "") + ": ");
      others.forEach(function (x, n) {
        if (n) p.appendChild(document.createTextNode(", "));
        p.appendChild(el("a", { href: link(x), text: runLabel(runs[x.r]) + " [" + runs[x.r].id + "]" }));
        p.appendChild(document.createTextNode(" "));
        p.appendChild(badge(x.res));
      });
      detail.appendChild(p);
    }
    var q = section("Question");
    q.appendChild(el("div", { cls: "textblock", id: "d-question", text: it.q }));
    detail.appendChild(q);

    // What the model saw besides the question.
    var ctx = section("What the model saw about the user");
    if (o.pids && o.pids.length) {
      var ol = el("ol", { id: "d-posts" });
      o.pids.forEach(function (pid, rank) {
        var post = it.posts[pid];
        var dropped = o.ps !== undefined && rank >= o.ps;
        var li2 = el("li", { cls: dropped ? "dropped" : "shown", "data-post": pid },
          el("strong", { text: (post ? post[0] : "?") + " " }), post ? post[1] : "(post " + pid + " not in the dataset)");
        if (dropped) li2.appendChild(el("em", { text: " (dropped to fit the context)" }));
        ol.appendChild(li2);
      });
      ctx.appendChild(el("div", { cls: "posts" }, ol));
    } else if (o.plan) {
      if (o.plan.length) {
        var pl = el("ul", { id: "d-plan" });
        o.plan.forEach(function (a) { pl.appendChild(el("li", { text: a })); });
        ctx.appendChild(el("p", { cls: "help", text: "Aspects the planner inferred from the question and posts:" }));
        ctx.appendChild(pl);
      } else ctx.appendChild(el("p", { text: "The planner produced no usable aspects; the model saw no context." }));
    } else if (r.oracle) {
      ctx.appendChild(el("p", { text: "The ground-truth rubric aspect titles (oracle: an upper bound). They are hidden with the rubric below." }));
    } else if (/^profile:/.test(r.condition)) {
      ctx.appendChild(el("p", { text: "Which posts were shown is not recorded in this run's outcomes (written before prbench recorded post ids); " + (o.ps === undefined ? "" : o.ps + " posts were shown.") }));
    } else {
      ctx.appendChild(el("p", { text: "Nothing (condition " + r.condition + ")." }));
    }
    detail.appendChild(ctx);

    // Answers, in the slots the judge saw, or chosen/rejected with their scores.
    var ans = el("div", { cls: "answers" });
    function answer(title, text, isChosen, extra) {
      var a = el("div", { cls: "answer" + (isChosen ? " is-chosen" : ""), "data-answer": isChosen ? "chosen" : "rejected" });
      a.appendChild(el("h4", { text: title + (isChosen ? " — chosen (written for this user)" : " — rejected") + (extra || "") }));
      a.appendChild(document.createTextNode(text));
      return a;
    }
    if (o.slot) {
      var chosenInA = o.slot === "A";
      ans.appendChild(answer("A", chosenInA ? it.chosen : it.rejected, chosenInA));
      ans.appendChild(answer("B", chosenInA ? it.rejected : it.chosen, !chosenInA));
    } else {
      ans.appendChild(answer("Answer", it.chosen, true, o.sc !== undefined ? " · score " + fmt(o.sc, 4) : ""));
      ans.appendChild(answer("Answer", it.rejected, false, o.sr !== undefined ? " · score " + fmt(o.sr, 4) : ""));
    }
    detail.appendChild(ans);
    var v = section("Verdict");
    if (o.v) v.appendChild(verdictText(o.v, "chosen in " + o.slot));
    if (o.sv) v.appendChild(verdictText(o.sv, "chosen in " + (o.slot === "A" ? "B" : "A")));
    if (o.sc !== undefined || o.sr !== undefined) v.appendChild(el("div", { cls: "verdict", text: "score(chosen) = " + fmt(o.sc, 6) + "   score(rejected) = " + fmt(o.sr, 6) }));
    if (o.err) v.appendChild(el("div", { cls: "verdict", text: "error: " + o.err }));
    v.appendChild(el("p", { cls: "meta", text: o.tin + " input tokens, " + o.ttr + " truncated" }));
    detail.appendChild(v);

    // The hidden scoring standard: not in the DOM until asked for.
    var hidden = el("div", { cls: "hidden-rubric", id: "d-hidden" });
    var btn = el("button", { type: "button", id: "reveal", text: "reveal the hidden rubric and narrative" });
    btn.addEventListener("click", function () {
      clear(hidden);
      hidden.appendChild(el("h4", { text: "Rubric aspects (hidden from the model except under oracle)" }));
      var ul = el("ul", { id: "d-rubric" });
      it.rubric.forEach(function (a) {
        ul.appendChild(el("li", null, el("strong", { text: a[0] }), a[1] ? el("div", { cls: "help", text: "evidence: " + a[1] }) : null, a[2] ? el("div", { cls: "help", text: "reason: " + a[2] }) : null));
      });
      hidden.appendChild(ul);
      hidden.appendChild(el("h4", { text: "Narrative" }));
      hidden.appendChild(el("div", { cls: "textblock", id: "d-narrative", text: it.narrative }));
    });
    hidden.appendChild(btn);
    detail.appendChild(hidden);
  }

  function parseHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
    });
    return out;
  }
  function route() {
    var h = parseHash();
    if (!h.item) return;
    for (var k = 0; k < outcomes.length; k++) {
      var o = outcomes[k], r = runs[o.r];
      if (items[o.i].id !== h.item) continue;
      if (h.condition && r.condition !== h.condition) continue;
      if (h.run && r.id !== h.run) continue;
      if (h.model && r.model !== h.model) continue;
      open(k);
      document.getElementById("sec-items").scrollIntoView();
      return;
    }
    clear(detail);
    detail.appendChild(el("p", { text: "No outcome matches the link (item " + h.item + (h.condition ? ", condition " + h.condition : "") + ")." }));
  }
  window.addEventListener("hashchange", route);
  filter();
  route();

  // ---- run vs run ---------------------------------------------------------------------
  var rv = document.getElementById("runvsrun");
  rv.hidden = false;
  var rvA = document.getElementById("rv-a"), rvB = document.getElementById("rv-b"), rvM = document.getElementById("rv-metric"), rvOut = document.getElementById("rv-out");
  runs.forEach(function (r, i) {
    rvA.appendChild(el("option", { value: String(i), text: runLabel(r) + " [" + r.id + "]" }));
    rvB.appendChild(el("option", { value: String(i), text: runLabel(r) + " [" + r.id + "]" }));
  });
  if (runs.length > 1) rvB.value = "1";
  function metrics() {
    var a = runs[+rvA.value], b = runs[+rvB.value], prev = rvM.value;
    clear(rvM);
    if (!a || !b) return;
    a.metrics.filter(function (m) { return b.metrics.indexOf(m) >= 0; }).forEach(function (m) { rvM.appendChild(el("option", { value: m, text: METRIC_NAME[m] })); });
    if (prev) rvM.value = prev;
    if (!rvM.value && rvM.options.length) rvM.value = rvM.options[0].value;
  }
  function compare() {
    clear(rvOut);
    var ai = +rvA.value, bi = +rvB.value, m = rvM.value;
    if (runs.length < 2) { rvOut.appendChild(el("p", { text: "One run only: nothing to compare." })); return; }
    if (ai === bi) { rvOut.appendChild(el("p", { text: "Pick two different runs." })); return; }
    var lo = Math.min(ai, bi), hi = Math.max(ai, bi);
    var pair = data.pairs.filter(function (p) { return p.a === lo && p.b === hi && p.metric === m; })[0];
    if (!pair) { rvOut.appendChild(el("p", { id: "rv-none", text: "These runs share no items under this metric (other datasets, or no common items)." })); return; }
    var first = ai === lo;
    var onlyA = first ? pair.only_a : pair.only_b, onlyB = first ? pair.only_b : pair.only_a;
    var t = el("table", { id: "rv-table" },
      el("thead", null, el("tr", null, el("th"), el("th", { text: "B correct" }), el("th", { text: "B not correct" }))),
      el("tbody", null,
        el("tr", null, el("th", { text: "A correct" }), el("td", { id: "rv-both", text: String(pair.both) }), el("td", { id: "rv-only-a", text: String(onlyA) })),
        el("tr", null, el("th", { text: "A not correct" }), el("td", { id: "rv-only-b", text: String(onlyB) }), el("td", { id: "rv-neither", text: String(pair.neither) }))));
    rvOut.appendChild(t);
    var countOf = function (r) { return outcomes.filter(function (o) { return o.r === r; }).length; };
    var na = countOf(ai), nb = countOf(bi);
    if (na !== pair.n || nb !== pair.n) {
      rvOut.appendChild(el("p", { cls: "note", id: "rv-partial", text: "Run A has " + na + " items and run B " + nb + "; only the " + pair.n + " both evaluated are compared." }));
    }
    rvOut.appendChild(el("p", null, pair.n + " items in common; exact McNemar p = ", el("strong", { id: "rv-p", text: pair.p < 1e-4 ? pair.p.toExponential(2) : pair.p.toFixed(4) }),
      " (two-sided, on the " + (onlyA + onlyB) + " items where exactly one run is correct)."));
    // The discordant items, each linked to the browser.
    var key = METRIC_KEY[m], resA = {}, ul = el("ul", { id: "rv-disagree" });
    outcomes.forEach(function (o) { if (o.r === ai) resA[items[o.i].id] = o; });
    outcomes.forEach(function (o) {
      if (o.r !== bi) return;
      var oa = resA[items[o.i].id];
      if (!oa || oa[key] === undefined || o[key] === undefined) return;
      if ((oa[key] === "correct") === (o[key] === "correct")) return;
      var li = el("li", { "data-item": items[o.i].id },
        el("a", { href: link(oa), text: items[o.i].id }), " A: ", badge(oa[key]), " B: ", badge(o[key]),
        el("a", { href: link(o), cls: "deeplink", text: "B's outcome" }));
      ul.appendChild(li);
    });
    rvOut.appendChild(el("h4", { text: "Items where exactly one of the two is correct" }));
    rvOut.appendChild(ul);
  }
  rvA.addEventListener("change", function () { metrics(); compare(); });
  rvB.addEventListener("change", function () { metrics(); compare(); });
  rvM.addEventListener("change", compare);
  metrics();
  compare();
  document.body.setAttribute("data-ready", "1");
})();
