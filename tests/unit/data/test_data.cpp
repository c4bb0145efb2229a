// Resize, synthetic data, shuffling, batch loading and loading ahead (--prefetch).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "src/data/batch_loader.h"
#include "src/data/batch_prefetcher.h"
#include "src/data/dataset.h"
#include "src/data/image_resize.h"
#include "src/data/shuffle.h"
#include "src/data/synthetic_dataset.h"

namespace mlps {
namespace {

constexpr int kSide = kSyntheticSide;
constexpr int kArea = kSide * kSide;

std::vector<float> load_sample(const Dataset& data, Split split, int64_t index, int size,
                               int32_t* label = nullptr) {
  std::vector<float> pixels(static_cast<size_t>(size) * size);
  const int32_t l = data.load(split, index, size, pixels.data());
  if (label != nullptr) *label = l;
  return pixels;
}

TEST(ImageResize, EqualSizesCopy) {
  std::vector<float> src(5 * 7);
  std::iota(src.begin(), src.end(), 0.5f);
  std::vector<float> dst(src.size(), -1.0f);
  resize_bilinear(src.data(), 5, 7, dst.data(), 5, 7);
  EXPECT_EQ(dst, src);
}

TEST(ImageResize, ConstantStaysConstant) {
  const std::vector<float> src(28 * 28, 0.375f);
  for (int size : {7, 28, 64, 100}) {
    std::vector<float> dst(static_cast<size_t>(size) * size, -1.0f);
    resize_bilinear(src.data(), 28, 28, dst.data(), size, size);
    for (float v : dst) ASSERT_FLOAT_EQ(v, 0.375f) << "size " << size;
  }
}

TEST(ImageResize, TwoByTwoToFourByFourHalfPixel) {
  // f(x, y) = x + 2y. Along an axis, 2 -> 4 samples the source at (d + 0.5) / 2 - 0.5 =
  // -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to the last pixel): weights 0, 1/4, 3/4, 1.
  const std::array<float, 4> src = {0, 1, 2, 3};
  const std::array<float, 16> expected = {0.0f, 0.25f, 0.75f, 1.0f,   //
                                          0.5f, 0.75f, 1.25f, 1.5f,   //
                                          1.5f, 1.75f, 2.25f, 2.5f,   //
                                          2.0f, 2.25f, 2.75f, 3.0f};
  std::array<float, 16> dst{};
  resize_bilinear(src.data(), 2, 2, dst.data(), 4, 4);
  for (size_t i = 0; i < dst.size(); ++i) EXPECT_FLOAT_EQ(dst[i], expected[i]) << "pixel " << i;
}

TEST(ImageResize, DownscaleByTwoAveragesBlocks) {
  // 4 -> 2 samples at 0.5 and 2.5: the mean of each 2 x 2 block (no antialias needed here).
  std::array<float, 16> src;
  std::iota(src.begin(), src.end(), 0.0f);
  std::array<float, 4> dst{};
  resize_bilinear(src.data(), 4, 4, dst.data(), 2, 2);
  EXPECT_FLOAT_EQ(dst[0], (0 + 1 + 4 + 5) / 4.0f);
  EXPECT_FLOAT_EQ(dst[3], (10 + 11 + 14 + 15) / 4.0f);
}

TEST(ImageResize, LinearRampStaysLinearInInterior) {
  const int src_w = 8, dst_w = 20, rows = 3;
  std::vector<float> src(static_cast<size_t>(rows) * src_w);
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < src_w; ++x) src[static_cast<size_t>(y * src_w + x)] = 2.0f * x + 1.0f;
  std::vector<float> dst(static_cast<size_t>(rows) * dst_w);
  resize_bilinear(src.data(), rows, src_w, dst.data(), rows, dst_w);
  const double scale = static_cast<double>(src_w) / dst_w;
  int interior = 0;
  for (int x = 0; x < dst_w; ++x) {
    const double at = scale * (x + 0.5) - 0.5;
    if (at < 0 || at > src_w - 1) continue;
    ++interior;
    for (int y = 0; y < rows; ++y) {
      EXPECT_NEAR(dst[static_cast<size_t>(y * dst_w + x)], 2.0 * at + 1.0, 1e-5) << "x " << x;
    }
  }
  EXPECT_GE(interior, dst_w - 4);
  // Outside the interior the edge pixel is repeated.
  EXPECT_FLOAT_EQ(dst[0], 1.0f);
  EXPECT_FLOAT_EQ(dst[dst_w - 1], 2.0f * (src_w - 1) + 1.0f);
}

TEST(SyntheticData, SizesAndDescription) {
  const auto data = make_synthetic_dataset(1);
  EXPECT_EQ(data->size(Split::train), 60000);
  EXPECT_EQ(data->size(Split::test), 10000);
  EXPECT_EQ(data->num_classes(), 10);
  EXPECT_EQ(data->describe(), "synthetic");
  std::vector<float> pixels(kArea);
  EXPECT_THROW(data->load(Split::test, 10000, kSide, pixels.data()), std::out_of_range);
  EXPECT_THROW(data->load(Split::train, -1, kSide, pixels.data()), std::out_of_range);
}

TEST(SyntheticData, SameSampleTwiceIsIdentical) {
  const auto data = make_synthetic_dataset(7);
  int32_t a = -1, b = -2;
  const auto first = load_sample(*data, Split::train, 1234, 64, &a);
  const auto second = load_sample(*data, Split::train, 1234, 64, &b);
  EXPECT_EQ(first, second);
  EXPECT_EQ(a, b);
}

TEST(SyntheticData, GenerationOrderDoesNotMatter) {
  const auto forward = make_synthetic_dataset(11);
  const auto backward = make_synthetic_dataset(11);
  const int n = 40;
  std::vector<std::vector<float>> ahead(n), behind(n);
  std::vector<int32_t> ahead_labels(n), behind_labels(n);
  for (int i = 0; i < n; ++i) ahead[i] = load_sample(*forward, Split::train, i, kSide, &ahead_labels[i]);
  for (int i = n - 1; i >= 0; --i) behind[i] = load_sample(*backward, Split::train, i, kSide, &behind_labels[i]);
  EXPECT_EQ(ahead, behind);
  EXPECT_EQ(ahead_labels, behind_labels);
}

TEST(SyntheticData, SeedsSplitsAndIndicesDiffer) {
  const auto one = make_synthetic_dataset(1);
  const auto two = make_synthetic_dataset(2);
  EXPECT_NE(load_sample(*one, Split::train, 5, kSide), load_sample(*two, Split::train, 5, kSide));
  EXPECT_NE(load_sample(*one, Split::train, 5, kSide), load_sample(*one, Split::test, 5, kSide));
  EXPECT_NE(load_sample(*one, Split::train, 5, kSide), load_sample(*one, Split::train, 6, kSide));
  // Labels depend on the seed too.
  int same = 0;
  for (int i = 0; i < 200; ++i) {
    int32_t a = 0, b = 0;
    load_sample(*one, Split::train, i, kSide, &a);
    load_sample(*two, Split::train, i, kSide, &b);
    same += a == b;
  }
  EXPECT_LT(same, 60);  // about 20 expected by chance
}

// 2000 training samples at native size, shared by the statistics tests below.
struct SampleSet {
  std::vector<std::vector<float>> pixels;
  std::vector<int32_t> labels;
};
SampleSet make_samples(const Dataset& data, Split split, int64_t first, int count) {
  SampleSet set;
  set.labels.resize(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    set.pixels.push_back(load_sample(data, split, first + i, kSide, &set.labels[static_cast<size_t>(i)]));
  }
  return set;
}

TEST(SyntheticData, LabelsRoughlyBalancedAndPixelsInUnitRange) {
  const auto data = make_synthetic_dataset(3);
  const SampleSet set = make_samples(*data, Split::train, 0, 2000);
  std::array<int, 10> counts{};
  for (int32_t label : set.labels) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++counts[static_cast<size_t>(label)];
  }
  for (int c = 0; c < 10; ++c) {
    EXPECT_GE(counts[static_cast<size_t>(c)], 140) << "class " << c;  // 7 %
    EXPECT_LE(counts[static_cast<size_t>(c)], 260) << "class " << c;  // 13 %
  }
  double ink = 0;
  for (const auto& image : set.pixels) {
    for (float v : image) {
      ASSERT_GE(v, 0.0f);
      ASSERT_LE(v, 1.0f);
      ink += v;
    }
  }
  const double mean = ink / (2000.0 * kArea);
  EXPECT_GT(mean, 0.05);  // strokes are drawn
  EXPECT_LT(mean, 0.4);   // mostly background, as MNIST
  // Resized samples stay in range as well.
  for (float v : load_sample(*data, Split::test, 9, 64)) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LE(v, 1.0f);
  }
}

