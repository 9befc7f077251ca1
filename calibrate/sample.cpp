#include "llmsim/calibrate/sample.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"

namespace llmsim::calibrate {

namespace {

// Older formats, still read (and upgraded on append): before sm_clock_MHz and throttled were recorded,
// and before nodes.
constexpr const char* kHeaderV1 = "bench,dtype,m,n,k,bytes,group,flops,time_s,spread,repeats,noisy";
constexpr const char* kHeaderV2 =
    "bench,dtype,m,n,k,bytes,group,flops,time_s,spread,repeats,noisy,sm_clock_MHz,throttled";
constexpr const char* kHeader =
    "bench,dtype,m,n,k,bytes,group,flops,time_s,spread,repeats,noisy,sm_clock_MHz,throttled,nodes";
// Columns of each format version (1-based index = version).
constexpr int kColumnsOf[] = {0, 12, 14, 15};
constexpr int kCurrentVersion = 3;

const char* header_of(int version) { return version == 1 ? kHeaderV1 : version == 2 ? kHeaderV2 : kHeader; }

template <typename T>
T number(const std::string& s, const std::string& path, int line, const char* column) {
  T v{};
  if constexpr (std::is_floating_point_v<T>) {
    // Finite numbers only: nan or inf in a samples file is a damaged file, not a measurement.
    if (const auto f = parse_finite(s)) return static_cast<T>(*f);
  } else {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size()) return v;
  }
  throw_input(Location{.file = path, .line = line, .key = column}, fmt::format("'{}' is not a finite number", s));
}

Sample parse_row(const std::string& line, const std::string& path, int ln, int version) {
  // Cells as written (the writer puts no blanks in them; a trailing comma is an empty last cell).
  const auto fields = split_fields(line, ',');
  const std::vector<std::string> c(fields.begin(), fields.end());
  const int want = kColumnsOf[version];
  if (static_cast<int>(c.size()) != want)
    throw_input(Location{.file = path, .line = ln},
                fmt::format("expected {} columns ({}), found {}", want, header_of(version), c.size()));
  Sample s;
  s.item.bench = c[0];
  s.item.dtype = c[1];
  s.item.m = number<std::int64_t>(c[2], path, ln, "m");
  s.item.n = number<std::int64_t>(c[3], path, ln, "n");
  s.item.k = number<std::int64_t>(c[4], path, ln, "k");
  s.item.bytes = number<double>(c[5], path, ln, "bytes");
  s.item.group = number<int>(c[6], path, ln, "group");
  s.flops = number<double>(c[7], path, ln, "flops");
  s.time_s = number<double>(c[8], path, ln, "time_s");
  s.spread = number<double>(c[9], path, ln, "spread");
  s.repeats = number<int>(c[10], path, ln, "repeats");
  s.noisy = c[11] == "1";
  if (version >= 2) {
    s.sm_clock_MHz = number<double>(c[12], path, ln, "sm_clock_MHz");
    s.throttled = c[13] == "1";
  }
  if (version >= 3) {
    s.item.nodes = number<int>(c[14], path, ln, "nodes");
    if (s.item.nodes < 1) throw_input(Location{.file = path, .line = ln, .key = "nodes"}, "nodes must be >= 1");
  }
  if (s.item.bench.empty()) throw_input(Location{.file = path, .line = ln, .key = "bench"}, "empty benchmark name");
  if (s.item.group < 1) throw_input(Location{.file = path, .line = ln, .key = "group"}, "group must be >= 1");
  if (s.item.bytes < 0) throw_input(Location{.file = path, .line = ln, .key = "bytes"}, "bytes must be >= 0");
  if (!(s.time_s > 0)) throw_input(Location{.file = path, .line = ln, .key = "time_s"}, "time must be > 0");
  return s;
}

}  // namespace

const char* sample_csv_header() { return kHeader; }

