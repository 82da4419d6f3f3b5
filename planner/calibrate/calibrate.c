/* Calibration of the time model on real Megatron-LM logs. See pp_calibrate.h.
 *
 * Why a calibration: the time model (time.c) prices a layer from its GEMMs, the elementwise bytes
 * of a fused stack (Transformer Engine / Megatron's fused kernels) and flash attention. A stack
 * without those (Megatron's `--transformer-impl local` with the fusions off, eager PyTorch, the
 * unfused attention path) runs the same math through more kernels: the lent H200s ran it 41-54%
 * slower than predicted (tests/data/launch/README.md). Rather than guessing each missing fusion,
 * `parplan calibrate` fits a handful of factors, each tied to one physical cause, on logs of the
 * stack itself:
 *   gemm_scale         the GEMM rate that stack reaches (cuBLAS through torch.matmul vs the curve)
 *   elementwise_scale  memory-bound traffic of unfused kernels (bias, GELU, dropout, add, norm,
 *                      optimizer passes) relative to the fused count
 *   score_bytes        extra HBM bytes per attention score per pass of the unfused attention
 *                      (masked_fill, softmax and dropout as separate kernels)
 *   layer_overhead_s   fixed time per layer and micro-batch (kernel launches, Python dispatch;
 *                      the backward launches about twice the kernels of the forward)
 *   optimizer_scale    the optimizer step of the stack (Megatron without apex falls back to
 *                      torch.optim and per-tensor Python loops for the norm and the copies)
 * The fit minimises sum (log predicted - log measured)^2, a relative error that weighs a 2 s and
 * a 0.4 s run alike, with box bounds, by Levenberg-Marquardt on the free factors. */
#include "pp_calibrate.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_margs.h"
#include "pp_memory.h"
#include "pp_yaml.h"

/* the factors' keys in the profile's calibration section (pp_profile_schema.h) */
const char *const pp_cal_names[PP_CAL_COUNT] = {PP_PROFILE_CAL_FACTORS(PP_PROFILE_KEY_STR)};
_Static_assert(PP_PROFILE_COUNT(PP_PROFILE_CAL_FACTORS) == PP_CAL_COUNT, "PP_CAL_*: the schema's factors");

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
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        const char *s = text + i;
        size_t n = j - i;
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
        i = j + 1;
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
    int n = 0, cap = 0, ix[C_COUNT], lineno = 0;
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
                                      "not an FSDP runs table (tests/fsdp/parse_runs.py): no column '%s'", need[k]);
                    goto fail;
                }
            }
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

/* ------------------------------------------------------------------ applying a calibration */

void pp_calibration_init(pp_calibration *cal)
{
    memset(cal, 0, sizeof *cal);
    cal->gemm_scale = cal->elementwise_scale = cal->optimizer_scale = 1;
    cal->mape_before = cal->mape_after = cal->mape_loo = -1;
}

/* ------------------------------------------------------------------ measured layers */

