/* Remedies as commands (cli.h): the library finds them (pp_run_remedies_find); here each becomes
 * the `parplan check` command a user types, which is run through the same parsing, resolution and
 * pricing before it is printed. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A token as the shell reads it back. */
static void put_word(char *buf, size_t n, size_t *k, const char *s)
{
    bool plain = *s != 0;
    for (const char *c = s; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/:,=+-@%", *c)) plain = false;
    if (*k < n) *k += (size_t)snprintf(buf + *k, n - *k, *k ? " " : "");
    if (plain) {
        if (*k < n) *k += (size_t)snprintf(buf + *k, n - *k, "%s", s);
        return;
    }
    if (*k < n) *k += (size_t)snprintf(buf + *k, n - *k, "'");
    for (const char *c = s; *c && *k < n; c++)
        *k += (size_t)snprintf(buf + *k, n - *k, *c == '\'' ? "'\\''" : "%c", *c);
    if (*k < n) *k += (size_t)snprintf(buf + *k, n - *k, "'");
}

/* Whether request key k states the layout (what a remedy restates in full). */
static bool layout_key(int k) { return k >= PP_RQ_TP && k <= PP_RQ_LAST_STAGE; }

/* c's arguments without its layout flags (and --seq when the remedy sets it) and without the
 * command's own options, then the remedy's layout: into toks (pointers into c->argv and into
 * store), returning how many. */
static int remedy_tokens(const pp_cli *c, const pp_remedy *r, const pp_work *w, char *store, size_t sn, char **toks,
                         int cap)
{
    int nt = 0;
    for (int i = 0; i < c->argc && nt < cap; i++) {
        const char *a = c->argv[i];
        if (a[0] != '-' || !strcmp(a, "-")) continue; /* check takes no positional argument */
        char name[64];
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        snprintf(name, sizeof name, "%.*s", (int)(nl < sizeof name ? nl : sizeof name - 1), a);
        bool req = false;
        const pp_option *o = pp_cli_option(c->cmd, name, &req);
        bool value = o && o->kind != PP_OPT_FLAG && o->kind != PP_OPT_CLEAR && o->kind != PP_OPT_SET && !eq;
        bool drop = !req || (o && (layout_key(o->key) || (o->key == PP_RQ_SEQ && r->seq != w->model.seq) ||
                                   (o->key == PP_RQ_CPU_OFFLOAD_LAYERS &&
                                    r->cpu_offload_layers != w->stack.cpu_offload_layers)));
        if (!drop) {
            toks[nt++] = c->argv[i];
            if (value && i + 1 < c->argc && nt < cap) toks[nt++] = c->argv[i + 1];
        }
        if (value) i++;
    }
    pp_remedy_layout_args(w, r, store, sn);
    for (char *save = NULL, *t = strtok_r(store, " ", &save); t && nt < cap; t = strtok_r(NULL, " ", &save)) {
        size_t tl = strlen(t);
        if (tl >= 2 && t[0] == '\'' && t[tl - 1] == '\'') { /* the shell's quotes (pp_layout_args) */
            t[tl - 1] = 0;
            t++;
        }
        toks[nt++] = t;
    }
    return nt;
}

/* Run the command's tokens as `parplan check` would: true when it resolves and fits. */
static bool verify(const pp_cli *c, char **toks, int nt)
{
    pp_cli *v = calloc(1, sizeof *v);
    pp_run *run = calloc(1, sizeof *run);
    bool ok = false;
    pp_error err = {0};
    if (!v || !run) goto done;
    v->argv0 = c->argv0;
    if (pp_cli_parse(v, "check", nt, toks, &err) != PP_OK) goto done;
    v->quiet = true;
    if (pp_cli_work(v, true, &err) != PP_OK) goto done;
    pp_run_opts ro = {.stages = v->stages, .given_split = "flags"};
    if (pp_run_build(&v->work, &v->layout, &ro, run, &err) != PP_OK) goto done;
    ok = run->fits;
done:
    if (v) pp_cli_free(v);
    free(v);
    free(run);
    return ok;
}

pp_status pp_cli_remedies_find(pp_cli *c, const pp_layout *l, pp_cli_remedies *out, pp_error *err)
{
    memset(out, 0, sizeof *out);
    /* the search prices hundreds of layouts and runs each command it keeps: seconds on a large MoE */
    if (!c->quiet && isatty(STDERR_FILENO))
        fprintf(stderr, "parplan: the layout does not fit; looking for the nearest ones that do ...\n");
    pp_status st = pp_run_remedies_find(&c->work, l, c->allow_seq_change, &out->rm, err);
    if (st != PP_OK) return st;
    int kept = 0;
    for (int i = 0; i < out->rm.n; i++) {
        char store[1024], *toks[256];
        int nt = remedy_tokens(c, &out->rm.r[i], &c->work, store, sizeof store, toks, 256);
        size_t k = 0;
        char *cmd = out->command[kept];
        cmd[0] = 0;
        put_word(cmd, sizeof out->command[0], &k, "parplan");
        put_word(cmd, sizeof out->command[0], &k, "check");
        for (int t = 0; t < nt; t++) put_word(cmd, sizeof out->command[0], &k, toks[t]);
        if (verify(c, toks, nt)) {
            out->rm.r[kept] = out->rm.r[i];
            out->verified[kept++] = true;
        } else {
            out->unverified++;
        }
    }
    out->rm.n = kept;
    return PP_OK;
}

void pp_cli_remedies_print(FILE *f, const pp_cli *c, const pp_cli_remedies *rr)
{
    const pp_run_remedies *rm = &rr->rm;
    char need[32], lab[320], ch[320];
    if (rm->n > 0) {
        fprintf(f, "%s\n", rm->from_plan ? "remedy: no layout within three changes fits; plan's #1 on these GPUs does:"
                                         : "remedies: the nearest layouts that fit, fewest changes first, then fastest "
                                           "(each command run before it is shown):");
        for (int i = 0; i < rm->n; i++) {
            const pp_remedy *r = &rm->r[i];
            pp_remedy_changes(&c->work, r, ch, sizeof ch);
            fprintf(f, "  %d. %s: needs %s, step %.3f s\n     %s\n", i + 1, ch,
                    pp_fmt_bytes(r->need_bytes, need, sizeof need), r->step_time_s, rr->command[i]);
        }
    } else if (rm->min_gpus > 0) {
        fprintf(f, "remedy: no layout fits on %lld GPUs; the smallest count at which plan finds one is %lld "
                   "(%s, needs %s, step %.3f s): parplan plan with --gpus %lld\n",
                (long long)c->work.gpus, (long long)rm->min_gpus, pp_layout_label(&rm->min_pick.best.layout, lab, sizeof lab),
                pp_fmt_bytes(rm->min_pick.best.worst_bytes, need, sizeof need), rm->min_pick.best.time.step_time_s,
                (long long)rm->min_gpus);
    } else if (rr->unverified > 0 && rm->min_gpus == 0) {
        /* found, but a command did not price as found: none is shown rather than a wrong one */
        fprintf(f, "remedy: %d layout(s) found did not fit when their check command was run; none is shown "
                   "(parplan plan gives the layouts that do)\n", rr->unverified);
    } else if (rm->min_gpus < 0) {
        fprintf(f, "remedy: no layout fits on any count up to %lld GPUs (a smaller global batch or a shorter "
                   "sequence, then)\n", (long long)rm->min_gpus_searched);
    }
}

void pp_cli_remedies_json(pp_json *j, const pp_cli *c, const pp_cli_remedies *rr)
{
    const pp_run_remedies *rm = &rr->rm;
    pp_json_key(j, "remedies");
    pp_json_arr_begin(j);
    for (int i = 0; i < rm->n; i++) {
        const pp_remedy *r = &rm->r[i];
        pp_json_obj_begin(j);
        pp_json_kstr(j, "command", rr->command[i]);
        pp_json_key(j, "changes");
        pp_json_obj_begin(j);
        const pp_layout *l = &r->layout;
        for (int k = 0; k < PP_KNOB_COUNT; k++) {
            if (!(r->changed & (1u << k))) continue;
            switch ((pp_knob)k) {
            case PP_KNOB_TP: pp_json_knum(j, "tp", (double)l->tp), pp_json_kbool(j, "sp", l->sp); break;
            case PP_KNOB_PP: pp_json_knum(j, "pp", (double)l->pp); break;
            case PP_KNOB_VPP: pp_json_knum(j, "vpp", (double)l->vpp); break;
            case PP_KNOB_CP: pp_json_knum(j, "cp", (double)l->cp); break;
            case PP_KNOB_EP: pp_json_knum(j, "ep", (double)l->ep); break;
            case PP_KNOB_MBS: pp_json_knum(j, "mbs", (double)l->mbs); break;
            case PP_KNOB_RECOMPUTE: pp_json_kstr(j, "recompute", pp_recompute_names[l->recompute]); break;
            case PP_KNOB_SHARDING:
                pp_json_kbool(j, "dist_opt", l->dist_opt);
                pp_json_knum(j, "zero", (double)l->zero);
                break;
            case PP_KNOB_OFFLOAD: pp_json_kstr(j, "offload", pp_offload_names[l->offload]); break;
            case PP_KNOB_ACT_OFFLOAD: pp_json_knum(j, "cpu_offload_layers", (double)r->cpu_offload_layers); break;
            case PP_KNOB_SEQ: pp_json_knum(j, "seq", (double)r->seq); break;
            default: break;
            }
        }
        pp_json_obj_end(j);
        pp_json_knum(j, "need_bytes", r->need_bytes);
        pp_json_knum(j, "step_time_s", r->step_time_s);
        pp_json_kbool(j, "from_plan", rm->from_plan);
        pp_json_obj_end(j);
    }
    pp_json_arr_end(j);
    pp_json_key(j, "min_gpus");
    if (rm->min_gpus > 0) pp_json_num(j, (double)rm->min_gpus);
    else pp_json_null(j);
    pp_json_key(j, "min_gpus_best");
    if (rm->min_gpus > 0) {
        char lab[320];
        pp_json_obj_begin(j);
        pp_json_kstr(j, "label", pp_layout_label(&rm->min_pick.best.layout, lab, sizeof lab));
        /* the layout flags that state it at that count (with --gpus min_gpus) */
        pp_work wm = c->work;
        wm.gpus = rm->min_gpus;
        char args[512];
        pp_layout_args(&wm, &rm->min_pick.best.layout, args, sizeof args);
        pp_json_kstr(j, "args", args);
        pp_json_knum(j, "need_bytes", rm->min_pick.best.worst_bytes);
        pp_json_knum(j, "step_time_s", rm->min_pick.best.time.step_time_s);
        pp_json_obj_end(j);
    } else {
        pp_json_null(j);
    }
}
