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


def test_a_started_process_does_and_the_next_sitecustomize_runs(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import sys; sys.next_site_ran = True\n")
    env = {**os.environ, "PYTHONPATH": f"{os.environ['PYTHONPATH']}{os.pathsep}{tmp_path}"}
    env.pop("TORCHINDUCTOR_VEC_ISA_OK")
    code = f"import sys; {PROBE}; print(sys.next_site_ran)"
    finished = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split() == ["True", "True"]


def test_where_torch_reads_the_variable_the_variable_wins() -> None:
    env = {**os.environ, "TORCHINDUCTOR_VEC_ISA_OK": "0"}
    finished = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300
    )
    assert finished.returncode == 0, finished.stderr
    # torch 2.13+ reads the variable (False); torch 2.6 reads none, and the site sets True.
    reads_variable = "TORCHINDUCTOR_VEC_ISA_OK" in Path(inductor_config.__file__).read_text()
    assert finished.stdout.split() == [str(not reads_variable)]
