#include "src/optim/offloaded_state.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <stdexcept>

#include "kernels/half_types.h"

namespace mlps {

template <typename A>
OffloadedState<A>::OffloadedState(const std::string& dir, int rank, int64_t chunk_elements,
                                  const std::string& kind)
    : chunk_(std::max<int64_t>(1, chunk_elements)),
      chunk_bytes_(scratch_aligned(static_cast<uint64_t>(chunk_) * sizeof(A))) {
  // Direct only when every chunk starts on the alignment.
  const bool aligned = static_cast<uint64_t>(chunk_) * sizeof(A) % kScratchAlignment == 0;
  if (!dir.empty()) file_ = std::make_unique<ScratchFile>(dir, rank, aligned, kind);
}

template <typename A>
void OffloadedState<A>::stage_for(int arrays) {
  for (auto& buffer : staging_)
    if (buffer.bytes() < static_cast<uint64_t>(arrays) * chunk_bytes_)
      buffer = ScratchBuffer(static_cast<uint64_t>(arrays) * chunk_bytes_);
}

template <typename A>
A* OffloadedState<A>::staged(int b, int a) {
  return reinterpret_cast<A*>(staging_[b].data() + static_cast<uint64_t>(a) * chunk_bytes_);
}

template <typename A>
int OffloadedState<A>::add(int64_t count, const std::vector<const A*>& initial) {
  const auto arrays = static_cast<int>(initial.size());
  if (arrays > kMaxArrays) throw std::logic_error("more state arrays than a tensor may have");
  if (!file_) {
    const Region r{host_.size(), count, arrays, static_cast<uint64_t>(count)};
    host_.resize(host_.size() + static_cast<size_t>(count) * static_cast<size_t>(arrays), A(0));
    for (int a = 0; a < arrays; ++a)
      if (initial[a])
        std::copy(initial[a], initial[a] + count,
                  host_.begin() + static_cast<std::ptrdiff_t>(r.offset) + a * count);
    regions_.push_back(r);
    return static_cast<int>(regions_.size()) - 1;
  }
  const uint64_t stride = scratch_aligned(static_cast<uint64_t>(count) * sizeof(A));
  const Region r{file_->grow(stride * static_cast<uint64_t>(arrays)), count, arrays, stride};
  regions_.push_back(r);
  // The reserved space reads as zeros: only the arrays with a start are written, a chunk at a
  // time through the staging (which a direct file needs).
  stage_for(arrays);
  for (int a = 0; a < arrays; ++a)
    if (initial[a])
      for (int64_t first = 0; first < count; first += chunk_) {
        const int64_t n = std::min(chunk_, count - first);
        std::copy(initial[a] + first, initial[a] + first + n, staged(0, 0));
        file_->write(staged(0, 0), transfer_bytes(n), location(r, a, first));
      }
  return static_cast<int>(regions_.size()) - 1;
}

template <typename A>
uint64_t OffloadedState<A>::location(const Region& r, int a, int64_t first) const {
  return r.offset + static_cast<uint64_t>(a) * r.stride + static_cast<uint64_t>(first) * sizeof(A);
}

template <typename A>
uint64_t OffloadedState<A>::transfer_bytes(int64_t n) const {
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(A);
  return file_->direct() ? scratch_aligned(bytes) : bytes;  // a direct file's last chunk: padded
}

template <typename A>
void OffloadedState<A>::move(bool write, const Region& r, int b, int64_t first, int64_t n) {
  for (int a = 0; a < r.arrays; ++a) {
    if (write) file_->write(staged(b, a), transfer_bytes(n), location(r, a, first));
    else file_->read(staged(b, a), transfer_bytes(n), location(r, a, first));
  }
}

template <typename A>
const A* OffloadedState<A>::read(int tensor) {
  const Region& r = regions_.at(static_cast<size_t>(tensor));
  if (!file_) return host_.data() + r.offset;
  if (whole_.bytes() < read_bytes(tensor)) whole_ = ScratchBuffer(read_bytes(tensor));
  read_into(tensor, reinterpret_cast<A*>(whole_.data()));
  traffic_.bytes_read += static_cast<double>(r.count) * sizeof(A);
  return reinterpret_cast<const A*>(whole_.data());
}

template <typename A>
uint64_t OffloadedState<A>::read_bytes(int tensor) const {
  const Region& r = regions_.at(static_cast<size_t>(tensor));
  return file_ ? transfer_bytes(r.count) : static_cast<uint64_t>(r.count) * sizeof(A);
}

template <typename A>
void OffloadedState<A>::read_into(int tensor, A* to) const {
  const Region& r = regions_.at(static_cast<size_t>(tensor));
  if (!file_) {
    std::copy(host_.begin() + static_cast<std::ptrdiff_t>(r.offset),
              host_.begin() + static_cast<std::ptrdiff_t>(r.offset + r.count), to);
    return;
  }
  file_->read(to, read_bytes(tensor), r.offset);
}

template <typename A>
void OffloadedState<A>::write(int tensor, int64_t first, int64_t n, const A* values) {
  const Region& r = regions_.at(static_cast<size_t>(tensor));
  if (first % chunk_ != 0 || n > chunk_ || first + n > r.count)
    throw std::logic_error("OffloadedState::write: not a chunk of the tensor");
  if (!file_) {
    std::copy(values, values + n, host_.begin() + static_cast<std::ptrdiff_t>(r.offset + first));
    return;
  }
  stage_for(1);
  std::copy(values, values + n, staged(0, 0));
  file_->write(staged(0, 0), transfer_bytes(n), location(r, 0, first));
  traffic_.bytes_written += static_cast<double>(n) * sizeof(A);
}

template <typename A>
void OffloadedState<A>::stream_host(const Region& r, const Update& update) {
  for (int64_t first = 0; first < r.count; first += chunk_) {
    A* arrays[kMaxArrays];
    for (int a = 0; a < r.arrays; ++a)
      arrays[a] = host_.data() + r.offset + static_cast<size_t>(a * r.count + first);
    update(first, std::min(chunk_, r.count - first), arrays);
  }
}

template <typename A>
void OffloadedState<A>::stream(int tensor, const Update& update) {
  const Region r = regions_.at(static_cast<size_t>(tensor));
  if (r.arrays == 0 || r.count == 0) return update(0, r.count, nullptr);
  if (!file_) return stream_host(r, update);
  stage_for(r.arrays);
  const int64_t chunks = (r.count + chunk_ - 1) / chunk_;
  auto first_of = [&](int64_t k) { return k * chunk_; };
  auto count_of = [&](int64_t k) { return std::min(chunk_, r.count - k * chunk_); };
  std::future<void> reading[2], writing[2];
  // Every transfer is waited for before this returns, also when one of them or the update
  // throws: the buffers they use belong to this object.
  struct Drain {
    std::future<void>* all[4];
    ~Drain() {
      for (auto* f : all)
        if (f->valid()) try { f->get(); } catch (...) {}
    }
  } drain{{&reading[0], &reading[1], &writing[0], &writing[1]}};
  auto waited = [&](std::future<void>& f) {
    const auto start = std::chrono::steady_clock::now();
    f.get();
    traffic_.wait_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  reading[0] = std::async(std::launch::async, [&] { move(false, r, 0, 0, count_of(0)); });
  for (int64_t k = 0; k < chunks; ++k) {
    const int b = static_cast<int>(k % 2), next = 1 - b;
    waited(reading[b]);
    if (k + 1 < chunks) {
      if (writing[next].valid()) waited(writing[next]);  // its buffer is the next chunk's
      reading[next] = std::async(std::launch::async, [&, k, next] {
        move(false, r, next, first_of(k + 1), count_of(k + 1));
      });
    }
    A* arrays[kMaxArrays];
    for (int a = 0; a < r.arrays; ++a) arrays[a] = staged(b, a);
    update(first_of(k), count_of(k), arrays);
    writing[b] = std::async(std::launch::async, [&, k, b] {
      move(true, r, b, first_of(k), count_of(k));
    });
  }
  for (auto& f : writing)
    if (f.valid()) waited(f);
  const double bytes = static_cast<double>(r.count) * r.arrays * sizeof(A);
  traffic_.bytes_read += bytes;
  traffic_.bytes_written += bytes;
}

template class OffloadedState<float>;
template class OffloadedState<double>;
template class OffloadedState<bf16>;
template class OffloadedState<fp16>;

}  // namespace mlps
