#include "options.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "common/cli_checks.h"
#include "weft/error.h"

namespace weft_bench {
namespace {

using weft::cli::within;

constexpr const char* kUsageLine = "usage: weftrun -n N weft-bench [OP[,OP...]|all] [flags]";

constexpr const char* kOpsHelp =
    "ops: all_reduce all_gather broadcast reduce reduce_scatter all_to_all gather scatter\n"
    "     barrier sendrecv all";

// Sizes past this are typing mistakes, not benchmarks (and would overflow the size steps).
constexpr unsigned long long kMaxBytes = 1'000'000'000'000'000ULL;

// The comma-separated lists of -d, -o and the op argument. Kept by hand rather than CLI11's
// delimiter(','): that one appends the words of a repeated flag, where "-d int8 -d int32"
// means int32 alone (the last one wins, as with every other flag).
std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    words.emplace_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return words;
}

weft::DType dtype_named(const std::string& word) {
  // nccl-tests' spellings first, then torch's and numpy's through weft.
  if (word == "float" || word == "f32") return weft::DType::kFloat32;
  if (word == "double") return weft::DType::kFloat64;
  if (word == "half") return weft::DType::kFloat16;
  try {
    return weft::parse_dtype(word);
  } catch (const weft::Error&) {
    throw UsageError("-d: unknown dtype '" + word +
                     "' (float32, float64, float16, bfloat16, int8, uint8, int16, int32, "
                     "int64, bool or all)");
  }
}

std::vector<weft::DType> parse_dtypes(const std::string& text) {
  std::vector<weft::DType> dtypes;
  if (text == "all") {
    for (int d = 0; d < weft::kNumDTypes; ++d) dtypes.push_back(static_cast<weft::DType>(d));
    return dtypes;
  }
  for (const std::string& word : words_of(text)) dtypes.push_back(dtype_named(word));
  if (dtypes.empty()) throw UsageError("-d: no dtype given");
  return dtypes;
}

weft::ReduceOp::Kind redop_named(const std::string& word) {
  using K = weft::ReduceOp;
  static const std::pair<std::string_view, weft::ReduceOp::Kind> kNames[] = {
      {"sum", K::kSum},
      {"prod", K::kProduct},
      {"product", K::kProduct},
      {"min", K::kMin},
      {"max", K::kMax},
      {"avg", K::kAvg},
      {"band", K::kBand},
      {"bor", K::kBor},
      {"bxor", K::kBxor},
      {"premul_sum", K::kPremulSum},
      {"premulsum", K::kPremulSum},
  };
  for (const auto& [name, kind] : kNames) {
    if (word == name) return kind;
  }
  throw UsageError("-o: unknown reduce op '" + word +
                   "' (sum, prod, min, max, avg, band, bor, bxor, premul_sum or all)");
}

std::vector<weft::ReduceOp::Kind> parse_redops(const std::string& text) {
  using K = weft::ReduceOp;
  if (text == "all") {
    return {K::kSum,  K::kProduct, K::kMin,  K::kMax,      K::kAvg,
            K::kBand, K::kBor,     K::kBxor, K::kPremulSum};
  }
  std::vector<weft::ReduceOp::Kind> redops;
  for (const std::string& word : words_of(text)) redops.push_back(redop_named(word));
  if (redops.empty()) throw UsageError("-o: no reduce op given");
  return redops;
}

// nccl-tests' sizes: 8, 64K, 32M, 1G, binary (1K = 1024); 64KB and 64KiB also work. CLI11's
// AsSizeValue reads them; this wrapper bounds the result and says what it wanted, since
// AsSizeValue's own message lists its whole table of units.
CLI::Validator byte_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string given = text;
        try {
          static const CLI::AsSizeValue kBinarySizes(false);
          // A negative count wraps to a huge one, so the bound refuses it too.
          if (kBinarySizes(text).empty() && std::strtoull(text.c_str(), nullptr, 10) <= kMaxBytes)
            return "";
        } catch (const CLI::ValidationError&) {
          // Falls through to the message below.
        }
        return "expected a byte count such as 8, 64K, 32M or 1G, got '" + given + "'";
      },
      "");
}

// Help in weft-bench's order: the usage line first, then the ops, then the flags by group.
class BenchHelpFormatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App*) const override { return ""; }

  std::string make_usage(const CLI::App*, std::string) const override {
    return std::string(kUsageLine) + "\n\n" + kOpsHelp + "\n\n";
  }

  // One blank line between groups (CLI11 puts one before each group and another after it).
  std::string make_group(std::string group, bool positional,
                         std::vector<const CLI::Option*> options) const override {
    return CLI::Formatter::make_group(std::move(group), positional, std::move(options)).substr(1);
  }

  std::string make_option_name(const CLI::Option* option, bool positional) const override {
    std::string names = CLI::Formatter::make_option_name(option, positional);
    // "--warmup-iters" is an alias of nccl-tests' "--warmup_iters", not another flag.
    if (auto alias = names.find(",--warmup-iters"); alias != std::string::npos) {
      names.erase(alias, std::string_view(",--warmup-iters").size());
    }
    for (std::size_t comma = names.find(','); comma != std::string::npos;
         comma = names.find(',', comma + 2)) {
      names.insert(comma + 1, " ");
    }
    return names;
  }
};

// What the command line says before it is turned into BenchOptions: the words and 0/1 levels
// that need a second look.
struct RawFlags {
  std::string ops;
  std::string dtypes;
  std::string redops;
  long check = 1;
  int async = 0;
  int blocking = 0;
};

