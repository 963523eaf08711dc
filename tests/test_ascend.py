"""inductor_device_options.ascend on synthetic CANN trees and a synthetic torch_npu.

No mocks: every layout is real directories, symlinks and (for the end-to-end
builds) real shared libraries compiled with g++.  The synthetic torch_npu's
``__init__`` raises, which proves discovery never imports it.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import NATIVE, cpp_builder_keeps_whole

import inductor_device_options as ido
from inductor_device_options import ascend, testing
from inductor_device_options._lookup.provider_attributes import HEADERS_ATTRIBUTE, hints_of
from inductor_device_options._options.identity import IDENTITY_DEFINITION as IDENTITY
from inductor_device_options.ascend import _cann
from inductor_device_options.ascend._cann import cann_arch
from inductor_device_options.ascend._provider import npu_cpp_device_options

ARCH = cann_arch()
ENV_VARS = (
    "ASCEND_HOME_PATH",
    "ASCEND_TOOLKIT_HOME",
    "LIBTORCH_NPU_PATH",
    "PYTORCH_NPU_INSTALL_PATH",
)
PASSTHROUGH = ["-DBUILD_LIBTORCH=ON", "-Wno-unused-function"]
CANN_HINT = (
    "Fix: source CANN's environment script, e.g. `source /usr/local/Ascend/cann/set_env.sh` "
    "(CANN 8.5 and later) or `source /usr/local/Ascend/ascend-toolkit/set_env.sh` (earlier "
    "releases), or set ASCEND_HOME_PATH to the CANN install directory."
)

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

# --- synthetic files -----------------------------------------------------------------------

ACL_H = """\
#pragma once
#ifndef USE_NPU
#error "synthetic acl/acl.h: USE_NPU is not defined, the npu options did not reach Inductor"
#endif
#ifndef BUILD_LIBTORCH
#error "synthetic acl/acl.h: BUILD_LIBTORCH is not defined (passthrough args lost)"
#endif
#ifdef __cplusplus
extern "C" {
#endif
int aclStubRuntimeVersion(void);
#ifdef __cplusplus
}
#endif
"""

RT_H = """\
#pragma once
#define RT_STUB_LAYOUT {layout}
"""

TORCH_NPU_H = """\
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int torchNpuStub(void);
#ifdef __cplusplus
}
#endif
"""

PROBE_CPP = """\
#include <acl/acl.h>
#include <runtime/rt.h>
#include <torch_npu/stub.h>
extern "C" int npu_probe(int x) {
    return aclStubRuntimeVersion() * 1000 + RT_STUB_LAYOUT * 100 + torchNpuStub() * 10 + x;
}
"""

STUB_SOURCES = {
    # AscendCL as one library (classic and 8.5) and the split runtime part (9.x).
    "libascendcl.so": 'extern "C" int aclStubRuntimeVersion(void) { return 1; }',
    "libacl_rt.so": 'extern "C" int aclStubRuntimeVersion(void) { return 2; }',
    "libruntime.so": 'extern "C" int rtStubVersion(void) { return 7; }',
    "libtorch_npu.so": 'extern "C" int torchNpuStub(void) { return 3; }',
}


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def symlink(link: Path, target: str) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


@pytest.fixture(scope="session")
def stub_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real shared libraries for the end-to-end builds (built once)."""
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    out = tmp_path_factory.mktemp("stubs")
    libs: dict[str, Path] = {}
    for name, source in STUB_SOURCES.items():
        src = write(out / f"{name}.cpp", source + "\n")
        subprocess.run(
            ["g++", "-shared", "-fPIC", f"-Wl,-soname,{name}", str(src), "-o", str(out / name)],
            check=True,
        )
        libs[name] = out / name
    return libs


def put_libs(lib_dir: Path, names: list[str], stubs: dict[str, Path] | None) -> None:
    lib_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        if stubs is None:
            write(lib_dir / name, "not a real library: discovery only looks at names")
        else:
            shutil.copy(stubs[name], lib_dir / name)


# --- the three CANN layouts ----------------------------------------------------------------


@dataclass
class Layout:
    """A synthetic CANN tree: how to point discovery at it and what it must yield."""

    name: str
    home: Path  # the real versioned directory
    env: dict[str, str]  # environment to set (empty: found via DEFAULT_CANN_ROOTS)
    include_subdirs: list[str]  # relative to home, in expected -I order
    lib_subdirs: list[str]
    libraries: list[str]  # CANN libraries, in expected order
    acl_lib: str  # the library whose aclStubRuntimeVersion gets linked
    rt_layout: int

    @property
    def include_dirs(self) -> list[str]:
        return [str(self.home / sub) for sub in self.include_subdirs]

    @property
    def library_dirs(self) -> list[str]:
        return [str(self.home / sub) for sub in self.lib_subdirs]


