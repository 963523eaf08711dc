#include "sampledev/runtime.h"

#include <stdio.h>
#include <stdlib.h>

static int registered_modules = 0;

int sampledev_runtime_abi_version(void) {
  return SAMPLEDEV_RUNTIME_ABI_VERSION;
}

int sampledev_runtime_register_module(int abi_version) {
  /* A module compiled against other headers than this library would misuse
   * it: stop at load time rather than fail later in a kernel. */
  if (abi_version != SAMPLEDEV_RUNTIME_ABI_VERSION) {
    fprintf(stderr,
            "libsampledev_runtime: module built for ABI %d, library is ABI %d\n",
            abi_version, SAMPLEDEV_RUNTIME_ABI_VERSION);
    abort();
  }
  return __atomic_add_fetch(&registered_modules, 1, __ATOMIC_SEQ_CST);
}

int sampledev_runtime_registered_modules(void) {
  return __atomic_load_n(&registered_modules, __ATOMIC_SEQ_CST);
}
