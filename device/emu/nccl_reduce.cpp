// Element arithmetic of the emulated NCCL.
#include "device/emu/nccl_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "base/dtype.h"

namespace parbench::gpu_emu {
namespace {

// The 16-bit floating types as values that convert through float; every step rounds back to the type, as a
// GPU's half and bfloat16 arithmetic does.
struct Half {
  static float get(const void* p) {
    f16 h;
    std::memcpy(&h, p, 2);
    return f16_to_float(h);
  }
  static void put(void* p, float f) {
    const f16 h = float_to_f16(f);
    std::memcpy(p, &h, 2);
  }
};
struct Bf16 {
  static float get(const void* p) {
    bf16 b;
    std::memcpy(&b, p, 2);
    return bf16_to_float(b);
  }
  static void put(void* p, float f) {
    const bf16 b = float_to_bf16(f);
    std::memcpy(p, &b, 2);
  }
};
template <class T>
struct Plain {
  static T get(const void* p) {
    T x;
    std::memcpy(&x, p, sizeof x);
    return x;
  }
  static void put(void* p, T x) { std::memcpy(p, &x, sizeof x); }
};

template <class V>
V apply(ncclRedOp_t op, V a, V b) {
  switch (op) {
    case ncclProd: return V(a * b);
    case ncclMax: return std::max(a, b);
    case ncclMin: return std::min(a, b);
    default: return V(a + b);  // ncclSum, and ncclAvg's sum
  }
}

// Access: how to load and store one element; V: the arithmetic type (float for the 16-bit types).
template <class Access, class V, bool kFloating>
void reduce_as(char* out, const std::vector<const void*>& in, std::size_t count, std::size_t size, ncclRedOp_t op) {
  const std::size_t n = in.size();
  const bool avg = op == ncclAvg;
  // NCCL's ncclAvg on floating types is a sum of inputs pre-multiplied by 1/n (the scalar in the type).
  V scale = V(1);
  if (avg && kFloating) {
    char tmp[8];
    Access::put(tmp, V(1.0 / double(n)));
    scale = Access::get(tmp);
  }
  auto load = [&](std::size_t r, std::size_t i) {
    V x = Access::get(static_cast<const char*>(in[r]) + i * size);
    if (avg && kFloating) {
      char tmp[8];
      Access::put(tmp, V(x * scale));
      x = Access::get(tmp);
    }
    return x;
  };
  for (std::size_t i = 0; i < count; ++i) {
    V acc = load(0, i);
    for (std::size_t r = 1; r < n; ++r) {
      char tmp[8];
      Access::put(tmp, apply(op, acc, load(r, i)));  // round to the type after every step
      acc = Access::get(tmp);
    }
    if (avg && !kFloating) acc = V(acc / V(n));
    Access::put(out + i * size, acc);
  }
}

}  // namespace

std::size_t nccl_type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

std::string nccl_type_name(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "int8";
    case ncclUint8: return "uint8";
    case ncclInt32: return "int32";
    case ncclUint32: return "uint32";
    case ncclInt64: return "int64";
    case ncclUint64: return "uint64";
    case ncclFloat16: return "float16";
    case ncclFloat32: return "float32";
    case ncclFloat64: return "float64";
    case ncclBfloat16: return "bfloat16";
    default: return "datatype " + std::to_string(int(t));
  }
}

std::string nccl_op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return "op " + std::to_string(int(op));
  }
}

std::string why_unsupported(ncclDataType_t t, ncclRedOp_t op) {
  if (nccl_type_size(t) == 0)
    return nccl_type_name(t) + " is not a datatype the emulated NCCL supports (the 8-bit floating types are not "
                               "emulated)";
  if (int(op) < 0 || int(op) >= int(ncclNumOps))
    return nccl_op_name(op) + " is not a built-in reduction (sum, prod, max, min, avg)";
  return {};
}

void nccl_reduce(void* out, const std::vector<const void*>& in, std::size_t count, ncclDataType_t t, ncclRedOp_t op) {
  char* o = static_cast<char*>(out);
  const std::size_t s = nccl_type_size(t);
  switch (t) {
    case ncclInt8: return reduce_as<Plain<std::int8_t>, std::int8_t, false>(o, in, count, s, op);
    case ncclUint8: return reduce_as<Plain<std::uint8_t>, std::uint8_t, false>(o, in, count, s, op);
    case ncclInt32: return reduce_as<Plain<std::int32_t>, std::int32_t, false>(o, in, count, s, op);
    case ncclUint32: return reduce_as<Plain<std::uint32_t>, std::uint32_t, false>(o, in, count, s, op);
    case ncclInt64: return reduce_as<Plain<std::int64_t>, std::int64_t, false>(o, in, count, s, op);
    case ncclUint64: return reduce_as<Plain<std::uint64_t>, std::uint64_t, false>(o, in, count, s, op);
    case ncclFloat16: return reduce_as<Half, float, true>(o, in, count, s, op);
    case ncclBfloat16: return reduce_as<Bf16, float, true>(o, in, count, s, op);
    case ncclFloat32: return reduce_as<Plain<float>, float, true>(o, in, count, s, op);
    case ncclFloat64: return reduce_as<Plain<double>, double, true>(o, in, count, s, op);
    default: break;
  }
}

}  // namespace parbench::gpu_emu
