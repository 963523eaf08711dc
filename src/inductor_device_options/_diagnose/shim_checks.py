"""The check ``c_shim``: the C shim functions Inductor's generated code calls are declared
in what that code includes, preprocessed with the device's options. Those are the functions
for common extern kernels (``mm``, ``addmm``, ``bmm``: what a ``Linear`` and a batched
matrix product become), and for the ops the provider's ``aoti_shim_ops`` declares.

Preprocessed (``-E``), not compiled: a declaration is in the preprocessed text or it is not,
in a fraction of a second; compiling would take seconds and tell nothing more of the names.
"""

from __future__ import annotations

import re

from .._lookup.provider_attributes import SHIM_OPS_ATTRIBUTE, shim_ops_of
from .._options.problems import Problem
from .checks import Check, Context, check
from .generated_code import GeneratedCode, generated_code
from .hook_checks import FIX_CODEGEN
from .inductor_headers import included_names
from .probe import Progress, run_probe_command
from .text import error_line, located, relevant_lines

NAME = "c_shim"

#: What makes each extern kernel, for people.
MADE_BY = {
    "mm": "a Linear without bias, a matrix product",
    "addmm": "a Linear with bias",
    "bmm": "a batched matrix product (torch.bmm, attention)",
}


def check_c_shim(context: Context, progress: Progress | None) -> Check:
    """The C shim functions of ``mm``, ``addmm`` and ``bmm`` on the device, declared in
    what the device's generated code includes."""
    if context.unusable():
        return context.skipped(NAME)
    device = context.device_type
    if context.asked is not None and context.asked.error is not None:
        return check(NAME, "skip", "skipped: Inductor cannot create the device's codegen")
    try:
        code = generated_code(device, context.aot_mode, _declared_ops(context))
    except Exception as error:
        return check(
            NAME,
            "fail",
            f"asking the device's wrapper codegen raised {type(error).__name__}",
            Problem(
                f"what Inductor's generated code for {device!r} includes cannot be known: "
                f"{error_line(error)}{located(error)}",
                FIX_CODEGEN,
            ),
        )
    if code is None:
        return check(
            NAME,
            "skip",
            f"skipped: no C++ wrapper codegen is registered for {device!r} in this process: "
            "what the generated code includes is its codegen's; `inductor-device-options "
            f"doctor {device} --compile` compiles extern kernels",
        )
    if not context.passed("headers"):
        return check(NAME, "skip", "skipped: the device's headers are not found")
    return _judged(context, code, progress)


def _declared_ops(context: Context) -> frozenset[str]:
    """The provider's ``aoti_shim_ops``; none where they cannot be read (``provider_doors``
    says why)."""
    if context.provider is None:
        return frozenset()
    try:
        return shim_ops_of(context.provider, context.device_type, context.source.description)
    except Exception:
        return frozenset()


def _judged(context: Context, code: GeneratedCode, progress: Progress | None) -> Check:
    precompiled = context.asked.precompiled_header if context.asked is not None else None
    source = context.work / "inductor_c_shim.cpp"
    source.write_text(
        "// Written by `inductor-device-options`: what Inductor's generated code for "
        f"{context.device_type} begins with ({code.codegen}).\n"
        + (f"#include <{precompiled}>\n" if precompiled else "")
        + code.header
    )
    target, output = run_probe_command(
        context.device_type, context.aot_mode, source, ["-E"], progress
    )
    if output is not None:
        return check(
            NAME,
            "fail",
            "the generated code's header cannot be preprocessed",
            Problem(
                f"the preprocessor could not include what {code.codegen} writes at the top "
                "of the generated code, with the device's options",
                context.fix_sdk,
                relevant_lines(output),
            ),
        )
    preprocessed = target.read_text(errors="replace")
    missing = {
        kernel: function
        for kernel, function in code.shim_functions.items()
        if not _called_as_function(function, preprocessed)
    }
    functions = list(code.shim_functions.values())
    if not missing:
        return check(NAME, "pass", f"{', '.join(functions)} declared")
    summary = f"{len(missing)} of {len(functions)} not declared: {', '.join(missing.values())}"
    return check(NAME, "fail", summary, _missing(context, code, missing))


def _missing(context: Context, code: GeneratedCode, missing: dict[str, str]) -> Problem:
    device = context.device_type
    names = included_names(code.header)
    own = [name for name in names if device in name.rpartition("/")[2]] or list(names[-1:])
    where = f"{own[-1]}, which the generated code includes" if own else "a header it includes"
    calls = "; ".join(f"{function} for {_made_by(kernel)}" for kernel, function in missing.items())
    cause = (
        f"Inductor's generated code for {device!r} calls {calls}, and nothing it includes "
        f"declares {'it' if len(missing) == 1 else 'them'}: every "
        f"{'AOTInductor' if context.aot_mode else 'cpp_wrapper'} build of such a model fails "
        "in g++ ('... was not declared in this scope')"
    )
    extern = [kernel for kernel in missing if kernel in MADE_BY]
    declared = [kernel for kernel in missing if kernel not in MADE_BY]
    torch_names = ", ".join(f"aoti_torch_cpu_{kernel}_out" for kernel in extern)
    fixes = []
    if extern:
        fixes.append(
            f"define {', '.join(missing[kernel] for kernel in extern)} in the device SDK's C "
            f"shim, included from {where}, with the signature of torch's {torch_names} "
            "(torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h); a host-memory device "
            "can call those on CPU tensors over the same memory"
        )
    if declared:
        fixes.append(
            f"declare {', '.join(missing[op] for op in declared)} in the device SDK's C shim, "
            f"included from {where}, or remove {', '.join(declared)} from the provider's "
            f"{SHIM_OPS_ATTRIBUTE}"
        )
    fix = "; ".join(fixes)
    return Problem(cause, fix, instances=tuple(missing.values()) if len(missing) > 1 else ())


def _called_as_function(name: str, text: str) -> bool:
    """``name(`` in ``text``, ``name`` a whole word. The literal first: a pattern that starts
    with ``\\b`` is tried at every position of the preprocessed text (0.2 s a name)."""
    for match in re.finditer(re.escape(name) + r"\s*\(", text):
        before = text[match.start() - 1 : match.start()]
        if not (before.isalnum() or before == "_"):
            return True
    return False


def _made_by(kernel: str) -> str:
    return MADE_BY.get(kernel) or f"{kernel}, declared in the provider's {SHIM_OPS_ATTRIBUTE}"
