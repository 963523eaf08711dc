# Owner(s): ["module: inductor"]
# PyTorch orders imports with usort ("run_tests, TestCase"), not ruff's isort:
# ruff: noqa: I001
"""Tests for torch._inductor.cpp_builder.register_cpp_device_options.

Destination in a PyTorch checkout: test/inductor/test_cpp_device_options_registry.py

Every test runs on a CPU-only build. Nothing here compiles or links C++ code
for a real CUDA, XPU, MPS or NPU device. Where the stock code path for a
built-in device looks up an SDK that a CPU-only machine does not have (the
CUDA toolkit for "cuda", SYCL and Level Zero for "xpu"), the tests mock only
that SDK lookup, so the device branch of get_cpp_torch_device_options itself
still runs. The "npu" backend is simulated by a callback shaped like
torch_npu's get_cpp_torch_device_options. The CANN toolkit, libascendcl and
libtorch_npu are not needed, because the tests only check the options that
reach Inductor's C++ builder.
"""

import contextlib
import inspect
import unittest
import warnings
from unittest import mock

from torch._dynamo.device_interface import (
    DeviceInterface,
    device_interfaces,
    register_interface_for_device,
)
from torch._inductor import cpp_builder
from torch._inductor.cpp_builder import (
    CppBuilder,
    CppTorchDeviceOptions,
    get_cpp_torch_device_options,
    register_cpp_device_options,
)
from torch.testing._internal.common_utils import IS_WINDOWS, run_tests, TestCase


MOCK_OPTIONS = (
    ["USE_MOCK_DEVICE"],
    ["/mock/include"],
    ["mock_cflag"],
    ["mock_ldflag"],
    ["/mock/lib"],
    ["mockdevicelib"],
    ["-DMOCK_PASSTHROUGH"],
)

NPU_INCLUDE_DIRS = [
    "/usr/local/Ascend/include",
    "/usr/local/Ascend/ascend-toolkit/latest/include",
]
NPU_LIBRARY_DIRS = ["/usr/lib64", "/usr/local/Ascend/ascend-toolkit/latest/lib64"]
NPU_LIBRARIES = ["ascendcl", "torch_npu"]
NPU_PASSTHROUGH = ["-DBUILD_LIBTORCH=ON"]


def mock_device_options(device_type, aot_mode=False, compile_only=False):
    return tuple(list(x) for x in MOCK_OPTIONS)


def npu_device_options(device_type, aot_mode=False, compile_only=False):
    """Shaped like torch_npu._inductor.cpp_builder.get_cpp_torch_device_options."""
    return (
        ["USE_NPU"],
        list(NPU_INCLUDE_DIRS),
        [],
        [],
        list(NPU_LIBRARY_DIRS),
        list(NPU_LIBRARIES),
        list(NPU_PASSTHROUGH),
    )


def mock_sdk_lookup():
    """Mock the SDK lookup of the stock path: the CUDA toolkit and SYCL paths
    from torch.utils.cpp_extension, which raise OSError on a CPU-only build.
    """
    return (
        mock.patch("torch.utils.cpp_extension.include_paths", return_value=[]),
        mock.patch("torch.utils.cpp_extension.library_paths", return_value=[]),
    )


def use_empty_registry(test):
    """Run ``test`` against an empty registry, so a backend that was registered at
    import time (e.g. torch_npu) has no effect, and restore it afterwards."""
    registry = cpp_builder._cpp_device_options_registry
    saved = dict(registry)
    registry.clear()

    def restore():
        registry.clear()
        registry.update(saved)

    test.addCleanup(restore)


