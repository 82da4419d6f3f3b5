/* What the calibration (calibrate.c) is fitted on: Megatron-LM logs parsed into pp_mlog (the
 * iteration times, the per-rank memory reports, the arguments block or the command line), each
 * log rebuilt as a run (pp_calib_run: the work, the layout and the stack it ran, its median step
 * and peak memory), and PyTorch FSDP2 runs from a table (tests/data/fsdp/runs.csv format). A log
 * that does not say what the time model needs is an error naming the missing argument, not a
 * default. See pp_calibrate.h.
 */
#include "pp_calibrate.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_margs.h"
#include "pp_memory.h"
#include "pp_yaml.h"

/* ------------------------------------------------------------------ small helpers */

static pp_status grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap) return PP_OK;
    int nc = *cap ? 2 * *cap : 16;
    while (nc < need) nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) return PP_ERR_NOMEM;
    *arr = p;
    *cap = nc;
    return PP_OK;
}

void pp_mlog_free(pp_mlog *log)
{
    if (!log) return;
    pp_margs_free(&log->args);
    free(log->iter);
    free(log->iter_ms);
    free(log->mem);
    memset(log, 0, sizeof *log);
}

const char *pp_mlog_arg(const pp_mlog *log, const char *key) { return pp_margs_get(&log->args, key); }

/* ------------------------------------------------------------------ the log */

/* The number after `label` in line [s, s+n), or error at its column. */
static pp_status number_after(const char *s, size_t n, const char *label, double *out, bool *found,
                              const char *path, int line, pp_error *err)
{
    char buf[1024];
    size_t m = n < sizeof buf - 1 ? n : sizeof buf - 1;
    memcpy(buf, s, m);
    buf[m] = 0;
    const char *p = strstr(buf, label);
    *found = p != NULL;
    if (!p) return PP_OK;
    p += strlen(label);
    char *end = NULL;
    double v = strtod(p, &end);
    if (end == p || !isfinite(v) || v < 0)
        return pp_error_set(err, PP_ERR_INPUT, path, line, (int)(p - buf) + 1, "malformed number after '%s'", label);
    *out = v;
    return PP_OK;
}

static pp_status parse_iter_line(pp_mlog *log, const char *s, size_t n, const char *path, int line, pp_error *err)
{
    double ms = 0;
    bool found = false;
    pp_status st = number_after(s, n, "elapsed time per iteration (ms):", &ms, &found, path, line, err);
    if (st || !found) return st;
    double it = 0;
    st = number_after(s, n, "iteration ", &it, &found, path, line, err);
    if (st) return st;
    if (!found || it != floor(it) || it < 1)
        return pp_error_set(err, PP_ERR_INPUT, path, line, 1, "an 'elapsed time per iteration' line without its iteration number");
    for (int i = 0; i < log->n_iter; i++)
        if (log->iter[i] == (int64_t)it) return PP_OK; /* printed again by another rank */
    int cap = log->cap_iter;
    if (grow((void **)&log->iter, &cap, log->n_iter + 1, sizeof *log->iter) ||
        grow((void **)&log->iter_ms, &log->cap_iter, log->n_iter + 1, sizeof *log->iter_ms))
        return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    log->iter[log->n_iter] = (int64_t)it;
    log->iter_ms[log->n_iter++] = ms;
    return PP_OK;
}

/* Every "[Rank N] (after K iterations) memory (MB) | allocated: a | max allocated: b | reserved: c
 * | max reserved: d" of the line (two ranks' reports sometimes share a line). */
