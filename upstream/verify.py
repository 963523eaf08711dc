"""Verify the upstream patches in ``upstream/`` without copying torch into the repo.

Usage (from the repository root, with the project's virtualenv)::

    python upstream/verify.py [--skip-package-tests] [--skip-torch-npu]
                              [--npu-wheel PATH] [-- PYTEST_ARGS...]
    python upstream/verify.py --overlay-only [-- PYTEST_ARGS...]

Steps (each prints one ``PASS``/``FAIL``/``SKIP`` line; exit status 1 if any failed):

1. ``pytorch-patch``: copy the installed ``torch/_inductor/cpp_builder.py`` into a
   temporary tree, check the patches made for that torch release,
   ``pytorch/torch-<major.minor>/*.patch`` (``0001-...`` the registry, ``0002-...``
   the ldflags of the CMake project), with ``git apply --check`` (or
   ``patch --dry-run --fuzz=0`` when git is missing): each alone on the installed
   file (upstream, each is a change of its own), then all in order, and byte-compile
   the result. A torch with no patch of its own fails the step, naming the releases
   that have one.
2. Run the tests with an import overlay. A temporary directory goes first on
   ``PYTHONPATH``. Its ``sitecustomize.py`` puts a ``sys.meta_path`` finder in
   front that loads ``torch._inductor.cpp_builder`` from the patched copy.
   ``__name__``, ``__package__``, ``__spec__`` and ``__file__`` stay those of the
   installed module, so ``_TORCH_PATH`` and the other paths derived from
   ``__file__`` still point into the installed torch. Tracebacks show the lines
   of the patched file. Subprocesses inherit the overlay through ``PYTHONPATH``.
   The variable ``INDUCTOR_DEVICE_OPTIONS_EXPECT_NATIVE=1`` is set, so the
   package's tests can assert that the package used the native API.

   * ``overlay``: a probe process checks that ``register_cpp_device_options``
     exists and that the module really comes from the patched file.
   * ``pytorch-tests``: ``upstream/pytorch/test_*.py``, one file per patch.
   * ``package-tests``: ``python -m pytest tests -x -q [PYTEST_ARGS...]`` from the
     repo root. If pytest collects no tests (exit status 5), the step fails,
     unless ``--skip-package-tests`` is given.
3. ``torch-npu-patch``: get the released torch-npu 2.14.0 wheel and check that
   ``torch_npu/0001-inductor-register-npu-cpp-device-options.patch`` applies to
   its ``torch_npu/_inductor/cpp_builder.py``. Only that one file is extracted.
   The wheel is downloaded with ``pip download --no-deps`` into
   ``$XDG_CACHE_HOME/inductor-device-options/wheels`` (default
   ``~/.cache/inductor-device-options/wheels``). A wheel already there is
   reused, and ``--npu-wheel`` uses a local wheel instead. The patched
   ``patch_get_cpp_torch_device_options()`` is then run against the real torch
   twice. With the overlay it must register ``"npu"`` through the API. With the
   stock torch it must fall back to replacing the function. The step is
   SKIPped, with the reason, when the package registry is unreachable.

``--overlay-only`` is for CI: it builds the overlay, runs the probe and
``pytest tests -x -q [PYTEST_ARGS...]`` under it, and exits with pytest's
status (1 if the overlay cannot be built). From Python::

    sys.path.insert(0, "upstream")
    import verify
    rc = verify.run_package_tests_under_overlay(["-k", "native"])

    with verify.torch_overlay() as overlay:       # or build the command yourself
        subprocess.run([sys.executable, "-m", "pytest", "tests"], env=overlay.env)
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
PYTORCH_PATCHES = HERE / "pytorch"
# The patches of a release, applied in order of their names (0001-..., 0002-...).
PYTORCH_PATCH_GLOB = "*.patch"
PYTORCH_TESTS = sorted((HERE / "pytorch").glob("test_*.py"))
# For what tests torch alone (the patches): `import torch` then does not arm this package.
WITHOUT_PACKAGE_AUTOLOAD = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
NPU_PATCH = HERE / "torch_npu" / "0001-inductor-register-npu-cpp-device-options.patch"

MODULE = "torch._inductor.cpp_builder"
TORCH_REL_PATH = "torch/_inductor/cpp_builder.py"
NPU_REL_PATH = "torch_npu/_inductor/cpp_builder.py"
NPU_VERSION = "2.14.0"
# torch_npu's cpp_builder.py is pure Python and the same in every wheel of a
# release. Pin one wheel, so the download does not depend on the host.
NPU_WHEEL_PLATFORM = ("manylinux_2_28_x86_64", "3.11")
EXPECT_NATIVE_ENV = "INDUCTOR_DEVICE_OPTIONS_EXPECT_NATIVE"
OVERLAY_ENV = "INDUCTOR_DEVICE_OPTIONS_PATCHED_CPP_BUILDER"

UNREACHABLE_MARKERS = (
    "connection error",
    "could not fetch url",
    "newconnectionerror",
    "failed to establish a new connection",
    "max retries exceeded",
    "temporary failure in name resolution",
    "name or service not known",
    "network is unreachable",
    "connecttimeout",
    "read timed out",
    "proxyerror",
)

SITECUSTOMIZE = '''\
"""Generated by upstream/verify.py: load {module} from a patched copy."""

import importlib.machinery
import importlib.util
import sys

_MODULE = {module!r}
_ORIGINAL = {original!r}
_PATCHED = {patched!r}


class _PatchedSourceLoader(importlib.machinery.SourceFileLoader):
    """Report the installed path as __file__ but execute the patched source."""

    def get_data(self, path):
        if path == _ORIGINAL:
            path = _PATCHED
        return super().get_data(path)

    def path_stats(self, path):
        raise OSError("no bytecode cache for the overlay")  # always recompile

    def source_to_code(self, data, path, *, _optimize=-1):
        # Compile with the patched path so tracebacks show the right lines.
        return compile(data, _PATCHED, "exec", dont_inherit=True, optimize=_optimize)


class _OverlayFinder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != _MODULE:
            return None
        loader = _PatchedSourceLoader(fullname, _ORIGINAL)
        return importlib.util.spec_from_file_location(fullname, _ORIGINAL, loader=loader)


sys.meta_path.insert(0, _OverlayFinder)


def _chain_next_sitecustomize():
    """Run the sitecustomize this file shadows, if there is one."""
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_chain_next_sitecustomize()
'''

PROBE = """\
import json, sys
import torch._inductor.cpp_builder as m
print(json.dumps({
    "has_register": hasattr(m, "register_cpp_device_options"),
    "has_registry": hasattr(m, "_cpp_device_options_registry"),
    "name": m.__name__,
    "package": m.__package__,
    "file": m.__file__,
    "code_file": m.register_cpp_device_options.__code__.co_filename,
    "torch_path": getattr(m, "_TORCH_PATH", None),
}))
"""

# Runs the patched torch_npu patch_get_cpp_torch_device_options() against the
# real torch with a stand-in NPU callback. argv: patched torch_npu file,
# "native" or "legacy".
NPU_PROBE = """\
import ast, json, sys
import torch
import torch._inductor.cpp_builder as cb

