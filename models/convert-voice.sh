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
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models"
venv="$cache/venv-voice"
if [[ -z "${PYTHON:-}" ]]; then
  if command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
fi

# The complete package set, resolved for CPython 3.11 on x86_64 Linux (2026-11-21), installed
# with --no-deps so nothing unpinned comes in. resemblyzer's declared dependency on the
# 'typing' backport is deliberately not installed (it is part of Python 3).
pins=(
  numpy==2.4.6
  onnx==1.23.2
  onnxruntime==1.31.1
  protobuf==7.36.2
  ml_dtypes==0.6.0
  flatbuffers==25.12.19
  packaging==26.3
  typing_extensions==4.16.0
  silero-vad==6.2.3
  resemblyzer==0.1.4
  torch==2.15.0
  filelock==4.2.11
  fsspec==2026.9.0
  Jinja2==3.1.6
  MarkupSafe==3.0.4
  mpmath==1.3.0
  networkx==3.6.1
  sympy==1.14.0
  triton==3.9.0
  cuda-bindings==13.5.0
  cuda-pathfinder==1.9.0
  cuda-toolkit==13.2.2
  nvidia-cublas==13.4.1.3
  nvidia-cuda-cccl==13.3.5.0.6
  nvidia-cuda-cupti==13.2.86
  nvidia-cuda-nvrtc==13.2.86
  nvidia-cuda-runtime==13.2.86
  nvidia-cudnn-cu13==9.26.0.51
  nvidia-cufft==12.2.0.57
  nvidia-cufile==1.17.1.22
  nvidia-cusolver==12.2.0.11
  nvidia-cusparse==12.7.10.12
  nvidia-cusparselt-cu13==0.8.1
  nvidia-nccl-cu13==2.30.7
  nvidia-nvjitlink==13.5.37
  nvidia-nvshmem-cu13==3.7.2
  nvidia-nvtx==13.2.86
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

stamp="$venv/.vouch-pins"
want="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])') ${build_pins[*]} ${pins[*]} ${sdist_pins[*]}"
if [[ ! -x "$venv/bin/python" ]] || [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  echo "making $venv (about 6 GB, a few minutes)" >&2
  rm -rf "$venv"
  mkdir -p "$cache"
  "$PYTHON" -m venv "$venv"
  pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)
  "${pip[@]}" install --no-deps --only-binary=:all: "${build_pins[@]}"
  "${pip[@]}" install --no-deps --only-binary=:all: "${pins[@]}"
  "${pip[@]}" install --no-deps --no-build-isolation --no-binary=webrtcvad "${sdist_pins[@]}"
  echo "$want" > "$stamp"
fi

# One thread everywhere: onnxruntime's, PyTorch's and numpy's sums are then run-to-run
# identical, and the machine stays usable.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1
export PYTHONWARNINGS=ignore
exec "$venv/bin/python" "$here/convert_voice.py" "$@"
