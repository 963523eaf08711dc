// Included by the C++ wrapper Inductor generates for sampledev in cpp_wrapper
// mode (`#include <torch/csrc/inductor/cpp_wrapper/sampledev.h>`).
#pragma once

#include <sampledev/inductor_device.h>
#include <torch/csrc/inductor/cpp_wrapper/cpu.h>
