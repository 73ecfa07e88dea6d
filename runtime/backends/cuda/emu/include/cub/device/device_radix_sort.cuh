//===- device_radix_sort.cuh - The CUDA emulator's cub::DeviceRadixSort ---===//
//
// SortPairs as cub defines it: a stable sort of (key, value) pairs by the
// key bits [beginBit, endBit), in stream order. The first call (temp ==
// nullptr) asks for the temporary storage; a later call with less than
// that fails with cudaErrorInvalidValue, as a too-small buffer would
// corrupt memory on the GPU.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_CUDA_EMU_CUB_DEVICE_RADIX_SORT_CUH
#define REMAT_CUDA_EMU_CUB_DEVICE_RADIX_SORT_CUH

#include "../../cuda_runtime.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace cub {

struct DeviceRadixSort {
  /// The emulator's temporary storage: one 32-bit slot per item (what a
  /// GPU radix sort needs is of the same order), at least 256 bytes.
  static size_t tempBytesFor(long long items) {
    return size_t(items < 64 ? 64 : items) * 4;
  }

  template <typename Key, typename Value, typename NumItems>
  static cudaError_t SortPairs(void *temp, size_t &tempBytes,
                               const Key *keysIn, Key *keysOut,
                               const Value *valuesIn, Value *valuesOut,
                               NumItems numItems, int beginBit = 0,
                               int endBit = int(sizeof(Key) * 8),
                               cudaStream_t stream = nullptr) {
    size_t need = tempBytesFor((long long)numItems);
    if (!temp) {
      tempBytes = need;
      return cudaSuccess;
    }
    if (tempBytes < need || beginBit < 0 || endBit > int(sizeof(Key) * 8) ||
        beginBit > endBit || numItems < 0)
      return cudaErrorInvalidValue;
    // The sort's kernels load on the first sort.
    ::cudaemu::loadModule(reinterpret_cast<const void *>(&tempBytesFor));
    long long n = (long long)numItems;
    return ::cudaemu::enqueue(stream, [=]() {
      auto bitsOf = [&](Key key) {
        unsigned long long bits = (unsigned long long)key >> beginBit;
        int width = endBit - beginBit;
        if (width < 64)
          bits &= (1ull << width) - 1;
        return bits;
      };
      std::vector<long long> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0ll);
      std::stable_sort(order.begin(), order.end(), [&](long long x, long long y) {
        return bitsOf(keysIn[x]) < bitsOf(keysIn[y]);
      });
      std::vector<Key> keys(static_cast<size_t>(n));
      std::vector<Value> values(static_cast<size_t>(n));
      for (long long i = 0; i < n; ++i) {
        keys[size_t(i)] = keysIn[order[size_t(i)]];
        values[size_t(i)] = valuesIn[order[size_t(i)]];
      }
      std::copy(keys.begin(), keys.end(), keysOut);
      std::copy(values.begin(), values.end(), valuesOut);
    });
  }
};

} // namespace cub

#endif // REMAT_CUDA_EMU_CUB_DEVICE_RADIX_SORT_CUH
