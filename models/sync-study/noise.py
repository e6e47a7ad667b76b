#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Does the sync map generalise better when GRID's studio sound is also heard through noise?

GRID s1 is the only shippable training speaker here, recorded in a studio; footage from the wild
has noise under the voice. `vouch eval sync-features --noise-snr-db N` writes the same clips' features
with white noise N dB below the track's power added before the engine computes them (seeded by
the file name, so every run is the same). This study fits the shipped two-view map on the clean
clips alone, and on the clean clips plus their noisy copies, and reports own audio against every
other clip's audio on the development sets (AUC, EER, own and other at or above z 2.17), as
more_data.py does.

  python noise.py FEATURES_DIR      grid-train.jsonl, grid-train-snr10.jsonl,
                                    grid-train-snr20.jsonl, talking-real.jsonl, talking-more.jsonl
                                    (real clips are used), talking-grid.jsonl
"""

from __future__ import annotations

import sys
from pathlib import Path

from more_data import WIDTHS, load, report, solve, sums


def main() -> None:
    folder = Path(sys.argv[1])
    clean = load(folder / "grid-train.jsonl")
    noisy = {snr: load(folder / f"grid-train-snr{snr}.jsonl") for snr in (10, 20)}
    sets = {
        "talking-real": load(folder / "talking-real.jsonl"),
        "talking-more": [c for c in load(folder / "talking-more.jsonl") if c["label"] == "real"],
        "talking-grid": [c for c in load(folder / "talking-grid.jsonl")
                         if c["identity"] != "GRID-A"],
    }
    parts = {name: [[sums(c, w) for c in clips] for w in WIDTHS]
             for name, clips in [("clean", clean)] + [(f"snr{k}", v) for k, v in noisy.items()]}
    variants = [("clean", ["clean"]), ("clean + 20 dB", ["clean", "snr20"]),
                ("clean + 10 dB", ["clean", "snr10"]),
                ("clean + 20 dB + 10 dB", ["clean", "snr20", "snr10"])]
    for name, used in variants:
        weights = [solve([(p, 1) for source in used for p in parts[source][v]])
                   for v in range(len(WIDTHS))]
        print(name)
        for set_name, clips in sets.items():
            print(f"  {set_name:13} {report(clips, lambda _: weights)}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