static pp_status parse_mem_line(pp_mlog *log, const char *s, size_t n, const char *path, int line, pp_error *err)
{
    char buf[2048];
    size_t m = n < sizeof buf - 1 ? n : sizeof buf - 1;
    memcpy(buf, s, m);
    buf[m] = 0;
    char *p = buf;
    while ((p = strstr(p, "[Rank ")) != NULL) {
        char *next = strstr(p + 6, "[Rank ");
        size_t seg = next ? (size_t)(next - p) : strlen(p);
        if (!strstr(p, "memory (MB)") || (next && strstr(p, "memory (MB)") > next)) {
            p += 6;
            continue;
        }
        pp_mlog_mem r;
        memset(&r, 0, sizeof r);
        char *end = NULL;
        r.rank = strtoll(p + 6, &end, 10);
        if (end == p + 6 || *end != ']')
            return pp_error_set(err, PP_ERR_INPUT, path, line, (int)(p - buf) + 7, "malformed rank in a memory report");
        const char *a = strstr(p, "(after ");
        r.after = a ? strtoll(a + 7, NULL, 10) : 0;
        const struct { const char *label; double *v; } f[] = {
            {"| allocated:", &r.allocated_mib}, {"| max allocated:", &r.max_allocated_mib},
            {"| reserved:", &r.reserved_mib}, {"| max reserved:", &r.max_reserved_mib}};
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
            bool found = false;
            int col = (int)(p - buf);
            pp_status st = number_after(p, seg, f[i].label, f[i].v, &found, path, line, err);
            if (st) {
                err->col += col;
                return st;
            }
            if (!found)
                return pp_error_set(err, PP_ERR_INPUT, path, line, col + 1, "memory report without '%s'", f[i].label + 2);
        }
        if (grow((void **)&log->mem, &log->cap_mem, log->n_mem + 1, sizeof *log->mem))
            return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        log->mem[log->n_mem++] = r;
        p += seg;
    }
    return PP_OK;
}

pp_status pp_mlog_parse(pp_mlog *log, const char *text, size_t len, const char *path, pp_error *err)
{
    memset(log, 0, sizeof *log);
    snprintf(log->path, sizeof log->path, "%s", path ? path : "");
    /* The arguments: the one reader of Megatron arguments (megatron_args.c) finds the printed
     * block, or the command line the log records. */
    pp_margs_init(&log->args, log->path);
    pp_status st = pp_margs_parse_log(&log->args, text, len, err);
    if (st) goto fail;
    log->args_block = log->args.source == PP_MARGS_DUMP;
    /* the iteration and memory lines (outside the printed block) */
    int line = 0;
    const char *s;
    size_t n;
    for (size_t pos = 0; pp_line_next(text, len, &pos, &s, &n);) {
        line++;
        bool in_args = log->args_block && line >= log->args.line && line <= log->args.dump_last;
        if (!in_args && memchr(s, 'e', n) && n > 30) {
            char *probe = malloc(n + 1);
            if (!probe) goto nomem;
            memcpy(probe, s, n);
            probe[n] = 0;
            bool is_iter = strstr(probe, "elapsed time per iteration (ms):") != NULL;
            bool is_mem = strstr(probe, "memory (MB)") && strstr(probe, "[Rank ");
            free(probe);
            if (is_iter && (st = parse_iter_line(log, s, n, path, line, err))) goto fail;
            if (is_mem && (st = parse_mem_line(log, s, n, path, line, err))) goto fail;
        }
    }
    return PP_OK;
nomem:
    st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
fail:
    pp_mlog_free(log);
    return st;
}

/* ------------------------------------------------------------------ command-line flags */

pp_status pp_mlog_add_flags(pp_mlog *log, const char *text, size_t len, const char *path, pp_error *err)
{
    /* the script's messages name the script; its keys add to the printed block's */
    char keep[sizeof log->args.path];
    snprintf(keep, sizeof keep, "%s", log->args.path);
    snprintf(log->args.path, sizeof log->args.path, "%s", path ? path : "");
    pp_status st = pp_margs_parse_script(&log->args, text, len, err);
    snprintf(log->args.path, sizeof log->args.path, "%s", keep);
    return st;
}

pp_status pp_mlog_load(pp_mlog *log, const char *log_path, const char *args_path, pp_error *err)
{
    char *text = NULL;
    size_t len = 0;
    memset(log, 0, sizeof *log);
    pp_status st = pp_yaml_read_file(log_path, &text, &len, err);
    if (st) return st;
    st = pp_mlog_parse(log, text, len, log_path, err);
    free(text);
    if (st) return st;
    if (args_path) {
        char *at = NULL;
        size_t al = 0;
        st = pp_yaml_read_file(args_path, &at, &al, err);
        if (st == PP_OK) st = pp_mlog_add_flags(log, at, al, args_path, err);
        free(at);
    }
    if (st) pp_mlog_free(log);
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double d = *(const double *)a - *(const double *)b;
    return d < 0 ? -1 : d > 0;
}

