# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Checks a phrase set made by scripts/make-phrase-speech, make-phrase-speech-ja or
make-phrase-speech-festival: every file of OUT/phrases.csv is 16 kHz mono 16-bit, 1 to 8 s
long and not silent (peak above -20 dBFS, RMS above -45 dBFS); prints each language's duration
range and exits 1 when a file fails.

    python3 scripts/phrase-speech/check_set.py OUT NAME    (NAME: the calling script's, for messages)
"""
import csv
import math
import os
import sys
import wave
from array import array

out, name = sys.argv[1], sys.argv[2]
ranges, bad = {}, []
for row in csv.DictReader(open(os.path.join(out, "phrases.csv"), encoding="utf-8")):
    with wave.open(os.path.join(out, row["file"])) as w:
        fmt = (w.getframerate(), w.getnchannels(), w.getsampwidth())
        pcm = array("h", w.readframes(w.getnframes()))
    seconds = len(pcm) / 16000
    peak = max((abs(x) for x in pcm), default=0) / 32768
    rms = math.sqrt(sum(x * x for x in pcm) / max(len(pcm), 1)) / 32768
    if fmt != (16000, 1, 2) or not 1.0 <= seconds <= 8.0 or peak < 0.1 or rms < 10 ** (-45 / 20):
        bad.append(f"{row['file']}: {fmt} {seconds:.2f} s peak {peak:.3f} rms {rms:.4f}")
    lo, hi, n = ranges.get(row["language"], (math.inf, 0.0, 0))
    ranges[row["language"]] = (min(lo, seconds), max(hi, seconds), n + 1)
for lang, (lo, hi, n) in ranges.items():
    print(f"  {lang}  {n:3d} files  {lo:.2f}-{hi:.2f} s")
for b in bad:
    print(f"{name}: FAILED {b}", file=sys.stderr)
print(f"{name}: {sum(r[2] for r in ranges.values())} files in {out}, {len(bad)} failed checks")
sys.exit(1 if bad else 0)
