/*
 * check.h - the small test harness of the C ABI tests that read models and media from the
 * repository (face_test.c, voice_test.c): one "ok - ..." or "FAIL - ..." line per check, a
 * failure check that also looks at vouch_last_error_message(), and whole-file reads.
 * Single-threaded; include once per test program, after vouch.h.
 */
#ifndef VOUCH_TESTS_CHECK_H
#define VOUCH_TESTS_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 32-byte template key, base64. */
#define KEY32 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

static int passed;
static int failed;

static bool check(bool ok, const char *format, ...) {
    va_list args;
    va_start(args, format);
    printf("%s - ", ok ? "ok" : "FAIL");
    vprintf(format, args);
    printf("\n");
    va_end(args);
    ok ? passed++ : failed++;
    return ok;
}

static inline void check_failure(vouch_status got, vouch_status want, const char *needle, const char *what) {
    const char *message = vouch_last_error_message();
    check(got == want && strstr(message, needle) != NULL,
          "%s -> %u (want %u; message \"%s\", want it to mention \"%s\")", what, (unsigned)got,
          (unsigned)want, message, needle);
}

/* The whole of root/name; exits 2 when it cannot be read. Free with free(). */
static unsigned char *read_file(const char *root, const char *name, size_t *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, name);
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *data = malloc(size > 0 ? (size_t)size : 1);
    if (data == NULL || size < 0 || fread(data, 1, (size_t)size, file) != (size_t)size) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(file);
    *len = (size_t)size;
    return data;
}

/* The repository root from the command line and an engine opened on an in-memory database with
 * root/models; exits 2 on a wrong command line and 1 when the engine does not open. */
static inline vouch_engine *open_engine_with_models(int argc, char **argv, const char *program,
                                                    const char **root) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <repository root>\n", program);
        exit(2);
    }
    *root = argv[1];
    char options[4400];
    snprintf(options, sizeof options,
             "{\"database\":\":memory:\",\"template_key\":\"" KEY32 "\",\"models_dir\":\"%s/models\"}",
             *root);
    vouch_engine *engine = NULL;
    vouch_status status = vouch_engine_new(options, &engine);
    if (!check(status == VOUCH_STATUS_OK && engine != NULL, "engine with models (%s)",
               vouch_last_error_message())) {
        exit(1);
    }
    return engine;
}

/* Ends the program with the summary line; exit status 1 when any check failed. */
static int summary(void) {
    printf("C ABI: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

#endif
