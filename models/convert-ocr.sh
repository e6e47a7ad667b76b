#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible extraction of the MRZ text-line recogniser (PP-OCRv6 rec small from the rapidocr
# wheel), with reference vectors from onnxruntime. See models/README.md, section
# "MRZ text: PP-OCRv6 rec small".
#
#   bash models/convert-ocr.sh            write models/ppocrv6_rec_small.onnx,
#                                         models/reference/ppocrv6_rec_small/ and its
#                                         SHA256SUMS lines
#   bash models/convert-ocr.sh --check    regenerate into a temp dir and verify the committed
#                                         files (writes nothing)
#
# The venv lives outside the repository, at ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/
# venv-ocr, and is rebuilt when the pins change (about 100 MB). The synthetic reference line is
# drawn with DejaVu Sans Mono from Debian's fonts-dejavu-core (apt-get install
# fonts-dejavu-core); the script checks the font file's sha256.
# Set PYTHON to choose the interpreter (3.11 tested).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models"
venv="$cache/venv-ocr"
if [[ -z "${PYTHON:-}" ]]; then
  if command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
fi

# The complete package set, resolved for CPython 3.11 on x86_64 Linux (2026-11-21), installed
# with --no-deps so nothing unpinned comes in. rapidocr itself is not installed: only its
# wheel is downloaded (hash-pinned) and the model file read out of it.
pins=(
  numpy==2.4.6
  onnx==1.23.2
  onnxruntime==1.31.1
  protobuf==7.36.2
  ml_dtypes==0.6.0
  flatbuffers==25.12.19
  packaging==26.3
  typing_extensions==4.16.0
  pillow==13.0.0
)

stamp="$venv/.vouch-pins"
want="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])') ${pins[*]}"
if [[ ! -x "$venv/bin/python" ]] || [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  echo "making $venv" >&2
  rm -rf "$venv"
  mkdir -p "$cache"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip --disable-pip-version-check --quiet install --no-deps \
    --only-binary=:all: "${pins[@]}"
  echo "$want" > "$stamp"
fi

# One thread: onnxruntime's sums are then run-to-run identical.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONWARNINGS=ignore
exec "$venv/bin/python" "$here/convert_ocr.py" "$@"
