// Softmax of a vector that no rank holds whole (the "Softmax" cell of a torch.distributed
// practice notebook, with a slice per rank instead of one logit per rank).
//
// The vector of kLength logits is cut into contiguous slices, one per rank (sizes differ by at
// most one). softmax(x)_i = exp(x_i - max) / sum_j exp(x_j - max), so two all_reduces suffice:
//   1. all_reduce(MAX) of the local maxima gives the global max (subtracting it keeps exp()
//      from overflowing);
//   2. all_reduce(SUM) of the local sums of exp(x - max) gives the denominator.
// Every rank then checks its slice against a single-process softmax of the whole vector, which
// it computes itself, and a third all_reduce checks that the probabilities sum to 1.
//
//   weftrun -n 3 ./distributed_softmax
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kLength = 23;  // not a multiple of most world sizes: slices differ in size

[[gnu::format(printf, 1, 2)]] void say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
  std::fflush(stdout);
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

// The whole vector of logits, in [-10, 10]; every rank can compute it.
float logit(int i) { return static_cast<float>((i * 37) % 41 - 20) / 2; }

// Rank r holds elements [slice_begin(r), slice_begin(r + 1)).
int slice_begin(int rank, int size) { return rank * kLength / size; }

// The reference: softmax of the whole vector in one process.
std::vector<float> softmax_of_whole_vector() {
  std::vector<float> x(kLength), p(kLength);
  for (int i = 0; i < kLength; ++i) x[i] = logit(i);
  const float max = *std::max_element(x.begin(), x.end());
  float sum = 0;
  for (int i = 0; i < kLength; ++i) sum += p[i] = std::exp(x[i] - max);
  for (float& v : p) v /= sum;
  return p;
}

bool close(float a, float b) { return std::fabs(a - b) <= 1e-7f + 1e-5f * std::fabs(b); }

}  // namespace

int main() {
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    const int size = group->size();
    if (size > kLength) {
      std::fprintf(stderr, "distributed_softmax runs on at most %d ranks, got %d\n", kLength, size);
      return 2;
    }
    const int begin = slice_begin(rank, size), end = slice_begin(rank + 1, size);
    std::vector<float> slice;
    for (int i = begin; i < end; ++i) slice.push_back(logit(i));

    // 1. The global max.
    std::vector<float> max = {*std::max_element(slice.begin(), slice.end())};
    group->all_reduce(max, weft::ReduceOp::kMax);

    // 2. The global sum of exp(x - max).
    std::vector<float> prob(slice.size());
    std::vector<float> sum = {0.0f};
    for (std::size_t i = 0; i < slice.size(); ++i) sum[0] += prob[i] = std::exp(slice[i] - max[0]);
    group->all_reduce(sum, weft::ReduceOp::kSum);
    for (float& p : prob) p /= sum[0];

    std::string text;
    for (std::size_t i = 0; i < slice.size(); ++i) {
      char item[48];
      std::snprintf(item, sizeof item, "%s%.1f->%.4f", i ? ", " : "", slice[i], prob[i]);
      text += item;
    }
    say("In rank=%d, elements [%d, %d): logit->prob %s", rank, begin, end, text.c_str());

    // Check against one process computing the softmax of the whole vector.
    const std::vector<float> expected = softmax_of_whole_vector();
    for (int i = begin; i < end; ++i) {
      if (!close(prob[i - begin], expected[i])) {
        fail("prob[" + std::to_string(i) + "] is " + std::to_string(prob[i - begin]) +
             ", a single-process softmax gives " + std::to_string(expected[i]));
      }
    }
    // The probabilities of all ranks sum to 1.
    std::vector<float> total = {0.0f};
    for (float p : prob) total[0] += p;
    group->all_reduce(total, weft::ReduceOp::kSum);
    if (!close(total[0], 1.0f)) fail("the probabilities sum to " + std::to_string(total[0]));
    if (rank == 0)
      say("distributed_softmax: OK, global max %.1f, probabilities sum to %.6f", max[0], total[0]);
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "distributed_softmax: FAILED to join the job: %s\n", e.what());
    }
    return 1;
  }
}
