/*
 * hello.c - the smallest tour of the vouch C ABI: open an engine, create an API key, start a
 * session, give both consents, and print what each request answers.
 *
 * Build (after `cargo build --release -p vouch`):
 *   cc -std=c11 -Iinclude examples/hello.c target/release/libvouch.a -lpthread -ldl -lm -o hello
 */
#include <stdio.h>
#include <string.h>

#include "vouch.h"

/* Sends one request and prints "<status> <JSON body>". The engine answers like the cloud service. */
static void show(const vouch_engine *engine, const char *method, const char *path,
                 const char *headers_json, const char *body) {
    vouch_response *response = NULL;
    /* No multipart parts here (NULL, 0); the body is optional JSON bytes. */
    if (vouch_request(engine, method, path, headers_json, NULL, 0, (const unsigned char *)body,
                      body ? strlen(body) : 0, &response) != VOUCH_STATUS_OK) {
        /* Only unusable arguments fail here; HTTP errors (401, 400...) are normal responses. */
        fprintf(stderr, "%s: %s\n", path, vouch_last_error_message());
        return;
    }
    printf("%s %s -> %u %s\n", method, path, vouch_response_status(response),
           vouch_response_body_json(response));
    vouch_response_free(response); /* frees the body string too */
}

int main(void) {
    /* 1. Open an engine. ":memory:" keeps everything in RAM; a real app passes a file path and keeps
     *    the keys (base64 of 32 random bytes) in the platform's keychain. */
    const char *options = "{\"database\":\":memory:\","
                          "\"template_key\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\","
                          "\"api_keys\":{\"hs256_secret\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"}}";
    vouch_engine *engine = NULL;
    if (vouch_engine_new(options, &engine) != VOUCH_STATUS_OK) {
        fprintf(stderr, "cannot open engine: %s\n", vouch_last_error_message());
        return 1;
    }

    /* 2. Create an API key for a project. The answer is JSON; the token is shown only this once. */
    char *key_json = NULL;
    if (vouch_api_key_create(engine, "{\"project_id\":\"demo\",\"selected_services\":[\"Face Recognition\"]}",
                             &key_json) != VOUCH_STATUS_OK) {
        fprintf(stderr, "cannot create key: %s\n", vouch_last_error_message());
        vouch_engine_free(engine);
        return 1;
    }
    /* Pull the token out of {"...","token":"<jwt>",...} (a real app would use a JSON parser). */
    char token[1024] = "";
    const char *start = strstr(key_json, "\"token\":\"");
    if (start != NULL) {
        start += strlen("\"token\":\"");
        size_t len = strcspn(start, "\"");
        if (len < sizeof token) {
            memcpy(token, start, len);
            token[len] = '\0';
        }
    }
    vouch_string_free(key_json); /* strings returned through char ** are ours to free */

    /* 3. Every request carries the key as "Authorization: Bearer <token>" in a JSON object of headers. */
    char headers[1200];
    snprintf(headers, sizeof headers, "{\"Authorization\":\"Bearer %s\"}", token);
    show(engine, "POST", "/api-gateway/sessions/start", headers, NULL);

    /* 4. The user gives authorization consent and storage consent (needed before enrolment). */
    const char *consent = "{\"is_consent_given\":true,\"user_fullname\":\"alice\"}";
    show(engine, "POST", "/api-consent/consent", headers, consent);
    show(engine, "POST", "/api-consent/strg-consent", headers, consent);

    /* 5. Close the engine: this also closes the database. */
    vouch_engine_free(engine);
    return 0;
}