std::string BenchItem::key() const {
  const std::string id = fmt::format("{}|{}|{}|{}|{}|{:.0f}|{}", bench, dtype, m, n, k, bytes, group);
  return nodes > 1 ? id + fmt::format("|n{}", nodes) : id;
}

namespace {

// The rows of a samples file, and its format version (kCurrentVersion, or an older one).
std::vector<Sample> read_samples_file(const std::string& path, int& version) {
  std::ifstream in(path);
  if (!in) throw_not_found(Location{.file = path}, "cannot open the samples file");
  std::vector<Sample> out;
  std::string line;
  int ln = 0;
  version = kCurrentVersion;
  while (std::getline(in, line)) {
    ++ln;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (ln == 1) {
      version = 0;
      for (int v = 1; v <= kCurrentVersion; ++v)
        if (line == header_of(v)) version = v;
      if (version == 0)
        throw_input(Location{.file = path, .line = 1}, fmt::format("header must be '{}'", sample_csv_header()));
      continue;
    }
    out.push_back(parse_row(line, path, ln, version));
  }
  return out;
}

std::string csv_row(const Sample& s) {
  // Full precision for times and byte counts: the fit reads these back.
  return fmt::format("{},{},{},{},{},{:.0f},{},{:.17g},{:.17g},{:.6g},{},{},{:.0f},{},{}\n", s.item.bench, s.item.dtype,
                     s.item.m, s.item.n, s.item.k, s.item.bytes, s.item.group, s.flops, s.time_s, s.spread, s.repeats,
                     s.noisy ? 1 : 0, s.sm_clock_MHz, s.throttled ? 1 : 0, s.item.nodes);
}

}  // namespace

std::vector<Sample> read_samples(const std::string& path) {
  int version = 0;
  return read_samples_file(path, version);
}

SampleLog::SampleLog(std::string path) : path_(std::move(path)) {
  const bool exists = std::filesystem::exists(path_) && std::filesystem::file_size(path_) > 0;
  int version = kCurrentVersion;
  if (exists) samples_ = read_samples_file(path_, version);
  if (version != kCurrentVersion) {
    // Upgrade in place (write a copy, then rename over) so that every row has the same columns.
    const std::string tmp = path_ + ".upgrade";
    {
      std::ofstream up(tmp, std::ios::trunc);
      up << sample_csv_header() << "\n";
      for (const auto& s : samples_) up << csv_row(s);
      if (!up) throw_input(Location{.file = tmp}, "cannot write the upgraded samples file");
    }
    std::filesystem::rename(tmp, path_);
  }
  for (const auto& s : samples_) keys_.insert(s.item.key());
  out_.open(path_, std::ios::app);
  if (!out_) throw_input(Location{.file = path_}, "cannot open the samples file for appending");
  if (!exists) out_ << sample_csv_header() << "\n" << std::flush;
}

bool SampleLog::done(const BenchItem& item) const { return keys_.count(item.key()) > 0; }

void SampleLog::append(const Sample& s) {
  out_ << csv_row(s) << std::flush;
  samples_.push_back(s);
  keys_.insert(s.item.key());
}

FolderLock::FolderLock(const std::string& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0)
    throw_input(Location{.file = dir}, fmt::format("cannot open the calibration folder: {}", std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw_input(Location{.file = dir},
                  "another llmsim calibrate is writing to this folder (it holds the folder's lock); wait for it to "
                  "finish, or give another folder");
    throw_input(Location{.file = dir}, fmt::format("cannot lock the calibration folder: {}", std::strerror(err)));
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

std::vector<Sample> unique_samples(const std::vector<Sample>& samples, std::size_t& dropped) {
  std::vector<Sample> out;
  out.reserve(samples.size());
  std::set<std::string> seen;
  dropped = 0;
  for (const auto& s : samples) {
    if (seen.insert(s.item.key()).second)
      out.push_back(s);
    else
      ++dropped;
  }
  return out;
}

}  // namespace llmsim::calibrate
