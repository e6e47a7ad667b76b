#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
# The sync map's feature study (models/sync-study/study.py): writes the engine's sync features,
# Whisper encoder states included, for grid-train, talking-real, talking-more and talking-grid
# into the cache (never the repository), then ranks the feature sets. Needs ../shared/data (or
# DATA) and the sync trainer's venv (numpy; `bash models/train-sync.sh` makes it). Then
# more_data.py: the same map with talking-more's generated clips added to GRID (a study of what
# varied faces would give; their licence keeps them out of shipped weights); and noise.py: GRID
# with noisy copies of its clips added (white noise 10 and 20 dB below the track).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../common.sh
source "$here/../common.sh"
root="$(cd "$here/../.." && pwd)"
data="${DATA:-$root/../shared/data}"
out="$VOUCH_CACHE/sync-study"
mkdir -p "$out"
(cd "$root" && cargo build --release -q -p vouch-cli)
for entry in grid-train:clips.csv talking-real:labels.csv talking-more:labels.csv \
             talking-grid:clips.csv; do
  set_name="${entry%%:*}"
  all=()
  [[ "$set_name" == talking-more ]] && all=(--all)  # its forgeries too, for more_data.py
  "$root/target/release/vouch" eval sync-features --models "$root/models" --encoder "${all[@]}" \
    --clips "$data/$set_name/${entry##*:}" --dir "$data/$set_name" --set "$set_name" \
    --out "$out/$set_name.jsonl"
done
for snr in 10 20; do
  "$root/target/release/vouch" eval sync-features --models "$root/models" --noise-snr-db "$snr" \
    --clips "$data/grid-train/clips.csv" --dir "$data/grid-train" --set grid-train \
    --out "$out/grid-train-snr$snr.jsonl"
done
vouch_one_thread
"$VOUCH_CACHE/venv-sync/bin/python" "$here/study.py" "$out"
"$VOUCH_CACHE/venv-sync/bin/python" "$here/more_data.py" "$out" "$data"
vouch_exec "$VOUCH_CACHE/venv-sync" "$here/noise.py" "$out"
