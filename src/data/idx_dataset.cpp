#include "src/data/idx_dataset.h"

#include <stdexcept>
#include <vector>

#include "src/data/image_resize.h"
#include "src/data/idx_reader.h"

namespace mlps {
namespace {

class IdxDataset : public Dataset {
 public:
  explicit IdxDataset(const std::string& dir)
      : dir_(dir), train_(read_idx_split(dir, Split::train)),
        test_(read_idx_split(dir, Split::test)) {}

  int64_t size(Split split) const override { return data(split).images.count; }

  int32_t load(Split split, int64_t index, int image_size, float* pixels) const override {
    const IdxSplit& d = data(split);
    if (index < 0 || index >= d.images.count) {
      throw std::out_of_range("IDX sample " + std::to_string(index) + " is outside 0.." +
                              std::to_string(d.images.count - 1));
    }
    if (image_size <= 0) throw std::invalid_argument("image size must be positive");
    const int rows = d.images.rows;
    const int cols = d.images.cols;
    const size_t area = static_cast<size_t>(rows) * static_cast<size_t>(cols);
    const uint8_t* bytes = d.images.pixels.data() + static_cast<size_t>(index) * area;
    const bool native = rows == image_size && cols == image_size;
    // Scale straight into the output when no resize is needed.
    std::vector<float> scaled(native ? 0 : area);
    float* target = native ? pixels : scaled.data();
    for (size_t i = 0; i < area; ++i) target[i] = static_cast<float>(bytes[i]) / 255.0f;
    if (!native) resize_bilinear(scaled.data(), rows, cols, pixels, image_size, image_size);
    return d.labels[static_cast<size_t>(index)];
  }

  std::string describe() const override { return "idx:" + dir_; }

 private:
  const IdxSplit& data(Split split) const { return split == Split::train ? train_ : test_; }

  std::string dir_;
  IdxSplit train_;
  IdxSplit test_;
};

}  // namespace

std::unique_ptr<Dataset> open_idx_dataset(const std::string& dir) {
  return std::make_unique<IdxDataset>(dir);
}

}  // namespace mlps
