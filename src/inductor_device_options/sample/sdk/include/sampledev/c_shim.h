// The C shims that the code Inductor generates for sampledev calls for its extern
// kernels. Inductor names them aoti_torch_<device>_<op> (cpp_wrapper_cpu.py,
// get_c_shim_func_name): at::mm_out becomes aoti_torch_sampledev_mm_out. Without
// them any model with a matrix product or a convolution fails to compile in
// cpp_wrapper mode and with AOTInductor.
//
// sampledev memory is host memory, so each shim runs torch's CPU shim on CPU
// tensors that alias the sampledev tensors: the CPU kernel writes the results in
// place. Only the stable C API (aoti_torch/c/shim.h) is used, as in any code
// compiled into an AOTInductor model.
#pragma once

#include <torch/csrc/inductor/aoti_runtime/utils.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace sampledev::shim {

using torch::aot_inductor::RAIIAtenTensorHandle;

// A CPU tensor over the memory of `tensor`, a sampledev (or CPU) tensor.
inline RAIIAtenTensorHandle host_alias(AtenTensorHandle tensor) {
  int32_t device_type = 0;
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(tensor, &device_type));
  // Not AOTI_RUNTIME_CHECK: torch 2.6 defines it in model.h, which cpp_wrapper code lacks.
  if (device_type != aoti_torch_device_type_privateuse1() &&
      device_type != aoti_torch_device_type_cpu()) {
    throw std::runtime_error("sampledev shim: a tensor is neither on sampledev nor on the CPU");
  }
  void* data = nullptr;  // already offset by the tensor's storage offset
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
  int32_t dtype = 0;
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_data_ptr(tensor, &data));
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dim(tensor, &dim));
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_sizes(tensor, &sizes));
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_strides(tensor, &strides));
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(tensor, &dtype));
  AtenTensorHandle alias = nullptr;
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_create_tensor_from_blob(
      data, dim, sizes, strides, 0, dtype, aoti_torch_device_type_cpu(), 0, &alias));
  return RAIIAtenTensorHandle(alias);
}

// A new contiguous sampledev tensor on the device of `like`, holding a copy of
// `cpu_tensor`. Contiguous because that is what a device without a backend of its
// own for an operator returns (ATen's "overrideable" backend), and so what
// Inductor's fake tensors expect: the CPU kernel may choose channels-last.
inline AtenTensorHandle to_device(AtenTensorHandle cpu_tensor, AtenTensorHandle like) {
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  int32_t dtype = 0;
  int32_t device_index = 0;
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dim(cpu_tensor, &dim));
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_sizes(cpu_tensor, &sizes));
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(cpu_tensor, &dtype));
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_index(like, &device_index));
  std::vector<int64_t> strides(static_cast<size_t>(dim));
  int64_t stride = 1;
  for (int64_t i = dim - 1; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = stride;
    stride *= sizes[i] > 1 ? sizes[i] : 1;
  }
  AtenTensorHandle device_tensor = nullptr;
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(
      dim, sizes, strides.data(), dtype, aoti_torch_device_type_privateuse1(), device_index,
      &device_tensor));
  RAIIAtenTensorHandle owned(device_tensor);
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_copy_(owned, cpu_tensor, 0));
  return owned.release();
}

// What a shim's argument becomes for the CPU shim: tensors their host alias, the
// rest themselves. The holder keeps the alias alive for the call.
template <typename T>
struct HostArgument {
  T value;
  T get() const {
    return value;
  }
};

template <>
struct HostArgument<AtenTensorHandle> {
  RAIIAtenTensorHandle alias;
  AtenTensorHandle get() const {
    return alias.get();
  }
};

template <typename T>
HostArgument<T> on_host(T value) {
  if constexpr (std::is_same_v<T, AtenTensorHandle>) {
    return {host_alias(value)};
  } else {
    return {value};
  }
}

// Runs `body`, turning an exception into AOTI_TORCH_FAILURE as torch's own shims do.
template <typename Body>
AOTITorchError guarded(const char* shim_name, Body&& body) {
  try {
    return body();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", shim_name, error.what());
  } catch (...) {
    std::fprintf(stderr, "%s: unknown exception\n", shim_name);
  }
  return AOTI_TORCH_FAILURE;
}

