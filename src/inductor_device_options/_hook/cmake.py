"""torch's CMake writers, for the C++ project AOTInductor writes with
``aot_inductor.package_cpp_only``: a device the package serves through its own door gets a
project that builds; every other device (torch's own, those it does not serve, those served
through torch's doors) gets torch's file, byte for byte.

torch's ``CppBuilder.save_compile_cmd_to_cmake`` writes the compile commands of the model's
wrapper and ``save_link_cmd_to_cmake`` appends the link commands of the model's shared
library. For a device's options they write no include dirs and no library dirs, and the
ldflags without their leading ``-`` (``cannot find Wl,-rpath,...``); torch's
``compile_standalone`` branch writes no definitions, cflags or passthrough args either. For a
served device, the compile writer appends the package's section after torch's commands (its
first line names the device), and the link writer, finding that section, writes the link
commands itself (``_options/cmake.py`` renders both).

Imported only where a project is written: ``install`` wraps the two writers with functions
that import this module at their first call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._lookup.device_types import DEVICE_NAME, RESERVED_DEVICE_TYPES
from .._options.cmake import compile_section, device_of_project, link_section, own_options
from .._options.model import CppDeviceOptions
from .._source import DeviceOptionsSource
from .._torch_names import CMAKE_WRITERS
from .installation import answer_below, source_of
from .lookups import get_cpp_device_options
from .provider_doors import removed_cflags

COMPILE_WRITER, LINK_WRITER = CMAKE_WRITERS
TorchWriter = Callable[..., None]


def write(
    name: str,
    torch_writer: TorchWriter,
    builder: Any,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> None:
    """What the writer ``name`` does, ``torch_writer`` being torch's (or what was there)."""
    if name == COMPILE_WRITER:
        _write_compile(torch_writer, builder, args, kwargs)
    elif name == LINK_WRITER:
        _write_link(torch_writer, builder, args, kwargs)
    else:  # a writer this package does not know: torch's, untouched
        torch_writer(builder, *args, **kwargs)


def served(
    device_type: object, aot_mode: bool, compile_only: bool
) -> tuple[DeviceOptionsSource, CppDeviceOptions] | None:
    """The source that serves ``device_type`` through the package's door, and what of its
    options torch's own defaults lack; None for any other device (torch's file is then
    written)."""
    if not isinstance(device_type, str) or not DEVICE_NAME.fullmatch(device_type):
        return None
    if device_type in RESERVED_DEVICE_TYPES:
        return None
    found = source_of(device_type)
    if found is None or not found.source.guaranteed:
        return None
    options = get_cpp_device_options(device_type, aot_mode, compile_only)
    defaults = answer_below(device_type, aot_mode, compile_only)
    # Only what the device adds over torch's defaults: torch's writer puts those in already.
    own = own_options(options, defaults)
    removed = removed_cflags(device_type)  # the removed_cflags door: not in the project either
    if removed:
        own = own._replace(cflags=[flag for flag in own.cflags if flag not in removed])
    return found.source, own


def standalone_branch() -> bool:
    """Whether torch's compile writer takes its ``compile_standalone`` branch (no libtorch):
    the condition it tests (torch 2.13-2.15's ``CppBuilder.save_compile_cmd_to_cmake``:
    ``config.aot_inductor.link_libtorch or config.test_configs.use_libtorch``)."""
    from torch._inductor import config

    # A torch without the branch (nor these configs) links libtorch.
    link_libtorch = getattr(config.aot_inductor, "link_libtorch", True)
    test_configs = getattr(config, "test_configs", None)
    return not (link_libtorch or getattr(test_configs, "use_libtorch", False))


def _write_compile(
    torch_writer: TorchWriter, builder: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> None:
    # torch 2.13-2.15: save_compile_cmd_to_cmake(self, cmake_path, device_type). The builder's
    # private _build_option (the CppTorchDeviceOptions it builds with) and _target_name are
    # what torch's own writers read, on the same releases.
    cmake_path, device_type = _bound(args, kwargs, ("cmake_path", "device_type"))
    options = builder._build_option
    device = served(device_type, options.get_aot_mode(), options.get_compile_only())
    if device is not None:  # computed first: a refused value leaves no half-written project
        source, own = device
        section = compile_section(builder._target_name, source, own, standalone=standalone_branch())
    torch_writer(builder, *args, **kwargs)
    if device is not None:
        with open(cmake_path, "a") as project:
            project.write(section)


def _write_link(
    torch_writer: TorchWriter, builder: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> None:
    # torch 2.13-2.15: save_link_cmd_to_cmake(self, cmake_path) takes no device: it is read
    # back from the section the compile writer appended to the same file.
    (cmake_path,) = _bound(args, kwargs, ("cmake_path",))
    try:
        with open(cmake_path) as project:
            device_type = device_of_project(project.read())
    except OSError:  # torch's writer says what is wrong with the path
        device_type = None
    options = builder._build_option
    device = served(device_type, options.get_aot_mode(), options.get_compile_only())
    if device is None:
        torch_writer(builder, *args, **kwargs)
        return
    source, own = device
    section = link_section(
        builder._target_name, source, own, options.get_ldflags(), options.get_libraries()
    )
    with open(cmake_path, "a") as project:
        project.write(section)


def _bound(args: Sequence[Any], kwargs: Mapping[str, Any], names: Sequence[str]) -> list[Any]:
    """The writer's arguments ``names``, given by position or keyword (None: not given)."""
    return [
        args[index] if index < len(args) else kwargs.get(name) for index, name in enumerate(names)
    ]
