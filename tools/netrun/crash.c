/* A fatal signal (a crash inside a backend or a library it loads) ends the process, but first says where: which
 * node and backend the session was preparing or running (netrun_session_activity), so that a report names the
 * place. Only async-signal-safe calls here (write, sigaction, raise); the signal is raised again with the
 * default action, so the exit status and core dumps stay what they would have been. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static netrun_session *volatile g_watched;
static char g_alt_stack[1 << 16]; /* a stack overflow still gets its report */

static void put(const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void on_fatal(int sig) {
    char what[512];
    const char *name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL"
                     : sig == SIGFPE  ? "SIGFPE"  : "SIGABRT";
    put("netrun: fatal signal ");
    put(name);
    netrun_session *s = g_watched;
    if (s && netrun_session_activity(s, what, sizeof what) > 0) {
        put(" while ");
        put(what);
    }
    put("\nnetrun: this is a bug in netrun or in a library a backend loaded; please report it with the line above,"
        " the output of `netrun --backends` and the model if you can share it\n");
    signal(sig, SIG_DFL);
    raise(sig);
}

void cli_crash_report_install(void) {
#if defined(__SANITIZE_ADDRESS__)
    return; /* AddressSanitizer's own report (with the stack) is worth more than ours */
#endif
    stack_t ss = {.ss_sp = g_alt_stack, .ss_size = sizeof g_alt_stack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

void cli_crash_report_watch(netrun_session *session) { g_watched = session; }
