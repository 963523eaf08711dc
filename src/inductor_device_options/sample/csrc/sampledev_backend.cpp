// The "sampledev" PrivateUse1 backend: a device whose memory is host memory, so
// that Inductor's C++ kernels (generated for CPU) run on its tensors unchanged.
// It gives PyTorch what a real out-of-tree device gives it: an allocator, a
// device guard, hooks, the factory/view/copy ops, convolution, a CPU fallback
// for every other op, and an AOTInductor model runner for `aoti_load_package`.

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/csrc/inductor/aoti_runner/model_container_runner.h>
#include <torch/library.h>

#include <memory>
#include <regex>
#include <string>

namespace sampledev {

constexpr c10::DeviceType kDeviceType = c10::DeviceType::PrivateUse1;
// One device keeps the guard trivial; the index still flows through every API.
constexpr c10::DeviceIndex kDeviceCount = 1;

void check_device_index(c10::DeviceIndex index) {
  TORCH_CHECK(
      index >= -1 && index < kDeviceCount,
      "sampledev: device index ",
      static_cast<int>(index),
      " out of range, there is ",
      static_cast<int>(kDeviceCount),
      " device");
}

// ---------------------------------------------------------------- allocator

struct HostMemoryAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes == 0 ? nullptr : c10::alloc_cpu(nbytes);
    return {data, data, &release, c10::Device(kDeviceType, 0)};
  }

  static void release(void* ptr) {
    c10::free_cpu(ptr);
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &release;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

HostMemoryAllocator host_memory_allocator;
REGISTER_ALLOCATOR(kDeviceType, &host_memory_allocator);

// ------------------------------------------------------------- device guard

thread_local c10::DeviceIndex current_device_index = 0;

struct DeviceGuard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override {
    return kDeviceType;
  }

  c10::Device exchangeDevice(c10::Device device) const override {
    TORCH_CHECK(device.type() == kDeviceType, "sampledev: expected a sampledev device, got ", device);
    check_device_index(device.index());
    const c10::Device previous = getDevice();
    if (device.has_index()) {
      current_device_index = device.index();
    }
    return previous;
  }

  c10::Device getDevice() const override {
    return c10::Device(kDeviceType, current_device_index);
  }

  void setDevice(c10::Device device) const override {
    exchangeDevice(device);
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.has_index()) {
      current_device_index = device.index();
    }
  }

  // Work runs synchronously on the host: the default stream is the only one.
  c10::Stream getStream(c10::Device device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }

  c10::Stream exchangeStream(c10::Stream stream) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, stream.device());
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return kDeviceCount;
  }

  void record(void** /*event*/, const c10::Stream& /*stream*/, const c10::DeviceIndex /*index*/,
              const c10::EventFlag /*flag*/) const override {}

  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}

  bool queryEvent(void* /*event*/) const override {
    return true;
  }

  void destroyEvent(void* /*event*/, const c10::DeviceIndex /*index*/) const noexcept override {}

  bool queryStream(const c10::Stream& /*stream*/) const override {
    return true;
  }

  void synchronizeStream(const c10::Stream& /*stream*/) const override {}

  void synchronizeDevice(const c10::DeviceIndex /*index*/) const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, DeviceGuard);

// -------------------------------------------------------------------- hooks

struct Hooks final : at::PrivateUse1HooksInterface {
  // Virtual in newer torch; torch 2.6's interface has neither, hence no `override`.
  bool isBuilt() const {
    return true;
  }

  bool isAvailable() const {
    return true;
  }

  bool hasPrimaryContext(c10::DeviceIndex /*index*/) const override {
    return true;
  }

  c10::DeviceIndex deviceCount() const override {
    return kDeviceCount;
  }

  void setCurrentDevice(c10::DeviceIndex index) const override {
    check_device_index(index);
    current_device_index = index;
  }

  c10::DeviceIndex getCurrentDevice() const override {
    return current_device_index;
  }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
    check_device_index(index);
    const c10::DeviceIndex previous = current_device_index;
    current_device_index = index;
    return previous;
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override {
    return exchangeDevice(index);
  }

  at::Device getDeviceFromPtr(void* /*data*/) const override {
    return at::Device(kDeviceType, current_device_index);
  }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_size) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), new_size);
  }
};

// Registered from a static object: the hooks must exist before the first
// sampledev tensor is made, and they live as long as the process.
struct RegisterHooks {
  RegisterHooks() {
    static Hooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
  }
};
RegisterHooks register_hooks;

// ---------------------------------------------------------------------- ops

at::Tensor as_host_tensor(const at::Tensor& tensor) {
  if (tensor.device().type() != kDeviceType) {
    return tensor;
  }
  return at::from_blob(
      tensor.data_ptr(), tensor.sizes(), tensor.strides(), tensor.options().device(at::kCPU));
}

void check_factory_options(
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory) {
  TORCH_CHECK(
      c10::layout_or_default(layout) == c10::Layout::Strided,
      "sampledev: only strided tensors are supported");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "sampledev: pinned memory is CPU only");
  if (device.has_value()) {
    TORCH_CHECK(device->type() == kDeviceType, "sampledev: cannot allocate on ", *device);
    check_device_index(device->index());
  }
}