path, mode = sys.argv[1], sys.argv[2]
tree = ast.parse(open(path).read(), path)
fn = [n for n in tree.body if isinstance(n, ast.FunctionDef)
      and n.name == "patch_get_cpp_torch_device_options"]
assert len(fn) == 1, "patch_get_cpp_torch_device_options not found"

def npu_options(device_type, aot_mode=False, compile_only=False):
    return (["USE_NPU"], ["/ascend/include"], [], [], ["/ascend/lib64"],
            ["torch_npu", "runtime", "ascendcl"], ["-DBUILD_LIBTORCH=ON"])

ns = {"torch": torch, "get_cpp_torch_device_options": npu_options}
exec(compile(ast.Module(body=fn, type_ignores=[]), path, "exec"), ns)
stock = cb.get_cpp_torch_device_options
if mode == "legacy" and hasattr(cb, "register_cpp_device_options"):
    del cb.register_cpp_device_options  # simulate a torch without the API
ns["patch_get_cpp_torch_device_options"]()
if mode == "native":
    assert cb._cpp_device_options_registry.get("npu") is npu_options, "npu not registered"
    assert cb.get_cpp_torch_device_options is stock, "function was replaced"
    assert cb.get_cpp_torch_device_options("npu")[0] == ["USE_NPU"], "npu not routed"
    assert "USE_NPU" not in cb.get_cpp_torch_device_options("cpu")[0], "cpu polluted"
