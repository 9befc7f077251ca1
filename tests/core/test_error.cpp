#include <doctest/doctest.h>

#include "llmsim/core/dtype.h"
#include "llmsim/core/error.h"
#include "llmsim/core/suggest.h"

using llmsim::Error;
using llmsim::ErrorKind;
using llmsim::Location;

TEST_CASE("error messages carry file:line:column and key, exit codes are distinct") {
  const Error e(ErrorKind::Input, Location{.file = "sys.toml", .line = 12, .column = 3, .key = "gpu.memory_GiB"},
                "value -1 must be > 0");
  CHECK(std::string(e.what()) == "sys.toml:12:3: gpu.memory_GiB: value -1 must be > 0");
  CHECK(e.message() == "value -1 must be > 0");
  const Error flag(ErrorKind::Usage, Location{.key = "--tp"}, "must be > 0");
  CHECK(std::string(flag.what()) == "--tp: must be > 0");
  const int codes[] = {llmsim::exit_code(ErrorKind::Usage), llmsim::exit_code(ErrorKind::Input),
                       llmsim::exit_code(ErrorKind::NotFound), llmsim::exit_code(ErrorKind::NoDevice),
                       llmsim::exit_code(ErrorKind::Internal)};
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(codes[i] > 1);  // 0 = ok, 1 = result does not fit
    for (std::size_t j = i + 1; j < 5; ++j) CHECK(codes[i] != codes[j]);
  }
}

TEST_CASE("did-you-mean finds typos and stays quiet for unrelated words") {
  const std::vector<std::string> keys{"micro-batch", "global-batch", "seq-len", "tp", "pp"};
  CHECK(llmsim::closest_match("micro-bacth", keys) == "micro-batch");
  CHECK(llmsim::closest_match("seqlen", keys) == "seq-len");
  CHECK(llmsim::closest_match("temperature", keys).empty());
  CHECK(llmsim::did_you_mean("tpp", keys) == " (did you mean 'tp'?)");
}

TEST_CASE("dtypes: names, aliases and sizes") {
  llmsim::DType t{};
  CHECK(llmsim::parse_dtype("bfloat16", t));
  CHECK(t == llmsim::DType::BF16);
  CHECK(llmsim::dtype_bytes(t) == 2.0);
  CHECK(llmsim::parse_dtype("nf4", t));
  CHECK(llmsim::dtype_bytes(t) == 0.5);
  CHECK_FALSE(llmsim::parse_dtype("float13", t));
}
