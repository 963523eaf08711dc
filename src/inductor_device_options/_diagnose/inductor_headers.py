"""The headers Inductor's generated C++ includes for a device, where the compiler finds
them, and the headers that two include dirs both provide. For ``doctor``: no printing.

Which headers: Inductor's C++ wrapper for a device includes what the device's wrapper
codegen class names (``get_device_include_path_jit`` / ``_aot`` from torch 2.13 on,
``get_device_include_path`` before, which reads ``V.graph.aot_mode``); torch 2.6's
``CppWrapperCpu.write_header`` includes ``aoti_torch/generated/c_shim_<device>.h`` in both
modes. A provider can declare the headers instead of torch's default:

    def cpp_device_options(device_type, aot_mode, compile_only): ...

    def inductor_headers(device_type, aot_mode):
        return [f"acme/inductor/{'aoti_include' if aot_mode else 'cpp_wrapper'}/{device_type}.h"]

    cpp_device_options.inductor_headers = inductor_headers

``inductor_headers(device_type, aot_mode)`` returns header names as written between
``<`` and ``>``, in the order the generated code includes them; the package's door
(``_hook/device_headers``) includes them, and torch precompiles the first. A wrapper class
that overrides torch's include method (2.13 on) still wins; otherwise the declaration
applies, whether or not the backend registered its class in this process (a backend that
cannot be imported without its hardware); otherwise torch's own default
(``CppWrapperCpu``'s method). A DeviceInterface that defines ``get_cpp_device_options``
may carry the same attribute, which doctor reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from stat import S_ISREG
from typing import TYPE_CHECKING, NamedTuple, cast

from .. import _state
from .._fs import BoundedWalk
from .._lookup.provider_attributes import HEADERS_ATTRIBUTE
from .run import run_tool

if TYPE_CHECKING:
    from torch._inductor.graph import GraphLowering

__all__ = [
    "HEADERS_ATTRIBUTE",  # re-exported: its home is _lookup/provider_attributes
    "DeviceHeaders",
    "InvalidHeadersDeclarationError",
    "ShadowedHeader",
    "device_headers",
    "included_names",
    "locate",
    "shadowed_headers",
    "system_include_dirs",
]


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:<([^>\n]+)>|"([^"\n]+)")', re.MULTILINE)
# The most entries looked at in one include dir (a whole SDK's headers are far fewer).
MAX_FILES_PER_DIR = 200_000


class InvalidHeadersDeclarationError(ValueError):
    """A provider's ``inductor_headers`` raised or returned something else than names."""


class DeviceHeaders(NamedTuple):
    """The ``#include`` text Inductor's generated code has for the device, the header
    names in it, and who says so."""

    text: str
    names: tuple[str, ...]
    origin: str


def device_headers(
    device_type: str,
    aot_mode: bool,
    declared: object | None,
    declared_by: str,
    reported: str | None = None,
) -> DeviceHeaders:
    """What Inductor's C++ wrapper includes for ``device_type``: asked of the wrapper
    codegen class registered for it where it overrides torch's include method, else of
    ``declared`` (the object that provides the device's options: its ``inductor_headers``),
    else of the registered class or torch's default (torch 2.6: the C shim of the device
    the codegen ``reported``, if known).

    Raises ``InvalidHeadersDeclarationError`` for a declaration that fails.
    """
    from torch._inductor.codegen.common import get_wrapper_codegen_for_device

    from .._hook.device_headers import includes_declared_headers

    registered = get_wrapper_codegen_for_device(device_type, cpp_wrapper=True)
    declaration = getattr(declared, HEADERS_ATTRIBUTE, None)
    if registered is not None:
        overrides = not includes_declared_headers(registered, aot_mode)
        asked = None
        if overrides or declaration is None:
            asked = _asked(registered, device_type, aot_mode)
        if asked is not None and declaration is not None:
            # The declaration is read, not acted on: the class's own method wins.
            unused = f"{HEADERS_ATTRIBUTE} of {declared_by} unused"
            return asked._replace(origin=f"{asked.origin}, which wins: {unused}")
        if asked is not None:
            return asked
    if declaration is not None:
        return _declared(declaration, device_type, aot_mode, declared_by)
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    default = _asked(CppWrapperCpu, device_type, aot_mode)
    if default is not None:
        return default._replace(origin=f"torch's default, {default.origin}")
    # torch 2.6: CppWrapperCpu.write_header includes the C shim of the device the codegen
    # reports (self.device), in both modes.
    name = f"torch/csrc/inductor/aoti_torch/generated/c_shim_{reported or device_type}.h"
    return DeviceHeaders(
        f"#include <{name}>\n", (name,), "torch's default, CppWrapperCpu.write_header"
    )


def _asked(codegen: object, device_type: str, aot_mode: bool) -> DeviceHeaders | None:
    """What a wrapper codegen class includes for the device, asked through the method
    this torch's Inductor calls; None where it calls none (torch 2.6)."""
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    from .._lookup.registry import describe_callable

    mode = "aot" if aot_mode else "jit"
    if hasattr(CppWrapperCpu, f"get_device_include_path_{mode}"):
        method_name = f"get_device_include_path_{mode}"
        text = str(getattr(codegen, method_name)(device_type))
    elif hasattr(CppWrapperCpu, "get_device_include_path"):
        method_name = "get_device_include_path"
        from torch._inductor.virtualized import V

        # torch 2.10-2.12 read the mode off the graph being compiled.
        # A stand-in, typed as the graph it stands for: the method reads its aot_mode alone.
        with V.set_graph_handler(cast("GraphLowering", _GraphMode(aot_mode))):
            text = str(getattr(codegen, method_name)(device_type))
    else:
        return None
    origin = f"{describe_callable(codegen)}.{method_name}"
    return DeviceHeaders(text, included_names(text), origin)


