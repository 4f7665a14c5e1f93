#include "core/op_timeline.h"

#include <algorithm>

namespace weft::core {

OpTimeline::OpTimeline() : chunks_(new std::atomic<Chunk*>[kMaxChunks]) {
  for (std::size_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr);
}

OpTimeline::~OpTimeline() {
  for (std::size_t i = 0; i < kMaxChunks; ++i) delete chunks_[i].load();
}

OpTimeline::Chunk* OpTimeline::chunk(std::size_t number) {
  Chunk* existing = chunks_[number].load(std::memory_order_acquire);
  if (existing != nullptr) return existing;
  // The first writer to need it makes it; a writer that loses the race frees its own.
  auto made = std::make_unique<Chunk>();
  if (chunks_[number].compare_exchange_strong(existing, made.get(), std::memory_order_acq_rel)) {
    return made.release();
  }
  return existing;
}

void OpTimeline::append(const OpRecord& record) {
  uint64_t index = next_.fetch_add(1, std::memory_order_relaxed);
  std::size_t number = index / kChunkRecords;
  if (number >= kMaxChunks) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Slot& slot = chunk(number)->slots[index % kChunkRecords];
  slot.record = record;
  slot.ready.store(true, std::memory_order_release);
}

void OpTimeline::for_each(const std::function<void(const OpRecord&)>& visit) const {
  uint64_t end =
      std::min<uint64_t>(next_.load(std::memory_order_acquire), kMaxChunks * kChunkRecords);
  for (uint64_t index = 0; index < end; ++index) {
    Chunk* chunk = chunks_[index / kChunkRecords].load(std::memory_order_acquire);
    if (chunk == nullptr) continue;
    const Slot& slot = chunk->slots[index % kChunkRecords];
    if (slot.ready.load(std::memory_order_acquire)) visit(slot.record);
  }
}

}  // namespace weft::core
