#include "base/host_order.h"

#include <atomic>

namespace parbench::host_order {
namespace {
std::atomic<Hook> g_publish{nullptr}, g_receive{nullptr};
}

void install(Hook publish_hook, Hook receive_hook) {
  g_publish.store(publish_hook, std::memory_order_release);
  g_receive.store(receive_hook, std::memory_order_release);
}

void publish(const void* tag) {
  if (Hook h = g_publish.load(std::memory_order_acquire)) h(tag);
}

void receive(const void* tag) {
  if (Hook h = g_receive.load(std::memory_order_acquire)) h(tag);
}

}  // namespace parbench::host_order
