// The global mean of data spread over the ranks: the pattern behind gradient synchronization
// (distributed_mean.py of a torch.distributed tutorial).
//
//  1. Equal sizes: every rank holds --data-size values; all_reduce(SUM) then divide by the
//     world size gives every rank the element-wise mean.
//  2. Unequal sizes (the last rank holds half as many, like a short last batch): all_reduce the
//     local sum and the local count separately; global mean = global sum / global count.
//  3. Gradient synchronization: all_reduce(SUM) / world_size of a fake gradient, and the same
//     in one call with ReduceOp::kAvg.
// Barriers keep the phases apart. The data are multiples of 1/4, so every sum is exact and each
// rank checks the result against the one it computes from every rank's data by itself.
//
//   weftrun -n 4 ./distributed_mean --data-size 1000
//
// Flags as in the Python script: --data-size/-d N (default 100); --world-size/-w N and
// --backend/-b gloo|weft are accepted for compatibility (the launcher starts the ranks, so
// --world-size must match WORLD_SIZE).
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

struct Flags {
  int data_size = 100;
  int world_size = -1;  // -1: not given
  std::string backend = "gloo";
};

// Accepts "--name value", "--name=value" and "-n value".
Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw std::invalid_argument(arg + " needs a value");
    }
    if (arg == "--data-size" || arg == "-d") {
      flags.data_size = std::stoi(value);
    } else if (arg == "--world-size" || arg == "-w") {
      flags.world_size = std::stoi(value);
    } else if (arg == "--backend" || arg == "-b") {
      flags.backend = value;
    } else {
      throw std::invalid_argument("unknown flag " + arg +
                                  " (usage: [--data-size N] [--world-size N] [--backend B])");
    }
  }
  if (flags.data_size < 2) throw std::invalid_argument("--data-size must be at least 2");
  if (flags.backend != "gloo" && flags.backend != "weft") {
    throw std::invalid_argument("--backend " + flags.backend +
                                " is not supported: weft runs on CPUs (use gloo or weft)");
  }
  return flags;
}

[[gnu::format(printf, 1, 2)]] void say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
  std::fflush(stdout);
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

// Rank r's i-th local value: r plus a multiple of 1/4 in [-2.5, 2.5] (the tutorial uses
// randn() + rank). Any rank can compute any other rank's data.
float local_value(int rank, int i, int salt) {
  return static_cast<float>(rank) + static_cast<float>((i * 8 + rank * 5 + salt) % 21 - 10) / 4;
}

std::vector<float> local_data(int rank, int count, int salt) {
  std::vector<float> data(count);
  for (int i = 0; i < count; ++i) data[i] = local_value(rank, i, salt);
  return data;
}