double pp_mlog_step_ms(const pp_mlog *log, int64_t warmup, int *n_used)
{
    int n = 0;
    if (n_used) *n_used = 0;
    double *v = log->n_iter ? malloc((size_t)log->n_iter * sizeof *v) : NULL;
    if (!v) return 0;
    for (int i = 0; i < log->n_iter; i++)
        if (log->iter[i] > warmup) v[n++] = log->iter_ms[i];
    if (n_used) *n_used = n;
    double med = 0;
    if (n) {
        qsort(v, (size_t)n, sizeof v[0], cmp_double);
        med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    }
    free(v);
    return med;
}

double pp_mlog_max_alloc_mib(const pp_mlog *log, int64_t rank)
{
    double v = 0;
    int64_t after = -1;
    for (int i = 0; i < log->n_mem; i++)
        if (log->mem[i].rank == rank && log->mem[i].after >= after) {
            after = log->mem[i].after;
            v = log->mem[i].max_allocated_mib;
        }
    return v;
}

/* ------------------------------------------------------------------ runs */

pp_layout pp_calib_run_layout(const pp_calib_run *run)
{
    pp_layout l = run->layout;
    if (run->uneven) {
        l.stage_layers = run->stage_layers;
        l.stage_recompute = run->stage_recompute;
    } else {
        l.stage_layers = l.stage_recompute = NULL;
    }
    l.vstage_layers = run->vsplit ? run->vstage_layers : NULL;
    return l;
}

