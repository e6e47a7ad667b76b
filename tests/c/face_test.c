/*
 * face_test.c - the face part of vouch's C ABI through include/vouch.h only:
 * vouch_face_template_from_image, vouch_face_template_from_clip_frame, vouch_face_compare,
 * vouch_face_match_document and vouch_face_match_document_clip, with their failure statuses.
 *
 * Usage: face_test <repository root> (reads models/ and tests/media/). Prints "ok - ..." or
 * "FAIL - ..." per check and "C ABI: N passed, M failed" last; exits 1 when any check failed.
 * Run by scripts/c-tests against the static library and under ASan/UBSan.
 */
#define _POSIX_C_SOURCE 200809L

#include "vouch.h"

#include "check.h"

int main(int argc, char **argv) {
    const char *root = NULL;
    vouch_engine *engine = open_engine_with_models(argc, argv, "face_test", &root);
    vouch_status status = VOUCH_STATUS_OK;
    size_t face_len = 0;
    unsigned char *face = read_file(root, "tests/media/face_astronaut.png", &face_len);
    size_t marker_len = 0;
    unsigned char *marker = read_file(root, "tests/media/marker.png", &marker_len);

    /* A template and its info. */
    uint8_t a[VOUCH_FACE_TEMPLATE_BYTES];
    char *info = NULL;
    status = vouch_face_template_from_image(engine, face, face_len, a, &info);
    check(status == VOUCH_STATUS_OK, "template from an image (%s)", vouch_last_error_message());
    check(info != NULL && strstr(info, "\"face_count\":1") != NULL &&
              strstr(info, "\"interocular_px\"") != NULL,
          "info JSON has the face count and quality: %s", info ? info : "(null)");
    vouch_string_free(info);
    uint8_t b[VOUCH_FACE_TEMPLATE_BYTES];
    status = vouch_face_template_from_image(engine, face, face_len, b, NULL);
    check(status == VOUCH_STATUS_OK, "template without info JSON");

    vouch_match match = {0};
    status = vouch_face_compare(a, sizeof a, b, sizeof b, &match);
    check(status == VOUCH_STATUS_OK && match.is_match == 1 && match.distance < 1e-4f &&
              match.probability > 0.99f,
          "the same image matches (distance %g, probability %g)", match.distance, match.probability);
    check_failure(vouch_face_compare(a, sizeof a - 1, b, sizeof b, &match),
                  VOUCH_STATUS_INVALID_ARGUMENT, "not a face template", "a short template");
    check_failure(vouch_face_compare(NULL, 10, b, sizeof b, &match), VOUCH_STATUS_NULL_ARGUMENT,
                  "a is NULL", "a NULL template");
    check_failure(vouch_face_compare(a, sizeof a, b, sizeof b, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "out_match", "a NULL out_match");

    /* No face, not an image, NULL engine. */
    check_failure(vouch_face_template_from_image(engine, marker, marker_len, a, NULL),
                  VOUCH_STATUS_NO_FACE, "no face", "an image without a face");
    check_failure(vouch_face_template_from_image(engine, face, 100, a, NULL), VOUCH_STATUS_MEDIA,
                  "", "a cut image");
    check_failure(vouch_face_template_from_image(NULL, face, face_len, a, NULL),
                  VOUCH_STATUS_NULL_ARGUMENT, "engine", "a NULL engine");
    check_failure(vouch_face_template_from_image(engine, face, face_len, NULL, NULL),
                  VOUCH_STATUS_NULL_ARGUMENT, "out_template", "a NULL out_template");

    /* Document portrait against a live image, and against a clip's frames. */
    status = vouch_face_match_document(engine, face, face_len, face, face_len, &match);
    check(status == VOUCH_STATUS_OK && match.is_match == 1, "document vs live image (%s)",
          vouch_last_error_message());
    check_failure(vouch_face_match_document(engine, marker, marker_len, face, face_len, &match),
                  VOUCH_STATUS_NO_FACE, "document", "a document without a face");

    /* A clip of host frames: the portrait as one RGB24 frame. The PNG's pixels are taken from a
     * template call's clip: decode the image through vouch_clip_from_raw is not possible (PNG), so
     * build a flat frame with no face and check the no-face path plus the index checks. */
    unsigned char grey[64 * 48 * 3];
    memset(grey, 100, sizeof grey);
    vouch_frame frame = {0};
    frame.format = VOUCH_PIXEL_FORMAT_RGB24;
    frame.width = 64;
    frame.height = 48;
    frame.n_planes = 1;
    frame.planes[0].data = grey;
    frame.planes[0].len = sizeof grey;
    frame.planes[0].row_stride = 64 * 3;
    frame.planes[0].pixel_stride = 3;
    vouch_clip *clip = NULL;
    status = vouch_clip_from_raw(engine, &frame, 1, NULL, &clip);
    check(status == VOUCH_STATUS_OK, "clip from a host frame (%s)", vouch_last_error_message());
    check_failure(vouch_face_template_from_clip_frame(engine, clip, 0, a, NULL), VOUCH_STATUS_NO_FACE,
                  "no face", "a clip frame without a face");
    check_failure(vouch_face_template_from_clip_frame(engine, clip, 1, a, NULL),
                  VOUCH_STATUS_INVALID_ARGUMENT, "index 1", "a frame index past the end");
    check_failure(vouch_face_match_document_clip(engine, face, face_len, clip, &match),
                  VOUCH_STATUS_NO_FACE, "live", "a clip without a face");
    vouch_clip_free(clip);

    /* An engine without models says so. */
    vouch_engine *bare = NULL;
    status = vouch_engine_new("{\"database\":\":memory:\",\"template_key\":\"" KEY32 "\"}", &bare);
    check(status == VOUCH_STATUS_OK, "engine without models");
    check_failure(vouch_face_template_from_image(bare, face, face_len, a, NULL), VOUCH_STATUS_MODEL,
                  "models_dir", "face work without models");
    vouch_engine_free(bare);

    free(face);
    free(marker);
    vouch_engine_free(engine);
    return summary();
}
