"""The check ``library_sonames`` (with ``--aot``): whether each shared library of the
device's own that its AOTInductor options link has a SONAME.

A model's library records a library it links by the library's SONAME; one without (built
by a plain ``g++ -shared``, no ``-Wl,-soname``) by the file name ld found for ``-l<name>``.
The loader resolves that name on the model's runpath, which names the build machine's
library dirs, or on ``LD_LIBRARY_PATH``, not by a library loaded already from elsewhere by
its path. Where the SDK lies at another path, a ``.pt2`` then loads only where this package
loads it (``_hook/pt2_libraries``, which has the loader open the library by its file name
too); torch's own loader, in a C++ program, does not find it.
"""

from __future__ import annotations

import os

from .._fs import find_library, inside_torch
from .._hook.elf_names import ElfError, soname
from .._options.problems import Problem
from .checks import Check, Context, check, one_cause
from .path_checks import link_inputs
from .text import plural

NAME = "library_sonames"


def check_library_sonames(context: Context) -> Check:
    """WARN for each shared library of the device's own, in the dirs its options name,
    that has no SONAME."""
    if context.options is None:
        return context.skipped(NAME)
    directories, libraries = link_inputs(context.options)
    named, unnamed = [], []
    for library in libraries:
        # The device's own: in the dirs the options name (the system's are the system's).
        path = find_library(library, directories)
        if path is None or not _shared(path) or inside_torch(os.path.realpath(path)):
            continue
        try:
            name = soname(path)
        except (ElfError, OSError):
            continue  # a linker script, say: what it names is another library's
        if name is None:
            unnamed.append(path)
        else:
            named.append(f"{os.path.basename(path)} ({name})")
    if not unnamed:
        summary = f"SONAME: {'; '.join(named)}" if named else "no shared library of the device's"
        return check(NAME, "pass", summary)
    problems = [_problem(path) for path in unnamed]
    cause = f"{len(unnamed)} libraries the options link have no SONAME"
    return check(
        NAME,
        "warn",
        f"{plural(len(unnamed), 'library', 'libraries')} without a SONAME: a .pt2 loads where "
        "the SDK lies at another path only through inductor-device-options",
        *one_cause(problems, cause),
    )


def _shared(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(".so") or ".so." in name


def _problem(path: str) -> Problem:
    name = os.path.basename(path)
    versioned = name if ".so." in name else f"{name}.<N>"
    return Problem(
        f"{path} has no SONAME: an AOTInductor model linked against it records it by its "
        f"file name, {name}, which the loader finds only on the model's runpath (the library "
        "dirs of the machine that built it) or LD_LIBRARY_PATH. Where the SDK lies at another "
        "path, the package loads in a Python process with inductor-device-options, which has "
        f"the loader open {name} from the dirs the options name there; torch's loader alone "
        f"(AOTIModelPackageLoader in a C++ program) fails with '{name}: cannot open shared "
        "object file'",
        f"give the library a SONAME: link it with -Wl,-soname,{versioned} (<N> its ABI "
        "version); else, where a package is loaded without inductor-device-options, put the "
        "library's dir on LD_LIBRARY_PATH or keep the SDK at the path the package was built at",
    )
