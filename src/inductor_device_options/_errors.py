"""The errors this package raises, each naming the device and the provider at fault, and
its one warning.

Every error class here is a :class:`CppDeviceOptionsError`, and each subclass is also the
built-in exception it stands for (``ValueError``, ``TypeError``, ``ImportError``,
``RecursionError``), so that code catching those keeps working.
"""

from __future__ import annotations

import warnings

RAISED_BY_ATTRIBUTE = "_inductor_device_options_raised_by"


def add_note(error: BaseException, note: str) -> None:
    """Say where an error raised by other code came from, keeping its type and message."""
    if hasattr(error, "add_note"):  # Python >= 3.11
        error.add_note(note)


def raised_by_provider(error: BaseException) -> str | None:
    """The provider whose call raised ``error`` (its description), or None when the error
    is not a provider's: the package's own, or raised outside a provider call."""
    description = getattr(error, RAISED_BY_ATTRIBUTE, None)
    return description if isinstance(description, str) else None


class CppDeviceOptionsError(Exception):
    """Base class: something about a device's C++ options is wrong.

    Args:
        message: What is wrong and what to do, for people.
        device_type: The device the error is about (``None`` when it is not known, e.g. a
            device type that is not a ``str``).
        description: The description of the provider (callback, entry point or interface)
            that computed, or failed to compute, the device's options: how a person finds
            it in the code (``"my_backend.cpp_device_options"``).
        fix: What to do about it, when there is one thing to do; ``str(error)`` ends with
            it after ``"Fix: "``.
        provider: Deprecated: 0.1.0's name for ``description`` (it holds the provider's
            description, not the provider); warns.

    Attributes:
        device_type: As given.
        description: As given.
        fix: As given, or None.

    Example:
        >>> import inductor_device_options as ido
        >>> try:
        ...     ido.register_cpp_device_options("cuda", print)
        ... except ido.CppDeviceOptionsError as error:
        ...     print(error.device_type, error.description)
        cuda builtins.print
    """

    def __init__(
        self,
        message: str,
        *,
        device_type: str | None = None,
        description: str | None = None,
        fix: str | None = None,
        provider: str | None = None,
    ):
        super().__init__(message if fix is None else f"{message}\nFix: {fix}")
        if provider is not None:
            if description is not None:
                raise TypeError("give description=, not also its deprecated name provider=")
            # Point at the code that made the error, past a subclass's own __init__.
            own_init = type(self).__init__ is CppDeviceOptionsError.__init__
            _warn_provider_deprecated(stacklevel=3 if own_init else 4)
            description = provider
        self.device_type = device_type
        self.description = description
        self.fix = fix

    @property
    def provider(self) -> str | None:
        """Deprecated: 0.1.0's name for :attr:`description`; warns."""
        _warn_provider_deprecated(stacklevel=3)
        return self.description