class _GraphMode:
    """What ``get_device_include_path`` reads of ``V.graph``: whether it is AOTInductor."""

    def __init__(self, aot_mode: bool):
        self.aot_mode = aot_mode


def _declared(
    declaration: object, device_type: str, aot_mode: bool, declared_by: str
) -> DeviceHeaders:
    where = f"{HEADERS_ATTRIBUTE} of {declared_by}"
    if not callable(declaration):
        raise InvalidHeadersDeclarationError(
            f"{where} is a {type(declaration).__name__}, not a callable "
            "(device_type, aot_mode) -> header names"
        )
    try:
        names = declaration(device_type, aot_mode)
    except Exception as error:
        raise InvalidHeadersDeclarationError(
            f"{where} raised {type(error).__name__}: {error}"
        ) from error
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise InvalidHeadersDeclarationError(
            f"{where} returned a {type(names).__name__}, not a list of header names"
        )
    if not names:
        raise InvalidHeadersDeclarationError(
            f"{where} returned no header name: give at least one, or set no {HEADERS_ATTRIBUTE}"
        )
    for name in names:
        if not isinstance(name, str) or not name or any(c in name for c in '<>"\n'):
            raise InvalidHeadersDeclarationError(
                f"{where} returned {name!r}, not a header name as written between < and >"
            )
    text = "".join(f"#include <{name}>\n" for name in names)
    return DeviceHeaders(text, tuple(names), where)


def included_names(text: str) -> tuple[str, ...]:
    """The header names of the ``#include`` lines in ``text``, in order."""
    return tuple(angled or quoted for angled, quoted in _INCLUDE.findall(text))


def locate(name: str, include_dirs: Sequence[str], compiler: str) -> str | None:
    """Where the compiler finds header ``name``: the first include dir (``-I`` order),
    then its own system dirs, that holds it; an absolute name is itself."""
    if os.path.isabs(name):
        return name if os.path.isfile(name) else None
    for directory in [*include_dirs, *system_include_dirs(compiler)]:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return candidate
    return None


@_state.cached(8)
def system_include_dirs(compiler: str) -> tuple[str, ...]:
    """The dirs ``compiler`` searches for ``#include <...>`` after the ``-I`` dirs."""
    # GCC and clang both print, with -v, the <...> search list between these two lines
    # on stderr; nothing else says it (it depends on the compiler's own configuration).
    ran = run_tool([compiler, "-x", "c++", "-E", "-v", os.devnull])
    _, _, listing = ran.stderr.partition("#include <...> search starts here:\n")
    listing, _, _ = listing.partition("End of search list.")
    return tuple(os.path.normpath(line.strip()) for line in listing.splitlines() if line.strip())


# --- headers two include dirs both provide --------------------------------------------------


class ShadowedHeader(NamedTuple):
    """A header name that more than one include dir provides, with copies that differ:
    ``copies`` in ``-I`` order (the compiler uses the first), ``same_as_used`` tells for
    each copy whether it has the content of the first."""

    name: str
    copies: tuple[str, ...]
    same_as_used: tuple[bool, ...]


def shadowed_headers(include_dirs: Sequence[str], own: Collection[str]) -> list[ShadowedHeader]:
    """Every header name found in two or more of ``include_dirs`` whose copies are not all
    the same file or the same content, where at least one of those dirs is not in ``own``
    (torch's own dirs, which torch keeps consistent)."""
    dirs = _unique_real(include_dirs)
    own_real = {os.path.realpath(directory) for directory in own}
    # Only the names in a dir that is not torch's can be shadowed or shadow: torch's own
    # dirs (thousands of headers) are asked about those names, never walked.
    files = {
        directory: set(_relative_files(directory))
        for directory in dirs
        if os.path.realpath(directory) not in own_real
    }
    candidates = set().union(*files.values())
    shadowed = []
    for name in sorted(candidates):
        where = [
            directory
            for directory in dirs
            if (name in files[directory] if directory in files else _is_file(directory, name))
        ]
        if len(where) < 2:
            continue
        copies = tuple(os.path.join(directory, name) for directory in where)
        same = tuple(_same_content(copies[0], copy) for copy in copies)
        if not all(same):
            shadowed.append(ShadowedHeader(name, copies, same))
    return shadowed


def _is_file(directory: str, name: str) -> bool:
    return os.path.isfile(os.path.join(directory, name))


def _unique_real(include_dirs: Sequence[str]) -> list[str]:
    """The existing dirs, each once: a dir listed again (or through a link) is the same
    dir, whose headers cannot differ from themselves."""
    seen: set[str] = set()
    dirs = []
    for directory in include_dirs:
        real = os.path.realpath(directory)
        if real not in seen and os.path.isdir(real):
            seen.add(real)
            dirs.append(directory)
    return dirs


def _relative_files(top: str) -> list[str]:
    """The regular files under ``top``, as paths relative to it; links to dirs are
    followed once (the package's one bounded walk)."""
    walk = BoundedWalk([top], limit=MAX_FILES_PER_DIR)
    return [
        entry.label
        for entry in walk.walk(top)
        if entry.kind == "file" and entry.status is not None and S_ISREG(entry.status.st_mode)
    ]


def _same_content(first: str, other: str) -> bool:
    try:
        if os.path.samefile(first, other):
            return True
        if os.path.getsize(first) != os.path.getsize(other):
            return False
        with open(first, "rb") as a, open(other, "rb") as b:
            return a.read() == b.read()
    except OSError:
        return False