TEST(SyntheticData, ClassesAreSeparable) {
  const auto data = make_synthetic_dataset(5);
  const SampleSet train = make_samples(*data, Split::train, 0, 2000);
  std::vector<std::vector<double>> means(10, std::vector<double>(kArea, 0.0));
  std::array<int, 10> counts{};
  for (size_t i = 0; i < train.pixels.size(); ++i) {
    const auto c = static_cast<size_t>(train.labels[i]);
    ++counts[c];
    for (int p = 0; p < kArea; ++p) means[c][static_cast<size_t>(p)] += train.pixels[i][static_cast<size_t>(p)];
  }
  for (size_t c = 0; c < 10; ++c)
    for (double& v : means[c]) v /= counts[c];
  auto distance2 = [&](const std::vector<float>& image, size_t c) {
    double sum = 0;
    for (int p = 0; p < kArea; ++p) {
      const double d = image[static_cast<size_t>(p)] - means[c][static_cast<size_t>(p)];
      sum += d * d;
    }
    return sum;
  };
  // On average a class's samples lie closer to their own mean than to any other class's.
  std::vector<std::array<double, 10>> mean_distance(10, std::array<double, 10>{});
  for (size_t i = 0; i < train.pixels.size(); ++i) {
    const auto c = static_cast<size_t>(train.labels[i]);
    for (size_t k = 0; k < 10; ++k) mean_distance[c][k] += distance2(train.pixels[i], k) / counts[c];
  }
  for (size_t c = 0; c < 10; ++c) {
    for (size_t k = 0; k < 10; ++k) {
      if (k != c) {
        EXPECT_LT(mean_distance[c][c], mean_distance[c][k]) << c << " vs " << k;
      }
    }
  }
  // Nearest class mean on held-out test samples is far better than chance (10 %), but the
  // jitter keeps it from being trivial.
  const SampleSet test = make_samples(*data, Split::test, 0, 500);
  int correct = 0;
  for (size_t i = 0; i < test.pixels.size(); ++i) {
    size_t best = 0;
    for (size_t k = 1; k < 10; ++k)
      if (distance2(test.pixels[i], k) < distance2(test.pixels[i], best)) best = k;
    correct += static_cast<int32_t>(best) == test.labels[i];
  }
  EXPECT_GT(correct, 250);
  EXPECT_LT(correct, 500);
}