void pp_time_step_measured_kinds(const pp_work *w, const pp_layout *l, const pp_time_opts *o,
                                 const pp_calibration *cal, const double fwd_s[PP_LAYER_KINDS],
                                 const double fwdbwd_s[PP_LAYER_KINDS], pp_time_result *out, pp_time_measured *info)
{
    pp_profile prof;
    if (w->profile) prof = *w->profile; /* shallow: the record arrays are shared, never freed here */
    else memset(&prof, 0, sizeof prof);
    if (cal && cal->present) prof.calibration = *cal;
    else pp_calibration_init(&prof.calibration);
    const pp_calibration *c = prof.calibration.present ? &prof.calibration : NULL;
    pp_work wm = *w;
    wm.profile = &prof;
    pp_time_ctx ctx;
    pp_time_ctx_init(&ctx, &wm, o);
    ctx.measured_optimizer = true;
    pp_time_layer ly, stack;
    pp_time_layer_get(&ctx, l, &ly);
    const int km = ly.kind_main;
    unsigned measured = 0;
    for (int k = 0; k < PP_LAYER_KINDS; k++)
        if (fwdbwd_s[k] > 0 && (k == km || (ly.kinds_present & (1u << k)))) measured |= 1u << k;
    /* the stack's per-layer terms, for every measured kind */
    memset(&stack, 0, sizeof stack);
    stack.kind_main = km;
    stack.kinds_present = measured | 1u << km;
    pp_calibration_apply_layer(c, &ctx, l, &stack);
    pp_time_terms sm, keep[PP_LAYER_KINDS];
    pp_time_layer_terms(&stack, km, &sm);
    for (int k = 0; k < PP_LAYER_KINDS; k++) pp_time_layer_terms(&ly, k, &keep[k]);
    /* The main kind's measured/modelled ratio moves the kinds that were not measured (a windowed
     * layer, a dense first layer the probe could not run); measured kinds take their own figure. */
    double fwd_model = ly.fwd_compute_s, bwd_model = ly.bwd_compute_s;
    if (measured & (1u << km)) {
        ly.fwd_compute_s = fwd_s[km] + sm.fwd_compute_s;
        ly.bwd_compute_s = (fwdbwd_s[km] > fwd_s[km] ? fwdbwd_s[km] - fwd_s[km] : 0) + sm.bwd_compute_s;
        pp_time_layer_rescale_kinds(&ly, fwd_model > 0 ? ly.fwd_compute_s / fwd_model : 1.0,
                                    bwd_model > 0 ? ly.bwd_compute_s / bwd_model : 1.0);
    }
    for (int k = 0; k < PP_LAYER_KINDS; k++) {
        if (k == km || !(measured & (1u << k))) continue;
        pp_time_terms sk;
        pp_time_layer_terms(&stack, k, &sk);
        ly.kind[k].fwd_compute_s = fwd_s[k] + sk.fwd_compute_s;
        ly.kind[k].bwd_compute_s = (fwdbwd_s[k] > fwd_s[k] ? fwdbwd_s[k] - fwd_s[k] : 0) + sk.bwd_compute_s;
        ly.kind[k].sel_recompute_s = keep[k].sel_recompute_s; /* as the main kind's: the model's */
    }
    pp_time_step(&ctx, l, &ly, out);
    memset(info, 0, sizeof *info);
    info->stack_fwd_s = sm.fwd_compute_s;
    info->stack_bwd_s = sm.bwd_compute_s;
    info->optimizer_meas_s = out->optimizer_measured_s;
}

void pp_time_step_measured(const pp_work *w, const pp_layout *l, const pp_time_opts *o, const pp_calibration *cal,
                           double fwd_s, double fwdbwd_s, pp_time_result *out, pp_time_measured *info)
{
    /* the main kind: that of the last decoder layer (pp_time_layer.kind_main) */
    const pp_model *m = &w->model;
    const int km = m->layers > 0 ? pp_model_layer_kind(m, m->layers - 1) : 0;
    double f[PP_LAYER_KINDS] = {0}, fb[PP_LAYER_KINDS] = {0};
    f[km] = fwd_s;
    fb[km] = fwdbwd_s;
    pp_time_step_measured_kinds(w, l, o, cal, f, fb, out, info);
}

/* ------------------------------------------------------------------ measured parts (MoE, MLA) */

/* The compute terms (forward, backward) of layer kind `kind` of model m (the work's, or a variant
 * of it) under profile prof. */
static void part_terms(const pp_work *w, const pp_profile *prof, const pp_model *m, const pp_layout *l,
                       const pp_time_opts *o, int kind, double *f, double *b)
{
    pp_work wv = *w;
    wv.model = *m;
    wv.profile = prof;
    pp_time_ctx ctx;
    pp_time_ctx_init(&ctx, &wv, o);
    pp_time_layer ly;
    pp_time_layer_get(&ctx, l, &ly);
    pp_time_terms t;
    pp_time_layer_terms(&ly, kind, &t);
    *f = t.fwd_compute_s;
    *b = t.bwd_compute_s;
}

