#include "sizes.h"

namespace weft_bench {

std::vector<std::size_t> size_list(std::size_t min_bytes, std::size_t max_bytes,
                                   std::size_t step_factor, std::size_t step_bytes) {
  std::vector<std::size_t> sizes;
  std::size_t size = min_bytes;
  while (size <= max_bytes) {
    sizes.push_back(size);
    const std::size_t next =
        step_factor > 1 ? (size == 0 ? 1 : size * step_factor) : size + step_bytes;
    if (next <= size) break;  // overflow or no progress
    size = next;
  }
  return sizes;
}

Shape shape_of(BenchOp op, std::size_t size_bytes, std::size_t element_bytes, int world_size) {
  Shape s;
  const std::size_t n = static_cast<std::size_t>(world_size);
  std::size_t elements = size_bytes / element_bytes;
  if (elements == 0) elements = 1;
  switch (traits_of(op).size_meaning) {
    case SizeMeaning::kNone:
      return s;
    case SizeMeaning::kPerRank:
      s.count = elements;
      s.block = elements;
      break;
    case SizeMeaning::kGathered:
    case SizeMeaning::kScattered:
      s.block = elements / n;
      if (s.block == 0) s.block = 1;
      s.count = s.block * n;
      break;
  }
  s.bytes = s.count * element_bytes;
  return s;
}

}  // namespace weft_bench
