#pragma once
// Reader for MNIST-format IDX files (http://yann.lecun.com/exdb/mnist/), raw or gzip-compressed
// (zlib reads both transparently), and the Dataset over a directory of them. Every malformed file
// becomes one InputError line naming the file and what is wrong with it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/data/dataset.h"

namespace mlps {

struct IdxImages {
  int64_t count = 0;
  int rows = 0;
  int cols = 0;
  std::vector<uint8_t> pixels;  // count x rows x cols, row-major
};

// An idx3-ubyte image file: magic 0x00000803, then count, rows, cols (big-endian), then bytes.
IdxImages read_idx_images(const std::string& path);

// An idx1-ubyte label file: magic 0x00000801, then count, then one byte per label in 0..9.
std::vector<uint8_t> read_idx_labels(const std::string& path);

// The image and label files of one split in an MNIST-layout directory: train-* for train,
// t10k-* for test, each "...-ubyte" raw or "...-ubyte.gz" (the raw one if both exist).
struct IdxFiles {
  std::string images;
  std::string labels;
};
IdxFiles find_idx_files(const std::string& dir, Split split);

// Both files of one split, checked to hold the same number of samples.
struct IdxSplit {
  IdxImages images;
  std::vector<uint8_t> labels;
};
IdxSplit read_idx_split(const std::string& dir, Split split);

// A Dataset over an MNIST-layout IDX directory (such as /usr/share/datasets/fashion-mnist): reads
// both splits into memory as bytes once; load() scales to [0, 1] and resizes.
std::unique_ptr<Dataset> open_idx_dataset(const std::string& dir);

}  // namespace mlps
