// Included by the model AOTInductor generates for sampledev
// (`#include <torch/csrc/inductor/aoti_include/sampledev.h>`).
#pragma once

#include <sampledev/inductor_device.h>
#include <torch/csrc/inductor/aoti_include/cpu.h>
