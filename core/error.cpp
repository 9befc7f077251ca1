#include "llmsim/core/error.h"

namespace llmsim {

std::string Location::to_string() const {
  std::string s = file;
  if (!file.empty() && line > 0) {
    s += ":" + std::to_string(line);
    if (column > 0) s += ":" + std::to_string(column);
  }
  if (!key.empty()) s += (s.empty() ? "" : ": ") + key;
  return s;
}

static std::string compose(const Location& where, const std::string& message) {
  const std::string loc = where.to_string();
  return loc.empty() ? message : loc + ": " + message;
}

Error::Error(ErrorKind kind, Location where, std::string message)
    : std::runtime_error(compose(where, message)),
      kind_(kind),
      where_(std::move(where)),
      message_(std::move(message)) {}

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage: return 2;
    case ErrorKind::Input: return 3;
    case ErrorKind::NotFound: return 4;
    case ErrorKind::NoDevice: return 5;
    case ErrorKind::Internal: return 70;
  }
  return 70;
}

void throw_input(const Location& where, const std::string& message) { throw Error(ErrorKind::Input, where, message); }
void throw_usage(const std::string& flag, const std::string& message) {
  throw Error(ErrorKind::Usage, Location{.key = flag}, message);
}
void throw_not_found(const Location& where, const std::string& message) {
  throw Error(ErrorKind::NotFound, where, message);
}

}  // namespace llmsim
