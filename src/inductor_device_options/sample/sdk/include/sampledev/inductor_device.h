// What the C++ code Inductor generates for a sampledev model needs on top of
// the CPU headers. Included by torch/csrc/inductor/{cpp_wrapper,aoti_include}/sampledev.h.
#pragma once

// The macro comes from the sampledev C++ device options. Without it the
// options never reached the compiler, and the module would neither link the
// runtime nor load on a machine set up for sampledev.
#ifndef SAMPLEDEV_DEVICE
#error "SAMPLEDEV_DEVICE is not defined: the sampledev C++ device options did not reach the compiler (register them with inductor_device_options.register_cpp_device_options(\"sampledev\", ...))"
#endif

#include <sampledev/c_shim.h>
#include <sampledev/runtime.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>

namespace sampledev::detail {
// Runs when the compiled module is loaded: the module needs the runtime
// library, so it is in the module's NEEDED entries and resolved by the loader.
[[maybe_unused]] static const int module_registration =
    sampledev_runtime_register_module(SAMPLEDEV_RUNTIME_ABI_VERSION);
} // namespace sampledev::detail
