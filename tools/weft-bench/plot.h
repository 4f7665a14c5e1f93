// --plot FILE.png: rank 0 writes the rows as --json's JSON lines (to --json's file, or to a
// temporary one) and, after the run, has weft_bench_plot.py draw busbw against size with
// python3 and matplotlib. The script is looked for in turn:
//   $WEFT_BENCH_PLOT_SCRIPT, if set;
//   next to the weft-bench executable (the build tree: CMake copies it there);
//   in the installed libexec directory (WEFT_BENCH_PLOT_FROM_BINDIR, relative to the bin
//   directory holding weft-bench, from `cmake --install`).
// The interpreter is $WEFT_BENCH_PYTHON, else python3 from PATH or, when that one has no
// matplotlib, Debian's /usr/bin/python3 (where python3-matplotlib installs it).
#pragma once

#include <string>

namespace weft_bench {

// The script's path; throws std::runtime_error naming the places looked in when it is in none.
std::string find_plot_script();

// The Python to draw with: the first of the interpreters above whose `SCRIPT --check` passes
// (it runs, and imports matplotlib). Called before the run, so that a long run does not end
// without its plot. Throws std::runtime_error saying why none can (the last interpreter tried
// has printed its own reason, such as a missing matplotlib, on stderr).
std::string find_plot_python(const std::string& script);

// Draws the JSON lines of json_path into png_path. Empty on success, else the error.
std::string draw_plot(const std::string& python, const std::string& script,
                      const std::string& json_path, const std::string& png_path);

// A temporary file for the rows when --plot is given without --json; removed on destruction.
class TempRowsFile {
 public:
  TempRowsFile();  // throws std::runtime_error if it cannot be made
  ~TempRowsFile();
  TempRowsFile(const TempRowsFile&) = delete;
  TempRowsFile& operator=(const TempRowsFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace weft_bench
