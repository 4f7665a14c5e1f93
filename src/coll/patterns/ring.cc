#include "coll/patterns/ring.h"

#include <algorithm>

namespace weft::coll::patterns {

ElementRange block_range(std::size_t count, int blocks, int block) {
  const auto n = static_cast<std::size_t>(blocks);
  const auto b = static_cast<std::size_t>(block);
  const std::size_t base = count / n;
  const std::size_t extra = count % n;  // the first `extra` blocks hold base + 1
  return {b * base + std::min(b, extra), base + (b < extra ? 1 : 0)};
}

ElementRange blocks_range(std::size_t count, int blocks, int first, int last) {
  if (first >= last) return {block_range(count, blocks, first < blocks ? first : 0).offset, 0};
  const ElementRange begin = block_range(count, blocks, first);
  const ElementRange end = block_range(count, blocks, last - 1);
  return {begin.offset, end.offset + end.count - begin.offset};
}

ElementRange Segmentation::segment(std::size_t count, std::size_t j) const {
  const std::size_t offset = j * segment_elements;
  return {offset, std::min(segment_elements, count - offset)};
}

Segmentation make_segmentation(std::size_t segment_bytes, std::size_t element_bytes,
                               std::size_t longest_run, std::size_t max_segments) {
  // Never longer than the longest run: algorithms size their receive slots by the segment.
  std::size_t elements = std::clamp<std::size_t>(segment_bytes / element_bytes, 1,
                                                 std::max<std::size_t>(1, longest_run));
  const std::size_t needed = (longest_run + max_segments - 1) / max_segments;
  return {std::max(elements, needed)};
}

}  // namespace weft::coll::patterns
