/*
 * request_test.c - exercises the C ABI of vouch through include/vouch.h only.
 *
 * Every check prints "ok - ..." or "FAIL - ..."; the last line is "C ABI: N passed, M failed" and the
 * exit status is 1 when any check failed. JSON is checked with plain substring searches on purpose:
 * the library emits compact serde_json text ("key":"value", no spaces).
 *
 * Run by scripts/c-tests against the static library, the shared library and under ASan/UBSan.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vouch.h"

/* 32 bytes 0x00..0x1f in base64: a valid template key and HS256 secret. */
#define KEY32 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

static int passed;
static int failed;

/* ---- small helpers ----------------------------------------------------------------------------- */

static bool check(bool ok, const char *format, ...) {
    va_list args;
    va_start(args, format);
    printf("%s - ", ok ? "ok" : "FAIL");
    vprintf(format, args);
    printf("\n");
    va_end(args);
    if (ok) {
        passed++;
    } else {
        failed++;
    }
    return ok;
}

static bool contains(const char *text, const char *needle) {
    return text != NULL && needle != NULL && strstr(text, needle) != NULL;
}

static const char *last_error(void) { return vouch_last_error_message(); }

/* Checks a failed call: its status and that the thread's last error message names the problem. */
static void check_failure(vouch_status got, vouch_status want, const char *needle, const char *what) {
    const char *message = last_error();
    check(got == want && message[0] != '\0' && contains(message, needle),
          "%s -> %s (%u, want %u; message \"%s\", want it to mention \"%s\")", what,
          vouch_status_text(want), (unsigned)got, (unsigned)want, message, needle);
}

/* Copies the string value of "key":"..." in json into out (no escapes expected); false if absent. */
static bool json_string(const char *json, const char *key, char *out, size_t size) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *start = json ? strstr(json, pattern) : NULL;
    if (start == NULL) {
        return false;
    }
    start += strlen(pattern);
    const char *end = strchr(start, '"');
    if (end == NULL || (size_t)(end - start) >= size) {
        return false;
    }
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    return true;
}

/* Runs a request that must produce a response (VOUCH_STATUS_OK); returns it, or NULL after a FAIL. */
static vouch_response *request(const vouch_engine *engine, const char *method, const char *path,
                               const char *headers, const vouch_part *parts, size_t n_parts,
                               const char *body) {
    vouch_response *response = NULL;
    vouch_status status = vouch_request(engine, method, path, headers, parts, n_parts,
                                        (const uint8_t *)body, body ? strlen(body) : 0, &response);
    if (status != VOUCH_STATUS_OK || response == NULL) {
        check(false, "%s %s produced a response (status %u: %s)", method, path, (unsigned)status,
              last_error());
        return NULL;
    }
    return response;
}

/* Runs a request and checks its HTTP status and that the body contains `needle`; frees it. */
static void expect(const vouch_engine *engine, const char *method, const char *path,
                   const char *headers, const vouch_part *parts, size_t n_parts, const char *body,
                   unsigned want_status, const char *needle, const char *what) {
    vouch_response *response = request(engine, method, path, headers, parts, n_parts, body);
    if (response == NULL) {
        return;
    }
    unsigned got = vouch_response_status(response);
    const char *json = vouch_response_body_json(response);
    check(got == want_status && contains(json, needle), "%s: %s %s -> %u %s (want %u, \"%s\")", what,
          method, path, got, json ? json : "(null)", want_status, needle);
    vouch_response_free(response);
}

/* A headers JSON object with a bearer token and up to two more "name":"value" pairs. */
static void bearer_headers(char *out, size_t size, const char *token, const char *extra) {
    snprintf(out, size, "{\"Authorization\":\"Bearer %s\"%s%s}", token, extra ? "," : "",
             extra ? extra : "");
}

/* ---- options ----------------------------------------------------------------------------------- */

