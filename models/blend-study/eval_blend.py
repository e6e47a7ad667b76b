#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Evaluates face-blend detectors (train_blend.py's outputs in the cache) on the face-crops
dump of the development sets, per clip, and prints the study's tables (markdown).

  eval_blend.py --crops DIR --model NAME=PATH [--model ...] [--data DIR] [--out DIR]

Clip score: the MEAN of the frame logits (fixed before looking at any evaluation set; the
alternatives top-half mean and median are also printed for the GRID validation identities only,
where train_blend.py measured them on self-blended clips).

Sets read (those present): talking-real, talking-more (evaluation only: research / mixed
licences), talking-grid (real, trained on except GRID-s2 and GRID-F), grid-train (only its
held-out identity GRID-s4 is scored). Tables:
  1 AUC per generator family: the family's fakes vs every real clip of talking-real + talking-more
  2 AUC per set (its fakes vs its reals) and pooled
  3 threshold: BPCER <= 5 % on the real development clips (talking-real + talking-more +
    talking-grid), i.e. t = the k-th highest real score with k = floor(0.05 n) (0-based), a
    clip flagged when score > t; APCER per family and BPCER per set at it. Also the same rule
    on the untrained real clips only.
  4 confound: source frame size (the shorter side of the video frame, from its header via
    OpenCV, when DATA has the clip) and a sharpness proxy of the crops (log10 variance of the
    Laplacian of the grey crop in the face box [24:72, 20:76], median over frames), each alone
    as a fake-vs-real score; Spearman correlation of the clip score with each; AUC of the clip
    score within frame-size bands (<300, 300-599, >=600 px) and sharpness halves.
Per-clip rows are written to OUT/clips.csv (the cache, never the repository).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True      # no __pycache__ in models/
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from train_blend import (ALIAS, HELD_OUT, aggregate, auc, identity_of, load_set,  # noqa: E402
                         ort_logits, to_input)

EVAL_SETS = ("talking-real", "talking-more")
SETS = ("talking-real", "talking-more", "talking-grid", "grid-train")
RULES = ("mean", "tophalf", "median")


def sharpness(crops: np.ndarray) -> float:
    import cv2
    v = []
    for c in crops:
        g = cv2.cvtColor(c, cv2.COLOR_RGB2GRAY).astype(np.float32)
        lap = cv2.Laplacian(g, cv2.CV_32F, ksize=3)[24:72, 20:76]
        v.append(float(lap.var()))
    return float(np.log10(np.median(v) + 1e-6))


def frame_height(data: Path | None, set_name: str, file: str) -> float:
    if data is None:
        return float("nan")
    import cv2
    for cand in (data / set_name / file, data / file):
        if cand.is_file():
            cap = cv2.VideoCapture(str(cand))
            h = cap.get(cv2.CAP_PROP_FRAME_HEIGHT)
            w = cap.get(cv2.CAP_PROP_FRAME_WIDTH)
            cap.release()
            if h > 0:
                return float(min(h, w))
    return float("nan")


def spearman(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3:
        return float("nan")
    ra = np.argsort(np.argsort(a[ok])).astype(float)
    rb = np.argsort(np.argsort(b[ok])).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])


def score_clips(crops_dir: Path, models: dict, data: Path | None) -> list[dict]:
    """One row per clip with each model's frame logits aggregated by each rule."""
    rows = []
    for set_name in SETS:
        if not (crops_dir / set_name / "index.csv").is_file():
            print(f"(no {set_name} in {crops_dir})", file=sys.stderr)
            continue
        for row, crops, _ in load_set(crops_dir, set_name):
            ident = identity_of(row)
            if set_name == "grid-train" and ident not in HELD_OUT:
                continue
            trained = set_name in ("grid-train", "talking-grid") and ident not in HELD_OUT
            r = {"set": set_name, "file": row["file"], "label": row["label"],
                 "family": row["family"], "kind": row.get("kind", ""), "identity": ident,
                 "trained": int(trained), "frames": len(crops),
                 "height": frame_height(data, set_name, row["file"]),
                 "sharpness": sharpness(crops)}
            x = to_input(crops)
            for name, onnx_bytes in models.items():
                lg = ort_logits(onnx_bytes, x)[:, 0]
                for rule in RULES:
                    r[f"{name}:{rule}"] = aggregate(lg, rule)
            rows.append(r)
    return rows


def fmt(v) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def threshold(real_scores) -> float:
    s = np.sort(np.asarray(real_scores, float))[::-1]
    k = int(math.floor(0.05 * len(s)))
    return float(s[k])


