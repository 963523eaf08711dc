"""The one switch that turns the package off in a process and its children.

``INDUCTOR_DEVICE_OPTIONS_DISABLE=1`` (exactly ``1``), inherited by child processes: the
package installs nothing into torch, so every door behaves as torch alone; registrations are
still recorded. ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns off every backend's autoload, this
only the package. Imports nothing: the autoload, the installer and the lookups read it.
"""

from __future__ import annotations

import os

DISABLE_ENV = "INDUCTOR_DEVICE_OPTIONS_DISABLE"


def disabled() -> bool:
    """Whether ``$INDUCTOR_DEVICE_OPTIONS_DISABLE`` turns the package off (only ``1`` does)."""
    return os.environ.get(DISABLE_ENV) == "1"
