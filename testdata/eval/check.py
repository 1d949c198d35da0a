#!/usr/bin/env python3
"""Validate the clawmem evaluation conversations in this folder.

Usage: python3 testdata/eval/check.py [FILE.json ...]
With no arguments every *.json next to this script is checked.
Exits non-zero and prints every problem found.
"""
import glob
import json
import os
import re
import sys
from datetime import datetime

CATEGORIES = {  # target share in percent, tolerance +-5 points
    "single-hop": 35,
    "multi-hop": 20,
    "temporal": 20,
    "open-domain": 12,
    "none": 13,
}
TOLERANCE = 5.0
MIN_SESSIONS = 16
TURNS_PER_SESSION = (12, 30)
MIN_QUESTIONS = 110
MIN_RELATIVE = 15
MIN_TOTAL_TURNS = 900
RUN = 8  # forbidden verbatim word-run length

WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def words(s):
    return WORD.findall(s.lower().replace("\u2019", "'"))


def ngrams(ws, n):
    return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}


def parse_date(s):
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", s):
        raise ValueError("not RFC 3339: %r" % s)
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def check_file(path):
    errs = []

    def err(msg):
        errs.append("%s: %s" % (os.path.basename(path), msg))

    with open(path, encoding="utf-8") as f:
        conv = json.load(f)
    cid = conv.get("id")
    if not cid or not isinstance(cid, str):
        err("missing conversation id")
        return errs, {}
    for key in ("description", "speakers", "sessions", "questions"):
        if key not in conv:
            err("missing key %r" % key)
    if errs:
        return errs, {}
    speakers = set(conv["speakers"])
    if len(speakers) != 2:
        err("expected two speakers, got %r" % conv["speakers"])

    turns = {}
    turn_session = {}
    sessions = conv["sessions"]
    if len(sessions) < MIN_SESSIONS:
        err("only %d sessions (< %d)" % (len(sessions), MIN_SESSIONS))
    seen_sessions = set()
    prev = None
    for si, s in enumerate(sessions, 1):
        sid = s.get("id")
        if sid in seen_sessions:
            err("duplicate session id %s" % sid)
        seen_sessions.add(sid)
        if not re.fullmatch(re.escape(cid) + r"-s\d{2}", sid or ""):
            err("bad session id %r" % sid)
        try:
            d = parse_date(s.get("date", ""))
            if d.tzinfo is None or d.utcoffset().total_seconds() != 0:
                err("session %s date is not UTC" % sid)
            if prev is not None and d <= prev:
                err("session %s is not after the previous session" % sid)
            prev = d
        except ValueError as e:
            err("session %s: %s" % (sid, e))
        n = len(s.get("turns", []))
        if not TURNS_PER_SESSION[0] <= n <= TURNS_PER_SESSION[1]:
            err("session %s has %d turns (want %d-%d)" % ((sid, n) + TURNS_PER_SESSION))
        for t in s.get("turns", []):
            tid = t.get("id")
            if tid in turns:
                err("duplicate turn id %s" % tid)
            if not re.fullmatch(re.escape(sid or "") + r"-t\d{2}", tid or ""):
                err("turn id %r does not match session %s" % (tid, sid))
            if t.get("speaker") not in speakers:
                err("turn %s: unknown speaker %r" % (tid, t.get("speaker")))
            if not str(t.get("text", "")).strip():
                err("turn %s: empty text" % tid)
            turns[tid] = t
            turn_session[tid] = sid

    qs = conv["questions"]
    if len(qs) < MIN_QUESTIONS:
        err("only %d questions (< %d)" % (len(qs), MIN_QUESTIONS))
    counts = {c: 0 for c in CATEGORIES}
    relative = 0
    qids = set()
    for q in qs:
        qid = q.get("id")
        if qid in qids:
            err("duplicate question id %s" % qid)
        qids.add(qid)
        cat = q.get("category")
        if cat not in CATEGORIES:
            err("%s: unknown category %r" % (qid, cat))
            continue
        counts[cat] += 1
        ev = q.get("evidence")
        if not isinstance(ev, list):
            err("%s: evidence must be a list" % qid)
            continue
        if not str(q.get("text", "")).strip():
            err("%s: empty text" % qid)
        if not str(q.get("answer", "")).strip():
            err("%s: empty answer" % qid)
        if len(set(ev)) != len(ev):
            err("%s: duplicate evidence ids" % qid)
        for e in ev:
            if e not in turns:
                err("%s: evidence %s does not exist" % (qid, e))
        if cat == "none":
            if ev:
                err("%s: 'none' question must have no evidence" % qid)
            if q.get("answer") != "not mentioned":
                err("%s: 'none' answer must be 'not mentioned'" % qid)
        elif not ev:
            err("%s: %s question without evidence" % (qid, cat))
        if cat == "multi-hop" and len({turn_session.get(e) for e in ev}) < 2:
            err("%s: multi-hop evidence must span >= 2 sessions" % qid)
        if q.get("relative"):
            if cat != "temporal":
                err("%s: 'relative' only allowed on temporal questions" % qid)
            else:
                relative += 1
        # no verbatim copy of the evidence wording
        qw = words(q.get("text", ""))
        qgrams = ngrams(qw, RUN)
        for e in ev:
            if e not in turns:
                continue
            tw = words(turns[e]["text"])
            if qw == tw:
                err("%s: question equals evidence turn %s" % (qid, e))
            common = qgrams & ngrams(tw, RUN)
            if common:
                err("%s: shares the %d-word run %r with %s" % (qid, RUN, " ".join(sorted(common)[0]), e))

    total = sum(counts.values())
    if total:
        for c, target in CATEGORIES.items():
            share = 100.0 * counts[c] / total
            if abs(share - target) > TOLERANCE:
                err("category %s is %.1f%% of questions (target %d%% +-%g)" % (c, share, target, TOLERANCE))
    if relative < MIN_RELATIVE:
        err("only %d relative-date temporal questions (< %d)" % (relative, MIN_RELATIVE))
    stats = {"sessions": len(sessions), "turns": len(turns), "questions": len(qs),
             "relative": relative, **counts}
    return errs, stats


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    files = argv[1:] or sorted(glob.glob(os.path.join(here, "*.json")))
    if not files:
        print("no conversation files found")
        return 1
    all_errs = []
    total_turns = 0
    cols = ["sessions", "turns", "questions"] + list(CATEGORIES) + ["relative"]
    print("%-8s" % "file" + "".join("%12s" % c for c in cols))
    for p in files:
        errs, stats = check_file(p)
        all_errs += errs
        total_turns += stats.get("turns", 0)
        if stats:
            print("%-8s" % os.path.basename(p)[:-5] + "".join("%12s" % stats[c] for c in cols))
    if not argv[1:] and total_turns < MIN_TOTAL_TURNS:
        all_errs.append("only %d turns in total (< %d)" % (total_turns, MIN_TOTAL_TURNS))
    for e in all_errs:
        print("ERROR", e)
    print("OK" if not all_errs else "%d problem(s)" % len(all_errs))
    return 1 if all_errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
