"""The check ``aoti_weights`` (with ``--aot``): whether torch's AOTInductor runtime loads a
model whose weights are the device's, packaged in the model's ``.so`` as
``aoti_compile_and_package`` packages them by default.

torch's AOTInductor runtime creates a model container for one of its own devices only
(``parse_device_str`` in ``aoti_runtime/model_base.h``: cpu, cuda, xpu, mps): a
PrivateUse1 device's model runner creates it as another, "cpu" for a host-memory device.
Where that header also refuses a packaged constant whose device type is neither the
container's nor the CPU ("Mixed-device constants are only supported when the secondary
device is CPU", torch 2.13 and 2.15; torch 2.6 has no such check and loads the weights as
the container's device), a model with parameters on the device fails to load. The way
round: weights not packaged (``aot_inductor.package_constants_in_so=False``) and given to
the loaded model, used where they are (``load_constants(..., user_managed=True)``).
"""

from __future__ import annotations

import os

from .._lookup.device_types import RESERVED_DEVICE_TYPES
from .._options.problems import Problem
from .checks import Check, Context, check

NAME = "aoti_weights"
#: What torch's AOTInductor runtime says when it refuses a constant (model_base.h).
MIXED_DEVICE = "Mixed-device constants are only supported when the secondary device is CPU"
RUNTIME_HEADER = "torch/csrc/inductor/aoti_runtime/model_base.h"
#: The way round the limit, as a user writes it.
WORKAROUND = (
    "compile with inductor_configs={'aot_inductor.package_constants_in_so': False}, then give "
    "the loaded model its weights on the device: compiled.load_constants(weights, "
    "check_full_update=True, user_managed=True), weights being the model's state_dict() "
    "by name (compiled.get_constant_fqns() lists them)"
)


def refusing_runtime_header() -> str | None:
    """The running torch's AOTInductor runtime header that refuses constants of another
    device than the container's and the CPU; None where this torch has no such check."""
    import torch

    path = os.path.join(os.path.dirname(torch.__file__), "include", RUNTIME_HEADER)
    try:
        with open(path, encoding="utf-8", errors="replace") as header:
            text = header.read()
    except OSError:
        return None
    # The message is split across C++ string literals: its first words are enough.
    return path if "Mixed-device constants are only supported" in text else None


def _codegen_refuses() -> bool:
    """torch's CppWrapperCpu refuses, at build, a constant on another device than the one
    the wrapper reports and the CPU (torch 2.13 on)."""
    import inspect

    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    # torch 2.13-2.15's CppWrapperCpu.codegen_model_constructor raises MIXED_DEVICE (2.6's
    # never does): read from its source, as no flag says it.
    constructor = getattr(CppWrapperCpu, "codegen_model_constructor", None)
    try:
        return constructor is not None and MIXED_DEVICE in inspect.getsource(constructor)
    except (OSError, TypeError):
        return False


def check_aoti_weights(context: Context) -> Check:
    """Whether a model with parameters on the device loads with the weights in its .so."""
    import torch
    from torch._inductor import config

    device, version = context.device_type, torch.__version__
    if device in RESERVED_DEVICE_TYPES:
        return check(NAME, "pass", f"{device!r} is one of the devices torch's runtime knows")
    asked = context.asked
    if asked is not None and asked.reported not in (None, device) and _codegen_refuses():
        return check(
            NAME,
            "warn",
            f"a model with parameters does not build: the codegen reports {asked.reported!r}",
            Problem(
                f"{asked.codegen} reports {asked.reported!r}, and torch {version}'s "
                "CppWrapperCpu refuses, as it builds an AOTInductor model, a constant on "
                f"another device than the one it reports and the CPU: a model with "
                f"parameters on {device!r} does not build ('{MIXED_DEVICE}. Model device is "
                f"{asked.reported!r}, but constant ...'), however its weights are packaged",
                f"in {asked.codegen}.__init__, set self.device = {device!r} before "
                "super().__init__()",
            ),
        )
    header = refusing_runtime_header()
    if header is None:
        return check(
            NAME,
            "pass",
            f"torch {version}'s AOTInductor runtime loads weights packaged in the .so as the "
            "model container's device (it has no mixed-device check)",
        )
    if not config.aot_inductor.package_constants_in_so:
        return check(
            NAME,
            "pass",
            "weights are not packaged in the .so (aot_inductor.package_constants_in_so=False "
            "here): give them with load_constants(..., user_managed=True)",
        )
    lifted = "" if version.startswith("2.15") else "; torch 2.15 keeps the check"
    cause = (
        f"a PrivateUse1 device's AOTInductor model runs in a container created as one of "
        "torch's own devices (cpu, cuda, xpu, mps), and torch "
        f"{version}'s runtime ({RUNTIME_HEADER}) refuses a packaged constant of another "
        f"device type than the container's or the CPU: a package whose weights are on "
        f"{device!r}, as aoti_compile_and_package packages them by default "
        "(aot_inductor.package_constants_in_so=True), fails to load with "
        f"'{MIXED_DEVICE}'{lifted}"
    )
    return check(
        NAME,
        "warn",
        f"a model with parameters fails to load with its weights in the .so (torch {version})",
        Problem(
            cause,
            f"{WORKAROUND}; `inductor-device-options doctor {device} --aot "
            "--compile` loads a model with parameters",
        ),
    )
