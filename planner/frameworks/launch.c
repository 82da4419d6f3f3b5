/* Launch configs, the entry (pp_launch.h): the files of each format, the parameters, and
 * pp_launch_write, which checks the parameters, runs the format's writer (launch_megatron.c for
 * megatron, torchrun and slurm; launch_deepspeed.c, launch_nemo.c, launch_torchtitan.c for torchtitan
 * and torchtitan-toml, launch_bridge.c for megatron-bridge) and
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


/* A format's writer: its files' texts into f[0] (and f[1] when not joined: a format of two files
 * writes them apart into a directory, or as one self-contained script to a stream). */
typedef pp_status (*launch_writer)(pp_launch_format fmt, const pp_launch_params *p, bool joined, pp_sbuf f[2],
                                   pp_error *err);

static pp_status write_megatron(pp_launch_format fmt, const pp_launch_params *p, bool joined, pp_sbuf f[2],
                                pp_error *err)
{
    (void)joined;
    return pp_launch_megatron_script(fmt, p, &f[0], err);
}

static pp_status write_deepspeed(pp_launch_format fmt, const pp_launch_params *p, bool joined, pp_sbuf f[2],
                                 pp_error *err)
{
    (void)fmt;
    return pp_launch_deepspeed(p, joined, &f[0], &f[1], err);
}

static pp_status write_nemo(pp_launch_format fmt, const pp_launch_params *p, bool joined, pp_sbuf f[2], pp_error *err)
{
    (void)fmt, (void)joined;
    return pp_launch_nemo(p, &f[0], err);
}

static pp_status write_bridge(pp_launch_format fmt, const pp_launch_params *p, bool joined, pp_sbuf f[2],
                              pp_error *err)
{
    (void)fmt, (void)joined;
    return pp_launch_bridge(p, &f[0], err);
}

static pp_status write_torchtitan(pp_launch_format fmt, const pp_launch_params *p, bool joined, pp_sbuf f[2],
                                  pp_error *err)
{
    pp_status st = pp_launch_torchtitan(fmt, p, joined, &f[0].s, &f[1].s, err);
    for (int i = 0; i < 2; i++) f[i].len = f[i].s ? strlen(f[i].s) : 0;
    return st;
}

/* The formats: the files each writes into a directory (NULL-terminated), whose predictions it
 * carries, whether --launch-target device-local applies, and its writer (the version each
 * targets: pp_launch_format_target, launch_common.c). */
static const struct {
    const char *files[3];
    pp_framework framework;
    bool device_local;
    launch_writer write;
} formats[PP_LAUNCH_COUNT] = {
    [PP_LAUNCH_MEGATRON] = {{"pretrain_gpt.sh", NULL}, PP_FW_MEGATRON, true, write_megatron},
    [PP_LAUNCH_TORCHRUN] = {{"launch_torchrun.sh", NULL}, PP_FW_MEGATRON, true, write_megatron},
    [PP_LAUNCH_SLURM] = {{"launch.sbatch", NULL}, PP_FW_MEGATRON, true, write_megatron},
    [PP_LAUNCH_DEEPSPEED] = {{"ds_config.json", "launch_deepspeed.sh", NULL}, PP_FW_DEEPSPEED, false, write_deepspeed},
    [PP_LAUNCH_NEMO] = {{"nemo_overrides.yaml", NULL}, PP_FW_MEGATRON, false, write_nemo},
    [PP_LAUNCH_TORCHTITAN] = {{"parplan_torchtitan.py", "launch_torchtitan.sh", NULL}, PP_FW_FSDP, true,
                              write_torchtitan},
    [PP_LAUNCH_TORCHTITAN_TOML] = {{"torchtitan.toml", "launch_torchtitan.sh", NULL}, PP_FW_FSDP, true,
                                   write_torchtitan},
    [PP_LAUNCH_MEGATRON_BRIDGE] = {{"launch_megatron_bridge.sh", NULL}, PP_FW_MEGATRON, false, write_bridge},
};


const char *const *pp_launch_files(pp_launch_format fmt)
{
    return (int)fmt >= 0 && fmt < PP_LAUNCH_COUNT ? formats[fmt].files : NULL;
}

pp_framework pp_launch_format_framework(pp_launch_format fmt)
{
    return (int)fmt >= 0 && fmt < PP_LAUNCH_COUNT ? formats[fmt].framework : PP_FW_MEGATRON;
}

int pp_launch_format_for(pp_framework fw)
{
    for (int i = 0; i < PP_LAUNCH_COUNT; i++)
        if (formats[i].framework == fw) return i;
    return -1;
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
    if (p->target == PP_TARGET_DEVICE_LOCAL && !formats[fmt].device_local) {
        char list[128] = "";
        size_t k = 0;
        for (int i = 0; i < PP_LAUNCH_COUNT; i++)
            if (formats[i].device_local && k < sizeof list)
                k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", pp_launch_format_names[i]);
        return BAD("--launch-target device-local applies to %s, not %s", list, pp_launch_format_names[fmt]);
    }
    /* LoRA is written where the framework has it: Megatron-Bridge's PEFT (peft/lora.py). Megatron-LM
     * at d98e8a64 has no LoRA (arguments.py: no adapter or PEFT option; its *_lora_rank are MLA's
     * latent ranks); NeMo 1.x's PEFT configs are not written by --format nemo. */
    if (pp_work_lora(p->work) && fmt != PP_LAUNCH_MEGATRON_BRIDGE)
        return BAD("--finetune lora: --format %s has no LoRA (Megatron-LM's pretrain_gpt.py trains every weight; "
                   "NeMo 1.x PEFT is not written); use --format megatron-bridge (its PEFT recipe)",
                   pp_launch_format_names[fmt]);

    /* MXFP8 and NVFP4 are written where the recipes are options: Megatron-LM's --fp8-recipe mxfp8
     * and --fp4-format (transformer_config.py at d98e8a64) and Megatron-Bridge's
     * bf16_with_mxfp8_mixed / bf16_with_nvfp4_mixed (training/mixed_precision.py). */
    if (pp_precision_info[p->work->stack.precision].block_scaled && fmt == PP_LAUNCH_NEMO)
        return BAD("--precision %s: --format nemo (NeMo 1.x) has no MXFP8/NVFP4 recipe setting; use --format "
                   "megatron or megatron-bridge",
                   pp_precision_names[p->work->stack.precision]);
    if (pp_precision_info[p->work->stack.precision].block_scaled && formats[fmt].framework != PP_FW_MEGATRON)
        return BAD("--precision %s: --format %s has no MXFP8/NVFP4 setting (it is TransformerEngine's recipe under "
                   "Megatron); use --format megatron or megatron-bridge",
                   pp_precision_names[p->work->stack.precision], pp_launch_format_names[fmt]);

    pp_sbuf files[2] = {{0}, {0}};
    int nfiles = 1;
    if (!out)
        while (nfiles < 2 && formats[fmt].files[nfiles]) nfiles++;
    st = formats[fmt].write(fmt, p, out != NULL, files, err);
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
