#include "options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "weft/error.h"

namespace weft_bench {
namespace {

long parse_long(const std::string& flag, const std::string& text, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) {
    throw UsageError(flag + " expects an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got '" + text + "'");
  }
  return v;
}

double parse_double(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0) {
    throw UsageError(flag + " expects a non-negative number, got '" + text + "'");
  }
  return v;
}

bool parse_flag01(const std::string& flag, const std::string& text) {
  return parse_long(flag, text, 0, 1) == 1;
}

std::vector<weft::DType> parse_dtypes(const std::string& text) {
  if (text == "all") {
    std::vector<weft::DType> all;
    for (int d = 0; d < weft::kNumDTypes; ++d) all.push_back(static_cast<weft::DType>(d));
    return all;
  }
  std::vector<weft::DType> dtypes;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string word(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    // nccl-tests' spellings first, then torch's and numpy's through weft.
    if (word == "float" || word == "f32") {
      dtypes.push_back(weft::DType::kFloat32);
    } else if (word == "double") {
      dtypes.push_back(weft::DType::kFloat64);
    } else if (word == "half") {
      dtypes.push_back(weft::DType::kFloat16);
    } else {
      try {
        dtypes.push_back(weft::parse_dtype(word));
      } catch (const weft::Error&) {
        throw UsageError("-d: unknown dtype '" + word +
                         "' (float32, float64, float16, bfloat16, int8, uint8, int16, int32, "
                         "int64, bool or all)");
      }
    }
  }
  if (dtypes.empty()) throw UsageError("-d: no dtype given");
  return dtypes;
}

std::vector<weft::ReduceOp::Kind> parse_redops(const std::string& text) {
  using K = weft::ReduceOp;
  if (text == "all") {
    return {K::kSum,  K::kProduct, K::kMin,  K::kMax,      K::kAvg,
            K::kBand, K::kBor,     K::kBxor, K::kPremulSum};
  }
  std::vector<weft::ReduceOp::Kind> redops;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view w = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (w == "sum")
      redops.push_back(K::kSum);
    else if (w == "prod" || w == "product")
      redops.push_back(K::kProduct);
    else if (w == "min")
      redops.push_back(K::kMin);
    else if (w == "max")
      redops.push_back(K::kMax);
    else if (w == "avg")
      redops.push_back(K::kAvg);
    else if (w == "band")
      redops.push_back(K::kBand);
    else if (w == "bor")
      redops.push_back(K::kBor);
    else if (w == "bxor")
      redops.push_back(K::kBxor);
    else if (w == "premul_sum" || w == "premulsum")
      redops.push_back(K::kPremulSum);
    else {
      throw UsageError("-o: unknown reduce op '" + std::string(w) +
                       "' (sum, prod, min, max, avg, band, bor, bxor, premul_sum or all)");
    }
  }
  if (redops.empty()) throw UsageError("-o: no reduce op given");
  return redops;
}

// Short flag -> long flag, nccl-tests' spelling.
std::string canonical(const std::string& flag) {
  static const std::pair<std::string_view, std::string_view> kAliases[] = {
      {"-b", "--minbytes"},   {"-e", "--maxbytes"},
      {"-f", "--stepfactor"}, {"-i", "--stepbytes"},
      {"-d", "--datatype"},   {"-o", "--op"},
      {"-r", "--root"},       {"-w", "--warmup_iters"},
      {"-n", "--iters"},      {"-c", "--check"},
      {"-a", "--async"},      {"-z", "--blocking"},
      {"-h", "--help"},       {"--warmup-iters", "--warmup_iters"},
  };
  for (const auto& [from, to] : kAliases) {
    if (flag == from) return std::string(to);
  }
  return flag;
}

}  // namespace

std::size_t parse_bytes(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  double scale = 1;
  std::string_view suffix(end);
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k':
      case 'K':
        scale = 1024.0;
        break;
      case 'm':
      case 'M':
        scale = 1024.0 * 1024.0;
        break;
      case 'g':
      case 'G':
        scale = 1024.0 * 1024.0 * 1024.0;
        break;
      default:
        scale = 0;
    }
    suffix.remove_prefix(1);
    if (suffix == "B" || suffix == "b" || suffix == "iB") suffix = {};
  }
  if (text.empty() || end == text.c_str() || scale == 0 || !suffix.empty() || !(v >= 0) ||
      v * scale > 1e15) {
    throw UsageError("expected a byte count such as 8, 64K, 32M or 1G, got '" + text + "'");
  }
  return static_cast<std::size_t>(v * scale);
}

