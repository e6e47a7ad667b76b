# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Japanese words read as a whole, for the phrase check (models/convert-ja-compounds.sh).

Reads IPADIC's common-word lists (EUC-JP CSV: the word, ..., its reading in katakana in the
twelfth column), keeps the words of two to four kanji that all have readings in the kanji table
(crates/vouch-bio/data/ja_readings.txt), and writes those whose reading is not one reading of
each character in turn: 'word<tab>readings in katakana'. To tell, each reading is romanised as
that table is (Unihan's Hepburn, upper case); the library romanises the table's katakana itself
(crates/vouch-bio/src/speech/japanese.rs), so this copy of the rules only chooses the words. The
dictionary's licence heads the table, as it asks.

    python3 ja_compounds.py IPADIC_DIR ja_readings.txt COPYRIGHT OUT
"""

import sys

# The common-word lists: nouns, adverbs, verbal and adjectival nouns. Names of people, places
# and organisations are left out (their readings are the characters' own or a family's).
LISTS = [
    "Noun.csv",
    "Noun.adverbal.csv",
    "Noun.verbal.csv",
    "Noun.adjv.csv",
    "Noun.nai.csv",
    "Adverb.csv",
]
SHORTEST, LONGEST = 2, 4

SYLLABLES = dict(
    zip(
        "あいうえおかきくけこがぎぐげごさしすせそざじずぜぞたちつてとだぢづでどなにぬねの"
        "はひふへほばびぶべぼぱぴぷぺぽまみむめもやゆよらりるれろわをん",
        "A I U E O KA KI KU KE KO GA GI GU GE GO SA SHI SU SE SO ZA JI ZU ZE ZO TA CHI TSU TE TO "
        "DA JI ZU DE DO NA NI NU NE NO HA HI FU HE HO BA BI BU BE BO PA PI PU PE PO MA MI MU ME MO "
        "YA YU YO RA RI RU RE RO WA O N".split(),
    )
)
SMALL = {"ゃ": "YA", "ゅ": "YU", "ょ": "YO", "ぁ": "A", "ぃ": "I", "ぅ": "U", "ぇ": "E", "ぉ": "O"}


def fold(c):
    """Katakana as hiragana (ゐ, ゑ and ゔ as い, え and ぶ)."""
    if 0x30A1 <= ord(c) <= 0x30F6:
        c = chr(ord(c) - 0x60)
    return {"ゐ": "い", "ゑ": "え", "ゔ": "ぶ"}.get(c, c)


def romaji(kana):
    """Kana romanised as the Rust `romaji` does; None for anything but kana."""
    out, double = "", False
    for c in map(fold, kana):
        if c in SMALL:
            small = SMALL[c]
            if out.endswith(("I", "U")) and len(out) > 1:
                out = out[:-1]
                palatal = out.endswith(("SH", "CH", "J"))
                out += small[1:] if palatal and small.startswith("Y") else small
            else:
                out += small
        elif c == "っ":
            double = True
        elif c == "ー":
            vowels = [v for v in reversed(out) if v in "AIUEO"]
            if not vowels:
                return None
            out += vowels[0]
        elif c in SYLLABLES:
            syllable = SYLLABLES[c]
            if double:
                double = False
                if syllable.startswith("CH"):
                    out += "T"
                elif syllable[0] not in "AIUEON":
                    out += syllable[0]
            out += syllable
        else:
            return None
    return out


def kanji_readings(path):
    readings = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#"):
                continue
            kanji, on, kun = line.rstrip("\n").split("\t")
            readings[kanji] = set(on.split()) | set(kun.split())
    return readings


def composed(word, reading, readings):
    """Whether `reading` is one reading of each character of `word` in turn."""
    ends = {0}
    for char in word:
        ends = {
            end + len(part)
            for end in ends
            for part in readings[char]
            if reading.startswith(part, end)
        }
        if not ends:
            return False
    return len(reading) in ends


def licence(copyright_path):
    """The dictionary's licence text from Debian's copyright file (its first License field)."""
    lines, inside = [], False
    with open(copyright_path, encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line.startswith("License:") and not inside:
                inside = True
                continue
            if inside:
                if not line.startswith(" "):
                    break
                lines.append("" if line == " ." else line[1:])
    return lines


def main():
    ipadic, readings_path, copyright_path, out = sys.argv[1:5]
    readings = kanji_readings(readings_path)
    words = {}
    for name in LISTS:
        with open(f"{ipadic}/{name}", encoding="euc-jp") as handle:
            for line in handle:
                columns = line.rstrip("\n").split(",")
                word = columns[0]
                if not SHORTEST <= len(word) <= LONGEST or len(columns) < 12:
                    continue
                if any(char not in readings for char in word):
                    continue
                kana = columns[11]
                reading = romaji(kana)
                if not reading or composed(word, reading, readings):
                    continue
                found = words.setdefault(word, [])
                if kana not in found:
                    found.append(kana)
    header = [
        "Japanese words read as a whole, for the phrase check (vouch-bio, speech/japanese.rs).",
        "Generated by models/convert-ja-compounds.sh from IPADIC 2.7.0 (Debian mecab-ipadic",
        "2.7.0-20070801+main-3): 'word<tab>readings in katakana', the words of two to four kanji",
        "whose reading is not their characters' readings (data/ja_readings.txt) in turn. IPADIC's",
        "licence, which this table, a modified copy of part of it, carries:",
        "",
    ] + licence(copyright_path)
    with open(out, "w", encoding="utf-8") as handle:
        for line in header:
            handle.write(f"# {line}".rstrip() + "\n")
        for word in sorted(words):
            handle.write(f"{word}\t{' '.join(sorted(words[word]))}\n")


if __name__ == "__main__":
    main()
