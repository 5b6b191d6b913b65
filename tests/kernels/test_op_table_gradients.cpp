// Every backward of the op table (kernels/op_list.h) against central finite differences of the forward its row is
// paired with, on the cpu reference in float64: the forward's tensors shared with the backward by name (its
// inputs and saved outputs), the loss <dout, out> summed over the forward's outputs (dloss times their sum where the
// backward takes a number), each element of each input that has a gradient perturbed (at most kMaxPerturbed of
// an input's elements, the first, the last and a random draw of the rest: the head-size rows' inputs have
// thousands, and every element costs two forward calls). A new pair is checked here through its rows, with no
// test of its own. Errors are printed as "[table-fd] backward forward gradient error";
// the entries with no check are printed with the reason their row gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/op_table.h"
#include "tests/kernels/kernel_test_util.h"

namespace parbench {
namespace {

using optable::NamedArg;
using optable::OpEntry;
using optable::Work;

// Odd sizes, heads of 4 channels; small, as each element of each input costs two forward calls.
constexpr optable::OpShape kGradShape{2, 5, 12, 3, 11};
constexpr double kStep = 1e-5, kBound = 1e-6;
constexpr std::int64_t kMaxPerturbed = 512;

// The elements of an input of n that are perturbed: all of them, or the first, the last and a random draw of the
// others, in order.
std::vector<std::int64_t> perturbed(std::int64_t n, std::mt19937_64& rng) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) all[std::size_t(i)] = i;
  if (n <= kMaxPerturbed) return all;
  std::vector<std::int64_t> inner(all.begin() + 1, all.end() - 1), out{0, n - 1};
  std::sample(inner.begin(), inner.end(), std::back_inserter(out), kMaxPerturbed - 2, rng);
  std::sort(out.begin(), out.end());
  return out;
}

const OpEntry* entry_named(std::string_view name) {
  for (const OpEntry& e : optable::op_table())
    if (e.name == name) return &e;
  return nullptr;
}

struct Pairing {
  const OpEntry* forward;
  const OpEntry* backward;
};
void PrintTo(const Pairing& p, std::ostream* os) { *os << p.backward->name << " of " << p.forward->name; }

// Each forward with its backward, and each partial backward with the forward it names.
std::vector<Pairing> pairings() {
  std::vector<Pairing> out;
  for (const OpEntry& e : optable::op_table()) {
    if (!e.pair.backward.empty())
      if (const OpEntry* b = entry_named(e.pair.backward)) out.push_back({&e, b});
    if (!e.pair.forward_of.empty())
      if (const OpEntry* f = entry_named(e.pair.forward_of)) out.push_back({f, &e});
  }
  return out;
}

// "hs64/dinp" -> "hs64/inp"; empty for a name that is not a gradient's.
std::string primal_of(const std::string& name) {
  const std::size_t at = name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1;
  if (name.size() < at + 2 || name[at] != 'd') return "";
  return name.substr(0, at) + name.substr(at + 1);
}
std::string gradient_of(const std::string& name) {
  const std::size_t at = name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1;
  return name.substr(0, at) + "d" + name.substr(at);
}

Tensor* named(Work& w, const std::string& name) {
  for (NamedArg& a : w.args)
    if (a.name == name) return &a.arg[0];
  return nullptr;
}
bool is_output(const Work& w, const Tensor& t) {
  for (const optable::Arg& a : w.checked)
    if (a[0].data() == t.data()) return true;
  return false;
}
// The forward's outputs that enter the loss: not the gradients of its own inputs (a fused op's).
bool in_loss(Work& f, const NamedArg& a) {
  if (!is_output(f, a.arg[0])) return false;
  const std::string x = primal_of(a.name);
  return x.empty() || !named(f, x) || is_output(f, *named(f, x));
}

class OpTableGradients : public ::testing::TestWithParam<Pairing> {};

