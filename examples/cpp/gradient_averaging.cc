// Data-parallel training by hand, what DDP does under the hood (gradient_sync_visualizer.py of
// a torch.distributed tutorial, with a tiny model in plain C++ arrays).
//
// The model is a 4-8-1 MLP, y = w2 . tanh(W1 x + b1) + b2, trained on mean squared error.
//  1. Every rank initializes its model from its own seed, so the replicas differ; broadcasting
//     each tensor from rank 0 gives every rank rank 0's weights.
//  2. Each step, every rank runs forward and backward on its own batch (different data per
//     rank), so the local gradients differ.
//  3. all_reduce(SUM) of every gradient, divided by the world size, gives every rank the
//     average gradient (ReduceOp::kAvg does both in one call).
//  4. all_gather of each averaged gradient lets every rank verify that all ranks hold the same
//     one, and each rank also checks it against the gradient of the whole batch (all ranks'
//     data together), which it computes itself: averaging the gradients of equal-sized local
//     batches is the gradient of their union.
//  5. Every rank takes the same SGD step; rank 0 prints the loss over all data, which must
//     fall at every step.
//
//   weftrun -n 4 ./gradient_averaging
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kIn = 4, kHidden = 8;
constexpr int kBatch = 16;  // samples per rank
constexpr int kSteps = 20;
constexpr float kLearningRate = 0.2f;

// The model's tensors; the gradients have the same shapes.
struct Tensors {
  std::vector<float> w1 = std::vector<float>(kHidden * kIn);  // layer1.weight, row-major
  std::vector<float> b1 = std::vector<float>(kHidden);        // layer1.bias
  std::vector<float> w2 = std::vector<float>(kHidden);        // layer2.weight
  std::vector<float> b2 = std::vector<float>(1);              // layer2.bias
  std::vector<std::vector<float>*> all() { return {&w1, &b1, &w2, &b2}; }
};
const char* const kNames[] = {"layer1.weight", "layer1.bias", "layer2.weight", "layer2.bias"};

struct Batch {
  std::vector<float> x;  // samples x kIn
  std::vector<float> y;  // samples
};

[[gnu::format(printf, 1, 2)]] void say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
  std::fflush(stdout);
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

// A reproducible number in [-1, 1) from (seed, index): any rank can make any rank's data.
float uniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / static_cast<float>(1 << 23) - 1.0f;
}

Tensors init_model(uint64_t seed) {
  Tensors model;
  uint64_t index = 0;
  for (std::vector<float>* tensor : model.all()) {
    for (float& v : *tensor) v = 0.5f * uniform(seed, index++);
  }
  return model;
}

// Rank r's batch: inputs in [-1, 1), and the function the model has to learn.
Batch make_batch(int rank) {
  Batch batch{std::vector<float>(kBatch * kIn), std::vector<float>(kBatch)};
  const uint64_t seed = 1000 + rank;
  for (int s = 0; s < kBatch; ++s) {
    float* x = &batch.x[s * kIn];
    for (int k = 0; k < kIn; ++k) x[k] = uniform(seed, s * kIn + k);
    batch.y[s] = 0.8f * x[0] - 0.5f * x[1] + 0.6f * x[2] * x[3];
  }
  return batch;
}

// Forward and backward of the mean squared error over the batch: returns the loss and
// overwrites grad.
float forward_backward(Tensors& model, const Batch& batch, Tensors& grad) {
  for (std::vector<float>* g : grad.all()) std::fill(g->begin(), g->end(), 0.0f);
  const int samples = static_cast<int>(batch.y.size());
  float loss = 0;
  for (int s = 0; s < samples; ++s) {
    const float* x = &batch.x[s * kIn];
    float h[kHidden], y = model.b2[0];
    for (int j = 0; j < kHidden; ++j) {
      float z = model.b1[j];
      for (int k = 0; k < kIn; ++k) z += model.w1[j * kIn + k] * x[k];
      h[j] = std::tanh(z);
      y += model.w2[j] * h[j];
    }
    const float error = y - batch.y[s];
    loss += error * error / samples;
    const float dy = 2 * error / samples;  // d loss / d y
    grad.b2[0] += dy;
    for (int j = 0; j < kHidden; ++j) {
      grad.w2[j] += dy * h[j];
      const float dz = dy * model.w2[j] * (1 - h[j] * h[j]);  // tanh' = 1 - tanh^2
      grad.b1[j] += dz;
      for (int k = 0; k < kIn; ++k) grad.w1[j * kIn + k] += dz * x[k];
    }
  }
  return loss;
}

