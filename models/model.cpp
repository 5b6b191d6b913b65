// Model creation, parameter initialisation and the flat-buffer access.
#include "models/model.h"

#include <cmath>

#include "core/memory.h"
#include "models/data.h"

namespace parbench {

std::unique_ptr<Model> Model::create(const ModelConfig& config, TrackedAllocator& alloc) {
  config.validate();
  return config.kind == ModelKind::gpt ? make_gpt(config, alloc) : make_mlp(config, alloc);
}

std::vector<float> Model::initial_params(std::uint64_t seed) const {
  std::vector<float> flat(layout_.total, 0.0f);
  for (std::size_t u = 0; u < layout_.units.size(); ++u) {
    const UnitLayout& unit = layout_.units[u];
    for (const ParamSpec& p : unit.params) {
      const std::int64_t n = shape_numel(p.shape), base = unit.offset + p.offset;
      const bool is_bias = p.shape.size() == 1 && p.name.back() == 'b';
      const bool is_ln_weight = p.shape.size() == 1 && !is_bias;
      // Uniform with the variance of N(0, 0.02^2) for embeddings and 1/fan_in scaling for linear layers; layernorm
      // weights start at 1 and biases at a small seeded value, so their gradients are exercised from step one.
      const double scale = p.shape.size() == 2 ? (p.name == "wte" || p.name == "wpe" ? 0.02 * std::sqrt(3.0)
                                                                                      : 1.0 / std::sqrt(double(p.shape[1])))
                                               : 0.01;
      for (std::int64_t i = 0; i < n; ++i) {
        double r = hash_uniform(seed, std::uint64_t(base + i), 0x1a17);
        flat[base + i] = float(is_ln_weight ? 1.0 + 0.1 * r : scale * r);
      }
    }
  }
  return flat;
}

Tensor Model::param(const Tensor& unit_flat, int unit, std::string_view name) const {
  const ParamSpec& p = layout_.find(unit, name);
  return unit_flat.slice(p.offset, p.shape);
}

double Model::mean_on_host(const Tensor& t, const Stream& s) const {
  s.synchronize();
  std::vector<char> raw(t.bytes());
  device_memcpy(Device{}, raw.data(), t.device(), t.data(), t.bytes());
  double sum = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) sum += load_as_double(raw.data(), t.dtype(), std::size_t(i));
  return t.numel() ? sum / double(t.numel()) : 0;
}

void Model::zero(Tensor& t) const { device_memset(t.device(), t.data(), 0, t.bytes()); }

Tensor FlatAccess::params(int unit) {
  const UnitLayout& u = layout_.units.at(unit);
  return params_.slice(u.offset, {u.numel});
}

Tensor FlatAccess::grads(int unit) {
  const UnitLayout& u = layout_.units.at(unit);
  return grads_.slice(u.offset, {u.numel});
}

}  // namespace parbench
