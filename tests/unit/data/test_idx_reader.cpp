// IDX (MNIST format) reading: round trips through raw and gzip files, every malformed-file
// error, the --data spec, and the installed Fashion-MNIST package when present.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/data/dataset.h"
#include "src/data/image_resize.h"
#include "src/data/idx_reader.h"
#include "src/base/errors.h"

namespace mlps {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

void put_be32(Bytes& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

Bytes image_file(uint32_t count, uint32_t rows, uint32_t cols, const Bytes& pixels,
                 uint32_t magic = 0x00000803) {
  Bytes out;
  put_be32(out, magic);
  put_be32(out, count);
  put_be32(out, rows);
  put_be32(out, cols);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

Bytes label_file(const Bytes& labels, uint32_t magic = 0x00000801) {
  Bytes out;
  put_be32(out, magic);
  put_be32(out, static_cast<uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

// A scratch directory under /tmp, removed afterwards.
class IdxFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mlps_idx_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const Bytes& bytes, bool gzip) {
    const std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile file = gzopen(path.c_str(), "wb");
      EXPECT_NE(file, nullptr);
      EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
                static_cast<int>(bytes.size()));
      gzclose(file);
    } else {
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    return path;
  }

  // Five 3 x 4 images with distinct bytes and their labels.
  static Bytes pixels() {
    Bytes p(5 * 3 * 4);
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 4 + 7);
    return p;
  }
  static Bytes labels() { return {3, 0, 9, 1, 3}; }

  // Expects an InputError whose message contains every one of `parts`.
  template <typename F>
  static void expect_input_error(F&& f, const std::vector<std::string>& parts) {
    try {
      f();
      ADD_FAILURE() << "no InputError thrown";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      for (const std::string& part : parts) {
        EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
      }
    }
  }

  fs::path dir_;
};

TEST_F(IdxFilesTest, RawAndGzipRoundTrip) {
  for (bool gzip : {false, true}) {
    const std::string images = write("images", image_file(5, 3, 4, pixels()), gzip);
    const std::string labels_path = write("labels", label_file(labels()), gzip);
    const IdxImages read = read_idx_images(images);
    EXPECT_EQ(read.count, 5);
    EXPECT_EQ(read.rows, 3);
    EXPECT_EQ(read.cols, 4);
    EXPECT_EQ(read.pixels, pixels()) << "gzip " << gzip;
    EXPECT_EQ(read_idx_labels(labels_path), labels()) << "gzip " << gzip;
  }
}

TEST_F(IdxFilesTest, DatasetOverDirectory) {
  // Train as .gz and test raw: both spellings are found.
  write("train-images-idx3-ubyte.gz", image_file(5, 3, 4, pixels()), true);
  write("train-labels-idx1-ubyte.gz", label_file(labels()), true);
  const Bytes all = pixels();
  write("t10k-images-idx3-ubyte", image_file(2, 3, 4, Bytes(all.begin(), all.begin() + 24)), false);
  write("t10k-labels-idx1-ubyte", label_file({7, 8}), false);
  const auto data = open_dataset("idx:" + dir_.string(), 1);
  EXPECT_EQ(data->size(Split::train), 5);
  EXPECT_EQ(data->size(Split::test), 2);
  EXPECT_EQ(data->describe(), "idx:" + dir_.string());

  // Sample 2 of train: bytes scaled by 1/255, then resized like any image.
  std::vector<float> native(12);
  for (size_t i = 0; i < 12; ++i) native[i] = pixels()[24 + i] / 255.0f;
  std::vector<float> expected(8 * 8), got(8 * 8);
  resize_bilinear(native.data(), 3, 4, expected.data(), 8, 8);
  EXPECT_EQ(data->load(Split::train, 2, 8, got.data()), 9);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(data->load(Split::test, 1, 8, got.data()), 8);
  std::vector<float> out_of_range(64);
  EXPECT_THROW(data->load(Split::test, 2, 8, out_of_range.data()), std::out_of_range);
}

TEST_F(IdxFilesTest, NativeSizeIsOnlyScaled) {
  Bytes square(2 * 28 * 28);
  for (size_t i = 0; i < square.size(); ++i) square[i] = static_cast<uint8_t>(i % 256);
  for (const char* split : {"train", "t10k"}) {
    write(std::string(split) + "-images-idx3-ubyte", image_file(2, 28, 28, square), false);
    write(std::string(split) + "-labels-idx1-ubyte", label_file({4, 5}), false);
  }
  const auto data = open_dataset("idx:" + dir_.string(), 1);
  std::vector<float> got(28 * 28);
  EXPECT_EQ(data->load(Split::train, 1, 28, got.data()), 5);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], square[784 + i] / 255.0f);
}

TEST_F(IdxFilesTest, RawPreferredWhenBothExist) {
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}) {
    write(name, {}, false);
    write(std::string(name) + ".gz", {}, true);
  }
  write("t10k-images-idx3-ubyte.gz", {}, true);
  write("t10k-labels-idx1-ubyte.gz", {}, true);
  const IdxFiles train = find_idx_files(dir_.string(), Split::train);
  EXPECT_EQ(train.images, (dir_ / "train-images-idx3-ubyte").string());
  EXPECT_EQ(train.labels, (dir_ / "train-labels-idx1-ubyte").string());
  const IdxFiles test = find_idx_files(dir_.string(), Split::test);
  EXPECT_EQ(test.images, (dir_ / "t10k-images-idx3-ubyte.gz").string());
}

