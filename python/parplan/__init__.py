"""parplan: the fastest parallel layout of a transformer on your GPUs, from Python.

    import parplan
    best = parplan.plan(model="llama3-70b", gpu="h100-sxm", gpus=64)
    run = parplan.check(model="llama3-8b", gpu="h100-sxm", gpus=8, tp=2, dist_opt=True)
    parplan.estimate(model="llama3-8b", gpu="h100-sxm", gpus=64, tokens=1e12, price_per_gpu_hour=3)
    parplan.models()

Each function takes the command's long options as keyword arguments (gpus_per_node=8 for
--gpus-per-node 8; True for a switch such as dist_opt=True; a list or tuple for a comma list such
as gpu=["h100-sxm", "h200"]) and returns the document `parplan CMD ... --json` prints, as a dict.
The calls run the C library in this process (src/pyapi.c), not a subprocess. Bad input raises
parplan.Error (a ValueError) with the CLI's one-line message; a layout that does not fit is an
answer (its "fits" is False), not an error. Calls are serialised (a lock): the commands write to
the process's standard streams, which are captured for each call.
"""
import ctypes
import json
import os
import threading

__all__ = ["Error", "plan", "check", "estimate", "launch", "models", "run"]
__version__ = "0.1.0"

_here = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_lib = None


class Error(ValueError):
    """Bad input: the CLI's one-line message (without the "parplan: " prefix)."""

    def __init__(self, message, status=2, stderr=""):
        super().__init__(message)
        self.status = status
        self.stderr = stderr


def _load():
    global _lib
    if _lib is not None:
        return _lib
    # the catalog and recipes shipped with the package, unless the caller chose others
    data = os.path.join(_here, "data")
    if os.path.isdir(os.path.join(data, "models.d")):
        os.environ.setdefault("PARPLAN_MODELS_DIR", os.path.join(data, "models.d"))
    names = [n for n in os.listdir(_here) if n.startswith("_parplan") and n.endswith((".so", ".dylib"))]
    if not names:
        raise ImportError("parplan: the compiled module _parplan is missing from %s" % _here)
    lib = ctypes.CDLL(os.path.join(_here, names[0]))
    lib.pp_py_call.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_void_p),
                               ctypes.POINTER(ctypes.c_void_p)]
    lib.pp_py_call.restype = ctypes.c_int
    lib.pp_py_free.argtypes = [ctypes.c_void_p]
    lib.pp_py_free.restype = None
    _lib = lib
    return lib


def _argv(command, kwargs):
    """The CLI's words for a command and its keyword arguments."""
    words = ["parplan", command]
    for key, value in kwargs.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, (list, tuple)):
            words += [flag, ",".join(str(v) for v in value)]
        else:
            words += [flag, str(value)]
    return words


def run(command, *positional, **kwargs):
    """Run `parplan COMMAND [POSITIONAL...] --OPTIONS` in-process: (exit status, stdout, stderr)."""
    lib = _load()
    words = _argv(command, kwargs)
    words[2:2] = [str(p) for p in positional]
    arr = (ctypes.c_char_p * len(words))(*[w.encode() for w in words])
    out, err = ctypes.c_void_p(), ctypes.c_void_p()
    with _lock:
        status = lib.pp_py_call(len(words), arr, ctypes.byref(out), ctypes.byref(err))
    try:
        o = ctypes.string_at(out.value).decode() if out.value else ""
        e = ctypes.string_at(err.value).decode() if err.value else ""
    finally:
        lib.pp_py_free(out.value)
        lib.pp_py_free(err.value)
    if status < 0:
        raise MemoryError("parplan: could not capture the output")
    return status, o, e


def _document(command, kwargs, json_out=True):
    args = dict(kwargs)
    if json_out:
        args["json"] = True
    elif args.pop("json", False):
        raise Error("json=True: %s gives its document as text here" % command)
    args.setdefault("quiet", True)
    status, out, err = run(command, **args)
    if status == 2 or (status != 0 and not out.strip()):
        line = err.strip().split("\n")[-1] if err.strip() else "parplan %s failed (status %d)" % (command, status)
        if line.startswith("parplan: "):
            line = line[len("parplan: "):]
        raise Error(line, status, err)
    return json.loads(out) if json_out else out


def plan(**kwargs):
    """parplan plan: the ranked layouts (or, with gpu=[...] / gpus=[...] and tokens=T, what to rent)."""
    return _document("plan", kwargs)


def check(**kwargs):
    """parplan check: memory per stage, fits or not (with remedies), predicted step time."""
    return _document("check", kwargs)


def estimate(**kwargs):
    """parplan estimate: days, GPU-hours and cost to train tokens=T."""
    return _document("estimate", kwargs)


def launch(**kwargs):
    """parplan launch: the launch config (format=...) as text; with output=DIR it writes the files
    there and returns the JSON document launch --json -o DIR prints."""
    return _document("launch", kwargs, json_out="output" in kwargs)


def models(**kwargs):
    """parplan models: the catalog (or one model, model=NAME|FILE)."""
    return _document("models", kwargs)
