// An NVTX tool for the emulated GPU (NVTX_INJECTION64_PATH=libparbench_emu_nvtx.so): it turns the program's
// ranges into the emulator's regions, so the API counts land per range as in an nsys API summary.
#define NVTX_NO_IMPL
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

namespace {

using PushFn = void (*)(const char*);
using PopFn = void (*)();
PushFn g_push = nullptr;
PopFn g_pop = nullptr;

int NVTX_API domain_push(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  g_push(a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "(unnamed)");
  return 0;
}
int NVTX_API domain_pop(nvtxDomainHandle_t) {
  g_pop();
  return 0;
}
int NVTX_API push_a(const char* message) {
  g_push(message ? message : "(unnamed)");
  return 0;
}
int NVTX_API pop() {
  g_pop();
  return 0;
}

template <class F>
void install(NvtxFunctionTable table, unsigned size, unsigned id, F fn) {
  if (id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  // The emulator is linked into the program; a program without it gets no tool.
  g_push = reinterpret_cast<PushFn>(::dlsym(RTLD_DEFAULT, "parbench_emu_region_push"));
  g_pop = reinterpret_cast<PopFn>(::dlsym(RTLD_DEFAULT, "parbench_emu_region_pop"));
  if (!g_push || !g_pop) return 0;
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) && table) {
    install(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push);
    install(table, size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
  }
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) && table) {
    install(table, size, NVTX_CBID_CORE_RangePushA, &push_a);
    install(table, size, NVTX_CBID_CORE_RangePop, &pop);
  }
  return 1;
}
