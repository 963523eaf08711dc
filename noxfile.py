"""The torch matrix: one nox session per torch release the package claims.

    nox -s tests-2.6.0              # one release (nox -l lists them)
    nox -t matrix                   # every release, then: nox -s matrix-summary
    nox -s tests-2.15.0 -- -k e2e   # arguments after -- go to pytest

Each session installs exactly that torch (PyPI's CUDA builds import and compile on a CPU-only
machine; 2.13.0 comes from a local CPU wheel where ``PIP_FIND_LINKS`` has one), fails if pip
installed any other version, builds this package's sdist and wheel and installs the wheel (not
the checkout), then runs the test suite, the demo and, where ``upstream/`` has a PyTorch patch
for that release, ``upstream/verify.py``. What it saw goes to ``.nox/matrix-summary/``;
``nox -s matrix-summary`` prints the table the README's Compatibility section is copied from.

``MATRIX_UPSTREAM=patch`` (CI sets it, for time) runs ``upstream/verify.py`` without rerunning
the package's test suite under the patched torch. A CUDA torch takes ~6 GB per virtualenv:
``rm -r .nox/tests-*`` when done.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import nox
from nox.command import CommandFailed

TORCH_RELEASES = ("2.6.0", "2.10.0", "2.13.0", "2.14.1", "2.15.0")
ROOT = Path(__file__).resolve().parent
SUMMARY_DIR = ROOT / ".nox" / "matrix-summary"
UPSTREAM_PATCHES = ROOT / "upstream" / "pytorch"

# The machine's pip configuration may cap torch below the release a session names (and
# PIP_CONSTRAINT= does not lift a constraint set in a config file): the matrix's own installs
# read no pip config file. PIP_FIND_LINKS and the other PIP_* variables still apply.
MATRIX_PIP_ENV = {"PIP_CONFIG_FILE": os.devnull}

nox.options.default_venv_backend = "venv"
nox.options.sessions = [f"tests-{release}" for release in TORCH_RELEASES]

PROBE = """\
import json, torch
import torch._inductor.cpp_builder
from torch._dynamo.device_interface import DeviceInterface
import inductor_device_options as ido
print(json.dumps({
    "torch": torch.__version__,
    "package_file": ido.__file__,
    "mode": ido.hook_state().mode,
    "torch_has_device_interface_hook": hasattr(DeviceInterface, "get_cpp_device_options"),
}))
"""


def _torch_versions(session: nox.Session) -> tuple[str, str]:
    """(torch.__version__, the installed distribution's version): PyPI's CUDA wheels say
    2.6.0+cu124 at run time but 2.6.0 in their metadata, which is what pip can pin."""
    output = session.run(
        "python",
        "-c",
        "import importlib.metadata, torch; "
        "print(torch.__version__, importlib.metadata.version('torch'))",
        silent=True,
        log=False,
    )
    assert isinstance(output, str)
    runtime, distribution = output.strip().splitlines()[-1].split()
    return runtime, distribution


def _require_torch(session: nox.Session, release: str, when: str) -> tuple[str, str]:
    """torch's versions, or the session fails naming what pip installed instead."""
    runtime, distribution = _torch_versions(session)
    if runtime.split("+")[0] != release:
        session.error(f"{when}: torch {runtime} is installed, the session is for {release}")
    session.log(f"torch.__version__ == {runtime!r} ({when})")
    return runtime, distribution


def _build_wheel(session: nox.Session, out_dir: Path) -> Path:
    """sdist, then the wheel from it: what a user installs, and proof the sdist is complete."""
    session.install("build", env=MATRIX_PIP_ENV)
    session.run("python", "-m", "build", "--outdir", str(out_dir), str(ROOT), silent=True)
    (wheel,) = out_dir.glob("inductor_device_options-*.whl")
    return wheel


def _junit_counts(path: Path) -> dict[str, int]:
    suites = ElementTree.parse(path).getroot()
    suite = suites if suites.tag == "testsuite" else suites.find("testsuite")
    assert suite is not None, f"no testsuite in {path}"
    total = int(suite.get("tests", "0"))
    failed = int(suite.get("failures", "0"))
    errors = int(suite.get("errors", "0"))
    skipped = int(suite.get("skipped", "0"))
    return {
        "passed": total - failed - errors - skipped,
        "failed": failed,
        "errors": errors,
        "skipped": skipped,
    }


def _demo_sections(output: str) -> dict[str, str]:
    """The verdict of each compile step of the demo's output, by step."""
    verdicts: dict[str, str] = {}
    for section in re.split(r"\n(?=\[\d+/\d+\] )", output):
        title = section.splitlines()[0]
        key = (
            "cpp_wrapper"
            if "cpp_wrapper" in title and "Control" not in title
            else "aoti"
            if "AOTInductor" in title
            else None
        )
        if key is None:
            continue
        lines = [line.strip() for line in section.splitlines()[1:]]
        ok = sum(line.startswith("ok ") for line in lines)
        failed = sum(line.startswith("FAIL") for line in lines)
        skipped = [line.split(None, 1)[1] for line in lines if line.startswith("SKIP")]
        if failed:
            verdicts[key] = f"FAIL ({failed} of {ok + failed} checks)"
        elif skipped:
            verdicts[key] = f"not checked: {skipped[0]}"
        else:
            verdicts[key] = f"pass ({ok} checks)"
    return verdicts


def _exit_status(session: nox.Session, *args: str, **kwargs: object) -> int:
    """Run a command and return its exit status (nox's ``run`` returns none)."""
    try:
        session.run(*args, **kwargs)  # type: ignore[arg-type]
    except CommandFailed as failure:
        return failure.return_code or 1
    return 0


def _upstream_patch_for(release: str) -> Path | None:
    minor = ".".join(release.split(".")[:2])
    directory = UPSTREAM_PATCHES / f"torch-{minor}"
    return directory if directory.is_dir() else None


def _matrix(session: nox.Session, release: str) -> None:
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix=f"ido-nox-{release}-"))
    # Inductor's caches and precompiled headers (~150 MB each) stay out of /tmp and ~.
    (scratch / "tmp").mkdir()
    session.env["TMPDIR"] = str(scratch / "tmp")
    session.env["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "inductor-cache")
    summary: dict[str, object] = {"session": session.name, "release": release}
    failures: list[str] = []
    try:
        session.install(f"torch=={release}", env=MATRIX_PIP_ENV)
        _, distribution = _require_torch(session, release, "after `pip install torch`")
        # Pin what was installed, so that installing the package cannot move it.
        pins = scratch / "torch-pin.txt"
        pins.write_text(f"torch=={distribution}\n")
        wheel = _build_wheel(session, scratch / "dist")
        # A reused virtualenv (nox -r) has the package already, at the same version: pip would
        # keep that install rather than the wheel just built.
        session.run("python", "-m", "pip", "uninstall", "-y", "-q", "inductor-device-options")
        session.install(f"{wheel}[test]", "-c", str(pins), env=MATRIX_PIP_ENV)
        summary["torch"] = _require_torch(session, release, f"after installing {wheel.name}")[0]

        probe = session.run("python", "-c", PROBE, silent=True, log=False)
        assert isinstance(probe, str)
        facts = json.loads(probe.strip().splitlines()[-1])
        venv = Path(session.virtualenv.location).resolve()
        if venv not in Path(facts["package_file"]).resolve().parents:
            session.error(f"the tests would import {facts['package_file']}, not the wheel")
        summary["mode"] = facts["mode"]
        summary["device_interface"] = (
            "torch's own" if facts["torch_has_device_interface_hook"] else "backported"
        )

        # The demo runs beside the suite: it keeps about one core busy, pytest's workers the
        # rest, and the session takes that much less time.
        demo_log = scratch / "demo.txt"
        with demo_log.open("w") as out:
            demo = subprocess.Popen(
                [
                    str(venv / "bin" / "inductor-device-options"),
                    "demo",
                    "--cache-dir",
                    str(scratch / "sampledev"),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **{k: v for k, v in session.env.items() if v is not None}},
            )
            session.log(f"inductor-device-options demo (pid {demo.pid}), beside pytest")
            junit = scratch / "junit.xml"
            try:
                pytest_rc = _exit_status(
                    session,
                    "python",
                    "-m",
                    "pytest",
                    "-p",
                    "no:cacheprovider",
                    f"--junitxml={junit}",
                    "--durations=10",
                    *session.posargs,
                )
            finally:
                demo_rc = demo.wait()
        if junit.is_file():
            summary["tests"] = _junit_counts(junit)
        if pytest_rc == 5:
            failures.append("pytest collected no tests (exit status 5)")
        elif pytest_rc:
            failures.append(f"pytest failed (exit status {pytest_rc})")

        demo_output = demo_log.read_text()
        print(demo_output, flush=True)
        passed = re.search(r"^All \d+ checks passed\.$", demo_output, re.MULTILINE)
        summary["demo"] = passed.group(0) if passed else "FAILED"
        summary["demo_steps"] = _demo_sections(demo_output)
        if demo_rc or not passed:
            failures.append(f"the demo did not print 'All N checks passed.' (exit {demo_rc})")

        if _upstream_patch_for(release) is None:
            summary["upstream"] = "no patch for this release"
        elif session.posargs:
            summary["upstream"] = "not run (pytest arguments given)"
        else:
            # MATRIX_UPSTREAM=patch (CI's legs, for time): the patch and PyTorch's tests under
            # it, without rerunning the package's suite under it.
            quick = os.environ.get("MATRIX_UPSTREAM") == "patch"
            verify = ["upstream/verify.py", "--skip-torch-npu"]
            verify_rc = _exit_status(
                session, "python", *verify, *(["--skip-package-tests"] if quick else [])
            )
            what = "verify.py (patch, PyTorch tests)" if quick else "verify.py"
            summary["upstream"] = f"{what} {'passed' if verify_rc == 0 else 'FAILED'}"
            if verify_rc:
                failures.append("upstream/verify.py failed")
    finally:
        summary["failures"] = failures
        summary["minutes"] = round((time.monotonic() - started) / 60, 1)
        SUMMARY_DIR.mkdir(parents=True, exist_ok=True)
        (SUMMARY_DIR / f"{session.name}.json").write_text(json.dumps(summary, indent=2) + "\n")
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        session.error("; ".join(failures))


def _make_session(release: str) -> None:
    def session(session: nox.Session) -> None:
        _matrix(session, release)

    session.__doc__ = f"torch {release}: install it, the wheel, then tests, demo, upstream"
    nox.session(name=f"tests-{release}", tags=["matrix"])(session)


for _release in TORCH_RELEASES:
    _make_session(_release)


def _cell_tests(summary: dict[str, object]) -> str:
    counts = summary.get("tests")
    if not isinstance(counts, dict):
        return "not run"
    cell = f"{counts['passed']} passed"
    for key in ("failed", "errors", "skipped"):
        if counts[key]:
            cell += f", {counts[key]} {key}"
    return cell


@nox.session(name="matrix-summary", python=False)
def matrix_summary(session: nox.Session) -> None:
    """Print what the tests-* sessions saw: the README's Compatibility table."""
    wanted = session.posargs or [f"tests-{release}" for release in TORCH_RELEASES]
    rows = [
        json.loads(path.read_text())
        for name in wanted
        if (path := SUMMARY_DIR / f"{name}.json").is_file()
    ]
    if not rows:
        session.error(f"no session results in {SUMMARY_DIR}: run nox -t matrix first")
    print(
        "| torch | mode | DeviceInterface hook | demo cpp_wrapper | demo AOTInductor "
        "| tests | upstream patch |"
    )
    print("|---|---|---|---|---|---|---|")
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for row in rows:
        steps = row.get("demo_steps") or {}
        print(
            f"| {row.get('torch', row['release'])} | {row.get('mode', '?')} "
            f"| {row.get('device_interface', '?')} | {steps.get('cpp_wrapper', 'not run')} "
            f"| {steps.get('aoti', 'not run')} | {_cell_tests(row)} "
            f"| {row.get('upstream') or 'not run'} |"
        )
        counts = row.get("tests") or {}
        totals["passed"] += counts.get("passed", 0)
        totals["failed"] += counts.get("failed", 0) + counts.get("errors", 0)
        totals["skipped"] += counts.get("skipped", 0)
    for row in rows:
        if row.get("failures"):
            print(f"{row['session']}: {'; '.join(row['failures'])}")
    print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