void pp_time_layer_compose(const pp_work *w, const pp_layout *l, const pp_time_opts *o, const pp_calibration *cal,
                           int kind, const pp_layer_measured *meas, pp_layer_composed *out)
{
    memset(out, 0, sizeof *out);
    if (meas->layer_fwdbwd_s > 0) {
        out->fwd_s = meas->layer_fwd_s;
        out->fwdbwd_s = meas->layer_fwdbwd_s;
        out->measured = true;
        return;
    }
    /* The parts are priced by the model without the stack's per-layer terms (cal's layer overhead
     * and unfused-attention passes): pp_time_step_measured_kinds adds those once per layer on top
     * of whatever this returns. The rates (gemm_scale, elementwise_scale) and the MoE host factors
     * stay: they are the model's figure of the parts left modelled. */
    pp_profile prof;
    if (w->profile) prof = *w->profile;
    else memset(&prof, 0, sizeof prof);
    if (cal && cal->present) prof.calibration = *cal;
    else pp_calibration_init(&prof.calibration);
    prof.calibration.layer_overhead_s = 0;
    prof.calibration.score_bytes = 0;
    const pp_model *m = &w->model;
    const int dense = kind & ~PP_LAYER_MOE;
    const bool moe_kind = (kind & PP_LAYER_MOE) && pp_model_is_moe(m);
    double kf, kb;
    part_terms(w, &prof, m, l, o, kind, &kf, &kb);
    double f = kf, b = kb, mf = kf, mb = kb; /* the layer, and the model's share of it */
    /* The variants that isolate a part: the layer without its MLP (no experts, no FFN: attention,
     * norms, residual adds), the same with a dense MLP of the shared experts' size (the shared
     * experts are priced as that MLP: time.c layer_terms), and for MLA the norms and residual adds
     * alone (no heads, no latent ranks, no RoPE: what the mla probe's block leaves out). */
    pp_model va = *m;
    va.experts = 0;
    va.topk = 0;
    va.ffn = 0;
    va.shared_ffn = 0;
    double af = 0, ab = 0;
    bool need_a = meas->attn_fwdbwd_s > 0 || meas->mla_fwdbwd_s > 0 || (moe_kind && meas->moe_fwdbwd_s > 0);
    if (need_a) part_terms(w, &prof, &va, l, o, dense, &af, &ab);
    if (meas->attn_fwdbwd_s > 0 || meas->mla_fwdbwd_s > 0) {
        double pf = af, pb = ab, xf = meas->attn_fwd_s, xfb = meas->attn_fwdbwd_s;
        if (!(meas->attn_fwdbwd_s > 0)) {
            pp_model vn = va;
            vn.heads = vn.kv_heads = vn.head_dim = 0;
            vn.q_lora_rank = vn.kv_lora_rank = vn.qk_nope_dim = vn.qk_rope_dim = vn.v_head_dim = 0;
            vn.pos = PP_POS_NONE;
            vn.qk_norm = PP_QKNORM_NONE;
            double nf, nb;
            part_terms(w, &prof, &vn, l, o, dense, &nf, &nb);
            pf -= nf, pb -= nb;
            xf = meas->mla_fwd_s, xfb = meas->mla_fwdbwd_s;
        }
        f += xf - pf;
        b += (xfb > xf ? xfb - xf : 0) - pb;
        mf -= pf, mb -= pb;
        out->measured = true;
    }
    if (moe_kind && meas->moe_fwdbwd_s > 0) {
        double bf = af, bb = ab;
        if (!meas->moe_shared && m->shared_ffn > 0) {
            pp_model vs = va;
            vs.ffn = m->shared_ffn;
            part_terms(w, &prof, &vs, l, o, dense, &bf, &bb);
        }
        double pf = kf - bf, pb = kb - bb; /* the model's MoE MLP: its layer less the rest */
        /* The host's pace (time.c layer_terms): a stack that issues the experts from Python takes
         * at least moe_layer_overhead_s + (loop) local experts x expert_overhead_s per layer, a third
         * forward and two thirds backward; the probe issues them from C at the GPU's pace. Only a
         * calibrated stack's figures apply (the uncalibrated floor is the kernel launches the probe
         * ran itself). */
        double host = 0;
        if (cal && cal->present) {
            double local = (double)m->experts / (double)(l->ep > 0 ? l->ep : 1);
            host = cal->moe_layer_overhead_s + (w->stack.grouped_gemm ? 0 : local * cal->expert_overhead_s);
        }
        double ef = meas->expert_fwd_s, eb = meas->expert_bwd_s;
        out->host_fwd_s = host / 3.0 > ef ? host / 3.0 - ef : 0;
        out->host_bwd_s = 2.0 * host / 3.0 > eb ? 2.0 * host / 3.0 - eb : 0;
        double xf = meas->moe_fwd_s, xb = meas->moe_fwdbwd_s > xf ? meas->moe_fwdbwd_s - xf : 0;
        f += xf + out->host_fwd_s - pf;
        b += xb + out->host_bwd_s - pb;
        mf -= pf, mb -= pb;
        out->measured = true;
    }
    out->fwd_s = f;
    out->fwdbwd_s = f + b;
    out->modelled_fwd_s = mf > 0 ? mf : 0;
    out->modelled_bwd_s = mb > 0 ? mb : 0;
}

