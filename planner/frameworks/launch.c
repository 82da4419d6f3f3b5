/* Launch configs, the entry (pp_launch.h): the files of each format, the parameters, and
 * pp_launch_write, which checks the parameters, runs the format's writer (launch_megatron.c for
 * megatron, torchrun and slurm; launch_deepspeed.c, launch_nemo.c, launch_torchtitan.c) and
 * writes its text to a stream or, atomically, into a directory. */
#include "pp_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch_common.h"

#define BAD(...) pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, __VA_ARGS__)


static const char *const files_megatron[] = {"pretrain_gpt.sh", NULL};
static const char *const files_torchrun[] = {"launch_torchrun.sh", NULL};
static const char *const files_slurm[] = {"launch.sbatch", NULL};
static const char *const files_deepspeed[] = {"ds_config.json", "launch_deepspeed.sh", NULL};
static const char *const files_nemo[] = {"nemo_overrides.yaml", NULL};
static const char *const files_torchtitan[] = {"torchtitan.toml", "launch_torchtitan.sh", NULL};

const char *const *pp_launch_files(pp_launch_format fmt)
{
    switch (fmt) {
    case PP_LAUNCH_MEGATRON: return files_megatron;
    case PP_LAUNCH_TORCHRUN: return files_torchrun;
    case PP_LAUNCH_SLURM: return files_slurm;
    case PP_LAUNCH_DEEPSPEED: return files_deepspeed;
    case PP_LAUNCH_NEMO: return files_nemo;
    case PP_LAUNCH_TORCHTITAN: return files_torchtitan;
    default: return NULL;
    }
}

void pp_launch_params_init(pp_launch_params *p)
{
    memset(p, 0, sizeof *p);
    p->target = PP_TARGET_STANDARD;
    p->peak_bytes = p->reserved_bytes = p->capacity_bytes = -1;
    p->step_time_s = p->samples_per_s = -1;
}

/* ------------------------------------------------------------------ output */

pp_status pp_launch_write_file_atomic(const char *dir, const char *name, const char *data,
                                      size_t len, int mode, pp_error *err)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp.XXXXXX", dir, name) >= (int)sizeof tmp)
        return pp_error_set(err, PP_ERR_INPUT, dir, 0, 0, "output path too long");
    int fd = mkstemp(tmp);
    if (fd < 0)
        return pp_error_set(err, PP_ERR_RUNTIME, dir, 0, 0, "cannot create a file in the directory: %s",
                            strerror(errno));
    pp_status st = PP_OK;
    size_t off = 0;
    while (off < len) {
        ssize_t k = write(fd, data + off, len - off);
        if (k < 0) {
            if (errno == EINTR) continue;
            st = pp_error_set(err, PP_ERR_RUNTIME, tmp, 0, 0, "write failed: %s", strerror(errno));
            goto cleanup;
        }
        off += (size_t)k;
    }
    if (fchmod(fd, (mode_t)mode) != 0 || fsync(fd) != 0) {
        st = pp_error_set(err, PP_ERR_RUNTIME, tmp, 0, 0, "fsync/chmod failed: %s", strerror(errno));
        goto cleanup;
    }
    if (close(fd) != 0) {
        fd = -1;
        st = pp_error_set(err, PP_ERR_RUNTIME, tmp, 0, 0, "close failed: %s", strerror(errno));
        goto cleanup;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        st = pp_error_set(err, PP_ERR_RUNTIME, path, 0, 0, "rename failed: %s", strerror(errno));
        goto cleanup;
    }
    /* make the rename itself durable */
    int dfd = open(dir, O_RDONLY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
cleanup:
    if (fd >= 0) close(fd);
    if (st != PP_OK) unlink(tmp);
    return st;
}

static pp_status ensure_dir(const char *dir, pp_error *err)
{
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return pp_error_set(err, PP_ERR_INPUT, dir, 0, 0, "-o expects a directory, this is a file");
        return PP_OK;
    }
    if (mkdir(dir, 0777) != 0)
        return pp_error_set(err, PP_ERR_RUNTIME, dir, 0, 0, "cannot create the directory: %s",
                            strerror(errno));
    return PP_OK;
}

