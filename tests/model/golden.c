/* Golden tests of `parplan models --json` and `parplan models --model X --json`: stdout must
 * equal the committed file under tests/model/data/ byte for byte. Suite: golden.
 *
 * After an intended change (a catalog entry, a field of the JSON), regenerate and review:
 *   PARPLAN_REGEN_GOLDEN=1 meson test -C <build> --suite golden
 *   git diff tests/model/data/
 * argv[1] is the golden file, argv[2...] the arguments of parplan (default: models --json);
 * $PARPLAN the CLI; $PARPLAN_MODELS_DIR the catalog. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "readfile.h"
#include "tap.h"

/* Run cmd, capture stdout into a malloc'ed buffer; returns the exit status or -1. */
static int capture(const char *cmd, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, p)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    int st = pclose(p);
    if (!buf) return -1;
    *out = buf;
    *len = n;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
    const char *exe = getenv("PARPLAN");
    if (argc < 2 || !exe) return tap_skip_all("run through meson test (needs $PARPLAN and the golden path)");
    char cmd[4096];
    int n = snprintf(cmd, sizeof cmd, "'%s'", exe);
    if (argc > 2) {
        for (int i = 2; i < argc && n < (int)sizeof cmd; i++) /* arguments without quotes (ours) */
            n += snprintf(cmd + n, sizeof cmd - (size_t)n, " '%s'", argv[i]);
    } else {
        snprintf(cmd + n, sizeof cmd - (size_t)n, " models --json");
    }
    char *got;
    size_t got_len;
    int rc = capture(cmd, &got, &got_len);
    tap_ok(rc == 0, "parplan models --json exits 0 (%d)", rc);
    if (!got) return tap_done();
    if (getenv("PARPLAN_REGEN_GOLDEN")) {
        FILE *f = fopen(argv[1], "wb");
        int ok = f && fwrite(got, 1, got_len, f) == got_len;
        if (f) fclose(f);
        tap_ok(ok, "regenerated %s (%zu bytes): review the diff before committing", argv[1], got_len);
        free(got);
        return tap_done();
    }
    size_t want_len = 0;
    char *want = tc_read_file(argv[1], &want_len);
    if (tap_ok(want != NULL, "read %s", argv[1])) {
        size_t i = 0;
        while (i < got_len && i < want_len && got[i] == want[i]) i++;
        int same = got_len == want_len && i == got_len;
        tap_ok(same, "%s equals the golden file byte for byte", cmd);
        if (!same) {
            int line = 1;
            for (size_t k = 0; k < i; k++) line += want[k] == '\n';
            tap_diag("first difference at byte %zu (line %d of the golden file); sizes %zu vs %zu", i, line,
                     got_len, want_len);
            tap_diag("regenerate with PARPLAN_REGEN_GOLDEN=1 if the change is intended");
        }
    }
    if (argc > 2) {
        /* models --model X --json: one object with the required names */
        tap_ok(got_len > 2 && got[0] == '{' && strstr(got, "\n  \"params_total\": ") &&
                   strstr(got, "\n  \"params_active\": ") && strstr(got, "\"params_breakdown\": {") &&
                   strstr(got, "\"tensors\": ["), "one object with params_total, params_active, params_breakdown, tensors");
        tap_ok(!strstr(got, ": null") && !strstr(got, ": nan") && !strstr(got, ": inf"), "no NaN/inf in the output");
        free(want);
        free(got);
        return tap_done();
    }
    /* The output is one JSON document with both arrays (a cheap structural check). */
    tap_ok(got_len > 2 && got[0] == '{' && strstr(got, "\"models\": [") && strstr(got, "\"gpus\": ["),
           "one object with models and gpus");
    /* pp_json writes a non-finite number as null: none of our fields may be null */
    tap_ok(!strstr(got, ": null") && !strstr(got, ": nan") && !strstr(got, ": inf"), "no NaN/inf in the output");
    free(want);
    free(got);

    /* The table form: two #-headed tables. */
    snprintf(cmd, sizeof cmd, "'%s' models", exe);
    rc = capture(cmd, &got, &got_len);
    tap_ok(rc == 0 && got && strstr(got, "# models") && strstr(got, "# GPUs") && strstr(got, "llama2-70b") &&
               strstr(got, "h100-sxm"), "parplan models prints both tables");
    free(got);
    return tap_done();
}