/* ------------------------------------------------------------------ prediction and fit */

pp_status pp_calib_predict(const pp_calib_run *run, const pp_profile *base, const pp_calibration *cal,
                           double *step_s, pp_error *err)
{
    pp_profile prof;
    if (base) prof = *base; /* shallow: the record arrays are shared, never freed here */
    else memset(&prof, 0, sizeof prof);
    if (cal) prof.calibration = *cal;
    else pp_calibration_init(&prof.calibration);
    pp_work w = run->work;
    w.profile = &prof;
    pp_layout l = pp_calib_run_layout(run);
    pp_time_result r;
    if (run->probe_fwdbwd_s > 0) {
        /* calibrate --probe-cache: the stack's terms on top of the measured layer */
        pp_time_measured mi;
        pp_time_step_measured(&w, &l, &run->opts, &prof.calibration, run->probe_fwd_s, run->probe_fwdbwd_s, &r, &mi);
        if (!isfinite(r.step_time_s) || r.step_time_s <= 0)
            return pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "time estimate is not finite");
    } else {
        pp_status st = pp_time_estimate_opts(&w, &l, &run->opts, &r, err);
        if (st) return st;
    }
    *step_s = r.step_time_s;
    return PP_OK;
}

void pp_calib_params_init(pp_calib_params *p)
{
    p->fit_mask = (1u << PP_CAL_COUNT) - 1;
    p->max_iters = 200;
}

unsigned pp_calib_default_mask(const pp_calib_run *runs, int n)
{
    bool unfused = false, moe = false;
    for (int i = 0; i < n; i++) {
        unfused |= runs[i].work.attention == PP_ATTN_UNFUSED;
        moe |= runs[i].work.model.experts > 1;
    }
    /* The MoE factors only where MoE logs can determine them. */
    return (1u << PP_CAL_GEMM) | (1u << PP_CAL_LAYER) | (1u << PP_CAL_OPTIMIZER) |
           (unfused ? 1u << PP_CAL_SCORE : 1u << PP_CAL_ELEMENTWISE) |
           (moe ? (1u << PP_CAL_MOE_LAYER) | (1u << PP_CAL_EXPERT) : 0u);
}

void pp_calib_result_free(pp_calib_result *res)
{
    if (!res) return;
    free(res->measured_s);
    free(res->before_s);
    free(res->after_s);
    free(res->loo_s);
    res->measured_s = res->before_s = res->after_s = res->loo_s = NULL;
}

/* Bounds of each factor: wide enough for any real stack, narrow enough that the fit cannot
 * wander into nonsense when a factor is poorly determined. */
static const double cal_lo[PP_CAL_COUNT] = {0.2, 0.5, 0.0, 0.0, 0.5, 0.0, 0.0};
static const double cal_hi[PP_CAL_COUNT] = {2.0, 10.0, 200.0, 2e-3, 20.0, 20e-3, 2e-3};
static const double cal_neutral[PP_CAL_COUNT] = {1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0};

