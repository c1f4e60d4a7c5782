/* netrun-conformance: command line, test discovery, skip list, the fork-per-test scheduler and the ratchet. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conformance.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: netrun-conformance [options] NODE_TEST_DIR\n"
            "Runs every ONNX node test folder (model.onnx, test_data_set_*/input_*.pb, output_*.pb) of\n"
            "NODE_TEST_DIR in child processes (a crash or hang is one test's result, not the run's).\n"
            "  --backend LIST         backend preference list (default: the library's); the first is native\n"
            "  --json FILE            write the JSON report (\"-\" = stdout)\n"
            "  --filter REGEX         only tests whose name matches (POSIX extended regex, unanchored)\n"
            "  --jobs N               tests run at once (default: number of cores)\n"
            "  --timeout S            seconds per test before it is killed and reported as error (default 30)\n"
            "  --batch N              tests run one after another in one child process (default 16); a child\n"
            "                         that dies leaves its unfinished tests to be run again, one per child\n"
            "  --threads N            CPU threads per test (default 1)\n"
            "  --skip FILE            skip list: lines 'REGEX  # reason' (anchored to the whole name)\n"
            "  --expected FILE        ratchet: exit 1 if a test listed in FILE does not pass\n"
            "  --write-expected FILE  write the passing tests to FILE (sorted; with --filter, entries of\n"
            "                         FILE outside the filter are kept)\n"
            "  --table all|failing|none  per-op table on the terminal (default all)\n"
            "  -v, --verbose          one line per test; children keep their stdout/stderr\n"
            "  -h, --help\n"
            "Exit status: 0 run complete (and no ratchet regression), 1 ratchet regression, 2 usage or I/O error.\n");
}

static void die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("netrun-conformance: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(CONF_EXIT_USAGE);
}

static int parse_int(const char *opt, const char *text, int lo, int hi)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        die_usage("%s takes an integer from %d to %d, not '%s'", opt, lo, hi, text);
    return (int)v;
}

/* ---- skip list ---- */

typedef struct skip_rule {
    regex_t re;
    char reason[256];
} skip_rule;

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* A rule's reason is its inline comment, else the last comment line above it (a section heading). */
static skip_rule *read_skip(const char *path, int *n_out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die_usage("cannot read skip list %s: %s", path, strerror(errno));
    skip_rule *rules = NULL;
    int n = 0, cap = 0, lineno = 0;
    char line[1024], section[256] = "listed in the skip file";
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#'), *reason = NULL;
        if (hash) {
            *hash = '\0';
            reason = trim(hash + 1);
        }
        char *pat = trim(line);
        if (!*pat) {
            if (reason && *reason)
                snprintf(section, sizeof(section), "%s", reason);
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            skip_rule *grown = realloc(rules, (size_t)cap * sizeof(*rules));
            if (!grown)
                die_usage("out of memory reading %s", path);
            rules = grown;
        }
        char anchored[1100];
        snprintf(anchored, sizeof(anchored), "^(%s)$", pat);
        if (regcomp(&rules[n].re, anchored, REG_EXTENDED | REG_NOSUB) != 0)
            die_usage("%s:%d: bad regex '%s'", path, lineno, pat);
        snprintf(rules[n].reason, sizeof(rules[n].reason), "%s", reason && *reason ? reason : section);
        n++;
    }
    fclose(f);
    *n_out = n;
    return rules;
}

/* ---- test discovery ---- */

static int cmp_test(const void *a, const void *b)
{
    return strcmp(((const conf_test *)a)->name, ((const conf_test *)b)->name);
}

static conf_test *find_tests(const char *root, const regex_t *filter, int *n_out)
{
    DIR *d = opendir(root);
    if (!d)
        die_usage("cannot open %s: %s", root, strerror(errno));
    conf_test *tests = NULL;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (filter && regexec(filter, e->d_name, 0, NULL, 0) != 0)
            continue;
        size_t len = strlen(root) + strlen(e->d_name) + 16;
        char *dir = malloc(len);
        if (!dir)
            die_usage("out of memory");
        snprintf(dir, len, "%s/%s/model.onnx", root, e->d_name);
        struct stat st;
        if (stat(dir, &st) != 0) { /* not a test folder */
            free(dir);
            continue;
        }
        snprintf(dir, len, "%s/%s", root, e->d_name);
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            conf_test *grown = realloc(tests, (size_t)cap * sizeof(*tests));
            if (!grown)
                die_usage("out of memory");
            tests = grown;
        }
        memset(&tests[n], 0, sizeof(tests[n]));
        tests[n].dir = dir;
        if (!(tests[n].name = strdup(e->d_name)))
            die_usage("out of memory");
        n++;
    }
    closedir(d);
    if (n)
        qsort(tests, (size_t)n, sizeof(*tests), cmp_test);
    *n_out = n;
    return tests;
}

