"""What ``import torch`` calls: the entry points of group ``torch.backends`` (pyproject.toml).

Every process that imports torch runs them, so they stay small: importing the package arms
the hook, and the sample device is imported only where ``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR``
asks for it (the demo sets it): installing this package must not make every torch process
load the sample. With ``INDUCTOR_DEVICE_OPTIONS_DISABLE=1`` neither installs anything into
torch.
"""

from __future__ import annotations

import os

#: ``sample.SAMPLE_DIR_ENV``, written out: importing the sample here would load it in every
#: process (tests/test_house.py holds the two equal).
SAMPLE_DIR_ENV = "INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR"


def arm() -> None:
    """Arm the hook (importing the package did; calling again does nothing)."""
    from ._hook.install import arm as arm_hook

    arm_hook()


def sample() -> None:
    """Set up the sample device where ``$INDUCTOR_DEVICE_OPTIONS_SAMPLE_DIR`` is set: a
    compile subprocess or rank of the demo (or of the e2e tests), which also logs the
    compiler commands it runs to that parent."""
    cache_dir = os.environ.get(SAMPLE_DIR_ENV)
    if not cache_dir:
        return
    from ._hook.disable import disabled

    if not disabled():  # the sample device installs into torch
        from ._demo.compiler_commands import log_commands_for_parent
        from .sample import autoload

        autoload(cache_dir)
        log_commands_for_parent()  # without such a parent this does nothing
