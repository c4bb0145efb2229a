#pragma once
// Where training samples come from: the synthetic MNIST-like generator or MNIST-format IDX
// files. A dataset hands out one sample at a time by (split, index), already resized to the
// model's image size, so each rank loads only its own samples.
#include <cstdint>
#include <memory>
#include <string>

namespace mlps {

enum class Split { train, test };

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size(Split split) const = 0;
  virtual int num_classes() const { return 10; }
  // Writes sample `index` of `split` as image_size × image_size pixels in [0, 1] (row-major,
  // bilinear-resized from the native 28 × 28) and returns its label in [0, num_classes).
  virtual int32_t load(Split split, int64_t index, int image_size, float* pixels) const = 0;
  // "synthetic" or "idx:/path", for headers and result files.
  virtual std::string describe() const = 0;
};

// Opens "--data" specs: "synthetic" or "idx:DIR". Throws InputError with a clear message for
// a bad spec, a missing directory or a malformed file.
std::unique_ptr<Dataset> open_dataset(const std::string& spec, uint64_t seed);

}  // namespace mlps
