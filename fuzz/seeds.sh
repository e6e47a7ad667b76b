#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Tiny seed files for the media fuzz targets, generated with ffmpeg's synthetic sources (nothing
# recorded): 32x32 video of 3 frames and 0.1 s of audio in every container and codec the decoders
# read. A seed that small keeps one execution cheap (the codec targets ran at 100-150 executions a
# second on the 320x240, 50-frame test clips; docs/fuzzing.md), so that 10 million executions per
# target fit in a few CPU-hours. Writes into fuzz/corpus/<target>/ (kept out of git); needs ffmpeg
# (Debian's package: libx264, libvpx, libopus, libvorbis).
#
#   bash fuzz/seeds.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
corpus="$here/corpus"
command -v ffmpeg >/dev/null || { echo "seeds.sh: ffmpeg is needed (apt-get install ffmpeg)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ff() { ffmpeg -nostdin -loglevel error -y -fflags +bitexact "$@"; }
video=(-f lavfi -i "testsrc2=size=32x32:rate=25:duration=0.12")
audio=(-f lavfi -i "sine=frequency=440:sample_rate=16000:duration=0.1")
x264=(-c:v libx264 -preset ultrafast -threads 1 -pix_fmt yuv420p -g 3)

ff "${video[@]}" "${audio[@]}" "${x264[@]}" -c:a aac -b:a 24k -shortest "$work/h264_aac.mp4"
ff "${video[@]}" "${audio[@]}" "${x264[@]}" -bf 2 -c:a aac -b:a 24k -shortest "$work/h264_bframes.mp4"
ff "${video[@]}" "${audio[@]}" "${x264[@]}" -c:a aac -b:a 24k -shortest \
   -movflags frag_keyframe+empty_moov+default_base_moof "$work/h264_fragmented.mp4"
ff "${video[@]}" "${audio[@]}" "${x264[@]}" -c:a aac -b:a 24k -shortest "$work/h264_aac.mov"
ff "${video[@]}" "${x264[@]}" "$work/h264_noaudio.mp4"
ff "${video[@]}" "${audio[@]}" "${x264[@]}" -c:a libopus -b:a 16k -shortest "$work/h264_opus.mkv"
ff "${video[@]}" "${audio[@]}" -c:v libvpx -threads 1 -b:v 50k -c:a libopus -b:a 16k -shortest \
   "$work/vp8_opus.webm"
ff "${video[@]}" "${audio[@]}" -c:v libvpx-vp9 -threads 1 -b:v 50k -c:a libopus -b:a 16k \
   -shortest "$work/vp9_opus.webm"
ff "${audio[@]}" -c:a pcm_s16le "$work/tone.wav"
ff "${audio[@]}" -c:a flac "$work/tone.flac"
ff "${audio[@]}" -c:a libvorbis -ar 16000 "$work/tone_vorbis.ogg"
ff "${audio[@]}" -c:a libopus -b:a 16k "$work/tone_opus.ogg"
ff "${audio[@]}" -c:a aac -b:a 24k "$work/tone.m4a"

seed() {
  local target=$1
  shift
  mkdir -p "$corpus/$target"
  cp "$@" "$corpus/$target/"
}
seed mp4_demux "$work"/*.mp4 "$work"/*.mov "$work"/tone.m4a
seed matroska_demux "$work"/*.mkv "$work"/*.webm
seed video_decode "$work"/*.mp4 "$work"/*.mov "$work"/*.mkv "$work"/*.webm
seed audio_file "$work"/tone.wav "$work"/tone.flac "$work"/*.ogg
seed image_decode "$here"/../tests/media/marker*
for target in mp4_demux matroska_demux video_decode audio_file image_decode; do
  echo "$target: $(find "$corpus/$target" -type f | wc -l) files, $(du -sk "$corpus/$target" | cut -f1) KiB"
done