static void cal_set(pp_calibration *c, const double *x)
{
    c->present = true;
    c->gemm_scale = x[PP_CAL_GEMM];
    c->elementwise_scale = x[PP_CAL_ELEMENTWISE];
    c->score_bytes = x[PP_CAL_SCORE];
    c->layer_overhead_s = x[PP_CAL_LAYER];
    c->optimizer_scale = x[PP_CAL_OPTIMIZER];
    c->moe_layer_overhead_s = x[PP_CAL_MOE_LAYER];
    c->expert_overhead_s = x[PP_CAL_EXPERT];
}

/* The inverse of cal_set: a calibration's factors as the fit's vector. */
static void cal_get(const pp_calibration *c, double *x)
{
    x[PP_CAL_GEMM] = c->gemm_scale;
    x[PP_CAL_ELEMENTWISE] = c->elementwise_scale;
    x[PP_CAL_SCORE] = c->score_bytes;
    x[PP_CAL_LAYER] = c->layer_overhead_s;
    x[PP_CAL_OPTIMIZER] = c->optimizer_scale;
    x[PP_CAL_MOE_LAYER] = c->moe_layer_overhead_s;
    x[PP_CAL_EXPERT] = c->expert_overhead_s;
}

typedef struct {
    const pp_calib_run *runs;
    int n;
    int skip;                 /* run left out (-1: none) */
    const pp_profile *base;
    unsigned mask;
} fit_ctx;

/* Residuals log(pred/meas) of the runs in use; returns the sum of squares (inf on failure). */
static double residuals(const fit_ctx *f, const double *x, double *r)
{
    pp_calibration cal;
    pp_calibration_init(&cal);
    cal_set(&cal, x);
    double ss = 0;
    int k = 0;
    for (int i = 0; i < f->n; i++) {
        if (i == f->skip) continue;
        double s;
        pp_error e;
        if (pp_calib_predict(&f->runs[i], f->base, &cal, &s, &e) != PP_OK || !(s > 0)) return INFINITY;
        double ri = log(s / f->runs[i].measured_step_s);
        if (r) r[k] = ri;
        k++;
        ss += ri * ri;
    }
    return ss;
}

/* Solve A x = b (n x n, row-major; A and b destroyed) by Gaussian elimination with partial
 * pivoting. false when singular. */
static bool solve(double *A, double *b, int n, double *x)
{
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(A[r * n + c]) > fabs(A[piv * n + c])) piv = r;
        if (fabs(A[piv * n + c]) < 1e-300) return false;
        if (piv != c) {
            for (int k = 0; k < n; k++) {
                double t = A[c * n + k];
                A[c * n + k] = A[piv * n + k];
                A[piv * n + k] = t;
            }
            double t = b[c];
            b[c] = b[piv];
            b[piv] = t;
        }
        for (int r = c + 1; r < n; r++) {
            double f = A[r * n + c] / A[c * n + c];
            for (int k = c; k < n; k++) A[r * n + k] -= f * A[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = b[r];
        for (int k = r + 1; k < n; k++) s -= A[r * n + k] * x[k];
        x[r] = s / A[r * n + r];
    }
    return true;
}

/* Projected Levenberg-Marquardt in normalised coordinates u = (x - lo) / (hi - lo) in [0, 1]. */
/* The MoE factors enter the model through max(GPU, host) (an MoE layer runs at the slower of
 * the two): below the GPU's time a factor has no gradient, so Levenberg-Marquardt started there
 * would not move. Start it from the best point of a coarse log grid over the MoE factors being
 * fitted (the others as they are). */
static void moe_grid_start(const fit_ctx *f, double *x, double *r)
{
    bool fl = f->mask & (1u << PP_CAL_MOE_LAYER), fe = f->mask & (1u << PP_CAL_EXPERT);
    if (!fl && !fe) return;
    double best = residuals(f, x, r), xb[2] = {x[PP_CAL_MOE_LAYER], x[PP_CAL_EXPERT]};
    for (int a = 0; a < (fl ? 9 : 1); a++)
        for (int b = 0; b < (fe ? 9 : 1); b++) {
            double xs[PP_CAL_COUNT];
            memcpy(xs, x, sizeof xs);
            /* 10 us .. 10 ms per layer, 2 us .. 2 ms per expert, log-spaced */
            if (fl) xs[PP_CAL_MOE_LAYER] = 1e-5 * pow(10.0, 3.0 * a / 8.0);
            if (fe) xs[PP_CAL_EXPERT] = 2e-6 * pow(10.0, 3.0 * b / 8.0);
            double c = residuals(f, xs, r);
            if (isfinite(c) && c < best) {
                best = c;
                xb[0] = xs[PP_CAL_MOE_LAYER];
                xb[1] = xs[PP_CAL_EXPERT];
            }
        }
    x[PP_CAL_MOE_LAYER] = xb[0];
    x[PP_CAL_EXPERT] = xb[1];
}

