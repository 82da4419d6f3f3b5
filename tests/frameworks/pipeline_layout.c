/* Megatron's pipeline split (planner/frameworks/pipeline_layout.c): the layout-string parser on
 * good strings (Megatron-Bridge's and the Model Zoo's layouts, the grammar's corners) and on every
 * error it reports, each with the column of the character at fault; the writer read back by the
 * parser; the split of --decoder-first/last-pipeline-num-layers and the account-for flags with
 * Megatron's checks; and which of those flags give a layout's split. */
#include <stdio.h>
#include <string.h>

#include "pp_pipeline.h"
#include "tap.h"

static int counts[PP_MAX_VSTAGES];

/* Parse s; compare with want[0..n) (NULL: only the status). */
static bool parses(const char *s, int64_t pp, int64_t layers, int64_t mtp, int64_t want_vpp, const int *want, int n)
{
    int64_t vpp = 0;
    pp_error e = {0};
    if (pp_pipeline_layout_parse(s, pp, layers, mtp, counts, PP_MAX_VSTAGES, &vpp, &e) != PP_OK) {
        tap_diag("'%s': %s", s, e.msg);
        return false;
    }
    if (vpp != want_vpp) return false;
    for (int k = 0; want && k < n; k++)
        if (counts[k] != want[k]) return false;
    return true;
}

/* Parse s, which must fail at column col with a message holding what. */
static void fails(const char *s, int64_t pp, int64_t layers, int64_t mtp, int col, const char *what)
{
    int64_t vpp = 0;
    pp_error e = {0};
    pp_status st = pp_pipeline_layout_parse(s, pp, layers, mtp, counts, PP_MAX_VSTAGES, &vpp, &e);
    tap_ok(st == PP_ERR_INPUT && e.col == col && strstr(e.msg, what), "'%s' (pp %lld, %lld layers): column %d, %s (%s)",
           s, (long long)pp, (long long)layers, col, what, e.msg);
}

static pp_work model(int64_t layers, int64_t mtp)
{
    pp_work w;
    memset(&w, 0, sizeof w);
    pp_model_init(&w.model);
    w.model.layers = layers;
    w.model.mtp_layers = mtp;
    return w;
}

/* The writer's string for l read back: the same split. */
static void roundtrip(const char *name, const pp_work *w, const pp_layout *l, const char *want)
{
    char s[4096];
    pp_error e = {0};
    pp_status st = pp_pipeline_layout_format(w, l, s, sizeof s, &e);
    int64_t vpp = 0;
    bool same = st == PP_OK && (!want || !strcmp(s, want)) &&
                pp_pipeline_layout_parse(s, l->pp, w->model.layers, w->model.mtp_layers, counts, PP_MAX_VSTAGES, &vpp,
                                         &e) == PP_OK &&
                vpp == (l->vpp > 1 ? l->vpp : 1);
    for (int64_t k = 0; same && k < l->pp * vpp; k++)
        same = counts[k] == pp_layout_vstage_layers(w, l, k % l->pp, k / l->pp);
    tap_ok(same, "%s: written '%s'%s%s, read back to the same split", name, st == PP_OK ? s : e.msg,
           want ? ", expected " : "", want ? want : "");
}

