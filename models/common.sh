# SPDX-License-Identifier: Apache-2.0 OR MIT
# shellcheck shell=bash
#
# Shell helpers shared by the conversion drivers models/convert-*.sh (and
# models/aasist-study/run.sh), which source this file; it does nothing by itself. One home for:
#   VOUCH_CACHE               ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models, where venvs and
#                             downloads live (never in the repository)
#   vouch_python              PYTHON (python3.11 if on PATH, else python3, unless set) and PYVER
#   vouch_python_supported    fail unless PYVER is 3.10-3.13 (note unless 3.11)
#   vouch_onnx_pins, VOUCH_TORCH_PY_PINS, VOUCH_TORCH_2_15_PINS, VOUCH_TF_PINS_HEAD/TAIL
#                             the pin sets several venvs share
#   vouch_venv, vouch_pip, vouch_pip_requirements
#                             a pinned venv, rebuilt when its stamp (its pins) changes
#   vouch_one_thread, vouch_exec
#                             run a convert_*.py on one thread (run-to-run identical sums)
#   vouch_sha256, vouch_sha256_members
#                             check downloads against recorded sha256 sums
#   vouch_mode, vouch_workdir, vouch_helper_run
#                             the build / install / --check steps of the tf2onnx drivers
#   vouch_deb                 download a pinned Debian package, check its sha256, unpack it
#   vouch_table_out           write or --check a generated data table against its recorded sum

# shellcheck disable=SC2034  # used by the drivers that source this file
VOUCH_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models"

# vouch_python: sets PYTHON (kept if set; else python3.11 when on PATH, else python3) and PYVER
# (its major.minor).
vouch_python() {
  if [[ -z "${PYTHON:-}" ]]; then
    if command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
  fi
  PYVER="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
}

# vouch_python_supported: fails unless PYVER is 3.10-3.13; a note unless it is 3.11 (tested).
vouch_python_supported() {
  case "$PYVER" in
    3.11) ;;
    3.10|3.12|3.13) echo "note: tested with Python 3.11, using $PYVER" >&2 ;;
    *) echo "error: need Python 3.10-3.13 (3.11 tested), $PYTHON is $PYVER; set PYTHON=" >&2; exit 1 ;;
  esac
}

# vouch_onnx_pins ONNXRUNTIME_VERSION: prints, one a line, the numpy/onnx/onnxruntime base of
# the venvs (resolved for CPython 3.11 on x86_64 Linux), with the given onnxruntime.
vouch_onnx_pins() {
  printf '%s\n' numpy==2.4.6 onnx==1.23.2 "onnxruntime==$1" protobuf==7.36.2 ml_dtypes==0.6.0 \
    flatbuffers==25.12.19 packaging==26.3 typing_extensions==4.16.0
}

# torch's pure-Python dependencies, the same for torch 2.11 (convert-campplus.sh) and 2.15.
VOUCH_TORCH_PY_PINS=(
  fsspec==2026.9.0
  Jinja2==3.1.6
  MarkupSafe==3.0.4
  mpmath==1.3.0
  networkx==3.6.1
  sympy==1.14.0
)

