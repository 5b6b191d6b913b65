// Model creation, parameter initialisation and the flat-buffer access.
#include "models/model.h"

#include <cmath>

#include "base/error.h"
#include "core/memory.h"
#include "models/data.h"
#include "profiles/range.h"

namespace parbench {

namespace {

// The values depend on each element's index in the full model's flat buffer only.
std::vector<float> seeded_params(const ParamLayout& layout, std::uint64_t seed) {
  std::vector<float> flat(layout.total, 0.0f);
  for (std::size_t u = 0; u < layout.units.size(); ++u) {
    const UnitLayout& unit = layout.units[u];
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

}  // namespace

std::unique_ptr<Model> Model::create(const ModelConfig& config, TrackedAllocator& alloc, TensorParallel* tp) {
  config.validate();
  if (config.tp > 1 && (tp == nullptr || tp->comm == nullptr))
    throw Error("a model with tp " + std::to_string(config.tp) + " needs its tensor-parallel group");
  if (tp && tp->comm && tp->comm->size() != config.tp)
    throw Error("the tensor-parallel group has " + std::to_string(tp->comm->size()) + " ranks but the model tp is " +
                std::to_string(config.tp));
  if (config.kind == ModelKind::llama) return make_llama(config, alloc, tp);
  return config.kind == ModelKind::gpt ? make_gpt(config, alloc, tp) : make_mlp(config, alloc, tp);
}

std::vector<float> Model::initial_params(std::uint64_t seed) const {
  if (config_.tp > 1) {
    const ParamLayout full_layout = make_layout(config_.unsplit());
    const std::vector<float> full = seeded_params(full_layout, seed);
    std::vector<float> flat(std::size_t(layout_.total), 0.0f);
    for (int u = 0; u < units(); ++u) {
      const TpIndex map = tp_index(config_, tp_rank(), u);
      const std::int64_t base = layout_.units[std::size_t(u)].offset;
      const std::int64_t full_base = full_layout.units[std::size_t(u)].offset;
      for (std::size_t i = 0; i < map.full.size(); ++i)
        if (map.full[i] >= 0) flat[std::size_t(base) + i] = full[std::size_t(full_base + map.full[i])];
    }
    return flat;
  }
  return seeded_params(layout_, seed);
}

Shape Model::boundary_shape(std::int64_t samples) const {
  if (config_.is_transformer()) return {samples, config_.local_seq(), config_.hidden};
  return {samples, config_.hidden};
}

std::unique_ptr<Activations> Model::forward(const Batch& batch, UnitRange r, const Tensor& input, UnitAccess& access,
                                            float dloss, const Stream& s, double* loss) {
  if (r.first < 0 || r.last > units() || r.first >= r.last)
    throw Error("unit range [" + std::to_string(r.first) + ", " + std::to_string(r.last) + ") is not inside [0, " +
                std::to_string(units()) + ")");
  auto acts = new_activations();
  acts->range = r;
  acts->dloss = dloss;
  acts->x.resize(std::size_t(units() + 1));
  acts->stash.resize(std::size_t(units()));
  if (r.first > 0) {
    if (input.shape() != boundary_shape(batch.samples)) throw Error("forward of a model piece: input has the wrong shape");
    acts->x[std::size_t(r.first)] = input;
  }
  for (int u = r.first; u < r.last; ++u) {
    forward_unit(*acts, u, batch, access, s);
    access.forward_done(u);
  }
  if (r.last == units() && loss) *loss = mean_on_host(acts->losses, s);
  return acts;
}

Tensor Model::backward(Activations& acts, const Batch& batch, const Tensor& dout, UnitAccess& access, const Stream& s,
                       BackwardPart part) {
  const UnitRange r = acts.range;
  if (part == BackwardPart::weight) {
    for (int u = r.last - 1; u >= r.first; --u) {
      backward_weight_unit(acts, u, batch, access, s);
      access.backward_done(u);
    }
    return {};
  }
  Tensor dres = work(config_.dtype, boundary_shape(batch.samples));
  if (r.last == units()) {
    loss_backward(acts, batch, dres, s);
  } else {
    if (dout.shape() != dres.shape()) throw Error("backward of a model piece: output gradient has the wrong shape");
    device_memcpy_async(dres.device(), dres.data(), dout.device(), dout.data(), dres.bytes(), s);
  }
  for (int u = r.last - 1; u >= r.first; --u) {
    if (part == BackwardPart::input) {
      backward_input_unit(acts, u, batch, dres, access, s);
      continue;
    }
    // One range per unit, so a timeline shows the weight-gradient part ("dW ...") as part of the backward.
    PB_RANGE("backward", Category::compute, {.layer = u});
    backward_input_unit(acts, u, batch, dres, access, s);
    backward_weight_unit(acts, u, batch, access, s);
    access.backward_done(u);
  }
  return r.first > 0 ? dres : Tensor{};
}

Tensor Model::keep(const Tensor& t, const Stream& s) const {
  Tensor out = act(t.dtype(), t.shape());
  device_memcpy_async(out.device(), out.data(), t.device(), t.data(), t.bytes(), s);
  return out;
}

double Model::mean_on_host(const Tensor& t, const Stream& s) const {
  s.synchronize();
  std::vector<char> raw(t.bytes());
  device_memcpy(Device{}, raw.data(), t.device(), t.data(), t.bytes());
  double sum = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) sum += load_as_double(raw.data(), t.dtype(), std::size_t(i));
  return t.numel() ? sum / double(t.numel()) : 0;
}

void Model::zero(Tensor& t, const Stream& s) const { device_memset_async(t.device(), t.data(), 0, t.bytes(), s); }

Tensor FlatAccess::params(int unit) {
  const UnitLayout& u = layout_.units.at(unit);
  return params_.slice(u.offset, {u.numel});
}

Tensor FlatAccess::grads(int unit) {
  const UnitLayout& u = layout_.units.at(unit);
  return grads_.slice(u.offset, {u.numel});
}

}  // namespace parbench
