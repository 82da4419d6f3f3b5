/* GPU prices per GPU-hour, for plan's table of what to rent: a prices file (examples/prices.yaml:
 * date, source, example, currency, prices: {GPU: price}) or --price-per-gpu-hour's SPEC. */
#ifndef PP_PRICES_H
#define PP_PRICES_H

#include "pp.h"

#define PP_PRICES_MAX 64

typedef struct {
    char path[512];      /* the file ("" for a SPEC) */
    char date[64];       /* when the prices were read */
    char source[1024];   /* where from */
    char currency[16];   /* USD unless the file says */
    bool example;        /* example prices, not quotes: the output says so */
    int n;
    char gpu[PP_PRICES_MAX][64]; /* GPU name ("*": every GPU) */
    double per_gpu_hour[PP_PRICES_MAX];
} pp_prices;

pp_status pp_prices_load_string(pp_prices *p, const char *text, size_t len, const char *path, pp_error *err);
pp_status pp_prices_load_file(pp_prices *p, const char *path, pp_error *err);
/* "P" (every GPU) or "GPU=P,GPU=P". */
pp_status pp_prices_parse_spec(pp_prices *p, const char *spec, pp_error *err);
/* The price of one hour of gpu, or -1 when none is given. */
double pp_prices_get(const pp_prices *p, const char *gpu);

#endif
