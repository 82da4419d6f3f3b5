#!/usr/bin/env python3
"""No branch on the framework in the cost models (TAP on stdout; exit status 1 when one is found).

  cost_branches.py SOURCE_ROOT

What a framework does (its bytes per parameter, its kernels, its loss, FSDP2's per-block
sharding) is a row of planner/framework.c (pp_frameworks), and a stack that differs from it is a
recipe or a flag. The cost models read those fields; a comparison with a framework's enum value in
planner/cost/ would put a framework fact back into code. Found: `== PP_FW_x`, `!= PP_FW_x`,
`case PP_FW_x`, `switch (...framework...)` and `->framework ==` in the .c and .h files there. The
reference work of pp_layer_model_fwd_flops_per_token names Megatron's shapes by assignment, which
is not a branch."""
import os
import re
import sys

BRANCH = re.compile(r'[!=]=\s*PP_FW_|PP_FW_\w+\s*[!=]=|case\s+PP_FW_|switch\s*\([^)]*framework|framework\s*[!=]=')


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = os.path.join(sys.argv[1], 'planner', 'cost')
    found, files = [], 0
    for name in sorted(os.listdir(root)):
        if not name.endswith(('.c', '.h')):
            continue
        files += 1
        with open(os.path.join(root, name), errors='replace') as f:
            for i, line in enumerate(f, 1):
                if BRANCH.search(line.split('//')[0]):
                    found.append('planner/cost/%s:%d: %s' % (name, i, line.strip()))
    for x in found:
        print('# ' + x)
    ok = not found and files > 0
    print('%s 1 - no branch on the framework in planner/cost/ (%d files, %d found)'
          % ('ok' if ok else 'not ok', files, len(found)))
    print('1..1')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
