"""The sample device end to end: real torch, real g++, the options reaching both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support import cpp_wrapper_device_header, run_python, torch_has_compile_subprocess

from inductor_device_options._demo.compiler_commands import (
    CompilerCommand,
    last_shared_library,
    record_compiler_commands,
)
from inductor_device_options._demo.elf import read_dynamic_section
from inductor_device_options.sample import (
    DEVICE_MACRO,
    DEVICE_NAME,
    RUNTIME_LIBRARY,
    RUNTIME_LIBRARY_FILE,
    SDK_INCLUDE_DIR,
    SampleDevice,
    runtime_registered_modules,
)


class PointwiseAndReduction(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        hidden = torch.cos(x) * y - 0.5
        return hidden.amax(dim=0, keepdim=True) + hidden.sigmoid()


def cpu_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(6, 32, generator=generator), torch.randn(6, 32, generator=generator)


def compiler() -> str:
    from torch._inductor.cpp_builder import get_cpp_compiler

    return get_cpp_compiler()


def assert_equals_eager_cpu(result: torch.Tensor, inputs: tuple[torch.Tensor, ...]) -> None:
    assert result.device.type == DEVICE_NAME
    torch.testing.assert_close(result.cpu(), PointwiseAndReduction()(*inputs))


def assert_built_with_sample_options(commands: list[CompilerCommand], device: SampleDevice) -> None:
    """The module was compiled with the macro and SDK headers, and links the runtime."""
    module = last_shared_library(commands)
    assert module is not None and module.output is not None, [c.argv for c in commands]
    for flags in [("-D", DEVICE_MACRO), (f"-I{SDK_INCLUDE_DIR}",), (f"-l{RUNTIME_LIBRARY}",)]:
        assert module.has(flags), f"{flags} not in {module.argv}"
    dynamic = read_dynamic_section(module.output)
    assert RUNTIME_LIBRARY_FILE in dynamic.needed
    assert str(device.runtime_lib_dir) in dynamic.runpath


def test_cpp_wrapper_compiles_with_the_sample_options_and_matches_eager_cpu(
    sampledev: SampleDevice,
) -> None:
    inputs = cpu_inputs()
    modules_before = runtime_registered_modules()
    with record_compiler_commands(compiler()) as commands:
        compiled = torch.compile(PointwiseAndReduction(), options={"cpp_wrapper": True})
        result = compiled(*(tensor.to(DEVICE_NAME) for tensor in inputs))

    assert_equals_eager_cpu(result, inputs)
    assert_built_with_sample_options(commands, sampledev)
    assert runtime_registered_modules() == modules_before + 1


def test_sample_registers_with_inductor_at_its_first_compile_through_its_hook(
    sample_build: SampleDevice,
) -> None:
    """Written once against torch 2.15's contract: ``setup()`` imports nothing of Inductor,
    the device module's ``_inductor_backend_init`` registers the backend at the first compile
    (once), and the generated C++ names the device by its overrides' ``aten_device_type()``
    (torch's own hooks on 2.15, the package's backports before)."""
    finished = run_python(
        f"""
        import json, sys, torch
        from inductor_device_options import sample
        sample.setup({str(sample_build.cache_dir)!r})
        imported_at_set_up = "torch._inductor" in sys.modules
        calls = []
        init = torch.{DEVICE_NAME}._inductor_backend_init
        torch.{DEVICE_NAME}._inductor_backend_init = lambda: (calls.append(1), init())[-1]
        x = torch.arange(8.0, device="{DEVICE_NAME}")
        from torch._inductor.utils import run_and_get_cpp_code
        fn = torch.compile(lambda x: x.cos() + 1, options={{"cpp_wrapper": True}})
        result, code = run_and_get_cpp_code(fn, x)
        fn(x)
        print(json.dumps([imported_at_set_up, len(calls), result.device.type,
                          "cached_torch_device_type_privateuse1" in code,
                          bool(torch.allclose(result.cpu(), x.cpu().cos() + 1))]))
        """
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    assert json.loads(finished.stdout.splitlines()[-1]) == [False, 1, DEVICE_NAME, True, True]


def test_aoti_package_compiles_with_the_sample_options_loads_and_matches_eager_cpu(
    sampledev: SampleDevice, tmp_path: Path
) -> None:
    inputs = cpu_inputs()
    device_inputs = tuple(tensor.to(DEVICE_NAME) for tensor in inputs)
    with record_compiler_commands(compiler()) as commands:
        exported = torch.export.export(PointwiseAndReduction(), device_inputs)
        package = torch._inductor.aoti_compile_and_package(
            exported, package_path=str(tmp_path / "model.pt2")
        )
    assert_built_with_sample_options(commands, sampledev)

    modules_before = runtime_registered_modules()
    loaded = torch._inductor.aoti_load_package(package)
    assert runtime_registered_modules() == modules_before + 1
    assert_equals_eager_cpu(loaded(*device_inputs), inputs)


def test_plain_torch_compile_runs_cpu_kernels_built_without_the_device_options(
    sampledev: SampleDevice,
) -> None:
    # Inductor's Python wrapper builds every C++ kernel as device "cpu": the sample's
    # headers and runtime are not needed, and its options are not asked for.
    inputs = cpu_inputs()
    with record_compiler_commands(compiler()) as commands:
        compiled = torch.compile(PointwiseAndReduction())
        result = compiled(*(tensor.to(DEVICE_NAME) for tensor in inputs))

    assert_equals_eager_cpu(result, inputs)
    kernels = [command for command in commands if command.stage == "link"]
    assert kernels, "no kernel was built"
    assert not any(command.has(("-D", DEVICE_MACRO)) for command in kernels)


NEGATIVE_CONTROL = """
    import json, os
    import torch
    from inductor_device_options import (
        register_cpp_device_options, unregister_cpp_device_options,
    )
    from inductor_device_options import sample

    sample.setup(os.environ["SAMPLEDEV_CACHE_DIR"])
    x = torch.randn(4, 4).to("sampledev")

    def compile_error():
        torch._dynamo.reset()
        try:
            torch.compile(lambda t: t.sin() + 1, options={"cpp_wrapper": True})(x)
        except Exception as error:
            return str(error)
        return None

    def without_macro(device_type, aot_mode, compile_only):
        options = sample.sdk_cpp_device_options(device_type, aot_mode, compile_only)
        options.definitions.remove(sample.DEVICE_MACRO)
        return options

    unregister_cpp_device_options("sampledev")
    errors = {"unregistered": compile_error()}
    register_cpp_device_options("sampledev", without_macro)
    errors["without macro"] = compile_error()
    print(json.dumps(errors))