TEST_P(OpTableGradients, MatchFiniteDifferencesOfTheForward) {
  const Pairing& p = GetParam();
  const bool fused = p.forward == p.backward;
  TrackedAllocator alloc{Device{DeviceKind::cpu}};
  std::vector<optable::Side> side{{Device{DeviceKind::cpu}, &alloc, true}};
  std::mt19937_64 rng{test::test_seed() ^ std::hash<std::string>{}(p.backward->name)};
  optable::OpCase c(side, DType::f32, rng);
  Work f = p.forward->make(c, kGradShape);
  Work made = fused ? Work{} : p.backward->make(c, kGradShape);
  Work& g = fused ? f : made;
  ASSERT_FALSE(f.args.empty()) << p.forward->name << " names none of its tensors";
  ASSERT_FALSE(g.args.empty()) << p.backward->name << " names none of its tensors";
  Stream st{Device{DeviceKind::cpu}};
  f.call(0, st);
  // The backward's gradients of the forward's inputs (zeroed: some accumulate), its gradients of the forward's
  // outputs (random, kept) and, by name, the forward's inputs and saved outputs.
  std::vector<std::pair<std::string, Tensor*>> grads;
  for (NamedArg& a : g.args) {
    Tensor& t = a.arg[0];
    const std::string x = primal_of(a.name);
    if (Tensor* fx = x.empty() ? nullptr : named(f, x)) {
      ASSERT_EQ(t.numel(), fx->numel()) << a.name << " against " << x;
      if (!is_output(f, *fx)) {
        std::memset(t.data(), 0, t.bytes());
        grads.push_back({a.name, &t});
      }
      continue;
    }
    if (fused) continue;
    if (Tensor* fa = named(f, a.name)) {
      ASSERT_EQ(t.bytes(), fa->bytes()) << a.name;
      std::memcpy(t.data(), fa->data(), t.bytes());
    }
  }
  ASSERT_FALSE(grads.empty()) << p.backward->name << " computes no gradient of a tensor of " << p.forward->name;
  g.call(0, st);
  std::vector<std::vector<double>> got;
  for (const auto& [name, t] : grads) got.push_back(test::to_vector(*t));
  auto loss = [&] {
    f.call(0, st);
    double l = 0;
    for (const NamedArg& a : f.args) {
      if (!in_loss(f, a)) continue;
      const Tensor& out = a.arg[0];
      const Tensor* dout = named(g, gradient_of(a.name));
      for (std::int64_t i = 0; i < out.numel(); ++i)
        l += test::at(out, i) * (dout ? test::at(*dout, i) : g.dloss);
    }
    return l;
  };
  for (std::size_t k = 0; k < grads.size(); ++k) {
    Tensor& x = *named(f, primal_of(grads[k].first));
    ASSERT_EQ(x.dtype(), DType::f64) << grads[k].first;
    const std::vector<std::int64_t> at = perturbed(x.numel(), rng);
    std::vector<double> fd, analytic;
    for (const std::int64_t i : at) {
      double& xi = x.ptr<double>()[i];
      const double keep = xi;
      xi = keep + kStep;
      const double up = loss();
      xi = keep - kStep;
      const double down = loss();
      xi = keep;
      fd.push_back((up - down) / (2 * kStep));
      analytic.push_back(got[k][std::size_t(i)]);
    }
    const double e = test::rel_l2(analytic, fd);
    std::printf("[table-fd] %-30s %-30s %-12s %.2e (bound %.0e, %zu of %lld elements)\n", p.backward->name.c_str(),
                p.forward->name.c_str(), grads[k].first.c_str(), e, kBound, at.size(), (long long)x.numel());
    EXPECT_LE(e, kBound) << p.backward->name << "'s " << grads[k].first << " against finite differences of "
                         << p.forward->name;
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, OpTableGradients, ::testing::ValuesIn(pairings()),
                         [](const auto& info) { return info.param.backward->name; });

// Every entry is a forward with its backward, a backward of a forward, or says why it has none; named entries
// exist. The unchecked ones are printed with their reasons.
TEST(OpTablePairs, EveryEntryIsPairedOrSaysWhyNot) {
  std::set<std::string> backwards;
  for (const OpEntry& e : optable::op_table()) {
    const int said = !e.pair.backward.empty() + !e.pair.forward_of.empty() + !e.pair.unchecked.empty();
    EXPECT_LE(said, 1) << e.name << " says more than one of backward, backward_of and unchecked";
    if (!e.pair.backward.empty()) {
      const OpEntry* b = entry_named(e.pair.backward);
      EXPECT_NE(b, nullptr) << e.name << " names a backward the table lacks: " << e.pair.backward;
      if (b && b != &e) {
        EXPECT_TRUE(b->pair.backward.empty() && b->pair.forward_of.empty() && b->pair.unchecked.empty())
            << e.name << "'s backward " << b->name << " must be kBackward";
        EXPECT_TRUE(backwards.insert(b->name).second) << b->name << " is the backward of two forwards";
      }
    }
    if (!e.pair.forward_of.empty()) {
      const OpEntry* f = entry_named(e.pair.forward_of);
      EXPECT_TRUE(f && !f->pair.backward.empty()) << e.name << " names " << e.pair.forward_of
                                                  << ", not a forward of the table";
    }
    if (!e.pair.unchecked.empty())
      std::printf("[table-fd] %-30s not checked: %s\n", e.name.c_str(), std::string(e.pair.unchecked).c_str());
  }
  for (const OpEntry& e : optable::op_table()) {
    if (e.pair.backward.empty() && e.pair.forward_of.empty() && e.pair.unchecked.empty()) {
      EXPECT_TRUE(backwards.count(e.name)) << e.name << " is kBackward but no forward names it as its backward";
    }
  }
  EXPECT_GE(pairings().size(), 12u);
}

}  // namespace
}  // namespace parbench
