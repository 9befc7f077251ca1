#pragma once
// The document of `llmsim validate` (docs/output-schema.md, "validate"): the files read, the files that could
// not be read, every row as predicted (or in error, or unsupported, with its reason) and the summaries by
// workload, metric, system, source, framework and feature. Built here, in the library, from the validation's
// records, so that the JSON, the CSV and the HTML report read one record.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/validate/honest_loso.h"
#include "llmsim/validate/validation.h"

namespace llmsim::report {

// A file that could not be read at all (the other files still ran): its path, the exit code its error
// maps to and the message with its location.
struct UnreadFile {
  std::string file;
  int exit_code = 0;
  std::string message;
};

// One summary group: rows, errors, coverage of the bands, the worst rows.
nlohmann::json group_stats_json(const sim::GroupStats& g);

// `refits`: under honest leave-one-source-out (`validate --loso`), each fitted constant as refitted without each
// source, written as "honest_loso": {"refits": [...]}; null otherwise (no such key).
nlohmann::json validate_document(const std::vector<std::string>& files, const std::vector<UnreadFile>& unread,
                                 const std::vector<sim::ValidationRow>& rows, const sim::ValidationSummary& summary,
                                 const std::vector<sim::ConstantRefit>* refits = nullptr);

}  // namespace llmsim::report