double mean_of(const std::vector<float>& values) {
  double sum = 0;
  for (float v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// 1. all_reduce(SUM) / world_size, element by element.
void simple_mean(weft::ProcessGroup& group, int data_size) {
  const int rank = group.rank(), size = group.size();
  std::vector<float> local = local_data(rank, data_size, 0);
  std::vector<float> mean = local;
  group.all_reduce(mean, weft::ReduceOp::kSum);
  for (float& v : mean) v /= static_cast<float>(size);

  group.barrier();
  say("[Rank %d] Local mean: %.4f, Distributed mean: %.4f", rank, mean_of(local), mean_of(mean));

  for (int i = 0; i < data_size; ++i) {
    float sum = 0;
    for (int r = 0; r < size; ++r) sum += local_value(r, i, 0);
    const float expected = sum / static_cast<float>(size);
    if (mean[i] != expected) {
      fail("simple mean: element " + std::to_string(i) + " is " + std::to_string(mean[i]) +
           ", expected " + std::to_string(expected));
    }
  }
  group.barrier();
  if (rank == 0) say("\n[Verification] Distributed mean equals the average of the local means.\n");
}

// 2. Unequal sizes: all_reduce the sum and the count, then divide.
void weighted_mean(weft::ProcessGroup& group, int data_size) {
  const int rank = group.rank(), size = group.size();
  auto size_of_rank = [&](int r) { return r == size - 1 && size > 1 ? data_size / 2 : data_size; };
  std::vector<float> local = local_data(rank, size_of_rank(rank), 1);

  std::vector<double> sum = {0.0};
  for (float v : local) sum[0] += v;
  std::vector<double> count = {static_cast<double>(local.size())};
  group.all_reduce(sum, weft::ReduceOp::kSum);
  group.all_reduce(count, weft::ReduceOp::kSum);
  const double global_mean = sum[0] / count[0];

  group.barrier();
  say("[Rank %d] Size: %zu, Local mean: %.4f, Weighted global mean: %.4f", rank, local.size(),
      mean_of(local), global_mean);

  double expected_sum = 0, expected_count = 0;
  for (int r = 0; r < size; ++r) {
    for (float v : local_data(r, size_of_rank(r), 1)) expected_sum += v;
    expected_count += size_of_rank(r);
  }
  if (sum[0] != expected_sum || count[0] != expected_count) {
    fail("weighted mean: global sum/count " + std::to_string(sum[0]) + "/" +
         std::to_string(count[0]) + ", expected " + std::to_string(expected_sum) + "/" +
         std::to_string(expected_count));
  }
  group.barrier();
  if (rank == 0) say("\n[Verification] The weighted mean accounts for the different sizes.\n");
}

// 3. What DDP does to every gradient after backward().
void gradient_sync(weft::ProcessGroup& group) {
  const int rank = group.rank(), size = group.size();
  std::vector<float> gradient = local_data(rank, 10, 2);
  if (rank == 0) say("Before synchronization:");
  group.barrier();
  say("  [Rank %d] gradient[0]: %.4f", rank, gradient[0]);
  group.barrier();

  std::vector<float> averaged_in_one_call = gradient;
  group.all_reduce(gradient, weft::ReduceOp::kSum);
  for (float& g : gradient) g /= static_cast<float>(size);
  group.all_reduce(averaged_in_one_call, weft::ReduceOp::kAvg);

  if (rank == 0) say("\nAfter synchronization (all ranks have the same gradient):");
  group.barrier();
  say("  [Rank %d] gradient[0]: %.4f", rank, gradient[0]);
  group.barrier();

  for (int i = 0; i < 10; ++i) {
    float sum = 0;
    for (int r = 0; r < size; ++r) sum += local_value(r, i, 2);
    const float expected = sum / static_cast<float>(size);
    if (gradient[i] != expected || averaged_in_one_call[i] != expected) {
      fail("gradient sync: element " + std::to_string(i) + " is " + std::to_string(gradient[i]) +
           " (SUM / world_size) and " + std::to_string(averaged_in_one_call[i]) +
           " (AVG), expected " + std::to_string(expected));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  try {
    flags = parse_flags(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "distributed_mean: %s\n", e.what());
    return 2;
  }
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    if (flags.world_size != -1 && flags.world_size != group->size()) {
      std::fprintf(stderr,
                   "distributed_mean: --world-size %d does not match the job's %d ranks "
                   "(the launcher starts the ranks: weftrun -n %d)\n",
                   flags.world_size, group->size(), flags.world_size);
      return 2;
    }
    if (rank == 0) {
      say("DISTRIBUTED MEAN COMPUTATION: %d ranks, %d values each, backend %s", group->size(),
          flags.data_size, flags.backend.c_str());
      say("\n=== Simple approach (equal sizes) ===");
    }
    simple_mean(*group, flags.data_size);

    group->barrier();
    if (rank == 0) say("=== Weighted approach (unequal sizes) ===");
    weighted_mean(*group, flags.data_size);

    group->barrier();
    if (rank == 0) say("=== Gradient synchronization ===");
    gradient_sync(*group);

    group->barrier();
    if (rank == 0) say("\ndistributed_mean: OK");
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "distributed_mean: FAILED to join the job: %s\n", e.what());
    }
    return 1;
  }
}
