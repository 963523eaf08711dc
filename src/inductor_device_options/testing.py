"""Helpers for a backend's tests: a registration for a ``with`` block, and the one reset of
the package's state.

Example:
    >>> from inductor_device_options import get_cpp_device_options
    >>> from inductor_device_options.testing import registered_cpp_device_options
    >>> def acme_options(device_type, aot_mode, compile_only):
    ...     return (["USE_ACME"], [], [], [], [], [], [])
    >>> with registered_cpp_device_options("acme", acme_options):
    ...     get_cpp_device_options("acme").definitions
    ['USE_ACME']
"""

from __future__ import annotations

from ._state import reset
from .lookup.registry import registered_cpp_device_options

__all__ = ["registered_cpp_device_options", "reset"]
