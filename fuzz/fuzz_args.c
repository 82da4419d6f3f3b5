/* libFuzzer harness: the request's option parser (pp_request_parse, the table every work command
 * shares) and, for argument lists it accepts, the one merge of the request (pp_request_resolve:
 * catalog names, inline model overrides, cluster, layout rules) and the memory and time models on
 * the result.
 *
 * Input: the subcommand index (first byte mod 7: the six commands or a junk name), then the
 * arguments separated by NUL or newline bytes. Values that would name files (containing '/',
 * or starting with '.') are not resolved, so the fuzzer cannot wander the file system (a FIFO
 * or /dev/zero there is the bad-input suite's business, tests/cli). The catalog is loaded once. */
#include "pp_request.h"
#include "fuzz_common.h"

static pp_catalog fuzz_cat;
static bool fuzz_have_cat;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char dir[1024];
    pp_error err = {0};
    if (pp_catalog_find_dir(NULL, dir, sizeof dir, &err) == PP_OK &&
        pp_catalog_load(&fuzz_cat, dir, &err) == PP_OK)
        fuzz_have_cat = true;
    else
        fprintf(stderr, "fuzz_args: no catalog (%s): parsing only\n", err.msg);
    return 0;
}

static bool is_pathlike(const char *s) { return s && (strchr(s, '/') || s[0] == '.'); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const cmds[] = {"models", "check", "plan", "launch", "probe", "estimate", "bogus"};
    if (size < 1 || size > 4096) return 0;
    const char *cmd = cmds[data[0] % 7];
    /* A NUL-separated copy: argv strings point into it. */
    char *buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    char *argv[257];
    int argc = 0;
    size_t start = 0;
    for (size_t i = 0; i < size; i++) {
        if (i == size - 1 || buf[i] == 0 || buf[i] == '\n') {
            buf[i] = 0;
            if (argc < 256 && !(i == size - 1 && i == start)) argv[argc++] = buf + start;
            start = i + 1;
        }
    }
    argv[argc] = NULL;

    pp_request rq;
    pp_request_init(&rq);
    pp_resolved res;
    memset(&res, 0, sizeof res);
    pp_error err = {0};
    pp_status st = pp_request_parse(&rq, argc, argv, &err);
    if (st != PP_OK) {
        fuzz_check_error(st, &err, "pp_request_parse");
        FUZZ_CHECK(err.line == 0, "a command-line error with a line number");
        goto done;
    }
    bool works = !strcmp(cmd, "check") || !strcmp(cmd, "plan") || !strcmp(cmd, "launch") ||
                 !strcmp(cmd, "estimate");
    if (!works || !fuzz_have_cat || is_pathlike(rq.model) || is_pathlike(rq.gpu) || rq.profile || rq.megatron_args)
        goto done;
    err = (pp_error){0};
    st = pp_request_resolve(&rq, &fuzz_cat, strcmp(cmd, "plan") != 0, true, &res, &err);
    if (st != PP_OK) {
        fuzz_check_error(st, &err, "pp_request_resolve");
    } else {
        fuzz_check_model(&res.work.model);
        /* Any accepted layout, pp beyond PP_MAX_STAGES included: the models must refuse what
         * they cannot hold, never write past their tables. */
        if (strcmp(cmd, "plan") != 0) fuzz_check_estimates(&res.work, &res.layout);
    }
done:
    pp_resolved_free(&res);
    pp_request_free(&rq);
    free(buf);
    return 0;
}
