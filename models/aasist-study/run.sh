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
# shellcheck source-path=SCRIPTDIR source=../common.sh
source "$here/../common.sh"
repo="$(cd "$here/../.." && pwd)"
data="${VOUCH_DATA:-$repo/../shared/data}"
work="${AASIST_STUDY_WORK:-$VOUCH_CACHE/aasist-study}"
vouch_python

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
  venv="$VOUCH_CACHE/venv-aasist-study"
  vouch_venv "$venv" .vouch-pins "$PYVER ${pins[*]}" " (about 330 MB)" \
    vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"
fi

vouch_one_thread
mkdir -p "$work"
rm -rf "$work/tts"
"$PYTHON" "$here/gen_tts.py" "$work/tts"
"$venv/bin/python" "$here/study.py" --data "$data" --tts "$work/tts" \
  --model "$repo/models/aasist.onnx" --out "$work/scores.json"
"$venv/bin/python" "$here/report.py" "$work/scores.json"
