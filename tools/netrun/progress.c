/* Progress of long work on stderr (only on a terminal, never with --quiet) and ANSI colours (only on a
 * terminal, never with NO_COLOR set). */
#include <string.h>

#include "cli.h"

const char *cli_color(int on, const char *code)
{
    return on ? code : "";
}

/* Redraw at most this often: a progress line must not cost measurable time in the timed loop. */
#define DRAW_EVERY_MS 200.0

void cli_progress_begin(cli_progress *p, const cli_opts *o, const char *what, long total, double duration_ms)
{
    memset(p, 0, sizeof(*p));
    p->o = o;
    p->what = what;
    p->total = total;
    p->duration_ms = duration_ms;
    p->start_ms = cli_now_ms();
    p->last_draw_ms = p->start_ms;
}

static void fmt_secs(char *buf, size_t size, double ms)
{
    double s = ms / 1000.0;
    if (s < 60)
        snprintf(buf, size, "%.1fs", s);
    else
        snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)s % 60);
}

void cli_progress_step(cli_progress *p, long done)
{
    if (!p->o || !p->o->progress)
        return;
    double now = cli_now_ms();
    /* Short work draws nothing: only runs that last say a second show a line. */
    if (now - p->last_draw_ms < DRAW_EVERY_MS || now - p->start_ms < 1000.0)
        return;
    p->last_draw_ms = now;
    double elapsed = now - p->start_ms;
    double frac = 0;
    if (p->duration_ms > 0)
        frac = elapsed / p->duration_ms;
    else if (p->total > 0)
        frac = (double)done / (double)p->total;
    if (frac > 1)
        frac = 1;
    char el[32], eta[32] = "?";
    fmt_secs(el, sizeof(el), elapsed);
    if (frac > 0)
        fmt_secs(eta, sizeof(eta), elapsed / frac - elapsed);
    int width = 24, fill = (int)(frac * width + 0.5);
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    const cli_opts *o = p->o;
    if (p->total > 0)
        fprintf(stderr, "\r%s%s%s [%s] %ld/%ld runs, %s elapsed, ETA %s   ", cli_color(o->color_err, "\033[1m"),
                p->what, cli_color(o->color_err, "\033[0m"), bar, done, p->total, el, eta);
    else
        fprintf(stderr, "\r%s%s%s [%s] %ld runs, %s elapsed, ETA %s   ", cli_color(o->color_err, "\033[1m"),
                p->what, cli_color(o->color_err, "\033[0m"), bar, done, el, eta);
    fflush(stderr);
    p->drawn = 1;
}

void cli_progress_end(cli_progress *p)
{
    if (p->drawn) {
        fputs("\r\033[K", stderr); /* erase the line: the report follows on stdout */
        fflush(stderr);
    }
    p->drawn = 0;
}
