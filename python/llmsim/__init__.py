"""llmsim from Python.

Every command of the llmsim executable (but calibrate) runs in this process through the same code
(python/module.cpp over cli/llmsim_app.h) and returns its result document, the record `--json` writes
(docs/output-schema.md), as Python objects: dicts, lists, numbers, strings. A figure is a dict
{"value", "unit", "low", "high"}; `value(doc["step_time_s"])` reads one.

Keyword arguments are the command's flags: `zero_stage=3` is `--zero-stage 3`, `flash_attn=True` is
`--flash-attn` and `flash_attn=False` `--no-flash-attn`, a list is written comma-separated, None is left out.

    import llmsim
    r = llmsim.train(model="llama2-7b", system="a800-nvlink", gpus=8, zero_stage=3, seq_len=512, micro_batch=4)
    r["verdict"]["text"], llmsim.value(r["step_time_s"])

A run that does not fit or cannot run as given still returns its document (`doc["valid"]`, `doc["fits"]`,
`doc["verdict"]`), as the CLI prints it and exits 1; input the CLI refuses raises llmsim.Error with the
CLI's exit code and message. docs/python.md has a longer example.
"""

import json
import os
import sys

from . import _llmsim

__version__ = _llmsim.__version__
__all__ = [
    "Error", "run", "value", "train", "memory", "infer", "serve", "search_train", "plan_train", "plan_serve",
    "validate", "show_model", "show_system", "list_models", "list_systems", "list_frameworks",
]


def _installed_presets():
    """<prefix>/share/llmsim beside an installed package (<prefix>/lib/python3/dist-packages/llmsim)."""
    here = os.path.dirname(os.path.abspath(__file__))
    share = os.path.join(here, os.pardir, os.pardir, os.pardir, os.pardir, "share", "llmsim")
    return os.path.normpath(share) if os.path.isdir(os.path.join(share, "hardware")) else None


# The presets an installed package ships with, unless LLMSIM_DATA_DIR names others (a build folder's
# module uses the source tree's data/, as the executable there does).
_PRESETS = _installed_presets()
if "LLMSIM_DATA_DIR" not in os.environ and _PRESETS:
    os.environ["LLMSIM_DATA_DIR"] = _PRESETS


class Error(Exception):
    """Input the CLI refused: `code` is its exit code (2 usage, 3 bad input, 4 not found, 6 empty search
    space, 7 rows breaking the schema, 70 internal; docs/robustness.md), `message` what it printed."""

    def __init__(self, code, message):
        super().__init__(message.strip() or "llmsim exited with code %d" % code)
        self.code = code
        self.message = message


def run(*args):
    """Runs `llmsim ARGS...` in this process; returns (exit code, stdout, stderr) as strings."""
    code, out, err = _llmsim.run([str(a) for a in args])
    return code, out.decode("utf-8"), err.decode("utf-8")


def value(figure):
    """The value of a figure ({"value", "unit", ...}); a number is returned as it is."""
    return figure["value"] if isinstance(figure, dict) else figure


def _flags(options):
    words = []
    for key, v in options.items():
        if v is None:
            continue
        flag = "--" + key.replace("_", "-")
        if v is True:
            words.append(flag)
        elif v is False:
            words.append("--no-" + key.replace("_", "-"))
        elif isinstance(v, (list, tuple)):
            words += [flag, ",".join(str(x) for x in v)]
        else:
            words += [flag, str(v)]
    return words


# Exit codes with a document on stdout: 0, and 1 (does not fit, infeasible, a deadline or SLO not met,
# validate's --max-mape exceeded).
_DOCUMENT_CODES = (0, 1)


def _document(words, options):
    code, out, err = run(*(list(words) + _flags(options) + ["--json", "-"]))
    if code not in _DOCUMENT_CODES or not out.strip():
        raise Error(code, err)
    # What the CLI logs on stderr (notes, where files went, a long plan's progress), as the CLI would show it.
    if err:
        sys.stderr.write(err)
    return json.loads(out)


def train(**options):
    """`llmsim train`: a training or fine-tuning step (docs/output-schema.md, "train")."""
    return _document(["train"], options)


def memory(**options):
    """`llmsim memory`: the memory model's per-GPU peak and what would make it fit."""
    return _document(["memory"], options)


def infer(**options):
    """`llmsim infer`: fixed-batch inference (TTFT, TPOT, throughput)."""
    return _document(["infer"], options)


def serve(**options):
    """`llmsim serve`: an engine serving a request stream (latency distributions, goodput)."""
    return _document(["serve"], options)


def search_train(**options):
    """`llmsim search train`: the training configurations of a space, ranked."""
    return _document(["search", "train"], options)


def plan_train(**options):
    """`llmsim plan train`: the fewest GPUs that train `tokens` within `deadline`."""
    return _document(["plan", "train"], options)


def plan_serve(**options):
    """`llmsim plan serve`: the cheapest serving setup that meets the SLOs at a rate."""
    return _document(["plan", "serve"], options)


def validate(*files, **options):
    """`llmsim validate FILES`: measured runs against their predictions."""
    return _document(["validate"] + [str(f) for f in files], options)


def show_model(name, **options):
    """`llmsim show model NAME`: a model preset or config.json, resolved, with its parameter counts."""
    return _document(["show", "model", name], options)


def show_system(name, **options):
    """`llmsim show system NAME`: a system preset or TOML, resolved."""
    return _document(["show", "system", name], options)


def list_models(**options):
    """`llmsim list models`."""
    return _document(["list", "models"], options)


def list_systems(**options):
    """`llmsim list systems`."""
    return _document(["list", "systems"], options)


def list_frameworks(**options):
    """`llmsim list frameworks`."""
    return _document(["list", "frameworks"], options)