int main(void)
{
    /* ---- good strings */
    int dsv3[32] = {1};
    for (int k = 1; k < 31; k++) dsv3[k] = 2;
    dsv3[31] = 0;
    tap_ok(parses("Et|(tt|)*30mL", 8, 61, 1, 4, dsv3, 32),
           "Megatron-Bridge's DeepSeek-V3 'Et|(tt|)*30mL' on pp 8: vpp 4, 1 / 2 x 30 / 0 layers (the MTP layer and the "
           "loss alone)");
    int b200[16] = {4};
    for (int k = 1; k < 15; k++) b200[k] = 4;
    b200[15] = 1;
    tap_ok(parses("Et*4|(t*4|)*14tmL", 8, 61, 1, 2, b200, 16), "its B200 'Et*4|(t*4|)*14tmL' on pp 8: vpp 2, 4 x 15 / 1");
    tap_ok(parses("Et*3|(t*2)*2,tL", 2, 8, 0, 1, (const int[]){3, 5}, 2),
           "a group without '|' and a comma: 'Et*3|(t*2)*2,tL' = 3 / 5");
    int mz[96] = {0};
    for (int k = 1; k < 95; k++) mz[k] = 1;
    tap_ok(parses("E|(t|)*94L", 32, 94, 0, 3, mz, 96), "the Model Zoo's Qwen3-235B on pp 32 x vpp 3: 'E|(t|)*94L'");
    tap_ok(parses("Et*4||t*4L", 3, 8, 0, 1, (const int[]){4, 0, 4}, 3), "an empty stage: 'Et*4||t*4L' = 4 / 0 / 4");
    tap_ok(parses("Et|*3t*2L", 2, 3, 0, 2, (const int[]){1, 0, 0, 2}, 4),
           "'|*3' repeats the separator (Megatron's second substitution): 'Et|*3t*2L' = 1 / 0 / 0 / 2");
    tap_ok(parses("Et*0|tL", 2, 1, 0, 1, (const int[]){0, 1}, 2), "'t*0' is no layer: 'Et*0|tL' = 0 / 1");
    tap_ok(parses("EttttttttttL", 1, 10, 0, 1, (const int[]){10}, 1), "one stage: 'EttttttttttL' = 10");
    tap_ok(parses("Et*2|(tt|)*2(t|)*2t*2L", 2, 10, 0, 3, (const int[]){2, 2, 2, 1, 1, 2}, 6),
           "two groups in a row: 'Et*2|(tt|)*2(t|)*2t*2L' = 2 / 2 / 2 / 1 / 1 / 2");

    /* ---- every error, with its column */
    fails("Et|tx", 2, 2, 0, 5, "'x' at column 5");
    fails("Et| tL", 2, 2, 0, 4, "is a space");
    fails("Et|(tt|)t*20L", 2, 24, 0, 4, "opens a group");
    /* groups do not nest: "((t|)*2" repeats "(t|" (up to the first ')'), whose '(' is left over */
    fails("Et|((t|)*2L", 2, 3, 0, 5, "'(' at column 5");
    fails("Et|()*2tL", 2, 2, 0, 4, "opens a group");     /* a group holds one or more characters */
    fails("Et|t)*2L", 2, 2, 0, 5, "closes no group");    /* ")*2" repeats the ')' itself */
    fails("Et|tL)", 2, 2, 0, 6, "closes no group");
    fails("E|*t*24L", 2, 24, 0, 3, "'*' at column 3");
    fails("Et*|tL", 2, 2, 0, 3, "'*' at column 3");
    fails("Et3|tL", 2, 4, 0, 3, "is a count without '*'");
    fails("Et*11|Et*13L", 2, 24, 0, 7, "second embedding 'E' at column 7");
    fails("Et*12|Lt*11L", 2, 23, 0, 12, "second loss 'L' at column 12");
    fails("t*24|EL", 2, 24, 0, 1, "must begin with the embedding 'E'");
    fails("|t*24|EL", 3, 24, 0, 2, "must begin with the embedding 'E'");
    fails("Et*12|Lt*12", 2, 24, 0, 8, "must end with the loss 'L'; column 8 holds 't'");
    fails("Et*8|t*8|t*8L", 2, 24, 0, 0, "has 3 stages, not a multiple of the 2 pipeline stages");
    fails("Et*10|t*10L", 2, 24, 0, 0, "holds 20 decoder layers 't', the model has 24");
    fails("Et*30|t*31L", 2, 61, 1, 0, "holds 0 MTP layers 'm', the model has 1");
    fails("Et*30|t*30mmL", 2, 60, 1, 11, "holds 2 MTP layers 'm', the model has 1");
    fails("Et*30|mt*31L", 2, 61, 1, 8, "a decoder layer 't' at column 8");
    /* Megatron's own docstring example puts the MTP layer in a stage of its own, before the loss's
     * (a "standalone" MTP stage): parplan prices the MTP layers with the loss */
    fails("Ettt|(tt|)*29,m|L", 16, 61, 1, 15, "is in virtual stage 1 of rank 14");
    fails("", 2, 2, 0, 0, "is empty");
    fails("|", 2, 2, 0, 0, "holds no layer");
    fails("Et*9999999L", 1, 9999999, 0, 2, "the repeat at column 2 unrolls the layout to more than");

    /* ---- the writer, read back */
    pp_layout l;
    pp_layout_init(&l);
    pp_work w = model(61, 1);
    l.pp = 8, l.vpp = 4;
    roundtrip("DeepSeek-V3 balanced on 8 x 4", &w, &l, "Et|(tt|)*30mL");
    l.vpp = 2;
    roundtrip("DeepSeek-V3 balanced on 8 x 2", &w, &l, "Et*3|(t*4|)*14ttmL");
    w = model(94, 0);
    l.pp = 32, l.vpp = 3;
    roundtrip("Qwen3-235B balanced on 32 x 3", &w, &l, "E|(t|)*94L");
    l.pp = 8, l.vpp = 4;
    roundtrip("Qwen3-235B balanced on 8 x 4", &w, &l, "Ett|(t*3|)*30ttL");
    static const int given[8] = {2, 4, 4, 4, 4, 4, 4, 4};
    w = model(30, 0);
    l.pp = 4, l.vpp = 2, l.vstage_layers = given;
    roundtrip("a given split on 4 x 2", &w, &l, "Ett|(t*4|)*6t*4L");
    l.vstage_layers = NULL;
    l.vpp = 1;
    roundtrip("no interleaving, 30 layers on 4 stages (remainder first, stage by stage)", &w, &l, "Et*8|t*8|t*7|t*7L");

    /* ---- Megatron's flags */
    pp_pipeline_flags f = {6, 0, false, false};
    pp_error e = {0};
    tap_ok(pp_pipeline_split_megatron(30, 4, 2, &f, "--first", "--last", counts, &e) == PP_OK && counts[0] == 3 &&
               counts[1] == 4 && counts[3] == 4 && counts[4] == 3 && counts[7] == 4,
           "first 6 of 30 on 4 x 2: the first stage's chunks 3 + 3, the others' 4 + 4 (%s)", e.msg);
    f = (pp_pipeline_flags){0, 0, true, true};
    tap_ok(pp_pipeline_split_megatron(94, 8, 4, &f, "--first", "--last", counts, &e) == PP_OK && counts[0] == 2 &&
               counts[1] == 3 && counts[30] == 3 && counts[31] == 2,
           "account for the embedding and the loss, 94 on 8 x 4: 2 / 3 x 30 / 2 (%s)", e.msg);
    f = (pp_pipeline_flags){3, 0, false, false};
    tap_ok(pp_pipeline_split_megatron(30, 4, 2, &f, "--first-stage-layers", "--last-stage-layers", counts, &e) ==
                   PP_ERR_INPUT && strstr(e.msg, "--first-stage-layers 3 is not divisible by the 2 virtual stages"),
           "first 3 on vpp 2: %s", e.msg);
    f = (pp_pipeline_flags){4, 0, false, false};
    tap_ok(pp_pipeline_split_megatron(24, 4, 1, &f, "--first-stage-layers", "--last-stage-layers", counts, &e) ==
                   PP_ERR_INPUT && strstr(e.msg, "the other 20 layers do not split evenly over the 3 middle"),
           "first 4 of 24 on 4: %s", e.msg);
    f = (pp_pipeline_flags){4, 0, true, false};
    tap_ok(pp_pipeline_split_megatron(24, 4, 1, &f, "--first-stage-layers", "--last-stage-layers", counts, &e) ==
                   PP_ERR_INPUT && strstr(e.msg, "exclude each other"),
           "first/last with the account flags: %s", e.msg);
    f = (pp_pipeline_flags){0, 0, true, false};
    tap_ok(pp_pipeline_split_megatron(94, 8, 4, &f, "--first", "--last", counts, &e) == PP_ERR_INPUT &&
               strstr(e.msg, "do not divide over 8"),
           "94 + embedding on 8: %s", e.msg);

    /* ---- which flags give a split */
    pp_pipeline_flags got;
    w = model(94, 0);
    l.pp = 8, l.vpp = 4, l.vstage_layers = NULL;
    tap_ok(pp_pipeline_split_flags(&w, &l, &got) && got.account_embedding && got.account_loss && !got.first && !got.last,
           "Qwen3-235B's balanced split on 8 x 4 is the account-for flags'");
    w = model(30, 0);
    static const int first6[8] = {3, 4, 4, 4, 3, 4, 4, 4};
    l.pp = 4, l.vpp = 2, l.vstage_layers = first6;
    tap_ok(pp_pipeline_split_flags(&w, &l, &got) && got.first == 6 && !got.last && !got.account_embedding,
           "3+3 / 8 / 8 / 8 on 4 x 2 is --decoder-first-pipeline-num-layers 6");
    w = model(61, 1);
    l.pp = 8, l.vpp = 4, l.vstage_layers = NULL;
    tap_ok(!pp_pipeline_split_flags(&w, &l, &got), "DeepSeek-V3's 'Et|(tt|)*30mL' needs the layout string");
    return tap_done();
}
