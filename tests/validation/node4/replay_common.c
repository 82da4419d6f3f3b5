/* The node4 replays' shared parts (replay.h). */
#include "replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_cols.h"
#include "proc.h"
#include "readfile.h"
#include "tap.h"

const char *rp_parplan, *rp_src;

js_val *rp_json(const char *cmd, char **args, int n, int *status)
{
    char *argv[96];
    int k = 0;
    argv[k++] = (char *)rp_parplan;
    argv[k++] = (char *)cmd;
    for (int i = 0; i < n && k < 90; i++) argv[k++] = args[i];
    argv[k++] = "--json";
    argv[k++] = "-q";
    argv[k] = NULL;
    tc_proc r;
    tc_run(argv, &r);
    *status = r.status;
    char err[128];
    js_val *v = (r.status == 0 || r.status == 1) ? js_parse(r.out, err, sizeof err) : NULL;
    if (!v) tap_diag("%s failed (exit %d): %.300s", cmd, r.status, r.err);
    tc_proc_result_free(&r);
    return v;
}

void acc(err_acc *a, const char *name, double e)
{
    a->sum += fabs(e);
    a->n++;
    if (fabs(e) > fabs(a->worst)) {
        a->worst = e;
        snprintf(a->worst_name, sizeof a->worst_name, "%s", name);
    }
}

double mape(const err_acc *a) { return a->n ? 100 * a->sum / a->n : NAN; }

js_val *rp_fsdp_check(const rp_fsdp_run *r, char *cmd, size_t cn)
{
    char model[512], sg[16], sgb[16], smbs[16], sseq[16], srep[16], stp[16], slay[16];
    snprintf(model, sizeof model, "%s", !strcmp(r->flavor, "8B") ? "llama3-8b" : "");
    if (!model[0]) snprintf(model, sizeof model, "%s/tests/data/fsdp/models/llama-3.2-3b.yaml", rp_src);
    int tp = r->tp > 1 ? r->tp : 1, accum = r->accum > 1 ? r->accum : 1;
    snprintf(sg, sizeof sg, "%d", r->gpus);
    snprintf(sgb, sizeof sgb, "%d", r->gpus / tp * r->mbs * accum);
    snprintf(smbs, sizeof smbs, "%d", r->mbs);
    snprintf(sseq, sizeof sseq, "%d", r->seq);
    snprintf(srep, sizeof srep, "%d", r->replicate);
    snprintf(stp, sizeof stp, "%d", tp);
    char *args[40] = {"--framework", "fsdp", "--gpu", (char *)r->gpu, "--gpus", sg, "--gpus-per-node", sg,
                      "--model", model, "--seq", sseq, "--gbs", sgb, "--mbs", smbs,
                      "--zero", r->reshard ? "3" : "2", "--recompute", (char *)r->ac};
    int n = 20;
    if (r->replicate > 1) args[n++] = "--replicate", args[n++] = srep;
    if (tp > 1) args[n++] = "--tp", args[n++] = stp;
    if (r->compile) args[n++] = "--compile";
    if (r->expandable) args[n++] = "--expandable-segments";
    if (r->layers > 0) {
        snprintf(slay, sizeof slay, "%d", r->layers);
        args[n++] = "--layers", args[n++] = slay;
    }
    if (r->loss_bf16) args[n++] = "--loss", args[n++] = "bf16";
    if (r->keep_logits) args[n++] = "--keep-logits";
    args[n++] = "--repeat-kv"; /* train.py's model repeats K and V (its runs here predate --enable-gqa) */
    size_t k = (size_t)snprintf(cmd, cn, "parplan check");
    for (int i = 0; i < n && k < cn; i++)
        k += (size_t)snprintf(cmd + k, cn - k, " %s", strncmp(args[i], rp_src, strlen(rp_src)) ? args[i]
                                                                                              : args[i] + strlen(rp_src) + 1);
    int st;
    return rp_json("check", args, n, &st);
}

bool table_read(table *t, const char *rel)
{
    memset(t, 0, sizeof *t);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", rp_src, rel);
    t->text = tc_read_file(path, NULL);
    if (!t->text) return false;
    char *p = t->text;
    bool hdr = false;
    while (*p && t->nrows < MAXROWS) {
        char *line = p, *nl = strchr(p, '\n');
        if (nl) *nl = 0, p = nl + 1;
        else p += strlen(p);
        if (!line[0] || line[0] == '#') continue;
        if (!hdr) {
            t->nh = split_csv(line, t->hdr, MAXCOL);
            hdr = true;
            continue;
        }
        int k = split_csv(line, t->row[t->nrows], MAXCOL);
        for (; k < MAXCOL; k++) t->row[t->nrows][k] = "";
        t->nrows++;
    }
    return hdr;
}

void table_free(table *t)
{
    if (!t) return;
    free(t->text);
    t->text = NULL;
}

const char *cell(const table *t, int r, const char *name)
{
    int i = col_index((char **)t->hdr, t->nh, name);
    return i >= 0 ? t->row[r][i] : "";
}

rp_fsdp_run fsdp_run_of(const table *t, int r, const char *gpu)
{
    const char *tp = cell(t, r, "tp"), *accum = cell(t, r, "accum"), *flavor = cell(t, r, "flavor");
    /* the flavor's blocks (tools/fsdp/train.py FLAVORS: 8B 32, 3B 28); a run with fewer states them */
    int layers = atoi(cell(t, r, "layers")), whole = !strcmp(flavor, "8B") ? 32 : 28;
    return (rp_fsdp_run){gpu, flavor, cell(t, r, "ac"), atoi(cell(t, r, "gpus")),
                         atoi(cell(t, r, "mbs")), atoi(cell(t, r, "seq")), atoi(cell(t, r, "replicate")),
                         tp[0] ? atoi(tp) : 1, accum[0] ? atoi(accum) : 1,
                         strcmp(cell(t, r, "reshard_after_forward"), "false") != 0,
                         !strcmp(cell(t, r, "compile"), "1"), strcmp(cell(t, r, "alloc"), "default") != 0,
                         layers > 0 && layers != whole ? layers : 0, !strcmp(cell(t, r, "loss_kind"), "bf16"),
                         !strcmp(cell(t, r, "keep_logits"), "1")};
}
