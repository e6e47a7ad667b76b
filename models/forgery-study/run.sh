#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# Forgery-cue study driver (models/forgery-study/study.py): makes a pinned venv in the user cache,
# then measures weight-free forensic video cues (rPPG, pulse coherence, flicker, blinks, sharpness)
# on the talking-head sets under shared/data (or DATA) and writes features.csv, tables.md,
# summary.json and run.log into ~/.cache/vouch-models/forgery-study (never the repository).
# Runs niced and single-threaded; about 2.5 min of CPU on one core plus about 1 min for the venv.
# REUSE_FEATURES=1 re-evaluates the cached features.csv without re-reading the videos.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
data="${DATA:-$root/../shared/data}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models"
venv="$cache/venv-forgery"
out="$cache/forgery-study"
python="${PYTHON:-python3}"
# Pinned requirements (mediapipe 0.10.14 ships the FaceMesh model and needs numpy < 2 and
# opencv-contrib-python; headless OpenCV is not added beside it to avoid two cv2 builds).
requirements="numpy==1.26.4 scipy==1.14.1 scikit-learn==1.5.2 opencv-contrib-python==4.11.0.86 mediapipe==0.10.14"

if [[ ! -x "$venv/bin/python" || "$(cat "$venv/.pins" 2>/dev/null || true)" != "$requirements" ]]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  read -r -a pins <<<"$requirements"
  nice -n 10 "$venv/bin/pip" install --disable-pip-version-check -q "${pins[@]}"
  printf '%s\n' "$requirements" >"$venv/.pins"
fi

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMEXPR_NUM_THREADS=1
export TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 GLOG_minloglevel=2 TF_CPP_MIN_LOG_LEVEL=3
export PYTHONDONTWRITEBYTECODE=1
mkdir -p "$out"
"$venv/bin/pip" freeze --disable-pip-version-check >"$out/pip-freeze.txt"
start=$SECONDS
nice -n 10 "$venv/bin/python" "$here/study.py" "$data" "$out" 2>&1 | tee "$out/run.log"
echo "wall time: $((SECONDS - start)) s (venv excluded); tables in $out/tables.md" | tee -a "$out/run.log"
