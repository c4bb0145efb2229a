#include "src/optim/offloaded_state.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <stdexcept>

namespace mlps {

template <typename A>
OffloadedState<A>::OffloadedState(const std::string& dir, int rank, int64_t chunk_elements)
    : file_(dir.empty() ? nullptr : std::make_unique<ScratchFile>(dir, rank)),
      chunk_(std::max<int64_t>(1, chunk_elements)) {}

template <typename A>
int OffloadedState<A>::add(int64_t count, const std::vector<const A*>& initial) {
  const auto arrays = static_cast<int>(initial.size());
  if (arrays > kMaxArrays) throw std::logic_error("more state arrays than a tensor may have");
  const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(A);
  if (!file_) {
    const Region r{host_.size(), count, arrays};
    host_.resize(host_.size() + static_cast<size_t>(count) * static_cast<size_t>(arrays), A(0));
    for (int a = 0; a < arrays; ++a)
      if (initial[a])
        std::copy(initial[a], initial[a] + count,
                  host_.begin() + static_cast<std::ptrdiff_t>(r.offset) + a * count);
    regions_.push_back(r);
    return static_cast<int>(regions_.size()) - 1;
  }
  const Region r{file_->grow(bytes * static_cast<uint64_t>(arrays)), count, arrays};
  // The reserved space reads as zeros: only the arrays with a start are written.
  for (int a = 0; a < arrays; ++a)
    if (initial[a]) file_->write(initial[a], bytes, r.offset + static_cast<uint64_t>(a) * bytes);
  regions_.push_back(r);
  return static_cast<int>(regions_.size()) - 1;
}

template <typename A>
void OffloadedState<A>::move(bool write, const Region& r, int b, int64_t first, int64_t n) {
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(A);
  for (int a = 0; a < r.arrays; ++a) {
    A* chunk = staging_[b].data() + static_cast<size_t>(a) * static_cast<size_t>(chunk_);
    const uint64_t at = r.offset + (static_cast<uint64_t>(a) * static_cast<uint64_t>(r.count) +
                                    static_cast<uint64_t>(first)) * sizeof(A);
    if (write) file_->write(chunk, bytes, at);
    else file_->read(chunk, bytes, at);
  }
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
  int most = 0;
  for (const Region& each : regions_) most = std::max(most, each.arrays);
  for (auto& buffer : staging_)
    if (buffer.size() < static_cast<size_t>(most * chunk_))
      buffer.assign(static_cast<size_t>(most * chunk_), A(0));
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
    for (int a = 0; a < r.arrays; ++a)
      arrays[a] = staging_[b].data() + static_cast<size_t>(a) * static_cast<size_t>(chunk_);
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

}  // namespace mlps
