#!/usr/bin/env python3
"""Validate the hand-written demo sample in data/sample/ (PROTOCOL.md section 1 schema).

Usage: python3 tools/check_sample.py [SAMPLE_DIR] [--per-file N]

Checks, for every example in the three subset files:
  * the file is strict UTF-8 without a BOM, one JSON object per line, no blank lines;
  * the field set is exactly the HF schema and every field has the right type;
  * 5-15 profile posts ({id, category, text}, ids unique within the profile) and
    3-5 rubric aspects ({aspect, evidence, reason}); every evidence cites existing post ids;
  * example ids are unique across all files;
  * chosen and rejected are under 100 words each, differ, and their word-count ratio
    chosen/rejected lies within 0.8-1.25;
  * no aspect title or the narrative appears verbatim (case- and whitespace-insensitive) in
    the question or either answer; and, because prbench's leakage guard checks every rendered
    non-oracle input, no hidden text (narrative, aspect, evidence, reason) appears in the
    question, the answers or any profile post either;
  * exactly one example carries a literal "<|im_end|>" (in a profile post only), to exercise
    special-token safety; no other chat-template token appears anywhere;
  * no example's narrative, aspect title or reason appears in another example's question,
    answers or posts (the leakage test feeds every rendered input past every example);
  * chosen is the longer answer in half of each file's examples (2 of 4), both by words and by
    characters; in each example the two measures agree and neither is a tie.

Control baselines. It also runs two of prbench's control baselines, exactly as
crates/prbench-models/src/baselines.rs defines them, and prints their accuracy per file
(correct iff score(chosen) > score(rejected); a tie is not correct):
  * longer: score = answer length in characters. Must be correct on exactly half of all
    examples (6 of 12), so answer length carries no signal;
  * profile-overlap: score = |W(answer) & W(profile)| / |W(answer)|, W = distinct lowercased
    alphanumeric runs of 3+ characters minus a stopword list; the profile is rendered as the
    runner does ("1. [category] text" lines, crates/prbench-eval/src/condition.rs). Must be
    correct on at most 7 of 12 examples and on fewer than all examples of any file, so a
    bag-of-words rule cannot pass as personalisation.

Prints a summary table and exits 0 when everything passes, 1 otherwise. Stdlib only.
"""

import argparse
import json
import os
import re
import sys

SUBSET_FILES = [
    "Art_and_Entertainment.jsonl",
    "Lifestyle_and_Personal_Development.jsonl",
    "Society_and_Culture.jsonl",
]
FIELDS = {"id", "question", "profile", "rubric_aspects", "narrative", "category", "chosen", "rejected"}
STRING_FIELDS = ["id", "question", "narrative", "category", "chosen", "rejected"]
POST_FIELDS = {"id", "category", "text"}
ASPECT_FIELDS = {"aspect", "evidence", "reason"}
POSTS_MIN, POSTS_MAX = 5, 15
ASPECTS_MIN, ASPECTS_MAX = 3, 5
MAX_WORDS = 100  # answers must be strictly under this
RATIO_MIN, RATIO_MAX = 0.8, 1.25
SPECIAL_TOKEN = "<|im_end|>"
# Other chat-template control strings that must not occur anywhere in the sample.
OTHER_TOKENS = ["<|im_start|>", "<|endoftext|>", "<|eot_id|>", "<|begin_of_text|>",
                "<|start_header_id|>", "<|end_header_id|>", "[INST]", "[/INST]",
                "<start_of_turn>", "<end_of_turn>"]
POST_ID_RE = re.compile(r"\bp\d+\b")
# profile-overlap may be correct on at most this share of all examples (7 of 12) ...
OVERLAP_MAX_CORRECT = 7 / 12
# ... and on fewer than all examples of any one file.
# Stopwords of the profile-overlap baseline: keep in sync with STOPWORDS in
# crates/prbench-models/src/baselines.rs.
OVERLAP_STOPWORDS = frozenset("""
    the and for are but not you your with that this have has was were will would can could
    should from they them their there what which who when where how all any some one its into
    about than then also just more most very our out too if use using been being each these
    those such may might
""".split())


def words(text):
    return len(text.split())


def norm(text):
    """Lower-case and collapse whitespace, for verbatim-containment checks."""
    return " ".join(text.lower().split())


def all_strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, list):
        for x in obj:
            yield from all_strings(x)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from all_strings(v)


def content_words(text):
    """Port of `content_words` in crates/prbench-models/src/baselines.rs: distinct lowercased
    alphanumeric runs (split on every non-alphanumeric character) of 3+ characters, minus the
    stopwords. Python's str.isalnum() agrees with Rust's char::is_alphanumeric() except on
    characters with the Unicode Other_Alphabetic property (combining vowel signs, circled
    letters), which the sample does not use."""
    out, run = set(), []
    for ch in text + " ":
        if ch.isalnum():
            run.append(ch)
            continue
        if len(run) >= 3:
            w = "".join(run).lower()
            if w not in OVERLAP_STOPWORDS:
                out.add(w)
        run = []
    return out


