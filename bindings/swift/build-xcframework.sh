#!/usr/bin/env bash
# Builds VouchFFI.xcframework (static libvouch.a for iOS devices and the simulator, with
# include/vouch.h and a module map) for Package.swift. Runs on macOS with Xcode and rustup; not run
# on Vouch's Linux build machines (no Apple SDK there), so it is written, not tested, here.
#   bindings/swift/build-xcframework.sh        then: cd bindings/swift && swift build
set -euo pipefail
cd "$(dirname "$0")/../.."

targets=(aarch64-apple-ios aarch64-apple-ios-sim)
rustup target add "${targets[@]}"
# Phones hand frames and audio to the library (vouch_clip_from_raw): the C codecs are left out, as
# in CI's portable build. Add --features h264 to decode H.264 files on the device too.
for target in "${targets[@]}"; do
    cargo build --release -p vouch-ffi --lib --no-default-features --target "$target"
done

out=bindings/swift/VouchFFI.xcframework
headers="$(mktemp -d)"
cp include/vouch.h "$headers/"
cat > "$headers/module.modulemap" <<'MAP'
module VouchFFI {
    header "vouch.h"
    link "vouch"
    export *
}
MAP
rm -rf "$out"
xcodebuild -create-xcframework \
    -library target/aarch64-apple-ios/release/libvouch.a -headers "$headers" \
    -library target/aarch64-apple-ios-sim/release/libvouch.a -headers "$headers" \
    -output "$out"
echo "built $out"
