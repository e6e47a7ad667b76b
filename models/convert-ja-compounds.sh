#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# The table of Japanese words read as a whole that the phrase check compares a Japanese token
# with (crates/vouch-bio/data/ja_compounds.txt, compiled into the library): the words of two to
# four kanji in IPADIC's common-word lists whose reading is not their characters' readings put
# together (今朝 KESA, 今日 KYOU, 大人 OTONA), from the Debian package mecab-ipadic
# 2.7.0-20070801+main-3 (NAIST and ICOT licence, reproduced at the head of the table); the
# characters' readings are the committed crates/vouch-bio/data/ja_readings.txt
# (models/convert-ja-readings.sh). See models/README.md, "Japanese readings".
#
#   bash models/convert-ja-compounds.sh          write the table
#   bash models/convert-ja-compounds.sh --check  regenerate into a temp file and compare
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"
out="$here/../crates/vouch-bio/data/ja_compounds.txt"
readings="$here/../crates/vouch-bio/data/ja_readings.txt"
deb_sha256="2a59bb65193b605cec3e5540e69e7d3ce8db4624744f8686f419aa0cf3f327f2"
table_sha256="886b436eda7cc996ef8d13ef382fafe2d4e1b8bf5c2b349347b4a68671e7f0bc"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
vouch_deb mecab-ipadic 2.7.0-20070801+main-3 "$deb_sha256" "$work"
python3 "$here/ja_compounds.py" "$work/deb/usr/share/mecab/dic/ipadic" "$readings" \
    "$work/deb/usr/share/doc/mecab-ipadic/copyright" "$work/table.txt"
vouch_table_out "$work/table.txt" "$out" "$table_sha256" "${1:-}"
