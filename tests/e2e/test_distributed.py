"""A real distributed job: ``torchrun --standalone --nproc_per_node=2``, gloo on the CPU.

Each rank runs ``sample/distributed_job.py``, a user script that imports only torch: the
sample device and its C++ options reach the rank through torch's backend autoload. The
ranks share one Inductor cache, the session's, as ranks on one node do. What each rank
saw comes from the rank itself (its report) and from the compiler commands that every
rank and compile subprocess ran (logged by the sample's autoload, with their $RANK).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import torch_has_compile_subprocess, torch_precompiles_cpp_headers

from inductor_device_options import default_cpp_device_options
from inductor_device_options.sample import (
    DEVICE_MACRO,
    DEVICE_NAME,
    RUNTIME_LIBRARY,
    RUNTIME_LIBRARY_FILE,
    SDK_INCLUDE_DIR,
    SampleDevice,
)
from inductor_device_options.sample.compiler_commands import added_options, rendered_flags
from inductor_device_options.sample.distributed import built_by, run_job
from inductor_device_options.sample.elf import read_dynamic_section

RANKS = 2
# A model of its own per job: each job compiles it, rather than loading a module that an
# earlier job left in the shared cache, so that its compiler commands can be seen.
HIDDEN_FEATURES = {"normal": 24, "subprocess": 40}


@pytest.mark.parametrize("compile_mode", ["normal", "subprocess"])
def test_torchrun_job_every_rank_compiles_with_the_sampledev_options(
    sample_build: SampleDevice, compile_mode: str
) -> None:
    shared_cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    job = run_job(
        sample_build,
        RANKS,
        shared_cache,
        compile_mode=compile_mode,
        hidden_features=HIDDEN_FEATURES[compile_mode],
    )
    assert job.returncode == 0, job.output
    assert [report.rank for report in job.reports] == list(range(RANKS)), job.output
    rank_pids = {report.pid for report in job.reports}
    # torch 2.6 has no compile subprocess: it compiles in the rank.
    in_subprocess = compile_mode == "subprocess" and torch_has_compile_subprocess()
    torch_defaults = default_cpp_device_options(DEVICE_NAME)

    for report in job.reports:
        assert report.error is None, report.error
        assert (report.world_size, report.compile_mode) == (RANKS, compile_mode)
        # The compiled model ran on the device, matched eager CPU, and the ranks all-reduced.
        assert report.result_device == f"{DEVICE_NAME}:0"
        assert report.max_difference <= 1e-5
        assert report.all_reduce_max_difference <= 1e-5

        # The rank's own Inductor gets the sample's options: from its autoload, since
        # this launcher has none registered (the session fixture unregistered them).
        options = report.device_options
        assert DEVICE_MACRO in options.definitions
        assert str(SDK_INCLUDE_DIR) in options.include_dirs
        assert RUNTIME_LIBRARY in options.libraries
        flags = rendered_flags(added_options(options, torch_defaults))

        # The rank's own compile ran the compiler with them, even when the module it runs
        # was built by the other rank, where Inductor preprocesses its precompiled header in
        # every process that compiles (not torch 2.6: there a rank that finds all its
        # modules in the shared cache runs no compiler). In subprocess mode that process is
        # a child.
        compile_flags = [flag for flag in flags if flag[0] == "-D" or flag[0].startswith("-I")]
        ran = [
            c
            for c in job.commands
            if c.rank == report.rank and all(c.has(flag) for flag in compile_flags)
        ]
        builders = [built_by(module, job.commands) for module in report.loaded_modules]
        built_one = any(c is not None and c.rank == report.rank for c in builders)
        if torch_precompiles_cpp_headers() or built_one:
            assert ran, f"rank {report.rank} ran no compiler command with {compile_flags}"
        in_child = [c for c in ran if c.pid not in rank_pids]
        assert bool(in_child) == (bool(ran) and in_subprocess), [(c.pid, c.stage) for c in ran]

        # Every module the rank runs from the shared cache was built in this job, with
        # every flag of the rank's own options, the SDK fingerprint included: no module
        # built for another SDK, or before the job, was picked up.
        assert report.loaded_modules, f"rank {report.rank} runs no module from {shared_cache}"
        for module in report.loaded_modules:
            assert module.is_relative_to(shared_cache.resolve())
            command = built_by(module, job.commands)
            assert command is not None, f"{module} was not built in this job"
            missing = [flag for flag in flags if not command.has(flag)]
            assert not missing, f"{module} built without {missing}: {command.argv}"
            dynamic = read_dynamic_section(module)
            assert RUNTIME_LIBRARY_FILE in dynamic.needed
            assert str(sample_build.runtime_lib_dir) in dynamic.runpath
            assert command.rank in range(RANKS)
            if in_subprocess:
                assert command.pid not in rank_pids, "built by a rank, not a compile subprocess"
            else:
                assert command.pid in rank_pids

    # One SDK state across the job: every rank computed the same fingerprint.
    fingerprints = {
        tuple(d for d in r.device_options.definitions if "FINGERPRINT" in d) for r in job.reports
    }
    assert len(fingerprints) == 1 and all(fingerprints), fingerprints
