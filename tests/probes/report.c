/* Unit tests of the probes' profile writer and fault reports (probes/report.c, main.c's knobs; no
 * GPU needed):
 *   - the profile writer: refuses non-finite rows, and what it writes (table, YAML, JSON) loads
 *     through the planner's strict profile loader with the same figures;
 *   - out-of-memory rows, the fault knobs' parsing and the one-line reports of a timeout, a
 *     missing and a busy GPU.
 * The CPU references and the other CPU-side checks are unit.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pp_profile.h"
#include "probe.h"
#include "tap.h"

static void check_report(void)
{
    pp_report r;
    pp_report_init(&r);
    snprintf(r.gpu, sizeof r.gpu, "Test \"GPU\"");
    snprintf(r.measured, sizeof r.measured, "2026-11-22T00:00:00Z");
    r.gpu_count = 2;
    r.sms = 132;
    pp_gemm_row g = {"bf16", "square", 0, 0, 8192, 8192, 8192, 1400.0, 785.4, 1e-3};
    pp_gemm_row g2 = {"bf16", "qkv", 4096, 2, 4096, 6144, 4096, 300.0, 687.2, 1e-3};
    pp_gemm_row bad = g;
    bad.tflops = NAN;
    tap_ok(pp_report_add_gemm(&r, &g) == 0 && pp_report_add_gemm(&r, &g2) == 0, "gemm rows added");
    tap_ok(pp_report_add_gemm(&r, &bad) == -1 && r.n_gemm == 2, "a NaN row is refused");
    bad = g;
    bad.us = -1;
    tap_ok(pp_report_add_gemm(&r, &bad) == -1, "a negative time is refused");
    pp_bw_row c = {"copy", 2147483648.0, 700.0, 3067.8}, m = {"mul", 1610612736.0, 520.0, 3097.3};
    pp_report_add_bw(&r, &c);
    pp_report_add_bw(&r, &m);
    pp_attn_row at = {"flash", "cudnn", true, 8, 2048, 16, 128, 0.6, 2.1, 458.1, 392.7, 5e-3};
    pp_report_add_attn(&r, &at);
    pp_layer_row l = {2048, 16, 2048, 8, 1, 8192, "gelu", "flash", 2.7, 9.5, 700.0, 607.0, 1e-2, 0};
    pp_report_add_layer(&r, &l);
    /* a grouped-query layer (Llama-3.2-3B-like: 24 heads in 8 kv groups) at tp 2 */
    pp_layer_row lg = {3072, 24, 4096, 2, 2, 8192, "swiglu", "unfused", 30.5, 95.25, 300.0, 290.0, 1e-2, 8};
    pp_layer_row lbad = lg;
    lbad.kv_heads = 5;
    tap_ok(pp_report_add_layer(&r, &lbad) == -1, "a layer row whose kv_heads 5 does not divide 24 heads is refused");
    lbad.kv_heads = 48;
    tap_ok(pp_report_add_layer(&r, &lbad) == -1, "a layer row with kv_heads 48 above 24 heads is refused");
    lbad.kv_heads = -8;
    tap_ok(pp_report_add_layer(&r, &lbad) == -1 && r.n_layer == 1, "a layer row with negative kv_heads is refused");
    tap_ok(pp_report_add_layer(&r, &lg) == 0 && r.n_layer == 2, "GQA layer row added");
    pp_nccl_row n1 = {"all_reduce", 2, 1073741824.0, 3200.0, 335.5, 335.5};
    pp_nccl_row n0 = n1;
    n0.ranks = 1;
    tap_ok(pp_report_add_nccl(&r, &n0) == -1, "an nccl row of one rank is refused");
    pp_report_add_nccl(&r, &n1);
    /* one fused AdamW step, 30 bytes per parameter (optimizer.cu) */
    pp_opt_row o = {1e9, 30, 11.25, 30e9 / 11.25e-3 / 1e9, 3e-4}, obad = o;
    obad.ms = INFINITY;
    tap_ok(pp_report_add_opt(&r, &obad) == -1, "an optimizer row with an infinite time is refused");
    obad = o;
    obad.params = 0;
    tap_ok(pp_report_add_opt(&r, &obad) == -1 && r.n_opt == 0, "an optimizer row of 0 parameters is refused");
    tap_ok(pp_report_add_opt(&r, &o) == 0, "optimizer row added");
    /* fp8 GEMMs beside the bf16 ones of the same shape (the x_bf16 column) */
    pp_gemm_row f8 = {"fp8", "square", 0, 0, 8192, 8192, 8192, 700.0, 1570.8, 2e-3};
    pp_gemm_row f8q = {"fp8", "qkv", 4096, 2, 4096, 6144, 4096, 160.0, 1288.5, 2e-3};
    tap_ok(pp_report_add_gemm(&r, &f8) == 0 && pp_report_add_gemm(&r, &f8q) == 0, "fp8 gemm rows added");
    tap_near(pp_report_fp8_speedup(&r, 2), 1570.8 / 785.4, 1e-12, "fp8 square over bf16 square: 2.0x");
    tap_near(pp_report_fp8_speedup(&r, 3), 1288.5 / 687.2, 1e-12, "fp8 qkv over the bf16 qkv of the same shape");
    tap_ok(pp_report_fp8_speedup(&r, 0) == 0, "a bf16 row has no fp8 ratio");
    /* moe and mla records */
    pp_moe_row mo;
    memset(&mo, 0, sizeof mo);
    mo.hidden = 4096, mo.experts = 8, mo.topk = 2, mo.moe_ffn = 14336, mo.shared_ffn = 0, mo.tokens = 4096, mo.ep = 1;
    mo.imbalance = 1;
    snprintf(mo.impl, sizeof mo.impl, "grouped");
    snprintf(mo.backend, sizeof mo.backend, "cublas_grouped");
    snprintf(mo.router, sizeof mo.router, "softmax");
    mo.local_experts = 8, mo.rows = 8192;
    mo.fwd_ms = 2.25, mo.fwdbwd_ms = 6.75, mo.expert_fwd_tflops = 650.5, mo.expert_fwdbwd_tflops = 600.25;
    for (int k = 0; k < PP_MOE_PARTS; k++) mo.part_fwd_ms[k] = 0.125 * (k + 1), mo.part_bwd_ms[k] = 0.25 * (k + 1);
    mo.part_fwd_ms[PP_MOE_SHARED] = mo.part_bwd_ms[PP_MOE_SHARED] = 0; /* no shared expert */
    pp_moe_row mbad = mo;
    mbad.topk = 9;
    tap_ok(pp_report_add_moe(&r, &mbad) == -1, "a moe row with topk 9 of 8 experts is refused");
    mbad = mo, mbad.ep = 3;
    tap_ok(pp_report_add_moe(&r, &mbad) == -1, "a moe row whose ep 3 does not divide 8 experts is refused");
    mbad = mo, mbad.part_bwd_ms[2] = NAN;
    tap_ok(pp_report_add_moe(&r, &mbad) == -1 && r.n_moe == 0, "a moe row with a NaN part is refused");
    tap_ok(pp_report_add_moe(&r, &mo) == 0, "moe row added");
    pp_mla_row ml;
    memset(&ml, 0, sizeof ml);
    ml.hidden = 7168, ml.heads = 128, ml.q_lora_rank = 1536, ml.kv_lora_rank = 512, ml.qk_nope_dim = 128;
    ml.qk_rope_dim = 64, ml.v_head_dim = 128, ml.seq = 4096, ml.mbs = 1, ml.tp = 8;
    snprintf(ml.attention, sizeof ml.attention, "flash");
    ml.fwd_ms = 1.5, ml.fwdbwd_ms = 4.75, ml.fwd_tflops = 500, ml.fwdbwd_tflops = 480;
    for (int k = 0; k < PP_MLA_PARTS; k++) ml.part_fwd_ms[k] = 0.1 * (k + 1), ml.part_bwd_ms[k] = 0.2 * (k + 1);
    pp_mla_row lbad2 = ml;
    lbad2.tp = 3;
    tap_ok(pp_report_add_mla(&r, &lbad2) == -1, "an mla row whose tp 3 does not split 128 heads is refused");
    lbad2 = ml, lbad2.qk_rope_dim = 63;
    tap_ok(pp_report_add_mla(&r, &lbad2) == -1 && r.n_mla == 0, "an mla row with an odd rope size is refused");
    tap_ok(pp_report_add_mla(&r, &ml) == 0, "mla row added");
    pp_report_note(&r, "nccl: a note with \"quotes\"");
    pp_report_fail(&r, "gemm fp8: wrong");

    char path[] = "/tmp/pp_probe_unit_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    tap_ok(f && pp_report_write_yaml(&r, f) == 0, "YAML written");
    if (f) fclose(f);
    {
        /* kv_heads is written for the GQA row only: MHA records stay as they were */
        FILE *rf = fopen(path, "r");
        char text[16384];
        size_t nr = rf ? fread(text, 1, sizeof text - 1, rf) : 0;
        text[nr] = 0;
        if (rf) fclose(rf);
        const char *k1 = strstr(text, "kv_heads");
        tap_ok(k1 && !strstr(k1 + 1, "kv_heads") && strstr(text, "kv_heads: 8"),
               "the YAML has one kv_heads key, 8, on the GQA row");
    }

    pp_profile p;
    pp_error err;
    memset(&p, 0, sizeof p);
    memset(&err, 0, sizeof err);
    pp_status st = pp_profile_load_file(&p, path, &err);
    tap_ok(st == PP_OK, "the planner's strict loader reads the written profile (%s)", st == PP_OK ? "ok" : err.msg);
    if (st == PP_OK) {
        tap_ok(!strcmp(p.gpu, "Test \"GPU\""), "gpu name round-trips with its quotes: %s", p.gpu);
        tap_ok(p.n_gemm == 4 && p.gemm[0].m == 8192 && p.gemm[1].n == 6144 && p.gemm[1].k == 4096,
               "gemm shapes round-trip");
        tap_ok(p.n_gemm == 4 && p.gemm[0].dtype == PP_DT_BF16 && p.gemm[2].dtype == PP_DT_FP8 &&
                   p.gemm[3].dtype == PP_DT_FP8 && p.gemm[3].n == 6144,
               "fp8 gemm rows round-trip as dtype fp8");
        tap_near(pp_profile_gemm_tflops(&p, PP_DT_FP8, 8192, 8192, 8192), 1570.8, 1e-6,
                 "the time model's GEMM query reads the fp8 rate for fp8");
        tap_near(pp_profile_gemm_tflops(&p, PP_DT_BF16, 8192, 8192, 8192), 785.4, 1e-6,
                 "and still the bf16 rate for bf16");
        tap_ok(p.n_moe == 1 && p.moe[0].hidden == 4096 && p.moe[0].experts == 8 && p.moe[0].topk == 2 &&
                   p.moe[0].moe_ffn == 14336 && p.moe[0].shared_ffn == 0 && p.moe[0].tokens == 4096 &&
                   p.moe[0].ep == 1 && p.moe[0].grouped == 1 && p.moe[0].sigmoid == 0,
               "the moe record round-trips its shape and impl");
        tap_near(p.n_moe ? p.moe[0].fwdbwd_ms : 0, 6.75, 1e-12, "moe fwd+bwd ms round-trips");
        tap_near(p.n_moe ? p.moe[0].bwd_parts_ms[2] : 0, 0.75, 1e-12, "moe part times round-trip (fc1 backward)");
        tap_near(p.n_moe ? p.moe[0].expert_fwd_tflops : 0, 650.5, 1e-9, "moe expert TFLOP/s round-trips");
        tap_ok(p.n_mla == 1 && p.mla[0].heads == 128 && p.mla[0].q_lora_rank == 1536 && p.mla[0].kv_lora_rank == 512 &&
                   p.mla[0].qk_nope_dim == 128 && p.mla[0].qk_rope_dim == 64 && p.mla[0].v_head_dim == 128 &&
                   p.mla[0].tp == 8 && p.mla[0].flash == 1,
               "the mla record round-trips its shape and attention");
        tap_near(p.n_mla ? p.mla[0].fwd_parts_ms[3] : 0, 0.4, 1e-12, "mla part times round-trip (attn forward)");
        tap_near(p.gemm[0].tflops, 785.4, 1e-6, "gemm TFLOP/s round-trips");
        tap_near(p.copy_gbs, 3067.8, 1e-6, "copy GB/s round-trips");
        tap_near(p.mul_gbs, 3097.3, 1e-6, "mul GB/s round-trips");
        tap_ok(p.n_attn == 1 && p.attn[0].flash && p.attn[0].head_dim == 128, "attention row round-trips");
        tap_near(p.attn[0].fwdbwd_tflops, 392.7, 1e-6, "attention fwd+bwd TFLOP/s round-trips");
        tap_ok(p.n_layer == 2 && p.layer[0].hidden == 2048 && p.layer[0].mbs == 8, "layer row round-trips");
        tap_near(p.layer[0].fwdbwd_ms, 9.5, 1e-6, "layer fwd+bwd ms round-trips");
        tap_ok(p.n_layer == 2 && p.layer[0].kv_heads == 16, "an MHA layer row reads back kv_heads = heads (16)");
        tap_ok(p.n_layer == 2 && p.layer[1].heads == 24 && p.layer[1].kv_heads == 8 && p.layer[1].tp == 2 &&
                   p.layer[1].seq == 4096,
               "the GQA layer row round-trips kv_heads 8 of 24 heads");
        tap_near(p.n_layer == 2 ? p.layer[1].fwdbwd_ms : 0, 95.25, 1e-9, "GQA layer fwd+bwd ms round-trips");
        tap_ok(p.n_nccl == 1 && p.nccl[0].ranks == 2 && p.nccl[0].op == PP_COLL_ALL_REDUCE, "nccl row round-trips");
        tap_near(p.nccl[0].bytes, 1073741824.0, 0, "nccl bytes exact (no 1e+09 rounding)");
        tap_near(pp_profile_busbw_gbs(&p, PP_COLL_ALL_REDUCE, 2, 1073741824.0), 335.5, 1e-6,
                 "the time model's busbw query reads the measured point");
        tap_ok(p.n_optimizer == 1 && p.optimizer[0].params == 1e9 && p.optimizer[0].bytes_per_param == 30,
               "optimizer row round-trips (params exact)");
        tap_near(p.optimizer[0].ms, 11.25, 1e-9, "optimizer ms round-trips");
        tap_near(p.optimizer[0].gbs, 2666.67, 1e-6, "optimizer GB/s round-trips (%%.6g)");
        tap_near(pp_profile_optimizer_s(&p, 5e8), 11.25e-3 / 2, 1e-12, "the optimizer query reads the measured rate");
    }
    pp_profile_free(&p);
    unlink(path);

    char jpath[] = "/tmp/pp_probe_unit_XXXXXX.json";
    fd = mkstemps(jpath, 5);
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    tap_ok(f && pp_report_write_json(&r, f) == 0, "JSON written");
    if (f) fclose(f);
    memset(&p, 0, sizeof p);
    st = pp_profile_load_file(&p, jpath, &err);
    tap_ok(st == PP_OK && p.n_gemm == 4 && p.n_nccl == 1 && p.n_optimizer == 1 && p.n_moe == 1 && p.n_mla == 1,
           "the JSON profile (-o x.json) loads too (%s)", st == PP_OK ? "ok" : err.msg);
    tap_ok(st == PP_OK && p.n_layer == 2 && p.layer[0].kv_heads == 16 && p.layer[1].kv_heads == 8,
           "the JSON profile's layer rows: kv_heads 16 (MHA, absent) and 8 (GQA)");
    pp_profile_free(&p);
    unlink(jpath);

    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    pp_report_write_table(&r, mem);
    fclose(mem);
    tap_ok(buf && strstr(buf, "  3072    24  4096    2   2   8192 swiglu unfused    30.500    95.250    300.0    290.0  "
                            "1.0e-02    8\n") && strstr(buf, "1.0e-02   16\n"),
           "the table's layer rows end in their kv heads (8 GQA, 16 MHA)");
    tap_ok(buf && strstr(buf, "\n# optimizer") && strstr(buf, "1000000000    30     11.250"),
           "the table has the optimizer section and row");
    tap_ok(buf && strstr(buf, "  fp8   square      0   0   8192   8192   8192      700.0   1570.8  2.0e-03   2.00\n") &&
               strstr(buf, "  bf16  square      0   0   8192   8192   8192     1400.0    785.4  1.0e-03      -\n"),
           "the gemm table gives fp8 rows their ratio to bf16 (x_bf16), '-' elsewhere");
    tap_ok(buf && strstr(buf, "\n# moe") && strstr(buf, "grouped cublas_grouped") &&
               strstr(buf, "#   fwd/bwd ms: router 0.125/0.250 permute 0.250/0.500 fc1 0.375/0.750"),
           "the table has the moe section, its row and its parts line");
    tap_ok(buf && strstr(buf, "\n# mla") && strstr(buf, "   7168   128  1536   512  128   64  128  4096    1   8 flash") &&
               strstr(buf, "#   fwd/bwd ms: q 0.100/0.200 kv 0.200/0.400"),
           "the table has the mla section, its row and its parts line");
    if (buf && !strstr(buf, "grouped cublas_grouped")) tap_diag("%s", buf);
    tap_ok(buf && buf[0] == '#' && strstr(buf, "\n# gemm") && strstr(buf, "# WRONG: gemm fp8: wrong") &&
               !strstr(buf, "nan") && !strstr(buf, "inf"),
           "the table is '#'-headed, lists wrong results, prints no nan/inf");
    free(buf);
    pp_report_free(&r);
}