pp_status pp_calib_run_init(pp_calib_run *run, pp_mlog *log, const pp_gpu *gpu, pp_error *err)
{
    memset(run, 0, sizeof *run);
    const char *path = log->path;
    snprintf(run->path, sizeof run->path, "%s", path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(run->name, sizeof run->name, "%.127s", base);
    char *dot = strrchr(run->name, '.');
    if (dot && !strcmp(dot, ".log")) *dot = 0;

    /* The model, layout and stack as the one reader of Megatron arguments has them
     * (megatron_args.c); the run's own name and the time model's options are calibrate's. */
    if (log->args.source == PP_MARGS_NONE)
        return pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "the log has no 'num_layers' (neither a printed arguments "
                                                           "block nor its command line)");
    pp_margs_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    pp_status st = pp_margs_read(&log->args, cfg, err);
    if (st == PP_OK && cfg->need_vocab)
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "the log has no 'vocab_size' (neither its arguments nor its "
                                                         "tokenizer's 'padded vocab' line)");
    if (st == PP_OK && !(cfg->has & PP_MARGS_HAS_WORLD))
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "the log has no 'world_size' (neither a printed arguments "
                                                         "block nor its command line)");
    if (st) {
        free(cfg);
        return st;
    }
    pp_work *w = &run->work;
    pp_model *m = &w->model;
    *m = cfg->model;
    snprintf(m->name, sizeof m->name, "%.63s", run->name);
    snprintf(m->family, sizeof m->family, "megatron-log");

    /* cluster and batch */
    int64_t world = cfg->world_size;
    w->gpu = *gpu;
    w->gpus = world;
    int64_t gpn_def = gpu->gpus_per_node > 0 ? gpu->gpus_per_node : 8;
    if (gpn_def > world) gpn_def = world;
    w->gpus_per_node = cfg->has & PP_MARGS_HAS_GPN ? cfg->gpus_per_node : gpn_def;
    if (w->gpus_per_node > world) w->gpus_per_node = world;
    w->framework = PP_FW_MEGATRON;
    w->attention = cfg->attention;
    w->stack = cfg->stack;

    /* layout */
    pp_layout *l = &run->layout;
    *l = cfg->layout;
    l->stage_layers = l->stage_recompute = l->vstage_layers = NULL;
    if (world % (l->tp * l->pp * l->cp)) {
        free(cfg);
        return pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "world size %lld is not a multiple of tp x pp x cp = %lld",
                            (long long)world, (long long)(l->tp * l->pp * l->cp));
    }
    l->dp = world / (l->tp * l->pp * l->cp);
    w->gbs = cfg->gbs > 0 ? cfg->gbs : l->mbs * l->dp;
    run->uneven = cfg->uneven;
    if (run->uneven)
        for (int64_t i = 0; i < l->pp; i++) {
            run->stage_layers[i] = cfg->stage_layers[i];
            run->stage_recompute[i] = cfg->stage_recompute[i];
        }
    run->vsplit = cfg->vsplit;
    if (run->vsplit)
        for (int64_t k = 0; k < l->pp * l->vpp && k < PP_MAX_VSTAGES; k++) run->vstage_layers[k] = cfg->vstage_layers[k];
    pp_layout lv = pp_calib_run_layout(run);
    if ((st = pp_layout_validate(w, &lv, err))) {
        free(cfg);
        snprintf(err->file, sizeof err->file, "%s", path);
        err->line = err->col = 0;
        return st;
    }
    run->layout.dp = lv.dp;

    /* what the software overlaps and fuses (the time model's options) */
    pp_time_opts *o = &run->opts;
    pp_time_opts_default(w, o);
    o->overlap_grad_reduce = cfg->overlap_grad_reduce;
    o->overlap_param_gather = cfg->overlap_param_gather;
    o->tp_comm_overlap = cfg->stack.tp_comm_overlap;
    o->overlap_p2p = cfg->overlap_p2p_comm && l->vpp > 1;
    o->dropout = cfg->stack.hidden_dropout > 0 || cfg->stack.attention_dropout > 0;
    /* Without the fused wgrad-accumulate kernel the wgrad GEMM writes a 16-bit grad that the DDP
     * hook adds into the fp32 main_grad: 2 + 2 + 4 + 4 bytes per weight and micro-batch. */
    o->grad_accum_bytes = cfg->grad_accum_fusion ? 8.0 : 12.0;
    o->grad_reduce_bytes = cfg->grad_reduce_fp32 ? 4.0 : 2.0;
    snprintf(run->stack, sizeof run->stack, "megatron %s, %s attention", cfg->impl_name,
             pp_attention_names[w->attention]);
    free(cfg);

    /* measured */
    double ms = pp_mlog_step_ms(log, PP_CALIB_WARMUP_ITERS, &run->iters_used);
    if (!(ms > 0))
        return pp_error_set(err, PP_ERR_INPUT, path, 0, 0,
                            "no 'elapsed time per iteration' after the %d warm-up iterations (%d timed in all; out of "
                            "memory?)",
                            PP_CALIB_WARMUP_ITERS, log->n_iter);
    run->measured_step_s = ms * 1e-3;
    /* Megatron's rank order puts pipeline stages outermost: stage = rank / (world / pp). */
    run->n_stages = l->pp;
    for (int i = 0; i < log->n_mem; i++) {
        int64_t r = log->mem[i].rank;
        if (r < 0 || r >= world) continue;
        int64_t s = r / (world / l->pp);
        double mx = pp_mlog_max_alloc_mib(log, r);
        if (mx > run->stage_max_alloc_mib[s]) run->stage_max_alloc_mib[s] = mx;
    }
    return PP_OK;
}

/* ------------------------------------------------------------------ FSDP2 runs (CSV) */

#define FSDP_CSV_MAXCOL 64

/* Split one CSV line in place (double-quoted fields may hold commas and "" quotes); returns the
 * number of fields. */
static int csv_split(char *line, char **col, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        char *out = p;
        col[n++] = p;
        if (*p == '"') {
            char *r = p + 1;
            while (*r) {
                if (*r == '"' && r[1] == '"') { *out++ = '"'; r += 2; }
                else if (*r == '"') { r++; break; }
                else *out++ = *r++;
            }
            p = r;
        }
        while (*p && *p != ',' && *p != '\r' && *p != '\n') *out++ = *p++;
        bool more = *p == ',';
        *out = 0;
        if (!more) break;
        p++;
    }
    return n;
}

