#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Print the AASIST study table of models/aasist-notes.md (section "Study") from study.py's
scores JSON, then the controls. Threshold: the score that accepts 95 % of the LibriSpeech
utterances (the 5th lowest of 100). EER: the point where the genuine set's false rejections and
the spoof set's false acceptances are closest, their mean.

  python report.py SCORES.json
"""
import sys, json
from collections import defaultdict
import numpy as np

ROWS = [  # (set in the JSON, label in the table)
    ("genuine LibriSpeech", "genuine LibriSpeech (16 kHz FLAC)"),
    ("genuine FSDD digits", "genuine FSDD digits (8 kHz, ~0.4 s, heavily tiled)"),
    ("genuine FSDD phrases", "genuine FSDD six-digit phrases (8 kHz, ~4 s)"),
    ("genuine talking-real", "genuine talking-real (AAC, in the wild)"),
    ("talking-real forgeries", "talking-real forgeries' audio (lip-sync videos)"),
    ("TTS espeak", "TTS espeak-ng"),
    ("TTS flite", "TTS flite"),
    ("TTS festival", "TTS festival"),
    ("TTS piper", "TTS Piper (neural, VITS)"),
]


def eer(gen, spoof):
    best = (2.0, 0.0)
    for t in np.unique(np.concatenate([gen, spoof])):
        frr, far = np.mean(gen < t), np.mean(spoof >= t)
        if abs(frr - far) < best[0]:
            best = (abs(frr - far), (frr + far) / 2)
    return 100 * best[1]


def main():
    d = json.load(open(sys.argv[1]))
    S = {k: np.array([r["score"] for r in v]) for k, v in d["sets"].items()}
    ls = S["genuine LibriSpeech"]
    thr = float(np.sort(ls)[int(0.05 * len(ls))])
    pct = lambda v: f"{100 * np.mean(v >= thr):.0f} %"
    print(f"| set | n | min | median | max | accepted as bona fide at {thr:.2f} "
          "| EER against LibriSpeech |")
    print("|---|---|---|---|---|---|---|")
    for key, label in ROWS:
        v = S[key]
        acc = pct(v) + (" (by construction)" if key == "genuine LibriSpeech" else "")
        if key == "TTS flite":  # per voice: accepted / n
            by = defaultdict(list)
            for r in d["sets"][key]:
                by[r["voice"]].append(r["score"] >= thr)
            acc += " (" + "; ".join(f"{k}: {sum(x)}/{len(x)}" for k, x in by.items()) + ")"
        e = f"{eer(ls, v):.1f} %" if key.startswith("TTS") else ""
        print(f"| {label} | {len(v)} | {v.min():.2f} | {np.median(v):.2f} | {v.max():.2f} "
              f"| {acc} | {e} |")
    tts = np.concatenate([S[k] for k, _ in ROWS if k.startswith("TTS")])
    print(f"| all TTS pooled | {len(tts)} | | | | {pct(tts)} | {eer(ls, tts):.1f} % |")

    print("\nControls on the LibriSpeech utterances (median, accepted):")
    for k in sorted(k for k in S if k.startswith("control")):
        print(f"  {k} (n {len(S[k])}): {np.median(S[k]):.2f}, {pct(S[k])}")
    gen = np.concatenate([S[k] for k in S if k.startswith("genuine")])
    print(f"All genuine sets pooled ({len(gen)}) against all TTS: EER {eer(gen, tts):.1f} %")
    print("Median per voice:")
    for k, _ in ROWS[5:]:
        by = defaultdict(list)
        for r in d["sets"][k]:
            v = r["voice"].split()[0]  # espeak-ng: by variant
            by[(v.split("+") + ["default"])[1] if k == "TTS espeak" else v].append(r["score"])
        print(f"  {k}: " + ", ".join(f"{v} {np.median(s):.2f}" for v, s in by.items()))
    print(f"onnxruntime {d['ort_version']}, one thread: median {d['ort_ms_median']:.0f} ms per "
          f"window over {d['windows']} (depends on the machine's load)")


if __name__ == "__main__":
    main()
