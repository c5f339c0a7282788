"""A small GGUF metadata reader: the key/value header only, never the tensor data.

A model file is hundreds of megabytes, but its tokenizer and chat template sit in the header
before any tensor. The file is memory-mapped and walked key by key, so only the pages of the
header are read; values that are not asked for are skipped by arithmetic (fixed-size arrays)
or by hopping over length prefixes (string arrays).

Layout (GGUF v2 and v3, little-endian): magic ``GGUF``, u32 version, u64 tensor count, u64
key/value count, then each pair as a string key, a u32 value type and the value. A string is a
u64 byte length and that many bytes; an array is a u32 element type, a u64 count and the elements.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterable
from os import PathLike
from typing import Any

import numpy as np

from .._errors import GGUFError

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)

# Value type codes, as the GGUF specification numbers them.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)

_SCALAR_FORMATS = {
    UINT8: "<B",
    INT8: "<b",
    UINT16: "<H",
    INT16: "<h",
    UINT32: "<I",
    INT32: "<i",
    FLOAT32: "<f",
    BOOL: "<?",
    UINT64: "<Q",
    INT64: "<q",
    FLOAT64: "<d",
}
_SCALAR_STRUCTS = {code: struct.Struct(fmt) for code, fmt in _SCALAR_FORMATS.items()}
_ARRAY_DTYPES = {
    UINT8: np.dtype("<u1"),
    INT8: np.dtype("<i1"),
    UINT16: np.dtype("<u2"),
    INT16: np.dtype("<i2"),
    UINT32: np.dtype("<u4"),
    INT32: np.dtype("<i4"),
    FLOAT32: np.dtype("<f4"),
    BOOL: np.dtype("?"),
    UINT64: np.dtype("<u8"),
    INT64: np.dtype("<i8"),
    FLOAT64: np.dtype("<f8"),
}
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_HEADER = struct.Struct("<4sIQQ")


def read_gguf_metadata(
    path: str | PathLike[str], keys: Iterable[str] | None = None, *, raw_strings: bool = False
) -> dict[str, Any]:
    """The metadata of the GGUF file at `path`: every key, or only those in `keys` (absent
    keys are simply missing from the result).

    Scalars come back as Python values, numeric and boolean arrays as read-only numpy arrays,
    strings as `str` (UTF-8) or, with `raw_strings=True`, as the exact `bytes` in the file
    (token texts need that: a vocabulary is bytes, not text). String arrays are lists.
    """
    with open(path, "rb") as file:
        try:
            mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError as exc:  # an empty file cannot be mapped
            raise GGUFError(f"{path}: not a GGUF file (it is empty)") from exc
    with mapped:
        return _HeaderReader(mapped, str(path), raw_strings).read(None if keys is None else set(keys))


class _HeaderReader:
    """One pass over the key/value section of a mapped GGUF file."""

    def __init__(self, data: mmap.mmap, name: str, raw_strings: bool):
        self.data = data
        self.name = name
        self.raw_strings = raw_strings
        self.offset = 0

    def read(self, wanted: set[str] | None) -> dict[str, Any]:
        magic, version, _n_tensors, n_pairs = self._unpack(_HEADER, "file header")
        if magic != GGUF_MAGIC:
            raise GGUFError(f"{self.name}: not a GGUF file (magic {magic!r}, expected {GGUF_MAGIC!r})")
        if version not in SUPPORTED_VERSIONS:
            if version.to_bytes(4, "little") in {v.to_bytes(4, "big") for v in SUPPORTED_VERSIONS}:
                raise GGUFError(f"{self.name}: big-endian GGUF files are not supported")
            raise GGUFError(
                f"{self.name}: GGUF version {version} is not supported (only {SUPPORTED_VERSIONS})"
            )
        found: dict[str, Any] = {}
        for _ in range(n_pairs):
            if wanted is not None and len(found) == len(wanted):
                break
            key = self._string("a metadata key").decode("utf-8", errors="replace")
            (value_type,) = self._unpack(_U32, f"the type of {key!r}")
            if wanted is None or key in wanted:
                found[key] = self._value(value_type, key)
            else:
                self._skip(value_type, key)
        return found

    def _unpack(self, layout: struct.Struct, what: str) -> tuple:
        end = self.offset + layout.size
        if end > len(self.data):
            raise GGUFError(f"{self.name}: file ends inside {what} (offset {self.offset})")
        values = layout.unpack_from(self.data, self.offset)
        self.offset = end
        return values

    def _string(self, what: str) -> bytes:
        (length,) = self._unpack(_U64, what)
        end = self.offset + length
        if end > len(self.data):
            raise GGUFError(f"{self.name}: file ends inside {what} (offset {self.offset})")
        text = self.data[self.offset : end]
        self.offset = end
        return text

    def _text(self, raw: bytes) -> str | bytes:
        return raw if self.raw_strings else raw.decode("utf-8", errors="replace")

    def _value(self, value_type: int, key: str) -> Any:
        if value_type in _SCALAR_STRUCTS:
            return self._unpack(_SCALAR_STRUCTS[value_type], f"the value of {key!r}")[0]
        if value_type == STRING:
            return self._text(self._string(f"the value of {key!r}"))
        if value_type == ARRAY:
            return self._array(key)
        raise GGUFError(f"{self.name}: key {key!r} has unknown value type {value_type}")

    def _array(self, key: str) -> Any:
        # An element of an array of arrays is itself an array body: element type, count, items.
        element_type, count = self._array_header(key)
        if element_type == STRING:
            strings = self._string_array(count, key)
            return strings if self.raw_strings else [self._text(s) for s in strings]
        if element_type in _ARRAY_DTYPES:
            dtype = _ARRAY_DTYPES[element_type]
            self._require(count * dtype.itemsize, key)
            array = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.offset).copy()
            array.flags.writeable = False
            self.offset += count * dtype.itemsize
            return array
        if element_type == ARRAY:
            return [self._array(key) for _ in range(count)]
        raise GGUFError(f"{self.name}: key {key!r} is an array of unknown type {element_type}")

    def _skip(self, value_type: int, key: str) -> None:
        if value_type in _SCALAR_STRUCTS:
            self._require(_SCALAR_STRUCTS[value_type].size, key)
            self.offset += _SCALAR_STRUCTS[value_type].size
        elif value_type == STRING:
            self._string(f"the value of {key!r}")
        elif value_type == ARRAY:
            self._skip_array(key)
        else:
            raise GGUFError(f"{self.name}: key {key!r} has unknown value type {value_type}")

    def _skip_array(self, key: str) -> None:
        element_type, count = self._array_header(key)
        if element_type in _ARRAY_DTYPES:
            self._require(count * _ARRAY_DTYPES[element_type].itemsize, key)
            self.offset += count * _ARRAY_DTYPES[element_type].itemsize
        elif element_type == STRING:
            self._string_starts(count, key)
        elif element_type == ARRAY:
            for _ in range(count):
                self._skip_array(key)
        else:
            raise GGUFError(f"{self.name}: key {key!r} is an array of unknown type {element_type}")

    def _array_header(self, key: str) -> tuple[int, int]:
        (element_type,) = self._unpack(_U32, f"the array type of {key!r}")
        (count,) = self._unpack(_U64, f"the array length of {key!r}")
        return element_type, count

    def _require(self, size: int, key: str) -> None:
        if self.offset + size > len(self.data):
            raise GGUFError(f"{self.name}: file ends inside the value of {key!r} (offset {self.offset})")

    def _string_array(self, count: int, key: str) -> list[bytes]:
        starts = self._string_starts(count, key)
        data = self.data
        ends = starts[1:]
        ends.append(self.offset)
        return [data[start + 8 : end] for start, end in zip(starts, ends)]

    def _string_starts(self, count: int, key: str) -> list[int]:
        """Offsets of `count` consecutive length-prefixed strings; moves past the last one.

        The hot loop of a vocabulary load (up to 262,144 strings). Nearly every string is
        shorter than 256 bytes, so the loop reads only the low byte of each u64 length, then
        checks in one numpy pass that the seven high bytes are zero; from the first string
        where they are not, the length is read in full and the fast loop resumes after it.
        """
        data = self.data
        if count * 8 > len(data) - self.offset:
            raise GGUFError(f"{self.name}: string array {key!r} claims {count} items, more than the file holds")
        starts: list[int] = []
        offset = self.offset
        while len(starts) < count:
            batch = [0] * (count - len(starts))
            try:
                for i in range(len(batch)):
                    batch[i] = offset
                    offset += 8 + data[offset]
            except IndexError:
                del batch[i:]
            first_long = self._first_long_length(batch)
            if first_long is None:
                if len(starts) + len(batch) < count:
                    raise GGUFError(f"{self.name}: file ends inside the string array {key!r}")
                starts.extend(batch)
                break
            starts.extend(batch[:first_long])
            offset = batch[first_long]
            starts.append(offset)
            (length,) = self._at(offset, key)
            offset += 8 + length
        if offset > len(data):
            raise GGUFError(f"{self.name}: file ends inside the string array {key!r}")
        self.offset = offset
        return starts

    def _first_long_length(self, starts: list[int]) -> int | None:
        """Index of the first string whose u64 length has a non-zero high byte, if any."""
        if not starts:
            return None
        bytes_view = np.frombuffer(self.data, dtype=np.uint8)
        positions = np.asarray(starts, dtype=np.int64)
        last = len(bytes_view) - 1
        high = np.zeros(len(starts), dtype=np.uint8)
        for k in range(1, 8):
            high |= bytes_view[np.minimum(positions + k, last)]
        long = np.flatnonzero(high)
        return int(long[0]) if long.size else None

    def _at(self, offset: int, key: str) -> tuple[int]:
        if offset + 8 > len(self.data):
            raise GGUFError(f"{self.name}: file ends inside the string array {key!r}")
        return _U64.unpack_from(self.data, offset)
