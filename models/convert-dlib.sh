#!/usr/bin/env bash
# Reproducible conversion of dlib's face-recognition ResNet (PyPI face-recognition-models
# 0.3.0) to models/dlib_face_recognition_resnet_v1.onnx, with reference vectors from dlib
# itself. See models/README.md, section "dlib ResNet face embedding".
#
#   models/convert-dlib.sh                 convert, write the ONNX + reference vectors,
#                                          update this model's lines in SHA256SUMS
#   models/convert-dlib.sh --check         reconvert into a temp dir, verify sha256 and
#                                          the reference vectors (writes nothing)
#   models/convert-dlib.sh --real-faces DIR... [--pairs pairs.csv...]
#                                          local-only comparison on real photos
#
# The venv lives outside the repository; set PYTHON to choose the interpreter (3.11 tested).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models"
venv="$cache/venv-dlib"
python="${PYTHON:-python3}"

# Every package in the venv is pinned, dependencies included.
pins=(
  numpy==2.4.6
  onnx==1.23.2
  protobuf==7.36.2
  ml_dtypes==0.6.0
  typing_extensions==4.16.0
  onnxruntime==1.31.1
  flatbuffers==25.12.19
  packaging==26.3
  dlib-bin==20.0.1.post1
)

stamp="$venv/.vouch-pins"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]; then
  rm -rf "$venv"
  mkdir -p "$cache"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --disable-pip-version-check --quiet "${pins[@]}"
  echo "${pins[*]}" > "$stamp"
fi

# One thread everywhere: dlib's and onnxruntime's sums are then run-to-run identical.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "$venv/bin/python" "$here/convert_dlib.py" "$@"