# torch 2.15.0 and the CUDA libraries it needs to import (PyPI only has the CUDA build, which
# runs on the CPU here): convert-voice.sh and convert-aasist.sh.
# shellcheck disable=SC2034  # used by the drivers that source this file
VOUCH_TORCH_2_15_PINS=(
  torch==2.15.0
  filelock==4.2.11
  "${VOUCH_TORCH_PY_PINS[@]}"
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

# TensorFlow 2.21 + tf2onnx 1.17 and their complete dependency set (CPython 3.11, x86_64 Linux,
# 2026-11-21): convert-mediapipe.sh (which adds pillow between the two halves) and
# convert-human.sh. Two halves because the order of the list is part of the venvs' keys.
# shellcheck disable=SC2034  # used by the drivers that source this file
VOUCH_TF_PINS_HEAD=(
  tensorflow-cpu==2.21.0
  tf2onnx==1.17.0
  onnx==1.23.2
  onnxruntime==1.31.1
  numpy==2.4.6
  protobuf==7.36.2
  flatbuffers==25.12.19
)
# shellcheck disable=SC2034  # used by the drivers that source this file
VOUCH_TF_PINS_TAIL=(
  absl-py==2.5.1
  astunparse==1.6.3
  certifi==2026.10.18
  charset-normalizer==3.5.2
  gast==0.7.0
  google-pasta==0.2.0
  grpcio==1.85.1
  h5py==3.14.0
  idna==3.20
  keras==3.15.1
  libclang==18.1.1
  markdown-it-py==4.3.0
  mdurl==0.1.2
  ml_dtypes==0.6.0
  namex==0.1.0
  opt_einsum==3.4.0
  optree==0.20.0
  packaging==26.3
  Pygments==2.21.0
  requests==2.34.2
  rich==15.0.0
  six==1.17.0
  termcolor==3.3.0
  typing_extensions==4.16.0
  urllib3==2.8.0
  wrapt==2.5.2
  wheel==0.48.0
)

# vouch_venv VENV STAMPFILE STAMP NOTE COMMAND...: unless VENV has a python and VENV/STAMPFILE
# holds STAMP (the pins it was made with), (re)makes VENV with $PYTHON, runs COMMAND (which
# installs the packages) and writes the stamp. NOTE is appended to the "making" message.
vouch_venv() {
  local venv=$1 stamp=$2 want=$3 note=$4
  shift 4
  if [[ ! -x "$venv/bin/python" || ! -f "$venv/$stamp" ]] || [[ "$(cat "$venv/$stamp")" != "$want" ]]; then
    echo "making $venv$note" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$PYTHON" -m venv "$venv"
    "$@"
    echo "$want" > "$venv/$stamp"
  fi
}

# vouch_pip VENV ARGS...: VENV's pip, quiet, without its version check.
vouch_pip() {
  local venv=$1
  shift
  "$venv/bin/python" -m pip --disable-pip-version-check --quiet "$@"
}

# vouch_pip_requirements VENV TEXT: installs the requirements TEXT (a complete pinned set, kept
# as VENV/requirements.txt) from wheels without dependencies, then runs pip check.
vouch_pip_requirements() {
  printf '%s' "$2" > "$1/requirements.txt"
  vouch_pip "$1" install --no-deps --only-binary=:all: -r "$1/requirements.txt"
  "$1/bin/python" -m pip check
}

# vouch_one_thread: one thread everywhere (onnxruntime's, PyTorch's and numpy's sums are then
# run-to-run identical, and the machine stays usable), Python warnings off, and no __pycache__
# written into models/.
vouch_one_thread() {
  export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
  export PYTHONWARNINGS=ignore PYTHONDONTWRITEBYTECODE=1
}

# vouch_exec VENV SCRIPT ARGS...: replaces the shell with VENV's python running SCRIPT ARGS on one
# thread (vouch_one_thread).
vouch_exec() {
  local venv=$1
  shift
  vouch_one_thread
  exec "$venv/bin/python" "$@"
}

# vouch_sha256 FILE SHA256: fails unless FILE has that sha256.
vouch_sha256() {
  echo "$2  $1" | sha256sum --check --quiet - \
    || { echo "error: $(basename "$1") does not have the recorded sha256" >&2; exit 1; }
}

# vouch_sha256_members DIR SUMS: fails unless the files listed in SUMS (sha256sum lines, paths
# relative to DIR) have those sums.
vouch_sha256_members() {
  (cd "$1" && printf '%s' "$2" | sha256sum --check --quiet -) \
    || { echo "error: a file in $1 does not have the recorded sha256" >&2; exit 1; }
}

# vouch_mode ARGS...: sets MODE (install, or check with --check) and VOUCH_START; --help prints
# the calling script's header (its lines 2-18).
vouch_mode() {
  MODE=install
  case "${1:-}" in
    "") ;;
    --check) MODE=check ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
  esac
  VOUCH_START=$(date +%s)
}

# vouch_workdir NAME: sets WORK to a new temporary directory, removed when the script exits.
vouch_workdir() {
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/vouch-$1.XXXXXX")"
  trap 'rm -rf "$WORK"' EXIT
}

# vouch_helper_run PY HELPER SOURCE: runs a tf2onnx helper (convert_mediapipe.py,
# convert_human.py): build SOURCE into $WORK/out (its TensorFlow log kept in $WORK/build.log and
# shown only on failure), then, by MODE, install into the helper's folder or check against it.
vouch_helper_run() {
  local py=$1 helper=$2 src=$3 here
  here="$(dirname "$helper")"
  export TF_CPP_MIN_LOG_LEVEL=2 PYTHONWARNINGS=ignore PYTHONDONTWRITEBYTECODE=1
  "$py" "$helper" build "$src" "$WORK/out" 2> "$WORK/build.log" \
    || { grep -v -e '^I0000' -e '^WARNING: All log' -e '^E0000' "$WORK/build.log" | tail -40 >&2; exit 1; }
  if [[ "$MODE" == check ]]; then
    "$py" "$helper" check "$WORK/out" "$here" 2> "$WORK/check.log" \
      || { tail -40 "$WORK/check.log" >&2; exit 1; }
  else
    "$py" "$helper" install "$WORK/out" "$here"
  fi
  echo "done in $(( $(date +%s) - VOUCH_START )) s"
}

# vouch_deb PACKAGE VERSION SHA256 DIR: apt-get downloads PACKAGE=VERSION into DIR, checks the
# .deb against SHA256 (vouch_sha256) and unpacks it into DIR/deb.
vouch_deb() {
  local package=$1 version=$2 sum=$3 dir=$4 deb
  (cd "$dir" && apt-get download "$package=$version" >/dev/null 2>&1) || {
    echo "$(basename "$0"): apt-get download $package=$version failed (run apt-get update?)" >&2
    exit 1
  }
  deb="$(ls "$dir/${package}_"*.deb)"
  vouch_sha256 "$deb" "$sum"
  dpkg-deb -x "$deb" "$dir/deb"
}

# vouch_table_out MADE OUT SHA256 [--check]: a generated table (MADE) copied to OUT, or with
# --check compared with OUT byte for byte; either way its sha256 must be the recorded SHA256
# (the tables compiled into vouch-bio: crates/vouch-bio/data/*.txt).
vouch_table_out() {
  local made=$1 out=$2 recorded=$3 mode=${4:-} have
  have="$(sha256sum "$made" | cut -d' ' -f1)"
  if [ "$mode" = "--check" ]; then
    cmp "$made" "$out"
    echo "$(basename "$out"): reproduced ($have)"
  else
    cp "$made" "$out"
    echo "wrote $out ($have)"
  fi
  if [ "$have" != "$recorded" ]; then
    echo "$(basename "$0"): the table's sha256 $have is not the recorded $recorded" >&2
    return 1
  fi
}
