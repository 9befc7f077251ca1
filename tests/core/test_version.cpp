// Release numbers as runs and facts files write them.
#include <doctest/doctest.h>

#include "llmsim/core/version.h"

using llmsim::parse_version;
using llmsim::Version;

TEST_CASE("release numbers: major.minor.patch with the spellings engines use") {
  CHECK(parse_version("0.6.3") == Version{0, 6, 3});
  CHECK(parse_version("v1.0.3") == Version{1, 0, 3});
  CHECK(parse_version("2.1") == Version{2, 1, 0});
  CHECK(parse_version("2") == Version{2, 0, 0});
  CHECK(parse_version("0.6.3.post1") == Version{0, 6, 3});
  CHECK(parse_version("0.8.0rc1") == Version{0, 8, 0});
  CHECK(parse_version("2.4.0+cu121") == Version{2, 4, 0});
  CHECK(parse_version("1.4.1-beta") == Version{1, 4, 1});
  CHECK(*parse_version("0.6.3") < Version{0, 8, 0});
  CHECK(*parse_version("0.10.1") > Version{0, 8, 0});  // numeric, not text, order
  CHECK(to_string(*parse_version("v2.0")) == "2.0.0");
}

TEST_CASE("release numbers: what is not one") {
  CHECK_FALSE(parse_version(""));
  CHECK_FALSE(parse_version("latest"));
  CHECK_FALSE(parse_version("v"));
  CHECK_FALSE(parse_version("1.2/3"));
  CHECK_FALSE(parse_version("99999999.1"));
  // A placeholder or stray text after the numbers is not a tag: "0.4.x" once read silently as 0.4.0.
  CHECK_FALSE(parse_version("0.4.x"));
  CHECK_FALSE(parse_version("2.1y"));
  CHECK_FALSE(parse_version("1.0.0.final"));
  CHECK(parse_version("1.0.0.dev20240101") == Version{1, 0, 0});
  CHECK(parse_version("2.0.0a1") == Version{2, 0, 0});
  CHECK(parse_version("0.5.0.post1") == Version{0, 5, 0});
}