void add_nccl_tests_flags(CLI::App& app, BenchOptions& o, RawFlags& raw) {
  const std::string group = "nccl-tests flags";
  auto add = [&](const std::string& names, auto& value, const std::string& text,
                 const std::string& help) {
    return app.add_option(names, value, help)->type_name(text)->group(group);
  };
  add("-b,--minbytes", o.min_bytes, "BYTES", "smallest size (K/M/G suffixes; default 32M)")
      ->transform(byte_count());
  add("-e,--maxbytes", o.max_bytes, "BYTES", "largest size (default 32M)")->transform(byte_count());
  add("-f,--stepfactor", o.step_factor, "F", "multiply the size by F (> 1) ...")
      ->check(within(1, 1 << 20));
  add("-i,--stepbytes", o.step_bytes, "BYTES", "... else add BYTES (default 1M)")
      ->transform(byte_count());
  add("-d,--datatype", raw.dtypes, "T[,T]",
      "float32 float64 float16 bfloat16 int8 uint8 int16 int32\n"
      "int64 bool, or all (default float32)");
  add("-o,--op", raw.redops, "OP[,OP]",
      "sum prod min max avg band bor bxor premul_sum, or all\n"
      "(default sum; reducing ops only)");
  add("-r,--root", o.root, "R", "root of broadcast, reduce, gather, scatter (default 0)")
      ->check(within(0, 1 << 24));
  add("-w,--warmup_iters,--warmup-iters", o.warmup_iters, "N",
      "untimed iterations before the timed ones (default 1)")
      ->check(within(0, 1 << 24));
  add("-n,--iters", o.iters, "N", "timed iterations, in one batch (default 20)")
      ->check(within(1L, 1L << 40));
  add("-c,--check", raw.check, "0|1", "verify every result once before timing (default 1)")
      ->check(within(0L, 1L << 20));
  add("-a,--async", raw.async, "0|1", "use the i* forms and wait for the Work (default 0)")
      ->check(within(0, 1));
  add("-z,--blocking", raw.blocking, "0|1",
      "with -a 1: wait for each op before issuing the next (default 0)")
      ->check(within(0, 1));
}

void add_weft_flags(CLI::App& app, BenchOptions& o) {
  const std::string group = "weft flags";
  auto add = [&](const std::string& names, auto& value, const std::string& text,
                 const std::string& help) {
    return app.add_option(names, value, help)->type_name(text)->group(group);
  };
  add("--algo", o.algorithm, "NAME", "force an algorithm (CollectiveOptions.algorithm)");
  add("--segment-bytes", o.segment_bytes, "BYTES",
      "CollectiveOptions.segment_bytes (default 0: weft's default)")
      ->transform(byte_count());
  add("--target-seconds", o.target_seconds, "T",
      "the anchors' adaptive iterations (ignored when -n is given)")
      ->check(within(0.0, 1e6));
  add("--min-iters", o.min_iters, "N", "clamp of the adaptive iteration count (default 3) ...")
      ->check(within(1L, 1L << 40));
  add("--max-iters", o.max_iters, "N", "... and its top (default 1000000)")
      ->check(within(1L, 1L << 40));
  add("--json", o.json_path, "FILE", "one JSON object per line: the settings, then one per result");
  add("--csv", o.csv_path, "FILE", "the anchors' CSV schema (shared/anchors/README.md)");
  add("--plot", o.plot_path, "FILE.png",
      "draw busbw against size, a line per op/dtype/redop and placement\n"
      "(python3 with matplotlib, after the run)");
  add("--config", o.config, "TAG", "the CSV's config column (default \"default\")");
  add("--cores", o.cores, "N", "the CSV's cores column (default: online CPUs)")
      ->check(within(1, 1 << 20));
}

std::unique_ptr<CLI::App> make_parser(BenchOptions& o, RawFlags& raw) {
  auto app = std::make_unique<CLI::App>("", "weft-bench");
  auto formatter = std::make_shared<BenchHelpFormatter>();
  formatter->column_width(28);
  app->formatter(formatter);
  // A flag given twice takes its last value, as nccl-tests' getopt loop does.
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // No group: the usage line and the ops list above the flags already show it.
  app->add_option("ops", raw.ops, "the ops to run (default all_reduce)")->group("");
  add_nccl_tests_flags(*app, o, raw);
  add_weft_flags(*app, o);
  app->set_help_flag("-h,--help", "this text")->group("weft flags");
  return app;
}

// The settings that depend on each other, and the words CLI11 took as they were.
void finish(const CLI::App& app, const RawFlags& raw, BenchOptions& o) {
  if (app.count("ops") > 0) {
    try {
      o.ops = parse_ops(raw.ops);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  if (app.count("--datatype") > 0) o.dtypes = parse_dtypes(raw.dtypes);
  if (app.count("--op") > 0) o.redops = parse_redops(raw.redops);
  o.iters_given = app.count("--iters") > 0;
  o.check = raw.check != 0;
  o.async = raw.async != 0;
  o.blocking = raw.blocking != 0;
  if (o.max_bytes < o.min_bytes) {
    throw UsageError("-e (" + std::to_string(o.max_bytes) + ") is below -b (" +
                     std::to_string(o.min_bytes) + ")");
  }
  if (o.step_factor <= 1 && o.step_bytes == 0) throw UsageError("-i must be > 0 when -f is 1");
  if (o.max_iters < o.min_iters) throw UsageError("--max-iters is below --min-iters");
  if (app.count("--plot") > 0 && o.plot_path.empty()) throw UsageError("--plot needs a file name");
}

}  // namespace

BenchOptions parse_options(int argc, char** argv) {
  BenchOptions o;
  RawFlags raw;
  std::unique_ptr<CLI::App> app = make_parser(o, raw);
  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    o.show_help = true;
    return o;
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  finish(*app, raw, o);
  return o;
}

std::string usage_text() {
  BenchOptions unused;
  RawFlags raw;
  return make_parser(unused, raw)->help();
}

}  // namespace weft_bench