"""


def test_without_the_sample_options_the_build_fails_on_the_device_headers(
    sample_build: SampleDevice,
) -> None:
    finished = run_python(
        NEGATIVE_CONTROL, env={"SAMPLEDEV_CACHE_DIR": str(sample_build.cache_dir)}
    )
    assert finished.returncode == 0, finished.stderr
    errors = json.loads(finished.stdout.strip().splitlines()[-1])

    unregistered = errors["unregistered"]
    assert unregistered is not None, "the build succeeded without the sampledev options"
    header = cpp_wrapper_device_header(DEVICE_NAME)
    assert f"fatal error: {header}: No such file" in unregistered

    without_macro = errors["without macro"]
    assert without_macro is not None, "the build succeeded without the sampledev macro"
    assert f'#error "{DEVICE_MACRO} is not defined' in without_macro


# The distributed step once: tests/e2e/test_distributed.py runs the job in both modes.
@pytest.mark.parametrize(("compile_mode", "ranks"), [("normal", 2), ("subprocess", 0)])
def test_demo_command_passes_every_check(
    sample_build: SampleDevice, compile_mode: str, ranks: int
) -> None:
    """In subprocess mode Inductor compiles in a child process, which sets the sample device
    up (and registers its C++ options) through torch's backend autoload entry point."""
    command = ["-m", "inductor_device_options", "demo", "--cache-dir", str(sample_build.cache_dir)]
    command += ["--ranks", str(ranks)] if ranks else []
    env = dict(os.environ, TORCHINDUCTOR_FX_COMPILE_MODE=compile_mode)
    finished = subprocess.run(
        [sys.executable, *command],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    output = finished.stdout
    assert finished.returncode == 0, f"{output}\n{finished.stderr}"
    assert "FAIL" not in output
    checks = [line for line in output.splitlines() if line.strip().startswith("ok ")]
    assert f"All {len(checks)} checks passed." in output
    assert len(checks) >= 16 + (2 + 3 * ranks if ranks else 0)
    assert f"Inductor compile mode: {compile_mode}" in output
    module_links = [
        line
        for line in output.splitlines()
        if line.strip().startswith("link ") and "-lsampledev_runtime" in line
    ]
    assert len(module_links) == 2  # the cpp_wrapper module and the AOTI package
    in_child = [line for line in module_links if "(in compile subprocess" in line]
    # torch 2.6 has no compile subprocess: it compiles in the demo's process.
    in_subprocess = compile_mode == "subprocess" and torch_has_compile_subprocess()
    assert len(in_child) == (2 if in_subprocess else 0)
    for rank in range(ranks):
        assert f"ok    rank {rank}: every module it runs was built in this job" in output
