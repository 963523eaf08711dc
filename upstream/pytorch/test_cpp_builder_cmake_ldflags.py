# Owner(s): ["module: inductor"]
# PyTorch orders imports with usort ("run_tests, TestCase"), not ruff's isort:
# ruff: noqa: I001
"""Tests for the ldflags CppBuilder.save_link_cmd_to_cmake writes into the CMake project
AOTInductor writes with aot_inductor.package_cpp_only.

Destination in a PyTorch checkout: test/inductor/test_cpp_builder_cmake_ldflags.py

CPU only: the project is written by CppBuilder's own writers, and read; nothing is built.
"""

import os
import tempfile
import unittest

from torch._inductor.cpp_builder import BuildOptionsBase, CppBuilder
from torch.testing._internal.common_utils import IS_WINDOWS, run_tests, TestCase


def write_link_commands(ldflags):
    """The link commands save_link_cmd_to_cmake appends for a build with ``ldflags``."""
    with tempfile.TemporaryDirectory() as directory:
        cmake_path = os.path.join(directory, "CMakeLists.txt")
        open(cmake_path, "w").close()
        options = BuildOptionsBase(ldflags=list(ldflags), libraries=["c10"])
        builder = CppBuilder(
            "model", [os.path.join(directory, "model.o")], options, output_dir=directory
        )
        builder.save_link_cmd_to_cmake(cmake_path)
        with open(cmake_path) as f:
            return f.read(), builder


@unittest.skipIf(IS_WINDOWS, "the command line renders ldflags as /{ldflag} on Windows")
class TestCMakeLdflags(TestCase):
    def test_ldflags_are_written_with_their_leading_dash(self):
        text, _ = write_link_commands(["Wl,-rpath,/opt/sdk/lib", "Wl,--as-needed"])
        self.assertIn(
            "target_link_options(aoti_model PRIVATE -Wl,-rpath,/opt/sdk/lib -Wl,--as-needed",
            text,
        )
        self.assertNotIn(" Wl,", text)

    def test_ldflags_are_written_as_the_command_line_has_them(self):
        text, builder = write_link_commands(["Wl,-rpath,/opt/sdk/lib"])
        self.assertIn("-Wl,-rpath,/opt/sdk/lib", builder.get_command_line().split())
        self.assertIn("target_link_options(aoti_model PRIVATE -Wl,-rpath,/opt/sdk/lib ", text)

    def test_a_build_without_ldflags_writes_what_it_wrote_before(self):
        text, _ = write_link_commands([])
        self.assertIn("target_link_options(aoti_model PRIVATE )", text)
        self.assertIn("target_link_libraries(aoti_model PRIVATE c10)", text)


if __name__ == "__main__":
    run_tests()