static pp_status csv_int(const char *path, int line, const char *name, const char *v, int64_t lo, int64_t hi,
                         int64_t *out, pp_error *err)
{
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < lo || x > hi)
        return pp_error_set(err, PP_ERR_INPUT, path, line, 0, "column %s: expected an integer in [%lld, %lld], got '%s'",
                            name, (long long)lo, (long long)hi, v);
    *out = x;
    return PP_OK;
}

pp_status pp_calib_fsdp_csv_load(const char *path, const pp_gpu *gpu, pp_calib_run **runs_out, int *n_out,
                                 pp_error *err)
{
    enum { C_NAME, C_STATUS, C_GPUS, C_REPL, C_DIM, C_LAYERS, C_HEADS, C_KV, C_FFN, C_VOCAB, C_MBS, C_SEQ, C_AC,
           C_RESHARD, C_OPT, C_STEP, C_ALLOC, C_RETRY, C_COUNT };
    static const char *const need[C_COUNT] = {"name", "status", "gpus", "replicate", "dim", "layers", "heads",
                                              "kv_heads", "ffn", "vocab", "mbs", "seq", "ac",
                                              "reshard_after_forward", "optimizer", "step_ms_median",
                                              "max_alloc_mib", "alloc_retries"};
    char *text = NULL;
    size_t len = 0;
    pp_calib_run *runs = NULL;
    int n = 0, cap = 0, ix[C_COUNT], lineno = 0, ix_gqa = -1;
    bool header = false;
    *runs_out = NULL;
    *n_out = 0;
    pp_status st = pp_yaml_read_file(path, &text, &len, err);
    if (st) return st;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        if (line[0] == '#' || line[0] == 0 || line[0] == '\r') continue;
        char *col[FSDP_CSV_MAXCOL];
        int nc = csv_split(line, col, FSDP_CSV_MAXCOL);
        if (!header) {
            for (int k = 0; k < C_COUNT; k++) {
                ix[k] = -1;
                for (int i = 0; i < nc; i++)
                    if (!strcmp(col[i], need[k])) ix[k] = i;
                if (ix[k] < 0) {
                    st = pp_error_set(err, PP_ERR_INPUT, path, lineno, 0,
                                      "not an FSDP runs table (tools/fsdp/parse_runs.py): no column '%s'", need[k]);
                    goto fail;
                }
            }
            /* optional: enable_gqa (train.py --enable-gqa); tables from before it ran K and V repeated */
            for (int i = 0; i < nc; i++)
                if (!strcmp(col[i], "enable_gqa")) ix_gqa = i;
            header = true;
            continue;
        }
        int maxix = 0;
        for (int k = 0; k < C_COUNT; k++) maxix = ix[k] > maxix ? ix[k] : maxix;
        if (nc <= maxix) {
            st = pp_error_set(err, PP_ERR_INPUT, path, lineno, 0, "%d columns, the header has more", nc);
            goto fail;
        }
        bool ok = !strcmp(col[ix[C_STATUS]], "ok"), oom = !strcmp(col[ix[C_STATUS]], "oom");
        if (!ok && !oom) continue; /* skipped, timeout, error: no verdict */
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            pp_calib_run *nr = realloc(runs, (size_t)cap * sizeof *runs);
            if (!nr) {
                st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
                goto fail;
            }
            runs = nr;
        }
        pp_calib_run *r = &runs[n];
        memset(r, 0, sizeof *r);
        snprintf(r->path, sizeof r->path, "%s", path);
        snprintf(r->name, sizeof r->name, "%.127s", col[ix[C_NAME]]);
        pp_work *w = &r->work;
        pp_model *m = &w->model;
        pp_model_init(m);
        snprintf(m->name, sizeof m->name, "%.63s", r->name);
        snprintf(m->family, sizeof m->family, "llama");
        snprintf(m->source, sizeof m->source, "%.200s (torchtitan Llama-3 shape)", path);
        int64_t v[C_COUNT];
        static const int ints[] = {C_GPUS, C_REPL, C_DIM, C_LAYERS, C_HEADS, C_KV, C_FFN, C_VOCAB, C_MBS, C_SEQ};
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
            if ((st = csv_int(path, lineno, need[ints[k]], col[ix[ints[k]]], 1, 100000000, &v[ints[k]], err)))
                goto fail;
        m->layers = v[C_LAYERS];
        m->hidden = v[C_DIM];
        m->heads = v[C_HEADS];
        m->kv_heads = v[C_KV];
        m->ffn = v[C_FFN];
        m->vocab = v[C_VOCAB];
        m->seq = v[C_SEQ];
        m->act = PP_ACT_SWIGLU;
        m->norm = PP_NORM_RMSNORM;
        m->pos = PP_POS_ROPE;
        m->bias = false;
        m->tied = false;
        m->dropout_set = true;
        if ((st = pp_model_validate(m, err))) {
            snprintf(err->file, sizeof err->file, "%s", path);
            err->line = lineno;
            goto fail;
        }
        w->gpu = *gpu;
        w->gpus = v[C_GPUS];
        w->gpus_per_node = w->gpus < gpu->gpus_per_node || gpu->gpus_per_node < 1 ? w->gpus : gpu->gpus_per_node;
        w->framework = PP_FW_FSDP;
        w->attention = PP_ATTN_FLASH;
        pp_stack_init(&w->stack);
        int opt = pp_name_lookup(pp_adam_impl_names, PP_ADAM_COUNT, col[ix[C_OPT]]);
        int ac = pp_name_lookup(pp_recompute_names, PP_RC_COUNT, col[ix[C_AC]]);
        const char *rs = col[ix[C_RESHARD]];
        if (opt < 0 || ac < 0 || (strcmp(rs, "true") && strcmp(rs, "false"))) {
            st = pp_error_set(err, PP_ERR_INPUT, path, lineno, 0,
                              "optimizer must be fused|foreach, ac none|selective|full, reshard_after_forward "
                              "true|false; got '%s', '%s', '%s'", col[ix[C_OPT]], col[ix[C_AC]], rs);
            goto fail;
        }
        w->stack.optimizer_impl = (pp_adam_impl)opt;
        /* train.py's model repeats K and V to the query heads (torchtitan to v0.2.1) unless the row ran
         * with --enable-gqa (torchtitan v0.2.2's attention) */
        w->stack.repeat_kv = !(ix_gqa >= 0 && ix_gqa < nc && !strcmp(col[ix_gqa], "1"));
        pp_stack_resolve(w);
        pp_layout *l = &r->layout;
        pp_layout_init(l);
        l->mbs = v[C_MBS];
        l->dp = w->gpus;
        w->gbs = v[C_MBS] * w->gpus; /* one micro-batch per rank and step */
        l->zero = strcmp(rs, "true") ? 2 : 3;
        l->recompute = (pp_recompute)ac;
        l->replicate = v[C_REPL] > 1 ? v[C_REPL] : 0;
        if ((st = pp_layout_validate(w, l, err))) {
            snprintf(err->file, sizeof err->file, "%s", path);
            err->line = lineno;
            goto fail;
        }
        pp_time_opts_default(w, &r->opts);
        snprintf(r->stack, sizeof r->stack, "fsdp2 torchtitan-style (eager, SDPA flash)");
        r->n_stages = 1;
        r->oom = oom;
        const char *a = col[ix[C_ALLOC]];
        r->stage_max_alloc_mib[0] = *a ? strtod(a, NULL) : 0;
        r->alloc_retries = *col[ix[C_RETRY]] ? strtoll(col[ix[C_RETRY]], NULL, 10) : 0;
        const char *sm = col[ix[C_STEP]];
        if (ok) {
            char *end = NULL;
            double ms = strtod(sm, &end);
            if (!*sm || *end || !(ms > 0)) {
                st = pp_error_set(err, PP_ERR_INPUT, path, lineno, 0, "a run with status ok needs step_ms_median, got '%s'", sm);
                goto fail;
            }
            r->measured_step_s = ms * 1e-3;
            r->iters_used = 1;
        }
        n++;
    }
    if (!header) {
        st = pp_error_set(err, PP_ERR_INPUT, path, 0, 0, "no header line: not an FSDP runs table");
        goto fail;
    }
    free(text);
    *runs_out = runs;
    *n_out = n;
    return PP_OK;
fail:
    free(text);
    free(runs);
    return st;
}
