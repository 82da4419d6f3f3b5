#!/usr/bin/env python3
"""The rows of a `parplan plan --framework fsdp --json` answer as run_fsdp.sh configs (tools/fsdp/
configs.csv columns plus tp, alloc, compile, accum), so that plan --probe's top K can be launched
with tools/fsdp/train.py and its ranking checked against the measured steps.

    python3 tools/node4/plan_to_fsdp.py PLAN.json FLAVOR [K] > configs.csv

FLAVOR is train.py's flavor of the planned model (8B, 3B). A row train.py cannot run (pipeline or
context parallelism, offload, ZeRO below 2) is left out with a comment line saying why."""
import json
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    plan = json.load(open(sys.argv[1]))
    flavor = sys.argv[2]
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    gpus, gbs, seq = plan["gpus"], plan["gbs"], plan["seq"]
    print("name,gpus,flavor,mbs,seq,ac,reshard_after_forward,optimizer,replicate,expect,tp,alloc,compile,accum")
    for i, c in enumerate(plan["candidates"][:k], 1):
        why = []
        if c["pp"] > 1 or c["cp"] > 1 or c["vpp"] > 1:
            why.append("pipeline or context parallelism")
        if c["offload"] != "none":
            why.append("offload")
        if c["zero"] not in (2, 3):
            why.append(f"zero {c['zero']}")
        if c.get("recompute_layers"):
            why.append("recompute of some layers")
        ranks = c["dp"] * c["mbs"]
        if gbs % ranks:
            why.append(f"gbs {gbs} not a multiple of dp x mbs {ranks}")
        p = c.get("probe") or {}
        print(f"# #{i}: model {p.get('model_step_time_s', c['step_time_s'])} s, "
              f"{'probe' if p.get('measured') else 'model'} {c['step_time_s']} s, "
              f"need {c['need_bytes'] / 2**30:.1f} GiB")
        if why:
            print(f"# #{i} not launched: {', '.join(why)}")
            continue
        raf = "true" if c["zero"] == 3 else "false"
        name = f"p{i}_tp{c['tp']}_b{c['mbs']}_z{c['zero']}_{c['recompute']}"
        print(f"{name},{gpus},{flavor},{c['mbs']},{seq},{c['recompute']},{raf},fused,{c['replicate']},"
              f"fit,{c['tp']},expandable,0,{gbs // ranks}")


if __name__ == "__main__":
    main()