class TestCppDeviceOptionsRegistry(TestCase):
    def setUp(self):
        super().setUp()
        use_empty_registry(self)

    def _enter(self, *context_managers):
        stack = contextlib.ExitStack()
        self.addCleanup(stack.close)
        for cm in context_managers:
            stack.enter_context(cm)

    def _register_mock_device(self):
        callback = mock.Mock(side_effect=mock_device_options)
        register_cpp_device_options("mock_device", callback)
        return callback

    # 1. mock device register + lookup
    def test_register_and_lookup(self):
        callback = self._register_mock_device()
        self.assertIs(cpp_builder._cpp_device_options_registry["mock_device"], callback)

        result = get_cpp_torch_device_options("mock_device")
        self.assertEqual(result, MOCK_OPTIONS)
        callback.assert_called_once_with("mock_device", False, False)

        # aot_mode and compile_only are passed through positionally, in order.
        for aot_mode, compile_only in ((True, False), (False, True)):
            callback.reset_mock()
            get_cpp_torch_device_options(
                "mock_device", aot_mode=aot_mode, compile_only=compile_only
            )
            callback.assert_called_once_with("mock_device", aot_mode, compile_only)

    # 2. re-registration warns and overwrites
    def test_reregistration_warns_and_overwrites(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the first registration must not warn
            register_cpp_device_options("mock_device", mock_device_options)

        def replacement(device_type, aot_mode=False, compile_only=False):
            return (["USE_REPLACEMENT"], [], [], [], [], [], [])

        with self.assertWarnsRegex(UserWarning, "mock_device.*already registered"):
            register_cpp_device_options("mock_device", replacement)
        self.assertIs(cpp_builder._cpp_device_options_registry["mock_device"], replacement)
        self.assertEqual(get_cpp_torch_device_options("mock_device")[0], ["USE_REPLACEMENT"])

    # 3. a registered device does not change the CUDA options
    def test_registered_device_does_not_pollute_cuda(self):
        """Runs the stock CUDA branch with the CUDA toolkit lookup mocked.
        Nothing is compiled or linked against CUDA, which a CPU-only machine
        cannot do. On a ROCm build the branch defines USE_ROCM instead.
        """
        self._enter(*mock_sdk_lookup())
        baseline = get_cpp_torch_device_options("cuda")
        callback = self._register_mock_device()

        result = get_cpp_torch_device_options("cuda")
        self.assertEqual(result, baseline)
        self.assertTrue({" USE_CUDA", " USE_ROCM"} & set(result[0]))
        self.assertNotIn("USE_MOCK_DEVICE", result[0])
        self.assertNotIn("mockdevicelib", result[5])
        callback.assert_not_called()

    # 4. a registered device does not change the XPU options
    def test_registered_device_does_not_pollute_xpu(self):
        """Runs the stock (non-Windows) XPU branch with the SYCL paths and the
        ze_loader lookup mocked. A real Intel GPU driver is not needed and is
        not checked.
        """
        if IS_WINDOWS:
            self.skipTest("the Windows XPU branch needs LEVEL_ZERO_V1_SDK_PATH")
        self._enter(
            *mock_sdk_lookup(),
            mock.patch.object(cpp_builder, "find_library", return_value="libze_loader.so.1"),
        )
        baseline = get_cpp_torch_device_options("xpu")
        callback = self._register_mock_device()

        result = get_cpp_torch_device_options("xpu")
        self.assertEqual(result, baseline)
        self.assertIn(" USE_XPU", result[0])
        self.assertIn("ze_loader", result[5])
        self.assertNotIn("USE_MOCK_DEVICE", result[0])
        callback.assert_not_called()

    # 5. a registered device does not change the MPS options
    def test_registered_device_does_not_pollute_mps(self):
        """The MPS branch only adds a definition, so this runs without mocks.
        Building for Metal needs macOS and is not tested here.
        """
        baseline = get_cpp_torch_device_options("mps")
        callback = self._register_mock_device()

        result = get_cpp_torch_device_options("mps")
        self.assertEqual(result, baseline)
        self.assertIn(" USE_MPS", result[0])
        self.assertNotIn("USE_MOCK_DEVICE", result[0])
        callback.assert_not_called()

    # 6. unregistered devices keep the default options, without mock definitions
    def test_unregistered_device_gets_no_mock_options(self):
        for device_type in ("unregistered_device", "cpu"):
            with self.subTest(device_type=device_type):
                baseline = get_cpp_torch_device_options(device_type)
                callback = self._register_mock_device()
                result = get_cpp_torch_device_options(device_type)
                cpp_builder._cpp_device_options_registry.pop("mock_device")

                self.assertEqual(result, baseline)
                self.assertEqual(result[0], [])  # no device definitions
                for mock_value, values in zip(MOCK_OPTIONS, result, strict=True):
                    self.assertFalse(set(mock_value) & set(values))
                callback.assert_not_called()

    def test_callback_exception_propagates(self):
        def broken(device_type, aot_mode=False, compile_only=False):
            raise RuntimeError("ASCEND_HOME_PATH is not set")

        register_cpp_device_options("npu", broken)
        with self.assertRaisesRegex(RuntimeError, "ASCEND_HOME_PATH"):
            get_cpp_torch_device_options("npu")


class TestNpuCppDeviceOptions(TestCase):
    """Tests 7-10: a torch_npu-like callback is registered for "npu" and its
    options reach get_cpp_torch_device_options, CppTorchDeviceOptions and the
    compiler command line. Nothing is compiled: the CANN paths are made up and
    do not exist on this machine.
    """

    def setUp(self):
        super().setUp()
        use_empty_registry(self)
        register_cpp_device_options("npu", npu_device_options)

    def _build_options(self):
        return CppTorchDeviceOptions(device_type="npu")

    # 7. USE_NPU is injected
    def test_npu_definition_injected(self):
        self.assertEqual(get_cpp_torch_device_options("npu")[0], ["USE_NPU"])
        self.assertIn("USE_NPU", self._build_options().get_definitions())

    # 8. NPU include paths
    def test_npu_include_dirs(self):
        self.assertEqual(get_cpp_torch_device_options("npu")[1], NPU_INCLUDE_DIRS)
        include_dirs = self._build_options().get_include_dirs()
        for path in NPU_INCLUDE_DIRS:
            self.assertIn(path, include_dirs)

    # 9. NPU libraries (ascendcl, torch_npu) and library dirs
    def test_npu_libraries(self):
        result = get_cpp_torch_device_options("npu")
        self.assertEqual(result[4], NPU_LIBRARY_DIRS)
        self.assertEqual(result[5], NPU_LIBRARIES)
        options = self._build_options()
        for lib in NPU_LIBRARIES:
            self.assertIn(lib, options.get_libraries())
        for path in NPU_LIBRARY_DIRS:
            self.assertIn(path, options.get_libraries_dirs())

    # 10. NPU passthrough args
    def test_npu_passthrough_args(self):
        self.assertEqual(get_cpp_torch_device_options("npu")[6], NPU_PASSTHROUGH)
        self.assertIn("-DBUILD_LIBTORCH=ON", self._build_options().get_passthrough_args())

    def test_npu_compile_command_line(self):
        """The options reach the command line. The command is not run."""
        builder = CppBuilder(
            name="kernel",
            sources=["kernel.cpp"],
            BuildOption=self._build_options(),
            output_dir="",
        )
        cmd = builder.get_command_line()
        self.assertIn("-D USE_NPU", cmd)
        self.assertIn("-I/usr/local/Ascend/include", cmd)
        self.assertIn("-L/usr/lib64", cmd)
        self.assertIn("-lascendcl", cmd)
        self.assertIn("-ltorch_npu", cmd)
        self.assertIn("-DBUILD_LIBTORCH=ON", cmd)


INTERFACE_OPTIONS = (
    ["USE_INTERFACE_DEVICE"],
    ["/interface/include"],
    [],
    [],
    ["/interface/lib"],
    ["interfacelib"],
    [],
)


class _InterfaceWithOptions(DeviceInterface):
    @staticmethod
    def get_cpp_device_options(aot_mode, compile_only):
        return tuple(list(x) for x in INTERFACE_OPTIONS)


@unittest.skipUnless(
    hasattr(DeviceInterface, "get_cpp_device_options"),
    "this torch's get_cpp_torch_device_options does not ask DeviceInterface",
)
class TestRegistryAndDeviceInterface(TestCase):
    """The order when both exist: a registration, then the device's
    DeviceInterface.get_cpp_device_options, then the built-in branches."""

    def setUp(self):
        super().setUp()
        use_empty_registry(self)
        self.addCleanup(device_interfaces.pop, "iface_device", None)
        register_interface_for_device("iface_device", _InterfaceWithOptions)

    def test_the_interface_serves_an_unregistered_device(self):
        self.assertEqual(get_cpp_torch_device_options("iface_device"), INTERFACE_OPTIONS)

    def test_a_registration_comes_before_the_interface(self):
        callback = mock.Mock(side_effect=mock_device_options)
        register_cpp_device_options("iface_device", callback)
        self.assertEqual(get_cpp_torch_device_options("iface_device", True), MOCK_OPTIONS)
        callback.assert_called_once_with("iface_device", True, False)

    def test_a_callback_can_extend_the_interface_options(self):
        def extend(device_type, aot_mode=False, compile_only=False):
            interface = cpp_builder.get_interface_for_device(device_type)
            options = interface.get_cpp_device_options(aot_mode, compile_only)
            options[0].append("USE_EXTENSION")
            return options

        register_cpp_device_options("iface_device", extend)
        built = CppTorchDeviceOptions(device_type="iface_device")
        self.assertIn("USE_INTERFACE_DEVICE", built.get_definitions())
        self.assertIn("USE_EXTENSION", built.get_definitions())
        self.assertIn("interfacelib", built.get_libraries())

    @unittest.skipUnless(
        "cpp_stdlib" in inspect.signature(get_cpp_torch_device_options).parameters,
        "this torch has no cpp_stdlib",
    )
    def test_cpp_stdlib_is_validated_before_the_registry(self):
        register_cpp_device_options("mock_device", mock_device_options)
        with self.assertRaisesRegex(RuntimeError, "libc\\+\\+"):
            get_cpp_torch_device_options("mock_device", cpp_stdlib="libc++")


if __name__ == "__main__":
    run_tests()
