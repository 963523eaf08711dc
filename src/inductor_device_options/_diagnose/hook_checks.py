"""The checks of what stands between the provider and Inductor: ``hook`` (Inductor's real
function gives the device's options back) and ``device_asked`` (the device's builds ask
the builder for the device itself)."""

from __future__ import annotations

from .._hook.asked import not_asked_fix
from .._hook.lookups import get_cpp_device_options, package_cpp_device_options
from .._options.model import FIELDS, CppDeviceOptions
from .._options.problems import Problem
from .._torch_names import CPP_BUILDER
from ..introspection import hook_state
from .asked import asked_device_type
from .checks import Check, Context, check
from .legacy_door import LegacyDoor, found_legacy_door
from .text import error_line, located

#: The fix for a wrapper codegen class that fails when asked.
FIX_CODEGEN = (
    "fix the backend's wrapper codegen class (registered with "
    "torch._inductor.codegen.common.register_backend_for_device)"
)


def check_hook(context: Context) -> Check:
    """Ask Inductor's real function and see that the device's options come back."""
    if context.source.kind == "torch":
        return check("hook", "pass", hook_state().describe())
    missing = _missing_options(context)
    state = hook_state()  # after the lookup: it says how each adopted function behaved
    if not missing and state.replaced_by is None:
        return check("hook", "pass", state.describe())
    if state.replaced_by is not None:
        cause = (
            f"{state.replaced_by} was written to {CPP_BUILDER}.__dict__ directly, past the "
            "hook, so Inductor no longer asks this package"
        )
        fix = (
            f"assign the function as an attribute ({CPP_BUILDER}.get_cpp_torch_device_options "
            "= ...), which the hook adopts, or call inductor_device_options.arm() after writing it"
        )
    else:
        wrappers = [f.description for f in state.adopted if f.behaviour != "replacement"]
        cause = "a function adopted after the hook dropped them from what it got: " + (
            ", ".join(wrappers) or "none seen wrapping the hook"
        )
        fix = "make that function keep the options it receives and only add its own"
    summary = (
        f"{len(missing)} of the provider's options do not reach Inductor"
        if missing
        else f"{CPP_BUILDER}.get_cpp_torch_device_options was written past the hook"
    )
    detail = f"missing: {', '.join(missing[:5])}; " if missing else ""
    return check("hook", "fail", summary, Problem(detail + cause, fix))


def _missing_options(context: Context) -> list[str]:
    """``field value`` of each option the device's source gives that Inductor does not get."""
    try:
        own = package_cpp_device_options(context.device_type, context.aot_mode)
        if own is None and context.source.kind == "device interface":
            own = _interface_answer(context)
        received = get_cpp_device_options(context.device_type, context.aot_mode)
    except KeyboardInterrupt:
        raise
    except BaseException:  # the options check reports why (SystemExit included)
        return []
    return [
        f"{field} {value}"
        for field, values, got in zip(
            FIELDS, own or CppDeviceOptions.empty(), received, strict=True
        )
        for value in values
        if value not in got
    ]


def _interface_answer(context: Context) -> CppDeviceOptions | None:
    """What the device's DeviceInterface answers, asked directly (None: no answer)."""
    method = getattr(context.serving, "get_cpp_device_options", None)
    answer = method(context.aot_mode, False) if method is not None else None
    return None if answer is None else CppDeviceOptions.of(answer)


def check_device_asked(context: Context) -> Check:
    """Which device type the builder gets for the device's cpp_wrapper (or AOTInductor)
    builds: the device's options reach them only if it is the device itself."""
    name, device = "device_asked", context.device_type
    try:
        asked = asked_device_type(device, context.aot_mode)
    except Exception as error:
        summary = f"finding the device type asked raised {type(error).__name__}"
        return check(
            name, "fail", summary, Problem(f"{error_line(error)}{located(error)}", FIX_CODEGEN)
        )
    context.asked = asked
    if asked.error is not None:
        assert asked.codegen is not None  # only creating a codegen raises
        return check(
            name,
            "fail",
            f"creating {asked.codegen} raised {asked.error.partition(':')[0]}",
            Problem(
                f"{asked.reason}: Inductor creates it the same way for every cpp_wrapper "
                f"and AOTInductor build of {device!r}, which would fail there",
                f"fix {asked.codegen} or register what its __init__ needs (CppWrapperCpu "
                "asks torch._inductor.codegen.common.get_device_op_overrides(self.device): "
                "register_device_op_overrides); if it needs a real graph, "
                f"`inductor-device-options doctor {device} --compile` judges",
            ),
        )
    if asked.asked is None:
        return check(name, "skip", f"skipped: {asked.reason}")
    if not asked.mismatch:
        return check(name, "pass", asked.describe())
    assert asked.codegen is not None  # only a codegen reports another device
    door = found_legacy_door(context.device_type, asked.asked, context.aot_mode)
    if door is not None:
        return check(
            name,
            "warn",
            f"cpp_wrapper builds ask for {asked.asked!r}, answered with {device}'s options",
            legacy_door_problem(device, asked.reason, door, asked.codegen),
        )
    return check(
        name,
        "fail",
        f"cpp_wrapper builds ask for {asked.asked!r}, not {device!r}",
        Problem(
            f"{asked.reason}, and Inductor builds the C++ wrapper of a {device!r} graph with "
            f"CppTorchDeviceOptions(device_type={asked.asked!r}): the provider's options for "
            f"{device!r} are never consulted",
            not_asked_fix(device, asked.codegen),
        ),
    )


def legacy_door_problem(device: str, reason: str, door: LegacyDoor, codegen: str) -> Problem:
    """The warning of a legacy door: what it costs, and the way out of it."""
    return Problem(
        f"{reason}, and Inductor builds the C++ wrapper of a {device!r} graph with "
        f"CppTorchDeviceOptions(device_type={door.asked!r}), which {door.answered_by} answers "
        f"with {device}'s options ({door.few()}): the builds work, and every {door.asked!r} "
        f"build in the process gets {device}'s flags too, and the cache keys they make "
        "(kernels, precompiled headers)",
        f"migrate: give {device!r} its options through its own door "
        f"(inductor_device_options.register_cpp_device_options({device!r}, ...) or an entry "
        f"point); {not_asked_fix(device, codegen)}; then stop answering {door.asked!r}",
    )
