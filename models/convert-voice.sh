#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of the voice models, with reference vectors from the original
# runtimes. See models/README.md, section "Voice: Silero VAD and Resemblyzer GE2E", and
# models/reference/silero-vad-notes.md and models/reference/resemblyzer-notes.md.
#
#   bash models/convert-voice.sh                  write models/silero_vad_16k.onnx,
#                                                 models/resemblyzer_ge2e.onnx, their
#                                                 reference folders and SHA256SUMS lines
#   bash models/convert-voice.sh --check          regenerate into a temp dir and verify the
#                                                 committed files (writes nothing)
#   bash models/convert-voice.sh --real-speech DIR   local sanity check on real recordings
#                                                 (DIR has utterances.csv; writes nothing)
#
# The venv lives outside the repository, at ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/
# venv-voice, and is rebuilt when the pins change. It holds PyTorch (the reference runtime of
# both models): PyPI only has the CUDA build, which runs on the CPU here but needs its nvidia-*
# libraries installed to import, so the venv is about 6 GB and took under 2 minutes to make here.
# Set PYTHON to choose the interpreter (3.11 tested; librosa 0.11 and the pins are for 3.11).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
venv="$VOUCH_CACHE/venv-voice"
vouch_python

# The complete package set, resolved for CPython 3.11 on x86_64 Linux (2026-11-21), installed
# with --no-deps so nothing unpinned comes in. resemblyzer's declared dependency on the
# 'typing' backport is deliberately not installed (it is part of Python 3).
mapfile -t pins < <(vouch_onnx_pins 1.31.1)
pins+=(
  silero-vad==6.2.3
  resemblyzer==0.1.4
  "${VOUCH_TORCH_2_15_PINS[@]}"
  librosa==0.11.0
  scipy==1.17.1
  numba==0.68.1
  llvmlite==0.50.0
  soundfile==0.14.0
  cffi==2.1.1
  pycparser==3.12
  soxr==1.1.0
  audioread==3.1.0
  lazy-loader==0.6
  msgpack==1.2.4
  decorator==5.3.1
  joblib==1.6.0
  scikit-learn==1.9.1
  threadpoolctl==3.8.0
  pooch==1.9.0
  platformdirs==4.14.7
  requests==2.34.2
  certifi==2026.10.18
  charset-normalizer==3.5.2
  idna==3.20
  urllib3==2.8.0
  narwhals==2.29.0
  cloudpickle==3.1.2
)
# webrtcvad 2.0.10 (the package resemblyzer declares) exists only as an sdist: it is compiled
# (needs a C compiler and Python headers) without build isolation, against this pinned
# setuptools. setuptools < 81 because webrtcvad imports pkg_resources.
build_pins=(setuptools==80.9.0 wheel==0.45.1)
sdist_pins=(webrtcvad==2.0.10)

install_voice_venv() {
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${build_pins[@]}"
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"
  vouch_pip "$venv" install --no-deps --no-build-isolation --no-binary=webrtcvad "${sdist_pins[@]}"
}
vouch_venv "$venv" .vouch-pins "$PYVER ${build_pins[*]} ${pins[*]} ${sdist_pins[*]}" \
  " (about 6 GB, a few minutes)" install_voice_venv

# One thread everywhere: onnxruntime's, PyTorch's and numpy's sums are then run-to-run
# identical, and the machine stays usable.
export NUMBA_NUM_THREADS=1
vouch_exec "$venv" "$here/convert_voice.py" "$@"
