"""The C++ project AOTInductor writes with ``aot_inductor.package_cpp_only`` for regdev, the
openreg-shaped backend we did not write (tests/peers/regdev, test_regdev.py): built by a
real cmake as written, and what it builds run on the device.

regdev autoloads in each process started with its environment (the package registration,
its C++ wrapper keeping the inherited "cpu": AOTInductor asks the builder for the graph's
device all the same). One such process compiles the project; this one builds it with cmake
(tests/cmake_projects.py) and packs the library into a ``.pt2``; another runs it on regdev.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cmake_projects import configure_and_build, repack, unpack_project
from support import check_python, torch_writes_cmake
from test_regdev import SUBPROCESS_TIMEOUT, Regdev, regdev  # noqa: F401 (the fixture)

MODEL = """
import torch


class Model(torch.nn.Module):  # generated kernels only: no extern kernel of regdev's
    def forward(self, x, weight):
        return torch.tanh(x) * weight.exp().sum(dim=0, keepdim=True) - x.abs().amax(dim=1)[:, None]


generator = torch.Generator().manual_seed(0)
x, weight = torch.randn(6, 32, generator=generator), torch.randn(4, 32, generator=generator)
"""
COMPILE = (
    MODEL
    + """
exported = torch.export.export(Model(), (x.to("regdev"), weight.to("regdev")))
torch._inductor.aoti_compile_and_package(
    exported,
    package_path={package!r},
    inductor_configs={{"aot_inductor.package_cpp_only": True, "fx_graph_cache": False}},
)
"""
)
RUN = (
    MODEL
    + """
result = torch._inductor.aoti_load_package({package!r})(x.to("regdev"), weight.to("regdev"))
assert result.device.type == "regdev", result.device
torch.testing.assert_close(result.cpu(), Model()(x, weight))
with open("/proc/self/maps") as maps:
    assert "libregdev_runtime.so" in maps.read(), "the library did not load regdev's runtime"
print("ran on regdev")
"""
)


@pytest.mark.skipif(not torch_writes_cmake(), reason="this torch writes no CMake project")
def test_regdev_s_project_builds_as_written_and_runs_on_the_device(
    regdev: Regdev,  # noqa: F811
    tmp_path: Path,
) -> None:
    env = regdev.env({})
    package = tmp_path / "model.pt2"
    check_python(COMPILE.format(package=str(package)), env=env, timeout=SUBPROCESS_TIMEOUT)
    project = unpack_project(package, tmp_path / "unpacked")
    assert "# inductor-device-options: device 'regdev'" in (project / "CMakeLists.txt").read_text()

    library = configure_and_build(project, tmp_path / "build")
    rebuilt = repack(project, library, tmp_path / "rebuilt.pt2")
    ran = check_python(RUN.format(package=rebuilt), env=env, timeout=SUBPROCESS_TIMEOUT)
    assert ran.strip().splitlines()[-1] == "ran on regdev"
