// Kernel launches on the emulated GPU: PB_LAUNCH in a kernel file built for the emulated cuda device copies the
// arguments (as CUDA's parameter buffer does) and queues the launch on its stream; the stream's worker runs it
// through the simt machinery when the stream reaches it. Included by device/cuda_compat.h only.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "device/simt/launch_spec.h"

namespace parbench::gpu_emu {

struct PointerArg {
  int index;
  const void* p;
  bool read_only;  // a pointer to const: the kernel reads through it (a plain pointer counts as a write)
};
// Checks the launch (stream of the current GPU, limits, pointer arguments the GPU may touch) and queues `run`.
// A failure becomes the calling thread's last CUDA error, read by PB_CHECK_LAUNCH as on a GPU.
void enqueue_launch(const simt::detail::LaunchSpec& spec, const volatile void* stream, std::function<void()> run,
                    std::vector<PointerArg> pointers);
// PB_CHECK_LAUNCH: throws parbench::Error naming file:line when the last launch failed (cudaGetLastError).
void check_launch(const char* file, int line);

template <class... P>
class StreamLaunch {
 public:
  StreamLaunch(void (*kernel)(P...), simt::detail::LaunchSpec spec, const volatile void* stream)
      : kernel_(kernel), spec_(spec), stream_(stream) {}
  template <class... A>
  void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "PB_LAUNCH: wrong number of kernel arguments");
    using Params = std::tuple<std::decay_t<P>...>;
    auto params = std::make_shared<const Params>(std::forward<A>(args)...);
    std::vector<PointerArg> pointers;
    collect(*params, pointers, std::index_sequence_for<P...>{});
    auto kernel = kernel_;
    const auto spec = spec_;
    enqueue_launch(spec_, stream_, [kernel, params, spec] {
      struct Ctx {
        void (*kernel)(P...);
        const Params* params;
      } ctx{kernel, params.get()};
      simt::detail::launch(spec, [](void* c) {
        auto* x = static_cast<Ctx*>(c);
        std::apply(x->kernel, *x->params);
      }, &ctx);
    }, std::move(pointers));
  }

 private:
  template <class Params, std::size_t... I>
  static void collect(const Params& t, std::vector<PointerArg>& out, std::index_sequence<I...>) {
    auto one = [&](int i, const auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_pointer_v<V>)
        out.push_back({i, static_cast<const void*>(v), std::is_const_v<std::remove_pointer_t<V>>});
    };
    (one(int(I), std::get<I>(t)), ...);
  }
  void (*kernel_)(P...);
  simt::detail::LaunchSpec spec_;
  const volatile void* stream_;
};

template <class... P>
StreamLaunch<P...> make_stream_launch(void (*kernel)(P...), const char* name, simt::dim3 grid, simt::dim3 block,
                                      std::size_t shared, const volatile void* stream, const char* file, int line) {
  return StreamLaunch<P...>(
      kernel, simt::detail::LaunchSpec{name, grid, block, shared, reinterpret_cast<const void*>(kernel), file, line},
      stream);
}

}  // namespace parbench::gpu_emu
