"""KempnerForge's scripts/train.py with its checkpoint saves made no-ops, run as __main__.

scripts/train.py saves unconditionally after the last step (train.py:1061-1069 at 5666d0d16153):
9-18 GB per run that the short measuring runs of tools/kf/run_kf.sh neither need nor have the
disk time for. The step loop, its memory and its timing are untouched.
    torchrun ... tools/kf/train_nosave.py <KempnerForge>/scripts/train.py <config.toml> [overrides]

KF_NO_AUX=1 (a diagnostic, not KempnerForge's stack): the routers' auxiliary loss is left out of
the loss (Transformer.get_moe_aux_loss returns a constant zero), so no gradient reaches the
routers' softmax through it (train.py:840-843 adds it unconditionally, whatever its weight).
"""
import os
import runpy
import sys

from kempnerforge.checkpoint import manager

manager.CheckpointManager.save = lambda self, *a, **k: None
manager.CheckpointManager.wait = lambda self, *a, **k: None
if os.environ.get("KF_NO_AUX") == "1":
    import torch
    from kempnerforge.model import transformer

    transformer.Transformer.get_moe_aux_loss = lambda self: torch.zeros((), device="cuda")
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
