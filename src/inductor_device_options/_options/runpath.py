"""A library dir for the loader: ``runpath``, the ``ldflags`` value that puts a real path in
the RUNPATH of every module Inductor links, or says why it cannot. Pure: no torch import.

Public (``inductor_device_options.runpath``), for providers; its rules are those of what
reaches ld (``tools``): g++ splits ``-Wl,`` at every comma, the loader splits a runpath at
``:`` and expands ``$``, and Inductor does not quote ldflags.
"""

from __future__ import annotations

import os

from .._errors import RunpathError


def runpath(directory: str | os.PathLike[str]) -> str:
    """An ``ldflags`` value that puts ``directory``'s real path in the RUNPATH of every
    module Inductor links, so that the loader finds the device's libraries there without
    ``LD_LIBRARY_PATH``.

    RUNPATH is the list of directories, stored in a shared library, where the dynamic
    loader looks for the libraries it needs. The value is ``Wl,-rpath,<real path>``:
    an ldflag, because the command that precompiles headers gets no ldflags, while a linker
    option in ``passthrough_args`` reaches it too and makes it try to link (g++ ignores
    ldflags in a compile-only command, where torch 2.6's ``CppBuilder.get_command_line``
    still passes them; 2.13's and 2.15's add them only to a linking command). The path is
    resolved first: a ``latest`` symlink re-pointed later does not change what a built
    module loads.

    Args:
        directory: an absolute path to the directory of the device's runtime libraries.

    Returns:
        ``"Wl,-rpath,<real path>"``.

    Raises:
        RunpathError: the real path cannot reach the loader as one runpath entry: it is
            relative, or holds a ``,`` (g++ splits ``-Wl,`` at commas), a ``:`` (which
            separates runpath entries), a ``$`` (which the loader expands, as in
            ``$ORIGIN``), whitespace, a quote or a backslash (Inductor does not quote
            ldflags), a newline or a NUL.

    Example:
        >>> import inductor_device_options as ido
        >>> ido.runpath("/opt/acme/lib")
        'Wl,-rpath,/opt/acme/lib'
        >>> ido.runpath("/opt/acme,1.0/lib")
        Traceback (most recent call last):
        ...
        inductor_device_options.RunpathError: runpath '/opt/acme,1.0/lib' holds ',': g++
        splits -Wl, at every comma, so ld would get the path in pieces

        In a provider: ``options.ldflags.append(ido.runpath(lib_dir))``, beside
        ``options.libraries_dirs.append(lib_dir)`` and its libraries.
    """
    path = os.fspath(directory)
    if not os.path.isabs(path):
        raise RunpathError(
            f"runpath {path!r} is relative: the loader would look for it from the "
            "directory the program runs in; give an absolute path"
        )
    real = os.path.realpath(path)
    for characters, why in _RUNPATH_BREAKERS:
        found = next((character for character in real if character in characters), None)
        if found is not None:
            shown = repr(real) if real == path else f"{path!r} (real path {real!r})"
            raise RunpathError(f"runpath {shown} holds {found!r}: {why}")
    return f"Wl,-rpath,{real}"


_RUNPATH_BREAKERS = (
    (",", "g++ splits -Wl, at every comma, so ld would get the path in pieces"),
    (":", "the loader splits a runpath at ':', into two directories"),
    ("$", "the loader expands '$' tokens in a runpath ($ORIGIN, $LIB, $PLATFORM)"),
    (" \t\v\f'\"\\", "Inductor does not quote ldflags: g++ would not get the path as one argument"),
    ("\n\r\x00", "it would cut the compiler command line"),
)