/* ---- scheduler: children that run a batch of tests each ----
 * A child runs up to --batch tests one after another and writes one result per test to its pipe. Batches keep
 * per-process start-up (a CUDA context, an OpenCL platform) off every test; isolation is kept where it matters:
 * when a child dies, the test it was running is reported with the signal, and the rest of its batch is run
 * again, one child per test. */

typedef struct slot {
    pid_t pid;
    int fd;
    int *batch;      /* test indices this child runs, in order */
    int n_batch;
    int n_done;      /* results received */
    size_t got;      /* bytes of the current result received */
    int killed;
    double deadline; /* for the test now running */
    conf_result buf;
} slot;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void child_main(const conf_opts *o, const conf_test *tests, const int *batch, int n_batch, int fd)
{
    if (!o->verbose) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
            close(null);
        }
    }
    signal(SIGPIPE, SIG_IGN);
    conf_result *r = calloc(1, sizeof(*r));
    if (!r)
        _exit(3);
    for (int k = 0; k < n_batch; k++) {
        alarm((unsigned)o->timeout_s); /* per test; the default action kills us: reported as a timeout */
        memset(r, 0, sizeof(*r));
        r->magic = CONF_RESULT_MAGIC;
        conf_run_test(o, tests[batch[k]].dir, r);
        const char *p = (const char *)r;
        size_t left = sizeof(*r);
        while (left) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                _exit(4);
            p += w;
            left -= (size_t)w;
        }
    }
    _exit(0); /* no atexit handlers or stdio buffers inherited from the parent */
}

static int spawn(const conf_opts *o, const conf_test *tests, int *batch, int n_batch, slot *s)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(o, tests, batch, n_batch, fds[1]);
    }
    close(fds[1]);
    memset(s, 0, sizeof(*s));
    s->pid = pid;
    s->fd = fds[0];
    s->batch = batch;
    s->n_batch = n_batch;
    s->deadline = now_s() + o->timeout_s + 5; /* the child's alarm should fire first */
    return 0;
}

static void take_result(conf_result *r, const conf_result *got)
{
    *r = *got;
    r->detail[sizeof(r->detail) - 1] = r->backends[sizeof(r->backends) - 1] = '\0';
    r->ops[sizeof(r->ops) - 1] = r->missing_op[sizeof(r->missing_op) - 1] = '\0';
    r->first_backend[sizeof(r->first_backend) - 1] = '\0';
    if (r->magic != CONF_RESULT_MAGIC || r->status < 0 || r->status >= CONF_STATUS_COUNT)
        r->status = CONF_ERROR;
}

/* The child is gone: reap it. A child of a batch that died before its last result leaves the rest of its batch
 * (the test it died in included: an earlier test may have caused it) to be run again alone; returns how many.
 * A child running one test gives that test the error. */
