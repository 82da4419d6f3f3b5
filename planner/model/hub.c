/* Hugging Face Hub ids (--model ORG/NAME[@REV]) read from the local Hub cache, offline
 * (pp_load.h, pp_hub_find). The cache layout is huggingface_hub's (file_download.py,
 * docs "Understand caching"):
 *
 *   CACHE/models--ORG--NAME/refs/REV            the commit a branch or tag points at (one line)
 *   CACHE/models--ORG--NAME/snapshots/COMMIT/config.json
 *
 * CACHE is $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub (huggingface_hub constants.py); every one of those that is set is
 * searched, in that order. */
#include "pp_load.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool id_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.'; }

bool pp_hub_id_parse(const char *arg, char *org, char *name, char *rev, size_t n)
{
    const char *slash = strchr(arg, '/');
    if (!slash || slash == arg || strchr(slash + 1, '/')) return false;
    const char *at = strchr(slash + 1, '@');
    size_t lo = (size_t)(slash - arg), ln = at ? (size_t)(at - slash - 1) : strlen(slash + 1);
    const char *r = at ? at + 1 : "main";
    if (!ln || lo >= n || ln >= n || strlen(r) >= n || !r[0]) return false;
    /* a path (./x, x.json) is a file, not an id */
    if (arg[0] == '.' || strstr(arg, ".json") || strstr(arg, ".yaml") || strstr(arg, ".yml")) return false;
    for (size_t i = 0; i < lo; i++)
        if (!id_char(arg[i])) return false;
    for (size_t i = 0; i < ln; i++)
        if (!id_char(slash[1 + i])) return false;
    for (const char *p = r; *p; p++)
        if (!id_char(*p) && *p != '/') return false;
    memcpy(org, arg, lo);
    org[lo] = 0;
    memcpy(name, slash + 1, ln);
    name[ln] = 0;
    snprintf(rev, n, "%s", r);
    return true;
}

static bool is_regular(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0 && S_ISREG(s.st_mode);
}

static bool is_commit(const char *r)
{
    size_t n = strlen(r);
    if (n != 40) return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)r[i])) return false;
    return true;
}

/* The caches to search, in huggingface_hub's order of precedence. */
static int hub_caches(char dirs[4][1024])
{
    int k = 0;
    const char *v;
    if ((v = getenv("HF_HUB_CACHE")) && v[0]) snprintf(dirs[k++], 1024, "%s", v);
    if ((v = getenv("HF_HOME")) && v[0]) snprintf(dirs[k++], 1024, "%s/hub", v);
    if ((v = getenv("XDG_CACHE_HOME")) && v[0]) snprintf(dirs[k++], 1024, "%s/huggingface/hub", v);
    if ((v = getenv("HOME")) && v[0]) snprintf(dirs[k++], 1024, "%s/.cache/huggingface/hub", v);
    return k;
}

pp_status pp_hub_find(const char *arg, char *path, size_t n, pp_error *err)
{
    char org[256], name[256], rev[256];
    if (!pp_hub_id_parse(arg, org, name, rev, sizeof org))
        return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "'%s' is not a Hugging Face Hub id (ORG/NAME[@REV])", arg);
    char dirs[4][1024], searched[2048] = "";
    int k = hub_caches(dirs);
    size_t sl = 0;
    for (int i = 0; i < k; i++) {
        char repo[4700], commit[256] = "", p[5000];
        snprintf(repo, sizeof repo, "%s/models--%s--%s", dirs[i], org, name);
        if (sl < sizeof searched) sl += (size_t)snprintf(searched + sl, sizeof searched - sl, "%s%s", i ? ", " : "", repo);
        if (is_commit(rev)) {
            snprintf(commit, sizeof commit, "%s", rev);
        } else {
            snprintf(p, sizeof p, "%s/refs/%s", repo, rev);
            FILE *f = fopen(p, "r");
            if (!f) continue;
            if (!fgets(commit, sizeof commit, f)) commit[0] = 0;
            fclose(f);
            commit[strcspn(commit, " \t\r\n")] = 0;
            if (!is_commit(commit))
                return pp_error_set(err, PP_ERR_INPUT, p, 0, 0, "the Hub cache's ref '%s' does not name a commit", rev);
        }
        snprintf(p, sizeof p, "%s/snapshots/%s/config.json", repo, commit);
        if (is_regular(p)) {
            if (strlen(p) >= n) return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0, "path too long: %s", p);
            snprintf(path, n, "%s", p);
            return PP_OK;
        }
    }
    if (!k) snprintf(searched, sizeof searched, "none: set HF_HUB_CACHE or HF_HOME");
    return pp_error_set(err, PP_ERR_INPUT, NULL, 0, 0,
                        "model '%s' is not in the local Hugging Face cache (searched: %s); fetch its config with: "
                        "huggingface-cli download %s/%s%s%s config.json",
                        arg, searched, org, name, strcmp(rev, "main") ? " --revision " : "", strcmp(rev, "main") ? rev : "");
}
