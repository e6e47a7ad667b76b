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
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
venv="$VOUCH_CACHE/venv-ocr"
vouch_python

# The complete package set, resolved for CPython 3.11 on x86_64 Linux (2026-11-21), installed
# with --no-deps so nothing unpinned comes in. rapidocr itself is not installed: only its
# wheel is downloaded (hash-pinned) and the model file read out of it.
mapfile -t pins < <(vouch_onnx_pins 1.31.1)
pins+=(pillow==13.0.0)

vouch_venv "$venv" .vouch-pins "$PYVER ${pins[*]}" "" \
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"

# One thread: onnxruntime's sums are then run-to-run identical.
vouch_exec "$venv" "$here/convert_ocr.py" "$@"
