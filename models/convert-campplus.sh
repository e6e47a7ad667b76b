#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of the CAM++ speaker-embedding model (3D-Speaker zh_en common advanced,
# 192-d) to ONNX for one 3 s window, with reference vectors from PyTorch/torchaudio. See
# models/campplus-notes.md and models/README.md, section "Voice: CAM++ speaker embedding".
#
#   bash models/convert-campplus.sh               write models/campplus_sv_zh_en_3s.onnx, its
#                                                 reference folder and SHA256SUMS lines
#   bash models/convert-campplus.sh --check       regenerate into a temp dir and verify the
#                                                 committed files (writes nothing)
#   bash models/convert-campplus.sh --eer DIR     local EER on DIR/trials.csv (shared/data/speech),
#                                                 first 3 s of each utterance (writes nothing)
#
# The venv lives outside the repository, at ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/
# venv-campplus, and is rebuilt when the pins change. It holds PyTorch and torchaudio (the
# reference runtimes): PyPI only has the CUDA build, which runs on the CPU here but needs its
# nvidia-* libraries installed to import, so the venv is about 5 GB and took about 2 minutes to
# make here. torch 2.11.0 because torchaudio 2.11.0 (the newest on PyPI) requires exactly it.
# Set PYTHON to choose the interpreter (3.11 tested).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
venv="$VOUCH_CACHE/venv-campplus"
vouch_python

# The complete package set, resolved for CPython 3.11 on x86_64 Linux (2026-11-25), installed
# with --no-deps so nothing unpinned comes in. speakerlab is installed with --no-deps on purpose:
# it declares modelscope, funasr, transformers, datasets and a dozen more, none of which the
# CAM++ network or its FBank use (they need torch, torchaudio, scipy, numpy and PyYAML).
mapfile -t pins < <(vouch_onnx_pins 1.32.0)
pins+=(
  scipy==1.17.1
  PyYAML==6.0.4
  soundfile==0.14.0
  cffi==2.1.1
  pycparser==3.12
  speakerlab==0.0.6
  torch==2.11.0
  torchaudio==2.11.0
  filelock==4.2.12
  "${VOUCH_TORCH_PY_PINS[@]}"
  triton==3.6.0
  cuda-bindings==13.5.0
  cuda-pathfinder==1.9.0
  cuda-toolkit==13.0.2
  nvidia-cublas==13.1.0.3
  nvidia-cuda-cupti==13.0.85
  nvidia-cuda-nvrtc==13.0.88
  nvidia-cuda-runtime==13.0.96
  nvidia-cudnn-cu13==9.19.0.56
  nvidia-cufft==12.0.0.61
  nvidia-cufile==1.15.1.6
  nvidia-curand==10.4.0.35
  nvidia-cusolver==12.0.4.66
  nvidia-cusparse==12.6.3.3
  nvidia-cusparselt-cu13==0.8.0
  nvidia-nccl-cu13==2.28.9
  nvidia-nvjitlink==13.0.88
  nvidia-nvshmem-cu13==3.4.5
  nvidia-nvtx==13.0.85
)

vouch_venv "$venv" .vouch-pins "$PYVER ${pins[*]}" " (about 5 GB, a few minutes)" \
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"

# One thread everywhere: onnxruntime's and PyTorch's sums are then run-to-run identical, and
# the machine stays usable.
vouch_exec "$venv" "$here/convert_campplus.py" "$@"