/* Faults: OOM rows, the fault knobs' parsing and the one-line reports. */
static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A profile of `base` and one bad record list is refused by the loader, its message naming `want`. */
static void expect_refused(const char *base, const char *rec, const char *want)
{
    char bp[] = "/tmp/pp_probe_badrec_XXXXXX", text[1024];
    int bfd = mkstemp(bp);
    pp_profile p;
    pp_error err;
    if (bfd >= 0) close(bfd);
    snprintf(text, sizeof text, "%s%s", base, rec);
    write_text(bp, text);
    memset(&p, 0, sizeof p);
    memset(&err, 0, sizeof err);
    pp_status st = pp_profile_load_file(&p, bp, &err);
    tap_ok(st == PP_ERR_INPUT && strstr(err.msg, want), "a bad %.*s record is refused, naming '%s' (%s)",
           (int)strcspn(rec, ":"), rec, want, err.msg);
    pp_profile_free(&p);
    unlink(bp);
}

static void check_faults(void)
{
    /* OOM rows: in the table after the probe's measured rows, in YAML/JSON as `oom` records the
     * planner's strict loader reads */
    pp_report r;
    pp_report_init(&r);
    snprintf(r.gpu, sizeof r.gpu, "NVIDIA H200");
    snprintf(r.measured, sizeof r.measured, "2026-11-22T00:00:00Z");
    pp_gemm_row g = {"bf16", "square", 0, 0, 1024, 1024, 1024, 10.0, 214.7, 1e-3};
    pp_report_add_gemm(&r, &g);
    pp_oom_row o1 = {PP_PROBE_GEMM, "fp32 square m=2048 n=2048 k=2048", 50331648.0, 16777216.0, 12582912.0, false};
    pp_oom_row o2 = {PP_PROBE_LAYER, "hidden=4096 heads=32 seq=2048 mbs=1 tp=1 gelu", 1.5e9, 67108864.0, -1, true};
    pp_oom_row bad = o1;
    bad.probe = PP_PROBE_COUNT;
    tap_ok(pp_report_add_oom(&r, &o1) == 0 && pp_report_add_oom(&r, &o2) == 0, "OOM rows added");
    tap_ok(pp_report_add_oom(&r, &bad) == -1, "an OOM row of no probe is refused");
    bad = o1;
    bad.what[0] = 0;
    tap_ok(pp_report_add_oom(&r, &bad) == -1, "an OOM row without a description is refused");
    bad = o1;
    bad.need_bytes = NAN;
    tap_ok(pp_report_add_oom(&r, &bad) == -1 && r.n_oom == 2, "a NaN need is refused");

    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    pp_report_write_table(&r, mem);
    fclose(mem);
    tap_ok(buf && strstr(buf, "\n  oom   gemm fp32 square m=2048 n=2048 k=2048: OOM at this size (needs >= 48.0 MiB, "
                             "12.0 MiB free on the GPU)\n"),
           "the gemm section has the row 'OOM at this size' with what it needed and what was free");
    tap_ok(buf && strstr(buf, "\n# layer") && strstr(buf, "layer hidden=4096 heads=32 seq=2048 mbs=1 tp=1 gelu: OOM at "
                                                        "this size (needs >= 1.4 GiB; a 64.0 MiB buffer is over "
                                                        "PARPLAN_PROBE_MAX_BYTES)"),
           "a probe with only OOM rows still gets its section, and a capped one says so");
    {
        const char *gm = buf ? strstr(buf, "# gemm") : NULL, *om = buf ? strstr(buf, "  oom   gemm") : NULL,
                   *row = buf ? strstr(buf, "  bf16  square") : NULL;
        tap_ok(gm && row && om && gm < row && row < om, "the OOM row follows the measured rows of its section");
    }
    free(buf);

    char path[] = "/tmp/pp_probe_oom_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    tap_ok(f && pp_report_write_yaml(&r, f) == 0, "YAML with OOM records written");
    if (f) fclose(f);
    pp_profile p;
    pp_error err;
    memset(&p, 0, sizeof p);
    memset(&err, 0, sizeof err);
    pp_status st = pp_profile_load_file(&p, path, &err);
    tap_ok(st == PP_OK && p.n_gemm == 1, "the strict loader reads a profile with `oom` records (%s)",
           st == PP_OK ? "ok" : err.msg);
    pp_profile_free(&p);
    {
        char *text = NULL;
        size_t tl = 0;
        FILE *tf = fopen(path, "r");
        if (tf) {
            text = calloc(1, 65536);
            tl = fread(text, 1, 65535, tf);
            fclose(tf);
        }
        tap_ok(text && tl && strstr(text, "oom:\n  - {probe: \"gemm\", what: \"fp32 square m=2048 n=2048 k=2048\", oom: true, "
                                          "need_bytes: 50331648, request_bytes: 16777216, free_bytes: 12582912}"),
               "the YAML record: probe, what, oom: true, need/request/free bytes");
        tap_ok(text && strstr(text, "need_bytes: 1500000000, request_bytes: 67108864, capped: true}"),
               "unknown free memory is left out, the cap is marked");
        if (text && !strstr(text, "oom:\n  - {probe: gemm")) tap_diag("%s", text);
        free(text);
    }
    unlink(path);
    char jpath[] = "/tmp/pp_probe_oom_XXXXXX.json";
    fd = mkstemps(jpath, 5);
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    tap_ok(f && pp_report_write_json(&r, f) == 0, "JSON with OOM records written");
    if (f) fclose(f);
    memset(&p, 0, sizeof p);
    st = pp_profile_load_file(&p, jpath, &err);
    tap_ok(st == PP_OK, "the JSON profile with `oom` loads (%s)", st == PP_OK ? "ok" : err.msg);
    pp_profile_free(&p);
    unlink(jpath);
    pp_report_free(&r);

    /* the loader is strict about the records */
    const char *base = "gpu: \"X\"\nmeasured: \"2026-01-01\"\n";
    const struct {
        const char *oom, *want;
    } badrec[] = {
        {"oom:\n  - {probe: gemm, what: \"x\", oom: false, need_bytes: 1}\n", "oom: true"},
        {"oom:\n  - {probe: warp, what: \"x\", oom: true, need_bytes: 1}\n", "warp"},
        {"oom:\n  - {probe: gemm, what: \"x\", oom: true, need_bytes: 1, color: 3}\n", "color"},
        {"oom:\n  - {probe: gemm, oom: true, need_bytes: 1}\n", "what"},
        {"oom:\n  - {probe: gemm, what: \"x\", oom: true, need_bytes: -5}\n", "need_bytes"},
    };
    for (size_t i = 0; i < sizeof badrec / sizeof badrec[0]; i++) expect_refused(base, badrec[i].oom, badrec[i].want);

    /* moe: and mla: records, strict like the others */
    const char *moe_ok = "moe:\n  - {hidden: 4096, experts: 8, topk: 2, moe_ffn: 14336, tokens: 4096, impl: \"loop\", "
                         "fwd_ms: 2.5, fwdbwd_ms: 7.5, fwd_parts_ms: {router: 0.1, fc1: 1.0}}\n";
    const char *mla_ok = "mla:\n  - {hidden: 2048, heads: 16, q_lora_rank: 0, kv_lora_rank: 512, qk_nope_dim: 128, "
                         "qk_rope_dim: 64, v_head_dim: 128, seq: 4096, mbs: 1, tp: 2, attention: \"unfused\", "
                         "fwd_ms: 1.0, fwdbwd_ms: 3.0}\n";
    {
        char bp[] = "/tmp/pp_probe_moeok_XXXXXX";
        int bfd = mkstemp(bp);
        if (bfd >= 0) close(bfd);
        char text[1024];
        snprintf(text, sizeof text, "%s%s%soom:\n  - {probe: moe, what: \"x\", oom: true, need_bytes: 1}\n", base, moe_ok,
                 mla_ok);
        write_text(bp, text);
        memset(&p, 0, sizeof p);
        st = pp_profile_load_file(&p, bp, &err);
        tap_ok(st == PP_OK && p.n_moe == 1 && p.moe[0].ep == 1 && p.moe[0].imbalance == 1 && p.moe[0].grouped == 0 &&
                   p.moe[0].fwd_parts_ms[0] == 0.1 && p.moe[0].fwd_parts_ms[1] == 0 && p.n_mla == 1 &&
                   p.mla[0].q_lora_rank == 0 && p.mla[0].flash == 0,
               "minimal moe and mla records load with their defaults (ep 1, imbalance 1, no parts), and an oom "
               "record of the moe probe (%s)", st == PP_OK ? "ok" : err.msg);
        pp_profile_free(&p);
        unlink(bp);
    }
    const struct {
        const char *rec, *want;
    } badml[] = {
        {"moe:\n  - {hidden: 4096, experts: 8, topk: 9, moe_ffn: 1, tokens: 1, impl: loop, fwd_ms: 1, fwdbwd_ms: 2}\n",
         "topk"},
        {"moe:\n  - {hidden: 4096, experts: 8, topk: 2, moe_ffn: 1, tokens: 1, ep: 3, impl: loop, fwd_ms: 1, "
         "fwdbwd_ms: 2}\n", "'ep' 3 does not divide"},
        {"moe:\n  - {hidden: 4096, experts: 8, topk: 2, moe_ffn: 1, tokens: 1, impl: fused, fwd_ms: 1, fwdbwd_ms: 2}\n",
         "fused"},
        {"moe:\n  - {hidden: 4096, experts: 8, topk: 2, moe_ffn: 1, tokens: 1, impl: loop, fwd_ms: 0, fwdbwd_ms: 2}\n",
         "fwd_ms"},
        {"moe:\n  - {hidden: 4096, experts: 8, topk: 2, moe_ffn: 1, tokens: 1, impl: loop, fwd_ms: 1, fwdbwd_ms: 2, "
         "colour: 1}\n", "colour"},
        {"moe:\n  - {hidden: 4096, experts: 8, topk: 2, moe_ffn: 1, tokens: 1, impl: loop, fwd_ms: 1, fwdbwd_ms: 2, "
         "bwd_parts_ms: {router: 1, dispatch: 2}}\n", "dispatch"},
        {"moe:\n  - {hidden: 4096, experts: 8, topk: 2, moe_ffn: 1, impl: loop, fwd_ms: 1, fwdbwd_ms: 2}\n", "tokens"},
        {"moe:\n  - {hidden: 4096, experts: 8, topk: 2, moe_ffn: 1, tokens: 1, impl: loop, imbalance: 0.5, fwd_ms: 1, "
         "fwdbwd_ms: 2}\n", "imbalance"},
        {"moe:\n  - {hidden: 4096, experts: 8, topk: 2, moe_ffn: 1, tokens: 1, impl: loop, router: relu, fwd_ms: 1, "
         "fwdbwd_ms: 2}\n", "relu"},
        {"mla:\n  - {hidden: 2048, heads: 16, kv_lora_rank: 512, qk_nope_dim: 128, qk_rope_dim: 64, v_head_dim: 128, "
         "seq: 4096, mbs: 1, tp: 3, attention: flash, fwd_ms: 1, fwdbwd_ms: 3}\n", "'tp' 3 does not split 16 heads"},
        {"mla:\n  - {hidden: 2048, heads: 16, kv_lora_rank: 512, qk_nope_dim: 128, qk_rope_dim: 63, v_head_dim: 128, "
         "seq: 4096, mbs: 1, tp: 1, attention: flash, fwd_ms: 1, fwdbwd_ms: 3}\n", "qk_rope_dim"},
        {"mla:\n  - {hidden: 2048, heads: 16, q_lora_rank: -1, kv_lora_rank: 512, qk_nope_dim: 128, qk_rope_dim: 64, "
         "v_head_dim: 128, seq: 4096, mbs: 1, tp: 1, attention: flash, fwd_ms: 1, fwdbwd_ms: 3}\n", "q_lora_rank"},
        {"mla:\n  - {hidden: 2048, heads: 16, kv_lora_rank: 512, qk_nope_dim: 128, qk_rope_dim: 64, v_head_dim: 128, "
         "seq: 4096, mbs: 1, tp: 1, attention: sparse, fwd_ms: 1, fwdbwd_ms: 3}\n", "sparse"},
        {"mla:\n  - {hidden: 2048, heads: 16, kv_lora_rank: 512, qk_nope_dim: 128, qk_rope_dim: 64, v_head_dim: 128, "
         "seq: 4096, mbs: 1, tp: 1, attention: flash, fwd_ms: 1}\n", "fwdbwd_ms"},
        {"mla: {hidden: 2048}\n", "sequence"},
    };
    for (size_t i = 0; i < sizeof badml / sizeof badml[0]; i++) expect_refused(base, badml[i].rec, badml[i].want);

    /* PARPLAN_PROBE_MAX_BYTES */
    double b = 0;
    tap_ok(pp_parse_bytes("4194304", &b) == 0 && b == 4194304.0, "bytes: 4194304");
    tap_ok(pp_parse_bytes("4M", &b) == 0 && b == 4194304.0, "bytes: 4M = 4 MiB");
    tap_ok(pp_parse_bytes("2GiB", &b) == 0 && b == 2147483648.0, "bytes: 2GiB");
    tap_ok(pp_parse_bytes("16k", &b) == 0 && b == 16384.0, "bytes: 16k");
    const char *badb[] = {"", "0", "-4", "4X", "4Mx", "1e9", "99999999999999999999", "2097152G", " 4"};
    int refused = 0;
    for (size_t i = 0; i < sizeof badb / sizeof badb[0]; i++) refused += pp_parse_bytes(badb[i], &b) == -1;
    tap_ok(refused == (int)(sizeof badb / sizeof badb[0]), "bytes: %d of %d malformed values refused", refused,
           (int)(sizeof badb / sizeof badb[0]));

    /* PARPLAN_PROBE_INJECT_HANG */
    char op[16] = "x";
    tap_ok(pp_parse_hang("", op, sizeof op) == 0 && op[0] == 0, "hang: empty is none");
    tap_ok(pp_parse_hang("0", op, sizeof op) == 0 && op[0] == 0, "hang: 0 is none");
    tap_ok(pp_parse_hang("1", op, sizeof op) == 0 && !strcmp(op, "any"), "hang: 1 is the first collective");
    tap_ok(pp_parse_hang("all_gather", op, sizeof op) == 0 && !strcmp(op, "all_gather"), "hang: an op name");
    tap_ok(pp_parse_hang("connect", op, sizeof op) == 0 && !strcmp(op, "connect"), "hang: connect (in the host)");
    tap_ok(pp_parse_hang("yes", op, sizeof op) == -1 && pp_parse_hang("allreduce", op, sizeof op) == -1,
           "hang: anything else is refused");

    /* the one-line reports */
    char line[1024];
    pp_fmt_gpu_missing(line, sizeof line, 7, 2);
    tap_ok(!strcmp(line, "GPU 7 is not present (this machine has 2)"), "missing GPU: %s", line);
    int gpus[2] = {0, 1}, pend[1] = {0};
    pp_fmt_timeout(line, sizeof line, "all_reduce", 1048576, 5, gpus, 2, pend, 1);
    tap_ok(!strcmp(line, "collective all_reduce 1048576 bytes timed out after 5 s on GPUs 0,1 (not completed on GPU 0)"),
           "timeout: %s", line);
    pp_fmt_timeout(line, sizeof line, "NCCL communicator set-up", 0, 30, gpus, 2, pend, 0);
    tap_ok(!strcmp(line, "NCCL communicator set-up timed out after 30 s on GPUs 0,1"), "set-up timeout: %s", line);
    pp_gpu_holder h[2] = {{1234, 143000.0 * 1048576, "python3"}, {99, -1, ""}};
    pp_fmt_gpu_busy(line, sizeof line, 0, "NVIDIA H200", "too little free memory", 512.0 * 1048576, 143771.0 * 1048576,
                    1024.0 * 1048576, 0, h, 2);
    tap_ok(!strcmp(line, "GPU 0 (NVIDIA H200) is busy: too little free memory; 512 of 143771 MiB free, the probes need "
                         "1024 MiB; held by pid 1234 (python3) 143000 MiB, pid 99"),
           "busy: %s", line);
    pp_fmt_gpu_busy(line, sizeof line, 1, "NVIDIA H100", "cannot create a CUDA context: CUDA-capable device(s) is/are "
                    "busy or unavailable", -1, -1, 0, 3, NULL, -1);
    tap_ok(!strcmp(line, "GPU 1 (NVIDIA H100) is busy: cannot create a CUDA context: CUDA-capable device(s) is/are busy "
                         "or unavailable; compute mode exclusive-process"),
           "busy, exclusive-process: %s", line);
    pp_fmt_gpu_busy(line, sizeof line, 0, "G", "too little free memory", 10.0 * 1048576, 100.0 * 1048576, 0, -1, NULL, 0);
    tap_ok(strstr(line, "no process holding it is visible from here") != NULL, "busy with no holder visible says so");

    /* the probe's error state: an OOM is told apart from other failures, and cleared */
    pp_probe_error_clear();
    pp_probe_error_oom("x.cu", 3, 4096, 100, true, "alloc %d", 1);
    double rq = 0, fr = 0;
    bool cp = false;
    tap_ok(pp_probe_error_is_oom(&rq, &fr, &cp) && rq == 4096 && fr == 100 && cp, "an OOM is recorded with its figures");
    tap_ok(!strcmp(pp_probe_error_msg(), "alloc 1 (x.cu:3)"), "and its message: %s", pp_probe_error_msg());
    pp_probe_error_clear();
    pp_probe_error("y.cu", 4, "launch failed");
    tap_ok(!pp_probe_error_is_oom(NULL, NULL, NULL), "another failure is not an OOM");
    pp_probe_error_oom("z.cu", 5, 1, 1, false, "later");
    tap_ok(!pp_probe_error_is_oom(NULL, NULL, NULL) && strstr(pp_probe_error_msg(), "launch failed"),
           "the first error is kept");
    pp_probe_error_clear();
}

int main(void)
{
    check_report();
    check_faults();
    return tap_done();
}