BenchOptions parse_options(int argc, char** argv) {
  BenchOptions o;
  bool op_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.empty()) throw UsageError("empty argument");
    if (arg[0] != '-' || arg == "-") {
      if (op_given) throw UsageError("unexpected argument '" + arg + "' (one op list only)");
      try {
        o.ops = parse_ops(arg);
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
      op_given = true;
      continue;
    }
    // Values: "-b 8", "-b8", "--minbytes 8", "--minbytes=8".
    std::string flag = arg, value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      const std::size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        has_value = true;
      }
    } else if (arg.size() > 2) {
      flag = arg.substr(0, 2);
      value = arg.substr(2);
      has_value = true;
    }
    flag = canonical(flag);
    if (flag == "--help") throw UsageError("");
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw UsageError(flag + " expects a value");
      return argv[++i];
    };
    if (flag == "--minbytes")
      o.min_bytes = parse_bytes(take());
    else if (flag == "--maxbytes")
      o.max_bytes = parse_bytes(take());
    else if (flag == "--stepfactor")
      o.step_factor = parse_long(flag, take(), 1, 1 << 20);
    else if (flag == "--stepbytes")
      o.step_bytes = parse_bytes(take());
    else if (flag == "--datatype")
      o.dtypes = parse_dtypes(take());
    else if (flag == "--op")
      o.redops = parse_redops(take());
    else if (flag == "--root")
      o.root = static_cast<int>(parse_long(flag, take(), 0, 1 << 24));
    else if (flag == "--warmup_iters")
      o.warmup_iters = static_cast<int>(parse_long(flag, take(), 0, 1 << 24));
    else if (flag == "--iters") {
      o.iters = parse_long(flag, take(), 1, 1L << 40);
      o.iters_given = true;
    } else if (flag == "--check")
      o.check = parse_long(flag, take(), 0, 1 << 20) != 0;
    else if (flag == "--async")
      o.async = parse_flag01(flag, take());
    else if (flag == "--blocking")
      o.blocking = parse_flag01(flag, take());
    else if (flag == "--algo")
      o.algorithm = take();
    else if (flag == "--segment-bytes")
      o.segment_bytes = parse_bytes(take());
    else if (flag == "--json")
      o.json_path = take();
    else if (flag == "--csv")
      o.csv_path = take();
    else if (flag == "--config")
      o.config = take();
    else if (flag == "--target-seconds")
      o.target_seconds = parse_double(flag, take());
    else if (flag == "--min-iters")
      o.min_iters = parse_long(flag, take(), 1, 1L << 40);
    else if (flag == "--max-iters")
      o.max_iters = parse_long(flag, take(), 1, 1L << 40);
    else if (flag == "--cores")
      o.cores = static_cast<int>(parse_long(flag, take(), 1, 1 << 20));
    else
      throw UsageError("unknown flag '" + arg + "'");
  }
  if (o.max_bytes < o.min_bytes) {
    throw UsageError("-e (" + std::to_string(o.max_bytes) + ") is below -b (" +
                     std::to_string(o.min_bytes) + ")");
  }
  if (o.step_factor <= 1 && o.step_bytes == 0) throw UsageError("-i must be > 0 when -f is 1");
  if (o.max_iters < o.min_iters) throw UsageError("--max-iters is below --min-iters");
  return o;
}

std::string usage_text() {
  return R"(usage: weftrun -n N weft-bench [OP[,OP...]|all] [flags]

ops: all_reduce all_gather broadcast reduce reduce_scatter all_to_all gather scatter
     barrier sendrecv all

nccl-tests flags:
  -b, --minbytes BYTES      smallest size (K/M/G suffixes; default 32M)
  -e, --maxbytes BYTES      largest size (default 32M)
  -f, --stepfactor F        multiply the size by F (> 1) ...
  -i, --stepbytes BYTES     ... else add BYTES (default 1M)
  -d, --datatype T[,T]      float32 float64 float16 bfloat16 int8 uint8 int16 int32
                            int64 bool, or all (default float32)
  -o, --op OP[,OP]          sum prod min max avg band bor bxor premul_sum, or all
                            (default sum; reducing ops only)
  -r, --root R              root of broadcast, reduce, gather, scatter (default 0)
  -w, --warmup_iters N      untimed iterations before the timed ones (default 1)
  -n, --iters N             timed iterations, in one batch (default 20)
  -c, --check 0|1           verify every result once before timing (default 1)
  -a, --async 0|1           use the i* forms and wait for the Work (default 0)
  -z, --blocking 0|1        with -a 1: wait for each op before issuing the next (default 0)
weft flags:
  --algo NAME               force an algorithm (CollectiveOptions.algorithm)
  --segment-bytes BYTES     CollectiveOptions.segment_bytes (default 0: weft's default)
  --target-seconds T        the anchors' adaptive iterations (ignored when -n is given)
  --min-iters N, --max-iters N   clamp of the adaptive iteration count (3, 1000000)
  --json FILE               one JSON object per line: the settings, then one per result
  --csv FILE                the anchors' CSV schema (shared/anchors/README.md)
  --config TAG              the CSV's config column (default "default")
  --cores N                 the CSV's cores column (default: online CPUs)
  -h, --help                this text
)";
}

}  // namespace weft_bench
