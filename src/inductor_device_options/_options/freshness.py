"""Keep Inductor from reusing a kernel built against another SDK.

Inductor keys compiled C++ by its source and command line. Two changes leave that line
unchanged: a symlink such as ``ascend-toolkit/latest`` re-pointed to another release, and
files changed in place (an in-place CANN upgrade, a rebuilt runtime library, an edited
header). So the options a provider returns are made *fresh*:

* include and library dirs are resolved to their real paths (a re-pointed symlink then
  changes the command line);
* one definition, ``INDUCTOR_DEVICE_OPTIONS_SDK_IDENTITY=<hex>``, carries the device's SDK
  identity (``identity``): a digest of the contents of the device's own headers and
  libraries, and of the provider's own identity.

Step 4 of the validation pipeline (``pipeline``).
"""

from __future__ import annotations

import os

from .identity import IDENTITY_DEFINITION, sdk_identity
from .model import CppDeviceOptions


def fresh_options(options: CppDeviceOptions, own_identity: str | None = None) -> CppDeviceOptions:
    """``options`` with real paths and the SDK identity definition added; ``own_identity``
    is the provider's own (``sdk_identity``), if it gives one."""
    include_dirs = [os.path.realpath(path) for path in options.include_dirs]
    libraries_dirs = [os.path.realpath(path) for path in options.libraries_dirs]
    identity = sdk_identity(include_dirs, libraries_dirs, options.libraries, own_identity)
    definitions = [d for d in options.definitions if not _is_identity(d)]
    if identity is not None:
        definitions.append(f"{IDENTITY_DEFINITION}={identity}")
    return options._replace(
        definitions=definitions, include_dirs=include_dirs, libraries_dirs=libraries_dirs
    )


def _is_identity(definition: str) -> bool:
    """``NAME`` or ``NAME=...`` with NAME exactly ours (a provider's older one is replaced);
    a macro that merely starts like it is the provider's own."""
    return definition.lstrip(" ").partition("=")[0] == IDENTITY_DEFINITION


def identity_in(options: CppDeviceOptions) -> str | None:
    """The SDK identity the finished ``options`` carry, or None."""
    for definition in options.definitions:
        name, _, value = definition.partition("=")
        if name == IDENTITY_DEFINITION:
            return value
    return None
