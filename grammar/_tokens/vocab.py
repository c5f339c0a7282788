"""`Vocabulary`: what each token id of a model stands for, as raw bytes.

A grammar speaks bytes; a model speaks token ids. The vocabulary is the bridge: token id ->
the exact bytes that token adds to the output, which ids are special (control, unused or padding
ids that never stand for text) and which of those end generation. Built from a GGUF file (GPT-2
byte-level BPE and SentencePiece, read the way llama.cpp renders pieces), a tiktoken rank file,
or a plain list.
"""

from __future__ import annotations

import base64
import hashlib
from array import array
from collections.abc import Iterable, Sequence
from os import PathLike

import numpy as np

from .gguf import GGUFError, read_gguf_metadata

# Token types as GGUF stores them (llama.cpp's llama_token_type).
_UNDEFINED, _NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = range(7)

# Token texts llama.cpp treats as end of generation whatever the file's token type says
# (llama-vocab.cpp, the special_eog_ids list); each is also forced to a control token.
END_OF_GENERATION_TEXTS = frozenset(
    text.encode()
    for text in (
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|flush|>",
        "<|calls|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "</s>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "[EOS]",
        "<|end_of_text|>",
        "<end_of_utterance>",
        "<eos>",
        "<turn|>",
        "<|tool_response>",
        "<｜end▁of▁sentence｜>",
        "[e~[",
    )
)

