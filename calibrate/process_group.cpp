#include "llmsim/calibrate/process_group.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

#include "llmsim/core/error.h"

namespace llmsim::calibrate {

int ProcessGroup::local_rank() const {
  const auto& h = hosts();
  const int r = rank();
  return static_cast<int>(std::count(h.begin(), h.begin() + r, h[static_cast<std::size_t>(r)]));
}

namespace {

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

class SingleProcess final : public ProcessGroup {
 public:
  SingleProcess() : hosts_{this_host()} {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  void broadcast(std::string&) override {}
  double max(double v) override { return v; }
  bool all(bool v) override { return v; }
  [[noreturn]] void abort(int exit_code) override { std::_Exit(exit_code); }

 private:
  std::vector<std::string> hosts_;
};

}  // namespace

std::unique_ptr<ProcessGroup> single_process() { return std::make_unique<SingleProcess>(); }

int nodes_spanned(const std::vector<std::string>& hosts, int group) {
  const auto n = static_cast<std::size_t>(std::clamp(group, 0, static_cast<int>(hosts.size())));
  return static_cast<int>(std::set<std::string>(hosts.begin(), hosts.begin() + static_cast<std::ptrdiff_t>(n)).size());
}

// One line per item: bench dtype m n k bytes group nodes, tab-separated (names hold no tabs; an empty
// dtype is an empty field).
std::string pack_items(const std::vector<BenchItem>& items) {
  std::string out;
  for (const BenchItem& i : items)
    out +=
        fmt::format("{}\t{}\t{}\t{}\t{}\t{:.0f}\t{}\t{}\n", i.bench, i.dtype, i.m, i.n, i.k, i.bytes, i.group, i.nodes);
  return out;
}

std::vector<BenchItem> unpack_items(const std::string& text) {
  std::vector<BenchItem> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::size_t start = 0;
    for (std::size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
      f.push_back(line.substr(start, tab - start));
    f.push_back(line.substr(start));
    if (f.size() != 8) throw Error(ErrorKind::Internal, Location{}, "malformed work list line: '" + line + "'");
    BenchItem i;
    i.bench = f[0];
    i.dtype = f[1];
    try {
      i.m = std::stoll(f[2]);
      i.n = std::stoll(f[3]);
      i.k = std::stoll(f[4]);
      i.bytes = std::stod(f[5]);
      i.group = std::stoi(f[6]);
      i.nodes = std::stoi(f[7]);
    } catch (const std::exception&) {
      throw Error(ErrorKind::Internal, Location{}, "malformed work list line: '" + line + "'");
    }
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace llmsim::calibrate
