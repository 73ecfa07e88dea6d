//===- Shards.h - The parts of sharded optimizer state ----------*- C++ -*-===//
//
// --shard-optimizer (ZeRO-1, docs/distributed.md): each optimizer state
// tensor of a param with `numel` elements is split over `shards` ranks in
// parts of p = ceil(numel / shards); rank r holds [r·p, min((r+1)·p,
// numel)), which may be short or empty for the last ranks. The optimizer
// pass, the shape rule, the executor and the MPI collectives all split
// this way.
//
//===----------------------------------------------------------------------===//
#ifndef REMAT_OPS_SHARDS_H
#define REMAT_OPS_SHARDS_H

#include <algorithm>
#include <cstdint>

namespace remat::ops {

/// The length of each rank's part: ceil(numel / shards).
inline uint64_t shardElements(uint64_t numel, uint64_t shards) {
  return (numel + shards - 1) / shards;
}

/// Rank `rank`'s elements [begin, begin + count) of `numel` in parts of
/// `part` elements.
struct ShardRange {
  uint64_t begin = 0;
  uint64_t count = 0;
};
inline ShardRange shardRange(uint64_t numel, uint64_t part, uint64_t rank) {
  uint64_t begin = std::min(numel, rank * part);
  return {begin, std::min(part, numel - begin)};
}

} // namespace remat::ops

#endif // REMAT_OPS_SHARDS_H
