#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# The AASIST study of models/aasist-notes.md, end to end: make the synthetic speech
# (gen_tts.py), score it and the genuine speech with models/aasist.onnx (study.py), print the
# notes' table (report.py). About 4 minutes on 2 cores, plus a minute for the venvs the first time.
#
#   bash models/aasist-study/run.sh
#
# NEEDS THE SHARED DATA FOLDER (not in the repository, never copied into it): ../shared/data
# beside the checkout, or VOUCH_DATA=DIR. It stops at once, loudly, when it is missing.
# Needs on PATH: espeak-ng, flite, text2wave (festival) with three festvox voices, ffmpeg:
#   apt-get install espeak-ng flite festival festvox-kallpc16k festvox-kdlpc16k \
#     festvox-us-slt-hts ffmpeg          (Debian 12: 1.51, 2.2, 2.5.0, ffmpeg 5.1)
#
# Outside the repository, under ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/:
#   venv-aasist-study  onnxruntime 1.32.0, numpy, scipy, soundfile (pinned below; MIT/BSD),
#                      rebuilt when the pins change; or AASIST_STUDY_VENV=DIR, used as it is
#   venv-aasist-piper  piper-tts 1.8.0 + voice, made by gen_tts.py; or AASIST_PIPER_VENV=DIR.
#                      piper-tts is GPL-3.0: it is only run as a tool to make test audio, never
#                      shipped with, linked into or imported by Vouch
#   aasist-study/      the generated audio and scores.json (or AASIST_STUDY_WORK=DIR)
# Set PYTHON to choose the interpreter (3.11 tested).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
data="${VOUCH_DATA:-$repo/../shared/data}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models"
work="${AASIST_STUDY_WORK:-$cache/aasist-study}"
if [[ -z "${PYTHON:-}" ]]; then
  if command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
fi

if [[ ! -f "$data/speech/utterances.csv" || ! -f "$data/talking-real/labels.csv" ]]; then
  {
    printf '!%.0s' {1..78}; echo
    echo "!!  SHARED DATA MISSING: $data"
    echo "!!  The AASIST study needs the shared data folder (speech/, talking-real/), which is"
    echo "!!  not in the repository. Put it at ../shared/data or set VOUCH_DATA=DIR."
    printf '!%.0s' {1..78}; echo
  } >&2
  exit 2
fi
missing=()
for tool in espeak-ng flite text2wave ffmpeg; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if (( ${#missing[@]} )); then
  echo "missing: ${missing[*]}; install: apt-get install espeak-ng flite festival" \
    "festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts ffmpeg" >&2
  exit 2
fi

# The complete package set for CPython 3.11 on x86_64 Linux, installed with --no-deps.
pins=(
  onnxruntime==1.32.0
  flatbuffers==25.12.19
  packaging==26.3
  protobuf==7.36.2
  numpy==2.4.6
  scipy==1.17.1
  soundfile==0.14.0
  cffi==2.1.1
  pycparser==3.12
  typing_extensions==4.16.0
)
if [[ -n "${AASIST_STUDY_VENV:-}" ]]; then
  venv="$AASIST_STUDY_VENV"
else
  venv="$cache/venv-aasist-study"
  want="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])') ${pins[*]}"
  if [[ ! -x "$venv/bin/python" ]] || [[ "$(cat "$venv/.vouch-pins" 2>/dev/null)" != "$want" ]]; then
    echo "making $venv (about 330 MB)" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip --disable-pip-version-check --quiet install --no-deps \
      --only-binary=:all: "${pins[@]}"
    echo "$want" > "$venv/.vouch-pins"
  fi
fi

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONWARNINGS=ignore
mkdir -p "$work"
rm -rf "$work/tts"
"$PYTHON" "$here/gen_tts.py" "$work/tts"
"$venv/bin/python" "$here/study.py" --data "$data" --tts "$work/tts" \
  --model "$repo/models/aasist.onnx" --out "$work/scores.json"
"$venv/bin/python" "$here/report.py" "$work/scores.json"