def _warn_provider_deprecated(stacklevel: int) -> None:
    warnings.warn(
        "inductor-device-options: CppDeviceOptionsError's provider is deprecated: use "
        "description, the same text (the provider's description) under its own name",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


class InvalidDeviceTypeError(CppDeviceOptionsError, ValueError):
    """The device type is not a device name such as ``"npu"`` or ``"npu:0"``.

    Raised by the functions that take a ``device_type``, before anything is registered or
    looked up.

    Example:
        >>> import inductor_device_options as ido
        >>> ido.unregister_cpp_device_options("npu:x")
        Traceback (most recent call last):
        ...
        inductor_device_options...InvalidDeviceTypeError: device_type 'npu:x' is not ...
    """


class ReservedDeviceTypeError(CppDeviceOptionsError, ValueError):
    """The device is one whose options torch computes itself (cpu, cuda, xpu, mps).

    Their options must stay exactly as torch computes them, so registering one is refused
    (``RESERVED_DEVICE_TYPES`` lists them).

    Example:
        >>> import inductor_device_options as ido
        >>> ido.register_cpp_device_options("cpu", lambda d, a, c: ([],) * 7)
        Traceback (most recent call last):
        ...
        inductor_device_options...ReservedDeviceTypeError: cannot register ... for 'cpu' ...
    """


class InvalidProviderError(CppDeviceOptionsError, TypeError):
    """The callback given for a device is not callable.

    Raised by ``register_cpp_device_options``, and at a lookup when a declared entry point
    names something that is not callable.

    Example:
        >>> import inductor_device_options as ido
        >>> ido.register_cpp_device_options("mydev", "not a function")
        Traceback (most recent call last):
        ...
        inductor_device_options...InvalidProviderError: callback for device 'mydev' must ...
    """


class InvalidProviderAttributeError(InvalidProviderError):
    """One of a provider's per-device doors (``removed_cflags``, ``aoti_shim_ops``,
    ``inductor_headers``, ``cache_key_details``, ``aoti_runner``, ``sdk_identity``) holds or
    gives what the door cannot use.

    Raised where the door is asked (a build, a compile's cache key, ``aot_load``), before
    anything reaches g++, for the declaring device only.

    Args:
        message: What is wrong and what to do.
        device_type: The device whose provider carries the attribute.
        description: The provider's description.
        attribute: The attribute's name (``"removed_cflags"``...).
        value: What the attribute holds or gave.

    Example:
        >>> import inductor_device_options as ido
        >>> def options(device_type, aot_mode, compile_only):
        ...     return ido.default_cpp_device_options(device_type, aot_mode, compile_only)
        >>> options.removed_cflags = "march=native"  # one str, not a list of them
        >>> ido.register_cpp_device_options("mydev", options)
        >>> ido.introspection.declared_doors("mydev")
        Traceback (most recent call last):
        ...
        inductor_device_options...InvalidProviderAttributeError: ... its removed_cflags ...
        >>> ido.unregister_cpp_device_options("mydev")
        True
    """

    def __init__(
        self,
        message: str,
        *,
        device_type: str | None = None,
        description: str | None = None,
        fix: str | None = None,
        attribute: str,
        value: object = None,
    ):
        super().__init__(message, device_type=device_type, description=description, fix=fix)
        self.attribute = attribute
        self.value = value


class InvalidCppDeviceOptionsError(CppDeviceOptionsError, ValueError):
    """A provider returned options the compiler command line would reject or misread.

    Raised at the lookup (when Inductor asks for the device's options), before anything
    reaches g++; other devices are not affected. The message names the device, the
    provider, the field, the index and the value, and how the running torch renders that
    field (see the docs' "What is checked").

    Args:
        message: What is wrong and what to do.
        device_type: The device whose options were refused.
        description: The description of the provider that returned them.
        field: One of the seven list names (``"include_dirs"``...), or ``None`` when the
            whole result is malformed (not 7 lists).
        value: The offending object: the value, the list, or the whole result.
        provider: Deprecated, as :class:`CppDeviceOptionsError`'s.

    Attributes:
        field: As given.
        value: As given.

    Example:
        >>> import inductor_device_options as ido
        >>> def dash_d(device_type, aot_mode, compile_only):
        ...     return (["-DUSE_MYDEV"], [], [], [], [], [], [])
        >>> with ido.testing.registered_cpp_device_options("mydev", dash_d):
        ...     try:
        ...         ido.get_cpp_device_options("mydev")
        ...     except ido.InvalidCppDeviceOptionsError as error:
        ...         print(error.field, repr(error.value))
        definitions '-DUSE_MYDEV'
    """

    def __init__(
        self,
        message: str,
        *,
        device_type: str,
        description: str | None = None,
        field: str | None = None,
        value: object = None,
        provider: str | None = None,
    ):
        super().__init__(
            message, device_type=device_type, description=description, provider=provider
        )
        self.field = field
        self.value = value


class ProviderLoadError(CppDeviceOptionsError, ImportError):
    """A declared provider (entry point) could not be loaded.

    Raised at the first lookup of the device, when importing the entry point's module
    raises (``SystemExit`` included). The message names the entry point and its
    distribution; the original exception is the ``__cause__``. Other devices still build.

    Example:
        >>> import inductor_device_options as ido
        >>> issubclass(ido.ProviderLoadError, ImportError)  # existing handlers keep working
        True
    """


class ProviderRecursionError(CppDeviceOptionsError, RecursionError):
    """A device's provider asked, directly or not, for the options of that same device.

    A provider that calls ``get_cpp_device_options`` (or builds a ``CppTorchDeviceOptions``)
    for its own device would recurse until Python's limit; it gets this error, naming the
    device and the provider, instead. Extend ``default_cpp_device_options`` instead.

    Example:
        >>> import inductor_device_options as ido
        >>> def recursive(device_type, aot_mode, compile_only):
        ...     return ido.get_cpp_device_options(device_type, aot_mode, compile_only)
        >>> with ido.testing.registered_cpp_device_options("mydev", recursive):
        ...     ido.get_cpp_device_options("mydev")
        Traceback (most recent call last):
        ...
        inductor_device_options...ProviderRecursionError: ...
    """


class RunpathError(CppDeviceOptionsError, ValueError):
    """A directory given to :func:`~inductor_device_options.runpath` cannot reach the
    loader as one runpath entry (see its Raises).

    Example:
        >>> import inductor_device_options as ido
        >>> ido.runpath("/opt/acme,1.0/lib")
        Traceback (most recent call last):
        ...
        inductor_device_options.RunpathError: runpath '/opt/acme,1.0/lib' holds ',': ...
    """


class SdkMismatchError(CppDeviceOptionsError, ValueError):
    """An AOTInductor package was built against another SDK than its device has here (or
    none is known here). Raised as the package is loaded, before its model is opened;
    ``INDUCTOR_DEVICE_OPTIONS_ACCEPT_SDK_MISMATCH=1`` makes it a ``RuntimeWarning``. Not a
    ``RuntimeError``, which torch's ``load_package`` takes for a package of an older format.

    Attributes:
        built: The SDK identity the package was built against.
        current: The device's SDK identity here, or None where it has none or none is known.
        package: The package's path.

    Example:
        >>> import inductor_device_options as ido
        >>> issubclass(ido.SdkMismatchError, ValueError)  # a package not for this machine
        True
    """

    def __init__(
        self,
        message: str,
        *,
        device_type: str,
        built: str,
        current: str | None,
        package: str,
        fix: str,
    ):
        super().__init__(message, device_type=device_type, fix=fix)
        self.built = built
        self.current = current
        self.package = package


class DeviceNotAskedWarning(RuntimeWarning):
    """Inductor built C++ for a graph of a device that has C++ options, and asked the
    builder for another device type: the device's options did not reach that build.

    Given once per (device, device type asked) in a process, when Inductor builds the C++
    wrapper of a graph of a device the package knows a source for, and the wrapper codegen
    reports another device type (a ``CppWrapperCpu`` subclass that never sets
    ``self.device`` reports ``"cpu"``). The message names both, the codegen and the fix.

    Attributes:
        device_type: The graph's device.
        asked: The device type the builder was asked for.
        codegen: The C++ wrapper codegen class that reported ``asked`` (module.qualname).

    Example:
        >>> import warnings
        >>> import inductor_device_options as ido
        >>> with warnings.catch_warnings():  # in a test suite: make it an error
        ...     warnings.simplefilter("error", ido.DeviceNotAskedWarning)
        >>> issubclass(ido.DeviceNotAskedWarning, RuntimeWarning)
        True
    """

    def __init__(self, message: str, *, device_type: str, asked: str, codegen: str):
        super().__init__(message)
        self.device_type = device_type
        self.asked = asked
        self.codegen = codegen
