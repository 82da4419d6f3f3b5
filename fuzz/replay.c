/* Replays fuzz inputs through a harness without libFuzzer, so the normal (gcc) build and the
 * sanitizer CI pass test the committed corpus and every crash regression (suite 'fuzz').
 * usage: replay-<target> FILE|DIR ...   (directories: their regular files, sorted, not recursive)
 * Output is TAP, one line per input; a harness invariant or a sanitizer aborts the process,
 * and the "# input" line printed before each call names the culprit in the test log. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int n_run, n_bad;

static void replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
        printf("not ok %d - %s: cannot read (%s)\n", ++n_run, path, strerror(errno));
        n_bad++;
        if (f) fclose(f);
        return;
    }
    size_t size = (size_t)sb.st_size;
    /* Exactly size bytes on the heap (no terminator), as libFuzzer passes them, so that a
     * sanitizer sees a read past the end. */
    uint8_t *data = malloc(size ? size : 1);
    size_t got = size ? fread(data, 1, size, f) : 0;
    fclose(f);
    if (got != size) {
        printf("not ok %d - %s: short read\n", ++n_run, path);
        n_bad++;
        free(data);
        return;
    }
    printf("# input %s (%zu bytes)\n", path, size);
    fflush(stdout);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    printf("ok %d - %s\n", ++n_run, path);
    fflush(stdout);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        printf("not ok %d - %s: %s\n", ++n_run, dir, strerror(errno));
        n_bad++;
        return;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue; /* ., .., .gitkeep */
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) replay_file(path);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) replay_dir(argv[i]);
        else replay_file(argv[i]);
    }
    if (n_run == 0) {
        printf("1..0 # SKIP no inputs\n");
        return 0;
    }
    printf("1..%d\n", n_run);
    return n_bad ? 1 : 0;
}
