/* Params of Cast and CastLike, shared by layers/elementwise.c and backends/cpu/cast.c. netrun_cast_params
 * (include/netrun_ops.h) has no round_mode yet: this struct extends it (first member, so code that reads
 * netrun_cast_params keeps working). To be folded into netrun_cast_params by the lead. */
#ifndef NETRUN_CAST_PARAMS_H
#define NETRUN_CAST_PARAMS_H

#include "netrun.h"
#include "netrun_ops.h"

/* Cast's round_mode (opset 24+): how a value rounds to float8e8m0 (a power of two). */
typedef enum netrun_cast_round_mode {
    NETRUN_CAST_ROUND_UP = 0,     /* "up", the default: any fraction rounds to the next power of two */
    NETRUN_CAST_ROUND_DOWN = 1,   /* "down": truncate to the exponent */
    NETRUN_CAST_ROUND_NEAREST = 2 /* "nearest" */
} netrun_cast_round_mode;

typedef struct netrun_cast_ex_params {
    netrun_cast_params cast; /* to, saturate */
    int round_mode;          /* netrun_cast_round_mode */
} netrun_cast_ex_params;

#endif
