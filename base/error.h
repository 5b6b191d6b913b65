// Error types and the checking macros every layer uses (CUDA_CHECK, NCCL_CHECK, MPI_CHECK).
#pragma once
#include <stdexcept>
#include <string>

namespace parbench {

// A runtime failure: programs exit 1.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bad user input (options, configurations): programs exit 2. The message names the bad value
// and the accepted form.
struct UsageError : Error {
  using Error::Error;
};

[[noreturn]] void throw_error(const char* file, int line, const std::string& what);

}  // namespace parbench

#define PB_CHECK(cond, msg)                                                       \
  do {                                                                            \
    if (!(cond)) ::parbench::throw_error(__FILE__, __LINE__, std::string(msg));   \
  } while (0)

// CUDA_CHECK / NCCL_CHECK / MPI_CHECK expand only where their headers were included first.
#define CUDA_CHECK(expr)                                                                          \
  do {                                                                                            \
    cudaError_t pb_err_ = (expr);                                                                 \
    if (pb_err_ != cudaSuccess)                                                                   \
      ::parbench::throw_error(__FILE__, __LINE__,                                                 \
                              std::string(#expr) + ": " + cudaGetErrorString(pb_err_));          \
  } while (0)

#define NCCL_CHECK(expr)                                                                          \
  do {                                                                                            \
    ncclResult_t pb_err_ = (expr);                                                                \
    if (pb_err_ != ncclSuccess)                                                                   \
      ::parbench::throw_error(__FILE__, __LINE__,                                                 \
                              std::string(#expr) + ": " + ncclGetErrorString(pb_err_));          \
  } while (0)

#define MPI_CHECK(expr)                                                                           \
  do {                                                                                            \
    int pb_err_ = (expr);                                                                         \
    if (pb_err_ != MPI_SUCCESS) {                                                                 \
      char pb_msg_[MPI_MAX_ERROR_STRING];                                                         \
      int pb_len_ = 0;                                                                            \
      MPI_Error_string(pb_err_, pb_msg_, &pb_len_);                                               \
      ::parbench::throw_error(__FILE__, __LINE__, std::string(#expr) + ": " + pb_msg_);           \
    }                                                                                             \
  } while (0)
