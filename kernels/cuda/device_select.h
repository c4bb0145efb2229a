#pragma once
// Choosing this process's GPU (plain C++ declarations, for MPI code compiled without nvcc).
#include <cstddef>
#include <string>

namespace mlps::cuda {

// GPUs visible to this process (CUDA_VISIBLE_DEVICES applied); 0 without a usable driver.
int device_count();
// Makes GPU `device` current for this host thread; throws std::runtime_error if it cannot.
void set_current_device(int device);
// The UUID of GPU `device` as 32 hex digits: the same physical GPU gives the same text in
// every process, whatever CUDA_VISIBLE_DEVICES renumbered it to.
std::string device_uuid(int device);
// Free bytes of the current GPU, as the driver reports them now.
size_t free_device_memory();

}  // namespace mlps::cuda