def classic_toolkit(base: Path, stubs: dict[str, Path] | None = None) -> Layout:
    """<= 8.3: ascend-toolkit/<version>, a ``latest`` link, top-level views of <arch>-linux.

    rt.h under include/experiment/runtime; no pkg_inc.  Named by ASCEND_HOME_PATH
    (the ``latest`` link, as set_env.sh exports it).
    """
    toolkit = base / "Ascend" / "ascend-toolkit"
    home = toolkit / "8.0.RC3"
    real = home / ARCH
    write(real / "include" / "acl" / "acl.h", ACL_H)
    (real / "include" / "experiment" / "msprof").mkdir(parents=True)
    write(real / "include" / "experiment" / "runtime" / "runtime" / "rt.h", RT_H.format(layout=1))
    put_libs(real / "lib64", ["libascendcl.so", "libruntime.so"], stubs)
    symlink(home / "include", f"{ARCH}/include")
    symlink(home / "lib64", f"{ARCH}/lib64")
    symlink(toolkit / "latest", "8.0.RC3")
    return Layout(
        name="classic-toolkit",
        home=home,
        env={"ASCEND_HOME_PATH": str(toolkit / "latest")},
        include_subdirs=[
            f"{ARCH}/include",
            f"{ARCH}/include/experiment",
            f"{ARCH}/include/experiment/msprof",
            f"{ARCH}/include/experiment/runtime",
        ],
        lib_subdirs=[f"{ARCH}/lib64"],
        libraries=["runtime", "ascendcl"],
        acl_lib="libascendcl.so",
        rt_layout=1,
    )


def cann_85(base: Path, stubs: dict[str, Path] | None = None) -> Layout:
    """8.5: Ascend/cann -> cann-8.5.0, files in <arch>-linux, views at the top, pkg_inc.

    Ships libascendcl.so and libacl_rt.so: ascendcl is linked, as torch_npu does.
    No environment: found through the default roots.
    """
    ascend_dir = base / "Ascend"
    home = ascend_dir / "cann-8.5.0"
    real = home / ARCH
    write(real / "include" / "acl" / "acl.h", ACL_H)
    (real / "include" / "experiment" / "msprof").mkdir(parents=True)
    (real / "pkg_inc" / "profiling").mkdir(parents=True)
    write(real / "pkg_inc" / "runtime" / "runtime" / "rt.h", RT_H.format(layout=2))
    put_libs(real / "lib64", ["libascendcl.so", "libacl_rt.so", "libruntime.so"], stubs)
    for view in ("include", "lib64", "pkg_inc"):
        symlink(home / view, f"{ARCH}/{view}")
    symlink(ascend_dir / "cann", "cann-8.5.0")
    symlink(ascend_dir / "ascend-toolkit" / "latest", "../cann")
    return Layout(
        name="cann-8.5",
        home=home,
        env={},
        include_subdirs=[
            f"{ARCH}/include",
            f"{ARCH}/pkg_inc",
            f"{ARCH}/pkg_inc/profiling",
            f"{ARCH}/include/experiment",
            f"{ARCH}/include/experiment/msprof",
            f"{ARCH}/pkg_inc/runtime",
        ],
        lib_subdirs=[f"{ARCH}/lib64"],
        libraries=["runtime", "ascendcl"],
        acl_lib="libascendcl.so",
        rt_layout=2,
    )


