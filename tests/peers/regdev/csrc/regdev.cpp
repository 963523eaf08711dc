// "regdev": a PrivateUse1 test backend shaped like the backends derived from PyTorch's
// openreg sample. Its memory is plain host memory, so the CPU kernels Inductor generates
// run on its tensors, and every aten op without a kernel here runs on the CPU.
//
// Built by regdev_backend.py with torch.utils.cpp_extension.load(is_python_module=False).
// Loading it registers the allocator, the device guard, the hooks and the aten kernels.
// The AOTInductor model runner is registered only when Python calls
// torch.ops.regdev.register_aoti_runner(), so a test can load packages with or without it.

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
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/csrc/inductor/aoti_runner/model_container_runner.h>
#include <torch/library.h>

#include <memory>
#include <string>

namespace regdev {

constexpr c10::DeviceType kRegdev = c10::DeviceType::PrivateUse1;

// ------------------------------------------------------------------ memory

void host_free(void* data) {
  c10::free_cpu(data);
}

struct HostAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes > 0 ? c10::alloc_cpu(nbytes) : nullptr;
    return {data, data, &host_free, c10::Device(kRegdev, 0)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &host_free;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

HostAllocator allocator;
REGISTER_ALLOCATOR(kRegdev, &allocator);

// ------------------------------------------------------------ device guard

// One device, one (default) stream, nothing asynchronous.
struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override {
    return kRegdev;
  }
  c10::Device exchangeDevice(c10::Device) const override {
    return c10::Device(kRegdev, 0);
  }
  c10::Device getDevice() const override {
    return c10::Device(kRegdev, 0);
  }
  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.index() <= 0, "regdev: there is only device 0, not ", device);
  }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream exchangeStream(c10::Stream stream) const noexcept override {
    return stream;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return 1;
  }
  void record(void**, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag)
      const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override {
    return true;
  }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override {
    return true;
  }
  void synchronizeStream(const c10::Stream&) const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

// ------------------------------------------------------------------- hooks

struct Hooks final : at::PrivateUse1HooksInterface {
  // No `override` on these two: torch 2.6's interface does not declare them.
  bool isBuilt() const {
    return true;
  }
  bool isAvailable() const {
    return true;
  }
  bool hasPrimaryContext(c10::DeviceIndex) const override {
    return true;
  }
  at::Device getDeviceFromPtr(void*) const override {
    return at::Device(kRegdev, 0);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_size) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), new_size);
  }
};

const bool hooks_registered = [] {
  static Hooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
  return true;
}();

// --------------------------------------------------------------------- ops

// A CPU tensor over the same memory (a regdev tensor's memory is host memory).
at::Tensor on_host(const at::Tensor& tensor) {
  if (!tensor.defined() || tensor.device().type() != kRegdev) {
    return tensor;
  }
  return at::from_blob(
      tensor.data_ptr(), tensor.sizes(), tensor.strides(), tensor.options().device(at::kCPU));
}

constexpr c10::DispatchKeySet regdev_keys(c10::DispatchKey::PrivateUse1);

at::Tensor empty_memory_format(
    c10::IntArrayRef size,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout>,
    std::optional<c10::Device>,
    std::optional<bool>,
    std::optional<c10::MemoryFormat> memory_format) {
  return at::detail::empty_generic(
      size, &allocator, regdev_keys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(
    c10::IntArrayRef size,
    c10::IntArrayRef stride,
    std::optional<c10::ScalarType> dtype,
    std::optional<c10::Layout>,
    std::optional<c10::Device>,
    std::optional<bool>) {
  return at::detail::empty_strided_generic(
      size, stride, &allocator, regdev_keys, c10::dtype_or_default(dtype));
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor host_dst = on_host(dst);
  at::native::copy_(host_dst, on_host(self), non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Tensor as_strided(
    const at::Tensor& self,
    c10::SymIntArrayRef size,
    c10::SymIntArrayRef stride,
    std::optional<c10::SymInt> storage_offset) {
  std::optional<int64_t> offset;
  if (storage_offset) {
    offset = storage_offset->expect_int();
  }
  return at::native::as_strided_tensorimpl(
      self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride), offset);
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size,
                         c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(
      self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), memory_format);
}

at::Tensor& fill_(at::Tensor& self, const at::Scalar& value) {
  on_host(self).fill_(value);
  return self;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return at::native::_local_scalar_dense_cpu(on_host(self));
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_storage(at::Tensor& self, at::Storage source) {
  return at::native::set_(self, std::move(source));
}

at::Tensor& set_storage_offset(at::Tensor& self, at::Storage source, int64_t offset,
                               c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), offset, size, stride);
}

void run_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("resize_", resize_);
  m.impl("fill_.Scalar", fill_);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("set_.source_Tensor", set_tensor);
  m.impl("set_.source_Storage", set_storage);
  m.impl("set_.source_Storage_storage_offset", set_storage_offset);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&run_on_cpu>());
}

// ---------------------------------------------------- AOTInductor runner

// torch's AOTI runtime (model_base.h) accepts only its own devices for a model container.
// regdev memory is host memory: the container runs as a CPU one, while the tensors the
// model allocates are regdev tensors (the generated code asks for privateuse1).
class Runner final : public torch::inductor::AOTIModelContainerRunner {
 public:
  // torch 2.6 passes (bin_dir); later torch (bin_dir, run_single_threaded).
  template <typename... Rest>
  Runner(const std::string& model_so_path, size_t num_models, const std::string& /*device*/,
         Rest... rest)
      : AOTIModelContainerRunner(model_so_path, num_models, "cpu", rest...) {}
};

// A template, so that taking its address deduces the factory signature of this torch.
template <typename... Rest>
std::unique_ptr<torch::inductor::AOTIModelContainerRunner> make_runner(
    const std::string& model_so_path, size_t num_models, const std::string& device,
    Rest... rest) {
  return std::make_unique<Runner>(model_so_path, num_models, device, rest...);
}

void register_aoti_runner() {
  torch::inductor::getAOTIModelRunnerRegistry()["regdev"] = &make_runner;
}

TORCH_LIBRARY(regdev, m) {
  m.def("register_aoti_runner() -> ()", &register_aoti_runner);
}

} // namespace regdev
