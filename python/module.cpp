// llmsim._llmsim: the llmsim command line in the Python process (python/llmsim/__init__.py wraps it). One
// function, run(args), runs `llmsim ARGS...` through the very code the executable runs (cli/llmsim_app.h) and
// returns (exit code, stdout, stderr): the Python API asks for `--json -` and parses the document, so that
// every figure it returns is the one the CLI prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "llmsim_app.h"

namespace py = pybind11;

namespace {

// Points std::cout and std::cerr at strings for its lifetime (the commands print through them).
class Capture {
 public:
  Capture() : out_(std::cout.rdbuf(out_text_.rdbuf())), err_(std::cerr.rdbuf(err_text_.rdbuf())) {}
  ~Capture() {
    std::cout.rdbuf(out_);
    std::cerr.rdbuf(err_);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::string out() const { return out_text_.str(); }
  std::string err() const { return err_text_.str(); }

 private:
  std::ostringstream out_text_, err_text_;
  std::streambuf* out_;
  std::streambuf* err_;
};

py::tuple run(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "calibrate")
    throw py::value_error("llmsim: calibrate runs as its own executable (llmsim-calibrate); call it from a shell");
  std::vector<std::string> words{"llmsim"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  int rc = 0;
  std::string out, err;
  {
    Capture capture;
    rc = llmsim::cli::run_llmsim(static_cast<int>(words.size()), argv.data());
    out = capture.out();
    err = capture.err();
  }
  return py::make_tuple(rc, py::bytes(out), py::bytes(err));
}

}  // namespace

PYBIND11_MODULE(_llmsim, m) {
  m.doc() = "llmsim's command line in this process (use the llmsim package's functions)";
  m.def("run", &run, py::arg("args"),
        "Run `llmsim ARGS...` in this process; returns (exit code, stdout bytes, stderr bytes).");
  m.attr("__version__") = LLMSIM_VERSION;
}
