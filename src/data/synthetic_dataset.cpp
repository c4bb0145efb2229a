#include "src/data/synthetic_dataset.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/base/counter_hash.h"
#include "src/data/image_resize.h"

namespace mlps {
namespace {

constexpr int kClasses = 10;
constexpr double kCentre = kSyntheticSide / 2.0;
// Domain tags keep the streams keyed by the same seed independent of each other.
constexpr uint64_t kGlyphDomain = 0x474c595048ull;   // "GLYPH"
constexpr uint64_t kSampleDomain = 0x53414d504cull;  // "SAMPL"
constexpr uint64_t kLabelDomain = 0x4c4142454cull;   // "LABEL"

struct Point {
  double x;
  double y;
};
using Polyline = std::vector<Point>;
using Glyph = std::vector<Polyline>;

// A stroke of a digit template in canvas pixels (y grows downwards): a line from (a, b) to
// (c, d), or an elliptic arc about (a, b) with radii (c, d) from angle e to f in degrees
// (0 = right, 90 = down).
struct StrokeSpec {
  bool arc;
  double a, b, c, d, e, f;
};

// Digit-like shapes, so the classes are told apart by where ink lies, as in MNIST.
const std::array<std::vector<StrokeSpec>, kClasses>& digit_templates() {
  static const std::array<std::vector<StrokeSpec>, kClasses> templates = {{
      {{true, 14, 14, 5.5, 8.5, 0, 360}},
      {{false, 14, 5, 14, 23, 0, 0}, {false, 10.5, 8.5, 14, 5, 0, 0}},
      {{true, 14, 10, 5, 5, -170, 20},
       {false, 18.7, 11.7, 9, 23, 0, 0},
       {false, 9, 23, 20, 23, 0, 0}},
      {{true, 13.5, 9.5, 4.5, 4.5, -150, 90}, {true, 13.5, 18.5, 4.5, 4.5, -90, 150}},
      {{false, 17, 23, 17, 5, 0, 0}, {false, 17, 5, 8, 17, 0, 0}, {false, 8, 17, 21, 17, 0, 0}},
      {{false, 19, 5, 10, 5, 0, 0},
       {false, 10, 5, 10.5, 13, 0, 0},
       {true, 14, 17.5, 5.5, 5.5, -125, 140}},
      {{false, 18, 5, 10, 16, 0, 0}, {true, 14, 18, 5, 5, 0, 360}},
      {{false, 8, 5, 20, 5, 0, 0}, {false, 20, 5, 12, 23, 0, 0}},
      {{true, 14, 9, 4, 4, 0, 360}, {true, 14, 19, 5, 4.8, 0, 360}},
      {{true, 14, 10, 5, 5, 0, 360}, {false, 19, 10, 17, 23, 0, 0}},
  }};
  return templates;
}

Polyline trace(const StrokeSpec& s) {
  if (!s.arc) return {{s.a, s.b}, {s.c, s.d}};
  constexpr int kSegmentsPerTurn = 32;
  const int segments = std::max(2, static_cast<int>(std::ceil(std::abs(s.f - s.e) / 360.0 *
                                                              kSegmentsPerTurn)));
  Polyline line;
  for (int k = 0; k <= segments; ++k) {
    const double angle = (s.e + (s.f - s.e) * k / segments) * std::numbers::pi / 180.0;
    line.push_back({s.a + s.c * std::cos(angle), s.b + s.d * std::sin(angle)});
  }
  return line;
}

// The class's glyph for this seed: the template bent by a smooth seeded warp of up to about
// 1.5 px, which keeps connected strokes connected.
Glyph make_glyph(uint64_t seed, int label) {
  CounterStream stream(hash_combine(hash_combine(seed, kGlyphDomain), label));
  const double amp_x = stream.uniform(-1.5, 1.5);
  const double amp_y = stream.uniform(-1.5, 1.5);
  const double freq_x = stream.uniform(0.1, 0.3);
  const double freq_y = stream.uniform(0.1, 0.3);
  const double phase_x = stream.uniform(0, 2 * std::numbers::pi);
  const double phase_y = stream.uniform(0, 2 * std::numbers::pi);
  Glyph glyph;
  for (const StrokeSpec& spec : digit_templates()[static_cast<size_t>(label)]) {
    Polyline line = trace(spec);
    for (Point& p : line)
      p = {p.x + amp_x * std::sin(freq_x * p.y + phase_x),
           p.y + amp_y * std::sin(freq_y * p.x + phase_y)};
    glyph.push_back(std::move(line));
  }
  return glyph;
}

double distance_to_segment(Point p, Point a, Point b) {
  const double dx = b.x - a.x;
  const double dy = b.y - a.y;
  const double length2 = dx * dx + dy * dy;
  const double t =
      length2 > 0 ? std::clamp(((p.x - a.x) * dx + (p.y - a.y) * dy) / length2, 0.0, 1.0) : 0.0;
  return std::hypot(p.x - (a.x + t * dx), p.y - (a.y + t * dy));
}

// Draws a segment with half-width `radius` and an antialiased one-pixel edge, keeping the
// brightest value per pixel.
void draw_segment(Point a, Point b, double radius, double brightness, float* canvas) {
  const double reach = radius + 0.5;
  const int x0 = std::max(0, static_cast<int>(std::floor(std::min(a.x, b.x) - reach)));
  const int x1 = std::min(kSyntheticSide - 1, static_cast<int>(std::ceil(std::max(a.x, b.x) + reach)));
  const int y0 = std::max(0, static_cast<int>(std::floor(std::min(a.y, b.y) - reach)));
  const int y1 = std::min(kSyntheticSide - 1, static_cast<int>(std::ceil(std::max(a.y, b.y) + reach)));
  for (int y = y0; y <= y1; ++y) {
    for (int x = x0; x <= x1; ++x) {
      const double d = distance_to_segment({x + 0.5, y + 0.5}, a, b);
      const double ink = brightness * std::clamp(reach - d, 0.0, 1.0);
      float& pixel = canvas[y * kSyntheticSide + x];
      pixel = std::max(pixel, static_cast<float>(ink));
    }
  }
}

class SyntheticDataset : public Dataset {
 public:
  explicit SyntheticDataset(uint64_t seed) : seed_(seed) {
    for (int label = 0; label < kClasses; ++label) glyphs_[label] = make_glyph(seed, label);
  }

