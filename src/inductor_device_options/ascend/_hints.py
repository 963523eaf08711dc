"""What ``doctor`` adds to its fixes for ``npu``, and when it leaves ``npu`` out of
``doctor --all`` (``cpp_device_options.doctor_hints``: see
``inductor_device_options._lookup.provider_attributes``)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._errors import TorchNpuNotFoundError
from ._torch_npu import find_torch_npu


def torch_npu_absent() -> str | None:
    """None when torch_npu is installed (npu can be a device of this machine), else why
    ``doctor --all`` leaves npu out. Only a torch_npu that is not found means absent."""
    try:
        find_torch_npu()
    except TorchNpuNotFoundError:
        return "torch_npu is not installed (the bundled Ascend provider's device)"
    return None


DOCTOR_HINTS: Mapping[str, object] = MappingProxyType(
    {
        "setup": "for Ascend: source CANN's set_env.sh or set ASCEND_HOME_PATH",
        "loader": "for Ascend: source CANN's set_env.sh, which sets LD_LIBRARY_PATH",
        "headers": "for Ascend: install torch_npu",
        "absent": torch_npu_absent,
    }
)