def tables(rows: list[dict], name: str, rule: str = "mean") -> None:
    key = f"{name}:{rule}"
    ev = [r for r in rows if r["set"] in EVAL_SETS]
    reals = [r for r in ev if r["label"] == "real"]
    fakes = [r for r in ev if r["label"] == "fake"]
    sc = lambda rs: [r[key] for r in rs]   # noqa: E731
    print(f"\n### Model `{name}`, clip score = {rule} of frame logits\n")
    fams = sorted({r["family"] for r in fakes})
    print("| family | set | fakes | AUC vs all eval reals (n=%d) | mean score |" % len(reals))
    print("|---|---|---|---|---|")
    for f in fams:
        fr = [r for r in fakes if r["family"] == f]
        sets = "+".join(sorted({r["set"].replace("talking-", "") for r in fr}))
        print(f"| {f} | {sets} | {len(fr)} | {fmt(auc(sc(reals), sc(fr)))} | "
              f"{fmt(float(np.mean(sc(fr))))} |")
    print(f"| (all reals) | | {len(reals)} | | {fmt(float(np.mean(sc(reals))))} |")
    print("\n| comparison | fakes | reals | AUC |")
    print("|---|---|---|---|")
    for s in EVAL_SETS:
        fr = [r for r in fakes if r["set"] == s]
        rr = [r for r in reals if r["set"] == s]
        print(f"| {s} fakes vs {s} reals | {len(fr)} | {len(rr)} | {fmt(auc(sc(rr), sc(fr)))} |")
    print(f"| pooled | {len(fakes)} | {len(reals)} | {fmt(auc(sc(reals), sc(fakes)))} |")
    # threshold
    dev_real = [r for r in rows if r["label"] == "real" and r["set"] != "grid-train"]
    untrained = [r for r in dev_real if not r["trained"]]
    for label, pool in (("all real dev clips (talking-real + talking-more + talking-grid)",
                         dev_real),
                        ("untrained real dev clips (talking-grid's trained speakers left out)",
                         untrained)):
        t = threshold(sc(pool))
        print(f"\nThreshold by BPCER <= 5 % on {label}, n = {len(pool)}: **t = {t:.4f}** "
              f"(logit; flagged when score > t)\n")
        print("| family | fakes | APCER |")
        print("|---|---|---|")
        for f in fams:
            fr = [r for r in fakes if r["family"] == f]
            print(f"| {f} | {len(fr)} | {np.mean([r[key] <= t for r in fr]):.2f} |")
        print(f"| all fakes | {len(fakes)} | {np.mean([r[key] <= t for r in fakes]):.2f} |")
        print("\n| real set | clips | BPCER |")
        print("|---|---|---|")
        for s in SETS:
            rr = [r for r in rows if r["label"] == "real" and r["set"] == s]
            if rr:
                print(f"| {s}{' (held-out GRID-s4 only)' if s == 'grid-train' else ''} | "
                      f"{len(rr)} | {np.mean([r[key] > t for r in rr]):.3f} |")
    # confound
    print("\nConfound (eval sets only):\n")
    print("| quantity | AUC alone (higher = fake) | AUC alone (lower = fake) | Spearman with "
          "clip score |")
    print("|---|---|---|---|")
    for q in ("height", "sharpness"):
        hv = [r[q] for r in ev]
        okr = [r for r in reals if np.isfinite(r[q])]
        okf = [r for r in fakes if np.isfinite(r[q])]
        a = auc([r[q] for r in okr], [r[q] for r in okf])
        print(f"| {q} | {fmt(a)} | {fmt(1 - a if not math.isnan(a) else a)} | "
              f"{fmt(spearman(hv, sc(ev)))} |")
    hs = [r for r in ev if np.isfinite(r["height"])]
    if hs:
        print("\n| frame shorter side (px) | fakes | reals | AUC |")
        print("|---|---|---|---|")
        for lo, hi in ((0, 300), (300, 600), (600, 100000)):
            b = [r for r in hs if lo <= r["height"] < hi]
            bf = [r for r in b if r["label"] == "fake"]
            br = [r for r in b if r["label"] == "real"]
            print(f"| {lo}-{hi if hi < 100000 else 'max'} | {len(bf)} | {len(br)} | "
                  f"{fmt(auc(sc(br), sc(bf)))} |")
    med = float(np.median([r["sharpness"] for r in ev]))
    print("\n| sharpness band (median split) | fakes | reals | AUC |")
    print("|---|---|---|---|")
    for lab, cond in (("below median", lambda v: v < med), ("above median", lambda v: v >= med)):
        b = [r for r in ev if cond(r["sharpness"])]
        bf = [r for r in b if r["label"] == "fake"]
        br = [r for r in b if r["label"] == "real"]
        print(f"| {lab} | {len(bf)} | {len(br)} | {fmt(auc(sc(br), sc(bf)))} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--crops", type=Path, required=True)
    ap.add_argument("--model", action="append", required=True, help="NAME=PATH to an ONNX file")
    ap.add_argument("--data", type=Path, default=None, help="shared data folder (frame sizes)")
    ap.add_argument("--out", type=Path, default=None, help="per-clip CSVs go here")
    ap.add_argument("--rules", default="mean", help="comma list of aggregates to tabulate")
    args = ap.parse_args()
    models = {}
    for m in args.model:
        name, path = m.split("=", 1)
        models[name] = Path(path).read_bytes()
    rows = score_clips(args.crops, models, args.data)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / "clips.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        print(f"(per-clip scores: {path})", file=sys.stderr)
    print(f"Clips scored: " + ", ".join(
        f"{s} {sum(r['set'] == s for r in rows)}" for s in SETS))
    for name in models:
        # GRID validation (held-out identities) real clips
        val = [r for r in rows if not r["trained"] and r["set"] in ("grid-train", "talking-grid")]
        if val:
            print(f"\n{name}: held-out GRID real clips ({len(val)}): mean clip score "
                  + ", ".join(f"{rule} {np.mean([r[f'{name}:{rule}'] for r in val]):.3f}"
                              for rule in RULES))
        for rule in args.rules.split(","):
            tables(rows, name, rule)


if __name__ == "__main__":
    main()
