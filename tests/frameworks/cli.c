/* `parplan launch` from the command line ($PARPLAN): exit statuses and one-line errors for bad
 * input, stdout vs -o DIR, --json, and that the predictions of the memory and time models reach
 * the comment. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static char out_path[256], err_path[256], outbuf[1 << 16], errbuf[4096];

static void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f) fclose(f);
}

static int run(const char *args)
{
    const char *bin = getenv("PARPLAN");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' launch %s >%s 2>%s", bin, args, out_path, err_path);
    int rc = system(cmd);
    slurp(out_path, outbuf, sizeof outbuf);
    slurp(err_path, errbuf, sizeof errbuf);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool one_line_error(void)
{
    size_t n = strlen(errbuf);
    return !strncmp(errbuf, "parplan: ", 9) && n > 0 && errbuf[n - 1] == '\n' && !strchr(errbuf, '\n')[1];
}

#define WORK "--model gpt3-1.3b --gpu h100-sxm --gpus 8 --gbs 64 --mbs 2"

int main(void)
{
    if (!getenv("PARPLAN")) return tap_skip_all("PARPLAN not set");
    snprintf(out_path, sizeof out_path, "/tmp/parplan_launch_cli_%d.out", (int)getpid());
    snprintf(err_path, sizeof err_path, "/tmp/parplan_launch_cli_%d.err", (int)getpid());

    int rc = run(WORK " --format bogus");
    tap_ok(rc == 2 && one_line_error() && strstr(errbuf, "--format"), "unknown --format: exit %d, %s", rc, errbuf);
    rc = run(WORK);
    tap_ok(rc == 2 && one_line_error() && strstr(errbuf, "--format is required"), "no --format: exit %d", rc);
    rc = run(WORK " --format megatron --launch-target cloud");
    tap_ok(rc == 2 && one_line_error() && strstr(errbuf, "--launch-target"), "unknown target: exit %d", rc);
    rc = run(WORK " --tp 2 --sp --format megatron --launch-target device-local");
    tap_ok(rc == 2 && one_line_error() && strstr(errbuf, "LayerNorm"), "device-local + --sp: exit %d, %s", rc, errbuf);
    rc = run(WORK " --format megatron --json");
    tap_ok(rc == 2 && one_line_error() && strstr(errbuf, "-o"), "--json without -o: exit %d", rc);
    rc = run(WORK " --format megatron extra");
    tap_ok(rc == 2 && one_line_error(), "a positional argument: exit %d", rc);
    rc = run(WORK " --tp 3 --format megatron");
    tap_ok(rc == 2 && one_line_error(), "a layout that does not divide: exit %d, %s", rc, errbuf);

    rc = run(WORK " --tp 2 --dist-opt --format megatron");
    tap_ok(rc == 0 && strstr(outbuf, "#!/usr/bin/env bash") && strstr(outbuf, "--tensor-model-parallel-size 2") &&
               strstr(outbuf, "predicted by parplan") && !strstr(outbuf, "not predicted") &&
               strstr(outbuf, "GiB allocated on the largest rank") && strstr(outbuf, "samples/s"),
           "stdout: the script with the memory and time predictions (exit %d, %s)", rc, errbuf);

    char dir[] = "/tmp/parplan_launch_cli_XXXXXX";
    if (!mkdtemp(dir)) return tap_done();
    char args[1024], path[600];
    snprintf(args, sizeof args, WORK " --zero 2 --framework deepspeed --format deepspeed -o %s/ds --json", dir);
    rc = run(args);
    snprintf(path, sizeof path, "%s/ds/ds_config.json", dir);
    struct stat st;
    bool json_ok = stat(path, &st) == 0;
    snprintf(path, sizeof path, "%s/ds/launch_deepspeed.sh", dir);
    tap_ok(rc == 0 && json_ok && stat(path, &st) == 0 && strstr(outbuf, "\"files\"") &&
               strstr(outbuf, "\"ds_config.json\"") && strstr(outbuf, "\"peak_bytes\""),
           "-o DIR --json: both DeepSpeed files written, JSON summary (exit %d, %s)", rc, errbuf);
    for (const char *f = "megatron torchrun slurm nemo"; *f;) {
        char fmt[16];
        size_t k = strcspn(f, " ");
        snprintf(fmt, sizeof fmt, "%.*s", (int)k, f);
        snprintf(args, sizeof args, WORK " --tp 2 --dist-opt --format %s -o %s/%s -q", fmt, dir, fmt);
        rc = run(args);
        tap_ok(rc == 0 && outbuf[0] == 0, "--format %s -o DIR: exit %d, nothing on stdout", fmt, rc);
        f += k + (f[k] ? 1 : 0);
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) tap_diag("could not remove %s", dir);
    unlink(out_path);
    unlink(err_path);
    return tap_done();
}
