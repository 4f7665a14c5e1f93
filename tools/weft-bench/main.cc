// weft-bench: nccl-tests' flags and columns for weft's collectives (docs/weft-bench.md).
//
//   weftrun -n 4 weft-bench all_reduce -b 8 -e 64M -f 2 -d float32 -o sum -w 5 -n 20 -c 1
//
// Every rank runs the same loops over ops x dtypes x reduce ops x sizes x {out of place,
// in place}: check once (-c 1), then time; rank 0 prints each row as it completes (and
// flushes, as it does the --json and --csv files) and, with --plot, draws the rows at the end.
// Exit status: 0, 1 when any row had wrong elements, 2 for a usage error (or --plot unable to
// draw, found before the run), 3 when weft (or the system, or the plot after the run) failed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_case.h"
#include "collective_call.h"
#include "data_pattern.h"
#include "element_codec.h"
#include "file_reports.h"
#include "options.h"
#include "plot.h"
#include "rank_control.h"
#include "result_check.h"
#include "result_row.h"
#include "sizes.h"
#include "text_report.h"
#include "timed_loop.h"
#include "weft/error.h"
#include "weft/init.h"
#include "weft/process_group.h"

namespace weft_bench {
namespace {

constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitFailure = 3;

// Combinations weft refuses (reduce_kernels' rules), skipped without asking weft.
std::optional<std::string> unsupported(weft::DType dtype, weft::ReduceOp::Kind kind) {
  using K = weft::ReduceOp;
  const bool bitwise = kind == K::kBand || kind == K::kBor || kind == K::kBxor;
  if (is_floating(dtype) && bitwise) return "bitwise ops need an integer or bool dtype";
  if (dtype == weft::DType::kBool && kind == K::kAvg) return "a bool has no average";
  if (!is_floating(dtype) && kind == K::kPremulSum)
    return "premul_sum needs a floating-point dtype";
  return std::nullopt;
}

std::string describe(BenchOp op, weft::DType dtype, weft::ReduceOp::Kind redop) {
  std::string s(traits_of(op).name);
  s += ' ';
  s += weft::name_of(dtype);
  if (traits_of(op).reduces) {
    s += ' ';
    s += redop_label(redop);
  }
  return s;
}

class Bench {
 public:
  Bench(weft::ProcessGroup& group, const BenchOptions& options)
      : group_(group), options_(options), control_(group) {}

  int run();

 private:
  Cell measure(const BenchCase& c);
  // Runs every size of one (op, dtype, redop); stops when weft refuses the combination.
  void run_sizes(BenchOp op, weft::DType dtype, weft::ReduceOp::Kind redop);
  void skip(BenchOp op, weft::DType dtype, weft::ReduceOp::Kind redop, const std::string& why);
  bool leader() const { return group_.rank() == 0; }

