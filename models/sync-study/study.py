#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""The feature study behind the sync map (models/README.md, "Audio-visual sync map"): which sound
features, learned from GRID speaker s1 alone, predict the lips of people never seen. For each
configuration it fits the ridge map on grid-train and reports, per development set, the AUC and
EER of own audio against every other clip's audio of the same set, and the share of each at or
above z 2.4.

This is a study, not the engine: it re-implements the statistic in numpy (the engine's null
shifts are spaced slightly differently, and it pads another clip's sound with silence where this
repeats the last prediction), so its figures differ from `vouch eval videos` by a few hundredths;
the shipped figures are the engine's (docs/process-video.md). Its job is the ranking.

Second part, "views": with the shipped sound features, the lips high-passed (less their centred
moving average over 13, 19, 25, 31 or 50 steps) before the map is fitted and scored, alone and
with the raw view beside it (each view's z against its own null, averaged at every lag, as the
engine does). The shipped setting: raw and 25 steps (1 s).

  bash models/sync-study/run.sh        features (with Whisper encoder states) for the four
                                       sets into the cache, then this script
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

LAGS = range(-1, 10)
CORE = range(-1, 5)
EXCLUDE = 15  # 600 ms


def load(path: Path) -> list[dict]:
    clips = []
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        if d.get("label", "real") != "real" or len(d["lips"]) < 20:
            continue
        clip = {k: np.array(d[k], np.float64) for k in ("lips", "mel", "visemes", "bands")}
        clip["encoder"] = None if d.get("encoder") is None else np.array(d["encoder"], np.float64)
        clip["identity"] = d["identity"]
        clips.append(clip)
    return clips


def sound(clip: dict, cfg: dict, warp: int = 0) -> np.ndarray:
    parts = []
    if "bands" in cfg["kind"]:
        b = clip["bands"]
        b = np.maximum(b, b.max() - 45)
        parts.append((b - b.mean(0)) / 10)
    if "mel" in cfg["kind"]:
        m = clip["mel"]
        if warp:
            m = m[:, np.clip(np.arange(80) + warp, 0, 79)]
        m = m.reshape(len(m), 20, 4).mean(2)
        m = m - m.mean(0)
        if cfg.get("cmvn"):
            m = m / (m.std(0) + 0.1)
        parts.append(m)
    if "encoder" in cfg["kind"]:
        e = clip["encoder"]
        parts.append(e - e.mean(0))
    if "visemes" in cfg["kind"]:
        v = np.stack([np.convolve(clip["visemes"][:, g], np.ones(3) / 3, "same")
                      for g in range(9)], 1)
        if cfg.get("log"):
            v = np.log(v + 1e-3)
        parts.append(v - v.mean(0))
    a = np.hstack(parts)
    n = len(a)
    x = np.hstack([a[np.clip(np.arange(n) + k, 0, n - 1)] for k in range(-2, 5)])
    return np.hstack([x, np.ones((n, 1))])


