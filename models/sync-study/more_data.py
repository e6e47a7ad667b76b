#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Does the sync map generalise better when it also learns from other faces than GRID's s1?

The map ships trained on GRID speaker s1 alone (CC BY 4.0). talking-more holds generated talking
heads whose mouths an audio-driven generator moved to their sound, several under MIT or
Apache-2.0 ("generated" data the brief allows for shipped weights), and a few real clips. This
study fits the shipped two-view map (raw and high-passed 25 steps; normalised log-mel and log
visemes, vocal-tract shifts) on:

  grid            GRID s1 alone (what ships)
  grid+gen        plus talking-more's audio-driven generated clips under MIT/Apache-2.0
  grid+gen+real   plus talking-more's real clips (their licence is the source repository's
                  code licence: a study only, not for shipped weights)

each talking-more clip weighted w times (w in WEIGHTS) against a GRID clip, and reports on every
development set own audio against every other clip's audio of the set (AUC, EER, and the share at
or above z 2.17): talking-real (no identity in talking-more), talking-grid without GRID-A (s1),
and talking-more's real clips, leave-one-identity-out (a clip's own identity is removed from the
training sums before it is scored).

  python more_data.py FEATURES_DIR    FEATURES_DIR from `vouch eval sync-features` (talking-more
                                      with --all) for grid-train, talking-real, talking-more and
                                      talking-grid
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np

from study import CONFIGS, auc_eer, lips, sound, z_views

CFG = CONFIGS[-1][1]
WIDTHS = (0, 25)
THRESHOLD = 2.17
WEIGHTS = (1, 3, 10)
LICENSED = ("mit", "apache-2.0")
AUDIO_DRIVEN = {"portrait_animation", "lipsync"}


def load(path: Path, labels: dict | None = None) -> list[dict]:
    clips = []
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        if len(d["lips"]) < 20 or d.get("face_coverage", 1) < 0.5:
            continue
        clip = {k: np.array(d[k], np.float64) for k in ("lips", "mel", "visemes", "bands")}
        clip.update(file=d["file"], identity=d["identity"], label=d.get("label", "real"))
        if labels is not None:
            row = labels[d["file"]]
            clip.update(kind=row["kind"], licence=row["license"].strip().lower())
        clips.append(clip)
    return clips


def sums(clip: dict, width: int) -> tuple[np.ndarray, np.ndarray, int]:
    y = lips(clip, width)
    gram, cross, rows = 0, 0, 0
    for warp in CFG["warps"]:
        x = sound(clip, CFG, warp)
        gram = gram + x.T @ x
        cross = cross + x.T @ y
        rows += len(x)
    return gram, cross, rows


def solve(parts: list[tuple]) -> np.ndarray:
    gram = sum(p[0] * w for p, w in parts)
    cross = sum(p[1] * w for p, w in parts)
    rows = sum(p[2] * w for p, w in parts)
    ridge = 1e-2 * rows * np.eye(gram.shape[0])
    ridge[-1, -1] = 0
    return np.linalg.solve(gram + ridge, cross)


def report(clips: list[dict], weights_of) -> str:
    """weights_of(clip) -> the two views' weights used to predict from that clip's sound and to
    score against its lips (leave-one-identity-out where it differs per identity)."""
    own, other = [], []
    for i, video in enumerate(clips):
        weights = weights_of(video)
        seen = [lips(video, w) for w in WIDTHS]
        for j, audio in enumerate(clips):
            predicted = [sound(audio, CFG) @ w for w in weights]
            value = z_views(predicted, seen)
            if value is not None:
                (own if i == j else other).append(value)
    own, other = np.array(own), np.array(other)
    auc, eer = auc_eer(own, other)
    return (f"AUC {auc:.3f} EER {eer:.3f} own>={THRESHOLD} {(own >= THRESHOLD).sum()}/{len(own)} "
            f"other>={THRESHOLD} {(other >= THRESHOLD).sum()}/{len(other)}")


def main() -> None:
    folder = Path(sys.argv[1])
    data = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("../shared/data")
    with open(data / "talking-more" / "labels.csv", newline="", encoding="utf-8") as f:
        labels = {row["file"]: row for row in csv.DictReader(f)}
    grid = load(folder / "grid-train.jsonl")
    more = load(folder / "talking-more.jsonl", labels)
    real = load(folder / "talking-real.jsonl")
    tgrid = [c for c in load(folder / "talking-grid.jsonl") if c["identity"] != "GRID-A"]
    generated = [c for c in more if c["label"] == "fake" and c["kind"] in AUDIO_DRIVEN
                 and c["licence"] in LICENSED]
    more_real = [c for c in more if c["label"] == "real"]
    print(f"grid {len(grid)}, generated (licensed, audio-driven) {len(generated)}: "
          f"{sorted(c['file'] for c in generated)}; talking-more real {len(more_real)}")
    parts = {id(c): [sums(c, w) for w in WIDTHS] for c in grid + generated + more_real}
    grid_parts = [[parts[id(c)][v] for c in grid] for v in range(len(WIDTHS))]
    variants = [("grid", [], [1])]
    for w in WEIGHTS:
        variants.append((f"grid+gen w={w}", generated, [w]))
        variants.append((f"grid+gen+real w={w}", generated + more_real, [w]))
    for name, extra, (w,) in variants:
        def weights_of(video, extra=extra, w=w):
            keep = [c for c in extra if c["identity"] != video["identity"]]
            return [solve([(p, 1) for p in grid_parts[v]]
                          + [(parts[id(c)][v], w) for c in keep])
                    for v in range(len(WIDTHS))]
        fixed = weights_of({"identity": None})
        print(name)
        print(f"  talking-real  {report(real, lambda _: fixed)}")
        print(f"  talking-grid  {report(tgrid, lambda _: fixed)}")
        print(f"  talking-more  {report(more_real, weights_of)} (real clips, LOIO)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
