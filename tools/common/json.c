/* A small streaming JSON writer: pretty-printed, proper string escaping, NaN/Inf written as null. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json.h"

#define JSON_MAX_DEPTH ((int)(sizeof(((cli_json *)0)->first) / sizeof(int)))

void json_init(cli_json *j, FILE *f)
{
    memset(j, 0, sizeof(*j));
    j->f = f;
    j->first[0] = 1;
}

static void indent(cli_json *j)
{
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when the bytes there are not valid UTF-8. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned min;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) {
        n = 2; min = 0x80; cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3; min = 0x800; cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4; min = 0x10000; cp = c & 0x07;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0; /* also stops at the terminating NUL */
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    /* Reject overlong forms, surrogates and code points past U+10FFFF. */
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void json_write_escaped(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        unsigned char c = *s;
        switch (c) {
        case '"': fputs("\\\"", f); s++; continue;
        case '\\': fputs("\\\\", f); s++; continue;
        case '\b': fputs("\\b", f); s++; continue;
        case '\f': fputs("\\f", f); s++; continue;
        case '\n': fputs("\\n", f); s++; continue;
        case '\r': fputs("\\r", f); s++; continue;
        case '\t': fputs("\\t", f); s++; continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
            s++;
            continue;
        }
        int n = utf8_len(s);
        if (n == 0) {
            /* Names come from model files: never let invalid bytes make the whole report invalid. */
            fputs("\\ufffd", f);
            s++;
            continue;
        }
        fwrite(s, 1, (size_t)n, f);
        s += n;
    }
    fputc('"', f);
}

/* Separator, newline and key before a value. */
static void member(cli_json *j, const char *key)
{
    int was_first = j->first[j->depth];
    if (!was_first)
        fputc(',', j->f);
    j->first[j->depth] = 0;
    if (j->in_array[j->depth] == 2) {
        if (!was_first)
            fputc(' ', j->f);
    } else if (j->depth > 0) {
        indent(j);
    }
    if (j->depth > 0 && !j->in_array[j->depth]) {
        json_write_escaped(j->f, key ? key : "");
        fputs(": ", j->f);
    }
}

static void begin(cli_json *j, const char *key, char open, int array)
{
    member(j, key);
    fputc(open, j->f);
    if (j->depth + 1 >= JSON_MAX_DEPTH) {
        j->failed = 1;
        return;
    }
    j->depth++;
    j->first[j->depth] = 1;
    j->in_array[j->depth] = array;
}

static void end(cli_json *j, char close)
{
    if (j->depth == 0) {
        j->failed = 1;
        return;
    }
    int empty = j->first[j->depth];
    int inline_array = j->in_array[j->depth] == 2;
    j->depth--;
    if (!empty && !inline_array)
        indent(j);
    fputc(close, j->f);
    if (j->depth == 0)
        fputc('\n', j->f);
}

void json_begin_object(cli_json *j, const char *key) { begin(j, key, '{', 0); }
void json_end_object(cli_json *j) { end(j, '}'); }
void json_begin_array(cli_json *j, const char *key) { begin(j, key, '[', 1); }
void json_end_array(cli_json *j) { end(j, ']'); }
void json_begin_inline_array(cli_json *j, const char *key) { begin(j, key, '[', 2); }

void json_string(cli_json *j, const char *key, const char *value)
{
    member(j, key);
    if (value)
        json_write_escaped(j->f, value);
    else
        fputs("null", j->f);
}

void json_number(cli_json *j, const char *key, double value)
{
    member(j, key);
    if (isfinite(value))
        fprintf(j->f, "%.9g", value);
    else
        fputs("null", j->f);
}

void json_int(cli_json *j, const char *key, int64_t value)
{
    member(j, key);
    fprintf(j->f, "%" PRId64, value);
}

void json_uint(cli_json *j, const char *key, uint64_t value)
{
    member(j, key);
    fprintf(j->f, "%" PRIu64, value);
}

void json_bool(cli_json *j, const char *key, int value)
{
    member(j, key);
    fputs(value ? "true" : "false", j->f);
}

void json_null(cli_json *j, const char *key)
{
    member(j, key);
    fputs("null", j->f);
}
