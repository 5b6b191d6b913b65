# The C++ compiler: C++20 with the library parts the code uses. GCC 12 is the first whose library has constexpr
# std::vector and std::string (the trace recorder is constinit, profiles/trace.h; GCC 11 fails there) and
# floating-point std::from_chars/std::to_chars (CSV cells, trace times). Clang 14 is the oldest checked, over
# such a library (libstdc++ of GCC 12 or newer).
set(_pb_min_GNU 12)
set(_pb_min_Clang 14)
if(DEFINED _pb_min_${CMAKE_CXX_COMPILER_ID})
  if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS _pb_min_${CMAKE_CXX_COMPILER_ID})
    message(FATAL_ERROR "parbench needs GCC ${_pb_min_GNU} or Clang ${_pb_min_Clang} or newer (C++20); "
                        "${CMAKE_CXX_COMPILER} is ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}. "
                        "Configure with -DCMAKE_CXX_COMPILER=g++-12 (or the like), or load a newer compiler module.")
  endif()
else()
  message(WARNING "parbench is checked with GCC and Clang only; ${CMAKE_CXX_COMPILER_ID} "
                  "${CMAKE_CXX_COMPILER_VERSION} may or may not build it")
endif()

# The library parts a new enough compiler can still lack (Clang over an older libstdc++).
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-std=c++20")
check_cxx_source_compiles([[
#include <charconv>
#include <string>
#include <vector>
struct Recorder {
  std::vector<std::string> names;
  constexpr Recorder() noexcept = default;
};
constinit Recorder recorder;
int main() {
  const char text[] = "1.5";
  double v = 0;
  char out[32];
  std::from_chars(text, text + 3, v);
  std::to_chars(out, out + sizeof out, v, std::chars_format::fixed, 3);
  return int(recorder.names.size());
}]] PARBENCH_CXX_LIBRARY_OK)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT PARBENCH_CXX_LIBRARY_OK)
  message(FATAL_ERROR "${CMAKE_CXX_COMPILER} (${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}) lacks a "
                      "C++20 library part the code uses (constexpr std::vector, floating-point std::from_chars): "
                      "its C++ library is too old (libstdc++ of GCC 12 or newer is needed). See "
                      "CMakeFiles/CMakeError.log.")
endif()