TEST_F(IdxFilesTest, WrongMagic) {
  const std::string images = write("images", image_file(5, 3, 4, pixels(), 0x00000801), false);
  expect_input_error([&] { read_idx_images(images); },
                     {"wrong magic", images, "found 0x00000801", "expected 0x00000803"});
  const std::string labels_path = write("labels.gz", label_file(labels(), 0x00000803), true);
  expect_input_error([&] { read_idx_labels(labels_path); },
                     {"wrong magic", labels_path, "found 0x00000803", "expected 0x00000801"});
}

TEST_F(IdxFilesTest, TruncatedData) {
  const Bytes all = pixels();
  const Bytes short_pixels(all.begin(), all.begin() + 36);
  for (bool gzip : {false, true}) {
    const std::string images = write(gzip ? "images.gz" : "images", image_file(5, 3, 4, short_pixels), gzip);
    expect_input_error([&] { read_idx_images(images); },
                       {"truncated", images, "expected 60", "got 36"});
  }
  Bytes labels_bytes = label_file(labels());
  labels_bytes.resize(labels_bytes.size() - 2);
  const std::string labels_path = write("labels", labels_bytes, false);
  expect_input_error([&] { read_idx_labels(labels_path); },
                     {"truncated", labels_path, "expected 5", "got 3"});
}

TEST_F(IdxFilesTest, TruncatedHeader) {
  Bytes header = image_file(5, 3, 4, {});
  header.resize(10);
  const std::string images = write("images", header, false);
  expect_input_error([&] { read_idx_images(images); }, {"truncated header", images});
  const std::string empty = write("labels.gz", {}, true);
  expect_input_error([&] { read_idx_labels(empty); }, {"truncated header", empty});
}

TEST_F(IdxFilesTest, LabelOutOfRange) {
  const std::string labels_path = write("labels", label_file({1, 2, 10}), false);
  expect_input_error([&] { read_idx_labels(labels_path); },
                     {"label 10", "sample 2", labels_path, "0..9"});
}

TEST_F(IdxFilesTest, ImageLabelCountMismatch) {
  write("train-images-idx3-ubyte", image_file(5, 3, 4, pixels()), false);
  write("train-labels-idx1-ubyte.gz", label_file({1, 2, 3, 4}), true);
  expect_input_error([&] { read_idx_split(dir_.string(), Split::train); },
                     {"train-images-idx3-ubyte", "5 images", "train-labels-idx1-ubyte.gz", "4 labels"});
}

TEST_F(IdxFilesTest, MissingDirectoryAndFiles) {
  const std::string missing = (dir_ / "nope").string();
  expect_input_error([&] { find_idx_files(missing, Split::train); }, {missing, "does not exist"});
  expect_input_error([&] { open_dataset("idx:" + missing, 1); }, {missing, "does not exist"});
  write("train-images-idx3-ubyte", image_file(5, 3, 4, pixels()), false);
  expect_input_error([&] { find_idx_files(dir_.string(), Split::train); },
                     {"missing data file", "train-labels-idx1-ubyte", dir_.string()});
  expect_input_error([&] { find_idx_files(dir_.string(), Split::test); },
                     {"t10k-images-idx3-ubyte"});
  const std::string absent = (dir_ / "absent.gz").string();
  expect_input_error([&] { read_idx_images(absent); }, {"cannot open", absent});
}

TEST_F(IdxFilesTest, DatasetSpecErrors) {
  expect_input_error([] { open_dataset("mnist", 1); },
                     {"--data must be 'synthetic' or 'idx:DIR', not 'mnist'"});
  expect_input_error([] { open_dataset("", 1); }, {"not ''"});
  expect_input_error([] { open_dataset("idx:", 1); }, {"--data idx: needs a directory"});
  const auto synthetic = open_dataset("synthetic", 1);
  EXPECT_EQ(synthetic->describe(), "synthetic");
}

TEST(FashionMnist, InstalledPackageLoads) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::is_directory(dir)) {
    GTEST_SKIP() << dir << " is missing: install the dataset-fashion-mnist package to run this test";
  }
  const auto data = open_dataset("idx:" + dir, 1);
  ASSERT_EQ(data->size(Split::train), 60000);
  ASSERT_EQ(data->size(Split::test), 10000);
  std::vector<float> pixels(28 * 28);
  for (Split split : {Split::train, Split::test}) {
    std::vector<int> counts(10, 0);
    double ink = 0;
    for (int64_t i = 0; i < data->size(split); ++i) {
      const int32_t label = data->load(split, i, 28, pixels.data());
      ASSERT_GE(label, 0);
      ASSERT_LT(label, 10);
      ++counts[static_cast<size_t>(label)];
      if (i % 100 == 0) for (float v : pixels) ink += v;
    }
    for (int count : counts) EXPECT_GT(count, 0);  // every class occurs
    EXPECT_GT(ink, 0.0);
  }
  std::vector<float> big(64 * 64);
  data->load(Split::test, 0, 64, big.data());
  for (float v : big) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LE(v, 1.0f);
  }
}

}  // namespace
}  // namespace mlps
