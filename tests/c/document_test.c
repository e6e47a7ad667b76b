/*
 * document_test.c - the document part of vouch's C ABI through include/vouch.h only:
 * vouch_document_read on generated document pages (upright, turned, a failing composite check
 * digit), with its failure statuses.
 *
 * Usage: document_test <repository root> (reads models/ and tests/media/). Prints "ok - ..." or
 * "FAIL - ..." per check and "C ABI: N passed, M failed" last; exits 1 when any check failed.
 * Run by scripts/c-tests against the static library and under ASan/UBSan.
 */
#define _POSIX_C_SOURCE 200809L

#include "vouch.h"

#include "check.h"

int main(int argc, char **argv) {
    const char *root = NULL;
    vouch_engine *engine = open_engine_with_models(argc, argv, "document_test", &root);
    vouch_status status = VOUCH_STATUS_OK;
    const char *pages[] = {"tests/media/doc_td3.png", "tests/media/doc_td3_turned.jpg"};
    for (size_t i = 0; i < 2; i++) {
        size_t len = 0;
        unsigned char *page = read_file(root, pages[i], &len);
        char *json = NULL;
        status = vouch_document_read(engine, page, len, &json);
        check(status == VOUCH_STATUS_OK && json != NULL &&
                  strstr(json, "\"document_number\":\"L898902C3\"") != NULL &&
                  strstr(json, "\"surname\":\"ERIKSSON\"") != NULL &&
                  strstr(json, "\"valid\":true") != NULL,
              "%s reads with valid checks: %s", pages[i], json ? json : vouch_last_error_message());
        vouch_string_free(json);
        free(page);
    }
    size_t card_len = 0;
    unsigned char *card = read_file(root, "tests/media/doc_td1_bad_composite.png", &card_len);
    char *json = NULL;
    status = vouch_document_read(engine, card, card_len, &json);
    check(status == VOUCH_STATUS_OK && json != NULL && strstr(json, "\"valid\":false") != NULL &&
              strstr(json, "{\"field\":\"composite\",\"valid\":false}") != NULL,
          "a failing composite digit is reported with the fields: %s",
          json ? json : vouch_last_error_message());
    vouch_string_free(json);

    size_t marker_len = 0;
    unsigned char *marker = read_file(root, "tests/media/marker.png", &marker_len);
    json = NULL;
    check_failure(vouch_document_read(engine, marker, marker_len, &json), VOUCH_STATUS_NO_DOCUMENT,
                  "no machine-readable zone", "an image without a zone");
    check(json == NULL, "nothing written on failure");
    check_failure(vouch_document_read(engine, card, 100, &json), VOUCH_STATUS_MEDIA, "",
                  "a cut image");
    check_failure(vouch_document_read(engine, NULL, 10, &json), VOUCH_STATUS_NULL_ARGUMENT, "data",
                  "NULL data");
    check_failure(vouch_document_read(engine, card, card_len, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "out_json", "a NULL out_json");

    vouch_engine *bare = NULL;
    status = vouch_engine_new("{\"database\":\":memory:\",\"template_key\":\"" KEY32 "\"}", &bare);
    check(status == VOUCH_STATUS_OK, "engine without models");
    check_failure(vouch_document_read(bare, card, card_len, &json), VOUCH_STATUS_MODEL,
                  "models_dir", "document reading without models");
    vouch_engine_free(bare);

    free(card);
    free(marker);
    vouch_engine_free(engine);
    return summary();
}
