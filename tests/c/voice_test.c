/*
 * voice_test.c - the voice part of vouch's C ABI through include/vouch.h only:
 * vouch_voice_template_from_audio, vouch_voice_template_from_pcm and vouch_voice_compare, with
 * their failure statuses.
 *
 * Usage: voice_test <repository root> (reads models/ and tests/media/). Prints "ok - ..." or
 * "FAIL - ..." per check and "C ABI: N passed, M failed" last; exits 1 when any check failed.
 * Run by scripts/c-tests against the static library and under ASan/UBSan.
 */
#define _POSIX_C_SOURCE 200809L

#include "vouch.h"

#include "check.h"

/* The samples of a canonical 16-bit PCM WAV file: the bytes after the "data" chunk header. */
static const unsigned char *wav_samples(const unsigned char *wav, size_t len, size_t *samples_len) {
    for (size_t at = 12; at + 8 <= len;) {
        size_t size = (size_t)wav[at + 4] | (size_t)wav[at + 5] << 8 | (size_t)wav[at + 6] << 16 |
                      (size_t)wav[at + 7] << 24;
        if (memcmp(wav + at, "data", 4) == 0) {
            *samples_len = size <= len - at - 8 ? size : len - at - 8;
            return wav + at + 8;
        }
        at += 8 + size + (size & 1);
    }
    fprintf(stderr, "no data chunk\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *root = NULL;
    vouch_engine *engine = open_engine_with_models(argc, argv, "voice_test", &root);
    vouch_status status = VOUCH_STATUS_OK;
    size_t speech_len = 0, opus_len = 0, tone_len = 0, clipped_len = 0;
    unsigned char *speech = read_file(root, "tests/media/speech.wav", &speech_len);
    unsigned char *opus = read_file(root, "tests/media/speech_48k_stereo.ogg", &opus_len);
    unsigned char *tone = read_file(root, "tests/media/tone.wav", &tone_len);
    unsigned char *clipped = read_file(root, "tests/media/speech_clipped.wav", &clipped_len);

    /* Templates from files, with their speech measures. */
    uint8_t a[VOUCH_VOICE_TEMPLATE_BYTES];
    char *info = NULL;
    status = vouch_voice_template_from_audio(engine, speech, speech_len, a, &info);
    check(status == VOUCH_STATUS_OK, "template from a WAV file (%s)", vouch_last_error_message());
    check(info != NULL && strstr(info, "\"speech_seconds\"") != NULL &&
              strstr(info, "\"reasons\":[]") != NULL,
          "info JSON has the speech measures and no reasons: %s", info ? info : "(null)");
    vouch_string_free(info);
    uint8_t b[VOUCH_VOICE_TEMPLATE_BYTES];
    status = vouch_voice_template_from_audio(engine, opus, opus_len, b, NULL);
    check(status == VOUCH_STATUS_OK, "template from 48 kHz stereo Opus (%s)",
          vouch_last_error_message());
    vouch_match match = {0};
    status = vouch_voice_compare(a, sizeof a, b, sizeof b, &match);
    check(status == VOUCH_STATUS_OK && match.is_match == 1 && match.probability > 0.9f,
          "the same speech through another codec matches (distance %g, probability %g)",
          match.distance, match.probability);
    info = NULL;
    status = vouch_voice_template_from_audio(engine, clipped, clipped_len, b, &info);
    check(status == VOUCH_STATUS_OK && info != NULL && strstr(info, "\"clipping\"") != NULL,
          "clipped speech gives a template and says clipping: %s", info ? info : "(null)");
    vouch_string_free(info);

    /* From PCM the app holds: the WAV's own samples as s16, then as two identical channels. */
    size_t pcm_len = 0;
    const unsigned char *pcm = wav_samples(speech, speech_len, &pcm_len);
    vouch_audio audio = {0};
    audio.data = pcm;
    audio.len = pcm_len;
    audio.sample_format = VOUCH_SAMPLE_FORMAT_S16;
    audio.sample_rate = 16000;
    audio.channels = 1;
    status = vouch_voice_template_from_pcm(engine, &audio, b, NULL);
    check(status == VOUCH_STATUS_OK, "template from s16 PCM (%s)", vouch_last_error_message());
    status = vouch_voice_compare(a, sizeof a, b, sizeof b, &match);
    check(status == VOUCH_STATUS_OK && match.distance < 1e-4f,
          "PCM and its file give the same template (distance %g)", match.distance);
    unsigned char *stereo = malloc(pcm_len * 2);
    for (size_t i = 0; i + 1 < pcm_len; i += 2) {
        memcpy(stereo + 2 * i, pcm + i, 2);
        memcpy(stereo + 2 * i + 2, pcm + i, 2);
    }
    audio.data = stereo;
    audio.len = pcm_len / 2 * 4;
    audio.channels = 2;
    status = vouch_voice_template_from_pcm(engine, &audio, b, NULL);
    check(status == VOUCH_STATUS_OK, "template from stereo PCM (%s)", vouch_last_error_message());
    status = vouch_voice_compare(a, sizeof a, b, sizeof b, &match);
    check(status == VOUCH_STATUS_OK && match.distance < 1e-3f,
          "two identical channels give the mono template (distance %g)", match.distance);
    free(stereo);

    /* Silence, a tone, a cut file, wrong PCM, wrong templates, NULLs. */
    float zeros[32000] = {0};
    audio.data = (const uint8_t *)zeros;
    audio.len = sizeof zeros;
    audio.sample_format = VOUCH_SAMPLE_FORMAT_F32;
    audio.channels = 1;
    check_failure(vouch_voice_template_from_pcm(engine, &audio, b, NULL), VOUCH_STATUS_NO_SPEECH,
                  "silent", "two seconds of silence");
    check_failure(vouch_voice_template_from_audio(engine, tone, tone_len, b, NULL),
                  VOUCH_STATUS_NO_SPEECH, "no speech", "a tone");
    check_failure(vouch_voice_template_from_audio(engine, speech, 100, b, NULL), VOUCH_STATUS_MEDIA,
                  "", "a cut file");
    audio.sample_format = 7;
    check_failure(vouch_voice_template_from_pcm(engine, &audio, b, NULL),
                  VOUCH_STATUS_INVALID_ARGUMENT, "sample format", "an unknown sample format");
    audio.sample_format = VOUCH_SAMPLE_FORMAT_F32;
    audio.sample_rate = 100;
    check_failure(vouch_voice_template_from_pcm(engine, &audio, b, NULL),
                  VOUCH_STATUS_INVALID_ARGUMENT, "100 Hz", "a 100 Hz sample rate");
    check_failure(vouch_voice_template_from_pcm(engine, NULL, b, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "audio", "NULL audio");
    check_failure(vouch_voice_template_from_audio(engine, speech, speech_len, NULL, NULL),
                  VOUCH_STATUS_NULL_ARGUMENT, "out_template", "a NULL out_template");
    uint8_t face_sized[VOUCH_FACE_TEMPLATE_BYTES] = {1};
    check_failure(vouch_voice_compare(a, sizeof a, face_sized, sizeof face_sized, &match),
                  VOUCH_STATUS_INVALID_ARGUMENT, "not a voice template", "a face-sized template");
    check_failure(vouch_voice_compare(a, sizeof a, b, sizeof b, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "out_match", "a NULL out_match");

    /* An engine without models says so. */
    vouch_engine *bare = NULL;
    status = vouch_engine_new("{\"database\":\":memory:\",\"template_key\":\"" KEY32 "\"}", &bare);
    check(status == VOUCH_STATUS_OK, "engine without models");
    check_failure(vouch_voice_template_from_audio(bare, speech, speech_len, a, NULL),
                  VOUCH_STATUS_MODEL, "models_dir", "voice work without models");
    vouch_engine_free(bare);

    free(speech);
    free(opus);
    free(tone);
    free(clipped);
    vouch_engine_free(engine);
    return summary();
}
