// Finite-difference check of the whole model's backward pass in fp64: every parameter gradient
// of FC_Net (both block kinds) against central differences of the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "src/base/counter_hash.h"
#include "src/model/serial_net.h"
#include "tests/model_shapes.h"

namespace mlps {
namespace {

struct Case {
  BlockKind block;
  const char* name;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class GradientCheck : public ::testing::TestWithParam<Case> {};

TEST_P(GradientCheck, EveryParameterMatchesCentralDifferences) {
  Device device(DeviceKind::cpu);
  const ModelConfig config = model_shape(3, 6, 2, 2, GetParam().block);  // 9 input features
  const int64_t rows = 5;
  const int64_t global_batch = 7;  // the loss is a mean over a larger global batch
  SerialNet<double> model(device, config, rows);
  model.parameters().initialise(11);

  CounterStream stream(99);
  std::vector<double> inputs(rows * config.input_features());
  for (auto& x : inputs) x = stream.uniform();
  std::vector<int32_t> labels(rows);
  for (auto& y : labels) y = static_cast<int32_t>(stream.below(10));

  auto loss = [&] { return model.forward(inputs.data(), labels.data(), rows) / global_batch; };
  loss();
  model.backward(rows, global_batch, false);

  const double h = 1e-6;
  int64_t checked = 0;
  for (auto& p : model.parameters()) {
    const std::vector<double> analytic = p->grad.download();
    std::vector<double> values = p->value.download();
    for (int64_t i = 0; i < p->size(); ++i) {
      const double saved = values[i];
      values[i] = saved + h;
      p->value.upload(values);
      const double up = loss();
      values[i] = saved - h;
      p->value.upload(values);
      const double down = loss();
      values[i] = saved;
      p->value.upload(values);
      const double numeric = (up - down) / (2 * h);
      const double scale = std::max(1e-3, std::abs(numeric) + std::abs(analytic[i]));
      EXPECT_LT(std::abs(numeric - analytic[i]) / scale, 1e-6)
          << p->name << "[" << i << "]: analytic " << analytic[i] << ", numeric " << numeric;
      ++checked;
    }
  }
  EXPECT_EQ(checked, model.parameters().element_count());
}

INSTANTIATE_TEST_SUITE_P(Blocks, GradientCheck,
                         ::testing::Values(Case{BlockKind::residual_mlp, "residual_mlp"},
                                           Case{BlockKind::plain, "plain"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GradientAccumulation, AccumulateAddsToTheStoredGradients) {
  Device device(DeviceKind::cpu);
  const ModelConfig config = model_shape(3, 4, 1, 2);
  SerialNet<double> model(device, config, 4);
  model.parameters().initialise(3);
  std::vector<double> inputs(4 * 9);
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = 0.1 * static_cast<double>(i % 7);
  std::vector<int32_t> labels{1, 2, 3, 4};
  model.forward(inputs.data(), labels.data(), 4);
  model.backward(4, 4, false);
  std::vector<std::vector<double>> once;
  for (auto& p : model.parameters()) once.push_back(p->grad.download());
  model.backward(4, 4, true);
  size_t t = 0;
  for (auto& p : model.parameters()) {
    const auto twice = p->grad.download();
    for (size_t i = 0; i < twice.size(); ++i)
      EXPECT_NEAR(twice[i], 2 * once[t][i], 1e-14 + 1e-12 * std::abs(once[t][i])) << p->name;
    ++t;
  }
}

}  // namespace
}  // namespace mlps
