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
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
venv="$VOUCH_CACHE/venv-dlib"
vouch_python

# Every package in the venv is pinned, dependencies included (in this order: the stamp of an
# existing venv is this list).
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

vouch_venv "$venv" .vouch-pins "${pins[*]}" "" vouch_pip "$venv" install "${pins[@]}"

# One thread everywhere: dlib's and onnxruntime's sums are then run-to-run identical.
vouch_exec "$venv" "$here/convert_dlib.py" "$@"
