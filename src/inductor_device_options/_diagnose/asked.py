"""Which device type a device's C++ builds ask the builder for, read off the wrapper
codegen registered in this process, and the header torch's own precompile step includes
for it: for ``doctor``, ``list`` and ``show`` (``_hook/asked`` warns at run time).

A cpp_wrapper build asks for the device its C++ wrapper codegen reports
(``CppWrapperCodeCache.load_pybinding(device_type=self.device)``); AOTInductor asks for the
graph's device (``AotCodeCompiler.compile(device_type=graph.device_type)``).
"""

from __future__ import annotations

from typing import NamedTuple

from .._lookup.registry import describe_callable


class AskedDevice(NamedTuple):
    """What a device's C++ builds ask the builder for.

    ``asked``: the device type, None when it cannot be told in this process (``reason``
    says why). ``codegen``: the device's registered C++ wrapper codegen (module.qualname),
    None where none is registered. ``reported``: the device that codegen reports (what
    torch 2.6's generated code names its C shim after, in both modes), None where unknown.
    ``error``: creating the codegen as Inductor does raised this, so would every
    cpp_wrapper or AOTInductor build. ``precompiled_header``: the header torch's own
    precompile step includes for the device asked, None where this torch precompiles none.
    """

    device_type: str
    aot_mode: bool
    asked: str | None
    codegen: str | None
    reason: str
    precompiled_header: str | None
    reported: str | None = None
    error: str | None = None

    @property
    def mismatch(self) -> bool:
        return self.asked is not None and self.asked != self.device_type

    def describe(self) -> str:
        mode = "AOTInductor" if self.aot_mode else "cpp_wrapper"
        if self.asked is None:
            return f"{mode} builds: not known ({self.reason})"
        return f"{mode} builds ask for {self.asked!r} ({self.reason})"


def asked_device_type(device_type: str, aot_mode: bool) -> AskedDevice:
    """Which device type ``device_type``'s cpp_wrapper (or AOTInductor) builds ask for,
    from the codegen registered in this process (imports ``torch._inductor``)."""
    from torch._inductor.codegen.common import get_wrapper_codegen_for_device

    codegen = get_wrapper_codegen_for_device(device_type, cpp_wrapper=True)
    if codegen is None:
        # The backend is not set up here: what torch precompiles for the device is the
        # backend's to change (torch_npu redirects it), so it is not claimed either.
        if aot_mode:
            return AskedDevice(
                device_type,
                True,
                device_type,
                None,
                "AOTInductor asks for the graph's device",
                None,
            )
        return AskedDevice(
            device_type,
            False,
            None,
            None,
            f"no C++ wrapper codegen is registered for {device_type!r} in this process: "
            "its backend is not imported",
            None,
        )
    name = describe_callable(codegen)
    try:
        reported = _reported_device(codegen)
    except Exception as error:
        return AskedDevice(
            device_type,
            aot_mode,
            None,
            name,
            f"creating {name} as Inductor does, in a stand-in graph, raised "
            f"{type(error).__name__}: {error}",
            None,
            error=f"{type(error).__name__}: {error}",
        )
    asked = device_type if aot_mode else reported
    if aot_mode:
        reason = "AOTInductor asks for the graph's device"
    else:
        default = (
            " (CppWrapperCpu's default: it never sets self.device)" if reported == "cpu" else ""
        )
        reason = f"{name} reports {reported!r}{default}"
    return AskedDevice(
        device_type,
        aot_mode,
        asked,
        name,
        reason,
        precompiled_header(asked, aot_mode),
        reported,
    )


def _reported_device(codegen: type) -> str:
    """The device an instance of ``codegen`` reports, created as Inductor creates it, in
    a stand-in graph of its own."""
    from .generated_code import stand_in_wrapper

    with stand_in_wrapper(codegen) as wrapper:
        device = getattr(wrapper, "device", "cpu")
    return device if isinstance(device, str) else str(device)


def precompiled_header(device_type: str, aot_mode: bool) -> str | None:
    """The header torch's precompile step includes for builds asking for ``device_type``
    (asked of torch's own function), None where this torch precompiles none."""
    from torch._inductor import codecache, config

    # torch 2.13-2.15's private codecache._get_cpp_wrapper_header, behind the configs
    # aot_inductor.precompile_headers and cpp_cache_precompile_headers; torch 2.6 has
    # neither and precompiles nothing.
    header_of = getattr(codecache, "_get_cpp_wrapper_header", None)
    if header_of is None:
        return None
    if aot_mode:
        enabled = getattr(config.aot_inductor, "precompile_headers", False)
    else:
        enabled = getattr(config, "cpp_cache_precompile_headers", False)
    if not enabled:
        return None
    header: str = header_of(device_type, aot_mode=aot_mode)
    return header