else:
    assert cb.get_cpp_torch_device_options is npu_options, "legacy replacement missing"
print(json.dumps({"ok": True, "mode": mode}))
"""


@dataclass
class StepResult:
    name: str
    status: str  # PASS, FAIL or SKIP
    detail: str

    def line(self) -> str:
        return f"{self.status:<4}  {self.name}: {self.detail}"


@dataclass
class Overlay:
    original: Path  # installed torch/_inductor/cpp_builder.py
    patched: Path  # patched copy that the overlay loads instead
    env: dict[str, str]  # environment for subprocesses that should see the overlay
    numstat: str  # "+added/-removed" of each applied patch
    patches: list[Path]  # the patches applied, in order: those made for the installed torch


class VerifyError(Exception):
    pass


def report(result: StepResult) -> StepResult:
    print(result.line(), flush=True)
    return result


def installed_cpp_builder() -> Path:
    """Path of the installed torch/_inductor/cpp_builder.py (imports nothing)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise VerifyError(f"torch is not importable by {sys.executable}")
    path = Path(next(iter(spec.submodule_search_locations))) / "_inductor" / "cpp_builder.py"
    if not path.is_file():
        raise VerifyError(f"{path} does not exist")
    return path.resolve()


def torch_version() -> str:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def pytorch_patches_for(version: str) -> list[Path]:
    """The PyTorch patches made against ``version``'s cpp_builder.py (matched on
    major.minor), in the order they apply.

    Raises VerifyError naming the releases that have patches when there is none.
    """
    minor = ".".join(version.split("+")[0].split(".")[:2])
    patches = sorted((PYTORCH_PATCHES / f"torch-{minor}").glob(PYTORCH_PATCH_GLOB))
    if patches:
        return patches
    have = sorted({p.parent.name for p in PYTORCH_PATCHES.glob(f"torch-*/{PYTORCH_PATCH_GLOB}")})
    raise VerifyError(
        f"no PyTorch patch for torch {version}: upstream/pytorch has patches for "
        f"{', '.join(have) or 'no release'}"
    )


def _isolated_git_env(root: Path) -> dict[str, str]:
    # Keep git apply from finding a repository above the temporary tree.
    env = dict(os.environ)
    env["GIT_CEILING_DIRECTORIES"] = str(root.parent)
    return env


