/* Benchmark (suite bench): pp_memory_worst_bytes calls per second, the memory check the layout
 * search makes for every candidate. Reports the rate; asserts only that results are finite. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mem_shapes.h"
#include "pp_memory.h"
#include "tap.h"

int main(void)
{
    pp_work w;
    memset(&w, 0, sizeof w);
    mem_shape(&w.model, "gpt-6.7b");
    mem_h200(&w.gpu);
    w.gpus = 64;
    w.gpus_per_node = 8;
    w.gbs = 512;
    w.framework = PP_FW_MEGATRON;
    pp_error e;
    for (int rc = 0; rc < PP_RC_COUNT; rc++) {
        pp_layout l;
        pp_layout_init(&l);
        l.tp = 2;
        l.pp = 4;
        l.recompute = (pp_recompute)rc;
        if (!tap_ok(pp_layout_validate(&w, &l, &e) == PP_OK, "layout valid")) continue;
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        double sum = 0;
        const int n = 1000000;
        for (int i = 0; i < n; i++) {
            l.mbs = 1 + (i & 3);
            sum += pp_memory_worst_bytes(&w, &l, NULL);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        double dt = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
        tap_ok(isfinite(sum), "recompute %s: %.2f M calls/s (%.0f ns each)", pp_recompute_names[rc],
               n / dt / 1e6, 1e9 * dt / n);
    }
    return tap_done();
}
