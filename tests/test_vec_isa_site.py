"""The suite's own set-up (tests/conftest.py, tests/vec_isa_site/): every Python process a
test starts trusts the CPU's flags for Inductor's vector ISA, on every torch (2.6 reads no
variable for it), and a sitecustomize after the suite's still runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch._inductor.config as inductor_config

PROBE = "import torch._inductor.config as c; print(c.cpp.vec_isa_ok)"


def test_this_process_trusts_the_cpu_s_flags() -> None:
    assert inductor_config.cpp.vec_isa_ok is True


#: A sitecustomize before the suite's that runs the next one it finds past itself, as
#: upstream/verify.py's import overlay does: it runs the suite's, which must not run it again.
CHAINING_SITE = """\
import importlib.machinery, importlib.util, os, sys
sys.sites_ran = getattr(sys, "sites_ran", []) + ["before"]
here = os.path.dirname(os.path.abspath(__file__))
rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
if spec is not None:
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
"""


def test_a_started_process_does_and_the_sitecustomizes_around_it_run_once(tmp_path: Path) -> None:
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "sitecustomize.py").write_text(CHAINING_SITE)
    (tmp_path / "after").mkdir()
    (tmp_path / "after" / "sitecustomize.py").write_text(
        'import sys; sys.sites_ran = getattr(sys, "sites_ran", []) + ["after"]\n'
    )
    path = [str(tmp_path / "before"), os.environ["PYTHONPATH"], str(tmp_path / "after")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    env.pop("TORCHINDUCTOR_VEC_ISA_OK")
    code = f"import sys; {PROBE}; print(*sys.sites_ran)"
    finished = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert finished.returncode == 0 and "sitecustomize" not in finished.stderr, finished.stderr
    assert finished.stdout.split() == ["True", "before", "after"]


def test_where_torch_reads_the_variable_the_variable_wins() -> None:
    env = {**os.environ, "TORCHINDUCTOR_VEC_ISA_OK": "0"}
    finished = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300
    )
    assert finished.returncode == 0, finished.stderr
    # torch 2.13+ reads the variable (False); torch 2.6 reads none, and the site sets True.
    reads_variable = "TORCHINDUCTOR_VEC_ISA_OK" in Path(inductor_config.__file__).read_text()
    assert finished.stdout.split() == [str(not reads_variable)]