  int64_t size(Split split) const override {
    return split == Split::train ? kSyntheticTrainSize : kSyntheticTestSize;
  }

  int32_t load(Split split, int64_t index, int image_size, float* pixels) const override {
    if (index < 0 || index >= size(split))
      throw std::out_of_range("synthetic sample " + std::to_string(index) +
                              " is outside 0.." + std::to_string(size(split) - 1));
    if (image_size <= 0) throw std::invalid_argument("image size must be positive");
    const uint64_t key = hash_combine(hash_combine(seed_, static_cast<uint64_t>(split)),
                                      static_cast<uint64_t>(index));
    const auto label = static_cast<int32_t>(hash_combine(key, kLabelDomain) % kClasses);
    if (image_size == kSyntheticSide) {
      render(key, label, pixels);
    } else {
      std::array<float, kSyntheticSide * kSyntheticSide> canvas;
      render(key, label, canvas.data());
      resize_bilinear(canvas.data(), kSyntheticSide, kSyntheticSide, pixels, image_size,
                      image_size);
    }
    return label;
  }

  std::string describe() const override { return "synthetic"; }

 private:
  // One jittered copy of the class glyph, then noise, on a 28 x 28 canvas.
  void render(uint64_t key, int32_t label, float* canvas) const {
    CounterStream stream(hash_combine(key, kSampleDomain));
    const double shift_x = stream.uniform(-2, 2);
    const double shift_y = stream.uniform(-2, 2);
    const double angle = stream.uniform(-8, 8) * std::numbers::pi / 180.0;
    const double scale = stream.uniform(0.9, 1.1);
    const double radius = stream.uniform(0.8, 1.4);
    const double brightness = stream.uniform(0.75, 1.0);
    const double c = scale * std::cos(angle);
    const double s = scale * std::sin(angle);
    auto place = [&](Point p) {
      const double x = p.x - kCentre;
      const double y = p.y - kCentre;
      return Point{kCentre + c * x - s * y + shift_x, kCentre + s * x + c * y + shift_y};
    };
    std::fill(canvas, canvas + kSyntheticSide * kSyntheticSide, 0.0f);
    for (const Polyline& line : glyphs_[static_cast<size_t>(label)])
      for (size_t k = 0; k + 1 < line.size(); ++k)
        draw_segment(place(line[k]), place(line[k + 1]), radius, brightness, canvas);
    constexpr double kNoise = 0.1;
    for (int i = 0; i < kSyntheticSide * kSyntheticSide; ++i) {
      const double noisy = canvas[i] + stream.uniform(-kNoise, kNoise);
      canvas[i] = static_cast<float>(std::clamp(noisy, 0.0, 1.0));
    }
  }

  uint64_t seed_;
  std::array<Glyph, kClasses> glyphs_;
};

}  // namespace

std::unique_ptr<Dataset> make_synthetic_dataset(uint64_t seed) {
  return std::make_unique<SyntheticDataset>(seed);
}

}  // namespace mlps
