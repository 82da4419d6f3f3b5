"""KempnerForge's scripts/train.py with its checkpoint saves made no-ops, run as __main__.

scripts/train.py saves unconditionally after the last step (train.py:1061-1069 at 5666d0d16153):
9-18 GB per run that the short measuring runs of tools/kf/run_kf.sh neither need nor have the
disk time for. The step loop, its memory and its timing are untouched.
    torchrun ... tools/kf/train_nosave.py <KempnerForge>/scripts/train.py <config.toml> [overrides]
"""
import runpy
import sys

from kempnerforge.checkpoint import manager

manager.CheckpointManager.save = lambda self, *a, **k: None
manager.CheckpointManager.wait = lambda self, *a, **k: None
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
