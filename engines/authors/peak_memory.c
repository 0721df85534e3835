/*
 * burtbench: a tiny LD_PRELOAD library that reports the memory peaks of the process it is loaded
 * into, for programs we run but do not write (the authors' BurTorch examples).
 *
 * Why: on Linux a child's ru_maxrss, as wait4() returns it, starts at the spawner's resident size
 * (the high-water mark survives fork and exec), so a parent cannot learn a small child's peak from it.
 * /proc/self/status VmHWM and VmPeak are reset by exec, and are the process's own.
 *
 * At load (constructor) it takes the path from BURTBENCH_PEAK_OUT and removes that variable from
 * the environment, so that any process the program itself starts does not overwrite the report.
 * At exit (destructor: after main returns or exit() is called) it writes, as `key=value` lines:
 *   VmHWM_kB, VmPeak_kB     from /proc/self/status
 *   cpu                     sched_getcpu() at exit: the core the process last ran on
 *   Cpus_allowed_list       from /proc/self/status (the main thread's affinity at exit)
 *   pid
 * A process killed by a signal or ending in _exit() writes nothing: the reader says so.
 *
 * With BURTBENCH_STDOUT_LINEBUF=1 it also makes C stdout line-buffered at load, so that the
 * printed lines of a program killed at a timeout are not lost in its buffer (std::cout writes
 * through C stdio while it is synchronised with it, the default).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out_path[4096];

static void append(char *dst, size_t cap, const char *src)
{
    size_t used = strlen(dst);
    size_t n = strlen(src);
    if (used + n + 1 > cap)
        n = cap - used - 1;
    memcpy(dst + used, src, n);
    dst[used + n] = '\0';
}

/* Copies the value of `field:` from a /proc status text into value (trimmed). */
static int status_field(const char *text, const char *field, char *value, size_t cap)
{
    size_t flen = strlen(field);
    const char *line = text;
    while (line && *line) {
        if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
            const char *p = line + flen + 1;
            while (*p == ' ' || *p == '\t')
                ++p;
            size_t n = 0;
            while (p[n] && p[n] != '\n' && n + 1 < cap) {
                value[n] = p[n];
                ++n;
            }
            while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'))
                --n;
            value[n] = '\0';
            return 1;
        }
        line = strchr(line, '\n');
        if (line)
            ++line;
    }
    return 0;
}

/* "1234 kB" -> "1234" */
static void strip_kb(char *value)
{
    char *space = strchr(value, ' ');
    if (space)
        *space = '\0';
}

__attribute__((constructor)) static void burtbench_peak_init(void)
{
    const char *path = getenv("BURTBENCH_PEAK_OUT");
    if (path && *path && strlen(path) < sizeof(out_path)) {
        strcpy(out_path, path);
        unsetenv("BURTBENCH_PEAK_OUT");
    }
    const char *linebuf = getenv("BURTBENCH_STDOUT_LINEBUF");
    if (linebuf && strcmp(linebuf, "1") == 0)
        setvbuf(stdout, NULL, _IOLBF, BUFSIZ);
}

__attribute__((destructor)) static void burtbench_peak_report(void)
{
    if (!out_path[0])
        return;
    char status[16384];
    size_t got = 0;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n;
        while (got + 1 < sizeof(status) && (n = read(fd, status + got, sizeof(status) - 1 - got)) > 0)
            got += (size_t)n;
        close(fd);
    }
    status[got] = '\0';

    char report[1024] = "";
    char value[256];
    char line[320];
    if (status_field(status, "VmHWM", value, sizeof(value))) {
        strip_kb(value);
        snprintf(line, sizeof(line), "VmHWM_kB=%s\n", value);
        append(report, sizeof(report), line);
    }
    if (status_field(status, "VmPeak", value, sizeof(value))) {
        strip_kb(value);
        snprintf(line, sizeof(line), "VmPeak_kB=%s\n", value);
        append(report, sizeof(report), line);
    }
    if (status_field(status, "Cpus_allowed_list", value, sizeof(value))) {
        snprintf(line, sizeof(line), "Cpus_allowed_list=%s\n", value);
        append(report, sizeof(report), line);
    }
    snprintf(line, sizeof(line), "cpu=%d\npid=%ld\n", sched_getcpu(), (long)getpid());
    append(report, sizeof(report), line);

    fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    size_t len = strlen(report), done = 0;
    while (done < len) {
        ssize_t n = write(fd, report + done, len - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    close(fd);
}
