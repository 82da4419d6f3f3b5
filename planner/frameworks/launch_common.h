/* The launch writers' internal interface: what they share (launch_common.c) and the entry of each
 * format's writer, which launch.c calls (launch_megatron.c, launch_deepspeed.c, launch_nemo.c;
 * launch_torchtitan.c's is in pp_launch.h). Not installed. */
#ifndef PP_LAUNCH_COMMON_H
#define PP_LAUNCH_COMMON_H

#include <math.h>

#include "pp_launch.h"

/* A growable string; oom once an append failed (the text is then incomplete). */
typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} pp_sbuf;

void pp_sbuf_printf(pp_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pp_sbuf_free(pp_sbuf *b);

/* A prediction that was made (finite, not negative). */
static inline bool pp_launch_known(double v) { return isfinite(v) && v >= 0; }
/* A probability as Megatron's dump prints it: "0.0", "0.1". */
const char *pp_launch_prob(double v, char *buf, size_t n);
/* Copy s into out keeping only characters safe in a comment (name_only: in a job name). */
void pp_launch_sanitize(const char *s, char *out, size_t n, bool name_only);
/* Nodes and GPUs per node of the work (--gpus-per-node, else one node). */
int64_t pp_launch_nodes(const pp_work *w);
int64_t pp_launch_gpus_per_node(const pp_work *w);
/* PP_ERR_INPUT unless --gpus is a whole number of nodes. */
pp_status pp_launch_cluster_check(const pp_work *w, pp_error *err);
/* How many of stage i's layers are fully recomputed (the ILP's or the uniform rule). */
int64_t pp_launch_stage_recompute(const pp_work *w, const pp_layout *l, int64_t i);
/* Every pipeline stage has the same number of layers. */
bool pp_launch_stages_even(const pp_work *w, const pp_layout *l);
/* The scripts that run torchrun once per node, by hand or under sbatch (torchtitan, megatron-bridge):
 * their #SBATCH lines (after the #! line), and the rendezvous block that sets NNODES,
 * GPUS_PER_NODE, MASTER_ADDR, MASTER_PORT, RDZV_ID and LAUNCHER (srun under Slurm, else nothing).
 * job: a job-name-safe name ("" for "train"). */
void pp_launch_sbatch(const pp_work *w, const char *job, char *buf, size_t n);
void pp_launch_rdzv(const pp_work *w, const char *job, char *buf, size_t n);
/* "12.34 GiB", or "not predicted". */
const char *pp_launch_gib(double bytes, char *buf, size_t n);
/* The prediction line of every format's header, without its comment characters: "predicted by
 * parplan V: peak P GiB allocated on the largest rank + R GiB reserved of C GiB (fits|PREDICTED
 * OUT OF MEMORY); step S s, X samples/s, Y tokens/s" (P and R: the fullest stage's). */
void pp_launch_prediction(const pp_launch_params *p, char *buf, size_t n);
/* The header comment every format opens with, each line started by cc ("#"): the parplan version,
 * model, cluster, stack, layout, and the predicted memory and throughput. */
void pp_launch_header_write(pp_sbuf *b, const char *cc, pp_launch_format fmt, const pp_launch_params *p);

/* The writers. fmt megatron, torchrun or slurm: one bash script (launch_megatron.c). */
pp_status pp_launch_megatron_script(pp_launch_format fmt, const pp_launch_params *p, pp_sbuf *b, pp_error *err);
/* joined: *first is one script that writes ds_config.json itself; else *first the JSON and *second
 * the launcher script (launch_deepspeed.c). */
pp_status pp_launch_deepspeed(const pp_launch_params *p, bool joined, pp_sbuf *first, pp_sbuf *second,
                              pp_error *err);
/* The NeMo 1.x YAML overrides, the legacy format nemo (launch_nemo.c). */
pp_status pp_launch_nemo(const pp_launch_params *p, pp_sbuf *b, pp_error *err);
/* Megatron-Bridge's recipe runner with ConfigContainer overrides, one script (launch_bridge.c). */
pp_status pp_launch_bridge(const pp_launch_params *p, pp_sbuf *b, pp_error *err);

#endif
