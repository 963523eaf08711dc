"""The distribution as pip installed it (from the wheel in the torch matrix, editable in a
checkout): its version is the package's, and the license travels with it."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import inductor_device_options as ido

DISTRIBUTION = "inductor-device-options"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def test_the_version_is_written_once_in_the_package() -> None:
    project = PYPROJECT.read_text().split("\n[project]\n", 1)[1].split("\n[", 1)[0]
    assert re.search(r"^version\s*=", project, re.MULTILINE) is None
    assert re.search(r'^dynamic = \["version"\]', project, re.MULTILINE)
    assert importlib.metadata.version(DISTRIBUTION) == ido.__version__


def test_the_license_is_installed_with_the_distribution() -> None:
    assert importlib.metadata.metadata(DISTRIBUTION)["License-Expression"] == "BSD-3-Clause"
    licenses = [f for f in importlib.metadata.files(DISTRIBUTION) or [] if f.name == "LICENSE"]
    assert len(licenses) == 1, importlib.metadata.files(DISTRIBUTION)
    assert licenses[0].read_text().startswith("BSD 3-Clause License\n")
