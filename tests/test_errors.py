"""An error names its provider by the provider's description: ``description``, and the
deprecated name it had in 0.1.0, ``provider``, which warns."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest

import inductor_device_options as ido
from inductor_device_options import ascend, testing

DESCRIPTION = "my_backend.cpp_device_options"

MAKERS: dict[str, Callable[..., ido.CppDeviceOptionsError]] = {
    "CppDeviceOptionsError": lambda **given: ido.CppDeviceOptionsError("m", **given),
    "InvalidCppDeviceOptionsError": lambda **given: ido.InvalidCppDeviceOptionsError(
        "m", device_type="mydev", field="libraries", value="x", **given
    ),
    "ProviderLoadError": lambda **given: ido.ProviderLoadError("m", **given),
}


@pytest.mark.parametrize("made_by", MAKERS)
def test_description_is_given_and_read_without_a_warning(made_by: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        error = MAKERS[made_by](description=DESCRIPTION)
        assert error.description == DESCRIPTION


@pytest.mark.parametrize("made_by", MAKERS)
def test_the_deprecated_provider_attribute_reads_the_description_and_warns(made_by: str) -> None:
    error = MAKERS[made_by](description=DESCRIPTION)
    with pytest.warns(DeprecationWarning, match="provider is deprecated") as caught:
        assert error.provider == DESCRIPTION
    assert caught[0].filename == __file__  # it points at the code that read it


@pytest.mark.parametrize("made_by", MAKERS)
def test_the_deprecated_provider_keyword_sets_the_description_and_warns(made_by: str) -> None:
    with pytest.warns(DeprecationWarning, match="provider is deprecated") as caught:
        error = MAKERS[made_by](provider=DESCRIPTION)
    assert error.description == DESCRIPTION
    assert caught[0].filename == __file__


@pytest.mark.parametrize("made_by", MAKERS)
def test_both_names_at_once_are_refused(made_by: str) -> None:
    with pytest.raises(TypeError, match="not also its deprecated name"):
        MAKERS[made_by](description=DESCRIPTION, provider=DESCRIPTION)


def _refusing(device_type: str, aot_mode: bool, compile_only: bool) -> object:
    return (["-DUSE_MYDEV"], [], [], [], [], [], [])


def test_a_refused_lookup_names_the_provider_by_its_description() -> None:
    with (
        testing.registered_cpp_device_options("errorsdev", _refusing),
        warnings.catch_warnings(),
        pytest.raises(ido.InvalidCppDeviceOptionsError) as caught,
    ):
        warnings.simplefilter("error")
        ido.get_cpp_device_options("errorsdev")
    assert caught.value.description == f"{__name__}._refusing"
    assert f"from {__name__}._refusing: definitions[0]" in str(caught.value)


def test_the_ascend_errors_carry_the_ascend_provider_s_description() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        error = ascend.CannPathError("CANN", "/opt/a b", "/opt/a b/lib", "holds a space")
    assert error.description == "inductor_device_options.ascend.cpp_device_options"
    assert error.device_type == "npu"
