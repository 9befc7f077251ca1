// The development files copied into data/validation with the revised schema's columns
// (data/validation/transcriptions.toml): no measured number moved, and every row reads under the schema.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "llmsim/core/csv_reader.h"
#include "llmsim/core/toml_reader.h"
#include "llmsim/validate/measured_runs.h"

namespace llmsim {
namespace {

const std::string kValidation = LLMSIM_DATA_DIR "/validation/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// FNV-1a 64 over run_id US metric US value RS of every data row, fields as parsed: the manifest's digest
// of the ORIGINAL file, so an equal digest here says that no run, metric or value changed, moved or vanished.
std::string measured_digest(const std::vector<CsvRecord>& records) {
  const auto& header = records.front().fields;
  const auto col = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    REQUIRE(it != header.end());
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t id = col("run_id"), metric = col("metric"), value = col("value");
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto add = [&](const std::string& s) {
    for (const unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
  };
  for (std::size_t i = 1; i < records.size(); ++i) {
    const auto& f = records[i].fields;
    REQUIRE(f.size() == header.size());
    add(f[id] + "\x1f" + f[metric] + "\x1f" + f[value] + "\x1e");
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

}  // namespace

TEST_CASE("transcribed development files: the measured numbers of the originals, the revised columns readable") {
  const toml::table manifest = parse_toml_file(kValidation + "transcriptions.toml");
  const auto* files = manifest["file"].as_array();
  REQUIRE(files);
  CHECK(files->size() == 7);
  for (const auto& node : *files) {
    const auto& f = *node.as_table();
    const std::string name = f["name"].value_or(std::string());
    CAPTURE(name);
    const std::string path = kValidation + name;
    const auto records = parse_csv(read_file(path), path);
    REQUIRE(records.size() > 1);
    CHECK(static_cast<std::int64_t>(records.size() - 1) == f["rows"].value_or(std::int64_t{0}));
    CHECK(measured_digest(records) == f["measured_digest"].value_or(std::string()));
    // The added columns are the header's last ones, after notes.
    const auto& header = records.front().fields;
    const auto* added = f["columns_added"].as_array();
    REQUIRE(added);
    const auto notes = std::find(header.begin(), header.end(), "notes");
    REQUIRE(notes != header.end());
    CHECK(static_cast<std::size_t>(header.end() - notes - 1) == added->size());
    // Every row reads: the new columns hold values the schema knows (a GGUF or EXL2 row is unsupported with
    // its reason, not in error).
    const auto runs = sim::load_measured_runs(path, LLMSIM_DATA_DIR);
    for (const auto& r : runs) {
      CAPTURE(r.run_id);
      CHECK(r.error == "");
    }
  }
}

}  // namespace llmsim