def apply_patch(patch: Path, root: Path, rel_path: str, source: Path) -> str:
    """Copy source to root/rel_path, check that patch applies cleanly, apply it.

    Returns the "+added/-removed" numstat. Raises VerifyError with the tool's
    output if the patch does not apply.
    """
    target = root / rel_path
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    if not patch.is_file():
        raise VerifyError(f"{patch} is missing")

    git = shutil.which("git")
    if git:
        env = _isolated_git_env(root)
        commands = [
            [git, "apply", "--check", "-p1", "--verbose", str(patch)],
            [git, "apply", "-p1", str(patch)],
        ]
        for cmd in commands:
            proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise VerifyError(f"`{' '.join(cmd[1:3])}` failed: {proc.stderr.strip()}")
        numstat = subprocess.run(
            [git, "apply", "--numstat", str(patch)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        stat = f"+{numstat[0]}/-{numstat[1]}" if len(numstat) >= 2 else "?"
    elif shutil.which("patch"):
        for extra in (["--dry-run"], []):
            cmd = ["patch", "-p1", "--forward", "--fuzz=0", "--batch", *extra, "-i", str(patch)]
            proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
            if proc.returncode != 0:
                raise VerifyError(f"`patch {' '.join(extra)}` failed: {proc.stdout.strip()}")
        text = patch.read_text()
        lines = text[text.find("\ndiff ") :].splitlines()  # skip the commit message
        added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++ "))
        removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("--- "))
        stat = f"+{added}/-{removed}"
    else:
        raise VerifyError("neither git nor patch is installed")

    try:
        py_compile.compile(str(target), cfile=str(root / "compile-check.pyc"), doraise=True)
    except py_compile.PyCompileError as e:
        raise VerifyError(f"patched file does not compile: {e.msg}") from e
    return stat


def apply_series(
    patches: Sequence[Path], root: Path, rel_path: str, source: Path
) -> tuple[Path, str]:
    """Each patch alone on ``source`` (upstream, each is a change of its own), then all of
    them in order: the fully patched file and each patch's numstat. Raises VerifyError
    naming the patch that does not apply."""
    for index, patch in enumerate(patches[1:], start=1):
        apply_patch(patch, root / f"alone-{index}", rel_path, source)
    stats = []
    current = source
    for index, patch in enumerate(patches):
        stats.append(
            f"{patch.name[:4]} {apply_patch(patch, root / f'step-{index}', rel_path, current)}"
        )
        current = root / f"step-{index}" / rel_path
    return current, ", ".join(stats)


@contextlib.contextmanager
def torch_overlay() -> Iterator[Overlay]:
    """Step 1 plus the overlay: yields an Overlay whose env loads the patched module.

    Raises VerifyError if the PyTorch patch does not apply to the installed torch.
    """
    original = installed_cpp_builder()
    patches = pytorch_patches_for(torch_version())
    with tempfile.TemporaryDirectory(prefix="idopt-overlay-") as tmp:
        root = Path(tmp).resolve()
        patched, stat = apply_series(patches, root / "tree", TORCH_REL_PATH, original)
        site = root / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(
            SITECUSTOMIZE.format(module=MODULE, original=str(original), patched=str(patched))
        )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
        env[EXPECT_NATIVE_ENV] = "1"
        env[OVERLAY_ENV] = str(patched)
        yield Overlay(original=original, patched=patched, env=env, numstat=stat, patches=patches)


def probe_overlay(overlay: Overlay) -> StepResult:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=overlay.env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        return StepResult("overlay", "FAIL", f"probe crashed: {proc.stderr.strip()[-2000:]}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    problems = []
    if not info["has_register"] or not info["has_registry"]:
        problems.append("register_cpp_device_options is missing")
    if info["code_file"] != str(overlay.patched):
        problems.append(f"code comes from {info['code_file']}, not the patched copy")
    if info["file"] != str(overlay.original):
        problems.append(f"__file__ is {info['file']}, not {overlay.original}")
    if (info["name"], info["package"]) != (MODULE, "torch._inductor"):
        problems.append(f"__name__/__package__ are {info['name']}/{info['package']}")
    if problems:
        return StepResult("overlay", "FAIL", "; ".join(problems))
    return StepResult(
        "overlay",
        "PASS",
        f"{MODULE}.register_cpp_device_options present, loaded from the patched copy "
        f"(__file__ and _TORCH_PATH={info['torch_path']} unchanged)",
    )


def run_pytorch_tests(overlay: Overlay) -> StepResult:
    name = "pytorch-tests"
    # Under CI=true torch's run_tests() writes XML reports through xmlrunner, which is not a
    # dependency here: the verdict is read from the unittest summary instead.
    env = {key: value for key, value in overlay.env.items() if key != "CI"}
    # The patches' tests are torch's: they test the patched torch alone, without this
    # package's autoload, whose hook would serve their registered devices itself.
    env.update(WITHOUT_PACKAGE_AUTOLOAD)
    details, failed = [], False
    for tests in PYTORCH_TESTS:
        cmd = [sys.executable, str(tests)]
        print(f"+ {' '.join(cmd)}  (overlay)", flush=True)
        proc = subprocess.run(cmd, env=env, cwd=REPO_ROOT, capture_output=True, text=True)
        output = proc.stdout + proc.stderr
        sys.stdout.write(output)
        summary = [x for x in output.splitlines() if x.startswith(("Ran ", "OK", "FAILED"))]
        details.append(f"{tests.relative_to(REPO_ROOT)}: {' '.join(summary) or 'no summary'}")
        if "No module named 'expecttest'" in output:
            details[-1] += (
                "; torch.testing._internal.common_utils needs expecttest "
                "(PyTorch's test dependency): pip install expecttest"
            )
        failed |= proc.returncode != 0
    return StepResult(name, "FAIL" if failed else "PASS", "; ".join(details))


def package_pytest_command(pytest_args: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "pytest", "tests", "-x", "-q", *pytest_args]


def run_package_tests(overlay: Overlay, pytest_args: Sequence[str] = ()) -> tuple[int, StepResult]:
    name = "package-tests"
    cmd = package_pytest_command(pytest_args)
    print(f"+ {' '.join(cmd)}  (overlay, {EXPECT_NATIVE_ENV}=1)", flush=True)
    rc = subprocess.run(cmd, env=overlay.env, cwd=REPO_ROOT).returncode
    if rc == 0:
        return rc, StepResult(name, "PASS", "pytest tests passed with the patched torch")
    if rc == 5:
        return rc, StepResult(
            name,
            "FAIL",
            "pytest collected no tests in tests/ (exit 5); "
            "pass --skip-package-tests to skip this step",
        )
    return rc, StepResult(name, "FAIL", f"pytest tests exited with status {rc}")


def run_package_tests_under_overlay(pytest_args: Sequence[str] = ()) -> int:
    """For CI: run `pytest tests -x -q [pytest_args]` with the patched torch.

    Returns pytest's exit status, or 1 if the overlay cannot be built or probed.
    """
    try:
        with torch_overlay() as overlay:
            report(StepResult("pytorch-patch", "PASS", f"applied ({overlay.numstat})"))
            probe = report(probe_overlay(overlay))
            if probe.status != "PASS":
                return 1
            rc, result = run_package_tests(overlay, pytest_args)
            report(result)
            return rc
    except VerifyError as e:
        report(StepResult("pytorch-patch", "FAIL", str(e)))
        return 1


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "inductor-device-options" / "wheels"


def _find_wheel(directory: Path) -> Path | None:
    wheels = sorted(directory.glob(f"torch_npu-{NPU_VERSION}-*.whl"))
    return wheels[0] if wheels else None


def fetch_npu_wheel() -> tuple[Path | None, str]:
    """Return (wheel, how it was found), or (None, reason) if unreachable."""
    cache = _cache_dir()
    cached = _find_wheel(cache) if cache.is_dir() else None
    if cached:
        return cached, f"cached {cached.name}"
    cache.mkdir(parents=True, exist_ok=True)
    platform, python_version = NPU_WHEEL_PLATFORM
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-vv",
        "--no-deps",
        "--only-binary=:all:",
        "--platform",
        platform,
        "--python-version",
        python_version,
        "--retries",
        "1",
        "--timeout",
        "30",
        "--disable-pip-version-check",
        "-d",
        str(cache),
        f"torch-npu=={NPU_VERSION}",
    ]
    print(f"+ pip download --no-deps torch-npu=={NPU_VERSION} -d {cache}", flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheel = _find_wheel(cache)
    if proc.returncode == 0 and wheel:
        return wheel, f"downloaded {wheel.name}"
    output = (proc.stdout + proc.stderr).lower()
    if any(marker in output for marker in UNREACHABLE_MARKERS):
        return None, "package registry unreachable (pip download could not connect)"
    errors = [x for x in (proc.stdout + proc.stderr).splitlines() if x.startswith("ERROR")]
    raise VerifyError(f"pip download failed: {' '.join(errors) or proc.returncode}")


def check_npu_patch(overlay: Overlay | None, wheel_arg: str | None) -> StepResult:
    name = "torch-npu-patch"
    try:
        if wheel_arg:
            wheel, how = Path(wheel_arg), f"local {Path(wheel_arg).name}"
            if not wheel.is_file():
                return StepResult(name, "FAIL", f"{wheel} does not exist")
        else:
            found, how = fetch_npu_wheel()
            if found is None:
                return StepResult(name, "SKIP", f"{how}; torch_npu patch NOT checked")
            wheel = found
        with tempfile.TemporaryDirectory(prefix="idopt-npu-") as tmp:
            root = Path(tmp).resolve()
            with zipfile.ZipFile(wheel) as zf:
                try:
                    data = zf.read(NPU_REL_PATH)
                except KeyError:
                    return StepResult(name, "FAIL", f"{wheel.name} has no {NPU_REL_PATH}")
            source = root / "original.py"
            source.write_bytes(data)
            stat = apply_patch(NPU_PATCH, root / "tree", NPU_REL_PATH, source)
            patched = root / "tree" / NPU_REL_PATH
            ast.parse(patched.read_text(), str(patched))

            checks = [("legacy", dict(os.environ))]
            if overlay is not None:
                checks.insert(0, ("native", overlay.env))
            for mode, env in checks:
                proc = subprocess.run(
                    [sys.executable, "-c", NPU_PROBE, str(patched), mode],
                    # torch_npu's patch against torch alone: without this package's autoload,
                    # whose hook would adopt the legacy replacement instead of letting it stand.
                    env={**env, **WITHOUT_PACKAGE_AUTOLOAD},
                    cwd=root,
                    capture_output=True,
                    text=True,
                )
                if proc.returncode != 0:
                    tail = proc.stderr.strip().splitlines()[-1:] or [str(proc.returncode)]
                    return StepResult(name, "FAIL", f"{mode} path check failed: {tail[0]}")
        modes = " and ".join(
            {
                "native": "registers 'npu' via the API (patched torch)",
                "legacy": "falls back to replacing the function (torch without the API)",
            }[m]
            for m, _ in checks
        )
        return StepResult(name, "PASS", f"applies to {NPU_REL_PATH} of {how} ({stat}); {modes}")
    except VerifyError as e:
        return StepResult(name, "FAIL", str(e))
    except (OSError, zipfile.BadZipFile) as e:
        return StepResult(name, "FAIL", f"{type(e).__name__}: {e}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Verify upstream/ patches against the installed torch and torch-npu "
        f"{NPU_VERSION}. Arguments after `--` are passed to pytest.",
    )
    parser.add_argument(
        "--skip-package-tests",
        action="store_true",
        help="do not run `pytest tests` under the overlay",
    )
    parser.add_argument(
        "--skip-torch-npu", action="store_true", help="do not check the torch_npu patch (step 3)"
    )
    parser.add_argument(
        "--overlay-only",
        action="store_true",
        help="only run `pytest tests` under the overlay (for CI); exit with pytest's status",
    )
    parser.add_argument(
        "--npu-wheel",
        metavar="PATH",
        help=f"use this torch_npu-{NPU_VERSION} wheel instead of downloading",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, pytest_args = argv[:split], argv[split + 1 :]
    args = parser.parse_args(argv)

    if args.overlay_only:
        return run_package_tests_under_overlay(pytest_args)

    results: list[StepResult] = []
    with contextlib.ExitStack() as stack:
        overlay: Overlay | None = None
        try:
            overlay = stack.enter_context(torch_overlay())
            results.append(
                report(
                    StepResult(
                        "pytorch-patch",
                        "PASS",
                        f"{', '.join(str(p.relative_to(HERE)) for p in overlay.patches)} "
                        f"apply cleanly to torch {torch_version()} {overlay.original}, each "
                        f"alone and in order ({overlay.numstat})",
                    )
                )
            )
        except VerifyError as e:
            results.append(report(StepResult("pytorch-patch", "FAIL", str(e))))

        if overlay is None:
            results.append(report(StepResult("overlay", "SKIP", "PyTorch patch did not apply")))
        else:
            results.append(report(probe_overlay(overlay)))
            if results[-1].status == "PASS":
                results.append(report(run_pytorch_tests(overlay)))
                if args.skip_package_tests:
                    results.append(
                        report(StepResult("package-tests", "SKIP", "--skip-package-tests"))
                    )
                else:
                    results.append(report(run_package_tests(overlay, pytest_args)[1]))

        if args.skip_torch_npu:
            results.append(report(StepResult("torch-npu-patch", "SKIP", "--skip-torch-npu")))
        else:
            results.append(report(check_npu_patch(overlay, args.npu_wheel)))

    print("\nSummary:")
    for result in results:
        print("  " + result.line())
    failed = [r.name for r in results if r.status == "FAIL"]
    print(f"{'FAILED: ' + ', '.join(failed) if failed else 'OK'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