def cann_9_split(base: Path, stubs: dict[str, Path] | None = None) -> Layout:
    """9.x: no libascendcl.so (split libraries), only the <arch>-linux sub-tree (no views).

    Named by ASCEND_TOOLKIT_HOME through the ``cann`` link.
    """
    ascend_dir = base / "Ascend"
    home = ascend_dir / "cann-9.0.0"
    real = home / ARCH
    write(real / "include" / "acl" / "acl.h", ACL_H)
    (real / "include" / "experiment" / "msprof" / "toolchain").mkdir(parents=True)
    (real / "pkg_inc" / "profiling").mkdir(parents=True)
    write(real / "pkg_inc" / "runtime" / "runtime" / "rt.h", RT_H.format(layout=3))
    put_libs(real / "lib64", ["libacl_rt.so", "libruntime.so"], stubs)
    symlink(ascend_dir / "cann", "cann-9.0.0")
    return Layout(
        name="cann-9-split",
        home=home,
        env={"ASCEND_TOOLKIT_HOME": str(ascend_dir / "cann")},
        include_subdirs=[
            f"{ARCH}/include",
            f"{ARCH}/pkg_inc",
            f"{ARCH}/pkg_inc/profiling",
            f"{ARCH}/include/experiment",
            f"{ARCH}/include/experiment/msprof",
            f"{ARCH}/pkg_inc/runtime",
            f"{ARCH}/include/experiment/msprof/toolchain",
        ],
        lib_subdirs=[f"{ARCH}/lib64"],
        libraries=["runtime", "acl_rt"],
        acl_lib="libacl_rt.so",
        rt_layout=3,
    )


LAYOUTS = [
    pytest.param(classic_toolkit, id="classic-toolkit"),
    pytest.param(cann_85, id="cann-8.5"),
    pytest.param(cann_9_split, id="cann-9-split"),
]
LayoutBuilder = Callable[..., Layout]


@dataclass
class TorchNpu:
    package_dir: Path
    site: Path

    @property
    def include_dir(self) -> str:
        return str(self.package_dir / "include")

    @property
    def lib_dir(self) -> str:
        return str(self.package_dir / "lib")


def make_torch_npu(base: Path, stubs: dict[str, Path] | None = None) -> TorchNpu:
    site = base / "site-packages"
    package = site / "torch_npu"
    write(
        package / "__init__.py",
        'raise ImportError("the synthetic torch_npu must never be imported")\n',
    )
    write(package / "include" / "torch_npu" / "stub.h", TORCH_NPU_H)
    put_libs(package / "lib", ["libtorch_npu.so"], stubs)
    return TorchNpu(package, site)


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path.resolve()


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, base: Path) -> Iterator[None]:
    """No real CANN or torch_npu: default roots point into the test's own tree."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(
        _cann,
        "DEFAULT_CANN_ROOTS",
        (str(base / "Ascend" / "cann"), str(base / "Ascend" / "ascend-toolkit" / "latest")),
    )
    ascend.clear_cache()
    yield
    ascend.unregister()
    ascend.clear_cache()


def expected_npu_options(layout: Layout, torch_npu: TorchNpu) -> ido.CppDeviceOptions:
    return ido.CppDeviceOptions(
        definitions=["USE_NPU"],
        include_dirs=[torch_npu.include_dir, *layout.include_dirs],
        cflags=[],
        ldflags=[],
        libraries_dirs=[torch_npu.lib_dir, *layout.library_dirs],
        libraries=["torch_npu", *layout.libraries],
        passthrough_args=PASSTHROUGH,
    )


def without_core_definitions(options: ido.CppDeviceOptions) -> ido.CppDeviceOptions:
    """Drop what the core adds to every provider's result (its SDK identity)."""
    return options._replace(
        definitions=[d for d in options.definitions if not d.startswith("INDUCTOR_DEVICE_OPTIONS_")]
    )


def use(monkeypatch: pytest.MonkeyPatch, layout: Layout, torch_npu: TorchNpu) -> None:
    for var, value in layout.env.items():
        monkeypatch.setenv(var, value)
    monkeypatch.syspath_prepend(str(torch_npu.site))


# --- discovery and the exact option lists -------------------------------------------------


