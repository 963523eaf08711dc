"""Read the dynamic section of an ELF shared library: which libraries the loader
loads with it (NEEDED) and where it looks for them (RUNPATH, or the older RPATH).

Pure Python, so checking a compiled module needs no binutils."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

_ELF_MAGIC = b"\x7fELF"
_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 15, 29


class ElfError(ValueError):
    """The file is not an ELF file this reader understands."""


@dataclass(frozen=True)
class DynamicSection:
    needed: list[str]
    runpath: list[str]


class _Segment(NamedTuple):
    kind: int
    file_offset: int
    address: int
    file_size: int


class _Layout(NamedTuple):
    header: str  # program header table: offset, entry size, entry count
    header_offsets: tuple[int, int, int]
    segment: str
    segment_fields: tuple[int, int, int, int]  # positions of kind, offset, address, size
    dynamic_entry: str


_LAYOUTS = {
    # ELFCLASS32: Elf32_Ehdr, Elf32_Phdr, Elf32_Dyn
    1: _Layout("I", (0x1C, 0x2A, 0x2C), "IIIIIIII", (0, 1, 2, 4), "iI"),
    # ELFCLASS64: Elf64_Ehdr, Elf64_Phdr, Elf64_Dyn
    2: _Layout("Q", (0x20, 0x36, 0x38), "IIQQQQQQ", (0, 2, 3, 5), "qQ"),
}


def read_dynamic_section(path: str | Path) -> DynamicSection:
    """The NEEDED entries and the RUNPATH (or RPATH) directories of an ELF file."""
    data = Path(path).read_bytes()
    if data[:4] != _ELF_MAGIC:
        raise ElfError(f"{path} is not an ELF file")
    layout = _LAYOUTS.get(data[4])
    order = {1: "<", 2: ">"}.get(data[5])
    if layout is None or order is None:
        raise ElfError(f"{path}: unknown ELF class {data[4]} or byte order {data[5]}")

    table_at, entry_size_at, count_at = layout.header_offsets
    (table,) = struct.unpack_from(order + layout.header, data, table_at)
    (entry_size,) = struct.unpack_from(order + "H", data, entry_size_at)
    (count,) = struct.unpack_from(order + "H", data, count_at)
    segments = []
    for index in range(count):
        fields = struct.unpack_from(order + layout.segment, data, table + index * entry_size)
        segments.append(_Segment(*(fields[position] for position in layout.segment_fields)))

    dynamic = next((segment for segment in segments if segment.kind == _PT_DYNAMIC), None)
    if dynamic is None:  # a static executable
        return DynamicSection(needed=[], runpath=[])

    entries: list[tuple[int, int]] = []
    entry_format = order + layout.dynamic_entry
    end = dynamic.file_offset + dynamic.file_size
    for position in range(dynamic.file_offset, end, struct.calcsize(entry_format)):
        tag, value = struct.unpack_from(entry_format, data, position)
        if tag == _DT_NULL:
            break
        entries.append((tag, value))

    string_table_address = next((value for tag, value in entries if tag == _DT_STRTAB), None)
    if string_table_address is None:
        raise ElfError(f"{path}: dynamic section without a string table")
    string_table = _file_offset(segments, string_table_address, path)

    def strings(wanted: int) -> list[str]:
        found = []
        for tag, index in entries:
            if tag == wanted:
                start = string_table + index
                found.append(data[start : data.index(b"\0", start)].decode())
        return found

    paths = strings(_DT_RUNPATH) or strings(_DT_RPATH)
    return DynamicSection(
        needed=strings(_DT_NEEDED),
        runpath=[directory for joined in paths for directory in joined.split(":") if directory],
    )


def _file_offset(segments: list[_Segment], address: int, path: str | Path) -> int:
    """Where the loaded ``address`` lies in the file."""
    for segment in segments:
        if segment.kind == _PT_LOAD and 0 <= address - segment.address < segment.file_size:
            return address - segment.address + segment.file_offset
    raise ElfError(f"{path}: address {address:#x} is in no loaded segment")
