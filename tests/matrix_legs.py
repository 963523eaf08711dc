"""What CI's matrix legs run: the tests marked ``leg``.

CI runs the whole suite once, on torch 2.13, and on the oldest and newest releases (the
legs, ``MATRIX_TESTS=leg``: noxfile.py) the modules below: how the package meets torch.
They are the hook and its chain, torch's doors and the backported hooks, the options as g++
and ld receive them, the cache keys and the .pt2 stamp, a fleet of machines sharing caches,
other patchers, and the sample device compiled, packaged, moved and built by cmake. The rest
checks the package's pages and output formats, its layout, and the doctor's verdicts on many
backends (regdev). It runs on every release in a whole-suite matrix session (``nox -t
matrix`` without ``MATRIX_TESTS``), whose results docs/_generated/ records with the scope each
session ran.
"""

from __future__ import annotations

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent

#: Paths relative to tests/.
LEG_MODULES = frozenset(
    {
        "test_hook.py",
        "test_vec_isa_site.py",
        "test_hook_workers.py",
        "test_autoload_disable.py",
        "test_lookup_registry.py",
        "test_lookup_resolve.py",
        "test_hook_asked.py",
        "test_lookup_entry_points.py",
        "test_options.py",
        "test_options_differential.py",
        "test_options_injection.py",
        "test_hook_cache_keys.py",
        "test_hook_cpp_cache_keys.py",
        "test_options_freshness.py",
        "test_options_content_memo.py",
        "test_hook_pt2_stamp.py",
        "test_hook_pt2_soname.py",
        "test_diagnose_library_sonames.py",
        "test_hook_cmake.py",
        "test_diagnose_cmake.py",
        "test_hook_torch_hooks.py",
        "test_hook_gpu_hooks.py",
        "test_cli_torch_hooks_report.py",
        "test_hook_coexistence.py",
        "test_lookup_doors.py",
        "test_lookup_provider_doors.py",
        "test_hook_aot_load.py",
        "test_hook_removed_cflags.py",
        "test_hook_shim_ops.py",
        "test_hook_cache_key_details.py",
        "test_hook_device_headers.py",
        "peers/test_ports.py",
        "e2e/test_extern_kernels.py",
        "e2e/test_fleet.py",
        "e2e/test_fleet_every_door.py",
        "e2e/test_pt2_moves.py",
        "e2e/test_cmake_project.py",
        "peers/test_regdev_cmake.py",
    }
)


def missing_leg_modules() -> list[str]:
    """The names in LEG_MODULES that are no test module (renamed or removed)."""
    return sorted(name for name in LEG_MODULES if not (TESTS_DIR / name).is_file())


def in_leg(path: Path) -> bool:
    """Whether the test module at ``path`` is one CI's legs run."""
    try:
        relative = path.resolve().relative_to(TESTS_DIR)
    except ValueError:
        return False
    return relative.as_posix() in LEG_MODULES