@pytest.mark.parametrize("make_layout", LAYOUTS)
def test_npu_options_exact(
    make_layout: LayoutBuilder, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = make_layout(base)
    torch_npu = make_torch_npu(base)
    use(monkeypatch, layout, torch_npu)

    assert npu_cpp_device_options() == expected_npu_options(layout, torch_npu)
    cann = ascend.find_cann()
    assert cann.home == str(layout.home)  # links such as latest / cann resolved
    assert cann.source == (next(iter(layout.env)) if layout.env else "default")
    assert "torch_npu" not in sys.modules


@pytest.mark.parametrize("make_layout", LAYOUTS)
def test_provider_is_defaults_plus_npu_and_reaches_inductor(
    make_layout: LayoutBuilder, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = make_layout(base)
    torch_npu = make_torch_npu(base)
    use(monkeypatch, layout, torch_npu)

    default = ido.default_cpp_device_options("npu")
    added = expected_npu_options(layout, torch_npu)
    expected = ido.CppDeviceOptions(
        *(
            [*d, *(value for value in a if value not in d)]
            for d, a in zip(default, added, strict=True)
        )
    )
    assert ascend.cpp_device_options("npu", False, False) == expected
    assert ascend.cpp_device_options("npu", True, True) == expected  # flags: same lists

    ascend.register()
    assert without_core_definitions(ido.get_cpp_device_options("npu")) == expected
    assert without_core_definitions(ido.get_cpp_device_options("npu", aot_mode=True)) == expected
    assert ido.get_cpp_device_options("cpu") == ido.default_cpp_device_options("cpu")


def test_the_cann_release_joins_npus_sdk_identity(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two CANN trees whose headers and libraries are the same but whose install info names
    another release: another identity (CANN's own), and the release is what says so."""
    layout = classic_toolkit(base)
    torch_npu = make_torch_npu(base)
    use(monkeypatch, layout, torch_npu)
    ascend.register()
    info = layout.home / ARCH / "ascend_toolkit_install.info"

    def identity() -> str:
        testing.reset()
        ascend.register()
        [definition] = [
            d for d in ido.get_cpp_device_options("npu").definitions if d.startswith(IDENTITY)
        ]
        return definition

    without_info = identity()
    assert ascend.cpp_device_options.sdk_identity("npu") is None  # type: ignore[attr-defined]
    write(info, "package_name=Ascend-cann-toolkit\nversion=8.0.RC3\narch=x86_64\n")
    assert ascend.cpp_device_options.sdk_identity("npu") == "CANN 8.0.RC3"  # type: ignore[attr-defined]
    rc3 = identity()
    write(info, "package_name=Ascend-cann-toolkit\nversion=8.0.0\narch=x86_64\n")
    assert len({without_info, rc3, identity()}) == 3


def test_torch_npu_found_by_override_and_lib_override(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = classic_toolkit(base)
    torch_npu = make_torch_npu(base)  # not on sys.path: only the override finds it
    other_lib = base / "build" / "lib"
    put_libs(other_lib, ["libtorch_npu.so"], None)
    monkeypatch.setenv("ASCEND_HOME_PATH", layout.env["ASCEND_HOME_PATH"])
    monkeypatch.setenv("PYTORCH_NPU_INSTALL_PATH", str(torch_npu.package_dir))
    monkeypatch.setenv("LIBTORCH_NPU_PATH", str(other_lib))

    found = ascend.find_torch_npu()
    assert (found.package_dir, found.source) == (
        str(torch_npu.package_dir),
        "PYTORCH_NPU_INSTALL_PATH",
    )
    options = npu_cpp_device_options()
    assert options.libraries_dirs == [str(other_lib), *layout.library_dirs]
    assert options.include_dirs == [torch_npu.include_dir, *layout.include_dirs]


def test_unusable_torch_npu_override_is_skipped_with_a_warning(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch_npu = make_torch_npu(base)
    monkeypatch.syspath_prepend(str(torch_npu.site))
    stale = base / "old-build" / "torch_npu"
    stale.mkdir(parents=True)
    monkeypatch.setenv("PYTORCH_NPU_INSTALL_PATH", str(stale))
    with pytest.warns(RuntimeWarning) as record:
        found = ascend.find_torch_npu()
    assert (found.package_dir, found.source) == (str(torch_npu.package_dir), "find_spec")
    assert [str(w.message) for w in record] == [
        f"Ignoring PYTORCH_NPU_INSTALL_PATH={stale} (no libtorch_npu.so); using torch_npu at "
        f"{torch_npu.package_dir} instead"
    ]


def test_set_env_sh_sets_both_variables(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layout = cann_85(base)
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):  # as CANN's set_env.sh exports
        monkeypatch.setenv(var, str(base / "Ascend" / "cann"))
    found = ascend.find_cann()
    assert (found.source, found.root, found.home) == (
        "ASCEND_HOME_PATH",
        str(base / "Ascend" / "cann"),
        str(layout.home),
    )


def test_changing_ascend_home_path_gives_the_new_tree(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = classic_toolkit(base / "old")
    new = cann_85(base / "new")
    torch_npu = make_torch_npu(base)
    monkeypatch.syspath_prepend(str(torch_npu.site))

    monkeypatch.setenv("ASCEND_HOME_PATH", str(old.home.parent / "latest"))
    assert npu_cpp_device_options() == expected_npu_options(old, torch_npu)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(new.home.parent / "cann"))
    assert npu_cpp_device_options() == expected_npu_options(new, torch_npu)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(old.home))
    assert ascend.find_cann().home == str(old.home)


def test_discovery_is_cached_until_the_environment_changes(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = classic_toolkit(base)
    monkeypatch.setenv("ASCEND_HOME_PATH", layout.env["ASCEND_HOME_PATH"])
    first = ascend.find_cann()
    assert ascend.find_cann() is first

    # The same environment: the tree is not looked at again ...
    write(layout.home / ARCH / "lib64" / "libacl_rt.so")
    (layout.home / ARCH / "lib64" / "libascendcl.so").unlink()
    assert ascend.find_cann() is first
    # ... until the cache is cleared or a variable it reads changes.
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", "/elsewhere")
    assert ascend.find_cann().libraries == ("runtime", "acl_rt")
    ascend.clear_cache()
    assert ascend.find_cann() is not first


def test_default_roots_parameter(base: Path) -> None:
    layout = cann_85(base / "elsewhere")
    found = ascend.find_cann(
        default_roots=[str(base / "nothing"), str(layout.home.parent / "cann")]
    )
    assert (found.home, found.source, found.root) == (
        str(layout.home),
        "default",
        str(layout.home.parent / "cann"),
    )


def test_unusable_environment_variable_is_skipped_with_a_warning(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = cann_85(base)
    stale = base / "Ascend" / "ascend-toolkit" / "8.0.RC3"
    monkeypatch.setenv("ASCEND_HOME_PATH", str(stale))
    with pytest.warns(RuntimeWarning) as record:
        found = ascend.find_cann()
    assert found.home == str(layout.home)
    assert [str(w.message) for w in record] == [
        f"Ignoring ASCEND_HOME_PATH={stale} (does not exist); using the CANN toolkit at "
        f"{layout.home} instead"
    ]


def test_register_is_lazy_idempotent_and_undone(base: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ascend.register()  # no CANN, no torch_npu: nothing is looked up yet
        ascend.register()  # no "already registered" warning
    assert "npu" in ido.introspection.registered_device_types()
    assert ascend.unregister() is True
    assert ascend.unregister() is False
    assert "npu" not in ido.introspection.registered_device_types()


def test_patch_get_cpp_torch_device_options_registers(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = cann_9_split(base)
    torch_npu = make_torch_npu(base)
    use(monkeypatch, layout, torch_npu)
    import torch._inductor.cpp_builder as cpp_builder

    before = cpp_builder.get_cpp_torch_device_options
    mode = ascend.patch_get_cpp_torch_device_options()
    if NATIVE:  # torch has the upstream API: used
        assert mode == "native"
        assert "npu" in getattr(cpp_builder, "_cpp_device_options_registry")  # noqa: B009
    else:
        assert mode == "hook"
    assert cpp_builder.get_cpp_torch_device_options is before  # nothing replaced by us
    definitions, *_rest, libraries, passthrough = cpp_builder.get_cpp_torch_device_options("npu")
    assert definitions[0] == "USE_NPU"
    assert libraries[-3:] == ["torch_npu", "runtime", "acl_rt"]
    assert passthrough == PASSTHROUGH


def test_patch_warns_only_when_the_module_dict_was_written_past_the_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import warnings

    import torch._inductor.cpp_builder as cpp_builder

    def get_cpp_torch_device_options(
        device_type: str, aot_mode: bool = False, compile_only: bool = False
    ) -> tuple[list[str], ...]:
        return ([], [], [], [], [], [], [])

    ido.get_cpp_device_options("cpu")  # make sure the hook is installed first
    # The legacy replacement, assigned after the hook, is adopted: registrations still apply.
    monkeypatch.setattr(cpp_builder, "get_cpp_torch_device_options", get_cpp_torch_device_options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ascend.patch_get_cpp_torch_device_options()
    monkeypatch.undo()
    # Written to the module's __dict__, past the hook: registrations do not reach Inductor.
    monkeypatch.setitem(
        cpp_builder.__dict__, "get_cpp_torch_device_options", get_cpp_torch_device_options
    )
    with pytest.warns(RuntimeWarning, match="do not reach Inductor"):
        ascend.patch_get_cpp_torch_device_options()


# --- errors, word for word -----------------------------------------------------------------


def test_missing_cann_error(base: Path) -> None:
    with pytest.raises(ascend.CannNotFoundError) as info:
        ascend.find_cann()
    assert str(info.value) == "\n".join(
        [
            "Could not find the Ascend CANN toolkit needed to compile Inductor kernels for the "
            "'npu' device.",
            "Tried:",
            "  - ASCEND_HOME_PATH: not set",
            "  - ASCEND_TOOLKIT_HOME: not set",
            f"  - {base}/Ascend/cann: does not exist",
            f"  - {base}/Ascend/ascend-toolkit/latest: does not exist",
            CANN_HINT,
        ]
    )
    assert isinstance(info.value, ido.CppDeviceOptionsError)
    assert isinstance(info.value, ascend.AscendOptionsError)
    assert info.value.device_type == "npu"
    assert info.value.description == "inductor_device_options.ascend.cpp_device_options"
    assert f"Fix: {info.value.fix}" == CANN_HINT  # the fix is an attribute, and ends the text


def test_missing_cann_error_says_why_each_place_failed(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_header = base / "no-header"
    (no_header / "include").mkdir(parents=True)
    no_library = base / "no-library"
    write(no_library / ARCH / "include" / "acl" / "acl.h")
    put_libs(no_library / ARCH / "lib64", ["libruntime.so"], None)
    a_file = write(base / "Ascend" / "cann", "not a directory")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(no_header))
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(no_library))

    with pytest.raises(ascend.CannNotFoundError) as info:
        npu_cpp_device_options()
    assert str(info.value) == "\n".join(
        [
            "Could not find the Ascend CANN toolkit needed to compile Inductor kernels for the "
            "'npu' device.",
            "Tried:",
            f"  - ASCEND_HOME_PATH={no_header}: no acl/acl.h under include/ or {ARCH}/include/",
            f"  - ASCEND_TOOLKIT_HOME={no_library}: no AscendCL runtime library "
            f"(libascendcl.so, libacl_rt.so) under lib64/ or {ARCH}/lib64/",
            f"  - {a_file}: is not a directory",
            f"  - {base}/Ascend/ascend-toolkit/latest: does not exist",
            CANN_HINT,
        ]
    )
    assert info.value.tried[0] == (
        f"ASCEND_HOME_PATH={no_header}",
        f"no acl/acl.h under include/ or {ARCH}/include/",
    )


def test_missing_cann_error_keeps_the_search_order(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(base / "home"))  # "~" is expanded when tried
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(base / "toolkit"))
    with pytest.raises(ascend.CannNotFoundError) as info:
        ascend.find_cann(default_roots=[str(base / "toolkit"), "~/Ascend/cann"])
    assert info.value.tried == (
        ("ASCEND_HOME_PATH", "not set"),
        (f"ASCEND_TOOLKIT_HOME={base}/toolkit", "does not exist"),
        (f"{base}/toolkit", "already tried"),
        (f"{base}/home/Ascend/cann", "does not exist"),
    )


def test_missing_torch_npu_error(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layout = classic_toolkit(base)
    monkeypatch.setenv("ASCEND_HOME_PATH", layout.env["ASCEND_HOME_PATH"])
    with pytest.raises(ascend.TorchNpuNotFoundError) as info:
        npu_cpp_device_options()
    assert str(info.value) == "\n".join(
        [
            "Could not find torch_npu, which Inductor needs to compile kernels for the 'npu' "
            "device.",
            "Tried:",
            "  - PYTORCH_NPU_INSTALL_PATH: not set",
            "  - importlib.util.find_spec('torch_npu'): not found on sys.path",
            "  - importlib.metadata.distribution('torch_npu'): not installed",
            "Fix: install torch_npu for this torch version (pip install torch-npu) in this "
            "Python environment, or set PYTORCH_NPU_INSTALL_PATH to the torch_npu package "
            "directory.",
        ]
    )
    assert isinstance(info.value, ido.CppDeviceOptionsError)
    assert info.value.fix is not None and info.value.fix.startswith("install torch_npu for")


def test_torch_npu_without_libtorch_npu_error(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch_npu = make_torch_npu(base)
    (torch_npu.package_dir / "lib" / "libtorch_npu.so").unlink()
    monkeypatch.syspath_prepend(str(torch_npu.site))
    monkeypatch.setenv("PYTORCH_NPU_INSTALL_PATH", str(base / "missing"))
    with pytest.raises(ascend.TorchNpuNotFoundError) as info:
        ascend.find_torch_npu()
    assert str(info.value) == "\n".join(
        [
            "Could not find torch_npu, which Inductor needs to compile kernels for the 'npu' "
            "device.",
            "Tried:",
            f"  - PYTORCH_NPU_INSTALL_PATH={base}/missing: is not a directory",
            f"  - {torch_npu.lib_dir}: no libtorch_npu.so",
            "  - importlib.metadata.distribution('torch_npu'): not installed",
            "Fix: reinstall torch_npu, or set LIBTORCH_NPU_PATH to the directory holding "
            "libtorch_npu.so.",
        ]
    )
    assert info.value.fix == (
        "reinstall torch_npu, or set LIBTORCH_NPU_PATH to the directory holding libtorch_npu.so."
    )


def test_missing_cann_surfaces_through_inductor_not_at_import_or_register(base: Path) -> None:
    ascend.register()
    from torch._inductor.cpp_builder import CppTorchDeviceOptions

    with pytest.raises(ascend.CannNotFoundError, match=r"^Could not find the Ascend CANN toolkit"):
        CppTorchDeviceOptions(device_type="npu")
    CppTorchDeviceOptions(device_type="cpu")  # other devices are untouched


def test_import_does_not_import_inductor_or_torch_npu(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        import inductor_device_options.ascend as ascend
        ascend.register()
        bad = [m for m in ("torch._inductor", "torch_npu") if m in sys.modules]
        bad += [m for m in sys.modules if m.startswith("inductor_device_options._diagnose")]
        assert not bad, bad
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)


# --- what doctor reads off the provider, and the public face -------------------------------


def test_doctor_hints_say_what_to_do_for_ascend_and_whether_torch_npu_is_absent(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hints = hints_of(ascend.cpp_device_options)
    assert {key: value for key, value in hints.items() if key != "absent"} == {
        "setup": "for Ascend: source CANN's set_env.sh or set ASCEND_HOME_PATH",
        "loader": "for Ascend: source CANN's set_env.sh, which sets LD_LIBRARY_PATH",
        "headers": "for Ascend: install torch_npu",
    }
    absent = hints["absent"]
    assert callable(absent)
    assert absent() == "torch_npu is not installed (the bundled Ascend provider's device)"
    monkeypatch.syspath_prepend(str(make_torch_npu(base).site))  # found, never imported
    assert absent() is None
    assert "torch_npu" not in sys.modules


def test_the_provider_declares_the_headers_torch_npus_codegen_includes() -> None:
    headers = getattr(ascend.cpp_device_options, HEADERS_ATTRIBUTE)
    assert headers("npu", False)[-1] == "torch_npu/csrc/inductor/cpp_wrapper/npu.h"
    assert headers("npu", True)[-1] == "torch_npu/csrc/inductor/aoti_include/npu.h"
    assert "acl/acl.h" in headers("npu", False)


def test_the_public_face_is_what_a_user_of_the_provider_needs() -> None:
    assert sorted(ascend.__all__) == [
        "AscendOptionsError",
        "CannInstall",
        "CannNotFoundError",
        "CannPathError",
        "TorchNpuInstall",
        "TorchNpuNotFoundError",
        "clear_cache",
        "cpp_device_options",
        "find_cann",
        "find_torch_npu",
        "patch_get_cpp_torch_device_options",
        "register",
        "unregister",
    ]
    for name in ascend.__all__:  # shown where users import them from
        assert getattr(ascend, name).__module__ == "inductor_device_options.ascend", name


# --- end to end: Inductor's CppBuilder compiles, links and loads against the trees ----------


@needs_gxx
@pytest.mark.parametrize("make_layout", LAYOUTS)
def test_cpp_builder_compiles_links_and_loads(
    make_layout: LayoutBuilder,
    base: Path,
    monkeypatch: pytest.MonkeyPatch,
    stub_libs: dict[str, Path],
) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(base / "inductor-cache"))
    monkeypatch.setenv("TMPDIR", str(base / "tmp"))
    (base / "tmp").mkdir()
    layout = make_layout(base, stub_libs)
    torch_npu = make_torch_npu(base, stub_libs)
    use(monkeypatch, layout, torch_npu)
    ascend.register()

    from torch._inductor.cpp_builder import CppBuilder, CppTorchDeviceOptions

    source = write(base / "src" / "npu_probe.cpp", PROBE_CPP)
    out = base / "out"
    out.mkdir()
    builder = CppBuilder(
        name="npu_probe",
        sources=[str(source)],
        BuildOption=CppTorchDeviceOptions(device_type="npu"),
        output_dir=str(out),
    )
    command = builder.get_command_line()
    assert "-D USE_NPU" in command
    assert f"-l{layout.libraries[-1]}" in command
    builder.build()

    # No rpath in Inductor's link line: load the dependencies first, by path, the way
    # LD_LIBRARY_PATH from set_env.sh would provide them.
    cann_lib = Path(layout.library_dirs[0])
    keep = [
        ctypes.CDLL(str(cann_lib / "libruntime.so")),
        ctypes.CDLL(str(cann_lib / layout.acl_lib)),
        ctypes.CDLL(str(torch_npu.package_dir / "lib" / "libtorch_npu.so")),
    ]
    probe = ctypes.CDLL(builder.get_target_file_path())
    acl_version = 1 if layout.acl_lib == "libascendcl.so" else 2
    assert probe.npu_probe(4) == acl_version * 1000 + layout.rt_layout * 100 + 3 * 10 + 4
    del keep


# --- CANN where g++ cannot be given its paths, and links that lead nowhere -------------------


@pytest.mark.parametrize("directory", ["my ascend", "it's", "new\nline"])
def test_cann_under_a_path_g_plus_plus_cannot_take_says_so_and_what_to_do(
    directory: str, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = classic_toolkit(base / directory)
    torch_npu = make_torch_npu(base)
    use(monkeypatch, layout, torch_npu)
    ascend.register()
    from torch._inductor.cpp_builder import CppTorchDeviceOptions

    if "\n" not in directory and all(
        map(cpp_builder_keeps_whole, ["include_dirs", "libraries_dirs"])
    ):
        # torch 2.15 quotes -I and -L: g++ can be given such a path.
        home = os.path.realpath(layout.home)
        options = CppTorchDeviceOptions(device_type="npu")
        assert any(path.startswith(home) for path in options.get_include_dirs())
        assert any(path.startswith(home) for path in options.get_libraries_dirs())
        return
    with pytest.raises(ascend.CannPathError) as info:
        CppTorchDeviceOptions(device_type="npu")
    message = str(info.value)
    assert message.startswith(
        f"The Ascend CANN toolkit is installed at {str(layout.home)!r} (found through "
        f"ASCEND_HOME_PATH: {layout.env['ASCEND_HOME_PATH']!r}), a path Inductor cannot pass "
        "to the compiler for the 'npu' device: "
    )
    assert "\nFix: install (or move) it to a path without whitespace, quotes" in message
    assert info.value.fix is not None and message.endswith(f"\nFix: {info.value.fix}")
    assert isinstance(info.value, ascend.AscendOptionsError)
    assert info.value.device_type == "npu"


def test_a_latest_link_that_loops_says_so_and_how_to_repair_it(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toolkit = base / "Ascend" / "ascend-toolkit"
    latest = symlink(toolkit / "latest", "latest")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(latest))
    with pytest.raises(ascend.CannNotFoundError) as info:
        ascend.find_cann()
    message = str(info.value)
    assert f"  - ASCEND_HOME_PATH={latest}: is a symlink loop ({latest} -> {latest})" in message
    assert (
        f"Fix: re-point {latest} at the installed CANN release (`ln -sfn <release directory> "
        f"{latest}`), or source CANN's environment script"
    ) in message


def test_a_latest_link_to_a_removed_release_says_so(base: Path) -> None:
    toolkit = base / "Ascend" / "ascend-toolkit"
    latest = symlink(toolkit / "latest", "8.0.RC2")  # the default root; 8.0.RC2 uninstalled
    with pytest.raises(ascend.CannNotFoundError) as info:
        ascend.find_cann()
    assert f"  - {latest}: is a broken symlink to 8.0.RC2, which does not exist" in str(info.value)
    assert f"Fix: re-point {latest} at the installed CANN release" in str(info.value)


@pytest.mark.parametrize("before", [None, "/opt/elsewhere"], ids=["unset", "set"])
def test_a_stand_in_install_is_found_then_gone_with_the_environment_as_it_was(
    before: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ASCEND_HOME_PATH", "PYTORCH_NPU_INSTALL_PATH"):
        if before is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, before)
    with pytest.raises(RuntimeError, match="in the block"), testing.stand_in_ascend() as install:
        assert ascend.find_cann(default_roots=()).home == install.cann
        assert ascend.find_torch_npu().package_dir == install.torch_npu
        raise RuntimeError("in the block")
    assert not os.path.exists(install.cann) and not os.path.exists(install.torch_npu)
    for name in ("ASCEND_HOME_PATH", "PYTORCH_NPU_INSTALL_PATH"):
        assert os.environ.get(name) == before