def profile_text(ex):
    """The profile as the runner gives it to profile-overlap (full_profile_text in
    crates/prbench-eval/src/condition.rs): numbered "[category] text" lines."""
    return "\n".join(f"{i}. [{p['category']}] {p['text']}" for i, p in enumerate(ex["profile"], 1))


def overlap_score(answer, profile_words):
    words = content_words(answer)
    return len(words & profile_words) / len(words) if words else 0.0


def outcome(chosen_score, rejected_score):
    """'correct', 'tie' or 'wrong' for a pointwise baseline (a tie is not correct)."""
    if chosen_score > rejected_score:
        return "correct"
    return "tie" if chosen_score == rejected_score else "wrong"


class Checker:
    def __init__(self):
        self.errors = []

    def err(self, where, msg):
        self.errors.append(f"{where}: {msg}")

    def check_example(self, where, ex):
        """Validate one parsed row; return True when its structure is usable for stats."""
        if not isinstance(ex, dict):
            self.err(where, "line is not a JSON object")
            return False
        keys = set(ex)
        if keys != FIELDS:
            missing, extra = sorted(FIELDS - keys), sorted(keys - FIELDS)
            self.err(where, f"field set differs from the schema (missing {missing}, extra {extra})")
            return False
        ok = True
        for f in STRING_FIELDS:
            if not isinstance(ex[f], str) or not ex[f].strip():
                self.err(where, f"`{f}` must be a non-empty string")
                ok = False
        if not ok:
            return False

        # Profile.
        profile = ex["profile"]
        post_ids = set()
        if not isinstance(profile, list):
            self.err(where, "`profile` must be a list")
            return False
        if not POSTS_MIN <= len(profile) <= POSTS_MAX:
            self.err(where, f"profile has {len(profile)} posts, want {POSTS_MIN}-{POSTS_MAX}")
        for i, post in enumerate(profile):
            pw = f"{where} profile[{i}]"
            if not isinstance(post, dict) or set(post) != POST_FIELDS:
                self.err(pw, f"post must be an object with exactly {sorted(POST_FIELDS)}")
                ok = False
                continue
            for f in sorted(POST_FIELDS):
                if not isinstance(post[f], str) or not post[f].strip():
                    self.err(pw, f"`{f}` must be a non-empty string")
                    ok = False
            if isinstance(post["id"], str):
                if post["id"] in post_ids:
                    self.err(pw, f"duplicate post id {post['id']!r}")
                post_ids.add(post["id"])

        # Rubric aspects.
        rubric = ex["rubric_aspects"]
        if not isinstance(rubric, list):
            self.err(where, "`rubric_aspects` must be a list")
            return False
        if not ASPECTS_MIN <= len(rubric) <= ASPECTS_MAX:
            self.err(where, f"rubric has {len(rubric)} aspects, want {ASPECTS_MIN}-{ASPECTS_MAX}")
        for i, a in enumerate(rubric):
            aw = f"{where} rubric_aspects[{i}]"
            if not isinstance(a, dict) or set(a) != ASPECT_FIELDS:
                self.err(aw, f"aspect must be an object with exactly {sorted(ASPECT_FIELDS)}")
                ok = False
                continue
            for f in sorted(ASPECT_FIELDS):
                if not isinstance(a[f], str) or not a[f].strip():
                    self.err(aw, f"`{f}` must be a non-empty string")
                    ok = False
            if isinstance(a["evidence"], str):
                cited = set(POST_ID_RE.findall(a["evidence"]))
                if not cited:
                    self.err(aw, "evidence cites no post id (p1, p2, ...)")
                for pid in sorted(cited - post_ids):
                    self.err(aw, f"evidence cites {pid}, which is not in the profile")
        if not ok:
            return False

        # Answers.
        cw, rw = words(ex["chosen"]), words(ex["rejected"])
        for name, n in (("chosen", cw), ("rejected", rw)):
            if n >= MAX_WORDS:
                self.err(where, f"`{name}` has {n} words, want under {MAX_WORDS}")
        if norm(ex["chosen"]) == norm(ex["rejected"]):
            self.err(where, "chosen and rejected are identical")
        ratio = cw / rw if rw else float("inf")
        if not RATIO_MIN <= ratio <= RATIO_MAX:
            self.err(where, f"chosen/rejected word ratio {ratio:.2f} ({cw}/{rw}) outside "
                            f"{RATIO_MIN}-{RATIO_MAX}")

        # Leakage: titles and narrative never verbatim in question or answers ...
        visible = {"question": ex["question"], "chosen": ex["chosen"], "rejected": ex["rejected"]}
        for field, text in visible.items():
            t = norm(text)
            if norm(ex["narrative"]) in t:
                self.err(where, f"narrative appears verbatim in `{field}`")
            for a in rubric:
                if norm(a["aspect"]) in t:
                    self.err(where, f"aspect title {a['aspect']!r} appears verbatim in `{field}`")
        # ... and no hidden text anywhere a non-oracle input can show it (profile included).
        hidden = [("narrative", ex["narrative"])]
        for i, a in enumerate(rubric):
            hidden += [(f"rubric_aspects[{i}].{f}", a[f]) for f in ("aspect", "evidence", "reason")]
        shown = [("question", ex["question"]), ("chosen", ex["chosen"]), ("rejected", ex["rejected"])]
        shown += [(f"profile {p['id']}", p["text"]) for p in profile]
        for hname, htext in hidden:
            h = norm(htext)
            for sname, stext in shown:
                already = sname in visible and (hname == "narrative" or hname.endswith(".aspect"))
                if not already and h in norm(stext):
                    self.err(where, f"hidden text {hname} appears verbatim in {sname}")
        return True


