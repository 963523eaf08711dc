"""The Ascend provider's errors: what a user of ``npu`` catches when CANN or torch_npu
cannot give Inductor its options.

Each names the device (``"npu"``) and the provider, and carries what to do as ``fix``
(:class:`~inductor_device_options.CppDeviceOptionsError` ends the message with it).
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import CppDeviceOptionsError

#: How errors and ``doctor`` name this provider.
DESCRIPTION = "inductor_device_options.ascend.cpp_device_options"

SET_ENV_HINT = (
    "source CANN's environment script, e.g. `source /usr/local/Ascend/cann/set_env.sh` "
    "(CANN 8.5 and later) or `source /usr/local/Ascend/ascend-toolkit/set_env.sh` "
    "(earlier releases), or set ASCEND_HOME_PATH to the CANN install directory"
)


class AscendOptionsError(CppDeviceOptionsError):
    """The Ascend ``npu`` compile options cannot be produced.

    The base class of the Ascend provider's errors, a
    :class:`~inductor_device_options.CppDeviceOptionsError` for device ``"npu"`` whose
    ``provider`` is ``inductor_device_options.ascend.cpp_device_options``. Its ``fix`` says
    what to do (the message ends with it), and ``inductor-device-options doctor`` shows it
    as the fix.

    Example:
        >>> from inductor_device_options import ascend
        >>> issubclass(ascend.CannNotFoundError, ascend.AscendOptionsError)
        True
    """


def _not_found_message(missing: str, tried: Sequence[tuple[str, str]]) -> str:
    return "\n".join(
        [
            f"Could not find {missing} for the 'npu' device.",
            "Tried:",
            *(f"  - {where}: {why}" for where, why in tried),
        ]
    )


class CannNotFoundError(AscendOptionsError):
    """No usable CANN toolkit was found; the message lists every place tried.

    Args:
        tried: ``(where, why)`` for each place tried, in order.
        broken_links: ``latest``-style links that loop or lead nowhere; the fix then says
            how to re-point them.

    Attributes:
        tried: As given.

    Example:
        >>> import os
        >>> from unittest import mock
        >>> from inductor_device_options import ascend
        >>> with mock.patch.dict(os.environ, clear=True):  # no CANN variable set
        ...     try:
        ...         ascend.find_cann(default_roots=())
        ...     except ascend.CannNotFoundError as error:
        ...         print(error.tried)
        ...         print(error.fix[:39])
        (('ASCEND_HOME_PATH', 'not set'), ('ASCEND_TOOLKIT_HOME', 'not set'))
        source CANN's environment script, e.g.
    """

    def __init__(self, tried: Sequence[tuple[str, str]], broken_links: Sequence[str] = ()):
        self.tried: tuple[tuple[str, str], ...] = tuple(tried)
        fix = SET_ENV_HINT
        if broken_links:
            links = ", ".join(broken_links)
            fix = (
                f"re-point {links} at the installed CANN release "
                f"(`ln -sfn <release directory> {broken_links[0]}`), or {fix}"
            )
        message = _not_found_message(
            "the Ascend CANN toolkit needed to compile Inductor kernels", self.tried
        )
        super().__init__(message, device_type="npu", description=DESCRIPTION, fix=f"{fix}.")


class TorchNpuNotFoundError(AscendOptionsError):
    """torch_npu (or its ``libtorch_npu.so``) was not found; lists every place tried.

    Args:
        tried: ``(where, why)`` for each place tried, in order.
        fix: What to do (the error's ``fix``).

    Attributes:
        tried: As given.

    Example:
        >>> import os
        >>> from unittest import mock
        >>> from inductor_device_options import ascend
        >>> with mock.patch.dict(os.environ, PYTORCH_NPU_INSTALL_PATH="/nonexistent/torch_npu"):
        ...     try:
        ...         ascend.find_torch_npu()
        ...     except ascend.TorchNpuNotFoundError as error:
        ...         print(error.tried[0])
        ('PYTORCH_NPU_INSTALL_PATH=/nonexistent/torch_npu', 'is not a directory')
    """

    def __init__(self, tried: Sequence[tuple[str, str]], fix: str) -> None:
        self.tried: tuple[tuple[str, str], ...] = tuple(tried)
        message = _not_found_message(
            "torch_npu, which Inductor needs to compile kernels", self.tried
        )
        super().__init__(message, device_type="npu", description=DESCRIPTION, fix=fix)


class CannPathError(AscendOptionsError):
    """CANN or torch_npu is installed where Inductor cannot pass its paths to g++.

    A space in a library dir (Inductor does not quote ``-L``), a quote or a newline
    anywhere: the value would not reach g++ as one argument. A symlink with a plain name
    does not help, since Inductor compiles with real paths.

    Args:
        what: The install at fault (``"The Ascend CANN toolkit"`` or ``"torch_npu"``).
        where: Where it is installed and how it was found.
        value: The include or library dir that g++ cannot be given.
        problem: Why, as the running torch renders that field.

    Attributes:
        value: As given.

    Example:
        >>> from inductor_device_options import ascend
        >>> error = ascend.CannPathError(
        ...     "torch_npu", "'/opt/my env/torch_npu'", "/opt/my env/torch_npu/lib", "is split"
        ... )
        >>> error.value, error.device_type
        ('/opt/my env/torch_npu/lib', 'npu')
    """

    def __init__(self, what: str, where: str, value: str, problem: str) -> None:
        self.value = value
        message = (
            f"{what} is installed at {where}, a path Inductor cannot pass to the compiler for "
            f"the 'npu' device: {value!r} {problem}."
        )
        fix = (
            "install (or move) it to a path without whitespace, quotes, backslashes or "
            "newlines, such as /usr/local/Ascend, and point ASCEND_HOME_PATH (or "
            "PYTORCH_NPU_INSTALL_PATH for torch_npu) at it. A symlink with a plain name does "
            "not help: Inductor compiles with real paths."
        )
        super().__init__(message, device_type="npu", description=DESCRIPTION, fix=fix)
