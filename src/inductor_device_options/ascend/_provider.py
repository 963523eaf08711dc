"""The provider: torch's defaults for ``npu`` plus what torch_npu and CANN add, as Inductor
asks for them (``cpp_device_options``), with what ``doctor`` reads off it."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from .. import CppDeviceOptions, default_cpp_device_options
from ._cache import cached
from ._cann import CannInstall, cann_version, find_cann
from ._errors import CannPathError
from ._headers import inductor_headers
from ._hints import DOCTOR_HINTS
from ._torch_npu import TorchNpuInstall, find_torch_npu

#: The PrivateUse1 name torch_npu gives its backend.
DEVICE_TYPE = "npu"

#: What torch_npu 2.14.0 defines for npu kernels.
NPU_DEFINITIONS: tuple[str, ...] = ("USE_NPU",)
#: torch_npu passes these raw (``-D`` with ``=`` does not fit ``definitions``).
NPU_PASSTHROUGH_ARGS: tuple[str, ...] = ("-DBUILD_LIBTORCH=ON", "-Wno-unused-function")

_Lists = tuple[tuple[str, ...], ...]


def cpp_device_options(
    device_type: str, aot_mode: bool = False, compile_only: bool = False
) -> CppDeviceOptions:
    """The provider callback: torch's defaults for ``device_type`` plus Ascend's options.

    Each list is the default list followed by the Ascend values it lacks. The defaults may
    be torch_npu's own function (its legacy replacement, adopted by the hook), which lists
    CANN by another path and passes ``-DBUILD_LIBTORCH=ON -Wno-unused-function`` as one
    string: dirs are compared by real path and passthrough args by word. The package
    declares it for ``npu`` in its entry points; :func:`register` registers it.

    Args:
        device_type: The device Inductor asks about (``"npu"``).
        aot_mode: True for AOTInductor.
        compile_only: True when Inductor compiles to an object and links later.

    Returns:
        The seven lists for the device (a new copy each call).

    Raises:
        CannNotFoundError: See :func:`find_cann`.
        TorchNpuNotFoundError: See :func:`find_torch_npu`.
        CannPathError: CANN or torch_npu is installed under a path g++ cannot be given as
            one argument.

    Example:
        >>> from inductor_device_options import ascend
        >>> from inductor_device_options.testing import stand_in_ascend
        >>> with stand_in_ascend():
        ...     options = ascend.cpp_device_options("npu")
        >>> options.definitions, options.passthrough_args
        (['USE_NPU'], ['-DBUILD_LIBTORCH=ON', '-Wno-unused-function'])
    """
    added = npu_cpp_device_options()
    base = default_cpp_device_options(device_type, aot_mode, compile_only)
    return merged(_frozen(base), _frozen(added)).copy()


@cached
def merged(base: _Lists, added: _Lists) -> CppDeviceOptions:
    """Each list of ``base`` followed by the values of ``added``'s it lacks, kept per
    process."""
    return CppDeviceOptions(
        *(
            _merged(field, default, extra)
            for field, default, extra in zip(CppDeviceOptions._fields, base, added, strict=True)
        )
    )


def _frozen(options: CppDeviceOptions) -> _Lists:
    return tuple(tuple(values) for values in options)


def sdk_identity(device_type: str) -> str | None:
    """What joins npu's SDK identity besides the contents of its headers and libraries: the
    CANN release (``CANN 8.5.0``), from its install info, where it says one."""
    version = cann_version(find_cann())
    return None if version is None else f"CANN {version}"


# What the package reads off a provider (the backend author's guide lists these attributes):
# CANN's release for the SDK identity; for doctor, the headers torch_npu's codegen includes
# and the Ascend words for its fixes.
vars(cpp_device_options).update(
    sdk_identity=sdk_identity, inductor_headers=inductor_headers, doctor_hints=DOCTOR_HINTS
)


def npu_cpp_device_options(default_roots: Sequence[str] | None = None) -> CppDeviceOptions:
    """Only what Ascend adds to torch's defaults: ``USE_NPU``, torch_npu's and CANN's
    include and library dirs, their libraries and the passthrough args (a new copy each
    call). ``default_roots`` is as for :func:`find_cann`; raises as
    :func:`cpp_device_options` does."""
    return npu_options(find_cann(default_roots), find_torch_npu()).copy()


@cached
def npu_options(cann: CannInstall, torch_npu: TorchNpuInstall) -> CppDeviceOptions:
    """What Ascend adds for these installs, kept per process; raises ``CannPathError`` as
    :func:`cpp_device_options` does."""
    include_dirs = [torch_npu.include_dir] if torch_npu.include_dir is not None else []
    options = CppDeviceOptions(
        definitions=list(NPU_DEFINITIONS),
        include_dirs=_unique([*include_dirs, *cann.include_dirs]),
        cflags=[],
        ldflags=[],
        libraries_dirs=_unique([torch_npu.library_dir, *cann.library_dirs]),
        libraries=_unique(["torch_npu", *cann.libraries]),
        passthrough_args=list(NPU_PASSTHROUGH_ARGS),
    )
    _check_paths(options, cann, torch_npu)
    return options


def _check_paths(options: CppDeviceOptions, cann: CannInstall, torch_npu: TorchNpuInstall) -> None:
    """Raise ``CannPathError`` for a CANN or torch_npu dir that would not reach g++ as one
    argument (a space where Inductor does not quote, a quote, a newline): the generic
    validation error would not say that CANN's location is the cause."""
    from .. import check_value  # the validation pipeline: loaded only here

    for field in ("include_dirs", "libraries_dirs"):
        for value in getattr(options, field):
            problem = check_value(field, value)
            if problem is None:
                continue
            if value == cann.home or value.startswith(cann.home + os.sep):
                found = cann.source if cann.source != "default" else "a default location"
                where = f"{cann.home!r} (found through {found}: {cann.root!r})"
                raise CannPathError("The Ascend CANN toolkit", where, value, problem)
            where = f"{torch_npu.package_dir!r} (found through {torch_npu.source})"
            raise CannPathError("torch_npu", where, value, problem)


def _merged(field: str, default: Sequence[str], extra: Sequence[str]) -> list[str]:
    """``default`` followed by the values of ``extra`` it lacks (dirs by real path,
    passthrough args by word)."""
    if field == "passthrough_args":
        present = {word for value in default for word in value.split()}
        return [*default, *(value for value in extra if not set(value.split()) <= present)]
    same: Callable[[str], str] = (
        os.path.realpath if field in ("include_dirs", "libraries_dirs") else str
    )
    seen = {same(value) for value in default}
    merged = list(default)
    for value in extra:
        if same(value) not in seen:
            seen.add(same(value))
            merged.append(value)
    return merged


def _unique(values: Sequence[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out