  weft::ProcessGroup& group_;
  const BenchOptions& options_;
  RankControl control_;
  std::vector<std::size_t> sizes_;
  std::unique_ptr<TextReport> text_;
  std::unique_ptr<JsonReport> json_;
  std::unique_ptr<CsvReport> csv_;
  std::string plot_script_;             // --plot: weft_bench_plot.py ...
  std::string plot_python_;             // ... and the python3 that runs it
  std::unique_ptr<TempRowsFile> rows_;  // --plot without --json: the rows it draws
  uint64_t salt_ = 0;
  uint64_t wrong_rows_ = 0;
};

Cell Bench::measure(const BenchCase& c) {
  const int me = group_.rank();
  const int n = group_.size();
  CaseBuffers buffers(c, me, n);
  weft::CollectiveOptions collective_options;
  collective_options.algorithm = options_.algorithm;
  collective_options.segment_bytes = options_.segment_bytes;
  auto once = [&] {
    auto work = launch(group_, c, buffers, collective_options, options_.async);
    if (work) work->wait();
  };

  Cell cell;
  cell.measured = true;
  if (options_.check) {
    const DataPattern pattern(c.dtype, traits_of(c.op).reduces, c.redop, c.premul_factor, n,
                              salt_++);
    fill_for_check(c, buffers, pattern, me, n);
    once();
    const uint64_t mine = count_wrong(c, buffers, pattern, me, n);
    cell.wrong = static_cast<uint64_t>(control_.max_over_ranks(static_cast<double>(mine)));
    cell.checked = true;
    buffers.zero();
  }
  TimedLoop loop(group_, control_, options_,
                 [&] { return launch(group_, c, buffers, collective_options, options_.async); });
  cell.timing = loop.run();
  if (cell.timing.time_us > 0 && c.shape.bytes > 0) {
    cell.algbw_GBps = static_cast<double>(c.shape.bytes) / (cell.timing.time_us * 1e3);
  }
  cell.busbw_GBps = cell.algbw_GBps * busbw_factor(c.op, n);
  return cell;
}

void Bench::skip(BenchOp op, weft::DType dtype, weft::ReduceOp::Kind redop,
                 const std::string& why) {
  if (!leader()) return;
  text_->skipped(describe(op, dtype, redop), why);
  if (json_) json_->skipped(op, dtype, redop, why);
}

void Bench::run_sizes(BenchOp op, weft::DType dtype, weft::ReduceOp::Kind redop) {
  const OpTraits& t = traits_of(op);
  const int n = group_.size();
  std::size_t previous_count = 0;
  bool first = true;
  for (std::size_t size : sizes_) {
    const Shape shape = shape_of(op, size, weft::size_of(dtype), n);
    if (!first && (op == BenchOp::kBarrier || shape.count == previous_count)) continue;
    first = false;
    previous_count = shape.count;

    ResultRow row{op, dtype, redop, t.rooted ? options_.root : -1, shape, {}, {}};
    try {
      for (bool in_place : {false, true}) {
        if (in_place ? !t.in_place : !t.out_of_place) continue;
        const BenchCase c{op, dtype, redop, options_.premul_factor, options_.root, in_place, shape};
        (in_place ? row.in_place : row.out_of_place) = measure(c);
      }
    } catch (const weft::Error& e) {
      // Argument checks run on every rank before anything is sent, with the same inputs, so
      // every rank refuses alike (an --algo that does not fit this op, for instance).
      if (e.code() != weft::ErrorCode::kInvalidArgument) throw;
      skip(op, dtype, redop, e.message());
      return;
    }
    const bool wrong = row.out_of_place.wrong > 0 || row.in_place.wrong > 0;
    if (wrong) ++wrong_rows_;
    if (leader()) {
      text_->row(row);
      if (json_) json_->row(row);
      if (csv_) csv_->row(row);
    }
  }
}

int Bench::run() {
  const int n = group_.size();
  if (options_.root >= n) {
    if (leader()) {
      std::fprintf(stderr, "weft-bench: -r %d is not a rank of this %d-rank job\n", options_.root,
                   n);
    }
    return kExitUsage;
  }
  RunInfo info;
  info.ranks = n;
  info.cores =
      options_.cores > 0 ? options_.cores : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  info.rank_lines = control_.roll_call();

  // Rank 0 opens the files; every rank learns whether that worked, and all stop together.
  std::string open_error;
  if (leader()) {
    text_ = std::make_unique<TextReport>(stdout);
    try {
      if (!options_.plot_path.empty()) {
        // Before the run: a long run must not end without the plot it was asked for.
        plot_script_ = find_plot_script();
        plot_python_ = find_plot_python(plot_script_);
        if (options_.json_path.empty()) rows_ = std::make_unique<TempRowsFile>();
      }
      const std::string& json_path = rows_ ? rows_->path() : options_.json_path;
      if (!json_path.empty()) {
        json_ = std::make_unique<JsonReport>(json_path, options_, info);
      }
      if (!options_.csv_path.empty()) {
        csv_ = std::make_unique<CsvReport>(options_.csv_path, options_, info);
      }
    } catch (const std::runtime_error& e) {
      open_error = e.what();
    }
  }
  if (control_.max_over_ranks(open_error.empty() ? 0.0 : 1.0) != 0.0) {
    if (leader()) std::fprintf(stderr, "weft-bench: %s\n", open_error.c_str());
    return kExitUsage;
  }

  sizes_ =
      size_list(options_.min_bytes, options_.max_bytes, options_.step_factor, options_.step_bytes);
  if (leader()) text_->header(options_, info);

  for (BenchOp op : options_.ops) {
    const OpTraits& t = traits_of(op);
    if (leader()) text_->table_header(op);
    // Barrier moves no data: one row, whatever -d says.
    const std::vector<weft::DType> dtypes =
        op == BenchOp::kBarrier ? std::vector<weft::DType>{weft::DType::kFloat32} : options_.dtypes;
    const std::vector<weft::ReduceOp::Kind> redops =
        t.reduces ? options_.redops : std::vector<weft::ReduceOp::Kind>{weft::ReduceOp::kSum};
    for (weft::DType dtype : dtypes) {
      for (weft::ReduceOp::Kind redop : redops) {
        if (t.reduces) {
          if (auto why = unsupported(dtype, redop)) {
            skip(op, dtype, redop, *why);
            continue;
          }
        }
        run_sizes(op, dtype, redop);
      }
    }
  }
  if (leader()) text_->footer(wrong_rows_);
  int status = wrong_rows_ > 0 ? kExitWrong : 0;
  if (leader() && !options_.plot_path.empty()) {
    json_.reset();  // closed: every row is in the file
    const std::string error = draw_plot(
        plot_python_, plot_script_, rows_ ? rows_->path() : options_.json_path, options_.plot_path);
    if (!error.empty()) {
      std::fprintf(stderr, "weft-bench: %s\n", error.c_str());
      if (status == 0) status = kExitFailure;
    }
  }
  return status;
}

bool prints_usage_errors() {
  const char* rank = std::getenv("RANK");
  return rank == nullptr || std::string(rank) == "0";
}

}  // namespace
}  // namespace weft_bench

int main(int argc, char** argv) {
  using namespace weft_bench;
  BenchOptions options;
  try {
    options = parse_options(argc, argv);
  } catch (const UsageError& e) {
    if (prints_usage_errors()) {
      std::fprintf(stderr, "weft-bench: %s (see weft-bench --help)\n", e.what());
    }
    return kExitUsage;
  }
  if (options.show_help) {
    if (prints_usage_errors()) std::fputs(usage_text().c_str(), stdout);
    return 0;
  }
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    Bench bench(*group, options);
    return bench.run();
  } catch (const std::exception& e) {
    // Before init_process_group returns the rank is not known (a malformed setting, an
    // unreachable store); weftrun's "[rank N]" prefix still tells which process it was.
    if (rank < 0) {
      std::fprintf(stderr, "weft-bench: before joining the group: %s\n", e.what());
    } else {
      std::fprintf(stderr, "weft-bench: rank %d: %s\n", rank, e.what());
    }
    return kExitFailure;
  }
}