static int finish(const conf_opts *o, slot *s, conf_test *tests)
{
    int ws = 0;
    while (waitpid(s->pid, &ws, 0) < 0 && errno == EINTR)
        ;
    close(s->fd);
    if (s->n_done >= s->n_batch)
        return 0;
    if (s->n_batch > 1)
        return s->n_batch - s->n_done;
    conf_result *r = &tests[s->batch[0]].res;
    memset(r, 0, sizeof(*r));
    r->status = CONF_ERROR;
    if (s->killed || (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGALRM))
        snprintf(r->detail, sizeof(r->detail), "timeout: still running after %d s", o->timeout_s);
    else if (WIFSIGNALED(ws))
        snprintf(r->detail, sizeof(r->detail), "crashed: signal %d (%s)", WTERMSIG(ws), strsignal(WTERMSIG(ws)));
    else
        snprintf(r->detail, sizeof(r->detail), "child exited with status %d without a result",
                 WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    s->n_done = 1;
    return 0;
}

static void report_line(const conf_test *t)
{
    const conf_result *r = &t->res;
    printf("%-16s %s%s%s\n", conf_status_names[r->status], t->name, r->detail[0] ? ": " : "", r->detail);
    fflush(stdout);
}

static void run_all(const conf_opts *o, conf_test *tests, int n)
{
    slot *slots = calloc((size_t)o->jobs, sizeof(*slots));
    struct pollfd *pfd = calloc((size_t)o->jobs, sizeof(*pfd));
    int *which = calloc((size_t)o->jobs, sizeof(*which));
    /* queue: every test to run once, then tests a crashed child left behind, each alone */
    int *queue = calloc((size_t)n * 2 + 1, sizeof(*queue));
    char *solo = calloc((size_t)n + 1, 1);
    if (!slots || !pfd || !which || !queue || !solo)
        die_usage("out of memory");
    int head = 0, tail = 0, running = 0, done = 0;
    for (int i = 0; i < n; i++)
        if (tests[i].res.status != CONF_SKIPPED)
            queue[tail++] = i;
    int to_run = tail;
    /* batches no larger than an even share of the work, so all jobs stay busy on short runs */
    int per_job = (to_run + o->jobs - 1) / o->jobs;
    int batch_max = o->batch < per_job ? o->batch : (per_job > 0 ? per_job : 1);
    while (head < tail || running > 0) {
        for (int i = 0; i < o->jobs && head < tail; i++) {
            if (slots[i].pid)
                continue;
            int nb = 0;
            if (solo[queue[head]])
                nb = 1;
            else
                while (nb < batch_max && head + nb < tail && !solo[queue[head + nb]])
                    nb++;
            if (spawn(o, tests, &queue[head], nb, &slots[i]) != 0) {
                for (int k = 0; k < nb; k++) {
                    conf_result *r = &tests[queue[head + k]].res;
                    r->status = CONF_ERROR;
                    snprintf(r->detail, sizeof(r->detail), "cannot start a child: %s", strerror(errno));
                }
            } else {
                running++;
            }
            head += nb;
        }
        if (running == 0)
            continue;
        int np = 0;
        double now = now_s(), wait = 1.0;
        for (int i = 0; i < o->jobs; i++) {
            if (!slots[i].pid)
                continue;
            if (slots[i].deadline - now < wait)
                wait = slots[i].deadline - now;
            pfd[np].fd = slots[i].fd;
            pfd[np].events = POLLIN;
            pfd[np].revents = 0;
            which[np++] = i;
        }
        int rc = poll(pfd, (nfds_t)np, wait > 0 ? (int)(wait * 1000) + 1 : 0);
        if (rc < 0 && errno != EINTR)
            die_usage("poll failed: %s", strerror(errno));
        for (int k = 0; rc > 0 && k < np; k++) {
            slot *s = &slots[which[k]];
            if (!pfd[k].revents)
                continue;
            size_t room = sizeof(s->buf) - s->got;
            ssize_t got = read(s->fd, (char *)&s->buf + s->got, room);
            if (got < 0 && errno == EINTR)
                continue;
            if (got > 0) {
                s->got += (size_t)got;
                if (s->got == sizeof(s->buf) && s->n_done < s->n_batch) {
                    conf_test *t = &tests[s->batch[s->n_done++]];
                    take_result(&t->res, &s->buf);
                    s->got = 0;
                    s->deadline = now_s() + o->timeout_s + 5;
                    if (o->verbose)
                        report_line(t);
                    else if (isatty(STDERR_FILENO))
                        fprintf(stderr, "\r%d/%d", ++done, to_run);
                }
                continue;
            }
            /* EOF: the child is gone */
            int solo_crash = s->n_batch == 1 && s->n_done == 0;
            int left = finish(o, s, tests);
            if (solo_crash) {
                if (o->verbose)
                    report_line(&tests[s->batch[0]]);
                else if (isatty(STDERR_FILENO))
                    fprintf(stderr, "\r%d/%d", ++done, to_run);
            }
            for (int j = s->n_batch - left; j < s->n_batch; j++) { /* run again, each alone */
                solo[s->batch[j]] = 1;
                queue[tail++] = s->batch[j];
            }
            s->pid = 0;
            running--;
        }
        now = now_s();
        for (int i = 0; i < o->jobs; i++)
            if (slots[i].pid && !slots[i].killed && now > slots[i].deadline) {
                kill(slots[i].pid, SIGKILL);
                slots[i].killed = 1;
            }
    }
    if (!o->verbose && isatty(STDERR_FILENO))
        fputc('\n', stderr);
    free(slots);
    free(pfd);
    free(which);
    free(queue);
    free(solo);
}

/* ---- expected list (ratchet) ---- */

static int passing(const conf_test *t)
{
    return t->res.status == CONF_PASSED || t->res.status == CONF_PASSED_FALLBACK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **read_names(const char *path, int *n_out, int must_exist)
{
    *n_out = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (must_exist)
            die_usage("cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char **names = NULL, line[1024];
    int n = 0, cap = 0;
    while (fgets(line, sizeof(line), f)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *name = trim(line);
        if (!*name)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            char **grown = realloc(names, (size_t)cap * sizeof(*names));
            if (!grown)
                die_usage("out of memory");
            names = grown;
        }
        if (!(names[n++] = strdup(name)))
            die_usage("out of memory");
    }
    fclose(f);
    *n_out = n;
    return names;
}

static conf_test *find_test(conf_test *tests, int n, const char *name)
{
    conf_test key = {.name = (char *)name};
    return bsearch(&key, tests, (size_t)n, sizeof(*tests), cmp_test);
}

/* Returns the number of regressions. */
static int check_expected(const conf_opts *o, conf_test *tests, int n, const regex_t *filter)
{
    int n_exp = 0, regressions = 0, fresh = 0;
    char **exp = read_names(o->expected_path, &n_exp, 1);
    qsort(exp, (size_t)n_exp, sizeof(*exp), cmp_str);
    for (int i = 0; i < n_exp; i++) {
        if (filter && regexec(filter, exp[i], 0, NULL, 0) != 0)
            continue;
        conf_test *t = find_test(tests, n, exp[i]);
        if (t && passing(t))
            continue;
        if (regressions++ == 0)
            printf("\nREGRESSIONS: tests listed in %s that no longer pass:\n", o->expected_path);
        if (t)
            printf("  %s: %s%s%s\n", exp[i], conf_status_names[t->res.status], t->res.detail[0] ? ": " : "",
                   t->res.detail);
        else
            printf("  %s: not found in %s\n", exp[i], o->node_dir);
    }
    for (int i = 0; i < n; i++) {
        if (!passing(&tests[i]) || bsearch(&tests[i].name, exp, (size_t)n_exp, sizeof(*exp), cmp_str))
            continue;
        if (fresh++ == 0)
            printf("\nNEWLY PASSING: tests that pass but are not listed in %s:\n", o->expected_path);
        printf("  %s\n", tests[i].name);
    }
    if (fresh)
        printf("%d newly passing test(s): add them to %s (run tests/conformance/update_expected.sh, or\n"
               "netrun-conformance --write-expected %s ...) and commit the list.\n",
               fresh, o->expected_path, o->expected_path);
    if (regressions)
        printf("%d regression(s): fix them, or if a test is meant to stop passing, remove it from %s.\n",
               regressions, o->expected_path);
    else
        printf("\nratchet: all %d expected tests pass\n", n_exp);
    for (int i = 0; i < n_exp; i++)
        free(exp[i]);
    free(exp);
    return regressions;
}

static int write_expected(const conf_opts *o, conf_test *tests, int n, const regex_t *filter)
{
    int n_old = 0, n_new = 0;
    /* Keep what the filter did not cover: a filtered run only speaks for the tests it ran. */
    char **old = filter ? read_names(o->write_expected, &n_old, 0) : NULL;
    char **names = malloc(((size_t)n + (size_t)n_old + 1) * sizeof(*names));
    if (!names)
        die_usage("out of memory");
    for (int i = 0; i < n_old; i++)
        if (regexec(filter, old[i], 0, NULL, 0) != 0)
            names[n_new++] = old[i];
    for (int i = 0; i < n; i++)
        if (passing(&tests[i]))
            names[n_new++] = tests[i].name;
    qsort(names, (size_t)n_new, sizeof(*names), cmp_str);
    FILE *f = fopen(o->write_expected, "w");
    if (!f) {
        fprintf(stderr, "netrun-conformance: error: cannot write %s: %s\n", o->write_expected, strerror(errno));
        return -1;
    }
    int written = 0;
    for (int i = 0; i < n_new; i++)
        if (i == 0 || strcmp(names[i], names[i - 1]) != 0) {
            fprintf(f, "%s\n", names[i]);
            written++;
        }
    int bad = ferror(f) | (fclose(f) != 0);
    for (int i = 0; i < n_old; i++)
        free(old[i]);
    free(old);
    free(names);
    if (!bad)
        printf("wrote %d passing tests to %s\n", written, o->write_expected);
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    conf_opts o = {.jobs = 0, .timeout_s = 30, .batch = 16, .threads = 1, .table = "all"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define VALUE() (i + 1 < argc ? argv[++i] : (die_usage("%s needs a value", a), ""))
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--backend") || !strcmp(a, "--backends")) {
            o.backends = VALUE();
        } else if (!strcmp(a, "--json")) {
            o.json_path = VALUE();
        } else if (!strcmp(a, "--filter")) {
            o.filter = VALUE();
        } else if (!strcmp(a, "--jobs") || !strcmp(a, "-j")) {
            o.jobs = parse_int(a, VALUE(), 1, 256);
        } else if (!strcmp(a, "--timeout")) {
            o.timeout_s = parse_int(a, VALUE(), 1, 86400);
        } else if (!strcmp(a, "--batch")) {
            o.batch = parse_int(a, VALUE(), 1, 4096);
        } else if (!strcmp(a, "--threads")) {
            o.threads = parse_int(a, VALUE(), 0, 1024);
        } else if (!strcmp(a, "--skip")) {
            o.skip_path = VALUE();
        } else if (!strcmp(a, "--expected")) {
            o.expected_path = VALUE();
        } else if (!strcmp(a, "--write-expected")) {
            o.write_expected = VALUE();
        } else if (!strcmp(a, "--table")) {
            o.table = VALUE();
            if (strcmp(o.table, "all") && strcmp(o.table, "failing") && strcmp(o.table, "none"))
                die_usage("--table takes all, failing or none, not '%s'", o.table);
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o.verbose = 1;
        } else if (a[0] == '-' && a[1]) {
            usage(stderr);
            die_usage("unknown option '%s'", a);
        } else if (o.node_dir) {
            die_usage("more than one NODE_TEST_DIR ('%s', '%s')", o.node_dir, a);
        } else {
            o.node_dir = a;
        }
#undef VALUE
    }
    if (!o.node_dir) {
        usage(stderr);
        return CONF_EXIT_USAGE;
    }
    if (o.jobs == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        o.jobs = cores > 0 && cores < 256 ? (int)cores : 1;
    }
    regex_t filter_re, *filter = NULL;
    if (o.filter) {
        if (regcomp(&filter_re, o.filter, REG_EXTENDED | REG_NOSUB) != 0)
            die_usage("bad --filter regex '%s'", o.filter);
        filter = &filter_re;
    }
    int n_rules = 0, n = 0;
    skip_rule *rules = o.skip_path ? read_skip(o.skip_path, &n_rules) : NULL;
    conf_test *tests = find_tests(o.node_dir, filter, &n);
    if (n == 0)
        die_usage("no test folders (with a model.onnx) in %s%s", o.node_dir, filter ? " match the filter" : "");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n_rules; k++)
            if (regexec(&rules[k].re, tests[i].name, 0, NULL, 0) == 0) {
                tests[i].res.status = CONF_SKIPPED;
                snprintf(tests[i].res.detail, sizeof(tests[i].res.detail), "skipped: %s", rules[k].reason);
                break;
            }

    double t0 = now_s();
    run_all(&o, tests, n);
    double elapsed = now_s() - t0;

    int counts[CONF_STATUS_COUNT] = {0};
    const char *native = "default";
    for (int i = 0; i < n; i++) {
        counts[tests[i].res.status]++;
        conf_group_name(tests[i].name, &tests[i].res, tests[i].group, sizeof(tests[i].group));
        if (tests[i].res.first_backend[0] && !strcmp(native, "default"))
            native = tests[i].res.first_backend;
    }
    conf_print_table(stdout, tests, n, o.table);
    int rc = CONF_EXIT_OK;
    if (o.json_path && conf_write_json(o.json_path, tests, n, counts) != 0) {
        fprintf(stderr, "netrun-conformance: error: cannot write %s: %s\n", o.json_path, strerror(errno));
        rc = CONF_EXIT_USAGE;
    }
    if (o.write_expected && write_expected(&o, tests, n, filter) != 0)
        rc = CONF_EXIT_USAGE;
    if (o.expected_path && check_expected(&o, tests, n, filter) > 0 && rc == CONF_EXIT_OK)
        rc = CONF_EXIT_REGRESSION;
    printf("\n%d tests in %.1f s: %d passed, %d passed_fallback, %d failed, %d unsupported, %d error, %d skipped\n",
           n, elapsed, counts[CONF_PASSED], counts[CONF_PASSED_FALLBACK], counts[CONF_FAILED],
           counts[CONF_UNSUPPORTED], counts[CONF_ERROR], counts[CONF_SKIPPED]);
    /* Last line, read by CI as a test summary: keep its format. */
    printf("conformance %s: %d passed, %d failed, %d skipped\n", native,
           counts[CONF_PASSED] + counts[CONF_PASSED_FALLBACK],
           counts[CONF_FAILED] + counts[CONF_ERROR] + counts[CONF_UNSUPPORTED], counts[CONF_SKIPPED]);
    fflush(stdout);

    for (int i = 0; i < n; i++) {
        free(tests[i].name);
        free(tests[i].dir);
    }
    free(tests);
    for (int k = 0; k < n_rules; k++)
        regfree(&rules[k].re);
    free(rules);
    if (filter)
        regfree(filter);
    return rc;
}
