#!/usr/bin/env python3
"""Peer face-verification baseline: the Python `face_recognition` package (dlib) on a pairs CSV.

Run it through scripts/peer-face-recognition, which builds the pinned venv. It reads the same input
as `vouch eval faces --pairs PAIRS.csv --images DIR --json` and prints the same JSON keys (eer,
fnmr_at_fmr_1e2, fnmr_at_fmr_1e3, ftd_rate, ms_per_image, pairs), plus a few extra ones.
docs/peer-comparison.md has the results and the reasoning; the conventions are restated here.

Input
  PAIRS.csv: header with at least img_a,img_b,same (other columns ignored); `same` is 1 or 0;
  image paths are relative to --images. Every distinct image (in order of first appearance,
  img_a before img_b) is processed ONCE and its result reused by every pair naming it.

Per image (face_recognition defaults):
  img  = face_recognition.load_image_file(path)               # PIL -> RGB uint8
  locs = face_recognition.face_locations(img, number_of_times_to_upsample=N)   # HOG, N=1 default
  if several faces: keep the largest box (area (bottom-top)*(right-left); ties: the first one)
  enc  = face_recognition.face_encodings(img, known_face_locations=[box], num_jitters=1,
                                         model='small')       # 5-point landmarks, 128-d ResNet
  Timed with time.perf_counter from before load to after the encoding (or after detection when
  no face is found), one thread: OMP/OpenBLAS/MKL threads = 1 and the process is pinned to a
  single CPU. One untimed warm-up run on the first image precedes the timed runs.

Scores and failures to detect (FTD)
  score(pair) = euclidean distance between the two 128-d encodings (lower = more alike).
  A pair in which either image has no face gets score = +inf: it is a NON-MATCH at every
  threshold, so a genuine pair with an FTD is a false non-match and an impostor pair with an FTD
  is a correct rejection. It stays in both denominators.
  ftd_rate = (distinct images with no face) / (distinct images).

Decision rule: match at threshold t  <=>  score <= t  (dlib's compare_faces uses <=). +inf never
matches. Thresholds swept: t = -inf (nothing matches: FMR 0, FNMR 1) followed by every distinct
finite score in ascending order. With G genuine and I impostor pairs:
  FMR(t)  = #{impostor: score <= t} / I
  FNMR(t) = #{genuine:  score >  t} / G        (+inf scores always count here)

EER: walk the sweep in ascending t; k = first index with FMR(t_k) >= FNMR(t_k) (k >= 1 because
  t_0 = -inf has FMR 0 < FNMR 1 when G > 0). With d_j = FNMR(t_j) - FMR(t_j) (d_{k-1} > 0 >= d_k):
      a   = d_{k-1} / (d_{k-1} - d_k)
      EER = FMR(t_{k-1}) + a * (FMR(t_k) - FMR(t_{k-1}))
  i.e. where the straight segment between the two neighbouring (FMR, FNMR) points crosses
  FMR = FNMR (when d_k = 0 this is exactly FMR(t_k)). If no k exists (only possible when the
  fraction of genuine pairs with an FTD exceeds the fraction of impostor pairs without one), EER
  is null.
FNMR at FMR <= 1/D (D = 100 and 1000): the lowest FNMR(t) among swept thresholds whose false-match
  count fm(t) satisfies fm(t) * D <= I (integer test, no floating point); t = -inf always
  qualifies. Because FNMR is non-increasing in t this is FNMR at the largest such threshold.
  With I < D the target allows ZERO false matches (I = 300: FMR <= 1e-3 means zero, FMR <= 1e-2
  means at most 3; I = 80: both mean zero), so these are "FNMR at zero false matches" figures.
Accuracy at 0.6 (dlib's default tolerance): (#genuine with score <= 0.6 + #impostor with
  score > 0.6, FTD pairs included) / (G + I).
ms_per_image: mean over the distinct images of the timed per-image wall time, in milliseconds
  (images without a face included: they cost load + detection only).
"""

import argparse
import csv
import json
import math
import os
import sys
import time
import warnings

# One thread before numpy/dlib are imported (dlib-bin has no BLAS, but be explicit).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

INF = math.inf
DLIB_TOLERANCE = 0.6


def read_pairs(path):
    pairs = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = {"img_a", "img_b", "same"} - set(reader.fieldnames or [])
        if missing:
            sys.exit(f"{path}: header lacks {', '.join(sorted(missing))}")
        for line, row in enumerate(reader, start=2):
            same = row["same"].strip()
            if same not in ("0", "1"):
                sys.exit(f"{path}:{line}: same must be 0 or 1, got {same!r}")
            pairs.append((row["img_a"].strip(), row["img_b"].strip(), same == "1"))
    if not pairs:
        sys.exit(f"{path}: no pairs")
    return pairs


def encode_image(fr, path, upsample):
    """Returns the 128-d encoding of the largest HOG face, or None when there is none."""
    img = fr.load_image_file(path)
    locs = fr.face_locations(img, number_of_times_to_upsample=upsample)  # model='hog'
    if not locs:
        return None
    # (top, right, bottom, left); max() keeps the first of equal areas.
    box = max(locs, key=lambda b: (b[2] - b[0]) * (b[1] - b[3]))
    return fr.face_encodings(img, known_face_locations=[box], num_jitters=1, model="small")[0]


def sweep(scores):
    """[(t, FMR, FNMR, false_matches)] for t = -inf then each distinct finite score, ascending."""
    genuine = sum(1 for _, same in scores if same)
    impostor = len(scores) - genuine
    finite = sorted((s, same) for s, same in scores if s != INF)
    points = [(-INF, 0.0, 1.0, 0)]
    fm = 0  # impostor scores <= t
    gm = 0  # genuine scores <= t
    i = 0
    while i < len(finite):
        t = finite[i][0]
        while i < len(finite) and finite[i][0] == t:
            if finite[i][1]:
                gm += 1
            else:
                fm += 1
            i += 1
        points.append((t, fm / impostor, (genuine - gm) / genuine, fm))
    return points, genuine, impostor


