// A minimal NVTX tool for tests: loaded by the NVTX loader from NVTX_INJECTION64_PATH, it hooks
// the CORE2 (domain) calls and logs them, one line each, to the file named by PARBENCH_NVTX_LOG.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

// Domain handles are pointers to these; fixed storage so the tool leaks nothing at exit.
struct Domain {
  char name[64];
};
Domain g_domains[16];
std::atomic<int> g_domain_count{0};
Domain g_default_domain{"(default)"};

std::mutex g_log_mutex;
FILE* g_log = nullptr;

long thread_id() { return static_cast<long>(::syscall(SYS_gettid)); }

const char* domain_name(nvtxDomainHandle_t d) {
  return d ? reinterpret_cast<const Domain*>(d)->name : g_default_domain.name;
}

template <class... Args>
void log_line(const char* fmt, Args... args) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  std::fprintf(g_log, fmt, args...);
  std::fputc('\n', g_log);
  std::fflush(g_log);
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  int i = g_domain_count.fetch_add(1);
  if (i >= 16) return nullptr;
  std::snprintf(g_domains[i].name, sizeof g_domains[i].name, "%s", name);
  log_line("create %ld %s", thread_id(), name);
  return reinterpret_cast<nvtxDomainHandle_t>(&g_domains[i]);
}

void NVTX_API domain_name_category(nvtxDomainHandle_t d, uint32_t id, const char* name) {
  log_line("category %ld %s %u %s", thread_id(), domain_name(d), id, name);
}

void log_push(const char* what, nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  const char* msg = a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "(not-ascii)";
  log_line("%s %ld %s cat=%u colortype=%d color=%08x ptype=%d payload=%lld mtype=%d msg=%s", what,
           thread_id(), domain_name(d), a->category, a->colorType, a->color, a->payloadType,
           static_cast<long long>(a->payload.llValue), a->messageType, msg);
}

int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  log_push("push", d, a);
  return 0;
}

int NVTX_API domain_pop(nvtxDomainHandle_t d) {
  log_line("pop %ld %s", thread_id(), domain_name(d));
  return 0;
}

// Start/end and marks are not used by parbench ranges; logged so a test would notice if they were.
nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  log_push("start", d, a);
  return 1;
}
void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t) {
  log_line("end %ld %s", thread_id(), domain_name(d));
}
void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  log_push("mark", d, a);
}

template <class F>
void install(NvtxFunctionTable table, unsigned size, unsigned id, F fn) {
  if (id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* log_path = std::getenv("PARBENCH_NVTX_LOG");
  if (!log_path || !(g_log = std::fopen(log_path, "w"))) return 0;
  auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) return 0;
  install(table, size, NVTX_CBID_CORE2_DomainCreateA, &domain_create);
  install(table, size, NVTX_CBID_CORE2_DomainNameCategoryA, &domain_name_category);
  install(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push);
  install(table, size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
  install(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start);
  install(table, size, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
  install(table, size, NVTX_CBID_CORE2_DomainMarkEx, &domain_mark);
  log_line("init %ld", thread_id());
  return 1;
}
