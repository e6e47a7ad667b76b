#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# The face-blend detector study (issue 35; docs/avf.md, "Studies that did not change the
# detector"): can a small CNN trained with self-blended images (Shiohara & Yamasaki, CVPR 2022)
# on real GRID faces only (CC BY 4.0) tell generated talking heads from real footage?
#
#   bash models/blend-study/run.sh              dump the engine's face crops of the four sets
#                                               (vouch eval face-crops; skipped for a set whose
#                                               dump exists), train (train_blend.py; about 13 min
#                                               on one core; skipped when the model exists), then
#                                               score every clip and print the tables
#   bash models/blend-study/run.sh --variants   also train and score the lower-face-only variant
#
# Nothing is written into the repository: crops go to $VOUCH_CACHE/blend-crops (CROPS), the
# venv (PyTorch, onnxruntime, OpenCV; about 5.7 GB) to $VOUCH_CACHE/venv-blend, models and per-clip
# scores to $VOUCH_CACHE/blend-study. DATA (default ../shared/data) is the data folder. Training is
# one-threaded and deterministic: a second run writes bit-identical weights.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
models="$(cd "$here/.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=../common.sh
source "$models/common.sh"
root="$(cd "$models/.." && pwd)"
data="${DATA:-$root/../shared/data}"
crops="${CROPS:-$VOUCH_CACHE/blend-crops}"
venv="${BLEND_VENV:-$VOUCH_CACHE/venv-blend}"
out="$VOUCH_CACHE/blend-study"
if [[ ! -f "$data/grid-train/clips.csv" ]]; then
  echo "error: $data/grid-train/clips.csv not found: the study trains on GRID (set DATA to the" \
       "shared data folder)" >&2
  exit 1
fi
vouch_python

# The complete package set for CPython 3.11 on x86_64 Linux, installed with --no-deps: the
# onnx/onnxruntime base and the torch 2.15 set that convert-aasist.sh uses, plus OpenCV (the
# self-blending masks, resampling and JPEG of train_blend.py).
mapfile -t pins < <(vouch_onnx_pins 1.32.0)
pins+=("${VOUCH_TORCH_2_15_PINS[@]}" opencv-python-headless==4.13.0.92)
vouch_venv "$venv" .vouch-pins "$PYVER ${pins[*]}" " (about 5.7 GB, a few minutes)" \
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"

# The crops the engine itself cuts (Engine::forgery_face_crops), so the study sees what an
# analysis would.
(cd "$root" && cargo build --release -q -p vouch-cli)
dump() {
  local set=$1 clips=$2
  [[ -f "$crops/$set/index.csv" ]] && return 0
  "$root/target/release/vouch" eval face-crops --models "$models" --clips "$clips" \
    --dir "$data/$set" --set "$set" --out "$crops/$set" --threads 0
}
dump grid-train "$data/grid-train/clips.csv"
dump talking-grid "$data/talking-grid/clips.csv"
dump talking-real "$data/talking-real/labels.csv"
dump talking-more "$data/talking-more/labels.csv"

vouch_one_thread
mkdir -p "$out"
train() {
  local name=$1; shift
  [[ -f "$out/$name/face_blend.onnx" ]] && return 0
  nice -n 10 "$venv/bin/python" "$here/train_blend.py" --crops "$crops" --out "$out/$name" "$@"
}
train model
args=(--model "model=$out/model/face_blend.onnx")
if [[ "${1:-}" == --variants ]]; then
  train lower --lower-p 1.0
  args+=(--model "lower=$out/lower/face_blend.onnx")
fi
nice -n 10 "$venv/bin/python" "$here/eval_blend.py" --crops "$crops" --data "$data" --out "$out" \
  --rules mean "${args[@]}"
