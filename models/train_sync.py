#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Trains the audio-visual sync map (models/sync_map.json): a ridge regression from what the sound
says to how the lips move, on the features the engine computes (`vouch eval sync-features`), so
that the map learned here is the map the engine applies (crates/vouch-bio/src/video/sync.rs).

Data: GRID speaker s1 (../shared/data/grid-train: 333 clips of 3 s, CC BY 4.0, Cooke et al.
2006). Only this set is trained on: its licence allows shipping weights learned from it, and every
other development set (talking-grid's other ten speakers, talking-real, talking-more) stays
unseen, so `vouch eval videos` on them measures people the map never saw. The sha256 of the clip
list and of every clip is recorded in the weights file.

Per 40 ms grid step t of a clip (all normalisation within the clip):
  sound  mel: Whisper's 80 log-mel bins (video::grid_log_mel), averaged 4 by 4 into 20 bands,
              less their mean, over (standard deviation + 0.1);
         visemes: the 9 viseme probabilities (speech::phonemes), moving average over 3 steps
              (zero beyond the clip), log(p + 0.001), less their mean;
         context: these 29 values at steps t-2 .. t+4 (clamped to the clip), then a constant 1:
              204 inputs (the mouth moves up to 160 ms before its sound).
  lips   the 18 lip and jaw distances over the face height, each standardised.
Ridge: W = argmin |X W - Y|^2 + LAMBDA * rows * |W|^2 (bias not shrunk), over every step of every
clip, each clip also entered with its mel bins shifted by -6, -4, -2, +2, +4 and +6 bins (a longer
or shorter vocal tract: one speaker's clips made to sound like several).

Choices and how they were made: the configuration was picked on the development sets in a study
of about 40 settings (features: band levels, Whisper log-mel, Whisper encoder states, viseme
probabilities and their combinations; context; ridge strength; augmentation), with the rules
"fewest free choices" and "the same settings for every set"; docs/process-video.md reports the
figures per set.

Modes:
  (default)  train, write models/sync_map.json and models/reference/sync_map/, update SHA256SUMS
  --check    train again and fail unless the weights equal the committed ones to 1e-6 and the
             reference output follows from the reference input
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from common import save_f32s, sha256_file, update_sums

MEL_POOL = 4
MEL_FLOOR = 0.1
VISEME_FLOOR = 1e-3
SMOOTHING = 3
CONTEXT = (-2, 4)
LAMBDA = 1e-2
WARPS = (-6, -4, -2, 0, 2, 4, 6)
LIPS = 18
VISEMES = 9
MEL_BINS = 80
FORMAT = "vouch-sync-map-1"
OUT = "sync_map.json"
REF = "reference/sync_map"


def pooled_mel(mel80: np.ndarray, warp: int = 0) -> np.ndarray:
    if warp:
        mel80 = mel80[:, np.clip(np.arange(MEL_BINS) + warp, 0, MEL_BINS - 1)]
    return mel80.reshape(len(mel80), MEL_BINS // MEL_POOL, MEL_POOL).mean(2)


def sound_features(mel20: np.ndarray, visemes: np.ndarray) -> np.ndarray:
    m = mel20 - mel20.mean(0)
    m = m / (m.std(0) + MEL_FLOOR)
    kernel = np.ones(SMOOTHING) / SMOOTHING
    v = np.stack([np.convolve(visemes[:, g], kernel, "same") for g in range(VISEMES)], 1)
    v = np.log(v + VISEME_FLOOR)
    v = v - v.mean(0)
    return np.hstack([m, v])


def inputs(features: np.ndarray) -> np.ndarray:
    n = len(features)
    blocks = [features[np.clip(np.arange(n) + k, 0, n - 1)]
              for k in range(CONTEXT[0], CONTEXT[1] + 1)]
    return np.hstack(blocks + [np.ones((n, 1))])


def lips_target(lips: np.ndarray) -> np.ndarray:
    centred = lips - lips.mean(0)
    sd = centred.std(0)
    return centred / np.where(sd > 1e-9, sd, 1.0)


def load(path: Path) -> list[dict]:
    clips = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        clip = {"file": row["file"],
                "lips": np.array(row["lips"], np.float64),
                "mel": np.array(row["mel"], np.float64),
                "visemes": np.array(row["visemes"], np.float64)}
        if len(clip["lips"]) < 10 or row["face_coverage"] < 0.5:
            print(f"skipped {row['file']}: too short or no face", file=sys.stderr)
            continue
        clips.append(clip)
    return clips


def train(clips: list[dict]) -> np.ndarray:
    width = (CONTEXT[1] - CONTEXT[0] + 1) * (MEL_BINS // MEL_POOL + VISEMES) + 1
    gram = np.zeros((width, width))
    cross = np.zeros((width, LIPS))
    rows = 0
    for clip in sorted(clips, key=lambda c: c["file"]):
        y = lips_target(clip["lips"])
        for warp in WARPS:
            x = inputs(sound_features(pooled_mel(clip["mel"], warp), clip["visemes"]))
            gram += x.T @ x
            cross += x.T @ y
            rows += len(x)
    ridge = LAMBDA * rows * np.eye(width)
    ridge[-1, -1] = 0.0
    return np.linalg.solve(gram + ridge, cross)


def data_digest(clips_csv: Path, folder: Path) -> dict:
    names = [line.split(",")[0] for line in clips_csv.read_text().splitlines()[1:] if line.strip()]
    listing = "".join(f"{sha256_file(folder / n)}  {n}\n" for n in sorted(names))
    return {"clips_csv_sha256": sha256_file(clips_csv), "clips": len(names),
            "clips_sha256": hashlib.sha256(listing.encode()).hexdigest(),
            "what": "sha256 of the lines '<sha256 of the clip>  <name>' for every clip of "
                    "clips.csv, sorted by name"}


def document(weights: np.ndarray, digest: dict, used: int) -> dict:
    return {
        "format": FORMAT,
        "mel_bands": MEL_BINS // MEL_POOL, "visemes": VISEMES, "lips": LIPS,
        "context": list(CONTEXT), "mel_floor": MEL_FLOOR, "viseme_floor": VISEME_FLOOR,
        "smoothing": SMOOTHING,
        "training": {
            "command": "bash models/train-sync.sh",
            "data": "GRID corpus speaker s1 (../shared/data/grid-train, CC BY 4.0: Cooke, Barker, "
                    "Cunningham, Shao 2006)",
            "clips_used": used, "ridge_lambda": LAMBDA, "mel_warps_bins": list(WARPS),
            **digest,
        },
        "weights": [[float(f"{v:.9g}") for v in row] for row in weights],
    }


def reference(clip: dict, weights: np.ndarray) -> dict:
    mel20 = pooled_mel(clip["mel"]).astype(np.float32)
    visemes = clip["visemes"].astype(np.float32)
    predicted = inputs(sound_features(mel20.astype(np.float64), visemes.astype(np.float64))) @ weights
    return {"mel.f32": mel20, "visemes.f32": visemes, "predicted.f32": predicted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--features", type=Path, required=True)
    parser.add_argument("--clips", type=Path, required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    models = Path(__file__).resolve().parent
    clips = load(args.features)
    weights = train(clips)
    doc = document(weights, data_digest(args.clips, args.dir), len(clips))
    rounded = np.array(doc["weights"])
    arrays = reference(clips[0], rounded)
    if args.check:
        committed = json.loads((models / OUT).read_text())
        ok = committed["training"] == doc["training"]
        diff = float(np.abs(np.array(committed["weights"]) - rounded).max())
        ok &= diff <= 1e-6
        print(f"weights: largest difference {diff:.2e} (at most 1e-6); training record "
              f"{'same' if committed['training'] == doc['training'] else 'DIFFERENT'}")
        ref = models / REF
        for name, array in arrays.items():
            stored = np.fromfile(ref / name, "<f4")
            d = float(np.abs(stored - array.astype(np.float32).ravel()).max()) \
                if stored.size == array.size else float("inf")
            print(f"{name}: largest difference {d:.2e}")
            ok &= d <= 1e-4
        sys.exit(0 if ok else 1)
    (models / OUT).write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    save_f32s(models / REF, arrays)
    (models / REF / "shape.json").write_text(json.dumps(
        {"clip": clips[0]["file"], "steps": len(clips[0]["lips"]),
         "mel.f32": [len(clips[0]["lips"]), MEL_BINS // MEL_POOL],
         "visemes.f32": [len(clips[0]["lips"]), VISEMES],
         "predicted.f32": [len(clips[0]["lips"]), LIPS]}) + "\n")
    update_sums(models, [OUT, f"{REF}/mel.f32", f"{REF}/visemes.f32", f"{REF}/predicted.f32",
                         f"{REF}/shape.json"], owned_dirs=[REF])
    print(f"trained on {len(clips)} clips; wrote {OUT} ({sha256_file(models / OUT)})")


if __name__ == "__main__":
    main()
