// Run settings from flags and TOML share one table: same names, same rules, located errors.
#include <doctest/doctest.h>

#include "test_util.h"

#include "llmsim/run/run_config.h"

namespace sim = llmsim::sim;

namespace {
using llmsim::test::write_temp;
constexpr auto caught = [](auto&& f) { return llmsim::test::error_of(f); };
void set(sim::RunRequest& r, const std::string& k, const std::string& v) {
  sim::apply_setting(r, k, v, llmsim::Location{.key = "--" + k}, llmsim::ErrorKind::Usage);
}
}  // namespace

TEST_CASE("settings fill the run spec and imply the workload") {
  sim::RunRequest r;
  set(r, "tp", "4");
  set(r, "micro-batch", "2");
  set(r, "recompute", "selective");
  set(r, "zero-stage", "3");
  set(r, "sequence-parallel", "true");
  CHECK(r.run.par.tp == 4);
  CHECK(r.run.train.micro_batch == 2);
  CHECK(r.run.train.recompute == sim::Recompute::Selective);
  CHECK(r.run.train.zero_stage == 3);
  CHECK(r.run.par.sequence_parallel);
  CHECK(r.run.workload == sim::Workload::Pretrain);
  set(r, "lora-rank", "16");
  CHECK(r.run.train.finetune == sim::FinetuneKind::Lora);
  CHECK(r.run.workload == sim::Workload::Finetune);
  sim::RunRequest q;
  set(q, "qlora", "true");
  CHECK(q.run.train.finetune == sim::FinetuneKind::Qlora);
  CHECK(q.run.train.lora_rank == 64);
  sim::RunRequest i;
  set(i, "batch", "32");
  CHECK(i.run.workload == sim::Workload::Inference);
  set(i, "framework", "megatron-lm");  // measured-run alias
  CHECK(i.run.train.framework == sim::Framework::Megatron);
  CHECK(i.run.train.attn_kernel == llmsim::AttentionKernel::Fa2);
  set(i, "attn-kernel", "fa1");  // training and inference alike
  CHECK(i.run.train.attn_kernel == llmsim::AttentionKernel::Fa1);
  CHECK(i.run.infer.attn_kernel == llmsim::AttentionKernel::Fa1);
}

TEST_CASE("bad values name the flag, the value and the rule") {
  sim::RunRequest r;
  auto e = caught([&] { set(r, "tp", "-2"); });
  CHECK(e.kind() == llmsim::ErrorKind::Usage);
  CHECK(std::string(e.what()) == "--tp: tp = '-2': must be > 0");
  e = caught([&] { set(r, "micro-batch", "0"); });
  CHECK(std::string(e.what()).find("must be > 0") != std::string::npos);
  e = caught([&] { set(r, "seq-len", "4k"); });
  CHECK(std::string(e.what()).find("must be an integer") != std::string::npos);
  e = caught([&] { set(r, "recompute", "ful"); });
  CHECK(std::string(e.what()).find("did you mean 'full'") != std::string::npos);
  e = caught([&] { set(r, "zero-stage", "4"); });
  CHECK(std::string(e.what()).find("must be one of 0, 1, 2, 3") != std::string::npos);
  e = caught([&] { set(r, "attn-kernel", "fa4"); });
  CHECK(std::string(e.what()).find("must be one of fa2, fa1, fa3") != std::string::npos);
  e = caught([&] { set(r, "lora-targets", "q,vv"); });
  CHECK(std::string(e.what()).find("'vv'") != std::string::npos);
}

TEST_CASE("run TOML: same names; unknown key and bad value located by file:line") {
  const auto good =
      write_temp("good.toml", "model = \"llama2-7b\"\ntp = 2\nflash-attn = false\nlora-targets = [\"q\", \"v\"]\n");
  sim::RunRequest r;
  sim::apply_run_toml(r, good);
  CHECK(r.model == "llama2-7b");
  CHECK(r.run.par.tp == 2);
  CHECK_FALSE(r.run.train.flash_attn);
  CHECK(r.run.train.lora_targets == std::vector<std::string>{"q", "v"});

  const auto typo = write_temp("typo.toml", "model = \"llama2-7b\"\n\nmicro_bach = 2\n");
  auto e = caught([&] {
    sim::RunRequest x;
    sim::apply_run_toml(x, typo);
  });
  CHECK(e.kind() == llmsim::ErrorKind::Input);
  CHECK(e.where().line == 3);
  CHECK(std::string(e.what()).find("did you mean 'micro-batch'") != std::string::npos);

  const auto neg = write_temp("neg.toml", "seq-len = -1\n");
  e = caught([&] {
    sim::RunRequest x;
    sim::apply_run_toml(x, neg);
  });
  CHECK(e.where().line == 1);
  CHECK(std::string(e.what()).find("must be > 0") != std::string::npos);
}
