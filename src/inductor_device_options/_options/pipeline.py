"""The validation pipeline: what Inductor gets from a provider's result, step by step.

:func:`finish` runs the steps in this order, and the first refusal is raised as an
``InvalidCppDeviceOptionsError`` naming the device, the provider, the field, the value and,
for a value the provider did not write as such, where it came from:

1. **snapshot** (``rules.snapshot``): 7 sequences of ``str``, each read once, as plain lists
   of plain ``str``;
2. **custom_op_libs**: ``config.aot_inductor.custom_op_libs`` appended to ``libraries``, as
   torch's own function does;
3. **rules** (``rules.rule_problems``): what must hold whatever torch does, each value once;
4. **fresh** (``freshness.fresh_options``): real paths and the SDK identity; the rules then
   check only the values this step made new (a real path that differs, the identity);
5. **rendering** (``rendering``): the arguments the running ``CppBuilder`` renders, split as
   Inductor splits them, are exactly the ones meant;
6. **tools** (``tools``): what g++ hands ld, as and the preprocessor is what was meant;
7. **compiler** (``compiler``): the compiler takes each definition and flag it is asked about.

:func:`finished` is the pipeline behind a lookup: it caches what it finished, keyed by the
exact values, so that a provider returning the same lists is not checked again.
:func:`final_problems` runs steps 3 and 5-7 on options already final (doctor's findings,
and torch's doors when a device is guaranteed); :func:`check_value` on one value.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType

from .. import _state
from .._errors import InvalidCppDeviceOptionsError
from .._torch_names import CPP_BUILDER
from .freshness import fresh_options
from .model import FIELDS, CppDeviceOptions
from .problems import Place, Problem
from .rules import invalid_options_error, rule_problems, snapshot

_CUSTOM_OP_LIBS = "config.aot_inductor.custom_op_libs"
_SEQUENCE_TYPES = (list, tuple)

# Providers usually return the same lists every time: what was finished once is reused,
# keyed by the exact values (Inductor asks once per build) and by the CppBuilder they
# were checked against. They carry the SDK identity, so each compile finishes them anew
# (_state.PER_COMPILE); _state.reset() clears it too.
_finished_options: _state.BoundedCache[tuple[object, ...], CppDeviceOptions] = _state.cache(
    256, _state.PER_COMPILE
)


def finished(
    raw: object, device_type: str, description: str, own_identity: str | None = None
) -> CppDeviceOptions:
    """:func:`finish` with the running ``custom_op_libs``, cached (shared: copy it)."""
    custom_op_libs = _custom_op_libs()
    key = _cache_key(raw, device_type, (custom_op_libs, own_identity))
    if key is not None:
        cached = _finished_options.get(key)
        if cached is not None:
            return cached
        raw = key[2:9]  # the values just read: what is cached is what is validated
    options = finish(
        raw,
        device_type=device_type,
        description=description,
        custom_op_libs=custom_op_libs,
        own_identity=own_identity,
    )
    if key is not None:
        _finished_options.put(key, options)
    return options


def _cache_key(raw: object, device_type: str, extra: object) -> tuple[object, ...] | None:
    """(CppBuilder, device, the 7 lists as tuples, ``extra``: what else the result depends
    on), for plain lists and tuples only; a hit gives the options finished from values
    equal to these."""
    if not isinstance(raw, _SEQUENCE_TYPES) or len(raw) != len(FIELDS):
        return None
    for values in raw:
        if type(values) not in _SEQUENCE_TYPES:
            return None
    # Checked against that CppBuilder (a reloaded cpp_builder may render otherwise).
    builder = getattr(sys.modules.get(CPP_BUILDER), "CppBuilder", None)
    key = (builder, device_type, *map(tuple, raw), extra)
    try:
        hash(key)
    except TypeError:  # unhashable values: the snapshot says what is wrong
        return None
    return key


def finish(
    raw: object,
    *,
    device_type: str,
    description: str,
    custom_op_libs: Sequence[object] = (),
    own_identity: str | None = None,
) -> CppDeviceOptions:
    """What Inductor gets from a provider's result: the steps of this module, in order.
    ``own_identity``: the provider's own SDK identity, which joins the device's.

    Raises ``InvalidCppDeviceOptionsError`` at the first step that refuses a value.
    """
    provided = snapshot(raw, device_type=device_type, description=description)
    provided = _with_custom_op_libs(provided, custom_op_libs, device_type, description)
    _raise_first(
        rule_problems(provided), provided, provided, device_type, description, custom_op_libs
    )
    final = fresh_options(provided, own_identity)
    problems = rule_problems(final, checked=provided) or delivery_problems(final)
    _raise_first(problems, provided, final, device_type, description, custom_op_libs)
    return final


def _with_custom_op_libs(
    provided: CppDeviceOptions, custom_op_libs: Sequence[object], device_type: str, description: str
) -> CppDeviceOptions:
    libraries = list(provided.libraries)
    for index, library in enumerate(custom_op_libs):
        if not isinstance(library, str):
            raise InvalidCppDeviceOptionsError(
                f"C++ options for device {device_type!r}: {_CUSTOM_OP_LIBS}[{index}] is a "
                f"{type(library).__name__} ({library!r}), not a str",
                device_type=device_type,
                description=description,
                field="libraries",
                value=library,
            )
        if library not in libraries:
            libraries.append(str.__str__(library))
    return provided._replace(libraries=libraries)


def final_problems(options: CppDeviceOptions) -> list[Problem]:
    """Every value of the final ``options`` that breaks a rule, would not reach g++, or a
    tool behind it, as meant, or that the compiler rejects (steps 3, 5, 6 and 7)."""
    return rule_problems(options) or delivery_problems(options)


def check_value(field: str, value: str) -> str | None:
    """Why ``value`` alone in ``field`` would not reach g++ (or a tool behind it) as meant,
    or would be rejected by the compiler; None when it would reach it and be taken.

    The package's validation, on one value, for a provider that wants to say more than the
    validation error would (the Ascend provider names the install a bad dir came from). It
    loads the validation pipeline, which learns from the running torch.

    Args:
        field: one of the seven list names, ``"include_dirs"`` say.
        value: one value of that list.

    Returns:
        The cause, worded to follow ``field[i] = 'value'``, or None.

    Example:
        >>> import inductor_device_options as ido
        >>> ido.check_value("include_dirs", "/opt/acme/include") is None
        True
        >>> ido.check_value("include_dirs", "relative/include").split(":")[0]
        'is relative'
    """
    alone = CppDeviceOptions(*([value] if name == field else [] for name in FIELDS))
    problems = final_problems(alone)
    return problems[0].cause if problems else None


def delivery_problems(options: CppDeviceOptions) -> list[Problem]:
    """Steps 5-7 on options that meet the rules: this torch's rendering, then what ld and
    the other tools receive, then what the compiler takes."""
    # Learns from torch: imported only when there is something to check.
    from .compiler import compiler_problems
    from .rendering import final_arguments, rendering_problems
    from .tools import tool_problems

    problems = rendering_problems(options)
    if problems:
        return problems
    arguments = final_arguments(options)
    return tool_problems(arguments, options) or compiler_problems(arguments, options)


def _raise_first(
    problems: list[Problem],
    provided: CppDeviceOptions,
    final: CppDeviceOptions,
    device_type: str,
    description: str,
    custom_op_libs: Sequence[object],
) -> None:
    if not problems:
        return
    problem = problems[0]
    assert problem.place is not None, "every step of the pipeline finds problems of values"
    shown, value = where_from(problem.place, provided, final, custom_op_libs)
    raise invalid_options_error(
        problem, device_type=device_type, description=description, shown=shown, value=value
    )


def where_from(
    place: Place,
    provided: CppDeviceOptions,
    final: CppDeviceOptions,
    custom_op_libs: Sequence[object] = (),
) -> tuple[str, str]:
    """How to show a final value in an error, and the value the provider wrote: a real
    path is shown with the dir it resolves, a custom op library says so."""
    field, position, value = place
    if field in ("include_dirs", "libraries_dirs"):
        original = getattr(provided, field)[position]
        if original != getattr(final, field)[position]:
            return f"{original!r} (real path {value!r})", original
    if field == "libraries" and value in custom_op_libs:
        return f"{value!r} (from {_CUSTOM_OP_LIBS})", value
    return repr(value), value


def _custom_op_libs() -> tuple[str, ...]:
    # torch 2.13-2.15's get_cpp_torch_device_options appends these for every device (2.6 has
    # no such config); a replaced function used to drop them.
    return tuple(getattr(_inductor_config().aot_inductor, "custom_op_libs", None) or ())


@_state.cached(1)
def _inductor_config() -> ModuleType:
    # Imported once: an import statement costs about 1 µs on every lookup.
    from torch._inductor import config

    return config
