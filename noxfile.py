"""The torch matrix: one nox session per torch release the package claims.

    nox -s tests-2.6.0              # one release (nox -l lists them)
    nox -t matrix                   # every release, then: nox -s matrix-summary
    nox -s tests-2.15.0 -- -k e2e   # arguments after -- go to pytest

Each session installs exactly that torch (PyPI's CUDA builds import and compile on a CPU-only
machine; 2.13.0 comes from a local CPU wheel where ``PIP_FIND_LINKS`` has one), fails if pip
installed any other version, builds this package's sdist and wheel and installs the wheel (not
the checkout), then runs the test suite, the demo and, where ``upstream/`` has a PyTorch patch
for that release, ``upstream/verify.py``. What it saw goes to ``.nox/matrix-summary/``;
``nox -s matrix-summary`` prints the compatibility table and writes it, with the sessions'
results, into ``docs/_generated/`` (the docs render that file; nobody copies it by hand).

The oldest torch runs on the oldest Python the package claims (``requires-python``), the
newest on the newest Python that torch supports (``SESSION_PYTHON``), the others on 3.11.
Each interpreter is looked up on ``PATH``, then among pyenv's installs.

``MATRIX_UPSTREAM=patch`` (CI sets it, for time) runs ``upstream/verify.py`` without rerunning
the package's test suite under the patched torch. ``MATRIX_TESTS=leg`` (CI sets it, for time)
runs the tests marked ``leg`` (tests/matrix_legs.py), not the whole suite; each session's
result records which it ran. A CUDA torch takes ~6 GB per virtualenv: ``rm -r .nox/tests-*``
when done.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import nox
from nox.command import CommandFailed

TORCH_RELEASES = ("2.6.0", "2.10.0", "2.13.0", "2.14.1", "2.15.0")
ROOT = Path(__file__).resolve().parent
SUMMARY_DIR = ROOT / ".nox" / "matrix-summary"
#: What the docs render: every session's latest result, and the table made from them.
DOCS_MATRIX_JSON = ROOT / "docs" / "_generated" / "matrix.json"
DOCS_MATRIX_TABLE = ROOT / "docs" / "_generated" / "compatibility.md"
UPSTREAM_PATCHES = ROOT / "upstream" / "pytorch"
#: What a session runs of the suite (MATRIX_TESTS, "suite" when unset) -> pytest's arguments.
TEST_SCOPES: dict[str, tuple[str, ...]] = {"suite": (), "leg": ("-m", "leg")}

# The machine's pip configuration may cap torch below the release a session names (and
# PIP_CONSTRAINT= does not lift a constraint set in a config file): the matrix's own installs
# read no pip config file. PIP_FIND_LINKS and the other PIP_* variables still apply.
MATRIX_PIP_ENV = {"PIP_CONFIG_FILE": os.devnull}

#: The Python range the matrix proves: torch 2.6.0 on 3.10, the oldest Python the package
#: claims (pyproject's requires-python), and 2.15.0 on 3.13, the newest that torch 2.15
#: supports. Every other session runs on DEFAULT_PYTHON.
SESSION_PYTHON = {"2.6.0": "3.10", "2.15.0": "3.13"}
DEFAULT_PYTHON = "3.11"


def _runs(interpreter: str, version: str) -> bool:
    """Whether ``interpreter`` starts and is Python ``version`` (a pyenv shim on PATH exits
    with an error for a version that pyenv has installed but not activated)."""
    try:
        finished = subprocess.run(
            [interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return finished.returncode == 0 and finished.stdout.strip() == version


def _pyenv_root() -> Path:
    if os.environ.get("PYENV_ROOT"):
        return Path(os.environ["PYENV_ROOT"])
    if shutil.which("pyenv"):
        found = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
        if found.returncode == 0 and found.stdout.strip():
            return Path(found.stdout.strip())
    return Path.home() / ".pyenv"


def _patch_level(path: str) -> tuple[int, ...]:
    """(3, 10, 13) for .../versions/3.10.13/bin/python3.10: the newest patch release first."""
    release = Path(path).parent.parent.name
    return tuple(int(part) for part in re.findall(r"\d+", release))


def interpreter(version: str) -> str:
    """The Python ``version`` a session runs on, as nox's ``python=`` takes it: a path.

    ``python3.X`` on PATH when it runs, else pyenv's newest install of that version
    (``$(pyenv root)/versions/3.X.*``); else the version itself, which nox looks up and,
    when it cannot find it, reports."""
    candidates = [shutil.which(f"python{version}")]
    pattern = str(_pyenv_root() / "versions" / f"{version}.*" / "bin" / f"python{version}")
    candidates += sorted(glob.glob(pattern), key=_patch_level, reverse=True)
    for candidate in candidates:
        if candidate and _runs(candidate, version):
            return candidate
    return version


nox.options.default_venv_backend = "venv"
nox.options.sessions = [f"tests-{release}" for release in TORCH_RELEASES]

PROBE = """\
import json, platform, torch
import torch._inductor.cpp_builder
from torch._dynamo.device_interface import DeviceInterface
import inductor_device_options as ido
print(json.dumps({
    "torch": torch.__version__,
    "python": platform.python_version(),
    "package_file": ido.__file__,
    "mode": ido.introspection.hook_state().mode,
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


def _junit_suite(path: Path) -> ElementTree.Element:
    suites = ElementTree.parse(path).getroot()
    suite = suites if suites.tag == "testsuite" else suites.find("testsuite")
    assert suite is not None, f"no testsuite in {path}"
    return suite


def _junit_counts(path: Path) -> dict[str, int]:
    suite = _junit_suite(path)
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


def _junit_failed_tests(path: Path) -> list[str]:
    """The tests that failed or errored, as ``module.py::name``."""
    return [
        f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        for case in _junit_suite(path).iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]


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


def _commit() -> str | None:
    """The checkout's commit (``+`` when it has uncommitted changes), or None outside git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+" if dirty else "")


def _upstream_patch_for(release: str) -> Path | None:
    minor = ".".join(release.split(".")[:2])
    directory = UPSTREAM_PATCHES / f"torch-{minor}"
    return directory if directory.is_dir() else None


def _test_scope(session: nox.Session) -> tuple[str, tuple[str, ...]]:
    """What of the suite this session runs (MATRIX_TESTS), and pytest's arguments for it."""
    wanted = os.environ.get("MATRIX_TESTS") or "suite"
    if wanted not in TEST_SCOPES:
        session.error(f"MATRIX_TESTS={wanted!r}: expected one of {', '.join(TEST_SCOPES)}")
    return wanted, TEST_SCOPES[wanted]


def _matrix(session: nox.Session, release: str) -> None:
    started = time.monotonic()
    scope, selection = _test_scope(session)
    scratch = Path(tempfile.mkdtemp(prefix=f"ido-nox-{release}-"))
    # Inductor's caches and precompiled headers (~150 MB each) stay out of /tmp and ~.
    (scratch / "tmp").mkdir()
    session.env["TMPDIR"] = str(scratch / "tmp")
    session.env["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "inductor-cache")
    summary: dict[str, object] = {
        "session": session.name,
        "release": release,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "commit": _commit(),
        "test_scope": scope,
    }
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
        summary["python"] = facts["python"]
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
                    *selection,
                    *session.posargs,
                )
            finally:
                demo_rc = demo.wait()
        if junit.is_file():
            summary["tests"] = _junit_counts(junit)
            summary["failed_tests"] = _junit_failed_tests(junit)
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

    python = SESSION_PYTHON.get(release, DEFAULT_PYTHON)
    session.__doc__ = (
        f"torch {release} on Python {python}: install it, the wheel, then tests, demo, upstream"
    )
    nox.session(name=f"tests-{release}", python=interpreter(python), tags=["matrix"])(session)


for _release in TORCH_RELEASES:
    _make_session(_release)


def _cell_tests(summary: dict[str, Any]) -> str:
    counts = summary.get("tests")
    if not isinstance(counts, dict):
        return "not run"
    cell = f"{counts['passed']} passed"
    for key in ("failed", "errors", "skipped"):
        if counts[key]:
            cell += f", {counts[key]} {key}"
    # Results from before the scope was recorded ran the whole suite.
    if summary.get("test_scope", "suite") == "leg":
        cell += " (CI's leg tests)"
    return cell


def compatibility_table(rows: list[dict[str, Any]]) -> str:
    """The compatibility table (Markdown) of the sessions' results, as the docs show it."""
    lines = [
        "| torch | Python | mode | DeviceInterface hook | demo cpp_wrapper | demo AOTInductor "
        "| tests | upstream patch |",
        "|---|---|---|---|---|---|---|---|",
    ]
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    notes: list[str] = []
    for row in rows:
        steps = row.get("demo_steps") or {}
        mark = ""
        if row.get("transcribed"):
            mark = "[^transcribed]"
        lines.append(
            f"| {row.get('torch', row['release'])}{mark} | {row.get('python', '?')} "
            f"| {row.get('mode', '?')} | {row.get('device_interface', '?')} "
            f"| {steps.get('cpp_wrapper', 'not run')} | {steps.get('aoti', 'not run')} "
            f"| {_cell_tests(row)} | {row.get('upstream') or 'not run'} |"
        )
        counts = row.get("tests") or {}
        totals["passed"] += counts.get("passed", 0)
        totals["failed"] += counts.get("failed", 0) + counts.get("errors", 0)
        totals["skipped"] += counts.get("skipped", 0)
        when = ", ".join(
            part
            for part in (
                row.get("date") and f"ran {row['date']}",
                row.get("commit") and f"commit {row['commit']}",
                row.get("minutes") is not None and f"{row['minutes']} minutes",
            )
            if part
        )
        notes.append(f"- `{row['session']}`: {when or 'when: not recorded'}")
        if row.get("failures"):
            notes.append(f"  failures: {'; '.join(row['failures'])}")
        for test in row.get("failed_tests") or []:
            notes.append(f"  failed: `{test}`")
    lines += [
        "",
        f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped.",
        "",
        *notes,
    ]
    transcribed = {row["transcribed"] for row in rows if row.get("transcribed")}
    for source in sorted(transcribed):
        lines += ["", f"[^transcribed]: {source}"]
    return "\n".join(lines) + "\n"


def _session_order(row: dict[str, Any]) -> tuple[int, str]:
    name = row["session"]
    sessions = [f"tests-{release}" for release in TORCH_RELEASES]
    return (sessions.index(name) if name in sessions else len(sessions), name)


def merged_results(
    previous: list[dict[str, Any]], fresh: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Every session's latest result: ``fresh`` replaces the same session in ``previous``."""
    by_session = {row["session"]: row for row in previous}
    by_session.update((row["session"], row) for row in fresh)
    return sorted(by_session.values(), key=_session_order)


@nox.session(name="matrix-summary", python=False)
def matrix_summary(session: nox.Session) -> None:
    """Print what the tests-* sessions saw and write it into the docs (docs/_generated/)."""
    wanted = session.posargs or [f"tests-{release}" for release in TORCH_RELEASES]
    fresh = [
        json.loads(path.read_text())
        for name in wanted
        if (path := SUMMARY_DIR / f"{name}.json").is_file()
    ]
    if not fresh:
        session.error(f"no session results in {SUMMARY_DIR}: run nox -t matrix first")
    previous = (
        json.loads(DOCS_MATRIX_JSON.read_text())["sessions"] if DOCS_MATRIX_JSON.is_file() else []
    )
    rows = merged_results(previous, fresh)
    DOCS_MATRIX_JSON.parent.mkdir(parents=True, exist_ok=True)
    DOCS_MATRIX_JSON.write_text(json.dumps({"sessions": rows}, indent=2) + "\n")
    table = compatibility_table(rows)
    DOCS_MATRIX_TABLE.write_text(table)
    print(table, end="")
    session.log(
        f"updated {', '.join(row['session'] for row in fresh)} in "
        f"{DOCS_MATRIX_JSON.relative_to(ROOT)} and {DOCS_MATRIX_TABLE.relative_to(ROOT)}"
    )
