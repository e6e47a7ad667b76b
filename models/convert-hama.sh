#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of the hama phoneme recogniser (a CTC model on the raw 16 kHz
# waveform, fp16, from the hama wheel) to a float32 ONNX file with a single waveform input, its
# token list and reference vectors from onnxruntime. See models/README.md, section
# "Speech: hama phoneme recogniser".
#
#   bash models/convert-hama.sh            write models/hama_phoneme.onnx,
#                                          models/hama_phoneme_tokens.txt,
#                                          models/reference/hama_phoneme/ and SHA256SUMS lines
#   bash models/convert-hama.sh --check    regenerate into a temp dir and verify the committed
#                                          files (writes nothing)
#
# The venv lives outside the repository, at ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/
# venv-hama (about 100 MB), and is rebuilt when the pins change. No torch: the graph is edited
# with the onnx package. Set PYTHON to choose the interpreter (3.11 tested).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
venv="$VOUCH_CACHE/venv-hama"
vouch_python

# The complete package set, resolved for CPython 3.11 on x86_64 Linux (2026-11-27), installed
# with --no-deps so nothing unpinned comes in. hama itself is not installed: only its wheel is
# downloaded (hash-pinned) and the model and vocabulary read out of it.
mapfile -t pins < <(vouch_onnx_pins 1.32.0)

vouch_venv "$venv" .vouch-pins "$PYVER ${pins[*]}" "" \
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"

# One thread: onnxruntime's sums are then run-to-run identical.
vouch_exec "$venv" "$here/convert_hama.py" "$@"
