/* The Python package's entry (python/parplan/__init__.py loads this module with ctypes): the
 * command line run in-process, its standard output and error captured. Binding the CLI's own
 * dispatch (pp_cli_main) keeps one answer: a Python call returns what `parplan CMD ... --json`
 * prints. Not reentrant: the commands write to stdout and stderr, which are swapped for memory
 * streams for the call (the Python side holds a lock). */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

/* Run parplan with argv (argv[0] is the program name); *out and *err are NUL-terminated buffers
 * the caller frees with pp_py_free. Returns the exit status, or -1 when the streams could not be
 * made. */
int pp_py_call(int argc, char **argv, char **out, char **err)
{
    size_t on = 0, en = 0;
    *out = *err = NULL;
    FILE *o = open_memstream(out, &on), *e = open_memstream(err, &en);
    if (!o || !e) {
        if (o) fclose(o);
        if (e) fclose(e);
        free(*out);
        free(*err);
        *out = *err = NULL;
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    FILE *so = stdout, *se = stderr;
    stdout = o;
    stderr = e;
    int rc = pp_cli_main(argc, argv);
    fflush(o);
    fflush(e);
    stdout = so;
    stderr = se;
    fclose(o);
    fclose(e);
    return rc;
}

void pp_py_free(char *p) { free(p); }