// The sampledev shim of an out= operator: the CPU shim on host aliases of every
// tensor argument (the output included, which the CPU kernel fills in place).
template <typename... Parameters, typename... Arguments>
AOTITorchError call_on_host(
    const char* shim_name,
    AOTITorchError (*cpu_shim)(Parameters...),
    Arguments... arguments) {
  return guarded(shim_name, [&] {
    std::tuple<HostArgument<Parameters>...> host{on_host<Parameters>(arguments)...};
    return std::apply([&](const auto&... held) { return cpu_shim(held.get()...); }, host);
  });
}

// A new contiguous CPU tensor of the given shape and dtype.
inline RAIIAtenTensorHandle new_contiguous(int64_t dim, const int64_t* sizes, int32_t dtype) {
  std::vector<int64_t> strides(static_cast<size_t>(dim));
  int64_t stride = 1;
  for (int64_t i = dim - 1; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = stride;
    stride *= sizes[i] > 1 ? sizes[i] : 1;
  }
  AtenTensorHandle tensor = nullptr;
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(
      dim, sizes, strides.data(), dtype, aoti_torch_device_type_cpu(), 0, &tensor));
  return RAIIAtenTensorHandle(tensor);
}

// A new contiguous CPU tensor of `dtype` holding the values of `source`
// (aoti_torch_copy_ converts the dtype and reads any strides).
inline RAIIAtenTensorHandle contiguous_copy(AtenTensorHandle source, int32_t dtype) {
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dim(source, &dim));
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_sizes(source, &sizes));
  RAIIAtenTensorHandle copy = new_contiguous(dim, sizes, dtype);
  AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_copy_(copy.get(), source, 0));
  return copy;
}

// torch.nanmedian(self, dim) of a contiguous tensor seen as [outer, length, inner], in
// double precision: the lower median of each row's non-NaN values and its index, as ATen's
// CPU kernel gives them (median_with_indices_impl); NaN and index 0 where a row holds NaN
// alone.
inline void nanmedian_rows(
    const double* values,
    int64_t outer,
    int64_t length,
    int64_t inner,
    double* medians,
    int64_t* indices) {
  std::vector<std::pair<double, int64_t>> row;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      row.clear();
      for (int64_t k = 0; k < length; ++k) {
        double value = values[(o * length + k) * inner + i];
        if (!std::isnan(value)) {
          row.emplace_back(value, k);
        }
      }
      int64_t out = o * inner + i;
      if (row.empty()) {
        medians[out] = NAN;
        indices[out] = 0;
        continue;
      }
      auto middle = row.begin() + static_cast<std::ptrdiff_t>((row.size() - 1) / 2);
      std::nth_element(row.begin(), middle, row.end());
      medians[out] = middle->first;
      indices[out] = middle->second;
    }
  }
}

} // namespace sampledev::shim