bool close(float a, float b) { return std::fabs(a - b) <= 1e-6f + 1e-4f * std::fabs(b); }

// Every rank's batch together: what one process would train on.
Batch whole_batch(int size) {
  Batch whole;
  for (int r = 0; r < size; ++r) {
    Batch part = make_batch(r);
    whole.x.insert(whole.x.end(), part.x.begin(), part.x.end());
    whole.y.insert(whole.y.end(), part.y.begin(), part.y.end());
  }
  return whole;
}

// Step 4: every rank holds the same averaged gradient, and it is the whole batch's gradient.
void verify(weft::ProcessGroup& group, Tensors& grad, Tensors& model, const Batch& whole,
            int step) {
  const int size = group.size();
  Tensors whole_grad;
  forward_backward(model, whole, whole_grad);

  std::vector<std::vector<float>*> mine = grad.all(), expected = whole_grad.all();
  for (std::size_t t = 0; t < mine.size(); ++t) {
    const std::vector<float>& g = *mine[t];
    std::vector<float> gathered(g.size() * size);
    group.all_gather(g, gathered);
    for (std::size_t i = 0; i < gathered.size(); ++i) {
      if (!close(gathered[i], g[i % g.size()])) {
        fail(std::string(kNames[t]) + ": rank " + std::to_string(i / g.size()) +
             " holds a different averaged gradient at step " + std::to_string(step));
      }
    }
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (!close(g[i], (*expected[t])[i])) {
        fail(std::string(kNames[t]) + " grad[" + std::to_string(i) + "] is " +
             std::to_string(g[i]) + " but the whole batch's gradient is " +
             std::to_string((*expected[t])[i]) + " at step " + std::to_string(step));
      }
    }
  }
}

}  // namespace

int main() {
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    const int size = group->size();

    // 1. Identical starting weights: rank 0's.
    Tensors model = init_model(/*seed=*/42 + rank);
    for (std::vector<float>* tensor : model.all()) group->broadcast(*tensor, /*root=*/0);
    Tensors rank0_model = init_model(42);
    for (std::size_t t = 0; t < model.all().size(); ++t) {
      if (*model.all()[t] != *rank0_model.all()[t]) {
        fail(std::string(kNames[t]) + " differs from rank 0's after the broadcast");
      }
    }
    if (rank == 0) say("World size %d, model 4-8-1 MLP (tanh), %d samples per rank", size, kBatch);

    const Batch batch = make_batch(rank), whole = whole_batch(size);
    float first_loss = 0, last_loss = 0;
    for (int step = 0; step < kSteps; ++step) {
      // 2. Local forward and backward on this rank's own data.
      Tensors grad;
      std::vector<float> loss = {forward_backward(model, batch, grad)};
      if (step == 0) say("[Rank %d] before sync: layer1.weight grad[0] = %.6f", rank, grad.w1[0]);

      // 3. Average every gradient over the ranks.
      for (std::vector<float>* g : grad.all()) {
        group->all_reduce(*g, weft::ReduceOp::kSum);
        for (float& v : *g) v /= static_cast<float>(size);
      }
      if (step == 0) say("[Rank %d] after sync:  layer1.weight grad[0] = %.6f", rank, grad.w1[0]);

      // 4. Check it.
      verify(*group, grad, model, whole, step);

      // 5. The same SGD step everywhere; the loss over all ranks' data.
      std::vector<std::vector<float>*> params = model.all(), grads = grad.all();
      for (std::size_t t = 0; t < params.size(); ++t) {
        for (std::size_t i = 0; i < params[t]->size(); ++i) {
          (*params[t])[i] -= kLearningRate * (*grads[t])[i];
        }
      }
      group->all_reduce(loss, weft::ReduceOp::kAvg);
      if (rank == 0) say("step %2d  loss %.6f", step, loss[0]);
      if (step > 0 && !(loss[0] < last_loss)) {
        fail("the loss rose at step " + std::to_string(step) + ": " + std::to_string(last_loss) +
             " -> " + std::to_string(loss[0]));
      }
      if (step == 0) first_loss = loss[0];
      last_loss = loss[0];
    }
    if (rank == 0) {
      say("gradient_averaging: OK, every rank held the same averaged gradient at every step; "
          "loss %.4f -> %.4f",
          first_loss, last_loss);
    }
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "gradient_averaging: FAILED to join the job: %s\n", e.what());
    }
    return 1;
  }
}