TEST(EpochOrder, IsADeterministicPermutation) {
  const int64_t n = 1000;
  const auto order = epoch_order(n, 42, 0);
  ASSERT_EQ(order.size(), static_cast<size_t>(n));
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(static_cast<size_t>(n));
  std::iota(identity.begin(), identity.end(), int64_t{0});
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(order, identity);
  EXPECT_EQ(order, epoch_order(n, 42, 0));
  EXPECT_NE(order, epoch_order(n, 42, 1));
  EXPECT_NE(order, epoch_order(n, 43, 0));
  EXPECT_TRUE(epoch_order(0, 1, 0).empty());
  EXPECT_EQ(epoch_order(1, 1, 0), std::vector<int64_t>{0});
  EXPECT_THROW(epoch_order(-1, 1, 0), std::invalid_argument);
}

TEST(EpochOrder, FirstPositionIsSpreadOut) {
  // Each sample should lead an epoch about equally often: a smoke test for bias.
  std::array<int, 4> first{};
  for (int epoch = 0; epoch < 4000; ++epoch) ++first[static_cast<size_t>(epoch_order(4, 9, epoch)[0])];
  for (int count : first) {
    EXPECT_GT(count, 850);
    EXPECT_LT(count, 1150);
  }
}

TEST(BatchLoader, LoadsTheOrderedSliceAndRanges) {
  const auto data = make_synthetic_dataset(2);
  const int size = 16;
  const std::vector<int64_t> order = {17, 3, 999, 42, 8};
  const HostBatch batch = load_batch(*data, Split::train, order, 1, 3, size);
  EXPECT_EQ(batch.rows, 3);
  EXPECT_EQ(batch.features, size * size);
  ASSERT_EQ(batch.pixels.size(), static_cast<size_t>(3 * size * size));
  ASSERT_EQ(batch.labels.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    int32_t label = -1;
    const auto expected = load_sample(*data, Split::train, order[static_cast<size_t>(1 + r)], size, &label);
    EXPECT_EQ(batch.labels[static_cast<size_t>(r)], label);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), batch.pixels.begin() + r * size * size));
  }
  const HostBatch range = load_batch_range(*data, Split::test, 9998, 2, size);
  EXPECT_EQ(range.rows, 2);
  int32_t last = -1;
  const auto expected_last = load_sample(*data, Split::test, 9999, size, &last);
  EXPECT_EQ(range.labels[1], last);
  EXPECT_TRUE(std::equal(expected_last.begin(), expected_last.end(), range.pixels.begin() + size * size));
  EXPECT_THROW(load_batch(*data, Split::train, order, 3, 3, size), std::out_of_range);
  EXPECT_THROW(load_batch_range(*data, Split::test, 9999, 2, size), std::out_of_range);
  EXPECT_EQ(load_batch(*data, Split::train, order, 5, 0, size).rows, 0);
}

// Ahead, a worker thread loads each batch; without, take() loads it on the caller's thread. Either
// way take(i) returns batch i, and a loader's exception comes out of take() for that batch.
TEST(BatchPrefetcher, AheadOnAThreadOrInTakeTheSameBatches) {
  for (const bool ahead : {true, false}) {
    const std::thread::id caller = std::this_thread::get_id();
    std::vector<bool> on_caller;
    BatchPrefetcher batches(
        [&](int64_t index) {
          on_caller.push_back(std::this_thread::get_id() == caller);
          if (index == 3) throw std::runtime_error("batch 3 is unreadable");
          HostBatch b;
          b.rows = index;
          return b;
        },
        5, ahead);
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(batches.take(i).rows, i) << ahead;
    EXPECT_THROW(batches.take(3), std::runtime_error) << ahead;
    ASSERT_GE(on_caller.size(), 3u);
    for (const bool here : on_caller) EXPECT_EQ(here, !ahead);
  }
}

}  // namespace
}  // namespace mlps
