"""The sample's compiler-command recording, across real child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from inductor_device_options._demo.compiler_commands import (
    COMMAND_LOG_ENV,
    record_compiler_commands,
)

# A child as a rank or a compile subprocess is: it logs to its parent, then runs the compiler.
CHILD = textwrap.dedent(
    """
    import subprocess
    from inductor_device_options._demo.compiler_commands import log_commands_for_parent
    log_commands_for_parent()
    subprocess.run(["cc", "--version"], capture_output=True, check=True)
    """
)


def test_children_are_recorded_after_something_took_the_logs_name_out_of_os_environ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with record_compiler_commands("cc"):
        pass  # the log exists, and is named in os.environ
    # As torch 2.6's fresh_inductor_cache (mock.patch.dict) does on exit, when the first
    # recording started inside it: it restores os.environ to what it was before.
    monkeypatch.delenv(COMMAND_LOG_ENV)

    with record_compiler_commands("cc") as commands:
        subprocess.run([sys.executable, "-c", CHILD], check=True)

    from_children = [command.argv for command in commands if command.pid != os.getpid()]
    assert from_children == [("cc", "--version")]
