// Ring schedules: pure arithmetic on (rank, size, count), no communication, no state. Safe to
// use from any thread.
//
// Conventions every ring algorithm of weft shares:
// - Messages flow one way: rank r sends to right() = r+1 and receives from left() = r-1
//   (mod size).
// - `count` elements split into `size` near-equal blocks; the first count % size blocks are one
//   element bigger, so blocks differ by at most one element and some are empty when
//   count < size.
// - Reduce-scatter has size-1 steps and ends with rank r owning the fully reduced block r
//   (not r+1 as in the textbook): step s sends block r-s-1 and receives block r-s-2. The block
//   received at step s is the one sent at step s+1, so a segment can be forwarded as soon as it
//   is reduced.
// - All-gather has size-1 steps and starts from rank r owning block r: step s sends block r-s
//   and receives block r-s-1. The block received at step s is the one sent at step s+1.
// - Segments: a block moves in segments of segment_elements (see Segmentation below).
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::coll::patterns {

// Elements [offset, offset + count).
struct ElementRange {
  std::size_t offset = 0;
  std::size_t count = 0;
  bool operator==(const ElementRange&) const = default;
};

// Block `block` (0 <= block < blocks) of `count` elements split into `blocks` near-equal blocks.
ElementRange block_range(std::size_t count, int blocks, int block);

// Elements [block_range(first).offset, block_range(last - 1).end): blocks [first, last).
ElementRange blocks_range(std::size_t count, int blocks, int first, int last);

class Ring {
 public:
  Ring(int rank, int size) : rank_(rank), size_(size) {}

  int rank() const { return rank_; }
  int size() const { return size_; }
  int left() const { return wrap(rank_ - 1); }
  int right() const { return wrap(rank_ + 1); }
  // Number of steps in each phase.
  int steps() const { return size_ - 1; }

  int reduce_scatter_send_block(int step) const { return wrap(rank_ - step - 1); }
  int reduce_scatter_recv_block(int step) const { return wrap(rank_ - step - 2); }
  int all_gather_send_block(int step) const { return wrap(rank_ - step); }
  int all_gather_recv_block(int step) const { return wrap(rank_ - step - 1); }

 private:
  int wrap(int value) const { return ((value % size_) + size_) % size_; }

  int rank_;
  int size_;
};

// How a run of elements is cut into segments for pipelining.
struct Segmentation {
  std::size_t segment_elements = 1;  // >= 1

  std::size_t segments(std::size_t count) const {
    return (count + segment_elements - 1) / segment_elements;
  }
  // Segment j of a run of `count` elements, relative to the run's start.
  ElementRange segment(std::size_t count, std::size_t j) const;
};

// Segments of segment_bytes rounded down to whole elements (at least one element, at most
// longest_run), made larger if needed so that a run of `longest_run` elements needs at most
// `max_segments` segments: the step numbers of one call are finite (kMaxSteps), and every rank
// derives the same answer from the same arguments. max_segments must be >= 1.
Segmentation make_segmentation(std::size_t segment_bytes, std::size_t element_bytes,
                               std::size_t longest_run, std::size_t max_segments);

}  // namespace weft::coll::patterns
