#include "llmsim/report/validate_document.h"

#include "llmsim/report/report.h"

namespace llmsim::report {

nlohmann::json group_stats_json(const sim::GroupStats& g) {
  auto worst = nlohmann::json::array();
  for (const auto& w : g.worst)
    worst.push_back({{"run_id", w.run_id}, {"metric", w.metric}, {"error_pct", w.error_pct}});
  return {{"key", g.key},
          {"rows", g.rows},
          {"count", g.count},
          {"median_abs_pct", g.median_abs_pct},
          {"mape", g.mape},
          {"mean_pct", g.mean_pct},
          {"in_band", g.in_band},
          {"in_band_fraction", g.in_band_fraction()},
          {"fits_agree", g.fits_agree},
          {"fits_total", g.fits_total},
          {"unsupported", g.unsupported},
          {"errors", g.errors},
          {"worst", worst}};
}

nlohmann::json validate_document(const std::vector<std::string>& files, const std::vector<UnreadFile>& unread,
                                 const std::vector<sim::ValidationRow>& rows, const sim::ValidationSummary& summary,
                                 const std::vector<sim::ConstantRefit>* refits) {
  nlohmann::json j = header("validate");
  j["files"] = files;
  auto fe = nlohmann::json::array();
  for (const auto& e : unread) fe.push_back({{"file", e.file}, {"exit_code", e.exit_code}, {"error", e.message}});
  j["file_errors"] = fe;
  auto a = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json x = {
        {"file", r.file},         {"line", r.line},     {"run_id", r.run_id},       {"workload", r.workload},
        {"metric", r.metric},     {"system", r.system}, {"framework", r.framework}, {"profile", r.framework_profile},
        {"measured", r.measured}, {"status", r.status}, {"note", r.note},           {"features", r.features},
        {"defaults", r.defaults}, {"source", r.source}};
    if (r.is_error()) x["error_column"] = r.error_column;
    if (r.ok()) {
      x["predicted"] = r.predicted;
      x["low"] = r.low;
      x["high"] = r.high;
      x["error_pct"] = r.error_pct;
    }
    a.push_back(std::move(x));
  }
  j["rows"] = a;
  nlohmann::json sum;
  sum["overall"] = group_stats_json(summary.overall);
  for (const auto& g : summary.groupings) {
    auto v = nlohmann::json::array();
    for (const auto& x : g.groups) v.push_back(group_stats_json(x));
    sum["by_" + g.by] = v;
  }
  j["summary"] = sum;
  if (refits) {
    // What the table's "honest leave-one-source-out" lines say: each constant's fit on every source and the
    // range of its fits without one (rows 0: nothing to fit, the profile's value stands).
    auto a = nlohmann::json::array();
    for (const auto& r : *refits)
      a.push_back({{"key", r.key},
                   {"rows", r.rows},
                   {"all_sources", r.all_sources},
                   {"low", r.low},
                   {"high", r.high},
                   {"sources_moved", r.sources_moved},
                   {"sources_kept", r.sources_kept}});
    j["honest_loso"] = {{"refits", a}};
  }
  return j;
}

}  // namespace llmsim::report