static pp_status lm_fit(const fit_ctx *f, double *x, int max_iters, pp_error *err)
{
    int free_idx[PP_CAL_COUNT], nf = 0;
    for (int i = 0; i < PP_CAL_COUNT; i++)
        if (f->mask & (1u << i)) free_idx[nf++] = i;
    int m = f->n - (f->skip >= 0 ? 1 : 0);
    if (nf == 0) return PP_OK;
    double *r = calloc((size_t)m, sizeof *r), *rn = calloc((size_t)m, sizeof *rn);
    double *J = calloc((size_t)m * (size_t)nf, sizeof *J);
    pp_status st = PP_OK;
    if (!r || !rn || !J) {
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }
    moe_grid_start(f, x, r);
    double cost = residuals(f, x, r);
    if (!isfinite(cost)) {
        st = pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "the time model failed on a run at the start of the fit");
        goto done;
    }
    double lambda = 1e-2;
    for (int it = 0; it < max_iters; it++) {
        /* Jacobian by forward differences in u (a step of 1e-4 of the range, backwards at the
         * upper bound) */
        for (int j = 0; j < nf; j++) {
            int p = free_idx[j];
            double span = cal_hi[p] - cal_lo[p], h = 1e-4 * span;
            double xs[PP_CAL_COUNT];
            memcpy(xs, x, sizeof xs);
            if (xs[p] + h > cal_hi[p]) h = -h;
            xs[p] += h;
            if (!isfinite(residuals(f, xs, rn))) {
                st = pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "the time model failed during the fit");
                goto done;
            }
            for (int i = 0; i < m; i++) J[i * nf + j] = (rn[i] - r[i]) / (h / span);
        }
        double A[PP_CAL_COUNT * PP_CAL_COUNT], g[PP_CAL_COUNT];
        bool improved = false;
        for (int tries = 0; tries < 30 && !improved; tries++) {
            for (int a = 0; a < nf; a++) {
                g[a] = 0;
                for (int i = 0; i < m; i++) g[a] -= J[i * nf + a] * r[i];
                for (int b = 0; b < nf; b++) {
                    double s = 0;
                    for (int i = 0; i < m; i++) s += J[i * nf + a] * J[i * nf + b];
                    A[a * nf + b] = s;
                }
            }
            for (int a = 0; a < nf; a++) A[a * nf + a] += lambda * (A[a * nf + a] + 1e-9);
            double du[PP_CAL_COUNT];
            if (!solve(A, g, nf, du)) {
                lambda *= 10;
                continue;
            }
            double xn[PP_CAL_COUNT];
            memcpy(xn, x, sizeof xn);
            for (int j = 0; j < nf; j++) {
                int p = free_idx[j];
                xn[p] += du[j] * (cal_hi[p] - cal_lo[p]);
                if (xn[p] < cal_lo[p]) xn[p] = cal_lo[p];
                if (xn[p] > cal_hi[p]) xn[p] = cal_hi[p];
            }
            double cn = residuals(f, xn, rn);
            if (cn < cost) {
                double gain = cost - cn;
                memcpy(x, xn, sizeof xn);
                memcpy(r, rn, (size_t)m * sizeof *r);
                cost = cn;
                lambda = lambda / 3 > 1e-12 ? lambda / 3 : 1e-12;
                improved = true;
                if (gain < 1e-14 * (1 + cost)) it = max_iters; /* converged */
            } else {
                lambda *= 4;
            }
        }
        if (!improved) break; /* no step lowers the cost: a (bounded) minimum */
    }
