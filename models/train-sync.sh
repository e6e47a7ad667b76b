#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Trains the audio-visual sync model (models/sync_map.json, compiled into the library by
# crates/vouch-bio/src/video/sync.rs) from GRID speaker s1 in ../shared/data/grid-train
# (CC BY 4.0), with the features the engine itself computes. See models/README.md, section
# "Audio-visual sync map", and docs/process-video.md for what it is measured at.
#
#   bash models/train-sync.sh           extract the features (vouch eval sync-features), train,
#                                       write models/sync_map.json, models/reference/sync_map/
#                                       and their SHA256SUMS lines
#   bash models/train-sync.sh --check   retrain into a temp dir and verify the committed weights
#                                       and reference (writes nothing)
#
# One clip in ten is held out of training; its list goes to .../vouch-models/sync-holdout/clips.csv
# for `vouch eval videos --clips <that> --dir ../shared/data/grid-train`.
# DATA (default ../shared/data) points at the data folder. The features are cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/vouch-models/sync-features (never in the repository); the venv
# (numpy only) at .../venv-sync.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
root="$(cd "$here/.." && pwd)"
data="${DATA:-$root/../shared/data}"
if [[ ! -f "$data/grid-train/clips.csv" ]]; then
  echo "error: $data/grid-train/clips.csv not found: the sync model trains on GRID speaker s1" \
       "(set DATA to the shared data folder)" >&2
  exit 1
fi
venv="$VOUCH_CACHE/venv-sync"
vouch_python
pins=(numpy==2.4.6)
vouch_venv "$venv" .vouch-pins "$PYVER ${pins[*]}" "" \
  vouch_pip "$venv" install --no-deps --only-binary=:all: "${pins[@]}"

features="$VOUCH_CACHE/sync-features"
mkdir -p "$features"
(cd "$root" && cargo build --release -q -p vouch-cli)
"$root/target/release/vouch" eval sync-features --models "$here" \
  --clips "$data/grid-train/clips.csv" --dir "$data/grid-train" --set grid-train \
  --out "$features/grid-train.jsonl" --threads 0

vouch_exec "$venv" "$here/train_sync.py" --features "$features/grid-train.jsonl" \
  --clips "$data/grid-train/clips.csv" --dir "$data/grid-train" \
  --held-out "$VOUCH_CACHE/sync-holdout/clips.csv" "$@"
