"""The names the dynamic loader knows a shared library by: its SONAME, read from the ELF
file, and a stub object that has the loader open a library by its file name.

A model's library records each library it was linked against in a NEEDED entry: the
library's SONAME, or, for a library without one, the name ld found it by (``lib<name>.so``
for ``-l<name>``). When it opens the model, the loader takes a library already loaded for
an entry only where the entry is one of that library's names: a name it was opened by, or
its SONAME, never the file name of a path it was opened by. A library without a SONAME,
loaded by its path, is therefore not taken for ``lib<name>.so``: the loader searches the
model's runpath for it. The stub, a shared object with nothing but a NEEDED entry and an
RPATH, has the loader open the library by that very name from its dir here; the loader then
knows the library by it (:func:`needing_stub`).

Pure Python, reading only the headers and the dynamic section, so a large SDK library
costs a few reads; nothing here imports another module of the package.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, NamedTuple

_MAGIC = b"\x7fELF"
_ET_DYN = 3
_PT_LOAD, _PT_DYNAMIC, _PT_GNU_STACK = 1, 2, 0x6474E551
_PF_W, _PF_R = 2, 4
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_SYMTAB, _DT_STRSZ = 0, 1, 5, 6, 10
_DT_SYMENT, _DT_SONAME, _DT_RPATH = 11, 14, 15
#: The largest page size of any Linux target: a segment aligned to it maps on every one.
_PAGE = 0x10000


class ElfError(ValueError):
    """The file is not an ELF shared object this reader understands."""


class _Format(NamedTuple):
    """The layout of one ELF class (32 or 64 bits), in one byte order."""

    order: str  # struct's byte order: "<" or ">"
    wide: bool  # ELFCLASS64

    @property
    def address(self) -> str:
        return "Q" if self.wide else "I"

    @property
    def header_size(self) -> int:
        return 64 if self.wide else 52

    @property
    def segment_size(self) -> int:
        return 56 if self.wide else 32

    @property
    def dynamic(self) -> str:  # Elf_Dyn: a signed tag, a value
        return self.order + ("qQ" if self.wide else "iI")

    @property
    def symbol_size(self) -> int:
        return 24 if self.wide else 16

    def segment(self, fields: bytes) -> tuple[int, int, int, int, int]:
        """(type, flags, file offset, address, file size) of a program header."""
        if self.wide:
            kind, flags, offset, address, _, size = struct.unpack_from(
                self.order + "IIQQQQ", fields
            )
        else:
            kind, offset, address, _, size, _, flags = struct.unpack_from(
                self.order + "IIIIIII", fields
            )
        return kind, flags, offset, address, size

    def pack_segment(self, kind: int, flags: int, offset: int, size: int, align: int) -> bytes:
        """A program header whose address is its file offset (the stub loads as it lies)."""
        if self.wide:
            return struct.pack(
                self.order + "IIQQQQQQ", kind, flags, offset, offset, offset, size, size, align
            )
        return struct.pack(
            self.order + "IIIIIIII", kind, offset, offset, offset, size, size, flags, align
        )


def _read_at(file: BinaryIO, offset: int, size: int, path: str) -> bytes:
    file.seek(offset)
    data = file.read(size)
    if len(data) != size:
        raise ElfError(f"{path}: truncated ELF file")
    return data


def _identify(head: bytes, path: str) -> _Format:
    if len(head) < 64 or head[:4] != _MAGIC:
        raise ElfError(f"{path} is not an ELF file")
    # e_ident[EI_CLASS] (4: 1 = 32-bit, 2 = 64-bit) and e_ident[EI_DATA] (5: 1 = little
    # endian, 2 = big endian).
    order = {1: "<", 2: ">"}.get(head[5])
    if head[4] not in (1, 2) or order is None:
        raise ElfError(f"{path}: unknown ELF class {head[4]} or byte order {head[5]}")
    return _Format(order, head[4] == 2)


def soname(path: str) -> str | None:
    """The SONAME of the ELF shared library at ``path``, None where it has none. Raises
    :class:`ElfError` where ``path`` is no ELF file this reader understands (a linker
    script named ``lib<name>.so``, say), ``OSError`` where it cannot be read."""
    with open(path, "rb") as file:
        head = file.read(64)
        form = _identify(head, path)
        table, count = _program_table(head, form)
        segments = [
            form.segment(_read_at(file, table + index * form.segment_size, form.segment_size, path))
            for index in range(count)
        ]
        dynamic = next((s for s in segments if s[0] == _PT_DYNAMIC), None)
        if dynamic is None:
            return None  # statically linked: nothing records it by a name
        entries = _read_at(file, dynamic[2], dynamic[4], path)
        whole = len(entries) - len(entries) % struct.calcsize(form.dynamic)
        tags: dict[int, int] = {}
        for tag, value in struct.iter_unpack(form.dynamic, entries[:whole]):
            if tag == _DT_NULL:
                break
            # The first of a tag counts: DT_SONAME and DT_STRTAB appear once in a sane file.
            tags.setdefault(tag, value)
        if _DT_SONAME not in tags:
            return None
        if _DT_STRTAB not in tags:
            raise ElfError(f"{path}: dynamic section without a string table")
        # DT_STRTAB is a virtual address, DT_SONAME an offset into that table: the address is
        # mapped back to a file offset through the PT_LOAD segment holding it.
        start = _file_offset(segments, tags[_DT_STRTAB], path) + tags[_DT_SONAME]
        file.seek(start)
        name = file.read(4096).partition(b"\0")[0]
        return name.decode(errors="replace")


def _program_table(head: bytes, form: _Format) -> tuple[int, int]:
    """(offset, entry count) of the program header table."""
    # e_phoff and e_phnum of the ELF header: their offsets differ between ELF32 and ELF64.
    at = 32 if form.wide else 28
    (table,) = struct.unpack_from(form.order + form.address, head, at)
    (count,) = struct.unpack_from(form.order + "H", head, 56 if form.wide else 44)
    return table, count


def _file_offset(segments: list[tuple[int, int, int, int, int]], address: int, path: str) -> int:
    for kind, _, offset, start, size in segments:
        if kind == _PT_LOAD and 0 <= address - start < size:
            return address - start + offset
    raise ElfError(f"{path}: address {address:#x} is in no loaded segment")


def needing_stub(needed: str, directory: str, like: str) -> bytes:
    """A shared object that needs ``needed`` and whose RPATH is ``directory``, for the
    machine of the ELF file ``like`` (its class, byte order, machine, flags and ABI): loaded,
    it has the loader open ``directory/needed`` by the name ``needed``. An RPATH, not a
    RUNPATH: the loader searches it before ``LD_LIBRARY_PATH``, as it takes a library
    already loaded first. Its one segment is readable and writable, never executable (it
    maps where the temporary dir is ``noexec``), and the loader relocates the dynamic
    section in place. Raises :class:`ElfError` for a ``directory`` the loader would read
    otherwise (``:`` separates dirs in an RPATH, ``$`` starts a variable)."""
    if ":" in directory or "$" in directory:
        raise ElfError(f"{directory}: an RPATH cannot name a dir with ':' or '$'")
    with open(like, "rb") as file:
        head = _read_at(file, 0, 64, like)
    form = _identify(head, like)
    # e_machine and e_flags copied from the library: the loader refuses an object of
    # another machine or ABI (ARM's float ABI lives in e_flags, say).
    (machine,) = struct.unpack_from(form.order + "H", head, 18)
    (flags,) = struct.unpack_from(form.order + "I", head, 48 if form.wide else 36)
    # The string table: "" at offset 0 (ELF requires it), then the NEEDED name at 1 and the
    # RPATH dir after it, which is what the DT_NEEDED and DT_RPATH values below point at.
    strings = b"\0" + needed.encode() + b"\0" + directory.encode() + b"\0"
    segments = 3
    strings_at = form.header_size + segments * form.segment_size
    symbols_at = (strings_at + len(strings) + 7) & ~7
    dynamic_at = symbols_at + form.symbol_size  # one symbol: the null one ELF requires
    dynamic = b"".join(
        struct.pack(form.dynamic, tag, value)
        for tag, value in (
            (_DT_NEEDED, 1),
            (_DT_RPATH, 2 + len(needed.encode())),
            (_DT_STRTAB, strings_at),
            (_DT_STRSZ, len(strings)),
            (_DT_SYMTAB, symbols_at),
            (_DT_SYMENT, form.symbol_size),
            (_DT_NULL, 0),
        )
    )
    size = dynamic_at + len(dynamic)
    # e_ident kept as the library's (class, byte order, OS ABI); then e_type ET_DYN,
    # e_machine, e_version 1, e_entry 0, e_phoff, e_shoff 0 (no sections), e_flags, e_ehsize,
    # e_phentsize, e_phnum, e_shentsize, e_shnum 0, e_shstrndx 0.
    header = head[:16] + struct.pack(
        form.order + "HHI" + form.address * 3 + "IHHHHHH",
        *(_ET_DYN, machine, 1, 0, form.header_size, 0, flags),
        *(form.header_size, form.segment_size, segments, 64 if form.wide else 40, 0, 0),
    )
    readable = _PF_R | _PF_W
    table = (
        form.pack_segment(_PT_LOAD, readable, 0, size, _PAGE)
        + form.pack_segment(_PT_DYNAMIC, readable, dynamic_at, len(dynamic), 8)
        # Without it the loader takes the stub for one that needs an executable stack.
        + form.pack_segment(_PT_GNU_STACK, readable, 0, 0, 16)
    )
    body = header + table + strings
    return body + b"\0" * (dynamic_at - len(body)) + dynamic