def eer(points):
    for k in range(1, len(points)):
        fmr, fnmr = points[k][1], points[k][2]
        if fmr >= fnmr:
            pf, pn = points[k - 1][1], points[k - 1][2]
            d0, d1 = pn - pf, fnmr - fmr
            a = d0 / (d0 - d1)
            return pf + a * (fmr - pf), points[k][0]
    return None, None


def fnmr_at(points, impostor, denominator):
    best = 1.0
    for _t, _fmr, fnmr, fm in points:
        if fm * denominator <= impostor:
            best = min(best, fnmr)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", required=True, help="pairs CSV (img_a,img_b,same,...)")
    ap.add_argument("--images", required=True, help="directory the CSV's image paths are relative to")
    ap.add_argument("--json", action="store_true", help="print one JSON object only")
    ap.add_argument("--upsample", type=int, default=1,
                    help="face_locations number_of_times_to_upsample (default 1)")
    ap.add_argument("--scores", metavar="OUT.csv",
                    help="also write img_a,img_b,same,distance per pair (inf = FTD)")
    args = ap.parse_args()

    # Single CPU: the first one this process may use.
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    # face_recognition_models 0.3.0 imports pkg_resources (setuptools is pinned below 81 for it).
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
    import dlib
    import face_recognition as fr
    import numpy as np

    pairs = read_pairs(args.pairs)
    images = []
    seen = set()
    for a, b, _ in pairs:
        for name in (a, b):
            if name not in seen:
                seen.add(name)
                images.append(name)

    load_before = os.getloadavg()
    wall0 = time.perf_counter()
    encode_image(fr, os.path.join(args.images, images[0]), args.upsample)  # warm-up, untimed
    encodings = {}
    ms = []
    for name in images:
        path = os.path.join(args.images, name)
        t0 = time.perf_counter()
        encodings[name] = encode_image(fr, path, args.upsample)
        ms.append((time.perf_counter() - t0) * 1000.0)
    no_face = [n for n in images if encodings[n] is None]

    scores = []
    for a, b, same in pairs:
        ea, eb = encodings[a], encodings[b]
        s = INF if ea is None or eb is None else float(np.linalg.norm(ea - eb))
        scores.append((s, same))
    wall = time.perf_counter() - wall0

    points, genuine, impostor = sweep(scores)
    if genuine == 0 or impostor == 0:
        sys.exit("need at least one genuine and one impostor pair")
    eer_value, eer_threshold = eer(points)
    correct = sum(1 for s, same in scores if (s <= DLIB_TOLERANCE) == same)

    result = {
        "eer": eer_value,
        "fnmr_at_fmr_1e2": fnmr_at(points, impostor, 100),
        "fnmr_at_fmr_1e3": fnmr_at(points, impostor, 1000),
        "ftd_rate": len(no_face) / len(images),
        "ms_per_image": sum(ms) / len(ms),
        "pairs": len(pairs),
        # extras (peer only)
        "genuine": genuine,
        "impostor": impostor,
        "images": len(images),
        "images_no_face": len(no_face),
        "pairs_with_ftd": sum(1 for s, _ in scores if s == INF),
        "accuracy_at_0_6": correct / len(scores),
        "eer_threshold": eer_threshold,
        "ms_per_image_median": sorted(ms)[len(ms) // 2] if len(ms) % 2 else
        (sorted(ms)[len(ms) // 2 - 1] + sorted(ms)[len(ms) // 2]) / 2,
        "upsample": args.upsample,
        "wall_s": wall,
        "loadavg_1m_before": load_before[0],
        "peer": f"face_recognition (dlib {dlib.__version__}), HOG + 5-point + ResNet v1",
    }

    if args.scores:
        with open(args.scores, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["img_a", "img_b", "same", "distance"])
            for (a, b, same), (s, _) in zip(pairs, scores):
                w.writerow([a, b, int(same), "inf" if s == INF else repr(s)])

    if args.json:
        print(json.dumps(result))
        return

    pct = lambda v: "n/a" if v is None else f"{100 * v:.2f}%"
    zero_note = lambda d: " (= zero false matches)" if impostor < d else ""
    print(f"peer: {result['peer']}, upsample {args.upsample}")
    print(f"pairs: {len(pairs)} ({genuine} genuine, {impostor} impostor); "
          f"images: {len(images)}, no face: {len(no_face)}")
    print(f"ftd_rate:          {pct(result['ftd_rate'])}"
          + (f"  [{', '.join(no_face[:10])}{', ...' if len(no_face) > 10 else ''}]" if no_face else ""))
    print(f"pairs with an FTD: {result['pairs_with_ftd']} (scored +inf: non-match at every threshold)")
    thr = "" if eer_threshold is None else f" (at distance {eer_threshold:.4f})"
    print(f"EER:               {pct(eer_value)}{thr}")
    print(f"FNMR @ FMR<=1e-2:  {pct(result['fnmr_at_fmr_1e2'])}{zero_note(100)}")
    print(f"FNMR @ FMR<=1e-3:  {pct(result['fnmr_at_fmr_1e3'])}{zero_note(1000)}")
    print(f"accuracy @ 0.6:    {pct(result['accuracy_at_0_6'])}")
    print(f"ms/image:          {result['ms_per_image']:.2f} mean, "
          f"{result['ms_per_image_median']:.2f} median (1 thread, 1 CPU)")
    print(f"wall: {wall:.1f} s; 1-min load average before: {load_before[0]:.2f}")


if __name__ == "__main__":
    main()
