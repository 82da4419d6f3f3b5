/* The resolved run (pp_run.h). */
#include "pp_run.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_express.h"
#include "pp_pipeline.h"
#include "pp_stages.h"

static void note(pp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(pp_run *r, const char *fmt, ...)
{
    if (r->n_notes >= PP_RUN_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes[r->n_notes++], sizeof r->notes[0], fmt, ap);
    va_end(ap);
}

int pp_run_gpu_notes(const pp_gpu *g, char (*notes)[640], int max)
{
    int n = 0;
    if (n < max && g->given_memory_bytes > 0)
        snprintf(notes[n++], sizeof notes[0], "capacity %.1f GiB from --gpu-mem-gib (%s's entry has %.1f GiB)",
                 g->given_memory_bytes / 1073741824.0, g->name, g->entry_memory_bytes / 1073741824.0);
    if (n < max && pp_gpu_gemm_power_factor(g) < 1.0) {
        char from[128];
        if (g->power_given) snprintf(from, sizeof from, "--gpu-power-w");
        else snprintf(from, sizeof from, "%s's gpu_power_w", g->name);
        pp_gpu_power_describe(g, from, notes[n++], sizeof notes[0]);
    }
    return n;
}

pp_status pp_run_build(const pp_work *w, const pp_layout *l, const pp_run_opts *o, pp_run *r, pp_error *err)
{
    static const pp_run_opts none = {0};
    if (!o) o = &none;
    memset(r, 0, sizeof *r);
    r->work = w;
    r->layout = *l;
    r->n_notes = pp_run_gpu_notes(&w->gpu, r->notes, PP_RUN_MAX_NOTES);
    if (w->profile && pp_gpu_gemm_power_factor(&w->gpu) < 1.0)
        note(r, "the profile's measured GEMM rates are used as measured (at the power limit of the GPU that ran "
                "parplan probe); the power limit's factor applies to the shapes the profile lacks");
    pp_layout *rl = &r->layout;
    pp_status st = PP_OK;
    if (l->stage_layers && !o->stages) {
        /* the split the layout comes with */
        for (int64_t i = 0; i < l->pp && i < PP_MAX_STAGES; i++) {
            r->stage_layers[i] = l->stage_layers[i];
            r->stage_recompute[i] = l->stage_recompute ? l->stage_recompute[i] : 0;
        }
        rl->stage_layers = r->stage_layers;
        rl->stage_recompute = r->stage_recompute;
        r->stage_split = o->given_split ? o->given_split : "given";
    } else {
        rl->stage_layers = rl->stage_recompute = NULL;
        pp_stages_result *sres = calloc(1, sizeof *sres);
        if (!sres) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        st = pp_stages_apply(w, rl, o->stages, o->dump_ilp, r->stage_layers, r->stage_recompute, sres, err);
        if (st == PP_OK && sres->warning[0] && !sres->warning_moot) note(r, "%s", sres->warning);
        free(sres);
        if (st != PP_OK) return st;
        r->stage_split = rl->stage_layers ? "ilp" : "uniform";
    }
    if (rl->vstage_layers) {
        r->stage_split = o->given_split ? o->given_split : "given";
    } else if (pp_layout_vstages_uneven(w, rl)) {
        /* the default split where pp x vpp does not divide the layers: say which it is and how
         * to state another (pp_layout_vstage_layers) */
        char lay[512];
        pp_error le = {0};
        r->stage_split = "balanced";
        if (pp_pipeline_layout_format(w, rl, lay, sizeof lay, &le) != PP_OK) snprintf(lay, sizeof lay, "(too long to show)");
        note(r, "%lld layers over pp %lld x vpp %lld virtual stages do not divide: the balanced split (the embedding and "
                "the loss count as one layer each), --pipeline-layout '%s'; --pipeline-layout or --first-stage-layers / "
                "--last-stage-layers state another",
             (long long)w->model.layers, (long long)rl->pp, (long long)rl->vpp, lay);
    }
    char what[640];
    if (pp_framework_express(w, rl, rl->stage_layers ? r->stage_recompute : NULL, what, sizeof what))
        note(r, "%s", what);
    st = pp_memory_estimate(w, rl, &r->mem, err);
    if (st == PP_OK) st = pp_time_estimate(w, rl, &r->time, err);
    if (st != PP_OK) return st;
    const pp_mem_stage *big = &r->mem.stages[r->mem.largest_stage];
    r->need_peak_bytes = big->peak_bytes;
    r->need_reserved_bytes = big->reserved_bytes;
    r->need_bytes = big->peak_bytes + big->reserved_bytes;
    r->peak_bytes = r->mem.peak_bytes;
    r->capacity_bytes = r->mem.capacity_bytes;
    r->headroom_bytes = r->capacity_bytes - r->need_bytes;
    r->fits = r->mem.fits;
    r->within_margin = r->fits && r->need_bytes <= pp_memory_plan_bytes(w);
    /* Dropless routing over several expert-parallel ranks sends the busiest rank more than its
     * share; the peak is priced at the --moe-imbalance the user states (1: balanced). */
    if (w->model.experts > 1 && rl->ep > 1 && w->stack.moe_imbalance <= 1.0 && w->stack.moe_capacity_factor <= 0)
        note(r, "dropless MoE over %lld EP ranks priced with balanced routing; --moe-imbalance X adds the margin "
                "for a busiest rank that gets X times its share",
             (long long)rl->ep);
    /* The flex dispatcher's library buffers, in the reserve (cost/deepep.c): which library, how much;
     * HybridEP's RDMA staging across NVLink domains is not priced. */
    if (w->model.experts > 1 && rl->ep > 1 && w->stack.dispatcher == PP_DISPATCH_FLEX) {
        const bool hyb = w->stack.flex_backend == PP_FLEX_HYBRIDEP;
        const bool across = hyb && rl->ep * pp_layout_etp(rl) > pp_work_nvlink_gpus(w);
        note(r, "the flex dispatcher's %s buffers: %.2f GiB in the reserve%s%s", hyb ? "HybridEP" : "DeepEP",
             pp_flex_layout_bytes(w, rl) / 1073741824.0,
             hyb ? "" : " (--moe-flex-backend hybridep for HybridEP's, which Megatron-Bridge's Blackwell recipes run)",
             across ? "; its RDMA staging buffers across NVLink domains are not priced" : "");
    }
    /* NVFP4 with TP's userbuffers overlap: Megatron-Bridge's own performance configs turn it off
     * (v0.5.0 scripts/performance/configs/llama/llama3_llm_pretrain.py:80 and every Llama 3 config
     * after it: "tp_comm_overlap = False if precision == 'nvfp4'") */
    if (w->stack.precision == PP_PREC_NVFP4 && w->stack.tp_comm_overlap && rl->tp > 1)
        note(r, "--tp-comm-overlap with --precision nvfp4: Megatron-Bridge's performance configs run NVFP4 without "
                "TP's userbuffers overlap (its published NVFP4 runs are stated without it)");
    /* Megatron-FSDP's communication buffers: what they hold and what sets it (memory.c) */
    if (w->stack.megatron_fsdp && rl->zero >= 2) {
        pp_mem_mfsdp mf;
        pp_memory_mfsdp(w, rl, &mf);
        if (mf.unit_params <= 0)
            note(r, "Megatron-FSDP over one data-parallel rank gathers and reduce-scatters nothing (as measured on one "
                    "H200)");
        else if (mf.held)
            note(r, "Megatron-FSDP's double buffer holds %.0f layers' weights and %.0f layers' gradients, %.2f GiB, for "
                    "the run", mf.units_weights, mf.units_grads, (mf.weights_bytes + mf.grads_bytes) / 1073741824.0);
        else if (mf.units_weights <= 0)
            note(r, "Megatron-FSDP (optim_grads: the weights stay whole) holds %.0f gradient bucket%s (%.2f GiB) at the "
                    "peak", mf.units_grads, mf.units_grads == 1 ? "" : "s", mf.grads_bytes / 1073741824.0);
        else
            note(r, "Megatron-FSDP holds %.0f layers' gathered weights (%.2f GiB) and %.0f gradient bucket%s (%.2f GiB) at "
                    "the peak: its communication unit of %.3g elements (--fsdp-unit-size) prefetches up to half of it",
                 mf.units_weights, mf.weights_bytes / 1073741824.0, mf.units_grads, mf.units_grads == 1 ? "" : "s",
                 mf.grads_bytes / 1073741824.0, mf.comm_unit);
    }
    /* a vocabulary shard that is not a multiple of 8 rows: cuBLAS's slow kernels for the output layer */
    double vxf = 1, vxb = 1;
    const int64_t vshard = pp_time_logits_misaligned(w, rl, &vxf, &vxb);
    if (vxf > 1)
        note(r, "the vocabulary shard (%lld rows a rank) is not a multiple of 8: the output layer's GEMMs run %.1fx "
                "(forward) and %.1fx (backward) the time of an aligned one, as measured on one H200; %s",
             (long long)vshard, vxf, vxb,
             w->framework == PP_FW_MEGATRON ? "Megatron's default padding (--vocab-divisible-by 128) avoids it"
                                            : "a vocabulary padded to a multiple of 8 x tp avoids it");
    /* torchao's rowwise float8 is priced from compiled blocks (cost/time.c FP8_ROWWISE_CAST_X); eager,
     * the same block took 1.9x its compiled time (tests/data/fp8/README.md: 65.5 against 34.1 ms) */
    if (w->stack.fp8_scaling == PP_FP8_ROWWISE && !w->stack.compile)
        note(r, "rowwise float8 is priced as torch.compile runs it (its casts fused); eager, a Llama block's linear "
                "layers took 1.9x their compiled time on one H200: give --compile, as torchtitan's float8 docs ask");
    /* CPU offloading: what the host keeps (pinned) for the micro-batch in flight */
    if (w->stack.cpu_offload_layers > 0)
        note(r, "CPU offloading keeps %.1f GiB of activations per GPU in host memory (%lld layers of a micro-batch); "
                "not counted in the GPU peak",
             pp_memory_offload_bytes(w, rl) / 1073741824.0, (long long)w->stack.cpu_offload_layers);
    /* CUDA graphs: the time model takes the host's launches off (cost/time.c moe_host_layer_s); one
     * graph of the iteration has its private pool in the reserve (cost/memory.c MEM_GRAPH_POOL_FACTOR),
     * Transformer Engine's per-layer graphs' static buffers and pool are not priced */
    const unsigned cg = pp_stack_cuda_graphs(&w->stack);
    if (cg & (1u << PP_CG_FULL_ITERATION))
        note(r, "the full-iteration CUDA graph's private pool (%.3f x the iteration's short-lived peak) and the model "
                "state's held segments (%.3f of it) are in the reserve, as measured on one H200 with Megatron-LM's "
                "local implementation; the graph's own effect on step time is not priced",
             pp_mem_graph_pool_factor, pp_mem_graph_state_held);
    else if (cg)
        note(r, "per-layer CUDA graphs are priced for time only: their static buffers and memory pool are not in the peak");
    /* FSDP2 near the capacity (pp_memory_fsdp_tight): the model has no cost for the retries */
    if (r->fits && pp_memory_fsdp_tight(w, r->mem.peak_bytes, r->capacity_bytes))
        note(r, "allocator peak %.1f GiB is %.0f%% of the %.1f GiB usable: PyTorch's caching allocator may free its "
                "cache and retry (2 of 6 such FSDP2 runs measured on H200 did, 35-45%% slower steps); a smaller "
                "micro-batch or more recompute leaves room",
             r->mem.peak_bytes / 1073741824.0, 100.0 * r->mem.peak_bytes / r->capacity_bytes,
             r->capacity_bytes / 1073741824.0);
    else if (r->fits && !r->within_margin)
        note(r, "needs %.1f of %.1f GiB (%.0f%%): fits, but inside the %.0f%% plan keeps free for what the model "
                "cannot see (its worst error on unseen runs -4%%, allocator retries from 89%% under FSDP2); "
                "plan does not propose it (--max-mem-frac F states your own margin)",
             r->need_bytes / 1073741824.0, r->capacity_bytes / 1073741824.0, 100.0 * r->need_bytes / r->capacity_bytes,
             100.0 * w->mem_margin_frac);
    return PP_OK;
}

void pp_layout_json_keys(pp_json *j, const pp_work *w, const pp_layout *l)
{
    pp_json_kint(j, "tp", l->tp);
    pp_json_kint(j, "pp", l->pp);
    pp_json_kint(j, "dp", l->dp);
    pp_json_kint(j, "vpp", l->vpp);
    pp_json_kint(j, "cp", l->cp);
    pp_json_kint(j, "ep", l->ep);
    pp_json_kint(j, "etp", pp_layout_etp(l));
    pp_json_kint(j, "mbs", l->mbs);
    pp_json_kint(j, "zero", l->zero);
    pp_json_kbool(j, "dist_opt", l->dist_opt);
    pp_json_kbool(j, "sp", l->sp);
    pp_json_kstr(j, "recompute", pp_recompute_names[l->recompute]);
    pp_json_kint(j, "recompute_layers", l->recompute_layers);
    pp_json_kstr(j, "offload", pp_offload_names[l->offload]);
    pp_json_kint(j, "replicate", l->replicate > 1 ? l->replicate : 1);
    if (l->stage_layers || (l->vstage_layers && l->vpp < 2)) {
        /* a per-stage split: the ILP's, a file's, or a given one without interleaving (its
         * recompute by the layout's rule, as a file's is read) */
        pp_json_key(j, "stage_layers");
        pp_json_arr_begin(j);
        for (int64_t s = 0; s < l->pp; s++) pp_json_int(j, pp_layout_stage_layers(w, l, s));
        pp_json_arr_end(j);
        pp_json_key(j, "stage_recompute");
        pp_json_arr_begin(j);
        for (int64_t s = 0; s < l->pp; s++)
            pp_json_int(j, l->stage_recompute ? l->stage_recompute[s] : pp_layout_vstage_recompute(w, l, s, 0));
        pp_json_arr_end(j);
    }
    if (pp_layout_vstages_uneven(w, l)) {
        int64_t v = l->vpp > 1 ? l->vpp : 1;
        pp_json_key(j, "vstage_layers");
        pp_json_arr_begin(j);
        for (int64_t k = 0; k < l->pp * v; k++) pp_json_int(j, pp_layout_vstage_layers(w, l, k % l->pp, k / l->pp));
        pp_json_arr_end(j);
        char lay[4096];
        pp_error le = {0};
        pp_json_key(j, "pipeline_layout");
        if (pp_pipeline_layout_format(w, l, lay, sizeof lay, &le) == PP_OK) pp_json_str(j, lay);
        else pp_json_null(j);
    }
}

/* Byte counts are whole numbers in the JSON (the model's doubles carry fractions). */
static void kbytes(pp_json *j, const char *k, double v) { pp_json_knum(j, k, round(v)); }

void pp_band_json(pp_json *j, const pp_work *w, const char *key, double v)
{
    double lo, hi;
    pp_band_range(pp_band_for(w), v, &lo, &hi);
    pp_json_key(j, key);
    pp_json_arr_begin(j);
    pp_json_num(j, lo);
    pp_json_num(j, hi);
    pp_json_arr_end(j);
}

void pp_band_json_row(pp_json *j, const pp_work *w)
{
    const pp_band_row *b = pp_band_for(w);
    pp_json_key(j, "step_time_band");
    pp_json_obj_begin(j);
    pp_json_kstr(j, "family", b->name);
    pp_json_knum(j, "err_lo", b->err_lo);
    pp_json_knum(j, "err_hi", b->err_hi);
    pp_json_kint(j, "calibrate_rows", b->calibrate_rows);
    pp_json_obj_end(j);
}

const char *pp_band_text(const pp_work *w, double v, int digits, char *buf, size_t n)
{
    double lo, hi;
    pp_band_range(pp_band_for(w), v, &lo, &hi);
    snprintf(buf, n, "%.*f-%.*f", digits, lo, digits, hi);
    return buf;
}

void pp_run_json_figures(pp_json *j, const pp_run *r)
{
    pp_json_kbool(j, "fits", r->fits);
    pp_json_kbool(j, "within_margin", r->within_margin);
    kbytes(j, "capacity_bytes", r->capacity_bytes);
    kbytes(j, "peak_bytes", r->peak_bytes);
    kbytes(j, "need_bytes", r->need_bytes);
    kbytes(j, "headroom_bytes", r->headroom_bytes);
    pp_json_knum(j, "step_time_s", r->time.step_time_s);
    pp_band_json(j, r->work, "step_time_range_s", r->time.step_time_s);
    pp_json_knum(j, "samples_per_s", r->time.samples_per_s);
    pp_json_knum(j, "tokens_per_s", r->time.tokens_per_s);
    pp_json_knum(j, "model_tflops_per_gpu", r->time.model_tflops_per_gpu);
    pp_json_knum(j, "mfu", r->time.mfu);
    pp_band_json_row(j, r->work);
}

void pp_gpu_json_effective(pp_json *j, const pp_gpu *g)
{
    pp_json_key(j, "gpu_effective");
    pp_json_obj_begin(j);
    pp_json_kstr(j, "name", g->name);
    kbytes(j, "memory_bytes", g->memory_bytes);
    kbytes(j, "entry_memory_bytes", g->entry_memory_bytes > 0 ? g->entry_memory_bytes : g->memory_bytes);
    pp_json_kstr(j, "memory_from", g->given_memory_bytes > 0 ? "--gpu-mem-gib" : "entry");
    pp_json_knum(j, "max_power_w", g->max_power_w);
    pp_json_knum(j, "power_w", g->power_w > 0 ? g->power_w : g->max_power_w);
    pp_json_kstr(j, "power_from", g->power_given ? "--gpu-power-w" : "entry");
    pp_json_knum(j, "gemm_power_factor", pp_gpu_gemm_power_factor(g));
    pp_json_knum(j, "gemm_flops", pp_gpu_gemm_flops(g, PP_DT_BF16));
    pp_json_obj_end(j);
}

void pp_run_json_breakdown(pp_json *j, const pp_time_result *t)
{
    double v[PP_TERM_COUNT];
    pp_step_terms(t, v);
    pp_json_key(j, "breakdown");
    pp_json_obj_begin(j);
    /* offload_s only where --cpu-offload-layers stalls the compute, host_s only where FSDP2's host
     * sets the pace: the JSON of other runs is unchanged */
    for (int i = 0; i < PP_TERM_COUNT; i++)
        if ((i != PP_TERM_OFFLOAD && i != PP_TERM_HOST) || v[i] > 0) pp_json_knum(j, pp_step_term_keys[i], v[i]);
    pp_json_obj_end(j);
}

/* ------------------------------------------------------------------ remedies */

static int plan_order(const void *pa, const void *pb)
{
    const pp_search_candidate *a = pa, *b = pb;
    if (a->fits != b->fits) return a->fits ? -1 : 1;
    if (!a->fits) return a->worst_bytes < b->worst_bytes ? -1 : a->worst_bytes > b->worst_bytes;
    return pp_search_better(a, b) ? -1 : pp_search_better(b, a) ? 1 : 0;
}

void pp_train_cost_get(const pp_work *w, double step_time_s, double tokens, double price_per_gpu_hour,
                       pp_train_cost *out)
{
    out->tokens_per_step = (double)w->gbs * (double)w->model.seq;
    out->steps = out->tokens_per_step > 0 ? ceil(tokens / out->tokens_per_step) : 0;
    out->train_s = out->steps * step_time_s;
    out->days = out->train_s / 86400.0;
    out->gpu_hours = out->train_s * (double)w->gpus / 3600.0;
    out->cost = price_per_gpu_hour > 0 ? out->gpu_hours * price_per_gpu_hour : 0.0;
}

pp_status pp_run_plan_resolve(const pp_work *w, pp_search_candidate *cand, pp_search_result *r, pp_error *err)
{
    pp_run *run = calloc(1, sizeof *run);
    if (!run) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    pp_run_opts ro = {.given_split = "plan"};
    pp_status st = PP_OK;
    for (int64_t i = 0; i < r->n && st == PP_OK; i++) {
        pp_search_candidate *k = &cand[i];
        /* beyond the stages the per-stage models hold, the search's own figures stand (such a
         * layout is only ever shown as the closest when nothing fits) */
        if (k->layout.pp > PP_MAX_STAGES) continue;
        st = pp_run_build(w, &k->layout, &ro, run, err);
        if (st != PP_OK) break;
        if (k->layout.stage_recompute)
            for (int64_t s = 0; s < k->layout.pp; s++) ((int *)k->layout.stage_recompute)[s] = run->stage_recompute[s];
        k->time = run->time;
        k->peak_bytes = run->peak_bytes;
        k->worst_bytes = run->need_bytes;
        k->headroom_bytes = run->headroom_bytes;
        k->fits = run->within_margin; /* within_margin implies fits (pp_run_build) */
    }
    free(run);
    if (st != PP_OK) return st;
    qsort(cand, (size_t)r->n, sizeof *cand, plan_order);
    r->none_fit = r->n == 0 || !cand[0].fits;
    if (!r->none_fit)
        while (r->n > 0 && !cand[r->n - 1].fits) r->n--;
    return PP_OK;
}

pp_status pp_run_plan_best(const pp_work *w, pp_run_plan_pick *out, pp_error *err)
{
    memset(out, 0, sizeof *out);
    pp_search_candidate *cand = calloc(PP_PLAN_WINDOW, sizeof *cand);
    int(*stage_mem)[PP_MAX_STAGES] = calloc(2 * PP_PLAN_WINDOW, sizeof *stage_mem);
    pp_status st = PP_OK;
    if (!cand || !stage_mem) {
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto done;
    }
    pp_search_params sp;
    pp_search_params_init(&sp);
    sp.top = PP_PLAN_WINDOW;
    pp_search_result r;
    if ((st = pp_search_run(w, &sp, cand, &r, err)) != PP_OK || r.n == 0) goto done;
    pp_stages_refine_stats rs;
    st = pp_stages_refine(w, cand, r.n, 1, "auto", stage_mem, stage_mem + r.n, &rs, err);
    if (st != PP_OK) goto done;
    r.n = rs.n;
    if ((st = pp_run_plan_resolve(w, cand, &r, err)) != PP_OK || r.n == 0) goto done;
    out->best = cand[0];
    out->any = true;
    out->fits = cand[0].fits;
    /* the split into the pick's own arrays (cand's rows are freed below) */
    pp_layout *l = &out->best.layout;
    if (l->stage_layers) {
        for (int64_t i = 0; i < l->pp && i < PP_MAX_STAGES; i++) {
            out->stage_layers[i] = l->stage_layers[i];
            out->stage_recompute[i] = l->stage_recompute ? l->stage_recompute[i] : 0;
        }
        l->stage_layers = out->stage_layers;
        l->stage_recompute = out->stage_recompute;
    }
done:
    free(cand);
    free(stage_mem);
    return st;
}

/* dst = src, its split pointing into dst's arrays */
static void plan_pick_copy(pp_run_plan_pick *dst, const pp_run_plan_pick *src)
{
    *dst = *src;
    if (src->best.layout.stage_layers) {
        dst->best.layout.stage_layers = dst->stage_layers;
        dst->best.layout.stage_recompute = dst->stage_recompute;
    }
}

/* w0 on `gpus` GPUs in nodes of gpn (a count below one node is that node) */
static pp_work work_at(const pp_work *w0, int64_t gpus, int64_t gpn)
{
    pp_work w = *w0;
    w.gpus = gpus;
    w.gpus_per_node = gpn < gpus ? gpn : gpus;
    return w;
}

/* Whether the search alone (uniform stage split, plan's margin) finds a layout at `gpus`. */
static bool search_fits_at(const pp_work *w0, int64_t gpus, int64_t gpn, pp_error *err, pp_status *st)
{
    pp_work w = work_at(w0, gpus, gpn);
    pp_search_params sp;
    pp_search_params_init(&sp);
    sp.top = 1;
    pp_search_candidate best;
    pp_search_result res;
    *st = pp_search_run(&w, &sp, &best, &res, err);
    return *st == PP_OK && res.n > 0 && !res.none_fit && best.fits;
}

/* Plan's #1 for w at `gpus` GPUs (nodes of gpn): true when it fits. margin: with the margin plan
 * keeps (what `plan` finds), else in the whole GPU (what `check` says fits). */
static bool best_at(const pp_work *w0, int64_t gpus, int64_t gpn, bool margin, pp_run_plan_pick *pick,
                    pp_error *err, pp_status *st)
{
    pp_work w = work_at(w0, gpus, gpn);
    if (!margin) w.mem_margin_frac = 0;
    *st = pp_run_plan_best(&w, pick, err);
    return *st == PP_OK && pick->any && pick->fits;
}

/* The next GPU count to try after n: doubling below one node, then whole nodes. */
static int64_t next_count(int64_t n, int64_t gpn)
{
    if (n < gpn) return n * 2 <= gpn ? n * 2 : gpn;
    return (n / gpn + 1) * gpn;
}

pp_status pp_run_remedies_find(const pp_work *w, const pp_layout *l, bool allow_seq, pp_run_remedies *out,
                               pp_error *err)
{
    memset(out, 0, sizeof *out);
    pp_remedy_opts o;
    pp_remedy_opts_init(&o);
    o.allow_seq = allow_seq;
    out->n = pp_remedies_find(w, l, &o, out->r);
    if (out->n > 0) return PP_OK;
    /* none within three changes: plan's #1 on these GPUs */
    /* a node as the GPU has it where the work is one node or less (the CLI caps gpus_per_node
     * at --gpus) */
    const int64_t gpn = w->gpus_per_node >= w->gpus && w->gpu.gpus_per_node > w->gpus_per_node
                            ? w->gpu.gpus_per_node
                            : (w->gpus_per_node > 0 ? w->gpus_per_node : 1);
    pp_status st = PP_OK;
    if (best_at(w, w->gpus, w->gpus_per_node, false, &out->plan, err, &st)) {
        const pp_search_candidate best = out->plan.best;
        pp_remedy *r = &out->r[0];
        memset(r, 0, sizeof *r);
        r->layout = best.layout;
        r->seq = w->model.seq;
        r->cpu_offload_layers = w->stack.cpu_offload_layers;
        static const struct { pp_knob k; size_t off; } dims[] = {
            {PP_KNOB_TP, offsetof(pp_layout, tp)}, {PP_KNOB_PP, offsetof(pp_layout, pp)},
            {PP_KNOB_VPP, offsetof(pp_layout, vpp)}, {PP_KNOB_CP, offsetof(pp_layout, cp)},
            {PP_KNOB_EP, offsetof(pp_layout, ep)}, {PP_KNOB_MBS, offsetof(pp_layout, mbs)}};
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
            if (*(const int64_t *)((const char *)l + dims[i].off) != *(const int64_t *)((const char *)&best.layout + dims[i].off))
                r->changed |= 1u << dims[i].k;
        if (l->recompute != best.layout.recompute) r->changed |= 1u << PP_KNOB_RECOMPUTE;
        if (l->dist_opt != best.layout.dist_opt || l->zero != best.layout.zero) r->changed |= 1u << PP_KNOB_SHARDING;
        if (l->offload != best.layout.offload) r->changed |= 1u << PP_KNOB_OFFLOAD;
        for (int k = 0; k < PP_KNOB_COUNT; k++) r->n_changed += (r->changed >> k) & 1u;
        r->need_bytes = best.worst_bytes;
        r->step_time_s = best.time.step_time_s;
        out->n = 1;
        out->from_plan = true;
        return PP_OK;
    }
    if (st != PP_OK) return st;
    /* nothing fits on these GPUs: more of them. The counts are walked with the search alone
     * (uniform stage split; milliseconds a count): doubling to a count that fits, then whole
     * nodes up from the last that did not. Plan's stage MILP can only add layouts that fit, so
     * plan mostly finds one there too (else it is asked a node up, and up); then below, by
     * bisection (uneven stages with recompute per stage can fit at half the count). */
    const int64_t limit = 65536;
    int64_t lo = w->gpus, hi = 0;
    for (int64_t n = next_count(w->gpus, gpn); n <= limit; n = n < gpn ? next_count(n, gpn) : n * 2) {
        if (n >= gpn) n = n / gpn * gpn;
        out->min_gpus_searched = n;
        if (search_fits_at(w, n, gpn, err, &st)) {
            hi = n;
            break;
        }
        if (st != PP_OK && st != PP_ERR_INPUT) return st;
        lo = n;
    }
    if (!hi) {
        out->min_gpus = -1;
        return PP_OK;
    }
    for (int64_t n = next_count(lo, gpn); n < hi; n = next_count(n, gpn)) {
        if (search_fits_at(w, n, gpn, err, &st)) {
            hi = n;
            break;
        }
        if (st != PP_OK && st != PP_ERR_INPUT) return st;
    }
    st = PP_OK;
    pp_run_plan_pick *tmp = calloc(1, sizeof *tmp);
    if (!tmp) return pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    /* (plan re-prices its window as check runs it: that can push the search's #1 past the margin,
     * so plan is asked from hi up until it finds one) */
    bool found = false;
    for (int up = 0; up < 8 && hi <= limit && !found; up++) {
        found = best_at(w, hi, gpn, true, &out->min_pick, err, &st);
        if (st == PP_ERR_INPUT) st = PP_OK;
        if (st != PP_OK) break;
        if (!found) hi = next_count(hi, gpn);
    }
    if (st == PP_OK && !found) {
        free(tmp);
        out->min_gpus = -1;
        return PP_OK;
    }
    /* Down from hi by bisection between a count plan finds nothing at (these GPUs, where it
     * found none in the whole GPU, let alone within the margin) and one it finds a layout at,
     * over the counts next_count walks, to two neighbours: hi, and one node (below a node,
     * half) fewer where plan finds none. A plan where nothing fits costs its MILP seconds, so
     * log2 of the nodes between, not one each. */
    int64_t none_at = w->gpus;
    while (st == PP_OK && next_count(none_at, gpn) < hi) {
        int64_t mid = none_at < gpn ? next_count(none_at, gpn) : (none_at + hi) / 2 / gpn * gpn;
        if (mid <= none_at) mid = next_count(none_at, gpn);
        if (best_at(w, mid, gpn, true, tmp, err, &st)) {
            hi = mid;
            plan_pick_copy(&out->min_pick, tmp);
        } else {
            if (st == PP_ERR_INPUT) st = PP_OK;
            none_at = mid;
        }
    }
    free(tmp);
    if (st != PP_OK) return st;
    out->min_gpus = hi;
    return PP_OK;
}
