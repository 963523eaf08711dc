"""Where and how Inductor compiles during the demo: its cache directories and its compile
mode, each set for a block and restored after it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager


@contextmanager
def inductor_cache_base(user_directory: str | None) -> Iterator[str]:
    """The user's Inductor cache, or a temporary one set for the block and then removed."""
    if user_directory is not None:
        # torch 2.6's utils.fresh_inductor_cache runs tempfile.mkdtemp(dir=...) on it as is.
        os.makedirs(user_directory, exist_ok=True)
        yield user_directory
        return
    directory = tempfile.mkdtemp(prefix="inductor-device-options-demo-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
    try:
        yield directory
    finally:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        shutil.rmtree(directory, ignore_errors=True)


def fresh_inductor_cache(base: str) -> AbstractContextManager[None]:
    """A new Inductor cache directory under ``base``, kept afterwards, so that Inductor
    compiles (and the commands are seen) instead of reusing an earlier run's."""
    # fresh_inductor_cache: the name on every torch of the matrix (2.6 has no fresh_cache;
    # torch 2.13 and 2.15 keep utils.fresh_inductor_cache as an alias of it).
    from torch._inductor.utils import fresh_inductor_cache as torch_fresh_inductor_cache

    return torch_fresh_inductor_cache(dir=base, delete=False)


@contextmanager
def compiling_in_this_process() -> Iterator[None]:
    """Inductor compiles in this process, where what the demo registers or assigns applies
    (a compile subprocess sets the device up afresh, through the autoload). torch 2.6 has no
    compile modes: it always compiles in this process."""
    from torch._inductor import compile_fx

    # compile_fx.fx_compile_mode (torch 2.13, 2.15), read once from
    # $TORCHINDUCTOR_FX_COMPILE_MODE at import; compile_fx checks it at each compile.
    compile_mode = getattr(compile_fx, "fx_compile_mode", None)
    if compile_mode is not None:
        compile_fx.fx_compile_mode = compile_fx.FxCompileMode.NORMAL
    try:
        yield
    finally:
        if compile_mode is not None:
            compile_fx.fx_compile_mode = compile_mode
