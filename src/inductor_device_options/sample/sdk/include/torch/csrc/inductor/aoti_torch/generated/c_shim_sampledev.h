// Included by the C++ wrapper torch 2.6 generates for sampledev
// (`#include <torch/csrc/inductor/aoti_torch/generated/c_shim_sampledev.h>`); later torch
// includes torch/csrc/inductor/{cpp_wrapper,aoti_include}/sampledev.h instead.
#pragma once

#include <sampledev/inductor_device.h>
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h>
