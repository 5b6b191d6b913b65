// llama_dump: one forward and backward of a small Llama-style model (grouped-query attention, rotary positions,
// SwiGLU, RMSNorm) on one device and dtype, written out for an independent reference to recompute
// (llama_torch_reference.py): meta.json (the configuration, the parameter layout, the tokens, targets and loss) and
// params.f64 / grads.f64, the flat parameter and gradient buffers as little-endian float64.
//
//   llama_dump --device cpu|simt --dtype f32|bf16|f64 [--attention flash|plain] --out DIR
// Exit: 0 written, 2 bad arguments, 1 anything else.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/memory.h"
#include "kernels/ops.h"
#include "models/model.h"
#include "tests/models/host_values.h"

using namespace parbench;

namespace {

using test::to_host;

void write_doubles(const std::string& path, const std::vector<double>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(double)));
  if (!f) throw Error("cannot write " + path);
}

ModelConfig dumped_config(DType dtype, bool flash) {
  ModelConfig c;
  c.kind = ModelKind::llama;
  c.layers = 2, c.hidden = 32, c.heads = 4, c.kv_heads = 2, c.ffn = 24, c.seq = 7, c.vocab = 19;
  c.rope_theta = 500000, c.rms_norm_eps = 1e-6, c.dtype = dtype, c.flash_attention = flash;
  return c;
}

int run(const Device& device, DType dtype, bool flash, const std::string& dir) {
  const ModelConfig c = dumped_config(dtype, flash);
  TrackedAllocator alloc(device);
  Stream stream(device);
  auto model = Model::create(c, alloc);
  const std::int64_t n = model->layout().total, B = 3;
  Tensor params(alloc, dtype, {n}, MemCategory::parameters), grads(alloc, dtype, {n}, MemCategory::gradients);
  {
    const std::vector<float> init = model->initial_params(11);
    std::vector<char> raw(params.bytes());
    for (std::int64_t i = 0; i < n; ++i) store_from_double(raw.data(), dtype, std::size_t(i), init[std::size_t(i)]);
    device_memcpy(device, params.data(), Device{}, raw.data(), raw.size());
    device_memset(device, grads.data(), 0, grads.bytes());
  }
  SyntheticData data(c, 5);
  Batch batch = data.batch(0, 0, B, alloc);
  FlatAccess access(model->layout(), params, grads);
  double loss = 0;
  auto acts = model->forward(batch, access, 1.0f, stream, &loss);
  model->backward(*acts, batch, access, stream);
  stream.synchronize();

  nlohmann::json meta;
  meta["config"] = {{"layers", c.layers}, {"hidden", c.hidden}, {"heads", c.heads}, {"kv_heads", c.kv_heads},
                    {"ffn", c.ffn}, {"seq", c.seq}, {"vocab", c.vocab}, {"rope_theta", c.rope_theta},
                    {"rms_norm_eps", c.rms_norm_eps}, {"dtype", dtype_name(dtype)},
                    {"device", device.kind == DeviceKind::cpu ? "cpu" : "simt"}};
  meta["samples"] = B;
  auto ints = [](const Tensor& t) {
    std::vector<long long> out;
    for (double v : to_host(t)) out.push_back((long long)v);
    return out;
  };
  meta["tokens"] = ints(batch.inputs);
  meta["targets"] = ints(batch.targets);
  meta["loss"] = loss;
  for (const UnitLayout& u : model->layout().units) {
    nlohmann::json unit{{"name", u.name}, {"offset", u.offset}, {"params", nlohmann::json::array()}};
    for (const ParamSpec& p : u.params) unit["params"].push_back({{"name", p.name}, {"shape", p.shape}, {"offset", p.offset}});
    meta["units"].push_back(unit);
  }
  write_doubles(dir + "/params.f64", to_host(params));
  write_doubles(dir + "/grads.f64", to_host(grads));
  std::ofstream(dir + "/meta.json") << meta.dump(1) << "\n";
  std::cout << "llama_dump: " << n << " parameter slots, loss " << loss << ", written to " << dir << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cpu", dtype = "f32", attention = "flash", out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--device") device = value;
    else if (flag == "--dtype") dtype = value;
    else if (flag == "--attention") attention = value;
    else if (flag == "--out") out = value;
    else {
      std::cerr << "llama_dump: unknown option '" << flag << "'; accepted: --device, --dtype, --attention, --out\n";
      return 2;
    }
  }
  if (argc % 2 == 0 || out.empty() || (device != "cpu" && device != "simt") ||
      (attention != "flash" && attention != "plain")) {
    std::cerr << "usage: llama_dump --device cpu|simt --dtype f32|bf16|f64 [--attention flash|plain] --out DIR\n";
    return 2;
  }
  const Device dev{device == "cpu" ? DeviceKind::cpu : DeviceKind::simt};
  if (!ops::kernels_available(dev.kind)) {
    std::cerr << "llama_dump: this build has no " << device << " kernels\n";
    return 3;
  }
  try {
    return run(dev, parse_dtype(dtype), attention == "flash", out);
  } catch (const UsageError& e) {
    std::cerr << "llama_dump: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "llama_dump: " << e.what() << "\n";
    return 1;
  }
}