static void test_version_and_status_text(void) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", VOUCH_VERSION_MAJOR, VOUCH_VERSION_MINOR,
             VOUCH_VERSION_PATCH);
    check(strcmp(vouch_version(), want) == 0, "vouch_version() is \"%s\" (want \"%s\")",
          vouch_version(), want);
    check(strcmp(vouch_status_text(9999), "unknown status") == 0,
          "vouch_status_text(9999) is \"unknown status\"");
    check(strcmp(vouch_status_text(VOUCH_STATUS_OK), "ok") == 0, "vouch_status_text(OK) is \"ok\"");
    check(vouch_status_text(VOUCH_STATUS_PANIC)[0] != '\0', "vouch_status_text(PANIC) is not empty");
    /* Every status has its own text, the later ones too. */
    check(strcmp(vouch_status_text(VOUCH_STATUS_NO_FACE), "no usable face found") == 0,
          "vouch_status_text(NO_FACE) is its own text");
    check(strcmp(vouch_status_text(VOUCH_STATUS_DAILY_LIMIT), "daily job execution limit reached") == 0,
          "vouch_status_text(DAILY_LIMIT) is its own text");
}

static void test_bad_options(void) {
    static char sentinel;
    vouch_engine *const untouched = (vouch_engine *)(void *)&sentinel;
    struct {
        const char *options;
        vouch_status want;
        const char *needle;
        const char *what;
    } cases[] = {
        {"{\"database\":\":memory:\",\"template_key\":\"" KEY32 "\",\"treads\":2}",
         VOUCH_STATUS_INVALID_OPTIONS, "unknown field `treads`", "options with an unknown field"},
        {"{\"database\":\":memory:\",\"template_key\":\"AAAA\"}", VOUCH_STATUS_INVALID_OPTIONS,
         "template_key must decode to 32 bytes, got 3", "template_key of 3 bytes"},
        {"{\"database\":\":memory:\",\"template_key\":\"" KEY32
         "\",\"api_keys\":{\"hs256_secret\":\"AAAA\"}}",
         VOUCH_STATUS_INVALID_OPTIONS, "api_keys.hs256_secret must decode to at least 32 bytes",
         "hs256_secret of 3 bytes"},
        {"{\"template_key\":\"" KEY32 "\"}", VOUCH_STATUS_INVALID_OPTIONS,
         "missing field `database`", "options without database"},
        {"not json", VOUCH_STATUS_INVALID_OPTIONS, "invalid options", "options that are not JSON"},
        {"{\"database\":\"/nonexistent-dir/vouch.sqlite\",\"template_key\":\"" KEY32 "\"}",
         VOUCH_STATUS_STORAGE, "storage error", "a database in a missing folder"},
        {NULL, VOUCH_STATUS_NULL_ARGUMENT, "options_json", "NULL options"},
        {"{\"database\":\"\xff\"}", VOUCH_STATUS_INVALID_UTF8, "options_json",
         "options with invalid UTF-8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vouch_engine *engine = untouched;
        vouch_status status = vouch_engine_new(cases[i].options, &engine);
        check_failure(status, cases[i].want, cases[i].needle, cases[i].what);
        check(engine == untouched, "%s: out_engine untouched on failure", cases[i].what);
    }
    vouch_status status =
        vouch_engine_new("{\"database\":\":memory:\",\"template_key\":\"" KEY32 "\"}", NULL);
    check_failure(status, VOUCH_STATUS_NULL_ARGUMENT, "out_engine", "NULL out_engine");
}

static vouch_engine *open_engine(const char *database) {
    char options[512];
    snprintf(options, sizeof options,
             "{\"database\":\"%s\",\"template_key\":\"" KEY32
             "\",\"api_keys\":{\"hs256_secret\":\"" KEY32 "\"}}",
             database);
    vouch_engine *engine = NULL;
    vouch_status status = vouch_engine_new(options, &engine);
    check(status == VOUCH_STATUS_OK && engine != NULL, "vouch_engine_new on %s (status %u: %s)",
          database, (unsigned)status, last_error());
    check(last_error()[0] == '\0', "last error is \"\" after a successful call");
    return engine;
}

/* ---- API keys ---------------------------------------------------------------------------------- */

#define KEY_REQUEST "{\"project_id\":\"p1\",\"selected_services\":[\"Face Recognition\",\"Voice Recognition\"]}"

/* Creates a key of project p1; writes its token and id. */
static bool create_key(const vouch_engine *engine, char *token, size_t token_size, char *id,
                       size_t id_size) {
    char *json = NULL;
    vouch_status status = vouch_api_key_create(engine, KEY_REQUEST, &json);
    bool ok = check(status == VOUCH_STATUS_OK && json_string(json, "token", token, token_size) &&
                        json_string(json, "id", id, id_size) &&
                        contains(json, "\"project_id\":\"p1\"") &&
                        contains(json, "\"Voice Recognition\""),
                    "vouch_api_key_create returns a token and an id (status %u)", (unsigned)status);
    vouch_string_free(json);
    return ok;
}

static void test_keys(const vouch_engine *engine, const char *token, const char *key_id) {
    char *list = NULL;
    char needle[160];
    vouch_status status = vouch_api_key_list(engine, "p1", &list);
    snprintf(needle, sizeof needle, "\"id\":\"%s\"", key_id);
    check(status == VOUCH_STATUS_OK && contains(list, needle) &&
              contains(list, "\"status\":\"active\"") && !contains(list, token),
          "vouch_api_key_list shows the key active and no token: %s", list ? list : "(null)");
    vouch_string_free(list);

    static char sentinel[] = "untouched";
    char *out = sentinel;
    check_failure(vouch_api_key_create(engine, "{\"project_id\":", &out), VOUCH_STATUS_INVALID_JSON,
                  "request_json", "vouch_api_key_create with malformed JSON");
    check(out == sentinel, "vouch_api_key_create leaves out_key_json untouched on failure");
    check_failure(vouch_api_key_create(
                      engine, "{\"project_id\":\"p1\",\"selected_services\":[],\"colour\":\"red\"}",
                      &out),
                  VOUCH_STATUS_INVALID_JSON, "unknown field `colour`",
                  "vouch_api_key_create with an unknown field");
    check_failure(vouch_api_key_create(engine, KEY_REQUEST, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "out_key_json", "vouch_api_key_create with NULL out_key_json");
    check_failure(vouch_api_key_create(NULL, KEY_REQUEST, &out), VOUCH_STATUS_NULL_ARGUMENT,
                  "engine", "vouch_api_key_create with NULL engine");
    check_failure(vouch_api_key_list(engine, NULL, &out), VOUCH_STATUS_NULL_ARGUMENT, "project_id",
                  "vouch_api_key_list with NULL project_id");

    /* A second key, revoked: requests with it are refused as the spec says (500). */
    char revoked_token[1024];
    char revoked_id[128];
    if (!create_key(engine, revoked_token, sizeof revoked_token, revoked_id, sizeof revoked_id)) {
        return;
    }
    char headers[1200];
    bearer_headers(headers, sizeof headers, revoked_token, NULL);
    expect(engine, "POST", "/api-gateway/sessions/start", headers, NULL, 0, NULL, 200,
           "\"data\":\"", "the second key works before revocation");
    status = vouch_api_key_revoke(engine, "p1", revoked_id);
    check(status == VOUCH_STATUS_OK, "vouch_api_key_revoke (status %u: %s)", (unsigned)status,
          last_error());
    check(vouch_api_key_revoke(engine, "p1", revoked_id) == VOUCH_STATUS_OK,
          "revoking a revoked key succeeds");
    expect(engine, "POST", "/api-gateway/sessions/start", headers, NULL, 0, NULL, 500,
           "\"error\":\"api key is not active\"", "a revoked key");
    list = NULL;
    status = vouch_api_key_list(engine, "p1", &list);
    check(status == VOUCH_STATUS_OK && contains(list, "\"status\":\"revoked\"") &&
              contains(list, "\"status\":\"active\""),
          "vouch_api_key_list shows one key revoked and one active");
    vouch_string_free(list);
    status = vouch_api_key_revoke(engine, "p1", "key_does_not_exist");
    check(status == VOUCH_STATUS_NOT_FOUND && last_error()[0] != '\0',
          "revoking an unknown key -> NOT_FOUND (%u: %s)", (unsigned)status, last_error());
    check_failure(vouch_api_key_revoke(engine, "p1", NULL), VOUCH_STATUS_NULL_ARGUMENT, "key_id",
                  "vouch_api_key_revoke with NULL key_id");
}

/* ---- the attempt limit -------------------------------------------------------------------------- */

static void test_attempts(const vouch_engine *engine, const char *token) {
    char *out = NULL;
    vouch_status status = vouch_attempts_get(engine, "p1", "carol", &out);
    check(status == VOUCH_STATUS_OK && contains(out, "\"failures\":0") &&
              contains(out, "\"limit\":10") && contains(out, "\"events\":[]"),
          "vouch_attempts_get on a fresh user (%u: %s)", (unsigned)status, out ? out : last_error());
    vouch_string_free(out);
    out = NULL;
    status = vouch_attempts_reset(engine, "p1", "carol", &out);
    check(status == VOUCH_STATUS_OK && contains(out, "\"event\":\"reset\""),
          "vouch_attempts_reset writes an audit row (%u: %s)", (unsigned)status,
          out ? out : last_error());
    vouch_string_free(out);
    /* The same state over the request path. */
    char headers[1400];
    bearer_headers(headers, sizeof headers, token, "\"X-User-Fullname\":\"carol\"");
    expect(engine, "GET", "/api-gateway/attempts", headers, NULL, 0, NULL, 200,
           "\"event\":\"reset\"", "GET /api-gateway/attempts after the C reset");
    out = NULL;
    check_failure(vouch_attempts_get(NULL, "p1", "carol", &out), VOUCH_STATUS_NULL_ARGUMENT,
                  "engine", "vouch_attempts_get with NULL engine");
    check_failure(vouch_attempts_reset(engine, "p1", NULL, &out), VOUCH_STATUS_NULL_ARGUMENT,
                  "user_fullname", "vouch_attempts_reset with NULL user_fullname");
    check_failure(vouch_attempts_reset(engine, "p1", "carol", NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "out_json", "vouch_attempts_reset with NULL out_json");
    check_failure(vouch_attempts_get(engine, "p1", "\xff", &out), VOUCH_STATUS_INVALID_UTF8,
                  "user_fullname", "vouch_attempts_get with invalid UTF-8");
    check(out == NULL, "a failed call leaves out_json untouched");
}

/* ---- the request path -------------------------------------------------------------------------- */

/* An MP4 file starts with an ftyp box: size, "ftyp", brand. Enough for the container check. */
static const uint8_t MP4[] = {0, 0, 0, 0x18, 'f', 't', 'y', 'p', 'm', 'p', '4', '2',
                              0, 0, 0, 0,    'm', 'p', '4', '2', 'i', 's', 'o', 'm'};
static const char PHRASE[] = "my voice is my password";

static void test_requests(const vouch_engine *engine, const char *token) {
    char headers[1400];
    bearer_headers(headers, sizeof headers, token, NULL);

    /* sessions/start: 200, the session id in "data", X-Request-Id in the headers. */
    char session_id[160] = "";
    vouch_response *response =
        request(engine, "POST", "/api-gateway/sessions/start", headers, NULL, 0, NULL);
    if (response != NULL) {
        const char *body = vouch_response_body_json(response);
        check(vouch_response_status(response) == 200 &&
                  json_string(body, "data", session_id, sizeof session_id) && session_id[0] != '\0',
              "sessions/start -> 200 with a session id: %s", body);
        const char *request_id = vouch_response_header(response, "X-Request-Id");
        const char *lower = vouch_response_header(response, "x-request-id");
        check(request_id != NULL && request_id[0] != '\0' && lower == request_id,
              "X-Request-Id header present, found case-insensitively: %s",
              request_id ? request_id : "(null)");
        char needle[200];
        snprintf(needle, sizeof needle, "\"X-Request-Id\":\"%s\"", request_id ? request_id : "?");
        const char *all = vouch_response_headers_json(response);
        check(contains(all, needle), "vouch_response_headers_json has it: %s", all);
        check(vouch_response_header(response, "X-Not-There") == NULL,
              "vouch_response_header of an absent header is NULL");
        check(vouch_response_header(response, NULL) == NULL &&
                  vouch_response_header(response, "\xff") == NULL,
              "vouch_response_header with a NULL or non-UTF-8 name is NULL");
        vouch_response_free(response);
    }

    const char *consent = "{\"is_consent_given\":true,\"user_fullname\":\"alice\"}";
    expect(engine, "POST", "/api-consent/consent", headers, NULL, 0, consent, 200,
           "\"is_consent_given\":true", "authorization consent");
    expect(engine, "POST", "/api-consent/strg-consent", headers, NULL, 0, consent, 200,
           "\"is_consent_given\":true", "storage consent");
    expect(engine, "POST", "/api-consent/consent", headers, NULL, 0,
           "{\"is_consent_given\":true,\"user_fullname\":\"alice\",\"extra\":1}", 400,
           "unknown field", "consent body with an unknown field");
    expect(engine, "GET", "/api-consent/consent?user_fullname=alice", headers, NULL, 0, NULL, 200,
           "\"is_consent_given\":true", "consent read");

    expect(engine, "POST", "/api-gateway/sessions/start", NULL, NULL, 0, NULL, 401,
           "\"error\":\"missing authorization token\"", "no Authorization header");
    expect(engine, "POST", "/api-gateway/sessions/start", "{\"Authorization\":\"Token x\"}", NULL, 0,
           NULL, 401, "\"error\":\"invalid api key format\"", "Authorization: Token x");
    expect(engine, "POST", "/api-gateway/no-such-endpoint", headers, NULL, 0, NULL, 404,
           "\"error\":\"no endpoint at", "unknown path");
    expect(engine, "GET", "/api-gateway/process-video", headers, NULL, 0, NULL, 405,
           "\"error\":\"method GET is not allowed", "known path, wrong method");

    vouch_part parts[2] = {
        {"video", "clip.mp4", "video/mp4", MP4, sizeof MP4},
        {"phrase", NULL, NULL, (const uint8_t *)PHRASE, strlen(PHRASE)},
    };
    expect(engine, "POST", "/api-gateway/process-video", headers, parts, 2, NULL, 400,
           "\"error\":\"X-User-Fullname header is required\"", "process-video without fullname");

    char with_alice[1600];
    bearer_headers(with_alice, sizeof with_alice, token, "\"X-User-Fullname\":\"alice\"");
    expect(engine, "POST", "/api-gateway/process-video", with_alice, parts, 2, NULL, 500,
           "needs models", "process-video with video and phrase (this engine has no models)");
    expect(engine, "POST", "/api-gateway/process-video", with_alice, parts, 1, NULL, 400,
           "\"error\":\"phrase is required\"", "process-video without phrase");

    char bad_device[1600];
    bearer_headers(bad_device, sizeof bad_device, token,
                   "\"X-User-Fullname\":\"alice\",\"X-Device-Info\":\"{oops\"");
    expect(engine, "POST", "/api-gateway/process-video", bad_device, parts, 2, NULL, 400,
           "X-Device-Info", "invalid X-Device-Info JSON");

    /* The session lock: the first fullname used with a session owns it. */
    char extra[400];
    char locked[1800];
    snprintf(extra, sizeof extra, "\"X-User-Fullname\":\"alice\",\"X-Session-ID\":\"%s\"", session_id);
    bearer_headers(locked, sizeof locked, token, extra);
    expect(engine, "POST", "/api-gateway/process-video", locked, parts, 2, NULL, 500,
           "needs models", "X-Session-ID used by alice");
    snprintf(extra, sizeof extra, "\"X-User-Fullname\":\"bob\",\"X-Session-ID\":\"%s\"", session_id);
    bearer_headers(locked, sizeof locked, token, extra);
    expect(engine, "POST", "/api-gateway/process-video", locked, parts, 2, NULL, 403,
           "\"error\":\"session belongs to another user\"", "the same X-Session-ID used by bob");
}

/* ---- errors of the ABI itself ------------------------------------------------------------------ */

static void test_abi_errors(const vouch_engine *engine) {
    static char sentinel;
    vouch_response *const untouched = (vouch_response *)(void *)&sentinel;
    vouch_response *response = untouched;
    const char *start = "/api-gateway/sessions/start";
    const uint8_t byte = 'x';

    check_failure(vouch_request(NULL, "POST", start, NULL, NULL, 0, NULL, 0, &response),
                  VOUCH_STATUS_NULL_ARGUMENT, "engine", "vouch_request with NULL engine");
    check_failure(vouch_request(engine, NULL, start, NULL, NULL, 0, NULL, 0, &response),
                  VOUCH_STATUS_NULL_ARGUMENT, "method", "vouch_request with NULL method");
    check_failure(vouch_request(engine, "POST", NULL, NULL, NULL, 0, NULL, 0, &response),
                  VOUCH_STATUS_NULL_ARGUMENT, "path", "vouch_request with NULL path");
    check_failure(vouch_request(engine, "POST", start, NULL, NULL, 0, NULL, 0, NULL),
                  VOUCH_STATUS_NULL_ARGUMENT, "out_response", "vouch_request with NULL out_response");
    check_failure(vouch_request(engine, "POST", "/api-gateway/\xff", NULL, NULL, 0, NULL, 0, &response),
                  VOUCH_STATUS_INVALID_UTF8, "path", "vouch_request with a non-UTF-8 path");
    check_failure(vouch_request(engine, "POST", start, "{\"A\":\"\xff\"}", NULL, 0, NULL, 0, &response),
                  VOUCH_STATUS_INVALID_UTF8, "headers_json",
                  "vouch_request with non-UTF-8 headers_json");
    check_failure(vouch_request(engine, "POST", start, "{oops", NULL, 0, NULL, 0, &response),
                  VOUCH_STATUS_INVALID_JSON, "headers_json", "headers_json that is not JSON");
    check_failure(vouch_request(engine, "POST", start, "[\"a\"]", NULL, 0, NULL, 0, &response),
                  VOUCH_STATUS_INVALID_JSON, "headers_json must be a JSON object",
                  "headers_json that is an array");
    check_failure(vouch_request(engine, "POST", start, "{\"X-Count\":1}", NULL, 0, NULL, 0, &response),
                  VOUCH_STATUS_INVALID_JSON, "X-Count", "headers_json with a non-string value");
    check_failure(vouch_request(engine, "POST", start, NULL, NULL, 1, NULL, 0, &response),
                  VOUCH_STATUS_NULL_ARGUMENT, "parts", "parts NULL with n_parts 1");
    vouch_part null_data = {"video", NULL, NULL, NULL, 5};
    check_failure(vouch_request(engine, "POST", start, NULL, &null_data, 1, NULL, 0, &response),
                  VOUCH_STATUS_NULL_ARGUMENT, "parts[0].data", "part data NULL with len 5");
    vouch_part null_name = {NULL, NULL, NULL, &byte, 1};
    check_failure(vouch_request(engine, "POST", start, NULL, &null_name, 1, NULL, 0, &response),
                  VOUCH_STATUS_NULL_ARGUMENT, "parts[0].name", "part name NULL");
    check_failure(vouch_request(engine, "POST", start, NULL, NULL, 0, NULL, 3, &response),
                  VOUCH_STATUS_NULL_ARGUMENT, "body", "body NULL with body_len 3");
    check(response == untouched, "out_response untouched by every failed vouch_request");

    check(vouch_response_status(NULL) == 0 && vouch_response_body_json(NULL) == NULL &&
              vouch_response_headers_json(NULL) == NULL &&
              vouch_response_header(NULL, "X-Request-Id") == NULL,
          "response readers accept NULL (0 / NULL)");
    vouch_engine_free(NULL);
    vouch_response_free(NULL);
    vouch_string_free(NULL);
    check(true, "vouch_engine_free(NULL), vouch_response_free(NULL), vouch_string_free(NULL) are no-ops");

    /* A successful call clears the last error. */
    vouch_request(engine, "POST", start, NULL, NULL, 0, NULL, 0, &response); /* 401, status OK */
    check(last_error()[0] == '\0', "last error is \"\" after a successful vouch_request");
    vouch_response_free(response);
}

/* ---- threads ----------------------------------------------------------------------------------- */

#define THREADS 4
#define REQUESTS_PER_THREAD 25

struct worker {
    const vouch_engine *engine;
    const char *headers;
    int ok;
    char ids[REQUESTS_PER_THREAD][64];
};

static void *worker_main(void *arg) {
    struct worker *worker = arg;
    for (int i = 0; i < REQUESTS_PER_THREAD; i++) {
        vouch_response *response = NULL;
        if (vouch_request(worker->engine, "POST", "/api-gateway/sessions/start", worker->headers,
                          NULL, 0, NULL, 0, &response) == VOUCH_STATUS_OK &&
            vouch_response_status(response) == 200 &&
            json_string(vouch_response_body_json(response), "data", worker->ids[i],
                        sizeof worker->ids[i])) {
            worker->ok++;
        }
        vouch_response_free(response);
    }
    return NULL;
}

struct error_probe {
    char before[256]; /* this thread's last error before it made any call */
    char after[256];  /* after its own failing call */
};

static void *error_probe_main(void *arg) {
    struct error_probe *probe = arg;
    snprintf(probe->before, sizeof probe->before, "%s", vouch_last_error_message());
    char *out = NULL;
    vouch_api_key_list(NULL, "p1", &out); /* fails: engine is NULL */
    snprintf(probe->after, sizeof probe->after, "%s", vouch_last_error_message());
    return NULL;
}

static void test_threads(const vouch_engine *engine, const char *token) {
    char headers[1400];
    bearer_headers(headers, sizeof headers, token, NULL);
    struct worker workers[THREADS];
    pthread_t threads[THREADS];
    int total = 0;
    for (int t = 0; t < THREADS; t++) {
        memset(&workers[t], 0, sizeof workers[t]);
        workers[t].engine = engine;
        workers[t].headers = headers;
        check(pthread_create(&threads[t], NULL, worker_main, &workers[t]) == 0, "start thread %d", t);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        total += workers[t].ok;
    }
    check(total == THREADS * REQUESTS_PER_THREAD, "%d threads x %d sessions/start: %d of %d were 200",
          THREADS, REQUESTS_PER_THREAD, total, THREADS * REQUESTS_PER_THREAD);
    int duplicates = 0;
    for (int a = 0; a < THREADS * REQUESTS_PER_THREAD; a++) {
        for (int b = a + 1; b < THREADS * REQUESTS_PER_THREAD; b++) {
            const char *x = workers[a / REQUESTS_PER_THREAD].ids[a % REQUESTS_PER_THREAD];
            const char *y = workers[b / REQUESTS_PER_THREAD].ids[b % REQUESTS_PER_THREAD];
            duplicates += x[0] != '\0' && strcmp(x, y) == 0;
        }
    }
    check(duplicates == 0, "the %d session ids are distinct (%d duplicates)",
          THREADS * REQUESTS_PER_THREAD, duplicates);

    /* The last error is per thread: an error here does not show there, and the reverse. */
    vouch_engine *none = NULL;
    vouch_engine_new(NULL, &none);
    char mine[256];
    snprintf(mine, sizeof mine, "%s", vouch_last_error_message());
    struct error_probe probe;
    memset(&probe, 0, sizeof probe);
    pthread_t thread;
    if (check(pthread_create(&thread, NULL, error_probe_main, &probe) == 0, "start probe thread")) {
        pthread_join(thread, NULL);
        check(probe.before[0] == '\0', "a new thread does not see this thread's error (\"%s\")",
              probe.before);
        check(contains(probe.after, "engine") && !contains(probe.after, "options_json"),
              "the other thread has its own error: \"%s\"", probe.after);
        check(contains(vouch_last_error_message(), "options_json") &&
                  strcmp(vouch_last_error_message(), mine) == 0,
              "this thread still has its own error: \"%s\"", vouch_last_error_message());
    }
}

/* ---- main -------------------------------------------------------------------------------------- */

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    char database[] = "/tmp/vouch-c-test-XXXXXX";
    int fd = mkstemp(database);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);

    test_version_and_status_text();
    test_bad_options();

    vouch_engine *engine = open_engine(database);
    char token[1024] = "";
    char key_id[128] = "";
    if (engine != NULL && create_key(engine, token, sizeof token, key_id, sizeof key_id)) {
        test_keys(engine, token, key_id);
        test_attempts(engine, token);
        test_requests(engine, token);
        test_abi_errors(engine);
        test_threads(engine, token);
    }
    vouch_engine_free(engine);

    /* Reopen on the same file: keys and consents survived. */
    engine = open_engine(database);
    if (engine != NULL && token[0] != '\0') {
        char headers[1400];
        bearer_headers(headers, sizeof headers, token, NULL);
        expect(engine, "GET", "/api-consent/consent?user_fullname=alice", headers, NULL, 0, NULL,
               200, "\"is_consent_given\":true", "after reopening, the consent");
        expect(engine, "GET", "/api-consent/strg-consent?user_fullname=alice", headers, NULL, 0,
               NULL, 200, "\"is_consent_given\":true", "after reopening, the storage consent");
    }
    vouch_engine_free(engine);

    const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "%s%s", database, suffixes[i]);
        unlink(path);
    }

    printf("C ABI: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