# Fill-in-the-middle markers llama.cpp finds by text when the file names no id for them: each
# becomes a control token; the pad, repository and file-separator ones also end generation.
_FIM_MARKERS = {
    "tokenizer.ggml.fim_pre_token_id": ("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
                                        "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"),
    "tokenizer.ggml.fim_suf_token_id": ("<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
                                        "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"),
    "tokenizer.ggml.fim_mid_token_id": ("<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
                                        "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"),
    "tokenizer.ggml.fim_pad_token_id": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
    "tokenizer.ggml.fim_rep_token_id": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
    "tokenizer.ggml.fim_sep_token_id": ("<|file_sep|>",),
}
_FIM_TEXTS = {key: tuple(text.encode() for text in texts) for key, texts in _FIM_MARKERS.items()}
_FIM_ENDS_GENERATION = (
    "tokenizer.ggml.fim_pad_token_id",
    "tokenizer.ggml.fim_rep_token_id",
    "tokenizer.ggml.fim_sep_token_id",
)
# Tokens llama.cpp always renders as text, whatever the file says (gpt-oss's harmony format).
_ALWAYS_TEXT = frozenset(t.encode() for t in ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"))

_MARKER_TEXTS = END_OF_GENERATION_TEXTS | _ALWAYS_TEXT | {t for texts in _FIM_TEXTS.values() for t in texts}

_GGUF_KEYS = (
    "general.name",
    "tokenizer.ggml.model",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.eot_token_id",
    "tokenizer.ggml.eom_token_id",
    *_FIM_TEXTS,
)

# SentencePiece's visible space, "▁" (U+2581).
_SPM_SPACE = "\u2581".encode()


def _byte_level_table() -> dict[int, int]:
    """GPT-2's bytes_to_unicode inverted, as a str.translate table: the printable code point
    standing for each byte -> that byte as a code point below 256. Code points below 256 that
    stand for no byte map to U+FFFF, so that encoding to Latin-1 fails on them."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {cp: 0xFFFF for cp in range(256)}
    table.update({cp: cp for cp in printable})
    shifted = [b for b in range(256) if b not in set(printable)]
    table.update({256 + n: b for n, b in enumerate(shifted)})
    return table


_BYTE_LEVEL = _byte_level_table()


class Vocabulary:
    """Token id -> raw bytes, plus the special ids (never text) and the end-of-generation ids.

    `tokens` is the source of truth: one `bytes` per id, `b""` for every special id, exactly
    `size` entries (the width of the model's logits; ids past the tokenizer's own are padding
    and special). `eos_ids` is a subset of `special_ids`. Vocabularies with the same tokens,
    EOS and special ids compare and hash equal (`bos_id` and `name` are labels and take no
    part), so compiled grammars can be cached per vocabulary; treat one as immutable.
    """

    __slots__ = ("tokens", "size", "eos_ids", "special_ids", "bos_id", "name", "_digest")

    def __init__(
        self,
        tokens: Sequence[bytes],
        *,
        eos_ids: Iterable[int] = (),
        special_ids: Iterable[int] = (),
        size: int | None = None,
        bos_id: int | None = None,
        name: str = "",
    ):
        tokens = list(tokens)
        if not set(map(type, tokens)) <= {bytes}:
            bad = next(i for i, t in enumerate(tokens) if type(t) is not bytes)
            raise TypeError(f"Vocabulary: token {bad} is {type(tokens[bad]).__name__}, not bytes")
        if size is None:
            size = len(tokens)
        if size < len(tokens):
            raise ValueError(f"Vocabulary: size {size} is smaller than the {len(tokens)} tokens given")
        eos = frozenset(_checked_ids(eos_ids, size, "eos_ids"))
        special = set(_checked_ids(special_ids, size, "special_ids")) | eos
        if bos_id is not None:
            _checked_ids((bos_id,), size, "bos_id")
        tokens.extend([b""] * (size - len(tokens)))
        for i in special:
            tokens[i] = b""
        # An empty token adds nothing to the text, so it can never be allowed as text.
        special.update(_positions(tokens, b""))
        self.tokens: list[bytes] = tokens
        self.size: int = size
        self.eos_ids: frozenset[int] = eos
        self.special_ids: frozenset[int] = frozenset(special)
        self.bos_id: int | None = bos_id
        self.name: str = name
        self._digest: bytes | None = None

    @classmethod
    def from_tokens(
        cls,
        tokens: Sequence[bytes],
        *,
        eos_ids: Iterable[int] = (),
        special_ids: Iterable[int] = (),
        size: int | None = None,
    ) -> Vocabulary:
        """A vocabulary from a plain list: `tokens[i]` is the bytes of id i. Special ids (and
        the EOS ids, which are special too) have their bytes replaced by `b""`; ids from
        `len(tokens)` up to `size` are padding, special as well."""
        return cls(tokens, eos_ids=eos_ids, special_ids=special_ids, size=size)

    @classmethod
    def from_gguf(cls, path: str | PathLike[str]) -> Vocabulary:
        """The vocabulary of a GGUF model file, byte for byte as llama.cpp renders each piece
        (`llama_token_to_piece` with special=False): GPT-2 byte-level BPE ("gpt2") and
        SentencePiece ("llama", as Gemma 3 uses). Ids llama.cpp renders as nothing (control,
        unknown, unused) are special; its end-of-generation ids are `eos_ids`."""
        meta = read_gguf_metadata(path, _GGUF_KEYS, raw_strings=True)
        model = meta.get("tokenizer.ggml.model")
        texts = meta.get("tokenizer.ggml.tokens")
        if model is None or texts is None:
            raise GGUFError(f"{path}: no tokenizer in this GGUF file (tokenizer.ggml.model/tokens missing)")
        if model not in (b"gpt2", b"llama"):
            raise GGUFError(
                f"{path}: tokenizer model {model.decode(errors='replace')!r} is not supported "
                "(supported: 'gpt2' byte-level BPE, 'llama' SentencePiece)"
            )
        types = _token_types(meta, len(texts), path)
        eos = _end_of_generation(meta, texts, types, sentencepiece=model == b"llama")
        render = _render_sentencepiece if model == b"llama" else _render_byte_level
        tokens, special = render(texts, types, path)
        bos = meta.get("tokenizer.ggml.bos_token_id", 1 if model == b"llama" else None)
        if bos is not None and not 0 <= bos < len(texts):
            bos = None
        name = meta.get("general.name", b"").decode("utf-8", errors="replace")
        return cls(tokens, eos_ids=eos, special_ids=special, bos_id=bos, name=name)

    @classmethod
    def from_tiktoken(
        cls, path: str | PathLike[str], specials: Sequence[str], size: int | None = None
    ) -> Vocabulary:
        """A vocabulary from a tiktoken rank file (one `base64-token rank` per line): id = rank,
        then `specials` in order after the highest rank, then padding up to `size`. Specials
        llama.cpp would treat as end of generation (`<|endoftext|>`, `<|im_end|>`...) are EOS."""
        ranks: dict[int, bytes] = {}
        with open(path, "rb") as file:
            for line_no, line in enumerate(file, 1):
                if not line.strip():
                    continue
                try:
                    encoded, rank = line.split()
                    ranks[int(rank)] = base64.b64decode(encoded, validate=True)
                except ValueError as exc:
                    raise ValueError(f"{path}:{line_no}: not a 'base64-token rank' line: {exc}") from exc
        n_ranked = max(ranks, default=-1) + 1
        tokens = [ranks.get(i, b"") for i in range(n_ranked)]
        special_ids = range(n_ranked, n_ranked + len(specials))
        tokens.extend(s.encode() for s in specials)
        eos = [i for i in special_ids if tokens[i] in END_OF_GENERATION_TEXTS]
        return cls(tokens, eos_ids=eos, special_ids=special_ids, size=size)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes token `token_id` adds to the output (`b""` for a special id)."""
        if not 0 <= token_id < self.size:
            raise IndexError(f"token id {token_id} is outside this vocabulary (0..{self.size - 1})")
        return self.tokens[token_id]

    def decode(self, ids: Iterable[int]) -> bytes:
        """The bytes of a token sequence; special ids contribute nothing."""
        return b"".join([self.token_bytes(i) for i in ids])

    def __len__(self) -> int:
        return self.size

    @property
    def fingerprint(self) -> str:
        """A content hash: equal for equal vocabularies, whatever file they came from."""
        return self._content_digest().hex()

    def _content_digest(self) -> bytes:
        if self._digest is None:
            counts = [self.size, len(self.eos_ids), len(self.special_ids)]
            digest = hashlib.sha256(array("Q", counts).tobytes())
            digest.update(array("Q", [*sorted(self.eos_ids), *sorted(self.special_ids)]).tobytes())
            digest.update(array("Q", map(len, self.tokens)).tobytes())
            digest.update(b"".join(self.tokens))
            self._digest = digest.digest()
        return self._digest

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self is other or (
            self.size == other.size
            and self.eos_ids == other.eos_ids
            and self.special_ids == other.special_ids
            and self._content_digest() == other._content_digest()
        )

    def __hash__(self) -> int:
        return hash(self._content_digest())

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return (
            f"Vocabulary({label}size={self.size}, eos_ids={sorted(self.eos_ids)}, "
            f"{len(self.special_ids)} special ids)"
        )


def _checked_ids(ids: Iterable[int], size: int, what: str) -> list[int]:
    checked = [int(i) for i in ids]
    for i in checked:
        if not 0 <= i < size:
            raise ValueError(f"Vocabulary: {what} contains {i}, outside 0..{size - 1}")
    return checked


def _token_types(meta: dict, n_tokens: int, path: object) -> np.ndarray:
    """The GGUF token type of every id (all NORMAL when the file has none), writable."""
    types = meta.get("tokenizer.ggml.token_type")
    if types is None:
        return np.full(n_tokens, _NORMAL, dtype=np.int32)
    if len(types) < n_tokens:
        raise GGUFError(f"{path}: tokenizer.ggml.token_type has {len(types)} entries for {n_tokens} tokens")
    return np.array(types[:n_tokens], dtype=np.int32)


def _positions(items: list, value: object) -> list[int]:
    """Every index of `value` in `items`, found by C-speed `list.index` hops."""
    found = []
    try:
        i = items.index(value)
        while True:
            found.append(i)
            i = items.index(value, i + 1)
    except ValueError:
        return found


def _end_of_generation(meta: dict, texts: list[bytes], types: np.ndarray, *, sentencepiece: bool) -> set[int]:
    """The ids llama.cpp stops generation at, adjusting `types` as it does: a token found by
    its text to be an end-of-generation or fill-in-the-middle marker becomes a control token."""
    n = len(texts)

    def metadata_id(key: str, default: int | None = None) -> int | None:
        value = meta.get(key, default)
        return value if value is not None and 0 <= value < n else default

    # One C-speed pass over the vocabulary finds every marker text present.
    where = {text: _positions(texts, text) for text in _MARKER_TEXTS.intersection(texts)}

    def ids_of(markers: Iterable[bytes]) -> list[int]:
        return sorted(i for marker in markers for i in where.get(marker, ()))

    eog: set[int] = set()
    for key, markers in _FIM_TEXTS.items():
        found = metadata_id(key)
        if found is None:
            detected = ids_of(markers)
            _force_control(types, detected)
            if key in _FIM_ENDS_GENERATION:
                eog.update(detected)
        elif key in _FIM_ENDS_GENERATION:
            eog.add(found)

    by_text = ids_of(END_OF_GENERATION_TEXTS)
    _force_control(types, by_text)
    eog.update(by_text)
    types[ids_of(_ALWAYS_TEXT)] = _USER_DEFINED

    # SentencePiece files default to </s> = 2 when they name no EOS; that default is kept
    # only where id 2 is a control token, so a real text token is never taken for EOS.
    default_eos = 2 if sentencepiece and n > 2 and types[2] == _CONTROL else None
    for key, default in (
        ("tokenizer.ggml.eos_token_id", default_eos),
        ("tokenizer.ggml.eot_token_id", None),
        ("tokenizer.ggml.eom_token_id", None),
    ):
        found = metadata_id(key, default)
        if found is not None:
            eog.add(found)

    _apply_llama_cpp_exceptions(texts, types, eog)
    return eog


def _force_control(types: np.ndarray, ids: list[int]) -> None:
    # llama.cpp adds the control attribute to what the file said; in rendering, control wins.
    types[ids] = _CONTROL


def _apply_llama_cpp_exceptions(texts: list[bytes], types: np.ndarray, eog: set[int]) -> None:
    """Two model families where a listed text is not an end of generation after all: gpt-oss
    (`<|end|>` beside `<|return|>` and `<|call|>`; solar-open's `<|calls|>` and `<|flush|>`)
    and gemma4/plamo (`</s>` beside `<|tool_response>` or `<|plamo:eos|>`)."""
    eog_texts = {texts[i]: i for i in sorted(eog, reverse=True)}
    has = eog_texts.__contains__
    if has(b"<|end|>") and ((has(b"<|return|>") and has(b"<|call|>")) or (has(b"<|calls|>") and has(b"<|flush|>"))):
        end = eog_texts[b"<|end|>"]
        eog.discard(end)
        types[end] = _USER_DEFINED
    if has(b"</s>") and (has(b"<|tool_response>") or has(b"<|plamo:eos|>")):
        s = eog_texts[b"</s>"]
        eog.discard(s)
        types[s] = _NORMAL


def _byte_of(text: bytes, token_id: int, path: object) -> bytes:
    """The byte a `<0xNN>` byte token stands for."""
    if len(text) == 6 and text.startswith(b"<0x") and text.endswith(b">"):
        try:
            return bytes((int(text[3:5], 16),))
        except ValueError:
            pass
    raise GGUFError(f"{path}: byte token {token_id} has text {text!r}, not <0xNN>")


def _render_non_normal(tokens: list[bytes], texts: list[bytes], types: np.ndarray, path: object) -> list[int]:
    """Render every id but the NORMAL ones into `tokens`: control, unknown, unused and
    undefined ids as nothing, user-defined ids as their raw text, byte tokens as their byte.
    Returns the ids rendered as nothing (the special ids)."""
    special = np.flatnonzero(~np.isin(types, (_NORMAL, _USER_DEFINED, _BYTE))).tolist()
    for i in special:
        tokens[i] = b""
    for i in np.flatnonzero(types == _USER_DEFINED).tolist():
        tokens[i] = texts[i]
    for i in np.flatnonzero(types == _BYTE).tolist():
        tokens[i] = _byte_of(texts[i], i, path)
    return special


def _render_sentencepiece(texts: list[bytes], types: np.ndarray, path: object) -> tuple[list[bytes], list[int]]:
    """SentencePiece: a NORMAL token is its text with "▁" read as a space."""
    tokens = [text.replace(_SPM_SPACE, b" ") for text in texts]
    return tokens, _render_non_normal(tokens, texts, types, path)


def _render_byte_level(texts: list[bytes], types: np.ndarray, path: object) -> tuple[list[bytes], list[int]]:
    """GPT-2 byte-level BPE: each character of a NORMAL token stands for one byte. A token with
    a character that stands for no byte (llama.cpp prints an [UNK_BYTE_…] marker for it) can
    never be produced from text, so it is special."""
    tokens = list(texts)
    special = _render_non_normal(tokens, texts, types, path)
    table = _BYTE_LEVEL
    for i in np.flatnonzero(types == _NORMAL).tolist():
        try:
            tokens[i] = texts[i].decode("utf-8").translate(table).encode("latin-1")
        except UnicodeError:
            tokens[i] = b""
            special.append(i)
    return tokens, special