def highpass(x: np.ndarray, width: int) -> np.ndarray:
    if width <= 0:
        return x - x.mean(0)
    padded = np.pad(x, ((width // 2, width - 1 - width // 2), (0, 0)), mode="edge")
    kernel = np.ones(width) / width
    return x - np.stack([np.convolve(padded[:, d], kernel, "valid")
                         for d in range(x.shape[1])], 1)


def lips(clip: dict, width: int = 0) -> np.ndarray:
    l = highpass(clip["lips"], width)
    sd = l.std(0)
    return l / np.where(sd > 1e-9, sd, 1)


def fit(clips: list[dict], cfg: dict, width: int = 0) -> np.ndarray:
    gram = cross = 0
    rows = 0
    for clip in clips:
        y = lips(clip, width)
        for warp in cfg.get("warps", (0,)):
            x = sound(clip, cfg, warp)
            gram = gram + x.T @ x
            cross = cross + x.T @ y
            rows += len(x)
    ridge = 1e-2 * rows * np.eye(gram.shape[0])
    ridge[-1, -1] = 0
    return np.linalg.solve(gram + ridge, cross)


def xcorr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = len(a)
    return np.fft.irfft(np.fft.rfft(a, axis=0) * np.conj(np.fft.rfft(b, axis=0)), n=n,
                        axis=0).sum(1)


def lag_z(predicted: np.ndarray, seen: np.ndarray) -> np.ndarray | None:
    """z at every lag searched (offset prior applied), against the circular-shift null."""
    n = len(seen)
    if len(predicted) < n:
        predicted = np.vstack([predicted, np.repeat(predicted[-1:], n - len(predicted), 0)])
    p = predicted[:n] - predicted[:n].mean(0)
    s = seen - seen.mean(0)
    denominator = np.sqrt((p ** 2).sum() * (s ** 2).sum())
    if denominator <= 0:
        return None
    r = xcorr(p, s) / denominator
    shifts = [k for k in range(n) if all(min((k - l) % n, (l - k) % n) >= EXCLUDE for l in LAGS)]
    if len(shifts) < 12:
        return None
    if len(shifts) > 80:
        shifts = [shifts[int(i * len(shifts) / 80)] for i in range(80)]
    mean, sd = r[shifts].mean(), r[shifts].std() + 1e-9
    return np.array([(r[l % n] - mean) / sd - (0 if l in CORE else 1) for l in LAGS])


def z(predicted: np.ndarray, seen: np.ndarray) -> float | None:
    values = lag_z(predicted, seen)
    return None if values is None else float(values.max())


def auc_eer(own: np.ndarray, other: np.ndarray) -> tuple[float, float]:
    """AUC of own against other scores (ties half), and the equal error rate over their values."""
    auc = (own[:, None] > other[None, :]).mean() + 0.5 * (own[:, None] == other[None, :]).mean()
    eer = min(max((own < t).mean(), (other >= t).mean()) for t in np.concatenate([own, other]))
    return float(auc), float(eer)


def z_views(predicted: list[np.ndarray], seen: list[np.ndarray]) -> float | None:
    values = [lag_z(p, s) for p, s in zip(predicted, seen)]
    return None if any(v is None for v in values) else float(np.mean(values, 0).max())


def evaluate(clips: list[dict], weights: np.ndarray, cfg: dict) -> str:
    own, other = [], []
    predicted = [sound(c, cfg) @ weights for c in clips]
    for i, video in enumerate(clips):
        seen = lips(video)
        for j in range(len(clips)):
            value = z(predicted[j], seen)
            if value is not None:
                (own if i == j else other).append(value)
    own, other = np.array(own), np.array(other)
    auc, eer = auc_eer(own, other)
    return (f"AUC {auc:.3f} EER {eer:.3f} own>=2.4 {(own >= 2.4).mean():.2f} "
            f"other>=2.4 {(other >= 2.4).mean():.3f}")


CONFIGS = [
    ("band levels (12, the old statistic's input)", {"kind": "bands"}),
    ("Whisper log-mel (20 bands)", {"kind": "mel"}),
    ("Whisper log-mel, vocal-tract shifts", {"kind": "mel", "warps": (-6, -4, -2, 0, 2, 4, 6)}),
    ("Whisper tiny.en encoder states (384)", {"kind": "encoder"}),
    ("viseme probabilities", {"kind": "visemes"}),
    ("log viseme probabilities", {"kind": "visemes", "log": True}),
    ("log-mel + visemes, shifts", {"kind": "mel visemes", "warps": (-6, -4, -2, 0, 2, 4, 6)}),
    ("shipped: normalised log-mel + log visemes, shifts",
     {"kind": "mel visemes", "cmvn": True, "log": True, "warps": (-6, -4, -2, 0, 2, 4, 6)}),
]


def evaluate_views(clips: list[dict], weights: list[np.ndarray], widths: tuple) -> str:
    cfg = CONFIGS[-1][1]
    own, other = [], []
    predicted = [[sound(c, cfg) @ w for w in weights] for c in clips]
    seen = [[lips(c, width) for width in widths] for c in clips]
    for i in range(len(clips)):
        for j in range(len(clips)):
            value = z_views(predicted[j], seen[i])
            if value is not None:
                (own if i == j else other).append(value)
    own, other = np.array(own), np.array(other)
    auc, eer = auc_eer(own, other)
    return f"AUC {auc:.3f} EER {eer:.3f}"


VIEWS = [(0,), (13,), (19,), (25,), (31,), (50,), (0, 13), (0, 25), (0, 31), (0, 50)]


def main() -> None:
    folder = Path(sys.argv[1])
    train = load(folder / "grid-train.jsonl")
    sets = {name: load(folder / f"{name}.jsonl")
            for name in ("talking-real", "talking-more", "talking-grid")}
    # GRID-A is speaker s1, the one trained on.
    sets["talking-grid"] = [c for c in sets["talking-grid"] if c["identity"] != "GRID-A"]
    for label, cfg in CONFIGS:
        weights = fit(train, cfg)
        print(label)
        for name, clips in sets.items():
            print(f"  {name:13} {evaluate(clips, weights, cfg)}")
        sys.stdout.flush()
    cfg = CONFIGS[-1][1]
    for widths in VIEWS:
        weights = [fit(train, cfg, width) for width in widths]
        print("views: " + " + ".join("raw" if w == 0 else f"high-passed {w} steps" for w in widths))
        for name, clips in sets.items():
            print(f"  {name:13} {evaluate_views(clips, weights, widths)}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