at::Tensor empty_memory_format(
    c10::IntArrayRef size,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory,
    std::optional<c10::MemoryFormat> memory_format) {
  check_factory_options(layout, device, pin_memory);
  constexpr c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_generic(
      size, &host_memory_allocator, keys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(
    c10::IntArrayRef size,
    c10::IntArrayRef stride,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout> layout,
    std::optional<c10::Device> device,
    std::optional<bool> pin_memory) {
  check_factory_options(layout, device, pin_memory);
  constexpr c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_strided_generic(
      size, stride, &host_memory_allocator, keys, c10::dtype_or_default(dtype));
}

at::Tensor as_strided(
    const at::Tensor& self,
    c10::SymIntArrayRef size,
    c10::SymIntArrayRef stride,
    std::optional<c10::SymInt> storage_offset) {
  std::optional<int64_t> offset;
  if (storage_offset.has_value()) {
    offset = storage_offset->expect_int();
  }
  return at::native::as_strided_tensorimpl(
      self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride), offset);
}

const at::Tensor& resize_(
    const at::Tensor& self,
    c10::SymIntArrayRef size,
    std::optional<at::MemoryFormat> memory_format) {
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), memory_format);
}

at::Tensor reshape_alias(
    const at::Tensor& self,
    c10::SymIntArrayRef size,
    c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(
      self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

// Every copy is host to host; the CPU copy kernel handles strides and dtypes.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(
      self.device().type() == kDeviceType || self.is_cpu(),
      "sampledev: cannot copy from ", self.device());
  TORCH_CHECK(
      dst.device().type() == kDeviceType || dst.is_cpu(),
      "sampledev: cannot copy to ", dst.device());
  at::Tensor dst_on_host = as_host_tensor(dst);
  at::native::copy_(dst_on_host, as_host_tensor(self), non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return at::native::_local_scalar_dense_cpu(as_host_tensor(self));
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_source_storage(at::Tensor& self, at::Storage source) {
  return at::native::set_(self, std::move(source));
}

at::Tensor& set_source_storage_offset(
    at::Tensor& self,
    at::Storage source,
    int64_t storage_offset,
    c10::IntArrayRef size,
    c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), storage_offset, size, stride);
}

// ATen sends a convolution on a device without a convolution backend of its own to
// convolution_overrideable, whose default kernel raises (the CPU fallback below never
// sees it): run it on the host. The result is contiguous, as Inductor's fake kernel
// expects of this backend.
at::Tensor convolution_overrideable(
    const at::Tensor& input,
    const at::Tensor& weight,
    const std::optional<at::Tensor>& bias,
    c10::IntArrayRef stride,
    c10::IntArrayRef padding,
    c10::IntArrayRef dilation,
    bool transposed,
    c10::IntArrayRef output_padding,
    int64_t groups) {
  std::optional<at::Tensor> host_bias;
  if (bias.has_value() && bias->defined()) {
    host_bias = as_host_tensor(*bias);
  }
  const at::Tensor on_host = at::convolution(
      as_host_tensor(input), as_host_tensor(weight), host_bias, stride, padding, dilation,
      transposed, output_padding, groups);
  at::Tensor result = at::empty(on_host.sizes(), input.options());
  as_host_tensor(result).copy_(on_host);
  return result;
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("resize_", resize_);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("view", view);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
  m.impl("convolution_overrideable", convolution_overrideable);
}

// Everything else runs on CPU: the data already lives in host memory.
TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

// -------------------------------------------------------- AOTInductor runner

// The AOTInductor runtime of torch (model_base.h) only accepts cpu, cuda, xpu
// and mps as the container's device. A sampledev model runs on the host, so
// its container is created for the CPU; the tensors the model allocates are
// still sampledev tensors, because the generated code asks for them by the
// device type that the sampledev headers define.
std::string container_device(const std::string& device) {
  static const std::regex sampledev_device("(sampledev|privateuseone)(:([0-9]+))?");
  std::smatch match;
  TORCH_CHECK(
      std::regex_match(device, match, sampledev_device),
      "sampledev: the AOTInductor runner got device '", device, "'");
  return "cpu";
}

class ModelContainerRunner final : public torch::inductor::AOTIModelContainerRunner {
 public:
  // torch 2.6 passes (bin_dir); later torch (bin_dir, run_single_threaded).
  template <typename... Rest>
  ModelContainerRunner(
      const std::string& model_so_path,
      size_t num_models,
      const std::string& device,
      Rest... rest)
      : AOTIModelContainerRunner(model_so_path, num_models, container_device(device), rest...) {}
};

// A template: taking its address for torch's CreateAOTIModelRunnerFunc deduces the
// parameters that torch's runner factory has.
template <typename... Rest>
std::unique_ptr<torch::inductor::AOTIModelContainerRunner> create_model_container_runner(
    const std::string& model_so_path,
    size_t num_models,
    const std::string& device,
    Rest... rest) {
  return std::make_unique<ModelContainerRunner>(model_so_path, num_models, device, rest...);
}

torch::inductor::RegisterAOTIModelRunner register_model_container_runner(
    "sampledev", &create_model_container_runner);

} // namespace sampledev
