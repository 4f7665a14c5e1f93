#include "model_plot.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace weft_model {

namespace fs = std::filesystem;

std::string find_model_plot_script() {
  constexpr const char* kScriptName = "weft_model_plot.py";
  if (const char* chosen = std::getenv("WEFT_MODEL_PLOT_SCRIPT"); chosen && *chosen) {
    if (!fs::is_regular_file(chosen)) {
      throw std::runtime_error(std::string("--plot: WEFT_MODEL_PLOT_SCRIPT=") + chosen +
                               " is not a file");
    }
    return chosen;
  }
  std::error_code error;
  const fs::path dir = fs::read_symlink("/proc/self/exe", error).parent_path();
  std::string looked;
  if (!error) {
    for (const fs::path& place :
         {dir / kScriptName,
          (dir / WEFT_MODEL_PLOT_FROM_BINDIR / kScriptName).lexically_normal()}) {
      if (fs::is_regular_file(place)) return place.string();
      looked += (looked.empty() ? "" : ", ") + place.string();
    }
  }
  throw std::runtime_error(std::string("--plot: ") + kScriptName + " is not where weft-model " +
                           "looks for it (" + (looked.empty() ? "no executable path" : looked) +
                           "); set WEFT_MODEL_PLOT_SCRIPT");
}

std::string draw_model_plot(const std::string& python, const std::string& script,
                            const Request& request, const std::string& png_path) {
  weft_bench::TempRowsFile rows;
  std::FILE* file = std::fopen(rows.path().c_str(), "w");
  if (file == nullptr) return "--plot: cannot write " + rows.path();
  print_csv(file, request);
  if (std::fclose(file) != 0) return "--plot: cannot write " + rows.path();
  return weft_bench::draw_plot(python, script, rows.path(), png_path);
}

}  // namespace weft_model
