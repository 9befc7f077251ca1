"""The Python module (python/): `import llmsim` from the build tree (PYTHONPATH=<build>/python), each command
against the llmsim executable's --json (LLMSIM_EXE), errors, and repeated calls in one process."""
import json
import os
import subprocess
import unittest

import llmsim

EXE = os.environ["LLMSIM_EXE"]
# A trace whose notes the CLI logs on stderr (one request longer than llama3-70b's context).
TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "data", "traces",
                     "azure-conv-2023.csv")


def cli_json(*args):
    """The executable's document and exit code for `llmsim ARGS... --json`."""
    p = subprocess.run([EXE] + list(args) + ["--json"], capture_output=True, text=True)
    return p.returncode, json.loads(p.stdout)


# README's first command.
README_TRAIN = dict(model="llama2-7b", system="a800-nvlink", gpus=8, zero_stage=3, seq_len=512, micro_batch=4)
README_ARGS = ["--model", "llama2-7b", "--system", "a800-nvlink", "--gpus", "8", "--zero-stage", "3",
               "--seq-len", "512", "--micro-batch", "4"]


class SameAsTheCli(unittest.TestCase):
    def test_readme_train_returns_the_cli_document(self):
        rc, want = cli_json("train", *README_ARGS)
        self.assertEqual(rc, 0)
        got = llmsim.train(**README_TRAIN)
        self.assertEqual(got, want)
        self.assertTrue(got["verdict"]["ok"])
        self.assertGreater(llmsim.value(got["step_time_s"]), 0)
        self.assertEqual(got["run"]["zero-stage"], 3)

    def test_infer_serve_memory_show_match_the_cli(self):
        cases = [
            (llmsim.infer, dict(model="llama2-7b", system="a800-nvlink", batch=8, input_len=512, output_len=128),
             ["infer", "--model", "llama2-7b", "--system", "a800-nvlink", "--batch", "8", "--input-len", "512",
              "--output-len", "128"]),
            (llmsim.serve, dict(model="llama2-7b", system="a800-nvlink", engine="vllm", rate=5, requests=50),
             ["serve", "--model", "llama2-7b", "--system", "a800-nvlink", "--engine", "vllm", "--rate", "5",
              "--requests", "50"]),
            (llmsim.memory, dict(model="llama2-70b", system="rtx4090-pcie", gpus=8),
             ["memory", "--model", "llama2-70b", "--system", "rtx4090-pcie", "--gpus", "8"]),
        ]
        for fn, kwargs, args in cases:
            with self.subTest(args[0]):
                rc, want = cli_json(*args)
                self.assertEqual(fn(**kwargs), want)
        rc, want = cli_json("show", "model", "llama2-7b")
        self.assertEqual(llmsim.show_model("llama2-7b"), want)
        self.assertEqual(llmsim.show_model("llama2-7b")["params_total"], 6738415616)

    def test_switches_and_lists_become_flags(self):
        on = llmsim.train(**README_TRAIN, flash_attn=True)
        off = llmsim.train(**README_TRAIN, flash_attn=False)
        self.assertTrue(on["run"]["flash-attn"])
        self.assertFalse(off["run"]["flash-attn"])
        self.assertGreater(llmsim.value(off["step_time_s"]), llmsim.value(on["step_time_s"]))
        lora = llmsim.train(model="llama2-7b", system="a800-nvlink", gpus=1, workload="finetune", finetune="lora",
                            lora_targets=["q", "v"])
        self.assertEqual(lora["run"]["lora-targets"], ["q", "v"])


class Verdicts(unittest.TestCase):
    def test_a_run_that_does_not_fit_returns_its_document(self):
        rc, want = cli_json("memory", "--model", "llama2-70b", "--system", "rtx4090-pcie", "--gpus", "8")
        self.assertEqual(rc, 1)
        doc = llmsim.memory(model="llama2-70b", system="rtx4090-pcie", gpus=8)
        self.assertFalse(doc["fits"])
        self.assertFalse(doc["verdict"]["ok"])

    def test_an_infeasible_run_returns_its_problems(self):
        doc = llmsim.train(model="llama2-70b", system="rtx4090-pcie", gpus=8, tp=3)
        self.assertFalse(doc["valid"])
        self.assertIn("tp 3 does not divide the 64 attention heads", doc["problems"][0])


class Errors(unittest.TestCase):
    def test_bad_input_raises_with_the_cli_exit_code_and_message(self):
        with self.assertRaises(llmsim.Error) as e:
            llmsim.train(model="llama2-7b", system="a800-nvlink", gpus="x")
        self.assertEqual(e.exception.code, 2)
        self.assertIn("--gpus", str(e.exception))
        with self.assertRaises(llmsim.Error) as e:
            llmsim.train(model="no-such-model", system="a800-nvlink")
        self.assertEqual(e.exception.code, 4)
        self.assertIn("no-such-model", str(e.exception))

    def test_an_error_leaves_the_process_usable(self):
        first = llmsim.train(**README_TRAIN)
        for _ in range(3):
            with self.assertRaises(llmsim.Error):
                llmsim.train(model="llama2-7b", system="a800-nvlink", seq_len=-1)
        self.assertEqual(llmsim.train(**README_TRAIN), first)

    def test_calibrate_is_refused(self):
        with self.assertRaises(ValueError):
            llmsim.run("calibrate", "--help")

    def test_the_cli_log_goes_to_stderr(self):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            llmsim.serve(model="llama2-70b", system="dgx-h100", tp=8, trace_file=TRACE, requests=200)
        self.assertIn("llmsim: ", err.getvalue())

    def test_run_returns_the_table(self):
        code, out, err = llmsim.run("train", *README_ARGS)
        self.assertEqual(code, 0)
        self.assertIn("llmsim train: llama2-7b on a800-nvlink", out)
        self.assertIn("memory: fits", out)


if __name__ == "__main__":
    unittest.main()
