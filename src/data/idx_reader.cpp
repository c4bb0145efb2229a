#include "src/data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "src/data/image_resize.h"
#include "src/base/errors.h"

namespace mlps {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
constexpr int kNumClasses = 10;
// Larger sides than this are a corrupt header, not an image.
constexpr uint32_t kMaxSide = 1 << 14;

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

// A gzFile that closes itself; gzopen also reads uncompressed files as they are.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (file_ == nullptr) throw InputError("cannot open data file " + path);
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to `bytes` into dst and returns how many arrived (fewer only at end of file).
  size_t read(uint8_t* dst, size_t bytes) {
    size_t done = 0;
    while (done < bytes) {
      const auto chunk = static_cast<unsigned>(std::min<size_t>(bytes - done, 1u << 24));
      const int got = gzread(file_, dst + done, chunk);
      if (got < 0) {
        int code = 0;
        throw InputError("cannot read data file " + path_ + ": " + gzerror(file_, &code));
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

  // Reads `count` big-endian 32-bit header fields; a short read is a truncated header.
  std::vector<uint32_t> read_header(size_t count) {
    std::vector<uint8_t> bytes(4 * count);
    const size_t got = read(bytes.data(), bytes.size());
    if (got != bytes.size())
      throw InputError("truncated header in data file " + path_ + ": expected " +
                       std::to_string(bytes.size()) + " bytes, got " + std::to_string(got));
    std::vector<uint32_t> fields(count);
    for (size_t i = 0; i < count; ++i)
      fields[i] = (uint32_t{bytes[4 * i]} << 24) | (uint32_t{bytes[4 * i + 1]} << 16) |
                  (uint32_t{bytes[4 * i + 2]} << 8) | uint32_t{bytes[4 * i + 3]};
    return fields;
  }

  // Reads the payload in chunks, so a corrupt header claiming gigabytes fails on the file's
  // real length instead of on one huge allocation.
  std::vector<uint8_t> read_payload(uint64_t expected) {
    std::vector<uint8_t> data;
    constexpr uint64_t kChunk = 1 << 22;
    while (data.size() < expected) {
      const size_t old = data.size();
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, expected - old));
      data.resize(old + want);
      const size_t got = read(data.data() + old, want);
      if (got < want)
        throw InputError("truncated data file " + path_ + ": expected " +
                         std::to_string(expected) + " data bytes, got " +
                         std::to_string(old + got));
    }
    return data;
  }

  // After the payload the file must end: one more read reaches the end of a .gz stream, where
  // zlib checks its trailer (CRC-32 and length), so a cut or corrupt trailer is an error here;
  // bytes beyond what the header declares mean the header is wrong.
  void expect_end() {
    uint8_t extra = 0;
    if (read(&extra, 1) != 0)
      throw InputError("data file " + path_ + " holds more bytes than its header declares");
    // zlib reports a stream cut before its trailer as Z_BUF_ERROR, which gzread itself does not
    // treat as an error.
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code != Z_OK)
      throw InputError("cannot read data file " + path_ + ": " + message +
                       " (the gzip trailer is missing or damaged)");
  }

  void check_magic(uint32_t found, uint32_t expected, const char* what) {
    if (found != expected)
      throw InputError("wrong magic number in " + std::string(what) + " file " + path_ +
                       ": found " + hex32(found) + ", expected " + hex32(expected));
  }

 private:
  std::string path_;
  gzFile file_;
};

// "train-images-idx3-ubyte" or its .gz in dir; the raw one wins when both exist.
std::string find_file(const std::filesystem::path& dir, const std::string& base) {
  std::error_code error;
  for (const std::string& name : {base, base + ".gz"}) {
    const std::filesystem::path candidate = dir / name;
    if (std::filesystem::is_regular_file(candidate, error)) return candidate.string();
  }
  throw InputError("missing data file " + base + " (or " + base + ".gz) in " + dir.string());
}

class IdxDataset : public Dataset {
 public:
  explicit IdxDataset(const std::string& dir)
      : dir_(dir), train_(read_idx_split(dir, Split::train)),
        test_(read_idx_split(dir, Split::test)) {}

  int64_t size(Split split) const override { return data(split).images.count; }

  int32_t load(Split split, int64_t index, int image_size, float* pixels) const override {
    const IdxSplit& d = data(split);
    if (index < 0 || index >= d.images.count)
      throw std::out_of_range("IDX sample " + std::to_string(index) + " is outside 0.." +
                              std::to_string(d.images.count - 1));
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

IdxImages read_idx_images(const std::string& path) {
  GzReader file(path);
  file.check_magic(file.read_header(1)[0], kImagesMagic, "image");
  const std::vector<uint32_t> dims = file.read_header(3);
  if (dims[1] == 0 || dims[2] == 0 || dims[1] > kMaxSide || dims[2] > kMaxSide)
    throw InputError("bad image size " + std::to_string(dims[1]) + "x" +
                     std::to_string(dims[2]) + " in data file " + path);
  IdxImages images;
  images.count = dims[0];
  images.rows = static_cast<int>(dims[1]);
  images.cols = static_cast<int>(dims[2]);
  images.pixels = file.read_payload(uint64_t{dims[0]} * dims[1] * dims[2]);
  file.expect_end();
  return images;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  GzReader file(path);
  file.check_magic(file.read_header(1)[0], kLabelsMagic, "label");
  const uint32_t count = file.read_header(1)[0];
  std::vector<uint8_t> labels = file.read_payload(count);
  file.expect_end();
  const auto bad = std::find_if(labels.begin(), labels.end(),
                                [](uint8_t label) { return label >= kNumClasses; });
  if (bad != labels.end())
    throw InputError("label " + std::to_string(*bad) + " of sample " +
                     std::to_string(bad - labels.begin()) + " in data file " + path +
                     " is outside 0.." + std::to_string(kNumClasses - 1));
  return labels;
}

IdxFiles find_idx_files(const std::string& dir, Split split) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error))
    throw InputError("data directory " + dir + " does not exist or is not a directory");
  std::filesystem::directory_iterator probe(dir, error);
  if (error) throw InputError("cannot read data directory " + dir + ": " + error.message());
  const std::string prefix = split == Split::train ? "train" : "t10k";
  return {find_file(dir, prefix + "-images-idx3-ubyte"),
          find_file(dir, prefix + "-labels-idx1-ubyte")};
}

IdxSplit read_idx_split(const std::string& dir, Split split) {
  const IdxFiles files = find_idx_files(dir, split);
  IdxSplit data{read_idx_images(files.images), read_idx_labels(files.labels)};
  if (static_cast<int64_t>(data.labels.size()) != data.images.count)
    throw InputError("data files disagree on the sample count: " + files.images + " has " +
                     std::to_string(data.images.count) + " images, " + files.labels + " has " +
                     std::to_string(data.labels.size()) + " labels");
  // An empty split cannot be trained on or evaluated (an accuracy over 0 samples is no number).
  if (data.images.count == 0)
    throw InputError("data file " + files.images + " holds no images (its " +
                     (split == Split::train ? "training" : "test") + " split is empty)");
  return data;
}

std::unique_ptr<Dataset> open_idx_dataset(const std::string& dir) {
  return std::make_unique<IdxDataset>(dir);
}

}  // namespace mlps
