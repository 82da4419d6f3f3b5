/* What the replays of the 4-GPU node runs share (replay.c: 4 x H200; replay_h100.c: 4 x H100):
 * parplan run as a user would, its JSON answer, error accumulators, and the check that a row of an
 * FSDP2 runs table states with CLI flags. */
#ifndef NODE4_REPLAY_H
#define NODE4_REPLAY_H

#include <stdbool.h>

#include "jscan.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)
#define MAXCOL 64

extern const char *rp_parplan, *rp_src; /* the binary under test, the source tree */

/* `parplan <cmd> ARGS --json -q`: its JSON (NULL when it failed; *status its exit status). */
js_val *rp_json(const char *cmd, char **args, int n, int *status);

typedef struct {
    double sum, worst;
    int n;
    char worst_name[96];
} err_acc;
void acc(err_acc *a, const char *name, double e);
double mape(const err_acc *a);

/* One FSDP2 run as the CLI states it: parplan check --framework fsdp --gpu GPU --gpus G
 * --gpus-per-node G --model llama3-8b|tests/data/fsdp/models/llama-3.2-3b.yaml --seq S
 * --gbs G/tp x mbs x accum --mbs B --zero 3|2 --recompute AC [--replicate R] [--tp T] [--compile]
 * [--expandable-segments] [--layers N] [--loss bf16] [--keep-logits]. The command is written into cmd (for the test's output). */
typedef struct {
    const char *gpu, *flavor, *ac;
    int gpus, mbs, seq, replicate, tp, accum;
    bool reshard, compile, expandable;
    int layers;              /* the run's blocks where it cut the flavor's (train.py --layers), else 0 */
    bool loss_bf16, keep_logits; /* train.py --loss bf16, --keep-logits (parplan's same flags) */
} rp_fsdp_run;
js_val *rp_fsdp_check(const rp_fsdp_run *r, char *cmd, size_t n);

/* A comma-separated table read whole (rows under MAXROWS; '#' lines skipped): its header and the
 * cells of each row, a row's missing cells "". table_read's path is under the source tree; false
 * when the file cannot be read or has no header. table_free accepts a table never read. */
#define MAXROWS 128
typedef struct {
    char *text;
    char *hdr[MAXCOL];
    int nh;
    char *row[MAXROWS][MAXCOL];
    int nrows;
} table;
bool table_read(table *t, const char *rel);
void table_free(table *t);
/* The cell of row r in the column named name, "" where the table has no such column. */
const char *cell(const table *t, int r, const char *name);
/* Row r of an FSDP2 runs table of tools/fsdp/parse_runs.py as the CLI states it, on gpu. */
rp_fsdp_run fsdp_run_of(const table *t, int r, const char *gpu);

#endif
