// Out-of-line error helpers.
#include "base/error.h"

namespace parbench {

void throw_error(const char* file, int line, const std::string& what) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

}  // namespace parbench
