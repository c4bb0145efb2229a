// The step counts behind /counters: PhaseTimer counts the Device's allocations and frees inside
// each step (a Buffer made inside a step is one), and a BufferPool's second step of the same
// requests takes only kept buffers.
#include <gtest/gtest.h>

#include "src/device/buffer_pool.h"
#include "src/timing/phase_timer.h"

namespace mlps {
namespace {

TEST(StepCounts, ABufferMadeInsideAStepIsCounted) {
  Device device(DeviceKind::cpu);
  PhaseTimer timer(device);
  Buffer<float> outside(device, 8);  // before the step: not its allocation
  timer.begin_iteration();
  { Buffer<float> planted(device, 16); }
  timer.end_iteration();
  EXPECT_EQ(timer.step_counts().allocations, 1);
  EXPECT_EQ(timer.step_counts().frees, 1);
  EXPECT_FALSE(timer.step_counts().runtime.counted);  // a CPU device has no runtime to count

  timer.begin_iteration();
  timer.end_iteration();
  EXPECT_EQ(timer.step_counts().allocations, 0);
  EXPECT_EQ(timer.step_counts().frees, 0);
}

TEST(StepCounts, APoolServesARepeatedStepFromWhatItKept) {
  Device device(DeviceKind::cpu);
  PhaseTimer timer(device);
  BufferPool<float> pool(device);
  pool.reserve(32, 1);
  const auto step = [&] {
    timer.begin_iteration();
    Buffer<float> a = pool.take(32), b = pool.take(32), c = pool.take(7);
    pool.give(std::move(b));
    Buffer<float> d = pool.take(32);  // b's, given back
    pool.give(std::move(a));
    pool.give(std::move(c));
    pool.give(std::move(d));
    timer.end_iteration();
    return timer.step_counts();
  };
  const StepCounts first = step();
  EXPECT_EQ(first.allocations, 2);  // the second 32 and the 7: one was reserved
  EXPECT_EQ(first.frees, 0);
  const StepCounts second = step();
  EXPECT_EQ(second.allocations, 0);
  EXPECT_EQ(second.frees, 0);
}

TEST(StepCounts, APoolRefusesAView) {
  Device device(DeviceKind::cpu);
  BufferPool<float> pool(device);
  Buffer<float> owner(device, 4);
  EXPECT_THROW(pool.give(Buffer<float>::view(device, owner.data(), 4)), std::logic_error);
}

}  // namespace
}  // namespace mlps
