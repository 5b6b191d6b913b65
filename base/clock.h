// Seconds elapsed on the steady clock, the one every timing here takes (a wall clock may jump).
#pragma once
#include <chrono>

namespace parbench {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace parbench