done:
    free(r);
    free(rn);
    free(J);
    return st;
}

static double mape(const double *pred, const double *meas, int n, double *max_abs)
{
    double s = 0, mx = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs(pred[i] / meas[i] - 1);
        s += e;
        if (e > mx) mx = e;
    }
    if (max_abs) *max_abs = 100 * mx;
    return n ? 100 * s / n : 0;
}

pp_status pp_calib_fit(const pp_calib_run *runs, int n, const pp_profile *base, const pp_calib_params *p,
                       pp_calib_result *res, pp_error *err)
{
    memset(res, 0, sizeof *res);
    pp_calib_params def;
    if (!p) {
        pp_calib_params_init(&def);
        p = &def;
    }
    int nf = 0;
    for (int i = 0; i < PP_CAL_COUNT; i++) nf += (p->fit_mask >> i) & 1;
    if (n < nf + 1)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                            "%d timed run%s cannot determine %d factors: give at least %d logs", n, n == 1 ? "" : "s",
                            nf, nf + 1);
    res->n = n;
    res->measured_s = calloc((size_t)n, sizeof(double));
    res->before_s = calloc((size_t)n, sizeof(double));
    res->after_s = calloc((size_t)n, sizeof(double));
    if (n >= 3) res->loo_s = calloc((size_t)n, sizeof(double));
    pp_status st = PP_OK;
    if (!res->measured_s || !res->before_s || !res->after_s || (n >= 3 && !res->loo_s)) {
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        res->measured_s[i] = runs[i].measured_step_s;
        if ((st = pp_calib_predict(&runs[i], base, NULL, &res->before_s[i], err))) {
            snprintf(err->file, sizeof err->file, "%s", runs[i].path);
            goto fail;
        }
    }
    /* The base profile's own calibration (if any) is replaced, not compounded: the factors
     * being fitted start from its values, the others keep them (fitting the MoE factors on MoE
     * logs keeps the dense factors fitted on dense logs); with nothing to fit (mask 0) it is
     * evaluated as it is: how well a calibration predicts logs it was not fitted on. */
    double x0[PP_CAL_COUNT];
    memcpy(x0, cal_neutral, sizeof x0);
    if (base && base->calibration.present) cal_get(&base->calibration, x0);
    double x[PP_CAL_COUNT];
    memcpy(x, x0, sizeof x);
    fit_ctx f = {runs, n, -1, base, p->fit_mask};
    if ((st = lm_fit(&f, x, p->max_iters, err))) goto fail;
    pp_calibration_init(&res->cal);
    cal_set(&res->cal, x);
    for (int i = 0; i < n; i++)
        if ((st = pp_calib_predict(&runs[i], base, &res->cal, &res->after_s[i], err))) goto fail;
    res->mape_before = mape(res->before_s, res->measured_s, n, &res->max_abs_before);
    res->mape_after = mape(res->after_s, res->measured_s, n, &res->max_abs_after);
    res->mape_loo = -1;
    if (res->loo_s && p->fit_mask) {
        for (int k = 0; k < n; k++) {
            double xk[PP_CAL_COUNT];
            memcpy(xk, x0, sizeof xk);
            fit_ctx fk = {runs, n, k, base, p->fit_mask};
            if ((st = lm_fit(&fk, xk, p->max_iters, err))) goto fail;
            pp_calibration ck;
            pp_calibration_init(&ck);
            cal_set(&ck, xk);
            if ((st = pp_calib_predict(&runs[k], base, &ck, &res->loo_s[k], err))) goto fail;
        }
        res->mape_loo = mape(res->loo_s, res->measured_s, n, &res->max_abs_loo);
    }
    res->cal.runs = n;
    res->cal.mape_before = res->mape_before;
    res->cal.mape_after = res->mape_after;
    res->cal.mape_loo = res->mape_loo;
    snprintf(res->cal.stack, sizeof res->cal.stack, "%s", runs[0].stack);
    if (!p->fit_mask) {
        free(res->loo_s);
        res->loo_s = NULL;
    }
    return PP_OK;
fail:
    pp_calib_result_free(res);
    return st;
}