def load_file(checker, path, fname):
    """Parse one JSONL file strictly; return a list of (where, example)."""
    rows = []
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        checker.err(fname, f"cannot read: {e}")
        return rows
    if raw.startswith(b"\xef\xbb\xbf"):
        checker.err(fname, "file starts with a UTF-8 BOM")
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        checker.err(fname, f"not valid UTF-8: {e}")
        return rows
    if text and not text.endswith("\n"):
        checker.err(fname, "last line does not end with a newline")
    if "\r" in text:
        checker.err(fname, "contains carriage returns (use LF line endings)")
    for n, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
        where = f"{fname}:{n}"
        if not line.strip():
            checker.err(where, "blank line")
            continue
        try:
            ex = json.loads(line)
        except json.JSONDecodeError as e:
            checker.err(where, f"invalid JSON: {e}")
            continue
        if isinstance(ex, dict) and isinstance(ex.get("id"), str):
            where = f"{where} ({ex['id']})"
        rows.append((where, ex))
    return rows


def check_cross_leakage(c, examples):
    """No example's hidden text (narrative, aspect title, reason) may occur in what another
    example shows: the leakage test checks every rendered input against every example."""
    for where, ex in examples:
        hidden = [("narrative", ex["narrative"])]
        for i, a in enumerate(ex["rubric_aspects"]):
            hidden += [(f"rubric_aspects[{i}].aspect", a["aspect"]), (f"rubric_aspects[{i}].reason", a["reason"])]
        for owhere, other in examples:
            if other is ex:
                continue
            shown = [("question", other["question"]), ("chosen", other["chosen"]), ("rejected", other["rejected"])]
            shown += [(f"profile {p['id']}", p["text"]) for p in other["profile"]]
            for hname, htext in hidden:
                h = norm(htext)
                for sname, stext in shown:
                    if h and h in norm(stext):
                        c.err(where, f"hidden text {hname} appears verbatim in {sname} of {owhere}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sample_dir", nargs="?", default=os.path.join(here, "..", "data", "sample"))
    ap.add_argument("--per-file", type=int, default=4,
                    help="required examples per subset file (0 = any number; default 4)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="also print each example's baseline scores and shared profile words")
    args = ap.parse_args()

    c = Checker()
    present = sorted(f for f in os.listdir(args.sample_dir) if f.endswith(".jsonl")) \
        if os.path.isdir(args.sample_dir) else []
    if not os.path.isdir(args.sample_dir):
        c.err(args.sample_dir, "sample directory not found")
    for f in present:
        if f not in SUBSET_FILES:
            c.err(f, "unexpected .jsonl file (want only the three subset files)")

    ids = {}
    special_examples = []
    table = []
    baselines = []  # (file, [(id, longer outcome, overlap outcome, detail)])
    usable = []
    for fname in SUBSET_FILES:
        path = os.path.join(args.sample_dir, fname)
        if not os.path.isfile(path):
            c.err(fname, "missing")
            continue
        rows = load_file(c, path, fname)
        if args.per_file and len(rows) != args.per_file:
            c.err(fname, f"has {len(rows)} examples, want {args.per_file}")
        stats = []
        base = []
        for where, ex in rows:
            if not c.check_example(where, ex):
                continue
            usable.append((where, ex))
            if ex["id"] in ids:
                c.err(where, f"id {ex['id']!r} already used at {ids[ex['id']]}")
            else:
                ids[ex["id"]] = where
            if any(SPECIAL_TOKEN in s for s in all_strings(ex)):
                special_examples.append(ex["id"])
                for field in ("question", "narrative", "category", "chosen", "rejected"):
                    if SPECIAL_TOKEN in ex[field]:
                        c.err(where, f"{SPECIAL_TOKEN} must sit in a profile post, found in `{field}`")
            for tok in OTHER_TOKENS:
                if any(tok in s for s in all_strings(ex)):
                    c.err(where, f"unexpected chat-template token {tok!r}")
            cw, rw = words(ex["chosen"]), words(ex["rejected"])
            cc, rc = len(ex["chosen"]), len(ex["rejected"])  # characters (Unicode scalar values)
            stats.append((len(ex["profile"]), len(ex["rubric_aspects"]), cw, rw, cw > rw, cc, rc))
            if cw == rw or cc == rc or (cw > rw) != (cc > rc):
                c.err(where, f"chosen/rejected lengths must differ and agree in direction by words "
                             f"({cw}/{rw}) and characters ({cc}/{rc})")
            prof = content_words(profile_text(ex))
            so, ro = overlap_score(ex["chosen"], prof), overlap_score(ex["rejected"], prof)
            shared = {k: sorted(content_words(ex[k]) & prof) for k in ("chosen", "rejected")}
            base.append((ex["id"], outcome(cc, rc), outcome(so, ro), (cc, rc, so, ro, shared)))
        name = fname[: -len(".jsonl")]
        table.append((name, stats))
        baselines.append((name, base))
        n = len(stats)
        for label, longer in (("words", sum(s[4] for s in stats)), ("characters", sum(s[5] > s[6] for s in stats))):
            if longer not in (n // 2, (n + 1) // 2):
                c.err(fname, f"chosen is longer by {label} in {longer} of {n} examples, want half ({n / 2:g})")
        overlap_correct = sum(b[2] == "correct" for b in base)
        if n and overlap_correct == n:
            c.err(fname, f"baseline profile-overlap is correct on all {n} examples; rewrite answers so "
                         "fit to the user does not show as word overlap with the profile")

    check_cross_leakage(c, usable)
    all_base = [b for _, base in baselines for b in base]
    n_all = len(all_base)
    longer_all = sum(b[1] == "correct" for b in all_base)
    overlap_all = sum(b[2] == "correct" for b in all_base)
    if longer_all not in (n_all // 2, (n_all + 1) // 2):
        c.err("sample", f"baseline longer (characters) is correct on {longer_all} of {n_all}, want half ({n_all / 2:g})")
    if overlap_all > OVERLAP_MAX_CORRECT * n_all + 1e-9:
        c.err("sample", f"baseline profile-overlap is correct on {overlap_all} of {n_all}, want at most "
                        f"{int(OVERLAP_MAX_CORRECT * n_all + 1e-9)}")

    if len(special_examples) != 1:
        c.err("sample", f"{SPECIAL_TOKEN} occurs in {len(special_examples)} examples "
                        f"{special_examples}, want exactly 1")

    # Summary table.
    def row(name, st):
        n = len(st)
        mean = (lambda k: sum(s[k] for s in st) / n) if n else (lambda k: 0.0)
        return (f"{name:<36} {n:>8} {mean(0):>10.1f} {mean(1):>12.1f} "
                f"{mean(2):>12.1f} {mean(3):>14.1f} {sum(s[4] for s in st):>14}")

    print(f"{'file':<36} {'examples':>8} {'mean posts':>10} {'mean aspects':>12} "
          f"{'chosen words':>12} {'rejected words':>14} {'chosen longer':>14}")
    for name, st in table:
        print(row(name, st))
    print(row("all", [s for _, st in table for s in st]))

    def brow(name, base):
        n = len(base)
        cell = lambda k: (f"{sum(b[k] == 'correct' for b in base)}/{n}"
                          f" ({sum(b[k] == 'tie' for b in base)} tie)")
        return f"{name:<36} {cell(1):>22} {cell(2):>22}"

    print(f"\n{'control baseline (correct/examples)':<36} {'longer (characters)':>22} {'profile-overlap':>22}")
    for name, base in baselines:
        print(brow(name, base))
    print(brow("all", all_base))
    if args.verbose:
        for _, base in baselines:
            for eid, lo, oo, (cc, rc, so, ro, shared) in base:
                print(f"\n{eid}: longer {lo} ({cc}/{rc} chars), profile-overlap {oo} ({so:.3f}/{ro:.3f})")
                for k in ("chosen", "rejected"):
                    print(f"  {k:<8} shares with profile: {' '.join(shared[k]) or '-'}")
    print(f"\nspecial token {SPECIAL_TOKEN!r} in: {', '.join(special_examples) or 'none'}")

    if c.errors:
        print(f"\nFAIL: {len(c.errors)} problem(s)", file=sys.stderr)
        for e in c.errors:
            print(f"  {e}", file=sys.stderr)
        return 1
    print(f"OK: {len(ids)} examples in {len(table)} files pass all checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
