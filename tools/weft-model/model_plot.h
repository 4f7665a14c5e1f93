// --plot FILE.png: the rows of --csv go to a temporary file that weft_model_plot.py draws with
// matplotlib, the way weft-bench --plot does (tools/weft-bench/plot.h, whose interpreter search
// and process handling this reuses: $WEFT_BENCH_PYTHON, else python3, else /usr/bin/python3).
// The script is looked for as $WEFT_MODEL_PLOT_SCRIPT, next to the executable (the build tree),
// then in the installed libexec/weft.
#pragma once

#include <string>

#include "../weft-bench/plot.h"
#include "report.h"

namespace weft_model {

// The script's path; throws std::runtime_error naming the places looked in.
std::string find_model_plot_script();

// Draws request's predictions into png_path. Empty on success, else the error.
std::string draw_model_plot(const std::string& python, const std::string& script,
                            const Request& request, const std::string& png_path);

}  // namespace weft_model