static pp_status check_params(const pp_launch_params *p, pp_error *err)
{
    if (!p || !p->work || !p->layout)
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "launch: no work or layout");
    const pp_layout *l = p->layout;
    const pp_work *w = p->work;
    if (l->dp < 1 || l->tp < 1 || l->pp < 1 || l->cp < 1 || l->ep < 1 || l->vpp < 1 || l->mbs < 1)
        return BAD("launch: the layout is not validated (a parallel size below 1)");
    if (l->tp * l->pp * l->cp * l->dp != w->gpus)
        return BAD("tp*pp*cp*dp = %lld must equal --gpus %lld",
                   (long long)(l->tp * l->pp * l->cp * l->dp), (long long)w->gpus);
    if (l->pp > PP_MAX_STAGES) return BAD("--pp %lld is more than %d stages", (long long)l->pp, PP_MAX_STAGES);
    if ((int)p->target < 0 || p->target >= PP_TARGET_COUNT) return BAD("launch: unknown target");
    return PP_OK;
}

pp_status pp_launch_write(pp_launch_format fmt, const pp_launch_params *p, FILE *out,
                          const char *dir, pp_error *err)
{
    if ((int)fmt < 0 || fmt >= PP_LAUNCH_COUNT) return BAD("launch: unknown format %d", (int)fmt);
    if (!out == !dir) return BAD("launch: give either an output stream or a directory");
    pp_status st = check_params(p, err);
    if (st != PP_OK) return st;
    if (p->target == PP_TARGET_DEVICE_LOCAL && (fmt == PP_LAUNCH_DEEPSPEED || fmt == PP_LAUNCH_NEMO))
        return BAD("--launch-target device-local applies to the Megatron formats (megatron, torchrun, slurm)");

    pp_sbuf files[2] = {{0}, {0}};
    int nfiles = 1;
    switch (fmt) {
    case PP_LAUNCH_MEGATRON:
    case PP_LAUNCH_TORCHRUN:
    case PP_LAUNCH_SLURM:
        st = pp_launch_megatron_script(fmt, p, &files[0], err);
        break;
    case PP_LAUNCH_DEEPSPEED:
        st = pp_launch_deepspeed(p, out != NULL, &files[0], &files[1], err);
        nfiles = out ? 1 : 2;
        break;
    case PP_LAUNCH_NEMO:
        st = pp_launch_nemo(p, &files[0], err);
        break;
    case PP_LAUNCH_TORCHTITAN: /* launch_torchtitan.c */
        st = pp_launch_torchtitan(p, out != NULL, &files[0].s, &files[1].s, err);
        for (int i = 0; i < 2; i++) files[i].len = files[i].s ? strlen(files[i].s) : 0;
        nfiles = out ? 1 : 2;
        break;
    default:
        st = BAD("launch: unknown format");
    }
    if (st == PP_OK && (files[0].oom || files[1].oom))
        st = pp_error_set(err, PP_ERR_NOMEM, NULL, 0, 0, "out of memory");
    if (st == PP_OK && out) {
        if (fwrite(files[0].s, 1, files[0].len, out) != files[0].len || fflush(out) != 0)
            st = pp_error_set(err, PP_ERR_RUNTIME, NULL, 0, 0, "cannot write the output: %s", strerror(errno));
    } else if (st == PP_OK) {
        st = ensure_dir(dir, err);
        const char *const *names = pp_launch_files(fmt);
        for (int i = 0; st == PP_OK && i < nfiles; i++) {
            const char *nm = names[i];
            size_t nl = strlen(nm);
            bool script = (nl > 3 && strcmp(nm + nl - 3, ".sh") == 0) ||
                          (nl > 7 && strcmp(nm + nl - 7, ".sbatch") == 0);
            st = pp_launch_write_file_atomic(dir, nm, files[i].s, files[i].len, script ? 0755 : 0644, err);
        }
    }
    pp_sbuf_free(&files[0]);
    pp_sbuf_free(&files[1]);
    return st;
}
