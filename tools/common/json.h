/* A small streaming JSON writer shared by the command-line tools (netrun, netrun-conformance):
 * pretty-printed, RFC 8259 string escaping (invalid UTF-8 becomes U+FFFD), NaN/Inf written as null. */
#ifndef NETRUN_TOOLS_JSON_H
#define NETRUN_TOOLS_JSON_H

#include <stdint.h>
#include <stdio.h>

typedef struct cli_json {
    FILE *f;
    int depth;
    int first[32];    /* per nesting level: no member written yet */
    int in_array[32]; /* 1 = array, 2 = array written on one line */
    int failed;       /* nesting too deep, misuse */
} cli_json;

void json_init(cli_json *j, FILE *f);
void json_begin_object(cli_json *j, const char *key);
void json_end_object(cli_json *j);
void json_begin_array(cli_json *j, const char *key);
void json_end_array(cli_json *j);
/* An array of scalars written on one line: [1, 2, 3]. */
void json_begin_inline_array(cli_json *j, const char *key);
void json_string(cli_json *j, const char *key, const char *value); /* NULL value writes null */
void json_number(cli_json *j, const char *key, double value);      /* non-finite writes null */
void json_int(cli_json *j, const char *key, int64_t value);
void json_uint(cli_json *j, const char *key, uint64_t value);
void json_bool(cli_json *j, const char *key, int value);
void json_null(cli_json *j, const char *key);
/* Write s as a JSON string literal (quotes included), escaping as RFC 8259 requires. */
void json_write_escaped(FILE *f, const char *s);

#endif