extern "C" {

inline AOTITorchError aoti_torch_sampledev_mm_out(
    AtenTensorHandle out,
    AtenTensorHandle self,
    AtenTensorHandle mat2) {
  return sampledev::shim::call_on_host(__func__, aoti_torch_cpu_mm_out, out, self, mat2);
}

inline AOTITorchError aoti_torch_sampledev_addmm_out(
    AtenTensorHandle out,
    AtenTensorHandle self,
    AtenTensorHandle mat1,
    AtenTensorHandle mat2,
    double beta,
    double alpha) {
  return sampledev::shim::call_on_host(
      __func__, aoti_torch_cpu_addmm_out, out, self, mat1, mat2, beta, alpha);
}

inline AOTITorchError aoti_torch_sampledev_bmm_out(
    AtenTensorHandle out,
    AtenTensorHandle self,
    AtenTensorHandle mat2) {
  return sampledev::shim::call_on_host(__func__, aoti_torch_cpu_bmm_out, out, self, mat2);
}

inline AOTITorchError aoti_torch_sampledev_baddbmm_out(
    AtenTensorHandle out,
    AtenTensorHandle self,
    AtenTensorHandle batch1,
    AtenTensorHandle batch2,
    double beta,
    double alpha) {
  return sampledev::shim::call_on_host(
      __func__, aoti_torch_cpu_baddbmm_out, out, self, batch1, batch2, beta, alpha);
}

// Not an out= operator: the CPU shim returns a new CPU tensor, copied to the device.
inline AOTITorchError aoti_torch_sampledev_convolution(
    AtenTensorHandle input,
    AtenTensorHandle weight,
    AtenTensorHandle* bias,  // optional
    const int64_t* stride,
    int64_t stride_len_,
    const int64_t* padding,
    int64_t padding_len_,
    const int64_t* dilation,
    int64_t dilation_len_,
    int32_t transposed,
    const int64_t* output_padding,
    int64_t output_padding_len_,
    int64_t groups,
    AtenTensorHandle* ret0) {
  using namespace sampledev::shim;
  return guarded(__func__, [&] {
    RAIIAtenTensorHandle host_input = host_alias(input);
    RAIIAtenTensorHandle host_weight = host_alias(weight);
    RAIIAtenTensorHandle host_bias;
    AtenTensorHandle host_bias_handle = nullptr;
    if (bias != nullptr && *bias != nullptr) {
      host_bias = host_alias(*bias);
      host_bias_handle = host_bias.get();
    }
    AtenTensorHandle cpu_result = nullptr;
    AOTITorchError error = aoti_torch_cpu_convolution(
        host_input, host_weight, host_bias_handle != nullptr ? &host_bias_handle : nullptr,
        stride, stride_len_, padding, padding_len_, dilation, dilation_len_, transposed,
        output_padding, output_padding_len_, groups, &cpu_result);
    if (error != AOTI_TORCH_SUCCESS) {
      return error;
    }
    RAIIAtenTensorHandle owned_result(cpu_result);
    *ret0 = to_device(owned_result, input);
    return AOTI_TORCH_SUCCESS;
  });
}

// Not in torch's C shim list (torchgen's inductor_fallback_ops) on any release: Inductor
// calls it, instead of the proxy executor or aoti_torch_call_dispatcher, where the
// device's C++ options provider declares "aten.nanmedian.dim" in its aoti_shim_ops. torch
// has no CPU shim of it and torch 2.6 no aoti_torch_call_dispatcher: the SDK computes it.
inline AOTITorchError aoti_torch_sampledev_nanmedian_dim(
    AtenTensorHandle self,
    int64_t dim,
    int32_t keepdim,
    AtenTensorHandle* ret0,
    AtenTensorHandle* ret1) {
  using namespace sampledev::shim;
  return guarded(__func__, [&] {
    RAIIAtenTensorHandle values = contiguous_copy(host_alias(self), aoti_torch_dtype_float64());
    int64_t rank = 0;
    int64_t* sizes = nullptr;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dim(values, &rank));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_sizes(values, &sizes));
    std::vector<int64_t> shape(sizes, sizes + rank);
    if (shape.empty()) {
      shape.push_back(1);  // a 0-d tensor is one row of one value
    }
    int64_t axis = dim < 0 ? dim + static_cast<int64_t>(shape.size()) : dim;
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) {
      throw std::out_of_range("sampledev shim: nanmedian dim out of range");
    }
    int64_t outer = 1;
    int64_t inner = 1;
    for (int64_t i = 0; i < axis; ++i) {
      outer *= shape[static_cast<size_t>(i)];
    }
    for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) {
      inner *= shape[i];
    }
    std::vector<int64_t> out_shape(sizes, sizes + rank);
    if (rank > 0) {
      if (keepdim) {
        out_shape[static_cast<size_t>(axis)] = 1;
      } else {
        out_shape.erase(out_shape.begin() + axis);
      }
    }
    auto out_rank = static_cast<int64_t>(out_shape.size());
    RAIIAtenTensorHandle medians =
        new_contiguous(out_rank, out_shape.data(), aoti_torch_dtype_float64());
    RAIIAtenTensorHandle indices =
        new_contiguous(out_rank, out_shape.data(), aoti_torch_dtype_int64());
    void* in_data = nullptr;
    void* median_data = nullptr;
    void* index_data = nullptr;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_data_ptr(values, &in_data));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_data_ptr(medians, &median_data));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_data_ptr(indices, &index_data));
    nanmedian_rows(
        static_cast<const double*>(in_data), outer, shape[static_cast<size_t>(axis)], inner,
        static_cast<double*>(median_data), static_cast<int64_t*>(index_data));
    int32_t dtype = 0;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(self, &dtype));
    *ret0 = to_device(contiguous_copy(medians, dtype), self);
    *ret1 = to_device(indices, self);
    return AOTI_TORCH_SUCCESS;
  });
}

} // extern "C"
